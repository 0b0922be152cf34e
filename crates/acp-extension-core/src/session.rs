//! TODO session
