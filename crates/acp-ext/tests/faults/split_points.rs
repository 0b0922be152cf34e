//! random split points, both directions at once

use super::*;

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
        // Its findings (each line names no update) go to stderr: read
        // them, as a client that pipes stderr must, or the tap waits on a
        // full pipe.
        let _findings = read_all(tap.stderr.take().unwrap());
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
