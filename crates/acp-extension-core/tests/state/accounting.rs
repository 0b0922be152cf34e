//! Accounting

use super::*;

#[test]
fn every_value_is_folded_ignored_or_recorded_and_records_name_it() {
    let mut state = ConnectionState::new();
    state.set_line(Some(7));
    let chunk = update(
        "s",
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}),
    );
    // The first chunk of a session makes it a session (folded)…
    let changes = state.message(A2C, &chunk);
    assert!(
        matches!(&changes[..], [Change::SessionStarted { session_id }, Change::Transcript { update, .. }]
            if session_id == "s" && update == "agent_message_chunk"),
        "{changes:?}"
    );
    assert!(state.session("s").is_some());
    // …the next changes no figure: ignored, as transcript.
    let changes = state.message(A2C, &chunk);
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
    assert_eq!((record.index, record.line), (5, Some(9)));
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
    assert_eq!((a.values, a.folded, a.ignored, a.recorded), (6, 1, 3, 2));
    assert_eq!((a.ignored_kinds.transcript, a.ignored_kinds.calls), (1, 2));
    assert_eq!(a.unaccounted(), 0);
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

/// Lines of every kind the fold reads from a line: plain text chunks, tool
/// calls, progress, snapshots, invalid events, a line that is not JSON, a
/// response without its request, and a session's standard updates.
fn mixed_lines() -> Vec<String> {
    let mut lines = Vec::new();
    for i in 0..40 {
        let run = format!("run-{}", i % 3);
        let line = match i % 8 {
            0 => snapshot("s", &run, "running"),
            1 | 2 => output("s", &run, text(&format!("words {i} "))),
            3 => output(
                "s",
                &run,
                json!({"sessionUpdate": "tool_call", "toolCallId": format!("call-{i}"),
                    "title": "Read", "kind": "read", "status": "in_progress"}),
            ),
            4 => notify(
                "_lody/subagents/event",
                json!({"version": 1, "sessionId": "s", "runId": run, "type": "progress",
                    "progress": {"summary": "Reviewing", "turnCount": i}}),
            ),
            5 => notify(
                "_lody/subagents/event",
                json!({"version": 1, "sessionId": "s", "runId": run, "type": "progress",
                    "progress": {"durationMs": -5}}),
            ),
            6 => output(
                "s",
                &run,
                json!({"sessionUpdate": "tool_call", "toolCallId": "", "title": "x"}),
            ),
            _ => update(
                "s",
                json!({"sessionUpdate": "session_info_update", "title": format!("Title {i}")}),
            ),
        };
        lines.push(line.to_string());
    }
    lines.push("{not json".into());
    lines.push(json!({"jsonrpc": "2.0", "id": 77, "result": {}}).to_string());
    lines
}

/// Folds `lines` twice, listing changes and not: the same state, records
/// and accounting, and no change returned when unlisted.
fn same_unlisted(lines: &[String]) {
    let (mut listed, mut unlisted) = (ConnectionState::new(), ConnectionState::new());
    unlisted.set_list_changes(false);
    let mut changes = 0;
    for (i, line) in lines.iter().enumerate() {
        for state in [&mut listed, &mut unlisted] {
            state.set_line(Some(i as u64 + 1));
        }
        changes += listed.line(Direction::Unknown, line).len();
        assert_eq!(unlisted.line(Direction::Unknown, line), []);
    }
    let closed = listed.disconnected().len();
    assert_eq!(unlisted.disconnected(), []);
    assert!(changes + closed > 0);
    assert_eq!(listed.accounting(), unlisted.accounting());
    assert_eq!(listed.invalid_count(), unlisted.invalid_count());
    assert_eq!(
        serde_json::to_value(&listed).unwrap(),
        serde_json::to_value(&unlisted).unwrap()
    );
}

#[test]
fn a_state_that_lists_no_changes_folds_records_and_counts_the_same() {
    let mut lines = vec![
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": {"_meta": {"lody": {}}}}})
        .to_string(),
        json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1,
            "agentCapabilities": {"_meta": {"lody": {"subagents": {"version": 1}}}}}})
        .to_string(),
        json!({"jsonrpc": "2.0", "id": 1, "method": "session/prompt",
            "params": {"sessionId": "s", "prompt": []}})
        .to_string(),
    ];
    lines.extend(mixed_lines());
    lines.push(
        json!({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn",
            "usage": {"totalTokens": 30, "inputTokens": 20, "outputTokens": 10}}})
        .to_string(),
    );
    same_unlisted(&lines);
}

/// A `session/update` whose params are no object used to panic the state;
/// one whose session id is empty or no string, or without an `update`
/// object, was given to a guessed session or dropped: each is one record
/// at its pointer, no session is made, and the connection goes on.
#[test]
fn a_session_update_without_an_object_or_a_session_is_recorded_not_placed() {
    let mut state = ConnectionState::new();
    let lines = [
        (json!("x"), "/params", "type", "found a string"),
        (json!(7), "/params", "type", "found a number"),
        (json!([1]), "/params", "type", "found an array"),
        (json!(true), "/params", "type", "found a boolean"),
        (json!(null), "/params", "type", "found null"),
        (
            json!({"sessionId": "", "update": {"sessionUpdate": "session_info_update", "title": "T"}}),
            "/params/sessionId",
            "non-empty",
            "not placed",
        ),
        (
            json!({"sessionId": 3, "update": {"sessionUpdate": "session_info_update", "title": "T"}}),
            "/params/sessionId",
            "type",
            "found a number",
        ),
        (
            json!({"sessionId": "s", "update": "title"}),
            "/params/update",
            "type",
            "found a string",
        ),
        (
            json!({"sessionId": "s"}),
            "/params/update",
            "required",
            "not placed",
        ),
    ];
    for (params, pointer, rule, words) in &lines {
        let changes = state.message(A2C, &notify("session/update", params.clone()));
        let [Change::Invalid(record)] = &changes[..] else {
            panic!("{params}: {changes:?}")
        };
        assert_eq!(
            (record.pointer.as_str(), record.rule.as_str()),
            (*pointer, *rule),
            "{params}"
        );
        assert!(record.message.contains(words), "{record:?}");
        assert_eq!(record.method.as_deref(), Some("session/update"));
    }
    // No session was made for any of them (not even `s`, whose updates
    // were unreadable).
    assert!(state.sessions().is_empty(), "{:?}", state.sessions().keys());
    // The connection goes on.
    state.message(A2C, &title("s", json!("Fix"), None));
    assert_eq!(state.session("s").unwrap().title.as_deref(), Some("Fix"));
    let a = state.accounting();
    assert_eq!((a.values, a.folded, a.recorded), (10, 1, 9));
}
