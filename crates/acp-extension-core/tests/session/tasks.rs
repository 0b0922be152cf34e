//! tasks

use super::*;

#[test]
fn task_round_trips() {
    let t: TaskMeta = round_trip(json!({
        "version": 1, "taskId": "item-subagent-1", "kind": "subagent", "status": "completed",
        "description": "Start subagent test_audit", "actor": "test_audit"
    }));
    assert_eq!(t.status, TaskStatus::Completed);
    assert_eq!(t.kind, TaskKind::Subagent);

    let t: TaskMeta = round_trip(json!({
        "version": 1, "taskId": "t", "kind": "background", "status": "in_progress",
        "parentTaskId": "p", "parentToolCallId": "c", "modelId": "m", "summary": "s",
        "error": "e", "lastToolName": "Bash",
        "startedAtEpochSeconds": 1710000000.25, "endedAtEpochSeconds": 1710000001,
        "usage": {"totalTokens": 10, "toolUses": 2, "durationMs": 3.5},
        "skipTranscript": true
    }));
    assert_eq!(
        t.started_at_epoch_seconds,
        Some(EpochSeconds::new(1710000000.25).unwrap())
    );
    assert_eq!(t.usage.unwrap().tool_uses, Some(num(2.0)));
    round_trip::<TaskUsage>(json!({}));
}

#[test]
fn task_rejections() {
    let base = json!({"version": 1, "taskId": "t", "kind": "scheduled", "status": "pending"});
    round_trip::<TaskMeta>(base.clone());

    let mut v = base.clone();
    v["status"] = json!("running");
    rejects::<TaskMeta>(v, &[("/status", "one-of")]);

    let mut v = base.clone();
    v.as_object_mut().unwrap().remove("taskId");
    rejects::<TaskMeta>(v, &[("/taskId", "required")]);

    let mut v = base.clone();
    v["usage"] = json!({"totalTokens": null, "toolUses": -2});
    rejects::<TaskMeta>(
        v,
        &[
            ("/usage/totalTokens", "not-null"),
            ("/usage/toolUses", "finite-non-negative"),
        ],
    );

    let mut v = base;
    v["endedAtEpochSeconds"] = json!(null);
    rejects::<TaskMeta>(v, &[("/endedAtEpochSeconds", "not-null")]);
}
