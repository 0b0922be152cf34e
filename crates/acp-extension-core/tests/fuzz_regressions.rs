//! Replays `fuzz/regressions/validate/` (byte 0 picks the kind, the rest is
//! the text) through the core of the `validate` fuzz target's properties:
//! the verdict-only `is_valid_slice` agrees with the full report, and the
//! report of the text is the report of its JSON tree. The full property set
//! runs in `crates/acp-ext/tests/fuzz_regressions.rs`.

use std::fs;
use std::path::PathBuf;

use acp_extension_core::mcp_apps::McpCallToolResult;
use acp_extension_core::validate::{Kind, is_valid_slice, validate_slice, validate_value};
use serde_json::Value;

#[test]
fn validate_regressions_keep_both_verdicts_equal() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/validate");
    let mut inputs: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    inputs.sort();
    assert!(!inputs.is_empty(), "no inputs in {}", dir.display());
    for path in inputs {
        let data = fs::read(&path).expect("readable input");
        let Some((&selector, text)) = data.split_first() else {
            continue;
        };
        let kind = Kind::ALL[usize::from(selector) % Kind::ALL.len()];
        let report = validate_slice(kind, text);
        assert_eq!(
            is_valid_slice(kind, text),
            report.is_valid(),
            "{}: {kind}: {report}",
            path.display()
        );
        if let Ok(value) = serde_json::from_slice::<Value>(text) {
            assert_eq!(validate_value(kind, &value), report, "{}", path.display());
        }
    }
}

#[test]
fn a_key_given_twice_counts_with_its_last_value_in_both_verdicts() {
    // Found by the `validate` fuzz target: the typed fast path rejected the
    // first `content`, the tree kept the last one.
    let text = br#"{"content":{},"content":[]}"#;
    assert!(validate_slice(Kind::of::<McpCallToolResult>(), text).is_valid());
    assert!(is_valid_slice(Kind::of::<McpCallToolResult>(), text));
    let text = br#"{"content":[],"content":{}}"#;
    assert!(!validate_slice(Kind::of::<McpCallToolResult>(), text).is_valid());
    assert!(!is_valid_slice(Kind::of::<McpCallToolResult>(), text));
}
