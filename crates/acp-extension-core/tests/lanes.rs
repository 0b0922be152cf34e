//! The follower's readings of a line reach one result.
//!
//! [`Line::read`] reads a valid subagent event notification straight into
//! its type (the typed lane) and every other line as a JSON tree. Each line
//! here is followed four ways by a connection with the consumer state as
//! its observer: as a tree ([`Connection::follow`]), and as `Line::read`
//! reads it for each [`Reads`] (built with the line; sifted, the event
//! built when the state asks; text chunks and tool calls sifted), through
//! [`Connection::follow_read`]. How a line was read is seen only through
//! the feature `test-support`. The messages the observers see (kind,
//! direction, method, session, sequence findings, whether a run folds it)
//! and the folded states must be the same, and both lanes must take the
//! same lines. For every line the typed lane takes, the tree must also be
//! a valid message with no `_meta` section and no epoch finding (what lets
//! `acp-ext check` skip those rules for it), holding the same event; the
//! sifted line's facts (read from its text) must be the event's.
//!
//! Inputs: generated sessions, the subagent-event vectors, envelope
//! variants, and structural and byte-level mutations of them.

mod common;

use acp_extension_core::connection::sequence::EventFacts;
use acp_extension_core::connection::{
    Connection, Direction, Line, Message, Observer, ParsedLine, Reads,
};
use acp_extension_core::meta::{epoch_findings, sections};
use acp_extension_core::state::ConnectionState;
use acp_extension_core::subagent_events::SubagentEvent;
use acp_extension_core::validate::{Kind, validate_value};
use common::mutate::{J, byte_mutations, finish, mutations};
use serde_json::{Value, json};

#[path = "../benches/events.rs"]
mod events;

/// What an observer sees of a message, to compare the two readings.
#[derive(Default)]
struct Seen(Vec<String>);

impl Observer for Seen {
    fn message(&mut self, _: &Connection, m: &Message<'_>) {
        let call = m.as_call();
        self.0.push(format!(
            "{:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
            call.map(|c| c.is_request()),
            m.as_answer().map(|a| a.outcome.is_ok()),
            m.direction(),
            m.method(),
            m.session_id(),
            m.sequence(),
            call.map(|c| c.run_accepted),
            call.map(|c| c.bare_event),
        ));
    }

    fn unreadable(&mut self, _: &Connection, rule: &str, message: &str) {
        self.0.push(format!("unreadable {rule} {message}"));
    }
}

/// One connection read one way.
struct Reading {
    connection: Connection,
    state: ConnectionState,
    seen: Seen,
}

impl Reading {
    fn new() -> Self {
        Self {
            connection: Connection::new(),
            state: ConnectionState::new(),
            seen: Seen::default(),
        }
    }

    fn tree(&mut self, line: &[u8]) {
        let observers: &mut [&mut dyn Observer] = &mut [&mut self.state, &mut self.seen];
        match serde_json::from_slice::<Value>(line) {
            Ok(v) => self.connection.follow(Direction::Unknown, &v, observers),
            Err(e) => self
                .connection
                .unreadable("not-json", &format!("not JSON: {e}"), observers),
        }
    }

    fn read(&mut self, line: &Line) {
        let observers: &mut [&mut dyn Observer] = &mut [&mut self.state, &mut self.seen];
        self.connection
            .follow_read(Direction::Unknown, line, observers);
    }
}

/// The initialize exchange, with subagent events advertised (so events
/// are folded, not dropped as not negotiated).
fn initialize() -> [String; 2] {
    [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": {
                "_meta": {"lody": {"subagentEvents": {"version": 1}}}}}})
        .to_string(),
        json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1,
            "agentCapabilities": {"_meta": {"lody": {"subagentEvents": {"version": 1}}}}}})
        .to_string(),
    ]
}

fn envelope(params: &str, ns: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","method":"_{ns}/subagents/event","params":{params}}}"#)
}

