//! The consumer state: every fold rule, the dialects mapping onto the same
//! state, malformed input and rule breaks as changes, bounded mode, and
//! property tests against the emitter and the accumulator.

use acp_extension_core::state::*;
use acp_extension_core::subagent_emitter::{EmittedEvent, OutputIds, SubagentEmitter};
use acp_extension_core::subagent_events::{
    OutputRead, SubagentSnapshot, SubagentState, SubagentStream, SubagentSupport,
};
use acp_extension_core::usage::{ModelUsage, SessionUsageAccumulator};
use futures::executor::block_on;
use indexmap::IndexMap;
use proptest::prelude::*;
use serde_json::{Value, json};

const A2C: Direction = Direction::AgentToClient;
const C2A: Direction = Direction::ClientToAgent;

fn notify(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

fn update(sid: &str, update: Value) -> Value {
    notify(
        "session/update",
        json!({"sessionId": sid, "update": update}),
    )
}

fn support() -> Value {
    json!({"stream": ["text", "tool"], "progress": true, "outputRead": "none", "cancel": false})
}

fn snapshot(sid: &str, run: &str, state: &str) -> Value {
    notify(
        "_lody/subagents/event",
        json!({"version": 1, "sessionId": sid, "runId": run, "type": "snapshot",
            "snapshot": {"state": state, "support": support(), "parentRunId": null,
                "parentToolCallId": "toolu_1", "name": "Worker"}}),
    )
}

fn output(sid: &str, run: &str, update: Value) -> Value {
    notify(
        "_lody/subagents/event",
        json!({"version": 1, "sessionId": sid, "runId": run, "type": "output", "update": update}),
    )
}

fn text(t: &str) -> Value {
    json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": t}})
}

/// Initialize with these agent and client `_meta.lody` sections.
fn init(state: &mut ConnectionState, agent: Value, client: Value) {
    state.message(
        C2A,
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": {"_meta": {"lody": client}}}}),
    );
    state.message(
        A2C,
        &json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1,
            "agentCapabilities": {"_meta": {"lody": agent}}}}),
    );
}

fn fold(messages: &[(Direction, Value)]) -> (ConnectionState, Vec<Change>) {
    let mut state = ConnectionState::new();
    let mut changes = Vec::new();
    for (d, m) in messages {
        changes.extend(state.message(*d, m));
    }
    (state, changes)
}

fn invalid_rules(state: &ConnectionState) -> Vec<String> {
    state.invalid().map(|i| i.rule.clone()).collect()
}

// ---------------------------------------------------------------------------
// Negotiation

#[test]
fn a_malformed_capability_voids_only_itself() {
    let mut state = ConnectionState::new();
    init(
        &mut state,
        json!({"usage": {"version": 1}, "goal": {"version": 1, "actions": 5}}),
        json!({"subagentEvents": {"version": 1}}),
    );
    let agent = &state.negotiation().agent;
    assert!(agent.seen);
    assert!(agent.features.contains_key("usage"));
    assert!(!agent.features.contains_key("goal"));
    assert_eq!(agent.invalid, ["goal"]);
    let bad: Vec<&Invalid> = state.invalid().collect();
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert_eq!(bad[0].method.as_deref(), Some("initialize"));
    assert!(
        bad[0]
            .pointer
            .starts_with("/result/agentCapabilities/_meta/lody/goal"),
        "{bad:?}"
    );
    assert!(
        state
            .negotiation()
            .client
            .features
            .contains_key("subagentEvents")
    );
}

#[test]
fn v2_capabilities_and_the_ua_namespace_are_read() {
    let (state, changes) = fold(&[
        (
            C2A,
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 2,
                "capabilities": {"_meta": {"ua": {"subagentEvents": {"version": 1}}}}}}),
        ),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 2,
                "capabilities": {"_meta": {"ua": {"subagentEvents": {"version": 1}, "usage": {"version": 1}}}}}}),
        ),
    ]);
    assert!(changes.contains(&Change::Negotiated {
        side: acp_extension_core::capabilities::Side::Agent
    }));
    let n = state.negotiation();
    assert_eq!(
        n.agent.features.keys().collect::<Vec<_>>(),
        ["subagentEvents", "usage"]
    );
    assert!(n.client.features.contains_key("subagentEvents"));
}

// ---------------------------------------------------------------------------
// Titles, goals, activity, turns, tasks

fn title(sid: &str, t: Value, source: Option<&str>) -> Value {
    let mut u = json!({"sessionUpdate": "session_info_update", "title": t});
    if let Some(s) = source {
        u["_meta"] = json!({"lody": {"titleSource": s}});
    }
    update(sid, u)
}

#[test]
fn title_authority() {
    let mut state = ConnectionState::new();
    init(
        &mut state,
        json!({"sessionTitle": {"version": 1}}),
        json!({}),
    );
    let t = |s: &ConnectionState| {
        let s = s.session("s").unwrap();
        (s.title.clone(), s.title_source)
    };
    // A fallback fills an empty title only.
    state.message(A2C, &title("s", json!("first prompt"), Some("fallback")));
    assert_eq!(
        t(&state),
        (Some("first prompt".into()), Some(TitleOrigin::Fallback))
    );
    state.message(A2C, &title("s", json!("  Generated  "), Some("generated")));
    assert_eq!(
        t(&state),
        (Some("Generated".into()), Some(TitleOrigin::Generated))
    );
    state.message(A2C, &title("s", json!("later fallback"), Some("fallback")));
    assert_eq!(t(&state).0.as_deref(), Some("Generated"));
    // An untagged title from an agent advertising sessionTitle is refused.
    let changes = state.message(A2C, &title("s", json!("untagged"), None));
    assert!(matches!(&changes[..], [Change::Invalid(i)] if i.rule == "title-without-source"));
    assert_eq!(t(&state).0.as_deref(), Some("Generated"));
    state.message(A2C, &title("s", json!("Explicit"), Some("explicit")));
    assert_eq!(
        t(&state),
        (Some("Explicit".into()), Some(TitleOrigin::Explicit))
    );
    // A generated title never replaces an explicit one.
    state.message(A2C, &title("s", json!("Generated 2"), Some("generated")));
    assert_eq!(t(&state).0.as_deref(), Some("Explicit"));
    // Empty titles are ignored.
    state.message(A2C, &title("s", json!("   "), Some("explicit")));
    assert_eq!(t(&state).0.as_deref(), Some("Explicit"));
    // The user's rename is never replaced by the agent.
    state.user_renamed("s", "Mine");
    state.message(A2C, &title("s", json!("Explicit 2"), Some("explicit")));
    state.message(A2C, &title("s", Value::Null, Some("explicit")));
    assert_eq!(t(&state), (Some("Mine".into()), Some(TitleOrigin::User)));
}

#[test]
fn untagged_and_generated_titles_without_session_title() {
    let mut state = ConnectionState::new();
    init(&mut state, json!({}), json!({}));
    state.message(A2C, &title("s", json!("Plain"), None));
    let s = state.session("s").unwrap();
    assert_eq!(
        (s.title.as_deref(), s.title_source),
        (Some("Plain"), Some(TitleOrigin::Untagged))
    );
    let changes = state.message(A2C, &title("s", json!("Gen"), Some("generated")));
    assert!(matches!(&changes[..], [Change::Invalid(i)] if i.rule == "not-negotiated"));
    assert_eq!(state.session("s").unwrap().title.as_deref(), Some("Plain"));
    // null clears a non-user title.
    state.message(A2C, &title("s", Value::Null, Some("explicit")));
    assert_eq!(state.session("s").unwrap().title, None);
}

fn goal(sid: &str, goal: Option<Value>) -> Value {
    let mut u = json!({"sessionUpdate": "session_info_update", "_meta": {"lody": {}}});
    if let Some(g) = goal {
        u["_meta"]["lody"]["goal"] = g;
    }
    update(sid, u)
}

