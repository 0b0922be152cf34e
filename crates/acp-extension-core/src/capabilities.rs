//! Capability objects that peers advertise in `initialize`.
//!
//! The agent advertises [`AgentExtensionCapabilities`] at
//! `InitializeResponse.agentCapabilities._meta.<ns>` and the client advertises
//! [`ClientExtensionCapabilities`] at
//! `InitializeRequest.clientCapabilities._meta.<ns>`, where `<ns>` is `ua` or
//! `lody` (see [`crate::namespace`]). Each feature key maps to an object with
//! at least `version: 1`; a missing key means "not supported", and support
//! for one feature never implies another. Reading what a peer advertised,
//! feature by feature, is the job of [`crate::negotiation`].
//!
//! ```
//! use acp_extension_core::capabilities::{
//!     AgentExtensionCapabilities, RateLimitsCapability, VersionOneCapability,
//! };
//! use acp_extension_core::namespace::NamespaceSet;
//! use acp_extension_core::wire::{True, Version1, WireObject};
//! use serde_json::json;
//!
//! let caps = AgentExtensionCapabilities::new()
//!     .usage(VersionOneCapability::new())
//!     .rate_limits(RateLimitsCapability::new().query(True));
//! assert_eq!(
//!     serde_json::Value::Object(caps.to_meta(NamespaceSet::Lody)),
//!     json!({"lody": {"usage": {"version": 1}, "rateLimits": {"version": 1, "query": true}}}),
//! );
//!
//! let parsed: AgentExtensionCapabilities =
//!     serde_json::from_value(json!({"usage": {"version": 1}, "future": {"version": 1}}))?;
//! assert!(parsed.usage.is_some());
//! assert!(parsed.extra().contains_key("future")); // unknown keys survive
//! # Ok::<_, serde_json::Error>(())
//! ```

use std::fmt;

use agent_client_protocol::v1::schema::{AgentCapabilities, ClientCapabilities};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::namespace::{NamespaceSet, write_key};
use crate::violation::{Check, Rule, Violation};
use crate::wire::{Map, True, Version1};

crate::wire_struct! {
    /// `{version: 1}`: the shape of every feature without options.
    pub struct VersionOneCapability {
        lit {
            /// Always the literal `1`; any other version means "not supported".
            version: Version1 = "version",
        }
        req {
        }
    }
}

crate::wire_struct! {
    /// Client support for Core semantics on standard ACP form elicitation
    /// (`clientCapabilities._meta.<ns>.elicitation`).
    pub struct ElicitationCapability {
        lit {
            /// Always the literal `1`.
            version: Version1 = "version",
        }
        req {
        }
        opt {
            /// The client keeps a selected option and its separately keyed
            /// note end to end, so agents may send `noteFor` properties.
            answer_notes: True = "answerNotes",
        }
    }
}

crate::wire_enum! {
    /// How steering input reaches the agent.
    pub enum SteeringTransport {
        /// A dedicated steering request.
        Request = "request",
        /// A `session/prompt` sent while a turn is running.
        Prompt = "prompt",
    }
}

crate::wire_enum! {
    /// Whether steering continues the running upstream turn or hands off to a new one.
    pub enum UpstreamTurn {
        /// The steering input joins the running turn.
        Same = "same",
        /// The running turn ends and a new one takes over.
        Handoff = "handoff",
    }
}

crate::wire_enum! {
    /// Which session configuration a steering input runs under.
    pub enum ConfigPolicy {
        /// The configuration active for the running turn.
        Active = "active",
        /// The configuration is applied to the steered input.
        Apply = "apply",
    }
}

crate::wire_struct! {
    /// Agent capability `steering`: sending input into a running turn.
    pub struct SteeringCapability {
        lit {
            /// Always the literal `1`.
            version: Version1 = "version",
        }
        req {
            /// How steering input is delivered.
            transport: SteeringTransport = "transport",
            /// What happens to the running upstream turn.
            upstream_turn: UpstreamTurn = "upstreamTurn",
            /// Which configuration steered input runs under.
            config_policy: ConfigPolicy = "configPolicy",
        }
    }
}

crate::wire_enum! {
    /// One goal operation.
    pub enum GoalAction {
        /// Set or replace the goal.
        Set = "set",
        /// Pause work on the goal.
        Pause = "pause",
        /// Resume work on the goal.
        Resume = "resume",
        /// Clear the goal.
        Clear = "clear",
    }
}

