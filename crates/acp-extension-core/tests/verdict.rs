//! The verdict-only path (`is_valid_slice`, used by `validate --quiet`)
//! must agree with the typed parse on every input, for every kind: the
//! vectors, the recorded corpus, generated streams, and structural and
//! byte-level mutations of them.

mod common;

use acp_extension_core::validate::{
    Kind, is_valid_slice, sift_verdict, typed_verdict, validate_slice, validate_value,
};
use serde_json::Value;

#[path = "../benches/events.rs"]
mod events;

/// A JSON tree that keeps duplicate keys and key order, to write inputs
/// that `serde_json::Value` cannot hold.
#[derive(Clone, Debug)]
enum J {
    Raw(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl J {
    fn from_value(v: &Value) -> J {
        match v {
            Value::Array(items) => J::Arr(items.iter().map(J::from_value).collect()),
            Value::Object(obj) => J::Obj(
                obj.iter()
                    .map(|(k, v)| (k.clone(), J::from_value(v)))
                    .collect(),
            ),
            other => J::Raw(other.to_string()),
        }
    }

    fn write(&self, out: &mut String) {
        match self {
            J::Raw(s) => out.push_str(s),
            J::Arr(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            J::Obj(entries) => {
                out.push('{');
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::from(k.as_str()).to_string());
                    out.push(':');
                    v.write(out);
                }
                out.push('}');
            }
        }
    }

    fn text(&self) -> String {
        let mut s = String::new();
        self.write(&mut s);
        s
    }

    /// Every node, as a path of child indices.
    fn paths(&self, at: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        out.push(at.clone());
        let children: Vec<&J> = match self {
            J::Raw(_) => return,
            J::Arr(items) => items.iter().collect(),
            J::Obj(entries) => entries.iter().map(|(_, v)| v).collect(),
        };
        for (i, c) in children.into_iter().enumerate() {
            at.push(i);
            c.paths(at, out);
            at.pop();
        }
    }

    fn at_mut(&mut self, path: &[usize]) -> &mut J {
        match path.split_first() {
            None => self,
            Some((&i, rest)) => match self {
                J::Arr(items) => items[i].at_mut(rest),
                J::Obj(entries) => entries[i].1.at_mut(rest),
                J::Raw(_) => unreachable!(),
            },
        }
    }
}

/// The entries of an object.
type Entries = Vec<(String, J)>;

/// Values a field is replaced with: wrong types, nulls, the number edge
/// cases (`1.0`, `1e400`, `-0`, beyond 2^53), strings with escapes and lone
/// surrogates, variant indices, deep nesting.
fn replacements() -> Vec<String> {
    let mut r: Vec<String> = [
        "null",
        "true",
        "false",
        "0",
        "1",
        "2",
        "4",
        "5",
        "1.0",
        "1.5",
        "-1",
        "-0",
        "-0.0",
        "1e400",
        "-1e400",
        "1e-400",
        "9007199254740991",
        "9007199254740993",
        "18446744073709551616",
        "\"\"",
        "\"x\"",
        "\"text\"",
        "\"t\\u0065xt\"",
        "\"\\ud800\"",
        "\"\\udc00x\"",
        "\"\\ud83d\\ude00\"",
        "\"a\\nb\"",
        "[]",
        "[null]",
        "[\"text\"]",
        "{}",
        "{\"a\":1e400}",
        "{\"a\":\"\\ud800\"}",
        "{\"type\":\"text\",\"text\":\"x\"}",
        "{\"type\":0,\"text\":\"x\"}",
        "{\"text\":\"x\",\"type\":\"text\"}",
        "{\"type\":\"text\",\"type\":\"text\",\"text\":\"x\"}",
        "{\"type\":\"content\",\"content\":{\"type\":0,\"text\":\"x\"}}",
        "{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":null,\"text\":\"x\"}}",
        "{\"type\":\"resource\",\"resource\":{\"uri\":\"u\",\"text\":\"t\",\"text\":5}}",
        "{\"type\":\"resource\",\"resource\":{\"uri\":\"u\",\"text\":5,\"blob\":\"b\"}}",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    r.push(format!("{}{}", "[".repeat(200), "]".repeat(200)));
    r.push(format!("{}{}", "[".repeat(120), "]".repeat(120)));
    r
}

/// Structural mutations of `j`: each node replaced (by `per_node` of the
/// replacements, a different few for each node and `seed`), each key
/// dropped, duplicated, moved to the front or back and spelled with an
/// escape, unknown keys added.
fn mutations(j: &J, seed: usize, per_node: usize, out: &mut Vec<String>) {
    let reps = replacements();
    let mut paths = Vec::new();
    j.paths(&mut Vec::new(), &mut paths);
    for (n, path) in paths.iter().enumerate() {
        for r in 0..per_node.min(reps.len()) {
            let rep = &reps[(seed * 13 + n * 7 + r * 11) % reps.len()];
            let mut m = j.clone();
            *m.at_mut(path) = J::Raw(rep.clone());
            out.push(m.text());
        }
        let node = j.clone().at_mut(path).clone();
        if let J::Obj(entries) = node {
            for i in 0..entries.len() {
                let edit = |f: &dyn Fn(&mut Entries)| {
                    let mut m = j.clone();
                    if let J::Obj(e) = m.at_mut(path) {
                        f(e);
                    }
                    m.text()
                };
                out.push(edit(&|e| {
                    e.remove(i);
                }));
                out.push(edit(&|e| {
                    let dup = (e[i].0.clone(), J::Raw("null".into()));
                    e.insert(i, dup);
                }));
                out.push(edit(&|e| {
                    let dup = e[i].clone();
                    e.push(dup);
                }));
                out.push(edit(&|e| {
                    let moved = e.remove(i);
                    e.insert(0, moved);
                }));
                out.push(edit(&|e| {
                    let moved = e.remove(i);
                    e.push(moved);
                }));
                out.push(edit(&|e| {
                    let (k, _) = e[i].clone();
                    let escaped = k.replacen('e', "\\u0065", 1);
                    if escaped != k {
                        // An escaped spelling of the same key (written raw below).
                        e[i].0 = format!("\u{1}{escaped}");
                    }
                }));
            }
            let mut m = j.clone();
            if let J::Obj(e) = m.at_mut(path) {
                e.insert(0, ("zzUnknown".into(), J::Raw("[1,{\"a\":null}]".into())));
            }
            out.push(m.text());
        }
    }
}

/// Byte-level mutations of `text`: deletions, insertions and replacements
/// with bytes that matter to JSON, at a spread of positions (a different
/// few bytes at each position and `seed`).
fn byte_mutations(text: &str, seed: usize, out: &mut Vec<Vec<u8>>) {
    let bytes = text.as_bytes();
    let specials: &[&[u8]] = &[
        b"\"", b"{", b"}", b"[", b"]", b",", b":", b"0", b"-", b"e", b"n", b"\\", b" ", b"\xff",
        b"\xc3", b"\x01", b"\\u0000", b"\\ud800", b"1e999", b"\"\"", b"null",
    ];
    let step = (bytes.len() / 16).max(1);
    for (p, i) in (0..bytes.len()).step_by(step).enumerate() {
        let mut del = bytes.to_vec();
        del.remove(i);
        out.push(del);
        for r in 0..3 {
            let s = specials[(seed * 5 + p * 3 + r * 7) % specials.len()];
            let mut rep = bytes.to_vec();
            rep.splice(i..i + 1, s.iter().copied());
            out.push(rep);
            let mut ins = bytes.to_vec();
            ins.splice(i..i, s.iter().copied());
            out.push(ins);
        }
    }
    let mut trailing = bytes.to_vec();
    trailing.extend_from_slice(b" {}");
    out.push(trailing);
    let mut ws = b" \t\r\n".to_vec();
    ws.extend_from_slice(bytes);
    ws.extend_from_slice(b"\n ");
    out.push(ws);
    let mut bom = b"\xef\xbb\xbf".to_vec();
    bom.extend_from_slice(bytes);
    out.push(bom);
    out.push(bytes[..bytes.len() / 2].to_vec());
}

/// Turns the raw-key marker of [`mutations`] into an unescaped write.
fn finish(text: String) -> Vec<u8> {
    text.replace("\"\\u0001", "\"")
        .replace("\\\\u0065", "\\u0065")
        .into_bytes()
}

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
            assert_agrees(Kind::SubagentEvent, &finish(text));
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
            assert_agrees(Kind::SubagentEvent, &bytes);
        }
    }
}

