//! Readers for the inputs `acp-ext check` accepts, turning each into a
//! stream of JSON-RPC messages with a line number and a direction.
//!
//! - [`Format::JsonRpc`]: one JSON-RPC message per line (ACP's stdio
//!   framing), from either peer's point of view; direction is inferred.
//! - [`Format::Tap`]: what `acp-ext tap --record` writes, one
//!   `{"dir":"c2a"|"a2c","t":seconds,"msg":message}` per line (or `"raw"`
//!   instead of `"msg"` when the bytes on the wire were not JSON).
//! - [`Format::Trace`]: the ACP Rust SDK conductor's `--trace` files, one
//!   `{"type":"request"|"response"|"notification","from","to",…}` per line.
//!   Only hops that touch the agent are kept (a message relayed through
//!   proxies appears once per hop), and MCP traffic is skipped.
//! - [`Format::Loose`]: fixtures as projects keep them: one JSON value, an
//!   array, several values one after another (pretty-printed or not),
//!   `{"kind":…,"payload":…}` lines, SDK calls `{"method":"sessionUpdate",
//!   "args":[…]}`, `{"updates":[…],"response":…}` containers and bare
//!   payloads classified by shape (a `sessionUpdate` object, an initialize
//!   response, a subagent event, a usage update, a prompt result, …). Each
//!   value becomes the JSON-RPC message it stands for; a value of no known
//!   shape, or an empty array, is `not-a-message`. Entries of an adapter's
//!   backend traffic in its test fixtures (codex's `codexRequest`,
//!   `codexResponse`, `codexNotification`) are not ACP and are skipped.
//! - [`Format::Auto`] picks one of these per file from its first line.
//!
//! Lines and values larger than [`MAX_VALUE_BYTES`] are skipped with an
//! [`rules::INPUT_TOO_LARGE`] finding, so memory stays bounded; a top-level
//! array is streamed element by element. Bytes that are not JSON give
//! [`rules::NOT_JSON`] findings; reading goes on at the next line.
//!
//! ```
//! use acp_ext::check::input::{read, Format, Item};
//!
//! let text = r#"{"kind":"sessionUpdate","payload":{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[]}}}"#;
//! let mut methods = Vec::new();
//! read(text.as_bytes(), Format::Auto, |item| {
//!     if let Item::Record(r) = item {
//!         methods.push(r.message["method"].as_str().unwrap_or_default().to_owned());
//!     }
//! })?;
//! assert_eq!(methods, ["session/update"]);
//! # Ok::<_, std::io::Error>(())
//! ```

use std::fmt;
use std::io::{self, BufRead, Read};

use crate::transcript::RecordLine;
use acp_extension_core::connection::{Line, Reads};
use acp_extension_core::methods::{MethodKind, method_kind};
use acp_extension_core::namespace::split_method;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{Direction, Finding, rules};

mod pipeline;

/// The largest line or value read (16 MiB).
pub const MAX_VALUE_BYTES: usize = 16 << 20;

/// Most `not-json` findings per file in loose mode before reading stops.
const MAX_SYNTAX_ERRORS: usize = 100;

/// An input format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Format {
    /// Detect per file from its first line.
    #[default]
    Auto,
    /// One JSON-RPC message per line.
    JsonRpc,
    /// `tap --record` transcripts.
    Tap,
    /// ACP SDK conductor trace files.
    Trace,
    /// Loose fixtures.
    Loose,
}

crate::choice::choices!(Format, "format" {
    Auto = "auto",
    JsonRpc = "jsonrpc",
    Tap = "tap",
    Trace = "trace",
    Loose = "loose",
});

/// One message read from the input.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Record {
    /// 1-based line where the value holding the message starts.
    pub line: u64,
    /// Which way it travelled, when the input says.
    pub direction: Direction,
    /// The JSON-RPC message (synthesized for loose payloads).
    pub message: Value,
    /// For a response on its own, the method of the request it answers.
    pub request_method: Option<String>,
    /// (pointer prefix in `message`, pointer prefix in the source value).
    rebase: Vec<(&'static str, String)>,
}

