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
//! # A closed boundary of our own
//!
//! The output types here ([`SubagentContentBlock`], [`SubagentToolCall`],
//! [`SubagentToolCallUpdate`], [`SubagentPlan`], …) describe the same JSON
//! as the ACP SDK's `ContentBlock`, `ToolCall`, `ToolCallUpdate` and `Plan`
//! (`agent_client_protocol::v1::schema`); their `Subagent` prefix keeps the
//! two apart under glob imports. They are declared again, as the contract's
//! *closed* boundary, because the contract's guard has precise rules that
//! the SDK types do not implement:
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
//! `uri`, …) are kept in `extra` and survive a round trip. To work with the
//! SDK's types, convert with `SessionUpdate::try_from(output)` and
//! `SubagentOutput::try_from(update)` (both through JSON).
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
use std::cell::Cell;
use std::fmt;

use agent_client_protocol::v1::schema::SessionUpdate;
#[cfg(feature = "schema")]
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::violation::{Check, Rule, Violation, child};
#[cfg(feature = "schema")]
use crate::wire::nullable_schema;
use crate::wire::sift::{Sift, SiftFields, SiftSeed, SkipValue, fallback};
use crate::wire::{
    EpochSeconds, FiniteF64, Key, Map, MaybeUndefined, NonEmptyString, NonNegF64, SafeInt,
    SafeUint, True, Version1, check_nullable, check_opt, check_req, finish_variant, read_until_tag,
};
use crate::wire::{WireEnum, WireObject};

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
// Content blocks
// ---------------------------------------------------------------------------

crate::wire_enum! {
    /// Who a content block is meant for (`annotations.audience` items).
    pub enum SubagentRole {
        /// The user.
        User = "user",
        /// The assistant.
        Assistant = "assistant",
    }
}

crate::wire_struct! {
    /// Display hints of a content block (ACP `Annotations`).
    pub struct SubagentAnnotations {
        nullable {
            /// Intended audience.
            audience: Vec<SubagentRole> = "audience",
            /// Last modification time, as a string.
            last_modified: String = "lastModified",
            /// Relative priority: any finite number.
            priority: FiniteF64 = "priority",
            /// Extension metadata: absent, `null` or an object.
            meta: Map = "_meta",
        }
    }
}

crate::wire_struct! {
    /// A text content block (`type: "text"`); the text may be empty.
    pub struct SubagentTextContent {
        req {
            /// The text.
            text: String = "text",
        }
        nullable {
            /// Display hints.
            annotations: SubagentAnnotations = "annotations",
            /// Extension metadata.
            meta: Map = "_meta",
        }
    }
}

crate::wire_struct! {
    /// An image content block (`type: "image"`).
    pub struct SubagentImageContent {
        req {
            /// Base64 image data.
            data: String = "data",
            /// MIME type such as `image/png`.
            mime_type: String = "mimeType",
        }
        nullable {
            /// Where the image comes from.
            uri: String = "uri",
            /// Display hints.
            annotations: SubagentAnnotations = "annotations",
            /// Extension metadata.
            meta: Map = "_meta",
        }
    }
}

crate::wire_struct! {
    /// An audio content block (`type: "audio"`). Other keys (even a `uri`)
    /// are not checked and stay in `extra`.
    pub struct SubagentAudioContent {
        req {
            /// Base64 audio data.
            data: String = "data",
            /// MIME type such as `audio/wav`.
            mime_type: String = "mimeType",
        }
        nullable {
            /// Display hints.
            annotations: SubagentAnnotations = "annotations",
            /// Extension metadata.
            meta: Map = "_meta",
        }
    }
}

crate::wire_struct! {
    /// A link to a resource (`type: "resource_link"`).
    pub struct SubagentResourceLink {
        req {
            /// The resource URI.
            uri: String = "uri",
            /// The resource name.
            name: String = "name",
        }
        nullable {
            /// Description.
            description: String = "description",
            /// MIME type.
            mime_type: String = "mimeType",
            /// Title.
            title: String = "title",
            /// Size in bytes: a safe integer of any sign.
            size: SafeInt = "size",
            /// Display hints.
            annotations: SubagentAnnotations = "annotations",
            /// Extension metadata.
            meta: Map = "_meta",
        }
    }
}

