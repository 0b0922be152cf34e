//! # ACP Extension Core for Rust
//!
//! Types, negotiation, validation, JSON Schema and runtime helpers for
//! [ACP Extension Core](https://github.com/LodyAI/acp-extension-core): the
//! provider-neutral extensions on top of the
//! [Agent Client Protocol](https://agentclientprotocol.com) v1 (subagent
//! events, goals, steering, usage accounting, rate limits, tasks,
//! compaction, titles, session activity, worktree projects, MCP apps).
//!
//! An adapter or client depends on this crate and on the SDK with the
//! transport it speaks (this crate enables none of the SDK's features):
//!
//! ```toml
//! [dependencies]
//! acp-extension-core = "0.1"
//! # `stdio` for an agent or client on standard input and output (what
//! # `examples/agent.rs` uses); `process` to spawn the peer (`examples/client.rs`).
//! agent-client-protocol = { version = "5.2", features = ["stdio", "process"] }
//! tokio = { version = "1", features = ["rt-multi-thread", "macros", "time"] }
//! serde_json = "1"
//! ```
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
//! (`schema`, with the `schema` feature). Standard ACP types come from the official
//! [`agent_client_protocol`] crate.
//!
//! ```
//! use acp_extension_core::subagent_events::SubagentEvent;
//! use acp_extension_core::validate::{validate_str, Kind};
//!
//! let report = validate_str(Kind::of::<SubagentEvent>(), r#"{"version":1,"sessionId":"s","runId":"r",
//!     "type":"snapshot","snapshot":{"state":"running","summary":null,
//!     "support":{"stream":["text"],"progress":false,"outputRead":"none","cancel":false}}}"#);
//! assert_eq!(report.violations[0].pointer, "/snapshot/summary");
//! assert_eq!(report.violations[0].message(), "must be a string when present; null is not allowed");
//! ```
//!
//! The [`guide`] has the library in detail: namespaces and negotiation,
//! everything the handle and the state do, and the choices made where the
//! contract is silent.
//!
//! # For adapter authors
//!
//! Negotiate once in `initialize` and keep a [`producer::AgentExtensions`]
//! for the connection: it writes every extension message in the one
//! namespace the client reads ([`negotiation::write_namespace`]), withholds
//! what the client did not ask for ([`producer::Delivery::Withheld`], an
//! `Ok` that a handler's `?` passes, so one adapter serves Core, standard
//! and plain clients), and hands out the subagent emitter and
//! the usage accumulator already bound to that namespace. Run each prompt
//! off the SDK's dispatch loop so that steers are answered mid-turn (see
//! [`producer`]). To a client of standard ACP (the official adapters'
//! clients: `subagents: {}`, no extensions) the same handle writes
//! subagent runs as standard `subagent_update`s and child sessions
//! (feature `unstable_subagents`, [`standard`]), and
//! [`producer::handle_standard`] serves its `_session/steering` and
//! `_session/goal`. `examples/agent.rs` is a complete adapter for both; the
//! project's CI probes it with `acp-ext probe` as both kinds of client and
//! requires no finding.
//!
//! The SDK's ids go where an id goes: [`producer::AgentExtensions`] takes
//! `&SessionId`; the contract types keep the contract's plain strings, so
//! pass `&*session_id.0` (a `&str`) or `session_id.0.clone()` (an
//! `Arc<str>`, where an `AsRef<str>` is asked for).
//!
//! Values carry their rules in their types: [`wire::EpochSeconds`] (whole
//! seconds from `now()` or a `SystemTime`), [`wire::Count`],
//! [`wire::Percent`], [`usage::UsageScopeId`]. What `acp-ext check`
//! calls an error, these types and [`validate`] reject.
//!
//! # For client authors
//!
//! Feed a [`state::ConnectionState`] every message of the connection (or
//! call its typed entry points from the SDK client's handlers) and read the
//! folded state back: per session the title with its authority, the goal,
//! activity, turns, tasks, the subagent run tree with each run's snapshot,
//! progress and output, compaction and notices, usage per scope and in
//! total, steers and their outcome, pending permission requests (child
//! requests routed to their run); per connection the rate limits and both
//! peers' negotiation. It reads every dialect a client meets: both
//! namespaces, the standard ACP updates that overlap the extensions, the
//! v2 capability location, the adapters' conventions and the legacy
//! `_acp_ext:*` payloads. Each call returns typed [`state::Change`]s;
//! whatever it does not fold (a malformed payload, a sequence-rule break,
//! an unknown session update) is a [`state::Change::Invalid`] naming the
//! method, the JSON pointer and the rule. [`state::StateLimits::bounded`] keeps
//! a long-lived client within fixed memory. `examples/client.rs` is a
//! complete SDK client; `acp-ext state` prints the same state for a
//! recorded transcript.
//!
//! ```
//! use acp_extension_core::state::{ConnectionState, Direction};
//! use serde_json::json;
//!
//! let mut state = ConnectionState::new();
//! state.message(Direction::AgentToClient, &json!({"jsonrpc": "2.0", "method": "session/update",
//!     "params": {"sessionId": "s", "update": {"sessionUpdate": "session_info_update",
//!         "_meta": {"lody": {"goal": {"objective": "ship", "status": "active"}}}}}}));
//! assert_eq!(state.session("s").unwrap().current_goal().unwrap().objective, "ship");
//! ```
//!
//! # Cargo features
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `schema` | yes | JSON Schema (draft 2020-12) of every payload kind: `validate::Kind::schema`, `validate::all_schemas`, the `schema` module (pulls in `schemars`) |
//! | `unstable_session_fork` | no | [`meta::HasMeta`] for the SDK's `ForkSessionRequest` / `ForkSessionResponse`, where `_meta.<ns>.forkAtTurn` rides (enables the SDK's `unstable_session_fork`) |
//! | `unstable_subagents` | no | the standard dialect of subagent runs: [`producer::AgentExtensions`] writes a client that advertised standard `subagents` (and not `subagentEvents`) `subagent_update`s and child sessions, through `standard::StandardSubagents` (enables the SDK's `unstable_subagents`) |
//!
//! The crate enables no feature of [`agent_client_protocol`]: no transport
//! (`stdio`, `process`) and no `unstable` type unless you ask for one.
//!
//! Items hidden from these docs are the rules a traffic linter shares with
//! [`state`] (so both judge a message alike); they are not part of the API
//! and may change in any release.
//!
//! # The SDK and its own unstable features
//!
//! Tested with `agent-client-protocol` 5.2.x (schema 1.17); the requirement
//! is `^5.2`. Some of the SDK's features carry standard ACP counterparts of
//! these extensions: `unstable_subagents` (`subagent_update`, a run as a
//! child session, against `subagents/event`), `unstable_end_turn_token_usage`
//! (a prompt's `usage`, about one operation of `session/usage_update`),
//! `unstable_session_set_title`, and, ungated, `notice`, `compaction_update`,
//! `session_info_update` titles and `usage_update` (context occupancy and
//! cumulative cost). The types speak the extensions' own messages; the
//! producer writes standard subagent runs with this crate's
//! `unstable_subagents` feature; [`state`] reads the standard counterparts
//! too, from JSON, so a client needs none of those SDK features to fold
//! them.
//!
//! # `serde_json` features
//!
//! The crate does not enable `serde_json`'s `preserve_order` or
//! `float_roundtrip`. Unknown keys (`extra`, `_meta`) keep `serde_json`'s map
//! order: insertion order with `preserve_order` (which the SDK's schema crate
//! enables, so it is on in practice), sorted without it. Numbers parse
//! exactly with `float_roundtrip`, to the nearest ulp without it. Validation
//! verdicts depend on neither.
//!
//! # Layers
//!
//! Imports run one way, from the ground up:
//!
//! 1. [`violation`] (violations, rules, the [`Check`] collector) and [`wire`]
//!    (the wrapper types behind the contract's rules, the declaration macros,
//!    and the verdict-only pass they generate);
//! 2. one module per contract area, on the ground floor: [`namespace`],
//!    [`capabilities`], [`session`], [`usage`], [`rate_limits`],
//!    [`elicitation`], [`mcp_apps`], [`subagent_events`],
//!    [`subagent_emitter`], [`plan_mode`], [`standard`] (the standard ACP
//!    dialect of the same facts, over `session` and `subagent_events`); and
//!    `schema` (with the feature),
//!    the generator the schemas share. Three areas are indexes over the
//!    others and import them: [`negotiation`] (over `capabilities` and
//!    `namespace`), [`meta`] (the `_meta.<ns>` fields: `session`,
//!    `elicitation`, `mcp_apps`, `usage`, and `capabilities` for the
//!    feature each field needs) and [`methods`] (every extension method's
//!    payload types, from every area);
//! 3. [`validate`]: whole messages and payloads by [`validate::Kind`],
//!    dispatching to every area;
//! 4. the connection layers: [`connection`], the one follower of a
//!    connection (each message parsed and classified once, responses
//!    paired with their requests, both advertisements, and the rules that
//!    need memory of earlier messages, [`connection::sequence`]: run
//!    lifecycle, usage scopes, steering, run once, through one dispatch)
//!    that hands each message to its observers; [`producer`] for agents,
//!    [`producer::AgentExtensions`] writing every extension message of one
//!    negotiated connection in its namespace, and
//!    [`producer::ExtensionRequestHandler`] for the requests an agent
//!    receives; [`state`] for clients, the folded state of one connection
//!    (an observer of [`connection::Connection`]).
//!

#![deny(missing_docs)]
// No input may panic the library: every panic site is denied, and the few
// that no input can reach say why where they stand.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::unreachable
    )
)]

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
pub mod standard;
pub mod subagent_emitter;
pub mod subagent_events;
pub mod usage;

// Whole-message validation on top: it dispatches by kind to every area.
pub mod validate;

// The connection layers: one connection followed (classified, paired,
// observed), the agent's handle on one negotiated connection, and the
// client's folded state of one.
pub mod connection;
pub mod producer;
pub mod state;

// Documentation only: the library in detail.
pub mod guide;

pub use namespace::Namespace;
pub use violation::{Check, Rule, Violation};

/// The map the usage rows come in (`producer::AgentExtensions::usage`,
/// `usage::SessionUsageAccumulator::update`): the crate's own `indexmap`,
/// so an adapter needs no dependency of its own to call them.
pub use indexmap;
