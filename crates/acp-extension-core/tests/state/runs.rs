//! Subagent runs

use super::*;
use acp_extension_core::wire::MaybeUndefined;

#[test]
fn runs_fold_snapshots_progress_and_output() {
    let progress = |p: Value| {
        notify(
            "_lody/subagents/event",
            json!({"version": 1, "sessionId": "s", "runId": "r", "type": "progress", "progress": p}),
        )
    };
    let tool = |status: &str, extra: Value| {
        let mut u =
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": status});
        u.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        u
    };
    let (state, changes) = fold(&[
        (A2C, snapshot("s", "r", "running")),
        (A2C, progress(json!({"summary": "reading", "turnCount": 1}))),
        (A2C, progress(json!({"turnCount": 2, "summary": null}))),
        (
            A2C,
            progress(
                json!({"durationMs": 1500.0, "contextUsagePercent": 8.5, "toolsUsed": ["Read"], "phase": "review", "lastToolName": "Read"}),
            ),
        ),
        (A2C, progress(json!({"phase": null, "errorCount": 0}))),
        (A2C, output("s", "r", text("hello "))),
        (A2C, output("s", "r", text("world\nsecond line"))),
        (
            A2C,
            output(
                "s",
                "r",
                json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Read", "status": "pending"}),
            ),
        ),
        (
            A2C,
            output("s", "r", tool("completed", json!({"rawOutput": "ok"}))),
        ),
        (
            A2C,
            output(
                "s",
                "r",
                json!({"sessionUpdate": "plan", "entries": [{"content": "a", "priority": "low", "status": "pending"}]}),
            ),
        ),
        (
            A2C,
            output("s", "r", json!({"sessionUpdate": "plan", "entries": []})),
        ),
        (
            A2C,
            output(
                "s",
                "r",
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "image", "data": "AA==", "mimeType": "image/png"}}),
            ),
        ),
    ]);
    assert_eq!(invalid_rules(&state), Vec::<String>::new());
    assert!(
        changes
            .iter()
            .all(|c| matches!(c, Change::SubagentRun { .. }))
    );
    let run = &state.session("s").unwrap().subagent_runs["r"];
    assert_eq!(run.progress.get("turnCount"), Some(&json!(2)));
    assert!(!run.progress.contains_key("summary"));
    // Sparse and absolute, key by key: the contract's keys in their order,
    // then unknown ones; `null` clears (the other keys keep their order);
    // whole numbers are written without a fraction.
    assert_eq!(
        serde_json::to_string(&run.progress).unwrap(),
        r#"{"turnCount":2,"lastToolName":"Read","toolsUsed":["Read"],"durationMs":1500,"contextUsagePercent":8.5,"errorCount":0}"#
    );
    assert_eq!(run.text, "hello world\nsecond line");
    assert_eq!(run.last_line(), Some("second line"));
    assert_eq!(
        Value::Object(run.tool_call("t").unwrap()),
        json!({"toolCallId": "t", "title": "Read", "status": "completed", "rawOutput": "ok"})
    );
    assert_eq!(run.plan.as_ref().unwrap()["entries"], json!([]));
    // A non-text message chunk marks the run incomplete.
    assert!(run.output_incomplete);
    assert_eq!(run.parent_run_id, MaybeUndefined::Null);
    assert_eq!(run.parent_tool_call_id.as_deref(), Some("toolu_1"));
}

