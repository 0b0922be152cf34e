//! TODO negotiation
