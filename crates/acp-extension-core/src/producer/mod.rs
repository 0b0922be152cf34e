//! The agent's side of one connection: every extension message written in
//! the negotiated namespace, and typed handling of the extension requests
//! an agent receives.
//!
//! An adapter built on the official SDK negotiates once, in its
//! `initialize` handler, and keeps an [`AgentExtensions`] for the
//! connection. The handle writes every contract notification and every
//! `_meta.<ns>` field in the one namespace [`Negotiated::agent_writes`]
//! gives (see [`crate::negotiation::write_namespace`]), so a connection
//! never mixes `lody` and `ua`. It withholds a notification or `_meta`
//! field whose feature is not active ([`Withheld::NotNegotiated`]) instead
//! of sending what the client did not ask for, sends no extension
//! notification to a client that advertised none
//! ([`Withheld::PlainClient`], unless
//! [`AgentExtensions::write_to_plain_clients`]), checks the `_meta` of the
//! standard updates it sends ([`SendError::WrongNamespace`],
//! [`SendError::UntaggedTitle`]), hands out a subagent
//! emitter only when both peers advertised `subagentEvents`, and builds
//! usage accumulators whose `usageScopeId` follows the namespace. The paths
//! that bypass these checks say so: [`AgentExtensions::unchecked_session_update`],
//! [`AgentExtensions::unchecked_set_meta`],
//! [`AgentExtensions::unchecked_connection`].
//!
//! ```no_run
//! use acp_extension_core::capabilities::{AdvertiseExtensions, AgentExtensionCapabilities, VersionOneCapability};
//! use acp_extension_core::namespace::NamespaceSet;
//! use acp_extension_core::negotiation::Negotiated;
//! use acp_extension_core::producer::AgentExtensions;
//! use acp_extension_core::session::TitleSource;
//! use agent_client_protocol::v1::schema::{AgentCapabilities, InitializeRequest, SessionId};
//! use agent_client_protocol::{Client, v1::ConnectionTo};
//!
//! fn on_initialize(cx: ConnectionTo<Client>, request: &InitializeRequest) -> AgentExtensions {
//!     let ours = AgentExtensionCapabilities::new().session_title(VersionOneCapability::new());
//!     let capabilities = AgentCapabilities::new().extensions(&ours, NamespaceSet::Both);
//!     // … answer `initialize` with `capabilities` …
//!     AgentExtensions::new(cx, Negotiated::from_sdk(&capabilities, &request.client_capabilities))
//! }
//!
//! fn after_the_first_prompt(ext: &AgentExtensions, session: &SessionId) -> agent_client_protocol::Result<()> {
//!     // Withheld from a client that did not negotiate `sessionTitle`: `?`
//!     // passes that on (the turn goes on); it fails on a closed connection.
//!     ext.title(session, "Fix the parser", TitleSource::Generated)?;
//!     Ok(())
//! }
//! ```
//!
//! # Withheld is not failed
//!
//! What the client did not ask for is [`Delivery::Withheld`], an `Ok`: a
//! handler's `?` turns only a [`SendError`] into an SDK error (a closed
//! connection, or a message the handle must not send as written), so one
//! adapter serves Core, standard and plain clients with the same code.
//! Look at the [`Delivery`] where it matters:
//!
//! ```no_run
//! # use acp_extension_core::producer::{AgentExtensions, Delivery};
//! # use acp_extension_core::session::TitleSource;
//! # use agent_client_protocol::v1::schema::SessionId;
//! # fn f(ext: &AgentExtensions, session: &SessionId) -> agent_client_protocol::Result<()> {
//! if let Delivery::Withheld(why) = ext.title(session, "Fix the parser", TitleSource::Generated)? {
//!     eprintln!("no title for this client: {why}");
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # Steering: run the turn off the dispatch loop
//!
//! The SDK runs handlers one at a time on its dispatch loop. A
//! `session/prompt` handler that awaits its whole turn there blocks every
//! later message of the connection: a `session/steer` sent mid-turn is
//! handled only after the turn ended, answered `failed`, and no
//! `steer_applied` follows (a linter reports
//! `steer-answered-after-turn`). Move the prompt's responder into a task
//! with `cx.spawn` and return at once, so that the steer's handler runs
//! while the turn does:
//!
//! ```no_run
//! # use agent_client_protocol::{Agent, Client, v1::{ConnectionTo, Responder}};
//! # use agent_client_protocol::v1::schema::{PromptRequest, PromptResponse, StopReason};
//! # async fn run_turn(_: PromptRequest) -> agent_client_protocol::Result<PromptResponse> { Ok(PromptResponse::new(StopReason::EndTurn)) }
//! # fn builder() {
//! let agent = Agent.v1().on_receive_request(
//!     async move |request: PromptRequest, responder: Responder<PromptResponse>, cx: ConnectionTo<Client>| {
//!         // Not `responder.respond(run_turn(request).await?)`: that blocks the loop.
//!         cx.spawn(async move { responder.respond_with_result(run_turn(request).await) })
//!     },
//!     agent_client_protocol::on_receive_request!(),
//! );
//! # let _ = agent;
//! # }
//! ```
//!
//! # Incoming extension requests
//!
//! Implement [`ExtensionRequestHandler`] for the methods the agent
//! advertises; every other method answers `-32601` (method not found), as
//! the contract expects of an agent that did not advertise it. Register
//! one SDK handler for [`AnyExtensionRequest`] and pass what arrives to
//! [`handle_request`] (spawned, when a method waits on the peer).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    InitializeRequest, InitializeResponse, SessionId, SessionInfoUpdate, SessionNotification,
    SessionUpdate,
};
use agent_client_protocol::{Client, Error};
use serde_json::{Value, json};

