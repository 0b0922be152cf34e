//! Subagent events: the `_lody/subagents/event` notification (`_ua/…` in the
//! newer spelling, see [`crate::namespace`]).
//!
//! After both peers advertise the `subagentEvents` capability, the agent
//! pushes one [`SubagentEvent`] per change of a child run: a full
//! [`SubagentSnapshot`] (state, capabilities, reason), a [`SubagentProgress`]
//! counter update, or one [`SubagentOutput`] (a message or thought chunk, a
//! tool call or its update, or a plan) in ACP's own `session/update` shape.
//! Every event carries `version: 1`, the root `sessionId` and an opaque
//! `runId` that identifies one execution and never reuses native ids.
//!
//! # The output: ACP's own shape, the contract's guard
//!
//! An output update is ACP's `SessionUpdate` (`agent_client_protocol::v1::schema`)
//! restricted to five variants, so [`SubagentOutput`] has no typed fields
//! of its own: read it as the SDK's type (`SessionUpdate::try_from`) or as
//! JSON, and build it from either. It is a type of its own because the
//! contract's guard has precise rules that the SDK types do not implement,
//! and a parsed output has passed them:
//!
//! - `tool_call` forbids `null` for `status`, `kind`, `locations` and
//!   `content`, while `tool_call_update` allows `null` for every field;
//! - a plan entry's status has no `failed`; a tool call id must not be empty;
//! - an embedded resource needs a string `text` **or** a string `blob`, and
//!   one valid field is enough (`text: 5, blob: "b"` passes);
//! - `_meta` must be absent, `null` or an object: the SDK silently turns a
//!   malformed `_meta` into `None`, so an SDK round trip would hide the error;
//! - annotation priorities are any finite number, resource-link sizes are
//!   safe integers of any sign, location lines non-negative safe integers.
//!
//! Fields the guard does not check (`rawInput`, `rawOutput`, an audio
//! `uri`, …) survive a round trip through [`SubagentOutput`]; a conversion
//! to the SDK's type fails where the SDK is narrower than the contract.
//!
//! Each type's serde implementation is its validator: `from_slice` either
//! yields a value that passes the contract guard or fails. The guards
//! [`is_subagent_event`], [`is_subagent_snapshot`], [`is_subagent_progress`]
//! and [`is_subagent_output`] are built on the same types, and
//! [`crate::violation::check`] lists every violation with its JSON pointer.
//!
//! ```
//! use acp_extension_core::subagent_events::*;
//! use acp_extension_core::validate::check;
//! use serde_json::json;
//!
//! let wire = json!({
//!     "version": 1, "sessionId": "root", "runId": "run-1", "type": "output",
//!     "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}},
//! });
//! let event: SubagentEvent = serde_json::from_value(wire.clone())?;
//! assert_eq!(event.run_id.as_str(), "run-1");
//! assert!(matches!(event.payload, SubagentEventPayload::Output(_)));
//! assert_eq!(serde_json::to_value(&event)?, wire);
//!
//! // A snapshot's `summary` may be absent but never null.
//! let bad = json!({
//!     "version": 1, "sessionId": "root", "runId": "run-1", "type": "snapshot",
//!     "snapshot": {"state": "running", "summary": null,
//!                  "support": {"stream": ["text"], "progress": false, "outputRead": "none", "cancel": false}},
//! });
//! assert!(!is_subagent_event(&bad));
//! let violations = check::<SubagentEvent>(&bad);
//! assert_eq!(violations[0].pointer, "/snapshot/summary");
//! assert_eq!(violations[0].rule.id(), "not-null");
//! # Ok::<_, serde_json::Error>(())
//! ```

use std::borrow::Cow;
use std::fmt;

use agent_client_protocol::v1::schema::SessionUpdate;
#[cfg(feature = "schema")]
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::violation::{Check, Rule, Violation, child};
use crate::wire::WireEnum;
use crate::wire::sift::{Sift, SiftSeed, Sifting, SkipValue};
use crate::wire::{
    EpochSeconds, Key, Map, NonEmptyString, NonNegF64, True, Version1, check_opt, check_req,
};

// ---------------------------------------------------------------------------
// Snapshot
// ---------------------------------------------------------------------------

