//! The progress bar of `check`, `state` and `validate` on a terminal: drawn
//! while a large file is read and cleared before anything else is shown, and
//! kept off a terminal that `--json` lines stream to.

mod common;

use common::pty::Pty;
use common::{large_transcript, scratch};

/// Runs `acp-ext ARGS` in a pseudo-terminal (standard output and error
/// both on it) until the screen shows `result` and the process ends: every
/// byte it wrote, and the screen it left.
fn on_a_terminal(args: &[&str], result: &str) -> (String, String) {
    let mut pty = Pty::start(args, 120, 40);
    pty.wait_for(result);
    assert!(pty.wait_exit().success(), "{args:?}");
    (pty.raw(), pty.contents())
}

#[test]
fn a_large_file_shows_a_bar_that_is_gone_before_the_result() {
    let dir = scratch("progress-pty");
    let (big, chunks) = large_transcript(&dir);
    let big = big.display().to_string();
    let bar = format!("{big} [");
    for args in [
        &["state", big.as_str()][..],
        &["state", "--json", big.as_str()],
        &["check", big.as_str()],
        &["validate", "--quiet", big.as_str()],
    ] {
        let result = match args {
            ["state", "--json", ..] => "accounting",
            ["state", ..] => "runs",
            ["check", ..] => "0 errors",
            _ => "valid, 0 invalid",
        };
        let (raw, screen) = on_a_terminal(args, result);
        assert!(raw.contains(&bar), "{args:?} drew no bar: {raw:?}");
        assert!(raw.contains("/9.0 MiB"), "{args:?}: {raw:?}");
        // Cleared: the screen holds the result, not the bar.
        assert!(!screen.contains("MiB"), "{args:?} left the bar:\n{screen}");
    }
    // `--json` lines go to the same terminal while the file is read: no bar.
    // (`check` finds nothing to print in this file; `validate` ends with the
    // verdict of its last value.)
    let last = format!(r#""index":{}"#, chunks + 1);
    for (args, result) in [
        (&["check", "--json", big.as_str()][..], ""),
        (&["validate", "--json", big.as_str()], last.as_str()),
    ] {
        let (raw, _) = on_a_terminal(args, result);
        assert!(!raw.contains(&bar), "{args:?} drew a bar");
    }
}
