//! long sessions

use super::*;

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
