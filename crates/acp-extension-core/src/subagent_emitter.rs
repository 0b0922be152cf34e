//! [`SubagentEmitter`]: maps native child executions of one root ACP session
//! onto opaque run ids and emits ordered subagent events.
//!
//! An adapter creates one emitter per activation of a root session, after
//! both peers advertised `subagentEvents`, and calls it as its runtime
//! reports child work: [`start`](SubagentEmitter::start) when a child starts,
//! [`snapshot`](SubagentEmitter::snapshot) when its state changes,
//! [`progress`](SubagentEmitter::progress) and
//! [`output`](SubagentEmitter::output) while it runs, and
//! [`disconnect`](SubagentEmitter::disconnect) when observation of the
//! children is lost. Events go to an [`EventSink`]: [`AcpNotificationSink`]
//! sends them as `_lody/subagents/event` (or `_ua/…`) notifications over an
//! ACP connection; [`FnSink`] wraps a closure; a `Vec<SubagentEvent>`
//! collects them for tests.
//!
//! Rules (the contract's emitter, facts §13):
//! - Only live runs (`pending`, `running`) accept snapshots, progress and
//!   output; anything for an unknown or finished run is dropped silently.
//! - `start` for a live run does nothing; for an unknown or finished one it
//!   issues a fresh run id, so native ids map to one run id per execution.
//! - An output update that is not a valid [`SubagentOutput`] is not
//!   forwarded: the run's snapshot is re-sent with `outputIncomplete: true`.
//! - The emitter's state changes *before* the sink is awaited; if the sink
//!   fails, the error is returned and the state change stays.
//! - The caller negotiates the capability, validates native ancestry and
//!   serializes calls (await each call before the next); the emitter checks
//!   none of these.
//!
//! Unlike the TypeScript reference, inputs are typed: a snapshot is a
//! [`SubagentSnapshot`], a patch is a validated [`SnapshotPatch`] and the
//! session id is a [`NonEmptyString`], so every emitted event passes the
//! event guard. Input that the reference forwards unchecked (a state
//! `"bogus"`, an empty session id) is rejected where it is built.
//!
//! # Example: an adapter forwarding native child sessions
//!
//! ```
//! use acp_extension_core::subagent_emitter::{OutputIds, SnapshotPatch, SubagentEmitter};
//! use acp_extension_core::subagent_events::*;
//! use acp_extension_core::wire::NonEmptyString;
//! use serde_json::json;
//!
//! # futures::executor::block_on(async {
//! // In an agent, the sink is `AcpNotificationSink::new(cx, Namespace::Lody)`.
//! let mut emitter = SubagentEmitter::new(NonEmptyString::new("root-session")?, Vec::new());
//!
//! // The native runtime spawned a child thread "thread-42".
//! let support = SubagentSupport::new(vec![SubagentStream::Text, SubagentStream::Tool], true, OutputRead::None, false);
//! let snapshot = SubagentSnapshot::new(SubagentState::Running, support).name("Explorer");
//! emitter.start("thread-42", snapshot).await?;
//!
//! // Its messages arrive as raw ACP updates: forward them (invalid ones
//! // become `outputIncomplete: true` on the snapshot instead).
//! let chunk = json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Found it."}});
//! emitter.output_value("thread-42", chunk, OutputIds::new().native_turn_id("turn-1")).await?;
//!
//! // The child finished.
//! emitter.snapshot("thread-42", SnapshotPatch::new().state(SubagentState::Completed).summary("Found the bug")).await?;
//! assert!(!emitter.live("thread-42"));
//!
//! let events = emitter.into_sink();
//! assert_eq!(events.len(), 3);
//! assert!(events.iter().all(|e| is_subagent_event(&serde_json::to_value(e).unwrap())));
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

use std::convert::Infallible;
use std::fmt;
use std::future::Future;

use agent_client_protocol::role::HasPeer;
use agent_client_protocol::{Client, Role, UntypedMessage};
use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::Value;

use crate::namespace::Namespace;
use crate::subagent_events::{
    OutputRead, SUBAGENT_EVENT_PATH, SubagentEvent, SubagentEventPayload, SubagentOutput,
    SubagentOutputPayload, SubagentProgress, SubagentReason, SubagentReasonCode, SubagentSnapshot,
    SubagentState, SubagentSupport,
};
use crate::validate::{Rule, Violation, check, child};
use crate::wire::{Map, NonEmptyString, NonNegF64};

// ---------------------------------------------------------------------------
// Sinks
// ---------------------------------------------------------------------------

