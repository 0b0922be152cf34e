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
