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
//!   response, a subagent event, a usage update, …). Each value becomes the
//!   JSON-RPC message it stands for.
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

use acp_extension_core::methods::{MethodKind, method_kind};
use acp_extension_core::namespace::split_method;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{Direction, Finding, rules};

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
    /// A problem of the input itself (not JSON, too large).
    Problem {
        /// 1-based line.
        line: u64,
        /// The finding.
        finding: Finding,
    },
}

/// Like [`read`], with the reading and parsing on a thread of its own:
/// `sink` runs on the calling thread while the next lines are parsed (a
/// two-core pipeline for `check`, `state` and the like). Items arrive in
/// order, in batches.
pub fn read_parallel<R: BufRead + Send>(
    reader: R,
    format: Format,
    mut sink: impl FnMut(Item),
) -> io::Result<()> {
    const BATCH: usize = 256;
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Item>>(4);
    std::thread::scope(|scope| {
        let parser = scope.spawn(move || {
            let mut batch = Vec::with_capacity(BATCH);
            let result = read(reader, format, |item| {
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
                sink(item);
            }
        }
        parser
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the input reader panicked")))
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
    if is_tap_line(&o) {
        Format::Tap
    } else if is_trace_line(&o) {
        Format::Trace
    } else if is_jsonrpc(&o) {
        Format::JsonRpc
    } else {
        Format::Loose
    }
}

fn is_tap_line(o: &Map<String, Value>) -> bool {
    o.get("dir").is_some_and(Value::is_string) && (o.contains_key("msg") || o.contains_key("raw"))
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
    let Value::Object(mut o) = v else {
        return classify(v, "", line, sink);
    };
    if !is_tap_line(&o) {
        return classify(Value::Object(o), "", line, sink);
    }
    let dir = o
        .get("dir")
        .and_then(Value::as_str)
        .and_then(Direction::from_tap)
        .unwrap_or(Direction::Unknown);
    if let Some(msg) = o.remove("msg") {
        sink(Item::Record(
            Record::new(line, dir, msg).rebased(vec![("", "/msg".to_owned())]),
        ));
    } else if let Some(raw) = o.get("raw") {
        let text = raw.as_str().unwrap_or_default();
        let shown: String = text.chars().take(60).collect();
        let more = if text.chars().count() > 60 { "…" } else { "" };
        sink(not_json(
            line,
            "/raw",
            format!(
                "the {} bytes on the wire were {shown:?}{more}",
                dir.as_str()
            ),
        ));
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
struct Counting<R> {
    inner: R,
    /// 1-based line of the next byte.
    line: u64,
    /// Bytes the current value may still read.
    budget: usize,
}

impl<R: BufRead> Counting<R> {
    /// Skips whitespace; returns the next byte without consuming it.
    fn peek_non_ws(&mut self) -> io::Result<Option<u8>> {
        loop {
            let buf = match self.inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                return Ok(None);
            }
            let mut skipped = 0;
            let mut found = None;
            for &b in buf {
                if b.is_ascii_whitespace() {
                    if b == b'\n' {
                        self.line += 1;
                    }
                    skipped += 1;
                } else {
                    found = Some(b);
                    break;
                }
            }
            self.inner.consume(skipped);
            if found.is_some() {
                return Ok(found);
            }
        }
    }

    fn consume_byte(&mut self) {
        self.inner.consume(1);
    }

    /// Discards the rest of the current line.
    fn skip_line(&mut self) -> io::Result<()> {
        let mut sink = Vec::new();
        let (n, _) = read_line_bounded(&mut self.inner, &mut sink, 0)?;
        if n > 0 {
            self.line += 1;
        }
        Ok(())
    }

    /// Skips lines until one starts (in column 0) with `{` or `[`.
    fn resync(&mut self) -> io::Result<()> {
        self.skip_line()?;
        loop {
            let buf = match self.inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            match buf.first() {
                None | Some(b'{') | Some(b'[') => return Ok(()),
                _ => self.skip_line()?,
            }
        }
    }
}

impl<R: BufRead> Read for Counting<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.budget == 0 {
            return Err(io::Error::other(TooLarge));
        }
        let want = out.len().min(self.budget);
        let n = self.inner.read(&mut out[..want])?;
        self.line += out[..n].iter().filter(|&&b| b == b'\n').count() as u64;
        self.budget -= n;
        Ok(n)
    }
}

#[derive(Debug)]
struct TooLarge;

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("value too large")
    }
}

impl std::error::Error for TooLarge {}

enum Parsed {
    Value(Value),
    Syntax(String),
    TooLarge,
}

fn parse_one<R: BufRead>(rd: &mut Counting<R>) -> io::Result<Parsed> {
    rd.budget = MAX_VALUE_BYTES;
    // A number has no closing byte: serde_json's reader would consume the
    // byte after it (a `]` or `,`), so numbers are cut out by hand.
    if rd
        .peek_non_ws()?
        .is_some_and(|b| b == b'-' || b.is_ascii_digit())
    {
        let mut token = Vec::new();
        loop {
            let buf = rd.inner.fill_buf()?;
            let n = buf
                .iter()
                .take_while(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E'))
                .count();
            token.extend_from_slice(&buf[..n]);
            let more = n == buf.len() && n > 0;
            rd.inner.consume(n);
            if !more || token.len() > 64 {
                break;
            }
        }
        return Ok(match serde_json::from_slice::<Value>(&token) {
            Ok(v) => Parsed::Value(v),
            Err(e) => Parsed::Syntax(e.to_string()),
        });
    }
    let mut de = serde_json::Deserializer::from_reader(&mut *rd);
    match Value::deserialize(&mut de) {
        Ok(v) => Ok(Parsed::Value(v)),
        Err(e) if e.is_io() => {
            let io_err = io::Error::from(e);
            if io_err.get_ref().is_some_and(|inner| inner.is::<TooLarge>()) {
                Ok(Parsed::TooLarge)
            } else {
                Err(io_err)
            }
        }
        Err(e) => Ok(Parsed::Syntax(e.to_string())),
    }
}

fn read_loose<R: BufRead>(reader: R, sink: &mut dyn FnMut(Item)) -> io::Result<()> {
    let mut rd = Counting {
        inner: reader,
        line: 1,
        budget: MAX_VALUE_BYTES,
    };
    let mut errors = 0usize;
    while let Some(b) = rd.peek_non_ws()? {
        let line = rd.line;
        if b == b'[' {
            // A top-level array: stream its elements.
            rd.consume_byte();
            if read_array(&mut rd, sink, &mut errors)? {
                continue;
            }
            return Ok(());
        }
        match parse_one(&mut rd)? {
            Parsed::Value(v) => classify(v, "", line, sink),
            Parsed::Syntax(e) => {
                errors += 1;
                sink(not_json(line, "", e));
                if errors >= MAX_SYNTAX_ERRORS {
                    return Ok(());
                }
                rd.resync()?;
            }
            Parsed::TooLarge => {
                sink(too_large(line));
                rd.resync()?;
            }
        }
    }
    Ok(())
}

/// Streams the elements of an array whose `[` was consumed; returns whether
/// reading may go on after it.
fn read_array<R: BufRead>(
    rd: &mut Counting<R>,
    sink: &mut dyn FnMut(Item),
    errors: &mut usize,
) -> io::Result<bool> {
    let mut expect_value = true;
    loop {
        let Some(b) = rd.peek_non_ws()? else {
            sink(not_json(rd.line, "", "the array is not closed"));
            return Ok(false);
        };
        let line = rd.line;
        match b {
            b']' => {
                rd.consume_byte();
                return Ok(true);
            }
            b',' if !expect_value => {
                rd.consume_byte();
                expect_value = true;
            }
            _ if expect_value => {
                expect_value = false;
                match parse_one(rd)? {
                    Parsed::Value(v) => classify(v, "", line, sink),
                    Parsed::Syntax(e) => {
                        *errors += 1;
                        sink(not_json(line, "", e));
                        rd.resync()?;
                        return Ok(*errors < MAX_SYNTAX_ERRORS);
                    }
                    Parsed::TooLarge => {
                        sink(too_large(line));
                        rd.resync()?;
                        return Ok(true);
                    }
                }
            }
            other => {
                *errors += 1;
                sink(not_json(
                    line,
                    "",
                    format!(
                        "expected `,` or `]` in the array, found {:?}",
                        other as char
                    ),
                ));
                rd.resync()?;
                return Ok(*errors < MAX_SYNTAX_ERRORS);
            }
        }
    }
}

/// ACP method names as the TypeScript SDK's connection methods spell them.
const SDK_METHODS: &[(&str, &str)] = &[
    ("sessionUpdate", "session/update"),
    ("requestPermission", "session/request_permission"),
    ("readTextFile", "fs/read_text_file"),
    ("writeTextFile", "fs/write_text_file"),
    ("createTerminal", "terminal/create"),
    ("terminalOutput", "terminal/output"),
    ("releaseTerminal", "terminal/release"),
    ("waitForTerminalExit", "terminal/wait_for_exit"),
    ("killTerminal", "terminal/kill"),
    ("createElicitation", "elicitation/create"),
    ("completeElicitation", "elicitation/complete"),
    ("initialize", "initialize"),
    ("authenticate", "authenticate"),
    ("newSession", "session/new"),
    ("loadSession", "session/load"),
    ("resumeSession", "session/resume"),
    ("forkSession", "session/fork"),
    ("listSessions", "session/list"),
    ("closeSession", "session/close"),
    ("setSessionMode", "session/set_mode"),
    ("setSessionModel", "session/set_model"),
    ("setSessionConfigOption", "session/set_config_option"),
    ("prompt", "session/prompt"),
    ("cancel", "session/cancel"),
];

fn sdk_method(name: &str) -> Option<&'static str> {
    SDK_METHODS
        .iter()
        .find(|(k, m)| *k == name || *m == name)
        .map(|(_, m)| *m)
}

/// Keys that only requests carry (so a kind-wrapped payload with one of
/// them is the request, not the response).
const REQUEST_KEYS: &[&str] = &[
    "cwd",
    "prompt",
    "clientCapabilities",
    "mcpServers",
    "modeId",
    "modelId",
    "configId",
    "methodId",
];

fn call(method: &str, params: Value, line: u64, src: String) -> Item {
    let mut m = Map::new();
    m.insert("jsonrpc".into(), json!("2.0"));
    if method_kind(method) == Some(MethodKind::Request)
        || (split_method(method).is_none()
            && !matches!(method, "session/update" | "session/cancel")
            && !method.starts_with('_'))
    {
        m.insert("id".into(), Value::Null);
    }
    m.insert("method".into(), json!(method));
    m.insert("params".into(), params);
    Item::Record(
        Record::new(line, Direction::Unknown, Value::Object(m)).rebased(vec![("/params", src)]),
    )
}

fn response(method: Option<&str>, result: Value, line: u64, src: String) -> Item {
    let message = json!({"jsonrpc": "2.0", "id": null, "result": result});
    let mut r = Record::new(line, Direction::Unknown, message).rebased(vec![("/result", src)]);
    r.request_method = method.map(str::to_owned);
    Item::Record(r)
}

fn update(payload: Value, line: u64, src: String, sink: &mut dyn FnMut(Item)) {
    if payload.get("update").is_some_and(Value::is_object) {
        sink(call("session/update", payload, line, src));
    } else if payload.get("sessionUpdate").is_some_and(Value::is_string) {
        let params = json!({ "update": payload });
        let mut m = Map::new();
        m.insert("jsonrpc".into(), json!("2.0"));
        m.insert("method".into(), json!("session/update"));
        m.insert("params".into(), params);
        sink(Item::Record(
            Record::new(line, Direction::Unknown, Value::Object(m))
                .rebased(vec![("/params/update", src)]),
        ));
    } else {
        payload_message(payload, line, src, None, sink);
    }
}

/// Classifies one loose value; `src` is its pointer inside the value at `line`.
fn classify(v: Value, src: &str, line: u64, sink: &mut dyn FnMut(Item)) {
    match v {
        Value::Array(items) => {
            for (i, x) in items.into_iter().enumerate() {
                classify(x, &format!("{src}/{i}"), line, sink);
            }
        }
        Value::Object(o) => classify_object(o, src, line, sink),
        other => sink(Item::Problem {
            line,
            finding: Finding::of(
                &rules::NOT_A_MESSAGE,
                src,
                format!(
                    "valid JSON, but {} is not a JSON-RPC message or a payload of one",
                    acp_extension_core::wire::json_type(&other)
                ),
            ),
        }),
    }
}

fn classify_object(mut o: Map<String, Value>, src: &str, line: u64, sink: &mut dyn FnMut(Item)) {
    let at = |k: &str| format!("{src}/{k}");
    if is_tap_line(&o) {
        if let Some(msg) = o.remove("msg") {
            let dir = o
                .get("dir")
                .and_then(Value::as_str)
                .and_then(Direction::from_tap)
                .unwrap_or(Direction::Unknown);
            sink(Item::Record(
                Record::new(line, dir, msg).rebased(vec![("", at("msg"))]),
            ));
        } else {
            tap_line(Value::Object(o), line, sink);
        }
        return;
    }
    if is_trace_line(&o) {
        return trace_line(Value::Object(o), line, src, sink);
    }
    if is_jsonrpc(&o) {
        sink(Item::Record(
            Record::new(line, Direction::Unknown, Value::Object(o))
                .rebased(vec![("", src.to_owned())]),
        ));
        return;
    }
    if let (Some(kind), true) = (
        o.get("kind").and_then(Value::as_str).map(str::to_owned),
        o.contains_key("payload"),
    ) {
        let payload = o.remove("payload").unwrap_or(Value::Null);
        return kind_message(&kind, payload, line, at("payload"), sink);
    }
    if let (Some(method), true) = (
        o.get("method").and_then(Value::as_str).map(str::to_owned),
        o.get("args").is_some_and(Value::is_array),
    ) {
        let Some(Value::Array(mut args)) = o.remove("args") else {
            return;
        };
        return match method.as_str() {
            "notify" | "extNotification" | "extMethod" | "sendNotification" | "sendRequest"
                if args.first().is_some_and(Value::is_string) =>
            {
                let name = args[0].as_str().unwrap_or_default().to_owned();
                let params = if args.len() > 1 {
                    args.swap_remove(1)
                } else {
                    Value::Null
                };
                sink(call(&name, params, line, at("args/1")));
            }
            _ => {
                let params = if args.is_empty() {
                    Value::Null
                } else {
                    args.swap_remove(0)
                };
                match sdk_method(&method) {
                    Some("session/update") => update(params, line, at("args/0"), sink),
                    Some(m) => sink(call(m, params, line, at("args/0"))),
                    None if method.contains('/') => sink(call(&method, params, line, at("args/0"))),
                    None => payload_message(params, line, at("args/0"), None, sink),
                }
            }
        };
    }
    if o.get("updates").is_some_and(Value::is_array) || o.contains_key("response") {
        if let Some(Value::Array(updates)) = o.remove("updates") {
            for (i, u) in updates.into_iter().enumerate() {
                update(u, line, at(&format!("updates/{i}")), sink);
            }
        }
        if let Some(r) = o.remove("response") {
            payload_message(r, line, at("response"), None, sink);
        }
        return;
    }
    // A one-key wrapper named after the message: {"sessionUpdate": {...}}.
    if o.len() == 1
        && let Some((k, v)) = o.iter().next()
        && v.is_object()
        && (sdk_method(k).is_some() || k.ends_with("Response"))
    {
        let k = k.clone();
        let payload = o.remove(&k).unwrap_or(Value::Null);
        return kind_message(&k, payload, line, at(&k), sink);
    }
    payload_message(Value::Object(o), line, src.to_owned(), None, sink);
}

fn kind_message(kind: &str, payload: Value, line: u64, src: String, sink: &mut dyn FnMut(Item)) {
    if let Some(base) = kind.strip_suffix("Response") {
        let method = sdk_method(base).unwrap_or(base);
        return sink(response(Some(method), payload, line, src));
    }
    match sdk_method(kind) {
        Some("session/update") => update(payload, line, src, sink),
        Some(m) if Direction::of_method(m) == Direction::AgentToClient => {
            sink(call(m, payload, line, src))
        }
        Some(m) => {
            let is_request = payload
                .as_object()
                .is_some_and(|o| REQUEST_KEYS.iter().any(|k| o.contains_key(*k)));
            if is_request || m == "session/cancel" {
                sink(call(m, payload, line, src));
            } else {
                sink(response(Some(m), payload, line, src));
            }
        }
        None if kind.contains('/') => sink(call(kind, payload, line, src)),
        None => payload_message(payload, line, src, None, sink),
    }
}

/// A bare payload, classified by its shape.
fn payload_message(
    v: Value,
    line: u64,
    src: String,
    hint: Option<&str>,
    sink: &mut dyn FnMut(Item),
) {
    let Value::Object(o) = &v else {
        return classify(v, &src, line, sink);
    };
    let has = |k: &str| o.contains_key(k);
    // A bare subagent event has `sessionId` and (for output) `update`:
    // it is read before the session-update shape it resembles.
    let method = if has("runId") && has("type") && has("version") {
        "_lody/subagents/event"
    } else if has("sessionUpdate") && o["sessionUpdate"].is_string()
        || (has("sessionId") && o.get("update").is_some_and(Value::is_object))
    {
        return update(v, line, src, sink);
    } else if has("agentCapabilities") || (has("protocolVersion") && has("capabilities")) {
        return sink(response(Some("initialize"), v, line, src));
    } else if has("clientCapabilities") {
        "initialize"
    } else if has("sessionId") && o.get("usage").is_some_and(Value::is_object) {
        "_lody/session/usage_update"
    } else if o.get("rateLimits").is_some_and(Value::is_array) {
        "_lody/rate_limits/update"
    } else if has("backgroundTaskCount") {
        "_lody/session/activity_update"
    } else if has("steerId") && has("sessionId") {
        if has("prompt") {
            "_lody/session/steer"
        } else {
            "_lody/session/steer_applied"
        }
    } else if has("requestedSchema") {
        "elicitation/create"
    } else if has("action") && has("sessionId") {
        "_lody/session/goal"
    } else if let (None, Some(shape)) = (hint, acp_extension_core::state::resembles(&v)) {
        return sink(Item::Problem {
            line,
            finding: Finding::of(
                &rules::NOT_A_MESSAGE,
                &src,
                format!(
                    "not placed: {shape} on its own is not a JSON-RPC message (it needs the message that carries it)"
                ),
            ),
        });
    } else {
        return sink(response(hint, v, line, src));
    };
    sink(call(method, v, line, src));
}

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

    #[test]
    fn loose_values_keep_their_lines() {
        let text = "{\n  \"a\": 1\n}\n\n{\"sessionUpdate\":\"plan\",\"entries\":[]}\n[\n {\"b\":1},\n {\"c\":2}\n]\n";
        let lines: Vec<u64> = records(text, Format::Loose)
            .into_iter()
            .map(|i| match i {
                Item::Record(r) => r.line,
                Item::Problem { line, .. } => line,
            })
            .collect();
        assert_eq!(lines, [1, 5, 7, 8]);
    }

    #[test]
    fn top_level_arrays_stream_with_element_lines() {
        let text = "[\n {\"b\":1},\n {\"c\":2}\n]\n";
        let lines: Vec<u64> = records(text, Format::Loose)
            .into_iter()
            .map(|i| match i {
                Item::Record(r) => r.line,
                Item::Problem { line, .. } => line,
            })
            .collect();
        assert_eq!(lines, [2, 3]);
    }

    #[test]
    fn broken_values_resync_at_the_next_top_level_value() {
        let text = "{\"a\": tru}\n  junk\n{\"b\": 1}\n";
        let items = records(text, Format::Loose);
        assert!(
            matches!(&items[0], Item::Problem { line: 1, finding } if finding.rule == "not-json")
        );
        assert!(matches!(&items[1], Item::Record(r) if r.line == 3));
        assert_eq!(items.len(), 2);
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
