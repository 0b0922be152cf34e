//! Typed `_meta.<ns>.<field>` metadata on standard ACP messages.
//!
//! Where ACP already has a message for a behaviour (a tool call, a session
//! info update, `session/new`, `session/prompt`, `elicitation/create`), the
//! contract rides on it: the extension data sits at `_meta.lody.<field>`
//! (newer spelling `_meta.ua.<field>`). ACP's `_meta` is a free-form JSON
//! object (`agent_client_protocol::v1::schema::Meta`); this module reads and
//! writes its contract fields with their types.
//!
//! Reading accepts both namespaces (`ua` wins when both carry the field);
//! writing uses the namespace you choose and keeps every other key,
//! including other vendors' (`_meta.codex`, `_meta.jetbrains.air`, …).
//!
//! ```
//! use acp_extension_core::meta::{fields, HasMeta, MetaExt};
//! use acp_extension_core::session::{MessagePhase, TitleSource};
//! use acp_extension_core::Namespace;
//! use agent_client_protocol::v1::schema::SessionInfoUpdate;
//!
//! let mut update = SessionInfoUpdate::new().title("Fix the parser".to_string());
//! update.set_ext::<fields::TitleSource>(Namespace::Lody, TitleSource::Generated);
//! assert_eq!(
//!     serde_json::to_value(&update)?["_meta"]["lody"]["titleSource"],
//!     "generated"
//! );
//! assert_eq!(update.ext::<fields::TitleSource>()?, Some(TitleSource::Generated));
//! assert_eq!(update.ext::<fields::MessagePhase>()?, None);
//! # let _ = MessagePhase::Commentary;
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use agent_client_protocol::v1::schema as acp;

use crate::elicitation::ElicitationMeta;
use crate::mcp_apps::McpAppToolCallMeta;
use crate::namespace::{self, Namespace};
use crate::session::{
    ActivityMeta, ForkAtTurn, GoalPromptControl, GoalSnapshot, MessagePhase, NoticeMeta,
    SessionConfig, SteerPromptMeta, TaskMeta, TitleSource, WorktreeProject,
};
use crate::violation::{Check, Violation, child};
use crate::wire::Map;

/// One contract field under `_meta.<ns>`: its key and value type.
pub trait MetaField {
    /// The key under `_meta.<ns>`, such as `titleSource`.
    const KEY: &'static str;
    /// The feature that must be negotiated before a peer writes it (`None`:
    /// the contract gates it on no capability).
    const FEATURE: Option<crate::capabilities::Feature>;
    /// The value type.
    type Value: Serialize + DeserializeOwned + Check;
}

/// One `_meta.<ns>` field of the contract, as its one declaration in
/// [`fields`] gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct MetaFieldInfo {
    /// The key under `_meta.<ns>`, such as `titleSource`.
    pub key: &'static str,
    /// The feature that must be negotiated before a peer writes it.
    pub feature: Option<crate::capabilities::Feature>,
}

/// The declaration of the contract's `_meta.<ns>` key `key`; `None` for a
/// key the contract does not define.
///
/// ```
/// use acp_extension_core::capabilities::Feature;
/// use acp_extension_core::meta::meta_field_info;
///
/// assert_eq!(meta_field_info("titleSource").unwrap().feature, Some(Feature::SessionTitle));
/// assert_eq!(meta_field_info("turnId").unwrap().feature, None);
/// assert!(meta_field_info("vendorThing").is_none());
/// ```
pub fn meta_field_info(key: &str) -> Option<&'static MetaFieldInfo> {
    fields::ALL.iter().find(|f| f.key == key)
}

/// Marker types naming each `_meta.<ns>` field of the contract.
pub mod fields {
    use super::*;