crate::wire_struct! {
    /// A resource embedded in the message (`type: "resource"`).
    pub struct SubagentEmbeddedResource {
        req {
            /// The resource contents.
            resource: SubagentEmbeddedResourceContents = "resource",
        }
        nullable {
            /// Display hints.
            annotations: SubagentAnnotations = "annotations",
            /// Extension metadata.
            meta: Map = "_meta",
        }
    }
}

crate::wire_union! {
    /// One item of content (ACP `ContentBlock`), discriminated by `type`.
    pub enum SubagentContentBlock tag "type" {
        /// Text.
        Text(SubagentTextContent) = "text",
        /// An image.
        Image(SubagentImageContent) = "image",
        /// Audio.
        Audio(SubagentAudioContent) = "audio",
        /// A link to a resource.
        ResourceLink(SubagentResourceLink) = "resource_link",
        /// An embedded resource.
        Resource(SubagentEmbeddedResource) = "resource",
    }
}

/// `From` conversions into a union whose variants wrap distinct types.
macro_rules! union_from {
    ($name:ident { $($var:ident($ty:ty)),* $(,)? }) => {
        $(
            impl From<$ty> for $name {
                fn from(v: $ty) -> Self {
                    Self::$var(v)
                }
            }
        )*
    };
}

union_from!(SubagentContentBlock {
    Text(SubagentTextContent),
    Image(SubagentImageContent),
    Audio(SubagentAudioContent),
    ResourceLink(SubagentResourceLink),
    Resource(SubagentEmbeddedResource),
});

/// Text is the common case: a `&str` or `String` is a text block, so a
/// chunk is `SubagentContentChunk::new("Looked around.")`.
///
/// ```
/// use acp_extension_core::subagent_events::{SubagentContentChunk, SubagentOutput};
///
/// let chunk = SubagentOutput::AgentMessageChunk(SubagentContentChunk::new("Looked around."));
/// assert_eq!(
///     serde_json::to_value(&chunk)?,
///     serde_json::json!({"sessionUpdate": "agent_message_chunk",
///         "content": {"type": "text", "text": "Looked around."}})
/// );
/// # Ok::<_, serde_json::Error>(())
/// ```
impl From<&str> for SubagentContentBlock {
    fn from(text: &str) -> Self {
        Self::Text(SubagentTextContent::new(text))
    }
}

impl From<String> for SubagentContentBlock {
    fn from(text: String) -> Self {
        Self::Text(SubagentTextContent::new(text))
    }
}

/// The contents of an embedded resource (`resource` of a `resource` block).
///
/// The contract needs a string `text` **or** a string `blob`; one valid
/// field is enough, so `{"text": 5, "blob": "b"}` passes. A field that is
/// not a string is not typed: it stays in `extra` (so it survives a round
/// trip) and the corresponding field is `None`. At least one of [`text`]
/// and [`blob`] is therefore `Some` in every parsed value.
///
/// This type is written by hand rather than with `wire_struct!` because of
/// that cross-field rule.
///
/// [`text`]: Self::text
/// [`blob`]: Self::blob
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SubagentEmbeddedResourceContents {
    /// The resource URI.
    pub uri: String,
    /// MIME type: absent, `null` or a string.
    pub mime_type: MaybeUndefined<String>,
    /// Text contents, when `text` is a string.
    pub text: Option<String>,
    /// Base64 binary contents, when `blob` is a string.
    pub blob: Option<String>,
    /// Extension metadata: absent, `null` or an object.
    pub meta: MaybeUndefined<Map>,
    /// Keys the contract does not check, including a non-string `text` or
    /// `blob` next to a valid one.
    pub extra: Map,
}

impl WireObject for SubagentEmbeddedResourceContents {
    const KEYS: &'static [&'static str] = &["uri", "mimeType", "text", "blob", "_meta"];
}