#[test]
fn goal_is_tri_state_and_an_invalid_goal_keeps_the_old_one() {
    let (mut state, _) = fold(&[(
        A2C,
        goal("s", Some(json!({"objective": "ship", "status": "active"}))),
    )]);
    let objective = |s: &ConnectionState| {
        s.session("s")
            .unwrap()
            .current_goal()
            .map(|g| g.objective.clone())
    };
    assert_eq!(objective(&state).as_deref(), Some("ship"));
    state.message(A2C, &goal("s", None));
    assert_eq!(objective(&state).as_deref(), Some("ship"));
    let changes = state.message(
        A2C,
        &goal("s", Some(json!({"objective": "x", "status": "nope"}))),
    );
    assert!(
        matches!(&changes[..], [Change::Invalid(i)]
        if i.pointer == "/params/update/_meta/lody/goal/status"),
        "{changes:?}"
    );
    assert_eq!(objective(&state).as_deref(), Some("ship"));
    state.message(A2C, &goal("s", Some(Value::Null)));
    assert_eq!(objective(&state), None);
    // Cleared is told apart from never reported.
    assert_eq!(state.session("s").unwrap().goal, Some(None));
    let wire = serde_json::to_value(state.session("s").unwrap()).unwrap();
    assert_eq!(wire["goal"], Value::Null);
    assert!(wire.as_object().unwrap().contains_key("goal"));
    // A goal on another update is not read (the Lody client reads it on
    // session_info_update only).
    state.message(
        A2C,
        &update(
            "s",
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"},
                "_meta": {"lody": {"goal": {"objective": "y", "status": "active"}}}}),
        ),
    );
    assert_eq!(objective(&state), None);
}

#[test]
fn activity_turns_and_engine_turns() {
    let (state, _) = fold(&[
        (
            C2A,
            json!({"jsonrpc": "2.0", "id": 5, "method": "session/prompt",
                "params": {"sessionId": "s", "prompt": []}}),
        ),
        (
            A2C,
            notify(
                "_ua/session/activity_update",
                json!({"version": 1, "sessionId": "s", "state": "running", "backgroundTaskCount": 2}),
            ),
        ),
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"},
                "_meta": {"lody": {"turnId": "7", "messagePhase": "commentary"}}}),
            ),
        ),
    ]);
    let s = state.session("s").unwrap();
    assert_eq!(s.activity.background_task_count, Some(2));
    assert_eq!(
        serde_json::to_value(s.activity.state).unwrap(),
        json!("running")
    );
    assert_eq!((s.turns.prompts, s.turns.running), (1, true));
    assert_eq!(s.turns.turn_id.as_deref(), Some("7"));
    assert_eq!(s.turns.message_phase.as_deref(), Some("commentary"));

    let mut state = state;
    state.message(
        A2C,
        &json!({"jsonrpc": "2.0", "id": 5, "result": {"stopReason": "end_turn"}}),
    );
    let s = state.session("s").unwrap();
    assert!(!s.turns.running);
    assert_eq!(s.turns.last_stop_reason.as_deref(), Some("end_turn"));
    // kimi's engine-opened turn, bracketed by session_info_updates.
    state.message(
        A2C,
        &update(
            "s",
            json!({"sessionUpdate": "session_info_update",
            "_meta": {"lody": {"turnId": "auto:1", "turnOrigin": {"kind": "cron_job"}}}}),
        ),
    );
    let e = state
        .session("s")
        .unwrap()
        .turns
        .engine_turn
        .clone()
        .unwrap();
    assert_eq!(
        (e.turn_id.as_str(), e.origin.as_str()),
        ("auto:1", "cron_job")
    );
    state.message(
        A2C,
        &update(
            "s",
            json!({"sessionUpdate": "session_info_update",
            "_meta": {"lody": {"turnId": "auto:1", "turnEnded": true}}}),
        ),
    );
    let t = &state.session("s").unwrap().turns;
    assert_eq!((t.engine_turn.is_none(), t.engine_turns), (true, 1));
}

#[test]
fn tasks_from_tool_calls() {
    let task = |status: &str| {
        json!({"version": 1, "taskId": "t1", "kind": "background", "status": status,
            "description": "build"})
    };
    let (state, changes) = fold(&[
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "tool_call", "toolCallId": "task:t1", "title": "Build",
                "kind": "think", "_meta": {"lody": {"task": task("in_progress")}}}),
            ),
        ),
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "task:t1",
                "_meta": {"lody": {"task": task("completed")}}}),
            ),
        ),
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "tool_call", "toolCallId": "bad",
                "_meta": {"lody": {"task": {"version": 1, "taskId": "t2", "kind": "x", "status": "pending"}}}}),
            ),
        ),
    ]);
    let s = state.session("s").unwrap();
    let t = &s.tasks["t1"];
    assert_eq!(t.tool_call_id, "task:t1");
    assert_eq!(t.title.as_deref(), Some("Build"));
    assert_eq!(serde_json::to_value(t.task.status).unwrap(), "completed");
    assert!(!s.tasks.contains_key("t2"));
    assert!(changes.iter().any(|c| matches!(c, Change::Invalid(i)
        if i.pointer == "/params/update/_meta/lody/task/kind")));
}

// ---------------------------------------------------------------------------
// Subagent runs

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
    assert_eq!(run.text, "hello world\nsecond line");
    assert_eq!(run.last_line(), Some("second line"));
    assert_eq!(
        run.tool_calls["t"],
        json!({"toolCallId": "t", "title": "Read", "status": "completed", "rawOutput": "ok"})
    );
    assert_eq!(run.plan.as_ref().unwrap()["entries"], json!([]));
    // A non-text message chunk marks the run incomplete.
    assert!(run.output_incomplete);
    assert_eq!(run.parent_run_id, Some(None));
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
    assert_eq!(runs["b"].parent_run_id, Some(Some("a".into())));
    assert_eq!(runs["c"].parent_run_id, None);
    assert_eq!(runs["d"].parent_run_id, None);
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
        Some(None)
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
    // An omitted `background` is not reported, not zero.
    assert_eq!(a.background_task_count, Some(2));
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
    assert_eq!(s["grandchild"].parent_run_id, Some(Some("child".into())));
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

// ---------------------------------------------------------------------------
// Compaction, notices

#[test]
fn compaction_and_notices_map_from_both_dialects() {
    let meta_activity = json!({"lody": {"activity": {"version": 1, "kind": "context_compaction"}}});
    let extension = fold(&[
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Compacting",
                "status": "in_progress", "_meta": meta_activity}),
            ),
        ),
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed"}),
            ),
        ),
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "session_info_update",
                "_meta": {"lody": {"notice": {"level": "warning", "message": "slow down"}}}}),
            ),
        ),
    ])
    .0;
    let standard = fold(&[
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "in_progress"}),
            ),
        ),
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "compaction_summary_chunk", "compactionId": "c1",
                "content": {"type": "text", "text": "summary"}}),
            ),
        ),
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "completed"}),
            ),
        ),
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "notice", "severity": "warning", "title": "slow down"}),
            ),
        ),
    ])
    .0;
    let (e, s) = (
        extension.session("s").unwrap(),
        standard.session("s").unwrap(),
    );
    for x in [e, s] {
        let a = &x.activities["c1"];
        assert_eq!(serde_json::to_value(a.kind).unwrap(), "context_compaction");
        assert_eq!(a.status.as_deref(), Some("completed"));
        assert_eq!(x.notices.len(), 1);
        assert_eq!(x.notices[0].message, "slow down");
        assert_eq!(serde_json::to_value(x.notices[0].level).unwrap(), "warning");
    }
    assert_eq!(s.activities["c1"].summary.as_deref(), Some("summary"));
    assert_eq!(
        (e.activities["c1"].dialect, s.activities["c1"].dialect),
        (Dialect::Extension, Dialect::Standard)
    );
}

