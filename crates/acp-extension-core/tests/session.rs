//! Session extension types (contract §9): round trips, absent versus `null`,
//! the contract's rejections, and every `_meta.lody.<field>` value of the
//! adapters' recorded corpus.

mod common;

use common::{rejects, round_trip};

use std::path::{Path, PathBuf};

use acp_extension_core::session::*;
use acp_extension_core::validate::{Check, check};
use acp_extension_core::wire::{Count, EpochSeconds, MaybeUndefined, NonNegF64};
use agent_client_protocol::v1::schema::{ContentBlock, TextContent};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Parses `v` as `T`, checks it is valid and that it serializes back to the
/// same JSON value.
/// Asserts that `v` does not parse as `T` and that `check` reports exactly
/// the given `(pointer, rule id)` violations.
fn num(n: f64) -> NonNegF64 {
    NonNegF64::new(n).unwrap()
}

// ----------------------------------------------------------------- tool names

#[test]
fn tool_names_are_the_contract_spellings() {
    assert_eq!(tool_names::IMAGE_GENERATION, "ImageGeneration");
    assert_eq!(tool_names::CRON_CREATE, "CronCreate");
    assert_eq!(tool_names::CRON_DELETE, "CronDelete");
    assert_eq!(tool_names::CRON_LIST, "CronList");
    assert_eq!(tool_names::SCHEDULE_WAKEUP, "ScheduleWakeup");
    assert_eq!(
        tool_names::ALL,
        [
            "ImageGeneration",
            "CronCreate",
            "CronDelete",
            "CronList",
            "ScheduleWakeup"
        ]
    );
}

// ------------------------------------------------------------------- activity

#[test]
fn activity_round_trips() {
    let a: ActivityMeta = round_trip(json!({"version": 1, "kind": "context_compaction"}));
    assert_eq!(a.kind, ActivityKind::ContextCompaction);
    assert_eq!(a.automatic, None);

    let a: ActivityMeta = round_trip(json!({
        "version": 1, "kind": "retry", "automatic": true,
        "usedTokensBefore": 120000, "usedTokensAfter": 30000.5,
        "durationMs": 1500, "failureReason": "overloaded", "x": [1]
    }));
    assert_eq!(a.kind, ActivityKind::Retry);
    assert_eq!(a.used_tokens_after, Some(num(30000.5)));
    assert_eq!(a.extra["x"], json!([1]));
}

#[test]
fn activity_builder_writes_the_wire_shape() {
    let a = ActivityMeta::new(ActivityKind::ContextCompaction)
        .automatic(true)
        .duration_ms(num(12.0));
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        r#"{"version":1,"kind":"context_compaction","automatic":true,"durationMs":12}"#
    );
}

#[test]
fn activity_rejections() {
    rejects::<ActivityMeta>(json!({"kind": "retry"}), &[("/version", "required")]);
    rejects::<ActivityMeta>(
        json!({"version": 2, "kind": "retry"}),
        &[("/version", "literal")],
    );
    rejects::<ActivityMeta>(
        json!({"version": 1, "kind": "compaction"}),
        &[("/kind", "one-of")],
    );
    rejects::<ActivityMeta>(
        json!({"version": 1, "kind": "retry", "automatic": null}),
        &[("/automatic", "not-null")],
    );
    rejects::<ActivityMeta>(
        json!({"version": 1, "kind": "retry", "usedTokensBefore": -1}),
        &[("/usedTokensBefore", "finite-non-negative")],
    );
    rejects::<ActivityMeta>(json!([]), &[("", "type")]);
}

// ---------------------------------------------------------------------- tasks

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

// ---------------------------------------------------------------------- goals

#[test]
fn goal_snapshot_round_trips() {
    // Placeholder zero timestamps (codex) and a null budget.
    let g: GoalSnapshot = round_trip(json!({
        "objective": "Ship it", "status": "active", "tokenBudget": null, "tokensUsed": 0,
        "timeUsedSeconds": 0, "createdAtEpochSeconds": 0, "updatedAtEpochSeconds": 0
    }));
    assert_eq!(g.token_budget, MaybeUndefined::Null);
    assert_eq!(g.created_at_epoch_seconds, Some(EpochSeconds::from_secs(0)));
    assert_eq!(g.last_reason, MaybeUndefined::Undefined);

    // Fractional epoch seconds are legal.
    let g: GoalSnapshot = round_trip(json!({
        "objective": "First task\nSecond task", "status": "limited", "iterations": 3,
        "lastReason": "budget", "tokenBudget": 1000, "tokensUsed": 1000,
        "createdAtEpochSeconds": 1710000000.123, "updatedAtEpochSeconds": 1710000030.5
    }));
    assert_eq!(g.status, GoalStatus::Limited);
    assert_eq!(g.token_budget, MaybeUndefined::Value(num(1000.0)));
    assert_eq!(g.last_reason, MaybeUndefined::Value("budget".to_owned()));

    let g: GoalSnapshot =
        round_trip(json!({"objective": "o", "status": "blocked", "lastReason": null}));
    assert_eq!(g.last_reason, MaybeUndefined::Null);
    for s in ["active", "paused", "blocked", "limited", "complete"] {
        round_trip::<GoalSnapshot>(json!({"objective": "o", "status": s}));
    }
}

