//! TODO methods
