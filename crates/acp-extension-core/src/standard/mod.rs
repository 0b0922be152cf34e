//! The standard ACP dialect of the same facts: what an agent writes to a
//! client that reads standard ACP and not the extensions, and the requests
//! such a client sends.
//!
//! The official adapters (`codex-acp`, `claude-agent-acp`) report subagents
//! as standard `subagent_update`s with child sessions, take steers on
//! `_session/steering` and goal control on `_session/goal`, and report
//! context occupancy as `usage_update`. A client built on the standard
//! types reads that and nothing of the extensions. This module holds that
//! dialect's side of the library:
//!
//! - [`SubagentDialect`]: which of the two a connection's client reads;
//! - `StandardSubagents` (feature `unstable_subagents`): one root
//!   session's Core subagent events turned into standard `subagent_update`s
//!   on the parent and the child's own `session/update`s under the child's
//!   session id (what the producer writes for such a client, see
//!   [`crate::producer::AgentExtensions::subagent_event`]);
//! - [`SteeringRequest`] / [`SteeringResponse`] (`_session/steering`) and
//!   its advertisement ([`advertise_steering`]); `_session/goal` takes the
//!   same params as the contract's goal request
//!   ([`crate::session::GoalControlRequest`]) and answers `{}`; both as one
//!   SDK message, [`StandardRequest`], which
//!   [`crate::producer::handle_standard`] serves with the agent's
//!   [`crate::producer::ExtensionRequestHandler`].
//!
//! # What the standard dialect loses
//!
//! Translating a Core run into a standard child session keeps its name
//! (`title`), description, cancel support and state; the rest has no
//! standard slot:
//!
//! | Core | standard | lost |
//! |---|---|---|
//! | first `snapshot` of a run | announcing `subagent_update` on the parent session (the root, or the parent run's child session) with `title`, `description`, `capabilities.cancel`, `state` | `parentToolCallId`, `modelId`, `summary`, `startedAtEpochSeconds`, `endedAtEpochSeconds`, `outputIncomplete`, `support.stream` / `progress` / `outputRead` |
//! | later `snapshot`s | a `subagent_update` patch with only what changed (nothing when nothing did) | as above |
//! | `pending`, `running` | `{state:"running"}` | pending and running become one |
//! | `completed` | `{state:"idle", stopReason:"end_turn"}` | |
//! | `cancelled` | `{state:"idle", stopReason:"cancelled"}` | |
//! | `failed` | `{state:"idle", stopReason:"error", error:{code:-32603, message}}` (`reason.message`, else `reason.code`) | the reason code |
//! | `unknown` | `{state:"unknown"}` | the reason |
//! | `output` | the update as the child session's own `session/update` | `nativeTurnId`, `messageId` |
//! | `progress` | nothing | every counter |
//! | a run whose `parentRunId` is absent (lineage unknown) | held back until a snapshot names its parent (the standard forbids guessing one); its output meanwhile is dropped | |
//!
//! A standard child session is reusable, a Core run is not: each run gets
//! a child session of its own, `<root session id>:subagent:<run id>`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use agent_client_protocol::v1::schema::{ContentBlock, SessionId};
use agent_client_protocol::{JsonRpcMessage, JsonRpcRequest, JsonRpcResponse, UntypedMessage};

use crate::session::{AcpContentBlock, GoalControlRequest, SteerOutcome, SteerRequest};

/// The method of a standard steer request (the official adapters').
pub const STEERING_METHOD: &str = "_session/steering";

/// The method of a standard goal request (the official adapters'): params
/// as [`crate::session::GoalControlRequest`], result `{}`.
pub const GOAL_METHOD: &str = "_session/goal";

/// How a connection's client reads subagent runs.
///
/// # Example
///
/// ```
/// use acp_extension_core::negotiation::negotiate;
/// use acp_extension_core::standard::SubagentDialect;
/// use serde_json::json;
///
/// let agent = json!({"_meta": {"lody": {"subagentEvents": {"version": 1}}}});
/// // The official adapters' clients: standard `subagents`, no extension.
/// let n = negotiate(&agent, &json!({"subagents": {}}));
/// assert_eq!(n.subagent_dialect(), Some(SubagentDialect::Standard));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SubagentDialect {
    /// ACP Extension Core: `subagents/event` (both peers advertised
    /// `subagentEvents`).
    Core,
    /// Standard ACP: `subagent_update` and child sessions (the client
    /// advertised `clientCapabilities.subagents` and not `subagentEvents`).
    Standard,
}

