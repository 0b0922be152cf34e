//! Per-message latency that `acp-ext tap` adds: sends one ACP message at a
//! time to `cat` (directly, then through the tap) and waits for its echo,
//! recording each round trip; prints p50 / p99 / max and the difference.
//!
//! ```sh
//! cargo build --release -p acp-ext --examples
//! target/release/examples/tap_latency [MESSAGES] [PATH/TO/acp-ext]
//! ```
//!
//! A round trip through the tap crosses it twice (client → agent and agent →
//! client), so the added latency per message is the difference of the round
//! trips.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

/// Round trips of `messages` lines through `command`.
fn round_trips(command: &mut Command, messages: usize) -> Vec<Duration> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let mut times = Vec::with_capacity(messages);
    let warmup = 200;
    for i in 0..messages + warmup {
        let msg = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{{\"sessionId\":\"sess_1\",\"update\":{{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{{\"type\":\"text\",\"text\":\"message {i}: the quick brown fox jumps over the lazy dog\"}}}}}}}}\n"
        );
        let start = Instant::now();
        stdin.write_all(msg.as_bytes()).unwrap();
        stdin.flush().unwrap();
        line.clear();
        stdout.read_line(&mut line).unwrap();
        let took = start.elapsed();
        assert_eq!(line, msg, "echo differs");
        if i >= warmup {
            times.push(took);
        }
    }
    drop(stdin);
    child.wait().unwrap();
    times.sort();
    times
}

fn main() {
    let mut args = std::env::args().skip(1);
    let messages: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5000);
    let bin = args.next().map(PathBuf::from).unwrap_or_else(|| {
        // target/<profile>/examples/tap_latency → target/<profile>/acp-ext
        let exe = std::env::current_exe().unwrap();
        exe.parent().unwrap().parent().unwrap().join("acp-ext")
    });
    let cases: [(&str, Vec<&str>); 3] = [
        ("tap -- cat (validation on)", vec!["tap", "--", "cat"]),
        (
            "tap --no-validate -- cat",
            vec!["tap", "--no-validate", "--", "cat"],
        ),
        (
            "tap --record -- cat (+validation)",
            vec!["tap", "--record", "/dev/null", "--", "cat"],
        ),
    ];
    let direct = round_trips(&mut Command::new("cat"), messages);
    let (d50, d99) = (percentile(&direct, 0.50), percentile(&direct, 0.99));
    println!("{messages} messages, one at a time, round trip client → agent → client");
    println!(
        "{:<36} p50 {:>7.1} µs  p99 {:>7.1} µs  max {:>8.1} µs",
        "cat",
        d50.as_secs_f64() * 1e6,
        d99.as_secs_f64() * 1e6,
        direct.last().unwrap().as_secs_f64() * 1e6
    );
    for (name, args) in cases {
        let mut command = Command::new(&bin);
        command.args(&args).stderr(Stdio::null());
        let tap = round_trips(&mut command, messages);
        let (t50, t99) = (percentile(&tap, 0.50), percentile(&tap, 0.99));
        let added = |t: Duration, d: Duration| (t.as_secs_f64() - d.as_secs_f64()) * 1e6;
        println!(
            "{:<36} p50 {:>7.1} µs  p99 {:>7.1} µs  max {:>8.1} µs  added: p50 {:+.1} µs, p99 {:+.1} µs",
            name,
            t50.as_secs_f64() * 1e6,
            t99.as_secs_f64() * 1e6,
            tap.last().unwrap().as_secs_f64() * 1e6,
            added(t50, d50),
            added(t99, d99),
        );
    }
}