crate::wire_struct! {
    /// Agent capability `goal`: a durable session goal.
    pub struct GoalCapability {
        lit {
            /// Always the literal `1`.
            version: Version1 = "version",
        }
        req {
            /// Every action the agent implements, on any transport.
            actions: Vec<GoalAction> = "actions",
        }
        opt {
            /// Actions accepted on the goal request method while a prompt is
            /// in flight; they never start a turn.
            control_actions: Vec<GoalAction> = "controlActions",
            /// Actions accepted through `session/prompt`
            /// `_meta.<ns>.goalControl`; actions that start work belong here.
            prompt_actions: Vec<GoalAction> = "promptActions",
        }
    }
}

crate::wire_struct! {
    /// Agent capability `subagents`: each flag enables the matching
    /// `_lody/subagents/*` request.
    pub struct SubagentCapability {
        lit {
            /// Always the literal `1`.
            version: Version1 = "version",
        }
        req {
            /// Lifecycle reporting; required and always `true`.
            lifecycle: True = "lifecycle",
        }
        opt {
            /// Listing subagents.
            list: True = "list",
            /// Cancelling a subagent.
            cancel: True = "cancel",
            /// Reading a subagent's output.
            output: True = "output",
        }
    }
}

crate::wire_struct! {
    /// Agent capability `tasks`: task metadata on tool calls.
    pub struct TaskCapability {
        lit {
            /// Always the literal `1`.
            version: Version1 = "version",
        }
        req {
        }
        opt {
            /// Background tasks.
            background: True = "background",
            /// Scheduled tasks.
            scheduled: True = "scheduled",
        }
    }
}

crate::wire_struct! {
    /// Agent capability `rateLimits`: rate-limit updates.
    pub struct RateLimitsCapability {
        lit {
            /// Always the literal `1`.
            version: Version1 = "version",
        }
        req {
        }
        opt {
            /// The agent also answers the rate-limit get request.
            query: True = "query",
        }
    }
}

crate::wire_struct! {
    /// What the agent supports, at `agentCapabilities._meta.<ns>`.
    ///
    /// Every key is optional; absent means unsupported. `subagentEvents` and
    /// `mcpApps` become active only when the client advertises them too.
    pub struct AgentExtensionCapabilities {
        opt {
            /// Subagent events (needs the client flag too).
            subagent_events: VersionOneCapability = "subagentEvents",
            /// The agent owns title generation and pushes tagged titles.
            session_title: VersionOneCapability = "sessionTitle",
            /// Usage accounting updates.
            usage: VersionOneCapability = "usage",
            /// Rate-limit updates.
            rate_limits: RateLimitsCapability = "rateLimits",
            /// `session/fork` at a given turn.
            fork_at_turn: VersionOneCapability = "forkAtTurn",
            /// Steering a running turn.
            steering: SteeringCapability = "steering",
            /// Task metadata.
            tasks: TaskCapability = "tasks",
            /// Subagent requests.
            subagents: SubagentCapability = "subagents",
            /// Session goals.
            goal: GoalCapability = "goal",
            /// Compaction activity.
            compaction: VersionOneCapability = "compaction",
            /// History reads.
            session_history: VersionOneCapability = "sessionHistory",
            /// Session config metadata; listed in the READMEs but declared by
            /// no type version, so informational only.
            session_config: VersionOneCapability = "sessionConfig",
            /// Session activity updates (seed only).
            session_activity: VersionOneCapability = "sessionActivity",
            /// Worktree project metadata.
            worktree_project: VersionOneCapability = "worktreeProject",
            /// MCP Apps methods (needs the client flag too; repository only).
            mcp_apps: VersionOneCapability = "mcpApps",
        }
    }
}

crate::wire_struct! {
    /// What the client supports, at `clientCapabilities._meta.<ns>`.
    ///
    /// An empty object is valid and means "no extensions".
    pub struct ClientExtensionCapabilities {
        opt {
            /// The client can receive subagent events.
            subagent_events: VersionOneCapability = "subagentEvents",
            /// Core semantics on form elicitation.
            elicitation: ElicitationCapability = "elicitation",
            /// The client can host MCP Apps views.
            mcp_apps: VersionOneCapability = "mcpApps",
        }
    }
}

