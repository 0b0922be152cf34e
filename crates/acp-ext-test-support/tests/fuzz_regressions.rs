//! Replays every input under `fuzz/regressions/<target>/` (crashes the
//! fuzzers found, minimized, plus a few seeds per target) through the same
//! property code the fuzz targets run, so CI checks the properties without
//! a nightly toolchain or cargo-fuzz.

use std::fs;
use std::path::PathBuf;

fn replay(target: &str, property: fn(&[u8])) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions")
        .join(target);
    let mut inputs: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    inputs.sort();
    assert!(!inputs.is_empty(), "no inputs in {}", dir.display());
    for path in inputs {
        let data = fs::read(&path).expect("readable input");
        let outcome = std::panic::catch_unwind(|| property(&data));
        assert!(outcome.is_ok(), "{target}: {} fails", path.display());
    }
}

#[test]
fn validate_regressions() {
    replay("validate", acp_ext_test_support::validate);
}

#[test]
fn dispatch_regressions() {
    replay("dispatch", acp_ext_test_support::dispatch);
}

#[test]
fn check_regressions() {
    replay("check", acp_ext_test_support::check);
}

#[test]
fn tap_framing_regressions() {
    replay("tap_framing", acp_ext_test_support::tap_framing);
}

#[test]
fn usage_fold_regressions() {
    replay("usage_fold", acp_ext_test_support::usage_fold);
}

#[test]
fn state_regressions() {
    replay("state", acp_ext_test_support::state);
}

#[test]
fn watch_regressions() {
    replay("watch", acp_ext_test_support::watch);
}

#[test]
fn bridge_regressions() {
    replay("bridge", acp_ext_test_support::bridge);
}
