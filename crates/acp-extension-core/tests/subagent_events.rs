//! Subagent event types, guards, checks and schema against the contract
//! (facts §12, §17.2, §18) and every line of `subagent-event-guard.jsonl`.

use acp_extension_core::subagent_events::*;
use acp_extension_core::validate::check;
use acp_extension_core::wire::{MaybeUndefined, NonEmptyString};
use acp_extension_core::wire::{WireEnum, WireObject};
use serde_json::{Value, json};

/// Reads a vector file from the nearest `shared/vectors/` above this crate
/// (the repository and the shared folder sit side by side), or from
/// `$ACP_VECTORS_DIR`.
fn vector_file(name: &str) -> String {
    let mut tried = Vec::new();
    if let Some(dir) = std::env::var_os("ACP_VECTORS_DIR") {
        let p = std::path::Path::new(&dir).join(name);
        if let Ok(s) = std::fs::read_to_string(&p) {
            return s;
        }
        tried.push(p);
    }
    for dir in std::path::Path::new(env!("CARGO_MANIFEST_DIR")).ancestors() {
        let p = dir.join("shared/vectors").join(name);
        if let Ok(s) = std::fs::read_to_string(&p) {
            return s;
        }
        tried.push(p);
    }
    panic!("vector file {name} not found; tried {tried:?}");
}

