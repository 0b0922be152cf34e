//! Titles, goals, activity, turns, tasks

use super::*;

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
    assert!(state.session("s").unwrap().goal.is_null());
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