crate::wire_enum! {
    /// Lifecycle state of a child run. `pending` and `running` are live; the
    /// others are terminal, and `unknown` means observation was lost.
    pub enum SubagentState {
        /// Created, not yet running.
        Pending = "pending",
        /// Running.
        Running = "running",
        /// Finished successfully.
        Completed = "completed",
        /// Finished with an error.
        Failed = "failed",
        /// Stopped on request.
        Cancelled = "cancelled",
        /// Observation was lost; the run's real state is not known.
        Unknown = "unknown",
    }
}

impl SubagentState {
    /// Whether the run is still live (`pending` or `running`): only live
    /// runs accept snapshots, progress and output.
    pub fn is_live(self) -> bool {
        matches!(self, SubagentState::Pending | SubagentState::Running)
    }
}

crate::wire_enum! {
    /// A kind of output a run can stream (`support.stream`).
    pub enum SubagentStream {
        /// Message chunks.
        Text = "text",
        /// Thought chunks.
        Thought = "thought",
        /// Tool calls and their updates.
        Tool = "tool",
        /// Plans.
        Plan = "plan",
    }
}

crate::wire_enum! {
    /// Whether and when a client can read a run's output (`support.outputRead`).
    pub enum OutputRead {
        /// Not readable.
        None = "none",
        /// The tail is readable while the run is live.
        LiveTail = "live_tail",
        /// The tail is readable once the run has finished.
        FinalTail = "final_tail",
    }
}

crate::wire_struct! {
    /// What a run supports (`snapshot.support`); every field is required.
    pub struct SubagentSupport {
        req {
            /// Output kinds the run streams (may be empty; duplicates are allowed).
            stream: Vec<SubagentStream> = "stream",
            /// Whether the run sends progress events.
            progress: bool = "progress",
            /// Whether and when its output can be read.
            output_read: OutputRead = "outputRead",
            /// Whether the run can be cancelled.
            cancel: bool = "cancel",
        }
    }
}

crate::wire_enum! {
    /// Why a run ended or lost observation (`snapshot.reason.code`).
    pub enum SubagentReasonCode {
        /// It failed.
        Error = "error",
        /// It timed out.
        Timeout = "timeout",
        /// It was cancelled.
        Cancelled = "cancelled",
        /// The connection to it was lost (set by the emitter's disconnect).
        Disconnected = "disconnected",
        /// It was lost for another reason.
        Lost = "lost",
    }
}

crate::wire_struct! {
    /// Why a run is in its state (`snapshot.reason`).
    pub struct SubagentReason {
        req {
            /// The machine-readable reason.
            code: SubagentReasonCode = "code",
        }
        opt {
            /// A message for people.
            message: String = "message",
        }
    }
}

crate::wire_struct! {
    /// The full state of one child run (`snapshot` of a `snapshot` event).
    ///
    /// Every snapshot event carries the whole snapshot, never a diff.
    /// `parentRunId` may be `null`; the other optional fields may be absent
    /// but never `null`.
    pub struct SubagentSnapshot {
        req {
            /// Lifecycle state.
            state: SubagentState = "state",
            /// What the run supports.
            support: SubagentSupport = "support",
        }
        opt {
            /// The tool call in the parent that started this run.
            parent_tool_call_id: String = "parentToolCallId",
            /// Display name.
            name: String = "name",
            /// Description of the task.
            description: String = "description",
            /// Model the run uses.
            model_id: String = "modelId",
            /// Short summary of what it did.
            summary: String = "summary",
            /// Start time, Unix epoch seconds (fractions allowed).
            started_at_epoch_seconds: EpochSeconds = "startedAtEpochSeconds",
            /// End time, Unix epoch seconds (fractions allowed).
            ended_at_epoch_seconds: EpochSeconds = "endedAtEpochSeconds",
            /// Some output was not delivered (invalid output or lost observation).
            output_incomplete: True = "outputIncomplete",
            /// Why the run is in its state.
            reason: SubagentReason = "reason",
        }
        nullable {
            /// Run id of the parent run, `null` for a top-level child.
            parent_run_id: String = "parentRunId",
        }
    }
}