#[test]
fn a_runs_messages_are_separated_by_lines_its_chunks_are_not() {
    let tool = json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Read"});
    let (state, _) = fold(&[
        (A2C, snapshot("s", "r", "running")),
        (A2C, output("s", "r", text("reading "))),
        (A2C, output("s", "r", text("the task"))),
        // A tool call ends the message; an empty chunk starts nothing.
        (A2C, output("s", "r", tool.clone())),
        (A2C, output("s", "r", text(""))),
        (A2C, output("s", "r", text("done"))),
        // Text that already ends its line, or a message that begins with
        // one, gets no blank line.
        (A2C, output("s", "r", text("\n"))),
        (A2C, output("s", "r", tool.clone())),
        (A2C, output("s", "r", text("next"))),
        (A2C, output("s", "r", tool)),
        (A2C, output("s", "r", text("\nlast"))),
    ]);
    assert_eq!(invalid_rules(&state), Vec::<String>::new());
    let run = &state.session("s").unwrap().subagent_runs["r"];
    assert_eq!(run.text, "reading the task\ndone\nnext\nlast");
    assert_eq!(run.last_line(), Some("last"));

    // Another messageId is another message; the same one continues.
    let with_id = |t: &str, id: &str| {
        output(
            "s",
            "r",
            json!({"sessionUpdate": "agent_message_chunk", "messageId": id,
                "content": {"type": "text", "text": t}}),
        )
    };
    let (state, _) = fold(&[
        (A2C, snapshot("s", "r", "running")),
        (A2C, with_id("first", "m1")),
        (A2C, with_id(" part", "m1")),
        (A2C, with_id("second", "m2")),
    ]);
    assert_eq!(invalid_rules(&state), Vec::<String>::new());
    let run = &state.session("s").unwrap().subagent_runs["r"];
    assert_eq!(run.text, "first part\nsecond");
}

#[test]
fn terminal_runs_are_final_unknown_is_not_and_ownership_is_fixed_at_first_binding() {
    let rebind = notify(
        "_lody/subagents/event",
        json!({"version": 1, "sessionId": "s", "runId": "r", "type": "snapshot",
            "snapshot": {"state": "running", "support": support(), "parentToolCallId": "other"}}),
    );
    let (mut state, _) = fold(&[
        (A2C, snapshot("s", "r", "running")),
        (A2C, snapshot("s", "r", "unknown")),
        (A2C, rebind),
        (A2C, snapshot("s", "r", "completed")),
        (A2C, output("s", "r", text("late"))),
        (A2C, snapshot("s", "r", "running")),
    ]);
    let run = &state.session("s").unwrap().subagent_runs["r"];
    assert_eq!(
        run.snapshot.as_ref().unwrap().state,
        SubagentState::Completed
    );
    assert_eq!(run.parent_tool_call_id.as_deref(), Some("toolu_1"));
    assert_eq!(run.text, "");
    assert_eq!(
        invalid_rules(&state),
        ["subagent-after-terminal", "subagent-after-terminal"]
    );
    // Progress for a run that never had a snapshot: reported, not folded.
    let changes = state.message(A2C, &output("s", "ghost", text("x")));
    assert!(matches!(&changes[..], [Change::Invalid(i)]
        if i.rule == "subagent-first-not-snapshot" && i.pointer == "/params/type"));
    assert!(
        !state
            .session("s")
            .unwrap()
            .subagent_runs
            .contains_key("ghost")
    );
}

#[test]
fn cycles_and_cross_root_parents_stay_unresolved() {
    let child_of = |sid: &str, run: &str, parent: &str| {
        notify(
            "_lody/subagents/event",
            json!({"version": 1, "sessionId": sid, "runId": run, "type": "snapshot",
                "snapshot": {"state": "running", "support": support(), "parentRunId": parent}}),
        )
    };
    let (state, _) = fold(&[
        (A2C, snapshot("s", "a", "running")),
        (A2C, child_of("s", "b", "a")),
        // a under b would close a cycle (a's lineage is already known, so
        // only the report shows; a new run c naming itself is refused).
        (A2C, child_of("s", "c", "c")),
        (A2C, snapshot("other", "x", "running")),
        (A2C, child_of("s", "d", "x")),
    ]);
    let runs = &state.session("s").unwrap().subagent_runs;
    assert_eq!(runs["b"].parent_run_id, MaybeUndefined::Value("a".into()));
    assert_eq!(runs["c"].parent_run_id, MaybeUndefined::Undefined);
    assert_eq!(runs["d"].parent_run_id, MaybeUndefined::Undefined);
    assert_eq!(
        invalid_rules(&state),
        ["subagent-tree-cycle", "subagent-cross-root"]
    );
    // The tree: the root's child with its child, then the runs whose
    // lineage is unresolved.
    let tree: Vec<(usize, &str)> = state
        .session("s")
        .unwrap()
        .run_tree()
        .into_iter()
        .map(|(d, id, _)| (d, id))
        .collect();
    assert_eq!(tree, [(0, "a"), (1, "b"), (0, "c"), (0, "d")]);
    let mut state = state;
    state.message(A2C, &child_of("s", "a", "b"));
    assert_eq!(invalid_rules(&state).last().unwrap(), "subagent-tree-cycle");
    assert_eq!(
        state.session("s").unwrap().subagent_runs["a"].parent_run_id,
        MaybeUndefined::Null
    );
}

