//! The consumer boundary: one typed state folded from a connection's
//! traffic, in every dialect a client meets.
//!
//! Feed a [`ConnectionState`] every JSON-RPC message of one connection with
//! its [`Direction`] ([`ConnectionState::message`]), or call the typed entry
//! points from an SDK client's handlers
//! ([`ConnectionState::session_notification`],
//! [`ConnectionState::notification`], [`ConnectionState::request`],
//! [`ConnectionState::response`]). Each call returns the [`Change`]s it
//! made, for a UI to react to; the state itself is read with
//! [`ConnectionState::session`], [`ConnectionState::rate_limits`] and
//! friends, or serialized whole with any serde serializer.
//!
//! Nothing is dropped silently: every input value is folded (it changed
//! the state), ignored (transcript content and calls the state does not
//! model, [`Change::Transcript`] and [`Change::Seen`], each kind counted
//! in [`IgnoredCounts`]) or recorded ([`ConnectionState::accounting`]).
//! A session that sent anything is in the state. A malformed
//! extension payload, a sequence rule break ([`crate::connection::sequence`], the same
//! code a linter runs), an unknown session update or a value that is
//! no message becomes a [`Change::Invalid`] naming the method, the JSON
//! pointer, the rule and the value's index (and line, with
//! [`ConnectionState::set_line`]), and is kept in
//! [`ConnectionState::invalid`]; [`ConnectionState::accounting`] counts
//! them. A contract method its receiver does not read is recorded and not
//! folded, as a linter reports it: written in a namespace the
//! receiver did not advertise (`namespace-mismatch`), or of a feature a peer that
//! must advertise it did not (`not-advertised`; `not-negotiated` for
//! subagent events), once that peer's initialize was seen.
//!
//! No input panics the state, and a value of the wrong type anywhere in a
//! message is either recorded at its field, or folded by one of these
//! rules (each single-field type change of real traffic is tested against
//! them):
//!
//! * a message that is no JSON-RPC message (no `method`, nor `result` or
//!   `error`; an `id` that is no string, number or null) is recorded
//!   `not-a-message`; a `session/update` whose params are no object, whose
//!   `sessionId` is missing, empty or no string, or whose `update` is no
//!   object is recorded at that field and placed in no session (never in a
//!   guessed one); a result that is no object is recorded and nothing
//!   of it folded;
//! * a field the state does not read changes nothing, whatever it holds;
//! * a value of the wrong type at an optional field the state reads is
//!   read as absent;
//! * `null` clears what it names (and what the state made of it), as a
//!   patch does;
//! * a value the state keeps as it was sent (a vendor's capability, the
//!   agent's info, a field of several types) is kept as sent.
//!
//! # Dialects
//!
//! | Fact | Extension | Standard ACP (and the official adapters) | Vendor, AIR, legacy |
//! |---|---|---|---|
//! | subagent runs | `subagents/event` (also bare, without an envelope) | `subagent_update` (a run is a child session; `idle` is not terminal), the child session's updates, `session_message` | AIR's `subagent_spawned`, `subagent_state_update`, `_subagent_update` |
//! | usage | `session/usage_update` | `usage_update` (context `used`/`size`/`cost`); the prompt result's `usage` and `_meta.quota`, v2's idle `state_update` | `_acp_ext:session_usage_update` |
//! | rate limits | `rate_limits/update`, `rate_limits/get` | `usage_update._meta["_claude/rateLimit"]` | `_acp_ext:session_rate_limits` |
//! | compaction, retry | `_meta.<ns>.activity` on tool calls | `compaction_update` (summary as text or content blocks), `compaction_summary_chunk` | |
//! | notices | `_meta.<ns>.notice` on `session_info_update` | `notice` | |
//! | plans | | `plan`, `plan_update`, `plan_removed` | `_acp_ext:codex_proposed_plan` |
//! | goals | `_meta.<ns>.goal` | | `_meta.goal` (ms), `_meta.codex.goal` (s), `_meta.jetbrains.air.goal` (ms) |
//! | steering | `session/steer`, `_meta.<ns>.steer` | `_session/steering` and its outcomes | `_meta.claudeCode.steer`, `_meta.codex.steer` |
//! | tasks | `_meta.<ns>.task` on tool calls | | `_claude/taskLifecycle`, `_kimi/taskLifecycle`, AIR's `async_task_*` |
//! | titles, activity | `_meta.<ns>.titleSource`, `session/activity_update` | `session_info_update`, v2 `state_update` | `_meta.codex.titleSource`, `_meta.codex.threadStatus`, `_meta.codex.phase` |
//! | capabilities | `agentCapabilities._meta.<ns>` | v2 `capabilities._meta.<ns>`, `agentInfo` / `info` | `_meta.steering` and vendor keys ([`PeerFeatures::vendor`]) |
//!
//! Both namespaces (`_lody`, `_ua`) are read everywhere; a vendor's keys
//! only from that vendor (unless `agentInfo` names another). Child
//! permission requests routed to the root session by
//! `_meta.<ns>.subagentRunId` / `subagentToolCallId`, or asked on a
//! standard child's own session, are recorded with their run.
//! Engine-opened turns (`turnId: "auto:<n>"` with `turnOrigin`, closed by
//! `turnEnded`) are kept in [`TurnState::engine_turn`].
//!
//! # ACP v2
//!
//! A connection whose agent answered `protocolVersion: 2`
//! ([`NegotiationState::is_v2`]) is folded by v2's rules; v1 connections
//! are not affected. The `session/prompt` answer is a receipt
//! ([`TurnState::accepted`]); the prompt's turn ends at the first `idle`
//! `state_update` after that receipt, with its stop reason, usage and
//! `_meta.quota`, and open steers are settled there (an idle after a
//! reported busy state but before the receipt ends work the agent started
//! itself: its usage and stop reason count, the prompt's turn goes on). A
//! repeated idle, and the snapshot a `session/load` or `session/resume`
//! sends before its answer, end nothing and count nothing. `unknown` and custom
//! states leave the level unconfirmed ([`ActivityState::unconfirmed`],
//! shown busy); background work is counted by type
//! ([`ActivityState::background`]). A child session's whole-message
//! `agent_message`, `tool_call_content_chunk` and plans reach its run;
//! `tool_call_content_chunk`, `terminal_output_chunk`, `replay_complete`
//! and custom `_…` updates of a session are transcript.
//!
//! # Rules
//!
//! * **Rate limits** merge per `limitId` and replace within it: each row
//!   (its `windows` included) replaces the row with its id; rows a
//!   snapshot omits are kept, so `rateLimits: []` changes nothing; a row
//!   whose `fetchedAtEpochSeconds` is older than the stored one's does not
//!   replace it; a failed `rate_limits/get` marks the rows `stale` and keeps
//!   their data.
//! * **Usage**: each scope (`_meta.<ns>.usageScopeId`, else the session)
//!   is cumulative on its own; `totals` are the per-model sum over scopes
//!   ([`crate::usage::sum_model_usage`]: an unknown cost stays unknown) and
//!   `total` their sum over models, never a sum of `usage`; `delta` is kept
//!   apart and never added; a counter that falls keeps its higher value
//!   ([`crate::usage::keep_max`]); a falling total, a reused scope or an
//!   update without `modelUsage` marks the scope `incomplete`; the turn
//!   usage of prompt results is its own figure.
//! * **Subagent runs**: see the `runs` rules on [`RunState`] and
//!   [`StandardRun`]: a snapshot replaces the run's metadata; progress is
//!   sparse and absolute (`null` clears); text chunks append; tool call
//!   updates merge by id (each call kept as it came, its keys in the
//!   agent's order), a plan replaces; `outputIncomplete` is sticky;
//!   `completed`, `failed`, `cancelled` are final, `unknown` is not, and a
//!   standard `idle` is not terminal; ownership (`parentToolCallId`) is
//!   fixed at the first binding; a `parentRunId` that would close a cycle or
//!   names a run of another root session is reported and left unresolved;
//!   [`ConnectionState::disconnected`] and `session/load|resume` mark live
//!   runs `unknown` with `outputIncomplete`.
//! * **Goals** are read on `session_info_update` only: absent keeps, `null`
//!   clears (and is told apart from never reported), an object replaces;
//!   an invalid goal is reported and keeps the old one.
//! * **Titles**: see [`SessionState::title`].
//!
//! ```
//! use acp_extension_core::state::{Change, ConnectionState, Direction};
//! use serde_json::json;
//!
//! let mut state = ConnectionState::new();
//! let changes = state.message(Direction::AgentToClient, &json!({"jsonrpc": "2.0",
//!     "method": "_lody/rate_limits/update", "params": {"rateLimits": [{"limitId": "codex",
//!     "scope": {"providerId": "openai"}, "windows": [{"usedPercent": 40,
//!     "windowDurationSeconds": 18000, "resetsAtEpochSeconds": 1767225600}]}]}}));
//! assert_eq!(changes, [Change::RateLimits { limit_ids: vec!["codex".into()] }]);
//! // An empty snapshot keeps every row.
//! state.message(Direction::AgentToClient, &json!({"jsonrpc": "2.0",
//!     "method": "_lody/rate_limits/update", "params": {"rateLimits": []}}));
//! assert_eq!(state.rate_limits()["codex"].rate_limit.windows[0].used_percent.get(), 40.0);
//! ```