fn vectors() -> Vec<(String, Value, bool)> {
    vector_file("subagent-event-guard.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("vector line is JSON");
            (
                v["name"].as_str().unwrap().to_owned(),
                v["input"].clone(),
                v["valid"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[test]
fn every_guard_vector_agrees_with_parse_check_and_guard() {
    let vectors = vectors();
    assert_eq!(vectors.len(), 1453);
    assert!(vectors.iter().any(|v| v.2) && vectors.iter().any(|v| !v.2));
    let mut failures = Vec::new();
    for (name, input, valid) in vectors {
        let bytes = serde_json::to_vec(&input).unwrap();
        let parsed = serde_json::from_slice::<SubagentEvent>(&bytes);
        let violations = check::<SubagentEvent>(&input);
        let guard = is_subagent_event(&input);
        if parsed.is_ok() != valid || violations.is_empty() != valid || guard != valid {
            failures.push(format!(
                "{name}: expected {valid}, parse {:?}, check {:?}, guard {guard}",
                parsed.err().map(|e| e.to_string()),
                violations.iter().map(|v| v.to_string()).collect::<Vec<_>>()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn event_schema_validator() -> jsonschema::Validator {
    let schema = serde_json::to_value(schemars::schema_for!(SubagentEvent)).unwrap();
    jsonschema::draft202012::new(&schema).expect("the generated schema compiles")
}

#[test]
fn schema_accepts_every_valid_vector_and_rejects_invalid_ones() {
    let validator = event_schema_validator();
    let (mut invalid, mut rejected) = (0, 0);
    let mut accepted_invalid = Vec::new();
    for (name, input, valid) in vectors() {
        let ok = validator.is_valid(&input);
        if valid {
            assert!(
                ok,
                "schema rejects valid vector {name}: {:?}",
                validator
                    .iter_errors(&input)
                    .map(|e| e.to_string())
                    .collect::<Vec<_>>()
            );
        } else {
            invalid += 1;
            if ok {
                accepted_invalid.push(name);
            } else {
                rejected += 1;
            }
        }
    }
    eprintln!("schema rejects {rejected}/{invalid} invalid vectors; accepts {accepted_invalid:?}");
    // Every rule of the guard is expressible in JSON Schema.
    assert!(
        accepted_invalid.is_empty(),
        "schema accepts invalid vectors {accepted_invalid:?}"
    );
}

#[test]
fn sub_guards_agree_with_their_checks_on_every_vector_payload() {
    for (name, input, _) in vectors() {
        if let Some(v) = input
            .get("snapshot")
            .filter(|_| input["type"] == "snapshot")
        {
            let parsed =
                serde_json::from_slice::<SubagentSnapshot>(&serde_json::to_vec(v).unwrap());
            assert_eq!(
                is_subagent_snapshot(v),
                check::<SubagentSnapshot>(v).is_empty(),
                "{name}"
            );
            assert_eq!(is_subagent_snapshot(v), parsed.is_ok(), "{name}");
        }
        if let Some(v) = input
            .get("progress")
            .filter(|_| input["type"] == "progress")
        {
            assert_eq!(
                is_subagent_progress(v),
                check::<SubagentProgress>(v).is_empty(),
                "{name}"
            );
        }
        if let Some(v) = input.get("update") {
            let parsed = serde_json::from_slice::<SubagentOutput>(&serde_json::to_vec(v).unwrap());
            assert_eq!(
                is_subagent_output(v),
                check::<SubagentOutput>(v).is_empty(),
                "{name}"
            );
            assert_eq!(is_subagent_output(v), parsed.is_ok(), "{name}");
        }
    }
}

#[test]
fn every_valid_vector_round_trips_unchanged() {
    for (name, input, valid) in vectors() {
        if !valid {
            continue;
        }
        let event: SubagentEvent = serde_json::from_value(input.clone()).unwrap();
        let back = serde_json::to_value(&event).unwrap();
        assert!(same_json(&back, &input), "{name}: {back} != {input}");
    }
}

/// JSON equality where numbers compare by value (`9007199254740992` and
/// `9007199254740992.0` are the same JavaScript number).
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

#[test]
fn truncated_input_never_panics() {
    for (_, input, _) in vectors().into_iter().step_by(7) {
        let bytes = serde_json::to_vec(&input).unwrap();
        for end in 0..bytes.len() {
            assert!(
                serde_json::from_slice::<SubagentEvent>(&bytes[..end]).is_err()
                    || end == bytes.len()
            );
        }
    }
    for junk in [
        "",
        "[]",
        "{}",
        "{\"type\":5}",
        "{\"update\":{}}",
        "\"x\"",
        "{\"sessionUpdate\":\"plan\"}",
    ] {
        assert!(
            serde_json::from_str::<SubagentEvent>(junk).is_err(),
            "{junk}"
        );
    }
}

// ---------------------------------------------------------------------------
// Helpers for hand-written cases
// ---------------------------------------------------------------------------

fn base() -> Value {
    json!({"version": 1, "sessionId": "root", "runId": "run"})
}

fn with(mut v: Value, extra: Value) -> Value {
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

fn snapshot_event(snapshot: Value) -> Value {
    with(base(), json!({"type": "snapshot", "snapshot": snapshot}))
}

fn progress_event(progress: Value) -> Value {
    with(base(), json!({"type": "progress", "progress": progress}))
}

fn output_event(update: Value) -> Value {
    with(base(), json!({"type": "output", "update": update}))
}

/// S of §17.2: a valid running snapshot.
fn s() -> Value {
    json!({"state": "running", "support": {"stream": ["text"], "progress": false, "outputRead": "none", "cancel": false}})
}

fn text_chunk(text: &str) -> Value {
    json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})
}

/// T of §17.2: a tool call with three content items.
fn t() -> Value {
    json!({
        "sessionUpdate": "tool_call", "toolCallId": "tool", "title": "Inspect", "kind": "read",
        "status": "in_progress",
        "content": [
            {"type": "content", "content": {"type": "resource", "resource": {"uri": "file:///test", "text": "synthetic", "mimeType": "text/plain"}}},
            {"type": "diff", "path": "/test", "newText": "new"},
            {"type": "terminal", "terminalId": "terminal"},
        ],
    })
}

/// Every violation of an event as (pointer, rule id), asserting that the
/// parser, the guard and the checker agree.
fn violations(event: &Value) -> Vec<(String, &'static str)> {
    let found: Vec<(String, &'static str)> = check::<SubagentEvent>(event)
        .into_iter()
        .map(|v| (v.pointer, v.rule.id()))
        .collect();
    assert_eq!(
        is_subagent_event(event),
        found.is_empty(),
        "{event}: {found:?}"
    );
    let parsed = serde_json::from_slice::<SubagentEvent>(&serde_json::to_vec(event).unwrap());
    assert_eq!(parsed.is_ok(), found.is_empty(), "{event}: {found:?}");
    found
}

fn valid(event: &Value) -> bool {
    violations(event).is_empty()
}

fn only(pointer: &str, rule: &'static str) -> Vec<(String, &'static str)> {
    vec![(pointer.to_owned(), rule)]
}

fn set(mut v: Value, pointer: &str, x: Value) -> Value {
    *v.pointer_mut(pointer)
        .unwrap_or_else(|| panic!("{pointer}")) = x;
    v
}

fn set_key(mut v: Value, key: &str, x: Value) -> Value {
    v[key] = x;
    v
}

fn remove(mut v: Value, key: &str) -> Value {
    v.as_object_mut().unwrap().remove(key);
    v
}

// ---------------------------------------------------------------------------
// §17.2 Test A
// ---------------------------------------------------------------------------

#[test]
fn reference_test_a_event_validation() {
    let snapshot = json!({
        "state": "unknown", "outputIncomplete": true, "reason": {"code": "disconnected"},
        "parentRunId": null,
        "support": {"stream": ["text", "tool"], "progress": false, "outputRead": "none", "cancel": false},
    });
    assert!(valid(&snapshot_event(snapshot)));
    assert!(valid(&progress_event(
        json!({"summary": null, "lastToolName": "read", "totalTokens": 123})
    )));
    assert_eq!(
        violations(&progress_event(json!({"totalTokens": -1}))),
        only("/progress/totalTokens", "finite-non-negative")
    );
    // Infinity cannot be written in JSON; the largest double is fine, and a
    // typed value refuses infinity.
    assert!(valid(&progress_event(json!({"contextTokens": f64::MAX}))));
    assert!(acp_extension_core::wire::NonNegF64::new(f64::INFINITY).is_err());
    assert_eq!(
        violations(&snapshot_event(set_key(s(), "state", json!(["running"])))),
        only("/snapshot/state", "one-of")
    );
    assert_eq!(
        violations(&snapshot_event(set(
            s(),
            "/support/outputRead",
            json!(["none"])
        ))),
        only("/snapshot/support/outputRead", "one-of")
    );
    assert_eq!(
        violations(&snapshot_event(set_key(
            s(),
            "reason",
            json!({"code": ["lost"]})
        ))),
        only("/snapshot/reason/code", "one-of")
    );
    assert_eq!(
        violations(&output_event(
            json!({"sessionUpdate": "usage_update", "used": 1, "size": 2})
        )),
        only("/update/sessionUpdate", "one-of")
    );
    assert_eq!(
        violations(&set_key(output_event(text_chunk("ok")), "runId", json!(""))),
        only("/runId", "non-empty")
    );
}

// ---------------------------------------------------------------------------
// §17.2 Test B
// ---------------------------------------------------------------------------

#[test]
fn reference_test_b_rich_content() {
    assert!(is_subagent_output(&t()));
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            set_key(t(), "status", Value::Null),
            "/update/status",
            "not-null",
        ),
        (
            set_key(t(), "status", json!("unknown")),
            "/update/status",
            "one-of",
        ),
        (
            set_key(t(), "status", json!(["completed"])),
            "/update/status",
            "one-of",
        ),
        (set_key(t(), "_meta", json!([])), "/update/_meta", "type"),
        (
            set_key(t(), "locations", json!([{"path": "/test", "line": 1.5}])),
            "/update/locations/0/line",
            "non-negative-safe-integer",
        ),
        (set_key(t(), "name", json!({})), "/update/name", "type"),
        (
            set_key(
                t(),
                "content",
                json!([{"type": "content", "content": {"type": "text", "text": "ok", "annotations": {"audience": ["system"]}}}]),
            ),
            "/update/content/0/content/annotations/audience/0",
            "one-of",
        ),
        (
            set_key(
                t(),
                "content",
                json!([{"type": "content", "content": {"type": "image", "data": "x", "mimeType": "image/png", "uri": []}}]),
            ),
            "/update/content/0/content/uri",
            "type",
        ),
        (
            set_key(
                t(),
                "content",
                json!([{"type": "content", "content": {"type": "resource_link", "name": "n", "uri": "u", "size": "bad"}}]),
            ),
            "/update/content/0/content/size",
            "type",
        ),
        (
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "ok"}, "messageId": 5}),
            "/update/messageId",
            "type",
        ),
        (
            json!({"sessionUpdate": "plan", "entries": [{"content": "inspect", "status": "pending", "priority": "high", "_meta": 5}]}),
            "/update/entries/0/_meta",
            "type",
        ),
    ];
    for (update, pointer, rule) in cases {
        assert!(!is_subagent_output(&update), "{update}");
        assert_eq!(violations(&output_event(update)), only(pointer, rule));
    }
    let update = json!({"sessionUpdate": "tool_call_update", "toolCallId": "tool", "status": null, "content": null});
    assert!(is_subagent_output(&update));
    assert!(valid(&output_event(update)));
}

// ---------------------------------------------------------------------------
// §18 edge cases
// ---------------------------------------------------------------------------

#[test]
fn snapshot_edge_cases() {
    let ok = |snap: Value| assert!(valid(&snapshot_event(snap.clone())), "{snap}");
    let bad = |snap: Value, pointer: &str, rule: &'static str| {
        assert_eq!(violations(&snapshot_event(snap)), only(pointer, rule))
    };
    ok(set(s(), "/support/stream", json!([])));
    ok(set(s(), "/support/stream", json!(["text", "text", "plan"])));
    ok(set_key(s(), "parentRunId", json!("")));
    bad(
        set_key(s(), "name", Value::Null),
        "/snapshot/name",
        "not-null",
    );
    bad(
        set_key(s(), "summary", Value::Null),
        "/snapshot/summary",
        "not-null",
    );
    ok(set_key(s(), "startedAtEpochSeconds", json!(0)));
    ok(set_key(s(), "startedAtEpochSeconds", json!(1.5)));
    bad(
        set_key(s(), "startedAtEpochSeconds", json!(-1)),
        "/snapshot/startedAtEpochSeconds",
        "finite-non-negative",
    );
    bad(
        set_key(s(), "startedAtEpochSeconds", Value::Null),
        "/snapshot/startedAtEpochSeconds",
        "not-null",
    );
    bad(
        set_key(s(), "outputIncomplete", json!(false)),
        "/snapshot/outputIncomplete",
        "literal",
    );
    bad(
        set_key(s(), "outputIncomplete", Value::Null),
        "/snapshot/outputIncomplete",
        "not-null",
    );
    ok(set_key(s(), "reason", json!({"code": "error"})));
    bad(
        set_key(s(), "reason", json!({"code": "error", "message": null})),
        "/snapshot/reason/message",
        "not-null",
    );
    bad(
        set_key(s(), "reason", Value::Null),
        "/snapshot/reason",
        "not-null",
    );
    ok(set_key(s(), "reason", json!({"code": "lost", "x": 1})));
    ok(set_key(s(), "x-extra", json!({"anything": [1]})));
    bad(remove(s(), "support"), "/snapshot/support", "required");
    bad(
        set(
            s(),
            "/support",
            json!({"stream": [], "outputRead": "none", "cancel": false}),
        ),
        "/snapshot/support/progress",
        "required",
    );
    // `_meta` is not checked on snapshots.
    ok(set_key(s(), "_meta", json!(5)));
}

#[test]
fn progress_edge_cases() {
    let ok = |p: Value| assert!(valid(&progress_event(p.clone())), "{p}");
    ok(json!({}));
    ok(json!({"x": [1, 2]}));
    ok(json!({"toolsUsed": null}));
    ok(json!({"durationMs": 1.5, "contextUsagePercent": 150}));
    assert_eq!(
        violations(&progress_event(json!({"toolsUsed": [1]}))),
        only("/progress/toolsUsed/0", "type")
    );
    assert_eq!(
        violations(&progress_event(json!({"summary": 5}))),
        only("/progress/summary", "type")
    );
    assert_eq!(
        violations(&progress_event(json!([]))),
        only("/progress", "type")
    );
    assert!(!is_subagent_progress(&json!([])));
    assert!(is_subagent_progress(&json!({})));
}

#[test]
fn output_edge_cases() {
    let ok = |u: Value| assert!(valid(&output_event(u.clone())), "{u}");
    let bad = |u: Value, pointer: &str, rule: &'static str| {
        assert_eq!(violations(&output_event(u)), only(pointer, rule))
    };
    let chunk =
        |content: Value| json!({"sessionUpdate": "agent_message_chunk", "content": content});
    ok(text_chunk(""));
    bad(
        chunk(json!({"type": "text", "text": 5})),
        "/update/content/text",
        "type",
    );
    ok(json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hm"}}));
    bad(
        json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "x"}}),
        "/update/sessionUpdate",
        "one-of",
    );
    ok(set_key(text_chunk("x"), "messageId", Value::Null));
    ok(set_key(text_chunk("x"), "_meta", Value::Null));
    ok(chunk(
        json!({"type": "text", "text": "x", "_meta": null, "annotations": null}),
    ));
    ok(chunk(
        json!({"type": "text", "text": "x", "annotations": {}}),
    ));
    ok(chunk(
        json!({"type": "text", "text": "x", "annotations": {"priority": -5, "audience": []}}),
    ));
    ok(chunk(
        json!({"type": "text", "text": "x", "annotations": {"audience": null}}),
    ));
    bad(
        chunk(json!({"type": "text", "text": "x", "annotations": {"lastModified": 5}})),
        "/update/content/annotations/lastModified",
        "type",
    );
    ok(chunk(
        json!({"type": "image", "data": "x", "mimeType": "image/png", "uri": null}),
    ));
    ok(chunk(
        json!({"type": "audio", "data": "x", "mimeType": "audio/wav", "uri": ["junk"]}),
    ));
    let link = |extra: Value| {
        chunk(with(
            json!({"type": "resource_link", "uri": "u", "name": "n"}),
            extra,
        ))
    };
    ok(link(json!({"size": -1})));
    ok(link(json!({"size": null, "title": null})));
    ok(link(json!({"size": 9007199254740991_u64})));
    bad(
        link(json!({"size": 1.5})),
        "/update/content/size",
        "safe-integer",
    );
    bad(
        link(json!({"size": 9007199254740992_u64})),
        "/update/content/size",
        "safe-integer",
    );
    let resource = |r: Value| chunk(json!({"type": "resource", "resource": r}));
    ok(resource(json!({"uri": "u", "blob": "AA=="})));
    ok(resource(json!({"uri": "u", "text": "t", "mimeType": null})));
    ok(resource(json!({"uri": "u", "text": 5, "blob": "b"})));
    bad(
        resource(json!({"uri": "u"})),
        "/update/content/resource",
        "resource-text-or-blob",
    );
    bad(
        resource(json!({"uri": "u", "text": null})),
        "/update/content/resource",
        "resource-text-or-blob",
    );
    bad(
        resource(json!({"uri": "u", "text": "t", "_meta": []})),
        "/update/content/resource/_meta",
        "type",
    );
    bad(
        chunk(json!({"type": "video", "data": "x"})),
        "/update/content/type",
        "one-of",
    );
    bad(
        chunk(json!({"text": "x"})),
        "/update/content/type",
        "one-of",
    );
    ok(json!({"sessionUpdate": "plan", "entries": []}));
    bad(
        json!({"sessionUpdate": "plan", "entries": [{"content": "c", "priority": "low", "status": "failed"}]}),
        "/update/entries/0/status",
        "one-of",
    );
    bad(
        json!({"sessionUpdate": "plan"}),
        "/update/entries",
        "required",
    );
    bad(json!({"content": "x"}), "/update/sessionUpdate", "one-of");
}

