//! Streaming validation of many values: JSON Lines or values one after
//! another, validated on several threads, reported in input order.

use std::io::{self, Read};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

use super::{Kind, Report, Rule, Violation, validate_slice, validate_value};

/// Options of [`validate_stream`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamOptions {
    /// Worker threads (at least 1). Defaults to the available parallelism.
    pub threads: usize,
    /// Bytes read per block; each block's lines are validated in parallel.
    pub block_size: usize,
    /// Collect every violation of an invalid value (the default). Without
    /// details an invalid value's report holds one `invalid` violation at
    /// the root, which is much cheaper when only the counts matter.
    pub details: bool,
}

impl Default for StreamOptions {
    fn default() -> Self {
        Self {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            block_size: 4 << 20,
            details: true,
        }
    }
}

impl StreamOptions {
    /// Sets whether invalid values get every violation (see [`StreamOptions::details`]).
    #[must_use]
    pub fn details(mut self, details: bool) -> Self {
        self.details = details;
        self
    }

    /// Sets the number of worker threads.
    #[must_use]
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }
}

/// The verdict on one value of a stream.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StreamItem {
    /// Position of the value in the stream, counting from 1.
    pub index: u64,
    /// Line (from 1) where the value starts.
    pub line: u64,
    /// Its violations.
    pub report: Report,
}

/// Counts of a finished stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct StreamSummary {
    /// Values read.
    pub values: u64,
    /// Values with at least one violation.
    pub invalid: u64,
}

/// Validates every value read from `input` as `kind`, calling `on_item`
/// in input order.
///
/// Input is JSON Lines (one value per line; blank lines skipped) or, when
/// the first value spans several lines, JSON values one after another
/// (read whole). A line that is not JSON is one invalid item; reading goes on.
///
/// ```
/// use acp_extension_core::subagent_events::SubagentEvent;
/// use acp_extension_core::validate::{validate_stream, Kind, StreamOptions};
///
/// let input = b"{\"version\":1,\"sessionId\":\"s\",\"runId\":\"r\",\"type\":\"progress\",\"progress\":{}}\nnot json\n";
/// let mut invalid = Vec::new();
/// let summary = validate_stream(Kind::of::<SubagentEvent>(), &input[..], &StreamOptions::default(), |item| {
///     if !item.report.is_valid() { invalid.push(item.line); }
/// })?;
/// assert_eq!((summary.values, summary.invalid), (2, 1));
/// assert_eq!(invalid, vec![2]);
/// # Ok::<_, std::io::Error>(())
/// ```
pub fn validate_stream<R: Read>(
    kind: Kind,
    mut input: R,
    options: &StreamOptions,
    mut on_item: impl FnMut(StreamItem),
) -> io::Result<StreamSummary> {
    let mut summary = StreamSummary::default();
    let mut emit = |item: StreamItem| {
        summary.values += 1;
        if !item.report.is_valid() {
            summary.invalid += 1;
        }
        on_item(item);
    };

    let block = options.block_size.max(64 << 10);
    let mut buf: Vec<u8> = Vec::with_capacity(block * 2);
    let mut eof = fill(&mut input, &mut buf, block)?;
    if starts_multiline_value(&buf, eof) {
        while !eof {
            eof = fill(&mut input, &mut buf, block)?;
        }
        concatenated(kind, &buf, &mut emit);
        return Ok(summary);
    }

    // While the workers validate one block, this thread reads the next one
    // into `next` and reports the last one's items, in input order.
    let mut next: Vec<u8> = Vec::with_capacity(block * 2);
    let mut done: Vec<PartReports> = Vec::new();
    let (mut line_no, mut index) = (0u64, 0u64);
    let mut report = |done: Vec<PartReports>| {
        for (count, items) in done {
            for (local, reports) in items {
                for report in reports {
                    index += 1;
                    emit(StreamItem {
                        index,
                        line: line_no + local,
                        report,
                    });
                }
            }
            line_no += count;
        }
    };
    loop {
        let cut = if eof {
            buf.len()
        } else {
            match memchr::memrchr(b'\n', &buf) {
                Some(i) => i + 1,
                None => {
                    // A line longer than the buffer: read on until it ends.
                    eof = fill(&mut input, &mut buf, block)?;
                    continue;
                }
            }
        };
        // Many runs of whole lines per worker, taken in turn: a worker that
        // waited for the CPU takes fewer, and none waits long for the last.
        let parts = split_at_lines(&buf[..cut], options.threads * 16);
        let details = options.details;
        next.clear();
        next.extend_from_slice(&buf[cut..]);
        let last = std::mem::take(&mut done);
        let next_eof;
        (done, next_eof) = if options.threads <= 1 || parts.len() <= 1 {
            report(last);
            let done = parts
                .iter()
                .map(|p| validate_part(kind, p, details))
                .collect();
            (done, read_on(&mut input, &mut next, block, eof))
        } else {
            let taken = AtomicUsize::new(0);
            std::thread::scope(|s| {
                let work = || {
                    let mut mine = Vec::new();
                    loop {
                        let i = taken.fetch_add(1, Ordering::Relaxed);
                        let Some(p) = parts.get(i) else {
                            return mine;
                        };
                        mine.push((i, validate_part(kind, p, details)));
                    }
                };
                let workers: Vec<_> = (0..options.threads).map(|_| s.spawn(work)).collect();
                let next_eof = read_on(&mut input, &mut next, block, eof);
                report(last);
                let mut done: Vec<_> = workers
                    .into_iter()
                    .flat_map(|w| w.join().unwrap_or_default())
                    .collect();
                done.sort_unstable_by_key(|(i, _)| *i);
                (done.into_iter().map(|(_, r)| r).collect(), next_eof)
            })
        };
        if eof {
            break;
        }
        std::mem::swap(&mut buf, &mut next);
        eof = match next_eof {
            Ok(eof) => eof,
            Err(e) => {
                report(done);
                return Err(e);
            }
        };
    }
    report(done);
    Ok(summary)
}