// A client embeds the state: indexing that could panic is denied here too
// (the crate denies every other panic site).
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

mod calls;
mod change;
mod compact;
mod extensions;
mod legacy;
mod observe;
mod rules;
mod run_output;
mod runs;
mod tasks;
mod updates;
mod usage;
mod view;

use runs::EventSource;

pub use crate::connection::Direction;
pub use change::Change;
use change::{Changes, IgnoredKind};
use compact::{CompactObject, plain_without};
#[doc(hidden)]
pub use legacy::is_legacy_method;
use observe::Record;
#[doc(hidden)]
pub use rules::{
    call_has_rules, call_violations, is_known_session_update, result_violation, result_words,
    session_update_parts, standard_update_violations,
};
pub use view::*;

use std::collections::VecDeque;

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::Value;

use crate::capabilities::Side;
use crate::connection::sequence::{self, SequenceFinding};
use crate::connection::{Connection, Line, Message, Observer, Pairing, Reads};
use crate::negotiation::NamespaceReader;

#[cfg(feature = "schema")]
use schemars::JsonSchema;

/// Capacities of a [`ConnectionState`] in bounded mode. When one is
/// reached the oldest entry goes (the oldest session, run, task, notice,
/// invalid record…), so a long-lived client stays within bounds; the text
/// of a run keeps its tail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct StateLimits {
    /// The sequence rules' memory (the checker's limits).
    pub sequence: sequence::SequenceLimits,
    /// Sessions kept.
    pub sessions: usize,
    /// Subagent runs per session.
    pub runs_per_session: usize,
    /// Bytes of message text per run: the tail is kept. The text is
    /// trimmed back to this many bytes when it grows past one and a half
    /// times as many (a trim moves the whole tail, so it is not done on
    /// every chunk); a run holds at most 1.5 × this.
    pub text_per_run: usize,
    /// Tool calls per run.
    pub tool_calls_per_run: usize,
    /// Task rows per session.
    pub tasks_per_session: usize,
    /// Activity entries per session.
    pub activities_per_session: usize,
    /// Notices per session.
    pub notices_per_session: usize,
    /// Steers per session.
    pub steers_per_session: usize,
    /// Usage scopes per session.
    pub scopes_per_session: usize,
    /// Turn usage entries per session (their sums cover every turn).
    pub turn_usage_per_session: usize,
    /// Rate-limit rows.
    pub rate_limits: usize,
    /// Invalid records kept ([`ConnectionState::invalid_count`] counts all).
    pub invalid: usize,
}