/// Params of `_session/steering`: steer the running turn of `sessionId`
/// with `prompt`.
///
/// ```
/// use acp_extension_core::standard::SteeringRequest;
///
/// let steer: SteeringRequest = serde_json::from_value(serde_json::json!({
///     "sessionId": "s1", "prompt": [{"type": "text", "text": "Use the retry helper"}],
///     "_meta": {"steering": {"idleBehavior": "promptRequired"}}}))?;
/// assert!(steer.prompt_required());
/// assert_eq!(steer.to_core("st-1").steer_id, "st-1");
/// # Ok::<_, serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SteeringRequest {
    /// The session.
    pub session_id: SessionId,
    /// The steering content.
    pub prompt: Vec<ContentBlock>,
    /// A Core steer id passed along (the official adapters ignore it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steer_id: Option<String>,
    /// `_meta`; `steering.idleBehavior` is the only key the adapters read.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl SteeringRequest {
    /// A steer of `session_id` with `prompt`, asking for `promptRequired`
    /// when no turn runs (what a client should always ask for).
    pub fn new(session_id: impl Into<SessionId>, prompt: Vec<ContentBlock>) -> Self {
        let mut meta = Map::new();
        meta.insert(
            "steering".into(),
            serde_json::json!({"idleBehavior": "promptRequired"}),
        );
        Self {
            session_id: session_id.into(),
            prompt,
            steer_id: None,
            meta: Some(meta),
        }
    }

    /// `_meta.steering.idleBehavior`, when present.
    pub fn idle_behavior(&self) -> Option<&str> {
        self.meta
            .as_ref()?
            .get("steering")?
            .get("idleBehavior")?
            .as_str()
    }

    /// Whether the client asked to be told `promptRequired` when no turn
    /// runs, instead of the agent starting one.
    pub fn prompt_required(&self) -> bool {
        self.idle_behavior() == Some("promptRequired")
    }

    /// The contract's steer request with the same content, under
    /// `steer_id` (the request's own `steerId` wins when it has one).
    pub fn to_core(&self, steer_id: impl Into<String>) -> SteerRequest {
        let steer_id = self.steer_id.clone().unwrap_or_else(|| steer_id.into());
        SteerRequest::new(
            &*self.session_id.0,
            self.prompt
                .iter()
                .cloned()
                .map(AcpContentBlock::from)
                .collect::<Vec<_>>(),
            steer_id,
        )
    }
}

/// Result of `_session/steering`.
///
/// ```
/// use acp_extension_core::standard::SteeringResponse;
///
/// let idle = SteeringResponse::PromptRequired { reason: "noRunningTurn".into() };
/// assert_eq!(serde_json::to_value(&idle)?,
///     serde_json::json!({"outcome": "promptRequired", "reason": "noRunningTurn"}));
/// # Ok::<_, serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "camelCase")]
#[non_exhaustive]
pub enum SteeringResponse {
    /// A turn was running and the content went into it (accepted, not
    /// necessarily applied).
    Injected,
    /// No turn runs and the client asked for this answer: nothing was
    /// started; send a `session/prompt`.
    PromptRequired {
        /// Why (`noRunningTurn`).
        reason: String,
    },
    /// No turn ran and the agent started one (the adapters' default when
    /// the client did not ask for `promptRequired`).
    StartedNewTurn,
    /// It could not be injected.
    Failed,
}

impl SteeringResponse {
    /// `promptRequired` for want of a running turn.
    pub fn no_running_turn() -> Self {
        Self::PromptRequired {
            reason: "noRunningTurn".to_owned(),
        }
    }

    /// The standard answer for a Core outcome.
    pub fn from_core(outcome: SteerOutcome) -> Self {
        match outcome {
            SteerOutcome::Injected => Self::Injected,
            _ => Self::Failed,
        }
    }
}

