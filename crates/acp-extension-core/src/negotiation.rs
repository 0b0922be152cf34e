//! Reading what each peer advertised in `initialize`, and which features
//! are therefore active.
//!
//! Pass the capabilities object itself (`agentCapabilities` or
//! `clientCapabilities`; in the ACP v2 shape, `capabilities`), not the
//! whole initialize message; [`initialize_capabilities`] picks it out.
//! Features are read from `_meta.ua` and `_meta.lody`, `ua` winning per
//! key. Reading never fails as a whole: each feature is either parsed or
//! carries its violations (an unsupported version or a bad option value
//! means "not supported"), and contract drift is listed as
//! [`AdvertisementProblem`]s.
//!
//! Agent-only features are active as soon as the agent advertises them
//! validly; `subagentEvents` and `mcpApps` need both peers; `elicitation`
//! is the client's.
//!
//! ```
//! use acp_extension_core::capabilities::{Feature, SteeringTransport};
//! use acp_extension_core::negotiation::{negotiate, supports_subagent_events};
//! use serde_json::json;
//!
//! let agent = json!({"_meta": {"lody": {
//!     "subagentEvents": {"version": 1},
//!     "steering": {"version": 1, "transport": "request", "upstreamTurn": "same", "configPolicy": "active"},
//!     "usage": {"version": 2},
//! }}});
//! let client = json!({"_meta": {"ua": {"elicitation": {"version": 1, "answerNotes": true}}}});
//!
//! assert!(supports_subagent_events(&agent));
//! let n = negotiate(&agent, &client);
//! assert!(!n.is_active(Feature::SubagentEvents)); // the client did not advertise it
//! assert!(!n.is_active(Feature::Usage)); // version 2 is not supported
//! assert_eq!(n.steering().unwrap().transport, SteeringTransport::Request);
//! assert!(n.answer_notes());
//! ```

use serde_json::Value;

pub use crate::capabilities::Side;
use crate::capabilities::{
    ElicitationCapability, Feature, FeatureOptions, FeatureSide, GoalCapability,
    RateLimitsCapability, SteeringCapability, SubagentCapability, TaskCapability,
};
use crate::namespace::{self, Namespace, NamespaceSet};
use crate::violation::{Violation, child};
use crate::wire::{Map, json_type};

/// Whether `capabilities` advertises subagent events (`subagentEvents`
/// with `version: 1`, extra keys allowed) under `_meta.ua` or
/// `_meta.lody`; `ua` wins when both carry the key.
///
/// Negotiation needs this to hold for **both** peers. Anything that is not
/// an object at each step, and any other version (`2`, `"1"`, missing),
/// gives `false`.
///
/// ```
/// use acp_extension_core::negotiation::supports_subagent_events;
/// use serde_json::json;
///
/// assert!(supports_subagent_events(&json!({"_meta": {"lody": {"subagentEvents": {"version": 1}}}})));
/// assert!(!supports_subagent_events(&json!({"_meta": {"lody": {"subagentEvents": {"version": "1"}}}})));
/// assert!(!supports_subagent_events(&json!({"agentCapabilities": {"_meta": {"lody": {"subagentEvents": {"version": 1}}}}})));
/// ```
pub fn supports_subagent_events(capabilities: &Value) -> bool {
    let Some(meta) = meta_of(capabilities) else {
        return false;
    };
    match namespace::read_key(meta, Feature::SubagentEvents.key()) {
        Some((_, flag)) => {
            flag.as_object()
                .and_then(|o| o.get("version"))
                .and_then(Value::as_f64)
                == Some(1.0)
        }
        None => false,
    }
}

/// The `_meta` object of a capabilities object, if both are objects.
fn meta_of(capabilities: &Value) -> Option<&Map> {
    capabilities
        .as_object()
        .and_then(|c| c.get("_meta"))
        .and_then(Value::as_object)
}

