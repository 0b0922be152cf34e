//! Writes a realistic stream of `_lody/subagents/event` params as JSON
//! Lines: mostly text chunks and tool calls, some progress and snapshots,
//! about one in ten invalid. Deterministic for a given line count.
//!
//! `cargo run --release --example gen_subagent_events -- 200000 > events.jsonl`

use std::io::{self, BufWriter, Write};

#[path = "../benches/events.rs"]
mod events;

fn main() -> io::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200_000);
    let mut out = BufWriter::new(io::stdout().lock());
    for i in 0..n {
        out.write_all(events::event_line(i).as_bytes())?;
        out.write_all(b"\n")?;
    }
    out.flush()
}