impl StateLimits {
    /// No bound: everything is kept for the connection's life (the
    /// default of [`ConnectionState::new`]).
    pub const fn unbounded() -> Self {
        Self {
            sequence: sequence::SequenceLimits::unbounded(),
            sessions: usize::MAX,
            runs_per_session: usize::MAX,
            text_per_run: usize::MAX,
            tool_calls_per_run: usize::MAX,
            tasks_per_session: usize::MAX,
            activities_per_session: usize::MAX,
            notices_per_session: usize::MAX,
            steers_per_session: usize::MAX,
            scopes_per_session: usize::MAX,
            turn_usage_per_session: usize::MAX,
            rate_limits: usize::MAX,
            invalid: usize::MAX,
        }
    }

    /// The bounded mode's defaults: the checker's sequence limits, 64
    /// sessions, 1024 runs per session with 64 KiB of text and 256 tool
    /// calls each, 1024 tasks, 256 activities, 256 notices, 256 steers,
    /// 1024 usage scopes and 256 turn usage entries per session, 256
    /// rate-limit rows, 1024 invalid records.
    pub fn bounded() -> Self {
        Self {
            sequence: sequence::SequenceLimits::default(),
            sessions: 64,
            runs_per_session: 1024,
            text_per_run: 64 * 1024,
            tool_calls_per_run: 256,
            tasks_per_session: 1024,
            activities_per_session: 256,
            notices_per_session: 256,
            steers_per_session: 256,
            scopes_per_session: 1024,
            turn_usage_per_session: 256,
            rate_limits: 256,
            invalid: 1024,
        }
    }
}

