//! Contract linter for recorded or live traffic: consumes messages one by
//! one and yields findings. Shared by `acp-ext check`, `tap` and `probe`.
//!
//! A [`Checker`] follows one connection: it remembers what each peer
//! advertised in `initialize`, which requests await a response, and a
//! bounded amount of per-session state (subagent runs, native ids, usage
//! scopes, steer ids; see [`Limits`]). Every message yields the
//! [`Finding`]s of the rules in [`rules::ALL`], each with a stable id, a
//! [`Severity`] and a JSON pointer inside the message.
//!
//! Negotiation rules are judged only once the checker has seen the
//! initialize exchange (the agent's response for agent features, the
//! client's request for client features): loose fixtures without it never
//! produce "not advertised" findings.
//!
//! ```
//! use acp_ext::check::{Checker, Direction, Severity};
//! use serde_json::json;
//!
//! let mut checker = Checker::new();
//! // The agent advertises nothing…
//! checker.message(Direction::ClientToAgent, &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
//!     "params": {"protocolVersion": 1, "clientCapabilities": {}}}));
//! checker.message(Direction::AgentToClient, &json!({"jsonrpc": "2.0", "id": 0,
//!     "result": {"protocolVersion": 1, "agentCapabilities": {}}}));
//! // …yet sends usage with a timestamp in milliseconds.
//! let findings = checker.message(Direction::AgentToClient, &json!({"jsonrpc": "2.0",
//!     "method": "_lody/rate_limits/update", "params": {"rateLimits": [], "fetchedAtEpochSeconds": 1710000000000u64}}));
//! let rules: Vec<_> = findings.iter().map(|f| f.rule).collect();
//! assert_eq!(rules, ["not-advertised", "epoch-milliseconds"]);
//! assert!(findings.iter().all(|f| f.severity == Severity::Error));
//! assert_eq!(findings[1].path, "/params/fetchedAtEpochSeconds");
//! ```

pub mod input;
pub mod report;
pub mod rules;
pub mod run;
mod state;

use std::fmt;

use acp_extension_core::capabilities::{
    Feature, FeatureOptions, FeatureSide, Side, SteeringTransport,
};
use acp_extension_core::methods::{ExtensionResponse, MethodKind, method_kind};
use acp_extension_core::namespace::{self, Namespace, split_method};
use acp_extension_core::negotiation::{Advertisement, ProblemKind};
use acp_extension_core::validate::{Kind, child, validate_value};
use acp_extension_core::wire::json_type;
use serde::Serialize;
use serde_json::{Map, Value};

pub use rules::RuleInfo;
use state::{BoundedMap, COUNTERS, Run, ScopeState, Sessions, Totals, id_hash};
pub use state::{Limits, TrackedState};

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

impl Direction {
    /// The other way; `Unknown` stays unknown.
    pub fn opposite(self) -> Self {
        match self {
            Direction::ClientToAgent => Direction::AgentToClient,
            Direction::AgentToClient => Direction::ClientToAgent,
            Direction::Unknown => Direction::Unknown,
        }
    }

    /// `c2a`, `a2c` or `unknown` (the spelling of `tap --record`).
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::ClientToAgent => "c2a",
            Direction::AgentToClient => "a2c",
            Direction::Unknown => "unknown",
        }
    }

    /// Parses `c2a` / `a2c` (the `dir` of `tap --record` lines).
    pub fn from_tap(s: &str) -> Option<Self> {
        match s {
            "c2a" => Some(Direction::ClientToAgent),
            "a2c" => Some(Direction::AgentToClient),
            _ => None,
        }
    }

    /// The direction a request or notification with this method travels
    /// in ACP and in the contract; `Unknown` for methods of other vendors.
    ///
    /// ```
    /// use acp_ext::check::Direction;
    /// assert_eq!(Direction::of_method("session/update"), Direction::AgentToClient);
    /// assert_eq!(Direction::of_method("_ua/session/steer"), Direction::ClientToAgent);
    /// assert_eq!(Direction::of_method("_vendor/x"), Direction::Unknown);
    /// ```
    pub fn of_method(method: &str) -> Self {
        if let Some((_, path)) = split_method(method) {
            return match method_kind(method) {
                None => Direction::Unknown,
                Some(_) => match path {
                    "subagents/event"
                    | "session/usage_update"
                    | "rate_limits/update"
                    | "session/steer_applied"
                    | "session/activity_update" => Direction::AgentToClient,
                    _ => Direction::ClientToAgent,
                },
            };
        }
        if method.starts_with('_') {
            return Direction::Unknown;
        }
        match method {
            "session/update"
            | "session/request_permission"
            | "elicitation/create"
            | "elicitation/complete" => Direction::AgentToClient,
            m if m.starts_with("fs/") || m.starts_with("terminal/") => Direction::AgentToClient,
            _ => Direction::ClientToAgent,
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
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

    /// A finding of a rule of the table (its id and severity) at `path`.
    pub fn of(rule: &RuleInfo, path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(rule.id, rule.severity, path, message)
    }
}

const NULL: Value = Value::Null;

/// A request awaiting its response.
#[derive(Debug)]
struct Pending {
    direction: Direction,
    method: String,
    /// The request's `sessionId`, to attribute its result.
    session: Option<String>,
}

fn pending_key(direction: Direction, id: &Value) -> u64 {
    id_hash(&format!("{}:{id}", direction.as_str()))
}

/// What the checker knows about one peer's support of a feature.
enum Support<'a> {
    /// The initialize exchange of that peer was not seen.
    Unknown,
    /// Not advertised (or advertised invalidly).
    Missing,
    /// Advertised with these options.
    Present(&'a FeatureOptions),
}

/// Checks a stream of messages of one connection.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Checker {
    limits: Limits,
    agent: Option<Advertisement>,
    client: Option<Advertisement>,
    client_form_elicitation: bool,
    client_traffic: bool,
    pending: BoundedMap<Pending>,
    sessions: Sessions,
    scopes: BoundedMap<ScopeState>,
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn utf16_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// Whether a response result looks like an `initialize` response.
fn looks_like_initialize_result(result: &Value) -> bool {
    result.get("agentCapabilities").is_some()
        || (result.get("protocolVersion").is_some() && result.get("capabilities").is_some())
}

/// One `_meta.<ns>` section found in a message.
struct Section<'a> {
    at: String,
    ns: Namespace,
    map: &'a Map<String, Value>,
    capabilities: bool,
}