use crate::capabilities::Feature;
use crate::mcp_apps::{
    McpAppLoadRequest, McpAppLoadResponse, McpAppResourceReadRequest, McpAppResourceReadResponse,
    McpAppToolCallRequest, McpCallToolResult,
};
use crate::meta::{HasMeta, MetaExt, MetaField, fields};
use crate::methods::{
    AnyExtensionRequest, ExtensionNotificationMethod, ExtensionRequest, ExtensionResponse,
    NamespacedNotification,
};
use crate::namespace::{self, Namespace};
use crate::negotiation::Negotiated;
use crate::rate_limits::{RateLimitsGetRequest, RateLimitsSnapshot};
use crate::session::{
    EmptyResponse, GoalControlRequest, GoalControlResponse, GoalSnapshot, NoticeMeta,
    SessionActivityUpdate, SessionHistoryReadRequest, SteerApplied, SteerOutcome, SteerRequest,
    SteerResponse, SubagentCancelRequest, SubagentOutputRequest, SubagentOutputResponse,
    SubagentsListRequest, SubagentsListResponse, TitleSource,
};
use crate::standard::{StandardRequest, StandardResponse, SteeringResponse, SubagentDialect};
use crate::subagent_emitter::{EmittedEvent, EventSink, OutputIds, SnapshotPatch, SubagentEmitter};
use crate::subagent_events::{SubagentEvent, SubagentOutput, SubagentProgress, SubagentSnapshot};
use crate::usage::{ModelUsage, ScopeIdTooLong, SessionUsageAccumulator, SessionUsageUpdate};

mod handler;
mod session_runs;
pub use handler::{
    ExtensionRequestHandler, handle_any, handle_request, handle_standard, method_not_implemented,
};
use session_runs::HandleSink;
pub use session_runs::SessionRuns;

/// What became of a message [`AgentExtensions`] was asked to send, when
/// nothing went wrong (see [`SendError`] for what did).
///
/// # Example
///
/// ```
/// use acp_extension_core::capabilities::Feature;
/// use acp_extension_core::producer::{Delivery, Withheld};
///
/// let withheld = Delivery::Withheld(Withheld::NotNegotiated(Feature::Goal));
/// assert!(!withheld.is_sent());
/// assert_eq!(
///     Withheld::NotNegotiated(Feature::Goal).to_string(),
///     "`goal` is not active on this connection; it was not sent"
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Delivery {
    /// Written to the connection (for [`AgentExtensions::set_meta`]: the
    /// field is in the target).
    Sent,
    /// Not sent, by policy: the client did not ask for it.
    Withheld(Withheld),
    /// Nothing to send: a usage snapshot that added nothing to the ledger,
    /// a target without a `_meta` slot.
    Unchanged,
}