crate::wire_struct! {
    /// Progress counters of a run (`progress` of a `progress` event). Every
    /// field may be absent or `null`; numbers are finite and `>= 0`.
    /// Progress never replaces usage accounting.
    pub struct SubagentProgress {
        nullable {
            /// Short summary of the current activity.
            summary: String = "summary",
            /// Name of the last tool used.
            last_tool_name: String = "lastToolName",
            /// Names of the tools used so far.
            tools_used: Vec<String> = "toolsUsed",
            /// Elapsed time in milliseconds.
            duration_ms: NonNegF64 = "durationMs",
            /// Turns so far.
            turn_count: NonNegF64 = "turnCount",
            /// Tool calls so far.
            tool_call_count: NonNegF64 = "toolCallCount",
            /// Errors so far.
            error_count: NonNegF64 = "errorCount",
            /// Tokens used so far.
            total_tokens: NonNegF64 = "totalTokens",
            /// Tokens in the context window now.
            context_tokens: NonNegF64 = "contextTokens",
            /// Size of the context window.
            context_window_tokens: NonNegF64 = "contextWindowTokens",
            /// Context usage in percent (values over 100 are allowed).
            context_usage_percent: NonNegF64 = "contextUsagePercent",
        }
    }
}

// ---------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------

mod output;

pub(crate) use output::{OutputUpdate, SubagentContentBlock};

/// One output update of a run: a message or thought chunk, a tool call or
/// its update, or a plan, in ACP's own `session/update` shape
/// (`sessionUpdate` names the variant).
///
/// The value has passed the contract's guard for outputs, whose rules
/// differ from the SDK's types (see the [module docs](self)). Read it as
/// JSON (`serde_json::to_value`) or as the SDK's type
/// (`SessionUpdate::try_from`), and build one from either
/// (`serde_json::from_value`, `SubagentOutput::try_from`).
///
/// ```
/// use acp_extension_core::subagent_events::SubagentOutput;
/// use agent_client_protocol::v1::schema::{ContentBlock, ContentChunk, SessionUpdate};
///
/// let chunk: SubagentOutput = serde_json::from_value(serde_json::json!({
///     "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}))?;
/// assert_eq!(chunk.tag(), "agent_message_chunk");
/// let sdk = SessionUpdate::try_from(chunk.clone())?;
/// assert!(matches!(sdk, SessionUpdate::AgentMessageChunk(_)));
/// let built = SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from("hi")));
/// assert_eq!(SubagentOutput::try_from(built)?, chunk);
///
/// // Only the five output variants are outputs.
/// let usage = serde_json::json!({"sessionUpdate": "usage_update", "used": 1, "size": 2});
/// assert!(serde_json::from_value::<SubagentOutput>(usage).is_err());
/// # Ok::<_, serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SubagentOutput(pub(crate) OutputUpdate);

impl SubagentOutput {
    /// The discriminating key.
    pub const TAG: &'static str = OutputUpdate::TAG;

    /// Every tag value, in contract order.
    pub const TAGS: &'static [&'static str] = OutputUpdate::TAGS;

    /// This update's `sessionUpdate` value.
    pub fn tag(&self) -> &'static str {
        self.0.tag()
    }
}

impl Serialize for SubagentOutput {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for SubagentOutput {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        OutputUpdate::deserialize(d).map(Self)
    }
}

impl Sift for SubagentOutput {
    fn sift<'de, D: Deserializer<'de>>(d: D, cx: Sifting<'_>) -> Result<(), D::Error> {
        OutputUpdate::sift(d, cx)
    }
}

impl Check for SubagentOutput {
    const EXPECTED: &'static str = OutputUpdate::EXPECTED;
    fn check(v: &Value, at: &str, out: &mut Vec<Violation>) {
        OutputUpdate::check(v, at, out)
    }
}

#[cfg(feature = "schema")]
impl JsonSchema for SubagentOutput {
    fn schema_name() -> Cow<'static, str> {
        OutputUpdate::schema_name()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        OutputUpdate::json_schema(g)
    }
}

impl TryFrom<SubagentOutput> for SessionUpdate {
    type Error = serde_json::Error;

    /// Converts to the ACP SDK's type through JSON. Fails where the SDK is
    /// narrower than the contract (a `line` above `u32::MAX`, a resource
    /// whose `text` is not a string, …).
    fn try_from(output: SubagentOutput) -> Result<Self, Self::Error> {
        serde_json::from_value(serde_json::to_value(&output)?)
    }
}

impl TryFrom<SessionUpdate> for SubagentOutput {
    type Error = serde_json::Error;