#[test]
fn tool_call_edge_cases() {
    let ok = |u: Value| assert!(valid(&output_event(u.clone())), "{u}");
    let bad = |u: Value, pointer: &str, rule: &'static str| {
        assert_eq!(violations(&output_event(u)), only(pointer, rule))
    };
    let call = json!({"sessionUpdate": "tool_call", "toolCallId": "c", "title": "T"});
    let update = json!({"sessionUpdate": "tool_call_update", "toolCallId": "c"});
    ok(call.clone());
    bad(remove(call.clone(), "title"), "/update/title", "required");
    bad(
        set_key(call.clone(), "toolCallId", json!("")),
        "/update/toolCallId",
        "non-empty",
    );
    for key in ["kind", "locations", "content"] {
        bad(
            set_key(call.clone(), key, Value::Null),
            &format!("/update/{key}"),
            "not-null",
        );
        ok(set_key(update.clone(), key, Value::Null));
    }
    ok(set_key(call.clone(), "rawInput", Value::Null));
    ok(set_key(call.clone(), "name", Value::Null));
    ok(set_key(update.clone(), "title", Value::Null));
    ok(update.clone());
    bad(
        set_key(update.clone(), "toolCallId", json!("")),
        "/update/toolCallId",
        "non-empty",
    );
    let loc = |line: Value| {
        set_key(
            call.clone(),
            "locations",
            json!([{"path": "/p", "line": line}]),
        )
    };
    ok(loc(json!(0)));
    ok(loc(Value::Null));
    bad(
        loc(json!(-1)),
        "/update/locations/0/line",
        "non-negative-safe-integer",
    );
    bad(
        loc(json!(9007199254740992_u64)),
        "/update/locations/0/line",
        "non-negative-safe-integer",
    );
    let content = |item: Value| set_key(call.clone(), "content", json!([item]));
    ok(content(
        json!({"type": "diff", "path": "/p", "newText": "n", "oldText": null}),
    ));
    bad(
        content(json!({"type": "diff", "path": "/p"})),
        "/update/content/0/newText",
        "required",
    );
    bad(
        content(json!({"type": "image"})),
        "/update/content/0/type",
        "one-of",
    );
    ok(content(
        json!({"type": "terminal", "terminalId": "t", "_meta": null}),
    ));
    ok(set_key(call.clone(), "status", json!("failed")));
    ok(set_key(call.clone(), "kind", json!("switch_mode")));
}

