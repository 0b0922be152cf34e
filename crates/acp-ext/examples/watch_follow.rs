//! Measures `acp-ext watch` following a growing record: a writer appends
//! RATE messages a second for SECONDS to a file that `watch` shows in a
//! pseudo-terminal (120×40). Prints how long after the last write the
//! screen showed every message (the lag), the redraws per second while
//! following, and the CPU `watch` used while nothing changed for IDLE
//! seconds afterwards.
//!
//! ```sh
//! cargo run --release -p acp-ext --example watch_follow -- SOURCE.jsonl [RATE] [SECONDS] [IDLE]
//! ```
//!
//! SOURCE is a `tap --record` transcript; its messages are repeated (with a
//! new session id prefix per copy) to feed the writer. `benches/watch-follow.sh`
//! records one and runs this.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name: utime is the 14th, stime the 15th.
    let rest = stat.rsplit(')').next().unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let get = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    get(11) + get(12)
}

fn header_count(screen: &str) -> Option<u64> {
    let first = screen.lines().next()?;
    let before = first.split(" messages").next()?;
    before.rsplit(' ').next()?.parse().ok()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let source = args
        .first()
        .expect("usage: watch_follow SOURCE.jsonl [RATE] [SECONDS] [IDLE]");
    let rate: u64 = args.get(1).map_or(10_000, |s| s.parse().unwrap());
    let seconds: u64 = args.get(2).map_or(5, |s| s.parse().unwrap());
    let idle: u64 = args.get(3).map_or(5, |s| s.parse().unwrap());
    let exe = std::env::var("ACP_EXT").unwrap_or_else(|_| "target/release/acp-ext".into());
    // The pty's command builder looks relative names up in PATH.
    let exe = std::fs::canonicalize(&exe).unwrap_or_else(|e| panic!("{exe}: {e}"));

    let text = std::fs::read_to_string(source).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let prefix = lines
        .iter()
        .find_map(|l| l.find("\"sessionId\":\"").map(|i| &l[i + 13..]))
        .and_then(|rest| rest.split('"').next())
        .and_then(|sid| sid.rsplit_once('-').map(|(p, _)| format!("{p}-")))
        .unwrap_or_default();

    let dir = std::env::temp_dir().join(format!("acp-ext-watch-follow-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let live = dir.join("live.jsonl");
    std::fs::write(&live, "").unwrap();

    let pty = native_pty_system()
        .openpty(PtySize {
            rows: 40,
            cols: 120,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    let mut cmd = CommandBuilder::new(&exe);
    cmd.args(["watch", "--stats"]);
    cmd.arg(&live);
    cmd.env("TERM", "xterm-256color");
    let mut child = pty.slave.spawn_command(cmd).unwrap();
    drop(pty.slave);
    let pid = child.process_id().unwrap();
    let mut reader = pty.master.try_clone_reader().unwrap();
    let mut writer = pty.master.take_writer().unwrap();
    let screen = Arc::new(Mutex::new(vt100::Parser::new(
        std::num::NonZeroU16::new(40).unwrap(),
        std::num::NonZeroU16::new(120).unwrap(),
        0,
    )));
    let raw = Arc::new(Mutex::new(Vec::<u8>::new()));
    {
        let (screen, raw) = (screen.clone(), raw.clone());
        std::thread::spawn(move || {
            let _master = pty.master;
            let mut buf = [0u8; 65536];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                screen.lock().unwrap().process(&buf[..n]);
                let mut r = raw.lock().unwrap();
                r.extend_from_slice(&buf[..n]);
                let len = r.len();
                if len > 1 << 20 {
                    r.drain(..len - 4096);
                }
            }
        });
    }
    let contents = || screen.lock().unwrap().screen().contents();
    while !contents().contains("LIVE") {
        std::thread::sleep(Duration::from_millis(20));
    }

    // The writer: RATE messages a second, in 10 ms batches.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&live)
        .unwrap();
    let per_batch = (rate / 100).max(1) as usize;
    let total = rate * seconds;
    let mut written = 0u64;
    let mut copy = 0u64;
    let mut i = 0usize;
    let start = Instant::now();
    let ticks_before = cpu_ticks(pid);
    while written < total {
        let mut batch = String::new();
        for _ in 0..per_batch.min((total - written) as usize) {
            if i == lines.len() {
                i = 0;
                copy += 1;
            }
            let line = if prefix.is_empty() {
                lines[i].to_owned()
            } else {
                lines[i].replace(&prefix, &format!("copy{copy}-"))
            };
            batch.push_str(&line);
            batch.push('\n');
            i += 1;
            written += 1;
        }
        file.write_all(batch.as_bytes()).unwrap();
        let due = start + Duration::from_secs_f64(written as f64 / rate as f64);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    file.flush().unwrap();
    let wrote_for = start.elapsed();
    let done = Instant::now();
    let caught_up = loop {
        if header_count(&contents()) == Some(written) {
            break done.elapsed();
        }
        if done.elapsed() > Duration::from_secs(60) {
            panic!("watch never showed {written} messages:\n{}", contents());
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let follow_ticks = cpu_ticks(pid) - ticks_before;
    let follow_secs = start.elapsed().as_secs_f64();

    // Idle: nothing changes.
    let idle_start = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(idle));
    let idle_ticks = cpu_ticks(pid) - idle_start;
    let hz = 100.0; // USER_HZ on Linux.

    writer.write_all(b"q").unwrap();
    writer.flush().unwrap();
    let _ = child.wait();
    std::thread::sleep(Duration::from_millis(200));
    let tail = String::from_utf8_lossy(&raw.lock().unwrap()).into_owned();
    // The stats line follows the escape codes of the last frame.
    let stats = tail
        .rfind("messages=")
        .map(|i| &tail[i..])
        .and_then(|s| s.split(['\r', '\n']).next())
        .unwrap_or("")
        .trim()
        .to_owned();
    let redraws: f64 = stats
        .split_whitespace()
        .find_map(|w| w.strip_prefix("redraws="))
        .and_then(|n| n.parse().ok())
        .unwrap_or(f64::NAN);
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "wrote {written} messages in {:.2} s ({rate}/s target)",
        wrote_for.as_secs_f64()
    );
    println!(
        "caught up {:.0} ms after the last write",
        caught_up.as_secs_f64() * 1000.0
    );
    println!(
        "CPU while following: {:.0} % of one core; redraws: {redraws} in {:.1} s ({:.1}/s over the whole run, cap 30/s)",
        follow_ticks as f64 / hz / follow_secs * 100.0,
        follow_secs + idle as f64,
        redraws / (follow_secs + idle as f64)
    );
    println!(
        "CPU while idle for {idle} s: {:.2} % of one core ({idle_ticks} ticks)",
        idle_ticks as f64 / hz / idle as f64 * 100.0
    );
    println!("watch's own stats: {stats}");
}
