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

// ---- agent killed mid-message ------------------------------------------

#[test]
fn agent_killing_itself_mid_message_delivers_the_partial_line_and_its_signal() {
    let dir = scratch("self-kill");
    let whole = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","n":1}}"#;
    let partial = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","upd"#;
    let record = dir.join("r.jsonl");
    for mode in modes(&record) {
        let pidfile = dir.join("pid");
        let _ = std::fs::remove_file(&pidfile);
        let script = format!(
            "printf '%s\\n' {}; printf '%s' {}; kill -KILL $$",
            quote(whole),
            quote(partial)
        );
        let mut tap = spawn_tap(&strs(&mode), &agent(&pidfile, &script));
        let out = read_all(tap.stdout.take().unwrap());
        let pid = read_pid(&pidfile);
        let got = recv(&out, "client output");
        let status = wait(&mut tap, "tap");
        assert_eq!(
            got,
            format!("{whole}\n{partial}").as_bytes(),
            "{mode:?}: the partial line must reach the client byte for byte"
        );
        assert_eq!(status.code(), Some(128 + 9), "{mode:?}");
        assert_gone(pid, "self-kill");
        if mode.len() == 2 {
            // The JSONL record has the message and, as a raw line, the
            // fragment the agent left behind.
            let entries = read_jsonl(&record);
            assert_eq!(entries.len(), 2, "{entries:?}");
            assert_eq!(entries[0]["msg"]["params"]["n"], 1);
            assert_eq!(entries[1]["dir"], "a2c");
            assert_eq!(entries[1]["raw"], partial);
        }
    }
}

#[test]
fn agent_killed_from_outside_mid_message() {
    let dir = scratch("outside-kill");
    let pidfile = dir.join("pid");
    // A long message that never ends: the prefix, then the agent waits.
    let prefix = format!(
        r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","text":"{}"#,
        "é€😀".repeat(5_000)
    );
    let script = format!("printf '%s' {}; exec sleep 600", quote(&prefix));
    let mut tap = spawn_tap(&[], &agent(&pidfile, &script));
    let mut stdout = tap.stdout.take().unwrap();
    let pid = read_pid(&pidfile);
    let mut got = vec![0u8; prefix.len()];
    stdout.read_exact(&mut got).unwrap();
    assert!(got == prefix.as_bytes(), "the prefix came out changed");
    send_signal("KILL", pid);
    let rest = recv(&read_all(stdout), "client output");
    let status = wait(&mut tap, "tap");
    assert_eq!(rest, b"", "nothing after the prefix");
    assert_eq!(status.code(), Some(128 + 9));
    assert_gone(pid, "outside kill");
}

#[test]
fn agent_dying_while_the_client_writes_closes_the_clients_pipe() {
    let dir = scratch("dies-reading");
    let pidfile = dir.join("pid");
    // Reads 100 kB of the client's stream, then dies by SIGTERM.
    let script = "head -c 100000 > /dev/null; kill -TERM $$";
    let mut tap = spawn_tap(&[], &agent(&pidfile, script));
    let out = read_all(tap.stdout.take().unwrap());
    let mut stdin = tap.stdin.take().unwrap();
    let pid = read_pid(&pidfile);
    let writer = thread::spawn(move || {
        let line = br#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#;
        let mut written = 0u64;
        loop {
            if let Err(e) = stdin.write_all(line).and_then(|()| stdin.write_all(b"\n")) {
                return (e.kind(), written);
            }
            written += line.len() as u64 + 1;
            // Far more than any pipe holds: the write must fail first.
            assert!(written < 1 << 30, "the client could write 1 GiB");
        }
    });
    let (kind, written) = recv(
        &{
            let (tx, rx) = mpsc::channel();
            thread::spawn(move || tx.send(writer.join().unwrap()));
            rx
        },
        "client writer",
    );
    assert_eq!(kind, io::ErrorKind::BrokenPipe, "after {written} bytes");
    let status = wait(&mut tap, "tap");
    assert_eq!(status.code(), Some(128 + 15));
    assert_eq!(recv(&out, "client output"), b"");
    assert_gone(pid, "agent dying");
}

// ---- agent that never answers ------------------------------------------

