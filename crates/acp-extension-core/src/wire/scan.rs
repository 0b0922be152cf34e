//! Byte searches of the hand-written JSON walks (the connection follower's
//! facts walk, the state's plain tool-call walk), a word of eight bytes at
//! a time.

/// Bytes searched a word at a time before [`memchr::memchr2`] takes over:
/// most keys and ids are shorter, and its setup costs more than their
/// search.
const SHORT: usize = 32;

const ONES: u64 = u64::MAX / 255;
const HIGHS: u64 = ONES << 7;

/// The eight bytes from `i`, as one word (the first the lowest).
fn word(bytes: &[u8], i: usize) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(&bytes[i..i + 8]);
    u64::from_le_bytes(word)
}

/// The high bit of each byte of `w` equal to `"` or `\`. A byte equal to
/// the one sought becomes zero, and a zero byte sets its high bit in
/// `x - ONES`; bytes of 0x80 and above are excluded by `!w`. A borrow may
/// mark a later byte too, never an earlier one, so the lowest mark is
/// exact.
fn marks(w: u64) -> u64 {
    let quote = (w ^ (ONES * u64::from(b'"'))).wrapping_sub(ONES);
    let backslash = (w ^ (ONES * u64::from(b'\\'))).wrapping_sub(ONES);
    (quote | backslash) & !w & HIGHS
}

/// The place of the lowest mark of the word at `i`.
fn first(i: usize, marks: u64) -> usize {
    i + (marks.trailing_zeros() / 8) as usize
}

/// The index of the first `"` or `\` in `bytes`, as
/// `memchr::memchr2(b'"', b'\\', bytes)` gives it.
#[inline]
pub(crate) fn quote_or_backslash(bytes: &[u8]) -> Option<usize> {
    let short = bytes.len().min(SHORT);
    let mut i = 0;
    while i + 8 <= short {
        let found = marks(word(bytes, i));
        if found != 0 {
            return Some(first(i, found));
        }
        i += 8;
    }
    if bytes.len() <= SHORT {
        return bytes[i..]
            .iter()
            .position(|&b| b == b'"' || b == b'\\')
            .map(|j| i + j);
    }
    memchr::memchr2(b'"', b'\\', &bytes[i..]).map(|j| i + j)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_memchr2_finds() {
        // Every byte value at every place of a haystack longer than the
        // word-at-a-time part.
        for b in 0..=255u8 {
            for place in 0..SHORT + 9 {
                let mut bytes = [b'x'; SHORT + 9];
                bytes[place] = b;
                for len in [place + 1, SHORT + 9] {
                    let hay = &bytes[..len];
                    assert_eq!(
                        quote_or_backslash(hay),
                        memchr::memchr2(b'"', b'\\', hay),
                        "{b:#x} at {place} of {len}"
                    );
                }
            }
        }
        // Pseudo-random haystacks of every length up to three words past
        // the short part, with bytes near the two searched (a borrow from
        // one byte must not hide or invent a match in the next).
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let near = [
            b'"',
            b'\\',
            b'"' ^ 0x80,
            b'\\' ^ 0x80,
            b'!',
            b'#',
            b'[',
            b']',
            0,
            0xff,
        ];
        for len in 0..SHORT + 24 {
            for _ in 0..300 {
                let hay: Vec<u8> = (0..len)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        if seed.is_multiple_of(6) {
                            near[(seed >> 8) as usize % near.len()]
                        } else {
                            b'a' + (seed >> 16) as u8 % 26
                        }
                    })
                    .collect();
                assert_eq!(
                    quote_or_backslash(&hay),
                    memchr::memchr2(b'"', b'\\', &hay),
                    "{hay:?}"
                );
            }
        }
    }
}
