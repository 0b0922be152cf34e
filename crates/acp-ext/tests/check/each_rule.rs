//! One test per rule

use super::*;

const TESTED: &[&str] = &[
    "not-json",
    "input-too-large",
    "not-a-message",
    "shape",
    "unknown-method",
    "unknown-session-update",
    "legacy-method",
    "unknown-meta-key",
    "not-advertised",
    "flag-not-advertised",
    "goal-action-not-advertised",
    "subagent-events-not-negotiated",
    "answer-notes-not-advertised",
    "wrong-side-capability",
    "subagent-first-not-snapshot",
    "subagent-after-terminal",
    "subagent-run-id-native",
    "usage-total-decreased",
    "usage-delta-mismatch",
    "usage-scope-reentered",
    "epoch-milliseconds",
    "utilization-clamped",
    "epoch-fractional",
    "epoch-zero",
    "title-without-source",
    "steer-unknown-id",
    "steer-answered-after-turn",
    "steer-not-applied",
    "namespace-mismatch",
    "namespace-mixed",
    "unknown-session",
];

#[test]
fn every_rule_has_a_test_and_a_unique_id() {
    let ids: Vec<&str> = rules::ALL.iter().map(|r| r.id).collect();
    assert_eq!(ids, TESTED);
    let unique: BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len());
    for r in rules::ALL {
        assert_eq!(rules::RuleInfo::by_id(r.id), Some(r));
    }
}

#[test]
fn rule_table_in_check_md_is_current() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/check.md"))
        .expect("docs/check.md");
    assert!(
        doc.contains(&rules::markdown_table()),
        "docs/check.md must contain rules::markdown_table()"
    );
}

#[test]
fn not_json() {
    let tap = concat!(
        r#"{"dir":"a2c","t":0.1,"raw":"Listening on stdio"}"#,
        "\n",
        r#"{"dir":"a2c","t":0.2,"msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[]}}}}"#,
        "\n",
        "{broken\n",
    );
    let found = check_text(tap, Format::Auto);
    assert_eq!(
        located(&found),
        [(1, "not-json", "/raw"), (3, "not-json", "")]
    );
    assert_eq!(found[0].1.severity, Severity::Error);
    assert!(found[0].1.message.contains("Listening on stdio"));

    let quiet = r#"{"dir":"a2c","t":0.2,"msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[]}}}}"#;
    assert!(check_text(quiet, Format::Tap).is_empty());
}

#[test]
fn input_too_large() {
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"x/y\",\"params\":\"{}\"}}\n{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{{\"sessionId\":\"s\",\"update\":{{\"sessionUpdate\":\"plan\",\"entries\":[]}}}}}}\n",
        "a".repeat(input::MAX_VALUE_BYTES + 10)
    );
    let found = check_text(&big, Format::JsonRpc);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!((found[0].0, found[0].1.rule), (1, "input-too-large"));
    // The same through detection, and in a loose file.
    let found = check_text(&big, Format::Auto);
    assert_eq!(rule_ids(&[found[0].1.clone()]), ["input-too-large"]);
    let found = check_text(&big, Format::Loose);
    assert_eq!(found[0].1.rule, "input-too-large");

    assert!(
        check_text(
            r#"{"jsonrpc":"2.0","method":"x/y","params":"aaaa"}"#,
            Format::JsonRpc
        )
        .is_empty()
    );
}

#[test]
fn not_a_message() {
    let findings = run(&[
        (A2C, json!(5)),
        (A2C, json!({"foo": 1})),
        (A2C, json!({"jsonrpc": "2.0", "method": 3})),
        // JSON-RPC 2.0 says so in every message.
        (A2C, json!({"method": "session/update", "params": {}})),
        (A2C, json!({"jsonrpc": "1.0", "id": 1, "result": {}})),
    ]);
    assert_eq!(
        paths(&of(&findings, &rules::NOT_A_MESSAGE)),
        ["", "", "/method", "/jsonrpc", "/jsonrpc"]
    );
    assert_clean(&[(
        A2C,
        session_update("s", json!({"sessionUpdate": "plan", "entries": []})),
    )]);
}

#[test]
fn shape() {
    let mut bad = snapshot("s", "r", "running");
    bad["params"]["snapshot"]["summary"] = Value::Null;
    let findings = run(&with(both_subagent_events(), vec![(A2C, bad)]));
    let hits = of(&findings, &rules::SHAPE);
    assert_eq!(hits.len(), 1, "{findings:?}");
    assert_eq!(hits[0].path, "/params/snapshot/summary");
    assert!(
        hits[0].message.ends_with("(not-null)"),
        "{}",
        hits[0].message
    );

    // `_meta.<ns>` fields on standard messages, and extension results.
    let findings = run(&[
        (
            A2C,
            goal_info(json!({"objective": "o", "status": "paused-ish"})),
        ),
        (C2A, req(7, "_lody/rate_limits/get", json!({}))),
        (A2C, ok(7, json!({"rateLimits": "none"}))),
    ]);
    assert_eq!(
        paths(&of(&findings, &rules::SHAPE)),
        [
            "/params/update/_meta/lody/goal/status",
            "/result/rateLimits"
        ]
    );

    assert_clean(&with(
        both_subagent_events(),
        vec![(A2C, snapshot("s", "r", "running"))],
    ));

    // A `session/update` the state cannot place: the state's own rule.
    let findings = run(&[
        (A2C, note("session/update", json!("x"))),
        (
            A2C,
            note("session/update", json!({"sessionId": "", "update": {}})),
        ),
        (
            A2C,
            note("session/update", json!({"sessionId": 4, "update": {}})),
        ),
        (A2C, note("session/update", json!({"sessionId": "s"}))),
        (
            A2C,
            note("session/update", json!({"sessionId": "s", "update": [1]})),
        ),
    ]);
    let hits = of(&findings, &rules::SHAPE);
    assert_eq!(
        paths(&hits),
        [
            "/params",
            "/params/sessionId",
            "/params/sessionId",
            "/params/update",
            "/params/update"
        ]
    );
    assert!(
        hits[0].message.contains("found a string"),
        "{}",
        hits[0].message
    );
    assert!(hits[1].message.contains("non-empty"), "{}", hits[1].message);
}