impl SubagentEmbeddedResourceContents {
    /// Text contents at `uri`.
    pub fn new_text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        Self::with(uri.into(), Some(text.into()), None)
    }

    /// Binary (base64) contents at `uri`.
    pub fn new_blob(uri: impl Into<String>, blob: impl Into<String>) -> Self {
        Self::with(uri.into(), None, Some(blob.into()))
    }

    fn with(uri: String, text: Option<String>, blob: Option<String>) -> Self {
        Self {
            uri,
            mime_type: MaybeUndefined::Undefined,
            text,
            blob,
            meta: MaybeUndefined::Undefined,
            extra: Map::new(),
        }
    }

    /// Sets `mimeType`; `None` writes an explicit `null`.
    #[must_use]
    pub fn mime_type(mut self, value: Option<String>) -> Self {
        self.mime_type = value.map_or(MaybeUndefined::Null, MaybeUndefined::Value);
        self
    }

    /// Sets `_meta`; `None` writes an explicit `null`.
    #[must_use]
    pub fn meta(mut self, value: Option<Map>) -> Self {
        self.meta = value.map_or(MaybeUndefined::Null, MaybeUndefined::Value);
        self
    }

    fn text_or_blob_rule() -> Rule {
        Rule::Relation {
            id: "resource-text-or-blob",
            message: "must have a string `text` or a string `blob`".into(),
        }
    }
}

fn maybe_from_option<T>(v: Option<T>) -> MaybeUndefined<T> {
    v.map_or(MaybeUndefined::Null, MaybeUndefined::Value)
}

fn serialize_maybe<M: SerializeMap, T: Serialize>(
    m: &mut M,
    key: &str,
    v: &MaybeUndefined<T>,
) -> Result<(), M::Error> {
    match v {
        MaybeUndefined::Undefined => Ok(()),
        MaybeUndefined::Null => m.serialize_entry(key, &()),
        MaybeUndefined::Value(v) => m.serialize_entry(key, v),
    }
}

impl Serialize for SubagentEmbeddedResourceContents {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let stringy = |k: &str| self.extra.get(k).is_some_and(Value::is_string);
        if self.text.is_none() && self.blob.is_none() && !stringy("text") && !stringy("blob") {
            return Err(serde::ser::Error::custom(
                "embedded resource contents need `text` or `blob`",
            ));
        }
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("uri", &self.uri)?;
        serialize_maybe(&mut m, "mimeType", &self.mime_type)?;
        for (key, field) in [("text", &self.text), ("blob", &self.blob)] {
            match field {
                Some(v) => m.serialize_entry(key, v)?,
                None => {
                    if let Some(v) = self.extra.get(key) {
                        m.serialize_entry(key, v)?;
                    }
                }
            }
        }
        serialize_maybe(&mut m, "_meta", &self.meta)?;
        for (k, v) in &self.extra {
            if !Self::KEYS.contains(&k.as_str()) {
                m.serialize_entry(k, v)?;
            }
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for SubagentEmbeddedResourceContents {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SubagentEmbeddedResourceContents;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a SubagentEmbeddedResourceContents object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut uri = None;
                let mut mime_type = MaybeUndefined::Undefined;
                let mut text = None;
                let mut blob = None;
                let mut meta = MaybeUndefined::Undefined;
                let mut extra = Map::new();
                while let Some(key) = map.next_key::<Key<'de>>()? {
                    match &*key.0 {
                        "uri" => uri = Some(map.next_value::<String>()?),
                        "mimeType" => {
                            mime_type = maybe_from_option(map.next_value::<Option<String>>()?)
                        }
                        "_meta" => meta = maybe_from_option(map.next_value::<Option<Map>>()?),
                        k @ ("text" | "blob") => {
                            let slot = if k == "text" { &mut text } else { &mut blob };
                            match map.next_value::<Value>()? {
                                Value::String(s) => {
                                    *slot = Some(s);
                                    extra.shift_remove(k);
                                }
                                other => {
                                    *slot = None;
                                    extra.insert(k.to_owned(), other);
                                }
                            }
                        }
                        _ => {
                            let v: Value = map.next_value()?;
                            extra.insert(key.0.into_owned(), v);
                        }
                    }
                }
                let uri = uri.ok_or_else(|| de::Error::missing_field("uri"))?;
                if text.is_none() && blob.is_none() {
                    return Err(de::Error::custom(format_args!(
                        "resource: {}",
                        SubagentEmbeddedResourceContents::text_or_blob_rule()
                    )));
                }
                Ok(SubagentEmbeddedResourceContents {
                    uri,
                    mime_type,
                    text,
                    blob,
                    meta,
                    extra,
                })
            }
        }
        d.deserialize_map(V)
    }
}

