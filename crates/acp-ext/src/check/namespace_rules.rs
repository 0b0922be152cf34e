//! Namespaces: every peer writes the one namespace its reader takes.

use super::*;

/// Which namespace sections a receiver's capabilities carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Reader {
    advertised: Option<NamespaceSet>,
    expected: Namespace,
}

impl Reader {
    pub(super) fn of(capabilities: Option<&Value>) -> Self {
        let caps = capabilities.unwrap_or(&NULL);
        Self {
            advertised: negotiation::advertised_namespaces(caps),
            expected: negotiation::write_namespace(caps),
        }
    }

    fn accepts(self, ns: Namespace) -> bool {
        ns == self.expected || self.advertised.is_some_and(|set| set.contains(ns))
    }

    fn describe(self) -> &'static str {
        match self.advertised {
            Some(NamespaceSet::Ua) => "only `_meta.ua`",
            Some(NamespaceSet::Lody) => "only `_meta.lody`",
            Some(_) => "both namespaces",
            None => "no extension namespace",
        }
    }
}

/// What one direction of the connection wrote so far.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Written {
    first: Option<Namespace>,
    mixed_reported: bool,
}

impl Checker {
    /// The namespace rules for one use of `ns` at `at` by the sender of `dir`.
    pub(super) fn namespace_use(
        &mut self,
        dir: Direction,
        ns: Namespace,
        at: &str,
        what: &dyn Fn() -> String,
        out: &mut Vec<Finding>,
    ) {
        let (reader, receiver, sender, written) = match dir {
            Direction::AgentToClient => {
                (self.client_reads, "client", "agent", &mut self.written[0])
            }
            Direction::ClientToAgent => (self.agent_reads, "agent", "client", &mut self.written[1]),
            Direction::Unknown => return,
        };
        if let Some(reader) = reader
            && !reader.accepts(ns)
        {
            out.push(Finding::of(
                &rules::NAMESPACE_MISMATCH,
                at,
                format!(
                    "{} is in `{ns}`, but the {receiver} advertised {}; write `{}`",
                    what(),
                    reader.describe(),
                    reader.expected
                ),
            ));
        }
        match written.first {
            None => written.first = Some(ns),
            Some(first) if first != ns && !written.mixed_reported => {
                written.mixed_reported = true;
                out.push(Finding::of(
                    &rules::NAMESPACE_MIXED,
                    at,
                    format!(
                        "the {sender} writes {} in `{ns}` after writing `{first}` on this connection; one namespace serves every feature",
                        what()
                    ),
                ));
            }
            Some(_) => {}
        }
    }
}