#[test]
fn tap_stays_transparent_to_an_agent_that_never_answers() {
    let dir = scratch("silent");
    let pidfile = dir.join("pid");
    let got = dir.join("got");
    // Reads everything, answers nothing, exits 3 at the end of its input.
    let script = format!("cat > '{}'; exit 3", got.display());
    let mut tap = spawn_tap(&[], &agent(&pidfile, &script));
    let out = read_all(tap.stdout.take().unwrap());
    let pid = read_pid(&pidfile);
    let mut sent = Vec::new();
    for i in 0..1000 {
        sent.extend_from_slice(
            format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"initialize","params":{{"protocolVersion":1}}}}"#)
                .as_bytes(),
        );
        sent.push(b'\n');
    }
    let mut stdin = tap.stdin.take().unwrap();
    stdin.write_all(&sent).unwrap();
    drop(stdin);
    assert_eq!(recv(&out, "client output"), b"");
    let status = wait(&mut tap, "tap");
    assert_eq!(status.code(), Some(3));
    assert_gone(pid, "silent agent");
    assert!(std::fs::read(&got).unwrap() == sent);
}

#[test]
fn an_agent_ignoring_its_input_ends_with_the_taps_signal() {
    // The agent ignores the end of its input; the client then stops the tap
    // the way it would stop the agent itself.
    let dir = scratch("deaf");
    let pidfile = dir.join("pid");
    let mut tap = spawn_tap(&[], &agent(&pidfile, "exec sleep 600"));
    let out = read_all(tap.stdout.take().unwrap());
    let pid = read_pid(&pidfile);
    let mut stdin = tap.stdin.take().unwrap();
    stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n").unwrap();
    drop(stdin);
    send_signal("TERM", tap.id());
    let status = wait(&mut tap, "tap");
    assert_eq!(status.code(), Some(128 + 15));
    assert_eq!(recv(&out, "client output"), b"");
    assert_gone(pid, "deaf agent");
}

#[test]
fn a_killed_tap_leaves_no_agent_behind() {
    // SIGKILL cannot be forwarded; the agent sees the end of its input and
    // exits, as it would if its client had died.
    let dir = scratch("tap-killed");
    let pidfile = dir.join("pid");
    let mut tap = spawn_tap(&[], &agent(&pidfile, "exec cat"));
    let pid = read_pid(&pidfile);
    let mut stdin = tap.stdin.take().unwrap();
    let mut stdout = tap.stdout.take().unwrap();
    stdin.write_all(b"ping\n").unwrap();
    let mut echo = [0u8; 5];
    stdout.read_exact(&mut echo).unwrap();
    assert_eq!(&echo, b"ping\n");
    tap.kill().unwrap();
    let status = wait(&mut tap, "tap");
    assert_eq!(status.code(), None, "killed by a signal");
    assert_gone(pid, "agent of a killed tap");
}

/// The process group of `pid`.
fn pgid_of(pid: i32) -> i32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // After the command name: state, ppid, pgrp.
    stat.rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .nth(2)
        .unwrap()
        .parse()
        .unwrap()
}

