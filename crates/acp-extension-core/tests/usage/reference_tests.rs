//! reference tests (§17.1)

use super::*;

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