#[test]
fn event_edge_cases() {
    let ev = output_event(text_chunk("x"));
    assert_eq!(
        violations(&set_key(ev.clone(), "version", json!("1"))),
        only("/version", "literal")
    );
    assert_eq!(
        violations(&set_key(ev.clone(), "sessionId", json!(""))),
        only("/sessionId", "non-empty")
    );
    assert!(valid(&progress_event(json!({}))));
    assert_eq!(
        violations(&set_key(ev.clone(), "nativeTurnId", Value::Null)),
        only("/nativeTurnId", "not-null")
    );
    assert!(valid(&set_key(ev.clone(), "messageId", json!(""))));
    assert_eq!(
        violations(&set_key(ev.clone(), "type", json!("delta"))),
        only("/type", "one-of")
    );
    assert_eq!(
        violations(&remove(ev.clone(), "type")),
        only("/type", "required")
    );
    assert_eq!(
        violations(&remove(ev.clone(), "update")),
        only("/update", "required")
    );
    assert_eq!(violations(&json!([])), only("", "type"));
    // A 1.0 version is the same JavaScript number.
    assert!(valid(&set_key(ev.clone(), "version", json!(1.0))));
    // Every violation is reported, each at its pointer.
    let many = json!({"version": 2, "sessionId": "", "runId": 5, "type": "snapshot",
                      "snapshot": {"state": "x", "summary": null, "support": {}}});
    assert_eq!(
        violations(&many),
        vec![
            ("/version".to_owned(), "literal"),
            ("/sessionId".to_owned(), "non-empty"),
            ("/runId".to_owned(), "type"),
            ("/snapshot/state".to_owned(), "one-of"),
            ("/snapshot/support/stream".to_owned(), "required"),
            ("/snapshot/support/progress".to_owned(), "required"),
            ("/snapshot/support/outputRead".to_owned(), "required"),
            ("/snapshot/support/cancel".to_owned(), "required"),
            ("/snapshot/summary".to_owned(), "not-null"),
        ]
    );
}