impl Record {
    fn new(line: u64, direction: Direction, message: Value) -> Self {
        Self {
            line,
            direction,
            message,
            request_method: None,
            rebase: vec![("", String::new())],
        }
    }

    fn rebased(mut self, rebase: Vec<(&'static str, String)>) -> Self {
        self.rebase = rebase;
        self
    }

    /// Maps a JSON pointer inside [`Record::message`] to the pointer inside
    /// the value that starts at [`Record::line`] (they differ when the
    /// message was unwrapped or synthesized).
    pub fn source_path(&self, message_path: &str) -> String {
        for (prefix, source) in &self.rebase {
            if let Some(rest) = message_path.strip_prefix(prefix)
                && (rest.is_empty() || rest.starts_with('/') || prefix.is_empty())
            {
                return format!("{source}{rest}");
            }
        }
        String::new()
    }
}

/// What the reader yields.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Item {
    /// A message to check.
    Record(Record),
    /// A `_<ns>/subagents/event` notification verified while read, with no
    /// JSON tree ([`read_parallel`] only, JSON-RPC lines): follow it with
    /// `Connection::follow_read`.
    Event {
        /// 1-based line.
        line: u64,
        /// The line as read.
        read: Line,
    },
    /// A problem of the input itself (not JSON, too large).
    Problem {
        /// 1-based line.
        line: u64,
        /// The finding.
        finding: Finding,
    },
}

/// Like [`read`], with the reading and parsing on another thread: `sink`
/// runs on the calling thread while the next lines are parsed, and sees
/// each item in order. Items are lent, not given: each is dropped on the
/// thread that parsed it, which frees its memory where it was allocated.
///
/// JSON-RPC lines (the format of ACP's stdio, and of most large files) are
/// read and cut into blocks and parsed on one thread with
/// [`Line::read`] for what the follower's observers read (the calling thread parses a block too when its next one
/// is not ready, rather than wait): a valid subagent event notification
/// arrives as an [`Item::Event`], every other line as [`read`] gives it.
/// Other formats are read and parsed on one thread of their own.
pub fn read_parallel<R: BufRead + Send>(
    reader: R,
    format: Format,
    reads: Reads,
    sink: impl FnMut(&Item),
) -> io::Result<()> {
    read_parallel_batches(reader, format, reads, sink, || {})
}

/// [`read_parallel`], calling `settled` after each batch of items (the
/// lines of one block of about 64 KiB, or of what one read of a slower
/// stream gave): where a buffered writer of what the sink makes flushes,
/// so that a live stream's output is not held back.
pub fn read_parallel_batches<R: BufRead + Send>(
    mut reader: R,
    format: Format,
    reads: Reads,
    mut sink: impl FnMut(&Item),
    mut settled: impl FnMut(),
) -> io::Result<()> {
    let (format, first) = match format {
        Format::Auto => {
            let mut first = Vec::new();
            let (consumed, too_long) = read_line_bounded(&mut reader, &mut first, MAX_VALUE_BYTES)?;
            if too_long {
                sink(&too_large(1));
                return pipeline::parallel_lines(
                    reader,
                    Vec::new(),
                    1,
                    reads,
                    &mut sink,
                    &mut settled,
                );
            }
            let detected = detect(&first);
            if consumed > first.len() {
                first.push(b'\n');
            }
            (detected, first)
        }
        f => (f, Vec::new()),
    };
    if format == Format::JsonRpc {
        return pipeline::parallel_lines(reader, first, 0, reads, &mut sink, &mut settled);
    }
    let chained = io::Cursor::new(first).chain(reader);
    one_reader_thread(io::BufReader::new(chained), format, &mut sink, &mut settled)
}

/// Bytes of whole lines per block handed to a parser (a longer line makes
/// a longer block).
const BLOCK_BYTES: usize = 64 << 10;

/// Bytes asked of the reader at a time.
const READ_BYTES: usize = 64 << 10;

/// One block of whole lines: their text, and each line's number and range
/// (or `None` for a line longer than [`MAX_VALUE_BYTES`]).
#[derive(Default)]
struct Block {
    text: Vec<u8>,
    lines: Vec<(u64, Option<std::ops::Range<usize>>)>,
}

