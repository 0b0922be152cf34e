//! The verdict-only path (`is_valid_slice`, used by `validate --quiet`)
//! must agree with the typed parse on every input, for every kind: the
//! vectors, the recorded corpus, generated streams, and structural and
//! byte-level mutations of them.

mod common;

use acp_extension_core::subagent_events::SubagentEvent;
use common::mutate::{J, byte_mutations, finish, mutations};

use acp_extension_core::validate::{
    Kind, is_valid_slice, sift_verdict, typed_verdict, validate_slice, validate_value,
};
use serde_json::Value;

#[path = "../benches/events.rs"]
mod events;

/// The sift, when it decides, decides as the typed parse; and the verdict
/// is always the report's.
fn assert_agrees(kind: Kind, bytes: &[u8]) {
    let text = || String::from_utf8_lossy(bytes).into_owned();
    if let Some(sifted) = sift_verdict(kind, bytes) {
        // The sift decides only without duplicate keys, where the typed
        // parse and the JSON tree see the same thing. It follows the typed
        // parse, except where that parse is laxer than the contract
        // (a variant index as a buffered union tag): there it follows `Check`.
        let typed = typed_verdict(kind, bytes);
        let checked = typed
            && serde_json::from_slice::<Value>(bytes)
                .is_ok_and(|v| validate_value(kind, &v).is_valid());
        assert_eq!(
            sifted,
            checked,
            "{kind}: sift {sifted}, typed parse {typed}, check: {checked}: {}",
            text()
        );
    }
    let verdict = is_valid_slice(kind, bytes);
    let report = validate_slice(kind, bytes);
    assert_eq!(
        verdict,
        report.is_valid(),
        "{kind}: verdict {verdict}, report {report}: {}",
        text()
    );
}

/// Every JSON value below `v` (including `v`).
fn subvalues<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
    out.push(v);
    match v {
        Value::Array(items) => items.iter().for_each(|i| subvalues(i, out)),
        Value::Object(obj) => obj.values().for_each(|i| subvalues(i, out)),
        _ => {}
    }
}

