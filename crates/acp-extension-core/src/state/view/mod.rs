//! What the state holds: one session's folded view, and its parts.
//!
//! Every type serializes in camelCase with the contract's key names; the
//! contract's own types ([`GoalSnapshot`], [`ModelUsage`], [`RateLimit`],
//! [`SubagentSnapshot`], [`TaskMeta`]) appear as they travel.

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::capabilities::Side;
use crate::rate_limits::RateLimit;
use crate::session::{
    ActivityKind, GoalSnapshot, NoticeLevel, SessionActivityState, TaskMeta, TitleSource,
};
use crate::subagent_events::{SubagentSnapshot, SubagentState};
use crate::usage::{ModelUsage, UsageDelta};
use crate::wire::MaybeUndefined;

use super::compact::CompactObject;

mod run;
pub use run::{RunState, StandardRun};

use crate::wire::WireEnum;
#[cfg(feature = "schema")]
use schemars::JsonSchema;

/// A map keyed by ids (session ids, run ids, tool call ids, …), in
/// insertion order: what the state holds per session and per run. Keys are
/// hashed with a random seed (std's `RandomState`), so that a peer cannot
/// choose ids that collide.
pub type IdMap<V> = IndexMap<String, V>;

/// Where a session's title came from, in order of authority (see
/// [`SessionState::title`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum TitleOrigin {
    /// A stand-in (`titleSource: "fallback"`, such as the first prompt).
    Fallback,
    /// A title without a `titleSource` tag, from an agent that does not
    /// advertise `sessionTitle`.
    Untagged,
    /// `titleSource: "generated"` from an agent advertising `sessionTitle`.
    Generated,
    /// `titleSource: "explicit"`: a deliberate name.
    Explicit,
    /// The user's rename ([`ConnectionState::user_renamed`](super::ConnectionState::user_renamed)).
    User,
}

impl TitleOrigin {
    pub(crate) fn of(source: TitleSource) -> Option<Self> {
        match source {
            TitleSource::Explicit => Some(Self::Explicit),
            TitleSource::Generated => Some(Self::Generated),
            TitleSource::Fallback => Some(Self::Fallback),
            _ => None,
        }
    }
}

/// A session's activity: Core's `session/activity_update`, codex's
/// `threadStatus`, or ACP v2's `state_update`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ActivityState {
    /// The last reported level; absent until one arrived, and while
    /// [`unconfirmed`](Self::unconfirmed) is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<SessionActivityState>,
    /// A v2 `state_update` whose state the level cannot name (`unknown`, a
    /// custom `_…` or future state), as sent: the previous level is no
    /// longer confirmed, so a client shows a generic busy state until a
    /// known state arrives.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unconfirmed: Option<String>,
    /// Live background tasks (Core's `backgroundTaskCount`); absent until
    /// reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background_task_count: Option<u64>,
    /// v2's background work by `type` (`terminal`, `tool_call`, `subagent`,
    /// custom or future types as sent) with how many of each the last
    /// snapshot listed; `{}` when it listed none, absent while not
    /// reported (omitted is not zero).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background: Option<IndexMap<String, u64>>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ActivityState {
    /// The level to show: the reported level's wire name, `busy` while a
    /// v2 state is [unconfirmed](Self::unconfirmed), `None` until one was
    /// reported.
    ///
    /// ```
    /// use acp_extension_core::state::{ConnectionState, Direction};
    /// use serde_json::json;
    ///
    /// let mut state = ConnectionState::new();
    /// state.message(Direction::AgentToClient, &json!({"jsonrpc": "2.0",
    ///     "method": "session/update", "params": {"sessionId": "s",
    ///     "update": {"sessionUpdate": "state_update", "state": "_compiling"}}}));
    /// assert_eq!(state.session("s").unwrap().activity.shown(), Some("busy"));
    /// ```
    pub fn shown(&self) -> Option<&'static str> {
        if self.unconfirmed.is_some() {
            return Some("busy");
        }
        self.state.map(SessionActivityState::as_str)
    }

    /// Whether foreground work was reported and not yet ended: `running`,
    /// `requires_action`, or an unconfirmed state.
    pub(crate) fn busy(&self) -> bool {
        self.unconfirmed.is_some()
            || matches!(
                self.state,
                Some(SessionActivityState::Running | SessionActivityState::RequiresAction)
            )
    }
}

