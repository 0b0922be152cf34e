//! The tap's framing property for the fuzz target `tap_framing`: it drives
//! the tap's forwarder through its internal hook ([`crate::tap::fuzzing`]),
//! so it lives here, behind the non-default `fuzzing` feature. The other
//! properties test public API only and live in the workspace's unpublished
//! test-support crate (`crates/acp-ext-test-support`).
//!
//! Not a stable API: only the fuzz crate and the tests use it.

use serde_json::Value;

/// `tap_framing`: byte 0 (mod 16) is the number of chunk sizes that
/// follow (each byte + 1), byte 1 where the payload is cut into the two
/// directions (in 255ths), byte 2 the most bytes one write takes (0: no
/// limit) and, odd, whether reads are interrupted; the rest is the payload.
///
/// Each output holds exactly the bytes of its input; the lines framed
/// (numbered per direction, blank ones counted but not validated, a
/// trailing carriage return ignored) are exactly the input split on line
/// feeds; the record has one JSON entry per non-blank line, in order per
/// direction, holding the message (`msg`) exactly when the validator was
/// given one.
pub fn tap_framing(data: &[u8]) {
    let [count, cut, write, rest @ ..] = data else {
        return;
    };
    let count = usize::from(*count % 16).min(rest.len());
    let (sizes, payload) = rest.split_at(count);
    let sizes: Vec<usize> = sizes.iter().map(|&b| usize::from(b) + 1).collect();
    let cut = payload.len() * usize::from(*cut) / 255;
    let inputs = [&payload[..cut], &payload[cut..]];
    let write_max = match write >> 1 {
        0 => usize::MAX,
        n => usize::from(n),
    };
    let observed = crate::tap::fuzzing::run(inputs, &sizes, write_max, write & 1 == 1);

    let mut non_blank = Vec::new();
    for (slot, input) in inputs.into_iter().enumerate() {
        assert_eq!(observed.forwarded[slot], input, "the tap altered bytes");
        assert_eq!(observed.forwarded_count[slot], input.len() as u64);
        let body = input.strip_suffix(b"\n").unwrap_or(input);
        let mut expected = Vec::new();
        let mut lines = 0;
        if !input.is_empty() {
            for (i, line) in body.split(|&b| b == b'\n').enumerate() {
                lines += 1;
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let message = serde_json::from_slice::<Value>(line).ok();
                expected.push((i as u64 + 1, message));
            }
        }
        assert_eq!(observed.lines[slot], lines, "lines framed");
        assert_eq!(observed.validated[slot], expected, "lines validated");
        non_blank.push(
            expected
                .iter()
                .map(|(_, m)| m.is_some())
                .collect::<Vec<_>>(),
        );
    }
    assert_eq!(observed.lost, 0, "nothing is lost within the budgets");
    let record: Vec<&[u8]> = observed
        .record
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    // Per direction, in order (a direction's unterminated last line is
    // recorded when the connection ends, after the other's lines).
    let mut recorded = [Vec::new(), Vec::new()];
    for entry in record {
        let entry: Value = serde_json::from_slice(entry).expect("record entries are JSON");
        let slot = match entry["dir"].as_str() {
            Some("c2a") => 0,
            Some("a2c") => 1,
            _ => panic!("a record entry without a direction: {entry}"),
        };
        assert!(
            entry.get("msg").is_some() != entry.get("raw").is_some(),
            "{entry}"
        );
        recorded[slot].push(entry.get("msg").is_some());
    }
    assert_eq!(
        recorded.as_slice(),
        non_blank,
        "one record entry per line, `msg` exactly when the validator was given a message"
    );
}
