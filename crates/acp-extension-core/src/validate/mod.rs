//! Validation of any contract payload, from bytes or a JSON value.
//!
//! Every payload kind of the contract has a kebab-case name ([`Kind`]):
//! `subagent-event`, `session-usage-update`, `rate-limits-snapshot`,
//! `goal-snapshot`, `task-meta`, `agent-capabilities`, …, plus
//! [`Kind::AUTO`], a whole JSON-RPC message whose method selects the kind.
//! A contract type names its own kind: `Kind::of::<SubagentEvent>()`.
//! Validation returns every violation with a JSON pointer, the rule broken
//! and a sentence for people; it never panics, whatever the input.
//!
//! The fast path parses bytes straight into the contract type (no JSON tree
//! is built); only an invalid value is parsed again to collect all of its
//! violations.
//!
//! ```
//! use acp_extension_core::subagent_events::SubagentEvent;
//! use acp_extension_core::validate::{validate_str, Kind};
//!
//! let report = validate_str(Kind::of::<SubagentEvent>(), r#"{"version":1,"sessionId":"s","runId":"r",
//!     "type":"snapshot","snapshot":{"state":"running","summary":null,
//!     "support":{"stream":["text"],"progress":false,"outputRead":"none","cancel":false}}}"#);
//! assert!(!report.is_valid());
//! assert_eq!(report.violations[0].pointer, "/snapshot/summary");
//! assert_eq!(report.violations[0].rule.id(), "not-null");
//! assert_eq!(
//!     report.violations[0].message(),
//!     "must be a string when present; null is not allowed"
//! );
//! ```

mod auto;
#[cfg(feature = "schema")]
mod schemas;
mod stream;

#[doc(hidden)]
pub use crate::wire::sift;

use serde::de::DeserializeOwned;
use serde_json::Value;

pub use crate::violation::{Check, Rule, Violation, check, child};
pub(crate) use auto::envelope_problem;
#[doc(hidden)]
pub use auto::resembles;
pub use stream::{StreamItem, StreamOptions, StreamSummary, validate_stream};

use crate::elicitation::{ElicitationMeta, ElicitationQuestion};
use crate::mcp_apps::{
    McpAppLoadRequest, McpAppLoadResponse, McpAppResourceReadRequest, McpAppResourceReadResponse,
    McpAppToolCallMeta, McpAppToolCallRequest, McpCallToolResult,
};
use crate::meta::SessionMeta;
use crate::rate_limits::{RateLimit, RateLimitsGetRequest, RateLimitsSnapshot};
use crate::session::{
    ActivityMeta, EmptyResponse, ForkAtTurn, GoalControlRequest, GoalControlResponse,
    GoalPromptControl, GoalSnapshot, NoticeMeta, SessionActivityUpdate, SessionConfig,
    SessionHistoryReadRequest, SteerApplied, SteerPromptMeta, SteerRequest, SteerResponse,
    SubagentCancelRequest, SubagentOutputRequest, SubagentOutputResponse, SubagentTask,
    SubagentsListRequest, SubagentsListResponse, TaskMeta, WorktreeProject,
};
use crate::subagent_events::{SubagentEvent, SubagentOutput, SubagentProgress, SubagentSnapshot};
use crate::usage::{ModelUsage, SessionUsageUpdate};

/// The outcome of validating one value: every violation found.
///
/// # Example
///
/// ```
/// use acp_extension_core::validate::{validate_value, Kind};
/// use serde_json::json;
///
/// // A whole JSON-RPC message: its method picks the payload kind.
/// let report = validate_value(Kind::AUTO, &json!({"jsonrpc": "2.0",
///     "method": "_ua/session/activity_update",
///     "params": {"version": 1, "sessionId": "s", "state": "idle", "backgroundTaskCount": 1.5}}));
/// assert!(!report.is_valid());
/// assert_eq!(report.violations[0].pointer, "/params/backgroundTaskCount");
/// assert_eq!(report.violations[0].rule.id(), "non-negative-integer");
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Report {
    /// Every violation, in declaration order of the fields.
    pub violations: Vec<Violation>,
}

