//! flood

use super::*;

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
