//! Output for people (colour on a terminal, honouring `NO_COLOR`) and for
//! machines (`--json`).

use std::io::{self, IsTerminal, Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

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

/// A progress bar for people while a large input is read: drawn where the
/// caller says (standard error on a terminal), redrawn at most ten times a
/// second, and cleared by [`Progress::finish`]. A bar that is not enabled,
/// or whose input is smaller than [`Progress::MIN_BYTES`], draws nothing.
///
/// ```
/// use acp_ext::output::Progress;
/// use std::io::Read;
///
/// let input = vec![b'x'; 9 << 20];
/// let mut progress = Progress::new("big.jsonl", input.len() as u64, true);
/// let mut reader = progress.count(&input[..]);
/// reader.read_exact(&mut [0; 1 << 20])?;
/// let mut err = Vec::new();
/// progress.update(&mut err);
/// progress.finish(&mut err);
/// let err = String::from_utf8(err).unwrap();
/// assert!(err.contains("big.jsonl ["), "{err}");
/// assert!(err.contains("1.0/9.0 MiB"), "{err}");
/// assert!(err.ends_with("\r\x1b[2K"), "{err}");
/// # Ok::<_, std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct Progress {
    label: String,
    total: u64,
    read: Arc<AtomicU64>,
    enabled: bool,
    last: Option<Instant>,
    drawn: bool,
}

impl Progress {
    /// Inputs at least this large get a bar.
    pub const MIN_BYTES: u64 = 8 << 20;

    /// A bar for reading `total` bytes of `label`, drawn only when
    /// `enabled` and `total` is at least [`Progress::MIN_BYTES`].
    pub fn new(label: impl Into<String>, total: u64, enabled: bool) -> Self {
        Self {
            label: label.into(),
            total,
            read: Arc::default(),
            enabled: enabled && total >= Self::MIN_BYTES,
            last: None,
            drawn: false,
        }
    }

    /// Whether a bar may be drawn: standard error is a terminal, and it
    /// does not share one with a command that writes to standard output
    /// while it reads (`streams`), whose lines the bar would break.
    pub fn allowed(streams: bool) -> bool {
        io::stderr().is_terminal() && !(streams && io::stdout().is_terminal())
    }

    /// `reader`, counting for the bar what is read from it (on any thread
    /// when `reader` can be sent to one).
    pub fn count<R: Read>(&self, reader: R) -> impl Read + use<R> {
        Counted {
            inner: reader,
            read: Arc::clone(&self.read),
        }
    }

    /// Redraws the bar on `to` for what was read so far, unless it was
    /// drawn less than a tenth of a second ago. A failed write is ignored:
    /// the bar is decoration.
    pub fn update(&mut self, to: &mut dyn Write) {
        if !self.enabled {
            return;
        }
        let now = Instant::now();
        if self
            .last
            .is_some_and(|t| now.duration_since(t) < Duration::from_millis(100))
        {
            return;
        }
        self.last = Some(now);
        let done = self.read.load(Ordering::Relaxed);
        let fraction = (done as f64 / self.total as f64).clamp(0.0, 1.0);
        const WIDTH: usize = 30;
        let filled = (fraction * WIDTH as f64) as usize;
        let bar: String = "#".repeat(filled) + &"-".repeat(WIDTH - filled);
        let mb = |b: u64| b as f64 / (1024.0 * 1024.0);
        let _ = write!(
            to,
            "\r\x1b[2K{} [{bar}] {:3.0}% {:.1}/{:.1} MiB",
            self.label,
            fraction * 100.0,
            mb(done),
            mb(self.total)
        );
        let _ = to.flush();
        self.drawn = true;
    }

    /// Clears the bar from `to`, when it was drawn.
    pub fn finish(&mut self, to: &mut dyn Write) {
        if self.drawn {
            let _ = write!(to, "\r\x1b[2K");
            let _ = to.flush();
            self.drawn = false;
        }
    }
}

/// A reader that adds what it reads to a [`Progress`]'s count.
struct Counted<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
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
