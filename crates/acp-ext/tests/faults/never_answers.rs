//! agent that never answers

use super::*;

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
    // Besides the wrapper (and a guard leading the group): its child, once
    // it runs `sleep`. Between its fork and its exec, the child still has
    // the shell's handler for SIGINT (`sh -c` catches it), and a signal
    // caught there can be lost with the exec: then `sleep` never sees it
    // and the tap waits (seen once under load, as `tap: hung`).
    let sleeping = |p: i32| {
        std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "sleep")
    };
    while !group(pgid)
        .iter()
        .any(|&p| p != pid && p != pgid && sleeping(p))
    {
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
    // Nor anything in the temporary directory.
    let left = common::temp_entries_of(child.id());
    assert!(left.is_empty(), "the stopped probe left {left:?}");
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
