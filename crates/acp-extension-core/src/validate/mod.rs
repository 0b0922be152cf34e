//! Validation of any contract payload, from bytes or a JSON value.

mod check;

pub use check::{Check, Rule, Violation, check, child};

/// The outcome of validating one value: every violation found.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Report {
    /// Every violation, in document order.
    pub violations: Vec<Violation>,
}
