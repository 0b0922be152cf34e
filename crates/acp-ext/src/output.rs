//! Output for people (colour on a terminal, honouring `NO_COLOR`) and for
//! machines (`--json`).

use std::io::{self, IsTerminal, Write};

use acp_extension_core::validate::StreamItem;
use serde_json::json;

/// Whether to colour output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    colour: bool,
}

impl Style {
    /// Colour when stdout is a terminal and `NO_COLOR` is unset.
    pub fn stdout() -> Self {
        Self::detect(io::stdout().is_terminal())
    }

    /// Colour when stderr is a terminal and `NO_COLOR` is unset.
    pub fn stderr() -> Self {
        Self::detect(io::stderr().is_terminal())
    }

    fn detect(tty: bool) -> Self {
        Self {
            colour: tty && std::env::var_os("NO_COLOR").is_none(),
        }
    }

    /// No colour at all.
    pub fn plain() -> Self {
        Self { colour: false }
    }

    /// Whether colour is on.
    pub fn is_colour(self) -> bool {
        self.colour
    }

    fn paint(self, code: &str, s: &str) -> String {
        if self.colour {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_owned()
        }
    }

    /// Green.
    pub fn ok(self, s: &str) -> String {
        self.paint("32", s)
    }
    /// Red.
    pub fn bad(self, s: &str) -> String {
        self.paint("31", s)
    }
    /// Yellow.
    pub fn warn(self, s: &str) -> String {
        self.paint("33", s)
    }
    /// Dim.
    pub fn dim(self, s: &str) -> String {
        self.paint("2", s)
    }
    /// Bold.
    pub fn bold(self, s: &str) -> String {
        self.paint("1", s)
    }
    /// Cyan.
    pub fn accent(self, s: &str) -> String {
        self.paint("36", s)
    }
}

/// Standard output for a large document the caller buffers itself (in
/// pieces of a megabyte or so): on Unix a second handle on the same file,
/// which writes each piece as it is handed; elsewhere the standard handle.
/// The standard handle is line-buffered: it searches every piece for its
/// last newline, and a document of one line is scanned whole again
/// (37 MB for the follower's benchmark state). Anything the standard
/// handle holds is flushed first, so the two do not interleave.
pub fn bulk_stdout() -> Box<dyn Write> {
    let stdout = io::stdout();
    // Nothing written before stays behind the document.
    let _ = stdout.lock().flush();
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        if let Ok(fd) = stdout.as_fd().try_clone_to_owned() {
            return Box::new(std::fs::File::from(fd));
        }
    }
    Box::new(stdout)
}

/// Writes one `validate --json` line: `{"index":N,"valid":true}` or with `errors`.
pub fn write_item_json(out: &mut impl Write, item: &StreamItem) -> io::Result<()> {
    if item.report.is_valid() {
        writeln!(out, "{{\"index\":{},\"valid\":true}}", item.index)
    } else {
        let errors: Vec<_> = item
            .report
            .violations
            .iter()
            .map(|v| json!({"path": v.pointer, "rule": v.rule.id(), "message": v.message()}))
            .collect();
        let line =
            json!({"index": item.index, "line": item.line, "valid": false, "errors": errors});
        writeln!(out, "{line}")
    }
}

/// Writes the violations of one invalid value for people.
pub fn write_item_human(
    out: &mut impl Write,
    style: &Style,
    file: &str,
    item: &StreamItem,
) -> io::Result<()> {
    writeln!(
        out,
        "{} {}",
        style.bad(&format!("value #{}", item.index)),
        style.dim(&format!("({file}:{})", item.line))
    )?;
    for v in &item.report.violations {
        let at = if v.pointer.is_empty() {
            "(root)"
        } else {
            &v.pointer
        };
        writeln!(
            out,
            "  {}: {} {}",
            style.bold(at),
            v.message(),
            style.dim(&format!("[{}]", v.rule.id()))
        )?;
    }
    Ok(())
}