#[test]
fn unknown_session_updates_are_changes_and_sdk_notifications_fold() {
    let mut state = ConnectionState::new();
    let changes = state.message(
        A2C,
        &update("s", json!({"sessionUpdate": "async_widget_update", "x": 1})),
    );
    assert!(matches!(&changes[..], [Change::Invalid(i)]
        if i.rule == "unknown-session-update" && i.pointer == "/params/update/sessionUpdate"));
    // The same through the raw entry point an SDK client uses when its
    // typed update fails to decode.
    let changes =
        state.raw_session_update(&json!({"sessionId": "s", "update": {"sessionUpdate": "x"}}));
    assert!(matches!(&changes[..], [Change::Invalid(_)]));
    use agent_client_protocol::v1::schema::{
        SessionInfoUpdate, SessionNotification, SessionUpdate,
    };
    let n = SessionNotification::new(
        "s",
        SessionUpdate::SessionInfoUpdate(SessionInfoUpdate::new().title("Typed")),
    );
    let changes = state.session_notification(&n);
    assert_eq!(
        changes,
        [Change::Title {
            session_id: "s".into()
        }]
    );
    assert_eq!(state.session("s").unwrap().title.as_deref(), Some("Typed"));
    let changes = state.line(A2C, "{not json");
    assert!(matches!(&changes[..], [Change::Invalid(i)] if i.rule == "not-json"));
}

// ---------------------------------------------------------------------------
// Usage

fn usage_update(sid: &str, scope: Option<&str>, input: u64, cost: Option<f64>) -> Value {
    let mut row = json!({"inputTokens": input, "outputTokens": 1, "cacheReadInputTokens": 0});
    if let Some(c) = cost {
        row["costUSD"] = json!(c);
    }
    let mut p = json!({"sessionId": sid, "usage": row, "modelUsage": {"m": row}});
    if let Some(s) = scope {
        p["_meta"] = json!({"lody": {"usageScopeId": s}});
    }
    notify("_lody/session/usage_update", p)
}

#[test]
fn usage_scopes_sum_never_add_delta_and_report_decreases() {
    let mut delta = usage_update("s", Some("a"), 30, Some(0.3));
    delta["params"]["delta"] = json!({"usage": {"inputTokens": 20, "outputTokens": 0, "cacheReadInputTokens": 0},
        "modelUsage": {"m": {"inputTokens": 20, "outputTokens": 0, "cacheReadInputTokens": 0}}});
    let (mut state, _) = fold(&[
        (A2C, usage_update("s", Some("a"), 10, Some(0.1))),
        (A2C, delta),
        (A2C, usage_update("s", Some("b"), 5, None)),
    ]);
    let u = &state.session("s").unwrap().usage;
    assert_eq!(u.scopes.keys().collect::<Vec<_>>(), ["scope:a", "scope:b"]);
    assert_eq!(u.scopes["scope:a"].model_usage["m"].input_tokens.get(), 30);
    assert!(u.scopes["scope:a"].delta.is_some());
    // 30 + 5, not 30 + 20 + 5; scope b's cost is unknown, so the total's is.
    assert_eq!(u.totals["m"].input_tokens.get(), 35);
    assert_eq!(u.totals["m"].cost_usd, None);
    assert_eq!(invalid_rules(&state), Vec::<String>::new());
    // A total that falls is reported and marks the scope incomplete.
    let changes = state.message(A2C, &usage_update("s", Some("b"), 4, None));
    assert!(changes.iter().any(|c| matches!(c, Change::Invalid(i)
        if i.rule == "usage-total-decreased" && i.pointer == "/params/modelUsage/m/inputTokens")));
    assert!(state.session("s").unwrap().usage.scopes["scope:b"].incomplete);
    // Scope a comes back after b began: reported.
    state.message(A2C, &usage_update("s", Some("a"), 31, Some(0.31)));
    assert_eq!(
        invalid_rules(&state).last().unwrap(),
        "usage-scope-reentered"
    );
    // Standard usage_update is context occupancy only.
    state.message(
        A2C,
        &update(
            "s",
            json!({"sessionUpdate": "usage_update", "used": 1200, "size": 200000,
            "cost": {"amount": 0.5, "currency": "USD"}}),
        ),
    );
    let c = state.session("s").unwrap().usage.context.clone().unwrap();
    assert_eq!((c.used, c.size), (1200, 200000));
    // a's 31 and b's 5: b's fall to 4 was not believed.
    assert_eq!(
        state.session("s").unwrap().usage.totals["m"]
            .input_tokens
            .get(),
        36
    );
}

#[test]
fn the_total_sums_cumulative_model_usage_never_the_operations() {
    // Three operations of 100, 200 and 50 input tokens, as an accumulator
    // reports them: `usage` is each operation, `modelUsage` the running total.
    let op = |usage: u64, total: u64| {
        notify(
            "_lody/session/usage_update",
            json!({"sessionId": "s",
                "usage": {"inputTokens": usage, "outputTokens": 0, "cacheReadInputTokens": 0},
                "modelUsage": {"a": {"inputTokens": total, "outputTokens": 0, "cacheReadInputTokens": 0, "costUSD": 0.01}}}),
        )
    };
    let (state, _) = fold(&[(A2C, op(100, 100)), (A2C, op(200, 300)), (A2C, op(50, 350))]);
    let u = &state.session("s").unwrap().usage;
    let total = u.total.as_ref().unwrap();
    assert_eq!(total.input_tokens.get(), 350);
    assert_eq!(total.cost_usd.map(|c| c.get()), Some(0.01));
    assert_eq!(u.unattributed, None);
    assert!(!u.scopes["session"].incomplete);
}

#[test]
fn an_update_without_model_usage_is_kept_apart_and_marks_the_scope() {
    let bare = notify(
        "_lody/session/usage_update",
        json!({"sessionId": "s", "usage": {"inputTokens": 500, "outputTokens": 5, "cacheReadInputTokens": 0}}),
    );
    let (state, _) = fold(&[(A2C, usage_update("s", None, 10, Some(0.1))), (A2C, bare)]);
    let u = &state.session("s").unwrap().usage;
    assert_eq!(u.total.as_ref().unwrap().input_tokens.get(), 10);
    assert_eq!(u.unattributed.as_ref().unwrap().input_tokens.get(), 500);
    assert_eq!(u.scopes["session"].unattributed_updates, 1);
    assert!(u.scopes["session"].incomplete);
    // Only unattributed usage: no total at all.
    let (state, _) = fold(&[(
        A2C,
        notify(
            "_lody/session/usage_update",
            json!({"sessionId": "t", "usage": {"inputTokens": 7, "outputTokens": 0, "cacheReadInputTokens": 0}}),
        ),
    )]);
    assert_eq!(state.session("t").unwrap().usage.total, None);
}

#[test]
fn a_falling_counter_keeps_the_maximum_and_the_record_says_so() {
    let (state, changes) = fold(&[
        (A2C, usage_update("s", None, 100, Some(0.5))),
        (A2C, usage_update("s", None, 90, Some(0.4))),
    ]);
    let u = &state.session("s").unwrap().usage;
    assert_eq!(u.totals["m"].input_tokens.get(), 100);
    assert_eq!(u.totals["m"].cost_usd.map(|c| c.get()), Some(0.5));
    assert!(u.scopes["session"].incomplete);
    let record = changes
        .iter()
        .find_map(|c| match c {
            Change::Invalid(i) if i.rule == "usage-total-decreased" => Some(i.clone()),
            _ => None,
        })
        .expect("the fall is recorded");
    assert!(record.folded, "{record:?}");
    assert!(
        record.message.contains("higher value is kept"),
        "{record:?}"
    );
}