/// Cuts a byte stream into [`Block`]s of whole lines, as
/// [`read_line_bounded`] would cut them one by one.
struct Blocks<R> {
    reader: R,
    /// Bytes read past the last whole line of the previous block.
    carry: Vec<u8>,
    /// The number of the last line cut.
    number: u64,
    /// The line being read is longer than [`MAX_VALUE_BYTES`]: its bytes
    /// are dropped until its end.
    skipping: bool,
    eof: bool,
    /// The limits: [`MAX_VALUE_BYTES`], [`BLOCK_BYTES`], [`READ_BYTES`].
    max: usize,
    block_bytes: usize,
    read_bytes: usize,
}

impl<R: Read> Blocks<R> {
    fn new(reader: R, lines_before: u64) -> Self {
        Self {
            reader,
            carry: Vec::new(),
            number: lines_before,
            skipping: false,
            eof: false,
            max: MAX_VALUE_BYTES,
            block_bytes: BLOCK_BYTES,
            read_bytes: READ_BYTES,
        }
    }

    /// Fills `block` with the next lines (at least one, unless the input
    /// has ended: then `false`).
    fn fill(&mut self, block: &mut Block) -> io::Result<bool> {
        block.text.clear();
        block.lines.clear();
        block.text.append(&mut self.carry);
        // The current line starts at `start`; bytes before `scanned` hold
        // no newline.
        let (mut start, mut scanned) = (0, 0);
        let mut short = false;
        loop {
            while let Some(i) = memchr::memchr(b'\n', &block.text[scanned..]) {
                let end = scanned + i;
                self.number += 1;
                if std::mem::take(&mut self.skipping) {
                    // The end of a line too long to keep.
                    block.lines.push((self.number, None));
                    block.text.drain(start..=end);
                    scanned = start;
                    continue;
                }
                let range = start..end;
                let kept = (range.len() <= self.max).then_some(range);
                block.lines.push((self.number, kept));
                start = end + 1;
                scanned = start;
            }
            scanned = block.text.len();
            if self.skipping || block.text.len() - start > self.max {
                // Too long: keep nothing of it.
                self.skipping = true;
                block.text.truncate(start);
                scanned = start;
            }
            // Full, or the input ended, or a read gave less than asked (a
            // live stream has no more for now): whole lines are not held
            // back for more.
            if start >= self.block_bytes || self.eof || (short && !block.lines.is_empty()) {
                break;
            }
            let old = block.text.len();
            block.text.resize(old + self.read_bytes, 0);
            let n = loop {
                match self.reader.read(&mut block.text[old..]) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    r => break r,
                }
            };
            let n = match n {
                Ok(n) => n,
                Err(e) => {
                    block.text.truncate(old);
                    return Err(e);
                }
            };
            block.text.truncate(old + n);
            short = n < self.read_bytes;
            if n == 0 {
                self.eof = true;
            }
        }
        if self.eof {
            // A last line without a newline.
            if self.skipping || start < block.text.len() {
                self.number += 1;
                let range = start..block.text.len();
                block
                    .lines
                    .push((self.number, (!self.skipping).then_some(range)));
                self.skipping = false;
            }
        } else {
            self.carry.extend_from_slice(&block.text[start..]);
            block.text.truncate(start);
        }
        Ok(!block.lines.is_empty())
    }
}

/// One JSON-RPC line, as [`read`] reads it, with the typed lane.
fn parse_jsonrpc_line(bytes: &[u8], line: u64, reads: Reads, sink: &mut dyn FnMut(Item)) {
    let text = bytes.trim_ascii();
    if text.is_empty() {
        return;
    }
    let read = Line::read(text, reads);
    if let Some(why) = read.not_json() {
        return sink(not_json(line, "", why.to_owned()));
    }
    match read.into_tree() {
        Ok(v) if !v.as_object().is_some_and(is_jsonrpc) => classify(v, "", line, sink),
        Ok(v) => sink(Item::Record(Record::new(line, Direction::Unknown, v))),
        Err(read) => sink(Item::Event { line, read }),
    }
}

