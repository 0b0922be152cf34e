//! Extension methods: names in both namespaces, normalization, typed
//! dispatch, and integration with the `agent-client-protocol` SDK.
//!
//! The contract defines custom JSON-RPC methods only where ACP has no
//! equivalent. Each has a namespace-relative path (`session/steer`) and two
//! wire spellings (`_lody/session/steer`, `_ua/session/steer`).
//!
//! - [`ExtensionRequest`] and [`ExtensionNotification`] parse any
//!   `(method, params)` pair into typed params, in either namespace, and
//!   serialize back in a chosen one. They implement the SDK's
//!   [`JsonRpcRequest`] / [`JsonRpcNotification`], so an agent or client
//!   built with the SDK can register one handler for every extension method.
//! - [`Namespaced<T>`] wraps one typed request or notification with the
//!   namespace to send it in, and is itself an SDK message whose response is
//!   typed.
//!
//! ```
//! use acp_extension_core::methods::{ExtensionRequest, normalize_method};
//! use serde_json::json;
//!
//! assert_eq!(normalize_method("lody/subagents/event"), "_lody/subagents/event");
//! let parsed = ExtensionRequest::parse("_ua/rate_limits/get", &json!({"modelId": "m"}))?;
//! let (ns, request) = parsed.expect("an extension method");
//! assert_eq!(ns, acp_extension_core::Namespace::Ua);
//! assert!(matches!(request, ExtensionRequest::RateLimitsGet(_)));
//! # Ok::<_, acp_extension_core::methods::ParamsError>(())
//! ```

use std::borrow::Cow;

use agent_client_protocol::{
    JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, JsonRpcResponse, UntypedMessage,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::capabilities::{Feature, Side};
use crate::mcp_apps::{
    McpAppLoadRequest, McpAppLoadResponse, McpAppResourceReadRequest, McpAppResourceReadResponse,
    McpAppToolCallRequest, McpCallToolResult,
};
use crate::namespace::{Namespace, split_method};
use crate::rate_limits::{RateLimitsGetRequest, RateLimitsSnapshot};
use crate::session::{
    EmptyResponse, GoalControlRequest, GoalControlResponse, SessionActivityUpdate,
    SessionHistoryReadRequest, SteerApplied, SteerRequest, SteerResponse, SubagentCancelRequest,
    SubagentOutputRequest, SubagentOutputResponse, SubagentsListRequest, SubagentsListResponse,
};
use crate::subagent_events::SubagentEvent;
use crate::usage::SessionUsageUpdate;
use crate::violation::{Check, Violation, check};

/// Adds the leading `_` that some SDK dispatch paths strip from extension
/// methods; a method that already starts with `_` is returned unchanged.
///
/// Like the reference, it does not check the namespace: `session/prompt`
/// becomes `_session/prompt`.
///
/// ```
/// use acp_extension_core::methods::normalize_method;
/// assert_eq!(normalize_method("ua/session/steer"), "_ua/session/steer");
/// assert_eq!(normalize_method("_lody/x"), "_lody/x");
/// assert_eq!(normalize_method(""), "_");
/// ```
pub fn normalize_method(method: &str) -> Cow<'_, str> {
    if method.starts_with('_') {
        Cow::Borrowed(method)
    } else {
        Cow::Owned(format!("_{method}"))
    }
}

/// A typed extension request: its namespace-relative path and response type.
pub trait ExtensionMethod: Serialize + DeserializeOwned + Check + Clone + std::fmt::Debug {
    /// The namespace-relative path, such as `session/steer`.
    const PATH: &'static str;
    /// The feature that must be negotiated before it is sent.
    const FEATURE: Feature;
    /// The result type.
    type Response: Serialize + DeserializeOwned + Check + Clone + std::fmt::Debug;
}

/// A typed extension notification: its namespace-relative path.
pub trait ExtensionNotificationMethod:
    Serialize + DeserializeOwned + Check + Clone + std::fmt::Debug
{
    /// The namespace-relative path, such as `subagents/event`.
    const PATH: &'static str;
    /// The feature that must be negotiated before it is sent.
    const FEATURE: Feature;
}

/// One contract method, as its one declaration gives it: the columns the
/// rest of the crate reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct MethodInfo {
    /// Which method it is.
    pub method: ContractMethod,
    /// The namespace-relative path, such as `session/steer`.
    pub path: &'static str,
    /// Request or notification.
    pub kind: MethodKind,
    /// The feature that must be negotiated before it is sent.
    pub feature: Feature,
    /// The side that sends it: the client sends the contract's requests,
    /// the agent its notifications.
    pub sender: Side,
}