    /// Converts from the ACP SDK's type through JSON. Fails for variants a
    /// subagent cannot forward (`user_message_chunk`, `usage_update`, …) and
    /// for content the contract does not allow (an empty tool call id, a
    /// `session` tool-call content item, …).
    fn try_from(update: SessionUpdate) -> Result<Self, Self::Error> {
        serde_json::from_value(serde_json::to_value(&update)?)
    }
}

// ---------------------------------------------------------------------------
// The event envelope
// ---------------------------------------------------------------------------

crate::wire_enum! {
    /// The `type` of a subagent event.
    pub enum SubagentEventType {
        /// A full snapshot (`snapshot` key).
        Snapshot = "snapshot",
        /// A progress update (`progress` key).
        Progress = "progress",
        /// One output update (`update` key, plus `nativeTurnId`/`messageId`).
        Output = "output",
    }
}

impl SubagentEventType {
    /// Whether `key` is one of this type's payload keys.
    fn owns(self, key: &str) -> bool {
        match self {
            Self::Snapshot => key == "snapshot",
            Self::Progress => key == "progress",
            Self::Output => matches!(key, "update" | "nativeTurnId" | "messageId"),
        }
    }
}

/// The payload of an `output` event: the update plus optional native ids.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SubagentOutputPayload {
    /// The forwarded update (`update`).
    pub update: SubagentOutput,
    /// The native turn the update belongs to (`nativeTurnId`: absent or a
    /// string, never `null`; may be empty).
    pub native_turn_id: Option<String>,
    /// The message the update belongs to (`messageId`: absent or a string,
    /// never `null`; may be empty).
    pub message_id: Option<String>,
}

impl SubagentOutputPayload {
    /// An output payload without native ids.
    pub fn new(update: impl Into<SubagentOutput>) -> Self {
        Self {
            update: update.into(),
            native_turn_id: None,
            message_id: None,
        }
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

/// What a subagent event carries, selected by its `type`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[allow(clippy::large_enum_variant)] // parsed in place; boxing costs an allocation per event
pub enum SubagentEventPayload {
    /// `type: "snapshot"`.
    Snapshot(SubagentSnapshot),
    /// `type: "progress"`.
    Progress(SubagentProgress),
    /// `type: "output"`.
    Output(SubagentOutputPayload),
}

impl SubagentEventPayload {
    /// The event `type` this payload is sent with.
    pub fn event_type(&self) -> SubagentEventType {
        match self {
            Self::Snapshot(_) => SubagentEventType::Snapshot,
            Self::Progress(_) => SubagentEventType::Progress,
            Self::Output(_) => SubagentEventType::Output,
        }
    }
}

impl From<SubagentSnapshot> for SubagentEventPayload {
    fn from(v: SubagentSnapshot) -> Self {
        Self::Snapshot(v)
    }
}

impl From<SubagentProgress> for SubagentEventPayload {
    fn from(v: SubagentProgress) -> Self {
        Self::Progress(v)
    }
}

impl From<SubagentOutputPayload> for SubagentEventPayload {
    fn from(v: SubagentOutputPayload) -> Self {
        Self::Output(v)
    }
}

impl From<SubagentOutput> for SubagentEventPayload {
    fn from(v: SubagentOutput) -> Self {
        Self::Output(SubagentOutputPayload::new(v))
    }
}

/// The params of `_lody/subagents/event` (`_ua/subagents/event`).
///
/// On the wire the envelope keys `version`, `sessionId`, `runId` and `type`
/// sit beside the payload key (`snapshot`, `progress` or `update`), in that
/// order when written. Keys that do not belong to the event's type (say a
/// stray `progress` on a snapshot event) are not checked and are kept in
/// `extra`.
///
/// # Example
///
/// ```
/// use acp_extension_core::subagent_events::{SubagentEvent, SubagentEventType};
/// use serde_json::json;
///
/// let event: SubagentEvent = serde_json::from_value(json!({"version": 1, "sessionId": "s",
///     "runId": "r", "type": "progress", "progress": {"toolCallCount": 3}, "x-native": 1}))?;
/// assert_eq!(event.payload.event_type(), SubagentEventType::Progress);
/// assert_eq!(event.extra["x-native"], 1); // kept, and written back
/// assert_eq!(serde_json::to_value(&event)?["x-native"], 1);
/// // A missing payload key is an error, not an empty event.
/// assert!(serde_json::from_value::<SubagentEvent>(json!({"version": 1, "sessionId": "s",
///     "runId": "r", "type": "snapshot"})).is_err());
/// # Ok::<_, serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SubagentEvent {
    /// Always `1`.
    pub version: Version1,
    /// The root ACP session the run belongs to (non-empty).
    pub session_id: NonEmptyString,
    /// Opaque id of one execution (non-empty).
    pub run_id: NonEmptyString,
    /// The payload, selected by `type`.
    pub payload: SubagentEventPayload,
    /// Keys the contract does not define for this event's type.
    pub extra: Map,
}

impl SubagentEvent {
    /// Envelope keys, always written first.
    pub(crate) const ENVELOPE_KEYS: &'static [&'static str] =
        &["version", "sessionId", "runId", "type"];

