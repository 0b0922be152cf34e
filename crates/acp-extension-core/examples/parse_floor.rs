//! What parsing alone costs, for a file of JSON-RPC subagent-event
//! notifications (`benches/follow-vs-python.sh` writes one with `KEEP=1`):
//! each line as a `serde_json::Value` tree (what the connection follower
//! reads today), and each line straight into a typed envelope around
//! [`SubagentEvent`] (no tree; what a typed lane would read, falling back to
//! the tree for the lines that are not valid events), and
//! [`Line::read`], the follower's read (the event verified without a tree
//! where it applies, else the tree). One thread, the file
//! in memory, no output: the floor under `acp-ext check` and
//! `acp-ext state` on the same file. Then the fold alone: a
//! [`ConnectionState`] following the lines `Line::read` read beforehand
//! (`fold parsed`), writing the folded state as JSON into memory with
//! `serde_json::to_writer`, and dropping the state and the lines (`drop`).
//!
//! ```sh
//! cargo run --release -p acp-extension-core --example parse_floor -- FILE [ROUNDS]
//! ```
//!
//! Prints, for each way, the median and best of ROUNDS (default 7) rounds
//! in milliseconds, and how many lines the typed envelope took.

use std::time::{Duration, Instant};

use acp_extension_core::connection::{Direction, Line, Reads};
use acp_extension_core::state::ConnectionState;
use acp_extension_core::subagent_events::SubagentEvent;
use serde::Deserialize;
use serde_json::Value;

/// A notification whose params are a subagent event.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // read to be parsed, not used
struct Envelope<'a> {
    jsonrpc: &'a str,
    method: &'a str,
    params: SubagentEvent,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: parse_floor FILE [ROUNDS]");
        std::process::exit(2);
    };
    let rounds: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(7).max(1);
    let data = std::fs::read(&path).unwrap_or_else(|e| {
        eprintln!("cannot read {path}: {e}");
        std::process::exit(1);
    });
    let lines: Vec<&str> = data
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .filter_map(|l| std::str::from_utf8(l).ok())
        .collect();
    let (mut tree, mut typed, mut lane) = (Vec::new(), Vec::new(), Vec::new());
    let (mut fold, mut dropped) = (Vec::new(), Vec::new());
    let mut to_writer = Vec::new();
    let (mut typed_ok, mut lane_events) = (0, 0);
    for _ in 0..rounds {
        let t = Instant::now();
        for l in &lines {
            std::hint::black_box(serde_json::from_str::<Value>(l).ok());
        }
        tree.push(t.elapsed());
        let t = Instant::now();
        typed_ok = 0;
        for l in &lines {
            if let Ok(e) = serde_json::from_str::<Envelope>(l) {
                typed_ok += 1;
                std::hint::black_box(e);
            }
        }
        typed.push(t.elapsed());
        let t = Instant::now();
        lane_events = 0;
        for l in &lines {
            let parsed = Line::read(l.as_bytes(), Reads::Event);
            lane_events += usize::from(parsed.tree().is_none() && parsed.not_json().is_none());
            std::hint::black_box(parsed);
        }
        lane.push(t.elapsed());
        let parsed: Vec<Line> = lines
            .iter()
            .map(|l| Line::read(l.as_bytes(), Reads::Event))
            .collect();
        let t = Instant::now();
        let mut state = ConnectionState::new();
        for (i, p) in parsed.iter().enumerate() {
            state.set_line(Some(i as u64 + 1));
            std::hint::black_box(state.follow_read(Direction::Unknown, p));
        }
        fold.push(t.elapsed());
        let mut out = Vec::with_capacity(64 << 20);
        let t = Instant::now();
        serde_json::to_writer(&mut out, &state).expect("a state serializes");
        to_writer.push(t.elapsed());
        let t = Instant::now();
        drop(state);
        drop(parsed);
        dropped.push(t.elapsed());
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("{} lines, {} rounds", lines.len(), rounds);
    for (name, times) in [
        ("value tree", tree),
        ("typed envelope", typed),
        ("Line::read", lane),
        ("fold parsed", fold),
        ("to_writer", to_writer),
        ("drop", dropped),
    ] {
        let best = *times.iter().min().expect("rounds");
        println!(
            "{name:15} median {:7.1} ms  best {:7.1} ms",
            ms(median(times)),
            ms(best)
        );
    }
    println!("typed envelope took {typed_ok} of {} lines", lines.len());
    println!(
        "Line::read verified {lane_events} of {} lines as events",
        lines.len()
    );
}
