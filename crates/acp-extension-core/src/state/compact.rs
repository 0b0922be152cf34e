//! JSON the state keeps or writes as text: a run's tool calls kept as
//! their compact text, and a run's long text written as a JSON string.

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

#[cfg(feature = "schema")]
use schemars::JsonSchema;

/// A JSON object kept as its compact text: a run may hold tens of
/// thousands of tool calls, and a JSON tree of each costs several times
/// its text. Read it back with [`CompactObject::value`]; it serializes as
/// the object, its text as it stands (a raw value, checked as JSON once,
/// when it is kept).
#[derive(Debug, Clone)]
pub(crate) struct CompactObject(Box<RawValue>);

impl CompactObject {
    /// The compact text of `object`.
    pub fn new(object: &Map<String, Value>) -> Self {
        #[expect(clippy::expect_used, reason = "a JSON map always serializes")]
        let raw = serde_json::value::to_raw_value(object).expect("a JSON map serializes");
        Self(raw)
    }

    /// The compact text of `object` without its key `skip`.
    pub fn without(object: &Map<String, Value>, skip: &str) -> Self {
        struct Without<'a>(&'a Map<String, Value>, &'a str);
        impl Serialize for Without<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap;
                let mut map = s.serialize_map(None)?;
                for (k, v) in self.0.iter().filter(|(k, _)| k.as_str() != self.1) {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
        #[expect(clippy::expect_used, reason = "a JSON map always serializes")]
        let raw =
            serde_json::value::to_raw_value(&Without(object, skip)).expect("a JSON map serializes");
        Self(raw)
    }

    /// An object's compact text as [`plain_without`] cut it from JSON a
    /// parser accepted (an update in a line read), kept as it stands;
    /// `None` if it is not one JSON value after all.
    pub(crate) fn from_plain(text: String) -> Option<Self> {
        RawValue::from_string(text).ok().map(Self)
    }

    /// Its compact JSON text.
    pub fn as_str(&self) -> &str {
        self.0.get()
    }

    /// The object, parsed.
    pub fn value(&self) -> Map<String, Value> {
        serde_json::from_str(self.0.get()).unwrap_or_default()
    }
}

/// `text` without its top-level key `skip`, and the string value of its
/// top-level key `id`, when `text` is a JSON object written exactly as
/// `serde_json` writes its tree (what [`CompactObject::without`] writes):
/// no space between tokens, no escape in any string, every number a plain
/// integer of at most 18 digits (not `-0`), no key twice in any object.
/// `None` for anything else (the caller then goes through the tree;
/// [`CompactObject::from_plain`] keeps the text).
///
/// With no escape, a string is written back as it stands (`serde_json`
/// escapes only quotes, backslashes and control characters, which JSON
/// does not allow unescaped); such an integer reads as `u64` or `i64` and
/// is written back with the same digits; with each key once, the tree
/// keeps every entry in its place.
pub(crate) fn plain_without<'a>(text: &'a str, skip: &str, id: &str) -> Option<(String, &'a str)> {
    // Without `serde_json`'s `preserve_order` (the SDK's schema crate
    // enables it) the tree sorts its keys: the tree decides.
    static PRESERVES_ORDER: std::sync::LazyLock<bool> = std::sync::LazyLock::new(|| {
        serde_json::from_str::<Map<String, Value>>(r#"{"b":0,"a":0}"#)
            .is_ok_and(|m| m.keys().next().is_some_and(|k| k == "b"))
    });
    if !*PRESERVES_ORDER {
        return None;
    }
    let mut walk = PlainWalk {
        bytes: text.as_bytes(),
        at: 0,
        // Room for the keys of a tool call and its nested objects at once:
        // grown from nothing, the list was allocated three times a call.
        keys: Vec::with_capacity(32),
    };
    let mut out = String::with_capacity(text.len());
    out.push('{');
    let mut found = None;
    walk.object(|walk, key, entry_start| {
        let value_start = walk.at;
        walk.value()?;
        let (entry, value) = (&text[entry_start..walk.at], &text[value_start..walk.at]);
        if key == id.as_bytes() {
            found = Some(value.strip_prefix('"')?.strip_suffix('"')?);
        }
        if key != skip.as_bytes() {
            if out.len() > 1 {
                out.push(',');
            }
            out.push_str(entry);
        }
        Some(())
    })?;
    (walk.at == text.len()).then_some(())?;
    out.push('}');
    Some((out, found?))
}

/// The walk of [`plain_without`].
struct PlainWalk<'a> {
    bytes: &'a [u8],
    at: usize,
    /// The keys of the objects open, outermost first (each object's are
    /// compared with one another).
    keys: Vec<(usize, usize)>,
}