#[test]
fn negative_costs_are_rejected_everywhere() {
    let (state, _) = fold(&[(A2C, usage_update("s", None, 10, Some(-0.5)))]);
    assert!(
        invalid_rules(&state).contains(&"finite-non-negative".to_owned()),
        "{:?}",
        invalid_rules(&state)
    );
    assert!(state.session("s").is_none_or(|s| s.usage.total.is_none()));
    // The type and the validator reject it too.
    let row =
        json!({"inputTokens": 1, "outputTokens": 1, "cacheReadInputTokens": 0, "costUSD": -0.5});
    assert!(serde_json::from_value::<acp_extension_core::usage::ModelUsage>(row).is_err());
}

#[test]
fn a_cost_once_seen_is_not_lost() {
    // Core: a later cumulative row without a cost makes the total's cost
    // unknown (as the ledger that sent it says), but the floor stays.
    let (state, _) = fold(&[
        (A2C, usage_update("s", None, 10, Some(0.25))),
        (A2C, usage_update("s", None, 20, None)),
    ]);
    let u = &state.session("s").unwrap().usage;
    assert_eq!(u.total.as_ref().unwrap().cost_usd, None);
    assert_eq!(u.cost_usd_at_least, Some(0.25));
    // Standard: claude's cost rides on a turn's last `usage_update` only.
    let (state, _) = fold(&[
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "usage_update", "used": 10, "size": 100, "cost": {"amount": 0.75, "currency": "USD"}}),
            ),
        ),
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "usage_update", "used": 20, "size": 100}),
            ),
        ),
    ]);
    let c = state.session("s").unwrap().usage.context.clone().unwrap();
    assert_eq!(c.used, 20);
    assert_eq!(c.cost.unwrap()["amount"], 0.75);
}

#[test]
fn turn_usage_and_quota_are_kept_per_turn_and_summed_apart() {
    let prompt = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}]}})
    };
    // codex's spelling, then claude's, then gemini's snake_case.
    let codex = json!({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn",
        "usage": {"totalTokens": 1300, "inputTokens": 200, "cachedReadTokens": 1000, "cachedWriteTokens": 0, "outputTokens": 100, "thoughtTokens": 40},
        "_meta": {"quota": {"token_count": {"totalTokens": 1300, "inputTokens": 200, "cachedInputTokens": 1000, "cacheWriteInputTokens": 5, "outputTokens": 100, "reasoningOutputTokens": 40},
            "model_usage": [{"model": "gpt-5.5", "token_count": {"totalTokens": 1300, "inputTokens": 200}}]}}}});
    let claude = json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn",
        "usage": {"totalTokens": 10, "inputTokens": 4, "outputTokens": 6},
        "_meta": {"quota": {"token_count": {"totalTokens": 10, "cachedWriteTokens": 3}, "model_usage": []}}}});
    let gemini = json!({"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn",
        "_meta": {"quota": {"token_count": {"total_tokens": 7, "input_tokens": 7}, "model_usage": [{"model": "auto", "token_count": {"total_tokens": 7}}]}}}});
    let (state, changes) = fold(&[
        (C2A, prompt(1)),
        (A2C, codex),
        (C2A, prompt(2)),
        (A2C, claude),
        (C2A, prompt(3)),
        (A2C, gemini),
    ]);
    assert!(
        changes
            .iter()
            .any(|c| matches!(c, Change::TurnUsage { .. }))
    );
    let u = &state.session("s").unwrap().usage;
    assert_eq!(u.turns.len(), 3);
    assert_eq!(u.turns[0].usage.as_ref().unwrap()["thoughtTokens"], 40);
    assert_eq!(u.turn_totals.turns, 3);
    assert_eq!(u.turn_totals.usage["totalTokens"], 1310);
    assert_eq!(u.turn_totals.quota["totalTokens"], 1317);
    assert_eq!(u.turn_totals.quota["cacheWriteInputTokens"], 8);
    assert_eq!(u.turn_totals.quota["inputTokens"], 207);
    assert_eq!(u.turn_totals.quota_models["auto"]["totalTokens"], 7);
    // Never mixed with the Core ledger.
    assert_eq!(u.total, None);
    assert!(u.scopes.is_empty());
    // v2: the final idle `state_update` carries the turn's usage.
    let (state, _) = fold(&[(
        A2C,
        update(
            "s",
            json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn",
                "usage": {"totalTokens": 1300, "inputTokens": 200, "outputTokens": 100},
                "_meta": {"quota": {"token_count": null, "model_usage": []}}}),
        ),
    )]);
    let u = &state.session("s").unwrap().usage;
    assert_eq!(u.turn_totals.usage["totalTokens"], 1300);
    assert_eq!(u.turns[0].stop_reason.as_deref(), Some("end_turn"));
    // A counter that is not a count is left out and recorded.
    let (state, _) = fold(&[
        (C2A, prompt(1)),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn", "usage": {"totalTokens": -1, "inputTokens": 2}}}),
        ),
    ]);
    assert_eq!(invalid_rules(&state), ["non-negative-integer"]);
    assert_eq!(
        state.session("s").unwrap().usage.turn_totals.usage["inputTokens"],
        2
    );
}

#[test]
fn claude_rate_limits_ride_on_usage_update() {
    let init = [
        (
            C2A,
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}),
        ),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1, "agentCapabilities": {},
                "agentInfo": {"name": "@agentclientprotocol/claude-agent-acp", "version": "0.101.0"}}}),
        ),
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "usage_update", "used": 53755, "size": 200000,
                "_meta": {"_claude/rateLimit": {"status": "allowed_warning", "resetsAt": 1790092800u64, "rateLimitType": "five_hour", "utilization": 0.91},
                    "_claude/model": "claude-sonnet-4-6"}}),
            ),
        ),
    ];
    let (state, _) = fold(&init);
    let row = &state.rate_limits()["five_hour"];
    assert_eq!(
        row.rate_limit.scope.provider_id,
        "@agentclientprotocol/claude-agent-acp"
    );
    let w = &row.rate_limit.windows[0];
    assert!((w.used_percent.get() - 91.0).abs() < 1e-9);
    assert_eq!(w.window_duration_seconds.map(|s| s.get()), Some(18000.0));
    assert_eq!(
        w.resets_at_epoch_seconds.map(|s| s.get()),
        Some(1790092800.0)
    );
}

#[test]
fn a_rejected_load_or_resume_names_no_session() {
    let (state, changes) = fold(&[
        (
            C2A,
            json!({"jsonrpc": "2.0", "id": 1, "method": "session/resume", "params": {"sessionId": "gone", "cwd": "/"}}),
        ),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32002, "message": "Resource not found"}}),
        ),
        (
            C2A,
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}}),
        ),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "real"}}),
        ),
        (
            C2A,
            json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": "nope", "prompt": []}}),
        ),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "unknown session"}}),
        ),
    ]);
    assert_eq!(state.sessions().keys().collect::<Vec<_>>(), ["real"]);
    assert!(
        changes
            .iter()
            .any(|c| matches!(c, Change::SessionDiscarded { session_id } if session_id == "gone"))
    );
    // A session that had content before a failed resume stays.
    let (state, _) = fold(&[
        (A2C, usage_update("kept", None, 1, None)),
        (
            C2A,
            json!({"jsonrpc": "2.0", "id": 1, "method": "session/resume", "params": {"sessionId": "kept", "cwd": "/"}}),
        ),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32002, "message": "Resource not found"}}),
        ),
    ]);
    assert!(state.session("kept").is_some());
}

#[test]
fn legacy_rate_limits_take_the_provider_from_agent_info_and_codexs_lone_five_hour_is_weekly() {
    let (state, _) = fold(&[
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1, "agentCapabilities": {},
                "agentInfo": {"name": "codex-acp", "version": "1"}}}),
        ),
        (
            A2C,
            notify(
                "_acp_ext:session_rate_limits",
                json!({"planName": "plus", "fiveHour": 12, "sevenDay": null, "fiveHourResetAt": 1767225600u64}),
            ),
        ),
    ]);
    let row = &state.rate_limits()["legacy"];
    assert_eq!(row.rate_limit.scope.provider_id, "codex-acp");
    assert_eq!(
        row.rate_limit.windows[0]
            .window_duration_seconds
            .map(|s| s.get()),
        Some(604800.0)
    );
}