#[test]
fn v2_state_update_sets_the_activity() {
    let (state, _) = fold(&[
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "state_update", "state": "running",
                "background": [{"type": "terminal", "terminalId": "t"}, {"type": "tool_call", "toolCallId": "c"}]}),
            ),
        ),
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "state_update", "state": "idle"}),
            ),
        ),
    ]);
    let a = &state.session("s").unwrap().activity;
    assert_eq!(serde_json::to_value(a.state).unwrap(), "idle");
    // Background work by type; an omitted `background` is not reported,
    // not zero, so the last list stands.
    assert_eq!(
        serde_json::to_value(&a.background).unwrap(),
        json!({"terminal": 1, "tool_call": 1})
    );
    assert_eq!(a.background_task_count, None);
    assert_eq!(state.invalid_count(), 0);
}

#[test]
fn reconnect_marks_live_runs_unknown_and_they_may_come_back() {
    let (mut state, _) = fold(&[
        (A2C, snapshot("s", "live", "running")),
        (A2C, snapshot("s", "done", "completed")),
        (
            C2A,
            json!({"jsonrpc": "2.0", "id": 3, "method": "session/load",
                "params": {"sessionId": "s", "cwd": "/", "mcpServers": []}}),
        ),
    ]);
    let runs = &state.session("s").unwrap().subagent_runs;
    let live = &runs["live"];
    assert_eq!(
        live.snapshot.as_ref().unwrap().state,
        SubagentState::Unknown
    );
    assert!(live.output_incomplete && live.snapshot.as_ref().unwrap().output_incomplete.is_some());
    assert_eq!(
        serde_json::to_value(&live.snapshot.as_ref().unwrap().reason).unwrap(),
        json!({"code": "disconnected"})
    );
    assert_eq!(
        runs["done"].snapshot.as_ref().unwrap().state,
        SubagentState::Completed
    );
    state.message(A2C, &snapshot("s", "live", "running"));
    assert_eq!(
        state.session("s").unwrap().subagent_runs["live"].state_name(),
        "running"
    );
    // A lost connection does the same.
    state.disconnected();
    assert_eq!(
        state.session("s").unwrap().subagent_runs["live"].state_name(),
        "unknown"
    );
    assert_eq!(state.invalid_count(), 0);
}

#[test]
fn malformed_events_and_events_without_negotiation_are_changes() {
    let mut state = ConnectionState::new();
    let bad = notify(
        "_lody/subagents/event",
        json!({"version": 1, "sessionId": "s", "runId": "r", "type": "snapshot",
            "snapshot": {"state": "running"}}),
    );
    let changes = state.message(A2C, &bad);
    assert!(
        matches!(&changes[..], [Change::Invalid(i)]
        if i.method.as_deref() == Some("_lody/subagents/event")
            && i.pointer == "/params/snapshot/support" && !i.folded),
        "{changes:?}"
    );
    assert!(
        state
            .session("s")
            .is_none_or(|s| s.subagent_runs.is_empty())
    );
    // An agent that did not advertise subagentEvents: dropped, reported.
    init(
        &mut state,
        json!({}),
        json!({"subagentEvents": {"version": 1}}),
    );
    let changes = state.message(A2C, &snapshot("s", "r", "running"));
    assert!(matches!(&changes[..], [Change::Invalid(i)] if i.rule == "not-negotiated"));
}