#[test]
fn goal_snapshot_setters_keep_absent_and_null_apart() {
    let g = GoalSnapshot::new("o", GoalStatus::Paused)
        .token_budget(None)
        .iterations(num(2.0));
    assert_eq!(
        serde_json::to_value(&g).unwrap(),
        json!({"objective": "o", "status": "paused", "iterations": 2, "tokenBudget": null})
    );
}

#[test]
fn goal_snapshot_rejections() {
    rejects::<GoalSnapshot>(json!({"status": "active"}), &[("/objective", "required")]);
    rejects::<GoalSnapshot>(
        json!({"objective": "o", "status": "done"}),
        &[("/status", "one-of")],
    );
    rejects::<GoalSnapshot>(
        json!({"objective": "o", "status": "active", "iterations": null}),
        &[("/iterations", "not-null")],
    );
    rejects::<GoalSnapshot>(
        json!({"objective": "o", "status": "active", "createdAtEpochSeconds": null}),
        &[("/createdAtEpochSeconds", "not-null")],
    );
    rejects::<GoalSnapshot>(
        json!({"objective": "o", "status": "active", "tokensUsed": -1, "tokenBudget": "10"}),
        &[
            ("/tokensUsed", "finite-non-negative"),
            ("/tokenBudget", "type"),
        ],
    );
    rejects::<GoalSnapshot>(
        json!({"objective": "o", "status": "active", "lastReason": 5}),
        &[("/lastReason", "type")],
    );
}

#[test]
fn goal_control_request_round_trips() {
    let r: GoalControlRequest =
        round_trip(json!({"sessionId": "s1", "action": "set", "objective": "Ship it"}));
    assert_eq!(r.tag(), "set");
    assert_eq!(r.session_id(), "s1");
    assert!(matches!(&r, GoalControlRequest::Set(s) if s.objective == "Ship it"));

    for action in ["pause", "resume", "clear"] {
        let r: GoalControlRequest = round_trip(json!({"sessionId": "s1", "action": action}));
        assert_eq!(r.tag(), action);
        assert_eq!(r.session_id(), "s1");
    }
    assert_eq!(
        GoalControlRequest::TAGS,
        ["set", "pause", "resume", "clear"]
    );

    // Extra keys survive, the tag is written first.
    round_trip::<GoalControlRequest>(json!({"sessionId": "s", "action": "clear", "x": true}));
    assert_eq!(
        serde_json::to_string(&GoalControlRequest::set("s", "o")).unwrap(),
        r#"{"action":"set","sessionId":"s","objective":"o"}"#
    );
    assert_eq!(
        serde_json::to_value(GoalControlRequest::pause("s")).unwrap(),
        json!({"action": "pause", "sessionId": "s"})
    );
    assert_eq!(
        serde_json::to_value(GoalControlRequest::resume("s")).unwrap(),
        json!({"action": "resume", "sessionId": "s"})
    );
    assert_eq!(
        serde_json::to_value(GoalControlRequest::clear("s")).unwrap(),
        json!({"action": "clear", "sessionId": "s"})
    );
}

#[test]
fn goal_control_request_rejections() {
    rejects::<GoalControlRequest>(
        json!({"sessionId": "s", "action": "set"}),
        &[("/objective", "required")],
    );
    rejects::<GoalControlRequest>(json!({"action": "pause"}), &[("/sessionId", "required")]);
    rejects::<GoalControlRequest>(
        json!({"sessionId": "s", "action": "stop"}),
        &[("/action", "one-of")],
    );
    rejects::<GoalControlRequest>(json!({"sessionId": "s"}), &[("/action", "one-of")]);
    rejects::<GoalControlRequest>(
        json!({"sessionId": "s", "action": "set", "objective": null}),
        &[("/objective", "type")],
    );
    rejects::<GoalControlRequest>(json!("pause"), &[("", "type")]);
}