#[test]
fn keys_of_other_types_are_ignored_and_preserved() {
    let ev = with(
        snapshot_event(s()),
        json!({"progress": {"totalTokens": -1}, "update": 5, "nativeTurnId": null, "x": 1}),
    );
    assert!(valid(&ev));
    let parsed: SubagentEvent = serde_json::from_value(ev.clone()).unwrap();
    assert_eq!(parsed.extra["progress"], json!({"totalTokens": -1}));
    assert_eq!(parsed.extra["x"], json!(1));
    assert_eq!(serde_json::to_value(&parsed).unwrap(), ev);
    let ev = with(output_event(text_chunk("x")), json!({"snapshot": "junk"}));
    assert!(valid(&ev));
    let ev = with(progress_event(json!({})), json!({"snapshot": null}));
    assert!(valid(&ev));
}

#[test]
fn payload_keys_before_type_parse_the_same() {
    // Written in reverse order: the payload arrives before `type`, and
    // `sessionUpdate` after the other keys of the update.
    let text = r#"{"update":{"content":{"text":"hi","type":"text"},"messageId":"m","sessionUpdate":"agent_message_chunk"},"nativeTurnId":"t","type":"output","runId":"r","sessionId":"s","version":1}"#;
    let event: SubagentEvent = serde_json::from_str(text).unwrap();
    let out = event.output().unwrap();
    assert_eq!(out.native_turn_id.as_deref(), Some("t"));
    assert_eq!(
        serde_json::to_string(&out.update).unwrap(),
        r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"},"messageId":"m"}"#
    );
    let bad = r#"{"update":{"content":{"text":5,"type":"text"},"sessionUpdate":"agent_message_chunk"},"type":"output","runId":"r","sessionId":"s","version":1}"#;
    assert!(serde_json::from_str::<SubagentEvent>(bad).is_err());
    let wrong_type = r#"{"snapshot":{},"type":"progress","progress":{},"runId":"r","sessionId":"s","version":1}"#;
    let event: SubagentEvent = serde_json::from_str(wrong_type).unwrap();
    assert_eq!(event.extra["snapshot"], json!({}));
}

