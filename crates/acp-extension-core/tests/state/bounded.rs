//! Bounded mode and the document schema

use super::*;

#[test]
fn bounded_mode_stays_within_its_caps() {
    let mut state = ConnectionState::with_limits(StateLimits::bounded());
    let limits = state.limits();
    for i in 0..(limits.sessions + 10) {
        state.message(A2C, &snapshot(&format!("s{i}"), "r", "running"));
    }
    for i in 0..(limits.runs_per_session + 10) {
        state.message(A2C, &snapshot("s0", &format!("r{i}"), "running"));
    }
    let big = "y".repeat(1000);
    for _ in 0..100 {
        state.message(A2C, &output("s0", "r5000", text(&big)));
        state.message(
            A2C,
            &output("s0", &format!("r{}", limits.runs_per_session), text(&big)),
        );
    }
    for _ in 0..(limits.invalid + 10) {
        state.line(A2C, "not json");
    }
    assert!(state.sessions().len() <= limits.sessions);
    let s0 = state.session("s0").unwrap();
    assert!(s0.subagent_runs.len() <= limits.runs_per_session);
    let run = &s0.subagent_runs[&format!("r{}", limits.runs_per_session)];
    // The tail is kept: trimmed back to `text_per_run` once it grows past
    // one and a half times as many bytes.
    assert!(run.text.len() <= limits.text_per_run * 3 / 2 && run.text.len() > 60_000);
    assert!(run.text.ends_with(&big));
    assert_eq!(state.invalid().len(), limits.invalid);
    assert!(state.invalid_count() > limits.invalid as u64);
    let t = state.tracked();
    assert!(t.sessions <= limits.sequence.sessions);
}

#[test]
fn the_json_document_matches_its_schema() {
    let mut state = ConnectionState::new();
    init(
        &mut state,
        json!({"sessionTitle": {"version": 1}, "subagentEvents": {"version": 1}}),
        json!({"subagentEvents": {"version": 1}}),
    );
    for m in [
        snapshot("s", "r", "running"),
        output("s", "r", text("hi")),
        usage_update("s", None, 3, Some(0.01)),
        title("s", json!("T"), Some("explicit")),
        goal("s", Some(json!({"objective": "o", "status": "active"}))),
        update("s", json!({"sessionUpdate": "bogus"})),
    ] {
        state.message(A2C, &m);
    }
    let mut doc = serde_json::to_value(&state).unwrap();
    doc["file"] = json!("x.jsonl");
    for key in [
        "negotiation",
        "sessions",
        "rateLimits",
        "invalid",
        "invalidCount",
    ] {
        assert!(doc.get(key).is_some(), "{key} missing: {doc}");
    }
    let s = &doc["sessions"]["s"];
    for key in [
        "title",
        "titleSource",
        "goal",
        "activity",
        "subagentRuns",
        "tasks",
        "usage",
    ] {
        assert!(s.get(key).is_some(), "{key} missing: {s}");
    }
    assert_eq!(s["subagentRuns"]["r"]["snapshot"]["state"], "running");
    let schema = serde_json::to_value(document_schema()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    // And it rejects what is not a state document.
    assert!(!validator.is_valid(&json!({"file": 1})));
}