#[test]
fn unknown_method() {
    let findings = run(&[(A2C, note("_lody/session/nonsense", json!({})))]);
    assert_eq!(rule_ids(&findings), ["unknown-method"]);
    assert_eq!(of(&findings, &rules::UNKNOWN_METHOD)[0].path, "/method");
    // Other vendors' methods are not the contract's business.
    assert_clean(&[(A2C, note("_auth/status_update", json!({"authStatus": {}})))]);
}

#[test]
fn unknown_session_update() {
    let findings = run(&[(
        A2C,
        session_update("s", json!({"sessionUpdate": "widget_update"})),
    )]);
    assert_eq!(rule_ids(&findings), ["unknown-session-update"]);
    assert_eq!(
        of(&findings, &rules::UNKNOWN_SESSION_UPDATE)[0].path,
        "/params/update/sessionUpdate"
    );
    // ACP v2's updates, AIR's, and custom ones (`_` first, which a
    // receiver preserves and otherwise ignores) are read.
    for tag in [
        "agent_message",
        "tool_call_content_chunk",
        "terminal_output_chunk",
        "replay_complete",
        "subagent_spawned",
        "async_task_spawned",
        "_zed_cursor_moved",
    ] {
        assert_clean(&[(A2C, session_update("s", json!({"sessionUpdate": tag})))]);
        // The state ignores those it does not model as transcript, with
        // no record (AIR's, empty here, are malformed for it).
        if tag.ends_with("spawned") {
            continue;
        }
        let mut state = acp_extension_core::state::ConnectionState::new();
        state.message(
            Direction::AgentToClient,
            &session_update("s", json!({"sessionUpdate": tag})),
        );
        assert_eq!(state.invalid().count(), 0, "{tag}");
        assert_eq!(state.accounting().unaccounted(), 0, "{tag}");
    }
}

#[test]
fn legacy_method() {
    let findings = run(&[(
        A2C,
        note(
            "_acp_ext:session_usage_update",
            json!({"usage": {"inputTokens": 1, "outputTokens": 1, "cacheReadInputTokens": 0}}),
        ),
    )]);
    assert_eq!(rule_ids(&findings), ["legacy-method"]);
    // An `_acp_ext:*` method the legacy API never had is unknown.
    let findings = run(&[(A2C, note("_acp_ext:nonsense", json!({})))]);
    assert_eq!(rule_ids(&findings), ["unknown-method"]);
}

#[test]
fn unknown_meta_key() {
    // kimi/grok-style drift on a session update, and in an advertisement.
    let findings = run(&with(
        init(
            json!({"usage": {"version": 1}, "mcp": {"version": 1}}),
            json!({}),
        ),
        vec![(
            A2C,
            session_update(
                "s",
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"},
                    "_meta": {"lody": {"turnId": "t", "turnOrigin": "user"}}}),
            ),
        )],
    ));
    let hits = of(&findings, &rules::UNKNOWN_META_KEY);
    assert_eq!(
        paths(&hits),
        [
            "/result/agentCapabilities/_meta/lody/mcp",
            "/params/update/_meta/lody/turnOrigin"
        ]
    );
    assert_eq!(hits[0].severity, Severity::Info);
    assert_clean(&[(
        A2C,
        session_update(
            "s",
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"},
                "_meta": {"lody": {"turnId": "t", "messagePhase": "commentary"}, "vendor": {"x": 1}}}),
        ),
    )]);
}

#[test]
fn not_advertised() {
    // omp-style: advertises nothing, sends usage.
    let update = usage_update("s", "A", 10, None);
    let findings = run(&with(
        init(json!({}), json!({})),
        vec![(A2C, update.clone())],
    ));
    let hits = of(&findings, &rules::NOT_ADVERTISED);
    assert_eq!(hits.len(), 1, "{findings:?}");
    assert_eq!(hits[0].path, "/method");
    assert!(hits[0].message.contains("`usage`"));

    // `_meta` fields need their capability too.
    let findings = run(&with(
        init(json!({"usage": {"version": 1}}), json!({})),
        vec![(
            A2C,
            goal_info(json!({"objective": "o", "status": "active"})),
        )],
    ));
    assert_eq!(
        of(&findings, &rules::NOT_ADVERTISED)[0].path,
        "/params/update/_meta/lody/goal"
    );

    // Advertised: quiet. No initialize at all (a loose fixture): not judged.
    assert_clean(&with(usage_init(), vec![(A2C, update.clone())]));
    assert_clean(&[(A2C, update)]);
    assert_clean(&[(
        A2C,
        goal_info(json!({"objective": "o", "status": "active"})),
    )]);
}

