//! Direction, formats

use super::*;

#[test]
fn directions_are_inferred_from_methods_and_requests() {
    let mut c = Checker::new();
    // An initialize exchange without directions (a JSON-RPC log).
    c.message(
        Direction::Unknown,
        &req(
            0,
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        ),
    );
    c.message(
        Direction::Unknown,
        &ok(0, json!({"protocolVersion": 1, "agentCapabilities": {"_meta": {"lody": {"usage": {"version": 1}}}}})),
    );
    assert!(c.agent_advertisement().unwrap().supports(Feature::Usage));
    assert!(c.client_advertisement().is_some());
}

#[test]
fn conductor_traces_keep_one_hop_per_message() {
    let init_params = json!({"protocolVersion": 1, "clientCapabilities": {}});
    let caps = json!({"protocolVersion": 1, "agentCapabilities": {}});
    let usage = json!({"sessionId": "s", "usage": row(1)});
    let lines = [
        json!({"type": "request", "ts": 0.1, "protocol": "acp", "from": "Client", "to": "Proxy(0)", "id": 0, "method": "initialize", "params": init_params}),
        json!({"type": "request", "ts": 0.1, "protocol": "acp", "from": "Proxy(0)", "to": "Agent", "id": 0, "method": "initialize", "params": init_params}),
        json!({"type": "response", "ts": 0.2, "from": "Agent", "to": "Proxy(0)", "id": 0, "is_error": false, "payload": caps}),
        json!({"type": "response", "ts": 0.2, "from": "Proxy(0)", "to": "Client", "id": 0, "is_error": false, "payload": caps}),
        json!({"type": "notification", "ts": 0.3, "protocol": "acp", "from": "Agent", "to": "Proxy(0)", "method": "_lody/session/usage_update", "params": usage}),
        json!({"type": "notification", "ts": 0.3, "protocol": "acp", "from": "Proxy(0)", "to": "Client", "method": "_lody/session/usage_update", "params": usage}),
        json!({"type": "request", "ts": 0.4, "protocol": "mcp", "from": "Proxy(0)", "to": "Agent", "id": "m1", "method": "tools/call", "params": {"_meta": {"lody": {"x": 1}}}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    assert_eq!(
        located(&check_text(&text, Format::Auto)),
        [(5, "not-advertised", "/method")]
    );

    // Result pointers map back to the trace line's `payload`.
    let bad = json!({"type": "response", "ts": 0.2, "from": "Agent", "to": "Client", "id": 0, "is_error": false,
        "payload": {"protocolVersion": 1, "agentCapabilities": {"_meta": {"lody": {"usage": {"version": 2}}}}}});
    let found = check_text(&format!("{bad}\n"), Format::Trace);
    assert_eq!(found[0].1.rule, "shape");
    assert_eq!(
        found[0].1.path,
        "/payload/agentCapabilities/_meta/lody/usage/version"
    );
}

#[test]
fn tap_transcripts_use_their_directions_and_point_into_msg() {
    let lines = [
        json!({"dir": "c2a", "t": 0.0, "msg": req(0, "initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}))}),
        json!({"dir": "a2c", "t": 0.1, "msg": ok(0, json!({"protocolVersion": 1, "agentCapabilities": {}}))}),
        json!({"dir": "a2c", "t": 0.2, "msg": note("_lody/session/usage_update", json!({"sessionId": "s", "usage": row(1)}))}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    assert_eq!(
        located(&check_text(&text, Format::Auto)),
        [(3, "not-advertised", "/msg/method")]
    );
}

#[test]
fn loose_shapes_become_messages() {
    // A bare update, an SDK call, a kind-wrapped initialize response, a
    // container with updates, a bare subagent event: each one checked.
    let text = r#"
{"sessionUpdate": "session_info_update", "_meta": {"lody": {"goal": {"objective": "o", "status": "nope"}}}}
{"method": "sessionUpdate", "args": [{"sessionId": "s", "update": {"sessionUpdate": "plan", "entries": [], "_meta": {"lody": {"extra": 1}}}}]}
{"kind": "initialize", "payload": {"protocolVersion": 1, "agentCapabilities": {"_meta": {"lody": {}}}}}
{"kind": "sessionUpdate", "payload": {"sessionId": "s", "update": {"sessionUpdate": "session_info_update", "_meta": {"lody": {"goal": {"objective": "o", "status": "active"}}}}}}
{"updates": [{"sessionUpdate": "plan", "entries": [], "_meta": {"lody": {"turnEnded": true}}}], "response": {"stopReason": "end_turn"}}
{"version": 1, "sessionId": "s", "runId": "", "type": "progress", "progress": {}}
"#;
    assert_eq!(
        located(&check_text(text, Format::Auto)),
        [
            (2, "shape", "/_meta/lody/goal/status"),
            // A bare update names no session: placed nowhere.
            (2, "shape", ""),
            (3, "unknown-meta-key", "/args/0/update/_meta/lody/extra"),
            // The kind-wrapped initialize response makes negotiation judgeable.
            (5, "not-advertised", "/payload/update/_meta/lody/goal"),
            (6, "shape", "/updates/0"),
            (6, "unknown-meta-key", "/updates/0/_meta/lody/turnEnded"),
            (7, "shape", "/runId"),
            // The synthesized method has no place in the source value.
            (7, "subagent-events-not-negotiated", ""),
        ]
    );
}
