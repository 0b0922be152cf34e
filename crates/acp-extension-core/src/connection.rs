//! One connection followed: every message parsed once, classified once,
//! paired with its request, and handed to the observers that need it.
//!
//! A [`Connection`] follows the JSON-RPC traffic of one ACP connection in
//! both directions. For each message (or each element of a batch) it
//! works out, once:
//!
//! - its [`Direction`] (inferred from the method, or for a response from
//!   its request, when the input did not record it);
//! - what it is ([`Message`]): a [`Call`] (request or notification), an
//!   [`Answer`] (a response), or an [`Invalid`] value that is no JSON-RPC
//!   message (with the reason, in the same words for every tool);
//! - for a response, the [`Request`] it answers (bounded table of pending
//!   requests; a fixture may name the method instead, and an `initialize`
//!   result on its own is recognised);
//! - both peers' [`Advertisement`]s, read from the `initialize` exchange;
//! - the sequence rules' verdicts ([`sequence`]): the rules that
//!   need memory run here, once per message, so that every observer sees
//!   the same [`SequenceFinding`](sequence::SequenceFinding)s.
//!
//! A line is read once, by [`Line::read`] (on any thread): a valid
//! subagent event notification is verified while read and its JSON tree
//! built only if an observer asks ([`Params::tree`]);
//! [`Connection::follow_read`] follows it to the same messages and
//! verdicts as its tree. Each observer declares what it reads of such an
//! event ([`Observer::reads`]): a linter only the run rules' facts (the
//! event is then not built at all), the consumer state what it folds
//! (plain text chunks and tool calls straight from the line). However the
//! line was read, a call's subagent event is read once, for the sequence
//! rules and every observer ([`Params::event`]).
//!
//! It then hands the classified [`Message`] to each [`Observer`]: the
//! consumer state ([`crate::state::ConnectionState`]) is one, a linter's
//! rules are another, and a tool that wants both runs them in one
//! pass over one parse.
//!
//! ```
//! use acp_extension_core::connection::{Connection, Direction, Message, Observer};
//! use serde_json::json;
//!
//! #[derive(Default)]
//! struct Answers(Vec<String>);
//! impl Observer for Answers {
//!     fn message(&mut self, _: &Connection, message: &Message<'_>) {
//!         if let Message::Answer(answer) = message {
//!             self.0.push(answer.method().unwrap_or("?").to_owned());
//!         }
//!     }
//! }
//!
//! let mut connection = Connection::new();
//! let mut answers = Answers::default();
//! connection.follow_line(Direction::ClientToAgent,
//!     r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}"#,
//!     &mut [&mut answers]);
//! connection.follow_line(Direction::AgentToClient,
//!     r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s"}}"#, &mut [&mut answers]);
//! assert_eq!(answers.0, ["session/new"]);
//! ```

use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::capabilities::Side;
use crate::methods::{ContractMethod, contract_method, method_info};
use crate::namespace::{self, split_method};
use crate::negotiation::{Advertisement, initialize_capabilities};
use crate::wire::bounded::{BoundedMap, BoundedSet, id_hash};
use sequence::{SequenceLimits, SequenceTracker, TrackedState};

mod line;
mod message;
pub mod sequence;
pub(crate) use line::SiftedOutput;
/// How a [`Line`] was read (a tree, or an event read straight into its
/// type): for the lanes' differential tests and fuzzers only (feature
/// `test-support`); no one else can tell.
#[cfg(feature = "test-support")]
#[doc(hidden)]
pub use line::{EventLine, ParsedLine};
#[cfg(not(feature = "test-support"))]
pub(crate) use line::{EventLine, ParsedLine};
pub use line::{Line, Reads};
use message::NULL;
pub use message::{Answer, Call, Invalid, Message, Params};

/// Which way a message travelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// From the client (editor) to the agent.
    ClientToAgent,
    /// From the agent to the client.
    AgentToClient,
    /// Not recorded (loose fixtures): inferred from the message where possible.
    Unknown,
}

