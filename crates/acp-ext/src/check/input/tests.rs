use super::*;

fn records(text: &str, format: Format) -> Vec<Item> {
    let mut items = Vec::new();
    read(text.as_bytes(), format, |i| items.push(i)).unwrap();
    items
}

#[test]
fn detects_formats_from_the_first_line() {
    assert_eq!(detect(br#"{"dir":"c2a","t":0.1,"msg":{}}"#), Format::Tap);
    assert_eq!(
        detect(br#"{"type":"request","from":"Client","to":"Agent","id":1}"#),
        Format::Trace
    );
    assert_eq!(
        detect(br#"{"jsonrpc":"2.0","method":"x"}"#),
        Format::JsonRpc
    );
    assert_eq!(detect(b"{"), Format::Loose);
    assert_eq!(detect(b"[1]"), Format::Loose);
    assert_eq!(detect(br#"{"kind":"x","payload":{}}"#), Format::Loose);
}

/// The line each loose value (or problem) of `text` is reported at.
fn loose_lines(text: &str) -> Vec<u64> {
    records(text, Format::Loose)
        .into_iter()
        .map(|i| match i {
            Item::Record(r) => r.line,
            Item::Event { line, .. } | Item::Problem { line, .. } => line,
        })
        .collect()
}

#[test]
fn loose_values_keep_their_lines() {
    let text = "{\n  \"a\": 1\n}\n\n{\"sessionUpdate\":\"plan\",\"entries\":[]}\n[\n {\"b\":1},\n {\"c\":2}\n]\n";
    let lines = loose_lines(text);
    assert_eq!(lines, [1, 5, 7, 8]);
}

#[test]
fn reading_that_stops_at_the_cap_of_broken_values_says_so() {
    let problems = |text: &str| -> Vec<(u64, String)> {
        records(text, Format::Loose)
            .into_iter()
            .filter_map(|i| match i {
                Item::Problem { line, finding } => Some((line, finding.message)),
                _ => None,
            })
            .collect()
    };
    let plan = "{\"sessionUpdate\":\"plan\",\"entries\":[]}\n";
    // The cap of broken values, then a value: reading stops, and the
    // problem after the last broken value says where and why.
    let broken = "{oops\n".repeat(MAX_SYNTAX_ERRORS);
    let found = problems(&format!("{broken}{plan}{plan}"));
    assert_eq!(found.len(), MAX_SYNTAX_ERRORS + 1, "{found:?}");
    let (line, message) = found.last().unwrap();
    assert_eq!(*line, MAX_SYNTAX_ERRORS as u64 + 1);
    assert!(message.contains("reading stopped"), "{message}");
    assert!(
        message.contains("from this line on, was not read"),
        "{message}"
    );
    // The same within an array.
    let in_array = format!("[\n{}]\n{plan}", "{oops,\n".repeat(MAX_SYNTAX_ERRORS));
    let found = problems(&in_array);
    assert!(
        found.last().unwrap().1.contains("reading stopped"),
        "{found:?}"
    );
    // Nothing after the last broken value: nothing was left unread.
    let found = problems(&broken);
    assert_eq!(found.len(), MAX_SYNTAX_ERRORS);
    assert!(found.iter().all(|(_, m)| !m.contains("reading stopped")));
    // One broken value fewer than the cap: every value is read.
    let fewer = "{oops\n".repeat(MAX_SYNTAX_ERRORS - 1);
    let items = records(&format!("{fewer}{plan}"), Format::Loose);
    assert!(matches!(items.last(), Some(Item::Record(_))));
}

#[test]
fn top_level_arrays_stream_with_element_lines() {
    let text = "[\n {\"b\":1},\n {\"c\":2}\n]\n";
    let lines = loose_lines(text);
    assert_eq!(lines, [2, 3]);
}

#[test]
fn broken_values_resync_at_the_next_top_level_value() {
    let text = "{\"a\": tru}\n  junk\n{\"b\": 1}\n";
    let items = records(text, Format::Loose);
    assert!(matches!(&items[0], Item::Problem { line: 1, finding } if finding.rule == "not-json"));
    // `{"b": 1}` is read again, and is of no shape the reader knows.
    assert!(
        matches!(&items[1], Item::Problem { line: 3, finding } if finding.rule == "not-a-message")
    );
    assert_eq!(items.len(), 2);
}

/// An item as `read` would give it: a typed event as its JSON record.
fn as_read(item: Item) -> Item {
    match item {
        Item::Event { line, read } => {
            Item::Record(Record::new(line, Direction::Unknown, read.to_value()))
        }
        other => other,
    }
}

/// A reader that gives at most `step` bytes per read.
struct Trickle<'a> {
    text: &'a [u8],
    step: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.text.len());
        buf[..n].copy_from_slice(&self.text[..n]);
        self.text = &self.text[n..];
        Ok(n)
    }
}

#[test]
fn blocks_cut_lines_as_read_line_bounded_does() {
    // Random lines (some longer than the limit, some empty, some with
    // `\r`), with and without a last newline, cut with small limits
    // and reads of every size from one byte up.
    let mut seed = 0x2545_f491_u64;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for round in 0..400 {
        let mut text = Vec::new();
        for _ in 0..next(30) {
            let len = [0, 3, 15, 16, 17, 40][next(6) as usize] + next(3) as usize;
            text.extend((0..len).map(|i| b'a' + (i % 26) as u8));
            if next(5) == 0 {
                text.push(b'\r');
            }
            text.push(b'\n');
        }
        if round % 2 == 0 {
            text.extend_from_slice(b"tail without newline");
        }
        let max = 16;
        let mut expected = Vec::new();
        let mut reader = &text[..];
        let mut number = 0;
        loop {
            let mut line = Vec::new();
            let (n, too_long) = read_line_bounded(&mut reader, &mut line, max).unwrap();
            if n == 0 {
                break;
            }
            number += 1;
            expected.push((number, (!too_long).then_some(line)));
        }
        let step = 1 + round % 23;
        let mut blocks = Blocks::new(Trickle { text: &text, step }, 0);
        (blocks.max, blocks.block_bytes, blocks.read_bytes) = (max, 8 + round % 40, 1 + round % 29);
        let mut cut = Vec::new();
        let mut block = Block::default();
        while blocks.fill(&mut block).unwrap() {
            for (n, range) in &block.lines {
                cut.push((*n, range.clone().map(|r| block.text[r].to_vec())));
            }
        }
        assert_eq!(
            cut,
            expected,
            "round {round}: {:?}",
            String::from_utf8_lossy(&text)
        );
    }
}

#[test]
fn parallel_lines_give_what_read_gives_in_order() {
    // More lines than a few blocks, with every kind of line: typed
    // events, other messages, bare events, blank lines, bytes that are
    // not JSON, and a line too large to read.
    let event = |i: usize| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"_lody/subagents/event","params":{{"version":1,"sessionId":"s","runId":"r{i}","type":"progress","progress":{{"turnCount":{i}}}}}}}"#
        )
    };
    let mut text = String::new();
    for i in 0..3 * BLOCK_BYTES / 100 + 7 {
        let line = match i % 9 {
            0 => r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}"#.to_owned(),
            1 => r#"{"version":1,"sessionId":"s","runId":"b","type":"progress","progress":{}}"#.to_owned(),
            2 => String::new(),
            3 => "{oops".to_owned(),
            _ => event(i),
        };
        text.push_str(&line);
        text.push('\n');
    }
    text.push_str(&format!("{{\"x\":\"{}\"}}\n", "a".repeat(MAX_VALUE_BYTES)));
    text.push_str(&event(1));
    let serial = records(&text, Format::Auto);
    for reads in [Reads::Event, Reads::RunFacts] {
        let mut parallel = Vec::new();
        read_parallel(text.as_bytes(), Format::Auto, reads, |i| {
            parallel.push(i.clone())
        })
        .unwrap();
        assert!(
            parallel.iter().any(|i| matches!(i, Item::Event { .. })),
            "no line took the typed lane"
        );
        let parallel: Vec<Item> = parallel.into_iter().map(as_read).collect();
        assert_eq!(parallel.len(), serial.len());
        for (p, s) in parallel.iter().zip(&serial) {
            assert_eq!(p, s);
        }
    }
}