/// Adds the standard steering advertisement, `_meta.steering:
/// {supported: true}`, to an initialize response's top-level `_meta`
/// (where the official adapters put it; not in `agentCapabilities`).
///
/// ```
/// use acp_extension_core::standard::{advertise_steering, advertises_steering};
/// use agent_client_protocol::schema::ProtocolVersion;
/// use agent_client_protocol::v1::schema::InitializeResponse;
///
/// let response = advertise_steering(InitializeResponse::new(ProtocolVersion::V1));
/// assert!(advertises_steering(&serde_json::to_value(&response)?));
/// # Ok::<_, serde_json::Error>(())
/// ```
pub fn advertise_steering(
    mut response: agent_client_protocol::v1::schema::InitializeResponse,
) -> agent_client_protocol::v1::schema::InitializeResponse {
    response
        .meta
        .get_or_insert_with(Default::default)
        .insert("steering".into(), serde_json::json!({"supported": true}));
    response
}

/// `_session/steering` or `_session/goal` as one SDK message, for an
/// agent's `on_receive_request` handler (see
/// [`crate::producer::handle_standard`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StandardRequest {
    /// `_session/steering`.
    Steering(SteeringRequest),
    /// `_session/goal`.
    Goal(GoalControlRequest),
}

/// The result of a [`StandardRequest`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StandardResponse {
    /// `_session/steering`'s outcome.
    Steering(SteeringResponse),
    /// `_session/goal`'s `{}`.
    Goal,
}

impl StandardRequest {
    /// Its method.
    pub fn method(&self) -> &'static str {
        match self {
            Self::Steering(_) => STEERING_METHOD,
            Self::Goal(_) => GOAL_METHOD,
        }
    }
}

fn invalid_params(method: &str, e: serde_json::Error) -> agent_client_protocol::Error {
    agent_client_protocol::Error::invalid_params()
        .data(serde_json::json!({"method": method, "reason": e.to_string()}))
}

impl JsonRpcMessage for StandardRequest {
    fn matches_method(method: &str) -> bool {
        method == STEERING_METHOD || method == GOAL_METHOD
    }
    fn method(&self) -> &str {
        StandardRequest::method(self)
    }
    fn to_untyped_message(&self) -> Result<UntypedMessage, agent_client_protocol::Error> {
        let params = match self {
            Self::Steering(r) => serde_json::to_value(r),
            Self::Goal(r) => serde_json::to_value(r),
        }
        .map_err(agent_client_protocol::Error::into_internal_error)?;
        Ok(UntypedMessage {
            method: self.method().to_owned(),
            params,
        })
    }
    fn parse_message(method: &str, params: &Value) -> Result<Self, agent_client_protocol::Error> {
        match method {
            STEERING_METHOD => serde_json::from_value(params.clone())
                .map(Self::Steering)
                .map_err(|e| invalid_params(method, e)),
            GOAL_METHOD => serde_json::from_value(params.clone())
                .map(Self::Goal)
                .map_err(|e| invalid_params(method, e)),
            _ => Err(agent_client_protocol::Error::method_not_found()),
        }
    }
}

impl JsonRpcRequest for StandardRequest {
    type Response = StandardResponse;
}

impl JsonRpcResponse for StandardResponse {
    fn into_json(self, _method: &str) -> Result<Value, agent_client_protocol::Error> {
        match self {
            Self::Steering(r) => {
                serde_json::to_value(r).map_err(agent_client_protocol::Error::into_internal_error)
            }
            Self::Goal => Ok(Value::Object(Map::new())),
        }
    }
    fn from_json(method: &str, value: Value) -> Result<Self, agent_client_protocol::Error> {
        match method {
            STEERING_METHOD => serde_json::from_value(value)
                .map(Self::Steering)
                .map_err(|e| invalid_params(method, e)),
            _ => Ok(Self::Goal),
        }
    }
}