impl Direction {
    /// The other way; `Unknown` stays unknown.
    pub(crate) fn opposite(self) -> Self {
        match self {
            Direction::ClientToAgent => Direction::AgentToClient,
            Direction::AgentToClient => Direction::ClientToAgent,
            Direction::Unknown => Direction::Unknown,
        }
    }

    /// `c2a`, `a2c` or `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::ClientToAgent => "c2a",
            Direction::AgentToClient => "a2c",
            Direction::Unknown => "unknown",
        }
    }

    /// The direction a request or notification with this method travels
    /// in ACP and in the contract; `Unknown` for methods of other vendors.
    ///
    /// ```
    /// use acp_extension_core::connection::Direction;
    /// assert_eq!(Direction::of_method("session/update"), Direction::AgentToClient);
    /// assert_eq!(Direction::of_method("_ua/session/steer"), Direction::ClientToAgent);
    /// assert_eq!(Direction::of_method("_vendor/x"), Direction::Unknown);
    /// ```
    pub fn of_method(method: &str) -> Self {
        if let Some((_, path)) = split_method(method) {
            return match method_info(path).map(|m| m.sender) {
                None => Direction::Unknown,
                Some(Side::Client) => Direction::ClientToAgent,
                Some(Side::Agent) => Direction::AgentToClient,
            };
        }
        if method.starts_with('_') {
            return Direction::Unknown;
        }
        match method {
            "session/update"
            | "session/request_permission"
            | "elicitation/create"
            | "elicitation/complete" => Direction::AgentToClient,
            m if m.starts_with("fs/") || m.starts_with("terminal/") => Direction::AgentToClient,
            _ => Direction::ClientToAgent,
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Requests awaiting their response, keyed by the direction they travelled
/// and their JSON-RPC id, with a capacity (the oldest is forgotten).
#[derive(Debug, Clone)]
pub struct PendingRequests<T> {
    map: BoundedMap<T>,
}

impl<T> Default for PendingRequests<T> {
    fn default() -> Self {
        Self {
            map: BoundedMap::default(),
        }
    }
}

fn pending_key(direction: Direction, id: &Value) -> u64 {
    id_hash(&format!("{}:{id}", direction.as_str()))
}

impl<T> PendingRequests<T> {
    /// Remembers the request `id` sent in `direction`, keeping at most
    /// `cap` requests.
    pub fn insert(&mut self, direction: Direction, id: &Value, value: T, cap: usize) {
        self.map.insert(pending_key(direction, id), value, cap);
    }

    /// Takes the request that a response travelling in `direction` with
    /// this `id` answers (a response travels the other way; a request of
    /// unknown direction matches either).
    pub fn take(&mut self, direction: Direction, id: &Value) -> Option<T> {
        if id.is_null() {
            return None;
        }
        let tries: &[Direction] = match direction {
            Direction::AgentToClient => &[Direction::ClientToAgent, Direction::Unknown],
            Direction::ClientToAgent => &[Direction::AgentToClient, Direction::Unknown],
            Direction::Unknown => &[
                Direction::ClientToAgent,
                Direction::AgentToClient,
                Direction::Unknown,
            ],
        };
        tries
            .iter()
            .find_map(|d| self.map.remove(pending_key(*d, id)))
    }

    /// How many requests await a response.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether none does.
    pub fn is_empty(&self) -> bool {
        self.map.len() == 0
    }

    /// Every awaiting request, in no particular order.
    pub fn values(&self) -> impl Iterator<Item = &T> {
        self.map.values()
    }

    /// Forgets every request.
    pub fn clear(&mut self) {
        self.map = BoundedMap::default();
    }
}

/// How a response found the request it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Pairing {
    /// Its request was seen on the connection.
    Paired,
    /// The input named the request's method (fixtures keep responses on
    /// their own; see [`Connection::follow_with_method`]).
    Named,
    /// An `initialize` result on its own, recognised by its shape.
    Inferred,
}

/// A request as remembered for its response.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Request {
    /// The way the request travelled.
    pub direction: Direction,
    /// Its method.
    pub method: String,
    /// Its `params.sessionId`.
    pub session_id: Option<String>,
    /// The steer it carries: a steer request's `steerId`, a prompt's
    /// `_meta.<ns>.steer.id` (or a vendor's), `_session/steering`'s
    /// `steerId` or `request:<id>`.
    pub steer_id: Option<String>,
    /// Whether no earlier message of the connection named its session.
    pub first_mention: bool,
    /// How the response found it.
    pub pairing: Pairing,
}

