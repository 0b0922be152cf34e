//! One rule per field: `validate` and `check` agree

use super::*;

/// How a rule relates to `acp-ext validate`.
enum Class {
    /// About the input's framing, before any contract type applies.
    Input,
    /// A value that breaks a contract type: `validate` rejects the message
    /// and `check` reports the rule (an error).
    Type(Value),
    /// An error that depends on other messages of the connection: `validate`
    /// accepts every message of both transcripts, whose last message is the
    /// same; `check` reports the rule on the first and not on the second.
    Context(Vec<(Direction, Value)>, Vec<(Direction, Value)>),
    /// Not an error: the transcript triggers it, and `validate` accepts
    /// every message of it.
    Advice(Vec<(Direction, Value)>),
}

fn validates(message: &Value) -> bool {
    acp_extension_core::validate::validate_value(acp_extension_core::validate::Kind::AUTO, message)
        .violations
        .is_empty()
}

#[test]
fn no_value_is_an_error_for_check_that_validate_accepts_or_the_reverse() {
    use Class::*;
    let goal = |control: Value| {
        json!({"goal": {"version": 1, "actions": ["set", "pause", "resume", "clear"],
            "controlActions": control, "promptActions": ["resume"]}})
    };
    let goal_set = req(
        9,
        "_lody/session/goal",
        json!({"sessionId": "s", "action": "set", "objective": "o"}),
    );
    let titled = |meta: Value| {
        session_update(
            "s",
            json!({"sessionUpdate": "session_info_update", "title": "t", "_meta": meta}),
        )
    };
    let tool_call = session_update(
        "s",
        json!({"sessionUpdate": "tool_call", "toolCallId": "toolu_1", "title": "Task"}),
    );
    let ns_init = |client: Value| {
        vec![
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
                    json!({"protocolVersion": 1, "agentCapabilities": {"_meta": {"ua": {"usage": {"version": 1}}, "lody": {"usage": {"version": 1}}}}}),
                ),
            ),
        ]
    };
    let ua_usage = note(
        "_ua/session/usage_update",
        json!({"sessionId": "s", "usage": row(1)}),
    );
    let activity = |n: Value| {
        note(
            "_lody/session/activity_update",
            json!({"version": 1, "sessionId": "s", "state": "running", "backgroundTaskCount": n}),
        )
    };
    let window = |p: f64| {
        note(
            "_lody/rate_limits/update",
            json!({"rateLimits": [{"limitId": "l", "scope": {"providerId": "p"},
            "windows": [{"usedPercent": p, "windowDurationSeconds": null, "resetsAtEpochSeconds": null}]}]}),
        )
    };
    let mut table: Vec<(&str, Class)> = vec![
        ("not-json", Input),
        ("input-too-large", Input),
        ("not-a-message", Input),
        ("shape", Type(activity(json!(1.5)))),
        (
            "unknown-method",
            Type(note("_lody/session/typo", json!({}))),
        ),
        (
            "unknown-session-update",
            Advice(vec![(
                A2C,
                session_update("s", json!({"sessionUpdate": "widget_update"})),
            )]),
        ),
        (
            "legacy-method",
            Advice(vec![(
                A2C,
                note(
                    "_acp_ext:session_rate_limits",
                    json!({"planName": null, "fiveHour": 10}),
                ),
            )]),
        ),
        (
            "unknown-meta-key",
            Advice(vec![(A2C, titled(json!({"lody": {"private": 1}})))]),
        ),
        (
            "not-advertised",
            Context(
                with(
                    init(json!({}), json!({})),
                    vec![(A2C, usage_update("s", "A", 1, None))],
                ),
                with(usage_init(), vec![(A2C, usage_update("s", "A", 1, None))]),
            ),
        ),
        (
            "flag-not-advertised",
            Context(
                with(
                    init(json!({"rateLimits": {"version": 1}}), json!({})),
                    vec![(C2A, req(5, "_lody/rate_limits/get", json!({})))],
                ),
                with(
                    init(
                        json!({"rateLimits": {"version": 1, "query": true}}),
                        json!({}),
                    ),
                    vec![(C2A, req(5, "_lody/rate_limits/get", json!({})))],
                ),
            ),
        ),
        (
            "goal-action-not-advertised",
            Context(
                with(
                    init(goal(json!(["pause"])), json!({})),
                    vec![(C2A, goal_set.clone())],
                ),
                with(
                    init(goal(json!(["set", "pause"])), json!({})),
                    vec![(C2A, goal_set)],
                ),
            ),
        ),
        (
            "subagent-events-not-negotiated",
            Context(
                with(
                    init(json!({"subagentEvents": {"version": 1}}), json!({})),
                    vec![(A2C, snapshot("s", "r", "running"))],
                ),
                with(
                    both_subagent_events(),
                    vec![(A2C, snapshot("s", "r", "running"))],
                ),
            ),
        ),
        (
            "answer-notes-not-advertised",
            Context(
                with(
                    init_caps(
                        json!({}),
                        json!({"elicitation": {"form": {}}, "_meta": {"lody": {"elicitation": {"version": 1}}}}),
                    ),
                    vec![(A2C, elicitation_with_note())],
                ),
                with(
                    init_caps(
                        json!({}),
                        json!({"elicitation": {"form": {}}, "_meta": {"lody": {"elicitation": {"version": 1, "answerNotes": true}}}}),
                    ),
                    vec![(A2C, elicitation_with_note())],
                ),
            ),
        ),
        (
            "wrong-side-capability",
            Advice(init(json!({"elicitation": {"version": 1}}), json!({}))),
        ),
        (
            "subagent-first-not-snapshot",
            Context(
                with(both_subagent_events(), vec![(A2C, progress("s", "r"))]),
                with(
                    both_subagent_events(),
                    vec![
                        (A2C, snapshot("s", "r", "running")),
                        (A2C, progress("s", "r")),
                    ],
                ),
            ),
        ),
        (
            "subagent-after-terminal",
            Context(
                with(
                    both_subagent_events(),
                    vec![
                        (A2C, snapshot("s", "r", "running")),
                        (A2C, snapshot("s", "r", "completed")),
                        (A2C, output("s", "r")),
                    ],
                ),
                with(
                    both_subagent_events(),
                    vec![
                        (A2C, snapshot("s", "r", "running")),
                        (A2C, output("s", "r")),
                    ],
                ),
            ),
        ),
        (
            "subagent-run-id-native",
            Context(
                with(
                    both_subagent_events(),
                    vec![(A2C, tool_call), (A2C, snapshot("s", "toolu_1", "running"))],
                ),
                with(
                    both_subagent_events(),
                    vec![(A2C, snapshot("s", "toolu_1", "running"))],
                ),
            ),
        ),
        (
            "usage-total-decreased",
            Context(
                usage_stream(&[("s", "A", 100, None), ("s", "A", 50, None)]),
                usage_stream(&[("s", "A", 50, None)]),
            ),
        ),
        (
            "usage-delta-mismatch",
            Context(
                usage_stream(&[("s", "A", 10, None), ("s", "A", 20, Some(5))]),
                usage_stream(&[("s", "A", 15, None), ("s", "A", 20, Some(5))]),
            ),
        ),
        (
            "usage-scope-reentered",
            Context(
                usage_stream(&[
                    ("s", "A", 10, None),
                    ("s", "B", 10, None),
                    ("s", "A", 20, None),
                ]),
                usage_stream(&[("s", "A", 10, None), ("s", "A", 20, None)]),
            ),
        ),
        (
            "epoch-milliseconds",
            Advice(vec![(
                A2C,
                goal_info(
                    json!({"objective": "o", "status": "active", "createdAtEpochSeconds": 1710000000000u64}),
                ),
            )]),
        ),
        (
            "utilization-clamped",
            Advice(vec![(
                A2C,
                note(
                    "session/update",
                    json!({"sessionId": "s", "update": {"sessionUpdate": "usage_update", "used": 1,
                        "size": 10, "_meta": {"_claude/rateLimit": {"rateLimitType": "five_hour",
                            "utilization": 1.5}}}}),
                ),
            )]),
        ),
        (
            "epoch-fractional",
            Advice(vec![(
                A2C,
                goal_info(
                    json!({"objective": "o", "status": "active", "createdAtEpochSeconds": 1710000000.5}),
                ),
            )]),
        ),
        (
            "epoch-zero",
            Advice(vec![(
                A2C,
                goal_info(
                    json!({"objective": "o", "status": "active", "createdAtEpochSeconds": 0}),
                ),
            )]),
        ),
        (
            "title-without-source",
            Context(
                with(
                    init(json!({"sessionTitle": {"version": 1}}), json!({})),
                    vec![(A2C, titled(json!({})))],
                ),
                with(init(json!({}), json!({})), vec![(A2C, titled(json!({})))]),
            ),
        ),
        (
            "steer-unknown-id",
            Context(
                steering_stream(vec![(C2A, prompt(1)), (A2C, steer_applied("x"))]),
                steering_stream(vec![
                    (C2A, prompt(1)),
                    (C2A, steer_req(2, "x")),
                    (A2C, outcome(2, "injected")),
                    (A2C, steer_applied("x")),
                ]),
            ),
        ),
        (
            "steer-answered-after-turn",
            Advice(steering_stream(vec![
                (C2A, prompt(1)),
                (C2A, steer_req(2, "x")),
                (A2C, end_turn(1)),
                (A2C, outcome(2, "failed")),
            ])),
        ),
        (
            "steer-not-applied",
            Advice(steering_stream(vec![
                (C2A, prompt(1)),
                (C2A, steer_req(2, "x")),
                (A2C, outcome(2, "injected")),
                (A2C, end_turn(1)),
            ])),
        ),
        (
            "namespace-mismatch",
            Context(
                with(
                    ns_init(json!({"_meta": {"lody": {}}})),
                    vec![(A2C, ua_usage.clone())],
                ),
                with(ns_init(json!({"_meta": {"ua": {}}})), vec![(A2C, ua_usage)]),
            ),
        ),
        (
            "namespace-mixed",
            Advice(with(
                ns_init(json!({"_meta": {"ua": {}, "lody": {}}})),
                vec![
                    (
                        A2C,
                        note(
                            "_lody/session/usage_update",
                            json!({"sessionId": "s", "usage": row(1)}),
                        ),
                    ),
                    (
                        A2C,
                        note(
                            "_ua/session/usage_update",
                            json!({"sessionId": "s", "usage": row(2)}),
                        ),
                    ),
                ],
            )),
        ),
    ];
    table.push((
        "unknown-session",
        Context(
            with(opened_s1(), vec![(A2C, crate::activity("s9"))]),
            with(
                opened_s1(),
                vec![
                    (
                        C2A,
                        req(
                            2,
                            "session/load",
                            json!({"sessionId": "s9", "cwd": "/", "mcpServers": []}),
                        ),
                    ),
                    (A2C, crate::activity("s9")),
                ],
            ),
        ),
    ));
    let listed: Vec<&str> = table.iter().map(|(id, _)| *id).collect();
    let all: Vec<&str> = rules::ALL.iter().map(|r| r.id).collect();
    assert_eq!(listed, all, "every rule is classified, in table order");

    for (id, class) in &table {
        let rule = rules::RuleInfo::by_id(id).unwrap();
        let fires = |msgs: &[(Direction, Value)]| run(msgs).iter().any(|f| f.rule == *id);
        match class {
            Input => assert_eq!(rule.severity, Severity::Error, "{id}"),
            Type(message) => {
                assert_eq!(rule.severity, Severity::Error, "{id}");
                assert!(!validates(message), "{id}: validate accepts {message}");
                assert!(
                    fires(&[(A2C, message.clone())]),
                    "{id}: check is silent on {message}"
                );
            }
            Context(bad, good) => {
                assert_eq!(rule.severity, Severity::Error, "{id}");
                assert_eq!(
                    bad.last().unwrap().1,
                    good.last().unwrap().1,
                    "{id}: the same last message"
                );
                for (_, m) in bad.iter().chain(good) {
                    assert!(validates(m), "{id}: validate rejects {m}");
                }
                assert!(fires(bad), "{id}: not reported in context");
                assert!(!fires(good), "{id}: reported without its context");
            }
            Advice(msgs) => {
                assert_ne!(
                    rule.severity,
                    Severity::Error,
                    "{id} is an error, so validate must reject it"
                );
                for (_, m) in msgs {
                    assert!(validates(m), "{id}: validate rejects {m}");
                }
                assert!(fires(msgs), "{id}: not reported");
            }
        }
    }

    // The values whose rules moved into the types: `validate` rejects them
    // and `check` reports `shape`, each at its pointer.
    for (message, pointer) in [
        (activity(json!(1.5)), "/params/backgroundTaskCount"),
        (activity(json!(-1)), "/params/backgroundTaskCount"),
        (window(150.0), "/params/rateLimits/0/windows/0/usedPercent"),
        (window(-0.5), "/params/rateLimits/0/windows/0/usedPercent"),
        (
            usage_update("s", &"x".repeat(257), 1, None),
            "/params/_meta/lody/usageScopeId",
        ),
    ] {
        assert!(!validates(&message), "{message}");
        let findings = run(&with(usage_init(), vec![(A2C, message.clone())]));
        assert!(
            findings
                .iter()
                .any(|f| f.rule == "shape" && f.path == pointer && f.severity == Severity::Error),
            "{message}: {findings:#?}"
        );
    }
    for message in [
        activity(json!(2)),
        window(100.0),
        window(0.0),
        usage_update("s", &"x".repeat(256), 1, None),
    ] {
        assert!(validates(&message), "{message}");
    }
}

#[test]
fn a_client_capability_fragment_is_not_read_as_session_metadata() {
    let text =
        r#"{"_meta": {"lody": {"subagentEvents": {"version": 1}, "elicitation": {"version": 1}}}}"#;
    let found = check_text(text, Format::Loose);
    let rules: Vec<&str> = found.iter().map(|(_, f)| f.rule).collect();
    assert_eq!(rules, ["not-a-message"], "{found:?}");
    assert!(found[0].1.message.contains("capability"), "{found:?}");
}