fn find_sections<'a>(v: &'a Value, at: &str, owner: Option<&str>, out: &mut Vec<Section<'a>>) {
    match v {
        Value::Object(obj) => {
            for (k, x) in obj {
                let here = child(at, k);
                if k == "_meta" {
                    if let Value::Object(meta) = x {
                        for ns in Namespace::ALL {
                            if let Some(Value::Object(map)) = meta.get(ns.key()) {
                                out.push(Section {
                                    at: child(&here, ns.key()),
                                    ns,
                                    map,
                                    capabilities: matches!(
                                        owner,
                                        Some("agentCapabilities")
                                            | Some("clientCapabilities")
                                            | Some("capabilities")
                                    ),
                                });
                            }
                        }
                    }
                    continue;
                }
                find_sections(x, &here, Some(k), out);
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                find_sections(x, &format!("{at}/{i}"), owner, out);
            }
        }
        _ => {}
    }
}

/// The keys the contract defines under `_meta.<ns>` of a message.
const KNOWN_META_KEYS: &[&str] = &[
    "worktreeProject",
    "turnId",
    "forkAtTurn",
    "steer",
    "toolName",
    "activity",
    "task",
    "goal",
    "goalControl",
    "notice",
    "titleSource",
    "messagePhase",
    "elicitation",
    "sessionConfig",
    "usageScopeId",
    "mcpApp",
];

