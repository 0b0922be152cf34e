//! One event as the emitter sent it: [`EmittedEvent`].

use super::*;

/// One event as the emitter sent it: the params of `_<ns>/subagents/event`
/// as JSON, with its keys in the reference's order (`version`, `sessionId`,
/// `runId`, `type`, the payload key, then `nativeTurnId` / `messageId`).
///
/// The envelope is always there (`version: 1`, string `sessionId` and
/// `runId`, a known `type`), but the payload is whatever the caller gave
/// (see [garbage in, garbage out](crate::subagent_emitter#typed-and-untyped-input)), so the
/// event is JSON first; [`to_typed`](Self::to_typed) parses it into a
/// [`SubagentEvent`] or lists what is wrong with it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct EmittedEvent(Value);

impl EmittedEvent {
    /// The event as JSON.
    pub fn as_value(&self) -> &Value {
        &self.0
    }

    /// The event as owned JSON.
    pub fn into_value(self) -> Value {
        self.0
    }

    /// Parses the event, or returns every violation of the event guard with
    /// its JSON pointer (`/snapshot/state`, `/sessionId`, …).
    pub fn to_typed(&self) -> Result<SubagentEvent, Vec<Violation>> {
        SubagentEvent::deserialize(&self.0).map_err(|err| {
            let violations = check::<SubagentEvent>(&self.0);
            if violations.is_empty() {
                // Not expected: the checker and the parser share one declaration.
                vec![Violation::new(
                    "",
                    Rule::Relation {
                        id: "subagent-event",
                        message: err.to_string(),
                    },
                )]
            } else {
                violations
            }
        })
    }

    /// The event's `type`.
    fn event_type(&self) -> SubagentEventType {
        self.0["type"]
            .as_str()
            .and_then(SubagentEventType::from_wire)
            .unwrap_or(SubagentEventType::Snapshot)
    }

    /// The run id (`runId`).
    pub fn run_id(&self) -> &str {
        self.0["runId"].as_str().unwrap_or_default()
    }

    /// The payload: `snapshot`, `progress` or `update`, by `type`.
    pub fn payload(&self) -> &Value {
        let key = match self.event_type() {
            SubagentEventType::Snapshot => "snapshot",
            SubagentEventType::Progress => "progress",
            SubagentEventType::Output => "update",
        };
        &self.0[key]
    }

    /// Builds an event in wire key order.
    pub(super) fn build(
        session_id: &str,
        run_id: &str,
        kind: SubagentEventType,
        payload: impl IntoIterator<Item = (&'static str, Value)>,
    ) -> Self {
        let mut m = Map::new();
        m.insert("version".into(), Value::from(1u64));
        m.insert("sessionId".into(), Value::from(session_id));
        m.insert("runId".into(), Value::from(run_id));
        m.insert("type".into(), Value::from(kind.as_str()));
        for (k, v) in payload {
            m.insert(k.into(), v);
        }
        Self(Value::Object(m))
    }
}

impl fmt::Display for EmittedEvent {
    /// The event as compact JSON text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl From<EmittedEvent> for Value {
    fn from(event: EmittedEvent) -> Self {
        event.0
    }
}

/// A typed event, serialized in wire key order.
impl From<SubagentEvent> for EmittedEvent {
    fn from(event: SubagentEvent) -> Self {
        Self(to_json(&event))
    }
}

impl PartialEq<Value> for EmittedEvent {
    fn eq(&self, other: &Value) -> bool {
        self.0 == *other
    }
}

impl PartialEq<EmittedEvent> for Value {
    fn eq(&self, other: &EmittedEvent) -> bool {
        *self == other.0
    }
}
