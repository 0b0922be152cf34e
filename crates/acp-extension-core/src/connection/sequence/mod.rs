//! The contract's sequence rules: what one message may do given the ones
//! before it on the same connection.
//!
//! A single message can be valid and still break the contract in context:
//! an output event for a run that never had a snapshot, a cumulative usage
//! total that falls, a steer answered after its turn ended. These rules
//! need memory. A [`Connection`](crate::connection::Connection) holds that
//! memory for one connection, bounded by [`SequenceLimits`], and reports
//! each break as a [`SequenceFinding`] of the message that broke it.
//!
//! It is the one implementation of these rules: a linter reports its
//! findings, and the consumer state ([`crate::state`]) records them as
//! changes and uses its verdicts to decide what to fold.
//!
//! | Rule | Contract source |
//! |---|---|
//! | [`SequenceRule::SubagentFirstNotSnapshot`] | a run starts with a snapshot (subagent events, delivery) |
//! | [`SequenceRule::SubagentAfterTerminal`] | `completed`, `failed` and `cancelled` are final; a new execution needs a new run id |
//! | [`SequenceRule::SubagentRunIdNative`] | run ids are opaque and never reuse native ids |
//! | [`SequenceRule::UsageTotalDecreased`] | `modelUsage` is cumulative within its scope |
//! | [`SequenceRule::UsageDeltaMismatch`] | `delta` is the change since the scope's previous update |
//! | [`SequenceRule::UsageScopeReentered`] | a usage scope id is never reused once another began |
//! | [`SequenceRule::SteerUnknownId`] | `steer_applied` names a steer the client sent |
//! | [`SequenceRule::SteerAnsweredAfterTurn`] | a steer is answered while its turn runs |
//! | [`SequenceRule::SteerNotApplied`] | an `injected` steer is confirmed by `steer_applied` |
//! | [`SequenceRule::SessionNotOpened`] | a session's notifications follow its `session/new` (or `load`, `resume`, `fork`) |
//!
//! `unknown` is not a terminal run state: it means observation was lost,
//! and a later snapshot (say `running` after a reconnect) is accepted. A
//! terminal snapshot that repeats its state (adding `outputIncomplete`, for
//! instance) is accepted too; any other event after it is not.
//!
//! ```
//! use acp_extension_core::connection::{Connection, Direction, Message};
//! use acp_extension_core::connection::sequence::SequenceRule;
//! use serde_json::{json, Value};
//!
//! let mut c = Connection::new();
//! let mut follow = |params: Value| {
//!     let event = json!({"jsonrpc": "2.0", "method": "_ua/subagents/event", "params": params});
//!     match c.classify(Direction::AgentToClient, &event, None).remove(0) {
//!         Message::Call(call) => (call.run_accepted, call.sequence),
//!         _ => unreachable!(),
//!     }
//! };
//! let support = json!({"stream": [], "progress": false, "outputRead": "none", "cancel": false});
//! let (accepted, _) = follow(json!({"version": 1, "sessionId": "s", "runId": "r",
//!     "type": "snapshot", "snapshot": {"state": "completed", "support": support}}));
//! assert!(accepted);
//! let (accepted, findings) = follow(json!({"version": 1, "sessionId": "s", "runId": "r",
//!     "type": "progress", "progress": {}}));
//! assert!(!accepted);
//! assert!(findings.iter().any(|f| f.rule == SequenceRule::SubagentAfterTerminal));
//! ```

use std::collections::{HashMap, VecDeque};
use std::fmt;

use serde_json::Value;

use crate::namespace;
use crate::subagent_events::{SubagentEvent, SubagentEventPayload};
use crate::violation::child;
use crate::wire::WireEnum;
use crate::wire::bounded::{BoundedMap, BoundedSet, id_hash};

/// Capacities of the sequence memory. When one is reached the oldest entry
/// is forgotten, so a rule that needs it may stay silent (never wrong).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SequenceLimits {
    /// Sessions tracked at once; the least recently used one is dropped.
    pub sessions: usize,
    /// Subagent runs remembered per session.
    pub runs_per_session: usize,
    /// Native ids (tool call, task, turn ids) remembered per session.
    pub native_ids_per_session: usize,
    /// Steer ids remembered per session.
    pub steer_ids_per_session: usize,
    /// Finished usage scopes remembered per session.
    pub scopes_per_session: usize,
    /// Usage scopes whose totals are tracked, over all sessions.
    pub usage_scopes: usize,
    /// Models tracked per usage scope.
    pub models_per_scope: usize,
    /// Requests awaiting a response.
    pub pending_requests: usize,
}