/// Inputs of every vector file and every corpus message.
fn corpus() -> Vec<Value> {
    let mut values = Vec::new();
    for file in [
        "vectors/subagent-event-guard.jsonl",
        "vectors/usage-accumulator.jsonl",
        "vectors/sum-model-usage.jsonl",
        "vectors/subagent-emitter.jsonl",
    ] {
        values.extend(common::jsonl(file));
    }
    values.push(serde_json::from_str(&common::read("vectors/plan-mode.json")).unwrap());
    for dir in ["corpus/acp-extension-claude", "corpus/acp-extension-codex"] {
        let mut files: Vec<_> = std::fs::read_dir(common::shared(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            match serde_json::from_str::<Value>(&text) {
                Ok(v) => values.push(v),
                Err(_) => values.extend(
                    text.lines()
                        .filter(|l| !l.trim().is_empty())
                        .filter_map(|l| serde_json::from_str::<Value>(l).ok()),
                ),
            }
        }
    }
    values
}

/// Every distinct object or array below the values of `corpus()`.
fn distinct_subvalues() -> Vec<Value> {
    let values = corpus();
    let mut all = Vec::new();
    for v in &values {
        subvalues(v, &mut all);
    }
    let mut seen = std::collections::HashSet::new();
    all.into_iter()
        .filter(|v| (v.is_object() || v.is_array()) && seen.insert(v.to_string()))
        .cloned()
        .collect()
}

#[test]
fn every_kind_agrees_on_every_value_of_the_vectors_and_corpus() {
    let values = distinct_subvalues();
    assert!(values.len() > 5_000, "{} values", values.len());
    for kind in Kind::ALL {
        for v in &values {
            assert_agrees(*kind, v.to_string().as_bytes());
        }
    }
}

#[test]
fn every_kind_agrees_under_mutations_of_its_own_values() {
    // Each small object of the vectors and corpus, mutated, is checked as
    // every kind it is valid as, and as one more kind in turn (a value of
    // one kind is often a near miss of another).
    let values = distinct_subvalues();
    let mut checked = 0;
    for (n, v) in values.iter().enumerate() {
        let text = v.to_string();
        if !v.is_object() || text.len() > 600 || n % 6 != 0 {
            continue;
        }
        // Up to two kinds it is valid as (a different pair in turn), and
        // one more kind.
        let valid: Vec<Kind> = Kind::ALL
            .iter()
            .copied()
            .filter(|k| is_valid_slice(*k, text.as_bytes()))
            .collect();
        let mut kinds: Vec<Kind> = (0..valid.len().min(2))
            .map(|i| valid[(n + i) % valid.len()])
            .collect();
        kinds.push(Kind::ALL[n % Kind::ALL.len()]);
        let mut texts = Vec::new();
        mutations(&J::from_value(v), n, 2, &mut texts);
        for text in texts {
            let bytes = finish(text);
            for kind in &kinds {
                assert_agrees(*kind, &bytes);
                checked += 1;
            }
        }
    }
    assert!(checked > 5_000, "{checked} checks");
}

#[test]
fn subagent_events_agree_under_structural_mutations() {
    let guard = common::jsonl("vectors/subagent-event-guard.jsonl");
    let mut inputs: Vec<Value> = guard.iter().map(|g| g["input"].clone()).collect();
    inputs.extend((0..100).map(|i| serde_json::from_str(&events::event_line(i)).unwrap()));
    let mut checked = 0;
    for (n, input) in inputs.iter().enumerate().filter(|(n, _)| n % 2 == 0) {
        let mut texts = Vec::new();
        mutations(&J::from_value(input), n, 2, &mut texts);
        for text in texts {
            assert_agrees(Kind::of::<SubagentEvent>(), &finish(text));
            checked += 1;
        }
    }
    assert!(checked > 20_000, "{checked} inputs");
}

#[test]
fn subagent_events_agree_under_byte_mutations() {
    let guard = common::jsonl("vectors/subagent-event-guard.jsonl");
    let mut texts: Vec<String> = guard.iter().map(|g| g["input"].to_string()).collect();
    texts.extend((0..100).map(events::event_line));
    for (n, text) in texts.iter().enumerate().filter(|(n, _)| n % 2 == 0) {
        let mut out = Vec::new();
        byte_mutations(text, n, &mut out);
        for bytes in out {
            assert_agrees(Kind::of::<SubagentEvent>(), &bytes);
        }
    }
}

#[test]
fn the_sift_decides_every_generated_event() {
    // Generated lines have no duplicate keys and put every tag first: the
    // sift alone must decide them (else `--quiet` silently slows down).
    for i in 0..2_000 {
        let line = events::event_line(i);
        let sifted = sift_verdict(Kind::of::<SubagentEvent>(), line.as_bytes());
        assert_eq!(
            sifted,
            Some(typed_verdict(Kind::of::<SubagentEvent>(), line.as_bytes())),
            "{line}"
        );
    }
}

#[test]
fn edge_cases_agree() {
    let env = r#""version":1,"sessionId":"s","runId":"r""#;
    let chunk = |content: &str| {
        format!(
            r#"{{{env},"type":"output","update":{{"sessionUpdate":"agent_message_chunk","content":{content}}}}}"#
        )
    };
    let tool = |content: &str| {
        format!(
            r#"{{{env},"type":"output","update":{{"sessionUpdate":"tool_call","toolCallId":"t","title":"x","content":[{content}]}}}}"#
        )
    };
    let cases: Vec<(String, bool)> = vec![
        (chunk(r#"{"type":"text","text":"hi"}"#), true),
        (chunk(r#"{"text":"hi","type":"text"}"#), true),
        (chunk(r#"{"type":0,"text":"hi"}"#), false),
        // Inside a tool call's content the block is a union like any
        // other: its tag is a string, never a variant index (serde's own
        // internally tagged enums would take `0` as the first variant).
        (
            tool(r#"{"type":"content","content":{"type":0,"text":"hi"}}"#),
            false,
        ),
        (
            tool(r#"{"type":"content","content":{"type":5,"text":"hi"}}"#),
            false,
        ),
        (
            tool(r#"{"type":"content","content":{"type":-0,"text":"hi"}}"#),
            false,
        ),
        (chunk(r#"{"type":"text","type":"text","text":"hi"}"#), false),
        (
            chunk(r#"{"type":"text","text":"hi","rawInput":1e400}"#),
            false,
        ),
        (chunk(r#"{"type":"text","text":"hi","x":"\ud800"}"#), false),
        (chunk(r#"{"type":"text","text":"\ud83d\ude00"}"#), true),
        (chunk(r#"{"typ\u0065":"text","text":"hi"}"#), true),
        (
            r#"{"version":1.0,"sessionId":"s","runId":"r","type":"progress","progress":{"durationMs":-0}}"#.to_string(),
            true,
        ),
        (
            format!(r#"{{{env},"type":"progress","progress":{{"durationMs":9007199254740993}}}}"#),
            true,
        ),
        (
            format!(r#"{{{env},"progress":{{"summary":null,"summary":"x"}},"type":"progress"}}"#),
            true,
        ),
        (
            format!(r#"{{{env},"type":"snapshot","snapshot":{{"summary":null,"summary":"x"}}}}"#),
            false,
        ),
        (
            format!(
                r#"{{{env},"type":"output","update":{{"content":{{"type":"text","text":null,"text":"x"}},"sessionUpdate":"agent_message_chunk"}}}}"#
            ),
            true,
        ),
    ];
    for (text, expected) in &cases {
        assert_eq!(
            typed_verdict(Kind::of::<SubagentEvent>(), text.as_bytes()),
            *expected,
            "typed parse of {text}"
        );
        assert_agrees(Kind::of::<SubagentEvent>(), text.as_bytes());
    }
    assert_agrees(
        Kind::of::<SubagentEvent>(),
        b"{\"version\":1,\"x\":\"\xff\"}",
    );
    // A variant index is not a tag: validation says so on every path.
    let index_tag = tool(r#"{"type":"content","content":{"type":0,"text":"hi"}}"#);
    assert!(!is_valid_slice(
        Kind::of::<SubagentEvent>(),
        index_tag.as_bytes()
    ));
    let report = validate_slice(Kind::of::<SubagentEvent>(), index_tag.as_bytes());
    assert_eq!(
        report.violations[0].pointer,
        "/update/content/0/content/type"
    );
}