/// The declaration of the contract method `method`: a namespace-relative
/// path (`session/steer`) or a full method in either namespace
/// (`_ua/session/steer`); `None` for any other.
///
/// ```
/// use acp_extension_core::capabilities::{Feature, Side};
/// use acp_extension_core::methods::{MethodKind, method_info};
///
/// let steer = method_info("_ua/session/steer").unwrap();
/// assert_eq!((steer.kind, steer.feature, steer.sender), (MethodKind::Request, Feature::Steering, Side::Client));
/// assert_eq!(method_info("subagents/event").unwrap().sender, Side::Agent);
/// assert!(method_info("session/prompt").is_none());
/// ```
pub fn method_info(method: &str) -> Option<&'static MethodInfo> {
    let path = match split_method(method) {
        Some((_, path)) => path,
        None => method,
    };
    ALL_METHODS.iter().find(|m| m.path == path)
}

/// Whether a method is a request or a notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MethodKind {
    /// Expects a response.
    Request,
    /// Fire and forget.
    Notification,
}

macro_rules! methods {
    (
        requests { $( $(#[$rdoc:meta])* $rvar:ident($rty:ty) -> $resp:ty = $rpath:literal, $rfeature:ident, $handler:ident; )* }
        notifications { $( $(#[$ndoc:meta])* $nvar:ident($nty:ty) = $npath:literal, $nfeature:ident; )* }
    ) => {
        $(
            impl ExtensionMethod for $rty {
                const PATH: &'static str = $rpath;
                const FEATURE: Feature = Feature::$rfeature;
                type Response = $resp;
            }
        )*
        $(
            impl ExtensionNotificationMethod for $nty {
                const PATH: &'static str = $npath;
                const FEATURE: Feature = Feature::$nfeature;
            }
        )*

        /// Every contract method, requests then notifications, in
        /// contract order.
        pub const ALL_METHODS: &[MethodInfo] = &[
            $( MethodInfo { method: ContractMethod::$rvar, path: $rpath, kind: MethodKind::Request, feature: Feature::$rfeature, sender: Side::Client }, )*
            $( MethodInfo { method: ContractMethod::$nvar, path: $npath, kind: MethodKind::Notification, feature: Feature::$nfeature, sender: Side::Agent }, )*
        ];

        /// Each contract method by name, requests then notifications, as
        /// [`MethodInfo::method`] names it: what a rule matches on instead
        /// of the path's text.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ContractMethod {
            $( #[doc = concat!("`", $rpath, "`.")] $rvar, )*
            $( #[doc = concat!("`", $npath, "`.")] $nvar, )*
        }

        impl ContractMethod {
            /// The namespace-relative path (`subagents/event`).
            pub const fn path(self) -> &'static str {
                match self {
                    $( Self::$rvar => $rpath, )*
                    $( Self::$nvar => $npath, )*
                }
            }

            /// The full method name in `ns` (`_ua/subagents/event`).
            pub const fn method(self, ns: Namespace) -> &'static str {
                match (self, ns) {
                    $(
                        (Self::$rvar, Namespace::Lody) => concat!("_lody/", $rpath),
                        (Self::$rvar, Namespace::Ua) => concat!("_ua/", $rpath),
                    )*
                    $(
                        (Self::$nvar, Namespace::Lody) => concat!("_lody/", $npath),
                        (Self::$nvar, Namespace::Ua) => concat!("_ua/", $npath),
                    )*
                }
            }
        }

        /// A typed extension request (params), in whichever namespace it came.
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub enum ExtensionRequest {
            $( $(#[$rdoc])* $rvar($rty), )*
        }

        /// A typed extension request result.
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub enum ExtensionResponse {
            $( #[doc = concat!("Result of `", $rpath, "`.")] $rvar($resp), )*
        }

        /// A typed extension notification (params).
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub enum ExtensionNotification {
            $( $(#[$ndoc])* $nvar($nty), )*
        }

        impl ExtensionRequest {
            /// The namespace-relative path of this request.
            pub fn path(&self) -> &'static str {
                match self { $( Self::$rvar(_) => $rpath, )* }
            }

            /// Parses `(method, params)`: `Ok(None)` when the method is not
            /// an extension request of the contract, `Err` when it is but
            /// the params break the contract (every violation listed).
            pub fn parse(method: &str, params: &Value) -> Result<Option<(Namespace, Self)>, ParamsError> {
                let Some((ns, path)) = split_method(method) else { return Ok(None) };
                let request = match path {
                    $( $rpath => Self::$rvar(parse_params::<$rty>(method, params)?), )*
                    _ => return Ok(None),
                };
                Ok(Some((ns, request)))
            }

            /// The params as JSON.
            pub fn params(&self) -> Value {
                match self { $( Self::$rvar(p) => to_value(p), )* }
            }

            /// Parses the result of this request.
            pub fn parse_response(&self, result: &Value) -> Result<ExtensionResponse, ParamsError> {
                ExtensionResponse::parse(self.path(), result)
            }
        }

        impl ExtensionResponse {
            /// Parses the result of the request at `path` (namespace-relative,
            /// or a full method name in either namespace).
            pub fn parse(path: &str, result: &Value) -> Result<Self, ParamsError> {
                let rel = split_method(path).map(|(_, p)| p).unwrap_or(path);
                match rel {
                    $( $rpath => Ok(Self::$rvar(parse_params::<$resp>(path, result)?)), )*
                    _ => Err(ParamsError::unknown(path)),
                }
            }

            /// The result as JSON.
            pub fn to_json(&self) -> Value {
                match self { $( Self::$rvar(p) => to_value(p), )* }
            }
        }

        impl ExtensionNotification {
            /// The namespace-relative path of this notification.
            pub fn path(&self) -> &'static str {
                match self { $( Self::$nvar(_) => $npath, )* }
            }

            /// Parses `(method, params)`; see [`ExtensionRequest::parse`].
            pub fn parse(method: &str, params: &Value) -> Result<Option<(Namespace, Self)>, ParamsError> {
                let Some((ns, path)) = split_method(method) else { return Ok(None) };
                let notification = match path {
                    $( $npath => Self::$nvar(parse_params::<$nty>(method, params)?), )*
                    _ => return Ok(None),
                };
                Ok(Some((ns, notification)))
            }

            /// The params as JSON.
            pub fn params(&self) -> Value {
                match self { $( Self::$nvar(p) => to_value(p), )* }
            }
        }

        $(
            impl From<$rty> for ExtensionRequest {
                fn from(v: $rty) -> Self { Self::$rvar(v) }
            }
        )*
        $(
            impl From<$nty> for ExtensionNotification {
                fn from(v: $nty) -> Self { Self::$nvar(v) }
            }
        )*
    };
}

/// The contract's methods, declared once: each row's variant, params type,
/// result type, path, feature and (for a request) the producer's handler
/// method. `$callback` reads the
/// columns it needs (the typed enums here, the producer's handler trait).
macro_rules! extension_methods {
    ($callback:ident) => {
$callback! {
    requests {
        /// `rate_limits/get`: current rate limits (capability `rateLimits.query`).
        RateLimitsGet(RateLimitsGetRequest) -> RateLimitsSnapshot = "rate_limits/get", RateLimits, rate_limits;
        /// `session/steer`: inject input into the running turn (capability `steering`).
        SessionSteer(SteerRequest) -> SteerResponse = "session/steer", Steering, steer;
        /// `session/goal`: goal control while a prompt may be running (capability `goal`).
        SessionGoal(GoalControlRequest) -> GoalControlResponse = "session/goal", Goal, goal;
        /// `session/history/read`: trigger a native history read (capability `sessionHistory`).
        SessionHistoryRead(SessionHistoryReadRequest) -> EmptyResponse = "session/history/read", SessionHistory, history_read;
        /// `subagents/list` (capability `subagents.list`).
        SubagentsList(SubagentsListRequest) -> SubagentsListResponse = "subagents/list", Subagents, subagents_list;
        /// `subagents/cancel` (capability `subagents.cancel`).
        SubagentsCancel(SubagentCancelRequest) -> EmptyResponse = "subagents/cancel", Subagents, subagents_cancel;
        /// `subagents/output` (capability `subagents.output`).
        SubagentsOutput(SubagentOutputRequest) -> SubagentOutputResponse = "subagents/output", Subagents, subagents_output;
        /// `mcp_apps/load` (capability `mcpApps`).
        McpAppsLoad(McpAppLoadRequest) -> McpAppLoadResponse = "mcp_apps/load", McpApps, mcp_app_load;
        /// `mcp_apps/resource/read` (capability `mcpApps`).
        McpAppsResourceRead(McpAppResourceReadRequest) -> McpAppResourceReadResponse = "mcp_apps/resource/read", McpApps, mcp_app_resource_read;
        /// `mcp_apps/tool/call` (capability `mcpApps`).
        McpAppsToolCall(McpAppToolCallRequest) -> McpCallToolResult = "mcp_apps/tool/call", McpApps, mcp_app_tool_call;
    }
    notifications {
        /// `subagents/event`: one subagent run event (both sides `subagentEvents`).
        SubagentEvent(SubagentEvent) = "subagents/event", SubagentEvents;
        /// `session/usage_update`: accounted token usage (capability `usage`).
        SessionUsageUpdate(SessionUsageUpdate) = "session/usage_update", Usage;
        /// `rate_limits/update`: pushed rate limits (capability `rateLimits`).
        RateLimitsUpdate(RateLimitsSnapshot) = "rate_limits/update", RateLimits;
        /// `session/steer_applied`: a steer was applied (capability `steering`).
        SessionSteerApplied(SteerApplied) = "session/steer_applied", Steering;
        /// `session/activity_update`: session activity level (capability `sessionActivity`).
        SessionActivityUpdate(SessionActivityUpdate) = "session/activity_update", SessionActivity;
    }
}
    };
}
pub(crate) use extension_methods;

extension_methods!(methods);

/// The contract method a full method names (`_ua/session/steer`, in
/// either namespace); `None` for a bare path and for any other method.
///
/// ```
/// use acp_extension_core::methods::{ContractMethod, contract_method};
///
/// assert_eq!(contract_method("_lody/session/steer"), Some(ContractMethod::SessionSteer));
/// assert_eq!(contract_method("session/steer"), None);
/// ```
pub fn contract_method(method: &str) -> Option<ContractMethod> {
    let (_, path) = split_method(method)?;
    method_info(path).map(|m| m.method)
}

/// The kind of a method given in either namespace, with or without the
/// leading underscore; `None` for non-extension methods.
pub fn method_kind(method: &str) -> Option<MethodKind> {
    let (_, path) = split_method(method)?;
    method_info(path).map(|m| m.kind)
}

fn to_value<T: Serialize>(v: &T) -> Value {
    // Contract types serialize infallibly: string keys, finite numbers.
    serde_json::to_value(v).unwrap_or(Value::Null)
}

fn parse_params<T: DeserializeOwned + Check>(
    method: &str,
    params: &Value,
) -> Result<T, ParamsError> {
    T::deserialize(params).map_err(|first| {
        let mut violations = check::<T>(params);
        if violations.is_empty() {
            violations.push(Violation::new(
                "",
                crate::Rule::Relation {
                    id: "parse",
                    message: first.to_string(),
                },
            ));
        }
        ParamsError {
            method: method.to_owned(),
            violations,
        }
    })
}

/// The violations of a subagent event whose typed parse is known to fail
/// (the connection read it), as its parse lists them; `None` where the
/// checks find none (the parse's own reason then tells).
pub(crate) fn subagent_event_violations(method: &str, params: &Value) -> Option<ParamsError> {
    let violations = check::<crate::subagent_events::SubagentEvent>(params);
    (!violations.is_empty()).then(|| ParamsError {
        method: method.to_owned(),
        violations,
    })
}

/// Params (or a result) of a known extension method that break the contract.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid params for {method}: {}", summary(.violations))]
#[non_exhaustive]
pub struct ParamsError {
    /// The method as received.
    pub method: String,
    /// Every violation, pointers relative to the params.
    pub violations: Vec<Violation>,
}

fn summary(violations: &[Violation]) -> String {
    let parts: Vec<String> = violations.iter().map(ToString::to_string).collect();
    parts.join("; ")
}

impl ParamsError {
    fn unknown(method: &str) -> Self {
        Self {
            method: method.to_owned(),
            violations: vec![Violation::new(
                "",
                crate::Rule::Relation {
                    id: "unknown-method",
                    message: format!("{method} is not an extension request of the contract"),
                },
            )],
        }
    }

    /// The JSON-RPC `-32602 Invalid params` error for this failure, with a
    /// message naming each field and rule and the violations in `data`.
    pub fn to_rpc_error(&self) -> agent_client_protocol::Error {
        let data: Vec<Value> = self
            .violations
            .iter()
            .map(|v| serde_json::json!({"path": v.pointer, "rule": v.rule.id(), "message": v.message()}))
            .collect();
        agent_client_protocol::Error::invalid_params()
            .data(serde_json::json!({"method": self.method, "violations": data}))
            .with_message(self.to_string())
    }
}

trait WithMessage {
    fn with_message(self, message: String) -> Self;
}

impl WithMessage for agent_client_protocol::Error {
    fn with_message(mut self, message: String) -> Self {
        self.message = message;
        self
    }
}

fn sdk_error(e: ParamsError) -> agent_client_protocol::Error {
    e.to_rpc_error()
}

/// A typed request or notification together with the namespace it travels
/// in. As an SDK message it matches both spellings when received and uses
/// its own namespace when sent.
///
/// ```no_run
/// # async fn demo(cx: agent_client_protocol::ConnectionTo<agent_client_protocol::Agent>) -> agent_client_protocol::Result<()> {
/// use acp_extension_core::methods::Namespaced;
/// use acp_extension_core::rate_limits::RateLimitsGetRequest;
/// use acp_extension_core::Namespace;
///
/// let snapshot = cx
///     .send_request(Namespaced::new(Namespace::Lody, RateLimitsGetRequest::new()))
///     .block_task()
///     .await?;
/// println!("{} limits", snapshot.rate_limits.len());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Namespaced<T> {
    /// The namespace of the method name.
    pub namespace: Namespace,
    /// The typed params.
    pub message: T,
    method: String,
}

impl<T: ExtensionMethod> Namespaced<T> {
    /// Wraps `message` for sending in `namespace`.
    pub fn new(namespace: Namespace, message: T) -> Self {
        Self {
            namespace,
            method: namespace.method(T::PATH),
            message,
        }
    }
}

fn matches_path(method: &str, path: &str) -> Option<Namespace> {
    split_method(method).and_then(|(ns, p)| (p == path).then_some(ns))
}

/// `JsonRpcMessage` for a wrapper holding one typed message with the
/// namespace it travels in: matches both spellings of `T::PATH`.
macro_rules! namespaced_message {
    ($wrapper:ident, $bound:ident) => {
        impl<T: $bound + Send + 'static> JsonRpcMessage for $wrapper<T> {
            fn matches_method(method: &str) -> bool {
                matches_path(method, T::PATH).is_some()
            }
            fn method(&self) -> &str {
                &self.method
            }
            fn to_untyped_message(&self) -> Result<UntypedMessage, agent_client_protocol::Error> {
                UntypedMessage::new(&self.method, &self.message)
            }
            fn parse_message(
                method: &str,
                params: &Value,
            ) -> Result<Self, agent_client_protocol::Error> {
                let namespace = matches_path(method, T::PATH)
                    .ok_or_else(agent_client_protocol::Error::method_not_found)?;
                let message = parse_params::<T>(method, params).map_err(sdk_error)?;
                Ok(Self {
                    namespace,
                    message,
                    method: method.to_owned(),
                })
            }
        }
    };
}

namespaced_message!(Namespaced, ExtensionMethod);
namespaced_message!(NamespacedNotification, ExtensionNotificationMethod);

impl<T: ExtensionMethod + Send + 'static> JsonRpcRequest for Namespaced<T>
where
    T::Response: Send + 'static,
{
    type Response = Typed<T::Response>;
}

/// A typed result as an SDK response payload.
#[derive(Debug, Clone, PartialEq)]
pub struct Typed<T>(pub T);

impl<T> std::ops::Deref for Typed<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: Serialize + DeserializeOwned + Check + Clone + std::fmt::Debug + Send + 'static>
    JsonRpcResponse for Typed<T>
{
    fn into_json(self, _method: &str) -> Result<Value, agent_client_protocol::Error> {
        serde_json::to_value(&self.0).map_err(agent_client_protocol::Error::into_internal_error)
    }
    fn from_json(method: &str, value: Value) -> Result<Self, agent_client_protocol::Error> {
        parse_params::<T>(method, &value)
            .map(Typed)
            .map_err(sdk_error)
    }
}

/// A typed notification with its namespace, as an SDK message.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct NamespacedNotification<T> {
    /// The namespace of the method name.
    pub namespace: Namespace,
    /// The typed params.
    pub message: T,
    method: String,
}

impl<T: ExtensionNotificationMethod> NamespacedNotification<T> {
    /// Wraps `message` for sending in `namespace`.
    pub fn new(namespace: Namespace, message: T) -> Self {
        Self {
            namespace,
            method: namespace.method(T::PATH),
            message,
        }
    }
}

impl<T: ExtensionNotificationMethod + Send + 'static> JsonRpcNotification
    for NamespacedNotification<T>
{
}

/// Every extension request, typed, as one SDK message: register a single
/// handler for all of them.
///
/// # Example
///
/// ```
/// use acp_extension_core::methods::{AnyExtensionRequest, ExtensionRequest};
/// use acp_extension_core::Namespace;
/// use agent_client_protocol::JsonRpcMessage;
/// use serde_json::json;
///
/// let steer = AnyExtensionRequest::parse_message("_ua/session/steer",
///     &json!({"sessionId": "s", "steerId": "st-1", "prompt": []}))?;
/// assert_eq!(steer.namespace, Namespace::Ua);
/// assert!(matches!(steer.request, ExtensionRequest::SessionSteer(_)));
/// // Bad params are the SDK's invalid-params error, not a panic.
/// assert!(AnyExtensionRequest::parse_message("_ua/session/steer", &json!({})).is_err());
/// # Ok::<_, agent_client_protocol::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AnyExtensionRequest {
    /// The namespace it arrived in (or will be sent in).
    pub namespace: Namespace,
    /// The typed request.
    pub request: ExtensionRequest,
    method: String,
}

impl AnyExtensionRequest {
    /// Wraps `request` for sending in `namespace`.
    pub fn new(namespace: Namespace, request: impl Into<ExtensionRequest>) -> Self {
        let request = request.into();
        Self {
            namespace,
            method: namespace.method(request.path()),
            request,
        }
    }
}

/// `JsonRpcMessage` for a wrapper holding any typed extension request or
/// notification (`$field` of type `$parsed`) with its namespace.
macro_rules! any_extension_message {
    ($wrapper:ident, $field:ident, $parsed:ident, $kind:expr) => {
        impl JsonRpcMessage for $wrapper {
            fn matches_method(method: &str) -> bool {
                method_kind(method) == Some($kind)
            }
            fn method(&self) -> &str {
                &self.method
            }
            fn to_untyped_message(&self) -> Result<UntypedMessage, agent_client_protocol::Error> {
                Ok(UntypedMessage {
                    method: self.method.clone(),
                    params: self.$field.params(),
                })
            }
            fn parse_message(
                method: &str,
                params: &Value,
            ) -> Result<Self, agent_client_protocol::Error> {
                match $parsed::parse(method, params).map_err(sdk_error)? {
                    Some((namespace, $field)) => Ok(Self {
                        namespace,
                        $field,
                        method: method.to_owned(),
                    }),
                    None => Err(agent_client_protocol::Error::method_not_found()),
                }
            }
        }
    };
}

any_extension_message!(
    AnyExtensionRequest,
    request,
    ExtensionRequest,
    MethodKind::Request
);
any_extension_message!(
    AnyExtensionNotification,
    notification,
    ExtensionNotification,
    MethodKind::Notification
);

impl JsonRpcRequest for AnyExtensionRequest {
    type Response = ExtensionResponse;
}

impl JsonRpcResponse for ExtensionResponse {
    fn into_json(self, _method: &str) -> Result<Value, agent_client_protocol::Error> {
        Ok(self.to_json())
    }
    fn from_json(method: &str, value: Value) -> Result<Self, agent_client_protocol::Error> {
        ExtensionResponse::parse(method, &value).map_err(sdk_error)
    }
}

/// Every extension notification, typed, as one SDK message.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AnyExtensionNotification {
    /// The namespace it arrived in (or will be sent in).
    pub namespace: Namespace,
    /// The typed notification.
    pub notification: ExtensionNotification,
    method: String,
}

impl AnyExtensionNotification {
    /// Wraps `notification` for sending in `namespace`.
    pub fn new(namespace: Namespace, notification: impl Into<ExtensionNotification>) -> Self {
        let notification = notification.into();
        Self {
            namespace,
            method: namespace.method(notification.path()),
            notification,
        }
    }
}

impl JsonRpcNotification for AnyExtensionNotification {}