#[test]
fn flag_not_advertised() {
    let get = req(5, "_lody/rate_limits/get", json!({}));
    let findings = run(&with(
        init(json!({"rateLimits": {"version": 1}}), json!({})),
        vec![(C2A, get.clone())],
    ));
    assert_eq!(rule_ids(&findings), ["flag-not-advertised"]);
    assert!(findings[0].message.contains("query"));
    assert_clean(&with(
        init(
            json!({"rateLimits": {"version": 1, "query": true}}),
            json!({}),
        ),
        vec![(C2A, get)],
    ));

    let list = req(6, "_lody/subagents/list", json!({"sessionId": "s"}));
    let cancel = req(
        7,
        "_lody/subagents/cancel",
        json!({"sessionId": "s", "taskId": "t"}),
    );
    let findings = run(&with(
        init(
            json!({"subagents": {"version": 1, "lifecycle": true, "list": true}}),
            json!({}),
        ),
        vec![(C2A, list.clone()), (C2A, cancel)],
    ));
    assert_eq!(rule_ids(&findings), ["flag-not-advertised"]);
    assert!(findings[0].message.contains("cancel"));

    // Steering on the transport the agent did not choose.
    let steer = req(
        8,
        "_lody/session/steer",
        json!({"sessionId": "s", "prompt": [{"type": "text", "text": "x"}], "steerId": "a"}),
    );
    let findings = run(&with(
        init(json!({"steering": steering("prompt")}), json!({})),
        vec![(C2A, steer.clone())],
    ));
    assert_eq!(rule_ids(&findings), ["flag-not-advertised"]);
    assert_clean(&with(
        init(json!({"steering": steering("request")}), json!({})),
        vec![(C2A, steer)],
    ));
}

#[test]
fn goal_action_not_advertised() {
    let goal = json!({"goal": {"version": 1, "actions": ["set", "pause", "resume", "clear"],
        "controlActions": ["pause", "clear"], "promptActions": ["set", "resume"]}});
    let request = |action: &str| {
        req(
            9,
            "_lody/session/goal",
            json!({"sessionId": "s", "action": action, "objective": "o"}),
        )
    };
    let prompt = |action: &str| {
        req(
            10,
            "session/prompt",
            json!({"sessionId": "s", "prompt": [{"type": "text", "text": "go"}],
                "_meta": {"lody": {"goalControl": {"version": 1, "action": action, "objective": "o"}}}}),
        )
    };
    let findings = run(&with(
        init(goal.clone(), json!({})),
        vec![(C2A, request("set")), (C2A, prompt("pause"))],
    ));
    assert_eq!(
        paths(&of(&findings, &rules::GOAL_ACTION_NOT_ADVERTISED)),
        ["/params/action", "/params/_meta/lody/goalControl/action"]
    );
    assert_eq!(findings.len(), 2, "{findings:?}");

    assert_clean(&with(
        init(goal, json!({})),
        vec![(C2A, request("pause")), (C2A, prompt("set"))],
    ));
    // Claude advertises goal without controlActions: the request carries no action.
    let findings = run(&with(
        init(
            json!({"goal": {"version": 1, "actions": ["set", "clear"]}}),
            json!({}),
        ),
        vec![(C2A, request("clear"))],
    ));
    assert_eq!(rule_ids(&findings), ["goal-action-not-advertised"]);
}

#[test]
fn subagent_events_not_negotiated() {
    let findings = run(&with(
        init(json!({"subagentEvents": {"version": 1}}), json!({})),
        vec![(A2C, snapshot("s", "r", "running"))],
    ));
    assert_eq!(rule_ids(&findings), ["subagent-events-not-negotiated"]);
    assert!(findings[0].message.contains("client"));
    let findings = run(&with(
        init(json!({}), json!({"subagentEvents": {"version": 1}})),
        vec![(A2C, snapshot("s", "r", "running"))],
    ));
    assert_eq!(rule_ids(&findings), ["subagent-events-not-negotiated"]);
    assert!(findings[0].message.contains("agent"));
    assert_clean(&with(
        both_subagent_events(),
        vec![(A2C, snapshot("s", "r", "running"))],
    ));
}

#[test]
fn answer_notes_not_advertised() {
    let findings = run(&with(
        init_caps(
            json!({}),
            json!({"elicitation": {"form": {}}, "_meta": {"lody": {"elicitation": {"version": 1}}}}),
        ),
        vec![(A2C, elicitation_with_note())],
    ));
    assert_eq!(rule_ids(&findings), ["answer-notes-not-advertised"]);
    assert_eq!(
        findings[0].path,
        "/params/requestedSchema/properties/approach_note/_meta/lody/elicitation/noteFor"
    );
    // answerNotes without standard form support is not enough either.
    let findings = run(&with(
        init(
            json!({}),
            json!({"elicitation": {"version": 1, "answerNotes": true}}),
        ),
        vec![(A2C, elicitation_with_note())],
    ));
    assert_eq!(rule_ids(&findings), ["answer-notes-not-advertised"]);
    assert!(findings[0].message.contains("form"));

    assert_clean(&with(
        init_caps(
            json!({}),
            json!({"elicitation": {"form": {}},
                "_meta": {"lody": {"elicitation": {"version": 1, "answerNotes": true}}}}),
        ),
        vec![(A2C, elicitation_with_note())],
    ));
}

#[test]
fn wrong_side_capability() {
    // devin-style: elicitation injected into the agent's capabilities.
    let findings = run(&init(
        json!({"elicitation": {"version": 1, "answerNotes": true}}),
        json!({}),
    ));
    let hits = of(&findings, &rules::WRONG_SIDE_CAPABILITY);
    assert_eq!(hits.len(), 1, "{findings:?}");
    assert_eq!(
        hits[0].path,
        "/result/agentCapabilities/_meta/lody/elicitation"
    );
    let findings = run(&init(json!({}), json!({"usage": {"version": 1}})));
    assert_eq!(
        of(&findings, &rules::WRONG_SIDE_CAPABILITY)[0].path,
        "/params/clientCapabilities/_meta/lody/usage"
    );
    assert_clean(&init(
        json!({"usage": {"version": 1}}),
        json!({"elicitation": {"version": 1, "answerNotes": true}}),
    ));
}

