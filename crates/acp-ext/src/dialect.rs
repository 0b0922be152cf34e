//! The dialect a peer speaks of the facts ACP Extension Core carries: what
//! the probe plays as a client and what the bridge reads on each side.

/// Which dialect a side speaks: ACP Extension Core, standard ACP (the
/// official adapters' `subagent_update`s, `_session/steering`, …), or
/// neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ClientDialect {
    /// ACP Extension Core: every client extension (the probe's default).
    #[default]
    Core,
    /// Standard ACP only: `subagents: {}`, `session.compaction`,
    /// `session.notices` and `plan`, so the official adapters send their
    /// standard subagent, compaction, notice and plan traffic.
    Standard,
    /// Neither: a plain ACP client.
    Plain,
}

crate::choice::choices!(ClientDialect, "client dialect" {
    Core = "core",
    Standard = "standard",
    Plain = "plain",
});