/// Something that follows a connection's classified messages: the
/// consumer state, a linter's rules, a live view.
pub trait Observer {
    /// One message (each element of a batch apart), after the connection
    /// classified it and ran the sequence rules.
    fn message(&mut self, connection: &Connection, message: &Message<'_>);

    /// Input that is no JSON at all (`rule` `not-json`), or that could not
    /// be read (a line too long): `message` says why.
    fn unreadable(&mut self, connection: &Connection, rule: &str, message: &str) {
        let _ = (connection, rule, message);
    }

    /// What it reads of a subagent event verified while its line was read
    /// ahead ([`Line::read`]): the whole event unless it says less.
    fn reads(&self) -> Reads {
        Reads::Event
    }
}

/// One followed connection; see the [module docs](self).
///
/// # Example
///
/// ```
/// use acp_extension_core::capabilities::{Feature, Side};
/// use acp_extension_core::connection::{Connection, Direction};
///
/// let mut c = Connection::new();
/// c.follow_line(Direction::Unknown, r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"_meta":{"ua":{"subagentEvents":{"version":1}}}}}}"#, &mut []);
/// c.follow_line(Direction::Unknown, r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{"_meta":{"ua":{"subagentEvents":{"version":1}}}}}}"#, &mut []);
/// assert!(c.advertisement(Side::Client).unwrap().supports(Feature::SubagentEvents));
/// assert!(!c.advertisement(Side::Agent).unwrap().supports(Feature::Usage));
/// assert_eq!(c.pending_requests().count(), 0); // the response found its request
/// ```
#[derive(Debug, Default, Clone)]
pub struct Connection {
    limits: SequenceLimits,
    pending: PendingRequests<Request>,
    named_sessions: BoundedSet,
    client: Option<Advertisement>,
    agent: Option<Advertisement>,
    /// The `protocolVersion` the agent answered.
    version: Option<u64>,
    client_seen: bool,
    seq: SequenceTracker,
    values: u64,
}

impl Connection {
    /// A connection with the default [`SequenceLimits`].
    pub fn new() -> Self {
        Self::default()
    }

    /// A connection with these capacities.
    pub fn with_limits(limits: SequenceLimits) -> Self {
        Self {
            limits,
            seq: SequenceTracker::with_limits(limits),
            ..Self::default()
        }
    }

    /// Its capacities.
    pub fn limits(&self) -> SequenceLimits {
        self.limits
    }

    /// The `protocolVersion` the agent answered in `initialize`: the
    /// version the connection speaks, once seen.
    pub fn protocol_version(&self) -> Option<u64> {
        self.version
    }

    /// What `side` advertised, once seen (the client's `initialize`
    /// request, the agent's result).
    pub fn advertisement(&self, side: Side) -> Option<&Advertisement> {
        match side {
            Side::Agent => self.agent.as_ref(),
            Side::Client => self.client.as_ref(),
        }
    }

    /// Requests awaiting their response.
    pub fn pending_requests(&self) -> impl Iterator<Item = &Request> {
        self.pending.values()
    }

    /// Forgets every pending request (the connection was lost: no answer
    /// will come).
    pub(crate) fn forget_pending(&mut self) {
        self.pending.clear();
    }