impl Sift for SubagentEmbeddedResourceContents {
    fn sift<'de, D: Deserializer<'de>>(d: D, buffered: bool) -> Result<(), D::Error> {
        struct V(bool);
        impl<'de> Visitor<'de> for V {
            type Value = ();
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a SubagentEmbeddedResourceContents object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
                // Keys seen: uri, mimeType, _meta, text, blob.
                let mut seen = [false; 5];
                let (mut text, mut blob) = (false, false);
                while let Some(key) = map.next_key::<Key<'de>>()? {
                    let k = &*key.0;
                    let Some(i) = SubagentEmbeddedResourceContents::KEYS
                        .iter()
                        .position(|w| *w == k)
                    else {
                        map.next_value_seed(SkipValue)?;
                        continue;
                    };
                    if std::mem::replace(&mut seen[i], true) {
                        return Err(fallback());
                    }
                    match k {
                        "uri" => map.next_value_seed(SiftSeed::<String>::new(self.0))?,
                        "mimeType" => {
                            map.next_value_seed(SiftSeed::<Option<String>>::new(self.0))?
                        }
                        "_meta" => map.next_value_seed(SiftSeed::<Option<Map>>::new(self.0))?,
                        "text" => text = map.next_value_seed(IsString)?,
                        _ => blob = map.next_value_seed(IsString)?,
                    }
                }
                if !seen[0] {
                    return Err(de::Error::missing_field("uri"));
                }
                if !text && !blob {
                    return Err(de::Error::custom(
                        SubagentEmbeddedResourceContents::text_or_blob_rule(),
                    ));
                }
                Ok(())
            }
        }
        d.deserialize_map(V(buffered))
    }
}

/// Walks any value as `Value`'s parse does; tells whether it is a string.
struct IsString;

impl<'de> DeserializeSeed<'de> for IsString {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for IsString {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<bool, E> {
        Ok(true)
    }
    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_none<E>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<bool, A::Error> {
        Value::sift(de::value::SeqAccessDeserializer::new(seq), false).map(|()| false)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<bool, A::Error> {
        Value::sift(de::value::MapAccessDeserializer::new(map), false).map(|()| false)
    }
}

impl Check for SubagentEmbeddedResourceContents {
    const EXPECTED: &'static str = "an object";
    fn check(v: &Value, at: &str, out: &mut Vec<Violation>) {
        let Some(obj) = v.as_object() else {
            out.push(Violation::new(at, Rule::type_of(Self::EXPECTED, v)));
            return;
        };
        check_req::<String>(obj, "uri", at, out);
        check_nullable::<String>(obj, "mimeType", at, out);
        check_nullable::<Map>(obj, "_meta", at, out);
        let stringy = |k: &str| obj.get(k).is_some_and(Value::is_string);
        if !stringy("text") && !stringy("blob") {
            out.push(Violation::new(at, Self::text_or_blob_rule()));
        }
    }
}

#[cfg(feature = "schema")]
impl JsonSchema for SubagentEmbeddedResourceContents {
    fn schema_name() -> Cow<'static, str> {
        "EmbeddedResourceContents".into()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "properties": {
                "uri": g.subschema_for::<String>(),
                "mimeType": nullable_schema(g.subschema_for::<String>()),
                "_meta": nullable_schema(g.subschema_for::<Map>()),
            },
            "required": ["uri"],
            "anyOf": [
                { "properties": { "text": { "type": "string" } }, "required": ["text"] },
                { "properties": { "blob": { "type": "string" } }, "required": ["blob"] },
            ],
        })
    }
}

// ---------------------------------------------------------------------------
// Output updates
// ---------------------------------------------------------------------------

