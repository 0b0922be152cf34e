//! The connection follower: classification, pairing, direction inference,
//! the sequence rules run once, and observers in one pass.

use acp_extension_core::connection::{Connection, Direction, Message, Observer, Pairing};
use acp_extension_core::state::{Change, ConnectionState};
use serde_json::{Value, json};

/// What one message was classified as: kind, direction, method, session
/// and the sequence rules it broke.
type Classified = (
    &'static str,
    Direction,
    Option<String>,
    Option<String>,
    Vec<String>,
);

/// Records what each message was classified as.
#[derive(Default)]
struct Seen(Vec<Classified>);

impl Observer for Seen {
    fn message(&mut self, _: &Connection, m: &Message<'_>) {
        self.0.push((
            kind(m),
            m.direction(),
            m.method().map(str::to_owned),
            m.session_id().map(str::to_owned),
            m.sequence()
                .iter()
                .map(|f| f.rule.id().to_owned())
                .collect(),
        ));
    }
}

/// What a message is, in words.
fn kind(m: &Message<'_>) -> &'static str {
    match m {
        Message::Call(c) if c.is_request() => "request",
        Message::Call(_) => "notification",
        Message::Answer(_) => "answer",
        Message::Invalid(_) => "invalid",
    }
}

/// The request an answer was paired with.
fn pairing(m: &Message<'_>) -> Pairing {
    m.as_answer().unwrap().request.as_ref().unwrap().pairing
}

fn follow(conn: &mut Connection, seen: &mut Seen, direction: Direction, v: Value) {
    conn.follow(direction, &v, &mut [seen]);
}

#[test]
fn responses_find_their_request_and_its_direction() {
    let mut conn = Connection::new();
    let mut seen = Seen::default();
    follow(
        &mut conn,
        &mut seen,
        Direction::Unknown,
        json!({"jsonrpc": "2.0", "id": 7, "method": "session/prompt", "params": {"sessionId": "s", "prompt": []}}),
    );
    follow(
        &mut conn,
        &mut seen,
        Direction::Unknown,
        json!({"jsonrpc": "2.0", "id": 7, "result": {"stopReason": "end_turn"}}),
    );
    // A second answer to the same id finds nothing.
    follow(
        &mut conn,
        &mut seen,
        Direction::Unknown,
        json!({"jsonrpc": "2.0", "id": 7, "result": {}}),
    );
    let kinds: Vec<_> = seen
        .0
        .iter()
        .map(|s| (s.0, s.1, s.2.clone(), s.3.clone()))
        .collect();
    assert_eq!(
        kinds,
        [
            (
                "request",
                Direction::ClientToAgent,
                Some("session/prompt".into()),
                Some("s".into())
            ),
            (
                "answer",
                Direction::AgentToClient,
                Some("session/prompt".into()),
                Some("s".into())
            ),
            ("answer", Direction::Unknown, None, None),
        ]
    );
    assert_eq!(conn.pending_requests().count(), 0);
}

#[test]
fn a_named_method_pairs_a_response_kept_alone_and_initialize_is_recognised() {
    let mut conn = Connection::new();
    let r = json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s"}});
    let m = conn.classify(Direction::AgentToClient, &r, Some("session/new"));
    assert_eq!(pairing(&m[0]), Pairing::Named);
    let init = json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1,
        "agentCapabilities": {"_meta": {"ua": {"steering": {"version": 1, "transport": "request", "upstreamTurn": "same", "configPolicy": "active"}}}}}});
    let m = conn.classify(Direction::AgentToClient, &init, None);
    assert_eq!(pairing(&m[0]), Pairing::Inferred);
    assert_eq!(m[0].method(), Some("initialize"));
    assert_eq!(
        conn.advertisement(acp_extension_core::capabilities::Side::Agent)
            .map(|a| a.supports(acp_extension_core::capabilities::Feature::Steering)),
        Some(true)
    );
}

