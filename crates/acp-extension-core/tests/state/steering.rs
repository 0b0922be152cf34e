//! Steering and pending requests

use super::*;

fn steer(id: u64, steer_id: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "_lody/session/steer",
        "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "x"}], "steerId": steer_id}})
}

#[test]
fn steer_outcomes() {
    let prompt = json!({"jsonrpc": "2.0", "id": 1, "method": "session/prompt",
        "params": {"sessionId": "s", "prompt": []}});
    let (mut state, _) = fold(&[
        (C2A, prompt),
        (C2A, steer(2, "ok")),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 2, "result": {"outcome": "injected"}}),
        ),
        (
            A2C,
            notify(
                "_lody/session/steer_applied",
                json!({"sessionId": "s", "steerId": "ok"}),
            ),
        ),
        (C2A, steer(3, "refused")),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32600, "message": "no turn"}}),
        ),
        (C2A, steer(4, "failed")),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 4, "result": {"outcome": "failed"}}),
        ),
        (C2A, steer(5, "lost")),
    ]);
    let outcome = |s: &ConnectionState, id: &str| s.session("s").unwrap().steers[id].outcome;
    assert_eq!(outcome(&state, "ok"), SteerStatus::Applied);
    assert_eq!(outcome(&state, "refused"), SteerStatus::Refused);
    assert_eq!(outcome(&state, "failed"), SteerStatus::Failed);
    assert_eq!(outcome(&state, "lost"), SteerStatus::Pending);
    state.disconnected();
    assert_eq!(outcome(&state, "lost"), SteerStatus::Unknown);
    // A steer_applied naming no steer the client sent: the sequence rule.
    let changes = state.message(
        A2C,
        &notify(
            "_lody/session/steer_applied",
            json!({"sessionId": "s", "steerId": "ghost"}),
        ),
    );
    assert!(changes.iter().any(|c| matches!(c, Change::Invalid(i)
        if i.rule == "steer-unknown-id")));
}

#[test]
fn steers_not_applied_when_their_turn_ends_are_unknown() {
    let prompt = |id: u64, meta: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": {"sessionId": "s", "prompt": [], "_meta": meta}})
    };
    let (state, _) = fold(&[
        (C2A, prompt(1, json!({}))),
        (C2A, steer(2, "injected")),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 2, "result": {"outcome": "injected"}}),
        ),
        (C2A, steer(3, "applied")),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 3, "result": {"outcome": "injected"}}),
        ),
        (
            A2C,
            notify(
                "_lody/session/steer_applied",
                json!({"sessionId": "s", "steerId": "applied"}),
            ),
        ),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}}),
        ),
        // The prompt transport: the steer is a prompt with `_meta.<ns>.steer`.
        (
            C2A,
            prompt(4, json!({"lody": {"steer": {"id": "by-prompt"}}})),
        ),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 4, "result": {"stopReason": "end_turn"}}),
        ),
    ]);
    let steers = &state.session("s").unwrap().steers;
    assert_eq!(steers["injected"].outcome, SteerStatus::Unknown);
    assert_eq!(steers["applied"].outcome, SteerStatus::Applied);
    assert_eq!(steers["by-prompt"].outcome, SteerStatus::Unknown);
    assert_eq!(steers["by-prompt"].transport, "prompt");
    // The sequence rule saw the injected steer that was never applied.
    assert_eq!(invalid_rules(&state), ["steer-not-applied"]);
}

#[test]
fn child_permission_requests_are_routed_to_their_run() {
    let permission = |id: u64, run: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/request_permission",
            "params": {"sessionId": "s", "options": [],
                "toolCall": {"toolCallId": format!("subagent:{run}:toolu_9"),
                    "_meta": {"lody": {"subagentRunId": run, "subagentToolCallId": "toolu_9"}}}}})
    };
    let (mut state, changes) = fold(&[
        (A2C, snapshot("s", "r", "running")),
        (A2C, permission(7, "r")),
        (A2C, permission(8, "nobody")),
    ]);
    assert!(changes.contains(&Change::RequestPending {
        session_id: "s".into(),
        request_id: "7".into()
    }));
    let pending = &state.session("s").unwrap().pending_requests;
    let p = &pending["7"];
    assert_eq!(p.subagent_run_id.as_deref(), Some("r"));
    assert_eq!(p.subagent_tool_call_id.as_deref(), Some("toolu_9"));
    assert_eq!(p.tool_call_id.as_deref(), Some("subagent:r:toolu_9"));
    assert_eq!(p.run_live, Some(true));
    assert_eq!(pending["8"].run_live, Some(false));
    let changes = state.message(
        C2A,
        &json!({"jsonrpc": "2.0", "id": 7, "result": {"outcome": {"outcome": "cancelled"}}}),
    );
    assert_eq!(
        changes,
        [Change::RequestResolved {
            session_id: "s".into(),
            request_id: "7".into()
        }]
    );
    assert_eq!(
        state
            .session("s")
            .unwrap()
            .pending_requests
            .keys()
            .collect::<Vec<_>>(),
        ["8"]
    );
}