/// A wrapper agent (`sh -c "sleep 1000; true"`, as `npx …` or an npm
/// script starts a native binary) whose child ignores its input, started
/// by a tap that leads a process group of its own (as a terminal's
/// foreground job would). Returns the tap, and the agent's process group
/// once both the wrapper and its child run in it.
fn tap_with_wrapper_agent(name: &str) -> (Child, i32) {
    let dir = scratch(name);
    let pidfile = dir.join("pid");
    let tap = Command::new(EXE)
        .arg("tap")
        .arg("--")
        .args(agent(&pidfile, "sleep 1000; true"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = read_pid(&pidfile);
    let pgid = pgid_of(pid);
    assert_ne!(
        pgid,
        tap.id() as i32,
        "the agent runs in a group of its own"
    );
    let deadline = Instant::now() + HANG;
    // Besides the wrapper (and a guard leading the group): its child.
    while !group(pgid).iter().any(|&p| p != pid && p != pgid) {
        assert!(
            Instant::now() < deadline,
            "the wrapper never started its child"
        );
        thread::sleep(Duration::from_millis(5));
    }
    // The client's ends stay open (in `tap`): the agent sees no EOF.
    (tap, pgid)
}

#[test]
fn ctrl_c_on_the_taps_group_ends_the_agents_whole_tree() {
    // A terminal's Ctrl-C goes to the foreground group: the tap. Without
    // the tap, the wrapper and its child would both get it.
    let (mut tap, pgid) = tap_with_wrapper_agent("ctrl-c-tree");
    let sent = Command::new("kill")
        .args(["-INT", "--", &format!("-{}", tap.id())])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = wait(&mut tap, "tap");
    assert_eq!(status.code(), Some(128 + 2), "the agent's signal death");
    assert_group_gone(pgid, "Ctrl-C on the tap");
}

#[test]
fn a_sigkilled_tap_ends_the_agents_whole_tree() {
    // Clients stop agents with SIGKILL; killing the tap instead must not
    // leave the wrapper or its child (which ignores its input) running.
    let (mut tap, pgid) = tap_with_wrapper_agent("sigkill-tree");
    tap.kill().unwrap();
    let status = wait(&mut tap, "tap");
    assert_eq!(status.code(), None, "killed by a signal");
    assert_group_gone(pgid, "SIGKILLed tap");
}

/// `acp-ext probe --json --quiet ARGS -- AGENT`: its exit status and report.
fn probe(args: &[&str], agent: &[String]) -> (ExitStatus, Value) {
    let (status, report, _) = probe_measured(args, agent);
    (status, report)
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

fn messages(report: &Value) -> String {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| format!("{} [{}] {}\n", f["severity"], f["rule"], f["message"]))
        .collect()
}

#[test]
fn probe_times_out_on_an_agent_that_never_answers_and_reaps_it() {
    let dir = scratch("probe-silent");
    // One that reads its input and one that does not even read.
    for script in ["exec cat 3>&1 > /dev/null", "exec sleep 600"] {
        let pidfile = dir.join("pid");
        let _ = std::fs::remove_file(&pidfile);
        let (status, report) = probe(&["--timeout", "2"], &agent(&pidfile, script));
        let pid = read_pid(&pidfile);
        assert_eq!(status.code(), Some(1), "{script}");
        let found = messages(&report);
        assert!(
            found.contains("initialize failed: timed out"),
            "{script}: {found}"
        );
        assert!(report["agentInfo"].is_null());
        assert_gone(pid, script);
    }
}

#[test]
fn probe_times_out_on_a_prompt_that_never_ends_and_reaps_the_agent() {
    let dir = scratch("probe-slow");
    let pidfile = dir.join("pid");
    let script = format!("exec {} serve", quote(EXE));
    let (status, report) = probe(
        &["--timeout", "2", "--prompt", "/slow 600"],
        &agent(&pidfile, &script),
    );
    let pid = read_pid(&pidfile);
    assert_eq!(status.code(), Some(1));
    assert_eq!(report["agentInfo"]["name"], "acp-ext-serve");
    assert_eq!(
        report["prompts"][0]["error"],
        "timed out: no answer to session/prompt within 2 s (--timeout SECONDS raises the limit)"
    );
    assert_gone(pid, "serve behind probe");
}

#[test]
fn probe_reports_an_agent_killed_mid_answer() {
    let dir = scratch("probe-killed");
    let pidfile = dir.join("pid");
    // Reads the request, starts an answer, dies.
    let script = r#"read line; printf '%s' '{"jsonrpc":"2.0","id":'; kill -KILL $$"#;
    let (status, report) = probe(&["--timeout", "30"], &agent(&pidfile, script));
    let pid = read_pid(&pidfile);
    assert_eq!(status.code(), Some(1));
    let found = messages(&report);
    assert!(report["agentInfo"].is_null());
    // The probe saw the connection end (and why); it did not wait for its
    // timeout.
    assert!(!found.contains("timed out"), "{found}");
    assert!(
        found.contains("[\"probe-connection\"]") && found.contains("SIGKILL"),
        "{found}"
    );
    assert_gone(pid, "killed agent");
}

#[test]
fn a_probe_stopped_by_sigterm_leaves_no_agent_behind() {
    let dir = scratch("probe-term");
    let pidfile = dir.join("pid");
    // An agent that ignores the end of its input: only a kill ends it.
    let script = "exec sleep 600".to_string();
    let mut child = Command::new(EXE)
        .args(["probe", "--quiet", "--"])
        .args(agent(&pidfile, &script))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = read_pid(&pidfile);
    send_signal("TERM", child.id());
    let status = wait(&mut child, "probe");
    assert_eq!(status.code(), Some(128 + 15), "{status:?}");
    assert_gone(pid, "agent behind a stopped probe");
}

#[tokio::test]
async fn dropping_a_probe_kills_an_agent_that_ignores_its_input() {
    // What `probe::run_interruptible` does on a signal: the probe is dropped
    // mid-run, and the agent (which would outlive the end of its input)
    // must go with it.
    let dir = scratch("probe-dropped");
    let pidfile = dir.join("pid");
    let command = agent(&pidfile, "exec sleep 600");
    let options = acp_ext::probe::ProbeOptions::default()
        .quiet(true)
        .timeout(HANG);
    let probe = acp_ext::probe::run(command, options);
    let dropped = tokio::select! {
        _ = probe => false,
        () = async {
            while !pidfile.exists() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        } => true,
    };
    assert!(dropped, "the probe ended before its agent started");
    assert_gone(read_pid(&pidfile), "agent of a dropped probe");
}

// ---- flood -------------------------------------------------------------

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

#[test]
fn a_flooding_agent_and_a_slow_client_lose_nothing_and_memory_stays_bounded() {
    const SIZE: usize = 48 << 20;
    let dir = scratch("flood");
    let file = dir.join("flood.jsonl");
    let expected = flood_bytes(SIZE);
    std::fs::write(&file, &expected).unwrap();
    let record = dir.join("r.jsonl");
    for mode in modes(&record) {
        let pidfile = dir.join("pid");
        let _ = std::fs::remove_file(&pidfile);
        let script = format!("exec cat '{}'", file.display());
        let mut tap = spawn_tap(&strs(&mode), &agent(&pidfile, &script));
        drop(tap.stdin.take());
        let tap_pid = tap.id();
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicU64::new(0));
        let sampler = {
            let (stop, peak) = (Arc::clone(&stop), Arc::clone(&peak));
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if let Some(r) = rss(tap_pid) {
                        peak.fetch_max(r, Ordering::Relaxed);
                    }
                    thread::sleep(Duration::from_millis(5));
                }
            })
        };
        // A slow client: small reads with a pause after each.
        let mut stdout = tap.stdout.take().unwrap();
        let mut buf = vec![0u8; 16 << 10];
        let mut at = 0usize;
        let mut reads = 0u64;
        loop {
            let n = stdout.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            assert!(at + n <= SIZE, "{mode:?}: more bytes than sent");
            assert!(
                buf[..n] == expected[at..at + n],
                "{mode:?}: bytes changed at offset {at}"
            );
            at += n;
            reads += 1;
            if reads.is_multiple_of(4) {
                thread::sleep(Duration::from_micros(200));
            }
        }
        let status = wait(&mut tap, "tap");
        stop.store(true, Ordering::Relaxed);
        sampler.join().unwrap();
        assert_eq!(at, SIZE, "{mode:?}: bytes lost");
        assert!(status.success(), "{mode:?}: {status:?}");
        assert_gone(read_pid(&pidfile), "flooding agent");
        let peak = peak.load(Ordering::Relaxed);
        eprintln!("{mode:?}: peak RSS of the tap {} MiB", peak >> 20);
        // Without recording, nothing waits in memory but the validator's
        // bounded queue: far less than the flood. Recording keeps every
        // line until written, within its 256 MiB budget.
        let bound = if mode.iter().any(|a| a == "--record") {
            320 << 20
        } else {
            80 << 20
        };
        assert!(
            peak < bound,
            "{mode:?}: peak RSS {} MiB for a {} MiB flood",
            peak >> 20,
            SIZE >> 20
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- the client goes away early ------------------------------------------

#[test]
fn a_client_that_stops_reading_ends_the_agent_and_the_tap() {
    let line =
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{}}}"#;
    let dir = scratch("early-close");
    let record = dir.join("r.jsonl");
    for mode in modes(&record) {
        let pidfile = dir.join("pid");
        let _ = std::fs::remove_file(&pidfile);
        // An agent that writes forever (until its output closes).
        let mut tap = spawn_tap(
            &strs(&mode),
            &agent(&pidfile, &format!("exec yes {}", quote(line))),
        );
        let pid = read_pid(&pidfile);
        let mut stdout = tap.stdout.take().unwrap();
        let mut got = vec![0u8; 1 << 20];
        stdout.read_exact(&mut got).unwrap();
        let expected: Vec<u8> = format!("{line}\n").bytes().cycle().take(1 << 20).collect();
        assert!(got == expected, "{mode:?}: bytes changed");
        // The client closes its end of the agent's output, keeps its own
        // output open.
        drop(stdout);
        let status = wait(&mut tap, "tap");
        // `yes` dies of SIGPIPE; the tap exits with its status.
        assert_eq!(status.code(), Some(128 + 13), "{mode:?}");
        assert_gone(pid, "agent of a client that left");
        drop(tap.stdin.take());
    }
}