#[test]
fn subagent_first_not_snapshot() {
    let findings = run(&with(
        both_subagent_events(),
        vec![
            (A2C, progress("s", "r")),
            (A2C, snapshot("s", "r2", "running")),
            (A2C, output("s", "r")),
        ],
    ));
    // Every event of the run is rejected until its first snapshot.
    assert_eq!(
        rule_ids(&findings),
        ["subagent-first-not-snapshot", "subagent-first-not-snapshot"]
    );
    assert_eq!(findings[0].path, "/params/type");
    assert_clean(&with(
        both_subagent_events(),
        vec![
            (A2C, snapshot("s", "r", "running")),
            (A2C, progress("s", "r")),
            (A2C, output("s", "r")),
        ],
    ));
}

#[test]
fn subagent_after_terminal() {
    let findings = run(&with(
        both_subagent_events(),
        vec![
            (A2C, snapshot("s", "r", "running")),
            (A2C, snapshot("s", "r", "completed")),
            (A2C, output("s", "r")),
            (A2C, progress("s", "r")),
        ],
    ));
    assert_eq!(
        rule_ids(&findings),
        ["subagent-after-terminal", "subagent-after-terminal"]
    );
    // Another session's run with the same id is another run; a new run id
    // after the terminal snapshot is fine.
    assert_clean(&with(
        both_subagent_events(),
        vec![
            (A2C, snapshot("s", "r", "running")),
            (A2C, progress("s", "r")),
            (A2C, snapshot("s", "r", "completed")),
            (A2C, snapshot("s2", "r", "running")),
            (A2C, snapshot("s", "r-2", "running")),
        ],
    ));
    // A terminal snapshot may be repeated (adding `outputIncomplete`, say),
    // and `unknown` is not terminal: the run may come back.
    assert_clean(&with(
        both_subagent_events(),
        vec![
            (A2C, snapshot("s", "r", "running")),
            (A2C, snapshot("s", "r", "unknown")),
            (A2C, snapshot("s", "r", "running")),
            (A2C, output("s", "r")),
            (A2C, snapshot("s", "r", "failed")),
            (A2C, snapshot("s", "r", "failed")),
        ],
    ));
    let findings = run(&with(
        both_subagent_events(),
        vec![
            (A2C, snapshot("s", "r", "failed")),
            (A2C, snapshot("s", "r", "completed")),
        ],
    ));
    assert_eq!(rule_ids(&findings), ["subagent-after-terminal"]);
}

#[test]
fn subagent_run_id_native() {
    let tool_call = session_update(
        "s",
        json!({"sessionUpdate": "tool_call", "toolCallId": "toolu_1", "title": "Task"}),
    );
    let findings = run(&with(
        both_subagent_events(),
        vec![
            (A2C, tool_call.clone()),
            (A2C, snapshot("s", "toolu_1", "running")),
        ],
    ));
    assert_eq!(rule_ids(&findings), ["subagent-run-id-native"]);
    assert_eq!(findings[0].path, "/params/runId");

    // The other order: the native id shows up after the run.
    let findings = run(&with(
        init(
            json!({"subagentEvents": {"version": 1}, "tasks": {"version": 1}}),
            json!({"subagentEvents": {"version": 1}}),
        ),
        vec![
            (A2C, snapshot("s", "task-9", "running")),
            (
                A2C,
                session_update(
                    "s",
                    json!({"sessionUpdate": "tool_call", "toolCallId": "x", "title": "t",
                        "_meta": {"lody": {"task": {"version": 1, "taskId": "task-9", "kind": "subagent", "status": "in_progress"}}}}),
                ),
            ),
        ],
    ));
    assert_eq!(rule_ids(&findings), ["subagent-run-id-native"]);
    assert_eq!(findings[0].path, "/params/update/_meta/lody/task/taskId");

    // Task ids listed by `subagents/list` belong to the requested session.
    let findings = run(&with(
        init(
            json!({"subagentEvents": {"version": 1}, "subagents": {"version": 1, "lifecycle": true, "list": true}}),
            json!({"subagentEvents": {"version": 1}}),
        ),
        vec![
            (A2C, snapshot("s", "task-3", "running")),
            (
                C2A,
                req(12, "_lody/subagents/list", json!({"sessionId": "s"})),
            ),
            (
                A2C,
                ok(
                    12,
                    json!({"tasks": [{"taskId": "task-3", "description": "d", "status": "running",
                    "startedAtEpochSeconds": 1710000000, "endedAtEpochSeconds": null}]}),
                ),
            ),
        ],
    ));
    assert_eq!(rule_ids(&findings), ["subagent-run-id-native"]);
    assert_eq!(findings[0].path, "/result/tasks/0/taskId");

    // A run id equal to its own parent tool call id.
    let mut own = snapshot("s", "toolu_2", "running");
    own["params"]["snapshot"]["parentToolCallId"] = json!("toolu_2");
    let findings = run(&with(both_subagent_events(), vec![(A2C, own)]));
    assert_eq!(rule_ids(&findings), ["subagent-run-id-native"]);

    assert_clean(&with(
        both_subagent_events(),
        vec![(A2C, tool_call), (A2C, snapshot("s", "run-1", "running"))],
    ));
}

#[test]
fn usage_total_decreased() {
    let findings = run(&usage_stream(&[
        ("s", "A", 100, None),
        ("s", "A", 50, None),
    ]));
    assert_eq!(rule_ids(&findings), ["usage-total-decreased"]);
    assert_eq!(findings[0].path, "/params/modelUsage/m/inputTokens");
    // A new scope starts from zero again.
    assert_clean(&usage_stream(&[
        ("s", "A", 100, None),
        ("s", "A", 150, None),
        ("s", "B", 10, None),
    ]));
}