    macro_rules! fields {
        ($( $(#[$doc:meta])* $name:ident = $key:literal: $ty:ty, $($feature:ident)?; )*) => {
            $(
                $(#[$doc])*
                #[derive(Debug, Clone, Copy, PartialEq, Eq)]
                pub struct $name;
                impl MetaField for $name {
                    const KEY: &'static str = $key;
                    const FEATURE: Option<crate::capabilities::Feature> =
                        fields!(@feature $($feature)?);
                    type Value = $ty;
                }
            )*

            /// Every `_meta.<ns>` field of the contract.
            pub const ALL: &[MetaFieldInfo] = &[
                $( MetaFieldInfo { key: $key, feature: fields!(@feature $($feature)?) }, )*
            ];
        };
        (@feature $feature:ident) => { Some(crate::capabilities::Feature::$feature) };
        (@feature) => { None };
    }

    // Each field: its marker type, key, value type and the feature that
    // gates it (none: ungated).
    fields! {
        /// `forkAtTurn` on `session/fork`: the source turn to fork at.
        ForkAtTurn = "forkAtTurn": super::ForkAtTurn, ForkAtTurn;
        /// `elicitation` on `elicitation/create` (request, property and option scope).
        Elicitation = "elicitation": ElicitationMeta, Elicitation;
        /// `task` on `tool_call` / `tool_call_update`: subagent, background and scheduled tasks.
        Task = "task": TaskMeta, Tasks;
        /// `activity` on `tool_call` / `tool_call_update`: compaction and retry.
        Activity = "activity": ActivityMeta, Compaction;
        /// `toolName` on `tool_call` / `tool_call_update`: the canonical tool identity.
        ToolName = "toolName": String,;
        /// `titleSource` on `session_info_update`.
        TitleSource = "titleSource": super::TitleSource, SessionTitle;
        /// `goal` on `session_info_update`: the goal snapshot, or `null` for no goal.
        Goal = "goal": Option<GoalSnapshot>, Goal;
        /// `goalControl` on `session/prompt`: a goal action that starts work.
        GoalControl = "goalControl": GoalPromptControl, Goal;
        /// `steer` on `session/prompt` when steering uses the prompt transport.
        Steer = "steer": SteerPromptMeta, Steering;
        /// `notice` on a session update: an info, warning or error notice.
        Notice = "notice": super::NoticeMeta,;
        /// `messagePhase` on message chunks: commentary or final answer.
        MessagePhase = "messagePhase": super::MessagePhase,;
        /// `worktreeProject` on `session/new|load|resume|fork`.
        WorktreeProject = "worktreeProject": super::WorktreeProject, WorktreeProject;
        /// `sessionConfig` on `session/new|load|resume|fork`.
        SessionConfig = "sessionConfig": super::SessionConfig, SessionConfig;
        /// `usageScopeId` on `session/usage_update`: the accounting scope.
        UsageScopeId = "usageScopeId": crate::usage::UsageScopeId, Usage;
        /// `turnId` on session updates: the native turn the update belongs to.
        TurnId = "turnId": String,;
        /// `mcpApp` on `tool_call`: the MCP app view of the called tool.
        McpApp = "mcpApp": McpAppToolCallMeta, McpApps;
    }
}

crate::wire_struct! {
    /// The whole `_meta.<ns>` object of a standard session message, every
    /// field optional (the contract's `SessionMeta`, plus the keys the
    /// contract documents elsewhere: `elicitation`, `sessionConfig`,
    /// `usageScopeId`, `mcpApp`). Unknown keys are kept
    /// ([`WireObject::extra`](crate::wire::WireObject::extra)).
    pub struct SessionMeta {
        opt {
            /// See [`fields::WorktreeProject`].
            worktree_project: WorktreeProject = "worktreeProject",
            /// See [`fields::TurnId`].
            turn_id: String = "turnId",
            /// See [`fields::ForkAtTurn`].
            fork_at_turn: ForkAtTurn = "forkAtTurn",
            /// See [`fields::Steer`].
            steer: SteerPromptMeta = "steer",
            /// See [`fields::ToolName`].
            tool_name: String = "toolName",
            /// See [`fields::Activity`].
            activity: ActivityMeta = "activity",
            /// See [`fields::Task`].
            task: TaskMeta = "task",
            /// See [`fields::GoalControl`].
            goal_control: GoalPromptControl = "goalControl",
            /// See [`fields::Notice`].
            notice: NoticeMeta = "notice",
            /// See [`fields::TitleSource`].
            title_source: TitleSource = "titleSource",
            /// See [`fields::MessagePhase`].
            message_phase: MessagePhase = "messagePhase",
            /// See [`fields::Elicitation`].
            elicitation: ElicitationMeta = "elicitation",
            /// See [`fields::SessionConfig`].
            session_config: SessionConfig = "sessionConfig",
            /// See [`fields::UsageScopeId`].
            usage_scope_id: crate::usage::UsageScopeId = "usageScopeId",
            /// See [`fields::McpApp`].
            mcp_app: McpAppToolCallMeta = "mcpApp",
        }
        nullable {
            /// See [`fields::Goal`]; `null` means the session has no goal.
            goal: GoalSnapshot = "goal",
        }
    }
}

/// A contract field present under `_meta.<ns>` but breaking its type.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("_meta.{namespace}.{key} breaks the contract: {}", join(.violations))]
#[non_exhaustive]
pub struct MetaError {
    /// The namespace it was read from.
    pub namespace: Namespace,
    /// The field key.
    pub key: &'static str,
    /// Every violation, pointers relative to `_meta` (such as `/lody/goal/status`).
    pub violations: Vec<Violation>,
}

fn join(v: &[Violation]) -> String {
    v.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Reads field `F` from a `_meta` object: `Ok(None)` when absent in both
/// namespaces, an error naming every violation when present but invalid.
pub fn read<F: MetaField>(meta: &Map) -> Result<Option<F::Value>, MetaError> {
    let Some((ns, value)) = namespace::read_key(meta, F::KEY) else {
        return Ok(None);
    };
    <F::Value as serde::Deserialize>::deserialize(value)
        .map(Some)
        .map_err(|_| {
            let at = child(&child("", ns.key()), F::KEY);
            let mut violations = Vec::new();
            F::Value::check(value, &at, &mut violations);
            MetaError {
                namespace: ns,
                key: F::KEY,
                violations,
            }
        })
}

/// Writes field `F` into a `_meta` object under `ns`, keeping every other key.
pub fn write<F: MetaField>(meta: &mut Map, ns: Namespace, value: &F::Value) {
    let json = serde_json::to_value(value).unwrap_or(Value::Null);
    namespace::write_key(meta, ns, F::KEY, json);
}

/// Validates every contract section (`_meta.ua`, `_meta.lody`) of a
/// message's `_meta` object as a [`SessionMeta`]; pointers are relative to
/// `_meta`.
pub fn check_meta(meta: &Map) -> Vec<Violation> {
    let mut out = Vec::new();
    for ns in Namespace::ALL {
        if let Some(section) = meta.get(ns.key()) {
            SessionMeta::check(section, &child("", ns.key()), &mut out);
        }
    }
    out
}

/// A standard ACP type with a `_meta` object.
pub trait HasMeta {
    /// The `_meta` object, if any. (Named so as not to collide with the
    /// SDK builders' own `meta(…)` setters.)
    fn ext_meta(&self) -> Option<&Map>;
    /// The `_meta` slot, to create or edit; `None` only for a message kind
    /// this crate does not know (a `SessionUpdate` variant newer than it).
    fn ext_meta_mut(&mut self) -> Option<&mut Option<Map>>;
}

/// Typed access to contract fields on any [`HasMeta`] message.
///
/// # Example
///
/// ```
/// use acp_extension_core::meta::{MetaExt, fields};
/// use acp_extension_core::Namespace;
/// use agent_client_protocol::v1::schema::ToolCall;
///
/// let call = ToolCall::new("call-1", "Read").with_ext::<fields::TurnId>(Namespace::Ua, "turn-3".to_owned());
/// assert_eq!(serde_json::to_value(&call)?["_meta"], serde_json::json!({"ua": {"turnId": "turn-3"}}));
/// assert_eq!(call.ext::<fields::TurnId>().unwrap().as_deref(), Some("turn-3"));
/// # Ok::<_, serde_json::Error>(())
/// ```
pub trait MetaExt: HasMeta {
    /// Reads field `F` (`ua` first, then `lody`).
    fn ext<F: MetaField>(&self) -> Result<Option<F::Value>, MetaError> {
        match self.ext_meta() {
            Some(meta) => read::<F>(meta),
            None => Ok(None),
        }
    }

    /// Writes field `F` under `ns`; `false` when the message has no
    /// `_meta` slot this crate knows (see [`HasMeta::ext_meta_mut`]).
    fn set_ext<F: MetaField>(&mut self, ns: Namespace, value: F::Value) -> bool {
        let Some(slot) = self.ext_meta_mut() else {
            return false;
        };
        write::<F>(slot.get_or_insert_with(Map::new), ns, &value);
        true
    }

    /// Builder form of [`MetaExt::set_ext`].
    #[must_use]
    fn with_ext<F: MetaField>(mut self, ns: Namespace, value: F::Value) -> Self
    where
        Self: Sized,
    {
        self.set_ext::<F>(ns, value);
        self
    }

    /// Removes field `F` from both namespaces.
    fn remove_ext<F: MetaField>(&mut self) {
        if let Some(Some(meta)) = self.ext_meta_mut() {
            namespace::remove_key(meta, F::KEY);
        }
    }
}

impl<T: HasMeta> MetaExt for T {}

impl HasMeta for Option<Map> {
    fn ext_meta(&self) -> Option<&Map> {
        self.as_ref()
    }
    fn ext_meta_mut(&mut self) -> Option<&mut Option<Map>> {
        Some(self)
    }
}

macro_rules! has_meta {
    ($($ty:ident),* $(,)?) => {
        $(
            impl HasMeta for acp::$ty {
                fn ext_meta(&self) -> Option<&Map> {
                    self.meta.as_ref()
                }
                fn ext_meta_mut(&mut self) -> Option<&mut Option<Map>> {
                    Some(&mut self.meta)
                }
            }
        )*
    };
}

has_meta!(
    AgentCapabilities,
    ClientCapabilities,
    InitializeRequest,
    InitializeResponse,
    NewSessionRequest,
    NewSessionResponse,
    LoadSessionRequest,
    LoadSessionResponse,
    ResumeSessionRequest,
    ResumeSessionResponse,
    ListSessionsRequest,
    CloseSessionRequest,
    PromptRequest,
    PromptResponse,
    SessionNotification,
    ToolCall,
    ToolCallUpdate,
    SessionInfoUpdate,
    ContentChunk,
    UsageUpdate,
    Plan,
    PlanEntry,
    RequestPermissionRequest,
    CreateElicitationRequest,
    SessionConfigOption,
    SetSessionConfigOptionRequest,
);

/// The `_meta` of a session update sits on the update's own object (the
/// inner struct of each variant).
///
/// ```
/// use acp_extension_core::meta::{fields, MetaExt};
/// use acp_extension_core::session::TitleSource;
/// use acp_extension_core::Namespace;
/// use agent_client_protocol::v1::schema::{SessionInfoUpdate, SessionUpdate};
///
/// let update = SessionUpdate::SessionInfoUpdate(SessionInfoUpdate::new().title("Fix the parser"))
///     .with_ext::<fields::TitleSource>(Namespace::Lody, TitleSource::Generated);
/// assert_eq!(update.ext::<fields::TitleSource>().unwrap(), Some(TitleSource::Generated));
/// ```
impl HasMeta for acp::SessionUpdate {
    fn ext_meta(&self) -> Option<&Map> {
        use acp::SessionUpdate as U;
        match self {
            U::UserMessageChunk(c) | U::AgentMessageChunk(c) | U::AgentThoughtChunk(c) => {
                c.meta.as_ref()
            }
            U::ToolCall(t) => t.meta.as_ref(),
            U::ToolCallUpdate(t) => t.meta.as_ref(),
            U::Plan(p) => p.meta.as_ref(),
            U::AvailableCommandsUpdate(u) => u.meta.as_ref(),
            U::CurrentModeUpdate(u) => u.meta.as_ref(),
            U::ConfigOptionUpdate(u) => u.meta.as_ref(),
            U::SessionInfoUpdate(u) => u.meta.as_ref(),
            U::UsageUpdate(u) => u.meta.as_ref(),
            U::Notice(u) => u.meta.as_ref(),
            U::CompactionUpdate(u) => u.meta.as_opt_ref().flatten(),
            U::CompactionSummaryChunk(u) => u.meta.as_ref(),
            _ => None,
        }
    }
    /// `None` for `compaction_update`, whose `_meta` has three states in
    /// the SDK (write it there directly), and for variants newer than this crate.
    fn ext_meta_mut(&mut self) -> Option<&mut Option<Map>> {
        use acp::SessionUpdate as U;
        Some(match self {
            U::UserMessageChunk(c) | U::AgentMessageChunk(c) | U::AgentThoughtChunk(c) => {
                &mut c.meta
            }
            U::ToolCall(t) => &mut t.meta,
            U::ToolCallUpdate(t) => &mut t.meta,
            U::Plan(p) => &mut p.meta,
            U::AvailableCommandsUpdate(u) => &mut u.meta,
            U::CurrentModeUpdate(u) => &mut u.meta,
            U::ConfigOptionUpdate(u) => &mut u.meta,
            U::SessionInfoUpdate(u) => &mut u.meta,
            U::UsageUpdate(u) => &mut u.meta,
            U::Notice(u) => &mut u.meta,
            U::CompactionSummaryChunk(u) => &mut u.meta,
            _ => return None,
        })
    }
}

// `session/fork` is behind the SDK's `unstable_session_fork` feature.
#[cfg(feature = "unstable_session_fork")]
has_meta!(ForkSessionRequest, ForkSessionResponse);

/// A time in a contract field that reads wrong: a rule of
/// [`epoch_findings`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(hidden)]
pub enum EpochRule {
    /// Above 10^11: milliseconds where the contract sends seconds.
    Milliseconds,
    /// A fraction of a second (consumers read whole seconds).
    Fractional,
    /// `0`: a placeholder rather than a time.
    Zero,
}

impl EpochRule {
    /// The rule's id (`epoch-milliseconds`, `epoch-fractional`,
    /// `epoch-zero`), the same in a linter and the consumer state.
    pub fn id(self) -> &'static str {
        match self {
            EpochRule::Milliseconds => "epoch-milliseconds",
            EpochRule::Fractional => "epoch-fractional",
            EpochRule::Zero => "epoch-zero",
        }
    }
}

/// One `…EpochSeconds` value that breaks an [`EpochRule`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[doc(hidden)]
pub struct EpochFinding {
    /// Which rule.
    pub rule: EpochRule,
    /// JSON pointer of the value.
    pub pointer: String,
    /// One line for people.
    pub message: String,
}

/// The `…EpochSeconds` values of a message part that read wrong: in an
/// extension payload (`extension`: the params or result of a `_lody/…`
/// method) every such key, elsewhere those inside `_meta.<ns>` sections
/// (not the capability advertisements'). `at` is the part's pointer. One
/// rule for a linter and the consumer state.
///
/// ```
/// use acp_extension_core::meta::{EpochRule, epoch_findings};
/// use serde_json::json;
///
/// let update = json!({"update": {"_meta": {"lody": {"goal": {"objective": "x",
///     "status": "active", "createdAtEpochSeconds": 1790000000000u64}}}}});
/// let found = epoch_findings(&update, "/params", false);
/// assert_eq!(found[0].rule, EpochRule::Milliseconds);
/// assert_eq!(found[0].pointer, "/params/update/_meta/lody/goal/createdAtEpochSeconds");
/// ```
#[doc(hidden)]
pub fn epoch_findings(value: &Value, at: &str, extension: bool) -> Vec<EpochFinding> {
    let mut out = Vec::new();
    // One pointer buffer for the whole walk: a pointer string is made only
    // for a finding.
    let mut path = at.to_owned();
    if extension {
        epochs(value, &mut path, &mut out);
    } else {
        for section in sections(value, at).into_iter().filter(|s| !s.capabilities) {
            let mut path = section.pointer;
            epochs_in(section.fields, &mut path, &mut out);
        }
    }
    out
}

/// One `_meta.<ns>` section inside a message part ([`sections`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[doc(hidden)]
pub struct Section<'a> {
    /// Its JSON pointer (`…/_meta/<ns>`).
    pub pointer: String,
    /// Its namespace.
    pub namespace: Namespace,
    /// Its fields.
    pub fields: &'a Map,
    /// Whether it belongs to a capability advertisement (a `_meta` of
    /// `agentCapabilities`, `clientCapabilities` or `capabilities`): an
    /// advertisement, not message metadata.
    pub capabilities: bool,
}

/// Every `_meta.<ns>` section inside `value`, at any depth, in document
/// order; `at` is `value`'s own pointer. The one walk over `_meta` the
/// epoch rules, the connection's sequence rules and a linter share.
///
/// ```
/// use acp_extension_core::meta::sections;
/// use serde_json::json;
///
/// let params = json!({"update": {"_meta": {"ua": {"turnId": "t"}}},
///     "agentCapabilities": {"_meta": {"lody": {"usage": {"version": 1}}}}});
/// let found = sections(&params, "/params");
/// assert_eq!(found[0].pointer, "/params/update/_meta/ua");
/// assert!(!found[0].capabilities && found[1].capabilities);
/// ```
#[doc(hidden)]
pub fn sections<'a>(value: &'a Value, at: &str) -> Vec<Section<'a>> {
    let mut out = Vec::new();
    // One pointer buffer for the walk: a pointer string is made only for a
    // section found.
    let mut path = at.to_owned();
    walk_sections(value, &mut path, None, &mut out);
    out
}