/// Lines of progress events, `n` of them, numbered in their run ids.
fn numbered_events(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "{{\"jsonrpc\":\"2.0\",\"method\":\"_lody/subagents/event\",\"params\":{{\"version\":1,\"sessionId\":\"s\",\"runId\":\"r{i}\",\"type\":\"progress\",\"progress\":{{}}}}}}\n"
            )
        })
        .collect()
}

#[test]
fn items_arrive_in_order_whether_the_consumer_waits_or_lags() {
    // Some 60 blocks. A quick consumer waits for the parser and parses
    // blocks itself meanwhile; a slow one lets parsed blocks pile up.
    // Either way every line arrives once, in order.
    let text = numbered_events(60 * BLOCK_BYTES / 140);
    for slow in [false, true] {
        let mut lines = Vec::new();
        read_parallel(text.as_bytes(), Format::Auto, Reads::RunFacts, |item| {
            let Item::Event { line, .. } = item else {
                panic!("not an event: {item:?}")
            };
            if slow && line % 500 == 0 {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            lines.push(*line);
        })
        .unwrap();
        let expected: Vec<u64> = (1..=text.lines().count() as u64).collect();
        assert_eq!(lines, expected, "slow consumer: {slow}");
    }
}

#[test]
fn a_live_stream_line_arrives_before_the_next_is_written() {
    // A stream that gives each line only once the consumer has seen
    // the one before: a pipeline that held a line back until its next
    // read returned would wait forever.
    struct Live(std::sync::mpsc::Receiver<Vec<u8>>, Vec<u8>);
    impl Read for Live {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.1.is_empty() {
                match self.0.recv() {
                    Ok(bytes) => self.1 = bytes,
                    Err(_) => return Ok(0),
                }
            }
            let n = buf.len().min(self.1.len());
            buf[..n].copy_from_slice(&self.1[..n]);
            self.1.drain(..n);
            Ok(n)
        }
    }
    let lines: Vec<Vec<u8>> = numbered_events(50)
        .lines()
        .map(|l| format!("{l}\n").into_bytes())
        .collect();
    let (done_tx, done) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let (write, read) = std::sync::mpsc::channel();
        write.send(lines[0].clone()).unwrap();
        let mut write = Some(write);
        let mut seen = Vec::new();
        let result = read_parallel(
            io::BufReader::new(Live(read, Vec::new())),
            Format::JsonRpc,
            Reads::RunFacts,
            |item| {
                let Item::Event { line, .. } = item else {
                    panic!("not an event: {item:?}")
                };
                seen.push(*line);
                match lines.get(seen.len()) {
                    Some(next) => write.as_ref().unwrap().send(next.clone()).unwrap(),
                    // The last line seen: the stream ends.
                    None => write = None,
                }
            },
        );
        let _ = done_tx.send((result.is_ok(), seen));
    });
    let (ok, seen) = done
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("a line was held back until the next one was written");
    assert!(ok);
    assert_eq!(seen, (1..=50).collect::<Vec<u64>>());
}

