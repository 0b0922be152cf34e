//! One line of JSON-RPC traffic, parsed once, on any thread: a JSON tree,
//! or for a valid subagent event notification its typed value with no
//! tree (the typed lane), or bytes that are not JSON.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::fmt;

use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::Value;

use crate::connection::sequence::EventFacts;
use crate::methods::ContractMethod;
use crate::namespace::Namespace;
use crate::subagent_events::{EventKey, KeyEnd, SiftedKeys, SubagentEvent, SubagentEventType};
use crate::wire::Key;
use crate::wire::WireEnum;
use crate::wire::sift::{Sifting, sifting};

mod scan;
use scan::*;
pub(crate) use scan::{SiftedOutput, TextChunk};

/// The two spellings of the subagent event's method, which the scanner
/// looks for in a line's bytes.
const LODY_SUBAGENTS_EVENT: &str = ContractMethod::SubagentEvent.method(Namespace::Lody);
const UA_SUBAGENTS_EVENT: &str = ContractMethod::SubagentEvent.method(Namespace::Ua);

/// One line of JSON-RPC traffic, parsed once (`parse_line_with`), on
/// any thread: what a [`Line`] holds. Public only with the feature
/// `test-support`, for the lanes' differential tests.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ParsedLine {
    /// Any JSON value.
    Value(Value),
    /// A valid subagent event notification, read straight into its type.
    Event(EventLine),
    /// Bytes that are not one JSON value (serde_json's reason).
    NotJson(String),
}

/// When the typed lane of [`parse_line_with`] builds the event (what
/// [`Reads`] asks for).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum EventParse {
    /// With the line: for followers that read every event (a fold).
    #[default]
    Now,
    /// When first asked ([`EventLine::event`]): the line is verified with
    /// the sift (the typed parse's verdict, building nothing), and the
    /// facts the run rules read ([`EventLine::facts`]) are located in its
    /// text. For followers that read only those facts (a linter):
    /// the output the state would fold from the line is not located, so a
    /// fold builds the event.
    OnDemand,
    /// As [`EventParse::Now`], except for the output events the consumer
    /// state folds straight from the line, which are sifted as with
    /// [`EventParse::OnDemand`] and not built: an `agent_message_chunk`
    /// of text in a line with no escape at all, and a `tool_call` or
    /// `tool_call_update` (whose text the state keeps as it came). For a
    /// fold on another thread than the parse.
    OutputOnDemand,
}

/// A `_<ns>/subagents/event` notification read straight into its type,
/// with no JSON tree; see `parse_line_with` for which lines are read so.
/// Public only with the feature `test-support`.
///
/// Two lines are equal when their text is: the text decides the event.
#[derive(Clone)]
pub struct EventLine {
    namespace: Namespace,
    text: Box<str>,
    /// Built with the line ([`EventParse::Now`]) or on the first ask.
    event: OnceCell<Box<SubagentEvent>>,
    /// Where the run rules' facts are in `text`, for a line whose event
    /// waits ([`EventParse::OnDemand`]).
    facts: Option<FactSpans>,
}

impl fmt::Debug for EventLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventLine")
            .field("namespace", &self.namespace)
            .field("text", &self.text)
            .finish_non_exhaustive()
    }
}

impl PartialEq for EventLine {
    fn eq(&self, other: &Self) -> bool {
        self.namespace == other.namespace && self.text == other.text
    }
}

