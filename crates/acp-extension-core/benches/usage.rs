//! `SessionUsageAccumulator` throughput.
//!
//! - `usage/update_latest_op/N`: one update (a grown snapshot of the latest
//!   operation, two models) with N operations of history. Flat in N: the
//!   ledger keeps running per-model totals instead of re-summing history.
//! - `usage/session_16000_updates_8000_ops`: a whole session of 8,000
//!   operations reported twice each (incomplete, then complete with cost),
//!   two models, from a fresh ledger. The TypeScript reference re-sums all
//!   operations on every update and needs about 97 s for this in Node.
//!
//! Run: `cargo bench -p acp-extension-core --bench usage`.

use std::hint::black_box;
use std::time::Duration;

use acp_extension_core::usage::{ModelUsage, SessionUsageAccumulator, UsageCount};
use acp_extension_core::wire::NonNegF64;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use indexmap::IndexMap;

fn cost(c: f64) -> NonNegF64 {
    NonNegF64::new(c).expect("finite")
}

/// The first, incomplete snapshot of operation `i`: one model, no cost.
fn partial(i: u64) -> IndexMap<String, ModelUsage> {
    IndexMap::from([(
        "model-a".to_owned(),
        ModelUsage::new(i % 100 + 1, 10u64, 0u64),
    )])
}

/// The complete snapshot of operation `i`: two models with costs.
fn complete(i: u64) -> IndexMap<String, ModelUsage> {
    IndexMap::from([
        (
            "model-a".to_owned(),
            ModelUsage::new(i % 100 + 2, 20u64, 5u64).cost_usd(cost(0.0003 * (i % 11) as f64)),
        ),
        (
            "model-b".to_owned(),
            ModelUsage::new(3u64, 4u64, 0u64).cost_usd(cost(0.0001 * (i % 7) as f64)),
        ),
    ])
}

fn with_history(ops: u64) -> SessionUsageAccumulator {
    let mut acc = SessionUsageAccumulator::with_scope_id("bench").expect("short id");
    for i in 0..ops {
        let op = format!("turn-{i}");
        acc.update("session", &op, &partial(i));
        acc.update("session", &op, &complete(i));
    }
    acc
}

fn update_latest_op(c: &mut Criterion) {
    let mut group = c.benchmark_group("usage/update_latest_op");
    for ops in [1_000u64, 10_000, 100_000] {
        let mut acc = with_history(ops);
        let op = format!("turn-{}", ops - 1);
        let mut rows = complete(ops - 1);
        let mut tokens = 1_000u64;
        group.bench_with_input(BenchmarkId::from_parameter(ops), &ops, |b, _| {
            b.iter(|| {
                // Every snapshot grows, so every update emits.
                tokens += 1;
                rows["model-a"].input_tokens = UsageCount::new(tokens);
                black_box(acc.update("session", &op, &rows))
            })
        });
    }
    group.finish();
}

fn whole_session(c: &mut Criterion) {
    let steps: Vec<(String, IndexMap<String, ModelUsage>)> = (0..8_000u64)
        .flat_map(|i| {
            let op = format!("turn-{i}");
            [(op.clone(), partial(i)), (op, complete(i))]
        })
        .collect();
    let mut group = c.benchmark_group("usage");
    group.sample_size(10);
    group.bench_function("session_16000_updates_8000_ops", |b| {
        b.iter(|| {
            let mut acc = SessionUsageAccumulator::with_scope_id("bench").expect("short id");
            let mut last = None;
            for (op, rows) in &steps {
                last = acc.update("session", op, rows);
            }
            black_box(last)
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = update_latest_op, whole_session
}
criterion_main!(benches);