/// Folds native snapshots through the reference-port accumulator and returns
/// its updates as notifications.
fn accumulate(scope: &str, steps: &[(&str, &str, Value)]) -> Vec<Value> {
    use acp_extension_core::usage::{SessionUsageAccumulator, fold_lines};
    let mut acc = SessionUsageAccumulator::with_scope_id(scope).unwrap();
    let input: String = steps
        .iter()
        .map(|(s, op, rows)| {
            format!(
                "{}\n",
                json!({"sessionId": s, "operationId": op, "rows": rows})
            )
        })
        .collect();
    let mut out = Vec::new();
    fold_lines(input.as_bytes(), &mut out, &mut acc).unwrap();
    out.lines()
        .map(|l| serde_json::from_str::<Value>(&l.unwrap()).unwrap())
        .filter(|v| !v.is_null())
        .map(|params| note("_lody/session/usage_update", params))
        .collect()
}

#[test]
fn usage_delta_mismatch() {
    let cost = |input: u64, c: f64| json!({"inputTokens": input, "outputTokens": 10, "cacheReadInputTokens": 20, "costUSD": c});
    let updates = accumulate(
        "scope-1",
        &[
            ("s", "op1", json!({"a": cost(100, 0.1)})),
            ("s", "op2", json!({"a": cost(200, 0.2), "b": cost(50, 0.3)})),
            ("s", "op2", json!({"a": cost(250, 0.25)})),
        ],
    );
    assert_eq!(updates.len(), 3);
    let started = vec![(A2C, ok(1, json!({"sessionId": "s"})))];
    let mut msgs = with(
        usage_init(),
        vec![(
            C2A,
            req(1, "session/new", json!({"cwd": "/", "mcpServers": []})),
        )],
    );
    msgs.extend(started);
    let valid: Vec<(Direction, Value)> = updates.iter().map(|u| (A2C, u.clone())).collect();
    assert_clean(&with(msgs.clone(), valid.clone()));

    // Tampered: the delta of the second update double-counts model a.
    let mut tampered = valid.clone();
    tampered[1].1["params"]["delta"]["modelUsage"]["a"]["inputTokens"] = json!(300);
    let findings = run(&with(msgs.clone(), tampered));
    assert_eq!(rule_ids(&findings), ["usage-delta-mismatch"]);
    assert_eq!(findings[0].path, "/params/delta/modelUsage/a/inputTokens");

    // The first update of a scope is measured from zero (session start seen).
    let mut first = valid.clone();
    first[0].1["params"]["delta"]["modelUsage"]["a"]["costUSD"] = json!(0.05);
    let findings = run(&with(msgs.clone(), first));
    assert_eq!(rule_ids(&findings), ["usage-delta-mismatch"]);
    assert_eq!(findings[0].path, "/params/delta/modelUsage/a/costUSD");

    // Without the session start, the first delta is not judged.
    let mut first = valid;
    first[0].1["params"]["delta"]["modelUsage"]["a"]["inputTokens"] = json!(1);
    assert_clean(&with(usage_init(), first));

    // Hand-written: a delta on the second update that is not the change.
    let findings = run(&usage_stream(&[
        ("s", "A", 100, Some(100)),
        ("s", "A", 150, Some(150)),
    ]));
    assert_eq!(rule_ids(&findings), ["usage-delta-mismatch"]);
}

#[test]
fn usage_matches_every_reference_vector() {
    // The reference accumulator's own outputs never break the usage rules.
    let mut cases = 0;
    for case in read_jsonl(&shared("vectors/usage-accumulator.jsonl")) {
        let mut msgs = usage_init();
        msgs.push((
            C2A,
            req(100, "session/new", json!({"cwd": "/", "mcpServers": []})),
        ));
        msgs.push((A2C, ok(100, json!({"sessionId": "session-1"}))));
        for out in case["outputs"].as_array().unwrap() {
            if !out.is_null() {
                // One accumulator is one accounting lifetime; the contract
                // keeps one per ACP session. A few random vectors echo two
                // session ids through one instance: replay them as the one
                // session whose ledger they are.
                let mut params = out.clone();
                params["sessionId"] = json!("session-1");
                msgs.push((A2C, note("_lody/session/usage_update", params)));
            }
        }
        let findings = run(&msgs);
        let name = case["name"].as_str().unwrap();
        if name == "scope_id_300_chars_not_validated" {
            // The accumulator keeps any id; the contract's type caps it at 256.
            assert_eq!(rule_ids(&findings), ["shape"]);
            assert!(findings[0].message.contains("at most 256"), "{findings:?}");
        } else {
            assert!(findings.is_empty(), "{name}: {findings:#?}");
        }
        cases += 1;
    }
    assert!(cases > 40);
}

#[test]
fn subagent_rules_match_every_reference_emitter_vector() {
    let mut events = 0;
    for case in read_jsonl(&shared("vectors/subagent-emitter.jsonl")) {
        let mut msgs = both_subagent_events();
        for e in case["events"].as_array().unwrap() {
            msgs.push((A2C, note("_lody/subagents/event", e.clone())));
            events += 1;
        }
        // The emitter forwards patches unvalidated (`shape` may fire); the
        // run rules never do, but for the events of a run whose starting
        // snapshot broke the contract: a client drops that snapshot, so
        // the run never started.
        let findings: Vec<Finding> = run(&msgs)
            .into_iter()
            .filter(|f| f.rule != "shape")
            .collect();
        if case["name"] == "start_snapshot_not_validated" {
            assert_eq!(rule_ids(&findings), ["subagent-first-not-snapshot"]);
            continue;
        }
        assert!(findings.is_empty(), "{}: {findings:#?}", case["name"]);
    }
    assert!(events > 20);
}

#[test]
fn usage_scope_reentered() {
    let findings = run(&usage_stream(&[
        ("s", "A", 10, None),
        ("s", "B", 10, None),
        ("s", "A", 20, None),
    ]));
    assert_eq!(rule_ids(&findings), ["usage-scope-reentered"]);
    assert_eq!(findings[0].path, "/params/_meta/lody/usageScopeId");
    assert_clean(&usage_stream(&[
        ("s", "A", 10, None),
        ("s", "A", 20, None),
        ("s", "B", 10, None),
        ("s2", "A", 10, None),
    ]));
}