impl EventLine {
    /// `_lody/subagents/event` or `_ua/subagents/event`.
    pub fn method(&self) -> &'static str {
        match self.namespace {
            Namespace::Lody => LODY_SUBAGENTS_EVENT,
            Namespace::Ua => UA_SUBAGENTS_EVENT,
        }
    }

    /// The event (the notification's params); for a line read with
    /// [`EventParse::OnDemand`], parsed from the line on the first call.
    ///
    /// # Panics
    ///
    /// Only on a bug of the sift: a sifted line is one the sift accepted,
    /// and it accepts exactly what the typed parse reads (held by the
    /// library's `tests/verdict.rs` and `tests/lanes.rs`, and by the
    /// `validate` fuzz property).
    #[expect(
        clippy::expect_used,
        reason = "the sift accepts exactly what the typed parse reads (tests/verdict.rs, tests/lanes.rs, the `validate` fuzz property)"
    )]
    pub fn event(&self) -> &SubagentEvent {
        self.event.get_or_init(|| {
            // The sift accepted the line, and it accepts exactly what the
            // typed parse accepts (tests/verdict.rs, tests/lanes.rs).
            typed_envelope(&self.text)
                .expect("a line the sift accepts is one the typed parse reads")
                .params
        })
    }

    /// Whether the event is built: always with [`EventParse::Now`]; with
    /// [`EventParse::OnDemand`], once asked for, or from the start when
    /// its facts could not be found in the text (a string among them with
    /// an escape).
    #[cfg(any(test, feature = "test-support"))]
    pub fn is_built(&self) -> bool {
        self.event.get().is_some()
    }

    /// The facts of the event the run rules read ([`EventFacts`]), without
    /// building the event when the line was sifted.
    pub fn facts(&self) -> EventFacts<'_> {
        match &self.facts {
            Some(spans) => spans.facts(&self.text),
            None => EventFacts::from(self.event()),
        }
    }

    /// The output the consumer state folds straight from a sifted line
    /// ([`EventParse::OutputOnDemand`]): an
    /// `agent_message_chunk` of text with no escape in its text or message
    /// id, or a `tool_call` or `tool_call_update`.
    pub(crate) fn sifted_output(&self) -> Option<SiftedOutput<'_>> {
        Some(match self.facts.as_ref()?.output? {
            OutputSpans::TextChunk(chunk) => SiftedOutput::TextChunk(TextChunk {
                text: chunk.text.of(&self.text),
                message_id: chunk.message_id.map(|m| m.of(&self.text)),
            }),
            OutputSpans::ToolCall(update) => SiftedOutput::ToolCall(update.of(&self.text)),
        })
    }

    /// The text of `params.update`, as in the line: from the sift's walk
    /// ([`EventParse::OutputOnDemand`]), or a walk of its own for any other
    /// line (`None` when a key on the way has an escape, or the event has
    /// no update).
    pub(crate) fn update_text(&self) -> Option<&str> {
        if let Some(OutputSpans::ToolCall(update)) = self.facts.as_ref().and_then(|f| f.output) {
            return Some(update.of(&self.text));
        }
        u32::try_from(self.text.len()).ok()?;
        let mut scan = Scan {
            bytes: self.text.as_bytes(),
            at: 0,
        };
        let mut update = None;
        scan.object(|scan, key| {
            if key != b"params" || scan.bytes.get(scan.at) != Some(&b'{') {
                return scan.value();
            }
            scan.object(|scan, key| {
                if key == b"update" && update.is_none() {
                    let start = scan.at;
                    scan.value()?;
                    update = Some(Span {
                        start: start as u32,
                        end: scan.at as u32,
                    });
                    Some(())
                } else {
                    scan.value()
                }
            })
        })?;
        Some(update?.of(&self.text))
    }

    /// The root session id.
    pub fn session_id(&self) -> &str {
        match &self.facts {
            Some(spans) => spans.session_id.of(&self.text),
            None => self.event().session_id.as_str(),
        }
    }

    /// The line as it was read.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The whole message as a JSON tree, read from the line.
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }
}

/// What an observer reads of a subagent event that the connection
/// verified while reading its line ([`Observer::reads`](super::Observer::reads)).
/// A line read ahead of following it ([`Line::read`]) is read for what its
/// follower's observers read ([`Reads::of`]); everything they observe is
/// the same either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[non_exhaustive]
pub enum Reads {
    /// The facts the run rules read (run id, state, sequence): the event
    /// is verified without being built, and built only if asked (a
    /// linter).
    RunFacts,
    /// What the consumer state folds: a chunk of plain text and a tool
    /// call from the line as it stands, every other event built with its
    /// line.
    Fold,
    /// The whole event, built with its line.
    #[default]
    Event,
}

impl Reads {
    /// What a follower whose observers are `observers` reads: the most
    /// any of them reads ([`Reads::Event`] for none).
    pub fn of(observers: &[&dyn super::Observer]) -> Self {
        observers
            .iter()
            .map(|o| o.reads())
            .max()
            .unwrap_or_default()
    }