/// Cuts `text` (whole lines) into up to `n` runs of whole lines of about
/// equal size.
fn split_at_lines(text: &[u8], n: usize) -> Vec<&[u8]> {
    if n <= 1 || text.len() < (64 << 10) {
        return vec![text];
    }
    let mut parts = Vec::with_capacity(n);
    let mut start = 0;
    for i in 1..n {
        let target = (text.len() * i / n).max(start);
        let Some(nl) = memchr::memchr(b'\n', &text[target..]) else {
            break;
        };
        let end = target + nl + 1;
        parts.push(&text[start..end]);
        start = end;
    }
    if start < text.len() {
        parts.push(&text[start..]);
    }
    parts
}

/// What [`validate_part`] found in one run of lines.
type PartReports = (u64, Vec<(u64, LineReports)>);

/// Validates one run of lines: the number of lines it holds and, for each
/// non-blank line, its line number within the run (from 1) and reports.
fn validate_part(kind: Kind, text: &[u8], details: bool) -> PartReports {
    let mut count = 0;
    let mut items = Vec::new();
    let mut start = 0;
    let last = (!text.is_empty() && text[text.len() - 1] != b'\n').then_some(text.len());
    for end in memchr::memchr_iter(b'\n', text).chain(last) {
        count += 1;
        let l = trim_cr(&text[start..end]);
        if !is_blank(l) {
            items.push((count, validate_line(kind, l, details)));
        }
        start = end + 1;
    }
    (count, items)
}

/// The reports of one line: almost always one value, without allocating.
enum LineReports {
    One(std::iter::Once<Report>),
    Many(std::vec::IntoIter<Report>),
}

impl Iterator for LineReports {
    type Item = Report;
    fn next(&mut self) -> Option<Report> {
        match self {
            LineReports::One(r) => r.next(),
            LineReports::Many(r) => r.next(),
        }
    }
}