/// Prompt turns of a session.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TurnState {
    /// `session/prompt` requests sent.
    pub prompts: u64,
    /// Whether a prompt awaits its response.
    pub running: bool,
    /// The stop reason of the last ended turn: a prompt's answer, or (in
    /// ACP v2) the `idle` `state_update` that ended foreground work.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_stop_reason: Option<String>,
    /// ACP v2: prompts the agent acknowledged inserting (the
    /// `session/prompt` receipt); each turn goes on until an `idle`
    /// `state_update` ends it. Not written while zero.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub accepted: u64,
    /// ACP v2: the `messageId` of the last prompt receipt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// A prompt was sent and not answered yet: an idle before its receipt
    /// ends other work (an agent-initiated turn), not this prompt's.
    #[serde(skip)]
    pub(crate) awaiting_answer: bool,
    /// ACP v2: the steer sent as the receipted prompt (`_meta.<ns>.steer`),
    /// settled when the turn ends at its idle.
    #[serde(skip)]
    pub(crate) prompt_steer: Option<String>,
    /// The last `_meta.<ns>.turnId` seen on an update.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// The last `_meta.<ns>.messagePhase` seen on a message chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_phase: Option<String>,
    /// An engine-opened turn in progress (kimi's `turnId: "auto:<n>"` with
    /// `turnOrigin`), until a `session_info_update` with `turnEnded: true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine_turn: Option<EngineTurn>,
    /// Engine-opened turns seen.
    pub engine_turns: u64,
}

/// An engine-opened turn (an adapter convention outside Core).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct EngineTurn {
    /// Its `turnId` (`auto:<n>`).
    pub turn_id: String,
    /// `turnOrigin.kind` (`cron_job`, `task`, …), `engine` when absent.
    pub origin: String,
}

/// A task row: a tool call carrying `_meta.<ns>.task`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TaskState {
    /// The tool call that carries it.
    pub tool_call_id: String,
    /// The tool call's title, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The latest task metadata (replaced whole by each update).
    pub task: TaskMeta,
}

/// Compaction or retry work: a tool call with `_meta.<ns>.activity`, or a
/// standard `compaction_update`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ActivityEntry {
    /// What it is.
    pub kind: ActivityKind,
    /// `in_progress`, `completed`, `failed` or `cancelled` (a tool call's
    /// `pending` reads as `in_progress`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A compaction's summary (standard `compaction_update` and its chunks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Context tokens before and after, when reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub used_tokens_before: Option<f64>,
    /// Context tokens after.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub used_tokens_after: Option<f64>,
    /// `extension` (`_meta.<ns>.activity`) or `standard` (`compaction_update`).
    pub dialect: Dialect,
}

/// Which wire form a fact arrived in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum Dialect {
    /// The contract's own messages (`_lody/…`, `_ua/…`, `_meta.<ns>`).
    Extension,
    /// Standard ACP session updates.
    Standard,
    /// The legacy `_acp_ext:*` payloads (consumer-side compatibility).
    Legacy,
    /// JetBrains AIR's draft of subagents (`subagent_spawned`,
    /// `subagent_state_update`).
    Air,
}

/// A notice: `_meta.<ns>.notice` on `session_info_update`, or a standard
/// `notice` update.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct NoticeEntry {
    /// `info`, `warning` or `error`.
    pub level: NoticeLevel,
    /// The text (the standard notice's `title`, with its description).
    pub message: String,
    /// Who raised it, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Which form it arrived in.
    pub dialect: Dialect,
}