/// Reading and parsing on a thread of their own (formats other than
/// JSON-RPC lines).
fn one_reader_thread<R: BufRead + Send>(
    reader: R,
    format: Format,
    sink: &mut dyn FnMut(&Item),
    settled: &mut dyn FnMut(),
) -> io::Result<()> {
    const BATCH: usize = 256;
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Item>>(4);
    std::thread::scope(|scope| {
        let builder = std::thread::Builder::new().name("acp-ext-read".into());
        let parser = builder.spawn_scoped(scope, move || {
            let mut batch = Vec::with_capacity(BATCH);
            let result = read_known(reader, format, &mut |item| {
                batch.push(item);
                if batch.len() == BATCH {
                    // A closed channel: the consumer is gone; the rest is
                    // dropped with it.
                    let _ = tx.send(std::mem::replace(&mut batch, Vec::with_capacity(BATCH)));
                }
            });
            if !batch.is_empty() {
                let _ = tx.send(batch);
            }
            result
        });
        for batch in rx {
            for item in batch {
                sink(&item);
            }
            settled();
        }
        match parser {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the input reader panicked"))),
            Err(e) => Err(e),
        }
    })
}

/// Reads `reader` in `format`, calling `sink` for every message and input
/// problem in order. Only I/O errors end reading early; malformed content
/// becomes [`Item::Problem`]s.
pub fn read<R: BufRead>(
    mut reader: R,
    format: Format,
    mut sink: impl FnMut(Item),
) -> io::Result<()> {
    let format = match format {
        Format::Auto => {
            // Look at the first line without losing it.
            let mut first = Vec::new();
            let (consumed, too_long) = read_line_bounded(&mut reader, &mut first, MAX_VALUE_BYTES)?;
            if too_long {
                sink(too_large(1));
                return read_lines(reader, Format::JsonRpc, 1, &mut sink);
            }
            let detected = detect(&first);
            if consumed > first.len() {
                first.push(b'\n');
            }
            let chained = io::Cursor::new(first).chain(reader);
            return read_known(io::BufReader::new(chained), detected, &mut sink);
        }
        f => f,
    };
    read_known(reader, format, &mut sink)
}

fn read_known<R: BufRead>(reader: R, format: Format, sink: &mut dyn FnMut(Item)) -> io::Result<()> {
    match format {
        Format::Loose | Format::Auto => read_loose(reader, sink),
        f => read_lines(reader, f, 0, sink),
    }
}

/// The format of a file from its first line.
pub fn detect(first_line: &[u8]) -> Format {
    let trimmed = first_line.trim_ascii();
    if trimmed.first() == Some(&b'[') {
        return Format::Loose;
    }
    let Ok(Value::Object(o)) = serde_json::from_slice::<Value>(trimmed) else {
        return Format::Loose;
    };
    if crate::transcript::is_record_line(&o) {
        Format::Tap
    } else if is_trace_line(&o) {
        Format::Trace
    } else if is_jsonrpc(&o) {
        Format::JsonRpc
    } else {
        Format::Loose
    }
}

fn is_trace_line(o: &Map<String, Value>) -> bool {
    matches!(
        o.get("type").and_then(Value::as_str),
        Some("request" | "response" | "notification")
    ) && (o.contains_key("from") || o.contains_key("to"))
}

fn is_jsonrpc(o: &Map<String, Value>) -> bool {
    o.contains_key("jsonrpc")
        || (o.get("method").is_some_and(Value::is_string)
            && !o.contains_key("args")
            && !o.contains_key("kind"))
        || (o.contains_key("id") && (o.contains_key("result") || o.contains_key("error")))
}

/// Appends one line (without its `\n`) to `buf`, keeping at most `max`
/// bytes; returns the bytes consumed and whether the line was longer.
fn read_line_bounded<R: BufRead>(
    r: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> io::Result<(usize, bool)> {
    let mut consumed = 0;
    let mut too_long = false;
    loop {
        let available = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok((consumed, too_long));
        }
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..i], Some(i + 1)),
            None => (available, None),
        };
        let room = max.saturating_sub(buf.len());
        if chunk.len() > room {
            too_long = true;
            buf.extend_from_slice(&chunk[..room]);
        } else {
            buf.extend_from_slice(chunk);
        }
        let used = done.unwrap_or(available.len());
        r.consume(used);
        consumed += used;
        if done.is_some() {
            return Ok((consumed, too_long));
        }
    }
}

