//! the client goes away early

use super::*;

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

#[test]
fn what_an_agent_leaves_in_its_group_ends_with_it() {
    let dir = scratch("stragglers");
    let pidfile = dir.join("pid");
    let polite = dir.join("polite");
    let stubborn = dir.join("stubborn");
    // An agent that starts two children and exits when its input ends: one
    // ends on SIGTERM, one ignores it (as `nohup` would).
    let script = format!(
        "sleep 600 >/dev/null & echo $! > {p}; \
         (trap '' TERM; exec sleep 600) >/dev/null & echo $! > {s}; \
         exec cat",
        p = quote(&polite.display().to_string()),
        s = quote(&stubborn.display().to_string()),
    );
    let mut tap = spawn_tap(&[], &agent(&pidfile, &script));
    read_pid(&pidfile);
    let (polite, stubborn) = (read_pid(&polite), read_pid(&stubborn));
    drop(tap.stdin.take());
    let status = wait(&mut tap, "tap");
    assert_eq!(status.code(), Some(0));
    // Ended by the time the tap exits: gone, or a zombie its new parent
    // has not reaped yet.
    for (pid, what) in [(polite, "polite"), (stubborn, "stubborn")] {
        let s = state(pid);
        assert!(
            s.is_none() || s == Some('Z'),
            "the {what} child outlived the tap (state {s:?})"
        );
    }
}
