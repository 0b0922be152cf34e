//! Writing a state as JSON: [`write_json`] gives the bytes
//! `serde_json::to_writer` gives, faster where most of them are: the run
//! texts, which serde_json escapes byte by byte, and the tool calls, which
//! the state keeps as compact JSON text and which go out as they stand,
//! with no second reading as JSON. [`write_json_parallel`] writes the
//! same bytes with a state's invalid records rendered on a second thread
//! while the rest goes out.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::io;
use std::sync::LazyLock;
use std::sync::mpsc::{Receiver, sync_channel};

use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use crate::wire::scan::to_escape;

/// Texts shorter than this are written by serde_json itself.
const LONG_TEXT: usize = 4 << 10;

/// [`write_json_parallel`] renders a state's invalid records ahead when
/// it has at least this many (fewer take less time than a thread's start).
const RECORDS_AHEAD: usize = 4096;

thread_local! {
    /// Set while [`write_json`] writes: [`WAITING`] is freed when the
    /// outermost call returns.
    static WRITING_JSON: Cell<bool> = const { Cell::new(false) };
    /// JSON text waiting for [`RawFormatter`] to write it in place of the
    /// [`placeholder`] just handed to the serializer; reused from value to
    /// value and freed when [`write_json`] returns.
    static WAITING: RefCell<String> = const { RefCell::new(String::new()) };
    /// Whether [`WAITING`] holds a text to write.
    static IS_WAITING: Cell<bool> = const { Cell::new(false) };
    /// Invalid records being rendered on another thread by
    /// [`write_json_parallel`]: the address of the records, and where
    /// their JSON text comes.
    static AHEAD: RefCell<Option<(usize, Receiver<serde_json::Result<String>>)>> =
        const { RefCell::new(None) };
}

/// The raw value handed to the serializer in place of JSON text that
/// [`RawFormatter`] writes itself: serde_json takes a raw value only after
/// reading it once as JSON, and the texts written this way are JSON
/// already (a string escaped here, a tool call cut from a line a parser
/// accepted).
fn placeholder() -> &'static RawValue {
    static PLACEHOLDER: LazyLock<Box<RawValue>> = LazyLock::new(|| {
        let text = r#""\u0000 raw JSON written by acp_extension_core::state::write_json""#;
        #[expect(clippy::expect_used, reason = "a constant JSON string")]
        let raw = RawValue::from_string(text.to_owned()).expect("a JSON string");
        raw
    });
    &PLACEHOLDER
}

/// serde_json's compact formatter, but for the [`placeholder`], in whose
/// place it writes the waiting text.
struct RawFormatter;

impl serde_json::ser::Formatter for RawFormatter {
    fn write_raw_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        if IS_WAITING.get() && fragment == placeholder().get() {
            IS_WAITING.set(false);
            return WAITING.with(|text| writer.write_all(text.borrow().as_bytes()));
        }
        writer.write_all(fragment.as_bytes())
    }
}

/// Writes `value` (a [`ConnectionState`](super::ConnectionState), or a
/// document that holds one) as compact JSON to `writer`: the same bytes as
/// `serde_json::to_writer`, with each long run text escaped a word at a
/// time instead of a byte at a time, and each tool call copied as it is
/// kept.
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
            IS_WAITING.set(false);
            WAITING.with(|buffer| {
                if let Ok(mut text) = buffer.try_borrow_mut() {
                    *text = String::new();
                }
            });
        }
    }
    let was = WRITING_JSON.replace(true);
    let _unset = (!was).then_some(Unset);
    value.serialize(&mut serde_json::Serializer::with_formatter(
        writer,
        RawFormatter,
    ))
}