crate::wire_struct! {
    /// A streamed chunk of a message or thought (ACP `ContentChunk`).
    pub struct SubagentContentChunk {
        req {
            /// The content.
            content: SubagentContentBlock = "content",
        }
        nullable {
            /// Id of the message this chunk belongs to.
            message_id: String = "messageId",
            /// Extension metadata.
            meta: Map = "_meta",
        }
    }
}

crate::wire_enum! {
    /// What kind of work a tool call does (ACP `ToolKind`).
    pub enum SubagentToolKind {
        /// Reading.
        Read = "read",
        /// Editing.
        Edit = "edit",
        /// Deleting.
        Delete = "delete",
        /// Moving or renaming.
        Move = "move",
        /// Searching.
        Search = "search",
        /// Running commands.
        Execute = "execute",
        /// Thinking or planning.
        Think = "think",
        /// Fetching external data.
        Fetch = "fetch",
        /// Switching the session mode.
        SwitchMode = "switch_mode",
        /// Anything else.
        Other = "other",
    }
}

crate::wire_enum! {
    /// Execution status of a tool call (ACP `ToolCallStatus`).
    pub enum SubagentToolCallStatus {
        /// Not started.
        Pending = "pending",
        /// Running.
        InProgress = "in_progress",
        /// Succeeded.
        Completed = "completed",
        /// Failed.
        Failed = "failed",
    }
}

crate::wire_struct! {
    /// A file location a tool call touches (ACP `ToolCallLocation`).
    pub struct SubagentToolCallLocation {
        req {
            /// The path.
            path: String = "path",
        }
        nullable {
            /// Line number: a non-negative safe integer.
            line: SafeUint = "line",
            /// Extension metadata.
            meta: Map = "_meta",
        }
    }
}

crate::wire_struct! {
    /// Tool-call content that wraps a content block (`type: "content"`).
    pub struct SubagentContent {
        req {
            /// The content block.
            content: SubagentContentBlock = "content",
        }
        nullable {
            /// Extension metadata.
            meta: Map = "_meta",
        }
    }
}

crate::wire_struct! {
    /// Tool-call content that embeds a terminal (`type: "terminal"`).
    pub struct SubagentTerminal {
        req {
            /// The terminal id.
            terminal_id: String = "terminalId",
        }
        nullable {
            /// Extension metadata.
            meta: Map = "_meta",
        }
    }
}

crate::wire_struct! {
    /// Tool-call content showing a file change (`type: "diff"`).
    pub struct SubagentDiff {
        req {
            /// The file path.
            path: String = "path",
            /// The new text.
            new_text: String = "newText",
        }
        nullable {
            /// The old text (`null` or absent for a new file).
            old_text: String = "oldText",
            /// Extension metadata.
            meta: Map = "_meta",
        }
    }
}

crate::wire_union! {
    /// Content produced by a tool call (ACP `ToolCallContent`), by `type`.
    #[allow(clippy::large_enum_variant)] // like the SDK's type: content blocks are large
    pub enum SubagentToolCallContent tag "type" {
        /// A content block.
        Content(SubagentContent) = "content",
        /// A terminal.
        Terminal(SubagentTerminal) = "terminal",
        /// A diff.
        Diff(SubagentDiff) = "diff",
    }
}

union_from!(SubagentToolCallContent {
    Content(SubagentContent),
    Terminal(SubagentTerminal),
    Diff(SubagentDiff),
});

crate::wire_struct! {
    /// A new tool call (`sessionUpdate: "tool_call"`).
    ///
    /// `title` is required; `status`, `kind`, `locations` and `content` may
    /// be absent but not `null`. `rawInput` and `rawOutput` are not checked
    /// and stay in `extra`.
    pub struct SubagentToolCall {
        req {
            /// The tool call id (non-empty).
            tool_call_id: NonEmptyString = "toolCallId",
            /// Title for people (may be empty).
            title: String = "title",
        }
        opt {
            /// Status.
            status: SubagentToolCallStatus = "status",
            /// Kind of work.
            kind: SubagentToolKind = "kind",
            /// Files touched.
            locations: Vec<SubagentToolCallLocation> = "locations",
            /// Produced content.
            content: Vec<SubagentToolCallContent> = "content",
        }
        nullable {
            /// Name of the tool.
            name: String = "name",
            /// Extension metadata.
            meta: Map = "_meta",
        }
    }
}

