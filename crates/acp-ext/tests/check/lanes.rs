//! `check`'s findings are the same whichever way a line is read: as a JSON
//! tree (`Checker::message`) or as `Line::read` reads it
//! (`Checker::parsed`), where a valid subagent event skips the tree and
//! with it the shape and `_meta` rules, whether the event is built with the
//! line or sifted (what `check` does: then no rule builds it). Streams here mix typed-lane events
//! with events those rules and the sequence and negotiation rules do
//! report on.

use super::*;
use acp_extension_core::connection::{Line, ParsedLine, Reads};

fn event(ns: &str, run: &str, kind: &str, payload: Value) -> Value {
    let mut params = json!({"version": 1, "sessionId": "s", "runId": run, "type": kind});
    params[kind.replace("output", "update")] = payload;
    note(&format!("_{ns}/subagents/event"), params)
}

fn snapshot(state: &str) -> Value {
    json!({"state": state, "support": {"stream": ["text", "tool", "plan"], "progress": true,
        "outputRead": "none", "cancel": false}})
}

fn text(t: &str) -> Value {
    json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": t}})
}

/// The events of one stream: valid ones of every type (most take the
/// typed lane), and ones the rules report.
fn events(ns: &str) -> Vec<Value> {
    vec![
        // Output before any snapshot: a sequence finding on a typed event.
        event(ns, "r0", "output", text("early")),
        event(ns, "r1", "snapshot", snapshot("running")),
        event(ns, "r1", "output", text("hello ")),
        event(
            ns,
            "r1",
            "progress",
            json!({"turnCount": 2, "summary": null}),
        ),
        event(
            ns,
            "r1",
            "output",
            json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read"}),
        ),
        event(
            ns,
            "r1",
            "output",
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}),
        ),
        event(
            ns,
            "r1",
            "output",
            json!({"sessionUpdate": "plan", "entries": []}),
        ),
        // Epoch fields (one in milliseconds) and `_meta` keep the tree.
        event(
            ns,
            "r1",
            "snapshot",
            json!({"state": "running", "startedAtEpochSeconds": 1_710_000_000_000u64,
            "support": {"stream": [], "progress": false, "outputRead": "none", "cancel": false}}),
        ),
        event(
            ns,
            "r1",
            "output",
            json!({"sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "x", "_meta": {"lody": {"madeUp": 1}}}}),
        ),
        // Invalid: shape findings.
        event(ns, "r1", "progress", json!({"turnCount": -1})),
        event(
            ns,
            "r1",
            "output",
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": 0, "text": "x"}}),
        ),
        // The end, and an event after it.
        event(ns, "r1", "snapshot", snapshot("completed")),
        event(ns, "r1", "output", text("late")),
    ]
}

/// The initialize exchange: what the client reads, what the agent offers.
fn initialize(client: Value, agent: Value) -> Vec<Value> {
    vec![
        req(
            0,
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": client}),
        ),
        ok(0, json!({"protocolVersion": 1, "agentCapabilities": agent})),
    ]
}

#[test]
fn typed_events_get_the_findings_of_their_trees() {
    let advertised = json!({"_meta": {"lody": {"subagentEvents": {"version": 1}},
        "ua": {"subagentEvents": {"version": 1}}}});
    let streams = [
        // Negotiated, in both namespaces.
        (initialize(json!({}), advertised.clone()), "lody"),
        (
            initialize(json!({"_meta": {"ua": {}}}), advertised.clone()),
            "ua",
        ),
        // A client that reads only `ua` meets `lody` events.
        (initialize(json!({"_meta": {"ua": {}}}), advertised), "lody"),
        // An agent that did not advertise subagent events.
        (initialize(json!({}), json!({})), "lody"),
        // No initialize at all (a fixture).
        (Vec::new(), "ua"),
    ];
    let mut typed = 0;
    let mut found = BTreeSet::new();
    for (start, ns) in streams {
        let (mut tree, mut lane, mut sifted) = (Checker::new(), Checker::new(), Checker::new());
        for message in start.iter().chain(&events(ns)) {
            let text = message.to_string();
            let parsed = Line::read(text.as_bytes(), Reads::Event);
            typed += usize::from(matches!(parsed.parsed(), ParsedLine::Event(_)));
            let expected = tree.message(Direction::Unknown, message);
            let got = lane.follow_read(Direction::Unknown, &parsed);
            assert_eq!(got, expected, "{text}");
            let on_demand = Line::read(text.as_bytes(), Reads::RunFacts);
            assert_eq!(
                sifted.follow_read(Direction::Unknown, &on_demand),
                expected,
                "{text}"
            );
            if let ParsedLine::Event(line) = on_demand.parsed() {
                assert!(!line.is_built(), "a rule built the sifted event: {text}");
            }
            found.extend(expected.iter().map(|f| f.rule));
        }
    }
    // The lane was taken, and the streams met the rules it must agree on.
    assert!(typed >= 5 * 6, "{typed} typed");
    for rule in [
        "subagent-first-not-snapshot",
        "subagent-after-terminal",
        "epoch-milliseconds",
        "unknown-meta-key",
        "shape",
        "namespace-mismatch",
        "subagent-events-not-negotiated",
    ] {
        assert!(found.contains(rule), "no {rule} in {found:?}");
    }
}