/// The capabilities object of one side inside an initialize message
/// (`InitializeRequest` params or `InitializeResponse` result).
///
/// Looks for `agentCapabilities` / `clientCapabilities` (ACP v1), then for
/// `capabilities` (the ACP v2 shape some agents already send).
///
/// ```
/// use acp_extension_core::negotiation::{initialize_capabilities, Side};
/// use serde_json::json;
///
/// let v2 = json!({"protocolVersion": 2, "capabilities": {"_meta": {"lody": {}}}});
/// assert_eq!(initialize_capabilities(&v2, Side::Agent), Some(&json!({"_meta": {"lody": {}}})));
/// ```
pub fn initialize_capabilities(message: &Value, side: Side) -> Option<&Value> {
    let obj = message.as_object()?;
    obj.get(side.capabilities_key())
        .or_else(|| obj.get("capabilities"))
}

/// What kind of contract drift an [`AdvertisementProblem`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProblemKind {
    /// A key under `_meta.<ns>` that the contract does not define.
    UnknownKey,
    /// A feature advertised by a peer that never advertises it (for
    /// example `elicitation` in agent capabilities); it is ignored.
    WrongSide,
    /// The capabilities object, its `_meta` or `_meta.<ns>` is present but
    /// not a JSON object; nothing below it is read.
    NotAnObject,
}

/// One finding about an advertisement that is not a feature's own
/// violation: unknown keys, features on the wrong side, odd shapes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AdvertisementProblem {
    /// JSON pointer relative to the capabilities object, such as `/_meta/lody/mcp`.
    pub pointer: String,
    /// What kind of problem it is.
    pub kind: ProblemKind,
    /// The sentence for people.
    pub message: String,
}

impl AdvertisementProblem {
    fn new(pointer: String, kind: ProblemKind, message: String) -> Self {
        Self {
            pointer,
            kind,
            message,
        }
    }
}

/// One known feature key found in an advertisement.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct FeatureAdvertisement {
    /// The feature.
    pub feature: Feature,
    /// The namespace the value was read from (`ua` wins when both carry it).
    pub namespace: Namespace,
    /// The advertised value as sent.
    pub raw: Value,
    /// The parsed options, or every violation (then the feature is not supported).
    pub parsed: Result<FeatureOptions, Vec<Violation>>,
}

impl FeatureAdvertisement {
    /// The parsed options when the value is valid.
    pub fn options(&self) -> Option<&FeatureOptions> {
        self.parsed.as_ref().ok()
    }

    /// The violations of an invalid value (empty when valid).
    pub fn violations(&self) -> &[Violation] {
        match &self.parsed {
            Ok(_) => &[],
            Err(v) => v,
        }
    }
}

/// Everything one peer advertised under `_meta.ua` / `_meta.lody`.
///
/// # Example
///
/// ```
/// use acp_extension_core::capabilities::{Feature, Side};
/// use acp_extension_core::negotiation::Advertisement;
/// use serde_json::json;
///
/// let caps = json!({"_meta": {"ua": {"usage": {"version": 1}, "steering": {"version": 2}}}});
/// let adv = Advertisement::read(&caps, Side::Agent);
/// assert!(adv.supports(Feature::Usage));
/// // A version the contract does not define is read, and not supported.
/// assert!(!adv.supports(Feature::Steering));
/// assert!(adv.get(Feature::Steering).unwrap().parsed.is_err());
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Advertisement {
    /// The peer that advertised.
    pub side: Side,
    /// Each known feature this side may advertise and did, in [`Feature::ALL`] order.
    pub features: Vec<FeatureAdvertisement>,
    /// Contract drift found while reading.
    pub problems: Vec<AdvertisementProblem>,
}

