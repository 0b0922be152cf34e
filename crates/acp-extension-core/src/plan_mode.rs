//! TODO plan_mode
