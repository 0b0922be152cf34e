//! The output a run forwards: ACP's `session/update` variants a subagent
//! may send, as the contract's guard reads them (see the parent module's
//! docs for where its rules differ from the SDK's types). Private: users
//! read and write an output through [`super::SubagentOutput`], as JSON or
//! as the SDK's `SessionUpdate`.

#[cfg(feature = "schema")]
use std::borrow::Cow;
use std::fmt;

#[cfg(feature = "schema")]
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::violation::{Check, Rule, Violation, child};
#[cfg(feature = "schema")]
use crate::wire::nullable_schema;
use crate::wire::sift::{Sift, SiftFields, SiftSeed, Sifting, SkipValue};
use crate::wire::{
    FiniteF64, Key, Map, MaybeUndefined, NonEmptyString, SafeInt, SafeUint, WireObject,
    check_nullable, check_req, finish_variant, read_until_tag,
};

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

/// Text is the common case: a `&str` or `String` is a text block.
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
    fn extra(&self) -> &Map {
        &self.extra
    }
    fn extra_mut(&mut self) -> &mut Map {
        &mut self.extra
    }
}

impl SubagentEmbeddedResourceContents {
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
    fn sift<'de, D: Deserializer<'de>>(d: D, cx: Sifting<'_>) -> Result<(), D::Error> {
        struct V<'c>(Sifting<'c>);
        impl<'de> Visitor<'de> for V<'_> {
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
                        return Err(self.0.fallback());
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
        d.deserialize_map(V(cx))
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
        SkipValue
            .deserialize(de::value::SeqAccessDeserializer::new(seq))
            .map(|()| false)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<bool, A::Error> {
        SkipValue
            .deserialize(de::value::MapAccessDeserializer::new(map))
            .map(|()| false)
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
#[derive(Debug, Clone, PartialEq)]
pub enum OutputUpdate {
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

impl OutputUpdate {
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

impl From<SubagentToolCall> for OutputUpdate {
    fn from(v: SubagentToolCall) -> Self {
        Self::ToolCall(v)
    }
}

impl From<SubagentToolCallUpdate> for OutputUpdate {
    fn from(v: SubagentToolCallUpdate) -> Self {
        Self::ToolCallUpdate(v)
    }
}

impl From<SubagentPlan> for OutputUpdate {
    fn from(v: SubagentPlan) -> Self {
        Self::Plan(v)
    }
}

/// The serialized shape of [`OutputUpdate`]: serde's internally tagged
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

impl Serialize for OutputUpdate {
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

impl<'de> Deserialize<'de> for OutputUpdate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OutputUpdate;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a SubagentOutput object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let (tag, buffered, rest) = read_until_tag(map, OutputUpdate::TAG)?;
                Ok(match &*tag {
                    "agent_message_chunk" => OutputUpdate::AgentMessageChunk(finish_variant(
                        buffered,
                        rest,
                        OutputUpdate::TAG,
                    )?),
                    "agent_thought_chunk" => OutputUpdate::AgentThoughtChunk(finish_variant(
                        buffered,
                        rest,
                        OutputUpdate::TAG,
                    )?),
                    "tool_call" => {
                        OutputUpdate::ToolCall(finish_variant(buffered, rest, OutputUpdate::TAG)?)
                    }
                    "tool_call_update" => OutputUpdate::ToolCallUpdate(finish_variant(
                        buffered,
                        rest,
                        OutputUpdate::TAG,
                    )?),
                    "plan" => {
                        OutputUpdate::Plan(finish_variant(buffered, rest, OutputUpdate::TAG)?)
                    }
                    other => {
                        return Err(de::Error::unknown_variant(other, OutputUpdate::TAGS));
                    }
                })
            }
        }
        d.deserialize_map(V)
    }
}

impl Sift for OutputUpdate {
    fn sift<'de, D: Deserializer<'de>>(d: D, cx: Sifting<'_>) -> Result<(), D::Error> {
        struct V<'c>(Sifting<'c>);
        impl<'de> Visitor<'de> for V<'_> {
            type Value = ();
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a SubagentOutput object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
                // Entries before the tag are buffered by the typed parse.
                match map.next_key::<Key<'de>>()? {
                    Some(k) if k.0 == OutputUpdate::TAG => {}
                    Some(_) => return Err(self.0.fallback()),
                    None => return Err(de::Error::missing_field(OutputUpdate::TAG)),
                }
                let tag: Key<'de> = map.next_value()?;
                // A second tag would be kept by the typed parse and win in
                // the JSON tree: `sift_fields` gives up on it.
                let tag_key = Some(OutputUpdate::TAG);
                match &*tag.0 {
                    "agent_message_chunk" | "agent_thought_chunk" => {
                        SubagentContentChunk::sift_fields(map, self.0, tag_key)
                    }
                    "tool_call" => SubagentToolCall::sift_fields(map, self.0, tag_key),
                    "tool_call_update" => SubagentToolCallUpdate::sift_fields(map, self.0, tag_key),
                    "plan" => SubagentPlan::sift_fields(map, self.0, tag_key),
                    other => Err(de::Error::unknown_variant(other, OutputUpdate::TAGS)),
                }
            }
        }
        d.deserialize_map(V(cx))
    }
}

impl Check for OutputUpdate {
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
impl JsonSchema for OutputUpdate {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_contents_with_neither_text_nor_blob_are_not_written() {
        let empty = SubagentEmbeddedResourceContents {
            uri: "u".into(),
            mime_type: MaybeUndefined::Undefined,
            text: None,
            blob: None,
            meta: MaybeUndefined::Undefined,
            extra: Map::new(),
        };
        assert!(serde_json::to_value(&empty).is_err());
        let blob = SubagentEmbeddedResourceContents {
            blob: Some("b".into()),
            ..empty
        };
        assert_eq!(
            serde_json::to_value(&blob).unwrap(),
            serde_json::json!({"uri": "u", "blob": "b"})
        );
    }
}