/// Where a [`SubagentEmitter`] delivers its events, in call order.
pub trait EventSink: Send {
    /// Why a delivery failed; returned to the emitter's caller.
    type Error;

    /// Delivers one event.
    fn send(
        &mut self,
        event: SubagentEvent,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;
}

/// Collects events in memory (for tests and replays).
impl EventSink for Vec<SubagentEvent> {
    type Error = Infallible;
    fn send(
        &mut self,
        event: SubagentEvent,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.push(event);
        std::future::ready(Ok(()))
    }
}

/// A borrowed sink, so the caller keeps ownership.
impl<S: EventSink + ?Sized> EventSink for &mut S {
    type Error = S::Error;
    fn send(
        &mut self,
        event: SubagentEvent,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        (**self).send(event)
    }
}

/// A sink from a closure returning a future, such as
/// `FnSink(|event| async move { tx.send(event).await })`.
#[derive(Clone)]
pub struct FnSink<F>(pub F);

impl<F> fmt::Debug for FnSink<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FnSink(..)")
    }
}

impl<F, Fut, E> EventSink for FnSink<F>
where
    F: FnMut(SubagentEvent) -> Fut + Send,
    Fut: Future<Output = Result<(), E>> + Send,
{
    type Error = E;
    fn send(
        &mut self,
        event: SubagentEvent,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        (self.0)(event)
    }
}

/// Sends each event as a `_<ns>/subagents/event` notification over an ACP
/// connection (by default an agent's connection to its client).
///
/// Sending only queues the message on the connection, so it does not wait
/// for the peer. Build it inside a handler or `connect_with` from the
/// connection context you are given:
///
/// ```no_run
/// use acp_extension_core::Namespace;
/// use acp_extension_core::subagent_emitter::{AcpNotificationSink, SubagentEmitter};
/// use acp_extension_core::wire::NonEmptyString;
/// use agent_client_protocol::{Client, v1::ConnectionTo};
///
/// fn emitter_for(cx: ConnectionTo<Client>, root_session: &str) -> SubagentEmitter<AcpNotificationSink> {
///     let sink = AcpNotificationSink::new(cx, Namespace::Lody);
///     SubagentEmitter::new(NonEmptyString::new(root_session).expect("session ids are not empty"), sink)
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
            method: ns.method(SUBAGENT_EVENT_PATH),
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
        event: SubagentEvent,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        let result = UntypedMessage::new(&self.method, &event)
            .and_then(|message| self.cx.send_notification(message));
        std::future::ready(result)
    }
}

// ---------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------

/// A change to a run's snapshot: keys to set and keys to remove, applied
/// as a shallow merge (a nested object such as `reason` or `support` is
/// replaced whole).
///
/// Every entry is validated when it is added, so applying a patch always
/// yields a valid [`SubagentSnapshot`]: a contract key must hold a value of
/// its type (`summary` a string, never `null`; `parentRunId` a string or
/// `null`; …), and the required keys `state` and `support` cannot be
/// removed. Keys the contract does not define may hold any value.
/// Removing a key is the Rust spelling of the reference's
/// `{reason: undefined}`.
///
/// ```
/// use acp_extension_core::subagent_emitter::SnapshotPatch;
/// use acp_extension_core::subagent_events::SubagentState;
/// use serde_json::json;
///
/// let patch = SnapshotPatch::new()
///     .state(SubagentState::Failed)
///     .summary("crashed")
///     .remove("reason")?
///     .set("x-native-exit-code", json!(3))?;
/// assert!(SnapshotPatch::new().set("summary", json!(null)).is_err());
/// assert!(SnapshotPatch::new().remove("state").is_err());
/// # Ok::<_, Vec<acp_extension_core::Violation>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SnapshotPatch {
    /// Key → new value, or `None` to remove the key; in insertion order.
    entries: IndexMap<String, Option<Value>>,
}

impl SnapshotPatch {
    /// An empty patch (applying it re-sends the snapshot unchanged).
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses a JSON patch object: every key is set to its value. All
    /// violations are reported, with pointers relative to the patch.
    pub fn from_value(value: Value) -> Result<Self, Vec<Violation>> {
        let Value::Object(map) = value else {
            return Err(vec![Violation::new("", Rule::type_of("an object", &value))]);
        };
        Self::from_map(map)
    }

    /// Like [`from_value`](Self::from_value), from an object.
    pub fn from_map(map: Map) -> Result<Self, Vec<Violation>> {
        let mut out = Vec::new();
        let mut patch = Self::new();
        for (key, value) in map {
            out.extend(validate_entry(&key, &value));
            patch.entries.insert(key, Some(value));
        }
        if out.is_empty() { Ok(patch) } else { Err(out) }
    }

