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
mod tests;
