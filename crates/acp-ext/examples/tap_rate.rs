//! How many messages `acp-ext tap` validates at a given message rate: writes
//! ACP messages to `tap --stats -- cat` at RATE messages a second for
//! SECONDS (a flood when RATE is 0), reads the echo, and prints the tap's
//! counters: messages seen each way, validated, skipped for validation, and
//! bytes forwarded unseen.
//!
//! ```sh
//! cargo build --release -p acp-ext --examples
//! target/release/examples/tap_rate RATE [SECONDS] [PATH/TO/acp-ext]
//! ```
//!
//! `TAP_ARGS` adds options to the tap's command line.
//!
//! Every message crosses the tap twice (to `cat` and back), so a fully
//! validated run validates twice the messages sent.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn message(i: u64) -> String {
    // The mix of benches/tap-vs-cat.sh: chunks, tool call updates, prompts.
    match i % 10 {
        0..=5 => format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{{\"sessionId\":\"sess_7f3a9c\",\"update\":{{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{{\"type\":\"text\",\"text\":\"Chunk {i} of the answer: the quick brown fox jumps over the lazy dog, again and again.\"}}}}}}}}\n"
        ),
        6..=8 => format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{{\"sessionId\":\"sess_7f3a9c\",\"update\":{{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"call_{i}\",\"status\":\"completed\",\"content\":[{{\"type\":\"content\",\"content\":{{\"type\":\"text\",\"text\":\"src/main.rs:12: fn main() {{ println!(\\\"hello\\\"); }}\"}}}}],\"_meta\":{{\"lody\":{{\"toolName\":\"grep\"}}}}}}}}}}\n"
        ),
        _ => format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"session/prompt\",\"params\":{{\"sessionId\":\"sess_7f3a9c\",\"prompt\":[{{\"type\":\"text\",\"text\":\"Please refactor the parser module and keep the public API stable.\"}}]}}}}\n"
        ),
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let rate: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000.0);
    let seconds: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(3.0);
    let bin = args.next().map(PathBuf::from).unwrap_or_else(|| {
        // target/<profile>/examples/tap_rate → target/<profile>/acp-ext
        let exe = std::env::current_exe().unwrap();
        exe.parent().unwrap().parent().unwrap().join("acp-ext")
    });
    // TAP_ARGS: more options for the tap (`--validator-cpu 0.5`).
    let extra = std::env::var("TAP_ARGS").unwrap_or_default();
    let mut child = Command::new(&bin)
        .args(["tap", "--stats"])
        .args(extra.split_whitespace())
        .args(["--", "cat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn acp-ext tap");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut lines = 0u64;
        for line in BufReader::new(stdout).split(b'\n') {
            line.unwrap();
            lines += 1;
        }
        lines
    });
    let started = Instant::now();
    let end = started + Duration::from_secs_f64(seconds);
    let mut sent = 0u64;
    // In batches of a millisecond's worth, paced against the clock.
    let mut batch = String::new();
    while Instant::now() < end {
        let due = if rate > 0.0 {
            (started.elapsed().as_secs_f64() * rate) as u64
        } else {
            sent + 1000
        };
        batch.clear();
        while sent < due {
            batch.push_str(&message(sent));
            sent += 1;
        }
        if !batch.is_empty() {
            stdin.write_all(batch.as_bytes()).unwrap();
        }
        if rate > 0.0 {
            std::thread::sleep(Duration::from_micros(500));
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    drop(stdin);
    let echoed = reader.join().unwrap();
    let mut err = String::new();
    stderr.read_to_string(&mut err).unwrap();
    child.wait().unwrap();
    assert_eq!(echoed, sent, "every message came back");
    let stats: serde_json::Value = err
        .lines()
        .find_map(|l| l.strip_prefix("acp-ext tap: stats "))
        .map(|s| serde_json::from_str(s).unwrap())
        .expect("the tap's --stats line");
    let seen = stats["client_to_agent"]["messages"].as_u64().unwrap_or(0)
        + stats["agent_to_client"]["messages"].as_u64().unwrap_or(0);
    let unseen_bytes = stats["client_to_agent"]["unmonitored_bytes"]
        .as_u64()
        .unwrap_or(0)
        + stats["agent_to_client"]["unmonitored_bytes"]
            .as_u64()
            .unwrap_or(0);
    let validated = stats["validated"].as_u64().unwrap_or(0);
    let rate_name = if rate > 0.0 {
        format!("{rate:.0}/s")
    } else {
        "flood".to_owned()
    };
    println!(
        "rate {rate_name:>8}: {sent} messages in {elapsed:.1} s ({:.0}/s), {} crossings; validated {validated} ({:.1} %), skipped {}, seen by the monitor {seen}, bytes forwarded unseen {unseen_bytes}",
        sent as f64 / elapsed,
        2 * sent,
        100.0 * validated as f64 / (2 * sent) as f64,
        stats["validation_skipped"],
    );
}
