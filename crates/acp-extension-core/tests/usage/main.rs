//! Usage accounting: `ModelUsage` and `SessionUsageUpdate` on the wire,
//! `sum_model_usage`, the `SessionUsageAccumulator` ledger (every reference
//! vector, the reference tests, the probed edge cases, and a randomized
//! comparison with a literal quadratic port of the reference), and
//! `fold_lines`.

use std::path::PathBuf;

use acp_extension_core::Namespace;
use acp_extension_core::usage::{
    MAX_USAGE_SCOPE_ID_LENGTH, ModelUsage, ScopeIdTooLong, SessionUsageAccumulator,
    SessionUsageUpdate, UsageCount, UsageDelta, fold_lines, sum_model_usage,
};
use acp_extension_core::validate::check;
use acp_extension_core::wire::NonNegF64;
use indexmap::IndexMap;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

mod edge_cases;
mod fold_lines;
mod long_sessions;
mod randomized;
mod reference_tests;
mod scope_ids;
mod vectors;
mod wire_types;

// helpers
/// The shared conformance vectors: `$ACP_EXT_VECTORS`, else `vectors/` or
/// `../shared/vectors` next to the workspace, else `/work/shared/vectors`.
fn vectors_dir() -> PathBuf {
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let candidates = [
        std::env::var_os("ACP_EXT_VECTORS").map(PathBuf::from),
        Some(workspace.join("vectors")),
        Some(workspace.join("../shared/vectors")),
        Some(PathBuf::from("/work/shared/vectors")),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|p| p.join("usage-accumulator.jsonl").is_file())
        .expect("conformance vectors not found; set ACP_EXT_VECTORS")
}

fn load(name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(vectors_dir().join(name)).unwrap();
    let cases: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!cases.is_empty(), "{name} is empty");
    cases
}

/// JSON equality with numbers equal within 1e-9 relative (the vectors'
/// rule); also requires the same key order, since the vectors were written
/// by `JSON.stringify` in JavaScript object order.
fn assert_close(actual: &Value, expected: &Value, at: &str) {
    match (actual, expected) {
        (Value::Number(a), Value::Number(e)) => {
            let (a, e) = (a.as_f64().unwrap(), e.as_f64().unwrap());
            let scale = a.abs().max(e.abs()).max(f64::MIN_POSITIVE);
            assert!((a - e).abs() <= 1e-9 * scale, "{at}: {a} != {e}");
        }
        (Value::Object(a), Value::Object(e)) => {
            let ak: Vec<&String> = a.keys().collect();
            let ek: Vec<&String> = e.keys().collect();
            assert_eq!(ak, ek, "{at}: keys differ");
            for (k, v) in e {
                assert_close(&a[k], v, &format!("{at}/{k}"));
            }
        }
        (Value::Array(a), Value::Array(e)) => {
            assert_eq!(a.len(), e.len(), "{at}: lengths differ");
            for (i, (x, y)) in a.iter().zip(e).enumerate() {
                assert_close(x, y, &format!("{at}/{i}"));
            }
        }
        _ => assert_eq!(actual, expected, "{at}"),
    }
}

fn parse<T: DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).unwrap()
}

fn rows(v: Value) -> IndexMap<String, ModelUsage> {
    parse(v)
}

/// The reference test's `row(input, cost?)`.
fn row(input: u64, cost: Option<f64>) -> ModelUsage {
    let u = ModelUsage::new(input, 10u64, 20u64);
    match cost {
        Some(c) => u.cost_usd(NonNegF64::new(c).unwrap()),
        None => u,
    }
}

fn one(model: &str, u: ModelUsage) -> IndexMap<String, ModelUsage> {
    IndexMap::from([(model.to_owned(), u)])
}

fn to_value(update: &SessionUsageUpdate) -> Value {
    serde_json::to_value(update).unwrap()
}

fn violations(
    t: fn(&Value) -> Vec<acp_extension_core::Violation>,
    v: Value,
) -> Vec<(String, &'static str)> {
    t(&v)
        .into_iter()
        .map(|x| (x.pointer.clone(), x.rule.id()))
        .collect()
}
