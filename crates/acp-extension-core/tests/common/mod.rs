//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod mutate;

use std::path::{Path, PathBuf};

use acp_extension_core::validate::{Check, check};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

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

/// Parses `v` as `T`, checks it is valid, and that serializing gives `v` back.
pub fn round_trip<T: Serialize + DeserializeOwned + Check>(v: Value) -> T {
    let violations = check::<T>(&v);
    assert!(violations.is_empty(), "{v}: {violations:?}");
    let t: T = serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{v}: {e}"));
    assert_eq!(serde_json::to_value(&t).unwrap(), v);
    t
}

/// `v` does not parse as `T`, and the collector reports exactly `expected`
/// `(pointer, rule id)` pairs.
pub fn rejects<T: DeserializeOwned + Check>(v: Value, expected: &[(&str, &str)]) {
    assert!(
        serde_json::from_value::<T>(v.clone()).is_err(),
        "{v} should not parse"
    );
    let got: Vec<(String, &str)> = check::<T>(&v)
        .into_iter()
        .map(|x| (x.pointer, x.rule.id()))
        .collect();
    let want: Vec<(String, &str)> = expected.iter().map(|(p, r)| (p.to_string(), *r)).collect();
    assert_eq!(got, want, "{v}");
}