#[test]
fn an_oversized_scope_id_falls_back_to_unscoped() {
    let long = "x".repeat(300);
    let (state, changes) = fold(&[(A2C, usage_update("s", Some(&long), 10, None))]);
    assert!(changes.iter().any(|c| matches!(c, Change::Invalid(i)
        if i.rule == "scope-id-fallback" && i.folded)));
    let u = &state.session("s").unwrap().usage;
    assert_eq!(u.scopes.keys().collect::<Vec<_>>(), ["session"]);
}

#[test]
fn legacy_usage_and_rate_limits_map_onto_the_same_state() {
    let session_new = [
        (
            C2A,
            json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}}),
        ),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s"}}),
        ),
    ];
    let mut legacy = session_new.to_vec();
    legacy.push((
        A2C,
        notify(
            "_acp_ext:session_usage_update",
            json!({"usage": {"inputTokens": 10, "outputTokens": 1, "cacheReadInputTokens": 0, "contextWindow": null},
                "modelUsage": {"m": {"inputTokens": 10, "outputTokens": 1, "cacheReadInputTokens": 0, "costUSD": 0.1, "contextWindow": null}}}),
        ),
    ));
    legacy.push((
        A2C,
        notify(
            "_acp_ext:session_rate_limits",
            json!({"schemaVersion": 2, "planName": "pro", "limitId": "codex",
                "windows": [{"usedPercent": 140, "windowDurationMins": 300, "resetsAt": 1767225600123u64}],
                "apiUnavailable": false}),
        ),
    ));
    let mut extension = session_new.to_vec();
    extension.push((A2C, usage_update("s", None, 10, Some(0.1))));
    extension.push((
        A2C,
        notify(
            "_lody/rate_limits/update",
            json!({"rateLimits": [{"limitId": "codex", "scope": {"providerId": "unknown"}, "planName": "pro",
                "windows": [{"usedPercent": 100, "windowDurationSeconds": 18000, "resetsAtEpochSeconds": 1767225600}]}]}),
        ),
    ));
    let (l, _) = fold(&legacy);
    let (e, _) = fold(&extension);
    // Read, and each recorded as the legacy API an adapter must not send.
    assert_eq!(invalid_rules(&l), ["legacy-method", "legacy-method"]);
    assert!(l.invalid().all(|i| i.folded));
    let (lu, eu) = (
        &l.session("s").unwrap().usage,
        &e.session("s").unwrap().usage,
    );
    assert_eq!(lu.totals, eu.totals);
    assert_eq!(lu.scopes["session"].dialect, Dialect::Legacy);
    let (lr, er) = (&l.rate_limits()["codex"], &e.rate_limits()["codex"]);
    assert_eq!(lr.rate_limit, er.rate_limit);
    assert_eq!(lr.dialect, Dialect::Legacy);
    // Legacy usage before any session: nowhere to put it, reported.
    let (state, _) = fold(&[(
        A2C,
        notify(
            "_acp_ext:session_usage_update",
            json!({"usage": {"inputTokens": 1, "outputTokens": 1, "cacheReadInputTokens": 0}}),
        ),
    )]);
    assert_eq!(invalid_rules(&state), ["legacy-method", "no-session"]);
}

#[test]
fn rate_limits_merge_per_limit_and_replace_within_it() {
    let row = |id: &str, windows: Value| json!({"limitId": id, "scope": {"providerId": "p"}, "windows": windows});
    let w = |pct: u32| json!({"usedPercent": pct, "windowDurationSeconds": 3600, "resetsAtEpochSeconds": null});
    let push = |rows: Value| notify("_ua/rate_limits/update", json!({"rateLimits": rows}));
    let (mut state, _) = fold(&[(
        A2C,
        push(json!([
            row("a", json!([w(1), w(2)])),
            row("b", json!([w(3)]))
        ])),
    )]);
    state.message(A2C, &push(json!([row("a", json!([w(9)]))])));
    state.message(A2C, &push(json!([])));
    let r = state.rate_limits();
    assert_eq!(r.keys().collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(r["a"].rate_limit.windows.len(), 1);
    assert_eq!(r["a"].rate_limit.windows[0].used_percent.get(), 9.0);
    assert_eq!(r["b"].rate_limit.windows[0].used_percent.get(), 3.0);
    // A query result upserts the same way.
    state.message(
        C2A,
        &json!({"jsonrpc": "2.0", "id": 9, "method": "_lody/rate_limits/get", "params": {}}),
    );
    state.message(
        A2C,
        &json!({"jsonrpc": "2.0", "id": 9, "result": {"rateLimits": [row("c", json!([w(5)]))]}}),
    );
    assert_eq!(
        state.rate_limits().keys().collect::<Vec<_>>(),
        ["a", "b", "c"]
    );
    // An older observation does not override a fresher one.
    let at = |t: u64, pct: u32| {
        notify(
            "_lody/rate_limits/update",
            json!({"rateLimits": [row("c", json!([w(pct)]))], "fetchedAtEpochSeconds": t}),
        )
    };
    state.message(A2C, &at(200, 50));
    let changes = state.message(A2C, &at(100, 10));
    assert!(changes.is_empty(), "{changes:?}");
    assert_eq!(
        state.rate_limits()["c"].rate_limit.windows[0]
            .used_percent
            .get(),
        50.0
    );
    state.message(A2C, &at(300, 60));
    assert_eq!(
        state.rate_limits()["c"].rate_limit.windows[0]
            .used_percent
            .get(),
        60.0
    );
    // A failed query keeps the data, marked stale; a fresh row clears it.
    state.message(
        C2A,
        &json!({"jsonrpc": "2.0", "id": 10, "method": "_lody/rate_limits/get", "params": {}}),
    );
    state.message(
        A2C,
        &json!({"jsonrpc": "2.0", "id": 10, "error": {"code": -32603, "message": "upstream down"}}),
    );
    let r = state.rate_limits();
    assert!(r.values().all(|e| e.stale));
    assert_eq!(r["c"].rate_limit.windows[0].used_percent.get(), 60.0);
    state.message(A2C, &at(400, 61));
    assert!(!state.rate_limits()["c"].stale);
    assert!(state.rate_limits()["a"].stale);
}

// ---------------------------------------------------------------------------
// Steering and pending requests

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
    assert_eq!(outcome(&state, "ok"), SteerOutcome::Applied);
    assert_eq!(outcome(&state, "refused"), SteerOutcome::Refused);
    assert_eq!(outcome(&state, "failed"), SteerOutcome::Failed);
    assert_eq!(outcome(&state, "lost"), SteerOutcome::Pending);
    state.disconnected();
    assert_eq!(outcome(&state, "lost"), SteerOutcome::Unknown);
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
    assert_eq!(steers["injected"].outcome, SteerOutcome::Unknown);
    assert_eq!(steers["applied"].outcome, SteerOutcome::Applied);
    assert_eq!(steers["by-prompt"].outcome, SteerOutcome::Unknown);
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

// ---------------------------------------------------------------------------
// Bounded mode and the document schema

#[test]
fn bounded_mode_stays_within_its_caps() {
    let mut state = ConnectionState::bounded();
    let limits = state.limits();
    for i in 0..(limits.sessions + 10) {
        state.message(A2C, &snapshot(&format!("s{i}"), "r", "running"));
    }
    for i in 0..(limits.runs_per_session + 10) {
        state.message(A2C, &snapshot("s0", &format!("r{i}"), "running"));
    }
    let big = "y".repeat(1000);
    for _ in 0..100 {
        state.message(A2C, &output("s0", "r5000", text(&big)));
        state.message(
            A2C,
            &output("s0", &format!("r{}", limits.runs_per_session), text(&big)),
        );
    }
    for _ in 0..(limits.invalid + 10) {
        state.line(A2C, "not json");
    }
    assert!(state.sessions().len() <= limits.sessions);
    let s0 = state.session("s0").unwrap();
    assert!(s0.subagent_runs.len() <= limits.runs_per_session);
    let run = &s0.subagent_runs[&format!("r{}", limits.runs_per_session)];
    assert!(run.text.len() <= limits.text_per_run && run.text.len() > 60_000);
    assert_eq!(state.invalid().len(), limits.invalid);
    assert!(state.invalid_count() > limits.invalid as u64);
    let t = state.tracked();
    assert!(t.sessions <= limits.sequence.sessions);
}

#[test]
fn the_json_document_matches_its_schema() {
    let mut state = ConnectionState::new();
    init(
        &mut state,
        json!({"sessionTitle": {"version": 1}, "subagentEvents": {"version": 1}}),
        json!({"subagentEvents": {"version": 1}}),
    );
    for m in [
        snapshot("s", "r", "running"),
        output("s", "r", text("hi")),
        usage_update("s", None, 3, Some(0.01)),
        title("s", json!("T"), Some("explicit")),
        goal("s", Some(json!({"objective": "o", "status": "active"}))),
        update("s", json!({"sessionUpdate": "bogus"})),
    ] {
        state.message(A2C, &m);
    }
    let mut doc = serde_json::to_value(&state).unwrap();
    doc["file"] = json!("x.jsonl");
    for key in [
        "negotiation",
        "sessions",
        "rateLimits",
        "invalid",
        "invalidCount",
    ] {
        assert!(doc.get(key).is_some(), "{key} missing: {doc}");
    }
    let s = &doc["sessions"]["s"];
    for key in [
        "title",
        "titleSource",
        "goal",
        "activity",
        "subagentRuns",
        "tasks",
        "usage",
    ] {
        assert!(s.get(key).is_some(), "{key} missing: {s}");
    }
    assert_eq!(s["subagentRuns"]["r"]["snapshot"]["state"], "running");
    let schema = serde_json::to_value(document_schema()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    // And it rejects what is not a state document.
    assert!(!validator.is_valid(&json!({"file": 1})));
}

// ---------------------------------------------------------------------------
// Properties: the emitter's runs and the accumulator's totals come back

#[derive(Debug, Clone)]
enum Op {
    Start(u8, bool),
    Patch(u8, u8),
    Progress(u8, u8, Option<u32>),
    Text(u8, String),
    Tool(u8, u8, bool),
    Disconnect,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..3u8, any::<bool>()).prop_map(|(n, t)| Op::Start(n, t)),
        (0..3u8, 0..5u8).prop_map(|(n, s)| Op::Patch(n, s)),
        (0..3u8, 0..3u8, proptest::option::of(0..100u32))
            .prop_map(|(n, k, v)| Op::Progress(n, k, v)),
        (0..3u8, "[a-z \n]{0,8}").prop_map(|(n, t)| Op::Text(n, t)),
        (0..3u8, 0..3u8, any::<bool>()).prop_map(|(n, t, done)| Op::Tool(n, t, done)),
        Just(Op::Disconnect),
    ]
}

