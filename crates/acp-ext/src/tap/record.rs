//! Writing the transcript of a connection: JSONL or the SDK conductor's
//! trace format, secrets redacted.

use std::fmt;
use std::io::{self, Write};
use std::str::FromStr;

use serde::Serialize;
use serde_json::Value;

use super::redact::Redactor;
use crate::check::Direction;

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

impl RecordFormat {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Jsonl => "jsonl",
            Self::Conductor => "conductor",
        }
    }
}

impl fmt::Display for RecordFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A record format name that is neither `jsonl` nor `conductor`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownFormat(pub String);

impl fmt::Display for UnknownFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown record format `{}` (expected jsonl or conductor)",
            self.0
        )
    }
}

impl std::error::Error for UnknownFormat {}

impl FromStr for RecordFormat {
    type Err = UnknownFormat;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "jsonl" => Ok(Self::Jsonl),
            "conductor" => Ok(Self::Conductor),
            other => Err(UnknownFormat(other.to_owned())),
        }
    }
}

/// The record's short name of a direction: `c2a`, `a2c` (or `unknown`).
pub fn dir_name(direction: Direction) -> &'static str {
    match direction {
        Direction::ClientToAgent => "c2a",
        Direction::AgentToClient => "a2c",
        _ => "unknown",
    }
}

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
    pub fn line(&mut self, direction: Direction, t: f64, line: &[u8]) -> io::Result<()> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        match serde_json::from_slice::<Value>(line) {
            Ok(message) => self.message(direction, t, &message),
            Err(_) => self.raw(direction, t, line),
        }
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
                    dir: dir_name(direction),
                    t,
                    msg: message,
                };
                self.emit(&entry)
            }
            RecordFormat::Conductor => match conductor_event(direction, t, message) {
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
            dir: dir_name(direction),
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

static NULL: Value = Value::Null;

/// One event of the conductor trace format.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum ConductorEvent<'a> {
    Request {
        ts: f64,
        protocol: &'static str,
        from: &'static str,
        to: &'static str,
        id: &'a Value,
        method: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        session: Option<&'a str>,
        params: &'a Value,
    },
    Response {
        ts: f64,
        from: &'static str,
        to: &'static str,
        id: &'a Value,
        is_error: bool,
        payload: &'a Value,
    },
    Notification {
        ts: f64,
        protocol: &'static str,
        from: &'static str,
        to: &'static str,
        method: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        session: Option<&'a str>,
        params: &'a Value,
    },
}

fn conductor_event(direction: Direction, ts: f64, message: &Value) -> Option<ConductorEvent<'_>> {
    let obj = message.as_object()?;
    let (from, to) = match direction {
        Direction::ClientToAgent => ("Client", "Agent"),
        Direction::AgentToClient => ("Agent", "Client"),
        _ => return None,
    };
    let params = obj.get("params").unwrap_or(&NULL);
    let session = params.get("sessionId").and_then(Value::as_str);
    match (obj.get("method"), obj.get("id")) {
        (Some(Value::String(method)), Some(id)) => Some(ConductorEvent::Request {
            ts,
            protocol: "acp",
            from,
            to,
            id,
            method,
            session,
            params,
        }),
        (Some(Value::String(method)), None) => Some(ConductorEvent::Notification {
            ts,
            protocol: "acp",
            from,
            to,
            method,
            session,
            params,
        }),
        (None, id) => {
            let (is_error, payload) = match (obj.get("result"), obj.get("error")) {
                (_, Some(error)) => (true, error),
                (Some(result), None) => (false, result),
                (None, None) => return None,
            };
            Some(ConductorEvent::Response {
                ts,
                from,
                to,
                id: id.unwrap_or(&NULL),
                is_error,
                payload,
            })
        }
        _ => None,
    }
}