impl Default for StateLimits {
    fn default() -> Self {
        Self::unbounded()
    }
}

/// A request seen, awaiting its response.
#[derive(Debug, Clone)]
struct Call {
    method: String,
    session: Option<String>,
    steer_id: Option<String>,
    /// The request named a session the state did not know: if the agent
    /// rejects it and nothing else named the session, it is no session.
    new_session: bool,
}

/// The folded state of one connection; see the [module docs](self).
///
/// It serializes as JSON through serde_json (`to_writer`, `to_value`): a
/// run's tool calls and its long text go out as serde_json's raw values,
/// which serializers of other formats do not know.
///
/// # Example
///
/// ```
/// use acp_extension_core::state::{ConnectionState, Direction, StateLimits};
/// use serde_json::json;
///
/// // Bounded: a long-lived client keeps the newest sessions, runs and text.
/// let mut state = ConnectionState::with_limits(StateLimits::bounded());
/// state.message(Direction::ClientToAgent, &json!({"jsonrpc": "2.0", "id": 1,
///     "method": "session/prompt", "params": {"sessionId": "s", "prompt": []}}));
/// state.message(Direction::AgentToClient, &json!({"jsonrpc": "2.0", "id": 1,
///     "result": {"stopReason": "end_turn", "usage": {"totalTokens": 30,
///         "inputTokens": 20, "outputTokens": 10}}}));
/// let session = state.session("s").unwrap();
/// assert_eq!(session.usage.turn_totals.turns, 1);
/// assert_eq!(session.usage.turn_totals.usage["totalTokens"], 30);
/// assert_eq!(state.invalid_count(), 0);
/// ```
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ConnectionState {
    #[serde(skip)]
    limits: StateLimits,
    /// The connection the state follows on its own (through
    /// [`ConnectionState::message`] and the other entry points); unused
    /// when it observes another [`Connection`].
    #[serde(skip)]
    own: Option<Box<Connection>>,
    /// What the connection said about the message being folded.
    #[serde(skip)]
    now: Now,
    /// Changes made as an [`Observer`], until taken (or only counted).
    #[serde(skip)]
    observed: Changes,
    /// The last session started or prompted (legacy payloads name none).
    #[serde(skip)]
    current_session: Option<String>,
    /// Child sessions announced by standard `subagent_update`s: child
    /// session id → root session id.
    #[serde(skip)]
    standard_children: IdMap<String>,
    /// Sessions whose `session/load` or `session/resume` awaits its answer:
    /// a v2 `state_update` then is the resume snapshot, no turn's end.
    #[serde(skip)]
    resuming: Vec<String>,
    /// Both peers' advertisements.
    negotiation: NegotiationState,
    /// Which namespaces each peer reads, once its initialize was seen.
    #[serde(skip)]
    readers: Readers,
    /// Sessions by id, in first-seen order.
    sessions: IdMap<SessionState>,
    /// Rate-limit rows by `limitId`.
    rate_limits: IdMap<RateLimitEntry>,
    /// What was not folded, oldest first (bounded by [`StateLimits::invalid`]).
    invalid: VecDeque<Invalid>,
    /// Every invalid record, kept or not.
    invalid_count: u64,
    /// Messages folded.
    messages: u64,
    /// How every input value was accounted for.
    accounting: Accounting,
    /// The input line of the value being folded, when the reader said.
    #[serde(skip)]
    line: Option<u64>,
}