/// One usage scope's ledger: `session` for unscoped updates, else
/// `scope:<usageScopeId>`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ScopeUsage {
    /// The scope id; absent for the session-lifetime scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage_scope_id: Option<String>,
    /// The latest update's `usage`: one operation or turn, not a total
    /// (legacy adapters send a cumulative figure here). Never summed.
    pub usage: ModelUsage,
    /// Cumulative per-model totals, as last reported; a counter or cost
    /// that fell keeps its higher value (an absent `costUSD` stays absent:
    /// unknown, not free). Each row holds the counters and the cost alone:
    /// `contextWindow` and unknown keys are dropped.
    pub model_usage: IndexMap<String, ModelUsage>,
    /// Per model, the highest `costUSD` ever reported in this scope: a cost
    /// once seen is not lost when a later update leaves it out.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub highest_cost_usd: IndexMap<String, f64>,
    /// The latest update's delta, kept apart (never added to the totals).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta: Option<UsageDelta>,
    /// Updates folded.
    pub updates: u64,
    /// Updates without `modelUsage` (unattributed: their `usage` is in
    /// [`UsageState::unattributed`], never in a total).
    pub unattributed_updates: u64,
    /// A total fell, the scope came back after another began, or an update
    /// had no `modelUsage`: the totals may miss something.
    pub incomplete: bool,
    /// Which form its updates arrived in.
    pub dialect: Dialect,
}

/// Context occupancy from the standard `usage_update`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ContextUsage {
    /// Tokens in context.
    pub used: u64,
    /// The context window.
    pub size: u64,
    /// Cumulative cost (`{amount, currency}`), when reported; an update
    /// without one keeps the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<Value>,
}

/// The usage one prompt result reported for its turn: ACP's `usage`
/// (`totalTokens`, `inputTokens`, `outputTokens`, `thoughtTokens`,
/// `cachedReadTokens`, `cachedWriteTokens`) and the adapters'
/// `_meta.quota`. Its buckets overlap differently from [`ModelUsage`]'s,
/// so it is never mixed with the Core ledger.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TurnUsage {
    /// The turn's stop reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// `usage` of the prompt result, counters by their ACP names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<IndexMap<String, u64>>,
    /// `_meta.quota.token_count` in one spelling (camelCase; claude's
    /// `cachedWriteTokens` and codex's `cacheWriteInputTokens` are one
    /// counter, `cacheWriteInputTokens`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quota: Option<IndexMap<String, u64>>,
    /// `_meta.quota.model_usage`, per model, in the same spelling.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub quota_models: IndexMap<String, IndexMap<String, u64>>,
}

/// The turn usage of a session, summed over its turns.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TurnUsageTotals {
    /// Turns that reported `usage` (not `null`): what `usage` sums.
    pub turns: u64,
    /// Turns that reported `_meta.quota`: what `quota` and
    /// `quota_models` sum.
    pub quota_turns: u64,
    /// The sum of every turn's `usage`, per counter.
    pub usage: IndexMap<String, u64>,
    /// The sum of every turn's `_meta.quota.token_count`, per counter.
    pub quota: IndexMap<String, u64>,
    /// The sum of every turn's quota rows, per model and counter.
    pub quota_models: IndexMap<String, IndexMap<String, u64>>,
}