// ---- random split points, both directions at once -------------------------

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

/// Cuts `bytes` at pseudo-random points (1 to 300 bytes apart).
fn pieces(bytes: &[u8], mut seed: u64) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let n = (1 + (xorshift(&mut seed) % 300) as usize).min(bytes.len() - at);
        out.push(&bytes[at..at + n]);
        at += n;
    }
    out
}

/// A shell command that writes `piece` exactly (every byte as an octal
/// escape, so any byte survives the shell).
fn printf(piece: &[u8]) -> String {
    let mut s = String::from("printf '");
    for b in piece {
        s.push_str(&format!("\\{b:03o}"));
    }
    s.push('\'');
    s
}

#[test]
fn random_split_points_in_both_directions_at_once() {
    let dir = scratch("splits");
    let record = dir.join("r.jsonl");
    let from_agent = stream("agent", 300);
    let from_client = stream("client", 300);
    // The agent writes its stream in random pieces, pausing now and then,
    // while it saves what it reads.
    let got_by_agent = dir.join("got");
    let mut script = String::from("(\n");
    for (i, p) in pieces(&from_agent, 0x2545_F491_4F6C_DD1D)
        .iter()
        .enumerate()
    {
        script.push_str(&printf(p));
        script.push('\n');
        if i % 9 == 0 {
            script.push_str("sleep 0.001\n");
        }
    }
    script.push_str(&format!(") &\ncat > '{}'\nwait\n", got_by_agent.display()));
    let script_file = dir.join("agent.sh");
    std::fs::write(&script_file, script).unwrap();
    for mode in modes(&record) {
        let pidfile = dir.join("pid");
        let _ = std::fs::remove_file(&pidfile);
        let _ = std::fs::remove_file(&got_by_agent);
        let mut tap = spawn_tap(
            &strs(&mode),
            &agent(&pidfile, &format!(". '{}'", script_file.display())),
        );
        let out = read_all(tap.stdout.take().unwrap());
        let mut stdin = tap.stdin.take().unwrap();
        for (i, p) in pieces(&from_client, 0x9E37_79B9_7F4A_7C15)
            .iter()
            .enumerate()
        {
            stdin.write_all(p).unwrap();
            stdin.flush().unwrap();
            if i % 7 == 0 {
                thread::sleep(Duration::from_micros(300));
            }
        }
        drop(stdin);
        let got = recv(&out, "client output");
        let status = wait(&mut tap, "tap");
        assert!(status.success(), "{mode:?}: {status:?}");
        assert!(got == from_agent, "{mode:?}: agent → client changed");
        assert!(
            std::fs::read(&got_by_agent).unwrap() == from_client,
            "{mode:?}: client → agent changed"
        );
        assert_gone(read_pid(&pidfile), "split agent");
        if mode.len() == 2 {
            // Every line was framed whole in each direction.
            let entries = read_jsonl(&record);
            for (d, tag) in [("c2a", "client"), ("a2c", "agent")] {
                let msgs: Vec<&Value> = entries
                    .iter()
                    .filter(|e| e["dir"] == d)
                    .filter_map(|e| e.get("msg"))
                    .collect();
                assert_eq!(msgs.len(), 300, "{d}");
                for (i, m) in msgs.iter().enumerate() {
                    assert_eq!(m["params"]["n"], i as u64, "{d}");
                    assert_eq!(m["params"]["sessionId"], tag, "{d}");
                }
                let noise = entries
                    .iter()
                    .filter(|e| e["dir"] == d && e["raw"] == format!("noise {tag} \u{1F600}"))
                    .count();
                assert_eq!(noise, 8, "{d}");
            }
        }
    }
}