    /// Sets `key` to `value`, after checking it against the contract type of
    /// that key.
    pub fn set(mut self, key: impl Into<String>, value: Value) -> Result<Self, Vec<Violation>> {
        let key = key.into();
        let violations = validate_entry(&key, &value);
        if !violations.is_empty() {
            return Err(violations);
        }
        self.entries.insert(key, Some(value));
        Ok(self)
    }

    /// Removes `key` from the snapshot; `state` and `support` are required
    /// and cannot be removed.
    pub fn remove(mut self, key: impl Into<String>) -> Result<Self, Vec<Violation>> {
        let key = key.into();
        if matches!(key.as_str(), "state" | "support") {
            return Err(vec![Violation::new(
                child("", &key),
                Rule::Required {
                    expected: "a value; this key cannot be removed",
                },
            )]);
        }
        self.entries.insert(key, None);
        Ok(self)
    }

    fn with(mut self, key: &str, value: Value) -> Self {
        self.entries.insert(key.to_owned(), Some(value));
        self
    }

    /// Sets `state`.
    #[must_use]
    pub fn state(self, state: SubagentState) -> Self {
        self.with("state", Value::from(state.as_str()))
    }

    /// Sets `support`.
    #[must_use]
    pub fn support(self, support: SubagentSupport) -> Self {
        self.with("support", to_json(&support))
    }

    /// Sets `parentRunId`; `None` writes `null`.
    #[must_use]
    pub fn parent_run_id(self, id: Option<String>) -> Self {
        self.with("parentRunId", id.map_or(Value::Null, Value::from))
    }

    /// Sets `parentToolCallId`.
    #[must_use]
    pub fn parent_tool_call_id(self, id: impl Into<String>) -> Self {
        self.with("parentToolCallId", Value::from(id.into()))
    }

    /// Sets `name`.
    #[must_use]
    pub fn name(self, name: impl Into<String>) -> Self {
        self.with("name", Value::from(name.into()))
    }

    /// Sets `description`.
    #[must_use]
    pub fn description(self, description: impl Into<String>) -> Self {
        self.with("description", Value::from(description.into()))
    }

    /// Sets `modelId`.
    #[must_use]
    pub fn model_id(self, model_id: impl Into<String>) -> Self {
        self.with("modelId", Value::from(model_id.into()))
    }

    /// Sets `summary`.
    #[must_use]
    pub fn summary(self, summary: impl Into<String>) -> Self {
        self.with("summary", Value::from(summary.into()))
    }

    /// Sets `startedAtEpochSeconds`.
    #[must_use]
    pub fn started_at_epoch_seconds(self, seconds: NonNegF64) -> Self {
        self.with("startedAtEpochSeconds", to_json(&seconds))
    }

    /// Sets `endedAtEpochSeconds`.
    #[must_use]
    pub fn ended_at_epoch_seconds(self, seconds: NonNegF64) -> Self {
        self.with("endedAtEpochSeconds", to_json(&seconds))
    }

    /// Sets `outputIncomplete: true`.
    #[must_use]
    pub fn output_incomplete(self) -> Self {
        self.with("outputIncomplete", Value::Bool(true))
    }

    /// Sets `reason`, replacing any previous reason whole.
    #[must_use]
    pub fn reason(self, reason: SubagentReason) -> Self {
        self.with("reason", to_json(&reason))
    }

    /// Whether the patch changes nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The snapshot `base` with this patch applied (a shallow merge).
    pub fn apply(&self, base: &SubagentSnapshot) -> SubagentSnapshot {
        let Value::Object(mut map) = to_json(base) else {
            return base.clone();
        };
        for (key, entry) in &self.entries {
            match entry {
                Some(v) => {
                    map.insert(key.clone(), v.clone());
                }
                None => {
                    map.shift_remove(key);
                }
            }
        }
        // Cannot fail: every entry was checked against its contract type and
        // the required keys cannot be removed.
        SubagentSnapshot::deserialize(&Value::Object(map)).unwrap_or_else(|_| base.clone())
    }
}

/// Serializes one of this crate's wire types, which cannot fail.
fn to_json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// Violations of one patch entry, from the [`SubagentSnapshot`] declaration
/// itself: the entry is checked inside an otherwise valid snapshot.
fn validate_entry(key: &str, value: &Value) -> Vec<Violation> {
    let probe = SubagentSnapshot::new(
        SubagentState::Pending,
        SubagentSupport::new(Vec::new(), false, OutputRead::None, false),
    );
    let Value::Object(mut map) = to_json(&probe) else {
        return Vec::new();
    };
    map.insert(key.to_owned(), value.clone());
    check::<SubagentSnapshot>(&Value::Object(map))
}

