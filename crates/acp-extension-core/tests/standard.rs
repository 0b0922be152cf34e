//! The standard dialect: Core subagent events written as standard
//! `subagent_update`s and child-session updates, as the official adapters
//! send them (`official-adapters.md` §1 and §9), and the standard steering
//! and goal requests.

use acp_extension_core::negotiation::negotiate;
use acp_extension_core::session::{GoalControlRequest, SteerOutcome};
#[cfg(feature = "unstable_subagents")]
use acp_extension_core::standard::StandardSubagents;
use acp_extension_core::standard::{
    CoreSubagents, GOAL_METHOD, STEERING_METHOD, SteeringRequest, SteeringResponse,
    SubagentDialect, advertises_steering,
};
#[cfg(feature = "unstable_subagents")]
use acp_extension_core::subagent_events::SubagentEvent;
use serde_json::{Value, json};

#[cfg(feature = "unstable_subagents")]
fn event(v: Value) -> SubagentEvent {
    serde_json::from_value(v).expect("a valid event")
}

#[cfg(feature = "unstable_subagents")]
fn support(cancel: bool) -> Value {
    json!({"stream": ["text", "tool"], "progress": true, "outputRead": "none", "cancel": cancel})
}

#[cfg(feature = "unstable_subagents")]
fn snapshot(run: &str, snapshot: Value) -> SubagentEvent {
    event(
        json!({"version": 1, "sessionId": "root", "runId": run, "type": "snapshot",
        "snapshot": snapshot}),
    )
}

#[cfg(feature = "unstable_subagents")]
/// Every notification as JSON.
fn written(runs: &mut StandardSubagents, e: &SubagentEvent) -> Vec<Value> {
    runs.event(e)
        .iter()
        .map(|n| serde_json::to_value(n).unwrap())
        .collect()
}

