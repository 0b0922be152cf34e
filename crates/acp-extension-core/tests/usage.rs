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

// ---------------------------------------------------------------- helpers

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

// ---------------------------------------------------------------- vectors

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

// ---------------------------------------------------------------- reference tests (§17.1)

#[test]
fn empty_and_unknown_rows_do_not_claim_free_usage() {
    assert_eq!(
        serde_json::to_value(sum_model_usage(&IndexMap::new())).unwrap(),
        json!({"inputTokens": 0, "outputTokens": 0, "cacheReadInputTokens": 0})
    );
    let mixed = IndexMap::from([
        ("a".to_owned(), row(10, Some(0.0))),
        ("b".to_owned(), row(20, None)),
    ]);
    assert_eq!(sum_model_usage(&mixed).cost_usd, None);
    let zero = sum_model_usage(&one("a", row(0, Some(0.0))));
    assert_eq!(zero.cost_usd.map(NonNegF64::get), Some(0.0));
    assert_eq!(zero.context_window, None);
}

#[test]
fn cumulative_snapshots_and_delta_account_each_operation_once_across_models() {
    let mut acc = SessionUsageAccumulator::new();
    let mut first = acc
        .update("s", "1", &one("a", row(100, Some(0.1))))
        .unwrap();
    // Mutating the returned copy does not reach the ledger.
    first.model_usage.as_mut().unwrap()["a"].input_tokens = UsageCount::new(999);
    assert!(
        acc.update("s", "1", &one("a", row(100, Some(0.1))))
            .is_none()
    );
    let second = acc
        .update(
            "s",
            "2",
            &IndexMap::from([
                ("a".to_owned(), row(200, Some(0.2))),
                ("b".to_owned(), row(50, Some(0.3))),
            ]),
        )
        .unwrap();
    let totals = second.model_usage.as_ref().unwrap();
    assert_eq!(totals["a"].input_tokens.get(), 300);
    assert_eq!(totals["b"].input_tokens.get(), 50);
    assert_eq!(second.delta.as_ref().unwrap().usage.input_tokens.get(), 250);
    assert!((totals["a"].cost_usd.unwrap().get() - 0.3).abs() < 1e-12);
}

#[test]
fn incomplete_first_can_be_corrected_and_unknown_cost_is_never_zero() {
    let mut acc = SessionUsageAccumulator::new();
    assert!(acc.update("s", "1", &one("a", row(100, None))).is_some());
    let corrected = acc
        .update("s", "1", &one("a", row(150, Some(0.2))))
        .unwrap();
    let a = &corrected.model_usage.as_ref().unwrap()["a"];
    assert_eq!(a.input_tokens.get(), 150);
    assert_eq!(a.cost_usd.map(NonNegF64::get), Some(0.2));
    let delta = &corrected.delta.as_ref().unwrap().usage;
    assert_eq!(delta.input_tokens.get(), 50);
    assert_eq!(delta.cost_usd, None);
    assert!(acc.update("s", "1", &one("a", row(50, None))).is_none());
    let next = acc.update("s", "2", &one("a", row(20, None))).unwrap();
    assert_eq!(next.model_usage.as_ref().unwrap()["a"].cost_usd, None);
}

#[test]
fn each_accumulator_lifetime_is_its_own_never_reused_scope() {
    let mut before = SessionUsageAccumulator::new();
    let b = before.update("s", "1", &one("a", row(5000, None))).unwrap();
    let mut after = SessionUsageAccumulator::new();
    let a = after.update("s", "1", &one("a", row(40, None))).unwrap();
    assert_eq!(a.model_usage.as_ref().unwrap()["a"].input_tokens.get(), 40);
    assert_eq!(b.usage_scope_id(), Some(before.usage_scope_id()));
    assert_eq!(a.usage_scope_id(), Some(after.usage_scope_id()));
    assert_ne!(before.usage_scope_id(), after.usage_scope_id());
    for id in [before.usage_scope_id(), after.usage_scope_id()] {
        let parsed = uuid::Uuid::parse_str(id).unwrap();
        assert_eq!(parsed.get_version_num(), 4);
    }
    let mut fixed = SessionUsageAccumulator::with_scope_id("fixed").unwrap();
    let f = fixed.update("s", "1", &one("a", row(1, None))).unwrap();
    assert_eq!(
        to_value(&f)["_meta"],
        json!({"lody": {"usageScopeId": "fixed"}})
    );
}