impl Advertisement {
    /// Reads the advertisement of `side` from its capabilities object
    /// (`agentCapabilities` or `clientCapabilities`). Never fails and never
    /// panics: any shape gives some (possibly empty) result.
    pub fn read(capabilities: &Value, side: Side) -> Advertisement {
        let mut adv = Advertisement {
            side,
            features: Vec::new(),
            problems: Vec::new(),
        };
        let caps = match capabilities {
            Value::Null => return adv,
            Value::Object(c) => c,
            other => {
                adv.problems.push(AdvertisementProblem::new(
                    String::new(),
                    ProblemKind::NotAnObject,
                    format!(
                        "{side} capabilities must be an object, found {}",
                        json_type(other)
                    ),
                ));
                return adv;
            }
        };
        let meta = match caps.get("_meta") {
            None | Some(Value::Null) => return adv,
            Some(Value::Object(m)) => m,
            Some(other) => {
                adv.problems.push(AdvertisementProblem::new(
                    "/_meta".into(),
                    ProblemKind::NotAnObject,
                    format!("`_meta` must be an object, found {}", json_type(other)),
                ));
                return adv;
            }
        };
        for ns in Namespace::ALL {
            let at = child("/_meta", ns.key());
            match meta.get(ns.key()) {
                None | Some(Value::Null) => {}
                Some(Value::Object(section)) => {
                    for key in section.keys() {
                        let pointer = child(&at, key);
                        match Feature::from_key(key) {
                            None => adv.problems.push(AdvertisementProblem::new(
                                pointer,
                                ProblemKind::UnknownKey,
                                format!("`{key}` is not a capability of the contract"),
                            )),
                            Some(f) if !f.side().allows(side) => {
                                let owner = match f.side() {
                                    FeatureSide::ClientOnly => "client-only",
                                    _ => "agent-only",
                                };
                                adv.problems.push(AdvertisementProblem::new(
                                    pointer,
                                    ProblemKind::WrongSide,
                                    format!(
                                        "`{key}` is a {owner} capability advertised by the {side}; ignored"
                                    ),
                                ));
                            }
                            Some(_) => {}
                        }
                    }
                }
                Some(other) => adv.problems.push(AdvertisementProblem::new(
                    at,
                    ProblemKind::NotAnObject,
                    format!("`_meta.{ns}` must be an object, found {}", json_type(other)),
                )),
            }
        }
        for feature in Feature::ALL {
            if !feature.side().allows(side) {
                continue;
            }
            if let Some((ns, raw)) = namespace::read_key(meta, feature.key()) {
                let at = child(&child("/_meta", ns.key()), feature.key());
                adv.features.push(FeatureAdvertisement {
                    feature,
                    namespace: ns,
                    raw: raw.clone(),
                    parsed: feature.parse(raw, &at),
                });
            }
        }
        adv
    }

    /// The advertisement of `feature`, valid or not.
    pub fn get(&self, feature: Feature) -> Option<&FeatureAdvertisement> {
        self.features.iter().find(|f| f.feature == feature)
    }

    /// Whether `feature` is advertised with a valid value.
    pub fn supports(&self, feature: Feature) -> bool {
        self.get(feature).is_some_and(|f| f.parsed.is_ok())
    }

    /// Every violation of every advertised feature.
    pub fn violations(&self) -> impl Iterator<Item = &Violation> {
        self.features.iter().flat_map(|f| f.violations())
    }

    /// Whether nothing is wrong: no feature violations and no problems.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty() && self.violations().next().is_none()
    }
}

/// One active feature and its options.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ActiveFeature {
    /// The feature.
    pub feature: Feature,
    /// The advertised options (the agent's for features both peers advertise).
    pub options: FeatureOptions,
}

/// The namespace a peer writes in when `reader` is the peer that reads:
/// `ua` when the reader's capabilities carry a `_meta.ua` object and no
/// `_meta.lody` object, `lody` otherwise.
///
/// This is the one write-namespace rule of the crate: every extension
/// method, every `_meta.<ns>.<field>` and the usage accumulator's
/// `usageScopeId` on one connection use the namespace it gives, whatever
/// the feature. A reader that advertised only `ua` is known to read `ua`; a
/// reader that advertised both, or neither (a client that reads no
/// extension advertises nothing), gets `lody`, which every deployed reader
/// understands. Readers accept both spellings whatever this says.
///
/// ```
/// use acp_extension_core::negotiation::write_namespace;
/// use acp_extension_core::Namespace;
/// use serde_json::json;
///
/// assert_eq!(write_namespace(&json!({"_meta": {"ua": {}}})), Namespace::Ua);
/// assert_eq!(write_namespace(&json!({"_meta": {"ua": {}, "lody": {}}})), Namespace::Lody);
/// assert_eq!(write_namespace(&json!({"fs": {"readTextFile": true}})), Namespace::Lody);
/// ```
pub fn write_namespace(reader_capabilities: &Value) -> Namespace {
    match advertised_namespaces(reader_capabilities) {
        Some(NamespaceSet::Ua) => Namespace::Ua,
        _ => Namespace::Lody,
    }
}