crate::wire_struct! {
    /// An update of a tool call (`sessionUpdate: "tool_call_update"`); every
    /// field but the id may be absent or `null`.
    pub struct SubagentToolCallUpdate {
        req {
            /// The tool call id (non-empty).
            tool_call_id: NonEmptyString = "toolCallId",
        }
        nullable {
            /// Title.
            title: String = "title",
            /// Name of the tool.
            name: String = "name",
            /// Status.
            status: SubagentToolCallStatus = "status",
            /// Kind of work.
            kind: SubagentToolKind = "kind",
            /// Files touched.
            locations: Vec<SubagentToolCallLocation> = "locations",
            /// Produced content.
            content: Vec<SubagentToolCallContent> = "content",
            /// Extension metadata.
            meta: Map = "_meta",
        }
    }
}

crate::wire_enum! {
    /// Priority of a plan entry.
    pub enum SubagentPlanEntryPriority {
        /// High.
        High = "high",
        /// Medium.
        Medium = "medium",
        /// Low.
        Low = "low",
    }
}

crate::wire_enum! {
    /// Status of a plan entry. Unlike tool calls there is no `failed`.
    pub enum SubagentPlanEntryStatus {
        /// Not started.
        Pending = "pending",
        /// Being worked on.
        InProgress = "in_progress",
        /// Done.
        Completed = "completed",
    }
}

crate::wire_struct! {
    /// One entry of a plan (ACP `PlanEntry`).
    pub struct SubagentPlanEntry {
        req {
            /// What to do.
            content: String = "content",
            /// Priority.
            priority: SubagentPlanEntryPriority = "priority",
            /// Status.
            status: SubagentPlanEntryStatus = "status",
        }
        nullable {
            /// Extension metadata.
            meta: Map = "_meta",
        }
    }
}

crate::wire_struct! {
    /// A plan (`sessionUpdate: "plan"`); `entries` is required, may be empty.
    pub struct SubagentPlan {
        req {
            /// The entries.
            entries: Vec<SubagentPlanEntry> = "entries",
        }
        nullable {
            /// Extension metadata.
            meta: Map = "_meta",
        }
    }
}

/// One output update of a run: the ACP `session/update` variants a
/// subagent may forward, discriminated by `sessionUpdate`.
///
/// Any other `sessionUpdate` (`user_message_chunk`, `usage_update`, …) is
/// rejected. Written by hand rather than with `wire_union!` because two
/// variants share [`SubagentContentChunk`] (and so that parsing does not buffer the
/// object when `sessionUpdate` comes first).
///
/// ```
/// use acp_extension_core::subagent_events::SubagentOutput;
///
/// let chunk: SubagentOutput = serde_json::from_value(serde_json::json!({
///     "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}))?;
/// assert!(matches!(chunk, SubagentOutput::AgentMessageChunk(_)));
/// let usage = serde_json::json!({"sessionUpdate": "usage_update", "used": 1, "size": 2});
/// assert!(serde_json::from_value::<SubagentOutput>(usage).is_err());
/// # Ok::<_, serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SubagentOutput {
    /// `agent_message_chunk`: a chunk of the run's reply.
    AgentMessageChunk(SubagentContentChunk),
    /// `agent_thought_chunk`: a chunk of the run's reasoning.
    AgentThoughtChunk(SubagentContentChunk),
    /// `tool_call`: a new tool call.
    ToolCall(SubagentToolCall),
    /// `tool_call_update`: an update of a tool call.
    ToolCallUpdate(SubagentToolCallUpdate),
    /// `plan`: the run's plan.
    Plan(SubagentPlan),
}

impl SubagentOutput {
    /// The discriminating key.
    pub const TAG: &'static str = "sessionUpdate";