/// How the input values of a connection were accounted for: each value (a
/// message, a batch element, a line that is not JSON) is exactly one of
///
/// * **folded**: it changed the state (a [`Change`] other than
///   [`Change::Transcript`] and [`Change::Seen`]);
/// * **ignored**: read, and by design nothing the state holds, of a kind
///   [`IgnoredCounts`] lists and counts;
/// * **recorded**: at least one [`Invalid`] names it (folded partly or not
///   at all).
///
/// `values == folded + ignored + recorded`; a value that changed nothing
/// and is of no ignored kind is a bug of the state, counted by
/// [`Accounting::unaccounted`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Accounting {
    /// Input values read.
    pub values: u64,
    /// Values that changed the state and were not recorded.
    pub folded: u64,
    /// Values read that the state does not hold, by design.
    pub ignored: u64,
    /// Values with at least one record (folded partly or not at all).
    pub recorded: u64,
    /// The ignored values by kind.
    pub ignored_kinds: IgnoredCounts,
}

impl Accounting {
    /// Values neither folded, ignored nor recorded: lost without a word,
    /// which the state never does (0 unless it has a bug).
    pub fn unaccounted(&self) -> u64 {
        self.values
            .saturating_sub(self.folded + self.ignored + self.recorded)
    }
}

/// The kinds of value the state reads and does not hold, each counted: the
/// one list of what is ignored by design.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct IgnoredCounts {
    /// A session's transcript ([`Change::Transcript`]): message, thought
    /// and user chunks or whole messages, tool calls and their content
    /// without task or activity metadata, terminal output, commands, modes,
    /// config options. The state keeps no transcript; a UI renders it from
    /// the message.
    pub transcript: u64,
    /// A call the state does not model ([`Change::Seen`]): file system and
    /// terminal calls, modes, models, authentication, a vendor's own
    /// method, the contract's queries and goal control (their effects
    /// arrive as updates), and an answer that changes nothing.
    pub calls: u64,
    /// A response whose request the input does not hold.
    pub unpaired_answers: u64,
}

/// Which namespaces each peer reads ([`NamespaceReader`]), once its
/// initialize was seen.
#[derive(Debug, Default, Clone, Copy)]
struct Readers {
    agent: Option<NamespaceReader>,
    client: Option<NamespaceReader>,
}

/// What the connection said about the message being folded.
#[derive(Debug, Default, Clone)]
struct Now {
    /// Sequence findings not yet recorded.
    sequence: Vec<SequenceFinding>,
    /// Whether a subagent event is folded.
    run_accepted: bool,
}

impl Observer for ConnectionState {
    fn message(&mut self, _: &Connection, message: &Message<'_>) {
        let mut out = std::mem::take(&mut self.observed);
        let from = (out.made, out.invalid, out.ignored);
        self.observe(message, &mut out);
        self.account(&out, from);
        self.observed = out;
    }

    fn unreadable(&mut self, _: &Connection, rule: &str, message: &str) {
        let mut out = std::mem::take(&mut self.observed);
        let from = (out.made, out.invalid, out.ignored);
        self.record(&mut out, Record::new("", rule, message.to_owned()));
        self.account(&out, from);
        self.observed = out;
    }

    /// The state folds a chunk of plain text and a tool call straight from
    /// the line, and builds every other event.
    fn reads(&self) -> Reads {
        Reads::Fold
    }
}

impl Default for ConnectionState {
    fn default() -> Self {
        Self::with_limits(StateLimits::unbounded())
    }
}

