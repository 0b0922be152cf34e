//! The contract linter: one test per rule (a transcript that triggers it and
//! one that does not), the real-world corpus, the reference vectors, the
//! input formats, the command line and bounded state on long streams.

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Command;

use acp_ext::check::input::{self, Format, Item};
use acp_ext::check::run::{Options, check_reader};
use acp_ext::check::{Checker, Direction, Finding, Limits, Severity, rules};
use acp_extension_core::capabilities::Feature;
use common::{EXE, corpus_files, read_jsonl, shared};
use serde_json::{Value, json};

const C2A: Direction = Direction::ClientToAgent;
const A2C: Direction = Direction::AgentToClient;

// ---------------------------------------------------------------------------
// Helpers

fn req(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn note(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

fn ok(id: u64, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// The initialize exchange with these `_meta.lody` advertisements.
fn init(agent: Value, client: Value) -> Vec<(Direction, Value)> {
    init_caps(agent, json!({"_meta": {"lody": client}}))
}

/// The initialize exchange with the agent's `_meta.lody` and the client's
/// whole `clientCapabilities`.
fn init_caps(agent: Value, client_caps: Value) -> Vec<(Direction, Value)> {
    vec![
        (
            C2A,
            req(
                0,
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": client_caps}),
            ),
        ),
        (
            A2C,
            ok(
                0,
                json!({"protocolVersion": 1, "agentCapabilities": {"_meta": {"lody": agent}}}),
            ),
        ),
    ]
}

fn with(
    mut head: Vec<(Direction, Value)>,
    tail: Vec<(Direction, Value)>,
) -> Vec<(Direction, Value)> {
    head.extend(tail);
    head
}

fn run(msgs: &[(Direction, Value)]) -> Vec<Finding> {
    let mut c = Checker::new();
    msgs.iter().flat_map(|(d, m)| c.message(*d, m)).collect()
}

fn rule_ids(findings: &[Finding]) -> Vec<&'static str> {
    findings.iter().map(|f| f.rule).collect()
}

/// The JSON pointers of `findings`, in order.
fn paths(findings: &[Finding]) -> Vec<&str> {
    findings.iter().map(|f| f.path.as_str()).collect()
}

/// The findings of `rule`, asserting they all carry its severity.
fn of(findings: &[Finding], rule: &rules::RuleInfo) -> Vec<Finding> {
    let hits: Vec<Finding> = findings
        .iter()
        .filter(|f| f.rule == rule.id)
        .cloned()
        .collect();
    for f in &hits {
        assert_eq!(f.severity, rule.severity, "{f:?}");
    }
    hits
}

fn assert_clean(msgs: &[(Direction, Value)]) {
    let findings = run(msgs);
    assert!(findings.is_empty(), "expected no findings: {findings:#?}");
}

fn steering(transport: &str) -> Value {
    json!({"version": 1, "transport": transport, "upstreamTurn": "same", "configPolicy": "active"})
}

fn snapshot(sid: &str, run: &str, state: &str) -> Value {
    note(
        "_lody/subagents/event",
        json!({"version": 1, "sessionId": sid, "runId": run, "type": "snapshot", "snapshot": {
            "state": state,
            "support": {"stream": ["text"], "progress": true, "outputRead": "none", "cancel": false}
        }}),
    )
}

fn progress(sid: &str, run: &str) -> Value {
    note(
        "_lody/subagents/event",
        json!({"version": 1, "sessionId": sid, "runId": run, "type": "progress", "progress": {"toolCallCount": 1}}),
    )
}

fn output(sid: &str, run: &str) -> Value {
    note(
        "_lody/subagents/event",
        json!({"version": 1, "sessionId": sid, "runId": run, "type": "output",
            "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}}),
    )
}

fn both_subagent_events() -> Vec<(Direction, Value)> {
    init(
        json!({"subagentEvents": {"version": 1}}),
        json!({"subagentEvents": {"version": 1}}),
    )
}

fn row(input: u64) -> Value {
    json!({"inputTokens": input, "outputTokens": 0, "cacheReadInputTokens": 0})
}

fn usage_update(sid: &str, scope: &str, total: u64, delta: Option<u64>) -> Value {
    let mut params = json!({
        "sessionId": sid,
        "usage": row(total),
        "modelUsage": {"m": row(total)},
        "_meta": {"lody": {"usageScopeId": scope}}
    });
    if let Some(d) = delta {
        params["delta"] = json!({"usage": row(d), "modelUsage": {"m": row(d)}});
    }
    note("_lody/session/usage_update", params)
}

fn usage_init() -> Vec<(Direction, Value)> {
    init(json!({"usage": {"version": 1}}), json!({}))
}

/// [`usage_init`], then the agent's [`usage_update`]s with these
/// `(sessionId, scope, total, delta)`.
fn usage_stream(updates: &[(&str, &str, u64, Option<u64>)]) -> Vec<(Direction, Value)> {
    let updates = updates
        .iter()
        .map(|&(sid, scope, total, delta)| (A2C, usage_update(sid, scope, total, delta)));
    with(usage_init(), updates.collect())
}

fn session_update(sid: &str, update: Value) -> Value {
    note(
        "session/update",
        json!({"sessionId": sid, "update": update}),
    )
}

fn goal_info(goal: Value) -> Value {
    session_update(
        "s",
        json!({"sessionUpdate": "session_info_update", "_meta": {"lody": {"goal": goal}}}),
    )
}

// ---------------------------------------------------------------------------
// One test per rule

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
    "epoch-fractional",
    "epoch-zero",
    "title-without-source",
    "steer-unknown-id",
    "steer-answered-after-turn",
    "steer-not-applied",
    "namespace-mismatch",
    "namespace-mixed",
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
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("CHECK.md"))
        .expect("CHECK.md");
    assert!(
        doc.contains(&rules::markdown_table()),
        "CHECK.md must contain rules::markdown_table()"
    );
}

fn check_text(text: &str, format: Format) -> Vec<(u64, Finding)> {
    let mut out = Vec::new();
    check_reader(text.as_bytes(), format, &Options::default(), |line, f| {
        out.push((line, f))
    })
    .unwrap();
    out
}

/// Each finding of [`check_text`] as `(line, rule, pointer)`.
fn located(found: &[(u64, Finding)]) -> Vec<(u64, &str, &str)> {
    found
        .iter()
        .map(|(l, f)| (*l, f.rule, f.path.as_str()))
        .collect()
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
        "{{\"jsonrpc\":\"2.0\",\"method\":\"x/y\",\"params\":\"{}\"}}\n{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{{}}}}\n",
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
        (A2C, json!({"method": 3})),
    ]);
    assert_eq!(
        paths(&of(&findings, &rules::NOT_A_MESSAGE)),
        ["", "", "/method"]
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
    // ACP v2's updates and AIR's are read.
    for tag in [
        "agent_message",
        "state_update",
        "subagent_spawned",
        "async_task_spawned",
    ] {
        assert_clean(&[(A2C, session_update("s", json!({"sessionUpdate": tag})))]);
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

fn elicitation_with_note() -> Value {
    req(
        11,
        "elicitation/create",
        json!({"sessionId": "s", "mode": "form", "message": "Which approach?",
        "requestedSchema": {"type": "object", "required": ["approach"], "properties": {
            "approach": {"type": "string", "title": "Approach",
                "_meta": {"lody": {"elicitation": {"version": 1}}}},
            "approach_note": {"type": "string", "title": "Note",
                "_meta": {"lody": {"elicitation": {"version": 1, "noteFor": "approach"}}}}
        }}}),
    )
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
        // run rules never do.
        let findings: Vec<Finding> = run(&msgs)
            .into_iter()
            .filter(|f| f.rule != "shape")
            .collect();
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

/// A steering connection: the client advertised nothing, the agent steering
/// by request; session `s` exists.
fn steering_stream(tail: Vec<(Direction, Value)>) -> Vec<(Direction, Value)> {
    let head = init(json!({"steering": steering("request")}), json!({}));
    with(head, tail)
}

fn prompt(id: u64) -> Value {
    req(
        id,
        "session/prompt",
        json!({"sessionId": "s", "prompt": [{"type": "text", "text": "go"}]}),
    )
}

fn steer_req(id: u64, steer: &str) -> Value {
    req(
        id,
        "_lody/session/steer",
        json!({"sessionId": "s", "prompt": [{"type": "text", "text": "x"}], "steerId": steer}),
    )
}

fn steer_applied(steer: &str) -> Value {
    note(
        "_lody/session/steer_applied",
        json!({"sessionId": "s", "steerId": steer}),
    )
}

fn outcome(id: u64, outcome: &str) -> Value {
    ok(id, json!({"outcome": outcome}))
}

fn end_turn(id: u64) -> Value {
    ok(id, json!({"stopReason": "end_turn"}))
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

// ---------------------------------------------------------------------------
// Direction, formats

#[test]
fn directions_are_inferred_from_methods_and_requests() {
    let mut c = Checker::new();
    // An initialize exchange without directions (a JSON-RPC log).
    c.message(
        Direction::Unknown,
        &req(
            0,
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        ),
    );
    c.message(
        Direction::Unknown,
        &ok(0, json!({"protocolVersion": 1, "agentCapabilities": {"_meta": {"lody": {"usage": {"version": 1}}}}})),
    );
    assert!(c.agent_advertisement().unwrap().supports(Feature::Usage));
    assert!(c.client_advertisement().is_some());
}

#[test]
fn conductor_traces_keep_one_hop_per_message() {
    let init_params = json!({"protocolVersion": 1, "clientCapabilities": {}});
    let caps = json!({"protocolVersion": 1, "agentCapabilities": {}});
    let usage = json!({"sessionId": "s", "usage": row(1)});
    let lines = [
        json!({"type": "request", "ts": 0.1, "protocol": "acp", "from": "Client", "to": "Proxy(0)", "id": 0, "method": "initialize", "params": init_params}),
        json!({"type": "request", "ts": 0.1, "protocol": "acp", "from": "Proxy(0)", "to": "Agent", "id": 0, "method": "initialize", "params": init_params}),
        json!({"type": "response", "ts": 0.2, "from": "Agent", "to": "Proxy(0)", "id": 0, "is_error": false, "payload": caps}),
        json!({"type": "response", "ts": 0.2, "from": "Proxy(0)", "to": "Client", "id": 0, "is_error": false, "payload": caps}),
        json!({"type": "notification", "ts": 0.3, "protocol": "acp", "from": "Agent", "to": "Proxy(0)", "method": "_lody/session/usage_update", "params": usage}),
        json!({"type": "notification", "ts": 0.3, "protocol": "acp", "from": "Proxy(0)", "to": "Client", "method": "_lody/session/usage_update", "params": usage}),
        json!({"type": "request", "ts": 0.4, "protocol": "mcp", "from": "Proxy(0)", "to": "Agent", "id": "m1", "method": "tools/call", "params": {"_meta": {"lody": {"x": 1}}}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    assert_eq!(
        located(&check_text(&text, Format::Auto)),
        [(5, "not-advertised", "/method")]
    );

    // Result pointers map back to the trace line's `payload`.
    let bad = json!({"type": "response", "ts": 0.2, "from": "Agent", "to": "Client", "id": 0, "is_error": false,
        "payload": {"protocolVersion": 1, "agentCapabilities": {"_meta": {"lody": {"usage": {"version": 2}}}}}});
    let found = check_text(&format!("{bad}\n"), Format::Trace);
    assert_eq!(found[0].1.rule, "shape");
    assert_eq!(
        found[0].1.path,
        "/payload/agentCapabilities/_meta/lody/usage/version"
    );
}

#[test]
fn tap_transcripts_use_their_directions_and_point_into_msg() {
    let lines = [
        json!({"dir": "c2a", "t": 0.0, "msg": req(0, "initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}))}),
        json!({"dir": "a2c", "t": 0.1, "msg": ok(0, json!({"protocolVersion": 1, "agentCapabilities": {}}))}),
        json!({"dir": "a2c", "t": 0.2, "msg": note("_lody/session/usage_update", json!({"sessionId": "s", "usage": row(1)}))}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    assert_eq!(
        located(&check_text(&text, Format::Auto)),
        [(3, "not-advertised", "/msg/method")]
    );
}

#[test]
fn loose_shapes_become_messages() {
    // A bare update, an SDK call, a kind-wrapped initialize response, a
    // container with updates, a bare subagent event: each one checked.
    let text = r#"
{"sessionUpdate": "session_info_update", "_meta": {"lody": {"goal": {"objective": "o", "status": "nope"}}}}
{"method": "sessionUpdate", "args": [{"sessionId": "s", "update": {"sessionUpdate": "plan", "entries": [], "_meta": {"lody": {"extra": 1}}}}]}
{"kind": "initialize", "payload": {"protocolVersion": 1, "agentCapabilities": {"_meta": {"lody": {}}}}}
{"kind": "sessionUpdate", "payload": {"sessionId": "s", "update": {"sessionUpdate": "session_info_update", "_meta": {"lody": {"goal": {"objective": "o", "status": "active"}}}}}}
{"updates": [{"sessionUpdate": "plan", "entries": [], "_meta": {"lody": {"turnEnded": true}}}], "response": {"stopReason": "end_turn"}}
{"version": 1, "sessionId": "s", "runId": "", "type": "progress", "progress": {}}
"#;
    assert_eq!(
        located(&check_text(text, Format::Auto)),
        [
            (2, "shape", "/_meta/lody/goal/status"),
            (3, "unknown-meta-key", "/args/0/update/_meta/lody/extra"),
            // The kind-wrapped initialize response makes negotiation judgeable.
            (5, "not-advertised", "/payload/update/_meta/lody/goal"),
            (6, "unknown-meta-key", "/updates/0/_meta/lody/turnEnded"),
            (7, "shape", "/runId"),
            // The synthesized method has no place in the source value.
            (7, "subagent-events-not-negotiated", ""),
        ]
    );
}

// ---------------------------------------------------------------------------
// The real-world corpus

/// The corpus file whose path ends with `suffix`.
fn corpus_file(suffix: &str) -> PathBuf {
    corpus_files()
        .into_iter()
        .find(|p| p.to_string_lossy().ends_with(suffix))
        .unwrap()
}

fn check_file(path: &Path) -> Vec<(u64, Finding)> {
    let mut out = Vec::new();
    let file = std::fs::File::open(path).unwrap();
    check_reader(
        BufReader::new(file),
        Format::Auto,
        &Options::default(),
        |l, f| out.push((l, f)),
    )
    .unwrap();
    out
}

#[test]
fn every_corpus_file_is_read_and_only_known_deviations_are_found() {
    let files = corpus_files();
    assert!(files.len() >= 48, "{} corpus files", files.len());
    let mut found = BTreeSet::new();
    let mut records = 0;
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let short = name.rsplit("__").next().unwrap().to_owned();
        // Every file yields messages…
        let mut n = 0;
        input::read(
            BufReader::new(std::fs::File::open(path).unwrap()),
            Format::Auto,
            |i| {
                assert!(!matches!(i, Item::Problem { .. }), "{name}: {i:?}");
                n += 1;
            },
        )
        .unwrap();
        assert!(n > 0, "{name} yielded nothing");
        records += n;
        // …and its findings are the known deviations only.
        for (line, f) in check_file(path) {
            found.insert((short.clone(), line, f.rule, f.path));
        }
    }
    assert!(records > 150, "{records} messages");
    let epoch = |file: &str, line: u64, key: &str| {
        (
            file.to_owned(),
            line,
            "epoch-zero",
            format!("/sessionUpdate/_meta/lody/goal/{key}"),
        )
    };
    let expected: BTreeSet<(String, u64, &str, String)> = [
        // codex: goal fixtures use createdAtEpochSeconds: 0 as a placeholder.
        epoch("prompt-v2-goal-command.json", 26, "createdAtEpochSeconds"),
        epoch("prompt-v2-goal-command.json", 26, "updatedAtEpochSeconds"),
        epoch(
            "prompt-v2-goal-resume-command.json",
            26,
            "createdAtEpochSeconds",
        ),
        epoch(
            "prompt-v2-goal-resume-command.json",
            26,
            "updatedAtEpochSeconds",
        ),
        epoch(
            "prompt-v2-goal-resume-no-continuation.json",
            20,
            "createdAtEpochSeconds",
        ),
        epoch(
            "prompt-v2-goal-resume-no-continuation.json",
            20,
            "updatedAtEpochSeconds",
        ),
        // claude: new-session responses carry _meta.lody.modelCapabilities.
        (
            "session-setup.jsonl".to_owned(),
            2,
            "unknown-meta-key",
            "/payload/_meta/lody/modelCapabilities".to_owned(),
        ),
    ]
    .into_iter()
    .collect();
    assert_eq!(found, expected);
}

#[test]
fn codex_v2_initialize_is_read_from_capabilities() {
    let path = corpus_file("initialize-v2-response.json");
    let value: Value = serde_json::from_reader(std::fs::File::open(path).unwrap()).unwrap();
    let mut c = Checker::new();
    let findings = c.message_with_method(
        Direction::Unknown,
        &json!({"jsonrpc": "2.0", "id": null, "result": value}),
        None,
    );
    assert!(findings.is_empty(), "{findings:?}");
    let agent = c
        .agent_advertisement()
        .expect("read as an initialize response");
    for f in [
        Feature::McpApps,
        Feature::Goal,
        Feature::Usage,
        Feature::SubagentEvents,
    ] {
        assert!(agent.supports(f), "{f}");
    }
    // With the agent known, its usage updates are judged and allowed.
    let findings = c.message(
        Direction::Unknown,
        &note(
            "_lody/session/usage_update",
            json!({"sessionId": "s", "usage": row(1)}),
        ),
    );
    assert!(findings.is_empty(), "{findings:?}");
}

#[test]
fn claude_setup_negotiates_from_its_initialize_line() {
    let path = corpus_file("session-setup.jsonl");
    // The same file with a usage update appended that the agent advertised,
    // and an mcp app meta it did not.
    let mut text = std::fs::read_to_string(path).unwrap();
    text.push_str(&format!(
        "{}\n",
        json!({"kind": "sessionUpdate", "payload": {"sessionId": "x", "update": {
            "sessionUpdate": "tool_call", "toolCallId": "t", "title": "app",
            "_meta": {"lody": {"mcpApp": {"version": 1, "server": "s", "tool": "t", "resourceUri": "ui://x"}}}}}})
    ));
    let found = check_text(&text, Format::Auto);
    let rules: Vec<&str> = found.iter().map(|(_, f)| f.rule).collect();
    assert_eq!(rules, ["unknown-meta-key", "not-advertised"]);
    assert_eq!(found[1].1.path, "/payload/update/_meta/lody/mcpApp");
}

#[test]
fn adapter_deviations_listed_in_the_corpus_readme() {
    // pi (older): usage without advertising it, cumulative totals in `usage`
    // and no `modelUsage`; omp: advertises nothing, emits usage anyway.
    let cumulative = |n: u64| {
        note(
            "_lody/session/usage_update",
            json!({"sessionId": "s", "usage": row(n)}),
        )
    };
    let findings = run(&with(
        init(json!({}), json!({})),
        vec![(A2C, cumulative(10)), (A2C, cumulative(25))],
    ));
    assert_eq!(rule_ids(&findings), ["not-advertised", "not-advertised"]);

    // kimi, grok: extra `_meta.lody` keys outside the contract.
    let extra = session_update(
        "s",
        json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Task",
            "_meta": {"lody": {"turnOrigin": "user", "turnEnded": false, "subagentRunId": "r",
                "subagentToolCallId": "t"}}}),
    );
    let findings = run(&[
        (A2C, extra),
        (
            A2C,
            ok(
                0,
                json!({"protocolVersion": 1, "agentCapabilities": {"_meta": {"lody": {"modelReasoningEfforts": {}}}}}),
            ),
        ),
    ]);
    assert_eq!(
        paths(&of(&findings, &rules::UNKNOWN_META_KEY)),
        [
            "/params/update/_meta/lody/turnOrigin",
            "/params/update/_meta/lody/turnEnded",
            "/params/update/_meta/lody/subagentRunId",
            "/params/update/_meta/lody/subagentToolCallId",
            "/result/agentCapabilities/_meta/lody/modelReasoningEfforts",
        ]
    );
    assert_eq!(findings.len(), 5);

    // devin: `elicitation` in the agent's capabilities.
    let findings = run(&init(json!({"elicitation": {"version": 1}}), json!({})));
    assert_eq!(rule_ids(&findings), ["wrong-side-capability"]);

    // dsh, pi, kimi: fractional epoch seconds in goal, task and subagent timestamps.
    let task = session_update(
        "s",
        json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Task",
            "_meta": {"lody": {"task": {"version": 1, "taskId": "k", "kind": "subagent", "status": "in_progress",
                "startedAtEpochSeconds": 1710000000.25}}}}),
    );
    let goal = goal_info(
        json!({"objective": "o", "status": "active", "updatedAtEpochSeconds": 1710000000.5}),
    );
    let findings = run(&[(A2C, task), (A2C, goal)]);
    assert_eq!(
        rule_ids(&findings),
        ["epoch-fractional", "epoch-fractional"]
    );

    // claude: integral rate-limit percentages are fine; codex: the legacy
    // `_meta.codex.usageTurnId` is another vendor's namespace.
    let rounded = note(
        "_lody/rate_limits/update",
        json!({"rateLimits": [{"limitId": "l", "scope": {"providerId": "anthropic"},
            "windows": [{"usedPercent": 42, "windowDurationSeconds": 18000, "resetsAtEpochSeconds": 1710000000}]}]}),
    );
    let codex_usage = note(
        "_lody/session/usage_update",
        json!({"sessionId": "s", "usage": row(1), "_meta": {"codex": {"usageTurnId": "t1"}, "lody": {"usageScopeId": "t1"}}}),
    );
    assert_clean(&[(A2C, rounded), (A2C, codex_usage)]);
}

#[test]
fn checkers_can_move_between_threads() {
    fn send<T: Send + 'static>() {}
    send::<Checker>();
}

// ---------------------------------------------------------------------------
// Bounded state

#[test]
fn state_stays_bounded_on_a_long_stream() {
    let limits = Limits::default();
    let bound = |l: &Limits| {
        l.sessions
            * (1 + l.runs_per_session
                + l.native_ids_per_session
                + l.steer_ids_per_session
                + l.scopes_per_session
                + l.models_per_scope)
            + l.pending_requests
    };
    let mut c = Checker::new();
    let mut max_total = 0;
    let mut max_sessions = 0;
    for i in 0u64..60_000 {
        let sid = format!("s{}", i % 300);
        let msg = match i % 6 {
            0 => session_update(
                &sid,
                json!({"sessionUpdate": "tool_call", "toolCallId": format!("t{i}"), "title": "x",
                    "_meta": {"lody": {"turnId": format!("turn{i}")}}}),
            ),
            1 => snapshot(&sid, &format!("r{i}"), "running"),
            2 => snapshot(&sid, &format!("r{}", i - 1), "completed"),
            3 => usage_update(&sid, &format!("scope{i}"), i, None),
            4 => req(
                i,
                "_lody/session/steer",
                json!({"sessionId": sid, "prompt": [], "steerId": format!("st{i}")}),
            ),
            _ => req(i, "session/prompt", json!({"sessionId": sid, "prompt": []})),
        };
        let dir = if i % 6 >= 4 { C2A } else { A2C };
        c.message(dir, &msg);
        if i % 500 == 0 {
            let t = c.tracked_state();
            max_total = max_total.max(t.total());
            max_sessions = max_sessions.max(t.sessions);
        }
    }
    let t = c.tracked_state();
    assert!(t.sessions <= limits.sessions && max_sessions <= limits.sessions);
    assert!(t.pending_requests <= limits.pending_requests);
    assert!(max_total <= bound(&limits), "{max_total}");

    // With small limits, every count stays within its own limit.
    let mut small = Limits::default();
    small.sessions = 2;
    small.runs_per_session = 8;
    small.native_ids_per_session = 16;
    small.steer_ids_per_session = 4;
    small.scopes_per_session = 4;
    small.pending_requests = 8;
    let mut c = Checker::with_limits(small);
    for i in 0u64..5_000 {
        let sid = format!("s{}", i % 3);
        c.message(A2C, &snapshot(&sid, &format!("r{i}"), "running"));
        c.message(A2C, &usage_update(&sid, &format!("scope{i}"), 1, None));
        c.message(
            A2C,
            &session_update(
                &sid,
                json!({"sessionUpdate": "tool_call_update", "toolCallId": format!("t{i}")}),
            ),
        );
        c.message(
            C2A,
            &req(
                i,
                "_lody/session/steer",
                json!({"sessionId": sid, "prompt": [], "steerId": format!("x{i}")}),
            ),
        );
        let t = c.tracked_state();
        assert!(t.sessions <= 2);
        assert!(t.runs <= 2 * 8);
        assert!(t.native_ids <= 2 * 16);
        assert!(t.steer_ids <= 2 * 4);
        assert!(t.ended_scopes <= 2 * 4);
        assert!(t.pending_requests <= 8);
    }
}

#[test]
fn closing_a_session_drops_its_state() {
    let mut c = Checker::new();
    c.message(A2C, &snapshot("s", "r", "running"));
    assert_eq!(c.tracked_state().sessions, 1);
    c.message(C2A, &req(1, "session/close", json!({"sessionId": "s"})));
    assert_eq!(c.tracked_state().sessions, 0);
}

// ---------------------------------------------------------------------------
// The command line

fn tmp(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn acp_ext(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(EXE)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn clean_transcript() -> String {
    let lines = [
        req(
            0,
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        ),
        ok(
            0,
            json!({"protocolVersion": 1, "agentCapabilities": {"_meta": {"lody": {"usage": {"version": 1}}}}}),
        ),
        note(
            "_lody/session/usage_update",
            json!({"sessionId": "s", "usage": row(1), "_meta": {"lody": {"turnEnded": true}}}),
        ),
    ];
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn bad_transcript() -> String {
    let lines = [
        req(
            0,
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        ),
        ok(0, json!({"protocolVersion": 1, "agentCapabilities": {}})),
        note(
            "_lody/session/usage_update",
            json!({"sessionId": "s", "usage": row(1)}),
        ),
        goal_info(json!({"objective": "o", "status": "active", "createdAtEpochSeconds": 1.5})),
    ];
    lines.iter().map(|l| format!("{l}\n")).collect()
}

#[test]
fn cli_exit_codes() {
    let dir = common::scratch("exit-codes");
    let clean = tmp(&dir, "clean.jsonl", &clean_transcript());
    let bad = tmp(&dir, "bad.jsonl", &bad_transcript());
    let (code, out, _) = acp_ext(&["check", clean.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("0 errors, 0 warnings, 1 info in 1 file"),
        "{out}"
    );
    let (code, out, _) = acp_ext(&["check", clean.to_str().unwrap(), bad.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(out.contains("error not-advertised (2)"), "{out}");
    assert!(out.contains("bad.jsonl:3  /method  "), "{out}");
    assert!(
        out.contains("2 errors, 1 warning, 1 info in 2 files"),
        "{out}"
    );
    // A file that cannot be read at all: 2, even with errors elsewhere.
    let (code, _, err) = acp_ext(&["check", bad.to_str().unwrap(), "/nonexistent/acp-ext.jsonl"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("cannot read /nonexistent/acp-ext.jsonl"),
        "{err}"
    );
    // A partly malformed file is findings, not a crash.
    let partly = tmp(
        &dir,
        "partly.jsonl",
        &format!("{}not json\n", clean_transcript()),
    );
    let (code, out, _) = acp_ext(&["check", "--format", "jsonrpc", partly.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(out.contains("partly.jsonl:4  (root)  not JSON"), "{out}");
    // Bad arguments.
    let (code, _, _) = acp_ext(&["check", "--format", "xml", clean.to_str().unwrap()]);
    assert_eq!(code, 2);
}

#[test]
fn cli_json_lines() {
    let dir = common::scratch("json-lines");
    let bad = tmp(&dir, "bad-json.jsonl", &bad_transcript());
    let (code, out, _) = acp_ext(&["check", "--json", bad.to_str().unwrap()]);
    assert_eq!(code, 1);
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{out}");
    for l in &lines {
        let keys: Vec<&str> = l.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            ["file", "line", "rule", "severity", "path", "message"]
        );
    }
    assert_eq!(
        lines[0],
        json!({"file": bad.to_str().unwrap(), "line": 3, "rule": "not-advertised", "severity": "error",
            "path": "/method", "message": lines[0]["message"]})
    );
    assert_eq!(lines[1]["rule"], "not-advertised");
    assert_eq!(lines[1]["path"], "/params/update/_meta/lody/goal");
    assert_eq!(lines[2]["rule"], "epoch-fractional");
    assert_eq!(lines[2]["severity"], "warning");

    // --min-severity filters what is printed and counted.
    let (code, out, _) = acp_ext(&[
        "check",
        "--json",
        "--min-severity",
        "error",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert_eq!(out.lines().count(), 2);
    let clean = tmp(&dir, "clean-json.jsonl", &clean_transcript());
    let (code, out, _) = acp_ext(&[
        "check",
        "--json",
        "--min-severity",
        "warning",
        clean.to_str().unwrap(),
    ]);
    assert_eq!((code, out.as_str()), (0, ""));
}

#[test]
fn cli_reads_the_whole_corpus() {
    let files = corpus_files();
    let mut args = vec!["check".to_owned(), "--json".to_owned()];
    args.extend(files.iter().map(|p| p.to_string_lossy().into_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = acp_ext(&args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 7);
}

#[test]
fn the_rule_table_is_in_the_binary() {
    let exe = env!("CARGO_BIN_EXE_acp-ext");
    let out = std::process::Command::new(exe)
        .args(["check", "--rules"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for r in acp_ext::check::rules::ALL {
        let row = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(r.id))
            .unwrap_or_else(|| panic!("{} missing:\n{text}", r.id));
        assert!(row.contains(r.severity.name()), "{row}");
    }
    let out = std::process::Command::new(exe)
        .args(["check", "--rules", "--json"])
        .output()
        .unwrap();
    let rows: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), acp_ext::check::rules::ALL.len());
    assert_eq!(rows[0]["rule"], acp_ext::check::rules::ALL[0].id);
    assert_eq!(rows[0]["meaning"], acp_ext::check::rules::ALL[0].summary);
    let help = std::process::Command::new(exe)
        .args(["check", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(!help.contains("CHECK.md"), "{help}");
    assert!(help.contains("--rules"), "{help}");
}

// ---------------------------------------------------------------------------
// One rule per field: `validate` and `check` agree

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
    acp_extension_core::validate::validate_value(acp_extension_core::validate::Kind::Auto, message)
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
    let table: Vec<(&str, Class)> = vec![
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