#[test]
fn a_failed_read_ends_the_input_after_what_was_read() {
    struct FailsAfter<'a>(&'a [u8]);
    impl Read for FailsAfter<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0.is_empty() {
                return Err(io::Error::other("the disk went away"));
            }
            let n = buf.len().min(self.0.len()).min(1000);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
    let text = numbered_events(2000);
    let mut seen = 0;
    let result = read_parallel(
        io::BufReader::new(FailsAfter(text.as_bytes())),
        Format::JsonRpc,
        Reads::Event,
        |_| seen += 1,
    );
    assert_eq!(result.unwrap_err().to_string(), "the disk went away");
    assert_eq!(seen, 2000);
}

#[test]
fn a_panicking_consumer_stops_the_parser() {
    // Without the stop, the parser thread would wait for room forever
    // and the scope would never end.
    let text = numbered_events(20 * BLOCK_BYTES / 140);
    let outcome = std::panic::catch_unwind(|| {
        let mut seen = 0;
        let _ = read_parallel(text.as_bytes(), Format::Auto, Reads::Event, |_| {
            seen += 1;
            assert!(seen < 3000, "the consumer gives up");
        });
    });
    assert!(outcome.is_err());
}

#[test]
fn source_paths_follow_unwrapping() {
    let items = records(
        r#"{"kind":"sessionUpdate","payload":{"sessionUpdate":"plan"}}"#,
        Format::Loose,
    );
    let Item::Record(r) = &items[0] else { panic!() };
    assert_eq!(r.source_path("/params/update/entries"), "/payload/entries");
    assert_eq!(r.source_path("/method"), "");
}
