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
//! children is lost. Each event goes to an [`EventSink`] as an
//! [`EmittedEvent`] (the event's JSON, in wire key order):
//! [`AcpNotificationSink`] sends them as `_lody/subagents/event` (or `_ua/…`)
//! notifications over an ACP connection; [`FnSink`] wraps a closure; a
//! `Vec<EmittedEvent>` collects them as sent, and a `Vec<SubagentEvent>`
//! collects them typed (refusing an invalid one with its violations).
//!
//! Rules (the contract's emitter):
//! - Only live runs (`state` is `"pending"` or `"running"`) accept
//!   snapshots, progress and output; anything for an unknown or finished run
//!   is dropped silently.
//! - `start` for a live run does nothing; for an unknown or finished one it
//!   draws a fresh run id from the generator (once), so native ids map to
//!   one run id per execution.
//! - A snapshot patch is a shallow merge: a patch key replaces the old value
//!   whole (`reason`, `support`), a removed key leaves the snapshot.
//! - An output update that is not a valid [`SubagentOutput`] is not
//!   forwarded: the run's snapshot is re-sent with `outputIncomplete: true`.
//! - The emitter's state changes *before* the sink is awaited; if the sink
//!   fails, the error is returned and the state change stays.
//! - The caller negotiates the capability, validates native ancestry and
//!   serializes calls (await each call before the next); the emitter checks
//!   none of these.
//!
//! # Typed and untyped input
//!
//! Every call has a typed form ([`start`](SubagentEmitter::start) with a
//! [`SubagentSnapshot`], [`snapshot`](SubagentEmitter::snapshot) with a
//! [`SnapshotPatch`], [`progress`](SubagentEmitter::progress) with a
//! [`SubagentProgress`], [`output`](SubagentEmitter::output) with a
//! [`SubagentOutput`]) and an untyped one taking JSON
//! ([`start_value`](SubagentEmitter::start_value),
//! [`snapshot_value`](SubagentEmitter::snapshot_value),
//! [`progress_value`](SubagentEmitter::progress_value),
//! [`output_value`](SubagentEmitter::output_value)). **Prefer the typed
//! forms**: with them and a non-empty session id, every event the emitter
//! sends passes the event guard ([`EmittedEvent::to_typed`] succeeds).
//!
//! The untyped forms behave exactly like the TypeScript reference, which
//! validates nothing but output updates: garbage in, garbage out. A start
//! snapshot, a patch or a progress payload is stored and sent as given, and
//! the session id may be any string, even empty; the resulting events may
//! then fail the guard. This is deliberate, for fidelity: the same calls
//! give the same events as the reference (the conformance vectors in
//! `subagent-emitter.jsonl` include such input), and an adapter forwarding
//! its runtime's JSON gets it on the wire unchanged rather than refused.
//! Liveness follows the stored JSON too: a patch setting `state: "bogus"`
//! ends the run. Only output updates are checked (see above), and output
//! ids only ever set `nativeTurnId` and `messageId`.
//!
//! # Example: an adapter forwarding native child sessions
//!
//! ```
//! use acp_extension_core::subagent_emitter::{EmittedEvent, OutputIds, SnapshotPatch, SubagentEmitter};
//! use acp_extension_core::subagent_events::*;
//! use serde_json::json;
//!
//! # futures::executor::block_on(async {
//! // In an agent, take the session's runs from the connection's handle,
//! // which writes the namespace the client negotiated:
//! // `ext.subagent_emitter(&session_id)` (see `producer::AgentExtensions`).
//! let mut emitter = SubagentEmitter::new("root-session", Vec::<EmittedEvent>::new());
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
//! assert!(events.iter().all(|e| e.to_typed().is_ok()));
//! assert_eq!(events[1].as_value()["nativeTurnId"], "turn-1");
//! let last = events[2].to_typed().expect("typed input gives valid events");
//! assert_eq!(last.snapshot().map(|s| s.state), Some(SubagentState::Completed));
//! # Ok::<_, std::convert::Infallible>(())
//! # }).unwrap();
//! ```

