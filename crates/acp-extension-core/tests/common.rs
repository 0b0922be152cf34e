//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// `shared/` beside the checkout (`/work/shared` here, `../shared` in CI).
pub fn shared(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared").join(rel)
}

/// Every JSON line of a vector file.
pub fn jsonl(rel: &str) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(shared(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
