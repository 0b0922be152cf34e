//! TODO usage
