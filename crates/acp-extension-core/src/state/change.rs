//! What one value changed: the [`Change`]s a fold reports, and where the
//! fold puts them.

use super::*;

/// What one call changed. Session-scoped changes name the session; read
/// the details from the state.
///
/// # Example
///
/// ```
/// use acp_extension_core::state::{Change, ConnectionState, Direction};
/// use serde_json::json;
///
/// let mut state = ConnectionState::new();
/// let changes = state.message(Direction::AgentToClient, &json!({"jsonrpc": "2.0",
///     "method": "session/update", "params": {"sessionId": "s", "update": {
///         "sessionUpdate": "session_info_update", "title": "Fix the parser"}}}));
/// assert!(changes.contains(&Change::Title { session_id: "s".into() }));
/// // What is not folded is a change too, naming the rule.
/// let bad = state.message(Direction::AgentToClient, &json!({"jsonrpc": "2.0",
///     "method": "_lody/session/activity_update", "params": {"sessionId": "s"}}));
/// assert!(matches!(&bad[0], Change::Invalid(i) if i.pointer.starts_with("/params")));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(tag = "change", rename_all = "camelCase")]
#[non_exhaustive]
pub enum Change {
    /// A peer's advertisement was read (its initialize).
    #[serde(rename_all = "camelCase")]
    Negotiated {
        /// `agent` or `client`.
        side: Side,
    },
    /// A session began (`session/new` answered, `load`, `resume`, `fork`),
    /// or was first named by an update that holds nothing else.
    #[serde(rename_all = "camelCase")]
    SessionStarted {
        /// The session.
        session_id: String,
    },
    /// A session id named only by a request the agent rejected (a failed
    /// `session/load` or `session/resume`, a prompt to a session it does not
    /// know) was taken back: it is not a session.
    #[serde(rename_all = "camelCase")]
    SessionDiscarded {
        /// The session id.
        session_id: String,
    },
    /// `session/close` or `delete`.
    #[serde(rename_all = "camelCase")]
    SessionClosed {
        /// The session.
        session_id: String,
    },
    /// The title (or its source) changed.
    #[serde(rename_all = "camelCase")]
    Title {
        /// The session.
        session_id: String,
    },
    /// The goal was set, replaced or cleared.
    #[serde(rename_all = "camelCase")]
    Goal {
        /// The session.
        session_id: String,
    },
    /// Activity level or background task count.
    #[serde(rename_all = "camelCase")]
    Activity {
        /// The session.
        session_id: String,
    },
    /// A turn began or ended, or its turn id, phase or engine turn changed.
    #[serde(rename_all = "camelCase")]
    Turn {
        /// The session.
        session_id: String,
    },
    /// A task row.
    #[serde(rename_all = "camelCase")]
    Task {
        /// The session.
        session_id: String,
        /// Its `taskId`.
        task_id: String,
    },
    /// A subagent run (snapshot, progress or output).
    #[serde(rename_all = "camelCase")]
    SubagentRun {
        /// The root session.
        session_id: String,
        /// The run.
        run_id: String,
    },
    /// Compaction or retry work.
    #[serde(rename_all = "camelCase")]
    ActivityEntry {
        /// The session.
        session_id: String,
        /// The tool call id or `compactionId`.
        id: String,
    },
    /// A notice was added.
    #[serde(rename_all = "camelCase")]
    Notice {
        /// The session.
        session_id: String,
    },
    /// Accounted usage of a scope (and the session totals).
    #[serde(rename_all = "camelCase")]
    Usage {
        /// The session.
        session_id: String,
        /// The scope's key (`session` or `scope:<id>`).
        scope: String,
    },
    /// A prompt result (or a v2 `state_update` ending a turn) reported the
    /// turn's usage.
    #[serde(rename_all = "camelCase")]
    TurnUsage {
        /// The session.
        session_id: String,
    },
    /// Context occupancy (standard `usage_update`).
    #[serde(rename_all = "camelCase")]
    Context {
        /// The session.
        session_id: String,
    },
    /// Rate-limit rows were replaced.
    #[serde(rename_all = "camelCase")]
    RateLimits {
        /// The rows' `limitId`s.
        limit_ids: Vec<String>,
    },
    /// A steer was sent, answered or applied.
    #[serde(rename_all = "camelCase")]
    Steer {
        /// The session.
        session_id: String,
        /// Its `steerId`.
        steer_id: String,
    },
    /// An agent request awaits the client (permission, elicitation).
    #[serde(rename_all = "camelCase")]
    RequestPending {
        /// The session.
        session_id: String,
        /// The JSON-RPC id, as JSON text.
        request_id: String,
    },
    /// That request was answered.
    #[serde(rename_all = "camelCase")]
    RequestResolved {
        /// The session.
        session_id: String,
        /// The JSON-RPC id, as JSON text.
        request_id: String,
    },
    /// The session's plan was set, replaced or removed.
    #[serde(rename_all = "camelCase")]
    Plan {
        /// The session.
        session_id: String,
    },
    /// A session update that changes none of the state's figures: transcript
    /// content (message, thought and user chunks, tool calls without task or
    /// activity metadata, commands, modes, config options). The state keeps
    /// no transcript; a UI renders it from the message.
    #[serde(rename_all = "camelCase")]
    Transcript {
        /// The session.
        session_id: String,
        /// Its `sessionUpdate` tag.
        update: String,
    },
    /// A message read that changes none of the state's figures: a call the
    /// state does not fold (file reads, terminals, modes, authentication,
    /// another vendor's extension), an answer to one, or a response whose
    /// request the input does not hold.
    #[serde(rename_all = "camelCase")]
    Seen {
        /// Its method (for a response, its request's), when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        method: Option<String>,
    },
    /// Something was not folded (or only partly); also kept in
    /// [`ConnectionState::invalid`].
    Invalid(Invalid),
}