// ---------------------------------------------------------------- probed edge cases (§18)

#[test]
fn empty_rows_on_a_new_operation_emit_nothing_and_store_nothing() {
    let mut acc = SessionUsageAccumulator::with_scope_id("s").unwrap();
    assert!(acc.update("s", "op", &IndexMap::new()).is_none());
    // The operation was not stored: a zero row is still its first report.
    assert!(
        acc.update("s", "op", &one("m", ModelUsage::new(0u64, 0u64, 0u64)))
            .is_some()
    );
}

#[test]
fn zero_row_on_a_new_operation_emits_zeros_then_nothing() {
    let mut acc = SessionUsageAccumulator::with_scope_id("s").unwrap();
    let zero = one("m", ModelUsage::new(0u64, 0u64, 0u64));
    let first = to_value(&acc.update("s", "op", &zero).unwrap());
    let zeros = json!({"inputTokens": 0, "outputTokens": 0, "cacheReadInputTokens": 0,
        "cacheCreationInputTokens": 0, "reasoningOutputTokens": 0, "webSearchRequests": 0});
    assert_eq!(first["usage"], zeros);
    assert_eq!(first["modelUsage"]["m"], zeros);
    assert_eq!(first["delta"]["usage"], zeros);
    assert!(acc.update("s", "op", &zero).is_none());
}

#[test]
fn context_window_and_unknown_keys_are_dropped_and_counters_appear() {
    let mut acc = SessionUsageAccumulator::with_scope_id("s").unwrap();
    let input = rows(
        json!({"m": {"inputTokens": 1, "outputTokens": 2, "cacheReadInputTokens": 3,
        "reasoningOutputTokens": 4, "contextWindow": 200000, "vendorField": "x"}}),
    );
    let out = to_value(&acc.update("s", "op", &input).unwrap());
    let expected = json!({"inputTokens": 1, "outputTokens": 2, "cacheReadInputTokens": 3,
        "cacheCreationInputTokens": 0, "reasoningOutputTokens": 4, "webSearchRequests": 0});
    assert_eq!(out["usage"], expected);
    assert_eq!(out["modelUsage"]["m"], expected);
    // A change of contextWindow alone is no change.
    let input = rows(
        json!({"m": {"inputTokens": 1, "outputTokens": 2, "cacheReadInputTokens": 3,
        "contextWindow": 1}}),
    );
    assert!(acc.update("s", "op", &input).is_none());
}

#[test]
fn a_lower_cost_is_ignored() {
    let mut acc = SessionUsageAccumulator::with_scope_id("s").unwrap();
    acc.update("s", "op", &one("m", row(1, Some(0.5)))).unwrap();
    assert!(
        acc.update("s", "op", &one("m", row(1, Some(0.4))))
            .is_none()
    );
    assert!(acc.update("s", "op", &one("m", row(1, None))).is_none());
}

#[test]
fn known_unknown_known_cost_transitions_omit_delta_cost_and_still_emit() {
    let mut acc = SessionUsageAccumulator::with_scope_id("s").unwrap();
    let zero = |c: Option<f64>| {
        let u = ModelUsage::new(0u64, 0u64, 0u64);
        one(
            "m",
            match c {
                Some(c) => u.cost_usd(NonNegF64::new(c).unwrap()),
                None => u,
            },
        )
    };
    let known = acc.update("s", "1", &zero(Some(0.25))).unwrap();
    assert_eq!(
        known.delta.unwrap().usage.cost_usd.map(NonNegF64::get),
        Some(0.25)
    );
    // A new operation without cost: the model's total becomes unknown.
    let unknown = acc.update("s", "2", &zero(None)).unwrap();
    assert_eq!(unknown.model_usage.unwrap()["m"].cost_usd, None);
    assert_eq!(unknown.delta.unwrap().model_usage["m"].cost_usd, None);
    // Its cost arrives: all counters are still zero, but the cost changed.
    let again = acc.update("s", "2", &zero(Some(0.5))).unwrap();
    assert_eq!(
        again.model_usage.unwrap()["m"].cost_usd.map(NonNegF64::get),
        Some(0.75)
    );
    let delta = again.delta.unwrap();
    assert_eq!(delta.model_usage["m"].cost_usd, None);
    assert_eq!(delta.model_usage["m"].input_tokens.get(), 0);
}