    /// Input values classified so far (messages, batch elements, lines
    /// that are no JSON).
    pub fn values(&self) -> u64 {
        self.values
    }

    /// What the connection's memory holds (bounded by [`SequenceLimits`]).
    pub fn tracked(&self) -> TrackedState {
        let mut t = self.seq.tracked();
        t.pending_requests = self.pending.len();
        t
    }

    /// Parses one line of a transcript and follows it: a JSON-RPC message
    /// or batch; a line that is not JSON goes to
    /// [`Observer::unreadable`] with rule `not-json`.
    pub fn follow_line(
        &mut self,
        direction: Direction,
        line: &str,
        observers: &mut [&mut dyn Observer],
    ) {
        self.follow_read(
            direction,
            &Line::read(line.as_bytes(), Reads::Event),
            observers,
        )
    }

    /// Follows one line read ahead by [`Line::read`] (on this thread or
    /// another): a JSON tree as [`Connection::follow`] does, a verified
    /// event without one (the same classification, sequence rules and
    /// observers), and bytes that are not JSON as `not-json`.
    pub fn follow_read(
        &mut self,
        direction: Direction,
        line: &Line,
        observers: &mut [&mut dyn Observer],
    ) {
        match &line.0 {
            ParsedLine::Value(v) => self.follow(direction, v, observers),
            ParsedLine::Event(event) => {
                let message = self.one_event(direction, event);
                for o in observers.iter_mut() {
                    o.message(self, &message);
                }
            }
            ParsedLine::NotJson(e) => {
                self.unreadable("not-json", &format!("not JSON: {e}"), observers)
            }
        }
    }