fn state_name(i: u8) -> SubagentState {
    [
        SubagentState::Pending,
        SubagentState::Running,
        SubagentState::Completed,
        SubagentState::Failed,
        SubagentState::Cancelled,
    ][i as usize % 5]
}

fn counter() -> impl FnMut() -> String + Send + Sync + 'static {
    let mut n = 0;
    move || {
        n += 1;
        format!("run-{n}")
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn folding_the_emitters_events_gives_back_its_runs(ops in proptest::collection::vec(op(), 0..40)) {
        let mut e = SubagentEmitter::new("s", Vec::<EmittedEvent>::new()).with_id_generator(counter());
        let support = SubagentSupport::new(vec![SubagentStream::Text, SubagentStream::Tool], true, OutputRead::None, false);
        block_on(async {
            for op in &ops {
                let native = |n: &u8| format!("native-{n}");
                match op {
                    Op::Start(n, terminal) => {
                        let state = if *terminal { SubagentState::Completed } else { SubagentState::Running };
                        let snap = SubagentSnapshot::new(state, support.clone()).name(format!("w{n}")).parent_run_id(None);
                        e.start(native(n), snap).await.unwrap();
                    }
                    Op::Patch(n, s) => {
                        let patch = acp_extension_core::subagent_emitter::SnapshotPatch::new().state(state_name(*s));
                        e.snapshot(&native(n), patch).await.unwrap();
                    }
                    Op::Progress(n, k, v) => {
                        let key = ["summary", "turnCount", "toolCallCount"][*k as usize];
                        let value = match (k, v) {
                            (_, None) => Value::Null,
                            (0, Some(v)) => json!(format!("s{v}")),
                            (_, Some(v)) => json!(v),
                        };
                        e.progress_value(&native(n), json!({key: value})).await.unwrap();
                    }
                    Op::Text(n, t) => {
                        e.output_value(&native(n), text(t), OutputIds::new()).await.unwrap();
                    }
                    Op::Tool(n, t, done) => {
                        let u = if *done {
                            json!({"sessionUpdate": "tool_call_update", "toolCallId": format!("t{t}"), "status": "completed"})
                        } else {
                            json!({"sessionUpdate": "tool_call", "toolCallId": format!("t{t}"), "title": "x", "status": "pending"})
                        };
                        e.output_value(&native(n), u, OutputIds::new()).await.unwrap();
                    }
                    Op::Disconnect => e.disconnect().await.unwrap(),
                }
            }
        });
        let events: Vec<Value> = e.sink().iter().map(|ev| ev.as_value().clone()).collect();
        let mut state = ConnectionState::new();
        for ev in &events {
            state.message(A2C, &notify("_lody/subagents/event", ev.clone()));
        }
        prop_assert_eq!(state.invalid_count(), 0, "{:?}", state.invalid().collect::<Vec<_>>());
        // An independent model of each run, from the event list.
        let mut last_snapshot: IndexMap<String, Value> = IndexMap::new();
        let mut texts: IndexMap<String, String> = IndexMap::new();
        let mut ended: std::collections::HashSet<String> = Default::default();
        let mut progress: IndexMap<String, serde_json::Map<String, Value>> = IndexMap::new();
        let mut tools: IndexMap<String, IndexMap<String, Value>> = IndexMap::new();
        for ev in &events {
            let run = ev["runId"].as_str().unwrap().to_owned();
            match ev["type"].as_str().unwrap() {
                "snapshot" => { last_snapshot.insert(run, ev["snapshot"].clone()); }
                "progress" => {
                    let p = progress.entry(run).or_default();
                    for (k, v) in ev["progress"].as_object().unwrap() {
                        if v.is_null() { p.remove(k); } else { p.insert(k.clone(), v.clone()); }
                    }
                }
                _ => {
                    let u = &ev["update"];
                    if u["sessionUpdate"] == "agent_message_chunk" {
                        let t = u["content"]["text"].as_str().unwrap();
                        let text = texts.entry(run.clone()).or_default();
                        // A message after a tool call starts a new line.
                        if !t.is_empty() && ended.remove(&run) && !text.is_empty()
                            && !text.ends_with('\n') && !t.starts_with('\n') {
                            text.push('\n');
                        }
                        text.push_str(t);
                    } else {
                        ended.insert(run.clone());
                        let id = u["toolCallId"].as_str().unwrap().to_owned();
                        let row = tools.entry(run).or_default().entry(id).or_insert(json!({}));
                        for (k, v) in u.as_object().unwrap() {
                            if k != "sessionUpdate" { row[k] = v.clone(); }
                        }
                    }
                }
            }
        }
        let runs = state.session("s").map(|s| s.subagent_runs.clone()).unwrap_or_default();
        prop_assert_eq!(runs.keys().collect::<Vec<_>>(), last_snapshot.keys().collect::<Vec<_>>());
        for (run_id, snap) in &last_snapshot {
            let got = &runs[run_id];
            prop_assert_eq!(&serde_json::to_value(&got.snapshot).unwrap(), snap);
            prop_assert_eq!(&got.text, texts.get(run_id).map_or("", String::as_str));
            prop_assert_eq!(&got.progress, &progress.get(run_id).cloned().unwrap_or_default());
            let want_tools = tools.get(run_id).cloned().unwrap_or_default();
            prop_assert_eq!(&got.tool_calls, &want_tools);
        }
        // And the emitter's current runs are among them, with its snapshot.
        for (_, run) in e.runs() {
            prop_assert_eq!(&serde_json::to_value(&runs[&run.run_id].snapshot).unwrap(), &run.snapshot);
        }
    }

    #[test]
    fn folding_the_accumulators_updates_gives_back_its_totals(
        mut steps in proptest::collection::vec((0..2usize, 0..3u8, 0..3u8, 0..1000u64, proptest::option::of(0..100u32)), 1..30)
    ) {
        // Scopes follow each other (a scope never comes back once another
        // began), so scope a's updates come first.
        steps.sort_by_key(|s| s.0);
        let mut accs = [
            SessionUsageAccumulator::with_scope_id("turn-a").unwrap(),
            SessionUsageAccumulator::with_scope_id("turn-b").unwrap(),
        ];
        let mut last: [Option<IndexMap<String, ModelUsage>>; 2] = [None, None];
        let mut state = ConnectionState::new();
        // The session start is seen, so every delta is judged from zero.
        state.message(C2A, &json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}}));
        state.message(A2C, &json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s"}}));
        for (scope, op, model, input, cost) in steps {
            let mut row = ModelUsage::new(input, input / 2, 0u64);
            if let Some(c) = cost {
                row = row.cost_usd(acp_extension_core::wire::NonNegF64::new(f64::from(c) / 100.0).unwrap());
            }
            let mut rows = IndexMap::new();
            rows.insert(format!("m{model}"), row);
            if let Some(u) = accs[scope].update("s", &format!("op{op}"), &rows) {
                last[scope] = u.model_usage.clone();
                let params = serde_json::to_value(&u).unwrap();
                state.message(A2C, &notify("_lody/session/usage_update", params));
            }
        }
        prop_assert_eq!(state.invalid_count(), 0, "{:?}", state.invalid().collect::<Vec<_>>());
        let Some(s) = state.session("s") else { return Ok(()) };
        for (i, id) in ["turn-a", "turn-b"].iter().enumerate() {
            let got = s.usage.scopes.get(&format!("scope:{id}")).map(|x| x.model_usage.clone());
            prop_assert_eq!(got, last[i].clone());
        }
        // Totals: per model, the sum of both scopes; a cost only when every
        // scope reporting the model knows it.
        let mut want: IndexMap<String, (u64, Option<f64>)> = IndexMap::new();
        for rows in last.iter().flatten() {
            for (m, r) in rows {
                let e = want.entry(m.clone()).or_insert((0, Some(0.0)));
                e.0 += r.input_tokens.get();
                e.1 = match (e.1, r.cost_usd) { (Some(a), Some(b)) => Some(a + b.get()), _ => None };
            }
        }
        prop_assert_eq!(s.usage.totals.len(), want.len());
        for (m, (input, cost)) in want {
            let t = &s.usage.totals[&m];
            prop_assert_eq!(t.input_tokens.get(), input);
            match (t.cost_usd.map(|c| c.get()), cost) {
                (Some(a), Some(b)) => prop_assert!((a - b).abs() < 1e-9, "{} vs {}", a, b),
                (a, b) => prop_assert_eq!(a, b),
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Accounting

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

// ---------------------------------------------------------------------------
// Vendor and official dialects

fn info_update(sid: &str, meta: Value) -> Value {
    update(
        sid,
        json!({"sessionUpdate": "session_info_update", "_meta": meta}),
    )
}

fn agent_named(name: &str) -> (Direction, Value) {
    (
        A2C,
        json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1, "agentCapabilities": {},
            "agentInfo": {"name": name, "version": "1"}, "_meta": {"steering": {"supported": true}}}}),
    )
}

