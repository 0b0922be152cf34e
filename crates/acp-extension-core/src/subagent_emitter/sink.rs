//! Where an emitter sends its events: [`EventSink`] and its implementations.

use super::*;

/// Where a [`SubagentEmitter`] delivers its events, in call order.
pub trait EventSink: Send {
    /// Why a delivery failed; returned to the emitter's caller.
    type Error;

    /// Delivers one event.
    fn send(&mut self, event: EmittedEvent)
    -> impl Future<Output = Result<(), Self::Error>> + Send;
}

/// Collects events in memory (for tests and replays).
impl EventSink for Vec<EmittedEvent> {
    type Error = Infallible;
    fn send(
        &mut self,
        event: EmittedEvent,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.push(event);
        std::future::ready(Ok(()))
    }
}

/// Collects typed events, for callers of the typed API: an event that is
/// not a valid [`SubagentEvent`] is not pushed, and its violations are
/// returned to the emitter's caller (the emitter's state change stays).
impl EventSink for Vec<SubagentEvent> {
    type Error = Vec<Violation>;
    fn send(
        &mut self,
        event: EmittedEvent,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        let result = event.to_typed().map(|event| self.push(event));
        std::future::ready(result)
    }
}

/// A borrowed sink, so the caller keeps ownership.
impl<S: EventSink + ?Sized> EventSink for &mut S {
    type Error = S::Error;
    fn send(
        &mut self,
        event: EmittedEvent,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        (**self).send(event)
    }
}

/// A sink from a closure returning a future, such as
/// `FnSink(|event: EmittedEvent| async move { tx.send(event.into_value()).await })`.
#[derive(Clone)]
pub struct FnSink<F>(pub F);

impl<F> fmt::Debug for FnSink<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FnSink(..)")
    }
}

impl<F, Fut, E> EventSink for FnSink<F>
where
    F: FnMut(EmittedEvent) -> Fut + Send,
    Fut: Future<Output = Result<(), E>> + Send,
{
    type Error = E;
    fn send(
        &mut self,
        event: EmittedEvent,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        (self.0)(event)
    }
}

/// Sends each event as a `_<ns>/subagents/event` notification over an ACP
/// connection (by default an agent's connection to its client); the params
/// are the event's JSON.
///
/// Sending only queues the message on the connection, so it does not wait
/// for the peer. An agent takes a session's runs from its connection's
/// [`AgentExtensions`](crate::producer::AgentExtensions), which builds this
/// sink in the namespace the client negotiated and hands out one run map
/// per session:
///
/// ```no_run
/// use acp_extension_core::producer::{AgentExtensions, SendError};
/// use acp_extension_core::subagent_events::{OutputRead, SubagentSnapshot, SubagentState, SubagentStream, SubagentSupport};
/// use agent_client_protocol::v1::schema::SessionId;
///
/// async fn explore(ext: &AgentExtensions, session: &SessionId) -> Result<(), SendError> {
///     let Some(runs) = ext.subagent_emitter(session) else {
///         return Ok(()); // the client did not negotiate `subagentEvents`
///     };
///     let support = SubagentSupport::new(vec![SubagentStream::Text], false, OutputRead::None, false);
///     runs.start("explorer-1", SubagentSnapshot::new(SubagentState::Running, support)).await
/// }
/// ```
pub struct AcpNotificationSink<C: Role = Client> {
    cx: agent_client_protocol::v1::ConnectionTo<C>,
    method: String,
}

impl<C: Role> AcpNotificationSink<C> {
    /// Sends on `cx` with the method of namespace `ns`
    /// (`_lody/subagents/event` or `_ua/subagents/event`).
    pub fn new(cx: agent_client_protocol::v1::ConnectionTo<C>, ns: Namespace) -> Self {
        Self {
            cx,
            method: ns.method(<SubagentEvent as crate::methods::ExtensionNotificationMethod>::PATH),
        }
    }

    /// The notification method used.
    pub fn method(&self) -> &str {
        &self.method
    }
}

impl<C: Role> fmt::Debug for AcpNotificationSink<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AcpNotificationSink")
            .field("method", &self.method)
            .finish_non_exhaustive()
    }
}

impl<C: Role + HasPeer<C>> EventSink for AcpNotificationSink<C> {
    type Error = agent_client_protocol::Error;
    fn send(
        &mut self,
        event: EmittedEvent,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        let message = UntypedMessage {
            method: self.method.clone(),
            params: event.into_value(),
        };
        std::future::ready(self.cx.send_notification(message))
    }
}
