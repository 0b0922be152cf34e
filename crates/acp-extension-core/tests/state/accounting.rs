//! Accounting

use super::*;

#[test]
fn every_value_is_folded_or_recorded_and_records_name_it() {
    let mut state = ConnectionState::new();
    state.set_line(Some(7));
    // A transcript chunk changes no figure, but is accounted for.
    let changes = state.message(
        A2C,
        &update(
            "s",
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}),
        ),
    );
    assert!(
        matches!(&changes[..], [Change::Transcript { update, .. }] if update == "agent_message_chunk")
    );
    // A call the state does not fold, and its answer.
    state.message(
        C2A,
        &json!({"jsonrpc": "2.0", "id": 9, "method": "session/set_mode", "params": {"sessionId": "s", "modeId": "plan"}}),
    );
    let changes = state.message(A2C, &json!({"jsonrpc": "2.0", "id": 9, "result": {}}));
    assert!(
        matches!(&changes[..], [Change::Seen { method: Some(m) }] if m == "session/set_mode"),
        "{changes:?}"
    );
    // A bare value that is no message: recorded, naming its shape.
    state.set_line(Some(9));
    let changes = state.message(A2C, &json!({"limitId": "x", "windows": []}));
    let Change::Invalid(record) = &changes[0] else {
        panic!("{changes:?}")
    };
    assert_eq!(record.rule, "not-a-message");
    assert!(record.message.contains("RateLimit"), "{record:?}");
    assert_eq!((record.index, record.line), (4, Some(9)));
    // An unknown legacy method is reported like an unknown `_lody/…` one.
    let changes = state.message(
        A2C,
        &notify("_acp_ext:session_mystery", json!({"sessionId": "s"})),
    );
    assert!(
        matches!(&changes[..], [Change::Invalid(i)] if i.rule == "unknown-extension-method"),
        "{changes:?}"
    );
    let a = state.accounting();
    assert_eq!((a.values, a.folded, a.recorded), (5, 3, 2));
}

#[test]
fn a_bare_subagent_event_is_a_subagent_event() {
    let bare = |v: Value| v["params"].clone();
    let (state, _) = fold(&[
        (A2C, bare(snapshot("s", "r", "running"))),
        (A2C, bare(output("s", "r", text("from the run")))),
    ]);
    let s = state.session("s").unwrap();
    assert_eq!(s.subagent_runs["r"].text, "from the run");
    assert_eq!(invalid_rules(&state), Vec::<String>::new());
}

#[test]
fn an_invalid_output_for_a_live_run_marks_it_incomplete() {
    let mut bad = output("s", "r", text("x"));
    bad["params"]["update"] = json!({"sessionUpdate": "usage_update", "used": 1, "size": 2});
    let (state, _) = fold(&[(A2C, snapshot("s", "r", "running")), (A2C, bad)]);
    let run = &state.session("s").unwrap().subagent_runs["r"];
    assert!(run.output_incomplete);
    assert!(!invalid_rules(&state).is_empty());
}

#[test]
fn plans_from_every_dialect() {
    let (state, changes) = fold(&[
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "plan", "entries": [{"content": "a", "priority": "high", "status": "pending"}]}),
            ),
        ),
        (
            A2C,
            notify(
                "_acp_ext:codex_proposed_plan",
                json!({"schemaVersion": 1, "sessionId": "t", "turnId": "turn-1", "markdown": "# Plan", "status": "completed", "isLatest": true}),
            ),
        ),
        (
            A2C,
            update(
                "u",
                json!({"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "p1", "content": "do it"}}),
            ),
        ),
        (
            A2C,
            update(
                "u",
                json!({"sessionUpdate": "plan_removed", "planId": "p1"}),
            ),
        ),
    ]);
    assert!(
        changes.iter().all(|c| matches!(c, Change::Plan { .. })
            || matches!(c, Change::Invalid(i) if i.rule == "legacy-method")),
        "{changes:?}"
    );
    assert_eq!(
        state.session("s").unwrap().plan.as_ref().unwrap()["entries"][0]["content"],
        "a"
    );
    assert_eq!(
        state.session("t").unwrap().plan.as_ref().unwrap()["content"],
        "# Plan"
    );
    assert_eq!(state.session("u").unwrap().plan, None);
}

#[test]
fn air_subagents_fold_into_runs() {
    let (state, _) = fold(&[
        (
            A2C,
            update(
                "root",
                json!({"sessionUpdate": "subagent_spawned", "subagentSessionId": "t:generation:1", "name": "Fix",
                "task": "Make the build pass", "capabilities": {}}),
            ),
        ),
        (
            A2C,
            update(
                "t:generation:1",
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "done"}}),
            ),
        ),
        (
            A2C,
            update(
                "root",
                json!({"sessionUpdate": "_subagent_update", "subagentSessionId": "t:generation:1", "state": "completed"}),
            ),
        ),
    ]);
    let run = &state.session("root").unwrap().subagent_runs["t:generation:1"];
    assert_eq!(run.dialect, Dialect::Air);
    assert_eq!(run.text, "done");
    assert_eq!(run.state_name(), "completed");
    assert!(!run.is_live());
    assert_eq!(state.sessions().len(), 1);
}