#[test]
fn goal_control_response_goal_is_required_but_nullable() {
    let r: GoalControlResponse = round_trip(json!({"goal": null}));
    assert_eq!(r.goal, None);
    let r: GoalControlResponse =
        round_trip(json!({"goal": {"objective": "o", "status": "active"}}));
    assert_eq!(r.goal.unwrap().status, GoalStatus::Active);
    assert_eq!(
        serde_json::to_value(GoalControlResponse::new(None)).unwrap(),
        json!({"goal": null})
    );
    rejects::<GoalControlResponse>(json!({}), &[("/goal", "required")]);
    rejects::<GoalControlResponse>(
        json!({"goal": {"objective": "o"}}),
        &[("/goal/status", "required")],
    );
}

#[test]
fn goal_prompt_control_round_trips_and_rejections() {
    let c: GoalPromptControl =
        round_trip(json!({"version": 1, "action": "set", "objective": "Ship it"}));
    assert!(matches!(c, GoalPromptControl::Set(ref s) if s.objective == "Ship it"));
    for action in ["pause", "resume", "clear"] {
        let c: GoalPromptControl = round_trip(json!({"version": 1, "action": action}));
        assert_eq!(c.tag(), action);
    }
    assert_eq!(
        serde_json::to_value(GoalPromptControl::set("o")).unwrap(),
        json!({"action": "set", "version": 1, "objective": "o"})
    );
    assert_eq!(
        serde_json::to_value(GoalPromptControl::resume()).unwrap(),
        json!({"action": "resume", "version": 1})
    );
    assert_eq!(GoalPromptControl::pause().tag(), "pause");
    assert_eq!(GoalPromptControl::clear().tag(), "clear");

    rejects::<GoalPromptControl>(json!({"action": "pause"}), &[("/version", "required")]);
    rejects::<GoalPromptControl>(
        json!({"version": "1", "action": "clear"}),
        &[("/version", "literal")],
    );
    rejects::<GoalPromptControl>(
        json!({"version": 1, "action": "set"}),
        &[("/objective", "required")],
    );
    rejects::<GoalPromptControl>(
        json!({"version": 1, "action": "SET", "objective": "o"}),
        &[("/action", "one-of")],
    );
}

// ------------------------------------------------------------------- steering

#[test]
fn steer_prompt_meta() {
    let s: SteerPromptMeta = round_trip(json!({"id": "steer-1"}));
    assert_eq!(s.id, "steer-1");
    rejects::<SteerPromptMeta>(json!({}), &[("/id", "required")]);
    rejects::<SteerPromptMeta>(json!({"id": null}), &[("/id", "type")]);
}

#[test]
fn steer_request_keeps_blocks_verbatim_and_exposes_sdk_blocks() {
    let v = json!({
        "sessionId": "s1",
        "steerId": "steer-1",
        "prompt": [
            {"type": "text", "text": "use the other API", "vendorKey": {"a": 1}},
            {"type": "resource_link", "name": "spec", "uri": "file:///spec.md"}
        ]
    });
    let r: SteerRequest = round_trip(v);
    let blocks: Vec<&ContentBlock> = r.content_blocks().collect();
    assert!(matches!(blocks[0], ContentBlock::Text(t) if t.text == "use the other API"));
    assert!(matches!(blocks[1], ContentBlock::ResourceLink(l) if l.uri == "file:///spec.md"));
    // The key the SDK type does not know is still on the wire.
    assert_eq!(r.prompt[0].as_value()["vendorKey"], json!({"a": 1}));

    let built = SteerRequest::new(
        "s1",
        vec![AcpContentBlock::from(ContentBlock::Text(TextContent::new(
            "hi",
        )))],
        "steer-2",
    );
    assert_eq!(
        serde_json::to_value(&built).unwrap(),
        json!({"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}], "steerId": "steer-2"})
    );
    let block: ContentBlock = built.prompt[0].clone().into();
    assert_eq!(block, ContentBlock::Text(TextContent::new("hi")));
    round_trip::<SteerRequest>(json!({"sessionId": "s", "prompt": [], "steerId": "x"}));
}

#[test]
fn steer_request_rejections() {
    rejects::<SteerRequest>(
        json!({"sessionId": "s", "steerId": "x"}),
        &[("/prompt", "required")],
    );
    rejects::<SteerRequest>(
        json!({"sessionId": "s", "steerId": "x", "prompt": {"type": "text", "text": "t"}}),
        &[("/prompt", "type")],
    );
    rejects::<SteerRequest>(
        json!({"sessionId": "s", "steerId": "x", "prompt": [{"type": "video"}]}),
        &[("/prompt/0/type", "one-of")],
    );
    rejects::<SteerRequest>(
        json!({"sessionId": "s", "steerId": "x", "prompt": [{"text": "no type"}]}),
        &[("/prompt/0/type", "one-of")],
    );
    rejects::<SteerRequest>(
        json!({"sessionId": "s", "steerId": "x", "prompt": [{"type": "text", "text": "ok"}, {"type": "text"}]}),
        &[("/prompt/1/text", "required")],
    );
    rejects::<SteerRequest>(
        json!({"sessionId": "s", "steerId": "x", "prompt": ["hi"]}),
        &[("/prompt/0", "type")],
    );
    let bad = check::<SteerRequest>(&json!({
        "sessionId": "s", "steerId": "x", "prompt": [{"type": "text", "text": 5}]
    }));
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].pointer, "/prompt/0/text");
    assert_eq!(bad[0].rule.id(), "acp-content-block");

    assert!(AcpContentBlock::from_value(json!({"type": "image"})).is_err());
    assert!(AcpContentBlock::from_value(json!(null)).is_err());
}