#[test]
fn standard_subagent_updates_fold_into_the_same_runs() {
    let standard = fold(&[
        (
            A2C,
            update(
                "root",
                json!({"sessionUpdate": "subagent_update", "sessionId": "child",
                "title": "Worker", "state": {"state": "running"},
                "_meta": {"lody": {"parentToolCallId": "toolu_1"}}}),
            ),
        ),
        (A2C, update("child", text("hi"))),
        (
            A2C,
            update(
                "child",
                json!({"sessionUpdate": "subagent_update", "sessionId": "grandchild",
                "state": {"state": "running"}}),
            ),
        ),
        (
            A2C,
            update(
                "root",
                json!({"sessionUpdate": "subagent_update", "sessionId": "child",
                "state": {"state": "idle", "stopReason": "end_turn"}}),
            ),
        ),
    ])
    .0;
    let extension = fold(&[
        (A2C, snapshot("root", "child", "running")),
        (A2C, output("root", "child", text("hi"))),
        (A2C, snapshot("root", "child", "completed")),
    ])
    .0;
    assert_eq!(invalid_rules(&standard), Vec::<String>::new());
    let s = &standard.session("root").unwrap().subagent_runs;
    let e = &extension.session("root").unwrap().subagent_runs["child"];
    let child = &s["child"];
    // The standard run keeps its own words: idle with its stop reason, no
    // invented snapshot or support.
    assert_eq!(child.snapshot, None);
    assert_eq!(child.state_name(), "idle");
    assert_eq!(e.state_name(), "completed");
    assert_eq!(child.name(), e.name());
    assert_eq!(child.text, e.text);
    assert_eq!(child.parent_run_id, e.parent_run_id);
    assert_eq!(child.parent_tool_call_id, e.parent_tool_call_id);
    assert_eq!(child.dialect, Dialect::Standard);
    // Announced on its parent run: nested under it, in the root session.
    assert_eq!(
        s["grandchild"].parent_run_id,
        MaybeUndefined::Value("child".into())
    );
    let tree: Vec<(usize, &str)> = standard
        .session("root")
        .unwrap()
        .run_tree()
        .into_iter()
        .map(|(d, id, _)| (d, id))
        .collect();
    assert_eq!(tree, [(0, "child"), (1, "grandchild")]);
}

#[test]
fn a_standard_runs_progress_folds_as_a_core_events_does() {
    let announce = |meta: Value| {
        update(
            "root",
            json!({"sessionUpdate": "subagent_update", "sessionId": "child",
                "state": {"state": "running"}, "_meta": {"lody": {"progress": meta}}}),
        )
    };
    let (state, _) = fold(&[
        (
            A2C,
            announce(json!({"summary": "reading", "turnCount": 1, "phase": "plan"})),
        ),
        (
            A2C,
            announce(json!({"summary": null, "turnCount": 2, "toolsUsed": ["Read"]})),
        ),
    ]);
    assert_eq!(invalid_rules(&state), Vec::<String>::new());
    let run = &state.session("root").unwrap().subagent_runs["child"];
    // Replaced in place, added last, cleared by `null` with the other keys
    // in their order.
    assert_eq!(
        serde_json::to_string(&run.progress).unwrap(),
        r#"{"turnCount":2,"phase":"plan","toolsUsed":["Read"]}"#
    );
}

