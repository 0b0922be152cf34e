//! The scanner: the places of the facts the rules and the fold read in a
//! subagent event's text, found without building its tree.

use super::*;

/// A string's place in a line's text (lines are at most a few MiB; a
/// longer one is not given places).
#[derive(Debug, Clone, Copy)]
pub(super) struct Span {
    pub(super) start: u32,
    pub(super) end: u32,
}

impl Span {
    pub(super) fn of(self, text: &str) -> &str {
        &text[self.start as usize..self.end as usize]
    }
}

/// Where [`EventFacts`] sit in a line's text.
#[derive(Debug, Clone, Copy)]
pub(super) struct FactSpans {
    pub(super) session_id: Span,
    pub(super) run_id: Span,
    pub(super) event_type: SubagentEventType,
    pub(super) snapshot_state: Option<Span>,
    pub(super) parent_tool_call_id: Option<Span>,
    pub(super) native_turn_id: Option<Span>,
    /// An output event's update the consumer state folds from the line.
    pub(super) output: Option<OutputSpans>,
}

/// Where the part of an output event's update the consumer state folds is.
#[derive(Debug, Clone, Copy)]
pub(super) enum OutputSpans {
    /// An `agent_message_chunk` of text, with no escape in its text or
    /// message id.
    TextChunk(ChunkSpans),
    /// A `tool_call` or `tool_call_update`: the whole update object.
    ToolCall(Span),
}

/// Where an `agent_message_chunk`'s text and message id are.
#[derive(Debug, Clone, Copy)]
pub(super) struct ChunkSpans {
    pub(super) text: Span,
    pub(super) message_id: Option<Span>,
}

/// An output event's update read from a sifted line, without building
/// its event ([`EventLine::sifted_output`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SiftedOutput<'a> {
    /// An `agent_message_chunk` of text.
    TextChunk(TextChunk<'a>),
    /// A `tool_call` or `tool_call_update`: the update object's text.
    ToolCall(&'a str),
}

/// An `agent_message_chunk` of text, read from a line without building
/// its event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TextChunk<'a> {
    /// `content.text`.
    pub(crate) text: &'a str,
    /// `messageId`, when a string.
    pub(crate) message_id: Option<&'a str>,
}

impl FactSpans {
    pub(super) fn facts<'a>(&self, text: &'a str) -> EventFacts<'a> {
        let at = |s: Span| s.of(text);
        EventFacts {
            session_id: Some(at(self.session_id)),
            run_id: Some(at(self.run_id)),
            event_type: Some(self.event_type.as_str()),
            snapshot_state: self.snapshot_state.map(at),
            parent_tool_call_id: self.parent_tool_call_id.map(at),
            native_turn_id: self.native_turn_id.map(at),
        }
    }

    /// Reads the facts' places from a line the sift accepted, as
    /// [`EventFacts::from`] reads them from its JSON tree; `None` (the
    /// event is then built with the line) when a string among them, its
    /// key, or a key of `params.snapshot` has an escape, or a fact of
    /// `params.snapshot` comes twice. `with_output`: the output the state
    /// folds from the line is located too (`params.update`, walked key by
    /// key); without, the update is not read.
    ///
    /// The sift has verified the line as JSON and told where the event's
    /// keys end (`keys`), so this reads only the facts' values after them:
    /// strings are skipped by searching for their closing quote, and only
    /// `params.snapshot` and `params.update` are read key by key. Anything
    /// it does not expect gives `None`, never a wrong place (the library's
    /// `tests/lanes.rs` and the `validate` fuzz property hold the facts
    /// found to the built event's).
    pub(super) fn find(text: &str, keys: &SiftedKeys, with_output: bool) -> Option<Self> {
        u32::try_from(text.len()).ok()?;
        let base = text.as_ptr() as usize;
        // A scan at the value of `key`: `Some(None)` when the event has no
        // such key, `None` when its place is not known.
        let at = |key: EventKey| -> Option<Option<Scan<'_>>> {
            let end = match keys.end(key) {
                KeyEnd::Absent => return Some(None),
                KeyEnd::Escaped => return None,
                KeyEnd::At(end) => end.checked_sub(base)?,
            };
            // The key's closing quote, then its colon.
            (text.as_bytes().get(end) == Some(&b'"')).then_some(())?;
            let mut scan = Scan {
                bytes: text.as_bytes(),
                at: end + 1,
            };
            scan.take(b':')?;
            scan.space();
            Some(Some(scan))
        };
        // A fact that is a string with no escape; `Some(None)` when absent
        // or of another type.
        let fact = |key: EventKey| -> Option<Option<Span>> {
            match at(key)? {
                Some(mut scan) => scan.place(),
                None => Some(None),
            }
        };
        const SESSION_ID: EventKey = EventKey::of("sessionId");
        const RUN_ID: EventKey = EventKey::of("runId");
        const NATIVE_TURN_ID: EventKey = EventKey::of("nativeTurnId");
        const SNAPSHOT: EventKey = EventKey::of("snapshot");
        const UPDATE: EventKey = EventKey::of("update");
        // The sift accepted the event: these are strings.
        let session_id = fact(SESSION_ID)??;
        let run_id = fact(RUN_ID)??;
        let native_turn_id = fact(NATIVE_TURN_ID)?;
        let (snapshot_state, parent_tool_call_id) = match at(SNAPSHOT)? {
            Some(mut scan) => scan.snapshot()?.unwrap_or_default(),
            None => (None, None),
        };
        let output = if with_output && keys.kind == SubagentEventType::Output {
            at(UPDATE)?.and_then(|mut scan| scan.update())
        } else {
            None
        };
        Some(FactSpans {
            session_id,
            run_id,
            event_type: keys.kind,
            snapshot_state,
            parent_tool_call_id,
            native_turn_id,
            output,
        })
    }
}