#[test]
fn an_untouched_model_gets_a_zero_delta_row_with_zero_cost() {
    let mut acc = SessionUsageAccumulator::with_scope_id("s").unwrap();
    acc.update("s", "1", &one("a", row(1, Some(0.1)))).unwrap();
    let out = to_value(&acc.update("s", "2", &one("b", row(2, Some(0.2)))).unwrap());
    assert_eq!(
        out["delta"]["modelUsage"]["a"],
        json!({"inputTokens": 0, "outputTokens": 0, "cacheReadInputTokens": 0,
            "cacheCreationInputTokens": 0, "reasoningOutputTokens": 0, "webSearchRequests": 0,
            "costUSD": 0})
    );
    assert_eq!(out["delta"]["usage"]["costUSD"], json!(0.2));
}

#[test]
fn usage_covers_every_model_of_the_operation() {
    let mut acc = SessionUsageAccumulator::with_scope_id("s").unwrap();
    acc.update("s", "op", &one("a", row(1, Some(0.5)))).unwrap();
    let out = acc.update("s", "op", &one("b", row(2, None))).unwrap();
    assert_eq!(out.usage.input_tokens.get(), 3);
    assert_eq!(out.usage.cost_usd, None); // b's cost is unknown
    assert_eq!(out.delta.unwrap().usage.input_tokens.get(), 2);
}

#[test]
fn a_negative_cost_is_rejected_at_the_boundary() {
    // The reference clamps a negative first cost to a known zero (a
    // JavaScript accident); here the row cannot be built or read at all.
    assert!(NonNegF64::new(-3.0).is_err());
    let row =
        json!({"inputTokens": 1, "outputTokens": 1, "cacheReadInputTokens": 0, "costUSD": -3.0});
    assert!(serde_json::from_value::<ModelUsage>(row.clone()).is_err());
    let violations = check::<ModelUsage>(&row);
    assert_eq!(violations.len(), 1);
    assert_eq!(violations[0].pointer, "/costUSD");
    assert_eq!(violations[0].rule.id(), "finite-non-negative");
}

#[test]
fn operations_are_keyed_across_session_ids() {
    let mut acc = SessionUsageAccumulator::with_scope_id("s").unwrap();
    acc.update("s1", "op", &one("m", row(5, None))).unwrap();
    assert!(acc.update("s2", "op", &one("m", row(5, None))).is_none());
    let out = acc.update("s2", "op", &one("m", row(6, None))).unwrap();
    assert_eq!(out.session_id, "s2");
    assert_eq!(out.model_usage.unwrap()["m"].input_tokens.get(), 6);
}

#[test]
fn models_and_sums_follow_javascript_object_order() {
    // Array-index names ("2", "10") sort first, ascending; "01" and
    // "4294967295" are not array indices and keep insertion order.
    let input = IndexMap::from(
        ["b", "10", "01", "2", "4294967295", "a"].map(|k| (k.to_owned(), row(1, Some(0.1)))),
    );
    let sum = serde_json::to_string(&sum_model_usage(&input)).unwrap();
    assert!(sum.ends_with(r#""costUSD":0.6}"#), "{sum}");
    let mut acc = SessionUsageAccumulator::with_scope_id("s").unwrap();
    let out = acc.update("s", "op", &input).unwrap();
    let keys: Vec<&str> = out
        .model_usage
        .as_ref()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["2", "10", "b", "01", "4294967295", "a"]);
    let keys: Vec<&str> = out
        .delta
        .as_ref()
        .unwrap()
        .model_usage
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["2", "10", "b", "01", "4294967295", "a"]);
}

// ---------------------------------------------------------------- scope ids and namespaces

#[test]
fn scope_ids_are_limited_to_256_utf16_code_units() {
    assert!(SessionUsageAccumulator::with_scope_id("").is_ok());
    assert!(SessionUsageAccumulator::with_scope_id("x".repeat(256)).is_ok());
    let err = SessionUsageAccumulator::with_scope_id("x".repeat(257)).unwrap_err();
    assert_eq!(err.length, 257);
    assert!(err.to_string().contains("at most 256"), "{err}");
    // "🚀" is two UTF-16 code units, as JavaScript's `length` counts it.
    assert!(SessionUsageAccumulator::with_scope_id("🚀".repeat(128)).is_ok());
    let err = SessionUsageAccumulator::with_scope_id("🚀".repeat(129)).unwrap_err();
    assert_eq!(err.length, 258);
}

