//! The library in detail: the types, namespaces and negotiation, what an
//! adapter and a client do with the connection layers, and the choices made
//! where the contract is silent. The [crate docs](crate) give the overview
//! and the layers.
//!
//! ## Contract types
//!
//! Every contract type is declared once (`wire_struct!`): its serde implementation *is* the
//! validator, its `Check` implementation reports every violation with a JSON pointer, and
//! its JSON Schema comes from the same declaration. Optional fields that must not be `null`
//! are `Option<T>` (a `null` is rejected), `opt|null` fields are `MaybeUndefined<T>`
//! (absent, `null` and a value survive a round trip), literal `version: 1` is filled in by
//! `new()` (and is no field), and keys the contract does not define are kept
//! ([`WireObject::extra`](crate::wire::WireObject::extra)) so a relay never drops another
//! peer's fields.
//!
//! ```
//! use acp_extension_core::meta::{fields, MetaExt};
//! use acp_extension_core::session::{TaskKind, TaskMeta, TaskStatus};
//! use acp_extension_core::Namespace;
//! use agent_client_protocol::v1::schema::ToolCall;
//!
//! let call = ToolCall::new("call-1", "Run tests")
//!     .with_ext::<fields::Task>(Namespace::Lody, TaskMeta::new("task-1", TaskKind::Background, TaskStatus::InProgress));
//! assert_eq!(serde_json::to_value(&call)?["_meta"]["lody"]["task"]["version"], 1);
//! # Ok::<(), serde_json::Error>(())
//! ```
//!
//! ## Namespaces
//!
//! Readers accept `ua` and `lody` everywhere (`_meta.ua` / `_meta.lody`,
//! `_ua/…` / `_lody/…`, and methods whose leading `_` an SDK stripped); when both carry a
//! key, `ua` wins. Writers follow one rule, the same for every feature of a connection
//! (`negotiation::write_namespace`): write `ua` only to a peer whose capabilities carry
//! `_meta.ua` and no `_meta.lody`; write `lody` to everyone else (both, or neither), which
//! every deployed client reads. Capabilities can be advertised under both at once; what a
//! side then writes still follows the other side. `acp-ext check`, `tap` and `probe` report
//! traffic in a namespace the receiver does not read (`namespace-mismatch`) and a peer that
//! writes both (`namespace-mixed`).
//!
//! ## Negotiation
//!
//! `negotiation::negotiate(agent_caps, client_caps)` (JSON) or
//! `Negotiated::from_sdk(&AgentCapabilities, &ClientCapabilities)` (the SDK's types) answers,
//! per feature, whether it is active and with which options, and which namespace each side
//! writes (`agent_writes`, `client_writes`). Agent-only features are active when the agent
//! advertises them validly; `subagentEvents` and `mcpApps` only when both sides do; a wrong
//! version or shape means "not supported", never a panic. `Advertisement::read` also reports
//! problems (unknown keys, client-only capabilities advertised by an agent). The SDK's
//! capability builders take the extension capabilities directly:
//! `AgentCapabilities::new().extensions(&AgentExtensionCapabilities::new().usage(…), NamespaceSet::Both)`
//! (trait `capabilities::AdvertiseExtensions`).
//!
//! ## Times and counts
//!
//! `wire::EpochSeconds` (`now()`, `From<SystemTime>`, `from_secs`)
//! writes whole seconds, what consumers read; `wire::Count` (`From<u32>`, `From<u64>`) is a
//! non-negative integer (tokens, background tasks); `wire::Percent` is 0..100. What
//! `acp-ext check` calls an error, the types and `acp-ext validate` reject, and the reverse
//! (a test enumerates every rule).
//!
//! ## Methods and the SDK
//!
//! `methods::ExtensionRequest` / `ExtensionNotification` parse any
//! `(method, params)` into typed params in either namespace (`None` for a non-extension
//! method, every violation for bad params). `AnyExtensionRequest`,
//! `AnyExtensionNotification`, `Namespaced<T>` and `NamespacedNotification<T>` implement the
//! SDK's `JsonRpcRequest`/`JsonRpcNotification`, so an agent or client built with
//! `agent-client-protocol` registers one handler for every extension method and sends typed
//! requests whose responses come back typed (`examples/agent.rs` registers its handler
//! that way and answers through `producer::handle_any`).
//!
//! ## For adapter authors
//!
//! - **One handle per connection.** `producer::AgentExtensions` is built in the
//!   `initialize` handler from the SDK connection and the negotiation
//!   (`AgentExtensions::from_initialize(cx, &request, &response)`), and writes everything
//!   in the connection's namespace: `usage_update`, `rate_limits_update`, `steer_applied`,
//!   `activity_update`, `title` (tagged with its `titleSource`), `goal`, `notice`, and any
//!   `_meta` field on a standard message (`with_meta::<fields::Task, _>(tool_call, task)`).
//!   Every send answers `Result<Delivery, SendError>`. What the client did not ask for is
//!   **withheld, not failed**: `Ok(Delivery::Withheld(_))` for a feature that is not active
//!   (`Withheld::NotNegotiated`) or a client that advertised no extension at all
//!   (`Withheld::PlainClient`, the policy of `acp-ext serve`; `write_to_plain_clients(true)`
//!   opts out), so `ext.title(&session, title, TitleSource::Generated)?` in a prompt handler
//!   serves Core, standard and plain clients alike. `SendError` is what must stop the turn:
//!   a closed connection, or a message wrong as written (`_meta` of another namespace is
//!   `WrongNamespace`, an untagged title where `sessionTitle` is negotiated
//!   `UntaggedTitle`, a title tagged `unset` `UnsetTitle`, an event for a run the emitter did
//!   not start `UnknownRun`); `?` turns it into an SDK `Error`. The raw paths stay, named as
//!   what they are: `unchecked_session_update`, `unchecked_set_meta`, `unchecked_connection`,
//!   which bypass negotiation. `subagent_emitter(&session)` is `None` unless the client
//!   reads subagent runs, and otherwise that session's runs (`SessionRuns`: the same run map
//!   on every call and every clone); `usage(&session, operation, rows)` accounts in the
//!   session's own ledger (one per session, its `usageScopeId` in the namespace) and sends
//!   the update (`rows` is an `acp_extension_core::indexmap::IndexMap`).
//!   Incoming extension requests: implement `producer::ExtensionRequestHandler` for the
//!   methods you advertise (the others answer `-32601`) and pass each `AnyExtensionRequest`
//!   to `producer::handle_any`.
//! - **The client's dialect** (library feature `unstable_subagents`). A client of standard
//!   ACP (`clientCapabilities.subagents: {}` and no `subagentEvents`, as the official
//!   adapters' clients) reads subagent runs as standard `subagent_update`s on the parent
//!   session and the child's own `session/update`s under a child session id. The handle
//!   picks the dialect (`AgentExtensions::subagent_dialect`): the same emitter calls, or
//!   `subagent_event(event)` for an emitter of your own, write `subagents/event` to a Core
//!   client and the standard messages to a standard one (`standard::StandardSubagents`;
//!   its docs list what the standard dialect loses: progress, model, summary, times,
//!   `parentToolCallId`). Give a top-level run `parent_run_id(None)`: a run whose lineage is
//!   unknown is held back from a standard client, which must not guess its parent. Steering
//!   and goals for such clients: `standard::advertise_steering(response)` adds
//!   `_meta.steering: {supported: true}` to the initialize response, and one handler for
//!   `standard::StandardRequest` passed to `producer::handle_standard` serves
//!   `_session/steering` and `_session/goal` with the same `ExtensionRequestHandler`
//!   (`failed` with `idleBehavior: "promptRequired"` answers `promptRequired`). Context
//!   occupancy goes out as a standard `usage_update` (`context_usage(&session, used, size,
//!   cost)`, which every client reads), and a turn's tokens as the prompt response's `usage`
//!   (the SDK's `unstable_end_turn_token_usage`).
//! - **Steering: run the turn off the dispatch loop.** The SDK handles messages one at a
//!   time; a prompt handler that awaits its turn inline keeps a mid-turn `session/steer`
//!   waiting until the turn ended (answered `failed`, never applied). Move the responder
//!   into `cx.spawn(async move { responder.respond_with_result(run_turn(req).await) })`.
//!   `check`, `tap` and `probe` report `steer-answered-after-turn` and `steer-not-applied`.
//! - **A working adapter.** `examples/agent.rs`
//!   advertises `usage`, `sessionTitle`, `subagentEvents` and `steering` and, per prompt,
//!   sends a title, a subagent run, the answer and a usage update, and takes a steer
//!   mid-turn. CI runs `acp-ext probe --session --prompt hello --fail-on info` against it:
//!   no finding at all.
//! - **Usage.** Keep one `usage::SessionUsageAccumulator` per ACP session lifetime and feed
//!   it the native cumulative snapshots of each operation; it returns the
//!   `_lody/session/usage_update` to send (or nothing when nothing changed), with
//!   per-operation max-merge, per-model totals, the delta since the last emitted update,
//!   unknown cost kept unknown, and `_meta.<ns>.usageScopeId`. It behaves exactly like the
//!   reference on every vector, and costs O(models in the update) per update instead of
//!   re-summing the history (measured in the repository's BENCHMARKS.md).
//! - **Subagents.** Keep one `subagent_emitter::SubagentEmitter` per root session; call
//!   `start`, `snapshot`, `progress`, `output` and `disconnect` with native ids; it maps them
//!   to opaque run ids and sends ordered `_<ns>/subagents/event` notifications through a
//!   sink you provide (`AcpNotificationSink` sends them over an SDK connection). Output that
//!   breaks the contract is not forwarded; the run's snapshot gets `outputIncomplete: true`
//!   instead.
//! - **Plan mode.** `plan_mode::plan_mode_config_option(current)` builds the standard ACP
//!   boolean config option with the reference strings.
//! - **Guards.** `subagent_events::is_subagent_event` (and `_snapshot`, `_progress`,
//!   `_output`) over `serde_json::Value`, backed by the same types.
//! - **Conformance in CI.** `acp_ext::probe::run(command, options)` returns a `Report`
//!   your tests can assert on (see `acp-ext probe` below).
//!
//! ## For client authors
//!
//! - **One state per connection.** `state::ConnectionState` folds the connection's traffic
//!   into what a client shows. Feed it every JSON-RPC message with its direction
//!   (`state.message(Direction::AgentToClient, &msg)`), or call its typed entry points from
//!   the SDK client's handlers: `request` / `response` for the calls it sends (ids of its
//!   own choosing, unique among its pending calls), `notification` (or
//!   `session_notification`) for what the agent sends, `request` / `response` with the
//!   other direction for the agent's permission requests and elicitations. Register one
//!   untyped notification handler: the SDK's v1 `SessionUpdate` has no catch-all, so a
//!   typed handler would lose the updates it does not know; the state reports them.
//! - **One pass beside your own code.** The state is an observer of
//!   `connection::Connection`, the follower that classifies each message once (request,
//!   notification, response paired with its request, or a value that is no message, with the
//!   reason), reads both advertisements and runs the sequence rules once. To run your own
//!   observer (a timeline, a linter) over the same parse, follow the connection with both:
//!   `connection.follow(direction, &msg, &mut [&mut state, &mut mine])`, then
//!   `state.take_changes()`. Lines of text can be read ahead, on any thread, with
//!   `connection::Line::read(bytes, Reads::of(&[&state, &mine]))` and followed with
//!   `connection.follow_read`: a valid subagent event is then verified while read, and
//!   observers get its JSON tree (`call.params.tree()`) only if they ask. Each observer
//!   declares what it reads of such an event (`Observer::reads`): a linter of run order
//!   only the run facts (the event is then never built), the state what it folds (plain
//!   text chunks and tool calls straight from the line). A linter's rules, a live
//!   timeline and a probe's turn
//!   tracking are such observers, so what `check` reports and what the state records come
//!   from the same classification and the same sequence verdicts.
//! - **What it holds.** Per session: the title and its origin (authority, lowest first:
//!   `fallback`, `untagged`, `generated`, `explicit`, `user`; a user's rename is never
//!   replaced, `generated` needs `sessionTitle`, an untagged title from an agent that
//!   advertises `sessionTitle` is refused; codex's `_meta.codex.titleSource` is read from
//!   codex, and its `unset` never clears a title), the goal (absent when never reported,
//!   `null` once cleared, else the snapshot), activity and background task count (also
//!   codex's `_meta.codex.threadStatus`), turns (prompts, stop reason, `turnId`, message
//!   phase, kimi's engine-opened turns), task rows by `taskId`, the subagent runs, the
//!   session's plan, compaction and retry (with the summary), notices, usage, steers and
//!   their outcome (`pending`, `injected`, `applied`, `failed`, `refused` on -32600,
//!   `startedNewTurn` and `promptRequired` from `_session/steering`, `unknown` after a lost
//!   connection), pending permission requests and elicitations (a child run's request,
//!   routed to the root by `_meta.<ns>.subagentRunId`, or asked on a standard child's own
//!   session, with that run and whether it is live). Per connection: both negotiations, key
//!   by key, with what each peer said it is (`agentInfo`) and advertised outside the contract
//!   (`_meta.steering`, vendor keys), and the rate limits (merged per `limitId`, each row
//!   replaced whole, `[]` changes nothing, an older `fetchedAtEpochSeconds` never replaces a
//!   fresher row, a failed `rate_limits/get` marks the rows `stale` and keeps their data).
//! - **Usage, right.** Each scope's `modelUsage` is cumulative: the session's `totals` sum
//!   the scopes per model and its `total` sums the models, never the `usage` of each update
//!   (one operation). A counter that falls keeps its higher value, marks the scope
//!   `incomplete` and is recorded as folded; a negative counter or cost is rejected (by the
//!   types, `validate`, `check` and the state alike). An update without `modelUsage` is kept
//!   apart as `unattributed` and marks its scope. A cost once seen is not lost:
//!   `costUsdAtLeast` keeps the highest known cost when a later row has none, and the
//!   standard `usage_update` keeps its last `cost`. The usage a prompt result reports (ACP's
//!   `usage` and the adapters' `_meta.quota`, in codex's, claude's and gemini's spellings,
//!   or a v2 idle `state_update`) is kept per turn and summed per session as `turnTotals`,
//!   never mixed with the Core ledger.
//! - **Runs in every form.** Extension runs (a snapshot replaces the metadata, progress is
//!   sparse with `null` clearing, text appends (a message after a tool call, or with another
//!   `messageId`, on a new line), tool calls merge by id (each kept as it came, its keys in
//!   the agent's order, without `sessionUpdate`), a plan replaces,
//!   `outputIncomplete` is sticky (an unreadable output event sets it too),
//!   `completed|failed|cancelled` are final, `unknown` is not; the tree follows
//!   `parentRunId`, ownership is fixed at the first `parentToolCallId`); bare subagent
//!   events (`{version, sessionId, runId, type, …}` without an envelope, as fixtures and
//!   generators write them); standard `subagent_update` runs and AIR's `subagent_spawned` /
//!   `subagent_state_update`. A standard run keeps the fields its dialect sent and nothing
//!   else (no invented snapshot): `title`, `description`, `state` as sent (`running`,
//!   `idle`, `requires_action`, `unknown`), the latest idle's `stopReason` and `error`,
//!   `capabilities`, `cwd`, its prompt and reply (`session_message`; the prompt's
//!   `messageId` is the hidden launch tool call) and its own context. **Idle is not
//!   terminal**: a child that runs again (codex's `send_input`, claude's re-delegation) is
//!   the same run in a new generation (`generations` counts them), its output kept, the
//!   next generation's text on a new line. The child session's own updates are the run's
//!   output; its notices are the root session's, naming the child.
//! - **Every dialect.** Both namespaces; standard ACP `compaction_update` (its summary as
//!   text or content blocks), `compaction_summary_chunk`, `notice`, `usage_update`,
//!   `plan` / `plan_update` / `plan_removed`, `session_info_update` titles; ACP v2 by its
//!   own rules (the prompt's answer a receipt, the turn ended by the `idle` `state_update`
//!   with its stop reason and usage, repeated and resume snapshots counted once, `unknown`
//!   and custom states shown busy, background work by type, a child's whole messages in its
//!   run), and a v2 `initialize` response read without its request; the official adapters' `_session/steering` outcomes, `_claude/rateLimit`
//!   (utilization ×100, window from `rateLimitType`, provider from `agentInfo`), goals in
//!   the legacy top-level `_meta.goal`, codex's `_meta.codex.goal` and AIR's
//!   `_meta.jetbrains.air.goal` (milliseconds converted), `_meta.codex.phase`, the vendors'
//!   prompt steer ids (`_meta.claudeCode.steer`, `_meta.codex.steer`), task rows from
//!   `_claude/taskLifecycle`, `_kimi/taskLifecycle` and AIR's async tasks; the legacy
//!   `_acp_ext:session_usage_update`, `_acp_ext:session_rate_limits` (provider from
//!   `agentInfo`, codex's lone `fiveHour` as its weekly window) and
//!   `_acp_ext:codex_proposed_plan`, marked `legacy` and each recorded as `legacy-method`
//!   (the contract forbids adapters to send them). Vendor keys are read for their vendor
//!   only (an `agentInfo.name` that names another vendor turns them off).
//! - **Nothing silent, nothing invented.** Every call returns typed `Change`s for a UI to
//!   react to; every input value is folded (it changed the state), ignored (transcript
//!   content, a call the state does not model, an answer without its request: `Transcript`
//!   and `Seen` changes, each kind counted) or recorded. What is not folded (a malformed
//!   payload, a sequence-rule break, an unknown session update or method, a value that is
//!   no message, named by the shape it resembles) is a `Change::Invalid` with the method,
//!   the JSON pointer, the rule, the value's index and line, and stays in
//!   `state.invalid()`; `state.accounting()` counts `values`, `folded`, `ignored` and
//!   `recorded`, and `values == folded + ignored + recorded` on every corpus file and
//!   fuzzed input (tests). A session named only by a request the agent rejected (a failed
//!   `session/resume` or `session/load`, a prompt to an unknown session) is taken back
//!   (`SessionDiscarded`). An update that names no session is recorded, never given to a
//!   guessed one. The sequence rules are the ones `acp-ext check` runs, from the
//!   same code (`sequence`), and `check` reads the same dialects: a file `check` calls clean
//!   has no record in the state, and the reverse (a test over the corpus).
//! - **Bounded mode.** `ConnectionState::with_limits(StateLimits::bounded())` caps sessions,
//!   runs, text, tool calls, tasks, notices, steers, scopes, rate limits and invalid records
//!   (oldest dropped), for clients that live for days.
//! - **A working client.** `examples/client.rs`
//!   starts `acp-ext serve`, sends a few prompts and prints the state it folded; CI runs it.
//!
//! ## Choices made where the contract is silent
//!
//! - **Default namespace** for writing is `lody` (what deployed clients read); readers take
//!   both, `ua` first.
//! - **`sessionConfig` and `sessionActivity`** are accepted as agent capability keys
//!   (`{version: 1}`), as the reference package's documentation describes; `SessionActivityUpdate` has all
//!   four fields required.
//! - **Token counters** of `ModelUsage` are non-negative integers (`1.0` is accepted as 1,
//!   as in JavaScript); negative, fractional or `null` counters are rejected, and a scope id
//!   over 256 UTF-16 code units is rejected when the accumulator is built.
//! - **Duplicate keys** in a JSON object: validation lets the last one win, as in `JSON.parse`,
//!   on every path (`--quiet` included). Parsing text straight into a contract type with
//!   serde is stricter: it may reject a key given twice, and always rejects a union tag
//!   (`type`, `sessionUpdate`) or an event's `type` given twice.
//! - **A number as a union tag** (`"type": 0`): validation and the typed parse reject it
//!   everywhere (a union's tag is read in place, as a string; serde's derived internally
//!   tagged enums would take it as a variant index).
//! - **The emitter** is garbage-in, garbage-out like the reference: it does not validate
//!   snapshots, patches or progress it is given (only `output` is checked), so it matches
//!   every vector; the typed API is the recommended way to build inputs.
//! - **`validate` indexes** values from 1 and reports the line where each value starts.
//! - **`unknown` is not a terminal run state** (the Lody client and the subagent spec: it
//!   means observation was lost; a later snapshot is accepted), and a terminal snapshot that
//!   repeats its state is accepted; `check` and the state share this
//!   (`subagent-after-terminal`). Every event of a run that has had no snapshot yet breaks
//!   `subagent-first-not-snapshot`, not only the first.
//! - **The consumer state's title rules**: a `fallback` title only fills an empty title
//!   (the Lody client drops fallback tags; a transcript viewer shows them rather than
//!   nothing); an untagged title counts when the agent does not advertise `sessionTitle`
//!   (the Lody client trusts only some builtins; the library cannot know which).
//! - **Steer outcome `failed`** is `failed` in the state, distinct from `refused` (-32600,
//!   safe to resend) and `unknown`: sources disagree whether it may be resent, so the state
//!   does not decide.
//! - **Legacy usage** (`_acp_ext:session_usage_update` names no session) belongs to the
//!   last session started or prompted on the connection; with none it is reported
//!   (`no-session`). Legacy rate limits without `limitId` or `limitName` get the id
//!   `legacy`, without a provider `unknown`; an `extraUsage` that is a valid wallet is the
//!   row's `wallet`.
//! - **An invalid `usageScopeId`** makes the state fold the update as unscoped (the Lody
//!   client's rule), reported as `scope-id-fallback`; `validate` and `check` reject it.
//! - **Standard `subagent_update`**: `running`/`requires_action` read as `running`, `idle`
//!   as `completed` (`failed` for `error` or `refusal`, `cancelled` for `cancelled`), a
//!   missing `state` keeps the previous one; `parentToolCallId`, `outputIncomplete` and
//!   `progress` are read from `_meta.<ns>` (or `_meta` itself).
//! - **ACP v2** is read where the schema crate's `v2` module has it: the state, `check`,
//!   `watch` and `probe --protocol 2` follow a v2 connection by v2's rules (a prompt's turn
//!   ends at the first `idle` `state_update` after its receipt; an idle before it ends work
//!   the agent started itself). `serve` answers a v2 client in v2 through a face over its v1
//!   agent, built from the SDK's v2 types (receipts, `state_update`s, held prompts, v2's
//!   update tags; `acp-ext`'s serve page lists them), so `probe --protocol 2` and `demo --protocol 2`
//!   exercise every extension over v2. The bridge translates v1 connections only.
//!