fn not_json(line: u64, path: &str, detail: impl fmt::Display) -> Item {
    Item::Problem {
        line,
        finding: Finding::of(&rules::NOT_JSON, path, format!("not JSON: {detail}")),
    }
}

fn too_large(line: u64) -> Item {
    Item::Problem {
        line,
        finding: Finding::of(
            &rules::INPUT_TOO_LARGE,
            "",
            format!(
                "this value is larger than {} MiB and was skipped",
                MAX_VALUE_BYTES >> 20
            ),
        ),
    }
}

fn read_lines<R: BufRead>(
    mut reader: R,
    format: Format,
    lines_before: u64,
    sink: &mut dyn FnMut(Item),
) -> io::Result<()> {
    let mut buf = Vec::new();
    let mut line = lines_before;
    loop {
        buf.clear();
        let (n, too_long) = read_line_bounded(&mut reader, &mut buf, MAX_VALUE_BYTES)?;
        if n == 0 {
            return Ok(());
        }
        line += 1;
        if too_long {
            sink(too_large(line));
            continue;
        }
        let text = buf.trim_ascii();
        if text.is_empty() {
            continue;
        }
        match serde_json::from_slice::<Value>(text) {
            Err(e) => sink(not_json(line, "", e)),
            Ok(v) => match format {
                Format::Tap => tap_line(v, line, sink),
                Format::Trace => trace_line(v, line, "", sink),
                // A line that is no JSON-RPC message (a bare subagent
                // event, a payload) is read as the loose reader reads it.
                _ if !v.as_object().is_some_and(is_jsonrpc) => classify(v, "", line, sink),
                _ => sink(Item::Record(Record::new(line, Direction::Unknown, v))),
            },
        }
    }
}

fn tap_line(v: Value, line: u64, sink: &mut dyn FnMut(Item)) {
    let Value::Object(o) = v else {
        return classify(v, "", line, sink);
    };
    if !crate::transcript::is_record_line(&o) {
        return classify(Value::Object(o), "", line, sink);
    }
    match crate::transcript::read_line(o) {
        Some(RecordLine::Message { direction, message }) => sink(Item::Record(
            Record::new(line, direction, message).rebased(vec![("", "/msg".to_owned())]),
        )),
        Some(RecordLine::Raw { direction, text }) => {
            let shown: String = text.chars().take(60).collect();
            let more = if text.chars().count() > 60 { "…" } else { "" };
            sink(not_json(
                line,
                "/raw",
                format!(
                    "the {} bytes on the wire were {shown:?}{more}",
                    direction.as_str()
                ),
            ));
        }
        _ => {}
    }
}

fn trace_line(v: Value, line: u64, src: &str, sink: &mut dyn FnMut(Item)) {
    let Value::Object(mut o) = v else {
        return classify(v, src, line, sink);
    };
    if !is_trace_line(&o) {
        return classify(Value::Object(o), src, line, sink);
    }
    if o.get("protocol").and_then(Value::as_str) == Some("mcp") {
        return;
    }
    let from = o
        .get("from")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let to = o
        .get("to")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let touches_agent = from == "Agent" || to == "Agent";
    let via_proxy = from.starts_with("Proxy") || to.starts_with("Proxy");
    if !touches_agent && via_proxy {
        return;
    }
    let dir = if to == "Agent" || from == "Client" {
        Direction::ClientToAgent
    } else if from == "Agent" || to == "Client" {
        Direction::AgentToClient
    } else {
        Direction::Unknown
    };
    let id = o.remove("id");
    let kind = o
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let at = |k: &str| format!("{src}/{k}");
    let record = if kind == "response" {
        let payload = o.remove("payload").unwrap_or(Value::Null);
        let key = if o.get("is_error").and_then(Value::as_bool) == Some(true) {
            "error"
        } else {
            "result"
        };
        let mut m = Map::new();
        m.insert("jsonrpc".into(), json!("2.0"));
        m.insert("id".into(), id.unwrap_or(Value::Null));
        m.insert(key.into(), payload);
        Record::new(line, dir, Value::Object(m)).rebased(vec![
            ("/result", at("payload")),
            ("/error", at("payload")),
            ("/id", at("id")),
        ])
    } else {
        let mut m = Map::new();
        m.insert("jsonrpc".into(), json!("2.0"));
        if kind == "request" {
            m.insert("id".into(), id.unwrap_or(Value::Null));
        }
        m.insert("method".into(), o.remove("method").unwrap_or(Value::Null));
        m.insert("params".into(), o.remove("params").unwrap_or(Value::Null));
        Record::new(line, dir, Value::Object(m)).rebased(vec![
            ("/params", at("params")),
            ("/method", at("method")),
            ("/id", at("id")),
        ])
    };
    sink(Item::Record(record));
}