/// What the typed lane promises about a line it takes.
fn assert_lane_promise(line: &[u8], typed: &SubagentEvent) {
    let text = String::from_utf8_lossy(line);
    let tree: Value = serde_json::from_slice(line).expect("a typed line is JSON");
    let report = validate_value(Kind::AUTO, &tree);
    assert!(
        report.is_valid(),
        "typed lane took an invalid message ({report}): {text}"
    );
    assert!(
        sections(&tree, "").is_empty(),
        "typed lane took `_meta`: {text}"
    );
    assert!(
        epoch_findings(&tree, "", true).is_empty() && epoch_findings(&tree, "", false).is_empty(),
        "typed lane took an epoch field: {text}"
    );
    let from_tree: SubagentEvent = serde_json::from_value(tree["params"].clone()).unwrap();
    assert_eq!(
        &from_tree, typed,
        "the typed lane read another event: {text}"
    );
}

/// Follows `lines` the four ways (as a tree, built, sifted, and with text
/// chunks sifted) and compares everything; returns how many lines took the
/// typed lane.
fn assert_same(lines: &[Vec<u8>]) -> usize {
    assert_same_counting(lines).0
}

/// [`assert_same`], and how many lines read with
/// [`Reads::Fold`] were left unbuilt (text chunks and tool
/// calls the state folds from the line).
fn assert_same_counting(lines: &[Vec<u8>]) -> (usize, usize) {
    let (mut tree, mut lane, mut sifted) = (Reading::new(), Reading::new(), Reading::new());
    let mut chunks = Reading::new();
    let (mut typed, mut unbuilt) = (0, 0);
    for line in initialize()
        .iter()
        .map(|l| l.as_bytes())
        .chain(lines.iter().map(|l| &l[..]))
    {
        let text = String::from_utf8_lossy(line);
        tree.tree(line);
        let parsed = Line::read(line, Reads::Event);
        let on_demand = Line::read(line, Reads::RunFacts);
        let text_sifted = Line::read(line, Reads::Fold);
        match (parsed.parsed(), text_sifted.parsed()) {
            (ParsedLine::Event(e), ParsedLine::Event(t)) => {
                assert_eq!(t.facts(), EventFacts::from(e.event()), "facts of {text}");
                unbuilt += usize::from(!t.is_built());
            }
            (ParsedLine::Event(_), _) | (_, ParsedLine::Event(_)) => {
                panic!("the output lane took other lines: {text}")
            }
            _ => assert_eq!(parsed, text_sifted, "{text}"),
        }
        match (parsed.parsed(), on_demand.parsed()) {
            (ParsedLine::Event(e), ParsedLine::Event(s)) => {
                assert!(e.is_built());
                assert_lane_promise(line, e.event());
                // Facts first: read from the text before anything builds
                // the sifted event.
                assert_eq!(s.facts(), EventFacts::from(e.event()), "facts of {text}");
                assert_eq!(s.session_id(), e.event().session_id.as_str(), "{text}");
                typed += 1;
            }
            (ParsedLine::Event(_), _) | (_, ParsedLine::Event(_)) => {
                panic!("the lanes took different lines: {text}")
            }
            _ => assert_eq!(parsed, on_demand, "{text}"),
        }
        lane.read(&parsed);
        sifted.read(&on_demand);
        chunks.read(&text_sifted);
        if let (ParsedLine::Event(e), ParsedLine::Event(s)) = (parsed.parsed(), on_demand.parsed())
        {
            assert_eq!(
                s.event(),
                e.event(),
                "the sifted line built another event: {text}"
            );
        }
        let (a, b, c) = (&tree.seen.0, &lane.seen.0, &sifted.seen.0);
        assert_eq!(
            a.last(),
            b.last(),
            "the readings see another message: {text}"
        );
        assert_eq!(
            a.last(),
            c.last(),
            "the sifted reading sees another message: {text}"
        );
        assert_eq!(
            a.last(),
            chunks.seen.0.last(),
            "the text chunk reading sees another message: {text}"
        );
    }
    assert_eq!(tree.seen.0, lane.seen.0);
    assert_eq!(tree.seen.0, sifted.seen.0);
    assert_eq!(tree.seen.0, chunks.seen.0);
    // As text: the same keys in the same order (a tool call is kept as it
    // came, however its line was read).
    let (a, b, c, d) = (
        serde_json::to_string(&tree.state).unwrap(),
        serde_json::to_string(&lane.state).unwrap(),
        serde_json::to_string(&sifted.state).unwrap(),
        serde_json::to_string(&chunks.state).unwrap(),
    );
    if a != b || a != c || a != d {
        let shown: Vec<_> = lines.iter().map(|l| String::from_utf8_lossy(l)).collect();
        panic!(
            "the folded states differ:\ntree {a}\nlane {b}\nsifted {c}\ntext chunks {d}\nlines {shown:#?}"
        );
    }
    (typed, unbuilt)
}