#[test]
fn absent_and_null_stay_apart() {
    let p: SubagentProgress =
        serde_json::from_value(json!({"summary": null, "turnCount": 2})).unwrap();
    assert_eq!(p.summary, MaybeUndefined::Null);
    assert_eq!(p.last_tool_name, MaybeUndefined::Undefined);
    assert_eq!(
        serde_json::to_value(&p).unwrap(),
        json!({"summary": null, "turnCount": 2})
    );
    let snap: SubagentSnapshot =
        serde_json::from_value(set_key(s(), "parentRunId", Value::Null)).unwrap();
    assert_eq!(snap.parent_run_id, MaybeUndefined::Null);
    assert_eq!(
        serde_json::to_value(&snap).unwrap(),
        set_key(s(), "parentRunId", Value::Null)
    );
    let u = json!({"sessionUpdate": "tool_call_update", "toolCallId": "c", "title": null, "kind": null});
    let out: SubagentOutput = serde_json::from_value(u.clone()).unwrap();
    assert_eq!(serde_json::to_value(&out).unwrap(), u);
}

#[test]
fn merge_into_replaces_adds_last_and_removes_on_null() {
    let mut map = json!({"summary": "reading", "turnCount": 1, "phase": "plan", "durationMs": 5})
        .as_object()
        .unwrap()
        .clone();
    let p: SubagentProgress = serde_json::from_value(json!({
        "phase": null,
        "durationMs": 7.5,
        "toolsUsed": ["Read"],
        "summary": null,
        "mood": {"calm": true},
        "turnCount": 2,
    }))
    .unwrap();
    p.merge_into(&mut map);
    // Replaced in place; added last in the order the type writes its keys
    // (its own, then the unknown ones); removed on `null`; absent keys kept.
    assert_eq!(
        serde_json::to_string(&map).unwrap(),
        r#"{"turnCount":2,"durationMs":7.5,"toolsUsed":["Read"],"mood":{"calm":true}}"#
    );
    // An object with nothing set changes nothing.
    SubagentProgress::new().merge_into(&mut map);
    assert_eq!(
        serde_json::to_string(&map).unwrap(),
        r#"{"turnCount":2,"durationMs":7.5,"toolsUsed":["Read"],"mood":{"calm":true}}"#
    );
}

