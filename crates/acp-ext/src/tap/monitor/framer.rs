//! Framing: one direction's byte stream cut into runs of whole lines.

use super::*;

/// Splits one direction's byte stream into runs of whole lines.
#[derive(Default)]
pub(super) struct Framer {
    partial: Vec<u8>,
    /// Skipping to the next line feed (a broken or oversized line).
    discard: bool,
}

impl Framer {
    /// Feeds a chunk; returns its runs of whole lines, each line ending with
    /// its line feed: the line that completes an earlier partial one (a
    /// buffer of its own), then the range of the chunk's own whole lines.
    pub(super) fn push(
        &mut self,
        data: &[u8],
        gap: Option<Gap>,
        oversize: &AtomicU64,
    ) -> (Option<Vec<u8>>, Option<Range<usize>>) {
        match gap {
            None => {}
            Some(Gap::AtLineStart) => {
                self.partial.clear();
                self.discard = false;
            }
            Some(Gap::MidLine) => {
                self.partial.clear();
                self.discard = true;
            }
        }
        let (Some(first), Some(last)) = (memchr::memchr(b'\n', data), memchr::memrchr(b'\n', data))
        else {
            self.keep_partial(data, oversize);
            return (None, None);
        };
        let mut head = None;
        let body_start = if self.discard {
            self.discard = false;
            first + 1
        } else if self.partial.is_empty() {
            0
        } else {
            self.partial.extend_from_slice(&data[..=first]);
            head = Some(std::mem::take(&mut self.partial));
            first + 1
        };
        self.keep_partial(&data[last + 1..], oversize);
        (head, (body_start <= last).then_some(body_start..last + 1))
    }

    pub(super) fn keep_partial(&mut self, rest: &[u8], oversize: &AtomicU64) {
        if self.discard || rest.is_empty() {
            return;
        }
        if self.partial.len() + rest.len() > MAX_LINE {
            self.partial = Vec::new();
            self.discard = true;
            oversize.fetch_add(1, Relaxed);
        } else {
            self.partial.extend_from_slice(rest);
        }
    }

    /// The last line, if the stream did not end with a line feed.
    pub(super) fn finish(&mut self) -> Option<Vec<u8>> {
        let partial = std::mem::take(&mut self.partial);
        (!self.discard && !partial.is_empty()).then_some(partial)
    }
}

/// The lines of a run (a final line without line feed included), without
/// their line feeds.
pub(super) fn lines_of(run: &[u8]) -> impl Iterator<Item = &[u8]> {
    let run = run.strip_suffix(b"\n").unwrap_or(run);
    run.split(|&b| b == b'\n')
}

/// Lines in a run: its line feeds, plus one for a final line without.
pub(super) fn lines_in(run: &[u8]) -> u64 {
    count_lines(run) + u64::from(run.last().is_some_and(|&b| b != b'\n'))
}

/// Whether a line (without its line feed) is blank.
pub(super) fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}
