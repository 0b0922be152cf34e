//! Fault injection for `acp-ext tap` and `acp-ext probe` (the real binary):
//! agents killed mid-message, agents that never answer, agents that flood a
//! slow client (and clients that flood a slow agent), clients that go away
//! early (even mid-line), random split points in both directions at once,
//! and, for the probe, an agent behind random split points, a flood of
//! notifications and a 64 MB line. In every case: the bytes on the path that still
//! exists arrive unchanged, the exit code follows the agent's (shell
//! convention for signals), and no agent process outlives the tool.
//!
//! Each agent is `sh` writing its pid to a file first (and `exec`ing the
//! real program where the pid must stay the same), so a test can check that
//! the process is gone. Nothing here decides pass or fail on time except
//! "did not hang within [`HANG`]".
#![cfg(target_os = "linux")]

#[path = "../common/mod.rs"]
mod common;

use std::io::{self, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use common::procfs::{peak_rss, rss};
use common::{EXE, read_jsonl, scratch, send_signal, spawn_tap, xorshift};
use serde_json::Value;

/// The longest anything may take before it counts as hung (generous: the
/// machine may be a loaded 2-core box running debug builds).
const HANG: Duration = Duration::from_secs(60);

/// An agent command line: `sh` that writes its pid to `pidfile`, then runs
/// `script`.
fn agent(pidfile: &Path, script: &str) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        format!("echo $$ > '{}'; {script}", pidfile.display()),
    ]
}

/// Waits for the pid the agent wrote.
fn read_pid(pidfile: &Path) -> i32 {
    let deadline = Instant::now() + HANG;
    loop {
        if let Ok(text) = std::fs::read_to_string(pidfile)
            && text.ends_with('\n')
        {
            return text.trim().parse().expect("a pid");
        }
        assert!(Instant::now() < deadline, "the agent never started");
        thread::sleep(Duration::from_millis(5));
    }
}

/// Whether `pid` is a live process (a zombie is dead but not yet reaped).
fn state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The state follows the command name, which is in parentheses.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// Asserts that process `pid` is gone (exited and reaped), waiting for it
/// at most [`HANG`].
fn assert_gone(pid: i32, what: &str) {
    let deadline = Instant::now() + HANG;
    while let Some(s) = state(pid) {
        assert!(
            Instant::now() < deadline,
            "{what}: agent process {pid} left behind (state {s})"
        );
        thread::sleep(Duration::from_millis(10));
    }
}

/// Waits for `child` at most [`HANG`]; kills it and fails if it hangs.
fn wait(child: &mut Child, what: &str) -> ExitStatus {
    wait_measured(child, what).0
}

/// Like [`wait`], also measuring the peak resident memory of `child` (its
/// last `VmHWM` before it exits).
fn wait_measured(child: &mut Child, what: &str) -> (ExitStatus, u64) {
    let deadline = Instant::now() + HANG;
    let mut peak = 0;
    loop {
        // Read before checking for the exit: a process that exited is gone.
        if let Some(p) = peak_rss(child.id()) {
            peak = peak.max(p);
        }
        if let Some(status) = child.try_wait().unwrap() {
            return (status, peak);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: hung");
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// Reads `from` to the end on a thread; the result comes through `recv`.
fn read_all(mut from: impl Read + Send + 'static) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut got = Vec::new();
        let _ = from.read_to_end(&mut got);
        let _ = tx.send(got);
    });
    rx
}

fn recv<T>(rx: &mpsc::Receiver<T>, what: &str) -> T {
    rx.recv_timeout(HANG)
        .unwrap_or_else(|_| panic!("{what}: hung"))
}

/// The shell's quoting of `s` (single quotes).
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Every way of running the tap, for tests that check them all.
fn modes(record: &Path) -> Vec<Vec<String>> {
    let r = record.display().to_string();
    vec![
        vec![],
        vec!["--no-validate".into()],
        vec!["--record".into(), r.clone()],
        vec!["--record".into(), r, "--format".into(), "conductor".into()],
    ]
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

mod client_leaves;
mod flood;
mod killed_mid_message;
mod never_answers;
mod probe_faults;
mod split_points;
mod tap_faults;

/// Asserts that no process of the agent's group `pgid` is left, waiting at
/// most [`HANG`].
fn assert_group_gone(pgid: i32, what: &str) {
    let deadline = Instant::now() + HANG;
    loop {
        let left = group(pgid);
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: processes {left:?} of the agent's group left behind"
        );
        thread::sleep(Duration::from_millis(10));
    }
}

/// The pids of every live process in process group `pgid` (the probe and the
/// tap start their agent in a group of its own, led by the agent's pid).
fn group(pgid: i32) -> Vec<i32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // After the command name: state, ppid, pgrp.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map_or(vec![], |(_, rest)| rest.split_whitespace().collect());
        if fields.get(2).and_then(|g| g.parse().ok()) == Some(pgid) {
            pids.push(pid);
        }
    }
    pids
}

/// `n` bytes of JSON-RPC lines (the last one cut where `n` ends).
fn flood_bytes(n: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(n + 256);
    let mut i = 0u64;
    while v.len() < n {
        v.extend_from_slice(
            format!(
                r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"chunk {i} {}"}}}}}}}}"#,
                "ü".repeat((i % 40) as usize)
            )
            .as_bytes(),
        );
        v.push(b'\n');
        i += 1;
    }
    v.truncate(n);
    v
}

/// Like [`probe`], also measuring the probe's peak resident memory.
fn probe_measured(args: &[&str], agent: &[String]) -> (ExitStatus, Value, u64) {
    let mut child = Command::new(EXE)
        .arg("probe")
        .args(["--json", "--quiet"])
        .args(args)
        .arg("--")
        .args(agent)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run acp-ext probe");
    let out = read_all(child.stdout.take().unwrap());
    let err = read_all(child.stderr.take().unwrap());
    let (status, peak) = wait_measured(&mut child, "probe");
    let out = recv(&out, "probe output");
    let err = recv(&err, "probe stderr");
    let report = serde_json::from_slice(&out).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(&err)
        )
    });
    (status, report, peak)
}

/// A deterministic stream of lines of every kind (JSON-RPC messages with
/// multi-byte characters, CRLF endings, noise), `n` messages.
fn stream(tag: &str, n: usize) -> Vec<u8> {
    let mut v = Vec::new();
    for i in 0..n {
        let text = format!("{tag} {i} {}", "añ€😀".repeat(i % 13));
        let end = if i % 5 == 0 { "\r\n" } else { "\n" };
        v.extend_from_slice(
            format!(
                r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"{tag}","n":{i},"text":"{text}"}}}}{end}"#
            )
            .as_bytes(),
        );
        if i % 40 == 0 {
            v.extend_from_slice(format!("noise {tag} \u{1F600}\n").as_bytes());
        }
    }
    v
}