    /// An event of `session_id` / `run_id` carrying `payload`.
    pub fn new(
        session_id: NonEmptyString,
        run_id: NonEmptyString,
        payload: impl Into<SubagentEventPayload>,
    ) -> Self {
        Self {
            version: Version1,
            session_id,
            run_id,
            payload: payload.into(),
            extra: Map::new(),
        }
    }

    /// The snapshot, if this is a snapshot event.
    pub fn snapshot(&self) -> Option<&SubagentSnapshot> {
        match &self.payload {
            SubagentEventPayload::Snapshot(s) => Some(s),
            _ => None,
        }
    }

    /// The progress, if this is a progress event.
    pub fn progress(&self) -> Option<&SubagentProgress> {
        match &self.payload {
            SubagentEventPayload::Progress(p) => Some(p),
            _ => None,
        }
    }

    /// The output payload, if this is an output event.
    pub fn output(&self) -> Option<&SubagentOutputPayload> {
        match &self.payload {
            SubagentEventPayload::Output(o) => Some(o),
            _ => None,
        }
    }
}

impl Serialize for SubagentEvent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let kind = self.payload.event_type();
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("version", &self.version)?;
        m.serialize_entry("sessionId", &self.session_id)?;
        m.serialize_entry("runId", &self.run_id)?;
        m.serialize_entry("type", &kind)?;
        match &self.payload {
            SubagentEventPayload::Snapshot(v) => m.serialize_entry("snapshot", v)?,
            SubagentEventPayload::Progress(v) => m.serialize_entry("progress", v)?,
            SubagentEventPayload::Output(o) => {
                m.serialize_entry("update", &o.update)?;
                if let Some(id) = &o.native_turn_id {
                    m.serialize_entry("nativeTurnId", id)?;
                }
                if let Some(id) = &o.message_id {
                    m.serialize_entry("messageId", id)?;
                }
            }
        }
        for (k, v) in &self.extra {
            if !Self::ENVELOPE_KEYS.contains(&k.as_str()) && !kind.owns(k) {
                m.serialize_entry(k, v)?;
            }
        }
        m.end()
    }
}

/// The payload parts read so far.
#[derive(Default)]
struct PayloadParts {
    snapshot: Option<SubagentSnapshot>,
    progress: Option<SubagentProgress>,
    update: Option<SubagentOutput>,
    native_turn_id: Option<String>,
    message_id: Option<String>,
}

impl PayloadParts {
    /// Reads the value of payload key `key` from `d`.
    fn read<'de, D: Deserializer<'de>>(&mut self, key: &str, d: D) -> Result<(), D::Error> {
        match key {
            "snapshot" => self.snapshot = Some(SubagentSnapshot::deserialize(d)?),
            "progress" => self.progress = Some(SubagentProgress::deserialize(d)?),
            "update" => self.update = Some(SubagentOutput::deserialize(d)?),
            "nativeTurnId" => self.native_turn_id = Some(String::deserialize(d)?),
            "messageId" => self.message_id = Some(String::deserialize(d)?),
            _ => {
                de::IgnoredAny::deserialize(d)?;
            }
        }
        Ok(())
    }

    fn finish<E: de::Error>(self, kind: SubagentEventType) -> Result<SubagentEventPayload, E> {
        Ok(match kind {
            SubagentEventType::Snapshot => SubagentEventPayload::Snapshot(
                self.snapshot.ok_or_else(|| E::missing_field("snapshot"))?,
            ),
            SubagentEventType::Progress => SubagentEventPayload::Progress(
                self.progress.ok_or_else(|| E::missing_field("progress"))?,
            ),
            SubagentEventType::Output => SubagentEventPayload::Output(SubagentOutputPayload {
                update: self.update.ok_or_else(|| E::missing_field("update"))?,
                native_turn_id: self.native_turn_id,
                message_id: self.message_id,
            }),
        })
    }
}