impl PlainWalk<'_> {
    fn byte(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// A string with no escape; its place without the quotes.
    fn string(&mut self) -> Option<(usize, usize)> {
        (self.byte()? == b'"').then_some(())?;
        let start = self.at + 1;
        let end = start + memchr::memchr2(b'"', b'\\', self.bytes.get(start..)?)?;
        (self.bytes.get(end) == Some(&b'"')).then_some(())?;
        self.at = end + 1;
        Some((start, end))
    }

    /// An object: `entry` is called with the cursor on each value, with
    /// its key and where its entry starts, and moves past the value.
    fn object(
        &mut self,
        mut entry: impl FnMut(&mut Self, &[u8], usize) -> Option<()>,
    ) -> Option<()> {
        (self.byte()? == b'{').then_some(())?;
        self.at += 1;
        if self.byte()? == b'}' {
            self.at += 1;
            return Some(());
        }
        let first = self.keys.len();
        loop {
            let entry_start = self.at;
            let (start, end) = self.string()?;
            let bytes = self.bytes;
            let key = bytes.get(start..end)?;
            if self
                .keys
                .iter()
                .skip(first)
                .any(|&(s, e)| bytes.get(s..e) == Some(key))
            {
                return None;
            }
            self.keys.push((start, end));
            (self.byte()? == b':').then_some(())?;
            self.at += 1;
            entry(self, key, entry_start)?;
            match self.byte()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    self.keys.truncate(first);
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn value(&mut self) -> Option<()> {
        match self.byte()? {
            b'"' => self.string().map(drop),
            b'{' => self.object(|walk, _, _| walk.value()),
            b'[' => {
                self.at += 1;
                if self.byte()? == b']' {
                    self.at += 1;
                    return Some(());
                }
                loop {
                    self.value()?;
                    match self.byte()? {
                        b',' => self.at += 1,
                        b']' => {
                            self.at += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            b't' => self.word(b"true"),
            b'f' => self.word(b"false"),
            b'n' => self.word(b"null"),
            _ => self.integer(),
        }
    }

    fn word(&mut self, word: &[u8]) -> Option<()> {
        self.bytes.get(self.at..)?.starts_with(word).then_some(())?;
        self.at += word.len();
        Some(())
    }

    /// `0`, or an optional minus and digits not starting with `0`; at most
    /// 18 digits; not followed by a fraction or an exponent.
    fn integer(&mut self) -> Option<()> {
        let negative = self.byte()? == b'-';
        if negative {
            self.at += 1;
        }
        let rest = self.bytes.get(self.at..)?;
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        let zero_led = digits > 1 && rest.first() == Some(&b'0');
        // `-0` reads as a float, written `-0.0`.
        let minus_zero = negative && rest.first() == Some(&b'0');
        if digits == 0 || digits > 18 || zero_led || minus_zero {
            return None;
        }
        self.at += digits;
        (!matches!(self.byte(), Some(b'.' | b'e' | b'E'))).then_some(())
    }
}

impl PartialEq for CompactObject {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Serialize for CompactObject {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// Texts shorter than this go to the serializer as strings.
const LONG_TEXT: usize = 4 << 10;

/// Serializes a run's text (`serialize_with`) as the JSON string serde_json
/// writes: a long one is escaped here a word at a time, where serde_json
/// takes it a byte at a time, and goes out as a raw value (for the largest
/// texts, most of the state's document: BENCHMARKS.md).
pub(crate) fn serialize_text<S: serde::Serializer>(text: &str, s: S) -> Result<S::Ok, S::Error> {
    if text.len() < LONG_TEXT {
        return s.serialize_str(text);
    }
    let json = json_string(text);
    match serde_json::from_str::<&RawValue>(&json) {
        Ok(raw) => raw.serialize(s),
        Err(_) => s.serialize_str(text),
    }
}

/// `text` as a JSON string, escaped as serde_json escapes it: a quote, a
/// backslash and the control characters (`\n`, `\r`, `\t`, `\b`, `\f`,
/// the others as `\u00xx`); everything else as it stands.
fn json_string(text: &str) -> String {
    use std::fmt::Write;
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len() + text.len() / 32 + 2);
    out.push('"');
    let mut start = 0;
    while let Some(at) = next_to_escape(bytes, start) {
        // Every byte escaped is ASCII: `at` is a character boundary.
        let (Some(run), Some(&byte)) = (text.get(start..at), bytes.get(at)) else {
            break;
        };
        out.push_str(run);
        match byte {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            control => {
                let _ = write!(out, "\\u{control:04x}");
            }
        }
        start = at + 1;
    }
    out.push_str(text.get(start..).unwrap_or_default());
    out.push('"');
    out
}

/// The first byte at or after `from` that a JSON string escapes (a quote,
/// a backslash, a byte below 0x20), eight bytes at a time: in each word, a
/// byte's high bit is set in `found` where the byte is below 0x20 or equal
/// to a quote or a backslash (equal: their difference is zero). A borrow
/// can set a bit only above a byte found, so the lowest bit set is exact.
fn next_to_escape(bytes: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGH: u64 = ONES << 7;
    let mut words = bytes.get(from..)?.chunks_exact(8);
    let mut at = from;
    for word in words.by_ref() {
        let mut w = [0; 8];
        w.copy_from_slice(word);
        let w = u64::from_le_bytes(w);
        let quote = w ^ (ONES * u64::from(b'"'));
        let backslash = w ^ (ONES * u64::from(b'\\'));
        let found = (w.wrapping_sub(ONES * 0x20)
            | (quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash))
            & !w
            & HIGH;
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    let rest = words.remainder();
    let i = rest
        .iter()
        .position(|&b| b < 0x20 || b == b'"' || b == b'\\')?;
    Some(at + i)
}

#[cfg(feature = "schema")]
impl JsonSchema for CompactObject {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CompactObject".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "object" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What the tree path keeps: the object without `sessionUpdate`, and
    /// its `toolCallId`.
    fn through_tree(text: &str) -> Option<(String, String)> {
        let object: Map<String, Value> = serde_json::from_str(text).ok()?;
        let id = object.get("toolCallId")?.as_str()?.to_owned();
        Some((
            CompactObject::without(&object, "sessionUpdate")
                .as_str()
                .to_owned(),
            id,
        ))
    }

    fn plain(text: &str) -> Option<(String, String)> {
        plain_without(text, "sessionUpdate", "toolCallId").map(|(t, id)| (t, id.to_owned()))
    }

    #[test]
    fn compact_text_is_kept_as_it_stands_without_the_skipped_key() {
        for (text, kept) in [
            (
                r#"{"sessionUpdate":"tool_call","toolCallId":"t","kind":"read","status":"pending"}"#,
                r#"{"toolCallId":"t","kind":"read","status":"pending"}"#,
            ),
            (
                r#"{"toolCallId":"t","sessionUpdate":"tool_call_update","n":[0,-12,{"a":null,"b":true}]}"#,
                r#"{"toolCallId":"t","n":[0,-12,{"a":null,"b":true}]}"#,
            ),
            (
                r#"{"toolCallId":"t","x":{},"y":[],"sessionUpdate":"tool_call"}"#,
                r#"{"toolCallId":"t","x":{},"y":[]}"#,
            ),
            (r#"{"toolCallId":"é ✓"}"#, r#"{"toolCallId":"é ✓"}"#),
        ] {
            let got = plain(text).unwrap_or_else(|| panic!("not plain: {text}"));
            assert_eq!(got.0, kept);
            assert_eq!(Some(got), through_tree(text), "{text}");
        }
    }

    #[test]
    fn text_the_tree_would_write_otherwise_is_left_to_the_tree() {
        for text in [
            // Space between tokens.
            r#"{"toolCallId":"t", "a":1}"#,
            r#"{ "toolCallId":"t"}"#,
            r#"{"toolCallId" :"t"}"#,
            // Escapes, in a key or a value.
            r#"{"toolCallId":"t","a":"x\"y"}"#,
            r#"{"toolCallId":"t","a\u0062":1}"#,
            r#"{"toolCallId":"t","a":"\/"}"#,
            // Numbers the tree writes otherwise.
            r#"{"toolCallId":"t","a":1.0}"#,
            r#"{"toolCallId":"t","a":1e3}"#,
            r#"{"toolCallId":"t","a":-0}"#,
            r#"{"toolCallId":"t","a":1234567890123456789}"#,
            // A key twice, at any depth.
            r#"{"toolCallId":"t","a":1,"a":2}"#,
            r#"{"toolCallId":"t","a":{"b":1,"b":2}}"#,
            r#"{"toolCallId":"t","a":[{"b":1,"c":0,"b":2}]}"#,
            r#"{"sessionUpdate":"tool_call","toolCallId":"t","sessionUpdate":"tool_call"}"#,
            // No string id.
            r#"{"toolCallId":7}"#,
            r#"{"title":"x"}"#,
            // Not one object.
            r#"{"toolCallId":"t"} "#,
            r#"[{"toolCallId":"t"}]"#,
            r#"{"toolCallId":"t""#,
        ] {
            assert_eq!(plain(text), None, "{text}");
        }
        // The same key in two objects is no repetition.
        let nested = r#"{"toolCallId":"t","a":{"b":1},"c":{"b":2},"b":[{"b":0},{"b":1}]}"#;
        assert_eq!(plain(nested), through_tree(nested));
    }

    /// Whether `serde_json` writes `v` with no escape and only integers of
    /// at most 18 digits.
    fn plainly(v: &Value) -> bool {
        let plain_str = |s: &str| !s.chars().any(|c| c == '"' || c == '\\' || c < ' ');
        match v {
            Value::Number(n) => {
                (n.is_i64() || n.is_u64()) && n.to_string().trim_start_matches('-').len() <= 18
            }
            Value::String(s) => plain_str(s),
            Value::Array(items) => items.iter().all(plainly),
            Value::Object(o) => o.iter().all(|(k, v)| plain_str(k) && plainly(v)),
            _ => true,
        }
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            "[a-c\\\"/é\n ]{0,6}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 24, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(("[a-d]{1,2}", inner), 0..5)
                    .prop_map(|entries| Value::Object(entries.into_iter().collect())),
            ]
        })
    }

    fn tool_call() -> impl Strategy<Value = Map<String, Value>> {
        (
            prop::collection::vec(("[a-d]{1,2}", json_value()), 0..5),
            "[a-z0-9-]{1,8}",
            0usize..6,
        )
            .prop_map(|(entries, id, at)| {
                let mut object: Map<String, Value> = entries.into_iter().collect();
                object.insert("toolCallId".into(), id.into());
                let mut all: Vec<(String, Value)> = object.into_iter().collect();
                all.insert(
                    at.min(all.len()),
                    ("sessionUpdate".into(), "tool_call".into()),
                );
                all.into_iter().collect()
            })
    }

    /// A run's text serialized through [`serialize_text`].
    #[derive(Serialize)]
    struct Text<'a>(#[serde(serialize_with = "serialize_text")] &'a str);

    #[test]
    fn a_long_text_is_written_as_serde_json_writes_it() {
        let mut text = String::new();
        // Every byte that needs an escape, at every offset of a word, after
        // characters of one to four bytes.
        let fillers = ["", "x", "é", "✓", "𝄞", "xé", "é✓x", "abcdefg"];
        for (i, c) in (0u8..0x20).map(char::from).chain(['"', '\\']).enumerate() {
            for filler in fillers.iter().cycle().skip(i).take(3) {
                text.push_str(filler);
                text.push(c);
            }
        }
        while text.len() < 2 * LONG_TEXT {
            text.push_str("the agent reads src/main.rs\n\t\"quoted\" \\ é ✓ \u{7f}\u{1}");
        }
        let expected = serde_json::to_string(&text).unwrap();
        assert_eq!(json_string(&text), expected);
        assert_eq!(serde_json::to_string(&Text(&text)).unwrap(), expected);
        // Into a JSON tree it is the string itself.
        assert_eq!(
            serde_json::to_value(Text(&text)).unwrap(),
            Value::String(text.clone())
        );
        // A short text goes to the serializer as a string.
        assert_eq!(serde_json::to_string(&Text("a\"b")).unwrap(), r#""a\"b""#);
    }

    proptest! {
        // Whatever the walk keeps is what the tree keeps, and it keeps the
        // compact text of any object with plain strings and integers.
        #[test]
        fn the_walk_keeps_what_the_tree_keeps(object in tool_call()) {
            let compact = serde_json::to_string(&object).unwrap();
            let got = plain(&compact);
            if let Some(got) = &got {
                prop_assert_eq!(Some(got.clone()), through_tree(&compact));
            }
            prop_assert_eq!(got.is_some(), plainly(&Value::Object(object.clone())), "{}", compact);
            let pretty = serde_json::to_string_pretty(&object).unwrap();
            if let Some(got) = plain(&pretty) {
                prop_assert_eq!(Some(got), through_tree(&pretty));
            }
        }

        // Any string is escaped as serde_json escapes it, wherever its
        // escapes fall in a word.
        #[test]
        fn a_text_is_escaped_as_serde_json_escapes_it(
            text in "[a\"\\\\\u{0}-\u{1f}\u{7f}é✓𝄞 ]{0,40}",
            any_text in any::<String>(),
        ) {
            for t in [&text, &any_text] {
                prop_assert_eq!(json_string(t), serde_json::to_string(t).unwrap());
            }
        }
    }
}