fn validate_line(kind: Kind, bytes: &[u8], details: bool) -> LineReports {
    if !details {
        if super::is_valid_slice(kind, bytes) {
            return LineReports::One(std::iter::once(Report::default()));
        }
        let several = serde_json::from_slice::<serde::de::IgnoredAny>(bytes)
            .is_err_and(|e| e.to_string().starts_with("trailing characters"));
        if !several {
            let invalid = Violation::new(
                "",
                Rule::Relation {
                    id: "invalid",
                    message: "breaks the contract (details not collected)".into(),
                },
            );
            return LineReports::One(std::iter::once(Report::new(vec![invalid])));
        }
    }
    let report = validate_slice(kind, bytes);
    let trailing = matches!(report.violations.as_slice(),
        [Violation { rule: Rule::Syntax(msg), .. }] if msg.starts_with("trailing characters"));
    if !trailing {
        return LineReports::One(std::iter::once(report));
    }
    // Several values on one line: report each.
    let mut out = Vec::new();
    let mut values = serde_json::Deserializer::from_slice(bytes).into_iter::<Value>();
    for v in values.by_ref() {
        match v {
            Ok(v) => out.push(validate_value(kind, &v)),
            Err(e) => {
                out.push(Report::new(vec![Violation::new(
                    "",
                    Rule::Syntax(e.to_string()),
                )]));
                break;
            }
        }
    }
    LineReports::Many(out.into_iter())
}

fn concatenated(kind: Kind, buf: &[u8], emit: &mut impl FnMut(StreamItem)) {
    let mut values = serde_json::Deserializer::from_slice(buf).into_iter::<Value>();
    let mut index = 0;
    loop {
        let start = values.byte_offset();
        let line = line_at(buf, skip_ws(buf, start));
        match values.next() {
            None => break,
            Some(Ok(v)) => {
                index += 1;
                emit(StreamItem {
                    index,
                    line,
                    report: validate_value(kind, &v),
                });
            }
            Some(Err(e)) => {
                index += 1;
                emit(StreamItem {
                    index,
                    line: e.line() as u64,
                    report: Report::new(vec![Violation::new("", Rule::Syntax(e.to_string()))]),
                });
                break;
            }
        }
    }
}

/// Whether the first value of the input continues past its first line.
fn starts_multiline_value(buf: &[u8], eof: bool) -> bool {
    let start = skip_ws(buf, 0);
    let rest = &buf[start..];
    let first = match rest.iter().position(|&b| b == b'\n') {
        Some(i) => &rest[..i],
        None if eof => rest,
        None => return false,
    };
    match serde_json::from_slice::<serde::de::IgnoredAny>(trim_cr(first)) {
        Ok(_) => false,
        Err(e) => e.is_eof() && start + first.len() < buf.len(),
    }
}

/// [`fill`] unless the input already ended.
fn read_on<R: Read>(input: &mut R, buf: &mut Vec<u8>, block: usize, eof: bool) -> io::Result<bool> {
    if eof {
        Ok(true)
    } else {
        fill(input, buf, block)
    }
}

/// Appends up to `block` bytes; `true` at end of input. (`read_to_end`
/// through `take` appends without zeroing the buffer first.)
fn fill<R: Read>(input: &mut R, buf: &mut Vec<u8>, block: usize) -> io::Result<bool> {
    let n = input.by_ref().take(block as u64).read_to_end(buf)?;
    Ok(n < block)
}

fn trim_cr(l: &[u8]) -> &[u8] {
    l.strip_suffix(b"\r").unwrap_or(l)
}

fn is_blank(l: &[u8]) -> bool {
    l.iter().all(u8::is_ascii_whitespace)
}

fn skip_ws(buf: &[u8], from: usize) -> usize {
    from + buf[from.min(buf.len())..]
        .iter()
        .take_while(|b| b.is_ascii_whitespace())
        .count()
}