/// Reads one map value into [`PayloadParts`] without buffering it.
struct PartSeed<'a> {
    key: &'a str,
    parts: &'a mut PayloadParts,
}

impl<'de> DeserializeSeed<'de> for PartSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        self.parts.read(self.key, d)
    }
}

const PAYLOAD_KEYS: &[&str] = &[
    "snapshot",
    "progress",
    "update",
    "nativeTurnId",
    "messageId",
];

impl<'de> Deserialize<'de> for SubagentEvent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SubagentEvent;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a SubagentEvent object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut version = None;
                let mut session_id = None;
                let mut run_id = None;
                let mut kind: Option<SubagentEventType> = None;
                let mut parts = PayloadParts::default();
                // Payload keys seen before `type`; parsed once it is known.
                let mut pending: Vec<(String, Value)> = Vec::new();
                let mut extra = Map::new();
                while let Some(key) = map.next_key::<Key<'de>>()? {
                    let k = &*key.0;
                    match k {
                        "version" => version = Some(map.next_value::<Version1>()?),
                        "sessionId" => session_id = Some(map.next_value::<NonEmptyString>()?),
                        "runId" => run_id = Some(map.next_value::<NonEmptyString>()?),
                        // A second `type` would place the payload keys read
                        // under the first one wrongly: refused.
                        "type" if kind.is_some() => return Err(de::Error::duplicate_field("type")),
                        "type" => kind = Some(map.next_value::<SubagentEventType>()?),
                        _ if PAYLOAD_KEYS.contains(&k) => match kind {
                            Some(t) if t.owns(k) => map.next_value_seed(PartSeed {
                                key: k,
                                parts: &mut parts,
                            })?,
                            Some(_) => {
                                let v: Value = map.next_value()?;
                                extra.insert(key.0.into_owned(), v);
                            }
                            None => {
                                let v: Value = map.next_value()?;
                                pending.push((key.0.into_owned(), v));
                            }
                        },
                        _ => {
                            let v: Value = map.next_value()?;
                            extra.insert(key.0.into_owned(), v);
                        }
                    }
                }
                let version = version.ok_or_else(|| de::Error::missing_field("version"))?;
                let session_id = session_id.ok_or_else(|| de::Error::missing_field("sessionId"))?;
                let run_id = run_id.ok_or_else(|| de::Error::missing_field("runId"))?;
                let kind = kind.ok_or_else(|| de::Error::missing_field("type"))?;
                for (k, v) in pending {
                    if kind.owns(&k) {
                        parts.read(&k, v).map_err(de::Error::custom)?;
                    } else {
                        extra.insert(k, v);
                    }
                }
                Ok(SubagentEvent {
                    version,
                    session_id,
                    run_id,
                    payload: parts.finish(kind)?,
                    extra,
                })
            }
        }
        d.deserialize_map(V)
    }
}

/// The envelope's keys, then the payload's.
const KEYS: usize = SubagentEvent::ENVELOPE_KEYS.len() + PAYLOAD_KEYS.len();

/// Where the keys of a subagent event the sift accepted end in the text
/// it read: the facts' values follow them, so a follower finds the facts
/// without walking the text again.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SiftedKeys {
    /// The event's `type`.
    pub(crate) kind: SubagentEventType,
    /// Which of the envelope's and the payload's keys came (each at most
    /// once: the sift gives up on a second).
    seen: [bool; KEYS],
    /// The address just past each key's text (its closing quote), when
    /// it was read from the text unescaped.
    ends: [Option<usize>; KEYS],
}

/// One of the envelope's and the payload's keys, by its place among them:
/// found once, when the program is compiled ([`EventKey::of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EventKey(usize);

