//! probed edge cases (§18)

use super::*;

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
