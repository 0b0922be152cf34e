//! Contract linter for recorded or live traffic: consumes messages one by
//! one and yields findings. Shared by `acp-ext check`, `tap` and `probe`.

use serde::Serialize;
use serde_json::Value;

/// Which way a message travelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Direction {
    /// From the client (editor) to the agent.
    ClientToAgent,
    /// From the agent to the client.
    AgentToClient,
    /// Not recorded (loose fixtures): inferred from the message where possible.
    Unknown,
}

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

/// One problem found in a message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Finding {
    /// Stable rule id (see the README's rule table).
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

/// Checks a stream of messages of one connection.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Checker {}

impl Checker {
    /// A checker with no state.
    pub fn new() -> Self {
        Self::default()
    }

    /// Checks one JSON-RPC message and updates the connection state.
    pub fn message(&mut self, direction: Direction, message: &Value) -> Vec<Finding> {
        let _ = (direction, message);
        Vec::new()
    }
}