impl ConnectionState {
    /// An empty state that keeps everything (unbounded).
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty state with these capacities.
    pub fn with_limits(limits: StateLimits) -> Self {
        Self {
            limits,
            own: Some(Box::new(Connection::with_limits(limits.sequence))),
            now: Now::default(),
            observed: Changes::default(),
            current_session: None,
            standard_children: IdMap::default(),
            resuming: Vec::new(),
            negotiation: NegotiationState::default(),
            readers: Readers::default(),
            sessions: IdMap::default(),
            rate_limits: IdMap::default(),
            invalid: VecDeque::new(),
            invalid_count: 0,
            messages: 0,
            accounting: Accounting::default(),
            line: None,
        }
    }

    /// Its capacities.
    pub fn limits(&self) -> StateLimits {
        self.limits
    }

    /// Both peers' advertisements.
    pub fn negotiation(&self) -> &NegotiationState {
        &self.negotiation
    }

    /// One session.
    pub fn session(&self, session_id: &str) -> Option<&SessionState> {
        self.sessions.get(session_id)
    }

    /// Every session, in first-seen order.
    pub fn sessions(&self) -> &IdMap<SessionState> {
        &self.sessions
    }

    /// The rate-limit rows by `limitId`.
    pub fn rate_limits(&self) -> &IdMap<RateLimitEntry> {
        &self.rate_limits
    }

    /// What was not folded, oldest first (the newest [`StateLimits::invalid`]).
    pub fn invalid(&self) -> impl ExactSizeIterator<Item = &Invalid> {
        self.invalid.iter()
    }

    /// How many invalid records there were in all.
    pub fn invalid_count(&self) -> u64 {
        self.invalid_count
    }

    /// Messages folded so far.
    pub fn messages(&self) -> u64 {
        self.messages
    }

    /// How every input value was accounted for.
    pub fn accounting(&self) -> Accounting {
        self.accounting
    }

    /// Tells the state the input line of the values that follow (1-based),
    /// so that their records name it ([`Invalid::line`]); `None` when the
    /// input has no lines.
    pub fn set_line(&mut self, line: Option<u64>) {
        self.line = line;
    }

    /// Counts the value whose changes began when `out` had made `from`
    /// (changes, invalid records, ignored changes).
    fn account(&mut self, out: &Changes, from: (usize, usize, usize)) {
        let a = &mut self.accounting;
        a.values += 1;
        let ignored = out.ignored - from.2;
        if out.invalid > from.1 {
            a.recorded += 1;
        } else if out.made - from.0 > ignored {
            a.folded += 1;
        } else if ignored > 0 {
            a.ignored += 1;
            let kinds = &mut a.ignored_kinds;
            match out.ignored_kind {
                Some(IgnoredKind::Transcript) => kinds.transcript += 1,
                Some(IgnoredKind::Call) | None => kinds.calls += 1,
                Some(IgnoredKind::UnpairedAnswer) => kinds.unpaired_answers += 1,
            }
        }
    }

    /// What the sequence rules' memory holds (bounded by
    /// [`StateLimits::sequence`]).
    pub fn tracked(&self) -> sequence::TrackedState {
        self.own
            .as_deref()
            .map(Connection::tracked)
            .unwrap_or_default()
    }

    /// Folds one line of a transcript: a JSON-RPC message (or batch) as
    /// text. A line that is not JSON becomes a [`Change::Invalid`] with
    /// rule `not-json`.
    pub fn line(&mut self, direction: Direction, line: &str) -> Vec<Change> {
        self.follow_own(|c, o| c.follow_line(direction, line, o))
    }

    /// Records input that could not be read as a message at all (a line
    /// that is not JSON, a value too large): `rule` names why.
    pub fn unreadable(&mut self, rule: &str, message: &str) -> Vec<Change> {
        self.follow_own(|c, o| c.unreadable(rule, message, o))
    }

    /// Folds one JSON-RPC message (or batch) that travelled in `direction`
    /// ([`Direction::Unknown`] infers it from the method, or for a response
    /// from its request).
    pub fn message(&mut self, direction: Direction, message: &Value) -> Vec<Change> {
        self.follow_own(|c, o| c.follow(direction, message, o))
    }