use std::convert::Infallible;
use std::fmt;
use std::future::Future;

use agent_client_protocol::role::HasPeer;
use agent_client_protocol::{Client, Role, UntypedMessage};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::namespace::Namespace;
use crate::subagent_events::{
    OutputRead, SubagentEvent, SubagentEventType, SubagentOutput, SubagentProgress, SubagentReason,
    SubagentReasonCode, SubagentSnapshot, SubagentState, SubagentSupport, is_subagent_output,
};
use crate::violation::{Rule, Violation, check, child};
use crate::wire::WireEnum;
use crate::wire::{EpochSeconds, Map};

mod event;
mod sink;
pub use event::EmittedEvent;
pub use sink::{AcpNotificationSink, EventSink, FnSink};

// ---------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------

/// A change to a run's snapshot: keys to set and keys to remove, applied
/// as a shallow merge (a nested object such as `reason` or `support` is
/// replaced whole). Removing a key is the Rust spelling of the reference's
/// `{reason: undefined}`.
///
/// The typed setters and the checked [`set`](Self::set) and
/// [`remove`](Self::remove) keep a valid snapshot valid: a contract key must
/// hold a value of its type (`summary` a string, never `null`;
/// `parentRunId` a string or `null`; …), and the required keys `state` and
/// `support` cannot be removed. Keys the contract does not define may hold
/// any value. The `_unchecked` constructors and methods accept anything,
/// like the reference (see
/// [garbage in, garbage out](self#typed-and-untyped-input)).
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
///
/// // Unchecked, as the reference takes it.
/// let raw = SnapshotPatch::new().set_unchecked("state", json!("bogus")).remove_unchecked("support");
/// let mut snapshot = json!({"state": "running", "support": {}, "name": "W"});
/// raw.apply(snapshot.as_object_mut().unwrap());
/// assert_eq!(snapshot, json!({"state": "bogus", "name": "W"}));
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

    /// Parses a JSON patch object: every key is set to its value (`null`
    /// sets `null`; JSON cannot express a removal). All violations are
    /// reported, with pointers relative to the patch.
    pub fn from_value(value: Value) -> Result<Self, Vec<Violation>> {
        let Value::Object(map) = value else {
            return Err(vec![Violation::new("", Rule::type_of("an object", &value))]);
        };
        let mut out = Vec::new();
        let mut patch = Self::new();
        for (key, value) in map {
            out.extend(validate_entry(&key, &value));
            patch.entries.insert(key, Some(value));
        }
        if out.is_empty() { Ok(patch) } else { Err(out) }
    }

    /// A patch setting every key of `map` to its value, without checks
    /// (what [`SubagentEmitter::snapshot_value`] applies).
    pub fn from_map_unchecked(map: Map) -> Self {
        Self {
            entries: map.into_iter().map(|(k, v)| (k, Some(v))).collect(),
        }
    }

    /// Sets `key` to `value`, after checking it against the contract type of
    /// that key.
    pub fn set(self, key: impl Into<String>, value: Value) -> Result<Self, Vec<Violation>> {
        let key = key.into();
        let violations = validate_entry(&key, &value);
        if !violations.is_empty() {
            return Err(violations);
        }
        Ok(self.set_unchecked(key, value))
    }

    /// Sets `key` to `value`, without checks.
    #[must_use]
    pub fn set_unchecked(mut self, key: impl Into<String>, value: Value) -> Self {
        self.entries.insert(key.into(), Some(value));
        self
    }

    /// Removes `key` from the snapshot; `state` and `support` are required
    /// and cannot be removed.
    pub fn remove(self, key: impl Into<String>) -> Result<Self, Vec<Violation>> {
        let key = key.into();
        if matches!(key.as_str(), "state" | "support") {
            return Err(vec![Violation::new(
                child("", &key),
                Rule::Required {
                    expected: "a value; this key cannot be removed",
                },
            )]);
        }
        Ok(self.remove_unchecked(key))
    }

    /// Removes `key` from the snapshot, whatever it is (the reference's
    /// `{key: undefined}`; removing `state` ends the run).
    #[must_use]
    pub fn remove_unchecked(mut self, key: impl Into<String>) -> Self {
        self.entries.insert(key.into(), None);
        self
    }

    fn with(self, key: &str, value: Value) -> Self {
        self.set_unchecked(key, value)
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
    pub fn started_at_epoch_seconds(self, seconds: impl Into<EpochSeconds>) -> Self {
        self.with("startedAtEpochSeconds", to_json(&seconds.into()))
    }

    /// Sets `endedAtEpochSeconds`.
    #[must_use]
    pub fn ended_at_epoch_seconds(self, seconds: impl Into<EpochSeconds>) -> Self {
        self.with("endedAtEpochSeconds", to_json(&seconds.into()))
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

    /// The entries in insertion order: key and new value, or `None` for a
    /// removal.
    pub fn entries(&self) -> impl Iterator<Item = (&str, Option<&Value>)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v.as_ref()))
    }

    /// Applies the patch to `snapshot` (a shallow merge): a key already
    /// there keeps its position, a new key goes last.
    pub fn apply(&self, snapshot: &mut Map) {
        for (key, entry) in &self.entries {
            match entry {
                Some(v) => {
                    snapshot.insert(key.clone(), v.clone());
                }
                None => {
                    snapshot.shift_remove(key);
                }
            }
        }
    }
}