#[test]
fn a_generated_session_folds_the_same_either_way() {
    let lines: Vec<Vec<u8>> = (0..3000)
        .map(|i| {
            envelope(
                &events::event_line(i),
                if i % 7 == 0 { "ua" } else { "lody" },
            )
            .into_bytes()
        })
        .collect();
    let (typed, unbuilt) = assert_same_counting(&lines);
    // The state folds the plain text chunks and the tool calls from their
    // lines, unbuilt.
    assert!(unbuilt > lines.len() / 10, "{unbuilt} text chunks unbuilt");
    let tool_calls = lines
        .iter()
        .filter(|l| {
            matches!(Line::read(l, Reads::Fold).parsed(),
                ParsedLine::Event(e) if !e.is_built() && String::from_utf8_lossy(l).contains(r#""sessionUpdate":"tool_call"#))
        })
        .count();
    assert!(
        tool_calls > lines.len() / 20,
        "{tool_calls} tool calls unbuilt"
    );
    assert!(unbuilt < typed, "{unbuilt} of {typed} unbuilt");
    // Most events take the typed lane (the invalid tenth does not): a lane
    // that took none would prove nothing.
    assert!(
        typed > lines.len() * 3 / 4,
        "{typed} of {} typed",
        lines.len()
    );
    // Sifted, none of them is built to be followed: their facts come from
    // the text.
    let mut connection = Connection::new();
    let mut seen = Seen::default();
    let parsed: Vec<Line> = lines
        .iter()
        .map(|l| Line::read(l, Reads::RunFacts))
        .collect();
    for line in &parsed {
        connection.follow_read(Direction::Unknown, line, &mut [&mut seen]);
    }
    let built = parsed
        .iter()
        .filter(|p| matches!(p.parsed(), ParsedLine::Event(e) if e.is_built()))
        .count();
    assert_eq!(built, 0, "sifted events were built");
}

#[test]
fn envelope_variants_take_the_lane_only_when_exact() {
    let snapshot = r#"{"version":1,"sessionId":"s","runId":"r","type":"snapshot","snapshot":{"state":"running","support":{"stream":["text"],"progress":true,"outputRead":"none","cancel":false}}}"#;
    let text = r#"{"version":1,"sessionId":"s","runId":"r","type":"output","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}"#;
    let cases = [
        (envelope(text, "lody"), true),
        (envelope(text, "ua"), true),
        // Another envelope key, an id, another version, another method.
        (text_with(text, r#""jsonrpc":"2.0","id":3,"method":"_lody/subagents/event""#), false),
        (text_with(text, r#""jsonrpc":"2.0","x":1,"method":"_lody/subagents/event""#), false),
        (text_with(text, r#""jsonrpc":"1.0","method":"_lody/subagents/event""#), false),
        (text_with(text, r#""jsonrpc":"2.0","method":"_lody/subagents/events""#), false),
        // Keys in another order, and a params key that is repeated.
        (format!(r#"{{"params":{text},"method":"_lody/subagents/event","jsonrpc":"2.0"}}"#), true),
        (format!(r#"{{"jsonrpc":"2.0","method":"_lody/subagents/event","params":{text},"params":{text}}}"#), false),
        // Space between every token, and strings that hold brackets,
        // quotes and backslashes before and between the facts: the facts
        // are found past them.
        (spaced(text), true),
        (spaced(snapshot), true),
        (envelope(&text.replace(r#""text":"hi""#, r#""text":"}]\" {[\\\\\"x\\""#).replace(r#""version":1,"#, r#""version":1,"messageId":"]}\\","#), "ua"), true),
        (envelope(&snapshot.replace(r#""version":1,"#, r#""version":1,"x":[{"a":["}"]},[[]],-1.5e3,true,null,{}],"y":{"runId":"q"},"#), "lody"), true),
        (envelope(&snapshot.replace(r#""state":"running""#, r#""name":"{\"","state":"running""#), "lody"), true),
        // Text chunks the state folds from the line, and ones it builds:
        // an escape in the text or message id, a `null` or absent message
        // id, another content type, a thought, the tag's words elsewhere.
        (envelope(&text.replace(r#""content""#, r#""messageId":"m1","content""#), "lody"), true),
        (envelope(&text.replace(r#""content""#, r#""messageId":null,"content""#), "lody"), true),
        (envelope(&text.replace(r#""content""#, r#""messageId":"m\u00e91","content""#), "lody"), true),
        (envelope(&text.replace(r#""text":"hi""#, r#""text":"h\ni\"""#), "lody"), true),
        (envelope(&text.replace(r#""text":"hi""#, r#""annotations":{"priority":1},"text":"hi","type":"text""#).replace(r#""type":"text","annotations""#, r#""annotations""#), "lody"), true),
        (envelope(&text.replace(r#"{"type":"text","text":"hi"}"#, r#"{"type":"image","data":"x","mimeType":"image/png"}"#), "lody"), true),
        (envelope(&text.replace("agent_message_chunk", "agent_thought_chunk"), "lody"), true),
        (envelope(&text.replace("agent_message_chunk", "agent_thought_chunk").replace(r#""text":"hi""#, r#""text":"\"agent_message_chunk\"""#), "lody"), true),
        // Facts the JSON reading finds outside the event type's own keys:
        // a snapshot on an output event, a turn id on a snapshot, of any
        // type; and a key with an escape beside the facts.
        (envelope(&text.replace(r#""version":1,"#, r#""version":1,"snapshot":{"state":"done","parentToolCallId":"p"},"#), "lody"), true),
        (envelope(&text.replace(r#""version":1,"#, r#""version":1,"snapshot":[{"state":"done"}],"#), "lody"), true),
        (envelope(&snapshot.replace(r#""version":1,"#, r#""version":1,"nativeTurnId":"t","#), "lody"), true),
        (envelope(&snapshot.replace(r#""version":1,"#, r#""version":1,"nativeTurnId":{"a":"t"},"#), "lody"), true),
        (envelope(&text.replace(r#""version":1,"#, r#""version":1,"nativeTurnId":"t1","\u00e9t\u00e9":"x","#), "ua"), true),
        // Escapes in the facts' strings: the lane, with the event built at
        // once (the facts are then read from it).
        (envelope(&text.replace(r#""runId":"r""#, r#""runId":"r\u00e9\n""#), "lody"), true),
        (envelope(&snapshot.replace(r#""state":"running""#, r#""state":"running","parentToolCallId":"p\"1""#), "ua"), true),
        // `_meta`, epoch fields the epoch rules could flag and escaped
        // ASCII keep the tree.
        (envelope(&text.replace(r#""text":"hi""#, r#""text":"hi","_meta":{"lody":{"x":1}}"#), "lody"), false),
        (envelope(&text.replace("\"hi\"", "\"_meta\""), "lody"), false),
        (envelope(&text.replace("\"runId\"", "\"\\u0072unId\""), "lody"), false),
        // A plain whole number of seconds from 1 to 10^11: the lane.
        (started(snapshot, "1"), true),
        (started(snapshot, "1764460000"), true),
        (started(snapshot, "100000000000"), true),
        (started(snapshot, " \t1764460000 "), true),
        // Zero, milliseconds, a fraction (even `.0`), an exponent, a sign,
        // not a number: the tree.
        (started(snapshot, "0"), false),
        (started(snapshot, "100000000001"), false),
        (started(snapshot, "1764460000000"), false),
        (started(snapshot, "99999999999999999999999"), false),
        (started(snapshot, "1764460000.5"), false),
        (started(snapshot, "1764460000.0"), false),
        (started(snapshot, "1.76446e9"), false),
        (started(snapshot, "-1"), false),
        (started(snapshot, "null"), false),
        (started(snapshot, r#""1764460000""#), false),
        // The same key in another object (an extension method's params are
        // walked whole), and a key or text that only contains the words.
        (envelope(&text.replace(r#""text":"hi""#, r#""text":"hi","sentAtEpochSeconds":0"#), "lody"), false),
        (envelope(&text.replace(r#""text":"hi""#, r#""text":"hi","sentAtEpochSeconds":5"#), "lody"), true),
        (envelope(&text.replace(r#""text":"hi""#, r#""text":"hi","xEpochSecondsY":0"#), "lody"), true),
        (envelope(&text.replace("\"hi\"", r#""startedAtEpochSeconds""#), "lody"), true),
        (envelope(&text.replace("\"hi\"", r#""startedAtEpochSeconds\":0""#), "lody"), true),
        // A union tag that is a number, or repeated: the tree decides.
        (envelope(&text.replace(r#""type":"text""#, r#""type":0"#), "lody"), false),
        (envelope(&text.replace(r#""type":"text""#, r#""type":"text","type":"text""#), "lody"), false),
        (envelope(&text.replace(r#""type":"output""#, r#""type":"output","type":"output""#), "lody"), false),
        (envelope(&text.replace(r#""sessionUpdate":"agent_message_chunk""#, r#""sessionUpdate":"agent_message_chunk","sessionUpdate":"agent_thought_chunk""#), "lody"), false),
    ];
    for (line, lane) in &cases {
        let parsed = Line::read(line.as_bytes(), Reads::Event);
        assert_eq!(parsed.tree().is_none(), *lane, "{line}");
        let sifted = Line::read(line.as_bytes(), Reads::RunFacts);
        assert_eq!(sifted.tree().is_none(), *lane, "{line}");
        assert_same(&[
            envelope(snapshot, "lody").into_bytes(),
            line.clone().into_bytes(),
        ]);
    }
}

#[test]
fn a_sifted_line_gives_its_facts_without_being_built() {
    let text = r#"{"version":1,"sessionId":"s1","runId":"r1","type":"output","nativeTurnId":"t1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}"#;
    let cases = [
        envelope(text, "lody"),
        spaced(text),
        // A key with an escape beside the facts, and facts after it.
        envelope(
            &text.replace(
                r#""version":1,"#,
                r#""\u00e9":[1,{"sessionId":"x"}],"version":1,"#,
            ),
            "ua",
        ),
        // A snapshot the output event carries outside its own keys (after
        // its type: before it, the typed parse buffers it).
        envelope(
            &text.replace(
                r#""type":"output","#,
                r#""type":"output","snapshot":{"parentToolCallId":"p","state":"done"},"#,
            ),
            "lody",
        ),
    ];
    for (i, line) in cases.iter().enumerate() {
        let read = Line::read(line.as_bytes(), Reads::RunFacts);
        let ParsedLine::Event(event) = read.parsed() else {
            panic!("not the lane: {line}");
        };
        let facts = event.facts();
        assert!(!event.is_built(), "{line}");
        assert_eq!(facts.session_id, Some("s1"), "{line}");
        assert_eq!(facts.run_id, Some("r1"), "{line}");
        assert_eq!(facts.event_type, Some("output"), "{line}");
        assert_eq!(facts.native_turn_id, Some("t1"), "{line}");
        let snapshot = (i == 3).then_some(("done", "p"));
        assert_eq!(facts.snapshot_state, snapshot.map(|s| s.0), "{line}");
        assert_eq!(facts.parent_tool_call_id, snapshot.map(|s| s.1), "{line}");
        assert_eq!(event.event().run_id.as_str(), "r1");
    }
}

/// The notification of `params` with a space around every token.
fn spaced(params: &str) -> String {
    let v: Value = serde_json::from_str(&envelope(params, "lody")).unwrap();
    let pretty = serde_json::to_string_pretty(&v).unwrap();
    // One line: the pretty form's newlines become spaces and tabs.
    pretty.replace("\n", " \t").replace(':', " : ")
}

/// `snapshot` with its `startedAtEpochSeconds` written as `value`.
fn started(snapshot: &str, value: &str) -> String {
    let at = format!(r#""state":"running","startedAtEpochSeconds":{value}"#);
    envelope(&snapshot.replace(r#""state":"running""#, &at), "lody")
}

fn text_with(params: &str, head: &str) -> String {
    format!(r#"{{{head},"params":{params}}}"#)
}

/// A run's snapshot, then each mutation of `event` in turn (each after
/// the snapshot, on a fresh connection: a mutation must not hide the next).
fn mutated_runs(inputs: &[Value], per_node: usize) -> (usize, usize) {
    let (mut checked, mut typed) = (0, 0);
    // Every twelfth input (a spread of the vectors' cases): each reading
    // costs two folds and two state documents.
    for (n, input) in inputs.iter().enumerate().filter(|(n, _)| n % 12 == 0) {
        let sid = input["sessionId"].as_str().unwrap_or("s");
        let run = input["runId"].as_str().unwrap_or("r");
        let snapshot = envelope(
            &json!({"version": 1, "sessionId": sid, "runId": run, "type": "snapshot",
                "snapshot": {"state": "running", "support": {"stream": ["text", "tool", "plan"],
                    "progress": true, "outputRead": "none", "cancel": false}}})
            .to_string(),
            "lody",
        );
        let mut texts = Vec::new();
        mutations(&J::from_value(input), n, per_node, &mut texts);
        let mut lines: Vec<Vec<u8>> = texts
            .into_iter()
            .map(|t| {
                let params = finish(t);
                let mut line =
                    br#"{"jsonrpc":"2.0","method":"_lody/subagents/event","params":"#.to_vec();
                line.extend_from_slice(&params);
                line.push(b'}');
                line
            })
            .collect();
        let mut bytes = Vec::new();
        byte_mutations(&envelope(&input.to_string(), "lody"), n, &mut bytes);
        lines.extend(bytes);
        for line in lines {
            typed += assert_same(&[snapshot.clone().into_bytes(), line]);
            checked += 1;
        }
    }
    (checked, typed)
}

#[test]
fn mutated_events_fold_the_same_either_way() {
    let guard = common::jsonl("vectors/subagent-event-guard.jsonl");
    let mut inputs: Vec<Value> = guard.iter().map(|g| g["input"].clone()).collect();
    inputs.extend((0..60).map(|i| serde_json::from_str(&events::event_line(i)).unwrap()));
    let (checked, typed) = mutated_runs(&inputs, 1);
    assert!(checked > 20_000, "{checked} inputs");
    // Both readings are exercised: the snapshots and the valid mutations
    // take the lane, the rest do not.
    assert!(
        typed > checked && typed < 2 * checked,
        "{typed} typed of {checked}"
    );
}
