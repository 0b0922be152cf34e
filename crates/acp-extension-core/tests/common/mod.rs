//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// A path inside `shared/` beside the checkout (the vectors and corpus),
/// found by walking up from the crate directory: `/work/shared` for a
/// developer, `../shared` beside the clone in CI. Panics when missing: a
/// test that cannot find its data must fail, not pass silently.
pub fn shared(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|a| a.join("shared"))
        .find(|p| p.join("vectors").is_dir())
        .unwrap_or_else(|| {
            panic!(
                "no shared/ folder with vectors/ above {}",
                env!("CARGO_MANIFEST_DIR")
            )
        })
        .join(rel)
}

/// The text of a file under `shared/`.
pub fn read(rel: &str) -> String {
    let p = shared(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Every JSON line of a file under `shared/`.
pub fn jsonl(rel: &str) -> Vec<serde_json::Value> {
    read(rel)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
