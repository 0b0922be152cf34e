//! TODO capabilities