#[test]
fn a_usage_scope_id_too_long_breaks_the_type() {
    let long = "é".repeat(257);
    let findings = run(&[(A2C, usage_update("s", &long, 1, None))]);
    assert_eq!(rule_ids(&findings), ["shape"]);
    assert_eq!(findings[0].path, "/params/_meta/lody/usageScopeId");
    assert!(findings[0].message.contains("at most 256"), "{findings:?}");
    assert_clean(&[(A2C, usage_update("s", &"é".repeat(256), 1, None))]);
}

#[test]
fn epoch_milliseconds() {
    let findings = run(&[(
        A2C,
        goal_info(
            json!({"objective": "o", "status": "active", "createdAtEpochSeconds": 1710000000000u64}),
        ),
    )]);
    assert_eq!(rule_ids(&findings), ["epoch-milliseconds"]);
    assert_eq!(findings[0].severity, Severity::Warning);
    assert_eq!(
        findings[0].path,
        "/params/update/_meta/lody/goal/createdAtEpochSeconds"
    );
    assert_clean(&[(
        A2C,
        goal_info(
            json!({"objective": "o", "status": "active", "createdAtEpochSeconds": 1710000000}),
        ),
    )]);
}

/// claude's rate limit: what the state clamps and converts, `check` warns
/// of, at the same pointers (the state records each, folded).
#[test]
fn utilization_clamped() {
    let usage = |info: Value| {
        note(
            "session/update",
            json!({"sessionId": "s", "update": {"sessionUpdate": "usage_update", "used": 1, "size": 10,
                "_meta": {"_claude/rateLimit": info}}}),
        )
    };
    let info = json!({"status": "allowed_warning", "rateLimitType": "five_hour",
        "utilization": 1.3, "resetsAt": 1790092800000u64,
        "unifiedWindows": {"seven_day": {"utilization": -0.1, "resetsAt": 1790500000}}});
    let findings = run(&[(A2C, usage(info.clone()))]);
    let found: Vec<(&str, Severity, &str)> = findings
        .iter()
        .map(|f| (f.rule, f.severity, f.path.as_str()))
        .collect();
    let expected = [
        (
            "utilization-clamped",
            Severity::Warning,
            "/params/update/_meta/_claude~1rateLimit/utilization",
        ),
        (
            "epoch-milliseconds",
            Severity::Warning,
            "/params/update/_meta/_claude~1rateLimit/resetsAt",
        ),
        (
            "utilization-clamped",
            Severity::Warning,
            "/params/update/_meta/_claude~1rateLimit/unifiedWindows/seven_day/utilization",
        ),
    ];
    assert_eq!(found, expected);
    let mut state = acp_extension_core::state::ConnectionState::new();
    state.message(Direction::AgentToClient, &usage(info));
    let records: Vec<(&str, &str, bool)> = state
        .invalid()
        .map(|i| (i.rule.as_str(), i.pointer.as_str(), i.folded))
        .collect();
    let expected: Vec<(&str, &str, bool)> =
        expected.iter().map(|(r, _, p)| (*r, *p, true)).collect();
    assert_eq!(records, expected);
    let five = &state.rate_limits()["claude:five_hour"].rate_limit.windows[0];
    assert_eq!(five.used_percent.get(), 100.0);
    assert_eq!(
        five.resets_at_epoch_seconds.map(|t| t.get()),
        Some(1790092800.0)
    );
    assert_clean(&[(
        A2C,
        usage(json!({"rateLimitType": "five_hour", "utilization": 0.5, "resetsAt": 1790092800})),
    )]);
}

#[test]
fn epoch_fractional() {
    // dsh/pi/kimi-style: milliseconds divided by 1000 without rounding.
    let mut event = snapshot("s", "r", "running");
    event["params"]["snapshot"]["startedAtEpochSeconds"] = json!(1710000000.123);
    let findings = run(&[(A2C, event)]);
    assert_eq!(rule_ids(&findings), ["epoch-fractional"]);
    assert_eq!(findings[0].path, "/params/snapshot/startedAtEpochSeconds");
    let mut event = snapshot("s", "r", "running");
    event["params"]["snapshot"]["startedAtEpochSeconds"] = json!(1710000000);
    assert_clean(&[(A2C, event)]);
}

#[test]
fn epoch_zero() {
    let findings = run(&[(
        A2C,
        goal_info(json!({"objective": "o", "status": "active", "updatedAtEpochSeconds": 0})),
    )]);
    assert_eq!(rule_ids(&findings), ["epoch-zero"]);
    // Only contract payloads are looked at, not other vendors' metadata.
    assert_clean(&[(
        A2C,
        session_update(
            "s",
            json!({"sessionUpdate": "session_info_update", "_meta": {"vendor": {"createdAtEpochSeconds": 0}}}),
        ),
    )]);
}

#[test]
fn a_used_percent_outside_0_to_100_breaks_the_type() {
    let snapshot = |p: f64| {
        json!({"rateLimits": [{"limitId": "l", "scope": {"providerId": "p"},
            "windows": [{"usedPercent": p, "windowDurationSeconds": null, "resetsAtEpochSeconds": null}]}]})
    };
    let findings = run(&[
        (A2C, note("_lody/rate_limits/update", snapshot(150.0))),
        (C2A, req(3, "_lody/rate_limits/get", json!({}))),
        (A2C, ok(3, snapshot(-1.0))),
    ]);
    assert_eq!(
        paths(&of(&findings, &rules::SHAPE)),
        [
            "/params/rateLimits/0/windows/0/usedPercent",
            "/result/rateLimits/0/windows/0/usedPercent"
        ]
    );
    assert_eq!(findings.len(), 2);
    assert!(findings[0].message.contains("0..100"), "{findings:?}");
    assert_clean(&[
        (A2C, note("_lody/rate_limits/update", snapshot(100.0))),
        (A2C, note("_lody/rate_limits/update", snapshot(0.0))),
    ]);
}

