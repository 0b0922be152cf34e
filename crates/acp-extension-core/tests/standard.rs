//! The standard dialect: Core subagent events written as standard
//! `subagent_update`s and child-session updates, as the official adapters
//! send them (`official-adapters.md` §1 and §9), and the standard steering
//! and goal requests.

use acp_extension_core::negotiation::negotiate;
use acp_extension_core::session::{GoalControlRequest, SteerOutcome};
use acp_extension_core::standard::{
    GOAL_METHOD, STEERING_METHOD, StandardSubagents, SteeringRequest, SteeringResponse,
    SubagentDialect, advertises_steering,
};
use acp_extension_core::subagent_events::SubagentEvent;
use serde_json::{Value, json};

fn event(v: Value) -> SubagentEvent {
    serde_json::from_value(v).expect("a valid event")
}

fn support(cancel: bool) -> Value {
    json!({"stream": ["text", "tool"], "progress": true, "outputRead": "none", "cancel": cancel})
}

fn snapshot(run: &str, snapshot: Value) -> SubagentEvent {
    event(
        json!({"version": 1, "sessionId": "root", "runId": run, "type": "snapshot",
        "snapshot": snapshot}),
    )
}

/// Every notification as JSON.
fn written(runs: &mut StandardSubagents, e: &SubagentEvent) -> Vec<Value> {
    runs.event(e)
        .iter()
        .map(|n| serde_json::to_value(n).unwrap())
        .collect()
}

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