/// A walk over the bytes of one JSON value the sift accepted.
pub(super) struct Scan<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) at: usize,
}

impl Scan<'_> {
    pub(super) fn space(&mut self) {
        while self
            .bytes
            .get(self.at)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.at += 1;
        }
    }

    /// Takes `byte` (after any space), or gives `None`.
    pub(super) fn take(&mut self, byte: u8) -> Option<()> {
        self.space();
        (self.bytes.get(self.at) == Some(&byte)).then(|| self.at += 1)
    }

    /// The string at the cursor (after its opening quote): its place and
    /// whether it holds an escape; the cursor moves past its closing quote.
    pub(super) fn string_body(&mut self) -> Option<(Span, bool)> {
        let start = self.at;
        let mut escaped = false;
        loop {
            let i = self.at + memchr::memchr2(b'"', b'\\', self.bytes.get(self.at..)?)?;
            if self.bytes[i] == b'"' {
                self.at = i + 1;
                let span = Span {
                    start: start as u32,
                    end: i as u32,
                };
                return Some((span, escaped));
            }
            // A backslash and the byte it escapes.
            escaped = true;
            self.at = i + 2;
        }
    }

    /// Walks an object, calling `entry` with the cursor on each value (a
    /// key with an escape gives `None`).
    pub(super) fn object(
        &mut self,
        mut entry: impl FnMut(&mut Self, &[u8]) -> Option<()>,
    ) -> Option<()> {
        self.take(b'{')?;
        if self.take(b'}').is_some() {
            return Some(());
        }
        loop {
            self.take(b'"')?;
            let (key, escaped) = self.string_body()?;
            if escaped {
                return None;
            }
            self.take(b':')?;
            self.space();
            let bytes = self.bytes;
            entry(self, &bytes[key.start as usize..key.end as usize])?;
            if self.take(b',').is_none() {
                return self.take(b'}');
            }
        }
    }

    /// Skips any value.
    pub(super) fn value(&mut self) -> Option<()> {
        self.space();
        let mut depth = 0usize;
        loop {
            let b = *self.bytes.get(self.at)?;
            self.at += 1;
            match b {
                b'"' => {
                    self.string_body()?;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' => depth = depth.checked_sub(1)?,
                _ => {}
            }
            // A scalar ends before the next delimiter; a string or a
            // container ends with its last byte.
            if depth == 0 {
                if !matches!(b, b'"' | b'}' | b']') {
                    while self.bytes.get(self.at).is_some_and(|b| {
                        !matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                    }) {
                        self.at += 1;
                    }
                }
                return Some(());
            }
        }
    }

    /// A fact: the place of a string with no escape; `Some(None)` for any
    /// other value; `None` for an escaped string.
    pub(super) fn place(&mut self) -> Option<Option<Span>> {
        if self.bytes.get(self.at) != Some(&b'"') {
            self.value()?;
            return Some(None);
        }
        self.at += 1;
        match self.string_body()? {
            (_, true) => None,
            (span, false) => Some(Some(span)),
        }
    }

    /// Reads a fact into `slot`, once: a second copy of its key, or an
    /// escaped string, gives `None` (the walk fails; the event is built).
    pub(super) fn fact(&mut self, slot: &mut Option<Option<Span>>) -> Option<()> {
        if slot.is_some() {
            return None;
        }
        *slot = Some(self.place()?);
        Some(())
    }

    /// [`Self::fact`] for a walk that goes on: a second copy of the key, or
    /// an escaped string (moved past), only marks what is read not `plain`.
    pub(super) fn soft_fact(&mut self, slot: &mut Option<Option<Span>>, plain: &mut bool) {
        if slot.is_some() {
            *plain = false;
        }
        match self.place() {
            Some(place) => *slot = Some(place),
            None => *plain = false,
        }
    }

    /// `update`, when an `agent_message_chunk` whose content is text: the
    /// places of its text and message id (`None` for an escape in either);
    /// when a `tool_call` or `tool_call_update`: the object's place;
    /// `None` for anything else (the cursor then still moves past it).
    pub(super) fn update(&mut self) -> Option<OutputSpans> {
        if self.bytes.get(self.at) != Some(&b'{') {
            self.value();
            return None;
        }
        let start = self.at;
        let (mut tag, mut content, mut message_id) = (None, None, None);
        let mut plain = true;
        let walked = self.object(|scan, key| {
            let slot = match key {
                b"sessionUpdate" => &mut tag,
                b"messageId" => &mut message_id,
                b"content" => {
                    if content.is_some() {
                        plain = false;
                    }
                    content = Some(scan.content());
                    return Some(());
                }
                _ => return scan.value(),
            };
            scan.soft_fact(slot, &mut plain);
            Some(())
        });
        if walked.is_none() {
            // Not walked to its end: the caller's walk fails with it.
            self.at = start;
            self.value();
            return None;
        }
        let tag = tag
            .flatten()
            .map(|t| &self.bytes[t.start as usize..t.end as usize]);
        if plain && matches!(tag, Some(b"tool_call" | b"tool_call_update")) {
            let end = self.at as u32;
            return Some(OutputSpans::ToolCall(Span {
                start: start as u32,
                end,
            }));
        }
        let is_chunk = tag == Some(b"agent_message_chunk");
        let text = content.flatten()?;
        // A string, or `null` (the sift accepted nothing else), or absent:
        // the fold reads only a string.
        let message_id = message_id.flatten();
        (plain && is_chunk).then_some(OutputSpans::TextChunk(ChunkSpans { text, message_id }))
    }

    /// `content`, when `{"type": "text", "text": …}` with both plain
    /// strings (other keys allowed): the text's place.
    pub(super) fn content(&mut self) -> Option<Span> {
        if self.bytes.get(self.at) != Some(&b'{') {
            self.value();
            return None;
        }
        let (mut kind, mut text) = (None, None);
        let mut plain = true;
        self.object(|scan, key| {
            let slot = match key {
                b"type" => &mut kind,
                b"text" => &mut text,
                _ => return scan.value(),
            };
            scan.soft_fact(slot, &mut plain);
            Some(())
        })?;
        let kind = kind.flatten()?;
        let is_text = &self.bytes[kind.start as usize..kind.end as usize] == b"text";
        (plain && is_text).then_some(())?;
        text.flatten()
    }

    /// `snapshot`: its `state` and `parentToolCallId`, when an object.
    pub(super) fn snapshot(&mut self) -> Option<Option<SnapshotSpans>> {
        if self.bytes.get(self.at) != Some(&b'{') {
            self.value()?;
            return Some(None);
        }
        let (mut state, mut parent) = (None, None);
        self.object(|scan, key| {
            let slot = match key {
                b"state" => &mut state,
                b"parentToolCallId" => &mut parent,
                _ => return scan.value(),
            };
            scan.fact(slot)
        })?;
        Some(Some((state.flatten(), parent.flatten())))
    }
}

pub(super) type SnapshotSpans = (Option<Span>, Option<Span>);
