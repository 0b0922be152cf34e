//! One classified message: a call, an answer paired with its request, or
//! an invalid value.

use std::cell::OnceCell;

use serde::Deserialize;
use serde_json::Value;

use super::Direction;
use super::line::EventLine;
use crate::connection::sequence::SequenceFinding;
use crate::subagent_events::SubagentEvent;

pub(super) const NULL: Value = Value::Null;

/// One message of the connection, classified; see the
/// [module docs](super).
///
/// Each element of a batch is a message of its own
/// ([`Message::batch_index`]).
#[derive(Debug, Clone)]
pub enum Message<'a> {
    /// A request or a notification.
    Call(Call<'a>),
    /// A response, with the request it answers when known.
    Answer(Answer<'a>),
    /// A value that is no JSON-RPC message.
    Invalid(Invalid<'a>),
}

/// A request (with an `id`) or a notification (without one).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Call<'a> {
    /// The way it travelled (inferred from the method where the input did
    /// not say).
    pub direction: Direction,
    /// Its method. A bare subagent event (fixtures and generators write
    /// the event alone) is read as the contract's `subagents/event`
    /// notification.
    pub method: &'a str,
    /// A request's `id`; `None` for a notification.
    pub id: Option<&'a Value>,
    /// Its `params`.
    pub params: Params<'a>,
    /// Whether the value is a bare subagent event: its pointers have no
    /// `/params` prefix.
    pub bare_event: bool,
    /// For a subagent event: whether a consumer folds it (the run has a
    /// snapshot and is not final, or the event repeats its terminal
    /// state). `true` for every other call.
    pub run_accepted: bool,
    /// Its position in a batch, when it came in one.
    pub batch_index: Option<usize>,
    /// The sequence rules it broke ([`crate::connection::sequence`]), each once.
    pub sequence: Vec<SequenceFinding>,
}

/// A response: `result` or `error`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Answer<'a> {
    /// The way it travelled (the opposite of its request's, where the
    /// input did not say).
    pub direction: Direction,
    /// Its `id`.
    pub id: Option<&'a Value>,
    /// `Ok(result)` or `Err(error)`.
    pub outcome: Result<&'a Value, &'a Value>,
    /// The request it answers, when known.
    pub request: Option<super::Request>,
    /// Its position in a batch, when it came in one.
    pub batch_index: Option<usize>,
    /// The sequence rules it broke, each once.
    pub sequence: Vec<SequenceFinding>,
    /// The whole response.
    pub value: &'a Value,
}

/// A value that is no JSON-RPC message.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Invalid<'a> {
    /// The way it travelled, as the input said.
    pub direction: Direction,
    /// The value.
    pub value: &'a Value,
    /// Where it breaks the envelope: an RFC 6901 pointer.
    pub pointer: &'static str,
    /// Why it is no message, in the words every tool uses.
    pub problem: String,
    /// Its position in a batch, when it came in one.
    pub batch_index: Option<usize>,
}

/// A call's `params` (or a bare event's value): its JSON tree, its
/// subagent event and its line's text, each asked for.
#[derive(Debug, Clone)]
pub struct Params<'a> {
    body: Body<'a>,
    /// The `sessionId`, once read (asked for several times a message).
    session: OnceCell<Option<&'a str>>,
}

/// What a call was read from.
#[derive(Debug, Clone)]
enum Body<'a> {
    /// A JSON tree: the whole message and the params in it; for a subagent
    /// event, its typed reading once asked (`None` inside: it breaks the
    /// contract).
    Tree {
        value: &'a Value,
        params: &'a Value,
        event: Option<OnceCell<Option<Box<SubagentEvent>>>>,
    },
    /// A subagent event read from its line; its tree only when asked.
    Event {
        line: &'a EventLine,
        tree: OnceCell<Value>,
    },
}

impl<'a> Params<'a> {
    /// The params of a call read as a JSON tree; `event`: the call is a
    /// subagent event (its method's, or a bare event).
    pub(super) fn tree_of(value: &'a Value, params: &'a Value, event: bool) -> Self {
        Self {
            body: Body::Tree {
                value,
                params,
                event: event.then(OnceCell::new),
            },
            session: OnceCell::new(),
        }
    }

    pub(super) fn event_of(line: &'a EventLine) -> Self {
        Self {
            body: Body::Event {
                line,
                tree: OnceCell::new(),
            },
            session: OnceCell::new(),
        }
    }

    /// The params as a JSON tree (`null` when absent).
    pub fn tree(&self) -> &Value {
        match &self.body {
            Body::Tree { params, .. } => params,
            Body::Event { .. } => self.message().get("params").unwrap_or(&NULL),
        }
    }

    /// The whole message as a JSON tree (for a bare event, the event).
    fn message(&self) -> &Value {
        match &self.body {
            Body::Tree { value, .. } => value,
            Body::Event { line, tree } => tree.get_or_init(|| line.to_value()),
        }
    }