/// Serializes a capability object into a JSON object.
fn to_object<T: Serialize>(value: &T) -> Map {
    match serde_json::to_value(value) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

/// Writes every key of `section` into `meta.<ns>` for each namespace in
/// `ns`, creating the section (even when `section` is empty) and keeping
/// the keys already there.
fn write_section(meta: &mut Map, section: &Map, ns: NamespaceSet) {
    for &n in ns.namespaces() {
        let entry = meta
            .entry(n.key())
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        for (k, v) in section {
            write_key(meta, n, k, v.clone());
        }
    }
}

macro_rules! advertising {
    ($ty:ident, $sdk:ident) => {
        impl $ty {
            /// A `_meta` object holding these capabilities under each
            /// namespace of `ns`: `{"lody": {…}}`, `{"ua": {…}}` or both.
            pub fn to_meta(&self, ns: NamespaceSet) -> Map {
                let mut meta = Map::new();
                self.write_meta(&mut meta, ns);
                meta
            }

            /// Merges these capabilities into an existing `_meta` object,
            /// keeping every key that is already there (other vendors, other
            /// `<ns>` keys) and replacing only the keys set here.
            pub fn write_meta(&self, meta: &mut Map, ns: NamespaceSet) {
                write_section(meta, &to_object(self), ns);
            }
        }

        impl AdvertiseExtensions for $sdk {
            type Extensions = $ty;
            fn extensions(mut self, extensions: &$ty, ns: NamespaceSet) -> Self {
                extensions.write_meta(self.meta.get_or_insert_with(Map::new), ns);
                self
            }
        }
    };
}

/// Advertises extension capabilities on the SDK's own capability builders
/// ([`AgentCapabilities`] takes [`AgentExtensionCapabilities`],
/// [`ClientCapabilities`] takes [`ClientExtensionCapabilities`]), merged
/// into their `_meta` so that other vendors' keys stay.
///
/// ```
/// use acp_extension_core::capabilities::{AdvertiseExtensions, AgentExtensionCapabilities, VersionOneCapability};
/// use acp_extension_core::namespace::NamespaceSet;
/// use agent_client_protocol::v1::schema::AgentCapabilities;
///
/// let caps = AgentCapabilities::new()
///     .load_session(true)
///     .extensions(&AgentExtensionCapabilities::new().usage(VersionOneCapability::new()), NamespaceSet::Lody);
/// assert_eq!(caps.meta.unwrap()["lody"]["usage"]["version"], 1);
/// ```
pub trait AdvertiseExtensions: Sized {
    /// The extension capabilities this SDK type carries.
    type Extensions;

    /// `self` with `extensions` advertised under each namespace of `ns`.
    #[must_use]
    fn extensions(self, extensions: &Self::Extensions, ns: NamespaceSet) -> Self;
}

advertising!(AgentExtensionCapabilities, AgentCapabilities);
advertising!(ClientExtensionCapabilities, ClientCapabilities);

/// Which peer is speaking: the one whose capabilities are being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Side {
    /// The agent (`agentCapabilities`).
    Agent,
    /// The client (`clientCapabilities`).
    Client,
}

impl Side {
    /// The `initialize` key holding this side's capabilities in ACP v1:
    /// `agentCapabilities` or `clientCapabilities`.
    pub fn capabilities_key(self) -> &'static str {
        match self {
            Side::Agent => "agentCapabilities",
            Side::Client => "clientCapabilities",
        }
    }
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Agent => "agent",
            Side::Client => "client",
        })
    }
}

/// Which peers advertise a feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FeatureSide {
    /// Only the agent advertises it; active as soon as the agent does.
    AgentOnly,
    /// Only the client advertises it.
    ClientOnly,
    /// Both peers advertise it; active only when both do.
    Both,
}

impl FeatureSide {
    /// Whether a peer on `side` may advertise the feature.
    pub fn allows(self, side: Side) -> bool {
        matches!(
            (self, side),
            (FeatureSide::Both, _)
                | (FeatureSide::AgentOnly, Side::Agent)
                | (FeatureSide::ClientOnly, Side::Client)
        )
    }
}

/// One feature key of the capability objects.
///
/// ```
/// use acp_extension_core::capabilities::{Feature, FeatureSide};
///
/// assert_eq!(Feature::from_key("rateLimits"), Some(Feature::RateLimits));
/// assert_eq!(Feature::SubagentEvents.side(), FeatureSide::Both);
/// assert_eq!(Feature::Elicitation.key(), "elicitation");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Feature {
    /// `subagentEvents` (both sides).
    SubagentEvents,
    /// `sessionTitle`.
    SessionTitle,
    /// `usage`.
    Usage,
    /// `rateLimits`.
    RateLimits,
    /// `forkAtTurn`.
    ForkAtTurn,
    /// `steering`.
    Steering,
    /// `tasks`.
    Tasks,
    /// `subagents`.
    Subagents,
    /// `goal`.
    Goal,
    /// `compaction`.
    Compaction,
    /// `sessionHistory`.
    SessionHistory,
    /// `sessionConfig` (informational).
    SessionConfig,
    /// `sessionActivity`.
    SessionActivity,
    /// `worktreeProject`.
    WorktreeProject,
    /// `mcpApps` (both sides).
    McpApps,
    /// `elicitation` (client only).
    Elicitation,
}