#[test]
fn the_scope_id_is_written_in_the_chosen_namespace() {
    let mut acc = SessionUsageAccumulator::with_scope_id("id-1")
        .unwrap()
        .with_namespace(Namespace::Ua);
    let out = acc.update("s", "op", &one("m", row(1, None))).unwrap();
    assert_eq!(
        to_value(&out)["_meta"],
        json!({"ua": {"usageScopeId": "id-1"}})
    );
    assert_eq!(out.usage_scope_id(), Some("id-1"));
}

#[test]
fn usage_scope_id_reads_ua_before_lody() {
    let base = json!({"sessionId": "s", "usage": {"inputTokens": 0, "outputTokens": 0, "cacheReadInputTokens": 0}});
    let with_meta = |meta: Value| {
        let mut v = base.clone();
        v["_meta"] = meta;
        parse::<SessionUsageUpdate>(v)
    };
    assert_eq!(
        with_meta(json!({"lody": {"usageScopeId": "l"}})).usage_scope_id(),
        Some("l")
    );
    assert_eq!(
        with_meta(json!({"lody": {"usageScopeId": "l"}, "ua": {"usageScopeId": "u"}}))
            .usage_scope_id(),
        Some("u")
    );
    // The id is a string of at most 256 UTF-16 units; anything else breaks the type.
    let mut v = base.clone();
    v["_meta"] = json!({"lody": {"usageScopeId": 5}});
    assert!(serde_json::from_value::<SessionUsageUpdate>(v.clone()).is_err());
    v["_meta"] = json!({"ua": {"usageScopeId": "x".repeat(257)}});
    let violations = acp_extension_core::violation::check::<SessionUsageUpdate>(&v);
    assert_eq!(violations[0].pointer, "/_meta/ua/usageScopeId");
    assert_eq!(violations[0].rule.id(), "max-length");
    assert_eq!(with_meta(json!({"other": 1})).usage_scope_id(), None);
    assert_eq!(
        parse::<SessionUsageUpdate>(base.clone()).usage_scope_id(),
        None
    );

    let mut update = with_meta(json!({"other": 1, "lody": {"turnId": "t"}}));
    update.set_usage_scope_id(Namespace::Lody, "new");
    assert_eq!(
        to_value(&update)["_meta"],
        json!({"other": 1, "lody": {"turnId": "t", "usageScopeId": "new"}})
    );
}

#[test]
fn accumulator_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync + Clone>() {}
    assert_send_sync::<SessionUsageAccumulator>();
    assert_send_sync::<SessionUsageUpdate>();
}

// ---------------------------------------------------------------- wire types

#[test]
fn model_usage_round_trips_and_keeps_unknown_keys() {
    let full = json!({"inputTokens": 1, "outputTokens": 2, "cacheReadInputTokens": 3,
        "cacheCreationInputTokens": 4, "reasoningOutputTokens": 5, "webSearchRequests": 6,
        "costUSD": 0.125, "contextWindow": 200000, "x-vendor": {"a": [1]}});
    let minimal = json!({"inputTokens": 0, "outputTokens": 0, "cacheReadInputTokens": 0});
    for v in [full, minimal] {
        assert!(check::<ModelUsage>(&v).is_empty());
        let parsed: ModelUsage = parse(v.clone());
        assert_eq!(serde_json::to_value(&parsed).unwrap(), v);
    }
}

#[test]
fn integral_floats_are_counts_and_are_written_as_integers() {
    let v = json!({"inputTokens": 100.0, "outputTokens": 0, "cacheReadInputTokens": 1e3, "contextWindow": 8.0});
    assert!(check::<ModelUsage>(&v).is_empty());
    let parsed: ModelUsage = parse(v);
    assert_eq!(parsed.input_tokens.get(), 100);
    assert_eq!(
        serde_json::to_string(&parsed).unwrap(),
        r#"{"inputTokens":100,"outputTokens":0,"cacheReadInputTokens":1000,"contextWindow":8}"#
    );
}