    /// A typed event: a notification of its method, classified as
    /// [`Connection::one`] classifies its JSON tree.
    fn one_event<'a>(&mut self, direction: Direction, line: &'a EventLine) -> Message<'a> {
        let call = Call::new(direction, line.method(), None, Params::event_of(line));
        self.classified(Message::Call(call), None)
    }

    /// Follows one parsed message (or batch) that travelled in `direction`
    /// ([`Direction::Unknown`] infers it).
    pub fn follow(
        &mut self,
        direction: Direction,
        value: &Value,
        observers: &mut [&mut dyn Observer],
    ) {
        self.follow_with_method(direction, value, None, observers)
    }

    /// Like [`Connection::follow`], for input that keeps a response without
    /// its request (fixtures): `request_method` names the request it
    /// answers. Ignored for calls, and when the request was seen.
    pub fn follow_with_method(
        &mut self,
        direction: Direction,
        value: &Value,
        request_method: Option<&str>,
        observers: &mut [&mut dyn Observer],
    ) {
        match value {
            Value::Array(items) if !items.is_empty() => {
                for message in self.classify(direction, value, request_method) {
                    for o in observers.iter_mut() {
                        o.message(self, &message);
                    }
                }
            }
            // One message (the common case): no list to build.
            _ => {
                let message = self.one(direction, value, request_method);
                for o in observers.iter_mut() {
                    o.message(self, &message);
                }
            }
        }
    }

    /// Input that could not be read as JSON (or at all): counted, and
    /// handed to the observers.
    pub fn unreadable(&mut self, rule: &str, message: &str, observers: &mut [&mut dyn Observer]) {
        self.values += 1;
        for o in observers.iter_mut() {
            o.unreadable(self, rule, message);
        }
    }

    /// Classifies one message (or each element of a batch) and runs the
    /// sequence rules on it, without handing it to observers.
    pub fn classify<'a>(
        &mut self,
        direction: Direction,
        value: &'a Value,
        request_method: Option<&str>,
    ) -> Vec<Message<'a>> {
        match value {
            Value::Array(items) if !items.is_empty() => items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    let mut m = self.one(direction, item, request_method);
                    m.set_batch_index(i);
                    m
                })
                .collect(),
            _ => vec![self.one(direction, value, request_method)],
        }
    }

    fn one<'a>(
        &mut self,
        direction: Direction,
        value: &'a Value,
        hint: Option<&str>,
    ) -> Message<'a> {
        self.classified(classify_shape(direction, value), hint)
    }

    /// What follows the shape of a message, however it was read: its
    /// direction, its request, the advertisements, the sequence rules.
    fn classified<'a>(&mut self, mut m: Message<'a>, hint: Option<&str>) -> Message<'a> {
        self.values += 1;
        match &mut m {
            Message::Call(c) => {
                if c.direction == Direction::Unknown {
                    c.direction = Direction::of_method(c.method);
                }
                if c.direction == Direction::ClientToAgent {
                    self.client_seen = true;
                }
                let first_mention = self.name_session(c.session_id());
                if let Some(id) = c.id {
                    let request = Request {
                        direction: c.direction,
                        method: c.method.to_owned(),
                        session_id: c.session_id().map(str::to_owned),
                        steer_id: steer_id_of(c.method, c.params.tree(), id),
                        first_mention,
                        pairing: Pairing::Paired,
                    };
                    self.pending
                        .insert(c.direction, id, request, self.limits.pending_requests);
                }
                if c.method == "initialize" && c.direction != Direction::AgentToClient {
                    let caps =
                        initialize_capabilities(c.params.tree(), Side::Client).unwrap_or(&NULL);
                    self.client = Some(Advertisement::read(caps, Side::Client));
                    self.agent = None;
                    self.version = None;
                    self.seq.reset();
                }
                let (sequence, run_accepted) = self.seq.call(c, self.client_seen);
                c.sequence = sequence;
                c.run_accepted = run_accepted;
            }
            Message::Answer(a) => {
                let paired = a.id.and_then(|id| self.pending.take(a.direction, id));
                a.request = paired.or_else(|| {
                    let (method, pairing) = match (hint, a.result()) {
                        (Some(h), _) => (h.to_owned(), Pairing::Named),
                        (None, Some(r)) if looks_like_initialize_result(r) => {
                            ("initialize".to_owned(), Pairing::Inferred)
                        }
                        _ => return None,
                    };
                    Some(Request {
                        direction: Direction::of_method(&method),
                        method,
                        session_id: None,
                        steer_id: None,
                        first_mention: false,
                        pairing,
                    })
                });
                if a.direction == Direction::Unknown
                    && let Some(r) = &a.request
                {
                    a.direction = r.direction.opposite();
                }
                if a.direction == Direction::ClientToAgent {
                    self.client_seen = true;
                }
                if let Some(r) = a.result() {
                    self.name_session(r.get("sessionId").and_then(Value::as_str));
                    if a.method() == Some("initialize") {
                        let caps = initialize_capabilities(r, Side::Agent).unwrap_or(&NULL);
                        self.agent = Some(Advertisement::read(caps, Side::Agent));
                        self.version = r.get("protocolVersion").and_then(Value::as_u64);
                    }
                }
                let v2 = self.version.is_some_and(|v| v >= 2);
                a.sequence = self.seq.answer(a, v2);
            }
            Message::Invalid(_) => {}
        }
        m
    }

    /// Notes a session named by a message; whether it is the first mention.
    fn name_session(&mut self, sid: Option<&str>) -> bool {
        let Some(sid) = sid else {
            return false;
        };
        let h = id_hash(sid);
        let first = !self.named_sessions.contains(h);
        self.named_sessions.insert(h, self.limits.sessions);
        first
    }
}