    fn parse(self) -> EventParse {
        match self {
            Reads::RunFacts => EventParse::OnDemand,
            Reads::Fold => EventParse::OutputOnDemand,
            Reads::Event => EventParse::Now,
        }
    }
}

/// One line of traffic (without its newline) read ahead of following it,
/// on any thread, and followed with
/// [`Connection::follow_read`](super::Connection::follow_read).
///
/// A valid subagent event notification whose text holds nothing for a
/// `_meta` or epoch rule is verified while read, and its JSON tree built
/// only if an observer asks ([`super::Params::event`]); every other line
/// is a JSON tree, or bytes that are not JSON.
///
/// ```
/// use acp_extension_core::connection::{Connection, Direction, Line, Reads};
///
/// let text = br#"{"jsonrpc":"2.0","method":"_ua/subagents/event","params":{"version":1,"sessionId":"s","runId":"r","type":"progress","progress":{"turnCount":2}}}"#;
/// let line = Line::read(text, Reads::Event);
/// assert!(line.tree().is_none()); // verified: no tree built
/// assert_eq!(line.to_value()["params"]["runId"], "r");
/// assert!(Line::read(b"{oops", Reads::Event).not_json().is_some());
///
/// let mut connection = Connection::new();
/// connection.follow_read(Direction::AgentToClient, &line, &mut []);
/// assert_eq!(connection.values(), 1);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Line(pub(super) ParsedLine);

impl Line {
    /// Reads `bytes` for observers that read `reads`.
    pub fn read(bytes: &[u8], reads: Reads) -> Self {
        Self(parse_line_with(bytes, reads.parse()))
    }

    /// Why the bytes are not one JSON value, when they are not.
    pub fn not_json(&self) -> Option<&str> {
        match &self.0 {
            ParsedLine::NotJson(why) => Some(why),
            _ => None,
        }
    }

    /// The JSON tree, when one was built: `None` for a verified event and
    /// for bytes that are not JSON.
    pub fn tree(&self) -> Option<&Value> {
        match &self.0 {
            ParsedLine::Value(v) => Some(v),
            _ => None,
        }
    }

    /// The JSON tree, however the line was read (built from the text of a
    /// verified event; `null` for bytes that are not JSON).
    pub fn to_value(&self) -> Value {
        match &self.0 {
            ParsedLine::Value(v) => v.clone(),
            ParsedLine::Event(e) => e.to_value(),
            ParsedLine::NotJson(_) => Value::Null,
        }
    }

    /// The JSON tree when one was built; the line itself otherwise.
    pub fn into_tree(self) -> Result<Value, Self> {
        match self.0 {
            ParsedLine::Value(v) => Ok(v),
            other => Err(Self(other)),
        }
    }

    /// How the line was read: for the lanes' differential tests and
    /// fuzzers only (feature `test-support`).
    #[cfg(feature = "test-support")]
    #[doc(hidden)]
    pub fn parsed(&self) -> &ParsedLine {
        &self.0
    }
}

/// Parses one line of JSON-RPC traffic (without its newline), choosing
/// when a typed lane event is built: the lines taken, and everything a
/// follower observes, are the same either way.
///
/// A line that is a `_lody/subagents/event` or `_ua/subagents/event`
/// notification with exactly `jsonrpc: "2.0"`, `method` and `params`, whose
/// params are a valid [`SubagentEvent`] and whose text holds no `_meta`,
/// no `…EpochSeconds` key but with a plain whole number of seconds (no
/// fraction, no exponent, from 1 to 10^11) and no `\u` escape of an ASCII
/// character, is read straight into its type ([`ParsedLine::Event`]): no
/// JSON tree is built. Such a line is one no `_meta` or epoch rule can say
/// anything about, and one validation accepts, so every observer reaches
/// the same verdict as on its tree, without it. Every other line is a JSON
/// tree, or not JSON.
fn parse_line_with(bytes: &[u8], parse: EventParse) -> ParsedLine {
    // Checked as UTF-8 once, the whole line at a time: parsed from a
    // `&[u8]`, every string would be checked again on its own. A line that
    // is not UTF-8 is parsed from its bytes, for the parser's error.
    let Ok(text) = std::str::from_utf8(bytes) else {
        return tree(serde_json::from_slice(bytes));
    };
    if let Some(line) = typed_event(text, parse) {
        return ParsedLine::Event(line);
    }
    tree(serde_json::from_str(text))
}