/// Native ids spread into an output event (`nativeTurnId`, `messageId`).
/// They cannot overwrite envelope fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OutputIds {
    /// The native turn the update belongs to.
    pub native_turn_id: Option<String>,
    /// The message the update belongs to.
    pub message_id: Option<String>,
}

impl OutputIds {
    /// No ids.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `nativeTurnId`.
    #[must_use]
    pub fn native_turn_id(mut self, id: impl Into<String>) -> Self {
        self.native_turn_id = Some(id.into());
        self
    }

    /// Sets `messageId`.
    #[must_use]
    pub fn message_id(mut self, id: impl Into<String>) -> Self {
        self.message_id = Some(id.into());
        self
    }
}

// ---------------------------------------------------------------------------
// The emitter
// ---------------------------------------------------------------------------

/// The current record of one native execution.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SubagentRun {
    /// The opaque run id of the current execution.
    pub run_id: NonEmptyString,
    /// The last snapshot sent for it.
    pub snapshot: SubagentSnapshot,
}

impl SubagentRun {
    /// Whether the run is live (`pending` or `running`).
    pub fn live(&self) -> bool {
        self.snapshot.state.is_live()
    }
}

type IdGenerator = Box<dyn FnMut() -> String + Send + Sync>;

/// How many generated ids are tried before falling back to a random UUID.
const MAX_ID_DRAWS: usize = 16;

/// Emits the subagent events of one root ACP session (see the
/// [module docs](self)).
///
/// Run ids come from a generator, by default a random UUID v4. A generated
/// id is never used when it is empty, equals a native id this emitter has
/// seen, or equals a run id it already issued: another id is drawn (after
/// 16 rejected draws, a random UUID is used). A native id that first
/// appears *after* an equal run id was issued cannot be caught.
pub struct SubagentEmitter<S: EventSink> {
    session_id: NonEmptyString,
    sink: S,
    new_id: IdGenerator,
    runs: IndexMap<String, SubagentRun>,
    issued: std::collections::HashSet<String>,
}

impl<S: EventSink> fmt::Debug for SubagentEmitter<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubagentEmitter")
            .field("session_id", &self.session_id)
            .field("runs", &self.runs)
            .finish_non_exhaustive()
    }
}

impl<S: EventSink> SubagentEmitter<S> {
    /// An emitter for root session `session_id`, delivering to `sink`.
    pub fn new(session_id: NonEmptyString, sink: S) -> Self {
        Self {
            session_id,
            sink,
            new_id: Box::new(|| uuid::Uuid::new_v4().to_string()),
            runs: IndexMap::new(),
            issued: std::collections::HashSet::new(),
        }
    }

    /// Replaces the run id generator (for deterministic ids in tests).
    #[must_use]
    pub fn with_id_generator(
        mut self,
        new_id: impl FnMut() -> String + Send + Sync + 'static,
    ) -> Self {
        self.new_id = Box::new(new_id);
        self
    }

    /// The root session id copied into every event.
    pub fn session_id(&self) -> &str {
        self.session_id.as_str()
    }

    /// The current record of `native_id`, if it was ever started.
    pub fn get(&self, native_id: &str) -> Option<&SubagentRun> {
        self.runs.get(native_id)
    }

    /// Whether `native_id` has a live run.
    pub fn live(&self, native_id: &str) -> bool {
        self.runs.get(native_id).is_some_and(SubagentRun::live)
    }

    /// The sink.
    pub fn sink(&self) -> &S {
        &self.sink
    }

    /// The sink, mutably.
    pub fn sink_mut(&mut self) -> &mut S {
        &mut self.sink
    }

    /// Consumes the emitter and returns its sink.
    pub fn into_sink(self) -> S {
        self.sink
    }

    /// Starts a run of `native_id` with `snapshot` and sends it.
    ///
    /// Does nothing while `native_id` has a live run (no event, no new id).
    /// Otherwise a new run id replaces any finished run of the same native
    /// id (keeping its original position for [`disconnect`](Self::disconnect)).
    /// A terminal `snapshot` is sent as given and the run is then not live.
    pub async fn start(
        &mut self,
        native_id: impl Into<String>,
        snapshot: SubagentSnapshot,
    ) -> Result<(), S::Error> {
        let native_id = native_id.into();
        if self.live(&native_id) {
            return Ok(());
        }
        let run_id = self.draw_run_id(&native_id);
        self.runs.insert(
            native_id,
            SubagentRun {
                run_id: run_id.clone(),
                snapshot: snapshot.clone(),
            },
        );
        self.emit(run_id, snapshot.into()).await
    }

