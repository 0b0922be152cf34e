//! An ACP v2 connection folded by v2's rules: the prompt's answer is a
//! receipt, an `idle` `state_update` ends the turn with its stop reason and
//! usage, repeated and resume snapshots count nothing, an unknown or custom
//! state is shown busy, background work is read by type.

use super::*;

fn v2_init() -> [(Direction, Value); 2] {
    [
        (
            C2A,
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": 2, "capabilities": {}, "info": {"name": "c"}}}),
        ),
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 2,
                "capabilities": {}, "info": {"name": "a", "version": "1"}}}),
        ),
    ]
}

fn prompt(id: u64) -> (Direction, Value) {
    (
        C2A,
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}]}}),
    )
}

fn answer(id: u64, result: Value) -> (Direction, Value) {
    (A2C, json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

fn state(s: Value) -> (Direction, Value) {
    let mut u = json!({"sessionUpdate": "state_update"});
    u.as_object_mut()
        .unwrap()
        .extend(s.as_object().unwrap().clone());
    (A2C, update("s", u))
}

fn fold_v2(rest: &[(Direction, Value)]) -> ConnectionState {
    let mut all = v2_init().to_vec();
    all.extend_from_slice(rest);
    let (state, _) = fold(&all);
    assert_eq!(state.negotiation().agent.protocol_version, Some(2));
    state
}

#[test]
fn the_receipt_does_not_end_the_turn_the_idle_does() {
    let running = fold_v2(&[
        prompt(1),
        answer(1, json!({"messageId": "m1"})),
        state(json!({"state": "running"})),
    ]);
    let t = &running.session("s").unwrap().turns;
    assert_eq!((t.prompts, t.accepted, t.running), (1, 1, true));
    assert_eq!(t.message_id.as_deref(), Some("m1"));
    assert_eq!(t.last_stop_reason, None);
    assert_eq!(running.accounting().unaccounted(), 0);

    let ended = fold_v2(&[
        prompt(1),
        answer(1, json!({"messageId": "m1"})),
        state(json!({"state": "running"})),
        state(json!({"state": "idle", "stopReason": "max_tokens"})),
    ]);
    let s = ended.session("s").unwrap();
    assert!(!s.turns.running);
    // The stop reason arrives without usage and is kept all the same.
    assert_eq!(s.turns.last_stop_reason.as_deref(), Some("max_tokens"));
    assert!(s.usage.turns.is_empty());
    assert_eq!(s.activity.shown(), Some("idle"));
    assert_eq!(ended.invalid_count(), 0);
}

#[test]
fn an_older_drafts_empty_receipt_on_a_v2_connection_is_a_receipt() {
    let s = fold_v2(&[prompt(1), answer(1, json!({}))]);
    let t = &s.session("s").unwrap().turns;
    assert_eq!(
        (t.accepted, t.running, t.message_id.as_deref()),
        (1, true, None)
    );
    // On a v1 connection the same answer ends the turn.
    let (v1, _) = fold(&[prompt(1), answer(1, json!({}))]);
    assert!(!v1.session("s").unwrap().turns.running);
    // A `{messageId}` receipt is v2's by its shape, initialize or not.
    let (bare, _) = fold(&[prompt(1), answer(1, json!({"messageId": "m"}))]);
    assert!(bare.session("s").unwrap().turns.running);
}

#[test]
fn usage_is_counted_once_repeated_and_resume_snapshots_count_nothing() {
    let idle = json!({"state": "idle", "stopReason": "end_turn",
        "usage": {"totalTokens": 30, "inputTokens": 20, "outputTokens": 10}});
    let s = fold_v2(&[
        prompt(1),
        answer(1, json!({"messageId": "m1"})),
        state(json!({"state": "running"})),
        state(idle.clone()),
        // Repeated: idempotent.
        state(idle.clone()),
        // A resume sends a snapshot before its answer: no new turn either,
        // even after a busy state seen before the resume.
        state(json!({"state": "running"})),
        (
            C2A,
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/resume",
                "params": {"sessionId": "s", "cwd": "/"}}),
        ),
        state(idle.clone()),
        answer(2, json!({})),
        // Then a real second turn.
        prompt(3),
        answer(3, json!({"messageId": "m3"})),
        state(json!({"state": "running"})),
        state(json!({"state": "idle", "stopReason": "end_turn",
            "usage": {"totalTokens": 5, "inputTokens": 4, "outputTokens": 1}})),
    ]);
    let u = &s.session("s").unwrap().usage;
    assert_eq!(u.turn_totals.turns, 2);
    assert_eq!(u.turn_totals.usage["totalTokens"], 35);
    assert_eq!(u.turns.len(), 2);
    assert_eq!(s.accounting().unaccounted(), 0);
}

