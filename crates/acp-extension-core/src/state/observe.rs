//! The fold of one classified message: what the state reads of a call or
//! an answer, and the records of what it cannot fold.

use super::extensions::TreeEvent;
use super::*;
use crate::methods::{ContractMethod, contract_method};

impl ConnectionState {
    /// Folds one classified message.
    pub(super) fn observe(&mut self, m: &Message<'_>, out: &mut Changes) {
        self.messages += 1;
        self.now = Now {
            sequence: m.sequence().to_vec(),
            run_accepted: m.as_call().is_none_or(|c| c.run_accepted),
        };
        match m {
            Message::Invalid(i) => self.not_a_message(out, i.pointer, &i.problem),
            Message::Call(c) => {
                let method = c.method;
                let unopened = self
                    .now
                    .sequence
                    .iter()
                    .any(|f| f.rule == sequence::SequenceRule::SessionNotOpened);
                self.pending_sequence(method, c.session_id(), out);
                if unopened || self.refuses_call(c.direction, method, c.session_id(), out) {
                    // Recorded: no session to place it in, or its receiver
                    // does not read it.
                } else {
                    match c.params.line() {
                        // Verified while read: valid, and with no epoch field
                        // for the epoch rules to record or convert. A chunk of
                        // plain text or a tool call is folded from the line as
                        // it stands, without building it.
                        Some(line) => match line.sifted_output() {
                            Some(output) => self.core_sifted_output(method, line, output, out),
                            None => {
                                self.core_event(method, line.event(), EventSource::Line(line), out)
                            }
                        },
                        None => {
                            // The event the connection read from the tree
                            // for the sequence rules, read no second time.
                            let read =
                                if contract_method(method) == Some(ContractMethod::SubagentEvent) {
                                    c.params
                                        .event()
                                        .map_or(TreeEvent::Invalid, TreeEvent::Valid)
                                } else {
                                    TreeEvent::Unread
                                };
                            self.on_call(c.direction, method, c.id, c.params.tree(), read, out)
                        }
                    }
                }
            }
            Message::Answer(a) => match &a.request {
                Some(request) => {
                    let call = Call {
                        method: request.method.clone(),
                        session: match request.pairing {
                            Pairing::Paired => request.session_id.clone(),
                            _ => self.unnamed_session(),
                        },
                        steer_id: request.steer_id.clone(),
                        new_session: request.first_mention,
                    };
                    self.pending_sequence(&call.method, call.session.as_deref(), out);
                    self.on_answer(call, a.id.unwrap_or(&Value::Null), a.outcome, out);
                }
                // Its request is not in the input: nothing to fold.
                None => out.ignore(IgnoredKind::UnpairedAnswer, || Change::Seen {
                    method: None,
                }),
            },
        }
        // Sequence findings the fold did not take (usage rules whose
        // update was not folded).
        let rest = std::mem::take(&mut self.now.sequence);
        self.sequence_findings(m.method().unwrap_or(""), m.session_id(), rest, out);
    }

    /// The negotiation rules a contract method passes before it is folded,
    /// as a linter judges them: written in a namespace its receiver
    /// reads ([`NamespaceReader`], `namespace-mismatch`), and its feature
    /// advertised by each peer that must, once that peer's initialize was
    /// seen (`not-advertised`; subagent events keep their own rule,
    /// `not-negotiated`). A method that breaks one is recorded and not
    /// folded: a client that negotiated otherwise does not read it.
    fn refuses_call(
        &mut self,
        dir: Direction,
        method: &str,
        sid: Option<&str>,
        out: &mut Changes,
    ) -> bool {
        let Some((ns, path)) = crate::namespace::split_method(method) else {
            return false;
        };
        let (reader, receiver) = match dir {
            Direction::AgentToClient => (self.readers.client, "client"),
            Direction::ClientToAgent => (self.readers.agent, "agent"),
            Direction::Unknown => (None, ""),
        };
        if let Some(why) = reader.and_then(|r| r.mismatch(ns, &format!("`{method}`"), receiver)) {
            self.record(
                out,
                Record::new(
                    "/method",
                    "namespace-mismatch",
                    format!("{why}; not folded"),
                )
                .method(method)
                .session_opt(sid),
            );
            return true;
        }
        let Some(feature) = crate::methods::method_info(path).map(|m| m.feature) else {
            return false;
        };
        if feature == crate::capabilities::Feature::SubagentEvents {
            return false;
        }
        let sides: &[Side] = match feature.side() {
            crate::capabilities::FeatureSide::AgentOnly => &[Side::Agent],
            crate::capabilities::FeatureSide::ClientOnly => &[Side::Client],
            _ => &[Side::Agent, Side::Client],
        };
        let missing = sides.iter().copied().find(|&side| {
            let peer = match side {
                Side::Agent => &self.negotiation.agent,
                _ => &self.negotiation.client,
            };
            peer.seen && !peer.features.contains_key(feature.key())
        });
        let Some(side) = missing else {
            return false;
        };
        self.record(out, Record::new("/method", "not-advertised", format!(
                "`{method}` is used, but the {side} did not advertise `{feature}` in initialize; not folded"
            )).method(method).session_opt(sid));
        true
    }