#[test]
fn model_usage_rejections_name_pointer_and_rule() {
    let base = json!({"inputTokens": 1, "outputTokens": 2, "cacheReadInputTokens": 3});
    let cases = [
        ("inputTokens", json!(-1), "non-negative-integer"),
        ("inputTokens", json!(1.5), "non-negative-integer"),
        ("inputTokens", json!(1e20), "non-negative-integer"),
        ("inputTokens", json!(null), "type"),
        ("outputTokens", json!("2"), "type"),
        ("cacheCreationInputTokens", json!(null), "not-null"),
        ("reasoningOutputTokens", json!(-0.5), "non-negative-integer"),
        ("webSearchRequests", json!(true), "type"),
        ("costUSD", json!(null), "not-null"),
        ("costUSD", json!("0.1"), "type"),
        ("contextWindow", json!(-5), "non-negative-integer"),
    ];
    for (key, value, rule) in cases {
        let mut v = base.clone();
        v[key] = value.clone();
        assert_eq!(
            violations(check::<ModelUsage>, v.clone()),
            [(format!("/{key}"), rule)],
            "{key}: {value}"
        );
        assert!(
            serde_json::from_value::<ModelUsage>(v).is_err(),
            "{key}: {value}"
        );
    }
    for key in ["inputTokens", "outputTokens", "cacheReadInputTokens"] {
        let mut v = base.clone();
        v.as_object_mut().unwrap().remove(key);
        assert_eq!(
            violations(check::<ModelUsage>, v.clone()),
            [(format!("/{key}"), "required")]
        );
        assert!(serde_json::from_value::<ModelUsage>(v).is_err());
    }
    // Every violation is collected, not only the first.
    let bad = json!({"inputTokens": -1, "outputTokens": null, "costUSD": null});
    assert_eq!(
        violations(check::<ModelUsage>, bad),
        [
            ("/inputTokens".to_owned(), "non-negative-integer"),
            ("/outputTokens".to_owned(), "type"),
            ("/cacheReadInputTokens".to_owned(), "required"),
            ("/costUSD".to_owned(), "not-null"),
        ]
    );
    let err = serde_json::from_value::<ModelUsage>(json!({"inputTokens": -1})).unwrap_err();
    assert!(
        err.to_string().contains("must be a non-negative integer"),
        "{err}"
    );
}

#[test]
fn session_usage_update_round_trips_absent_and_null() {
    let zero = json!({"inputTokens": 0, "outputTokens": 0, "cacheReadInputTokens": 0});
    let full = json!({"sessionId": "s", "usage": zero, "modelUsage": {"b": zero, "a": zero},
        "delta": {"usage": zero, "modelUsage": {"a": zero}, "extra": 1},
        "_meta": {"lody": {"usageScopeId": "x"}}, "more": true});
    let minimal = json!({"sessionId": "s", "usage": zero});
    for v in [full, minimal] {
        assert!(check::<SessionUsageUpdate>(&v).is_empty());
        let parsed: SessionUsageUpdate = parse(v.clone());
        // Value equality ignores key order; compare the text for it too.
        assert_eq!(serde_json::to_string(&parsed).unwrap(), v.to_string());
    }
    let mut v = minimal_update();
    v["modelUsage"] = Value::Null;
    v["delta"] = json!({"usage": zero});
    v["_meta"] = Value::Null;
    assert_eq!(
        violations(check::<SessionUsageUpdate>, v.clone()),
        [
            ("/modelUsage".to_owned(), "not-null"),
            ("/delta/modelUsage".to_owned(), "required"),
            ("/_meta".to_owned(), "not-null"),
        ]
    );
    assert!(serde_json::from_value::<SessionUsageUpdate>(v).is_err());
    let v = json!({"sessionId": 1, "usage": {"inputTokens": 0, "outputTokens": 0}, "modelUsage": {"m": {}}});
    assert_eq!(
        violations(check::<SessionUsageUpdate>, v),
        [
            ("/sessionId".to_owned(), "type"),
            ("/usage/cacheReadInputTokens".to_owned(), "required"),
            ("/modelUsage/m/inputTokens".to_owned(), "required"),
            ("/modelUsage/m/outputTokens".to_owned(), "required"),
            ("/modelUsage/m/cacheReadInputTokens".to_owned(), "required"),
        ]
    );
    let d: UsageDelta = parse(json!({"usage": zero, "modelUsage": {}}));
    assert!(d.model_usage.is_empty());
}

fn minimal_update() -> Value {
    json!({"sessionId": "s", "usage": {"inputTokens": 0, "outputTokens": 0, "cacheReadInputTokens": 0}})
}

// ---------------------------------------------------------------- fold_lines

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

// ---------------------------------------------------------------- long sessions