#[test]
fn resource_contents_keep_a_non_string_text_beside_a_blob() {
    let r = json!({"uri": "u", "text": 5, "blob": "b", "x": true});
    let update = json!({"sessionUpdate": "agent_message_chunk",
        "content": {"type": "resource", "resource": r}});
    let parsed: SubagentOutput = serde_json::from_value(update.clone()).unwrap();
    assert_eq!(serde_json::to_value(&parsed).unwrap(), update);
    let neither = json!({"sessionUpdate": "agent_message_chunk",
        "content": {"type": "resource", "resource": {"uri": "u", "text": 5}}});
    assert!(serde_json::from_value::<SubagentOutput>(neither).is_err());
}

#[test]
fn typed_events_build_the_wire_shape() {
    let id = |s: &str| NonEmptyString::new(s).unwrap();
    let support = SubagentSupport::new(
        vec![SubagentStream::Text],
        false,
        OutputRead::LiveTail,
        true,
    );
    let snapshot = SubagentSnapshot::new(SubagentState::Running, support)
        .name("Worker")
        .parent_run_id(None)
        .reason(SubagentReason::new(SubagentReasonCode::Timeout).message("slow"));
    let event = SubagentEvent::new(id("root"), id("run-1"), snapshot);
    assert_eq!(event.payload.event_type(), SubagentEventType::Snapshot);
    assert_eq!(
        (event.session_id.as_str(), event.run_id.as_str()),
        ("root", "run-1")
    );
    assert_eq!(
        serde_json::to_value(&event).unwrap(),
        json!({"version": 1, "sessionId": "root", "runId": "run-1", "type": "snapshot",
               "snapshot": {"state": "running", "name": "Worker", "reason": {"code": "timeout", "message": "slow"},
                            "parentRunId": null,
                            "support": {"stream": ["text"], "progress": false, "outputRead": "live_tail", "cancel": true}}})
    );

    use agent_client_protocol::v1::schema as acp;
    let call = acp::ToolCall::new("call-1", "Read")
        .kind(acp::ToolKind::Read)
        .status(acp::ToolCallStatus::InProgress)
        .locations(vec![acp::ToolCallLocation::new("/a").line(3)])
        .content(vec![acp::ToolCallContent::from("out")]);
    let call = SubagentOutput::try_from(acp::SessionUpdate::ToolCall(call)).unwrap();
    let payload = SubagentOutputPayload::new(call).native_turn_id("turn");
    let event = SubagentEvent::new(id("root"), id("run-1"), payload);
    assert_eq!(
        serde_json::to_value(&event).unwrap(),
        json!({"version": 1, "sessionId": "root", "runId": "run-1", "type": "output",
               "update": {"sessionUpdate": "tool_call", "toolCallId": "call-1", "title": "Read",
                          "status": "in_progress", "kind": "read", "locations": [{"path": "/a", "line": 3}],
                          "content": [{"type": "content", "content": {"type": "text", "text": "out"}}]},
               "nativeTurnId": "turn"})
    );
    let thought = acp::SessionUpdate::AgentThoughtChunk(acp::ContentChunk::new("hm".into()));
    let thought = SubagentOutput::try_from(thought).unwrap();
    assert_eq!(thought.tag(), "agent_thought_chunk");
    assert!(is_subagent_output(&serde_json::to_value(&thought).unwrap()));
}