#[test]
fn the_sift_decides_every_generated_event() {
    // Generated lines have no duplicate keys and put every tag first: the
    // sift alone must decide them (else `--quiet` silently slows down).
    for i in 0..2_000 {
        let line = events::event_line(i);
        let sifted = sift_verdict(Kind::SubagentEvent, line.as_bytes());
        assert_eq!(
            sifted,
            Some(typed_verdict(Kind::SubagentEvent, line.as_bytes())),
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
        // Inside a tool call's content serde buffers the block, and its
        // variant identifier takes an index: the typed parse accepts this
        // (validation does not; see below).
        (
            tool(r#"{"type":"content","content":{"type":0,"text":"hi"}}"#),
            true,
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
            typed_verdict(Kind::SubagentEvent, text.as_bytes()),
            *expected,
            "typed parse of {text}"
        );
        assert_agrees(Kind::SubagentEvent, text.as_bytes());
    }
    assert_agrees(Kind::SubagentEvent, b"{\"version\":1,\"x\":\"\xff\"}");
    // A variant index is not a tag: validation says so on every path.
    let index_tag = tool(r#"{"type":"content","content":{"type":0,"text":"hi"}}"#);
    assert!(!is_valid_slice(Kind::SubagentEvent, index_tag.as_bytes()));
    let report = validate_slice(Kind::SubagentEvent, index_tag.as_bytes());
    assert_eq!(
        report.violations[0].pointer,
        "/update/content/0/content/type"
    );
}