/// Which namespaces a peer reads, from its capabilities: the one the other
/// side must write to it ([`write_namespace`]), and any it advertised a
/// section in. A linter (`namespace-mismatch`) and the consumer
/// state judge a contract method or `_meta` section by this one rule.
///
/// ```
/// use acp_extension_core::namespace::Namespace;
/// use acp_extension_core::negotiation::NamespaceReader;
/// use serde_json::json;
///
/// let lody_only = NamespaceReader::of(&json!({"_meta": {"lody": {}}}));
/// assert!(lody_only.reads(Namespace::Lody));
/// assert!(!lody_only.reads(Namespace::Ua));
/// assert_eq!(
///     lody_only.mismatch(Namespace::Ua, "`_ua/session/activity_update`", "client").as_deref(),
///     Some("`_ua/session/activity_update` is in `ua`, but the client advertised only `_meta.lody`; write `lody`")
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[doc(hidden)]
pub struct NamespaceReader {
    advertised: Option<NamespaceSet>,
    expected: Namespace,
}

impl NamespaceReader {
    /// The reader whose capabilities are `capabilities` (`null` when it
    /// sent none).
    pub fn of(capabilities: &Value) -> Self {
        Self {
            advertised: advertised_namespaces(capabilities),
            expected: write_namespace(capabilities),
        }
    }

    /// Whether it reads `ns`.
    pub fn reads(self, ns: Namespace) -> bool {
        ns == self.expected || self.advertised.is_some_and(|set| set.contains(ns))
    }

    /// The namespace to write to it.
    pub fn expected(self) -> Namespace {
        self.expected
    }

    /// What it advertised, in words.
    pub fn describe(self) -> &'static str {
        match self.advertised {
            Some(NamespaceSet::Ua) => "only `_meta.ua`",
            Some(NamespaceSet::Lody) => "only `_meta.lody`",
            Some(_) => "both namespaces",
            None => "no extension namespace",
        }
    }

    /// The words for `what`, written in `ns` to this reader (`receiver`:
    /// "client" or "agent"), when it does not read `ns`.
    pub fn mismatch(self, ns: Namespace, what: &str, receiver: &str) -> Option<String> {
        (!self.reads(ns)).then(|| {
            format!(
                "{what} is in `{ns}`, but the {receiver} advertised {}; write `{}`",
                self.describe(),
                self.expected
            )
        })
    }
}

/// Which namespace sections a capabilities object carries: `_meta.ua`,
/// `_meta.lody` or both as objects; `None` when it carries neither.
///
/// ```
/// use acp_extension_core::namespace::NamespaceSet;
/// use acp_extension_core::negotiation::advertised_namespaces;
/// use serde_json::json;
///
/// assert_eq!(advertised_namespaces(&json!({"_meta": {"lody": {}}})), Some(NamespaceSet::Lody));
/// assert_eq!(advertised_namespaces(&json!({"_meta": {"ua": {}, "lody": {}}})), Some(NamespaceSet::Both));
/// assert_eq!(advertised_namespaces(&json!({"_meta": {"lody": true}})), None);
/// ```
pub fn advertised_namespaces(capabilities: &Value) -> Option<NamespaceSet> {
    let section = |ns: Namespace| {
        meta_of(capabilities)
            .and_then(|m| m.get(ns.key()))
            .is_some_and(Value::is_object)
    };
    match (section(Namespace::Ua), section(Namespace::Lody)) {
        (true, true) => Some(NamespaceSet::Both),
        (true, false) => Some(NamespaceSet::Ua),
        (false, true) => Some(NamespaceSet::Lody),
        (false, false) => None,
    }
}