/// [`write_json`] of `value`, which holds `state`, with the state's
/// invalid records rendered on a second thread while the rest of `value`
/// is written before them: the same bytes, sooner on two cores when the
/// records are many (BENCHMARKS.md: the follower benchmark's state, whose
/// 20,000 records come after 32 MB of sessions, is written some 10 ms
/// sooner).
/// With few records, or when no thread can be started, it is
/// [`write_json`].
///
/// ```
/// use acp_extension_core::state::{write_json, write_json_parallel, ConnectionState};
///
/// let mut state = ConnectionState::new();
/// for _ in 0..5000 {
///     state.unreadable("not-json", "expected value at line 1 column 1");
/// }
/// let mut out = Vec::new();
/// write_json_parallel(&mut out, &state, &state)?;
/// assert_eq!(out, serde_json::to_vec(&state)?);
/// # Ok::<_, serde_json::Error>(())
/// ```
pub fn write_json_parallel<W: io::Write>(
    writer: W,
    value: &impl Serialize,
    state: &super::ConnectionState,
) -> serde_json::Result<()> {
    let records = state.invalid_records();
    if records.len() < RECORDS_AHEAD {
        return write_json(writer, value);
    }
    std::thread::scope(|scope| {
        let (tx, rx) = sync_channel(1);
        let rendering = std::thread::Builder::new()
            .name("acp-write-ahead".into())
            .spawn_scoped(scope, move || {
                // Room for records of a few hundred bytes, so that the text
                // is not copied as it grows (room not written is never
                // faulted in).
                let mut out = Vec::with_capacity(records.len().saturating_mul(256));
                let text = write_json(&mut out, records)
                    .and_then(|()| String::from_utf8(out).map_err(serde::ser::Error::custom));
                // The writer took it, or did not come to the records.
                let _ = tx.send(text);
            });
        if rendering.is_err() {
            return write_json(writer, value);
        }
        let outer = AHEAD.replace(Some((address(records), rx)));
        let written = write_json(writer, value);
        // Not taken when `value` did not hold the records: dropped.
        AHEAD.set(outer);
        written
    })
}

fn address<T>(value: &T) -> usize {
    std::ptr::from_ref(value).addr()
}

/// The `serialize_with` of a state's invalid records: under
/// [`write_json_parallel`], their JSON text rendered on its thread; else
/// the records, as any serializer writes them.
pub(crate) fn serialize_records<S: Serializer>(
    records: &VecDeque<super::Invalid>,
    s: S,
) -> Result<S::Ok, S::Error> {
    if !is_write_json::<S>() {
        return records.serialize(s);
    }
    let ahead = AHEAD.with(|ahead| {
        let mut ahead = ahead.try_borrow_mut().ok()?;
        match &*ahead {
            Some((at, _)) if *at == address(records) => ahead.take().map(|(_, rx)| rx),
            _ => None,
        }
    });
    match ahead.map(|rx| rx.recv()) {
        Some(Ok(Ok(text))) => {
            #[cfg(test)]
            tests::WRITTEN_AHEAD.set(tests::WRITTEN_AHEAD.get() + 1);
            write_raw(s, move |out| *out = text).unwrap_or_else(|s| records.serialize(s))
        }
        _ => records.serialize(s),
    }
}

/// Whether `S` is the serializer of [`write_json`]: serde_json's, with
/// [`RawFormatter`] (a type private to this module, named in full in
/// `S`'s name). Only it is handed a [`placeholder`]; any other serializer,
/// even one a value calls within `write_json` (`serde_json::to_value` in a
/// hand-written impl), gets the value itself.
fn is_write_json<S>() -> bool {
    std::any::type_name::<S>().ends_with(concat!(module_path!(), "::RawFormatter>"))
}

/// With [`write_json`]'s serializer, serializes the JSON text that `fill`
/// writes, as it stands (the formatter writes it); with any other, hands
/// `s` back.
pub(crate) fn write_raw<S: Serializer>(
    s: S,
    fill: impl FnOnce(&mut String),
) -> Result<Result<S::Ok, S::Error>, S> {
    if !is_write_json::<S>() || IS_WAITING.get() {
        return Err(s);
    }
    let filled = WAITING.with(|buffer| {
        let Ok(mut text) = buffer.try_borrow_mut() else {
            return false;
        };
        text.clear();
        fill(&mut text);
        true
    });
    if !filled {
        return Err(s);
    }
    IS_WAITING.set(true);
    let written = placeholder().serialize(s);
    if IS_WAITING.replace(false) {
        // Not reached: the formatter writes the text in the placeholder's
        // place. Were it not, the placeholder went out instead: fail.
        return Ok(Err(serde::ser::Error::custom(
            "write_json: raw JSON text was not written",
        )));
    }
    Ok(written)
}

