//! Findings: one problem found in a message, and how bad it is. The
//! vocabulary every checker and printer shares (`check`'s rules make them,
//! [`crate::present`] words them).

use serde::Serialize;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Severity {
    /// Contract drift worth knowing (unknown keys).
    Info,
    /// Legal but suspicious (fractional epoch seconds).
    Warning,
    /// Breaks the contract.
    Error,
}

// Lowest first.
crate::choice::choices!(Severity, "severity" {
    Info = "info",
    Warning = "warning" | "warn",
    Error = "error",
});

/// One problem found in a message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Finding {
    /// Stable rule id (see the rule table of `docs/check.md`).
    pub rule: &'static str,
    /// How bad it is.
    pub severity: Severity,
    /// JSON pointer inside the message.
    pub path: String,
    /// One-line explanation.
    pub message: String,
}

impl Finding {
    /// A finding of `rule` at `path`.
    pub fn new(
        rule: &'static str,
        severity: Severity,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            rule,
            severity,
            path: path.into(),
            message: message.into(),
        }
    }
}