#[test]
fn goals_from_every_carrier_with_milliseconds_converted() {
    // AIR's snapshot: milliseconds, `controlMethod`.
    let (state, _) = fold(&[(
        A2C,
        info_update(
            "s",
            json!({"jetbrains": {"air": {"version": 1, "goal": {"objective": "Make CI green", "status": "active",
                "tokenBudget": null, "tokensUsed": 0, "timeUsedSeconds": 0, "createdAt": 1790000000000u64,
                "updatedAt": 1790000000999u64, "controlMethod": "_session/goal"}}}}),
        ),
    )]);
    let g = state.session("s").unwrap().current_goal().unwrap().clone();
    assert_eq!(g.objective, "Make CI green");
    assert_eq!(
        g.created_at_epoch_seconds.map(|t| t.get()),
        Some(1790000000.0)
    );
    assert_eq!(
        g.updated_at_epoch_seconds.map(|t| t.get()),
        Some(1790000000.0)
    );
    // codex's own key, with its statuses; `cleared` clears.
    let (state, _) = fold(&[
        agent_named("@agentclientprotocol/codex-acp"),
        (
            A2C,
            info_update(
                "s",
                json!({"codex": {"goal": {"objective": "x", "status": "budgetLimited"}}}),
            ),
        ),
    ]);
    assert_eq!(
        serde_json::to_value(state.session("s").unwrap().current_goal().unwrap().status).unwrap(),
        "limited"
    );
    let (state, _) = fold(&[(
        A2C,
        info_update(
            "s",
            json!({"codex": {"goal": {"objective": "x", "status": "cleared"}}}),
        ),
    )]);
    assert_eq!(state.session("s").unwrap().goal, Some(None));
    // The legacy top-level key, and the contract's wins over it.
    let (state, _) = fold(&[(
        A2C,
        info_update(
            "s",
            json!({"goal": {"objective": "legacy", "status": "active"},
                "lody": {"goal": {"objective": "core", "status": "paused"}}}),
        ),
    )]);
    assert_eq!(
        state
            .session("s")
            .unwrap()
            .current_goal()
            .unwrap()
            .objective,
        "core"
    );
    // Another vendor's key is not read from an agent that is not theirs.
    let (state, _) = fold(&[
        agent_named("@agentclientprotocol/claude-agent-acp"),
        (
            A2C,
            info_update(
                "s",
                json!({"codex": {"goal": {"objective": "x", "status": "active"}}}),
            ),
        ),
    ]);
    assert!(state.session("s").is_none_or(|s| s.goal.is_none()));
}

#[test]
fn codex_title_source_phase_and_thread_status() {
    let (state, _) = fold(&[
        agent_named("@agentclientprotocol/codex-acp"),
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "session_info_update", "title": "Fix CI", "_meta": {"codex": {"titleSource": "explicit",
                    "threadStatus": {"type": "active", "activeFlags": []}}}}),
            ),
        ),
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "session_info_update", "title": "draft", "_meta": {"codex": {"titleSource": "unset"}}}),
            ),
        ),
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"},
                    "_meta": {"codex": {"phase": "final_answer"}}}),
            ),
        ),
    ]);
    let s = state.session("s").unwrap();
    // `unset` never clears an accepted title.
    assert_eq!(s.title.as_deref(), Some("Fix CI"));
    assert_eq!(s.title_source, Some(TitleOrigin::Explicit));
    assert_eq!(s.turns.message_phase.as_deref(), Some("final_answer"));
    assert_eq!(serde_json::to_value(s.activity.state).unwrap(), "running");
    assert!(
        state
            .negotiation()
            .agent
            .vendor
            .contains_key("_meta.steering")
    );
}