/// A session's usage.
///
/// # Example
///
/// Cumulative `modelUsage` rows per scope; a counter that falls keeps its
/// higher value, and the session's `total` sums the models.
///
/// ```
/// use acp_extension_core::state::{ConnectionState, Direction};
/// use serde_json::json;
///
/// let mut state = ConnectionState::new();
/// for input in [100, 250, 200] {
///     let row = json!({"inputTokens": input, "outputTokens": 10, "cacheReadInputTokens": 0});
///     state.notification(Direction::AgentToClient, "_lody/session/usage_update",
///         &json!({"sessionId": "s", "usage": row, "modelUsage": {"model-a": row}}));
/// }
/// let usage = &state.session("s").unwrap().usage;
/// let total = usage.total.as_ref().unwrap();
/// assert_eq!(total.input_tokens.get(), 250);
/// // The fall from 250 to 200 is recorded, not folded silently.
/// assert!(state.invalid().any(|i| i.rule == "usage-total-decreased"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UsageState {
    /// The ledger of each scope, keyed `session` or `scope:<id>`.
    pub scopes: IndexMap<String, ScopeUsage>,
    /// Per model, the sum of every scope's cumulative totals.
    pub totals: IndexMap<String, ModelUsage>,
    /// The session's total: the sum of `totals` over models (its cost only
    /// when every model's is known). Absent until an update with
    /// `modelUsage` arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<ModelUsage>,
    /// The sum of every scope's highest known cost per model: a floor
    /// under the session's cost when `total` has none (some model's cost
    /// is unknown, or a later update left it out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd_at_least: Option<f64>,
    /// The `usage` of the latest update without `modelUsage`: attributed
    /// to no model, never added to `total`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unattributed: Option<ModelUsage>,
    /// Context occupancy (standard `usage_update`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextUsage>,
    /// The usage each prompt result reported, oldest first (bounded by
    /// [`StateLimits::turn_usage_per_session`](super::StateLimits::turn_usage_per_session)).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<TurnUsage>,
    /// Those turns summed: a figure of its own, never mixed with `total`.
    pub turn_totals: TurnUsageTotals,
}

/// How a steer ended, as far as the traffic tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum SteerStatus {
    /// Sent, not answered.
    Pending,
    /// Answered `injected`; not confirmed yet.
    Injected,
    /// `steer_applied` named it.
    Applied,
    /// Answered `failed` (ambiguous: never resend it).
    Failed,
    /// Refused with JSON-RPC -32600: safe to send again as a prompt.
    Refused,
    /// `_session/steering` answered `startedNewTurn`: the agent was idle
    /// and began a turn of its own with it.
    StartedNewTurn,
    /// `_session/steering` answered `promptRequired`: nothing was running
    /// and nothing was started; send it as a prompt.
    PromptRequired,
    /// Answered with another error, or the connection ended: unknown,
    /// never resent.
    Unknown,
}

/// One steer of a session.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SteerState {
    /// `request` (`session/steer`), `prompt` (`_meta.<ns>.steer`, or the
    /// vendors' `_meta.codex.steer` / `_meta.claudeCode.steer`) or
    /// `session/steering` (the official adapters' `_session/steering`,
    /// whose id is its `steerId` when given, else `request:<JSON-RPC id>`;
    /// no notification confirms those, so `injected` is where they stay).
    pub transport: String,
    /// Where it stands.
    pub outcome: SteerStatus,
}

/// A request of the agent that awaits the client's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PendingRequest {
    /// `session/request_permission` or `elicitation/create`.
    pub method: String,
    /// The tool call it is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The child run it comes from (`_meta.<ns>.subagentRunId`, the
    /// adapters' routing convention).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subagent_run_id: Option<String>,
    /// The child's native tool call id (`_meta.<ns>.subagentToolCallId`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subagent_tool_call_id: Option<String>,
    /// For a child request: whether that run is known and live here (the
    /// Lody client answers `cancelled` otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_live: Option<bool>,
}