/// 16,000 updates over 8,000 operations (two snapshots each, two models):
/// the final totals equal the closed-form counter sums and the left-to-right
/// cost sum over operations in order.
#[test]
fn sixteen_thousand_updates_over_eight_thousand_operations() {
    let mut acc = SessionUsageAccumulator::with_scope_id("long").unwrap();
    let cost = |i: u64| (i % 13) as f64 * 0.0017 + 0.0001;
    let mut last = None;
    for i in 0..8_000u64 {
        let op = format!("turn-{i}");
        let partial = one("a", ModelUsage::new(i % 100 + 1, 10u64, 0u64));
        assert!(acc.update("s", &op, &partial).is_some());
        let complete = IndexMap::from([
            (
                "a".to_owned(),
                ModelUsage::new(i % 100 + 2, 20u64, 5u64)
                    .cost_usd(NonNegF64::new(cost(i)).unwrap()),
            ),
            (
                "b".to_owned(),
                ModelUsage::new(3u64, 4u64, 0u64).cost_usd(NonNegF64::new(cost(i + 1)).unwrap()),
            ),
        ]);
        last = acc.update("s", &op, &complete);
        let update = last.as_ref().unwrap();
        assert_eq!(
            update.delta.as_ref().unwrap().model_usage["a"]
                .input_tokens
                .get(),
            1
        );
    }
    let totals = last.unwrap().model_usage.unwrap();
    let expected_a: u64 = (0..8_000u64).map(|i| i % 100 + 2).sum();
    assert_eq!(totals["a"].input_tokens.get(), expected_a);
    assert_eq!(totals["a"].output_tokens.get(), 160_000);
    assert_eq!(totals["a"].cache_read_input_tokens.get(), 40_000);
    assert_eq!(totals["b"].input_tokens.get(), 24_000);
    let fold = |f: &dyn Fn(u64) -> f64| (0..8_000u64).fold(0.0, |s, i| s + f(i));
    assert_eq!(
        totals["a"].cost_usd.unwrap().get().to_bits(),
        fold(&cost).to_bits()
    );
    assert_eq!(
        totals["b"].cost_usd.unwrap().get().to_bits(),
        fold(&|i| cost(i + 1)).to_bits()
    );
}

// ---------------------------------------------------------------- randomized vs. reference

/// A literal, quadratic port of the TypeScript reference: JavaScript
/// objects as insertion-ordered vectors iterated in JavaScript order, f64
/// counters, and every total re-summed from all operations on each update.
mod reference {
    use serde_json::{Map, Value, json};

    pub type Obj<V> = Vec<(String, V)>;

    fn array_index(k: &str) -> Option<u64> {
        let canonical = k == "0" || (!k.starts_with('0') && !k.is_empty() && k.len() <= 10);
        if !canonical || !k.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        k.parse::<u64>().ok().filter(|&n| n <= 4_294_967_294)
    }

    /// `Object.entries` order.
    pub fn entries<V>(o: &Obj<V>) -> Vec<&(String, V)> {
        let mut ints: Vec<(u64, &(String, V))> = o
            .iter()
            .filter_map(|e| array_index(&e.0).map(|n| (n, e)))
            .collect();
        ints.sort_by_key(|(n, _)| *n);
        let mut out: Vec<&(String, V)> = ints.into_iter().map(|(_, e)| e).collect();
        out.extend(o.iter().filter(|e| array_index(&e.0).is_none()));
        out
    }