impl Default for SequenceLimits {
    /// The checker's defaults: 64 sessions, 1024 runs, 4096 native ids,
    /// 256 steer ids and 1024 ended scopes per session, 256 usage scopes
    /// of 256 models each, 1024 pending requests.
    fn default() -> Self {
        Self {
            sessions: 64,
            runs_per_session: 1024,
            native_ids_per_session: 4096,
            steer_ids_per_session: 256,
            scopes_per_session: 1024,
            usage_scopes: 256,
            models_per_scope: 256,
            pending_requests: 1024,
        }
    }
}

impl SequenceLimits {
    /// No capacity at all: everything is remembered for the connection's
    /// life (the consumer state's default).
    pub const fn unbounded() -> Self {
        Self {
            sessions: usize::MAX,
            runs_per_session: usize::MAX,
            native_ids_per_session: usize::MAX,
            steer_ids_per_session: usize::MAX,
            scopes_per_session: usize::MAX,
            usage_scopes: usize::MAX,
            models_per_scope: usize::MAX,
            pending_requests: usize::MAX,
        }
    }
}

/// One sequence rule. Its [`id`](SequenceRule::id) is the rule id a linter
/// prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SequenceRule {
    /// A run's first event is not a snapshot (or a run without a snapshot
    /// goes on sending events).
    SubagentFirstNotSnapshot,
    /// An event for a run after its terminal snapshot (other than a
    /// snapshot repeating the terminal state).
    SubagentAfterTerminal,
    /// A run id equal to a native id of the same session.
    SubagentRunIdNative,
    /// A cumulative usage total fell within one scope.
    UsageTotalDecreased,
    /// `delta` is not the change of `modelUsage` since the scope's
    /// previous update.
    UsageDeltaMismatch,
    /// A usage scope id reappears after another scope began.
    UsageScopeReentered,
    /// `steer_applied` names a steer id the client never sent.
    SteerUnknownId,
    /// A steer sent during a turn is answered after the turn ended.
    SteerAnsweredAfterTurn,
    /// A steer answered `injected` is never named by `steer_applied`.
    SteerNotApplied,
    /// A contract notification of the agent names a session this
    /// connection never opened (judged once the connection was followed
    /// from its `initialize`).
    SessionNotOpened,
}

impl SequenceRule {
    /// Every sequence rule.
    pub const ALL: [SequenceRule; 10] = [
        SequenceRule::SubagentFirstNotSnapshot,
        SequenceRule::SubagentAfterTerminal,
        SequenceRule::SubagentRunIdNative,
        SequenceRule::UsageTotalDecreased,
        SequenceRule::UsageDeltaMismatch,
        SequenceRule::UsageScopeReentered,
        SequenceRule::SteerUnknownId,
        SequenceRule::SteerAnsweredAfterTurn,
        SequenceRule::SteerNotApplied,
        SequenceRule::SessionNotOpened,
    ];

    /// The stable rule id (`subagent-after-terminal`, …).
    pub const fn id(self) -> &'static str {
        match self {
            SequenceRule::SubagentFirstNotSnapshot => "subagent-first-not-snapshot",
            SequenceRule::SubagentAfterTerminal => "subagent-after-terminal",
            SequenceRule::SubagentRunIdNative => "subagent-run-id-native",
            SequenceRule::UsageTotalDecreased => "usage-total-decreased",
            SequenceRule::UsageDeltaMismatch => "usage-delta-mismatch",
            SequenceRule::UsageScopeReentered => "usage-scope-reentered",
            SequenceRule::SteerUnknownId => "steer-unknown-id",
            SequenceRule::SteerAnsweredAfterTurn => "steer-answered-after-turn",
            SequenceRule::SteerNotApplied => "steer-not-applied",
            SequenceRule::SessionNotOpened => "unknown-session",
        }
    }
}

/// Whether `rule` is one of the usage rules (a consumer folds the update
/// anyway and words the record itself).
pub(crate) fn is_usage_rule(rule: SequenceRule) -> bool {
    matches!(
        rule,
        SequenceRule::UsageTotalDecreased
            | SequenceRule::UsageDeltaMismatch
            | SequenceRule::UsageScopeReentered
    )
}

