//! tap: a client flooding a slow agent, a client leaving mid-line

use super::*;

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
