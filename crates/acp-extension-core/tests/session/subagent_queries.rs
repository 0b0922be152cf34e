//! subagent queries

use super::*;
use acp_extension_core::wire::WireEnum;

#[test]
fn subagent_task_round_trips() {
    let t: SubagentTask = round_trip(json!({
        "taskId": "t1", "description": "audit", "status": "running",
        "startedAtEpochSeconds": 1710000000.5, "endedAtEpochSeconds": null
    }));
    assert_eq!(t.ended_at_epoch_seconds, None);
    let t: SubagentTask = round_trip(json!({
        "taskId": "t1", "description": "audit", "status": "timed_out",
        "agentId": "a", "subagentType": "explore", "modelId": "m", "thinkingEffort": "high",
        "startedAtEpochSeconds": 0, "endedAtEpochSeconds": 1710000001, "stopReason": "timeout"
    }));
    assert_eq!(t.status, SubagentTaskStatus::TimedOut);
    assert_eq!(
        t.ended_at_epoch_seconds,
        Some(EpochSeconds::from_secs(1710000001))
    );
    assert_eq!(
        SubagentTaskStatus::ALL,
        [
            "running",
            "completed",
            "failed",
            "timed_out",
            "killed",
            "lost"
        ]
    );
}

#[test]
fn subagent_task_rejections() {
    rejects::<SubagentTask>(
        json!({"taskId": "t", "description": "d", "status": "running", "startedAtEpochSeconds": 1}),
        &[("/endedAtEpochSeconds", "required")],
    );
    rejects::<SubagentTask>(
        json!({"taskId": "t", "description": "d", "status": "pending",
               "startedAtEpochSeconds": null, "endedAtEpochSeconds": null, "agentId": null}),
        &[
            ("/status", "one-of"),
            ("/startedAtEpochSeconds", "type"),
            ("/agentId", "not-null"),
        ],
    );
}

#[test]
fn subagent_requests_and_responses() {
    let r: SubagentsListRequest = round_trip(json!({"sessionId": "s", "activeOnly": true}));
    assert_eq!(r.active_only, Some(true));
    round_trip::<SubagentsListRequest>(json!({"sessionId": "s"}));
    rejects::<SubagentsListRequest>(
        json!({"sessionId": "s", "activeOnly": null}),
        &[("/activeOnly", "not-null")],
    );

    let r: SubagentsListResponse = round_trip(json!({"tasks": [{
        "taskId": "t", "description": "d", "status": "killed",
        "startedAtEpochSeconds": 1, "endedAtEpochSeconds": 2
    }]}));
    assert_eq!(r.tasks[0].status, SubagentTaskStatus::Killed);
    rejects::<SubagentsListResponse>(json!({}), &[("/tasks", "required")]);
    rejects::<SubagentsListResponse>(
        json!({"tasks": [{"taskId": "t"}]}),
        &[
            ("/tasks/0/description", "required"),
            ("/tasks/0/status", "required"),
            ("/tasks/0/startedAtEpochSeconds", "required"),
            ("/tasks/0/endedAtEpochSeconds", "required"),
        ],
    );

    round_trip::<SubagentCancelRequest>(json!({"sessionId": "s", "taskId": "t", "reason": "user"}));
    rejects::<SubagentCancelRequest>(
        json!({"sessionId": "s", "taskId": "t", "reason": null}),
        &[("/reason", "not-null")],
    );

    let r: SubagentOutputRequest = round_trip(json!({"sessionId": "s", "taskId": "t", "tail": 50}));
    assert_eq!(r.tail, Some(num(50.0)));
    round_trip::<SubagentOutputRequest>(json!({"sessionId": "s", "taskId": "t"}));
    rejects::<SubagentOutputRequest>(
        json!({"sessionId": "s", "taskId": "t", "tail": -1}),
        &[("/tail", "finite-non-negative")],
    );
    rejects::<SubagentOutputRequest>(json!({"sessionId": "s"}), &[("/taskId", "required")]);

    let r: SubagentOutputResponse = round_trip(json!({"output": "line 1\nline 2"}));
    assert_eq!(r.output, "line 1\nline 2");
    rejects::<SubagentOutputResponse>(json!({"output": null}), &[("/output", "type")]);
}

#[test]
fn empty_response_is_an_object_and_keeps_extra_keys() {
    let e: EmptyResponse = round_trip(json!({}));
    assert!(e.extra().is_empty());
    assert_eq!(serde_json::to_string(&EmptyResponse::new()).unwrap(), "{}");
    let e: EmptyResponse = round_trip(json!({"vendor": 1}));
    assert_eq!(e.extra()["vendor"], json!(1));
    rejects::<EmptyResponse>(json!(null), &[("", "type")]);
}