    fn get<'a, V>(o: &'a Obj<V>, k: &str) -> Option<&'a V> {
        o.iter().find(|e| e.0 == k).map(|e| &e.1)
    }

    fn set<V>(o: &mut Obj<V>, k: &str, v: V) {
        match o.iter_mut().find(|e| e.0 == k) {
            Some(e) => e.1 = v,
            None => o.push((k.to_owned(), v)),
        }
    }

    #[derive(Clone, Debug, Default)]
    pub struct U {
        pub c: [Option<f64>; 6],
        pub cost: Option<f64>,
    }

    fn empty() -> U {
        U {
            c: [Some(0.0), Some(0.0), Some(0.0), None, None, None],
            cost: None,
        }
    }

    pub fn sum(rows: &Obj<U>) -> U {
        let mut r = empty();
        let values = entries(rows);
        for (_, row) in &values {
            for k in 0..6 {
                r.c[k] = Some(r.c[k].unwrap_or(0.0) + row.c[k].unwrap_or(0.0));
            }
        }
        if !values.is_empty() && values.iter().all(|(_, row)| row.cost.is_some()) {
            r.cost = Some(values.iter().fold(0.0, |s, (_, row)| s + row.cost.unwrap()));
        }
        r
    }

    fn num(n: f64) -> Value {
        if n.fract() == 0.0 && n.abs() < 9e15 {
            json!(n as i64)
        } else {
            json!(n)
        }
    }

    const KEYS: [&str; 6] = [
        "inputTokens",
        "outputTokens",
        "cacheReadInputTokens",
        "cacheCreationInputTokens",
        "reasoningOutputTokens",
        "webSearchRequests",
    ];

    pub fn u_json(u: &U) -> Value {
        let mut m = Map::new();
        for (k, v) in KEYS.iter().zip(u.c) {
            if let Some(v) = v {
                m.insert((*k).to_owned(), num(v));
            }
        }
        if let Some(c) = u.cost {
            m.insert("costUSD".to_owned(), num(c));
        }
        Value::Object(m)
    }

    pub fn obj_json(o: &Obj<U>) -> Value {
        Value::Object(
            entries(o)
                .into_iter()
                .map(|(k, u)| (k.clone(), u_json(u)))
                .collect(),
        )
    }

    #[derive(Default)]
    pub struct Acc {
        pub scope: String,
        operations: Vec<(String, Obj<U>)>,
        totals: Obj<U>,
    }

    impl Acc {
        pub fn update(&mut self, session_id: &str, op: &str, rows: &Obj<U>) -> Value {
            let previous = self
                .operations
                .iter()
                .find(|e| e.0 == op)
                .map(|e| e.1.clone())
                .unwrap_or_default();
            let mut merged = previous.clone();
            for (model, row) in entries(rows) {
                let mut next = get(&merged, model).cloned().unwrap_or_else(empty);
                for k in 0..6 {
                    next.c[k] = Some(next.c[k].unwrap_or(0.0).max(row.c[k].unwrap_or(0.0)));
                }
                if let Some(c) = row.cost {
                    let a = next.cost.unwrap_or(0.0);
                    next.cost = Some(if c > a { c } else { a });
                }
                set(&mut merged, model, next);
            }
            // `JSON.stringify(previous) === JSON.stringify(merged)`: key order counts.
            let stringify = |o: &Obj<U>| serde_json::to_string(&obj_json(o)).unwrap();
            if stringify(&previous) == stringify(&merged) {
                return Value::Null;
            }
            set(&mut self.operations, op, merged.clone());
            let mut grouped: Obj<Obj<U>> = Vec::new();
            for (id, models) in &self.operations {
                for (model, row) in entries(models) {
                    if get(&grouped, model).is_none() {
                        grouped.push((model.clone(), Vec::new()));
                    }
                    let g = grouped.iter_mut().find(|e| &e.0 == model).unwrap();
                    set(&mut g.1, id, row.clone());
                }
            }
            let mut next: Obj<U> = Vec::new();
            let mut delta: Obj<U> = Vec::new();
            for (model, contributions) in entries(&grouped) {
                let total = sum(contributions);
                let old = get(&self.totals, model);
                let mut d = empty();
                for k in 0..6 {
                    d.c[k] =
                        Some(total.c[k].unwrap_or(0.0) - old.and_then(|o| o.c[k]).unwrap_or(0.0));
                }
                if let Some(t) = total.cost
                    && old.is_none_or(|o| o.cost.is_some())
                {
                    d.cost = Some(t - old.and_then(|o| o.cost).unwrap_or(0.0));
                }
                next.push((model.clone(), total));
                delta.push((model.clone(), d));
            }
            self.totals = next.clone();
            json!({
                "sessionId": session_id,
                "usage": u_json(&sum(&merged)),
                "modelUsage": obj_json(&next),
                "delta": {"usage": u_json(&sum(&delta)), "modelUsage": obj_json(&delta)},
                "_meta": {"lody": {"usageScopeId": self.scope}},
            })
        }
    }
}

/// xorshift64*: deterministic, dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

const OP_IDS: [&str; 12] = [
    "turn-a",
    "7",
    "turn-b",
    "0",
    "01",
    "12",
    "x",
    "4294967295",
    "3",
    "turn-c",
    "4294967294",
    "y",
];
const MODELS: [&str; 8] = ["m", "10", "claude", "2", "01", "0", "gpt", "x/y~z"];