/// A line's JSON tree, or why it is not JSON.
fn tree(parsed: serde_json::Result<Value>) -> ParsedLine {
    match parsed {
        Ok(v) => ParsedLine::Value(v),
        Err(e) => ParsedLine::NotJson(e.to_string()),
    }
}

/// The envelope of the typed lane: exactly these three keys.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EventEnvelope<'a> {
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    #[serde(borrow)]
    method: Cow<'a, str>,
    params: Box<SubagentEvent>,
}

fn typed_envelope(text: &str) -> Option<EventEnvelope<'_>> {
    serde_json::from_str(text).ok()
}

/// The namespace of a typed lane envelope's `jsonrpc` and `method`.
fn lane_namespace(jsonrpc: &str, method: &str) -> Option<Namespace> {
    match (jsonrpc, method) {
        ("2.0", LODY_SUBAGENTS_EVENT) => Some(Namespace::Lody),
        ("2.0", UA_SUBAGENTS_EVENT) => Some(Namespace::Ua),
        _ => None,
    }
}

/// What one scan of a line finds for the typed lane: the bytes `_`, `E`
/// and `\` start or hold everything it looks for.
struct LaneScan {
    /// The lane's method, `_lody/subagents/event` or `_ua/subagents/event`,
    /// somewhere (the parse decides whether as the method).
    method: bool,
    /// `"agent_message_chunk"`, quotes included, somewhere.
    chunk: bool,
    /// `"tool_call` somewhere (a `tool_call` or `tool_call_update` tag).
    tool_call: bool,
    /// `_meta` somewhere (a key, or within a string: either way the tree).
    meta: bool,
    /// An `EpochSeconds` the epoch rules might flag ([`plain_epoch_at`]).
    epoch: bool,
    /// A `\u0000`–`\u007f` escape, of an ASCII character (a key spelled
    /// so, `\u005fmeta`, would hide from the scan).
    escaped_ascii: bool,
    /// A backslash anywhere.
    escape: bool,
}

impl LaneScan {
    fn of(bytes: &[u8]) -> Self {
        let mut scan = LaneScan {
            method: false,
            chunk: false,
            tool_call: false,
            meta: false,
            epoch: false,
            escaped_ascii: false,
            escape: false,
        };
        for i in memchr::memchr3_iter(b'_', b'E', b'\\', bytes) {
            let rest = &bytes[i..];
            match bytes[i] {
                b'_' => match rest.get(1) {
                    Some(b'm') => {
                        scan.meta |= rest.starts_with(b"_meta");
                        scan.chunk |= rest.starts_with(b"_message_chunk\"")
                            && bytes[..i].ends_with(b"\"agent");
                    }
                    Some(b'l') => scan.method |= rest.starts_with(LODY_SUBAGENTS_EVENT.as_bytes()),
                    Some(b'u') => scan.method |= rest.starts_with(UA_SUBAGENTS_EVENT.as_bytes()),
                    Some(b'c') => {
                        scan.tool_call |=
                            rest.starts_with(b"_call") && bytes[..i].ends_with(b"\"tool");
                    }
                    _ => {}
                },
                b'E' => {
                    scan.epoch |= rest.starts_with(b"EpochSeconds")
                        && !plain_epoch_at(bytes, i + b"EpochSeconds".len());
                }
                _ => {
                    scan.escape = true;
                    scan.escaped_ascii |= rest.starts_with(b"\\u00")
                        && rest.get(4).is_some_and(|d| (b'0'..=b'7').contains(d));
                }
            }
        }
        scan
    }
}