impl Report {
    /// A report with these violations.
    pub(crate) fn new(violations: Vec<Violation>) -> Self {
        Self { violations }
    }

    /// Whether no rule is broken.
    pub fn is_valid(&self) -> bool {
        self.violations.is_empty()
    }
}

/// How a kind is validated.
enum Shape {
    /// One contract type; the fast paths sift the text or parse straight
    /// into it.
    Typed {
        sift: fn(&str) -> Option<bool>,
        typed: fn(&str) -> bool,
        full: fn(&Value) -> Vec<Violation>,
        #[cfg(feature = "schema")]
        schema: fn() -> schemars::Schema,
    },
    /// Needs the JSON tree (several namespaces, cross-field rules).
    Tree {
        full: fn(&Value) -> Vec<Violation>,
        #[cfg(feature = "schema")]
        schema: fn() -> schemars::Schema,
    },
}

/// The verdict without a JSON tree: the sift's ([`sift`]), else `true`
/// when the typed parse succeeds; `None` when only the tree can tell.
fn fast(sift: fn(&str) -> Option<bool>, typed: fn(&str) -> bool, bytes: &[u8]) -> Option<bool> {
    // One UTF-8 pass over the whole text is cheaper than serde_json's check
    // of every string.
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Some(false);
    };
    match sift(text) {
        Some(valid) => Some(valid),
        None => typed(text).then_some(true),
    }
}

/// The verdict of the JSON tree (duplicate keys: the last one wins).
fn tree_verdict(full: fn(&Value) -> Vec<Violation>, bytes: &[u8]) -> bool {
    serde_json::from_slice::<Value>(bytes).is_ok_and(|v| full(&v).is_empty())
}

fn full<T: DeserializeOwned + Check>(v: &Value) -> Vec<Violation> {
    let mut out = check::<T>(v);
    if out.is_empty()
        && let Err(e) = serde_path_to_error::deserialize::<_, T>(v)
    {
        // A rule the collector cannot see (should not happen): report what
        // serde found rather than calling the value valid.
        out.push(Violation::new(
            pointer_of(e.path()),
            Rule::Relation {
                id: "parse",
                message: e.inner().to_string(),
            },
        ));
    }
    out
}

#[cfg(feature = "schema")]
fn schema_of<T: schemars::JsonSchema>() -> schemars::Schema {
    crate::schema::generator().into_root_schema_for::<T>()
}

/// Turns a serde path into a JSON pointer.
pub(crate) fn pointer_of(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut at = String::new();
    for seg in path.iter() {
        match seg {
            Segment::Seq { index } => at = format!("{at}/{index}"),
            Segment::Map { key } => at = child(&at, key),
            Segment::Enum { variant } => at = child(&at, variant),
            Segment::Unknown => {}
        }
    }
    at
}