    /// Every tag value, in contract order.
    pub const TAGS: &'static [&'static str] = &[
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
    ];

    /// This variant's `sessionUpdate` value.
    pub fn tag(&self) -> &'static str {
        match self {
            Self::AgentMessageChunk(_) => "agent_message_chunk",
            Self::AgentThoughtChunk(_) => "agent_thought_chunk",
            Self::ToolCall(_) => "tool_call",
            Self::ToolCallUpdate(_) => "tool_call_update",
            Self::Plan(_) => "plan",
        }
    }
}

impl From<SubagentToolCall> for SubagentOutput {
    fn from(v: SubagentToolCall) -> Self {
        Self::ToolCall(v)
    }
}

impl From<SubagentToolCallUpdate> for SubagentOutput {
    fn from(v: SubagentToolCallUpdate) -> Self {
        Self::ToolCallUpdate(v)
    }
}

impl From<SubagentPlan> for SubagentOutput {
    fn from(v: SubagentPlan) -> Self {
        Self::Plan(v)
    }
}

/// The serialized shape of [`SubagentOutput`]: serde's internally tagged
/// serializer writes `sessionUpdate` first, then the variant's keys.
#[derive(Serialize)]
#[serde(tag = "sessionUpdate")]
enum OutputRef<'a> {
    #[serde(rename = "agent_message_chunk")]
    AgentMessageChunk(&'a SubagentContentChunk),
    #[serde(rename = "agent_thought_chunk")]
    AgentThoughtChunk(&'a SubagentContentChunk),
    #[serde(rename = "tool_call")]
    ToolCall(&'a SubagentToolCall),
    #[serde(rename = "tool_call_update")]
    ToolCallUpdate(&'a SubagentToolCallUpdate),
    #[serde(rename = "plan")]
    Plan(&'a SubagentPlan),
}

impl Serialize for SubagentOutput {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::AgentMessageChunk(v) => OutputRef::AgentMessageChunk(v),
            Self::AgentThoughtChunk(v) => OutputRef::AgentThoughtChunk(v),
            Self::ToolCall(v) => OutputRef::ToolCall(v),
            Self::ToolCallUpdate(v) => OutputRef::ToolCallUpdate(v),
            Self::Plan(v) => OutputRef::Plan(v),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for SubagentOutput {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SubagentOutput;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a SubagentOutput object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let (tag, buffered, rest) = read_until_tag(map, SubagentOutput::TAG)?;
                Ok(match &*tag {
                    "agent_message_chunk" => SubagentOutput::AgentMessageChunk(finish_variant(
                        buffered,
                        rest,
                        SubagentOutput::TAG,
                    )?),
                    "agent_thought_chunk" => SubagentOutput::AgentThoughtChunk(finish_variant(
                        buffered,
                        rest,
                        SubagentOutput::TAG,
                    )?),
                    "tool_call" => SubagentOutput::ToolCall(finish_variant(
                        buffered,
                        rest,
                        SubagentOutput::TAG,
                    )?),
                    "tool_call_update" => SubagentOutput::ToolCallUpdate(finish_variant(
                        buffered,
                        rest,
                        SubagentOutput::TAG,
                    )?),
                    "plan" => {
                        SubagentOutput::Plan(finish_variant(buffered, rest, SubagentOutput::TAG)?)
                    }
                    other => {
                        return Err(de::Error::unknown_variant(other, SubagentOutput::TAGS));
                    }
                })
            }
        }
        d.deserialize_map(V)
    }
}

impl Sift for SubagentOutput {
    fn sift<'de, D: Deserializer<'de>>(d: D, buffered: bool) -> Result<(), D::Error> {
        struct V(bool);
        impl<'de> Visitor<'de> for V {
            type Value = ();
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a SubagentOutput object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
                // Entries before the tag are buffered by the typed parse.
                match map.next_key::<Key<'de>>()? {
                    Some(k) if k.0 == SubagentOutput::TAG => {}
                    Some(_) => return Err(fallback()),
                    None => return Err(de::Error::missing_field(SubagentOutput::TAG)),
                }
                let tag: Key<'de> = map.next_value()?;
                // A second tag would be kept by the typed parse and win in
                // the JSON tree: `sift_fields` gives up on it.
                let tag_key = Some(SubagentOutput::TAG);
                match &*tag.0 {
                    "agent_message_chunk" | "agent_thought_chunk" => {
                        SubagentContentChunk::sift_fields(map, self.0, tag_key)
                    }
                    "tool_call" => SubagentToolCall::sift_fields(map, self.0, tag_key),
                    "tool_call_update" => SubagentToolCallUpdate::sift_fields(map, self.0, tag_key),
                    "plan" => SubagentPlan::sift_fields(map, self.0, tag_key),
                    other => Err(de::Error::unknown_variant(other, SubagentOutput::TAGS)),
                }
            }
        }
        d.deserialize_map(V(buffered))
    }
}