#[test]
fn unknown_and_custom_states_are_busy_until_a_known_state_arrives() {
    for name in ["unknown", "_compiling", "paused"] {
        let s = fold_v2(&[
            state(json!({"state": "running"})),
            state(json!({"state": name})),
        ]);
        let a = &s.session("s").unwrap().activity;
        assert_eq!(a.state, None, "{name}: the previous level is not confirmed");
        assert_eq!(a.unconfirmed.as_deref(), Some(name));
        assert_eq!(a.shown(), Some("busy"));
        // Then idle ends the work it stood for.
        let s = fold_v2(&[
            state(json!({"state": name})),
            state(json!({"state": "idle", "stopReason": "end_turn"})),
        ]);
        let s = s.session("s").unwrap();
        assert_eq!(s.activity.shown(), Some("idle"));
        assert_eq!(s.activity.unconfirmed, None);
        assert_eq!(s.turns.last_stop_reason.as_deref(), Some("end_turn"));
    }
    // A state update without a state is recorded, not guessed.
    let s = fold_v2(&[state(json!({"background": []}))]);
    assert_eq!(invalid_rules(&s), ["required"]);
}

#[test]
fn cancel_is_confirmed_by_an_idle_cancelled_and_steers_settle_then() {
    let s = fold_v2(&[
        prompt(1),
        answer(1, json!({"messageId": "m1"})),
        state(json!({"state": "running"})),
        (
            C2A,
            json!({"jsonrpc": "2.0", "id": 2, "method": "_lody/session/steer",
                "params": {"sessionId": "s", "prompt": [], "steerId": "st"}}),
        ),
        answer(2, json!({"outcome": "injected"})),
        (
            C2A,
            json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}}),
        ),
    ]);
    let session = s.session("s").unwrap();
    // The receipt came and went: the turn and its steer are still open.
    assert!(session.turns.running);
    assert_eq!(session.steers["st"].outcome, SteerStatus::Injected);
    assert_eq!(invalid_rules(&s), ["not-advertised"]);

    let s = fold_v2(&[
        prompt(1),
        answer(1, json!({"messageId": "m1"})),
        state(json!({"state": "running"})),
        (
            C2A,
            json!({"jsonrpc": "2.0", "id": 2, "method": "_lody/session/steer",
                "params": {"sessionId": "s", "prompt": [], "steerId": "st"}}),
        ),
        answer(2, json!({"outcome": "injected"})),
        (
            C2A,
            json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}}),
        ),
        state(json!({"state": "idle", "stopReason": "cancelled"})),
    ]);
    let session = s.session("s").unwrap();
    assert!(!session.turns.running);
    assert_eq!(session.turns.last_stop_reason.as_deref(), Some("cancelled"));
    assert_eq!(session.steers["st"].outcome, SteerStatus::Unknown);
    // The sequence rule saw the turn end at the idle, not at the receipt
    // (and the steer was sent without the agent advertising steering).
    assert_eq!(invalid_rules(&s), ["not-advertised", "steer-not-applied"]);
}

#[test]
fn a_rejected_prompt_ends_the_turn_only_when_no_work_was_reported() {
    let error = |id: u64| {
        (
            A2C,
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "no"}}),
        )
    };
    let new = [
        (
            C2A,
            json!({"jsonrpc": "2.0", "id": 9, "method": "session/new", "params": {"cwd": "/"}}),
        ),
        answer(9, json!({"sessionId": "s"})),
    ];
    let s = fold_v2(&[new[0].clone(), new[1].clone(), prompt(1), error(1)]);
    let t = &s.session("s").unwrap().turns;
    assert_eq!(
        (t.running, t.last_stop_reason.as_deref()),
        (false, Some("error"))
    );

    let s = fold_v2(&[prompt(1), state(json!({"state": "running"})), error(1)]);
    assert!(s.session("s").unwrap().turns.running);
    assert_eq!(s.accounting().unaccounted(), 0);
}

#[test]
fn background_work_is_read_by_type() {
    let s = fold_v2(&[
        state(json!({"state": "running", "background": [
            {"type": "terminal", "terminalId": "t1"},
            {"type": "terminal", "terminalId": "t2"},
            {"type": "tool_call", "toolCallId": "c"},
            {"type": "subagent", "sessionId": "child"},
            {"type": "_watcher", "id": "w"}]})),
        // A custom state's `background` is its own field, not read.
        state(json!({"state": "_custom", "background": []})),
    ]);
    let a = &s.session("s").unwrap().activity;
    assert_eq!(
        serde_json::to_value(&a.background).unwrap(),
        json!({"terminal": 2, "tool_call": 1, "subagent": 1, "_watcher": 1})
    );
    // `[]`: nothing runs in the background.
    let s = fold_v2(&[state(json!({"state": "idle", "background": []}))]);
    assert_eq!(
        serde_json::to_value(&s.session("s").unwrap().activity.background).unwrap(),
        json!({})
    );
}