    /// The subagent event of a `subagents/event` call (or a bare event)
    /// whose params keep the contract: read with its line when the
    /// connection verified it ([`Params::is_verified`]), otherwise parsed
    /// from its JSON tree once, on the first ask, for the sequence rules
    /// and every observer. `None` for every other call, and for an event
    /// that breaks the contract.
    pub fn event(&self) -> Option<&SubagentEvent> {
        match &self.body {
            Body::Event { line, .. } => Some(line.event()),
            Body::Tree {
                params,
                event: Some(typed),
                ..
            } => typed
                .get_or_init(|| SubagentEvent::deserialize(*params).ok().map(Box::new))
                .as_deref(),
            Body::Tree { event: None, .. } => None,
        }
    }

    /// The text of the line, for an event verified while reading it
    /// ([`Params::is_verified`]).
    pub fn text(&self) -> Option<&'a str> {
        self.line().map(EventLine::text)
    }

    /// Whether the connection verified the value while reading its line: a
    /// valid subagent event whose text holds no `_meta` and no
    /// `…EpochSeconds` key, so that no shape, `_meta` or epoch rule applies
    /// to it (and its JSON tree is built only if asked).
    pub fn is_verified(&self) -> bool {
        self.line().is_some()
    }

    /// Its `sessionId`.
    pub fn session_id(&self) -> Option<&'a str> {
        *self.session.get_or_init(|| match &self.body {
            Body::Event { line, .. } => Some(line.session_id()),
            Body::Tree { params, .. } => params.get("sessionId").and_then(Value::as_str),
        })
    }

    /// The line of an event read straight into its type.
    pub(crate) fn line(&self) -> Option<&'a EventLine> {
        match self.body {
            Body::Event { line, .. } => Some(line),
            Body::Tree { .. } => None,
        }
    }
}

impl<'a> Call<'a> {
    /// The whole message as a JSON tree (for a bare subagent event, the
    /// event); built on the first call for a verified event.
    pub fn value(&self) -> &Value {
        self.params.message()
    }

    /// Whether it is a request (it has an `id`).
    pub fn is_request(&self) -> bool {
        self.id.is_some()
    }

    /// Its `params.sessionId`.
    pub fn session_id(&self) -> Option<&'a str> {
        self.params.session_id()
    }
}

impl<'a> Answer<'a> {
    /// Its `result`, when it succeeded.
    pub fn result(&self) -> Option<&'a Value> {
        self.outcome.ok()
    }

    /// Its request's method, when the request is known.
    pub fn method(&self) -> Option<&str> {
        self.request.as_ref().map(|r| r.method.as_str())
    }

    /// Its request's `sessionId`.
    pub fn session_id(&self) -> Option<&str> {
        self.request.as_ref()?.session_id.as_deref()
    }
}

impl<'a> Message<'a> {
    /// The way it travelled.
    pub fn direction(&self) -> Direction {
        match self {
            Message::Call(c) => c.direction,
            Message::Answer(a) => a.direction,
            Message::Invalid(i) => i.direction,
        }
    }

    /// Its position in a batch, when it came in one.
    pub fn batch_index(&self) -> Option<usize> {
        match self {
            Message::Call(c) => c.batch_index,
            Message::Answer(a) => a.batch_index,
            Message::Invalid(i) => i.batch_index,
        }
    }

    /// The sequence rules it broke (none for an invalid value).
    pub fn sequence(&self) -> &[SequenceFinding] {
        match self {
            Message::Call(c) => &c.sequence,
            Message::Answer(a) => &a.sequence,
            Message::Invalid(_) => &[],
        }
    }

    /// The whole value as a JSON tree.
    pub fn value(&self) -> &Value {
        match self {
            Message::Call(c) => c.value(),
            Message::Answer(a) => a.value,
            Message::Invalid(i) => i.value,
        }
    }

    /// The method: a call's own, or for an answer its request's.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Call(c) => Some(c.method),
            Message::Answer(a) => a.method(),
            Message::Invalid(_) => None,
        }
    }

    /// The session it is about: a call's `params.sessionId`, or for an
    /// answer its request's.
    pub fn session_id(&self) -> Option<&str> {
        match self {
            Message::Call(c) => c.session_id(),
            Message::Answer(a) => a.session_id(),
            Message::Invalid(_) => None,
        }
    }

    /// The call, when it is one.
    pub fn as_call(&self) -> Option<&Call<'a>> {
        match self {
            Message::Call(c) => Some(c),
            _ => None,
        }
    }

    /// The answer, when it is one.
    pub fn as_answer(&self) -> Option<&Answer<'a>> {
        match self {
            Message::Answer(a) => Some(a),
            _ => None,
        }
    }

    pub(super) fn set_batch_index(&mut self, i: usize) {
        match self {
            Message::Call(c) => c.batch_index = Some(i),
            Message::Answer(a) => a.batch_index = Some(i),
            Message::Invalid(v) => v.batch_index = Some(i),
        }
    }
}

impl<'a> Call<'a> {
    pub(super) fn new(
        direction: Direction,
        method: &'a str,
        id: Option<&'a Value>,
        params: Params<'a>,
    ) -> Self {
        Self {
            direction,
            method,
            id,
            params,
            bare_event: false,
            run_accepted: true,
            batch_index: None,
            sequence: Vec::new(),
        }
    }
}