#[test]
fn values_that_are_no_message_say_why_in_one_place() {
    let mut conn = Connection::new();
    for (v, why) in [
        (json!([]), "an empty batch"),
        (json!(3), "found a number"),
        (
            json!({"jsonrpc": "2.0", "method": 1}),
            "`method` must be a string",
        ),
        (
            json!({"method": "initialize"}),
            "needs `\"jsonrpc\": \"2.0\"`",
        ),
        (
            json!({"jsonrpc": 2, "id": 1, "result": {}}),
            "`jsonrpc` must be \"2.0\", found 2",
        ),
        (json!({"id": 1}), "needs `result` or `error`"),
        (
            json!({"inputTokens": 1, "outputTokens": 2}),
            "a bare `ModelUsage` row",
        ),
    ] {
        let m = conn.classify(Direction::Unknown, &v, None);
        let Message::Invalid(invalid) = &m[0] else {
            panic!("{v} is no message")
        };
        let text = &invalid.problem;
        assert!(text.contains(why), "{v}: {text}");
    }
    // The state records each, so nothing disappears.
    let mut state = ConnectionState::new();
    let changes = state.message(Direction::Unknown, &json!([]));
    assert!(matches!(&changes[..], [Change::Invalid(i)] if i.rule == "not-a-message"));
    assert_eq!(state.accounting().recorded, 1);
}

#[test]
fn batches_are_classified_element_by_element() {
    let mut conn = Connection::new();
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}},
        {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": {"sessionUpdate": "plan", "entries": []}}},
    ]);
    let m = conn.classify(Direction::ClientToAgent, &batch, None);
    assert_eq!(
        m.iter().map(Message::batch_index).collect::<Vec<_>>(),
        [Some(0), Some(1)]
    );
    assert_eq!(m[1].session_id(), Some("s"));
}

#[test]
fn the_sequence_rules_run_once_and_every_observer_sees_their_verdict() {
    let support = json!({"stream": [], "progress": false, "outputRead": "none", "cancel": false});
    let done = json!({"jsonrpc": "2.0", "method": "_lody/subagents/event", "params": {"version": 1,
        "sessionId": "s", "runId": "r", "type": "snapshot", "snapshot": {"state": "completed", "support": support}}});
    let late = json!({"jsonrpc": "2.0", "method": "_lody/subagents/event", "params": {"version": 1,
        "sessionId": "s", "runId": "r", "type": "progress", "progress": {}}});
    let mut conn = Connection::new();
    let mut seen = Seen::default();
    let mut state = ConnectionState::new();
    for v in [&done, &late] {
        conn.follow(Direction::AgentToClient, v, &mut [&mut seen, &mut state]);
    }
    assert_eq!(seen.0[1].4, ["subagent-after-terminal"]);
    let records: Vec<String> = state.invalid().map(|i| i.rule.clone()).collect();
    assert_eq!(records, ["subagent-after-terminal"]);
    // The state observing a shared connection folds what it folds alone.
    let mut alone = ConnectionState::new();
    alone.message(Direction::AgentToClient, &done);
    alone.message(Direction::AgentToClient, &late);
    assert_eq!(
        serde_json::to_value(&alone).unwrap(),
        serde_json::to_value(&state).unwrap()
    );
}