fn line_at(buf: &[u8], offset: usize) -> u64 {
    buf[..offset.min(buf.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count() as u64
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(input: &[u8], block: usize) -> Vec<(u64, u64, bool)> {
        run_with(input, 2, block, true)
    }

    /// Each item's index, line and verdict.
    fn run_with(
        input: &[u8],
        threads: usize,
        block_size: usize,
        details: bool,
    ) -> Vec<(u64, u64, bool)> {
        let options = StreamOptions {
            threads,
            block_size,
            details,
        };
        let mut items = Vec::new();
        validate_stream(
            Kind::of::<crate::usage::ModelUsage>(),
            input,
            &options,
            |i| items.push((i.index, i.line, i.report.is_valid())),
        )
        .unwrap();
        items
    }

    const OK: &str = r#"{"inputTokens":1,"outputTokens":2,"cacheReadInputTokens":3}"#;

    #[test]
    fn lines_blank_lines_and_garbage() {
        let input = format!("{OK}\n\n  \nnope\r\n{OK}");
        assert_eq!(
            run(input.as_bytes(), 1),
            vec![(1, 1, true), (2, 4, false), (3, 5, true)]
        );
    }

    #[test]
    fn values_one_after_another_on_many_lines() {
        let input = format!(
            "{{\n\"inputTokens\": 1, \"outputTokens\": 2,\n\"cacheReadInputTokens\": 3}}\n{OK} {{\"inputTokens\": -1}}"
        );
        assert_eq!(
            run(input.as_bytes(), 1),
            vec![(1, 1, true), (2, 4, true), (3, 4, false)]
        );
    }

    #[test]
    fn several_values_on_one_line() {
        let input = format!("{OK}{OK}\n{OK}");
        assert_eq!(
            run(input.as_bytes(), 1),
            vec![(1, 1, true), (2, 1, true), (3, 2, true)]
        );
    }

    #[test]
    fn many_lines_across_small_blocks_keep_order() {
        let mut input = String::new();
        for i in 0..3000 {
            input.push_str(if i % 7 == 0 { "{}" } else { OK });
            input.push('\n');
        }
        let items = run(input.as_bytes(), 1);
        assert_eq!(items.len(), 3000);
        for (i, (index, line, valid)) in items.into_iter().enumerate() {
            assert_eq!(
                (index, line, valid),
                (i as u64 + 1, i as u64 + 1, i % 7 != 0)
            );
        }
    }

    #[test]
    fn runs_taken_by_several_workers_are_reported_in_input_order() {
        // Blocks of 256 KiB cut into many runs each, for 2 and 3 workers.
        let mut input = String::new();
        for i in 0..40_000 {
            input.push_str(match i % 5 {
                0 => "{}",
                3 => "",
                _ => OK,
            });
            input.push('\n');
        }
        for threads in [2, 3] {
            let items = run_with(input.as_bytes(), threads, 256 << 10, true);
            let want: Vec<_> = (0..40_000u64)
                .filter(|i| i % 5 != 3)
                .enumerate()
                .map(|(n, i)| (n as u64 + 1, i + 1, i % 5 != 0))
                .collect();
            assert_eq!(items, want, "{threads} threads");
        }
    }

    #[test]
    fn a_read_error_comes_after_the_items_read_before_it() {
        // One block of whole lines and the start of another, then an error.
        struct Failing(Vec<u8>);
        impl Read for Failing {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                if self.0.is_empty() {
                    return Err(io::Error::other("disk gone"));
                }
                let n = out.len().min(self.0.len());
                out[..n].copy_from_slice(&self.0[..n]);
                self.0.drain(..n);
                Ok(n)
            }
        }
        let line = format!("{OK}\n");
        let mut bytes = line.repeat((64 << 10) / line.len() + 1).into_bytes();
        bytes.truncate(64 << 10);
        let whole = (64 << 10) / line.len();
        for threads in [1, 2] {
            let options = StreamOptions {
                threads,
                block_size: 64 << 10,
                details: false,
            };
            let mut items = 0;
            let result = validate_stream(
                Kind::of::<crate::usage::ModelUsage>(),
                Failing(bytes.clone()),
                &options,
                |_| items += 1,
            );
            assert_eq!(result.unwrap_err().to_string(), "disk gone");
            assert_eq!(items, whole, "{threads} threads");
        }
    }

    #[test]
    fn verdicts_without_details_agree_with_full_reports() {
        let input = format!("{OK}\n{{}}\n{OK}{OK}\nnope\n{OK} {{\"inputTokens\": -1}}\n");
        let run = |details| run_with(input.as_bytes(), 1, 1, details);
        assert_eq!(run(false), run(true));
        assert_eq!(run(false).len(), 7);
    }

    #[test]
    fn invalid_utf8_is_a_violation() {
        let items = run(b"\xff\xfe\n", 1);
        assert_eq!(items, vec![(1, 1, false)]);
    }
}