/// Everything folded about one ACP session.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SessionState {
    /// The title. Authority, lowest first: fallback, untagged, generated,
    /// explicit, user. A title replaces one of equal or lower authority,
    /// except that `explicit` replaces everything but a user's rename, and
    /// a fallback only fills an empty title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Where the title came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title_source: Option<TitleOrigin>,
    /// The goal: absent when none was ever reported, `null` once cleared,
    /// else the snapshot. Read on `session_info_update` only, from
    /// `_meta.<ns>.goal`, else the legacy top-level `_meta.goal`, else
    /// codex's `_meta.codex.goal`, else AIR's `_meta.jetbrains.air.goal`
    /// (their millisecond times converted). Absent keeps, `null` clears,
    /// an invalid goal is recorded and keeps the old one.
    #[serde(skip_serializing_if = "MaybeUndefined::is_undefined")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<Option<GoalSnapshot>>"))]
    pub goal: MaybeUndefined<GoalSnapshot>,
    /// Activity level and background task count.
    pub activity: ActivityState,
    /// Prompt turns.
    pub turns: TurnState,
    /// Task rows by `taskId`.
    pub tasks: IdMap<TaskState>,
    /// Subagent runs by `runId`, in first-seen order.
    pub subagent_runs: IdMap<RunState>,
    /// Compaction and retry work by tool call id or `compactionId`.
    pub activities: IdMap<ActivityEntry>,
    /// Notices, oldest first.
    pub notices: Vec<NoticeEntry>,
    /// Usage.
    pub usage: UsageState,
    /// Steers by `steerId`.
    pub steers: IdMap<SteerState>,
    /// Agent requests awaiting the client, by JSON-RPC id (as JSON text).
    pub pending_requests: IdMap<PendingRequest>,
    /// The session's plan as last sent: a standard `plan` (`{entries}`), a
    /// `plan_update`'s `plan` (`items`, `markdown` or `file`), or codex's
    /// proposed plan; `plan_removed` clears it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<Value>,
    /// Whether `session/close` (or `delete`) was seen.
    pub closed: bool,
}

impl SessionState {
    /// The current goal (none when never reported or cleared).
    pub fn current_goal(&self) -> Option<&GoalSnapshot> {
        self.goal.as_opt_ref().flatten()
    }

    /// Nothing but a request named it: no title, goal, run, usage, task,
    /// activity, notice, steer or pending request (a prompt or two may be
    /// counted).
    pub(crate) fn named_only(&self) -> bool {
        self.title.is_none()
            && self.goal.is_undefined()
            && self.activity == ActivityState::default()
            && self.tasks.is_empty()
            && self.subagent_runs.is_empty()
            && self.activities.is_empty()
            && self.notices.is_empty()
            && self.usage == UsageState::default()
            && self.steers.is_empty()
            && self.pending_requests.is_empty()
            && self.plan.is_none()
    }

    /// The run tree as `(depth, runId, run)`, depth-first in first-seen
    /// order: the root's children (`parentRunId: null`) with their
    /// descendants, then the runs whose parent is not known (lineage not
    /// reported yet, or a parent not seen) at depth 0 with theirs. Linear
    /// in the number of runs.
    pub fn run_tree(&self) -> Vec<(usize, &str, &RunState)> {
        use std::collections::{HashMap, HashSet};
        let mut children: HashMap<&str, Vec<(&str, &RunState)>> = HashMap::new();
        let mut tops = Vec::new();
        let mut orphans = Vec::new();
        for (id, run) in &self.subagent_runs {
            match &run.parent_run_id {
                MaybeUndefined::Null => tops.push((id.as_str(), run)),
                MaybeUndefined::Value(p) if self.subagent_runs.contains_key(p) && p != id => {
                    children
                        .entry(p.as_str())
                        .or_default()
                        .push((id.as_str(), run))
                }
                _ => orphans.push((id.as_str(), run)),
            }
        }
        let mut out = Vec::with_capacity(self.subagent_runs.len());
        let mut seen = HashSet::new();
        let mut stack: Vec<(usize, &str, &RunState)> = Vec::new();
        let roots = tops.into_iter().chain(orphans);
        let mut pending: Vec<(&str, &RunState)> = roots.collect();
        pending.reverse();
        loop {
            let (depth, id, run) = match stack.pop() {
                Some(next) => next,
                None => match pending.pop() {
                    Some((id, run)) => (0, id, run),
                    None => break,
                },
            };
            if !seen.insert(id) {
                continue;
            }
            out.push((depth, id, run));
            if let Some(kids) = children.get(id) {
                for (kid, run) in kids.iter().rev() {
                    stack.push((depth + 1, kid, run));
                }
            }
        }
        // Runs only reachable through a cycle (not made by the fold, which
        // refuses cycles, but possible in a state built by hand).
        for (id, run) in &self.subagent_runs {
            if seen.insert(id.as_str()) {
                out.push((0, id.as_str(), run));
            }
        }
        out
    }
}