impl Delivery {
    /// Whether the message went out (the field was written).
    pub fn is_sent(self) -> bool {
        self == Self::Sent
    }
}

/// Why [`AgentExtensions`] withheld a message: the client did not ask for
/// it. Not an error ([`Delivery::Withheld`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Withheld {
    /// The message belongs to a feature that is not active on this
    /// connection (the agent did not advertise it, or it needs the client
    /// too and the client did not).
    #[error("`{0}` is not active on this connection; it was not sent")]
    NotNegotiated(Feature),
    /// The client advertised no extension at all: by default no extension
    /// notification is sent to it (see
    /// [`AgentExtensions::write_to_plain_clients`]).
    #[error("the client advertised no extension; extension notifications are not sent to it")]
    PlainClient,
}

/// Why [`AgentExtensions`] could not send a message: the connection is
/// closed, or the message is wrong as written. What the client merely did
/// not ask for is no error ([`Delivery::Withheld`]).
///
/// # Example
///
/// ```
/// use acp_extension_core::producer::SendError;
///
/// let wrong = SendError::UntaggedTitle;
/// // In an SDK handler `?` turns it into an internal error that names it.
/// let e: agent_client_protocol::Error = wrong.into();
/// assert_eq!(i32::from(e.code), -32603);
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// A `_meta` section of another namespace than the connection's: the
    /// client reads one namespace only.
    #[error("`_meta.{found}` on a connection that writes `_meta.{expected}`; it was not sent")]
    WrongNamespace {
        /// The namespace the message carried.
        found: Namespace,
        /// The connection's.
        expected: Namespace,
    },
    /// A `session_info_update` title without `_meta.<ns>.titleSource` to a
    /// client that negotiated `sessionTitle` (version 1 requires tagged
    /// titles; use [`AgentExtensions::title`]).
    #[error("an untagged title where `sessionTitle` is negotiated; it was not sent")]
    UntaggedTitle,
    /// A title tagged `unset` (which says the session has no title).
    #[error("a title tagged `unset`, which says there is no title; it was not sent")]
    UnsetTitle,
    /// A subagent event for a run the session's emitter did not start (or
    /// that already ended): there is nothing to send it for.
    #[error("no live subagent run for native id {0:?}; nothing was sent")]
    UnknownRun(String),
    /// An event that is not a valid [`SubagentEvent`] (from an emitter's
    /// unchecked paths) where the handle must read it to translate it.
    #[error("an invalid subagent event; it was not sent")]
    InvalidEvent(Vec<crate::violation::Violation>),
    /// A usage scope id over 256 characters.
    #[error(transparent)]
    ScopeId(#[from] ScopeIdTooLong),
    /// The SDK could not send it (the connection is closed).
    #[error(transparent)]
    Connection(#[from] Error),
}

/// In an SDK handler, `?` turns a message wrong as written into an
/// internal error naming it (the connection's own errors pass through).
impl From<SendError> for Error {
    fn from(e: SendError) -> Self {
        match e {
            SendError::Connection(e) => e,
            other => Error::internal_error().data(json!({"reason": other.to_string()})),
        }
    }
}

/// One connection's extension writer, for an agent on the official SDK.
///
/// Cheap to clone (the negotiation is shared); every clone writes the
/// same namespace. See the [module documentation](self).
#[derive(Clone)]
pub struct AgentExtensions {
    cx: ConnectionTo<Client>,
    negotiated: Arc<Negotiated>,
    /// Whether to write extensions to a client that advertised none.
    plain_clients: bool,
    /// Each session's subagent runs and usage ledger, shared by clones.
    sessions: Arc<Mutex<HashMap<String, SessionParts>>>,
}

/// What the handle keeps per session.
#[derive(Default)]
struct SessionParts {
    runs: Option<SessionRuns>,
    ledger: Option<SessionUsageAccumulator>,
    /// The runs as written in the standard dialect.
    #[cfg(feature = "unstable_subagents")]
    standard: Option<crate::standard::StandardSubagents>,
}

impl std::fmt::Debug for AgentExtensions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentExtensions")
            .field("namespace", &self.namespace())
            .field(
                "active",
                &self
                    .negotiated
                    .active
                    .iter()
                    .map(|a| a.feature)
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl AgentExtensions {
    /// The handle for connection `cx` with this negotiation.
    pub fn new(cx: ConnectionTo<Client>, negotiated: Negotiated) -> Self {
        Self {
            cx,
            negotiated: Arc::new(negotiated),
            plain_clients: false,
            sessions: Arc::default(),
        }
    }

    /// Whether to send the extension notifications an agent sends on its
    /// own (usage, activity, rate limits, steer applied) to a client that
    /// advertised no extension at all (no `_meta.ua` or `_meta.lody` in its
    /// capabilities: a plain ACP client).
    /// Off by default: such a client has no use
    /// for them, and some print a "Method not found" dump for each; they
    /// withheld ([`Withheld::PlainClient`]). `_meta` fields on
    /// standard messages are not affected.
    #[must_use]
    pub fn write_to_plain_clients(mut self, yes: bool) -> Self {
        self.plain_clients = yes;
        self
    }

    /// Whether the client advertised no extension at all (no `_meta.ua`
    /// or `_meta.lody` in its capabilities): a plain ACP client.
    fn client_is_plain(&self) -> bool {
        !self.negotiated.client_speaks_extensions
    }

    /// Negotiates from the initialize exchange (the client's request and
    /// the agent's own response) and binds the result to `cx`.
    pub fn from_initialize(
        cx: ConnectionTo<Client>,
        request: &InitializeRequest,
        response: &InitializeResponse,
    ) -> Self {
        let negotiated =
            Negotiated::from_sdk(&response.agent_capabilities, &request.client_capabilities);
        Self::new(cx, negotiated)
    }

    /// The namespace every message of this handle is written in.
    fn namespace(&self) -> Namespace {
        self.negotiated.agent_writes
    }

    /// The negotiation this handle writes by: which features are active
    /// ([`Negotiated::is_active`]), the namespace it writes
    /// ([`Negotiated::agent_writes`]).
    pub fn negotiated(&self) -> &Negotiated {
        &self.negotiated
    }

    /// Whether `feature` is active on this connection.
    fn is_active(&self, feature: Feature) -> bool {
        self.negotiated.is_active(feature)
    }

    /// The SDK connection itself. **Bypasses negotiation**: what goes out
    /// through it is not checked (namespace, features, tagged titles). For
    /// standard messages with contract `_meta`, use
    /// [`AgentExtensions::session_update`] and [`AgentExtensions::with_meta`].
    pub fn unchecked_connection(&self) -> &ConnectionTo<Client> {
        &self.cx
    }

    /// `None` when `feature` is active, else why a message of it is
    /// withheld.
    fn withheld(&self, feature: Feature) -> Option<Withheld> {
        (!self.is_active(feature)).then_some(Withheld::NotNegotiated(feature))
    }

    /// The checks of a standard message's contract `_meta`: every
    /// `_meta.<ns>` section in this connection's namespace, each key's
    /// feature active (else the message is withheld), and (for a
    /// `session_info_update`) a title tagged with `titleSource` when
    /// `sessionTitle` is negotiated.
    fn check_meta(&self, value: &Value) -> Result<Option<Withheld>, SendError> {
        fn walk(ext: &AgentExtensions, v: &Value) -> Result<Option<Withheld>, SendError> {
            match v {
                Value::Object(o) => {
                    if let Some(Value::Object(meta)) = o.get("_meta") {
                        for ns in Namespace::ALL {
                            let Some(Value::Object(section)) = meta.get(ns.key()) else {
                                continue;
                            };
                            if ns != ext.namespace() {
                                return Err(SendError::WrongNamespace {
                                    found: ns,
                                    expected: ext.namespace(),
                                });
                            }
                            let withheld = section
                                .keys()
                                .filter_map(|key| {
                                    crate::meta::meta_field_info(key).and_then(|f| f.feature)
                                })
                                .find_map(|f| ext.withheld(f));
                            if withheld.is_some() {
                                return Ok(withheld);
                            }
                        }
                    }
                    for (k, x) in o {
                        if k != "_meta"
                            && let Some(w) = walk(ext, x)?
                        {
                            return Ok(Some(w));
                        }
                    }
                    Ok(None)
                }
                Value::Array(a) => {
                    for x in a {
                        if let Some(w) = walk(ext, x)? {
                            return Ok(Some(w));
                        }
                    }
                    Ok(None)
                }
                _ => Ok(None),
            }
        }
        if let Some(w) = walk(self, value)? {
            return Ok(Some(w));
        }
        let untagged = value.get("sessionUpdate").and_then(Value::as_str)
            == Some("session_info_update")
            && value.get("title").is_some_and(Value::is_string)
            && value
                .get("_meta")
                .and_then(Value::as_object)
                .and_then(|m| namespace::read_key(m, "titleSource"))
                .is_none();
        if untagged && self.is_active(Feature::SessionTitle) {
            return Err(SendError::UntaggedTitle);
        }
        Ok(None)
    }

    fn notify<T: ExtensionNotificationMethod + Send + 'static>(
        &self,
        message: T,
    ) -> Result<Delivery, SendError> {
        if let Some(w) = self.withheld(T::FEATURE) {
            return Ok(Delivery::Withheld(w));
        }
        // Agent-only notifications stay off a plain client's wire (as
        // `acp-ext serve` does); `_meta` on standard traffic is not held back.
        if self.client_is_plain() && !self.plain_clients {
            return Ok(Delivery::Withheld(Withheld::PlainClient));
        }
        self.cx
            .send_notification(NamespacedNotification::new(self.namespace(), message))?;
        Ok(Delivery::Sent)
    }

    /// `session/usage_update` (feature `usage`). A `usageScopeId` the
    /// update carries is rewritten under this handle's namespace.
    pub fn usage_update(&self, mut update: SessionUsageUpdate) -> Result<Delivery, SendError> {
        if let Some(id) = update.usage_scope_id().map(str::to_owned) {
            if let Some(meta) = update.meta.as_mut() {
                namespace::remove_key(&mut meta.0, "usageScopeId");
                for ns in Namespace::ALL {
                    if meta
                        .0
                        .get(ns.key())
                        .and_then(Value::as_object)
                        .is_some_and(|m| m.is_empty())
                    {
                        meta.0.shift_remove(ns.key());
                    }
                }
            }
            update.set_usage_scope_id(self.namespace(), id);
        }
        self.notify(update)
    }

    /// `rate_limits/update` (feature `rateLimits`).
    pub fn rate_limits_update(&self, snapshot: RateLimitsSnapshot) -> Result<Delivery, SendError> {
        self.notify(snapshot)
    }

    /// `session/steer_applied` (feature `steering`): the steer with this id
    /// was applied to the running turn. Send it before the turn's prompt
    /// response.
    pub fn steer_applied(
        &self,
        session_id: &SessionId,
        steer_id: impl Into<String>,
    ) -> Result<Delivery, SendError> {
        self.notify(SteerApplied::new(&*session_id.0, steer_id.into()))
    }

    /// How this connection's client reads subagent runs
    /// ([`Negotiated::subagent_dialect`]): Core `subagents/event`, or (with
    /// the `unstable_subagents` feature) standard `subagent_update` and
    /// child sessions; `None` when it reads neither (or only the standard
    /// dialect, and the feature is off).
    pub fn subagent_dialect(&self) -> Option<SubagentDialect> {
        match self.negotiated.subagent_dialect() {
            Some(SubagentDialect::Standard) if !cfg!(feature = "unstable_subagents") => None,
            other => other,
        }
    }

    /// One subagent event, written as the client reads it
    /// ([`AgentExtensions::subagent_dialect`]): as `subagents/event` in this
    /// handle's namespace, or (standard clients) as the `subagent_update`s
    /// and child-session updates of `standard::StandardSubagents`,
    /// which keeps what it wrote of each root session's runs until
    /// [`AgentExtensions::forget_session`]. Withheld
    /// ([`Withheld::NotNegotiated`]) when the client reads neither.
    ///
    /// For events built elsewhere: by a [`SubagentEmitter`] of the agent's
    /// own that is not bound to this handle (one that keeps its runs
    /// beside other per-run state). The handle's
    /// own runs ([`AgentExtensions::subagent_emitter`]) come here too.
    pub fn subagent_event(&self, event: SubagentEvent) -> Result<Delivery, SendError> {
        match self.subagent_dialect() {
            Some(SubagentDialect::Core) => {
                self.cx
                    .send_notification(NamespacedNotification::new(self.namespace(), event))?;
                Ok(Delivery::Sent)
            }
            #[cfg(feature = "unstable_subagents")]
            Some(SubagentDialect::Standard) => {
                let root = SessionId::new(event.session_id.as_str());
                let notifications = self.parts(&root, |p| {
                    p.standard
                        .get_or_insert_with(|| {
                            crate::standard::StandardSubagents::new(root.clone())
                        })
                        .event(&event)
                });
                for n in notifications {
                    self.cx.send_notification(n)?;
                }
                Ok(Delivery::Sent)
            }
            _ => Ok(Delivery::Withheld(Withheld::NotNegotiated(
                Feature::SubagentEvents,
            ))),
        }
    }

    /// For a standard client: the run whose child session is `child`, in
    /// root session `session_id` (a `session/cancel` of a child session
    /// cancels that run). `None` without the `unstable_subagents` feature.
    pub fn standard_child_run(&self, session_id: &SessionId, child: &SessionId) -> Option<String> {
        #[cfg(feature = "unstable_subagents")]
        {
            // A lookup only: no parts are made for a session that has none.
            let sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
            let standard = sessions.get(&*session_id.0)?.standard.as_ref()?;
            standard.run_of(&child.0).map(str::to_owned)
        }
        #[cfg(not(feature = "unstable_subagents"))]
        {
            let _ = (session_id, child);
            None
        }
    }

    /// `session/activity_update` (feature `sessionActivity`).
    pub fn activity_update(&self, update: SessionActivityUpdate) -> Result<Delivery, SendError> {
        self.notify(update)
    }

    /// A standard `session/update` for `session_id`, checked: its contract
    /// `_meta` is in this connection's namespace with every field's
    /// feature active (else it is withheld), and a `session_info_update`
    /// title is tagged when `sessionTitle` is negotiated
    /// ([`SendError::WrongNamespace`], [`SendError::UntaggedTitle`]).
    pub fn session_update(
        &self,
        session_id: &SessionId,
        update: SessionUpdate,
    ) -> Result<Delivery, SendError> {
        let value = serde_json::to_value(&update).unwrap_or(Value::Null);
        if let Some(w) = self.check_meta(&value)? {
            return Ok(Delivery::Withheld(w));
        }
        self.unchecked_session_update(session_id, update)
    }

    /// A standard `session/update` sent as it is. **Bypasses negotiation**:
    /// nothing about its `_meta` is checked.
    pub fn unchecked_session_update(
        &self,
        session_id: &SessionId,
        update: SessionUpdate,
    ) -> Result<Delivery, SendError> {
        self.cx
            .send_notification(SessionNotification::new(session_id.clone(), update))?;
        Ok(Delivery::Sent)
    }

    /// A title on `session_info_update`, tagged with
    /// `_meta.<ns>.titleSource` (feature `sessionTitle`, which requires
    /// tagged titles). Without the feature the title is withheld: an
    /// untagged title would replace the client's own. A title tagged
    /// [`TitleSource::Unset`] (no title) is [`SendError::UnsetTitle`].
    pub fn title(
        &self,
        session_id: &SessionId,
        title: impl Into<String>,
        source: TitleSource,
    ) -> Result<Delivery, SendError> {
        if source == TitleSource::Unset {
            return Err(SendError::UnsetTitle);
        }
        let update = SessionInfoUpdate::new().title(title.into());
        let update = match self.with_meta::<fields::TitleSource, _>(update, source) {
            (update, Delivery::Sent) => update,
            (_, other) => return Ok(other),
        };
        self.session_update(session_id, SessionUpdate::SessionInfoUpdate(update))
    }

    /// The session's goal on `session_info_update` as `_meta.<ns>.goal`
    /// (feature `goal`); `None` says the session has no goal.
    pub fn goal(
        &self,
        session_id: &SessionId,
        goal: Option<GoalSnapshot>,
    ) -> Result<Delivery, SendError> {
        let update = match self.with_meta::<fields::Goal, _>(SessionInfoUpdate::new(), goal) {
            (update, Delivery::Sent) => update,
            (_, other) => return Ok(other),
        };
        self.session_update(session_id, SessionUpdate::SessionInfoUpdate(update))
    }

    /// The session's context occupancy as a standard `usage_update` (`used`
    /// of `size` tokens, and the session's cumulative cost when known): what
    /// every client reads, Core or standard, and what the contract's usage
    /// ledger ([`AgentExtensions::usage`]) cannot say. Not gated.
    ///
    /// ```no_run
    /// # use acp_extension_core::producer::{AgentExtensions, SendError};
    /// # use agent_client_protocol::v1::schema::{Cost, SessionId};
    /// # fn turn_ended(ext: &AgentExtensions, session: &SessionId) -> Result<(), SendError> {
    /// ext.context_usage(session, 53_755, 200_000, Some(Cost::new(0.42, "USD")))?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn context_usage(
        &self,
        session_id: &SessionId,
        used: u64,
        size: u64,
        cost: Option<agent_client_protocol::v1::schema::Cost>,
    ) -> Result<Delivery, SendError> {
        let update = agent_client_protocol::v1::schema::UsageUpdate::new(used, size).cost(cost);
        self.session_update(session_id, SessionUpdate::UsageUpdate(update))
    }

    /// A notice on `session_info_update` as `_meta.<ns>.notice` (where the
    /// Lody client reads it; no capability gates notices).
    pub fn notice(
        &self,
        session_id: &SessionId,
        notice: NoticeMeta,
    ) -> Result<Delivery, SendError> {
        let update = match self.with_meta::<fields::Notice, _>(SessionInfoUpdate::new(), notice) {
            (update, Delivery::Sent) => update,
            (_, other) => return Ok(other),
        };
        self.session_update(session_id, SessionUpdate::SessionInfoUpdate(update))
    }

    /// Writes contract field `F` (task, activity, turn id, message phase, …)
    /// into `target`'s `_meta` under this handle's namespace, when the
    /// field's feature ([`MetaField::FEATURE`]) is active: [`Delivery::Sent`]
    /// when written, [`Delivery::Withheld`] otherwise (`target` untouched),
    /// [`Delivery::Unchanged`] when `target` has no `_meta` slot this crate
    /// knows.
    pub fn set_meta<F: MetaField>(&self, target: &mut impl HasMeta, value: F::Value) -> Delivery {
        if let Some(w) = F::FEATURE.and_then(|f| self.withheld(f)) {
            return Delivery::Withheld(w);
        }
        if target.set_ext::<F>(self.namespace(), value) {
            Delivery::Sent
        } else {
            Delivery::Unchanged
        }
    }

    /// Builder form of [`AgentExtensions::set_meta`]: the target, and
    /// whether the field is in it.
    pub fn with_meta<F: MetaField, T: HasMeta>(
        &self,
        mut target: T,
        value: F::Value,
    ) -> (T, Delivery) {
        let delivery = self.set_meta::<F>(&mut target, value);
        (target, delivery)
    }

    /// [`AgentExtensions::set_meta`] without the feature check. **Bypasses
    /// negotiation**: the field goes out whether or not the client asked
    /// for it (the namespace is still this connection's).
    pub fn unchecked_set_meta<F: MetaField>(
        &self,
        target: &mut impl HasMeta,
        value: F::Value,
    ) -> bool {
        target.set_ext::<F>(self.namespace(), value)
    }

    fn parts<T>(&self, session_id: &SessionId, f: impl FnOnce(&mut SessionParts) -> T) -> T {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        f(sessions.entry(session_id.0.to_string()).or_default())
    }

    /// The subagent runs of root session `session_id`, written as the
    /// client reads them ([`AgentExtensions::subagent_event`]): the same
    /// runs on every call and every clone of the handle (one emitter per
    /// session); `None` when the client reads no subagent dialect
    /// ([`AgentExtensions::subagent_dialect`]).
    pub fn subagent_emitter(&self, session_id: &SessionId) -> Option<SessionRuns> {
        self.subagent_dialect()?;
        Some(self.parts(session_id, |p| {
            p.runs
                .get_or_insert_with(|| SessionRuns {
                    emitter: Arc::new(futures::lock::Mutex::new(SubagentEmitter::new(
                        &*session_id.0,
                        HandleSink(self.clone()),
                    ))),
                })
                .clone()
        }))
    }

    /// Accounts a native usage snapshot of operation `operation_id` (a
    /// turn id, an SDK result id) in session `session_id`'s own ledger (one
    /// per session, a fresh scope each, never shared) and sends the
    /// resulting `session/usage_update` (feature `usage`). [`Delivery::Unchanged`]
    /// when the snapshot added nothing, so nothing was sent.
    pub fn usage(
        &self,
        session_id: &SessionId,
        operation_id: &str,
        rows: &indexmap::IndexMap<String, ModelUsage>,
    ) -> Result<Delivery, SendError> {
        if let Some(w) = self.withheld(Feature::Usage) {
            return Ok(Delivery::Withheld(w));
        }
        let ns = self.namespace();
        let update = self.parts(session_id, |p| {
            p.ledger
                .get_or_insert_with(|| SessionUsageAccumulator::new().with_namespace(ns))
                .update(&session_id.0, operation_id, rows)
        });
        match update {
            Some(u) => self.usage_update(u),
            None => Ok(Delivery::Unchanged),
        }
    }

    /// Lets session `session_id`'s runs and ledger go (after
    /// `session/close`, or when the session is otherwise over), so that a
    /// long-lived connection keeps nothing of ended sessions. A later call
    /// for the same id starts afresh (a new accounting lifetime).
    pub fn forget_session(&self, session_id: &SessionId) {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&*session_id.0);
    }

    /// Starts session `session_id`'s ledger with scope id `scope_id`
    /// (instead of a random one), replacing any earlier ledger of the
    /// session (a new accounting lifetime). Without `usage` nothing is
    /// kept ([`Delivery::Withheld`]): no update will be sent.
    pub fn start_usage_scope(
        &self,
        session_id: &SessionId,
        scope_id: impl Into<String>,
    ) -> Result<Delivery, SendError> {
        let ledger =
            SessionUsageAccumulator::with_scope_id(scope_id)?.with_namespace(self.namespace());
        if let Some(w) = self.withheld(Feature::Usage) {
            return Ok(Delivery::Withheld(w));
        }
        self.parts(session_id, |p| p.ledger = Some(ledger));
        Ok(Delivery::Sent)
    }

    /// A usage accumulator (a fresh random scope) whose `usageScopeId`
    /// is written in this handle's namespace, for an agent that keeps its
    /// own; `None` without `usage`. [`AgentExtensions::usage`] keeps one per
    /// session for you.
    pub fn usage_accumulator(&self) -> Option<SessionUsageAccumulator> {
        self.is_active(Feature::Usage)
            .then(|| SessionUsageAccumulator::new().with_namespace(self.namespace()))
    }
}
