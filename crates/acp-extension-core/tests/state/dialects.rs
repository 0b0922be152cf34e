//! Vendor and official dialects

use super::*;

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
fn goals_from_every_carrier_with_each_carriers_time_unit() {
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
    // codex's own key carries its native epoch seconds: read as seconds,
    // not divided into 1970.
    let (state, _) = fold(&[
        agent_named("@agentclientprotocol/codex-acp"),
        (
            A2C,
            info_update(
                "s",
                json!({"codex": {"goal": {"objective": "x", "status": "active",
                    "createdAt": 1790000000u64, "updatedAt": 1790000100u64}}}),
            ),
        ),
    ]);
    let g = state.session("s").unwrap().current_goal().unwrap().clone();
    assert_eq!(
        g.created_at_epoch_seconds.map(|t| t.get()),
        Some(1790000000.0)
    );
    assert_eq!(
        g.updated_at_epoch_seconds.map(|t| t.get()),
        Some(1790000100.0)
    );
    let (state, _) = fold(&[(
        A2C,
        info_update(
            "s",
            json!({"codex": {"goal": {"objective": "x", "status": "cleared"}}}),
        ),
    )]);
    assert!(state.session("s").unwrap().goal.is_null());
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
    assert!(state.session("s").is_none_or(|s| s.goal.is_undefined()));
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
    assert_eq!(outcome("request:12"), SteerStatus::Injected);
    assert_eq!(outcome("request:13"), SteerStatus::StartedNewTurn);
    assert_eq!(outcome("request:14"), SteerStatus::PromptRequired);
    assert_eq!(outcome("request:15"), SteerStatus::Failed);
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
    // `taskType` has no place in a row: not its actor.
    assert!(shell.get("actor").is_none(), "{shell}");
    assert_eq!(tasks["call_9"].tool_call_id, "call_9");
}

/// AIR's async tasks as official-adapters.md maps them, written by hand: a
/// task with a `name` and a `description` keeps both (title and
/// description); it stays on its own tool call through updates that do not
/// repeat it; one without a tool call is on `task:<id>`.
#[test]
fn air_async_tasks_keep_their_name_description_and_tool_call() {
    let (state, _) = fold(&[
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "async_task_spawned", "asyncTaskId": "a1", "name": "Explore",
                    "taskType": "local_agent", "description": "Map the parser", "showInTranscript": true,
                    "canStop": true, "toolCallId": "toolu_7"}),
            ),
        ),
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "async_task_progress", "asyncTaskId": "a1", "summary": "reading",
                    "usage": {"totalTokens": 10, "toolUses": 1, "durationMs": 5}}),
            ),
        ),
        (
            A2C,
            update(
                "s",
                json!({"sessionUpdate": "async_task_spawned", "asyncTaskId": "a2", "name": "watch",
                    "taskType": "shell", "showInTranscript": false, "canStop": true}),
            ),
        ),
    ]);
    assert_eq!(invalid_rules(&state), Vec::<String>::new());
    let tasks = &state.session("s").unwrap().tasks;
    let a1 = &tasks["a1"];
    assert_eq!(a1.tool_call_id, "toolu_7");
    assert_eq!(a1.title.as_deref(), Some("Explore"));
    let row = serde_json::to_value(&a1.task).unwrap();
    assert_eq!(row["description"], "Map the parser");
    assert_eq!(row["summary"], "reading");
    assert_eq!(row["parentToolCallId"], "toolu_7");
    assert_eq!(row["status"], "in_progress");
    assert!(row.get("actor").is_none(), "{row}");
    let a2 = &tasks["a2"];
    assert_eq!(a2.tool_call_id, "task:a2");
    assert_eq!(a2.title.as_deref(), Some("watch"));
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
    // Management alone: `lifecycle` is still the contract's literal `true`
    // (it was `false`, which no valid capability holds).
    let (state, _) = fold(&[(
        A2C,
        json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1, "agentCapabilities": {
            "_meta": {"lody.ai/kimi": {"protocolVersion": 1, "features": {"subagentManagement": true}}}}}}),
    )]);
    let sub = &state.negotiation().agent.features["subagents"];
    assert_eq!(
        sub,
        &json!({"version": 1, "lifecycle": true, "list": true, "cancel": true, "output": true})
    );
    assert!(
        serde_json::from_value::<acp_extension_core::capabilities::SubagentCapability>(sub.clone())
            .is_ok()
    );
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
        acp_extension_core::validate::resembles(
            &json!({"_meta": {"lody": {"subagentEvents": {"version": 1}}}})
        )
        .is_some_and(|s| s.contains("capability"))
    );
    // Session metadata stays what it is.
    assert_eq!(
        acp_extension_core::validate::resembles(&json!({"_meta": {"lody": {"turnId": "t1"}}})),
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
    assert_eq!((a.values, a.folded, a.ignored, a.recorded), (4, 0, 4, 0));
    assert_eq!(a.ignored_kinds.calls, 4);
}