// ---- probe: random split points, floods, a 64 MB line -----------------------

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

/// The part of a probe report that does not depend on timing or on the
/// agent's command line: everything but `command`, `sessionId` and each
/// prompt's `millis` and traffic counts.
fn comparable(report: &Value) -> Value {
    let mut r = report.clone();
    let m = r.as_object_mut().unwrap();
    m.shift_remove("command");
    m.shift_remove("sessionId");
    for p in m["prompts"].as_array_mut().unwrap() {
        let p = p.as_object_mut().unwrap();
        p.shift_remove("millis");
        // Background work finishes between prompts, so which turn's
        // traffic counts its updates depends on timing.
        p.shift_remove("updates");
        p.shift_remove("extensionNotifications");
    }
    // On a link that delivers the prompt's response late, a steer sent
    // after the turn ended at the agent looks sent mid-turn and answered
    // after it: the warning depends on timing, not on the bytes.
    if let Some(findings) = m.get_mut("findings").and_then(Value::as_array_mut) {
        findings.retain(|f| f["rule"] != "steer-answered-after-turn");
    }
    // The probe steers a turn still running 100 ms in: on a slower link
    // more turns are, so which turns it steered depends on timing too.
    if let Some(queries) = m.get_mut("queries").and_then(Value::as_array_mut) {
        queries.retain(|q| {
            !q["method"]
                .as_str()
                .unwrap_or("")
                .ends_with("session/steer")
        });
    }
    r
}

