//! Namespaces: every peer writes the one namespace its reader takes.

use super::*;

/// Which namespaces a receiver reads: the library's rule.
pub(super) type Reader = negotiation::NamespaceReader;

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
            && let Some(message) = reader.mismatch(ns, &what(), receiver)
        {
            out.push(Finding::of(&rules::NAMESPACE_MISMATCH, at, message));
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