#[test]
fn a_v2_childs_whole_messages_content_chunks_and_plans_reach_its_run() {
    let child = |u: Value| (A2C, update("child", u));
    let s = fold_v2(&[
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "subagent_update", "sessionId": "child",
                    "title": "Worker", "state": {"state": "running"}}),
            ),
        ),
        child(
            json!({"sessionUpdate": "agent_message_chunk", "messageId": "m1",
            "content": {"type": "text", "text": "Rea"}}),
        ),
        // The whole message replaces what was streamed for it.
        child(json!({"sessionUpdate": "agent_message", "messageId": "m1",
            "content": [{"type": "text", "text": "Reading "}, {"type": "text", "text": "files"}]})),
        child(json!({"sessionUpdate": "agent_thought", "messageId": "t1",
            "content": [{"type": "text", "text": "hmm"}]})),
        child(json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "ls"})),
        child(
            json!({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "c1",
            "content": {"type": "content", "content": {"type": "text", "text": "a.rs"}}}),
        ),
        child(
            json!({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "c1",
            "content": {"type": "content", "content": {"type": "text", "text": "b.rs"}}}),
        ),
        child(json!({"sessionUpdate": "agent_message", "messageId": "m2",
            "content": [{"type": "text", "text": "Done."}]})),
        // A metadata-only patch leaves the text alone.
        child(json!({"sessionUpdate": "agent_message", "messageId": "m2", "_meta": {"x": 1}})),
        child(json!({"sessionUpdate": "plan_update",
            "plan": {"planId": "p", "items": [{"content": "read", "status": "completed"}]}})),
        // A custom update of the child is its transcript: the child is no
        // session of its own.
        child(json!({"sessionUpdate": "_vendor_progress", "pct": 50})),
    ]);
    let run = &s.session("s").unwrap().subagent_runs["child"];
    assert_eq!(run.text, "Reading files\nDone.");
    let call = run.tool_call("c1").unwrap();
    assert_eq!(
        call["content"],
        json!([{"type": "content", "content": {"type": "text", "text": "a.rs"}},
            {"type": "content", "content": {"type": "text", "text": "b.rs"}}])
    );
    assert_eq!(run.plan.as_ref().unwrap()["planId"], "p");
    assert!(!run.output_incomplete);
    assert!(s.session("child").is_none());
    assert_eq!(s.invalid_count(), 0);
    assert_eq!(s.accounting().unaccounted(), 0);
}

#[test]
fn an_agent_initiated_turn_ending_before_the_receipt_does_not_end_the_prompts() {
    // claude-agent-acp in v2: a background task's notification runs a turn
    // of its own, which ends after the next prompt was sent and before
    // that prompt is inserted (its receipt).
    let usage = |n: u64| json!({"totalTokens": n, "inputTokens": n, "outputTokens": 0});
    let before_receipt = [
        prompt(1),
        state(json!({"state": "running"})),
        state(json!({"state": "idle", "stopReason": "end_turn", "usage": usage(10)})),
    ];
    let s = fold_v2(&before_receipt);
    let session = s.session("s").unwrap();
    assert!(session.turns.running, "the prompt's turn goes on");
    assert_eq!(
        session.usage.turn_totals.turns, 1,
        "the work it ended counts"
    );
    let mut all = before_receipt.to_vec();
    all.extend([
        answer(1, json!({"messageId": "m1"})),
        state(json!({"state": "running"})),
        state(json!({"state": "idle", "stopReason": "max_tokens", "usage": usage(5)})),
    ]);
    let s = fold_v2(&all);
    let session = s.session("s").unwrap();
    assert!(!session.turns.running);
    assert_eq!(
        session.turns.last_stop_reason.as_deref(),
        Some("max_tokens")
    );
    assert_eq!(session.usage.turn_totals.turns, 2);
    assert_eq!(session.usage.turn_totals.usage["totalTokens"], 15);
    assert_eq!(s.accounting().unaccounted(), 0);
}

#[test]
fn a_steer_sent_as_a_v2_prompt_is_settled_when_its_turn_ends_at_the_idle() {
    let steer_prompt = (
        C2A,
        json!({"jsonrpc": "2.0", "id": 1, "method": "session/prompt",
            "params": {"sessionId": "s", "prompt": [],
                "_meta": {"lody": {"steer": {"id": "by-prompt"}}}}}),
    );
    let before_idle = [
        steer_prompt,
        answer(1, json!({"messageId": "m1"})),
        state(json!({"state": "running"})),
    ];
    let s = fold_v2(&before_idle);
    let steer = &s.session("s").unwrap().steers["by-prompt"];
    assert_eq!(
        steer.outcome,
        SteerStatus::Pending,
        "the receipt ends nothing"
    );
    let mut all = before_idle.to_vec();
    all.push(state(json!({"state": "idle", "stopReason": "end_turn"})));
    let s = fold_v2(&all);
    let steer = &s.session("s").unwrap().steers["by-prompt"];
    assert_eq!(steer.outcome, SteerStatus::Unknown);
}