    /// Records input that is not a JSON-RPC message.
    fn not_a_message(&mut self, out: &mut Changes, pointer: &str, message: &str) {
        self.record(
            out,
            Record::new(pointer, "not-a-message", message.to_owned()),
        );
    }

    /// Records the sequence findings of the message being folded, except
    /// those the usage fold words itself.
    fn pending_sequence(&mut self, method: &str, sid: Option<&str>, out: &mut Changes) {
        let (usage, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.now.sequence)
            .into_iter()
            .partition(|f| sequence::is_usage_rule(f.rule));
        self.now.sequence = usage;
        self.sequence_findings(method, sid, rest, out);
    }

    /// Where what names no session by design goes (legacy payloads, a
    /// fixture's answer kept without its request): the last session
    /// started or prompted, else the only one the stream named.
    pub(super) fn unnamed_session(&self) -> Option<String> {
        let only = || {
            (self.sessions.len() == 1)
                .then(|| self.sessions.keys().next().cloned())
                .flatten()
        };
        self.current_session.clone().or_else(only)
    }

    pub(super) fn session_mut(&mut self, session_id: &str) -> &mut SessionState {
        if !self.sessions.contains_key(session_id) {
            while self.sessions.len() >= self.limits.sessions.max(1) {
                self.sessions.shift_remove_index(0);
            }
            self.sessions
                .insert(session_id.to_owned(), SessionState::default());
        }
        #[expect(clippy::expect_used, reason = "the key is inserted just above")]
        let s = self.sessions.get_mut(session_id).expect("inserted above");
        s
    }

    /// Records what was not folded (or only partly): an [`Invalid`] of the
    /// value being folded, kept (bounded by [`StateLimits::invalid`]) and
    /// reported as a [`Change::Invalid`].
    pub(super) fn record(&mut self, out: &mut Changes, r: Record) {
        let record = Invalid {
            index: self.accounting.values + 1,
            line: self.line,
            method: r.method,
            session_id: r.session_id,
            pointer: r.pointer,
            rule: r.rule.to_owned(),
            message: r.message,
            folded: r.folded,
        };
        self.invalid_count += 1;
        out.add_invalid(&record);
        if self.limits.invalid > 0 {
            while self.invalid.len() >= self.limits.invalid {
                self.invalid.pop_front();
            }
            self.invalid.push_back(record);
        }
    }
}

/// What an [`Invalid`] record says, built where the fold finds it: the
/// pointer, the rule and the message, then what applies of the method, the
/// session and whether the rest of the value was folded.
#[derive(Debug)]
pub(super) struct Record {
    pointer: String,
    rule: String,
    message: String,
    method: Option<String>,
    session_id: Option<String>,
    folded: bool,
}

impl Record {
    pub(super) fn new(
        pointer: impl Into<String>,
        rule: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            pointer: pointer.into(),
            rule: rule.into(),
            message: message.into(),
            method: None,
            session_id: None,
            folded: false,
        }
    }

    /// The method of the message.
    pub(super) fn method(self, method: &str) -> Self {
        self.method_opt(Some(method))
    }

    pub(super) fn method_opt(mut self, method: Option<&str>) -> Self {
        self.method = method.map(str::to_owned);
        self
    }

    /// The session it was about.
    pub(super) fn session(self, session_id: &str) -> Self {
        self.session_opt(Some(session_id))
    }

    pub(super) fn session_opt(mut self, session_id: Option<&str>) -> Self {
        self.session_id = session_id.map(str::to_owned);
        self
    }

    /// The rest of the value was folded.
    pub(super) fn folded(self) -> Self {
        self.folded_if(true)
    }

    pub(super) fn folded_if(mut self, folded: bool) -> Self {
        self.folded = folded;
        self
    }
}