/// The demo's script (every scripted behaviour of `serve`), its plain
/// prompt replaced by multi-byte text that `serve` echoes.
fn probe_script() -> Vec<String> {
    let mut args = Vec::new();
    let text = format!("Summarize {}", "é€😀".repeat(60));
    for p in acp_ext::demo::SCRIPT {
        let p = if p.starts_with('/') { p } else { text.as_str() };
        args.push("--prompt".to_string());
        args.push(p.to_string());
    }
    args
}

/// A `sh` fragment that copies its input to its output in pieces of at
/// most the given sizes (each `dd` is one read and one write, so every
/// piece is a separate write on the pipe, and a piece never waits for
/// bytes that are not there yet), pausing now and then, then copies the
/// rest as it comes.
fn splitter(sizes: &[usize]) -> String {
    let mut s = String::from("{ for n in");
    for n in sizes {
        s.push_str(&format!(" {n}"));
    }
    s.push_str("; do dd bs=$n count=1 2>/dev/null; i=$((i+1)); [ $((i%8)) = 0 ] && sleep 0.001; done; exec cat; }");
    s
}

/// Pseudo-random piece sizes, 1 to `max` bytes, adding up to `total`.
fn sizes(total: usize, max: u64, mut seed: u64) -> Vec<usize> {
    let mut out = Vec::new();
    let mut sum = 0;
    while sum < total {
        let n = 1 + (xorshift(&mut seed) % max) as usize;
        out.push(n);
        sum += n;
    }
    out
}

#[test]
fn probe_sees_the_same_agent_through_random_split_points() {
    let dir = scratch("probe-splits");
    let script = probe_script();
    let args = strs(&script);
    // Plain session ids: both runs must give the same report.
    let serve = [
        EXE.to_string(),
        "serve".into(),
        "--session-ids".into(),
        "counter".into(),
    ];
    let (plain_status, plain, _) = probe_measured(&args, &serve);
    assert!(plain_status.success(), "{plain_status:?}: {plain:#}");
    // The agent: `serve` between two splitters, so that every write in
    // both directions arrives in pieces of 1 to 24 (in) or 64 (out) bytes,
    // cut at random points: inside the multi-byte characters `serve`
    // echoes, inside JSON tokens, between a line and its `\n`. The
    // splitters cover about what a plain run sends (4 kB in, 48 kB out);
    // anything beyond goes through whole.
    let agent_sh = format!(
        "i=0; {} | {} serve --session-ids counter | {{ i=0; {}; }}",
        splitter(&sizes(4_000, 24, 0x2545_F491_4F6C_DD1D)),
        quote(EXE),
        splitter(&sizes(50_000, 64, 0x9E37_79B9_7F4A_7C15)),
    );
    let script_file = dir.join("agent.sh");
    std::fs::write(&script_file, agent_sh).unwrap();
    let pidfile = dir.join("pid");
    let (status, split, _) = probe_measured(
        &args,
        &agent(&pidfile, &format!(". '{}'", script_file.display())),
    );
    assert!(status.success(), "{status:?}: {split:#}");
    assert_eq!(comparable(&split), comparable(&plain));
    assert_eq!(comparable(&split)["findings"], Value::Array(vec![]));
    assert_eq!(
        split["prompts"].as_array().unwrap().len(),
        acp_ext::demo::SCRIPT.len()
    );
    assert_group_gone(read_pid(&pidfile), "split serve behind probe");
}