#[test]
fn a_standard_run_that_goes_idle_and_runs_again_keeps_its_output() {
    // codex's partial patches (official-adapters-offline.md): no state in
    // the announcement, `cancel` toggled apart, idle then running again.
    let child = "root%3A1:subagent:thread-9";
    let patch = |u: Value| {
        let mut u = u;
        u["sessionUpdate"] = json!("subagent_update");
        u["sessionId"] = json!(child);
        update("root", u)
    };
    let say = |t: &str| {
        update(
            child,
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": t}}),
        )
    };
    let (state, _) = fold(&[
        (
            A2C,
            patch(json!({"description": "look around", "capabilities": {}})),
        ),
        (A2C, patch(json!({"cwd": "/work/tree"}))),
        (A2C, patch(json!({"state": {"state": "running"}}))),
        (A2C, patch(json!({"capabilities": {"cancel": {}}}))),
        (A2C, say("first answer")),
        (
            A2C,
            update(
                child,
                json!({"sessionUpdate": "usage_update", "used": 900, "size": 10000}),
            ),
        ),
        (
            A2C,
            patch(json!({"state": {"state": "idle", "stopReason": "end_turn"}})),
        ),
        (A2C, patch(json!({"capabilities": {"cancel": null}}))),
        // send_input: the same child runs again.
        (A2C, patch(json!({"state": {"state": "running"}}))),
        (A2C, say("second answer")),
        (
            A2C,
            patch(
                json!({"state": {"state": "idle", "stopReason": "error", "error": {"code": -32603, "message": "Subagent work failed"}}}),
            ),
        ),
        (A2C, patch(json!({"cwd": null}))),
    ]);
    assert_eq!(invalid_rules(&state), Vec::<String>::new());
    // The child's traffic is the run's, not a session of its own.
    assert_eq!(state.sessions().keys().collect::<Vec<_>>(), ["root"]);
    let run = &state.session("root").unwrap().subagent_runs[child];
    let std = run.standard.as_ref().unwrap();
    assert_eq!(run.text, "first answer\nsecond answer");
    assert_eq!(std.generations, 2);
    assert_eq!(std.state.as_deref(), Some("idle"));
    assert_eq!(std.stop_reason.as_deref(), Some("error"));
    assert_eq!(
        std.error.as_ref().unwrap()["message"],
        "Subagent work failed"
    );
    assert_eq!(std.description.as_deref(), Some("look around"));
    assert_eq!(std.cwd, None);
    assert!(!std.can_cancel());
    assert_eq!(std.context.as_ref().unwrap().used, 900);
    assert!(!run.is_live());
    // Nothing the dialect did not send.
    let wire = serde_json::to_value(run).unwrap();
    assert!(wire.get("snapshot").is_none(), "{wire}");
    assert!(wire["standard"].get("title").is_none(), "{wire}");
}

#[test]
fn claudes_standard_run_with_session_messages_and_requires_action() {
    let child = "task-7";
    let (state, _) = fold(&[
        (
            A2C,
            update(
                "root",
                json!({"sessionUpdate": "subagent_update", "sessionId": child, "title": "Find flaky test",
                "description": "Explore", "capabilities": {"cancel": {}}, "state": {"state": "running"}}),
            ),
        ),
        (
            A2C,
            update(
                "root",
                json!({"sessionUpdate": "session_message", "messageId": "toolu_01", "senderSessionId": "root",
                "recipientSessionId": child, "content": [{"type": "text", "text": "Find why test X flakes"}],
                "recipientMessageId": "toolu_01"}),
            ),
        ),
        (
            A2C,
            update(
                child,
                json!({"sessionUpdate": "session_message", "messageId": "toolu_01", "senderSessionId": "root",
                "recipientSessionId": child, "content": [{"type": "text", "text": "Find why test X flakes"}],
                "senderMessageId": "toolu_01"}),
            ),
        ),
        (
            A2C,
            update(
                "root",
                json!({"sessionUpdate": "subagent_update", "sessionId": child, "state": {"state": "requires_action"}}),
            ),
        ),
        (
            A2C,
            update(
                "root",
                json!({"sessionUpdate": "subagent_update", "sessionId": child, "state": {"state": "running"}}),
            ),
        ),
        (
            A2C,
            update(
                "root",
                json!({"sessionUpdate": "session_message", "messageId": "toolu_01:reply", "senderSessionId": child,
                "recipientSessionId": "root", "content": [{"type": "text", "text": "It races the clock."}]}),
            ),
        ),
        (
            A2C,
            update(
                "root",
                json!({"sessionUpdate": "subagent_update", "sessionId": child, "state": {"state": "unknown"}}),
            ),
        ),
    ]);
    assert_eq!(invalid_rules(&state), Vec::<String>::new());
    let run = &state.session("root").unwrap().subagent_runs[child];
    let std = run.standard.as_ref().unwrap();
    assert_eq!(run.name(), Some("Find flaky test"));
    assert_eq!(std.prompt.as_deref(), Some("Find why test X flakes"));
    assert_eq!(std.reply.as_deref(), Some("It races the clock."));
    // The hidden launch call is the prompt's message id.
    assert_eq!(run.parent_tool_call_id.as_deref(), Some("toolu_01"));
    // requires_action and back is one generation.
    assert_eq!(std.generations, 1);
    assert_eq!(run.state_name(), "unknown");
    assert!(!run.is_live());
}