// ---------------------------------------------------------------------------
// Loose fixtures

/// A byte source that counts lines, limits each value's size and lets the
/// caller peek past whitespace.
mod loose;
use loose::{classify, read_loose};

#[cfg(test)]
mod tests {
    use super::*;

    fn records(text: &str, format: Format) -> Vec<Item> {
        let mut items = Vec::new();
        read(text.as_bytes(), format, |i| items.push(i)).unwrap();
        items
    }

    #[test]
    fn detects_formats_from_the_first_line() {
        assert_eq!(detect(br#"{"dir":"c2a","t":0.1,"msg":{}}"#), Format::Tap);
        assert_eq!(
            detect(br#"{"type":"request","from":"Client","to":"Agent","id":1}"#),
            Format::Trace
        );
        assert_eq!(
            detect(br#"{"jsonrpc":"2.0","method":"x"}"#),
            Format::JsonRpc
        );
        assert_eq!(detect(b"{"), Format::Loose);
        assert_eq!(detect(b"[1]"), Format::Loose);
        assert_eq!(detect(br#"{"kind":"x","payload":{}}"#), Format::Loose);
    }

    /// The line each loose value (or problem) of `text` is reported at.
    fn loose_lines(text: &str) -> Vec<u64> {
        records(text, Format::Loose)
            .into_iter()
            .map(|i| match i {
                Item::Record(r) => r.line,
                Item::Event { line, .. } | Item::Problem { line, .. } => line,
            })
            .collect()
    }

    #[test]
    fn loose_values_keep_their_lines() {
        let text = "{\n  \"a\": 1\n}\n\n{\"sessionUpdate\":\"plan\",\"entries\":[]}\n[\n {\"b\":1},\n {\"c\":2}\n]\n";
        let lines = loose_lines(text);
        assert_eq!(lines, [1, 5, 7, 8]);
    }

    #[test]
    fn top_level_arrays_stream_with_element_lines() {
        let text = "[\n {\"b\":1},\n {\"c\":2}\n]\n";
        let lines = loose_lines(text);
        assert_eq!(lines, [2, 3]);
    }

    #[test]
    fn broken_values_resync_at_the_next_top_level_value() {
        let text = "{\"a\": tru}\n  junk\n{\"b\": 1}\n";
        let items = records(text, Format::Loose);
        assert!(
            matches!(&items[0], Item::Problem { line: 1, finding } if finding.rule == "not-json")
        );
        // `{"b": 1}` is read again, and is of no shape the reader knows.
        assert!(
            matches!(&items[1], Item::Problem { line: 3, finding } if finding.rule == "not-a-message")
        );
        assert_eq!(items.len(), 2);
    }

    /// An item as `read` would give it: a typed event as its JSON record.
    fn as_read(item: Item) -> Item {
        match item {
            Item::Event { line, read } => {
                Item::Record(Record::new(line, Direction::Unknown, read.to_value()))
            }
            other => other,
        }
    }

    /// A reader that gives at most `step` bytes per read.
    struct Trickle<'a> {
        text: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.text.len());
            buf[..n].copy_from_slice(&self.text[..n]);
            self.text = &self.text[n..];
            Ok(n)
        }
    }

    #[test]
    fn blocks_cut_lines_as_read_line_bounded_does() {
        // Random lines (some longer than the limit, some empty, some with
        // `\r`), with and without a last newline, cut with small limits
        // and reads of every size from one byte up.
        let mut seed = 0x2545_f491_u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for round in 0..400 {
            let mut text = Vec::new();
            for _ in 0..next(30) {
                let len = [0, 3, 15, 16, 17, 40][next(6) as usize] + next(3) as usize;
                text.extend((0..len).map(|i| b'a' + (i % 26) as u8));
                if next(5) == 0 {
                    text.push(b'\r');
                }
                text.push(b'\n');
            }
            if round % 2 == 0 {
                text.extend_from_slice(b"tail without newline");
            }
            let max = 16;
            let mut expected = Vec::new();
            let mut reader = &text[..];
            let mut number = 0;
            loop {
                let mut line = Vec::new();
                let (n, too_long) = read_line_bounded(&mut reader, &mut line, max).unwrap();
                if n == 0 {
                    break;
                }
                number += 1;
                expected.push((number, (!too_long).then_some(line)));
            }
            let step = 1 + round % 23;
            let mut blocks = Blocks::new(Trickle { text: &text, step }, 0);
            (blocks.max, blocks.block_bytes, blocks.read_bytes) =
                (max, 8 + round % 40, 1 + round % 29);
            let mut cut = Vec::new();
            let mut block = Block::default();
            while blocks.fill(&mut block).unwrap() {
                for (n, range) in &block.lines {
                    cut.push((*n, range.clone().map(|r| block.text[r].to_vec())));
                }
            }
            assert_eq!(
                cut,
                expected,
                "round {round}: {:?}",
                String::from_utf8_lossy(&text)
            );
        }
    }

    #[test]
    fn parallel_lines_give_what_read_gives_in_order() {
        // More lines than a few blocks, with every kind of line: typed
        // events, other messages, bare events, blank lines, bytes that are
        // not JSON, and a line too large to read.
        let event = |i: usize| {
            format!(
                r#"{{"jsonrpc":"2.0","method":"_lody/subagents/event","params":{{"version":1,"sessionId":"s","runId":"r{i}","type":"progress","progress":{{"turnCount":{i}}}}}}}"#
            )
        };
        let mut text = String::new();
        for i in 0..3 * BLOCK_BYTES / 100 + 7 {
            let line = match i % 9 {
                0 => r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}"#.to_owned(),
                1 => r#"{"version":1,"sessionId":"s","runId":"b","type":"progress","progress":{}}"#.to_owned(),
                2 => String::new(),
                3 => "{oops".to_owned(),
                _ => event(i),
            };
            text.push_str(&line);
            text.push('\n');
        }
        text.push_str(&format!("{{\"x\":\"{}\"}}\n", "a".repeat(MAX_VALUE_BYTES)));
        text.push_str(&event(1));
        let serial = records(&text, Format::Auto);
        for reads in [Reads::Event, Reads::RunFacts] {
            let mut parallel = Vec::new();
            read_parallel(text.as_bytes(), Format::Auto, reads, |i| {
                parallel.push(i.clone())
            })
            .unwrap();
            assert!(
                parallel.iter().any(|i| matches!(i, Item::Event { .. })),
                "no line took the typed lane"
            );
            let parallel: Vec<Item> = parallel.into_iter().map(as_read).collect();
            assert_eq!(parallel.len(), serial.len());
            for (p, s) in parallel.iter().zip(&serial) {
                assert_eq!(p, s);
            }
        }
    }

    /// Lines of progress events, `n` of them, numbered in their run ids.
    fn numbered_events(n: usize) -> String {
        (0..n)
            .map(|i| {
                format!(
                    "{{\"jsonrpc\":\"2.0\",\"method\":\"_lody/subagents/event\",\"params\":{{\"version\":1,\"sessionId\":\"s\",\"runId\":\"r{i}\",\"type\":\"progress\",\"progress\":{{}}}}}}\n"
                )
            })
            .collect()
    }

    #[test]
    fn items_arrive_in_order_whether_the_consumer_waits_or_lags() {
        // Some 60 blocks. A quick consumer waits for the parser and parses
        // blocks itself meanwhile; a slow one lets parsed blocks pile up.
        // Either way every line arrives once, in order.
        let text = numbered_events(60 * BLOCK_BYTES / 140);
        for slow in [false, true] {
            let mut lines = Vec::new();
            read_parallel(text.as_bytes(), Format::Auto, Reads::RunFacts, |item| {
                let Item::Event { line, .. } = item else {
                    panic!("not an event: {item:?}")
                };
                if slow && line % 500 == 0 {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                lines.push(*line);
            })
            .unwrap();
            let expected: Vec<u64> = (1..=text.lines().count() as u64).collect();
            assert_eq!(lines, expected, "slow consumer: {slow}");
        }
    }

    #[test]
    fn a_live_stream_line_arrives_before_the_next_is_written() {
        // A stream that gives each line only once the consumer has seen
        // the one before: a pipeline that held a line back until its next
        // read returned would wait forever.
        struct Live(std::sync::mpsc::Receiver<Vec<u8>>, Vec<u8>);
        impl Read for Live {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                if self.1.is_empty() {
                    match self.0.recv() {
                        Ok(bytes) => self.1 = bytes,
                        Err(_) => return Ok(0),
                    }
                }
                let n = buf.len().min(self.1.len());
                buf[..n].copy_from_slice(&self.1[..n]);
                self.1.drain(..n);
                Ok(n)
            }
        }
        let lines: Vec<Vec<u8>> = numbered_events(50)
            .lines()
            .map(|l| format!("{l}\n").into_bytes())
            .collect();
        let (done_tx, done) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let (write, read) = std::sync::mpsc::channel();
            write.send(lines[0].clone()).unwrap();
            let mut write = Some(write);
            let mut seen = Vec::new();
            let result = read_parallel(
                io::BufReader::new(Live(read, Vec::new())),
                Format::JsonRpc,
                Reads::RunFacts,
                |item| {
                    let Item::Event { line, .. } = item else {
                        panic!("not an event: {item:?}")
                    };
                    seen.push(*line);
                    match lines.get(seen.len()) {
                        Some(next) => write.as_ref().unwrap().send(next.clone()).unwrap(),
                        // The last line seen: the stream ends.
                        None => write = None,
                    }
                },
            );
            let _ = done_tx.send((result.is_ok(), seen));
        });
        let (ok, seen) = done
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("a line was held back until the next one was written");
        assert!(ok);
        assert_eq!(seen, (1..=50).collect::<Vec<u64>>());
    }