fn epochs(v: &Value, at: &str, out: &mut Vec<Finding>) {
    match v {
        Value::Object(obj) => epochs_in(obj, at, out),
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                epochs(x, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

fn epochs_in(obj: &Map<String, Value>, at: &str, out: &mut Vec<Finding>) {
    {
        {
            for (k, x) in obj {
                let here = child(at, k);
                if k.ends_with("EpochSeconds")
                    && let Some(n) = x.as_f64()
                {
                    if n > 1e11 {
                        out.push(Finding::of(
                            &rules::EPOCH_MILLISECONDS,
                            &here,
                            format!("`{k}` is {x}, which looks like milliseconds; the contract sends Unix epoch seconds"),
                        ));
                    } else if n.fract() != 0.0 {
                        out.push(Finding::of(
                            &rules::EPOCH_FRACTIONAL,
                            &here,
                            format!("`{k}` is {x}, a fractional number of seconds"),
                        ));
                    } else if n == 0.0 {
                        out.push(Finding::of(
                            &rules::EPOCH_ZERO,
                            &here,
                            format!("`{k}` is 0 (1970-01-01), a placeholder rather than a time"),
                        ));
                    }
                }
                epochs(x, &here, out);
            }
        }
    }
}

fn percents(snapshot: &Value, at: &str, out: &mut Vec<Finding>) {
    let Some(limits) = snapshot.get("rateLimits").and_then(Value::as_array) else {
        return;
    };
    for (i, limit) in limits.iter().enumerate() {
        let Some(windows) = limit.get("windows").and_then(Value::as_array) else {
            continue;
        };
        for (j, w) in windows.iter().enumerate() {
            if let Some(p) = w.get("usedPercent").and_then(Value::as_f64)
                && !(0.0..=100.0).contains(&p)
            {
                out.push(Finding::of(
                    &rules::USED_PERCENT_RANGE,
                    format!("{at}/rateLimits/{i}/windows/{j}/usedPercent"),
                    format!("`usedPercent` is {p}; it must lie within 0..100"),
                ));
            }
        }
    }
}

fn totals_of(row: &Value) -> Option<Totals> {
    let obj = row.as_object()?;
    let mut t = Totals::default();
    for (i, name) in COUNTERS.iter().enumerate() {
        t.counters[i] = obj.get(*name).and_then(Value::as_f64).unwrap_or(0.0);
    }
    t.cost = obj.get("costUSD").and_then(Value::as_f64);
    Some(t)
}

fn cost_differs(a: f64, b: f64) -> bool {
    (a - b).abs() > 1e-9 * (1.0 + a.abs().max(b.abs()))
}

fn is_terminal_state(state: Option<&str>) -> bool {
    matches!(
        state,
        Some("completed" | "failed" | "cancelled" | "unknown")
    )
}

impl Checker {
    /// A checker with no state and the default [`Limits`].
    pub fn new() -> Self {
        Self::default()
    }

    /// A checker with these state capacities.
    pub fn with_limits(limits: Limits) -> Self {
        Self {
            limits,
            ..Self::default()
        }
    }

    /// What the agent advertised, once its initialize response was seen.
    pub fn agent_advertisement(&self) -> Option<&Advertisement> {
        self.agent.as_ref()
    }

    /// What the client advertised, once its initialize request was seen.
    pub fn client_advertisement(&self) -> Option<&Advertisement> {
        self.client.as_ref()
    }

    /// How much state the checker holds right now (bounded by [`Limits`]).
    pub fn tracked_state(&self) -> TrackedState {
        let mut t = self.sessions.tracked();
        t.pending_requests = self.pending.len();
        t.usage_scopes = self.scopes.len();
        t.usage_models = self.scopes.values().map(|s| s.models.len()).sum();
        t
    }

    /// Checks one JSON-RPC message (or a batch) and updates the connection
    /// state. `direction` may be [`Direction::Unknown`]; it is then inferred
    /// from the method, or for a response from its request.
    pub fn message(&mut self, direction: Direction, message: &Value) -> Vec<Finding> {
        self.message_with_method(direction, message, None)
    }

    /// Like [`Checker::message`], naming the method of the request a
    /// response answers when that request is not part of the stream (loose
    /// fixtures keep responses on their own). Ignored for requests and
    /// notifications, and when the request was seen.
    pub fn message_with_method(
        &mut self,
        direction: Direction,
        message: &Value,
        request_method: Option<&str>,
    ) -> Vec<Finding> {
        match message {
            Value::Array(items) if !items.is_empty() => {
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    for mut f in self.one(direction, item, request_method) {
                        f.path = format!("/{i}{}", f.path);
                        out.push(f);
                    }
                }
                out
            }
            _ => self.one(direction, message, request_method),
        }
    }

    fn one(&mut self, direction: Direction, msg: &Value, hint: Option<&str>) -> Vec<Finding> {
        let mut out = Vec::new();
        let Some(obj) = msg.as_object() else {
            out.push(Finding::of(
                &rules::NOT_A_MESSAGE,
                "",
                format!(
                    "expected a JSON-RPC message object, found {}",
                    json_type(msg)
                ),
            ));
            return out;
        };
        if let Some(m) = obj.get("method") {
            let Some(method) = m.as_str() else {
                out.push(Finding::of(
                    &rules::NOT_A_MESSAGE,
                    "/method",
                    "`method` must be a string",
                ));
                return out;
            };
            let dir = match direction {
                Direction::Unknown => Direction::of_method(method),
                d => d,
            };
            if dir == Direction::ClientToAgent {
                self.client_traffic = true;
            }
            self.shape(msg, &mut out);
            let params = obj.get("params").unwrap_or(&NULL);
            if let Some(id) = obj.get("id").filter(|id| !id.is_null()) {
                self.pending.insert(
                    pending_key(dir, id),
                    Pending {
                        direction: dir,
                        method: method.to_owned(),
                        session: str_at(params, "sessionId").map(str::to_owned),
                    },
                    self.limits.pending_requests,
                );
            }
            let ext = split_method(method).is_some() && method_kind(method).is_some();
            self.on_call(dir, method, params, &mut out);
            self.common(params, "/params", ext, &mut out);
        } else if obj.contains_key("result") || obj.contains_key("error") {
            let pending = obj
                .get("id")
                .and_then(|id| self.take_pending(direction, id));
            let result = obj.get("result");
            let method: Option<String> = match pending {
                Some(ref p) => Some(p.method.clone()),
                None => hint.map(str::to_owned).or_else(|| {
                    result
                        .filter(|r| looks_like_initialize_result(r))
                        .map(|_| "initialize".to_owned())
                }),
            };
            let dir = match (direction, &pending, method.as_deref()) {
                (Direction::Unknown, Some(p), _) => p.direction.opposite(),
                (Direction::Unknown, None, Some(m)) => Direction::of_method(m).opposite(),
                (d, _, _) => d,
            };
            if dir == Direction::ClientToAgent {
                self.client_traffic = true;
            }
            self.shape(msg, &mut out);
            let ext = method
                .as_deref()
                .is_some_and(|m| method_kind(m) == Some(MethodKind::Request));
            if let (true, Some(m), Some(r)) = (ext, method.as_deref(), result)
                && let Err(e) = ExtensionResponse::parse(m, r)
            {
                for v in e.violations {
                    out.push(Finding::of(
                        &rules::SHAPE,
                        format!("/result{}", v.pointer),
                        format!("{} ({})", v.message(), v.rule.id()),
                    ));
                }
            }
            if let Some(r) = result {
                let sid = pending.as_ref().and_then(|p| p.session.as_deref());
                self.on_result(method.as_deref(), sid, r, &mut out);
                self.common(r, "/result", ext, &mut out);
            }
        } else {
            out.push(Finding::of(
                &rules::NOT_A_MESSAGE,
                "",
                "an object without `method`, or `id` with `result` or `error`, is not a JSON-RPC message",
            ));
        }
        out
    }

    fn take_pending(&mut self, direction: Direction, id: &Value) -> Option<Pending> {
        if id.is_null() {
            return None;
        }
        let tries: &[Direction] = match direction {
            Direction::AgentToClient => &[Direction::ClientToAgent, Direction::Unknown],
            Direction::ClientToAgent => &[Direction::AgentToClient, Direction::Unknown],
            Direction::Unknown => &[
                Direction::ClientToAgent,
                Direction::AgentToClient,
                Direction::Unknown,
            ],
        };
        tries
            .iter()
            .find_map(|d| self.pending.remove(pending_key(*d, id)))
    }

    /// The `shape` rule: everything `acp-ext validate` reports.
    fn shape(&self, msg: &Value, out: &mut Vec<Finding>) {
        for v in validate_value(Kind::Auto, msg).violations {
            let rule = if v.rule.id() == "unknown-extension-method" {
                &rules::UNKNOWN_METHOD
            } else {
                &rules::SHAPE
            };
            let message = if rule.id == rules::SHAPE.id {
                format!("{} ({})", v.message(), v.rule.id())
            } else {
                v.message()
            };
            out.push(Finding::of(rule, v.pointer, message));
        }
    }

    fn support(&self, side: Side, feature: Feature) -> Support<'_> {
        let adv = match side {
            Side::Agent => self.agent.as_ref(),
            _ => self.client.as_ref(),
        };
        match adv {
            None => Support::Unknown,
            Some(a) => match a.get(feature).and_then(|f| f.options()) {
                Some(o) => Support::Present(o),
                None => Support::Missing,
            },
        }
    }

    /// Reports `feature` unless each peer that must advertise it did (as
    /// far as known); returns the agent's options when the agent advertised
    /// it.
    fn need(
        &self,
        feature: Feature,
        what: &str,
        at: &str,
        out: &mut Vec<Finding>,
    ) -> Option<&FeatureOptions> {
        let rule = if feature == Feature::SubagentEvents {
            &rules::SUBAGENT_EVENTS_NOT_NEGOTIATED
        } else {
            &rules::NOT_ADVERTISED
        };
        let sides: &[Side] = match feature.side() {
            FeatureSide::AgentOnly => &[Side::Agent],
            FeatureSide::ClientOnly => &[Side::Client],
            _ => &[Side::Agent, Side::Client],
        };
        let mut agent_options = None;
        for &side in sides {
            match self.support(side, feature) {
                Support::Unknown => {}
                Support::Missing => {
                    let both = if sides.len() > 1 {
                        " (both peers must)"
                    } else {
                        ""
                    };
                    out.push(Finding::of(
                        rule,
                        at,
                        format!(
                            "{what} is used, but the {side} did not advertise `{feature}` in initialize{both}"
                        ),
                    ));
                }
                Support::Present(o) => {
                    if side == Side::Agent {
                        agent_options = Some(o);
                    }
                }
            }
        }
        agent_options
    }

    fn on_call(&mut self, dir: Direction, method: &str, params: &Value, out: &mut Vec<Finding>) {
        let sid = str_at(params, "sessionId").map(str::to_owned);
        match method {
            "initialize" => {
                self.agent = None;
                self.sessions.clear();
                self.scopes = BoundedMap::default();
                let (key, caps) = capabilities_of(params, Side::Client);
                let adv = Advertisement::read(caps.unwrap_or(&NULL), Side::Client);
                advertisement_findings(&adv, &format!("/params/{key}"), out);
                self.client_form_elicitation = caps
                    .and_then(|c| c.get("elicitation"))
                    .and_then(|e| e.get("form"))
                    .is_some_and(Value::is_object);
                self.client = Some(adv);
            }
            "session/load" | "session/resume" => {
                if let Some(sid) = sid {
                    self.sessions
                        .get_or_create(&sid, self.limits.sessions)
                        .restart();
                }
            }
            "session/close" | "session/delete" => {
                if let Some(sid) = sid {
                    self.sessions.remove(&sid);
                    self.scopes.remove(unscoped_key(&sid));
                }
            }
            "session/prompt" => {
                if let (Some(sid), Some(meta)) =
                    (sid, params.get("_meta").and_then(Value::as_object))
                    && let Some((_, steer)) = namespace::read_key(meta, "steer")
                    && let Some(id) = str_at(steer, "id")
                {
                    let cap = self.limits.steer_ids_per_session;
                    self.sessions
                        .get_or_create(&sid, self.limits.sessions)
                        .steer_ids
                        .insert(id_hash(id), cap);
                }
            }
            "session/update" => self.session_update(sid.as_deref(), params, out),
            "elicitation/create" if dir != Direction::ClientToAgent => {
                self.answer_notes(params, out)
            }
            _ => {
                if let Some((_, path)) = split_method(method)
                    && method_kind(method).is_some()
                {
                    self.extension(method, path, sid.as_deref(), params, out);
                }
            }
        }
    }

    fn session_update(&mut self, sid: Option<&str>, params: &Value, out: &mut Vec<Finding>) {
        let Some(update) = params.get("update") else {
            return;
        };
        match str_at(update, "sessionUpdate") {
            Some("tool_call" | "tool_call_update") => {
                if let (Some(sid), Some(id)) = (sid, str_at(update, "toolCallId")) {
                    self.note_native(sid, id, "/params/update/toolCallId", out);
                }
            }
            Some("session_info_update")
                if update.get("title").is_some_and(Value::is_string)
                    && matches!(
                        self.support(Side::Agent, Feature::SessionTitle),
                        Support::Present(_)
                    ) =>
            {
                let tagged = update
                    .get("_meta")
                    .and_then(Value::as_object)
                    .and_then(|m| namespace::read_key(m, "titleSource"))
                    .is_some();
                if !tagged {
                    out.push(Finding::of(
                        &rules::TITLE_WITHOUT_SOURCE,
                        "/params/update/title",
                        "a title without `_meta.<ns>.titleSource` from an agent that advertised `sessionTitle`; version 1 requires tagged titles",
                    ));
                }
            }
            _ => {}
        }
    }

    fn answer_notes(&self, params: &Value, out: &mut Vec<Finding>) {
        let Some(client) = self.client.as_ref() else {
            return;
        };
        let notes = matches!(
            client.get(Feature::Elicitation).and_then(|f| f.options()),
            Some(FeatureOptions::Elicitation(e)) if e.answer_notes.is_some()
        );
        if notes && self.client_form_elicitation {
            return;
        }
        let Some(props) = params
            .get("requestedSchema")
            .and_then(|s| s.get("properties"))
            .and_then(Value::as_object)
        else {
            return;
        };
        for (key, prop) in props {
            let Some(meta) = prop.get("_meta").and_then(Value::as_object) else {
                continue;
            };
            if let Some((ns, e)) = namespace::read_key(meta, "elicitation")
                && e.get("noteFor").is_some()
            {
                let missing = if notes {
                    "standard form elicitation (`clientCapabilities.elicitation.form`)"
                } else {
                    "`elicitation: {version: 1, answerNotes: true}`"
                };
                out.push(Finding::of(
                    &rules::ANSWER_NOTES_NOT_ADVERTISED,
                    format!(
                        "{}/_meta/{}/elicitation/noteFor",
                        child("/params/requestedSchema/properties", key),
                        ns.key()
                    ),
                    format!(
                        "a note property is sent, but the client did not advertise {missing}; keep the legacy custom-answer flow"
                    ),
                ));
            }
        }
    }

    fn extension(
        &mut self,
        method: &str,
        path: &str,
        sid: Option<&str>,
        params: &Value,
        out: &mut Vec<Finding>,
    ) {
        let what = format!("`{method}`");
        let at = "/method";
        match path {
            "subagents/event" => {
                self.need(Feature::SubagentEvents, "subagent events", at, out);
                self.subagent_event(params, out);
            }
            "session/usage_update" => {
                self.need(Feature::Usage, &what, at, out);
                self.usage(params, out);
            }
            "rate_limits/update" => {
                self.need(Feature::RateLimits, &what, at, out);
                percents(params, "/params", out);
            }
            "rate_limits/get" => {
                if let Some(FeatureOptions::RateLimits(c)) =
                    self.need(Feature::RateLimits, &what, at, out)
                    && c.query.is_none()
                {
                    out.push(Finding::of(
                        &rules::FLAG_NOT_ADVERTISED,
                        at,
                        format!("{what} is sent, but the agent's `rateLimits` lacks `query: true`"),
                    ));
                }
            }
            "session/steer" => {
                if let Some(FeatureOptions::Steering(c)) =
                    self.need(Feature::Steering, &what, at, out)
                    && c.transport != SteeringTransport::Request
                {
                    out.push(Finding::of(
                        &rules::FLAG_NOT_ADVERTISED,
                        at,
                        format!(
                            "{what} is sent, but the agent's steering transport is `{}`",
                            c.transport.as_str()
                        ),
                    ));
                }
                if let (Some(sid), Some(id)) = (sid, str_at(params, "steerId")) {
                    let cap = self.limits.steer_ids_per_session;
                    self.sessions
                        .get_or_create(sid, self.limits.sessions)
                        .steer_ids
                        .insert(id_hash(id), cap);
                }
            }
            "session/steer_applied" => {
                self.need(Feature::Steering, &what, at, out);
                if let (true, Some(sid), Some(id)) =
                    (self.client_traffic, sid, str_at(params, "steerId"))
                {
                    let known = self
                        .sessions
                        .get_mut(sid)
                        .is_some_and(|s| s.steer_ids.contains(id_hash(id)));
                    if !known {
                        out.push(Finding::of(
                            &rules::STEER_UNKNOWN_ID,
                            "/params/steerId",
                            format!(
                                "steer {id:?} was applied, but the client never sent a steer with that id in this session"
                            ),
                        ));
                    }
                }
            }
            "session/goal" => {
                if let Some(FeatureOptions::Goal(c)) = self.need(Feature::Goal, &what, at, out)
                    && let Some(action) = str_at(params, "action")
                {
                    let listed = c
                        .control_actions
                        .as_ref()
                        .is_some_and(|a| a.iter().any(|x| x.as_str() == action));
                    if !listed {
                        out.push(Finding::of(
                            &rules::GOAL_ACTION_NOT_ADVERTISED,
                            "/params/action",
                            format!(
                                "goal action `{action}` is sent on {what}, but the agent's `goal.controlActions` does not list it"
                            ),
                        ));
                    }
                }
            }
            "session/history/read" => {
                self.need(Feature::SessionHistory, &what, at, out);
            }
            "subagents/list" | "subagents/cancel" | "subagents/output" => {
                if let Some(FeatureOptions::Subagents(c)) =
                    self.need(Feature::Subagents, &what, at, out)
                {
                    let (flag, set) = match path {
                        "subagents/list" => ("list", c.list.is_some()),
                        "subagents/cancel" => ("cancel", c.cancel.is_some()),
                        _ => ("output", c.output.is_some()),
                    };
                    if !set {
                        out.push(Finding::of(
                            &rules::FLAG_NOT_ADVERTISED,
                            at,
                            format!(
                                "{what} is sent, but the agent's `subagents` lacks `{flag}: true`"
                            ),
                        ));
                    }
                }
                if let (Some(sid), Some(task)) = (sid, str_at(params, "taskId")) {
                    self.note_native(sid, task, "/params/taskId", out);
                }
            }
            "mcp_apps/load" | "mcp_apps/resource/read" | "mcp_apps/tool/call" => {
                self.need(Feature::McpApps, &what, at, out);
            }
            "session/activity_update" => {
                self.need(Feature::SessionActivity, &what, at, out);
                if let Some(n) = params.get("backgroundTaskCount").and_then(Value::as_f64)
                    && !(n >= 0.0 && n.fract() == 0.0)
                {
                    out.push(Finding::of(
                        &rules::BACKGROUND_TASK_COUNT,
                        "/params/backgroundTaskCount",
                        format!(
                            "`backgroundTaskCount` is {n}; it counts tasks, a non-negative integer"
                        ),
                    ));
                }
            }
            _ => {}
        }
    }

    fn on_result(
        &mut self,
        method: Option<&str>,
        sid: Option<&str>,
        result: &Value,
        out: &mut Vec<Finding>,
    ) {
        match method {
            Some("initialize") => {
                let (key, caps) = capabilities_of(result, Side::Agent);
                let adv = Advertisement::read(caps.unwrap_or(&NULL), Side::Agent);
                advertisement_findings(&adv, &format!("/result/{key}"), out);
                self.agent = Some(adv);
            }
            Some("session/new" | "session/fork") => {
                if let Some(sid) = str_at(result, "sessionId") {
                    self.sessions
                        .get_or_create(sid, self.limits.sessions)
                        .restart();
                }
            }
            Some(m) => match split_method(m).map(|(_, p)| p) {
                Some("rate_limits/get") => percents(result, "/result", out),
                Some("subagents/list") => {
                    // Task ids are native ids of the requested session.
                    let tasks = result.get("tasks").and_then(Value::as_array);
                    if let (Some(sid), Some(tasks)) = (sid, tasks) {
                        for (i, task) in tasks.iter().enumerate() {
                            if let Some(id) = str_at(task, "taskId") {
                                self.note_native(
                                    sid,
                                    id,
                                    &format!("/result/tasks/{i}/taskId"),
                                    out,
                                );
                            }
                        }
                    }
                }
                _ => {}
            },
            None => {}
        }
    }

    fn note_native(&mut self, sid: &str, id: &str, at: &str, out: &mut Vec<Finding>) {
        let cap = self.limits.native_ids_per_session;
        let s = self.sessions.get_or_create(sid, self.limits.sessions);
        let h = id_hash(id);
        if s.runs.contains(h) && !s.native_ids.contains(h) {
            out.push(Finding::of(
                &rules::SUBAGENT_RUN_ID_NATIVE,
                at,
                format!("native id {id:?} equals the run id of a subagent run in this session; run ids never reuse native ids"),
            ));
        }
        s.native_ids.insert(h, cap);
    }

    fn subagent_event(&mut self, params: &Value, out: &mut Vec<Finding>) {
        let (Some(sid), Some(run)) = (str_at(params, "sessionId"), str_at(params, "runId")) else {
            return;
        };
        if sid.is_empty() || run.is_empty() {
            return;
        }
        let kind = str_at(params, "type");
        let limits = self.limits;
        let s = self.sessions.get_or_create(sid, limits.sessions);
        // The event's own native ids.
        let own = [
            params
                .get("snapshot")
                .and_then(|x| str_at(x, "parentToolCallId")),
            str_at(params, "nativeTurnId"),
        ];
        for id in own.into_iter().flatten() {
            s.native_ids
                .insert(id_hash(id), limits.native_ids_per_session);
        }
        let h = id_hash(run);
        if s.native_ids.contains(h) {
            out.push(Finding::of(
                &rules::SUBAGENT_RUN_ID_NATIVE,
                "/params/runId",
                format!("run id {run:?} equals a native id seen in session {sid:?}; run ids are opaque and never reuse native ids"),
            ));
        }
        let state = params.get("snapshot").and_then(|x| str_at(x, "state"));
        let terminal = kind == Some("snapshot") && is_terminal_state(state);
        let kind_name = kind.unwrap_or("untyped");
        match s.runs.get_mut(h) {
            None => {
                if kind != Some("snapshot") {
                    out.push(Finding::of(
                        &rules::SUBAGENT_FIRST_NOT_SNAPSHOT,
                        "/params/type",
                        format!("the first event of run {run:?} has type `{kind_name}`; a run starts with a snapshot"),
                    ));
                }
                s.runs.insert(h, Run { terminal }, limits.runs_per_session);
            }
            Some(r) if r.terminal => {
                out.push(Finding::of(
                    &rules::SUBAGENT_AFTER_TERMINAL,
                    "/params/type",
                    format!("`{kind_name}` event for run {run:?} after its terminal snapshot; a new execution needs a new run id"),
                ));
            }
            Some(r) => {
                if kind == Some("snapshot") {
                    r.terminal = terminal;
                }
            }
        }
    }

    fn usage(&mut self, params: &Value, out: &mut Vec<Finding>) {
        let Some(sid) = str_at(params, "sessionId") else {
            return;
        };
        let scope = params
            .get("_meta")
            .and_then(Value::as_object)
            .and_then(|m| namespace::read_key(m, "usageScopeId"))
            .and_then(|(ns, v)| v.as_str().map(|s| (ns, s)));
        let scope_at = scope
            .map(|(ns, _)| format!("/params/_meta/{}/usageScopeId", ns.key()))
            .unwrap_or_default();
        if let Some((_, id)) = scope
            && utf16_len(id) > acp_extension_core::usage::MAX_USAGE_SCOPE_ID_LENGTH
        {
            out.push(Finding::of(
                &rules::USAGE_SCOPE_ID_TOO_LONG,
                &scope_at,
                format!(
                    "`usageScopeId` has {} characters; at most 256 are allowed",
                    utf16_len(id)
                ),
            ));
        }
        // Scope ids are unique within an ACP session: scopes are per session.
        let key = match scope {
            Some((_, id)) => id_hash(&format!("{sid}\0{id}")),
            None => unscoped_key(sid),
        };
        let limits = self.limits;
        let session = self.sessions.get_or_create(sid, limits.sessions);
        let started = session.started;
        let u = &mut session.usage;
        let mut reentered = false;
        let mut switched = false;
        if let Some(current) = u.current
            && current != key
        {
            switched = true;
            if let (true, Some((_, id))) = (u.ended.contains(key), scope) {
                reentered = true;
                out.push(Finding::of(
                    &rules::USAGE_SCOPE_REENTERED,
                    &scope_at,
                    format!("usage scope {id:?} reappears after another scope began; a scope id is never reused"),
                ));
            }
            u.ended.insert(current, limits.scopes_per_session);
        }
        u.current = Some(key);
        if !self.scopes.contains(key) {
            // A new scope is a new accounting lifetime, counted from zero,
            // when the session's start or an earlier scope was seen.
            let state = ScopeState {
                baseline_zero: !reentered && (started || switched),
                ..ScopeState::default()
            };
            self.scopes.insert(key, state, limits.usage_scopes);
        }
        let Some(u) = self.scopes.get_mut(key) else {
            return;
        };
        let Some(model_usage) = params.get("modelUsage").and_then(Value::as_object) else {
            return;
        };
        // Totals never decrease.
        for (model, row) in model_usage {
            let (Some(prev), Some(cur)) = (u.models.get(model), totals_of(row)) else {
                continue;
            };
            let at = child("/params/modelUsage", model);
            if let Some(i) = (0..COUNTERS.len()).find(|&i| cur.counters[i] < prev.counters[i]) {
                out.push(Finding::of(
                    &rules::USAGE_TOTAL_DECREASED,
                    child(&at, COUNTERS[i]),
                    format!(
                        "cumulative `{}` of {model:?} fell from {} to {} within one usage scope",
                        COUNTERS[i], prev.counters[i], cur.counters[i]
                    ),
                ));
            } else if let (Some(p), Some(c)) = (prev.cost, cur.cost)
                && c < p
                && cost_differs(c, p)
            {
                out.push(Finding::of(
                    &rules::USAGE_TOTAL_DECREASED,
                    child(&at, "costUSD"),
                    format!("cumulative `costUSD` of {model:?} fell from {p} to {c} within one usage scope"),
                ));
            }
        }
        // The delta is the change since the previous update of the scope.
        let judge = u.has_previous || u.baseline_zero;
        if judge
            && let Some(delta) = params
                .get("delta")
                .and_then(|d| d.get("modelUsage"))
                .and_then(Value::as_object)
        {
            let zero = Totals {
                counters: [0.0; 6],
                cost: Some(0.0),
            };
            for (model, row) in model_usage {
                let Some(cur) = totals_of(row) else { continue };
                let prev = u.models.get(model).copied().unwrap_or(zero);
                let at = child("/params/delta/modelUsage", model);
                let d = delta.get(model).and_then(totals_of);
                let dd = d.unwrap_or(Totals::default());
                let mismatch = (0..COUNTERS.len()).find(|&i| {
                    (dd.counters[i] - (cur.counters[i] - prev.counters[i])).abs() > 1e-6
                });
                if let Some(i) = mismatch {
                    let path = if d.is_some() {
                        child(&at, COUNTERS[i])
                    } else {
                        "/params/delta/modelUsage".to_owned()
                    };
                    out.push(Finding::of(
                        &rules::USAGE_DELTA_MISMATCH,
                        path,
                        format!(
                            "delta `{}` of {model:?} is {}, but `modelUsage` grew by {} since the previous update of this scope",
                            COUNTERS[i],
                            dd.counters[i],
                            cur.counters[i] - prev.counters[i]
                        ),
                    ));
                    continue;
                }
                if let Some(dc) = dd.cost {
                    let problem = match (cur.cost, prev.cost) {
                        (Some(c), Some(p)) if cost_differs(dc, c - p) => Some(format!(
                            "delta `costUSD` of {model:?} is {dc}, but the cumulative cost grew by {}",
                            c - p
                        )),
                        (None, _) => Some(format!(
                            "delta `costUSD` of {model:?} is {dc}, but the cumulative cost is unknown"
                        )),
                        (Some(_), None) => Some(format!(
                            "delta `costUSD` of {model:?} is {dc}, but the previous cumulative cost was unknown; the delta cost must be omitted"
                        )),
                        _ => None,
                    };
                    if let Some(message) = problem {
                        out.push(Finding::of(
                            &rules::USAGE_DELTA_MISMATCH,
                            child(&at, "costUSD"),
                            message,
                        ));
                    }
                }
            }
            for (model, row) in delta {
                if model_usage.contains_key(model) {
                    continue;
                }
                if let Some(d) = totals_of(row)
                    && let Some(i) = (0..COUNTERS.len()).find(|&i| d.counters[i] != 0.0)
                {
                    out.push(Finding::of(
                        &rules::USAGE_DELTA_MISMATCH,
                        child(&child("/params/delta/modelUsage", model), COUNTERS[i]),
                        format!(
                            "delta `{}` of {model:?} is {}, but `modelUsage` does not report that model",
                            COUNTERS[i], d.counters[i]
                        ),
                    ));
                }
            }
        }
        for (model, row) in model_usage {
            if let Some(t) = totals_of(row)
                && (u.models.contains_key(model) || u.models.len() < limits.models_per_scope)
            {
                u.models.insert(model.clone(), t);
            }
        }
        u.has_previous = true;
    }

    /// Rules that look at every `_meta.<ns>` section and at the contract
    /// payload (`ext`: `value` is an extension method's params or result).
    fn common(&mut self, value: &Value, at: &str, ext: bool, out: &mut Vec<Finding>) {
        if ext {
            epochs(value, at, out);
        }
        let sid = str_at(value, "sessionId").map(str::to_owned);
        let mut sections = Vec::new();
        find_sections(value, at, None, &mut sections);
        for section in sections {
            if section.capabilities {
                continue;
            }
            for key in section.map.keys() {
                if !KNOWN_META_KEYS.contains(&key.as_str()) {
                    out.push(Finding::of(
                        &rules::UNKNOWN_META_KEY,
                        child(&section.at, key),
                        format!(
                            "`_meta.{}.{key}` is not defined by the contract",
                            section.ns.key()
                        ),
                    ));
                }
            }
            if ext {
                continue;
            }
            self.meta_fields(&section, sid.as_deref(), out);
            epochs_in(section.map, &section.at, out);
        }
    }

    fn meta_fields(&mut self, section: &Section<'_>, sid: Option<&str>, out: &mut Vec<Finding>) {
        for (key, value) in section.map {
            let at = child(&section.at, key);
            let what = format!("`_meta.{}.{key}`", section.ns.key());
            match key.as_str() {
                "forkAtTurn" => {
                    self.need(Feature::ForkAtTurn, &what, &at, out);
                }
                "steer" => {
                    if let Some(FeatureOptions::Steering(c)) =
                        self.need(Feature::Steering, &what, &at, out)
                        && c.transport != SteeringTransport::Prompt
                    {
                        out.push(Finding::of(
                            &rules::FLAG_NOT_ADVERTISED,
                            &at,
                            format!(
                                "{what} is sent, but the agent's steering transport is `{}`",
                                c.transport.as_str()
                            ),
                        ));
                    }
                }
                "goal" => {
                    self.need(Feature::Goal, &what, &at, out);
                }
                "goalControl" => {
                    if let Some(FeatureOptions::Goal(c)) = self.need(Feature::Goal, &what, &at, out)
                        && let Some(action) = str_at(value, "action")
                    {
                        let listed = c
                            .prompt_actions
                            .as_ref()
                            .is_some_and(|a| a.iter().any(|x| x.as_str() == action));
                        if !listed {
                            out.push(Finding::of(
                                &rules::GOAL_ACTION_NOT_ADVERTISED,
                                child(&at, "action"),
                                format!("goal action `{action}` is sent in prompt metadata, but the agent's `goal.promptActions` does not list it"),
                            ));
                        }
                    }
                }
                "worktreeProject" => {
                    self.need(Feature::WorktreeProject, &what, &at, out);
                }
                "sessionConfig" => {
                    self.need(Feature::SessionConfig, &what, &at, out);
                }
                "usageScopeId" => {
                    self.need(Feature::Usage, &what, &at, out);
                }
                "mcpApp" => {
                    self.need(Feature::McpApps, &what, &at, out);
                }
                "titleSource" => {
                    self.need(Feature::SessionTitle, &what, &at, out);
                }
                "activity" if str_at(value, "kind") == Some("context_compaction") => {
                    self.need(Feature::Compaction, &what, &at, out);
                }
                "task" => {
                    self.task(value, &what, &at, out);
                    if let (Some(sid), Some(id)) = (sid, str_at(value, "taskId")) {
                        self.note_native(sid, id, &child(&at, "taskId"), out);
                    }
                }
                "turnId" => {
                    if let (Some(sid), Some(id)) = (sid, value.as_str()) {
                        self.note_native(sid, id, &at, out);
                    }
                }
                _ => {}
            }
        }
    }

    fn task(&self, value: &Value, what: &str, at: &str, out: &mut Vec<Finding>) {
        let flag = match str_at(value, "kind") {
            Some("background") => "background",
            Some("scheduled") => "scheduled",
            _ => {
                // Subagent tasks: either task or subagent support will do.
                let tasks = self.support(Side::Agent, Feature::Tasks);
                let subagents = self.support(Side::Agent, Feature::Subagents);
                if matches!(tasks, Support::Missing) && matches!(subagents, Support::Missing) {
                    out.push(Finding::of(
                        &rules::NOT_ADVERTISED,
                        at,
                        format!("{what} is used, but the agent advertised neither `tasks` nor `subagents` in initialize"),
                    ));
                }
                return;
            }
        };
        if let Some(FeatureOptions::Tasks(c)) = self.need(Feature::Tasks, what, at, out) {
            let set = if flag == "background" {
                c.background.is_some()
            } else {
                c.scheduled.is_some()
            };
            if !set {
                out.push(Finding::of(
                    &rules::FLAG_NOT_ADVERTISED,
                    child(at, "kind"),
                    format!(
                        "a {flag} task is reported, but the agent's `tasks` lacks `{flag}: true`"
                    ),
                ));
            }
        }
    }
}

/// The key of a session's unscoped usage updates.
fn unscoped_key(sid: &str) -> u64 {
    id_hash(&format!("\0unscoped\0{sid}"))
}

/// The capabilities object of `side` in an initialize message and its key.
fn capabilities_of(message: &Value, side: Side) -> (&'static str, Option<&Value>) {
    let key = side.capabilities_key();
    match message.get(key) {
        Some(c) => (key, Some(c)),
        None => ("capabilities", message.get("capabilities")),
    }
}

fn advertisement_findings(adv: &Advertisement, prefix: &str, out: &mut Vec<Finding>) {
    for p in &adv.problems {
        let rule = match p.kind {
            ProblemKind::UnknownKey => &rules::UNKNOWN_META_KEY,
            ProblemKind::WrongSide => &rules::WRONG_SIDE_CAPABILITY,
            // Reported by `shape` already.
            _ => continue,
        };
        out.push(Finding::of(
            rule,
            format!("{prefix}{}", p.pointer),
            p.message.clone(),
        ));
    }
}