/// The findings of a probe report that are the probe's own failures
/// (a timeout, a failed request, a broken connection).
fn probe_failures(report: &Value) -> Vec<&Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"].as_str().is_some_and(|r| r.starts_with("probe")))
        .collect()
}

/// The exit code `acp-ext probe` documents: 1 when a finding is an error.
fn probe_exit_code(report: &Value) -> i32 {
    let errors = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["severity"] == "error");
    i32::from(errors)
}

/// Probes `serve` (one prompt) behind an agent that first writes the file
/// `before` (its pid file goes beside it), asserting that the probe got
/// through to `serve`. Returns the report, the probe's peak resident
/// memory and the agent's pid.
fn probe_serve_after(before: &Path) -> (Value, u64, i32) {
    let pidfile = before.with_file_name("pid");
    let script = format!("cat '{}'; exec {} serve", before.display(), quote(EXE));
    let (status, report, peak) = probe_measured(&["--prompt", "hello"], &agent(&pidfile, &script));
    assert_eq!(report["agentInfo"]["name"], "acp-ext-serve");
    assert_eq!(report["prompts"][0]["stopReason"], "end_turn");
    assert_eq!(probe_failures(&report), Vec::<&Value>::new());
    assert_eq!(status.code(), Some(probe_exit_code(&report)), "{report:#}");
    (report, peak, read_pid(&pidfile))
}