    #[test]
    fn a_failed_read_ends_the_input_after_what_was_read() {
        struct FailsAfter<'a>(&'a [u8]);
        impl Read for FailsAfter<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                if self.0.is_empty() {
                    return Err(io::Error::other("the disk went away"));
                }
                let n = buf.len().min(self.0.len()).min(1000);
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let text = numbered_events(2000);
        let mut seen = 0;
        let result = read_parallel(
            io::BufReader::new(FailsAfter(text.as_bytes())),
            Format::JsonRpc,
            Reads::Event,
            |_| seen += 1,
        );
        assert_eq!(result.unwrap_err().to_string(), "the disk went away");
        assert_eq!(seen, 2000);
    }

    #[test]
    fn a_panicking_consumer_stops_the_parser() {
        // Without the stop, the parser thread would wait for room forever
        // and the scope would never end.
        let text = numbered_events(20 * BLOCK_BYTES / 140);
        let outcome = std::panic::catch_unwind(|| {
            let mut seen = 0;
            let _ = read_parallel(text.as_bytes(), Format::Auto, Reads::Event, |_| {
                seen += 1;
                assert!(seen < 3000, "the consumer gives up");
            });
        });
        assert!(outcome.is_err());
    }

    #[test]
    fn source_paths_follow_unwrapping() {
        let items = records(
            r#"{"kind":"sessionUpdate","payload":{"sessionUpdate":"plan"}}"#,
            Format::Loose,
        );
        let Item::Record(r) = &items[0] else { panic!() };
        assert_eq!(r.source_path("/params/update/entries"), "/payload/entries");
        assert_eq!(r.source_path("/method"), "");
    }
}