/// Whether an initialize result (JSON) advertises standard steering.
pub fn advertises_steering(initialize_result: &Value) -> bool {
    initialize_result
        .get("_meta")
        .and_then(|m| m.get("steering"))
        .and_then(|s| s.get("supported"))
        .and_then(Value::as_bool)
        == Some(true)
}

/// Whether client capabilities (JSON) advertise standard subagents
/// (`subagents` is an object).
pub fn client_reads_subagent_updates(client_capabilities: &Value) -> bool {
    client_capabilities
        .get("subagents")
        .is_some_and(Value::is_object)
}

/// Epoch seconds from a number that may be seconds or milliseconds (the
/// adapters pass vendors' timestamps through unscaled); `null` when absent
/// or not positive.
pub(crate) fn epoch_seconds(v: Option<&Value>) -> Value {
    match v.and_then(Value::as_f64) {
        Some(n) if n >= 1e12 => serde_json::json!((n / 1000.0).floor() as u64),
        Some(n) if n > 0.0 => serde_json::json!(n.floor() as u64),
        _ => Value::Null,
    }
}

/// What [`claude_rate_limits`] changes of what claude sent, each at its
/// pointer inside the `_claude/rateLimit` object: a `utilization` outside
/// 0..1 is clamped (rule `utilization-clamped`), a `resetsAt` over 10^12
/// is read as milliseconds (`epoch-milliseconds`). The consumer state
/// records each (folded) and a linter warns of each, by this rule.
///
/// ```
/// use acp_extension_core::standard::claude_rate_limit_adjustments;
/// use serde_json::json;
///
/// let info = json!({"rateLimitType": "five_hour", "utilization": 1.2, "resetsAt": 1790092800000u64});
/// let ids: Vec<(String, &str)> = claude_rate_limit_adjustments(&info).iter()
///     .map(|v| (v.pointer.clone(), v.rule.id())).collect();
/// assert_eq!(ids, [("/utilization".to_owned(), "utilization-clamped"),
///     ("/resetsAt".to_owned(), "epoch-milliseconds")]);
/// ```
#[doc(hidden)]
pub fn claude_rate_limit_adjustments(info: &Value) -> Vec<crate::Violation> {
    use crate::Rule;
    fn window(w: &Value, at: &str, out: &mut Vec<crate::Violation>) {
        if let Some(u) = w.get("utilization").and_then(Value::as_f64)
            && u.is_finite()
            && !(0.0..=1.0).contains(&u)
        {
            out.push(crate::Violation::new(
                format!("{at}/utilization"),
                Rule::Relation {
                    id: "utilization-clamped",
                    message: format!(
                        "a utilization of {u} is outside 0..1; shown as {}%",
                        (u * 100.0).clamp(0.0, 100.0)
                    ),
                },
            ));
        }
        if let Some(r) = w.get("resetsAt").and_then(Value::as_f64)
            && r >= 1e12
        {
            out.push(crate::Violation::new(
                format!("{at}/resetsAt"),
                Rule::Relation {
                    id: "epoch-milliseconds",
                    message: format!(
                        "`resetsAt` {r} is in milliseconds; read as seconds divided by 1000"
                    ),
                },
            ));
        }
    }
    let mut out = Vec::new();
    if info.get("rateLimitType").is_some() {
        window(info, "", &mut out);
    }
    if let Some(unified) = info.get("unifiedWindows").and_then(Value::as_object) {
        for (kind, w) in unified {
            let mut at = "/unifiedWindows".to_owned();
            crate::violation::push_child(&mut at, kind);
            window(w, &at, &mut out);
        }
    }
    out
}

