//! Printing findings: one JSON object per line for machines, a report
//! grouped by rule for people, and a progress bar on stderr.
//!
//! ```
//! use acp_ext::check::report::{HumanReport, Located, write_json};
//! use acp_ext::check::{rules, Finding};
//! use acp_ext::output::Style;
//!
//! let found = Located::new("t.jsonl", 3, Finding::of(&rules::EPOCH_ZERO, "/params/x", "zero"));
//! let mut json = Vec::new();
//! write_json(&mut json, &found)?;
//! assert_eq!(
//!     String::from_utf8(json).unwrap(),
//!     "{\"file\":\"t.jsonl\",\"line\":3,\"rule\":\"epoch-zero\",\"severity\":\"warning\",\"path\":\"/params/x\",\"message\":\"zero\"}\n"
//! );
//!
//! let mut report = HumanReport::new();
//! report.add(found);
//! let mut text = Vec::new();
//! report.write(&mut text, Style::plain())?;
//! assert!(String::from_utf8(text).unwrap().contains("t.jsonl:3  /params/x  zero"));
//! # Ok::<_, std::io::Error>(())
//! ```

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::Serialize;

use super::{Finding, Severity};
use crate::output::Style;

/// A finding with the file and line it came from.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Located {
    /// The file as named on the command line (`-` for stdin).
    pub file: String,
    /// 1-based line of the value the finding is in.
    pub line: u64,
    /// The finding; its path is relative to the value at `line`.
    pub finding: Finding,
}

impl Located {
    /// A finding at `file:line`.
    pub fn new(file: impl Into<String>, line: u64, finding: Finding) -> Self {
        Self {
            file: file.into(),
            line,
            finding,
        }
    }
}

#[derive(Serialize)]
struct JsonLine<'a> {
    file: &'a str,
    line: u64,
    rule: &'a str,
    severity: Severity,
    path: &'a str,
    message: &'a str,
}

/// Writes one `--json` line:
/// `{"file","line","rule","severity","path","message"}`.
pub fn write_json(out: &mut (impl Write + ?Sized), f: &Located) -> io::Result<()> {
    let line = JsonLine {
        file: &f.file,
        line: f.line,
        rule: f.finding.rule,
        severity: f.finding.severity,
        path: &f.finding.path,
        message: &f.finding.message,
    };
    serde_json::to_writer(&mut *out, &line)?;
    out.write_all(b"\n")
}

/// How many findings of each severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Counts {
    /// Errors.
    pub error: u64,
    /// Warnings.
    pub warning: u64,
    /// Infos.
    pub info: u64,
}

impl Counts {
    /// Counts one finding of `severity`.
    pub fn add(&mut self, severity: Severity) {
        match severity {
            Severity::Error => self.error += 1,
            Severity::Warning => self.warning += 1,
            Severity::Info => self.info += 1,
        }
    }

    /// The count of `severity`.
    pub fn get(&self, severity: Severity) -> u64 {
        match severity {
            Severity::Error => self.error,
            Severity::Warning => self.warning,
            Severity::Info => self.info,
        }
    }

    /// `2 errors, 1 warning, 0 infos`.
    pub fn describe(&self) -> String {
        let plural = |n: u64, word: &str| {
            if n == 1 {
                format!("{n} {word}")
            } else {
                format!("{n} {word}s")
            }
        };
        format!(
            "{}, {}, {}",
            plural(self.error, "error"),
            plural(self.warning, "warning"),
            plural(self.info, "info")
        )
    }
}

#[derive(Debug)]
struct Group {
    count: u64,
    shown: Vec<Located>,
}

/// Findings grouped by rule (errors first), keeping at most a fixed number
/// of examples per rule so that memory stays bounded.
#[derive(Debug)]
pub struct HumanReport {
    groups: BTreeMap<(Reverse<Severity>, &'static str), Group>,
    per_rule: usize,
    counts: Counts,
}

impl Default for HumanReport {
    fn default() -> Self {
        Self::new()
    }
}

impl HumanReport {
    /// An empty report showing up to 50 findings per rule.
    pub fn new() -> Self {
        Self::with_examples(50)
    }

    /// An empty report showing up to `per_rule` findings per rule.
    pub fn with_examples(per_rule: usize) -> Self {
        Self {
            groups: BTreeMap::new(),
            per_rule,
            counts: Counts::default(),
        }
    }

    /// Adds one finding.
    pub fn add(&mut self, f: Located) {
        self.counts.add(f.finding.severity);
        let g = self
            .groups
            .entry((Reverse(f.finding.severity), f.finding.rule))
            .or_insert(Group {
                count: 0,
                shown: Vec::new(),
            });
        g.count += 1;
        if g.shown.len() < self.per_rule {
            g.shown.push(f);
        }
    }

    /// The counts per severity so far.
    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// Writes every group: a header per rule, then `file:line  pointer  message`.
    pub fn write(&self, out: &mut (impl Write + ?Sized), style: Style) -> io::Result<()> {
        for ((Reverse(severity), rule), g) in &self.groups {
            let tag = crate::present::severity(*severity, style);
            writeln!(out, "{tag} {} ({})", style.bold(rule), g.count)?;
            for f in &g.shown {
                let path = crate::present::pointer(&f.finding.path);
                writeln!(
                    out,
                    "  {}  {}  {}",
                    style.dim(&format!("{}:{}", f.file, f.line)),
                    path,
                    f.finding.message
                )?;
            }
            if g.count > g.shown.len() as u64 {
                writeln!(
                    out,
                    "  {}",
                    style.dim(&format!("… and {} more", g.count - g.shown.len() as u64))
                )?;
            }
        }
        Ok(())
    }
}