#[test]
fn title_without_source() {
    let title = |meta: Value| {
        session_update(
            "s",
            json!({"sessionUpdate": "session_info_update", "title": "Fix the parser", "_meta": meta}),
        )
    };
    let titled = init(json!({"sessionTitle": {"version": 1}}), json!({}));
    let findings = run(&with(titled.clone(), vec![(A2C, title(json!({})))]));
    assert_eq!(rule_ids(&findings), ["title-without-source"]);
    assert_eq!(findings[0].path, "/params/update/title");
    assert_clean(&with(
        titled,
        vec![(A2C, title(json!({"lody": {"titleSource": "generated"}})))],
    ));
    // Without `sessionTitle`, untagged titles are ordinary ACP.
    assert_clean(&with(
        init(json!({}), json!({})),
        vec![(A2C, title(json!({})))],
    ));
}

#[test]
fn steer_unknown_id() {
    let steer = |id: &str| {
        req(
            4,
            "_lody/session/steer",
            json!({"sessionId": "s", "prompt": [{"type": "text", "text": "x"}], "steerId": id}),
        )
    };
    let applied = |id: &str| {
        note(
            "_lody/session/steer_applied",
            json!({"sessionId": "s", "steerId": id}),
        )
    };
    let steering = init(json!({"steering": steering("request")}), json!({}));
    let findings = run(&with(
        steering.clone(),
        vec![(C2A, steer("a")), (A2C, applied("b"))],
    ));
    assert_eq!(rule_ids(&findings), ["steer-unknown-id"]);
    assert_eq!(findings[0].path, "/params/steerId");
    assert_clean(&with(
        steering,
        vec![(C2A, steer("a")), (A2C, applied("a"))],
    ));
    // Prompt transport: the id travels in prompt metadata.
    assert_clean(&with(
        init(json!({"steering": self::steering("prompt")}), json!({})),
        vec![
            (
                C2A,
                req(
                    5,
                    "session/prompt",
                    json!({"sessionId": "s", "prompt": [], "_meta": {"lody": {"steer": {"id": "p1"}}}}),
                ),
            ),
            (A2C, applied("p1")),
        ],
    ));
    // Only the agent's side recorded: not judged.
    assert_clean(&[(A2C, applied("b"))]);
}

#[test]
fn steer_answered_after_turn() {
    // The agent ran the prompt on its dispatch loop: the steer sent
    // mid-turn is answered after the prompt's response.
    let findings = run(&steering_stream(vec![
        (C2A, prompt(1)),
        (C2A, steer_req(2, "st-1")),
        (A2C, end_turn(1)),
        (A2C, outcome(2, "failed")),
    ]));
    assert_eq!(
        rule_ids(&of(&findings, &rules::STEER_ANSWERED_AFTER_TURN)),
        ["steer-answered-after-turn"]
    );
    assert_eq!(findings.len(), 1, "{findings:#?}");
    // Answered mid-turn and applied: clean. A steer sent between turns and
    // refused is not late either.
    assert_clean(&steering_stream(vec![
        (C2A, prompt(1)),
        (C2A, steer_req(2, "st-1")),
        (A2C, outcome(2, "injected")),
        (A2C, steer_applied("st-1")),
        (A2C, end_turn(1)),
        (C2A, steer_req(3, "st-2")),
        (A2C, outcome(3, "failed")),
    ]));
}

#[test]
fn steer_not_applied() {
    // Injected, but the turn ends without `steer_applied`.
    let findings = run(&steering_stream(vec![
        (C2A, prompt(1)),
        (C2A, steer_req(2, "st-1")),
        (A2C, outcome(2, "injected")),
        (A2C, end_turn(1)),
    ]));
    assert_eq!(
        rule_ids(&of(&findings, &rules::STEER_NOT_APPLIED)),
        ["steer-not-applied"]
    );
    assert!(findings[0].message.contains("st-1"), "{findings:#?}");
    // Injected after its turn ended, never applied: both rules.
    let findings = run(&steering_stream(vec![
        (C2A, prompt(1)),
        (C2A, steer_req(2, "st-1")),
        (A2C, end_turn(1)),
        (A2C, outcome(2, "injected")),
    ]));
    assert_eq!(
        rule_ids(&findings),
        ["steer-answered-after-turn", "steer-not-applied"]
    );
    assert_eq!(findings[1].path, "/result/outcome");
    // A failed steer needs no confirmation; a turn whose steer was applied is clean.
    assert_clean(&steering_stream(vec![
        (C2A, prompt(1)),
        (C2A, steer_req(2, "st-1")),
        (A2C, outcome(2, "failed")),
        (A2C, end_turn(1)),
        (C2A, prompt(3)),
        (C2A, steer_req(4, "st-2")),
        (A2C, steer_applied("st-2")),
        (A2C, outcome(4, "injected")),
        (A2C, end_turn(3)),
    ]));
}

#[test]
fn unknown_session() {
    // Activity for a session the connection never opened.
    let findings = run(&with(opened_s1(), vec![(A2C, activity("s9"))]));
    assert_eq!(rule_ids(&findings), ["unknown-session"]);
    assert_eq!(findings[0].path, "/params/sessionId");
    assert!(findings[0].message.contains("\"s9\""), "{findings:#?}");
    // The opened session, one opened by `session/load`, and a fixture that
    // opens no session at all are clean.
    assert_clean(&with(opened_s1(), vec![(A2C, activity("s1"))]));
    assert_clean(&with(
        opened_s1(),
        vec![
            (
                C2A,
                req(
                    2,
                    "session/load",
                    json!({"sessionId": "s2", "cwd": "/", "mcpServers": []}),
                ),
            ),
            (A2C, activity("s2")),
        ],
    ));
    assert_clean(&with(
        init(json!({"sessionActivity": {"version": 1}}), json!({})),
        vec![(A2C, activity("s9"))],
    ));
}

