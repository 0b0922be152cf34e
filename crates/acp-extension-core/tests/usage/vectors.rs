//! vectors

use super::*;

#[test]
fn sum_model_usage_matches_every_vector() {
    for case in load("sum-model-usage.jsonl") {
        let name = case["name"].as_str().unwrap();
        let out = sum_model_usage(&rows(case["rows"].clone()));
        assert_close(&serde_json::to_value(&out).unwrap(), &case["output"], name);
    }
}

/// Runs one accumulator vector; `over_long` vectors (scope id longer than
/// the contract allows) run under a generated id and have the id patched.
fn run_accumulator_case(case: &Value) -> Vec<Value> {
    let scope = case["usageScopeId"].as_str().unwrap();
    let mut acc = match SessionUsageAccumulator::with_scope_id(scope) {
        Ok(acc) => acc,
        Err(err) => {
            assert!(scope.encode_utf16().count() > MAX_USAGE_SCOPE_ID_LENGTH);
            assert_eq!(err.length, scope.encode_utf16().count());
            SessionUsageAccumulator::new()
        }
    };
    let own_scope = acc.usage_scope_id().to_owned();
    case["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| {
            let out = acc.update(
                step["sessionId"].as_str().unwrap(),
                step["operationId"].as_str().unwrap(),
                &rows(step["rows"].clone()),
            );
            match out {
                None => Value::Null,
                Some(mut u) => {
                    assert_eq!(u.usage_scope_id(), Some(own_scope.as_str()));
                    u.set_usage_scope_id(Namespace::Lody, scope);
                    to_value(&u)
                }
            }
        })
        .collect()
}

#[test]
fn accumulator_matches_every_vector() {
    let cases = load("usage-accumulator.jsonl");
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let outputs = run_accumulator_case(case);
        let expected = case["outputs"].as_array().unwrap();
        assert_eq!(outputs.len(), expected.len(), "{name}");
        for (i, (a, e)) in outputs.iter().zip(expected).enumerate() {
            assert_close(a, e, &format!("{name}[{i}]"));
        }
    }
}

/// Stronger than the vectors ask: every number is the same `f64`, so the
/// summation order (JavaScript object order) is reproduced exactly.
#[test]
fn accumulator_and_sum_vectors_are_bit_exact() {
    for case in load("usage-accumulator.jsonl") {
        let outputs = Value::Array(run_accumulator_case(&case));
        assert_eq!(outputs, case["outputs"], "{}", case["name"]);
    }
    for case in load("sum-model-usage.jsonl") {
        let out = sum_model_usage(&rows(case["rows"].clone()));
        assert_eq!(
            serde_json::to_value(&out).unwrap(),
            case["output"],
            "{}",
            case["name"]
        );
    }
}

#[test]
fn over_long_scope_id_vector_is_rejected_at_construction() {
    let case = load("usage-accumulator.jsonl")
        .into_iter()
        .find(|c| c["name"] == "scope_id_300_chars_not_validated")
        .unwrap();
    let id = case["usageScopeId"].as_str().unwrap();
    let err: ScopeIdTooLong = SessionUsageAccumulator::with_scope_id(id).unwrap_err();
    assert_eq!(err.length, 300);
}