impl Feature {
    /// Every feature: the agent keys in declaration order, then the
    /// client-only `elicitation`.
    pub const ALL: [Feature; 16] = [
        Feature::SubagentEvents,
        Feature::SessionTitle,
        Feature::Usage,
        Feature::RateLimits,
        Feature::ForkAtTurn,
        Feature::Steering,
        Feature::Tasks,
        Feature::Subagents,
        Feature::Goal,
        Feature::Compaction,
        Feature::SessionHistory,
        Feature::SessionConfig,
        Feature::SessionActivity,
        Feature::WorktreeProject,
        Feature::McpApps,
        Feature::Elicitation,
    ];

    /// The wire key under `_meta.<ns>`, such as `"subagentEvents"`.
    pub fn key(self) -> &'static str {
        match self {
            Feature::SubagentEvents => "subagentEvents",
            Feature::SessionTitle => "sessionTitle",
            Feature::Usage => "usage",
            Feature::RateLimits => "rateLimits",
            Feature::ForkAtTurn => "forkAtTurn",
            Feature::Steering => "steering",
            Feature::Tasks => "tasks",
            Feature::Subagents => "subagents",
            Feature::Goal => "goal",
            Feature::Compaction => "compaction",
            Feature::SessionHistory => "sessionHistory",
            Feature::SessionConfig => "sessionConfig",
            Feature::SessionActivity => "sessionActivity",
            Feature::WorktreeProject => "worktreeProject",
            Feature::McpApps => "mcpApps",
            Feature::Elicitation => "elicitation",
        }
    }

    /// The feature for a wire key; `None` for keys the contract does not define.
    pub fn from_key(key: &str) -> Option<Feature> {
        Feature::ALL.into_iter().find(|f| f.key() == key)
    }

    /// Which peers advertise the feature.
    pub fn side(self) -> FeatureSide {
        match self {
            Feature::SubagentEvents | Feature::McpApps => FeatureSide::Both,
            Feature::Elicitation => FeatureSide::ClientOnly,
            _ => FeatureSide::AgentOnly,
        }
    }

    /// Validates an advertised value for this feature and parses its
    /// options. `at` is the value's JSON pointer, used in the violations.
    pub fn parse(self, value: &Value, at: &str) -> Result<FeatureOptions, Vec<Violation>> {
        fn typed<T: Check + for<'de> Deserialize<'de>>(
            value: &Value,
            at: &str,
            wrap: fn(T) -> FeatureOptions,
        ) -> Result<FeatureOptions, Vec<Violation>> {
            let mut out = Vec::new();
            T::check(value, at, &mut out);
            if !out.is_empty() {
                return Err(out);
            }
            T::deserialize(value).map(wrap).map_err(|e| {
                vec![Violation::new(
                    at,
                    Rule::Relation {
                        id: "capability-parse",
                        message: e.to_string(),
                    },
                )]
            })
        }
        match self {
            Feature::Steering => typed(value, at, FeatureOptions::Steering),
            Feature::Goal => typed(value, at, FeatureOptions::Goal),
            Feature::Subagents => typed(value, at, FeatureOptions::Subagents),
            Feature::Tasks => typed(value, at, FeatureOptions::Tasks),
            Feature::RateLimits => typed(value, at, FeatureOptions::RateLimits),
            Feature::Elicitation => typed(value, at, FeatureOptions::Elicitation),
            _ => typed(value, at, FeatureOptions::VersionOne),
        }
    }
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

impl Serialize for Feature {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.key())
    }
}

impl<'de> Deserialize<'de> for Feature {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let key = String::deserialize(d)?;
        Feature::from_key(&key).ok_or_else(|| {
            serde::de::Error::custom(format_args!("unknown capability feature {key:?}"))
        })
    }
}

/// The parsed options of one validly advertised feature.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum FeatureOptions {
    /// A feature without options (`{version: 1}`).
    VersionOne(VersionOneCapability),
    /// `steering`.
    Steering(SteeringCapability),
    /// `goal`.
    Goal(GoalCapability),
    /// `subagents`.
    Subagents(SubagentCapability),
    /// `tasks`.
    Tasks(TaskCapability),
    /// `rateLimits`.
    RateLimits(RateLimitsCapability),
    /// `elicitation`.
    Elicitation(ElicitationCapability),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_feature_key_round_trips() {
        for f in Feature::ALL {
            assert_eq!(Feature::from_key(f.key()), Some(f));
        }
        assert_eq!(Feature::from_key("mcp"), None);
    }

    #[test]
    fn sides_allow_the_right_peers() {
        assert!(FeatureSide::Both.allows(Side::Client));
        assert!(FeatureSide::AgentOnly.allows(Side::Agent));
        assert!(!FeatureSide::AgentOnly.allows(Side::Client));
        assert!(!FeatureSide::ClientOnly.allows(Side::Agent));
    }
}