/// The typed lane of [`parse_line_with`].
fn typed_event(text: &str, parse: EventParse) -> Option<EventLine> {
    let scan = LaneScan::of(text.as_bytes());
    if !scan.method || scan.meta || scan.epoch || scan.escaped_ascii {
        return None;
    }
    // Where a plain text chunk or a tool call is likely (the walk below
    // decides): a line with an escape anywhere is built at once but for a
    // tool call (kept as its text, escapes and all), as the sift and the
    // walk would only find an escaped chunk to build after them.
    let sift = match parse {
        EventParse::OnDemand => true,
        EventParse::OutputOnDemand => (!scan.escape && scan.chunk) || scan.tool_call,
        EventParse::Now => false,
    };
    if sift {
        match sifted_envelope(text) {
            Sifted::Accepted(namespace, keys) => {
                let with_output = parse == EventParse::OutputOnDemand;
                if let Some(facts) = FactSpans::find(text, &keys, with_output)
                    .filter(|f| !with_output || f.output.is_some())
                {
                    return Some(EventLine {
                        namespace,
                        text: text.into(),
                        event: OnceCell::new(),
                        facts: Some(facts),
                    });
                }
            }
            // The typed parse would refuse it too.
            Sifted::Refused => return None,
            Sifted::Undecided => {}
        }
    }
    let envelope = typed_envelope(text)?;
    let namespace = lane_namespace(&envelope.jsonrpc, &envelope.method)?;
    // The typed parse accepts what `Check` accepts on the JSON tree, and
    // reads the same values: where the two could part (a union tag that
    // is a number, or repeated), it refuses, and the tree decides
    // (`tests/lanes.rs` holds them to it).
    Some(EventLine {
        namespace,
        text: text.into(),
        event: OnceCell::from(envelope.params),
        facts: None,
    })
}

/// Whether the `EpochSeconds` that ends before `at` is harmless to the
/// epoch rules ([`crate::meta::epoch_findings`]): within a string or a
/// longer key, at the end of a string value, or at the end of a key whose
/// value is a plain whole number from 1 to 10^11 (no sign, fraction or
/// exponent), which no epoch rule flags. Anything else sends the line to
/// its tree, for the rules.
fn plain_epoch_at(bytes: &[u8], at: usize) -> bool {
    let skip_space = |mut i: usize| {
        while bytes
            .get(i)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            i += 1;
        }
        i
    };
    // Not followed by a quote: within a string, or within a longer key.
    if bytes.get(at) != Some(&b'"') {
        return true;
    }
    // An unescaped quote closes a string; only a key's is followed by `:`.
    let colon = skip_space(at + 1);
    if bytes.get(colon) != Some(&b':') {
        return true;
    }
    let start = skip_space(colon + 1);
    let digits = bytes[start.min(bytes.len())..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    let end = start + digits;
    // A fraction or an exponent follows: the rules read it as a number.
    if digits == 0 || digits > 12 || matches!(bytes.get(end), Some(b'.' | b'e' | b'E')) {
        return false;
    }
    let value = bytes[start..end]
        .iter()
        .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
    (1..=100_000_000_000).contains(&value)
}

/// What the sift says of a typed lane envelope.
enum Sifted {
    /// [`typed_envelope`] reads it, as a notification of this namespace;
    /// where the event's keys end in the text.
    Accepted(Namespace, SiftedKeys),
    /// It does not, or the method is not the lane's.
    Refused,
    /// The sift gave up: only the typed parse can tell.
    Undecided,
}