/// What a value is, by its keys alone (no memory): the first step of
/// classification.
fn classify_shape(direction: Direction, value: &Value) -> Message<'_> {
    let invalid = |pointer: &'static str, problem: String| {
        Message::Invalid(Invalid {
            direction,
            value,
            pointer,
            problem,
            batch_index: None,
        })
    };
    let obj = match value {
        Value::Object(obj) => obj,
        Value::Array(_) => {
            return invalid("", "an empty batch is not a JSON-RPC message".to_owned());
        }
        other => {
            return invalid(
                "",
                format!(
                    "expected a JSON-RPC message object, found {}",
                    crate::wire::json_type(other)
                ),
            );
        }
    };
    if let Some((pointer, why)) = crate::validate::envelope_problem(obj) {
        return invalid(pointer, why);
    }
    if let Some(method) = obj.get("method").and_then(Value::as_str) {
        let id = obj.get("id").filter(|id| !id.is_null());
        let event = contract_method(method) == Some(ContractMethod::SubagentEvent);
        let params = Params::tree_of(value, obj.get("params").unwrap_or(&NULL), event);
        return Message::Call(Call::new(direction, method, id, params));
    }
    let outcome = match (obj.get("result"), obj.get("error")) {
        (Some(r), _) => Some(Ok(r)),
        (None, Some(e)) => Some(Err(e)),
        (None, None) => None,
    };
    if let Some(outcome) = outcome {
        return Message::Answer(Answer {
            direction,
            id: obj.get("id"),
            outcome,
            request: None,
            batch_index: None,
            sequence: Vec::new(),
            value,
        });
    }
    // What the envelope rule lets through without a method or an outcome
    // is a bare subagent event, read as the contract's notification.
    let mut call = Call::new(
        Direction::AgentToClient,
        crate::methods::ContractMethod::SubagentEvent.method(crate::namespace::Namespace::Lody),
        None,
        Params::tree_of(value, value, true),
    );
    call.bare_event = true;
    Message::Call(call)
}

/// An `initialize` result by its shape (fixtures keep it without its
/// request).
pub(crate) fn looks_like_initialize_result(result: &Value) -> bool {
    result.get("agentCapabilities").is_some()
        || (result.get("protocolVersion").is_some()
            && (result.get("capabilities").is_some() || result.get("info").is_some()))
}

/// The steer a request carries, if any.
fn steer_id_of(method: &str, params: &Value, id: &Value) -> Option<String> {
    if contract_method(method) == Some(ContractMethod::SessionSteer) {
        params
            .get("steerId")
            .and_then(Value::as_str)
            .map(str::to_owned)
    } else if method == "session/prompt" {
        prompt_steer_id(params).map(str::to_owned)
    } else if method == crate::standard::STEERING_METHOD {
        Some(standard_steer_id(params, id))
    } else {
        None
    }
}

/// Whether a `session/prompt` result is ACP v2's receipt (`{messageId}`;
/// `{}` in older drafts, on a `v2` connection) rather than v1's end of
/// the turn (`{stopReason}`): in v2 the turn ends with an `idle`
/// `state_update`.
pub(crate) fn is_prompt_receipt(result: &Value, v2: bool) -> bool {
    result.get("stopReason").is_none() && (v2 || result.get("messageId").is_some())
}

/// A prompt's steer id: `_meta.<ns>.steer.id`, else the vendors'
/// `_meta.claudeCode.steer.id` or `_meta.codex.steer.id`.
pub(crate) fn prompt_steer_id(params: &Value) -> Option<&str> {
    let meta = params.get("_meta").and_then(Value::as_object)?;
    namespace::read_key(meta, "steer")
        .map(|(_, s)| s)
        .or_else(|| meta.get("claudeCode").and_then(|c| c.get("steer")))
        .or_else(|| meta.get("codex").and_then(|c| c.get("steer")))
        .and_then(|s| s.get("id"))
        .and_then(Value::as_str)
}

/// A `_session/steering` request's id: its `steerId` when given (Core
/// clients add one), else `request:<JSON-RPC id>`.
pub(crate) fn standard_steer_id(params: &Value, id: &Value) -> String {
    params
        .get("steerId")
        .and_then(Value::as_str)
        .map_or_else(|| format!("request:{id}"), str::to_owned)
}
