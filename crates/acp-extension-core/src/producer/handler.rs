//! Serving the contract's requests: one handler trait whose methods are
//! columns of the method table, and the dispatch that calls them.

use super::*;

/// The `-32601` answer for an extension method the agent does not
/// implement, naming it in `data`.
pub fn method_not_implemented(path: &str) -> Error {
    Error::method_not_found().data(json!({ "method": path }))
}

macro_rules! handler_methods {
    (
        requests { $( $(#[$doc:meta])* $var:ident($req:ty) -> $resp:ty = $path:literal, $feature:ident, $name:ident; )* }
        notifications { $( $(#[$ndoc:meta])* $nvar:ident($nty:ty) = $npath:literal, $nfeature:ident; )* }
    ) => {
        /// The extension requests an agent receives, one method each; every
        /// method not overridden answers `-32601` (method not found).
        /// Override exactly the ones the agent advertises.
        ///
        /// ```
        /// use acp_extension_core::methods::{ExtensionRequest, ExtensionResponse};
        /// use acp_extension_core::producer::{handle_request, ExtensionRequestHandler};
        /// use acp_extension_core::session::{SteerOutcome, SteerRequest, SteerResponse};
        ///
        /// struct Steering;
        /// impl ExtensionRequestHandler for Steering {
        ///     async fn steer(&self, _: SteerRequest) -> agent_client_protocol::Result<SteerResponse> {
        ///         Ok(SteerResponse::new(SteerOutcome::Injected))
        ///     }
        /// }
        ///
        /// # futures::executor::block_on(async {
        /// let steer = ExtensionRequest::parse("_lody/session/steer",
        ///     &serde_json::json!({"sessionId": "s", "steerId": "st-1", "prompt": []}))?.unwrap().1;
        /// assert!(matches!(handle_request(&Steering, steer).await, Ok(ExtensionResponse::SessionSteer(_))));
        /// let list = ExtensionRequest::parse("_lody/subagents/list", &serde_json::json!({"sessionId": "s"}))?.unwrap().1;
        /// assert_eq!(i32::from(handle_request(&Steering, list).await.unwrap_err().code), -32601);
        /// # Ok::<_, acp_extension_core::methods::ParamsError>(())
        /// # }).unwrap();
        /// ```
        pub trait ExtensionRequestHandler: Send + Sync {
            $(
                $(#[$doc])*
                #[doc = concat!("\n\nDefault: `-32601` naming `", $path, "`.")]
                fn $name(&self, request: $req) -> impl Future<Output = Result<$resp, Error>> + Send {
                    let _ = request;
                    async { Err(method_not_implemented($path)) }
                }
            )*
        }

        /// Runs `request` through `handler`'s method for it.
        pub async fn handle_request<H: ExtensionRequestHandler + ?Sized>(
            handler: &H,
            request: ExtensionRequest,
        ) -> Result<ExtensionResponse, Error> {
            Ok(match request {
                $( ExtensionRequest::$var(r) => ExtensionResponse::$var(handler.$name(r).await?), )*
                #[allow(unreachable_patterns)]
                other => return Err(method_not_implemented(other.path())),
            })
        }
    };
}

crate::methods::extension_methods!(handler_methods);

/// Serves the official adapters' requests ([`StandardRequest`]:
/// `_session/steering`, `_session/goal`) with the same handler as the
/// contract's, so an agent takes steers and goals from both kinds of
/// client:
///
/// - `_session/steering` calls [`ExtensionRequestHandler::steer`] with the
///   request's `steerId` if it carries one, else a fresh
///   `standard-steer-<n>` (a standard client gets no `steer_applied`; the
///   handle refuses it to such a client). `injected` answers `injected`;
///   `failed` answers `promptRequired` (`noRunningTurn`) when the client
///   asked for it with `idleBehavior: "promptRequired"`, else `failed`:
///   nothing was injected, and a prompt is what the client should send
///   next either way.
/// - `_session/goal` calls [`ExtensionRequestHandler::goal`] and answers
///   `{}` (the official adapters answer no snapshot).
///
/// ```
/// use acp_extension_core::producer::{handle_standard, ExtensionRequestHandler};
/// use acp_extension_core::session::{SteerOutcome, SteerRequest, SteerResponse};
/// use acp_extension_core::standard::{StandardRequest, StandardResponse, SteeringResponse};
/// use agent_client_protocol::JsonRpcMessage;
///
/// struct Idle;
/// impl ExtensionRequestHandler for Idle {
///     async fn steer(&self, _: SteerRequest) -> agent_client_protocol::Result<SteerResponse> {
///         Ok(SteerResponse::new(SteerOutcome::Failed)) // no turn runs
///     }
/// }
///
/// let steer = StandardRequest::parse_message("_session/steering", &serde_json::json!({
///     "sessionId": "s", "prompt": [], "_meta": {"steering": {"idleBehavior": "promptRequired"}}}))?;
/// let answer = futures::executor::block_on(handle_standard(&Idle, steer))?;
/// assert_eq!(answer, StandardResponse::Steering(SteeringResponse::no_running_turn()));
/// # Ok::<_, agent_client_protocol::Error>(())
/// ```
pub async fn handle_standard<H: ExtensionRequestHandler + ?Sized>(
    handler: &H,
    request: StandardRequest,
) -> Result<StandardResponse, Error> {
    static STEERS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    match request {
        StandardRequest::Steering(r) => {
            let n = STEERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            let outcome = handler
                .steer(r.to_core(format!("standard-steer-{n}")))
                .await?
                .outcome;
            Ok(StandardResponse::Steering(
                match (outcome, r.prompt_required()) {
                    (SteerOutcome::Injected, _) => SteeringResponse::Injected,
                    (_, true) => SteeringResponse::no_running_turn(),
                    (other, false) => SteeringResponse::from_core(other),
                },
            ))
        }
        StandardRequest::Goal(r) => {
            handler.goal(r).await?;
            Ok(StandardResponse::Goal)
        }
        #[allow(unreachable_patterns)]
        other => Err(method_not_implemented(other.method())),
    }
}

/// [`handle_request`] for the SDK's typed message: the request as it
/// arrived (either namespace).
pub async fn handle_any<H: ExtensionRequestHandler + ?Sized>(
    handler: &H,
    request: AnyExtensionRequest,
) -> Result<ExtensionResponse, Error> {
    handle_request(handler, request.request).await
}
