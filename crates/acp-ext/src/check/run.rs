//! `acp-ext check` as a library call: read files, run a [`Checker`] per
//! file, filter by severity, print, count.
//!
//! ```
//! use acp_ext::check::run::{check_reader, Options};
//! use acp_ext::check::input::Format;
//!
//! let transcript = r#"{"dir":"a2c","t":0.5,"raw":"Listening on stdio"}"#;
//! let mut rules = Vec::new();
//! check_reader(transcript.as_bytes(), Format::Auto, &Options::default(), |_line, f| rules.push(f.rule))?;
//! assert_eq!(rules, ["not-json"]);
//! # Ok::<_, std::io::Error>(())
//! ```

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::PathBuf;

use super::input::{self, Format, Item};
use super::report::{Counts, HumanReport, Located, write_json};
use super::{Checker, Direction, Finding, Severity};
use crate::output::{Progress, Style};
use acp_extension_core::connection::Reads;
use acp_extension_core::connection::sequence::SequenceLimits;

/// How `check` reads and prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// Input format (`auto` detects per file).
    pub format: Format,
    /// One JSON object per finding instead of the grouped report.
    pub json: bool,
    /// Findings below this severity are neither printed nor counted.
    pub min_severity: Severity,
    /// Colours of the grouped report.
    pub style: Style,
    /// Whether a progress bar may be drawn on stderr (large files only).
    pub progress: bool,
    /// State capacities of each file's checker.
    pub limits: SequenceLimits,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            format: Format::Auto,
            json: false,
            min_severity: Severity::Info,
            style: Style::plain(),
            progress: false,
            limits: SequenceLimits::default(),
        }
    }
}

impl Options {
    /// The defaults with colour and progress decided by the terminals.
    pub fn for_terminal() -> Self {
        Self {
            style: Style::stdout(),
            progress: Progress::allowed(false),
            ..Self::default()
        }
    }

    /// Sets the input format.
    pub fn format(mut self, format: Format) -> Self {
        self.format = format;
        self
    }

    /// Sets JSON output.
    pub fn json(mut self, json: bool) -> Self {
        self.json = json;
        self
    }

    /// Sets the lowest severity reported.
    pub fn min_severity(mut self, severity: Severity) -> Self {
        self.min_severity = severity;
        self
    }

    /// Sets whether a progress bar may be drawn ([`Progress::allowed`]).
    pub fn progress(mut self, progress: bool) -> Self {
        self.progress = progress;
        self
    }
}

/// The outcome of checking some files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Summary {
    /// Findings reported, per severity.
    pub counts: Counts,
    /// Files read.
    pub files: usize,
    /// Files that could not be read at all.
    pub unreadable: usize,
}

impl Summary {
    /// The process exit code: 2 when a file could not be read, else 1 when
    /// there are errors, else 0.
    pub fn exit_code(&self) -> u8 {
        if self.unreadable > 0 {
            2
        } else if self.counts.error > 0 {
            1
        } else {
            0
        }
    }
}

/// Checks one input with a fresh [`Checker`], calling `on` with the line
/// and finding of everything found (unfiltered). Pointers are relative to
/// the value that starts at that line.
pub fn check_reader<R: BufRead + Send>(
    reader: R,
    format: Format,
    options: &Options,
    on: impl FnMut(u64, Finding),
) -> io::Result<()> {
    check_ticking(reader, format, options, || {}, on, || {})
}

/// [`check_reader`], calling `tick` before each message.
fn check_ticking<R: BufRead + Send>(
    reader: R,
    format: Format,
    options: &Options,
    mut tick: impl FnMut(),
    mut on: impl FnMut(u64, Finding),
    settled: impl FnMut(),
) -> io::Result<()> {
    let mut checker = Checker::with_limits(options.limits);
    let reads = Reads::of(&[&checker]);
    // Lines are parsed on another thread while the rules run on this one;
    // the rules read only a typed event's facts, so it is sifted, not
    // built.
    let each = |item: &Item| match item {
        Item::Record(r) => {
            tick();
            for mut f in
                checker.message_with_method(r.direction, &r.message, r.request_method.as_deref())
            {
                f.path = r.source_path(&f.path);
                on(r.line, f);
            }
        }
        Item::Event { line, read } => {
            tick();
            for f in checker.follow_read(Direction::Unknown, read) {
                on(*line, f);
            }
        }
        Item::Problem { line, finding } => on(*line, finding.clone()),
    };
    input::read_parallel_batches(reader, format, reads, each, settled)
}