#[test]
fn steer_response_and_applied() {
    let r: SteerResponse = round_trip(json!({"outcome": "injected"}));
    assert_eq!(r.outcome, SteerOutcome::Injected);
    let r: SteerResponse = round_trip(json!({"outcome": "failed"}));
    assert_eq!(r.outcome, SteerOutcome::Failed);
    rejects::<SteerResponse>(json!({"outcome": "queued"}), &[("/outcome", "one-of")]);
    rejects::<SteerResponse>(json!({}), &[("/outcome", "required")]);

    let a: SteerApplied = round_trip(json!({"sessionId": "s", "steerId": "x"}));
    assert_eq!(a.steer_id, "x");
    rejects::<SteerApplied>(json!({"sessionId": "s"}), &[("/steerId", "required")]);
}

// ----------------------------------------------------------- subagent queries

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
    assert!(e.extra.is_empty());
    assert_eq!(serde_json::to_string(&EmptyResponse::new()).unwrap(), "{}");
    let e: EmptyResponse = round_trip(json!({"vendor": 1}));
    assert_eq!(e.extra["vendor"], json!(1));
    rejects::<EmptyResponse>(json!(null), &[("", "type")]);
}

// ----------------------------------------------- notices, titles, phases

#[test]
fn notice_round_trips_and_rejections() {
    let n: NoticeMeta =
        round_trip(json!({"level": "warning", "message": "", "source": "configWarning"}));
    assert_eq!(n.level, NoticeLevel::Warning);
    round_trip::<NoticeMeta>(json!({"level": "info", "message": "m"}));
    round_trip::<NoticeMeta>(json!({"level": "error", "message": " \n "}));
    rejects::<NoticeMeta>(
        json!({"level": "debug", "message": "m"}),
        &[("/level", "one-of")],
    );
    rejects::<NoticeMeta>(
        json!({"level": "info", "message": "m", "source": null}),
        &[("/source", "not-null")],
    );
    rejects::<NoticeMeta>(json!({"level": "info"}), &[("/message", "required")]);
}

#[test]
fn title_source_and_message_phase() {
    for (s, authoritative) in [
        ("explicit", true),
        ("generated", true),
        ("fallback", false),
        ("unset", false),
    ] {
        let t: TitleSource = round_trip(json!(s));
        assert_eq!(t.is_authoritative(), authoritative, "{s}");
    }
    rejects::<TitleSource>(json!("manual"), &[("", "one-of")]);
    rejects::<TitleSource>(json!(null), &[("", "one-of")]);

    assert_eq!(
        round_trip::<MessagePhase>(json!("commentary")),
        MessagePhase::Commentary
    );
    assert_eq!(
        round_trip::<MessagePhase>(json!("final_answer")),
        MessagePhase::FinalAnswer
    );
    rejects::<MessagePhase>(json!("final"), &[("", "one-of")]);
}

// -------------------------------------------------- session establishment

#[test]
fn worktree_project() {
    let w: WorktreeProject = round_trip(json!({"version": 1, "originProjectPath": "/repo"}));
    assert_eq!(w.origin_project_path, "/repo");
    rejects::<WorktreeProject>(json!({"version": 1}), &[("/originProjectPath", "required")]);
    rejects::<WorktreeProject>(
        json!({"version": 1, "originProjectPath": null}),
        &[("/originProjectPath", "type")],
    );
}

