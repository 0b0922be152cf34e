//! agent killed mid-message

use super::*;

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