#[test]
fn namespace_mismatch() {
    let usage = |method: &str| {
        note(
            method,
            json!({"sessionId": "s", "usage": row(1), "modelUsage": {"m": row(1)}}),
        )
    };
    let agent_both =
        json!({"_meta": {"ua": {"usage": {"version": 1}}, "lody": {"usage": {"version": 1}}}});
    let stream = |client: Value, tail: Vec<(Direction, Value)>| {
        let mut msgs = vec![
            (
                C2A,
                req(
                    0,
                    "initialize",
                    json!({"protocolVersion": 1, "clientCapabilities": client}),
                ),
            ),
            (
                A2C,
                ok(
                    0,
                    json!({"protocolVersion": 1, "agentCapabilities": agent_both}),
                ),
            ),
        ];
        msgs.extend(tail);
        msgs
    };
    // The issue's connection: a lody-only client gets `_ua/…` and `_meta.ua`.
    let lody_client = json!({"_meta": {"lody": {}}});
    let findings = run(&stream(
        lody_client.clone(),
        vec![
            (A2C, usage("_ua/session/usage_update")),
            (
                A2C,
                session_update(
                    "s",
                    json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"},
                        "_meta": {"ua": {"messagePhase": "final_answer"}}}),
                ),
            ),
        ],
    ));
    let hits = of(&findings, &rules::NAMESPACE_MISMATCH);
    assert_eq!(paths(&hits), ["/method", "/params/update/_meta/ua"]);
    assert!(hits[0].message.contains("only `_meta.lody`"), "{hits:#?}");
    assert!(hits[0].message.contains("write `lody`"), "{hits:#?}");
    // A plain client (no section) reads lody; a ua-only client reads ua;
    // a client advertising both reads either.
    assert_eq!(
        rule_ids(&run(&stream(
            json!({}),
            vec![(A2C, usage("_ua/session/usage_update"))]
        ))),
        ["namespace-mismatch"]
    );
    assert_clean(&stream(
        json!({}),
        vec![(A2C, usage("_lody/session/usage_update"))],
    ));
    assert_clean(&stream(
        json!({"_meta": {"ua": {}}}),
        vec![(A2C, usage("_ua/session/usage_update"))],
    ));
    assert_eq!(
        rule_ids(&run(&stream(
            json!({"_meta": {"ua": {}}}),
            vec![(A2C, usage("_lody/session/usage_update"))]
        ))),
        ["namespace-mismatch"]
    );
    assert_clean(&stream(
        json!({"_meta": {"ua": {}, "lody": {}}}),
        vec![(A2C, usage("_ua/session/usage_update"))],
    ));
    // The client writing to a ua-only agent in lody.
    let findings = run(&[
        (
            C2A,
            req(
                0,
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": {}}),
            ),
        ),
        (
            A2C,
            ok(
                0,
                json!({"protocolVersion": 1, "agentCapabilities": {"_meta": {"ua": {"steering": steering("request")}}}}),
            ),
        ),
        (C2A, steer_req(1, "st")),
    ]);
    assert_eq!(rule_ids(&findings), ["namespace-mismatch"]);
    assert!(
        findings[0]
            .message
            .contains("the agent advertised only `_meta.ua`"),
        "{findings:#?}"
    );
    // Before initialize nothing is judged.
    assert_clean(&[(A2C, usage("_ua/session/usage_update"))]);
}

#[test]
fn namespace_mixed() {
    let both = json!({"_meta": {"ua": {}, "lody": {}}});
    let agent =
        json!({"_meta": {"lody": {"usage": {"version": 1}, "sessionTitle": {"version": 1}}}});
    let findings = run(&[
        (
            C2A,
            req(
                0,
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": both}),
            ),
        ),
        (
            A2C,
            ok(0, json!({"protocolVersion": 1, "agentCapabilities": agent})),
        ),
        (
            A2C,
            note(
                "_lody/session/usage_update",
                json!({"sessionId": "s", "usage": row(1)}),
            ),
        ),
        (
            A2C,
            session_update(
                "s",
                json!({"sessionUpdate": "session_info_update", "title": "t", "_meta": {"ua": {"titleSource": "generated"}}}),
            ),
        ),
        (
            A2C,
            session_update(
                "s",
                json!({"sessionUpdate": "session_info_update", "title": "t", "_meta": {"ua": {"titleSource": "generated"}}}),
            ),
        ),
    ]);
    // Reported once per direction, at the first use of the second namespace.
    let hits = of(&findings, &rules::NAMESPACE_MIXED);
    assert_eq!(paths(&hits), ["/params/update/_meta/ua"]);
    assert_eq!(findings.len(), 1, "{findings:#?}");
}

#[test]
fn a_fractional_background_task_count_breaks_the_type() {
    let update = |n: Value| {
        note(
            "_lody/session/activity_update",
            json!({"version": 1, "sessionId": "s", "state": "running", "backgroundTaskCount": n}),
        )
    };
    let findings = run(&[(A2C, update(json!(1.5))), (A2C, update(json!(-1)))]);
    assert_eq!(rule_ids(&findings), ["shape", "shape"]);
    assert_eq!(findings[0].path, "/params/backgroundTaskCount");
    assert!(
        findings[0].message.contains("non-negative integer"),
        "{findings:?}"
    );
    assert_clean(&[(A2C, update(json!(2))), (A2C, update(json!(0)))]);
}