#[test]
fn probe_gets_through_an_agent_flooding_notifications_before_it_answers() {
    // The agent writes 8 MiB of `session/update` chunks for a session
    // nobody opened (whole lines, far more than a pipe holds) before it
    // even reads `initialize`, then answers normally.
    const SIZE: usize = 8 << 20;
    let dir = scratch("probe-flood");
    let file = dir.join("flood.jsonl");
    let mut flood = flood_bytes(SIZE);
    let end = flood.iter().rposition(|&b| b == b'\n').unwrap();
    flood.truncate(end + 1);
    std::fs::write(&file, &flood).unwrap();
    drop(flood);
    let (_, peak, pid) = probe_serve_after(&file);
    eprintln!(
        "probe under a {} MiB flood: peak RSS {} MiB",
        SIZE >> 20,
        peak >> 20
    );
    assert_group_gone(pid, "flooding agent behind probe");
    // Generous: the SDK's transport parses lines ahead of its dispatcher
    // into an unbounded queue, so the peak grows with the flood (about
    // 8 bytes per byte of flood on top of 25 MiB, debug build).
    assert!(
        peak < 256 << 20,
        "peak RSS {} MiB for a {} MiB flood",
        peak >> 20,
        SIZE >> 20
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn probe_reads_a_64_mb_line_and_reports_briefly() {
    // One `session/update` line of 64 MiB (multi-byte text), then a
    // normal agent.
    const SIZE: usize = 64 << 20;
    let dir = scratch("probe-long-line");
    let file = dir.join("line.json");
    let head = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""#;
    let tail = "\"}}}}\n";
    let mut line = Vec::with_capacity(SIZE);
    line.extend_from_slice(head.as_bytes());
    while line.len() + 10 + tail.len() <= SIZE {
        line.extend_from_slice("añ€😀".as_bytes());
    }
    line.resize(SIZE - tail.len(), b'x');
    line.extend_from_slice(tail.as_bytes());
    std::fs::write(&file, &line).unwrap();
    drop(line);
    let (report, peak, pid) = probe_serve_after(&file);
    eprintln!("probe reading a 64 MiB line: peak RSS {} MiB", peak >> 20);
    // Whatever it says about the line, it does not repeat it.
    assert!(
        report.to_string().len() < 64 << 10,
        "a report of {} bytes",
        report.to_string().len()
    );
    assert_group_gone(pid, "agent with a long line behind probe");
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- tap: a client flooding a slow agent, a client leaving mid-line ---------

#[test]
fn a_client_flooding_a_slow_agent_loses_nothing_either_way() {
    // 8 MiB of client messages (multi-byte text, CRLF now and then) to an
    // agent that reads 64 kB at a time (one `dd` block), pausing after
    // each, saves them and echoes them back, then exits 7.
    let dir = scratch("slow-agent");
    let record = dir.join("r.jsonl");
    let block = stream("client", 200);
    let sent = block.repeat((8 << 20) / block.len() + 1);
    let got = dir.join("got");
    let chunk = dir.join("chunk");
    let script = format!(
        "while :; do dd bs=65536 count=1 iflag=fullblock of='{c}' 2>/dev/null; [ -s '{c}' ] || break; \
         cat '{c}' >> '{g}'; cat '{c}'; sleep 0.002; done; exit 7",
        c = chunk.display(),
        g = got.display()
    );
    for mode in [
        vec![],
        vec!["--record".to_string(), record.display().to_string()],
    ] {
        let pidfile = dir.join("pid");
        let _ = std::fs::remove_file(&pidfile);
        let _ = std::fs::remove_file(&got);
        let mut tap = spawn_tap(&strs(&mode), &agent(&pidfile, &script));
        let out = read_all(tap.stdout.take().unwrap());
        // The tap reports its findings on stderr (the client messages
        // echoed back go the wrong way): drained, or the tap would block.
        let err = read_all(tap.stderr.take().unwrap());
        let mut stdin = tap.stdin.take().unwrap();
        let writer = {
            let sent = sent.clone();
            thread::spawn(move || {
                stdin.write_all(&sent).unwrap();
            })
        };
        let pid = read_pid(&pidfile);
        let (status, peak) = wait_measured(&mut tap, &format!("{mode:?}: tap"));
        writer.join().unwrap();
        let echoed = recv(&out, "client output");
        recv(&err, "tap stderr");
        eprintln!("{mode:?}: peak RSS of the tap {} MiB", peak >> 20);
        assert_eq!(status.code(), Some(7), "{mode:?}");
        assert!(echoed == sent, "{mode:?}: agent → client changed or lost");
        assert!(
            std::fs::read(&got).unwrap() == sent,
            "{mode:?}: client → agent changed or lost"
        );
        assert_gone(pid, "slow agent");
        // The tap holds back nothing on its own: the agent's pace is the
        // client's. Recording keeps lines until written (budget 256 MiB).
        let bound = if mode.is_empty() { 80 << 20 } else { 320 << 20 };
        assert!(peak < bound, "{mode:?}: peak RSS {} MiB", peak >> 20);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_client_leaving_in_the_middle_of_a_long_line_ends_the_agent_and_the_tap() {
    // The agent writes one line that never ends. The client reads 1 MiB of
    // it and closes its end. The agent dies of SIGPIPE (exit 141) or, when
    // it ignores SIGPIPE, fails its write and exits with its own code.
    let prefix = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","text":""#;
    let dir = scratch("leave-mid-line");
    let record = dir.join("r.jsonl");
    for (trap, code) in [("", 128 + 13), ("trap '' PIPE; ", 1)] {
        for mode in modes(&record) {
            let pidfile = dir.join("pid");
            let _ = std::fs::remove_file(&pidfile);
            let script = format!(
                "{trap}printf '%s' {}; exec tr '\\0' x < /dev/zero",
                quote(prefix)
            );
            let mut tap = spawn_tap(&strs(&mode), &agent(&pidfile, &script));
            let pid = read_pid(&pidfile);
            let mut stdout = tap.stdout.take().unwrap();
            let mut got = vec![0u8; 1 << 20];
            stdout.read_exact(&mut got).unwrap();
            assert!(got[..prefix.len()] == *prefix.as_bytes(), "{mode:?}");
            assert!(got[prefix.len()..].iter().all(|&b| b == b'x'), "{mode:?}");
            drop(stdout);
            let status = wait(&mut tap, "tap");
            assert_eq!(status.code(), Some(code), "{trap}{mode:?}");
            assert_gone(pid, "agent of a client that left mid-line");
            drop(tap.stdin.take());
        }
    }
}
