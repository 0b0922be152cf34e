//! # ACP Extension Core for Rust
//!
//! Types, negotiation, validation, JSON Schema and runtime helpers for
//! [ACP Extension Core](https://github.com/LodyAI/acp-extension-core): the
//! provider-neutral extensions on top of the
//! [Agent Client Protocol](https://agentclientprotocol.com) v1 (subagent
//! events, goals, steering, usage accounting, rate limits, tasks,
//! compaction, titles, session activity, worktree projects, MCP apps).
//!
//! Extensions are negotiated per feature under `_meta.lody` (newer spelling
//! `_meta.ua`, see [`namespace`]) in `initialize`, carried as
//! `_meta.<ns>.<field>` on standard ACP messages ([`meta`]), or as
//! `_lody/…` / `_ua/…` methods where ACP has no equivalent ([`methods`]).
//!
//! Every contract type is declared once: its serde implementation is the
//! validator (absent and `null` kept apart, unknown keys preserved), its
//! [`validate::Check`] implementation reports every violation with a JSON
//! pointer, and its JSON Schema comes from the same declaration
//! ([`schema`]). Standard ACP types come from the official
//! [`agent_client_protocol`] crate.
//!
//! ```
//! use acp_extension_core::validate::{validate_str, Kind};
//!
//! let report = validate_str(Kind::SubagentEvent, r#"{"version":1,"sessionId":"s","runId":"r",
//!     "type":"snapshot","snapshot":{"state":"running","summary":null,
//!     "support":{"stream":["text"],"progress":false,"outputRead":"none","cancel":false}}}"#);
//! assert_eq!(report.violations[0].pointer, "/snapshot/summary");
//! assert_eq!(report.violations[0].message(), "must be a string when present; null is not allowed");
//! ```
//!

#![deny(missing_docs)]

// Ground floor: the violation vocabulary, then the wire primitives (and the
// verdict-only pass their declarations generate).
pub mod violation;
pub mod wire;

#[cfg(feature = "schema")]
pub mod schema;

// One module per contract area; each builds on the ground floor only (and on
// `namespace`, `capabilities` and `meta` where the contract does).
pub mod capabilities;
pub mod elicitation;
pub mod mcp_apps;
pub mod meta;
pub mod methods;
pub mod namespace;
pub mod negotiation;
pub mod plan_mode;
pub mod rate_limits;
pub mod session;
pub mod subagent_emitter;
pub mod subagent_events;
pub mod usage;

// Whole-message validation on top: it dispatches by kind to every area.
pub mod validate;

pub use namespace::Namespace;
pub use violation::{Check, Rule, Violation};