/// Which [`IgnoredCounts`] kind an ignored change is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum IgnoredKind {
    Transcript,
    Call,
    UnpairedAnswer,
}

/// Where the fold puts what one value changed: a list for callers that
/// read it, or (when the state does not list its changes) only counts, so
/// that a change is not even built.
#[derive(Debug, Clone)]
pub(super) struct Changes {
    pub(super) list: Vec<Change>,
    pub(super) listed: bool,
    /// Changes made, listed or not.
    pub(super) made: usize,
    /// [`Change::Invalid`]s among them.
    pub(super) invalid: usize,
    /// Changes that hold nothing ([`IgnoredKind`]) among them.
    pub(super) ignored: usize,
    /// The kind of the last of them.
    pub(super) ignored_kind: Option<IgnoredKind>,
}

impl Default for Changes {
    fn default() -> Self {
        Self {
            list: Vec::new(),
            listed: true,
            made: 0,
            invalid: 0,
            ignored: 0,
            ignored_kind: None,
        }
    }
}

impl Changes {
    /// A change, built only when listed.
    pub(super) fn add(&mut self, change: impl FnOnce() -> Change) {
        self.made += 1;
        if self.listed {
            self.list.push(change());
        }
    }

    /// A change that holds nothing ([`Change::Transcript`],
    /// [`Change::Seen`]), of `kind`.
    pub(super) fn ignore(&mut self, kind: IgnoredKind, change: impl FnOnce() -> Change) {
        self.ignored += 1;
        self.ignored_kind = Some(kind);
        self.add(change);
    }

    /// A record of what was not folded, copied only when listed.
    pub(super) fn add_invalid(&mut self, record: &Invalid) {
        self.made += 1;
        self.invalid += 1;
        if self.listed {
            self.list.push(Change::Invalid(record.clone()));
        }
    }

    /// Changes made so far.
    pub(super) fn len(&self) -> usize {
        self.made
    }
}
