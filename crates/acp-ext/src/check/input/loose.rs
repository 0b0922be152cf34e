//! The loose reader: fixtures as projects keep them (one value, an array,
//! values one after another, SDK calls, containers, bare payloads), each
//! value classified by shape into the JSON-RPC message it stands for.

use super::*;
use acp_extension_core::Namespace;
use acp_extension_core::methods::ContractMethod;

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

pub(super) fn read_loose<R: BufRead>(reader: R, sink: &mut dyn FnMut(Item)) -> io::Result<()> {
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
            return stop_reading(&mut rd, errors, sink);
        }
        match parse_one(&mut rd)? {
            Parsed::Value(v) => classify(v, "", line, sink),
            Parsed::Syntax(e) => {
                errors += 1;
                sink(not_json(line, "", e));
                rd.resync()?;
                if errors >= MAX_SYNTAX_ERRORS {
                    return stop_reading(&mut rd, errors, sink);
                }
            }
            Parsed::TooLarge => {
                sink(too_large(line));
                rd.resync()?;
            }
        }
    }
    Ok(())
}

/// Where reading stops for good (an array that is not closed, or
/// [`MAX_SYNTAX_ERRORS`] values that are not JSON): what is left unread is
/// said, not dropped in silence.
fn stop_reading<R: BufRead>(
    rd: &mut Counting<R>,
    errors: usize,
    sink: &mut dyn FnMut(Item),
) -> io::Result<()> {
    if errors >= MAX_SYNTAX_ERRORS && rd.peek_non_ws()?.is_some() {
        sink(not_json(
            rd.line,
            "",
            format!(
                "reading stopped after {errors} values that are not JSON: the rest of the \
                 file, from this line on, was not read"
            ),
        ));
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
    let start = rd.line;
    let mut empty = true;
    loop {
        let Some(b) = rd.peek_non_ws()? else {
            sink(not_json(rd.line, "", "the array is not closed"));
            return Ok(false);
        };
        let line = rd.line;
        match b {
            b']' => {
                rd.consume_byte();
                if empty {
                    sink(empty_array(start, ""));
                }
                return Ok(true);
            }
            b',' if !expect_value => {
                rd.consume_byte();
                expect_value = true;
            }
            _ if expect_value => {
                expect_value = false;
                empty = false;
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
                // The session it lacks is reported at the update.
                .rebased(vec![
                    ("/params/update", src.clone()),
                    ("/params/sessionId", src),
                ]),
        ));
    } else {
        payload_message(payload, line, src, sink);
    }
}

/// An empty array: as a JSON-RPC batch it is invalid, as a list of
/// fixtures it holds none; either way nothing to fold.
fn empty_array(line: u64, src: &str) -> Item {
    Item::Problem {
        line,
        finding: Finding::of(
            &rules::NOT_A_MESSAGE,
            src,
            "an empty array holds no message (as a JSON-RPC batch it is invalid)",
        ),
    }
}

/// Classifies one loose value; `src` is its pointer inside the value at `line`.
pub(super) fn classify(v: Value, src: &str, line: u64, sink: &mut dyn FnMut(Item)) {
    match v {
        Value::Array(items) if items.is_empty() => sink(empty_array(line, src)),
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
    if crate::transcript::is_record_line(&o) {
        if let Some(msg) = o.remove("msg") {
            let dir = o
                .get("dir")
                .and_then(Value::as_str)
                .map_or(Direction::Unknown, crate::transcript::direction_of);
            sink(Item::Record(
                Record::new(line, dir, msg).rebased(vec![("", at("msg"))]),
            ));
        } else {
            tap_line(Value::Object(o), line, sink);
        }
        return;
    }
    // Fixtures of an adapter's tests interleave its backend's traffic
    // (codex's app server): not ACP, skipped as a trace's MCP hops are.
    if ["codexRequest", "codexResponse", "codexNotification"]
        .iter()
        .any(|k| o.get(*k).is_some_and(Value::is_string))
    {
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
                    None => payload_message(params, line, at("args/0"), sink),
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
            // The answer to a request the container does not hold.
            match payload_shape(&r) {
                Some(_) => payload_message(r, line, at("response"), sink),
                None => sink(response(None, r, line, at("response"))),
            }
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
    payload_message(Value::Object(o), line, src.to_owned(), sink);
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
        None => payload_message(payload, line, src, sink),
    }
}

/// What a bare payload is, by its shape.
enum Shape {
    /// A subagent event, a usage update, …: the notification or request
    /// of this method.
    Call(&'static str),
    /// A session update, with or without its envelope.
    Update,
    /// The answer of this method.
    Answer(&'static str),
    /// A part of a message that cannot stand alone, named.
    Part(&'static str),
}

fn payload_shape(v: &Value) -> Option<Shape> {
    let o = v.as_object()?;
    let has = |k: &str| o.contains_key(k);
    // A bare subagent event has `sessionId` and (for output) `update`:
    // it is read before the session-update shape it resembles.
    let lody = |m: ContractMethod| m.method(Namespace::Lody);
    let method = if has("runId") && has("type") && has("version") {
        lody(ContractMethod::SubagentEvent)
    } else if has("sessionUpdate") && o["sessionUpdate"].is_string()
        || (has("sessionId") && o.get("update").is_some_and(Value::is_object))
    {
        return Some(Shape::Update);
    } else if has("agentCapabilities") || (has("protocolVersion") && has("capabilities")) {
        return Some(Shape::Answer("initialize"));
    } else if has("clientCapabilities") {
        "initialize"
    } else if has("sessionId") && o.get("usage").is_some_and(Value::is_object) {
        lody(ContractMethod::SessionUsageUpdate)
    } else if o.get("rateLimits").is_some_and(Value::is_array) {
        lody(ContractMethod::RateLimitsUpdate)
    } else if has("backgroundTaskCount") {
        lody(ContractMethod::SessionActivityUpdate)
    } else if has("steerId") && has("sessionId") {
        if has("prompt") {
            lody(ContractMethod::SessionSteer)
        } else {
            lody(ContractMethod::SessionSteerApplied)
        }
    } else if has("requestedSchema") {
        "elicitation/create"
    } else if has("action") && has("sessionId") {
        lody(ContractMethod::SessionGoal)
    } else if let Some(shape) = acp_extension_core::validate::resembles(v) {
        return Some(Shape::Part(shape));
    } else if o.get("stopReason").is_some_and(Value::is_string) {
        return Some(Shape::Answer("session/prompt"));
    } else {
        return None;
    };
    Some(Shape::Call(method))
}

/// A bare payload, classified by its shape.
fn payload_message(v: Value, line: u64, src: String, sink: &mut dyn FnMut(Item)) {
    if !v.is_object() {
        return classify(v, &src, line, sink);
    }
    let not_placed = |why: String| Item::Problem {
        line,
        finding: Finding::of(&rules::NOT_A_MESSAGE, &src, format!("not placed: {why}")),
    };
    match payload_shape(&v) {
        Some(Shape::Call(method)) => sink(call(method, v, line, src)),
        Some(Shape::Update) => update(v, line, src, sink),
        Some(Shape::Answer(method)) => sink(response(Some(method), v, line, src)),
        Some(Shape::Part(shape)) => sink(not_placed(format!(
            "{shape} on its own is not a JSON-RPC message (it needs the message that carries it)"
        ))),
        None => sink(not_placed(
            "an object of no JSON-RPC message or payload shape this reader knows".to_owned(),
        )),
    }
}