macro_rules! kinds {
    (
        typed { $( $(#[$doc:meta])* $var:ident = $name:literal : $ty:ty, )* }
        tree { $( $(#[$tdoc:meta])* $tvar:ident = $tname:literal as $tconst:ident : $tfull:path, $tschema:path, )* }
    ) => {
        /// The kinds' one list: the row of the table a [`Kind`] names.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        enum Id {
            $( $var, )*
            $( $tvar, )*
        }

        impl Kind {
            $( $(#[$tdoc])* pub const $tconst: Kind = Kind(Id::$tvar); )*

            /// Every kind: the contract types' in declaration order, then
            /// [`Kind::AUTO`] and the kinds checked on the JSON tree.
            pub const ALL: &'static [Kind] = &[$(Kind(Id::$var),)* $(Kind(Id::$tvar),)*];

            /// The kebab-case name (`subagent-event`).
            pub fn name(self) -> &'static str {
                match self.0 {
                    $( Id::$var => $name, )*
                    $( Id::$tvar => $tname, )*
                }
            }

            /// The kind with this name.
            pub fn from_name(name: &str) -> Option<Kind> {
                match name {
                    $( $name => Some(Kind(Id::$var)), )*
                    $( $tname => Some(Kind(Id::$tvar)), )*
                    _ => None,
                }
            }

            fn shape(self) -> Shape {
                match self.0 {
                    $( Id::$var => Shape::Typed {
                        sift: {
                            #[allow(unused_imports)]
                            use sift::{ViaParse as _, ViaSift as _};
                            (&&sift::Probe::<$ty>::new()).verdict_fn()
                        },
                        typed: |text| serde_json::from_str::<$ty>(text).is_ok(),
                        full: full::<$ty>,
                        #[cfg(feature = "schema")]
                        schema: schema_of::<$ty>,
                    }, )*
                    $( Id::$tvar => Shape::Tree {
                        full: $tfull,
                        #[cfg(feature = "schema")]
                        schema: $tschema,
                    }, )*
                }
            }
        }

        $(
            impl sealed::Sealed for $ty {}
            $(#[$doc])*
            impl HasKind for $ty {
                const KIND: Kind = Kind(Id::$var);
            }
        )*
    };
}

/// A payload kind of the contract, by its kebab-case name: one per
/// contract type ([`Kind::of`]), plus [`Kind::AUTO`] (a whole JSON-RPC
/// message) and the few kinds checked on the JSON tree.
///
/// ```
/// use acp_extension_core::session::GoalSnapshot;
/// use acp_extension_core::validate::Kind;
///
/// let kind = Kind::of::<GoalSnapshot>();
/// assert_eq!(kind.name(), "goal-snapshot");
/// assert_eq!(Kind::from_name("goal-snapshot"), Some(kind));
/// assert_eq!("auto".parse(), Ok(Kind::AUTO));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Kind(Id);

impl Kind {
    /// The kind of contract type `T`.
    pub const fn of<T: HasKind>() -> Kind {
        T::KIND
    }
}

mod sealed {
    #[doc(hidden)]
    pub trait Sealed {}
}

/// A contract type that is a payload [`Kind`] of its own (every type with
/// a kebab-case name in [`Kind::ALL`]); sealed.
pub trait HasKind: sealed::Sealed {
    #[doc(hidden)]
    const KIND: Kind;
}

kinds! {
    typed {
        /// `_<ns>/subagents/event` params.
        SubagentEvent = "subagent-event": SubagentEvent,
        /// A subagent run snapshot.
        SubagentSnapshot = "subagent-snapshot": SubagentSnapshot,
        /// A subagent progress report.
        SubagentProgress = "subagent-progress": SubagentProgress,
        /// A subagent output update (the closed set of session updates).
        SubagentOutput = "subagent-output": SubagentOutput,
        /// `_<ns>/session/usage_update` params.
        SessionUsageUpdate = "session-usage-update": SessionUsageUpdate,
        /// One model's token usage.
        ModelUsage = "model-usage": ModelUsage,
        /// `_<ns>/rate_limits/update` params and `rate_limits/get` result.
        RateLimitsSnapshot = "rate-limits-snapshot": RateLimitsSnapshot,
        /// One rate limit.
        RateLimit = "rate-limit": RateLimit,
        /// `_<ns>/rate_limits/get` params.
        RateLimitsGetRequest = "rate-limits-get-request": RateLimitsGetRequest,
        /// `_<ns>/session/steer` params.
        SteerRequest = "steer-request": SteerRequest,
        /// `_<ns>/session/steer` result.
        SteerResponse = "steer-response": SteerResponse,
        /// `_<ns>/session/steer_applied` params.
        SteerApplied = "steer-applied": SteerApplied,
        /// `_meta.<ns>.steer` on `session/prompt`.
        SteerPromptMeta = "steer-prompt-meta": SteerPromptMeta,
        /// `_<ns>/session/goal` params.
        GoalControlRequest = "goal-control-request": GoalControlRequest,
        /// `_<ns>/session/goal` result.
        GoalControlResponse = "goal-control-response": GoalControlResponse,
        /// `_meta.<ns>.goalControl` on `session/prompt`.
        GoalPromptControl = "goal-prompt-control": GoalPromptControl,
        /// `_meta.<ns>.goal` (not null) on `session_info_update`.
        GoalSnapshot = "goal-snapshot": GoalSnapshot,
        /// `_<ns>/session/history/read` params.
        SessionHistoryReadRequest = "session-history-read-request": SessionHistoryReadRequest,
        /// The empty result of `session/history/read` and `subagents/cancel`.
        EmptyResponse = "empty-response": EmptyResponse,
        /// `_<ns>/session/activity_update` params.
        SessionActivityUpdate = "session-activity-update": SessionActivityUpdate,
        /// `_<ns>/subagents/list` params.
        SubagentsListRequest = "subagents-list-request": SubagentsListRequest,
        /// `_<ns>/subagents/list` result.
        SubagentsListResponse = "subagents-list-response": SubagentsListResponse,
        /// One subagent task of a list result.
        SubagentTask = "subagent-task": SubagentTask,
        /// `_<ns>/subagents/cancel` params.
        SubagentCancelRequest = "subagent-cancel-request": SubagentCancelRequest,
        /// `_<ns>/subagents/output` params.
        SubagentOutputRequest = "subagent-output-request": SubagentOutputRequest,
        /// `_<ns>/subagents/output` result.
        SubagentOutputResponse = "subagent-output-response": SubagentOutputResponse,
        /// `_meta.<ns>.task` on tool calls.
        TaskMeta = "task-meta": TaskMeta,
        /// `_meta.<ns>.activity` on tool calls.
        ActivityMeta = "activity-meta": ActivityMeta,
        /// `_meta.<ns>.notice` on session updates.
        NoticeMeta = "notice": NoticeMeta,
        /// `_meta.<ns>.worktreeProject` on session setup requests.
        WorktreeProject = "worktree-project": WorktreeProject,
        /// `_meta.<ns>.sessionConfig` on session setup requests.
        SessionConfig = "session-config": SessionConfig,
        /// `_meta.<ns>.forkAtTurn` on `session/fork`.
        ForkAtTurn = "fork-at-turn": ForkAtTurn,
        /// `_meta.<ns>.elicitation` at any scope of `elicitation/create`.
        ElicitationMeta = "elicitation-meta": ElicitationMeta,
        /// One elicitation question.
        ElicitationQuestion = "elicitation-question": ElicitationQuestion,
        /// A whole `_meta.<ns>` object of a session message.
        SessionMeta = "session-meta": SessionMeta,
        /// `_meta.<ns>.mcpApp` on `tool_call`.
        McpAppToolCallMeta = "mcp-app-tool-call-meta": McpAppToolCallMeta,
        /// `_<ns>/mcp_apps/load` params.
        McpAppLoadRequest = "mcp-app-load-request": McpAppLoadRequest,
        /// `_<ns>/mcp_apps/load` result.
        McpAppLoadResponse = "mcp-app-load-response": McpAppLoadResponse,
        /// `_<ns>/mcp_apps/resource/read` params.
        McpAppResourceReadRequest = "mcp-app-resource-read-request": McpAppResourceReadRequest,
        /// `_<ns>/mcp_apps/resource/read` result.
        McpAppResourceReadResponse = "mcp-app-resource-read-response": McpAppResourceReadResponse,
        /// `_<ns>/mcp_apps/tool/call` params.
        McpAppToolCallRequest = "mcp-app-tool-call-request": McpAppToolCallRequest,
        /// `_<ns>/mcp_apps/tool/call` result.
        McpCallToolResult = "mcp-call-tool-result": McpCallToolResult,
    }
    tree {
        /// A whole JSON-RPC message; its method (or result shape) selects the kind.
        Auto = "auto" as AUTO: auto::check_message, schemas::message_schema,
        /// `agentCapabilities` (its `_meta.ua` / `_meta.lody`), or the extension object itself.
        AgentCapabilities = "agent-capabilities" as AGENT_CAPABILITIES: auto::check_agent_capabilities, schemas::agent_capabilities_schema,
        /// `clientCapabilities` (its `_meta.ua` / `_meta.lody`), or the extension object itself.
        ClientCapabilities = "client-capabilities" as CLIENT_CAPABILITIES: auto::check_client_capabilities, schemas::client_capabilities_schema,
        /// `elicitation/create` params, with the answer-note rules across properties.
        ElicitationRequest = "elicitation-request" as ELICITATION_REQUEST: crate::elicitation::check_elicitation_request, schemas::elicitation_request_schema,
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Kind {
    type Err = UnknownKind;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Kind::from_name(s).ok_or_else(|| UnknownKind(s.to_owned()))
    }
}

/// A kind name that does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown kind {0:?}; `acp-ext schema` lists the kinds")]
pub struct UnknownKind(pub String);

#[cfg(feature = "schema")]
impl Kind {
    /// The JSON Schema (draft 2020-12) of this kind (feature `schema`).
    pub fn schema(self) -> schemars::Schema {
        match self.shape() {
            Shape::Typed { schema, .. } | Shape::Tree { schema, .. } => schema(),
        }
    }
}

/// One document with every kind's schema: `{"$defs": {kind-name: schema,
/// …}}` (feature `schema`).
#[cfg(feature = "schema")]
pub fn all_schemas() -> Value {
    let mut defs = serde_json::Map::new();
    for kind in Kind::ALL {
        defs.insert(kind.name().to_owned(), Value::from(kind.schema()));
    }
    serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "ACP Extension Core payload kinds",
        "$defs": defs,
    })
}

/// Validates one JSON value as `kind`.
pub fn validate_value(kind: Kind, value: &Value) -> Report {
    let violations = match kind.shape() {
        Shape::Typed { full, .. } | Shape::Tree { full, .. } => full(value),
    };
    Report::new(violations)
}

/// Validates one JSON text as `kind`. Invalid UTF-8, bad syntax, trailing
/// data and nesting deeper than 128 levels are violations, never panics.
pub fn validate_slice(kind: Kind, bytes: &[u8]) -> Report {
    if let Shape::Typed { sift, typed, .. } = kind.shape()
        && fast(sift, typed, bytes) == Some(true)
    {
        return Report::default();
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => validate_value(kind, &v),
        Err(e) => Report::new(vec![Violation::new("", Rule::Syntax(e.to_string()))]),
    }
}

/// Whether `bytes` are one valid value of `kind`, without collecting
/// violations (the fastest check). Always the verdict of [`validate_slice`].
pub fn is_valid_slice(kind: Kind, bytes: &[u8]) -> bool {
    match kind.shape() {
        Shape::Typed {
            sift, typed, full, ..
        } => fast(sift, typed, bytes).unwrap_or_else(|| tree_verdict(full, bytes)),
        Shape::Tree { full, .. } => tree_verdict(full, bytes),
    }
}

/// The sift's verdict alone (`None`: it gave up, or the kind has none),
/// for the verdict tests (feature `test-support`, internal).
#[cfg(feature = "test-support")]
#[doc(hidden)]
pub fn sift_verdict(kind: Kind, bytes: &[u8]) -> Option<bool> {
    match kind.shape() {
        Shape::Typed { sift, .. } => std::str::from_utf8(bytes).ok().and_then(sift),
        Shape::Tree { .. } => None,
    }
}

/// The typed parse's verdict alone (the JSON tree's for kinds without a
/// type), for the verdict tests (feature `test-support`, internal).
#[cfg(feature = "test-support")]
#[doc(hidden)]
pub fn typed_verdict(kind: Kind, bytes: &[u8]) -> bool {
    match kind.shape() {
        Shape::Typed { typed, .. } => std::str::from_utf8(bytes).is_ok_and(typed),
        Shape::Tree { full, .. } => tree_verdict(full, bytes),
    }
}

/// Validates one JSON text as `kind`; see [`validate_slice`].
pub fn validate_str(kind: Kind, text: &str) -> Report {
    validate_slice(kind, text.as_bytes())
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.violations.is_empty() {
            return f.write_str("valid");
        }
        for (i, v) in self.violations.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{v}")?;
        }
        Ok(())
    }
}