impl EventKey {
    /// The envelope or payload key `name`; any other name does not compile
    /// where the key is a constant.
    #[expect(
        clippy::panic,
        reason = "evaluated when compiled: a name not in the tables fails the build"
    )]
    pub(crate) const fn of(name: &str) -> Self {
        let mut i = 0;
        while i < KEYS {
            let key = if i < SubagentEvent::ENVELOPE_KEYS.len() {
                SubagentEvent::ENVELOPE_KEYS[i]
            } else {
                PAYLOAD_KEYS[i - SubagentEvent::ENVELOPE_KEYS.len()]
            };
            if key.len() == name.len() {
                let (a, b) = (key.as_bytes(), name.as_bytes());
                let mut j = 0;
                while j < a.len() && a[j] == b[j] {
                    j += 1;
                }
                if j == a.len() {
                    return EventKey(i);
                }
            }
            i += 1;
        }
        panic!("not a subagent event's envelope or payload key")
    }
}

/// Where one key of a [`SiftedKeys`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyEnd {
    /// The event has no such key.
    Absent,
    /// The address just past its text, the closing quote.
    At(usize),
    /// It has an escape: its place is not known.
    Escaped,
}

impl SiftedKeys {
    /// Where `key` ends.
    pub(crate) fn end(&self, EventKey(i): EventKey) -> KeyEnd {
        match (self.seen[i], self.ends[i]) {
            (false, _) => KeyEnd::Absent,
            (true, Some(end)) => KeyEnd::At(end),
            (true, None) => KeyEnd::Escaped,
        }
    }
}

impl Sift for SubagentEvent {
    fn sift<'de, D: Deserializer<'de>>(d: D, cx: Sifting<'_>) -> Result<(), D::Error> {
        Self::sift_keys(d, cx).map(|_| ())
    }
}

impl SubagentEvent {
    /// [`Sift::sift`], giving where the keys of the event it accepted end
    /// in the text read.
    pub(crate) fn sift_keys<'de, D: Deserializer<'de>>(
        d: D,
        cx: Sifting<'_>,
    ) -> Result<SiftedKeys, D::Error> {
        struct V<'c>(Sifting<'c>);
        impl<'de> Visitor<'de> for V<'_> {
            type Value = SiftedKeys;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a SubagentEvent object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SiftedKeys, A::Error> {
                let b = self.0;
                // Keys seen: the envelope, then the payload keys.
                let mut seen = [false; KEYS];
                // Where each ended in the text read, when borrowed from it.
                let mut ends = [None; KEYS];
                let mut kind: Option<SubagentEventType> = None;
                while let Some(key) = map.next_key::<Key<'de>>()? {
                    let k = &*key.0;
                    let Some(i) = SubagentEvent::ENVELOPE_KEYS
                        .iter()
                        .chain(PAYLOAD_KEYS)
                        .position(|w| *w == k)
                    else {
                        map.next_value_seed(SkipValue)?;
                        continue;
                    };
                    if std::mem::replace(&mut seen[i], true) {
                        return Err(b.fallback());
                    }
                    if let Cow::Borrowed(text) = key.0 {
                        ends[i] = Some(text.as_ptr() as usize + text.len());
                    }
                    match k {
                        "version" => map.next_value_seed(SiftSeed::<Version1>::new(b))?,
                        "sessionId" | "runId" => {
                            map.next_value_seed(SiftSeed::<NonEmptyString>::new(b))?
                        }
                        // A second `type` would place the payload keys read
                        // under the first one wrongly: refused.
                        "type" if kind.is_some() => return Err(de::Error::duplicate_field("type")),
                        "type" => kind = Some(map.next_value::<SubagentEventType>()?),
                        _ => match kind {
                            Some(t) if t.owns(k) => match k {
                                "snapshot" => {
                                    map.next_value_seed(SiftSeed::<SubagentSnapshot>::new(b))?
                                }
                                "progress" => {
                                    map.next_value_seed(SiftSeed::<SubagentProgress>::new(b))?
                                }
                                "update" => {
                                    map.next_value_seed(SiftSeed::<SubagentOutput>::new(b))?
                                }
                                _ => map.next_value_seed(SiftSeed::<String>::new(b))?,
                            },
                            Some(_) => map.next_value_seed(SkipValue)?,
                            // The typed parse buffers payload keys seen
                            // before `type`.
                            None => return Err(b.fallback()),
                        },
                    }
                }
                let [
                    version,
                    session_id,
                    run_id,
                    _,
                    snapshot,
                    progress,
                    update,
                    ..,
                ] = seen;
                let missing = if !version {
                    "version"
                } else if !session_id {
                    "sessionId"
                } else if !run_id {
                    "runId"
                } else {
                    match kind {
                        None => "type",
                        Some(SubagentEventType::Snapshot) if !snapshot => "snapshot",
                        Some(SubagentEventType::Progress) if !progress => "progress",
                        Some(SubagentEventType::Output) if !update => "update",
                        Some(kind) => return Ok(SiftedKeys { kind, seen, ends }),
                    }
                };
                Err(de::Error::missing_field(missing))
            }
        }
        d.deserialize_map(V(cx))
    }
}