/// Serializes one of this crate's wire types, which cannot fail.
fn to_json<T: Serialize>(v: &T) -> Value {
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
/// They can set only these two keys, never envelope fields.
///
/// The contract wants strings (possibly empty); like the reference, the
/// emitter does not check them, so a value set directly or read with
/// [`from_value`](Self::from_value) is sent as it is.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct OutputIds {
    /// The native turn the update belongs to (`nativeTurnId`).
    pub native_turn_id: Option<Value>,
    /// The message the update belongs to (`messageId`).
    pub message_id: Option<Value>,
}

impl OutputIds {
    /// No ids.
    pub fn new() -> Self {
        Self::default()
    }

    /// The ids of a JSON object such as `{"nativeTurnId": "t-1"}`: its
    /// `nativeTurnId` and `messageId`, as given (even `null`). Other keys,
    /// and any value that is not an object, give no ids.
    pub fn from_value(ids: &Value) -> Self {
        Self {
            native_turn_id: ids.get("nativeTurnId").cloned(),
            message_id: ids.get("messageId").cloned(),
        }
    }

    /// Sets `nativeTurnId`.
    #[must_use]
    pub fn native_turn_id(mut self, id: impl Into<String>) -> Self {
        self.native_turn_id = Some(Value::from(id.into()));
        self
    }

    /// Sets `messageId`.
    #[must_use]
    pub fn message_id(mut self, id: impl Into<String>) -> Self {
        self.message_id = Some(Value::from(id.into()));
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
    pub run_id: String,
    /// The last snapshot sent for it, as JSON: the start snapshot with every
    /// patch since merged in. A JSON object unless an untyped start gave
    /// something else.
    pub snapshot: Value,
}

impl SubagentRun {
    /// Whether the run is live: its snapshot's `state` is `"pending"` or
    /// `"running"`.
    pub fn live(&self) -> bool {
        is_live(&self.snapshot)
    }

    /// The snapshot's `state`, if it is one of the contract's states.
    pub fn state(&self) -> Option<SubagentState> {
        self.snapshot["state"]
            .as_str()
            .and_then(SubagentState::from_wire)
    }