    /// Like [`ConnectionState::message`], for input that keeps a response
    /// without its request (fixtures): `request_method` names the request
    /// it answers, which is then folded as if its request had been seen (a
    /// session-scoped answer goes to the current session). Ignored for
    /// requests and notifications, and when the request was seen.
    pub fn message_with_method(
        &mut self,
        direction: Direction,
        message: &Value,
        request_method: Option<&str>,
    ) -> Vec<Change> {
        self.follow_own(|c, o| c.follow_with_method(direction, message, request_method, o))
    }

    /// Folds one line read ahead by [`Line::read`] (perhaps on another
    /// thread; read it for [`Reads::Fold`], what the state reads): a
    /// verified subagent event folds as its JSON tree would, without
    /// building one.
    pub fn follow_read(&mut self, direction: Direction, line: &Line) -> Vec<Change> {
        self.follow_own(|c, o| c.follow_read(direction, line, o))
    }

    /// Runs `f` on the state's own connection with the state as its
    /// observer; the changes made.
    fn follow_own(
        &mut self,
        f: impl FnOnce(&mut Connection, &mut [&mut dyn Observer]),
    ) -> Vec<Change> {
        // Taken out and put back as a box: the connection itself stays put.
        let mut own = self.own.take().unwrap_or_default();
        f(&mut own, &mut [self as &mut dyn Observer]);
        self.own = Some(own);
        self.take_changes()
    }

    /// The changes made since the last call, when the state observes a
    /// [`Connection`] it does not own (through [`Observer`]).
    pub fn take_changes(&mut self) -> Vec<Change> {
        std::mem::take(&mut self.observed.list)
    }

    /// Whether the state lists its changes (it does unless told): a state
    /// that only folds (a whole transcript, read for the state it ends
    /// in) can save building them. Unlisted, the calls that fold return
    /// no change; what is folded, recorded and counted
    /// ([`ConnectionState::accounting`]) is the same.
    ///
    /// ```
    /// use acp_extension_core::state::{ConnectionState, Direction};
    /// use serde_json::json;
    ///
    /// let mut state = ConnectionState::new();
    /// state.set_list_changes(false);
    /// let changes = state.message(Direction::AgentToClient, &json!({"jsonrpc": "2.0",
    ///     "method": "session/update", "params": {"sessionId": "s", "update": {
    ///         "sessionUpdate": "session_info_update", "title": "Fix the build"}}}));
    /// assert!(changes.is_empty());
    /// assert_eq!(state.session("s").unwrap().title.as_deref(), Some("Fix the build"));
    /// assert_eq!(state.accounting().folded, 1);
    /// ```
    pub fn set_list_changes(&mut self, list: bool) {
        self.observed.listed = list;
        if !list {
            self.observed.list = Vec::new();
        }
    }

    /// Folds a `session/update` notification an SDK client received.
    pub fn session_notification(
        &mut self,
        notification: &agent_client_protocol::v1::schema::SessionNotification,
    ) -> Vec<Change> {
        let params = serde_json::to_value(notification).unwrap_or(Value::Null);
        self.notification(Direction::AgentToClient, "session/update", &params)
    }

    /// Folds a notification that travelled in `direction`: an extension
    /// notification as an SDK client's `ext_notification` handler receives
    /// it (`_lody/…`, `_ua/…`, the legacy `_acp_ext:*`), or a
    /// `session/update` whose params the SDK could not type (its v1
    /// `SessionUpdate` has no catch-all for tags it does not know).
    pub fn notification(
        &mut self,
        direction: Direction,
        method: &str,
        params: &Value,
    ) -> Vec<Change> {
        let message = serde_json::json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.message(direction, &message)
    }

    /// Folds a request that travelled in `direction` (a client folds the
    /// requests it sends with [`Direction::ClientToAgent`], the agent's
    /// requests it receives with [`Direction::AgentToClient`]).
    pub fn request(
        &mut self,
        direction: Direction,
        id: &Value,
        method: &str,
        params: &Value,
    ) -> Vec<Change> {
        let message =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.message(direction, &message)
    }