fn walk_sections<'a>(
    v: &'a Value,
    path: &mut String,
    owner: Option<&str>,
    out: &mut Vec<Section<'a>>,
) {
    let len = path.len();
    match v {
        Value::Object(obj) => {
            for (k, x) in obj {
                if !x.is_object() && !x.is_array() {
                    continue;
                }
                crate::violation::push_child(path, k);
                if k == "_meta" {
                    if let Value::Object(meta) = x {
                        let capabilities = matches!(
                            owner,
                            Some("agentCapabilities" | "clientCapabilities" | "capabilities")
                        );
                        for namespace in Namespace::ALL {
                            if let Some(Value::Object(fields)) = meta.get(namespace.key()) {
                                out.push(Section {
                                    pointer: child(path, namespace.key()),
                                    namespace,
                                    fields,
                                    capabilities,
                                });
                            }
                        }
                    }
                } else {
                    walk_sections(x, path, Some(k), out);
                }
                path.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                if !x.is_object() && !x.is_array() {
                    continue;
                }
                use std::fmt::Write as _;
                let _ = write!(path, "/{i}");
                walk_sections(x, path, owner, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

fn epochs(v: &Value, path: &mut String, out: &mut Vec<EpochFinding>) {
    match v {
        Value::Object(obj) => epochs_in(obj, path, out),
        Value::Array(items) => {
            let len = path.len();
            for (i, x) in items.iter().enumerate() {
                if !x.is_object() && !x.is_array() {
                    continue;
                }
                use std::fmt::Write as _;
                let _ = write!(path, "/{i}");
                epochs(x, path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

fn epochs_in(obj: &Map, path: &mut String, out: &mut Vec<EpochFinding>) {
    let len = path.len();
    for (k, x) in obj {
        if k.ends_with("EpochSeconds")
            && let Some(n) = x.as_f64()
        {
            let found = if n > 1e11 {
                Some((
                    EpochRule::Milliseconds,
                    format!(
                        "`{k}` is {x}, which looks like milliseconds; the contract sends Unix epoch seconds"
                    ),
                ))
            } else if n.fract() != 0.0 {
                Some((
                    EpochRule::Fractional,
                    format!("`{k}` is {x}, a fractional number of seconds"),
                ))
            } else if n == 0.0 {
                Some((
                    EpochRule::Zero,
                    format!("`{k}` is 0 (1970-01-01), a placeholder rather than a time"),
                ))
            } else {
                None
            };
            if let Some((rule, message)) = found {
                out.push(EpochFinding {
                    rule,
                    pointer: crate::violation::child(path, k),
                    message,
                });
            }
        }
        if x.is_object() || x.is_array() {
            crate::violation::push_child(path, k);
            epochs(x, path, out);
            path.truncate(len);
        }
    }
}