    /// Parses the snapshot, or returns every violation with its JSON pointer.
    pub fn to_typed(&self) -> Result<SubagentSnapshot, Vec<Violation>> {
        SubagentSnapshot::deserialize(&self.snapshot).map_err(|err| {
            let violations = check::<SubagentSnapshot>(&self.snapshot);
            if violations.is_empty() {
                vec![Violation::new(
                    "",
                    Rule::Relation {
                        id: "subagent-snapshot",
                        message: err.to_string(),
                    },
                )]
            } else {
                violations
            }
        })
    }
}

/// Whether a stored snapshot is live (the reference's strict comparison of
/// `snapshot.state` with the two live states).
fn is_live(snapshot: &Value) -> bool {
    matches!(
        snapshot.get("state").and_then(Value::as_str),
        Some("pending" | "running")
    )
}

type IdGenerator = Box<dyn FnMut() -> String + Send + Sync>;

/// Emits the subagent events of one root ACP session (see the
/// [module docs](self)).
///
/// Run ids come from a generator, called once per new run; by default it
/// returns a random UUID v4, which never equals a native id or an earlier
/// run id. A custom generator must keep that promise itself: its ids are
/// used as returned (an empty id makes invalid events), as the reference
/// does.
///
/// # Example
///
/// ```
/// use acp_extension_core::subagent_emitter::{EmittedEvent, SnapshotPatch, SubagentEmitter};
/// use acp_extension_core::subagent_events::{
///     OutputRead, SubagentSnapshot, SubagentState, SubagentSupport,
/// };
///
/// # futures::executor::block_on(async {
/// let mut sent: Vec<EmittedEvent> = Vec::new();
/// let mut emitter = SubagentEmitter::new("s1", &mut sent);
/// let support = SubagentSupport::new(vec![], false, OutputRead::None, true);
/// emitter.start("task-7", SubagentSnapshot::new(SubagentState::Running, support)).await?;
/// emitter.snapshot("task-7", SnapshotPatch::new().state(SubagentState::Completed)).await?;
/// // The run is over: later events for the native id send nothing.
/// emitter.snapshot("task-7", SnapshotPatch::new().summary("late")).await?;
/// drop(emitter);
/// assert_eq!(sent.len(), 2);
/// assert_eq!(sent[0].run_id(), sent[1].run_id());
/// assert_ne!(sent[0].run_id(), "task-7"); // run ids are never native ids
/// assert!(sent.iter().all(|e| e.to_typed().is_ok()));
/// # Ok::<_, std::convert::Infallible>(())
/// # }).unwrap();
/// ```
pub struct SubagentEmitter<S: EventSink> {
    session_id: String,
    sink: S,
    new_id: IdGenerator,
    runs: IndexMap<String, SubagentRun>,
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
    ///
    /// The session id is copied into every event as given; the contract
    /// needs it non-empty, but like the reference the emitter does not
    /// check it.
    pub fn new(session_id: impl AsRef<str>, sink: S) -> Self {
        Self {
            session_id: session_id.as_ref().to_owned(),
            sink,
            new_id: Box::new(|| uuid::Uuid::new_v4().to_string()),
            runs: IndexMap::new(),
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

    /// The current record of `native_id`, if it was ever started.
    pub fn get(&self, native_id: &str) -> Option<&SubagentRun> {
        self.runs.get(native_id)
    }

    /// Every record, by native id, in the order native ids were first
    /// started (the order [`disconnect`](Self::disconnect) uses).
    pub fn runs(&self) -> impl Iterator<Item = (&str, &SubagentRun)> {
        self.runs.iter().map(|(k, v)| (k.as_str(), v))
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
        self.start_value(native_id, to_json(&snapshot)).await
    }

    /// Like [`start`](Self::start) with an unchecked snapshot, stored and
    /// sent as given. The run is live only if its `state` is `"pending"` or
    /// `"running"`.
    pub async fn start_value(
        &mut self,
        native_id: impl Into<String>,
        snapshot: Value,
    ) -> Result<(), S::Error> {
        let native_id = native_id.into();
        if self.live(&native_id) {
            return Ok(());
        }
        let run_id = (self.new_id)();
        self.runs.insert(
            native_id,
            SubagentRun {
                run_id: run_id.clone(),
                snapshot: snapshot.clone(),
            },
        );
        self.emit(
            &run_id,
            SubagentEventType::Snapshot,
            [("snapshot", snapshot)],
        )
        .await
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
        if let Value::Object(map) = &mut run.snapshot {
            patch.apply(map);
        }
        let (run_id, snapshot) = (run.run_id.clone(), run.snapshot.clone());
        self.emit(
            &run_id,
            SubagentEventType::Snapshot,
            [("snapshot", snapshot)],
        )
        .await
    }

    /// Like [`snapshot`](Self::snapshot) with an unchecked patch object:
    /// every key is set to its value (`null` included). For removals, use
    /// [`SnapshotPatch::remove_unchecked`].
    pub async fn snapshot_value(&mut self, native_id: &str, patch: Map) -> Result<(), S::Error> {
        self.snapshot(native_id, SnapshotPatch::from_map_unchecked(patch))
            .await
    }

    /// Sends `progress` for the live run of `native_id`. Ignored when there
    /// is no live run.
    pub async fn progress(
        &mut self,
        native_id: &str,
        progress: SubagentProgress,
    ) -> Result<(), S::Error> {
        self.progress_value(native_id, to_json(&progress)).await
    }

    /// Like [`progress`](Self::progress) with an unchecked payload, sent as
    /// given.
    pub async fn progress_value(
        &mut self,
        native_id: &str,
        progress: Value,
    ) -> Result<(), S::Error> {
        let Some(run_id) = self.live_run_id(native_id) else {
            return Ok(());
        };
        self.emit(
            &run_id,
            SubagentEventType::Progress,
            [("progress", progress)],
        )
        .await
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
        self.output_value(native_id, to_json(&update), ids).await
    }

    /// Like [`output`](Self::output) for an untyped update (for example an
    /// ACP `session/update` from the native runtime, or an SDK
    /// `SessionUpdate` through `serde_json::to_value`).
    ///
    /// A valid update is sent as given. One that is not a valid
    /// [`SubagentOutput`] is not forwarded; the run's snapshot is re-sent
    /// with `outputIncomplete: true` instead, every time.
    pub async fn output_value(
        &mut self,
        native_id: &str,
        update: Value,
        ids: OutputIds,
    ) -> Result<(), S::Error> {
        let Some(run_id) = self.live_run_id(native_id) else {
            return Ok(());
        };
        if !is_subagent_output(&update) {
            return self
                .snapshot(native_id, SnapshotPatch::new().output_incomplete())
                .await;
        }
        let payload = [
            Some(("update", update)),
            ids.native_turn_id.map(|id| ("nativeTurnId", id)),
            ids.message_id.map(|id| ("messageId", id)),
        ];
        self.emit(
            &run_id,
            SubagentEventType::Output,
            payload.into_iter().flatten(),
        )
        .await
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
        let native_ids: Vec<String> = self.runs.keys().cloned().collect();
        let patch = SnapshotPatch::new()
            .state(SubagentState::Unknown)
            .output_incomplete()
            .reason(SubagentReason::new(SubagentReasonCode::Disconnected));
        for native_id in native_ids {
            self.snapshot(&native_id, patch.clone()).await?;
        }
        Ok(())
    }

    fn live_run_id(&self, native_id: &str) -> Option<String> {
        self.runs
            .get(native_id)
            .filter(|r| r.live())
            .map(|r| r.run_id.clone())
    }

    async fn emit(
        &mut self,
        run_id: &str,
        kind: SubagentEventType,
        payload: impl IntoIterator<Item = (&'static str, Value)>,
    ) -> Result<(), S::Error> {
        let event = EmittedEvent::build(&self.session_id, run_id, kind, payload);
        self.sink.send(event).await
    }
}