impl Check for SubagentOutput {
    const EXPECTED: &'static str = "an object";
    fn check(v: &Value, at: &str, out: &mut Vec<Violation>) {
        let Some(obj) = v.as_object() else {
            out.push(Violation::new(at, Rule::type_of(Self::EXPECTED, v)));
            return;
        };
        match obj.get(Self::TAG).and_then(Value::as_str) {
            Some("agent_message_chunk" | "agent_thought_chunk") => {
                SubagentContentChunk::check(v, at, out)
            }
            Some("tool_call") => SubagentToolCall::check(v, at, out),
            Some("tool_call_update") => SubagentToolCallUpdate::check(v, at, out),
            Some("plan") => SubagentPlan::check(v, at, out),
            _ => out.push(Violation::new(
                child(at, Self::TAG),
                Rule::OneOf(Self::TAGS),
            )),
        }
    }
}

#[cfg(feature = "schema")]
impl JsonSchema for SubagentOutput {
    fn schema_name() -> Cow<'static, str> {
        "SubagentOutput".into()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let variant = |tag: &str, inner: Schema| -> Value {
            json_schema!({
                "allOf": [
                    { "type": "object", "properties": { "sessionUpdate": { "const": tag } }, "required": ["sessionUpdate"] },
                    inner,
                ]
            })
            .into()
        };
        let chunk = g.subschema_for::<SubagentContentChunk>();
        let variants = vec![
            variant("agent_message_chunk", chunk.clone()),
            variant("agent_thought_chunk", chunk),
            variant("tool_call", g.subschema_for::<SubagentToolCall>()),
            variant(
                "tool_call_update",
                g.subschema_for::<SubagentToolCallUpdate>(),
            ),
            variant("plan", g.subschema_for::<SubagentPlan>()),
        ];
        json_schema!({ "oneOf": variants })
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
/// assert_eq!(event.event_type(), SubagentEventType::Progress);
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

    /// The event's `type`.
    pub fn event_type(&self) -> SubagentEventType {
        self.payload.event_type()
    }

    /// The root session id.
    pub fn session_id(&self) -> &str {
        self.session_id.as_str()
    }

    /// The run id.
    pub fn run_id(&self) -> &str {
        self.run_id.as_str()
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
        let kind = self.event_type();
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

thread_local! {
    /// The keys of the last subagent event this thread's sift accepted
    /// ([`sifted_keys`]).
    static SIFTED_KEYS: Cell<Option<SiftedKeys>> = const { Cell::new(None) };
}

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

/// Runs `sift` (which sifts at most one subagent event) and gives the keys
/// of the event it accepted, if it accepted one.
pub(crate) fn sifted_keys<T>(sift: impl FnOnce() -> T) -> (T, Option<SiftedKeys>) {
    SIFTED_KEYS.set(None);
    let result = sift();
    (result, SIFTED_KEYS.take())
}

impl Sift for SubagentEvent {
    fn sift<'de, D: Deserializer<'de>>(d: D, buffered: bool) -> Result<(), D::Error> {
        struct V(bool);
        impl<'de> Visitor<'de> for V {
            type Value = ();
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a SubagentEvent object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
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
                        return Err(fallback());
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
                            None => return Err(fallback()),
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
                        Some(kind) => {
                            SIFTED_KEYS.set(Some(SiftedKeys { kind, seen, ends }));
                            return Ok(());
                        }
                    }
                };
                Err(de::Error::missing_field(missing))
            }
        }
        d.deserialize_map(V(buffered))
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