/// The `--json` output of [`check_files`]: the first write error is kept,
/// and nothing more is written after it.
struct JsonOut<W: Write> {
    out: io::BufWriter<W>,
    error: Option<io::Error>,
}

impl<W: Write> JsonOut<W> {
    fn write(&mut self, located: &Located) {
        if self.error.is_none()
            && let Err(e) = write_json(&mut self.out, located)
        {
            self.error = Some(e);
        }
    }

    fn flush(&mut self) {
        if self.error.is_none()
            && let Err(e) = self.out.flush()
        {
            self.error = Some(e);
        }
    }
}

/// Checks every file (`-` is stdin; no files reads stdin), writing findings
/// to `out`, and problems opening files and the progress bar
/// ([`Options::progress`]) to `err`.
pub fn check_files(
    paths: &[PathBuf],
    options: &Options,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<Summary> {
    let stdin = [PathBuf::from("-")];
    let paths = if paths.is_empty() { &stdin[..] } else { paths };
    let mut summary = Summary::default();
    let mut human = HumanReport::new();
    // `--json` lines are buffered, and flushed after each batch of input
    // lines: one write per batch, not per finding, yet a live stream's
    // findings are not held back.
    let json = RefCell::new(JsonOut {
        out: io::BufWriter::new(&mut *out),
        error: None,
    });
    for path in paths {
        let name = path.display().to_string();
        let (reader, size): (Box<dyn Read + Send>, u64) = if name == "-" {
            (Box::new(io::stdin()), 0)
        } else {
            match File::open(path) {
                Ok(f) => {
                    let size = f.metadata().map(|m| m.len()).unwrap_or(0);
                    (Box::new(f), size)
                }
                Err(e) => {
                    writeln!(err, "acp-ext check: cannot read {name}: {e}")?;
                    summary.unreadable += 1;
                    continue;
                }
            }
        };
        let mut progress = Progress::new(name.clone(), size, options.progress);
        let result = check_ticking(
            BufReader::with_capacity(1 << 16, progress.count(reader)),
            options.format,
            options,
            || progress.update(err),
            |line, finding| {
                if finding.severity < options.min_severity {
                    return;
                }
                summary.counts.add(finding.severity);
                let located = Located::new(name.clone(), line, finding);
                if options.json {
                    json.borrow_mut().write(&located);
                } else {
                    human.add(located);
                }
            },
            || json.borrow_mut().flush(),
        );
        progress.finish(err);
        match result {
            Ok(()) => summary.files += 1,
            Err(e) => {
                writeln!(err, "acp-ext check: cannot read {name}: {e}")?;
                summary.unreadable += 1;
            }
        }
    }
    let mut json = json.into_inner();
    json.flush();
    if let Some(e) = json.error {
        if e.kind() == io::ErrorKind::BrokenPipe {
            return Ok(summary);
        }
        return Err(e);
    }
    drop(json);
    if !options.json {
        let style = options.style;
        human.write(out, style)?;
        let mut line = format!(
            "{} in {} file{}",
            summary.counts.describe(),
            summary.files,
            if summary.files == 1 { "" } else { "s" }
        );
        if summary.unreadable > 0 {
            line.push_str(&format!(", {} unreadable", summary.unreadable));
        }
        let line = if summary.counts.error > 0 || summary.unreadable > 0 {
            style.bad(&line)
        } else if summary.counts.warning > 0 {
            style.warn(&line)
        } else {
            style.ok(&line)
        };
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(summary)
}