#[cfg(feature = "unstable_subagents")]
#[test]
fn a_run_is_announced_on_the_root_streams_on_its_child_session_and_ends_idle() {
    let mut runs = StandardSubagents::new("root");
    let start = snapshot(
        "run-1",
        json!({"state": "pending", "support": support(true), "parentRunId": null,
            "name": "Explorer", "description": "Find the flaky test", "modelId": "m",
            "parentToolCallId": "call-1", "startedAtEpochSeconds": 1}),
    );
    assert_eq!(
        written(&mut runs, &start),
        [
            json!({"sessionId": "root", "update": {"sessionUpdate": "subagent_update",
            "sessionId": "root:subagent:run-1", "title": "Explorer",
            "description": "Find the flaky test", "capabilities": {"cancel": {}},
            "state": {"state": "running"}}})
        ]
    );
    // pending → running is no change in the standard dialect: nothing.
    let running = snapshot(
        "run-1",
        json!({"state": "running", "support": support(true), "parentRunId": null,
            "name": "Explorer", "description": "Find the flaky test"}),
    );
    assert!(written(&mut runs, &running).is_empty());
    // Output goes out as the child's own update.
    let chunk = event(json!({"version": 1, "sessionId": "root", "runId": "run-1",
        "type": "output", "messageId": "m1",
        "update": {"sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "Looking"}}}));
    assert_eq!(
        written(&mut runs, &chunk),
        [json!({"sessionId": "root:subagent:run-1", "update": {
            "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Looking"}}})]
    );
    // Progress has no standard counterpart.
    let progress = event(json!({"version": 1, "sessionId": "root", "runId": "run-1",
        "type": "progress", "progress": {"toolCallCount": 3}}));
    assert!(written(&mut runs, &progress).is_empty());
    // The end: only what changed (state, and the cancel support withdrawn).
    let done = snapshot(
        "run-1",
        json!({"state": "completed", "support": support(false), "parentRunId": null,
            "name": "Explorer", "description": "Find the flaky test", "summary": "found it"}),
    );
    assert_eq!(
        written(&mut runs, &done),
        [
            json!({"sessionId": "root", "update": {"sessionUpdate": "subagent_update",
            "sessionId": "root:subagent:run-1", "capabilities": {},
            "state": {"state": "idle", "stopReason": "end_turn"}}})
        ]
    );
    assert_eq!(runs.run_of("root:subagent:run-1"), Some("run-1"));
    assert_eq!(
        runs.child_session("run-1").map(|s| s.0.to_string()),
        Some("root:subagent:run-1".to_owned())
    );
}

#[cfg(feature = "unstable_subagents")]
#[test]
fn a_nested_run_is_announced_on_its_parents_child_session() {
    let mut runs = StandardSubagents::new("root");
    runs.event(&snapshot(
        "outer",
        json!({"state": "running", "support": support(false), "parentRunId": null}),
    ));
    let inner = snapshot(
        "inner",
        json!({"state": "running", "support": support(false), "parentRunId": "outer",
            "name": "Reader"}),
    );
    assert_eq!(
        written(&mut runs, &inner),
        [json!({"sessionId": "root:subagent:outer", "update": {
            "sessionUpdate": "subagent_update", "sessionId": "root:subagent:inner",
            "title": "Reader", "capabilities": {}, "state": {"state": "running"}}})]
    );
    // Its later patches go to the same parent.
    let failed = snapshot(
        "inner",
        json!({"state": "failed", "support": support(false), "parentRunId": "outer",
            "name": "Reader", "reason": {"code": "error", "message": "disk full"}}),
    );
    assert_eq!(
        written(&mut runs, &failed),
        [json!({"sessionId": "root:subagent:outer", "update": {
            "sessionUpdate": "subagent_update", "sessionId": "root:subagent:inner",
            "state": {"state": "idle", "stopReason": "error",
                "error": {"code": -32603, "message": "disk full"}}}})]
    );
}

#[cfg(feature = "unstable_subagents")]
#[test]
fn states_map_as_documented() {
    let cases = [
        (
            "cancelled",
            json!({"state": "idle", "stopReason": "cancelled"}),
        ),
        ("unknown", json!({"state": "unknown"})),
        (
            "failed",
            json!({"state": "idle", "stopReason": "error",
                "error": {"code": -32603, "message": "timeout"}}),
        ),
    ];
    for (state, expected) in cases {
        let mut runs = StandardSubagents::new("root");
        let mut snap = json!({"state": state, "support": support(false), "parentRunId": null});
        if state == "failed" {
            snap["reason"] = json!({"code": "timeout"});
        }
        let out = written(&mut runs, &snapshot("r", snap));
        assert_eq!(out[0]["update"]["state"], expected, "{state}");
    }
}

#[cfg(feature = "unstable_subagents")]
#[test]
fn unknown_lineage_is_held_back_until_a_snapshot_names_the_parent() {
    let mut runs = StandardSubagents::new("root");
    let unknown = snapshot("r", json!({"state": "running", "support": support(false)}));
    assert!(written(&mut runs, &unknown).is_empty());
    // Output of a run not announced is not written under a guessed parent.
    let chunk = event(json!({"version": 1, "sessionId": "root", "runId": "r",
        "type": "output", "update": {"sessionUpdate": "agent_thought_chunk",
            "content": {"type": "text", "text": "hm"}}}));
    assert!(written(&mut runs, &chunk).is_empty());
    // A parent run that was never announced holds it back too.
    let orphan = snapshot(
        "r",
        json!({"state": "running", "support": support(false), "parentRunId": "nobody"}),
    );
    assert!(written(&mut runs, &orphan).is_empty());
    let known = snapshot(
        "r",
        json!({"state": "running", "support": support(false), "parentRunId": null}),
    );
    let out = written(&mut runs, &known);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["sessionId"], "root");
    assert_eq!(written(&mut runs, &chunk).len(), 1);
}

#[cfg(feature = "unstable_subagents")]
#[test]
fn events_of_another_root_session_are_not_written() {
    let mut runs = StandardSubagents::new("other");
    let start = snapshot(
        "r",
        json!({"state": "running", "support": support(false), "parentRunId": null}),
    );
    assert!(written(&mut runs, &start).is_empty());
}

#[test]
fn the_dialect_follows_what_the_client_advertised() {
    let agent = json!({"_meta": {"lody": {"subagentEvents": {"version": 1}}}});
    let core = json!({"_meta": {"lody": {"subagentEvents": {"version": 1}}}, "subagents": {}});
    let standard = json!({"subagents": {}});
    assert_eq!(
        negotiate(&agent, &core).subagent_dialect(),
        Some(SubagentDialect::Core)
    );
    assert_eq!(
        negotiate(&agent, &standard).subagent_dialect(),
        Some(SubagentDialect::Standard)
    );
    assert_eq!(negotiate(&agent, &json!({})).subagent_dialect(), None);
    // `subagents: null` is off.
    assert_eq!(
        negotiate(&agent, &json!({"subagents": null})).subagent_dialect(),
        None
    );
}

#[test]
fn steering_requests_and_answers_have_the_adapters_shapes() {
    assert_eq!(STEERING_METHOD, "_session/steering");
    assert_eq!(GOAL_METHOD, "_session/goal");
    let request: SteeringRequest = serde_json::from_value(json!({"sessionId": "s1",
        "prompt": [{"type": "text", "text": "Use the retry helper"}]}))
    .unwrap();
    assert!(!request.prompt_required());
    let core = request.to_core("request:12");
    assert_eq!(core.steer_id, "request:12");
    assert_eq!(core.session_id, "s1");
    // A Core steer id passed along wins.
    let with_id: SteeringRequest = serde_json::from_value(json!({"sessionId": "s1",
        "prompt": [], "steerId": "st-7"}))
    .unwrap();
    assert_eq!(with_id.to_core("request:13").steer_id, "st-7");
    // What a client should send: promptRequired.
    assert_eq!(
        serde_json::to_value(SteeringRequest::new("s1", vec![])).unwrap(),
        json!({"sessionId": "s1", "prompt": [],
            "_meta": {"steering": {"idleBehavior": "promptRequired"}}})
    );
    for (response, wire) in [
        (SteeringResponse::Injected, json!({"outcome": "injected"})),
        (
            SteeringResponse::no_running_turn(),
            json!({"outcome": "promptRequired", "reason": "noRunningTurn"}),
        ),
        (
            SteeringResponse::StartedNewTurn,
            json!({"outcome": "startedNewTurn"}),
        ),
        (SteeringResponse::Failed, json!({"outcome": "failed"})),
    ] {
        assert_eq!(serde_json::to_value(&response).unwrap(), wire);
        assert_eq!(
            serde_json::from_value::<SteeringResponse>(wire).unwrap(),
            response
        );
    }
    assert_eq!(
        SteeringResponse::from_core(SteerOutcome::Injected),
        SteeringResponse::Injected
    );
    assert_eq!(
        SteeringResponse::from_core(SteerOutcome::Failed),
        SteeringResponse::Failed
    );
    // `_session/goal` params are the contract's goal request.
    let goal: GoalControlRequest =
        serde_json::from_value(json!({"sessionId": "s1", "action": "set", "objective": "Ship"}))
            .unwrap();
    assert_eq!(goal.tag(), "set");
    assert!(advertises_steering(
        &json!({"protocolVersion": 1, "_meta": {"steering": {"supported": true}}})
    ));
    assert!(!advertises_steering(&json!({"protocolVersion": 1})));
}

/// `CoreSubagents` on one `session/update`'s params: the events as JSON.
fn core_events(runs: &mut CoreSubagents, params: Value) -> Option<Vec<Value>> {
    runs.session_update(&params).map(|events| {
        events
            .iter()
            .map(|e| serde_json::to_value(e).unwrap())
            .collect()
    })
}

fn std_update(session: &str, update: Value) -> Value {
    json!({"sessionId": session, "update": update})
}

/// The Core events of a `subagent_update` giving `child` a `state`, sent on
/// the session of its `parent`.
fn child_state(runs: &mut CoreSubagents, parent: &str, child: &str, state: Value) -> Vec<Value> {
    let update = json!({"sessionUpdate": "subagent_update", "sessionId": child, "state": state});
    core_events(runs, std_update(parent, update)).expect("a child session's update")
}

/// The Core events of an update on a child's own session.
fn child_update(runs: &mut CoreSubagents, child: &str, update: Value) -> Vec<Value> {
    core_events(runs, std_update(child, update)).expect("a child session's update")
}

#[test]
fn codex_style_children_become_core_runs() {
    let mut runs = CoreSubagents::new();
    // codex announces without a state: a pending run.
    let announce = core_events(
        &mut runs,
        std_update(
            "root",
            json!({"sessionUpdate": "subagent_update",
            "sessionId": "root:subagent:t1", "capabilities": {}, "title": "Explorer 1",
            "description": "Find the flaky test"}),
        ),
    )
    .unwrap();
    assert_eq!(announce.len(), 1);
    let run = announce[0]["runId"].as_str().unwrap().to_owned();
    assert_ne!(run, "root:subagent:t1", "a native id is never a run id");
    assert_eq!(
        announce[0],
        json!({"version": 1, "sessionId": "root", "runId": run, "type": "snapshot",
            "snapshot": {"state": "pending", "parentRunId": null, "name": "Explorer 1",
                "description": "Find the flaky test",
                "support": {"stream": ["text", "thought", "tool", "plan"], "progress": false,
                    "outputRead": "none", "cancel": false}}})
    );
    // The cancel capability and the running state: one snapshot each.
    let cancel = core_events(
        &mut runs,
        std_update(
            "root",
            json!({"sessionUpdate": "subagent_update",
            "sessionId": "root:subagent:t1", "capabilities": {"cancel": {}}}),
        ),
    )
    .unwrap();
    assert_eq!(cancel[0]["snapshot"]["support"]["cancel"], true);
    let running = child_state(
        &mut runs,
        "root",
        "root:subagent:t1",
        json!({"state": "requires_action"}),
    );
    assert_eq!(running[0]["snapshot"]["state"], "running");
    // A repeated state says nothing new.
    let again = child_state(
        &mut runs,
        "root",
        "root:subagent:t1",
        json!({"state": "running"}),
    );
    assert!(again.is_empty());
    // The child's chunk is output; its usage has no Core slot.
    let chunk = child_update(
        &mut runs,
        "root:subagent:t1",
        json!({"sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "Found it"}}),
    );
    assert_eq!(chunk[0]["type"], "output");
    assert_eq!(chunk[0]["runId"], run.as_str());
    assert_eq!(chunk[0]["update"]["content"]["text"], "Found it");
    let usage = child_update(
        &mut runs,
        "root:subagent:t1",
        json!({"sessionUpdate": "usage_update", "used": 1, "size": 2}),
    );
    assert!(usage.is_empty());
    // A nested child: announced on its parent's session.
    let nested = child_state(
        &mut runs,
        "root:subagent:t1",
        "root:subagent:t2",
        json!({"state": "running"}),
    );
    assert_eq!(nested[0]["sessionId"], "root");
    assert_eq!(nested[0]["snapshot"]["parentRunId"], run.as_str());
    // idle/end_turn ends the run; running again is a new run.
    let done = child_state(
        &mut runs,
        "root",
        "root:subagent:t1",
        json!({"state": "idle", "stopReason": "end_turn"}),
    );
    assert_eq!(done[0]["snapshot"]["state"], "completed");
    assert_eq!(runs.child_of_run(&run), Some("root:subagent:t1"));
    // Output of an ended child: it works again, so a new run begins
    // (codex streams a resumed child's first chunk before its `running`).
    let late = child_update(
        &mut runs,
        "root:subagent:t1",
        json!({"sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "again"}}),
    );
    assert_eq!(late.len(), 2, "{late:?}");
    assert_eq!(late[0]["snapshot"]["state"], "running");
    let second = late[0]["runId"].as_str().unwrap().to_owned();
    assert_ne!(second, run);
    assert_eq!(late[1]["runId"], second.as_str());
    assert_eq!(late[1]["update"]["content"]["text"], "again");
    // Its `running` then says nothing new; its end ends the second run.
    let running_again = child_state(
        &mut runs,
        "root",
        "root:subagent:t1",
        json!({"state": "running"}),
    );
    assert!(running_again.is_empty(), "{running_again:?}");
    let cancelled = child_state(
        &mut runs,
        "root",
        "root:subagent:t1",
        json!({"state": "idle", "stopReason": "cancelled"}),
    );
    assert_eq!(cancelled[0]["runId"], second.as_str());
    assert_eq!(cancelled[0]["snapshot"]["state"], "cancelled");
    let rerun = child_state(
        &mut runs,
        "root",
        "root:subagent:t1",
        json!({"state": "running"}),
    );
    assert_ne!(rerun[0]["runId"], run.as_str());
    assert_ne!(rerun[0]["runId"], second.as_str());
    assert_eq!(rerun[0]["snapshot"]["state"], "running");
    // Root traffic is not subagent traffic.
    assert!(
        core_events(
            &mut runs,
            std_update(
                "root",
                json!({"sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "x"}})
            )
        )
        .is_none()
    );
}

#[test]
fn standard_end_states_map_to_core_as_documented() {
    let cases = [
        (
            json!({"state": "idle", "stopReason": "cancelled"}),
            json!({"state": "cancelled"}),
        ),
        (
            json!({"state": "idle", "stopReason": "max_tokens"}),
            json!({"state": "completed"}),
        ),
        (
            json!({"state": "idle", "stopReason": "error", "error": {"code": -32603, "message": "boom"}}),
            json!({"state": "failed", "reason": {"code": "error", "message": "boom"}}),
        ),
        (
            json!({"state": "idle"}),
            json!({"state": "unknown", "reason": {"code": "lost"}, "outputIncomplete": true}),
        ),
        (
            json!({"state": "unknown"}),
            json!({"state": "unknown", "reason": {"code": "disconnected"}, "outputIncomplete": true}),
        ),
    ];
    for (state, expected) in cases {
        let mut runs = CoreSubagents::new();
        let events = core_events(
            &mut runs,
            std_update(
                "root",
                json!({"sessionUpdate": "subagent_update",
                "sessionId": "c", "state": state}),
            ),
        )
        .unwrap();
        for (k, v) in expected.as_object().unwrap() {
            assert_eq!(&events[0]["snapshot"][k], v, "{state} → {k}");
        }
    }
}

#[cfg(feature = "unstable_subagents")]
#[test]
fn core_to_standard_to_core_keeps_what_both_dialects_carry() {
    let mut to_standard = StandardSubagents::new("root");
    let mut to_core = CoreSubagents::new();
    let core_in = [
        snapshot(
            "a",
            json!({"state": "running", "support": support(true), "parentRunId": null,
                "name": "Explorer", "description": "Look around", "modelId": "m"}),
        ),
        event(
            json!({"version": 1, "sessionId": "root", "runId": "a", "type": "output",
            "update": {"sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "Done looking"}}}),
        ),
        snapshot(
            "b",
            json!({"state": "running", "support": support(false), "parentRunId": "a",
                "name": "Reader"}),
        ),
        snapshot(
            "b",
            json!({"state": "failed", "support": support(false), "parentRunId": "a",
                "name": "Reader", "reason": {"code": "error", "message": "no file"}}),
        ),
        snapshot(
            "a",
            json!({"state": "completed", "support": support(true), "parentRunId": null,
                "name": "Explorer", "description": "Look around"}),
        ),
    ];
    let mut core_out = Vec::new();
    for e in &core_in {
        for n in to_standard.event(e) {
            let params = serde_json::to_value(&n).unwrap();
            core_out.extend(to_core.session_update(&params).expect("subagent traffic"));
        }
    }
    let states: Vec<(String, String)> = core_out
        .iter()
        .filter_map(|e| {
            e.snapshot()
                .map(|s| (e.run_id.as_str().to_owned(), s.state.to_string()))
        })
        .collect();
    // Two runs with their own ids, the states kept.
    let (a, b) = (&states[0].0, &states[1].0);
    assert_ne!(a, b);
    assert_eq!(
        states
            .iter()
            .map(|(r, s)| (r == a, s.as_str()))
            .collect::<Vec<_>>(),
        [
            (true, "running"),
            (false, "running"),
            (false, "failed"),
            (true, "completed")
        ]
    );
    let first = core_out[0].snapshot().unwrap();
    assert_eq!(first.name.as_deref(), Some("Explorer"));
    assert_eq!(first.description.as_deref(), Some("Look around"));
    assert!(first.support.cancel);
    // The nested run's parent is the first run, and the failure its reason.
    let nested = core_out.iter().filter_map(|e| e.snapshot()).nth(1).unwrap();
    assert_eq!(
        serde_json::to_value(nested).unwrap()["parentRunId"],
        json!(a)
    );
    let failed = core_out.iter().filter_map(|e| e.snapshot()).nth(2).unwrap();
    assert_eq!(
        failed.reason.as_ref().unwrap().message.as_deref(),
        Some("no file")
    );
    // The output arrives on the first run.
    let output = core_out.iter().find(|e| e.output().is_some()).unwrap();
    assert_eq!(output.run_id.as_str(), a);
    // What the standard dialect does not carry is gone (documented): the model.
    assert!(first.model_id.is_none());
}