/// The sift of the typed lane's envelope: exactly the three keys, once
/// each, `jsonrpc` and `method` strings, and params the sift accepts as a
/// [`SubagentEvent`] (what [`typed_envelope`] reads).
fn sifted_envelope(text: &str) -> Sifted {
    /// The params, sifted as a [`SubagentEvent`]: where its keys end.
    struct Params<'c>(Sifting<'c>);
    impl<'de> DeserializeSeed<'de> for Params<'_> {
        type Value = SiftedKeys;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<SiftedKeys, D::Error> {
            SubagentEvent::sift_keys(d, self.0)
        }
    }
    struct V<'c>(Sifting<'c>);
    impl<'de> Visitor<'de> for V<'_> {
        type Value = Option<(Namespace, SiftedKeys)>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a subagent event notification")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let (mut jsonrpc, mut method, mut params) = (None, None, None);
            while let Some(key) = map.next_key::<Key<'de>>()? {
                match &*key.0 {
                    "jsonrpc" if jsonrpc.is_none() => {
                        jsonrpc = Some(map.next_value::<Key<'de>>()?.0)
                    }
                    "method" if method.is_none() => method = Some(map.next_value::<Key<'de>>()?.0),
                    "params" if params.is_none() => {
                        params = Some(map.next_value_seed(Params(self.0))?)
                    }
                    // Another key, or one twice: the typed parse refuses.
                    _ => return Ok(None),
                }
            }
            Ok(match (jsonrpc, method, params) {
                (Some(j), Some(m), Some(keys)) => lane_namespace(&j, &m).map(|n| (n, keys)),
                _ => None,
            })
        }
    }
    let (read, gave_up) = sifting(|cx| {
        let mut de = serde_json::Deserializer::from_str(text);
        de.deserialize_map(V(cx))
            .and_then(|namespace| de.end().map(|()| namespace))
    });
    match read {
        Ok(Some((namespace, keys))) => Sifted::Accepted(namespace, keys),
        _ if gave_up => Sifted::Undecided,
        _ => Sifted::Refused,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A valid event takes the lane, built with its line or on the first
    /// ask; an invalid one is a tree, for the rules to report.
    #[test]
    fn a_valid_event_takes_the_lane_built_now_or_when_asked() {
        let event = br#"{"jsonrpc":"2.0","method":"_lody/subagents/event","params":{"version":1,"sessionId":"s","runId":"r","type":"progress","progress":{"turnCount":2}}}"#;
        let ParsedLine::Event(line) = parse_line_with(event, EventParse::Now) else {
            panic!("not on the lane")
        };
        assert!(line.is_built());
        assert_eq!(line.event().run_id.as_str(), "r");
        assert_eq!(line.to_value()["params"]["progress"]["turnCount"], 2);

        let bad = br#"{"jsonrpc":"2.0","method":"_lody/subagents/event","params":{"version":1,"sessionId":"s","runId":"r","type":"progress","progress":{"turnCount":-2}}}"#;
        assert!(matches!(
            parse_line_with(bad, EventParse::Now),
            ParsedLine::Value(_)
        ));
        assert!(matches!(
            parse_line_with(b"{oops", EventParse::Now),
            ParsedLine::NotJson(_)
        ));

        let snapshot = br#"{"jsonrpc":"2.0","method":"_ua/subagents/event","params":{"version":1,"sessionId":"s","runId":"r","type":"snapshot","snapshot":{"state":"running","support":{"stream":["text"],"progress":true,"outputRead":"none","cancel":false}}}}"#;
        let ParsedLine::Event(line) = parse_line_with(snapshot, EventParse::OnDemand) else {
            panic!("not on the lane")
        };
        // The run rules' facts come from the text; the event when asked.
        assert_eq!(line.facts().snapshot_state, Some("running"));
        assert!(!line.is_built());
        assert_eq!(line.event().run_id.as_str(), "r");
        assert!(line.is_built());
    }

    /// `check`'s reading (`OnDemand`) locates the run rules' facts and not
    /// the output; the state's (`OutputOnDemand`) locates the output it
    /// folds from the line as well.
    #[test]
    fn only_the_states_reading_locates_the_output() {
        let event = |update: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","method":"_lody/subagents/event","params":{{"version":1,"sessionId":"s","runId":"r","type":"output","update":{update}}}}}"#
            )
        };
        let chunk = event(
            r#"{"sessionUpdate":"agent_message_chunk","messageId":"m","content":{"type":"text","text":"hi"}}"#,
        );
        let call_update = r#"{"sessionUpdate":"tool_call","toolCallId":"c","title":"t"}"#;
        let call = event(call_update);
        let expected = [
            SiftedOutput::TextChunk(TextChunk {
                text: "hi",
                message_id: Some("m"),
            }),
            SiftedOutput::ToolCall(call_update),
        ];
        for (line, expected) in [chunk, call].iter().zip(expected) {
            let ParsedLine::Event(facts_only) =
                parse_line_with(line.as_bytes(), EventParse::OnDemand)
            else {
                panic!("not on the lane: {line}");
            };
            assert!(!facts_only.is_built());
            assert_eq!(facts_only.facts().run_id, Some("r"));
            assert_eq!(facts_only.sifted_output(), None, "{line}");

            let ParsedLine::Event(with_output) =
                parse_line_with(line.as_bytes(), EventParse::OutputOnDemand)
            else {
                panic!("not on the lane: {line}");
            };
            assert!(!with_output.is_built());
            assert_eq!(with_output.sifted_output(), Some(expected), "{line}");
        }
    }
}
