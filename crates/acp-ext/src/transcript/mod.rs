//! Transcripts: what `acp-ext tap --record` writes and `check`, `state`
//! and `watch` read back. One module for the record's line format (written
//! by [`record`], read by [`read_line`]) and for what is kept out of it
//! ([`redact`]), so that the writer and the readers cannot drift apart.
//!
//! A record line is `{"dir":"c2a"|"a2c","t":<seconds>,"msg":<message>}`,
//! or `{"dir","t","raw":"<text>"}` for a line that was not JSON on the
//! wire (see [`record::RecordFormat`] for the conductor-style format).

pub mod record;
pub mod redact;

use acp_extension_core::connection::Direction;
use serde_json::{Map, Value};

/// One record line, read back.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RecordLine {
    /// A JSON-RPC message that travelled in `direction` (`/msg` in the line).
    Message {
        /// Which way it travelled (`Unknown` when `dir` is neither spelling).
        direction: Direction,
        /// The message.
        message: Value,
    },
    /// Bytes that were not JSON on the wire (`/raw` in the line).
    Raw {
        /// Which way they travelled.
        direction: Direction,
        /// The text as recorded.
        text: String,
    },
}

/// The direction a record's `dir` names: `c2a`, `a2c` (what
/// [`Direction::as_str`] writes), else unknown.
pub(crate) fn direction_of(dir: &str) -> Direction {
    match dir {
        "c2a" => Direction::ClientToAgent,
        "a2c" => Direction::AgentToClient,
        _ => Direction::Unknown,
    }
}

/// Whether `o` is a record line: a string `dir` with `msg` or `raw`.
pub fn is_record_line(o: &Map<String, Value>) -> bool {
    o.get("dir").is_some_and(Value::is_string) && (o.contains_key("msg") || o.contains_key("raw"))
}

/// Reads one record line; `None` when `o` is none ([`is_record_line`]).
///
/// ```
/// use acp_ext::transcript::{RecordLine, read_line};
/// use acp_extension_core::connection::Direction;
/// use serde_json::json;
///
/// let line = json!({"dir": "a2c", "t": 0.5, "raw": "oops"});
/// let read = read_line(line.as_object().unwrap().clone());
/// assert_eq!(read, Some(RecordLine::Raw { direction: Direction::AgentToClient, text: "oops".into() }));
/// ```
pub fn read_line(mut o: Map<String, Value>) -> Option<RecordLine> {
    if !is_record_line(&o) {
        return None;
    }
    let direction = o
        .get("dir")
        .and_then(Value::as_str)
        .map_or(Direction::Unknown, direction_of);
    match o.remove("msg") {
        Some(message) => Some(RecordLine::Message { direction, message }),
        None => Some(RecordLine::Raw {
            direction,
            text: o
                .get("raw")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        }),
    }
}
