//! Writing the transcript of a connection: JSONL or the SDK conductor's
//! trace format, secrets redacted.

use std::fmt;
use std::io::{self, Write};

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use super::redact::Redactor;
use acp_extension_core::connection::Direction;

/// Raw (non-JSON) lines are cut to this many bytes in the record.
pub const RAW_LIMIT: usize = 64 * 1024;

/// How `--record` writes the transcript.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum RecordFormat {
    /// One object per line: `{"dir":"c2a"|"a2c","t":<seconds>,"msg":<message>}`,
    /// or `{"dir","t","raw":"<text>"}` for a line that is not JSON. This is
    /// what `acp-ext check` reads.
    #[default]
    Jsonl,
    /// The ACP SDK conductor's `--trace` format (request, response and
    /// notification events between `Client` and `Agent`), which the SDK's
    /// trace viewer opens. Lines that are not JSON-RPC messages are left out
    /// (and counted).
    Conductor,
}

crate::choice::choices!(RecordFormat, "record format" {
    Jsonl = "jsonl",
    Conductor = "conductor",
});

/// Writes one connection's transcript, redacting secrets (see
/// [`Redactor`]) in every message before it reaches the output.
///
/// ```
/// use acp_ext::check::Direction;
/// use acp_ext::tap::{RecordFormat, RecordWriter};
///
/// let mut w = RecordWriter::new(Vec::new(), RecordFormat::Jsonl);
/// w.line(Direction::ClientToAgent, 0.5, br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#)?;
/// w.line(Direction::AgentToClient, 0.75, b"not json")?;
/// let text = String::from_utf8(w.into_inner()).unwrap();
/// assert_eq!(text, concat!(
///     r#"{"dir":"c2a","t":0.5,"msg":{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}}"#, "\n",
///     r#"{"dir":"a2c","t":0.75,"raw":"not json"}"#, "\n",
/// ));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct RecordWriter<W: Write> {
    out: W,
    format: RecordFormat,
    redactor: Redactor,
    written: u64,
    left_out: u64,
}

impl<W: Write> RecordWriter<W> {
    /// A writer of `format` into `out` (buffer `out` yourself).
    pub fn new(out: W, format: RecordFormat) -> Self {
        Self {
            out,
            format,
            redactor: Redactor::new(),
            written: 0,
            left_out: 0,
        }
    }

