//! Helpers shared by the integration tests.
// Each test binary uses only some of them.
#![allow(dead_code)]

pub mod procfs;
pub mod pty;

use std::ffi::OsStr;
use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

/// The `acp-ext` binary under test.
pub const EXE: &str = env!("CARGO_BIN_EXE_acp-ext");

/// A path inside `shared/` beside the checkout (the vectors and corpus),
/// found by walking up from the crate directory. Panics when missing: a
/// test that cannot find its data must fail, not pass silently.
pub fn shared(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|a| a.join("shared"))
        .find(|p| p.join("vectors").is_dir())
        .unwrap_or_else(|| {
            panic!(
                "no shared/ folder with vectors/ above {}",
                env!("CARGO_MANIFEST_DIR")
            )
        })
        .join(rel)
}

/// Every `.json` and `.jsonl` file of the recorded corpus, sorted.
pub fn corpus_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![shared("corpus")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "json" || x == "jsonl") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

/// What an `acp-ext` process with this id left in the system's temporary
/// directory (entries named `acp-ext-…-PID-…`).
pub fn temp_entries_of(pid: u32) -> Vec<PathBuf> {
    let mark = format!("-{pid}-");
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("acp-ext-") && name.contains(&mark)
        })
        .map(|e| e.path())
        .collect()
}

/// A fresh scratch directory for one test, named after the test binary.
/// Removed when dropped, unless the test is failing: then it stays for
/// inspection and its path is printed.
pub fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!(
        "acp-ext-{}-{}-{name}",
        env!("CARGO_CRATE_NAME"),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

/// A scratch directory; see [`scratch`].
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<OsStr> for Scratch {
    fn as_ref(&self) -> &OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept scratch directory {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Records `probe` driving `serve` through `tap --record` with `prompts`.
pub fn record(dir: &Path, format: &str, prompts: &[&str]) -> PathBuf {
    let path = dir.join(format!("record-{format}"));
    let mut cmd = Command::new(EXE);
    cmd.args(["probe", "--quiet"]);
    for p in prompts {
        cmd.args(["--prompt", p]);
    }
    let out = cmd
        .args(["--", EXE, "tap", "--record"])
        .arg(&path)
        .args(["--format", format, "--", EXE, "serve"])
        .output()
        .unwrap();
    // `/fail` fails its prompt on purpose: the probe reports it (exit 1).
    let expected = if prompts.contains(&"/fail") { 1 } else { 0 };
    assert_eq!(
        out.status.code(),
        Some(expected),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    path
}

/// Starts `acp-ext tap TAP_ARGS -- AGENT` with all three streams piped.
pub fn spawn_tap(tap_args: &[&str], agent: &[impl AsRef<OsStr>]) -> Child {
    Command::new(EXE)
        .arg("tap")
        .args(tap_args)
        .arg("--")
        .args(agent)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run acp-ext tap")
}

/// Sends `signal` (a name such as `TERM`) to process `pid` with kill(1).
pub fn send_signal(signal: &str, pid: impl Display) {
    let sent = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(sent.success(), "kill -{signal} {pid}");
}

/// Every line of a JSONL file, parsed.
pub fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The next number of a xorshift64 sequence: deterministic pseudo-random
/// split points and pauses.
pub fn xorshift(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

/// The text of each chunk in [`large_transcript`].
pub const LARGE_CHUNK_TEXT: &str = "the agent reads the file and patches the tests ";

/// Writes `large.jsonl` in `dir`: a run's snapshot, then text chunks of
/// [`LARGE_CHUNK_TEXT`] up to 9 MiB (past the size from which a progress
/// bar is drawn). Returns its path and the number of chunks.
pub fn large_transcript(dir: &Path) -> (PathBuf, usize) {
    let snapshot = r#"{"jsonrpc":"2.0","method":"_lody/subagents/event","params":{"version":1,"sessionId":"s","runId":"r","type":"snapshot","snapshot":{"state":"running","support":{"stream":["text"],"progress":false,"outputRead":"none","cancel":false}}}}"#;
    let chunk = format!(
        r#"{{"jsonrpc":"2.0","method":"_lody/subagents/event","params":{{"version":1,"sessionId":"s","runId":"r","type":"output","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{LARGE_CHUNK_TEXT}"}}}}}}}}"#
    );
    let chunks = (9 << 20) / chunk.len() + 1;
    let path = dir.join("large.jsonl");
    std::fs::write(
        &path,
        format!("{snapshot}\n{}", format!("{chunk}\n").repeat(chunks)),
    )
    .unwrap();
    (path, chunks)
}