#[test]
fn session_config_values_are_strings_or_booleans_in_wire_order() {
    let text = r#"{"version":1,"configOptionValues":{"zeta":"high","plan_mode":true,"alpha":false},"modelId":"gpt-5"}"#;
    let c: SessionConfig = serde_json::from_str(text).unwrap();
    assert_eq!(c.model_id.as_deref(), Some("gpt-5"));
    assert_eq!(
        c.config_option_values.keys().collect::<Vec<_>>(),
        ["zeta", "plan_mode", "alpha"]
    );
    assert_eq!(c.config_option_values["zeta"].as_str(), Some("high"));
    assert_eq!(c.config_option_values["plan_mode"].as_bool(), Some(true));
    assert_eq!(serde_json::to_string(&c).unwrap(), text);

    round_trip::<SessionConfig>(json!({"version": 1, "configOptionValues": {}}));

    let built = SessionConfig::new(
        [
            ("mode", ConfigOptionValue::from("plan")),
            ("fast", true.into()),
        ]
        .into_iter()
        .collect::<ConfigOptionValues>(),
    );
    assert_eq!(
        serde_json::to_string(&built).unwrap(),
        r#"{"version":1,"configOptionValues":{"mode":"plan","fast":true}}"#
    );
}

#[test]
fn session_config_rejections() {
    rejects::<SessionConfig>(
        json!({"version": 1}),
        &[("/configOptionValues", "required")],
    );
    rejects::<SessionConfig>(
        json!({"version": 1, "configOptionValues": {"a": 1, "b": null, "c/d": ["x"]}}),
        &[
            ("/configOptionValues/a", "type"),
            ("/configOptionValues/b", "type"),
            ("/configOptionValues/c~1d", "type"),
        ],
    );
    rejects::<SessionConfig>(
        json!({"version": 1, "configOptionValues": {}, "modelId": null}),
        &[("/modelId", "not-null")],
    );
    rejects::<SessionConfig>(
        json!({"version": 1, "configOptionValues": []}),
        &[("/configOptionValues", "type")],
    );
}

#[test]
fn fork_at_turn() {
    let f: ForkAtTurn = round_trip(json!({"version": 1}));
    assert_eq!(f.turn_id, None);
    let f: ForkAtTurn = round_trip(json!({"version": 1, "turnId": "turn-3"}));
    assert_eq!(f.turn_id.as_deref(), Some("turn-3"));
    rejects::<ForkAtTurn>(
        json!({"version": 1, "turnId": null}),
        &[("/turnId", "not-null")],
    );
    rejects::<ForkAtTurn>(json!({"turnId": "t"}), &[("/version", "required")]);
}

#[test]
fn session_activity_update() {
    let u: SessionActivityUpdate = round_trip(json!({
        "version": 1, "sessionId": "s", "state": "requires_action", "backgroundTaskCount": 2
    }));
    assert_eq!(u.state, SessionActivityState::RequiresAction);
    assert_eq!(u.background_task_count, Count::new(2));
    round_trip::<SessionActivityUpdate>(
        json!({"version": 1, "sessionId": "s", "state": "idle", "backgroundTaskCount": 0}),
    );
    rejects::<SessionActivityUpdate>(
        json!({"version": 1, "sessionId": "s", "state": "running"}),
        &[("/backgroundTaskCount", "required")],
    );
    rejects::<SessionActivityUpdate>(
        json!({"version": 1, "sessionId": "s", "state": "busy", "backgroundTaskCount": -1}),
        &[
            ("/state", "one-of"),
            ("/backgroundTaskCount", "non-negative-integer"),
        ],
    );
}

#[test]
fn session_history_read_request() {
    round_trip::<SessionHistoryReadRequest>(json!({"sessionId": "s"}));
    rejects::<SessionHistoryReadRequest>(json!({}), &[("/sessionId", "required")]);
}

#[test]
fn schemas_describe_unions_and_maps() {
    let s = serde_json::to_value(schemars::schema_for!(SessionConfig)).unwrap();
    let values = &s["properties"]["configOptionValues"];
    assert_eq!(values["type"], "object");
    assert_eq!(
        values["additionalProperties"]["type"],
        json!(["string", "boolean"])
    );

    let s = serde_json::to_value(schemars::schema_for!(GoalControlRequest)).unwrap();
    assert_eq!(s["oneOf"].as_array().unwrap().len(), 4);

    let s = serde_json::to_value(schemars::schema_for!(SteerRequest)).unwrap();
    assert_eq!(s["required"], json!(["sessionId", "prompt", "steerId"]));
}