/// The outcome of negotiation: what each peer advertised and what is active.
///
/// # Example
///
/// ```
/// use acp_extension_core::capabilities::Feature;
/// use acp_extension_core::negotiation::negotiate;
/// use acp_extension_core::standard::SubagentDialect;
/// use acp_extension_core::Namespace;
/// use serde_json::json;
///
/// let agent = json!({"_meta": {"ua": {"subagentEvents": {"version": 1}, "usage": {"version": 1}}}});
/// let client = json!({"_meta": {"ua": {"subagentEvents": {"version": 1}}}});
/// let n = negotiate(&agent, &client);
/// assert!(n.is_active(Feature::Usage)); // the agent's alone
/// assert!(n.is_active(Feature::SubagentEvents)); // both advertised it
/// assert_eq!(n.agent_writes, Namespace::Ua);
/// assert_eq!(n.subagent_dialect(), Some(SubagentDialect::Core));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Negotiated {
    /// What the agent advertised.
    pub agent: Advertisement,
    /// What the client advertised.
    pub client: Advertisement,
    /// Whether the client advertised standard ACP form elicitation
    /// (`clientCapabilities.elicitation.form` is an object).
    pub form_elicitation: bool,
    /// The active features, in [`Feature::ALL`] order.
    pub active: Vec<ActiveFeature>,
    /// The namespace the agent writes in ([`write_namespace`] of the
    /// client's capabilities): notifications, `_meta` on updates and
    /// responses, usage scope metadata.
    pub agent_writes: Namespace,
    /// The namespace the client writes in ([`write_namespace`] of the
    /// agent's capabilities): extension requests and prompt `_meta`.
    pub client_writes: Namespace,
    /// Whether the client advertised the extensions at all (a `_meta.ua`
    /// or `_meta.lody` in its capabilities, even an empty one). A client
    /// that did not is a plain ACP client.
    pub client_speaks_extensions: bool,
    /// Whether the client advertised standard ACP subagents
    /// (`clientCapabilities.subagents` is an object): it reads
    /// `subagent_update` and child sessions (see
    /// [`crate::standard::SubagentDialect`]).
    pub client_subagents: bool,
}

/// Negotiates from both capabilities objects (`agentCapabilities` of the
/// initialize response and `clientCapabilities` of the request), as JSON.
///
/// Each side writes in one namespace for the whole connection, whatever the
/// feature: [`Negotiated::agent_writes`] and [`Negotiated::client_writes`],
/// both from [`write_namespace`]. With the SDK's typed capabilities, use
/// [`Negotiated::from_sdk`].
pub fn negotiate(agent_capabilities: &Value, client_capabilities: &Value) -> Negotiated {
    let agent = Advertisement::read(agent_capabilities, Side::Agent);
    let client = Advertisement::read(client_capabilities, Side::Client);
    let valid = |adv: &Advertisement, f: Feature| adv.get(f).and_then(|a| a.options().cloned());
    let mut active = Vec::new();
    for feature in Feature::ALL {
        let found = match feature.side() {
            FeatureSide::AgentOnly => valid(&agent, feature),
            FeatureSide::ClientOnly => valid(&client, feature),
            FeatureSide::Both => valid(&client, feature).and(valid(&agent, feature)),
        };
        if let Some(options) = found {
            active.push(ActiveFeature { feature, options });
        }
    }
    let form_elicitation = client_capabilities
        .get("elicitation")
        .and_then(|e| e.get("form"))
        .is_some_and(Value::is_object);
    Negotiated {
        agent,
        client,
        form_elicitation,
        active,
        agent_writes: write_namespace(client_capabilities),
        client_writes: write_namespace(agent_capabilities),
        client_speaks_extensions: client_capabilities
            .get("_meta")
            .and_then(Value::as_object)
            .is_some_and(|m| Namespace::ALL.iter().any(|ns| m.contains_key(ns.key()))),
        client_subagents: crate::standard::client_reads_subagent_updates(client_capabilities),
    }
}