    /// Applies `patch` to the live run of `native_id` and sends the full
    /// merged snapshot. Ignored when there is no live run.
    pub async fn snapshot(
        &mut self,
        native_id: &str,
        patch: SnapshotPatch,
    ) -> Result<(), S::Error> {
        let Some(run) = self.runs.get_mut(native_id).filter(|r| r.live()) else {
            return Ok(());
        };
        run.snapshot = patch.apply(&run.snapshot);
        let (run_id, snapshot) = (run.run_id.clone(), run.snapshot.clone());
        self.emit(run_id, snapshot.into()).await
    }

    /// Sends `progress` for the live run of `native_id`. Ignored when there
    /// is no live run.
    pub async fn progress(
        &mut self,
        native_id: &str,
        progress: SubagentProgress,
    ) -> Result<(), S::Error> {
        let Some(run_id) = self.live_run_id(native_id) else {
            return Ok(());
        };
        self.emit(run_id, progress.into()).await
    }

    /// Sends one output `update` for the live run of `native_id`, with the
    /// optional native `ids`. Ignored when there is no live run (late
    /// output after a terminal state is dropped).
    pub async fn output(
        &mut self,
        native_id: &str,
        update: SubagentOutput,
        ids: OutputIds,
    ) -> Result<(), S::Error> {
        let Some(run_id) = self.live_run_id(native_id) else {
            return Ok(());
        };
        let payload = SubagentOutputPayload {
            update,
            native_turn_id: ids.native_turn_id,
            message_id: ids.message_id,
        };
        self.emit(run_id, payload.into()).await
    }

    /// Like [`output`](Self::output) for an untyped update (for example an
    /// ACP `session/update` from the native runtime, or an SDK
    /// `SessionUpdate` through `serde_json::to_value`).
    ///
    /// An update that is not a valid [`SubagentOutput`] is not forwarded;
    /// the run's snapshot is re-sent with `outputIncomplete: true` instead,
    /// every time.
    pub async fn output_value(
        &mut self,
        native_id: &str,
        update: Value,
        ids: OutputIds,
    ) -> Result<(), S::Error> {
        if !self.live(native_id) {
            return Ok(());
        }
        match SubagentOutput::deserialize(update) {
            Ok(update) => self.output(native_id, update, ids).await,
            Err(_) => {
                self.snapshot(native_id, SnapshotPatch::new().output_incomplete())
                    .await
            }
        }
    }

    /// Marks every live run as lost: in the order native ids were first
    /// started, each gets `state: "unknown"`, `outputIncomplete: true` and
    /// `reason: {code: "disconnected"}` (replacing any reason; other fields
    /// stay). Finished runs get nothing, and the records are kept, so a
    /// second call sends nothing and a later `start` issues a new run id.
    ///
    /// If the sink fails, the error is returned at once and the remaining
    /// runs are left as they were.
    pub async fn disconnect(&mut self) -> Result<(), S::Error> {
        let live: Vec<String> = self
            .runs
            .iter()
            .filter(|(_, r)| r.live())
            .map(|(k, _)| k.clone())
            .collect();
        let patch = SnapshotPatch::new()
            .state(SubagentState::Unknown)
            .output_incomplete()
            .reason(SubagentReason::new(SubagentReasonCode::Disconnected));
        for native_id in live {
            self.snapshot(&native_id, patch.clone()).await?;
        }
        Ok(())
    }

    fn live_run_id(&self, native_id: &str) -> Option<NonEmptyString> {
        self.runs
            .get(native_id)
            .filter(|r| r.live())
            .map(|r| r.run_id.clone())
    }

    fn draw_run_id(&mut self, native_id: &str) -> NonEmptyString {
        let mut draws = 0;
        loop {
            let candidate = if draws < MAX_ID_DRAWS {
                (self.new_id)()
            } else {
                uuid::Uuid::new_v4().to_string()
            };
            draws += 1;
            let reused = candidate == native_id
                || self.runs.contains_key(&candidate)
                || self.issued.contains(&candidate);
            if reused {
                continue;
            }
            if let Ok(id) = NonEmptyString::new(candidate) {
                self.issued.insert(id.as_str().to_owned());
                return id;
            }
        }
    }

    async fn emit(
        &mut self,
        run_id: NonEmptyString,
        payload: SubagentEventPayload,
    ) -> Result<(), S::Error> {
        let event = SubagentEvent::new(self.session_id.clone(), run_id, payload);
        self.sink.send(event).await
    }
}