/// A rate-limit row, keyed by `limitId` in [`ConnectionState::rate_limits`](super::ConnectionState::rate_limits).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RateLimitEntry {
    /// The row as last received (replaced whole).
    pub rate_limit: RateLimit,
    /// `fetchedAtEpochSeconds` of the snapshot it came in, when given
    /// (written as sent: `1710000000`, not `1710000000.0`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fetched_at_epoch_seconds: Option<crate::wire::EpochSeconds>,
    /// A later `rate_limits/get` failed: the data is the last known, not
    /// current (a fresh row clears it).
    pub stale: bool,
    /// Which form it arrived in.
    pub dialect: Dialect,
}

/// What one peer advertised, feature by feature (each key read on its own:
/// a malformed one voids only itself).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PeerFeatures {
    /// Whether that peer's initialize was seen.
    pub seen: bool,
    /// The `protocolVersion` it sent (the agent's answer is the version the
    /// connection speaks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<u64>,
    /// Who it said it is: `agentInfo` / `clientInfo` (v2 `info`), as sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub info: Option<Value>,
    /// Valid features by contract key (`subagentEvents`, …), with their
    /// options as sent.
    pub features: IndexMap<String, Value>,
    /// Features advertised with an invalid value.
    pub invalid: Vec<String>,
    /// What it advertised outside the contract, by where it was: the
    /// top-level `_meta` keys of its initialize (`_meta.steering`, the
    /// official adapters' `_session/steering`; `_meta.jetbrains`) and the
    /// capability `_meta` keys of other vendors
    /// (`agentCapabilities._meta.codex`, `…claudeCode`), as sent.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub vendor: IndexMap<String, Value>,
}

/// Both peers' advertisements.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct NegotiationState {
    /// The agent's (`agentCapabilities`, or v2 `capabilities`).
    pub agent: PeerFeatures,
    /// The client's.
    pub client: PeerFeatures,
}

impl NegotiationState {
    /// Whether the connection speaks ACP v2: the agent answered
    /// `protocolVersion: 2` (or later).
    pub fn is_v2(&self) -> bool {
        self.agent.protocol_version.is_some_and(|v| v >= 2)
    }

    pub(crate) fn side_mut(&mut self, side: Side) -> &mut PeerFeatures {
        match side {
            Side::Agent => &mut self.agent,
            _ => &mut self.client,
        }
    }
}

/// Something the state did not fold, and why: a malformed payload, a
/// sequence-rule break, an unknown session update.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Invalid {
    /// The input value it is about: 1 for the first value folded (a
    /// message, a batch element or a line that is not JSON).
    pub index: u64,
    /// The input line of that value, when the reader told the state
    /// ([`ConnectionState::set_line`](super::ConnectionState::set_line)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// The message's method (the request's, for a response), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The session, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// JSON pointer inside the message.
    pub pointer: String,
    /// The rule: a contract rule id (`non-empty-string`, `required`, …), a
    /// sequence rule id (`subagent-after-terminal`, …), or one of the
    /// state's own: `not-json`, `not-a-message`, `unknown-session-update`,
    /// `unknown-extension-method`, `not-negotiated`, `namespace-mismatch`,
    /// `not-advertised`, `title-without-source`,
    /// `title-source`, `scope-id-fallback`, `subagent-tree-cycle`,
    /// `subagent-cross-root`, `no-session`.
    pub rule: String,
    /// One line for people.
    pub message: String,
    /// Whether the message was still folded (partly or with a fallback).
    pub folded: bool,
}