#[test]
fn converts_to_and_from_the_sdk_session_update() {
    use agent_client_protocol::v1::schema as acp;
    for update in [
        text_chunk("hi"),
        t(),
        json!({"sessionUpdate": "plan", "entries": [{"content": "c", "priority": "high", "status": "pending"}]}),
    ] {
        let ours: SubagentOutput = serde_json::from_value(update.clone()).unwrap();
        let sdk = acp::SessionUpdate::try_from(ours.clone()).unwrap();
        assert_eq!(SubagentOutput::try_from(sdk).unwrap(), ours, "{update}");
    }
    let user =
        acp::SessionUpdate::UserMessageChunk(acp::ContentChunk::new(acp::ContentBlock::from("hi")));
    assert!(SubagentOutput::try_from(user).is_err());
    let sdk_chunk = acp::SessionUpdate::AgentMessageChunk(acp::ContentChunk::new(
        acp::ContentBlock::from("hi"),
    ));
    let ours = SubagentOutput::try_from(sdk_chunk).unwrap();
    assert_eq!(serde_json::to_value(&ours).unwrap(), text_chunk("hi"));
}

#[test]
fn states_methods_and_enums() {
    let live: Vec<&str> = SubagentState::ALL
        .iter()
        .filter(|s| SubagentState::from_wire(s).unwrap().is_live())
        .copied()
        .collect();
    assert_eq!(live, ["pending", "running"]);
    assert_eq!(
        acp_extension_core::methods::ContractMethod::SubagentEvent
            .method(acp_extension_core::Namespace::Lody),
        "_lody/subagents/event"
    );
    assert_eq!(
        acp_extension_core::Namespace::Ua.method(
            <SubagentEvent as acp_extension_core::methods::ExtensionNotificationMethod>::PATH
        ),
        "_ua/subagents/event"
    );
    assert_eq!(SubagentOutput::TAGS.len(), 5);
}
