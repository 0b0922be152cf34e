//! Validation throughput on a realistic stream of subagent events.

use acp_extension_core::subagent_events::SubagentEvent;
use acp_extension_core::validate::{
    Kind, StreamOptions, is_valid_slice, validate_slice, validate_stream,
};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

mod events;

fn bench(c: &mut Criterion) {
    let lines: Vec<String> = (0..20_000).map(events::event_line).collect();
    let bytes: usize = lines.iter().map(|l| l.len() + 1).sum();
    let stream: String = lines.iter().flat_map(|l| [l.as_str(), "\n"]).collect();

    let mut g = c.benchmark_group("subagent-event");
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function("is_valid_slice per line", |b| {
        b.iter(|| {
            lines
                .iter()
                .filter(|l| is_valid_slice(Kind::of::<SubagentEvent>(), l.as_bytes()))
                .count()
        })
    });
    g.bench_function("validate_slice per line (all violations)", |b| {
        b.iter(|| {
            lines
                .iter()
                .map(|l| {
                    validate_slice(Kind::of::<SubagentEvent>(), l.as_bytes())
                        .violations
                        .len()
                })
                .sum::<usize>()
        })
    });
    for threads in [1, 2] {
        g.bench_function(format!("validate_stream, {threads} thread(s)"), |b| {
            let options = StreamOptions::default().threads(threads);
            b.iter(|| {
                let mut invalid = 0;
                validate_stream(
                    Kind::of::<SubagentEvent>(),
                    stream.as_bytes(),
                    &options,
                    |item| invalid += usize::from(!item.report.is_valid()),
                )
                .unwrap();
                invalid
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