#[test]
fn official_steering_and_vendor_steer_ids() {
    let steer = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "_session/steering",
            "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "use the helper"}]}})
    };
    let (state, _) = fold(&[
        (C2A, steer(12)),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 12, "result": {"outcome": "injected"}}),
        ),
        (C2A, steer(13)),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 13, "result": {"outcome": "startedNewTurn"}}),
        ),
        (C2A, steer(14)),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 14, "result": {"outcome": "promptRequired", "reason": "noRunningTurn"}}),
        ),
        (C2A, steer(15)),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 15, "result": {"outcome": "failed"}}),
        ),
        (
            C2A,
            json!({"jsonrpc": "2.0", "id": 16, "method": "session/prompt", "params": {"sessionId": "s", "prompt": [],
                "_meta": {"claudeCode": {"steer": {"id": "st-claude"}}}}}),
        ),
    ]);
    let steers = &state.session("s").unwrap().steers;
    let outcome = |id: &str| steers[id].outcome;
    assert_eq!(outcome("request:12"), SteerOutcome::Injected);
    assert_eq!(outcome("request:13"), SteerOutcome::StartedNewTurn);
    assert_eq!(outcome("request:14"), SteerOutcome::PromptRequired);
    assert_eq!(outcome("request:15"), SteerOutcome::Failed);
    assert_eq!(steers["request:12"].transport, "session/steering");
    assert_eq!(steers["st-claude"].transport, "prompt");
}

#[test]
fn vendor_task_lifecycles_and_air_async_tasks_are_task_rows() {
    let (state, _) = fold(&[
        (
            A2C,
            notify(
                "_claude/taskLifecycle",
                json!({"sessionId": "s", "message": {"subtype": "task_started", "task_id": "t1",
                    "description": "run tests", "subagent_type": "tester", "tool_use_id": "toolu_1"}}),
            ),
        ),
        (
            A2C,
            notify(
                "_kimi/taskLifecycle",
                json!({"sessionId": "k", "acpSessionId": "s", "message": {"subtype": "task_notification", "task_id": "t1",
                    "status": "succeeded", "summary": "all green", "is_backgrounded": true}}),
            ),
        ),
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "async_task_spawned", "asyncTaskId": "call_9", "name": "npm run dev",
                    "taskType": "shell", "showInTranscript": false, "canStop": true, "toolCallId": "call_9"}),
            ),
        ),
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "_async_task_state_update", "asyncTaskId": "call_9", "state": "stopped"}),
            ),
        ),
    ]);
    assert_eq!(invalid_rules(&state), Vec::<String>::new());
    let tasks = &state.session("s").unwrap().tasks;
    let t1 = &tasks["t1"];
    assert_eq!(t1.tool_call_id, "task:t1");
    let w = serde_json::to_value(&t1.task).unwrap();
    assert_eq!(w["status"], "completed");
    assert_eq!(w["kind"], "background");
    assert_eq!(w["actor"], "tester");
    assert_eq!(w["summary"], "all green");
    let shell = serde_json::to_value(&tasks["call_9"].task).unwrap();
    assert_eq!(shell["status"], "failed");
    assert_eq!(shell["description"], "npm run dev");
    assert_eq!(shell["skipTranscript"], true);
}

#[test]
fn claudes_compaction_summary_is_content_blocks() {
    let (state, _) = fold(&[
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "in_progress"}),
            ),
        ),
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "completed",
                    "summary": [{"type": "text", "text": "We fixed the build."}]}),
            ),
        ),
    ]);
    let e = &state.session("s").unwrap().activities["c1"];
    assert_eq!(e.summary.as_deref(), Some("We fixed the build."));
    assert_eq!(e.status.as_deref(), Some("completed"));
}

#[test]
fn millisecond_times_are_read_as_seconds_and_recorded() {
    let (state, changes) = fold(&[(
        A2C,
        goal(
            "s",
            Some(
                json!({"objective": "ship", "status": "active", "createdAtEpochSeconds": 1790000000999u64}),
            ),
        ),
    )]);
    let g = state.session("s").unwrap().current_goal().unwrap().clone();
    assert_eq!(
        g.created_at_epoch_seconds.map(|t| t.get()),
        Some(1790000000.0)
    );
    let record = changes
        .iter()
        .find_map(|c| match c {
            Change::Invalid(i) if i.rule == "epoch-milliseconds" => Some(i.clone()),
            _ => None,
        })
        .expect("recorded");
    assert!(record.folded);
    assert_eq!(
        record.pointer,
        "/params/update/_meta/lody/goal/createdAtEpochSeconds"
    );
    // A placeholder zero is recorded and kept.
    let (state, _) = fold(&[(
        A2C,
        goal(
            "s",
            Some(json!({"objective": "ship", "status": "active", "createdAtEpochSeconds": 0})),
        ),
    )]);
    assert_eq!(invalid_rules(&state), ["epoch-zero"]);
}

#[test]
fn kimis_compatibility_key_stands_for_subagents() {
    let (state, _) = fold(&[(
        A2C,
        json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1, "agentCapabilities": {
            "_meta": {"lody.ai/kimi": {"protocolVersion": 1, "features": {"subagentLifecycle": true, "subagentManagement": true}}}}}}),
    )]);
    let sub = &state.negotiation().agent.features["subagents"];
    assert_eq!(sub["lifecycle"], true);
    assert_eq!(sub["list"], true);
    // The contract's own key wins.
    let (state, _) = fold(&[(
        A2C,
        json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1, "agentCapabilities": {
            "_meta": {"lody": {"subagents": {"version": 1, "lifecycle": true}},
                "lody.ai/kimi": {"protocolVersion": 1, "features": {"subagentManagement": true}}}}}}),
    )]);
    // The contract's says `lifecycle` only; kimi's management would add `list`.
    let sub = &state.negotiation().agent.features["subagents"];
    assert_eq!(sub["lifecycle"], true);
    assert!(sub.get("list").is_none(), "{sub}");
}

#[test]
fn a_v2_initialize_response_is_read_without_its_request() {
    let (state, _) = fold(&[(
        A2C,
        json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 2,
            "info": {"name": "@agentclientprotocol/claude-agent-acp", "version": "0.101.0"},
            "capabilities": {"session": {}, "_meta": {"ua": {"usage": {"version": 1}}}},
            "authMethods": []}}),
    )]);
    let agent = &state.negotiation().agent;
    assert!(agent.seen);
    assert!(agent.features.contains_key("usage"), "{agent:?}");
    assert_eq!(
        agent.info.as_ref().unwrap()["name"],
        "@agentclientprotocol/claude-agent-acp"
    );
}

#[test]
fn a_capability_fragment_is_not_session_metadata() {
    assert!(
        resembles(&json!({"_meta": {"lody": {"subagentEvents": {"version": 1}}}}))
            .is_some_and(|s| s.contains("capability"))
    );
    // Session metadata stays what it is.
    assert_eq!(
        resembles(&json!({"_meta": {"lody": {"turnId": "t1"}}})),
        None
    );
}

#[test]
fn extension_requests_that_change_nothing_are_seen() {
    let mut state = ConnectionState::new();
    for (id, method, params) in [
        (
            1,
            "_lody/session/goal",
            json!({"sessionId": "s", "action": "pause"}),
        ),
        (2, "_ua/rate_limits/get", json!({})),
        (
            3,
            "_session/goal",
            json!({"sessionId": "s", "action": "set", "objective": "x"}),
        ),
        (
            4,
            "_session/async_task/stop",
            json!({"sessionId": "s", "asyncTaskId": "t"}),
        ),
    ] {
        let changes = state.message(
            C2A,
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        );
        assert!(
            matches!(&changes[..], [Change::Seen { method: Some(m) }] if m == method),
            "{method}: {changes:?}"
        );
    }
    let a = state.accounting();
    assert_eq!((a.values, a.folded, a.recorded), (4, 4, 0));
}
