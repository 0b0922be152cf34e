//! fold_lines

use super::*;

fn fold(input: &[u8]) -> (Vec<Value>, acp_extension_core::usage::FoldSummary) {
    let mut acc = SessionUsageAccumulator::with_scope_id("fold").unwrap();
    let mut out = Vec::new();
    let summary = fold_lines(input, &mut out, &mut acc).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.is_empty() || text.ends_with('\n'));
    let lines = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (lines, summary)
}

#[test]
fn fold_writes_one_line_per_input_line() {
    let step = |op: &str, input: i64| {
        json!({"sessionId": "s", "operationId": op,
            "rows": {"m": {"inputTokens": input, "outputTokens": 0, "cacheReadInputTokens": 0}}})
        .to_string()
    };
    let input = [
        step("1", 5),
        step("1", 5),
        step("2", -1),
        String::new(),
        "{not json".to_owned(),
        r#"{"sessionId":"s","rows":{}}"#.to_owned(),
        step("2", 7),
    ]
    .join("\r\n")
        + "\n";
    let (lines, summary) = fold(input.as_bytes());
    assert_eq!(lines.len(), 7);
    assert_eq!((summary.lines, summary.emitted, summary.errors), (7, 2, 4));
    assert_eq!(lines[0]["modelUsage"]["m"]["inputTokens"], 5);
    assert_eq!(lines[0]["_meta"]["lody"]["usageScopeId"], "fold");
    assert_eq!(lines[1], Value::Null);
    let message = |i: usize| {
        assert_eq!(lines[i]["error"]["line"], i as u64 + 1);
        lines[i]["error"]["message"].as_str().unwrap().to_owned()
    };
    let m = message(2);
    assert!(
        m.starts_with("/rows/m/inputTokens: must be a non-negative integer"),
        "{m}"
    );
    assert!(message(3).starts_with("blank line"));
    let m = message(4);
    assert!(m.starts_with("(root): "), "{m}");
    let m = message(5);
    assert!(m.contains("operationId"), "{m}");
    // The bad line did not disturb the ledger.
    assert_eq!(lines[6]["modelUsage"]["m"]["inputTokens"], 12);
    assert_eq!(lines[6]["delta"]["usage"]["inputTokens"], 7);
}

#[test]
fn fold_handles_empty_input_invalid_utf8_and_trailing_garbage() {
    let (lines, summary) = fold(b"");
    assert!(lines.is_empty());
    assert_eq!(summary.lines, 0);
    let mut input = br#"{"sessionId":"s","operationId":"o","rows":{"m\xff":{}}}"#.to_vec();
    input.extend_from_slice(b"\n");
    input.extend_from_slice(br#"{"sessionId":"s","operationId":"o","rows":{}} 1"#);
    let (lines, summary) = fold(&input);
    assert_eq!((summary.lines, summary.emitted, summary.errors), (2, 0, 2));
    assert_eq!(lines[0]["error"]["line"], 1);
    assert_eq!(lines[1]["error"]["line"], 2);
}

#[test]
fn a_bad_line_names_every_field_that_breaks_its_rule() {
    let line = r#"{"operationId":"op","rows":{"m":{"inputTokens":-1,"outputTokens":"x"}}}"#;
    let (lines, summary) = fold(format!("{line}\n").as_bytes());
    assert_eq!(summary.errors, 1);
    assert_eq!(
        lines[0]["error"]["message"],
        "/sessionId: is required (a string); \
         /rows/m/inputTokens: must be a non-negative integer; \
         /rows/m/outputTokens: must be a non-negative integer, found a string; \
         /rows/m/cacheReadInputTokens: is required (a non-negative integer)"
    );
    // A line that is no JSON still gets the parser's words.
    let (lines, _) = fold(b"{not json\n");
    assert!(
        lines[0]["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("(root): key must be a string"),
        "{}",
        lines[0]
    );
}