/// claude's `_claude/rateLimit` (the SDK's `rate_limit_info`, on a
/// `usage_update`'s `_meta`) as Core `rate_limits/update` params, as
/// the official adapters' documentation maps it: one limit per rate-limit type,
/// `limitId` `claude:<type>`, `scope.providerId` `anthropic`, one window
/// of `utilization` (a fraction) ×100 (clamped to 0..100), its duration
/// (five hours for `five_hour`, a week for `seven_day*`) and `resetsAt`
/// (epoch seconds). The event's own `rateLimitType` makes one limit, and
/// each entry of the newer CLIs' `unifiedWindows` (`{five_hour:
/// {utilization, resetsAt}, seven_day: {…}}`) one more (an entry wins over
/// the event's figure for its type). A type without `utilization` forms no
/// window and is skipped (a `rejected` status included: no figure is
/// invented); `None` when nothing is left. Lost: `status`, the `overage*`
/// fields and `surpassedThreshold`.
///
/// ```
/// use acp_extension_core::rate_limits::RateLimitsSnapshot;
/// use acp_extension_core::standard::claude_rate_limits;
/// use serde_json::json;
///
/// let info = json!({"status": "allowed_warning", "resetsAt": 1790092800,
///     "rateLimitType": "five_hour", "utilization": 0.91});
/// let snapshot: RateLimitsSnapshot = serde_json::from_value(claude_rate_limits(&info).unwrap())?;
/// assert_eq!(snapshot.rate_limits[0].limit_id, "claude:five_hour");
/// assert_eq!(snapshot.rate_limits[0].scope.provider_id, "anthropic");
/// assert!((snapshot.rate_limits[0].windows[0].used_percent.get() - 91.0).abs() < 1e-9);
/// // What claude-agent-acp 0.101 sends on every turn against a real account.
/// let unified = json!({"status": "allowed", "unifiedWindows": {
///     "five_hour": {"utilization": 0.12, "resetsAt": 1790000000},
///     "seven_day": {"utilization": 0.4, "resetsAt": 1790500000}}});
/// let snapshot: RateLimitsSnapshot = serde_json::from_value(claude_rate_limits(&unified).unwrap())?;
/// let ids: Vec<&str> = snapshot.rate_limits.iter().map(|l| l.limit_id.as_str()).collect();
/// assert_eq!(ids, ["claude:five_hour", "claude:seven_day"]);
/// assert!(claude_rate_limits(&json!({"status": "allowed"})).is_none());
/// assert!(claude_rate_limits(&json!({"status": "rejected", "rateLimitType": "five_hour"})).is_none());
/// # Ok::<_, serde_json::Error>(())
/// ```
pub fn claude_rate_limits(info: &Value) -> Option<Value> {
    // Each type's figure and reset time, in the order first named.
    let mut windows: indexmap::IndexMap<String, (f64, Value)> = indexmap::IndexMap::new();
    if let (Some(kind), Some(u)) = (
        info.get("rateLimitType").and_then(Value::as_str),
        info.get("utilization").and_then(Value::as_f64),
    ) {
        windows.insert(kind.to_owned(), (u, epoch_seconds(info.get("resetsAt"))));
    }
    if let Some(unified) = info.get("unifiedWindows").and_then(Value::as_object) {
        for (kind, w) in unified {
            if let Some(u) = w.get("utilization").and_then(Value::as_f64) {
                windows.insert(kind.clone(), (u, epoch_seconds(w.get("resetsAt"))));
            }
        }
    }
    if windows.is_empty() {
        return None;
    }
    let limits: Vec<Value> = windows
        .into_iter()
        .filter(|(_, (u, _))| u.is_finite())
        .map(|(kind, (utilization, resets))| {
            let seconds = match kind.as_str() {
                "five_hour" => serde_json::json!(18000),
                k if k.starts_with("seven_day") => serde_json::json!(604800),
                _ => Value::Null,
            };
            serde_json::json!({
                "limitId": format!("claude:{kind}"),
                "scope": {"providerId": "anthropic"},
                "windows": [{
                    "usedPercent": (utilization * 100.0).clamp(0.0, 100.0),
                    "windowDurationSeconds": seconds,
                    "resetsAtEpochSeconds": resets,
                }],
            })
        })
        .collect();
    (!limits.is_empty()).then(|| serde_json::json!({"rateLimits": limits}))
}

