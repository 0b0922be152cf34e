//! Writing a state as JSON: [`write_json`] gives the bytes
//! `serde_json::to_writer` gives, faster where most of them are (the run
//! texts, which serde_json escapes byte by byte).

use std::cell::{Cell, RefCell};
use std::io;

use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

/// Texts shorter than this are written by serde_json itself.
const LONG_TEXT: usize = 4 << 10;

thread_local! {
    /// Set while [`write_json`] writes: the serializer is serde_json's, so a
    /// long text may go out as the JSON string already written.
    static WRITING_JSON: Cell<bool> = const { Cell::new(false) };
    /// The JSON string of the text being written, reused from text to text
    /// and freed when [`write_json`] returns.
    static ESCAPED: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Writes `value` (a [`ConnectionState`](super::ConnectionState), or a
/// document that holds one) as compact JSON to `writer`: the same bytes as
/// `serde_json::to_writer`, with each long run text escaped a word at a
/// time instead of a byte at a time.
///
/// ```
/// use acp_extension_core::state::{write_json, ConnectionState};
///
/// let state = ConnectionState::new();
/// let mut out = Vec::new();
/// write_json(&mut out, &state)?;
/// assert_eq!(out, serde_json::to_vec(&state)?);
/// # Ok::<_, serde_json::Error>(())
/// ```
pub fn write_json<W: io::Write>(writer: W, value: &impl Serialize) -> serde_json::Result<()> {
    struct Unset;
    impl Drop for Unset {
        fn drop(&mut self) {
            WRITING_JSON.set(false);
            ESCAPED.with(|buffer| {
                if let Ok(mut escaped) = buffer.try_borrow_mut() {
                    *escaped = String::new();
                }
            });
        }
    }
    let was = WRITING_JSON.replace(true);
    let _unset = (!was).then_some(Unset);
    serde_json::to_writer(writer, value)
}

/// The `serialize_with` of a run's text: a string, as any serializer
/// writes it; under [`write_json`], a long one goes out as its JSON string
/// escaped here.
pub(crate) fn serialize_text<S: Serializer>(text: &str, s: S) -> Result<S::Ok, S::Error> {
    if text.len() < LONG_TEXT || !WRITING_JSON.get() {
        return s.serialize_str(text);
    }
    ESCAPED.with(|buffer| {
        let Ok(mut escaped) = buffer.try_borrow_mut() else {
            return s.serialize_str(text);
        };
        escaped.clear();
        escape_json_string(text, &mut escaped);
        // A borrowed raw value: serde_json checks the string (a fast scan)
        // and writes it as it stands.
        match serde_json::from_str::<&RawValue>(&escaped) {
            Ok(raw) => raw.serialize(s),
            Err(_) => s.serialize_str(text),
        }
    })
}

/// Appends `text` as a JSON string, quotes included, escaped as serde_json
/// escapes it: `"` and `\` with a backslash, `\b \f \n \r \t` short, other
/// control characters as `\u00xx` (lower-case hex), everything else as it
/// is.
pub(crate) fn escape_json_string(text: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + bytes.len() / 32 + 2);
    out.push('"');
    let mut start = 0;
    let mut at = 0;
    while let Some(i) = next_escape(bytes, at) {
        out.push_str(&text[start..i]);
        let byte = bytes[i];
        match byte {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            _ => {
                out.push_str("\\u00");
                out.push(char::from(HEX[usize::from(byte >> 4)]));
                out.push(char::from(HEX[usize::from(byte & 0xf)]));
            }
        }
        start = i + 1;
        at = i + 1;
    }
    out.push_str(&text[start..]);
    out.push('"');
}

/// The index of the first byte at or after `from` that a JSON string must
/// escape (`"`, `\`, or below 0x20), eight bytes at a time.
fn next_escape(bytes: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = u64::MAX / 255;
    const HIGHS: u64 = ONES << 7;
    let needs = |b: u8| b < 0x20 || b == b'"' || b == b'\\';
    let mut i = from;
    while i + 8 <= bytes.len() {
        let mut word = [0; 8];
        word.copy_from_slice(&bytes[i..i + 8]);
        let w = u64::from_le_bytes(word);
        // A byte below 0x20, or equal to `"` or `\`, sets its high bit
        // (bytes of 0x80 and above are excluded by `!w`).
        let control = w.wrapping_sub(ONES * 0x20);
        let quote = (w ^ (ONES * u64::from(b'"'))).wrapping_sub(ONES);
        let backslash = (w ^ (ONES * u64::from(b'\\'))).wrapping_sub(ONES);
        if (control | quote | backslash) & !w & HIGHS != 0 {
            // The first such byte is within these eight (a borrow may
            // mark a later byte too, never an earlier one).
            return (i..i + 8).find(|&j| needs(bytes[j]));
        }
        i += 8;
    }
    (i..bytes.len()).find(|&j| needs(bytes[j]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_as_serde_json_does() {
        let mut cases: Vec<String> = vec![
            String::new(),
            "plain".into(),
            "\"quoted\" and \\ back".into(),
            "été ✓ 😀 \u{7f} \u{80}".into(),
        ];
        // Every byte below 0x80 at every position of a word.
        for b in 0u8..0x80 {
            for pos in 0..17 {
                let mut s = "abcdefghijklmnopq".to_owned();
                s.insert(pos, char::from(b));
                cases.push(s);
            }
        }
        // Pseudo-random texts of ASCII, controls and multi-byte characters.
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let pool = [
            'a', ' ', '\n', '"', '\\', '\u{1}', '\u{1f}', 'é', '😀', '\t', '/', '\u{7f}',
        ];
        for len in 0..200 {
            let s: String = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    pool[(seed % pool.len() as u64) as usize]
                })
                .collect();
            cases.push(s);
        }
        for case in cases {
            let mut ours = String::new();
            escape_json_string(&case, &mut ours);
            assert_eq!(ours, serde_json::to_string(&case).unwrap(), "{case:?}");
        }
    }

    #[test]
    fn long_texts_are_written_as_serde_json_writes_them() {
        #[derive(Serialize)]
        struct Doc<'a> {
            #[serde(serialize_with = "serialize_text")]
            text: &'a str,
            other: &'a str,
        }
        let long = "line \"one\"\n\ttab \\ é\u{1}\n".repeat(1000);
        let doc = Doc {
            text: &long,
            other: "short",
        };
        let mut ours = Vec::new();
        write_json(&mut ours, &doc).unwrap();
        assert_eq!(ours, serde_json::to_vec(&doc).unwrap());
        // Outside write_json, any serializer sees a plain string.
        assert_eq!(serde_json::to_value(&doc).unwrap()["text"], long.as_str());
    }
}