macro_rules! typed_accessor {
    ($(#[$doc:meta])* $name:ident, $feature:ident, $variant:ident, $ty:ty) => {
        $(#[$doc])*
        pub fn $name(&self) -> Option<&$ty> {
            match self.get(Feature::$feature).map(|a| &a.options) {
                Some(FeatureOptions::$variant(c)) => Some(c),
                _ => None,
            }
        }
    };
}

impl Negotiated {
    /// The active feature, if it is active.
    pub fn get(&self, feature: Feature) -> Option<&ActiveFeature> {
        self.active.iter().find(|a| a.feature == feature)
    }

    /// Whether `feature` may be used on this connection.
    pub fn is_active(&self, feature: Feature) -> bool {
        self.get(feature).is_some()
    }

    /// Negotiates from the SDK's typed capabilities: the agent's from its
    /// `InitializeResponse`, the client's from its `InitializeRequest`.
    ///
    /// The SDK parses a malformed `_meta` into `None`, so a client that
    /// wants to report a peer's malformed advertisement negotiates from the
    /// raw JSON with [`negotiate`] instead.
    ///
    /// ```
    /// use acp_extension_core::capabilities::{
    ///     AdvertiseExtensions, AgentExtensionCapabilities, ClientExtensionCapabilities, Feature,
    ///     VersionOneCapability,
    /// };
    /// use acp_extension_core::namespace::NamespaceSet;
    /// use acp_extension_core::negotiation::Negotiated;
    /// use acp_extension_core::Namespace;
    /// use agent_client_protocol::v1::schema::{AgentCapabilities, ClientCapabilities};
    ///
    /// let ext = AgentExtensionCapabilities::new().session_title(VersionOneCapability::new());
    /// let agent = AgentCapabilities::new().extensions(&ext, NamespaceSet::Both);
    /// let client = ClientCapabilities::new()
    ///     .extensions(&ClientExtensionCapabilities::new(), NamespaceSet::Ua);
    /// let n = Negotiated::from_sdk(&agent, &client);
    /// assert!(n.is_active(Feature::SessionTitle));
    /// assert_eq!(n.agent_writes, Namespace::Ua);
    /// ```
    pub fn from_sdk(
        agent: &agent_client_protocol::v1::schema::AgentCapabilities,
        client: &agent_client_protocol::v1::schema::ClientCapabilities,
    ) -> Negotiated {
        let to_json = |v: Result<Value, serde_json::Error>| v.unwrap_or(Value::Null);
        negotiate(
            &to_json(serde_json::to_value(agent)),
            &to_json(serde_json::to_value(client)),
        )
    }

    /// The namespace `side` writes in on this connection: the same for
    /// every feature ([`write_namespace`] of the other side's capabilities).
    pub fn namespace(&self, side: Side) -> Namespace {
        match side {
            Side::Agent => self.agent_writes,
            Side::Client => self.client_writes,
        }
    }

    typed_accessor!(
        /// The agent's steering options, when active.
        steering, Steering, Steering, SteeringCapability
    );
    typed_accessor!(
        /// The agent's goal options, when active.
        goal, Goal, Goal, GoalCapability
    );
    typed_accessor!(
        /// The agent's subagent request options, when active.
        subagents, Subagents, Subagents, SubagentCapability
    );
    typed_accessor!(
        /// The agent's task options, when active.
        tasks, Tasks, Tasks, TaskCapability
    );
    typed_accessor!(
        /// The agent's rate-limit options, when active.
        rate_limits, RateLimits, RateLimits, RateLimitsCapability
    );
    typed_accessor!(
        /// The client's elicitation options, when active.
        elicitation, Elicitation, Elicitation, ElicitationCapability
    );

    /// How the client reads subagent runs: Core when `subagentEvents` is
    /// active, else standard when the client advertised standard
    /// `subagents`; `None` when it reads neither.
    pub fn subagent_dialect(&self) -> Option<crate::standard::SubagentDialect> {
        use crate::standard::SubagentDialect;
        if self.is_active(Feature::SubagentEvents) {
            Some(SubagentDialect::Core)
        } else if self.client_subagents {
            Some(SubagentDialect::Standard)
        } else {
            None
        }
    }

    /// Whether the client advertised `elicitation: {version: 1, answerNotes: true}`.
    pub fn answer_notes(&self) -> bool {
        self.elicitation().is_some_and(|e| e.answer_notes.is_some())
    }
}