    /// Records one line (without its line feed; a trailing carriage return
    /// is ignored) that travelled `direction`, `t` seconds after the start.
    ///
    /// A JSON-RPC object that cannot hold a secret is copied into the record
    /// as it is (after a full syntax check), without building a tree; the
    /// others go through [`message`](Self::message).
    pub fn line(&mut self, direction: Direction, t: f64, line: &[u8]) -> io::Result<()> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Some(done) = self.fast_line(direction, t, line) {
            return done;
        }
        match serde_json::from_slice::<Value>(line) {
            Ok(message) => self.message(direction, t, &message),
            Err(_) => self.raw(direction, t, line),
        }
    }

    /// The fast path of [`line`](Self::line); `None` when it does not apply.
    fn fast_line(&mut self, direction: Direction, t: f64, line: &[u8]) -> Option<io::Result<()>> {
        // Ignored string values are not checked for UTF-8 by the parser.
        let text = std::str::from_utf8(line).ok()?;
        if !text.trim_start().starts_with('{') || !tree_safe(text) {
            return None;
        }
        let env: Envelope<'_> = serde_json::from_str(text).ok()?;
        let result = env.result.map(RawValue::get);
        if self.redactor.may_redact(env.method.as_deref(), result) {
            return None;
        }
        let t = round_micros(t);
        Some(match self.format {
            RecordFormat::Jsonl => (|| {
                write!(
                    self.out,
                    r#"{{"dir":"{}","t":{},"msg":"#,
                    direction.as_str(),
                    Ts(t)
                )?;
                self.out.write_all(text.as_bytes())?;
                self.out.write_all(b"}\n")?;
                self.written += 1;
                Ok(())
            })(),
            RecordFormat::Conductor => {
                let session = env.params.and_then(|p| {
                    serde_json::from_str::<SessionPeek<'_>>(p.get())
                        .ok()
                        .and_then(|s| s.session_id)
                });
                let null = RawValue::NULL;
                let parts = Parts {
                    id: env.id,
                    method: env.method.as_deref(),
                    params: env.params,
                    result: env.result,
                    error: env.error,
                    session: session.as_deref(),
                };
                match conductor_event(direction, t, parts, null) {
                    Some(event) => self.emit(&event),
                    None => {
                        self.left_out += 1;
                        Ok(())
                    }
                }
            }
        })
    }

    /// Records one parsed message.
    pub fn message(&mut self, direction: Direction, t: f64, message: &Value) -> io::Result<()> {
        let redacted = self.redactor.redact(direction, message);
        let message = redacted.as_ref().unwrap_or(message);
        let t = round_micros(t);
        match self.format {
            RecordFormat::Jsonl => {
                #[derive(Serialize)]
                struct Entry<'a> {
                    dir: &'static str,
                    t: f64,
                    msg: &'a Value,
                }
                let entry = Entry {
                    dir: direction.as_str(),
                    t,
                    msg: message,
                };
                self.emit(&entry)
            }
            RecordFormat::Conductor => match value_event(direction, t, message) {
                Some(event) => self.emit(&event),
                None => {
                    self.left_out += 1;
                    Ok(())
                }
            },
        }
    }

    /// Records a line that is not JSON: as lossy UTF-8, cut to
    /// [`RAW_LIMIT`] bytes with a note (JSONL); left out (conductor).
    pub fn raw(&mut self, direction: Direction, t: f64, bytes: &[u8]) -> io::Result<()> {
        if self.format == RecordFormat::Conductor {
            self.left_out += 1;
            return Ok(());
        }
        let raw = if bytes.len() > RAW_LIMIT {
            let mut cut = RAW_LIMIT;
            // Do not split a UTF-8 sequence at the cut.
            while cut > RAW_LIMIT - 4 && (bytes[cut] & 0xC0) == 0x80 {
                cut -= 1;
            }
            let mut s = String::from_utf8_lossy(&bytes[..cut]).into_owned();
            s.push_str(&format!(
                " … [truncated: {} of {} bytes recorded]",
                cut,
                bytes.len()
            ));
            s
        } else {
            String::from_utf8_lossy(bytes).into_owned()
        };
        #[derive(Serialize)]
        struct Entry<'a> {
            dir: &'static str,
            t: f64,
            raw: &'a str,
        }
        self.emit(&Entry {
            dir: direction.as_str(),
            t: round_micros(t),
            raw: &raw,
        })
    }

    fn emit<T: Serialize>(&mut self, entry: &T) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, entry)?;
        self.out.write_all(b"\n")?;
        self.written += 1;
        Ok(())
    }

    /// Entries written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Lines left out because the format cannot show them (conductor
    /// format: lines that are not JSON-RPC messages).
    pub fn left_out(&self) -> u64 {
        self.left_out
    }

    /// Flushes the output.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The output back.
    pub fn into_inner(self) -> W {
        self.out
    }
}

fn round_micros(t: f64) -> f64 {
    (t * 1e6).round() / 1e6
}

/// `t` printed as JSON (a finite number; never `NaN`).
struct Ts(f64);

impl fmt::Display for Ts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = Value::from(self.0);
        write!(f, "{v}")
    }
}

/// The top-level members of a JSON-RPC message, unparsed.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// A present member, `null` included (`Option` alone would take `null` for
/// absent).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct SessionPeek<'a> {
    #[serde(default, borrow, rename = "sessionId")]
    session_id: Option<Cow<'a, str>>,
}

