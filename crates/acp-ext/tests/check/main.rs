//! The contract linter: one test per rule (a transcript that triggers it and
//! one that does not), the real-world corpus, the reference vectors, the
//! input formats, the command line and bounded state on long streams.

#[path = "../common/mod.rs"]
mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Command;

use acp_ext::check::input::{self, Format, Item};
use acp_ext::check::run::{Options, check_reader};
use acp_ext::check::{Checker, Direction, Finding, Severity, rules};
use acp_extension_core::capabilities::Feature;
use acp_extension_core::connection::sequence::SequenceLimits;
use common::{EXE, corpus_files, read_jsonl, shared};
use serde_json::{Value, json};

const C2A: Direction = Direction::ClientToAgent;
const A2C: Direction = Direction::AgentToClient;

mod bounded;
mod cli;
mod corpus;
mod each_rule;
mod fields;
mod formats;
mod lanes;

// Helpers shared by the topic files.

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

/// A connection followed from `initialize` that opened session `s1`.
fn opened_s1() -> Vec<(Direction, Value)> {
    with(
        init(json!({"sessionActivity": {"version": 1}}), json!({})),
        vec![
            (
                C2A,
                req(1, "session/new", json!({"cwd": "/", "mcpServers": []})),
            ),
            (A2C, ok(1, json!({"sessionId": "s1"}))),
        ],
    )
}

/// `_lody/session/activity_update` for session `sid`.
fn activity(sid: &str) -> Value {
    note(
        "_lody/session/activity_update",
        json!({"version": 1, "sessionId": sid, "state": "running", "backgroundTaskCount": 0}),
    )
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

fn check_text(text: &str, format: Format) -> Vec<(u64, Finding)> {
    let mut out = Vec::new();
    check_reader(text.as_bytes(), format, &Options::default(), |line, f| {
        out.push((line, f))
    })
    .unwrap();
    out
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

fn end_turn(id: u64) -> Value {
    ok(id, json!({"stopReason": "end_turn"}))
}

/// Each finding of [`check_text`] as `(line, rule, pointer)`.
fn located(found: &[(u64, Finding)]) -> Vec<(u64, &str, &str)> {
    found
        .iter()
        .map(|(l, f)| (*l, f.rule, f.path.as_str()))
        .collect()
}

fn outcome(id: u64, outcome: &str) -> Value {
    ok(id, json!({"outcome": outcome}))
}

fn prompt(id: u64) -> Value {
    req(
        id,
        "session/prompt",
        json!({"sessionId": "s", "prompt": [{"type": "text", "text": "go"}]}),
    )
}

fn steer_applied(steer: &str) -> Value {
    note(
        "_lody/session/steer_applied",
        json!({"sessionId": "s", "steerId": steer}),
    )
}

fn steer_req(id: u64, steer: &str) -> Value {
    req(
        id,
        "_lody/session/steer",
        json!({"sessionId": "s", "prompt": [{"type": "text", "text": "x"}], "steerId": steer}),
    )
}

/// A steering connection: the client advertised nothing, the agent steering
/// by request; session `s` exists.
fn steering_stream(tail: Vec<(Direction, Value)>) -> Vec<(Direction, Value)> {
    let head = init(json!({"steering": steering("request")}), json!({}));
    with(head, tail)
}
