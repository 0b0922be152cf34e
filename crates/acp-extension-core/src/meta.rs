//! TODO meta