/// What the conductor format needs of a message.
struct Parts<'a, V: ?Sized> {
    id: Option<&'a V>,
    method: Option<&'a str>,
    params: Option<&'a V>,
    result: Option<&'a V>,
    error: Option<&'a V>,
    session: Option<&'a str>,
}

/// One event of the conductor trace format.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum ConductorEvent<'a, V: ?Sized + Serialize> {
    Request {
        ts: f64,
        protocol: &'static str,
        from: &'static str,
        to: &'static str,
        id: &'a V,
        method: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        session: Option<&'a str>,
        params: &'a V,
    },
    Response {
        ts: f64,
        from: &'static str,
        to: &'static str,
        id: &'a V,
        is_error: bool,
        payload: &'a V,
    },
    Notification {
        ts: f64,
        protocol: &'static str,
        from: &'static str,
        to: &'static str,
        method: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        session: Option<&'a str>,
        params: &'a V,
    },
}

static NULL: Value = Value::Null;

fn value_event(
    direction: Direction,
    ts: f64,
    message: &Value,
) -> Option<ConductorEvent<'_, Value>> {
    let obj = message.as_object()?;
    let params = obj.get("params");
    let method = match obj.get("method") {
        Some(Value::String(m)) => Some(m.as_str()),
        Some(_) => return None,
        None => None,
    };
    let parts = Parts {
        id: obj.get("id"),
        method,
        params,
        result: obj.get("result"),
        error: obj.get("error"),
        session: params
            .and_then(|p| p.get("sessionId"))
            .and_then(Value::as_str),
    };
    conductor_event(direction, ts, parts, &NULL)
}

fn conductor_event<'a, V: ?Sized + Serialize>(
    direction: Direction,
    ts: f64,
    m: Parts<'a, V>,
    null: &'a V,
) -> Option<ConductorEvent<'a, V>> {
    let (from, to) = match direction {
        Direction::ClientToAgent => ("Client", "Agent"),
        Direction::AgentToClient => ("Agent", "Client"),
        _ => return None,
    };
    let params = m.params.unwrap_or(null);
    match (m.method, m.id) {
        (Some(method), Some(id)) => Some(ConductorEvent::Request {
            ts,
            protocol: "acp",
            from,
            to,
            id,
            method,
            session: m.session,
            params,
        }),
        (Some(method), None) => Some(ConductorEvent::Notification {
            ts,
            protocol: "acp",
            from,
            to,
            method,
            session: m.session,
            params,
        }),
        (None, id) => {
            let (is_error, payload) = match (m.result, m.error) {
                (_, Some(error)) => (true, error),
                (Some(result), None) => (false, result),
                (None, None) => return None,
            };
            Some(ConductorEvent::Response {
                ts,
                from,
                to,
                id: id.unwrap_or(null),
                is_error,
                payload,
            })
        }
    }
}

/// Whether `text`, once known to be JSON, holds only numbers and escapes a
/// JSON tree can take, so that the fast path (whose skipping parse checks
/// neither) agrees with the validator on what is JSON: no exponent and no
/// run of more than 300 digits outside strings (either may overflow an
/// `f64`), no surrogate escape inside them (it may be unpaired). When in
/// doubt, the full parse decides.
fn tree_safe(text: &str) -> bool {
    let b = text.as_bytes();
    let mut in_string = false;
    let mut digits = 0usize;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if in_string {
            match c {
                b'"' => in_string = false,
                b'\\' => {
                    if b.get(i + 1) == Some(&b'u')
                        && matches!(b.get(i + 2), Some(b'd' | b'D'))
                        && matches!(b.get(i + 3), Some(b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F'))
                    {
                        return false;
                    }
                    i += 1;
                }
                _ => {}
            }
        } else {
            match c {
                b'"' => in_string = true,
                b'e' | b'E' if digits > 0 => return false,
                b'0'..=b'9' => {
                    digits += 1;
                    if digits > 300 {
                        return false;
                    }
                    i += 1;
                    continue;
                }
                _ => {}
            }
            digits = 0;
        }
        i += 1;
    }
    true
}
