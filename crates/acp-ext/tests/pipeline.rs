//! The tools together: `probe` drives `serve` through `tap --record`, and
//! `check` finds nothing wrong in either record format.

use std::process::Command;

const EXE: &str = env!("CARGO_BIN_EXE_acp-ext");

fn record(format: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!(
        "acp-ext-pipeline-{}-{format}.rec",
        std::process::id()
    ));
    let status = Command::new(EXE)
        .args([
            "probe",
            "--quiet",
            "--prompt",
            "hi",
            "--prompt",
            "/subagents 2",
            "--prompt",
            "/tool",
        ])
        .args(["--prompt", "/goal set ship", "--prompt", "/slow 0.3", "--"])
        .args([EXE, "tap", "--record"])
        .arg(&path)
        .args(["--format", format, "--", EXE, "serve"])
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stdout)
    );
    path
}

#[test]
fn transcripts_recorded_from_serve_check_clean_in_both_formats() {
    for format in ["jsonl", "conductor"] {
        let path = record(format);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.lines().count() > 50, "{format}: short record");
        assert!(
            text.contains("subagents/event"),
            "{format}: no subagent events recorded"
        );
        let out = Command::new(EXE)
            .args(["check", "--json"])
            .arg(&path)
            .output()
            .unwrap();
        let findings = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{format}: {findings}");
        assert!(findings.trim().is_empty(), "{format}: {findings}");
        if format == "jsonl" {
            // `validate` reads JSON-RPC messages, not records: it says so
            // for every line instead of calling them valid.
            let out = Command::new(EXE)
                .args(["validate", "--json"])
                .arg(&path)
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(1));
            let items: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            assert_eq!(items.len(), text.lines().count());
            for item in &items {
                assert_eq!(item["valid"], false, "{item}");
                assert!(item.to_string().contains("`tap --record` line"), "{item}");
            }
            let out = Command::new(EXE)
                .arg("validate")
                .arg(&path)
                .output()
                .unwrap();
            let summary = String::from_utf8_lossy(&out.stdout);
            let n = text.lines().count();
            assert!(
                summary.contains(&format!(
                    "0 valid, {n} invalid ({n} not a JSON-RPC message)"
                )),
                "{summary}"
            );
        }
        std::fs::remove_file(&path).unwrap();
    }
}