#[test]
fn randomized_sequences_match_the_quadratic_reference_exactly() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for seq in 0..150 {
        let scope = format!("scope-{seq}");
        let mut ours = SessionUsageAccumulator::with_scope_id(scope.clone()).unwrap();
        let mut theirs = reference::Acc::default();
        theirs.scope = scope;
        let cost_mode = rng.below(3); // 0: always, 1: sometimes, 2: never
        let n_ops = 1 + rng.below(OP_IDS.len() as u64) as usize;
        let mut current = 0usize;
        for step in 0..(5 + rng.below(45)) {
            // Mostly the latest operation, sometimes a new one or an older one.
            let r = rng.below(100);
            if r < 25 {
                current = (current + 1) % n_ops;
            } else if r < 40 {
                current = rng.below(n_ops as u64) as usize;
            }
            let op = OP_IDS[current];
            let session = if rng.chance(80) { "s1" } else { "s2" };
            let mut input: IndexMap<String, ModelUsage> = IndexMap::new();
            for _ in 0..rng.below(4) {
                let model = MODELS[rng.below(MODELS.len() as u64) as usize];
                let mut u = ModelUsage::new(rng.below(500), rng.below(50), rng.below(300));
                if rng.chance(30) {
                    u = u.cache_creation_input_tokens(rng.below(40));
                }
                if rng.chance(30) {
                    u = u.reasoning_output_tokens(rng.below(40));
                }
                if rng.chance(10) {
                    u = u.web_search_requests(rng.below(3));
                }
                if rng.chance(20) {
                    u = u.context_window(200_000u64);
                }
                let with_cost = match cost_mode {
                    0 => true,
                    1 => rng.chance(60),
                    _ => false,
                };
                if with_cost {
                    // Fractions that round differently in different orders.
                    let c = match rng.below(4) {
                        0 => rng.below(10) as f64 * 0.1,
                        1 => rng.below(1_000_000) as f64 / 997.0,
                        2 => rng.below(5) as f64 * 0.3,
                        _ => 1e-3 * rng.below(7) as f64 + 1e7 * rng.below(2) as f64,
                    };
                    u = u.cost_usd(NonNegF64::new(c).unwrap());
                }
                input.insert(model.to_owned(), u);
            }
            let reference_rows: reference::Obj<reference::U> = input
                .iter()
                .map(|(k, u)| {
                    let v = serde_json::to_value(u).unwrap();
                    let c = |key: &str| v.get(key).map(|n| n.as_f64().unwrap());
                    let row = reference::U {
                        c: [
                            c("inputTokens"),
                            c("outputTokens"),
                            c("cacheReadInputTokens"),
                            c("cacheCreationInputTokens"),
                            c("reasoningOutputTokens"),
                            c("webSearchRequests"),
                        ],
                        cost: c("costUSD"),
                    };
                    (k.clone(), row)
                })
                .collect();
            let expected = theirs.update(session, op, &reference_rows);
            let actual = ours
                .update(session, op, &input)
                .map_or(Value::Null, |u| to_value(&u));
            // Text equality: same keys in the same order and the same f64 bits.
            assert_eq!(
                actual.to_string(),
                expected.to_string(),
                "sequence {seq}, step {step}, op {op}"
            );
        }
    }
}

#[test]
fn sum_model_usage_matches_the_reference_on_random_rows() {
    let mut rng = Rng(42);
    for _ in 0..500 {
        let mut input = IndexMap::new();
        for _ in 0..rng.below(6) {
            let model = MODELS[rng.below(MODELS.len() as u64) as usize];
            let mut u = ModelUsage::new(rng.below(9), rng.below(9), rng.below(9));
            if rng.chance(85) {
                let c = rng.below(1_000_000) as f64 / 997.0;
                u = u.cost_usd(NonNegF64::new(c).unwrap());
            }
            if rng.chance(30) {
                u = u.web_search_requests(1u64);
            }
            input.insert(model.to_owned(), u);
        }
        let reference_rows: reference::Obj<reference::U> = input
            .iter()
            .map(|(k, u)| {
                let mut c = [None; 6];
                c[0] = Some(u.input_tokens.get() as f64);
                c[1] = Some(u.output_tokens.get() as f64);
                c[2] = Some(u.cache_read_input_tokens.get() as f64);
                c[5] = u.web_search_requests.map(|n| n.get() as f64);
                let row = reference::U {
                    c,
                    cost: u.cost_usd.map(NonNegF64::get),
                };
                (k.clone(), row)
            })
            .collect();
        let expected = reference::u_json(&reference::sum(&reference_rows));
        let actual = serde_json::to_value(sum_model_usage(&input)).unwrap();
        assert_eq!(actual.to_string(), expected.to_string());
    }
}