// --------------------------------------------------------------------- corpus

fn corpus_dir() -> PathBuf {
    common::shared("corpus")
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|e| e == "json" || e == "jsonl") {
            out.push(p);
        }
    }
}

/// Every `(field, value)` of a session-level `_meta.lody` object in `v`.
/// Capability objects (`agentCapabilities`, `clientCapabilities`, and the
/// protocol-v2 `capabilities`) use the same feature names for other shapes
/// and are skipped.
fn lody_meta(v: &Value, parent_key: &str, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Object(obj) => {
            let in_capabilities = matches!(
                parent_key,
                "agentCapabilities" | "clientCapabilities" | "capabilities"
            );
            if !in_capabilities
                && let Some(lody) = obj.get("_meta").and_then(|m| m.get("lody"))
                && let Some(lody) = lody.as_object()
            {
                for (k, x) in lody {
                    out.push((k.clone(), x.clone()));
                }
            }
            for (k, x) in obj {
                lody_meta(x, k, out);
            }
        }
        Value::Array(items) => {
            for x in items {
                lody_meta(x, parent_key, out);
            }
        }
        _ => {}
    }
}

fn parses<T: DeserializeOwned + Check>(v: &Value) -> Result<(), String> {
    let violations = check::<T>(v);
    let parsed = serde_json::from_value::<T>(v.clone());
    match (violations.is_empty(), parsed) {
        (true, Ok(_)) => Ok(()),
        (false, Err(_)) => Err(format!("{violations:?}")),
        (a, b) => Err(format!(
            "check and serde disagree: check ok {a}, serde ok {}",
            b.is_ok()
        )),
    }
}

#[test]
fn corpus_session_meta_values_parse() {
    let dir = corpus_dir();
    let mut paths = Vec::new();
    files(&dir, &mut paths);
    assert!(!paths.is_empty());

    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    let mut failures = Vec::new();
    for path in &paths {
        let text = std::fs::read_to_string(path).unwrap();
        let mut found = Vec::new();
        for value in serde_json::Deserializer::from_str(&text).into_iter::<Value>() {
            let value = value.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            lody_meta(&value, "", &mut found);
        }
        for (field, v) in found {
            let result = match field.as_str() {
                // `goal` is opt|null in session metadata: null means "no goal".
                "goal" => parses::<Option<GoalSnapshot>>(&v),
                "notice" => parses::<NoticeMeta>(&v),
                "task" => parses::<TaskMeta>(&v),
                "activity" => parses::<ActivityMeta>(&v),
                "titleSource" => parses::<TitleSource>(&v),
                "messagePhase" => parses::<MessagePhase>(&v),
                "worktreeProject" => parses::<WorktreeProject>(&v),
                "sessionConfig" => parses::<SessionConfig>(&v),
                "forkAtTurn" => parses::<ForkAtTurn>(&v),
                "steer" => parses::<SteerPromptMeta>(&v),
                "goalControl" => parses::<GoalPromptControl>(&v),
                "turnId" => parses::<String>(&v),
                "toolName" => parses::<String>(&v).and_then(|()| {
                    if tool_names::ALL.contains(&v.as_str().unwrap_or_default()) {
                        Ok(())
                    } else {
                        Err(format!("{v} is not a contract tool name"))
                    }
                }),
                _ => continue,
            };
            *seen.entry(field.clone()).or_default() += 1;
            if let Err(e) = result {
                failures.push(format!("{}: {field} = {v}: {e}", path.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The corpus exercises these fields; make sure the walk found them.
    for field in [
        "goal",
        "notice",
        "task",
        "activity",
        "titleSource",
        "messagePhase",
        "turnId",
        "toolName",
    ] {
        assert!(
            seen.get(field).copied().unwrap_or(0) > 0,
            "no {field} in corpus: {seen:?}"
        );
    }
}

/// `parses::<Option<T>>` needs `Option<T>: DeserializeOwned + Check`, and
/// `parses::<String>` needs `String: Check`; both come from the foundation.
#[test]
fn goal_meta_null_means_no_goal() {
    assert!(parses::<Option<GoalSnapshot>>(&json!(null)).is_ok());
    assert!(parses::<GoalSnapshot>(&json!(null)).is_err());
}