/// The `serialize_with` of a run's text: a string, as any serializer
/// writes it; under [`write_json`], a long one goes out as its JSON string
/// escaped here.
pub(crate) fn serialize_text<S: Serializer>(text: &str, s: S) -> Result<S::Ok, S::Error> {
    if text.len() < LONG_TEXT {
        return s.serialize_str(text);
    }
    write_raw(s, |out| escape_json_string(text, out)).unwrap_or_else(|s| s.serialize_str(text))
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
    while let Some(i) = to_escape(bytes, at) {
        // `i` is an ASCII byte's place: a char boundary.
        out.push_str(text.get(start..i).unwrap_or_default());
        let byte = bytes.get(i).copied().unwrap_or_default();
        match byte {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            _ => {
                let hex = |n: u8| char::from(HEX.get(usize::from(n)).copied().unwrap_or(b'0'));
                out.push_str("\\u00");
                out.push(hex(byte >> 4));
                out.push(hex(byte & 0xf));
            }
        }
        start = i + 1;
        at = i + 1;
    }
    out.push_str(text.get(start..).unwrap_or_default());
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        /// How many times [`serialize_records`] wrote records rendered
        /// ahead, on this thread.
        pub(super) static WRITTEN_AHEAD: Cell<usize> = const { Cell::new(0) };
    }

    /// A state with `n` invalid records (values that are not JSON).
    fn state_with_records(n: usize) -> crate::state::ConnectionState {
        let mut state = crate::state::ConnectionState::new();
        for i in 0..n {
            state.unreadable("not-json", &format!("line {i}: \"quoted\" \\ é\u{1}"));
        }
        state
    }

    #[test]
    fn records_rendered_ahead_are_written_as_serde_json_writes_them() {
        #[derive(Serialize)]
        struct Doc<'a> {
            file: &'a str,
            #[serde(flatten)]
            state: &'a crate::state::ConnectionState,
            after: u8,
        }
        for n in [0, 10, RECORDS_AHEAD - 1, RECORDS_AHEAD, 3 * RECORDS_AHEAD] {
            let state = state_with_records(n);
            let doc = Doc {
                file: "f.jsonl",
                state: &state,
                after: 1,
            };
            let before = WRITTEN_AHEAD.get();
            let mut ours = Vec::new();
            write_json_parallel(&mut ours, &doc, &state).unwrap();
            assert_eq!(
                String::from_utf8(ours).unwrap(),
                serde_json::to_string(&doc).unwrap(),
                "{n} records"
            );
            // From RECORDS_AHEAD on, the records went out as rendered on
            // the other thread.
            let ahead = usize::from(n >= RECORDS_AHEAD);
            assert_eq!(WRITTEN_AHEAD.get() - before, ahead, "{n} records");
            // The state on its own, too.
            let mut ours = Vec::new();
            write_json_parallel(&mut ours, &state, &state).unwrap();
            assert_eq!(ours, serde_json::to_vec(&state).unwrap(), "{n} records");
        }
    }

    #[test]
    fn a_value_without_the_state_is_written_as_it_is() {
        let state = state_with_records(RECORDS_AHEAD);
        let other = state_with_records(3);
        let before = WRITTEN_AHEAD.get();
        let mut ours = Vec::new();
        write_json_parallel(&mut ours, &other, &state).unwrap();
        assert_eq!(ours, serde_json::to_vec(&other).unwrap());
        assert_eq!(WRITTEN_AHEAD.get(), before);
        // Nothing left behind for a later write of the state.
        let mut again = Vec::new();
        write_json(&mut again, &state).unwrap();
        assert_eq!(again, serde_json::to_vec(&state).unwrap());
        assert_eq!(WRITTEN_AHEAD.get(), before);
    }

    #[test]
    fn escapes_as_serde_json_does() {
        let mut cases: Vec<String> = vec![
            String::new(),
            "plain".into(),
            "\"quoted\" and \\ back".into(),
            "été ✓ 😀 \u{7f} \u{80}".into(),
        ];
        // Every byte below 0x80 at every position of two steps and a word.
        for b in 0u8..0x80 {
            for pos in 0..41 {
                let mut s = "abcdefghijklmnopqrstuvwxyzabcdefghijklmn".to_owned();
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

    /// A run with a long text and tool calls kept three ways: cut from
    /// their line as they stand, merged through a tree, and cut from a
    /// line that is not plain (read through its tree).
    fn folded_state() -> crate::state::ConnectionState {
        use crate::connection::{EventParse, parse_line_with};
        use crate::state::{ConnectionState, Direction};
        let mut state = ConnectionState::new();
        let event = |body: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","method":"_lody/subagents/event","params":{{"version":1,"sessionId":"s","runId":"r",{body}}}}}"#
            )
        };
        let chunk = r#"words \"quoted\" and a tab\t, "#.repeat(300);
        let lines = [
            event(
                r#""type":"snapshot","snapshot":{"state":"running","support":{"stream":["text","tool"],"progress":false,"outputRead":"none","cancel":false}}"#,
            ),
            event(&format!(
                r#""type":"output","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{chunk}"}}}}"#
            )),
            event(
                r#""type":"output","update":{"sessionUpdate":"tool_call","toolCallId":"plain","title":"Read","kind":"read","status":"pending","locations":[{"path":"/a","line":3}]}"#,
            ),
            event(
                r#""type":"output","update":{"sessionUpdate":"tool_call","toolCallId":"merged","title":"Edit","status":"pending"}"#,
            ),
            event(
                r#""type":"output","update":{"sessionUpdate":"tool_call_update","toolCallId":"merged","status":"completed"}"#,
            ),
            event(
                r#""type":"output","update":{"sessionUpdate":"tool_call", "toolCallId":"spaced","title":"Grep é","rawInput":{"n":1.5}}"#,
            ),
        ];
        for line in &lines {
            state.parsed(
                Direction::AgentToClient,
                &parse_line_with(line.as_bytes(), EventParse::OutputOnDemand),
            );
        }
        state
    }

    #[test]
    fn tool_calls_kept_as_text_are_written_as_serde_json_writes_them() {
        let state = folded_state();
        let run = &state.session("s").expect("the session").subagent_runs["r"];
        assert!(run.text.len() >= LONG_TEXT, "the text goes out raw too");
        assert!(state.invalid.is_empty(), "{:?}", state.invalid);
        assert_eq!(
            run.tool_calls.keys().collect::<Vec<_>>(),
            ["plain", "merged", "spaced"]
        );
        let mut ours = Vec::new();
        write_json(&mut ours, &state).unwrap();
        assert_eq!(
            String::from_utf8(ours).unwrap(),
            serde_json::to_string(&state).unwrap()
        );
        let tree = serde_json::to_value(&state).unwrap();
        let calls = &tree["sessions"]["s"]["subagentRuns"]["r"]["toolCalls"];
        assert_eq!(
            calls["plain"],
            serde_json::json!({"toolCallId": "plain", "title": "Read", "kind": "read", "status": "pending", "locations": [{"path": "/a", "line": 3}]})
        );
        assert_eq!(
            calls["merged"],
            serde_json::json!({"toolCallId": "merged", "title": "Edit", "status": "completed"})
        );
        assert_eq!(calls["spaced"]["rawInput"], serde_json::json!({"n": 1.5}));
    }

    #[test]
    fn only_write_json_s_serializer_is_handed_raw_text() {
        type Ours<'a, W> = &'a mut serde_json::Serializer<W, RawFormatter>;
        assert!(is_write_json::<Ours<'_, Vec<u8>>>());
        assert!(is_write_json::<Ours<'_, &mut io::BufWriter<io::Stdout>>>());
        assert!(!is_write_json::<&mut serde_json::Serializer<Vec<u8>>>());
        assert!(!is_write_json::<serde_json::value::Serializer>());
        // What the serializer writes, through the formatter: the waiting
        // text in the placeholder's place.
        let mut out = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(&mut out, RawFormatter);
        write_raw(&mut ser, |text| text.push_str(r#"{"a":[1,"b"]}"#))
            .ok()
            .expect("write_json's serializer takes raw text")
            .unwrap();
        assert_eq!(out, br#"{"a":[1,"b"]}"#);
        assert!(write_raw(&mut serde_json::Serializer::new(Vec::new()), |_| {}).is_err());
    }

    #[test]
    fn a_state_handed_to_another_serializer_within_write_json_is_written_as_it_writes_it() {
        struct Nested(crate::state::ConnectionState);
        impl Serialize for Nested {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let tree = serde_json::to_value(&self.0).map_err(serde::ser::Error::custom)?;
                tree.serialize(s)
            }
        }
        let nested = Nested(folded_state());
        let mut ours = Vec::new();
        write_json(&mut ours, &nested).unwrap();
        let theirs = serde_json::to_vec(&nested).unwrap();
        assert_eq!(ours, theirs);
        // The state itself, written directly, gives the same bytes.
        assert_eq!(ours, serde_json::to_vec(&nested.0).unwrap());
        let mut direct = Vec::new();
        write_json(&mut direct, &nested.0).unwrap();
        assert_eq!(direct, theirs);
    }
}