/// The per-model usage of one prompt, from its standard result: the rows of
/// `_meta.quota.model_usage` (both official adapters send it), else one
/// row `default` from `usage`. Counters are mapped into Core's disjoint
/// buckets (as the official adapters are documented): `cachedInputTokens` /
/// `cachedReadTokens` → `cacheReadInputTokens`; `cacheWriteInputTokens`
/// (codex) / `cachedWriteTokens` (claude) → `cacheCreationInputTokens`;
/// reasoning (`reasoningOutputTokens`, `thoughtTokens`) → its own bucket,
/// taken out of `outputTokens` (OpenAI's output includes it). Cost stays
/// unknown. Empty when the result reports nothing.
///
/// ```
/// use acp_extension_core::standard::prompt_model_usage;
/// use serde_json::json;
///
/// let result = json!({"stopReason": "end_turn", "_meta": {"quota": {"model_usage": [{"model": "gpt",
///     "token_count": {"totalTokens": 1300, "inputTokens": 200, "cachedInputTokens": 1000,
///         "cacheWriteInputTokens": 0, "outputTokens": 100, "reasoningOutputTokens": 40}}]}}});
/// let rows = prompt_model_usage(&result);
/// let row = serde_json::to_value(&rows["gpt"])?;
/// assert_eq!(row, json!({"inputTokens": 200, "outputTokens": 60, "cacheReadInputTokens": 1000,
///     "cacheCreationInputTokens": 0, "reasoningOutputTokens": 40}));
/// # Ok::<_, serde_json::Error>(())
/// ```
pub fn prompt_model_usage(result: &Value) -> indexmap::IndexMap<String, crate::usage::ModelUsage> {
    fn row(c: &Value) -> Option<crate::usage::ModelUsage> {
        let n = |k: &str| c.get(k).and_then(Value::as_u64);
        let reasoning = n("reasoningOutputTokens").or(n("thoughtTokens"));
        let output = n("outputTokens")?.saturating_sub(reasoning.unwrap_or(0));
        let mut v = serde_json::json!({
            "inputTokens": n("inputTokens")?,
            "outputTokens": output,
            "cacheReadInputTokens": n("cachedInputTokens").or(n("cachedReadTokens")).unwrap_or(0),
        });
        if let Some(w) = n("cacheWriteInputTokens").or(n("cachedWriteTokens")) {
            v["cacheCreationInputTokens"] = w.into();
        }
        if let Some(r) = reasoning {
            v["reasoningOutputTokens"] = r.into();
        }
        serde_json::from_value(v).ok()
    }
    let mut rows = indexmap::IndexMap::new();
    let quota = result
        .pointer("/_meta/quota/model_usage")
        .and_then(Value::as_array);
    for r in quota.into_iter().flatten() {
        if let (Some(model), Some(usage)) = (
            r.get("model").and_then(Value::as_str),
            r.get("token_count").and_then(row),
        ) {
            rows.insert(model.to_owned(), usage);
        }
    }
    if rows.is_empty()
        && let Some(usage) = result.get("usage").and_then(row)
    {
        rows.insert("default".to_owned(), usage);
    }
    rows
}

/// A Core usage row as a standard prompt result's `usage`: `totalTokens`
/// the sum of every bucket, `inputTokens`, `outputTokens` (reasoning
/// included, as the adapters count it), `cachedReadTokens`,
/// `cachedWriteTokens`, `thoughtTokens`.
pub fn standard_prompt_usage(usage: &crate::usage::ModelUsage) -> Value {
    let v = serde_json::to_value(usage).unwrap_or(Value::Null);
    let n = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
    let (input, output, read, write, reasoning) = (
        n("inputTokens"),
        n("outputTokens"),
        n("cacheReadInputTokens"),
        n("cacheCreationInputTokens"),
        n("reasoningOutputTokens"),
    );
    serde_json::json!({
        "totalTokens": input + output + read + write + reasoning,
        "inputTokens": input,
        "outputTokens": output + reasoning,
        "cachedReadTokens": read,
        "cachedWriteTokens": write,
        "thoughtTokens": reasoning,
    })
}

/// The child session id a run gets in the standard dialect.
pub fn child_session_id(root: &str, run_id: &str) -> SessionId {
    SessionId::new(format!("{root}:subagent:{run_id}"))
}

#[cfg(feature = "unstable_subagents")]
pub use subagents::StandardSubagents;

mod core_subagents;
pub use core_subagents::CoreSubagents;

#[cfg(feature = "unstable_subagents")]
mod subagents;