#[test]
fn a_line_that_is_not_json_reaches_every_observer() {
    #[derive(Default)]
    struct Unreadable(Vec<String>);
    impl Observer for Unreadable {
        fn message(&mut self, _: &Connection, _: &Message<'_>) {}
        fn unreadable(&mut self, _: &Connection, rule: &str, _: &str) {
            self.0.push(rule.to_owned());
        }
    }
    let mut conn = Connection::new();
    let (mut a, mut state) = (Unreadable::default(), ConnectionState::new());
    conn.follow_line(Direction::Unknown, "{nope", &mut [&mut a, &mut state]);
    assert_eq!(a.0, ["not-json"]);
    assert_eq!(state.take_changes().len(), 1);
    assert_eq!(conn.values(), 1);
}

#[test]
fn a_line_is_read_as_utf_8_once_and_bytes_that_are_not_say_where() {
    use acp_extension_core::connection::{Line, Reads};
    // A lane line with a stray byte in a string: not JSON, at that byte (the
    // 70th).
    let bad = b"{\"jsonrpc\":\"2.0\",\"method\":\"_lody/subagents/event\",\"params\":{\"note\":\"a\xffb\"}}";
    for reads in [Reads::Event, Reads::RunFacts, Reads::Fold] {
        let Some(why) = Line::read(bad, reads).not_json().map(str::to_owned) else {
            panic!("a line that is not UTF-8 parsed")
        };
        assert_eq!(why, "invalid unicode code point at line 1 column 70");
    }
    // Valid UTF-8 outside the lane (and an invalid lane event): its tree,
    // non-ASCII text intact.
    let other = "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"note\":\"é✓\"}}";
    let read = Line::read(other.as_bytes(), Reads::RunFacts);
    let Some(v) = read.tree() else {
        panic!("not a tree")
    };
    assert_eq!(v["params"]["note"], "é✓");
    let invalid = r#"{"jsonrpc":"2.0","method":"_lody/subagents/event","params":{"version":1,"sessionId":"s","runId":"r","type":"progress","progress":{"summary":"ü","turnCount":-2}}}"#;
    let read = Line::read(invalid.as_bytes(), Reads::RunFacts);
    let Some(v) = read.tree() else {
        panic!("an invalid event is its tree")
    };
    assert_eq!(v["params"]["progress"]["summary"], "ü");
    assert_eq!(
        Line::read(b"{\"a\":1", Reads::Event).not_json(),
        Some("EOF while parsing an object at line 1 column 6")
    );
}

/// Every observer gets a call's subagent event from its params, however
/// the line was read: straight into its type, or from a JSON tree (an
/// event with `_meta` is no verified line). Not for an event that breaks
/// the contract, nor for another call.
#[test]
fn a_calls_subagent_event_is_there_whether_its_line_was_verified_or_not() {
    use acp_extension_core::connection::{Line, Reads};
    use acp_extension_core::subagent_events::SubagentEventType;

    /// Per message: (verified, the event's run id and type).
    #[derive(Default)]
    struct Events(Vec<(bool, Option<(String, SubagentEventType)>)>);
    impl Observer for Events {
        fn message(&mut self, _: &Connection, m: &Message<'_>) {
            let Message::Call(c) = m else { return };
            let event = c
                .params
                .event()
                .map(|e| (e.run_id.as_str().to_owned(), e.payload.event_type()));
            self.0.push((c.params.is_verified(), event));
        }
    }
    let snapshot = r#"{"version":1,"sessionId":"s","runId":"r","type":"snapshot","snapshot":{"state":"running","support":{"stream":["text"],"progress":true,"outputRead":"none","cancel":false}}}"#;
    let progress = r#"{"version":1,"sessionId":"s","runId":"r","type":"progress","progress":{"turnCount":2},"_meta":{"vendor":{"x":1}}}"#;
    let invalid = r#"{"version":1,"sessionId":"s","runId":"r","type":"progress","progress":{"turnCount":-2}}"#;
    let note = |params: &str| {
        format!(r#"{{"jsonrpc":"2.0","method":"_ua/subagents/event","params":{params}}}"#)
    };
    let lines = [
        note(snapshot),
        note(progress),
        note(invalid),
        // A bare event, as fixtures write it.
        progress.to_owned(),
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}"#.to_owned(),
    ];
    for reads in [Reads::Event, Reads::RunFacts, Reads::Fold] {
        let (mut connection, mut events) = (Connection::new(), Events::default());
        for line in &lines {
            connection.follow_read(
                Direction::AgentToClient,
                &Line::read(line.as_bytes(), reads),
                &mut [&mut events],
            );
        }
        let r = |kind| Some(("r".to_owned(), kind));
        assert_eq!(
            events.0,
            [
                (true, r(SubagentEventType::Snapshot)),
                (false, r(SubagentEventType::Progress)),
                (false, None),
                (false, r(SubagentEventType::Progress)),
                (false, None),
            ],
            "{reads:?}"
        );
    }
}