    /// Folds the response, travelling in `direction`, to the request with
    /// this `id`: `Ok(result)` or `Err(error)` (the JSON-RPC error object).
    pub fn response(
        &mut self,
        direction: Direction,
        id: &Value,
        outcome: Result<&Value, &Value>,
    ) -> Vec<Change> {
        let message = match outcome {
            Ok(r) => serde_json::json!({"jsonrpc": "2.0", "id": id, "result": r}),
            Err(e) => serde_json::json!({"jsonrpc": "2.0", "id": id, "error": e}),
        };
        self.message(direction, &message)
    }

    /// The user renamed `session_id`: the title only another rename
    /// replaces.
    pub fn user_renamed(&mut self, session_id: &str, title: &str) -> Vec<Change> {
        let s = self.session_mut(session_id);
        s.title = Some(title.trim().to_owned());
        s.title_source = Some(TitleOrigin::User);
        let mut out = Changes {
            listed: self.observed.listed,
            ..Changes::default()
        };
        out.add(|| Change::Title {
            session_id: session_id.to_owned(),
        });
        out.list
    }

    /// The connection was lost: every `pending` or `running` run of every
    /// session becomes `unknown` with `outputIncomplete` and reason
    /// `disconnected`; steers awaiting an answer become
    /// [`SteerStatus::Unknown`]; pending requests are dropped.
    pub fn disconnected(&mut self) -> Vec<Change> {
        let mut out = Changes {
            listed: self.observed.listed,
            ..Changes::default()
        };
        let ids: Vec<String> = self.sessions.keys().cloned().collect();
        for sid in ids {
            self.runs_lost(&sid, &mut out);
            let s = self.session_mut(&sid);
            let mut steers = Vec::new();
            for (id, st) in s.steers.iter_mut() {
                if matches!(st.outcome, SteerStatus::Pending | SteerStatus::Injected) {
                    st.outcome = SteerStatus::Unknown;
                    steers.push(id.clone());
                }
            }
            let requests: Vec<String> = s.pending_requests.drain(..).map(|(k, _)| k).collect();
            s.turns.running = false;
            for steer_id in steers {
                out.add(|| Change::Steer {
                    session_id: sid.clone(),
                    steer_id,
                });
            }
            for request_id in requests {
                out.add(|| Change::RequestResolved {
                    session_id: sid.clone(),
                    request_id,
                });
            }
        }
        if let Some(own) = self.own.as_mut() {
            own.forget_pending();
        }
        out.list
    }
}

pub(super) fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// The JSON Schema (draft 2020-12) of the document `acp-ext state --json`
/// prints per file: `{"file", …}` and the serialized [`ConnectionState`].
#[cfg(feature = "schema")]
pub fn document_schema() -> schemars::Schema {
    /// One file's folded state.
    #[derive(JsonSchema)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct StateDocument {
        /// The transcript read.
        file: String,
        #[serde(flatten)]
        state: ConnectionState,
    }
    crate::schema::generator().into_root_schema_for::<StateDocument>()
}

/// Keeps at most `cap` entries, dropping the oldest.
fn cap_map<V, S>(map: &mut IndexMap<String, V, S>, cap: usize) {
    while map.len() > cap {
        map.shift_remove_index(0);
    }
}

/// Keeps the last `cap` characters of `text` (on a char boundary).
fn cap_text(text: &mut String, cap: usize) {
    if text.len() > cap.saturating_add(cap / 2) {
        let mut cut = text.len() - cap;
        while !text.is_char_boundary(cut) {
            cut += 1;
        }
        text.drain(..cut);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The accounting catches a fold arm that reads a value and reports
    /// nothing of it (a planted silent loss): the value is unaccounted.
    #[test]
    fn a_value_that_changes_nothing_and_is_on_no_list_is_unaccounted() {
        let mut state = ConnectionState::new();
        let mut out = Changes::default();
        out.ignore(IgnoredKind::Call, || Change::Seen { method: None });
        state.account(&out, (0, 0, 0));
        // The planted loss: a value whose fold made no change at all.
        state.account(&out, (out.made, out.invalid, out.ignored));
        let a = state.accounting();
        assert_eq!((a.values, a.ignored, a.unaccounted()), (2, 1, 1));
    }
}