impl fmt::Display for SequenceRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// One break of a sequence rule.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SequenceFinding {
    /// The rule broken.
    pub rule: SequenceRule,
    /// JSON pointer inside the message (relative to the message root, so
    /// `/params/runId`; empty when the whole message is meant).
    pub pointer: String,
    /// One-line explanation.
    pub message: String,
}

impl SequenceFinding {
    fn new(rule: SequenceRule, pointer: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            rule,
            pointer: pointer.into(),
            message: message.into(),
        }
    }
}

#[doc(hidden)]
/// What the run lifecycle rules read of a subagent event: the same facts
/// whether the event is the params as JSON (valid or not) or the typed
/// [`SubagentEvent`], so that one rule reads both.
///
/// ```
/// use acp_extension_core::connection::sequence::EventFacts;
/// use acp_extension_core::subagent_events::SubagentEvent;
/// use serde_json::json;
///
/// let params = json!({"version": 1, "sessionId": "s", "runId": "r", "type": "snapshot",
///     "snapshot": {"state": "completed", "support": {"stream": [], "progress": false,
///         "outputRead": "none", "cancel": false}}});
/// let typed: SubagentEvent = serde_json::from_value(params.clone())?;
/// assert_eq!(EventFacts::from(&params), EventFacts::from(&typed));
/// assert_eq!(EventFacts::from(&typed).snapshot_state, Some("completed"));
/// # Ok::<_, serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct EventFacts<'a> {
    /// `sessionId`, when a string.
    pub session_id: Option<&'a str>,
    /// `runId`, when a string.
    pub run_id: Option<&'a str>,
    /// `type`, when a string.
    pub event_type: Option<&'a str>,
    /// `snapshot.state`, when a string.
    pub snapshot_state: Option<&'a str>,
    /// `snapshot.parentToolCallId`, when a string.
    pub parent_tool_call_id: Option<&'a str>,
    /// `nativeTurnId`, when a string.
    pub native_turn_id: Option<&'a str>,
}

impl<'a> From<&'a Value> for EventFacts<'a> {
    fn from(params: &'a Value) -> Self {
        let snapshot = params.get("snapshot");
        Self {
            session_id: str_at(params, "sessionId"),
            run_id: str_at(params, "runId"),
            event_type: str_at(params, "type"),
            snapshot_state: snapshot.and_then(|x| str_at(x, "state")),
            parent_tool_call_id: snapshot.and_then(|x| str_at(x, "parentToolCallId")),
            native_turn_id: str_at(params, "nativeTurnId"),
        }
    }
}

impl<'a> From<&'a SubagentEvent> for EventFacts<'a> {
    fn from(event: &'a SubagentEvent) -> Self {
        // Keys that are not the event type's own are in `extra`, as the
        // JSON reading finds them.
        let extra = |key: &str| event.extra.get(key);
        let extra_snapshot = extra("snapshot");
        let (snapshot_state, parent_tool_call_id) = match &event.payload {
            SubagentEventPayload::Snapshot(s) => {
                (Some(s.state.as_str()), s.parent_tool_call_id.as_deref())
            }
            _ => (
                extra_snapshot.and_then(|x| str_at(x, "state")),
                extra_snapshot.and_then(|x| str_at(x, "parentToolCallId")),
            ),
        };
        let native_turn_id = match &event.payload {
            SubagentEventPayload::Output(o) => o.native_turn_id.as_deref(),
            _ => extra("nativeTurnId").and_then(Value::as_str),
        };
        Self {
            session_id: Some(event.session_id.as_str()),
            run_id: Some(event.run_id.as_str()),
            event_type: Some(event.payload.event_type().as_str()),
            snapshot_state,
            parent_tool_call_id,
            native_turn_id,
        }
    }
}

/// What [`SequenceTracker::subagent_event`] decided about one event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub(crate) struct RunVerdict {
    /// Whether a consumer folds the event: the run has a snapshot (this one
    /// or an earlier one) and is not final, or the event repeats its
    /// terminal state. Rejected events are reported in `findings`.
    pub accepted: bool,
    /// The rules the event broke.
    pub findings: Vec<SequenceFinding>,
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

mod dispatch;
mod tracker;

pub(crate) use tracker::SequenceTracker;
pub use tracker::TrackedState;