impl Check for SubagentEvent {
    const EXPECTED: &'static str = "an object";
    fn check(v: &Value, at: &str, out: &mut Vec<Violation>) {
        let Some(obj) = v.as_object() else {
            out.push(Violation::new(at, Rule::type_of(Self::EXPECTED, v)));
            return;
        };
        check_req::<Version1>(obj, "version", at, out);
        check_req::<NonEmptyString>(obj, "sessionId", at, out);
        check_req::<NonEmptyString>(obj, "runId", at, out);
        match obj.get("type") {
            None => out.push(Violation::new(
                child(at, "type"),
                Rule::Required {
                    expected: "one of \"snapshot\", \"progress\", \"output\"",
                },
            )),
            Some(t) => match t.as_str().and_then(SubagentEventType::from_wire) {
                Some(SubagentEventType::Snapshot) => {
                    check_req::<SubagentSnapshot>(obj, "snapshot", at, out)
                }
                Some(SubagentEventType::Progress) => {
                    check_req::<SubagentProgress>(obj, "progress", at, out)
                }
                Some(SubagentEventType::Output) => {
                    check_req::<SubagentOutput>(obj, "update", at, out);
                    check_opt::<String>(obj, "nativeTurnId", at, out);
                    check_opt::<String>(obj, "messageId", at, out);
                }
                None => out.push(Violation::new(
                    child(at, "type"),
                    Rule::OneOf(SubagentEventType::ALL),
                )),
            },
        }
    }
}

#[cfg(feature = "schema")]
impl JsonSchema for SubagentEvent {
    fn schema_name() -> Cow<'static, str> {
        "SubagentEvent".into()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let branch = |tag: &str, key: &str, props: Vec<(&str, Schema)>| -> Value {
            let mut properties = Map::new();
            properties.insert("type".into(), serde_json::json!({ "const": tag }));
            for (k, schema) in props {
                properties.insert(k.into(), schema.into());
            }
            serde_json::json!({ "properties": properties, "required": ["type", key] })
        };
        let snapshot = branch(
            "snapshot",
            "snapshot",
            vec![("snapshot", g.subschema_for::<SubagentSnapshot>())],
        );
        let progress = branch(
            "progress",
            "progress",
            vec![("progress", g.subschema_for::<SubagentProgress>())],
        );
        let output = branch(
            "output",
            "update",
            vec![
                ("update", g.subschema_for::<SubagentOutput>()),
                ("nativeTurnId", g.subschema_for::<String>()),
                ("messageId", g.subschema_for::<String>()),
            ],
        );
        json_schema!({
            "description": "Params of `_lody/subagents/event` (`_ua/subagents/event`).",
            "type": "object",
            "properties": {
                "version": g.subschema_for::<Version1>(),
                "sessionId": g.subschema_for::<NonEmptyString>(),
                "runId": g.subschema_for::<NonEmptyString>(),
                "type": g.subschema_for::<SubagentEventType>(),
            },
            "required": ["version", "sessionId", "runId", "type"],
            "oneOf": [snapshot, progress, output],
        })
    }
}

// ---------------------------------------------------------------------------
// Guards
// ---------------------------------------------------------------------------

/// Whether `v` is a valid subagent event (the params of
/// `_lody/subagents/event`). Same verdict as parsing a [`SubagentEvent`].
pub fn is_subagent_event(v: &Value) -> bool {
    SubagentEvent::deserialize(v).is_ok()
}

/// Whether `v` is a valid [`SubagentSnapshot`].
pub fn is_subagent_snapshot(v: &Value) -> bool {
    SubagentSnapshot::deserialize(v).is_ok()
}

/// Whether `v` is a valid [`SubagentProgress`].
pub fn is_subagent_progress(v: &Value) -> bool {
    SubagentProgress::deserialize(v).is_ok()
}

/// Whether `v` is an output update a subagent may forward ([`SubagentOutput`]).
pub fn is_subagent_output(v: &Value) -> bool {
    SubagentOutput::deserialize(v).is_ok()
}