/// A snapshot that breaks the contract does not start its run: the run's
/// later events are recorded as events of a run never started, not lost.
#[test]
fn a_run_whose_only_snapshot_was_invalid_has_its_events_recorded() {
    let mut bad = snapshot("s", "r", "running");
    bad["params"]["snapshot"]["state"] = json!("bogus");
    let progress = notify(
        "_lody/subagents/event",
        json!({"version": 1, "sessionId": "s", "runId": "r", "type": "progress",
            "progress": {"summary": "reading"}}),
    );
    let (state, _) = fold(&[
        (A2C, bad),
        (A2C, progress),
        (A2C, output("s", "r", text("hi"))),
    ]);
    assert_eq!(
        invalid_rules(&state),
        [
            "one-of",
            "subagent-first-not-snapshot",
            "subagent-first-not-snapshot"
        ]
    );
    assert!(
        state
            .session("s")
            .is_none_or(|s| s.subagent_runs.is_empty())
    );
    let a = state.accounting();
    assert_eq!((a.values, a.recorded, a.unaccounted()), (3, 3, 0));
}

/// What a standard child session sends beside its output: its title is its
/// run's, its notices the root session's (naming the child), and what a run
/// cannot hold (a goal, a compaction) marks its output incomplete. Nothing
/// of it is lost without a word.
#[test]
fn a_child_sessions_title_notice_goal_and_compaction_are_folded_or_marked() {
    let announce = update(
        "root",
        json!({"sessionUpdate": "subagent_update", "sessionId": "child",
            "title": "Worker", "state": {"state": "running"}}),
    );
    let renamed = update(
        "child",
        json!({"sessionUpdate": "session_info_update", "title": "Fix the parser",
            "_meta": {"lody": {"notice": {"level": "warning", "message": "slow disk"}}}}),
    );
    let (state, _) = fold(&[(A2C, announce.clone()), (A2C, renamed)]);
    let root = state.session("root").unwrap();
    let run = &root.subagent_runs["child"];
    assert_eq!(
        run.standard.as_ref().unwrap().title.as_deref(),
        Some("Fix the parser")
    );
    assert!(!run.output_incomplete);
    assert_eq!(root.notices.len(), 1);
    assert_eq!(
        (
            root.notices[0].message.as_str(),
            root.notices[0].source.as_deref()
        ),
        ("slow disk", Some("child"))
    );
    // The child is no session of its own.
    assert!(state.session("child").is_none());

    let goal = update(
        "child",
        json!({"sessionUpdate": "session_info_update",
            "_meta": {"lody": {"goal": {"objective": "x", "status": "active"}}}}),
    );
    let compaction = update(
        "child",
        json!({"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "started"}),
    );
    for lost in [goal, compaction] {
        let (state, changes) = fold(&[(A2C, announce.clone()), (A2C, lost.clone())]);
        let run = &state.session("root").unwrap().subagent_runs["child"];
        assert!(run.output_incomplete, "{lost}");
        assert!(
            changes.contains(&Change::SubagentRun {
                session_id: "root".into(),
                run_id: "child".into()
            }),
            "{lost}: {changes:?}"
        );
        let a = state.accounting();
        assert_eq!((a.values, a.folded, a.unaccounted()), (2, 2, 0), "{lost}");
    }
}
