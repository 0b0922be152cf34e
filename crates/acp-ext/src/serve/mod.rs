//! `acp-ext serve`: the reference ACP agent (protocol v1, and v2 through
//! a face over it) with every extension of the contract.
//!
//! The agent is modelled on an automation-only ACP server: one connection
//! owns many sessions, each with its own prompt slot, cancel path, usage
//! ledger and background work. It does not call a model; `session/prompt`
//! follows a small script chosen by the prompt text ([`PROMPT_COMMANDS`];
//! `docs/serve.md` has the full table), deterministic for the same input
//! sequence.
//!
//! Entry points:
//! - [`run_stdio`]: serve one client over standard input/output until EOF.
//! - [`run`]: serve one client over any SDK transport, in v1.
//! - [`run_lines`]: serve one client over a line transport, in the version
//!   its `initialize` asks for (v1, or v2 through a face; see [`run_lines`]).
//! - [`agent`]: the agent as an SDK component, to pass as a client's
//!   transport in tests (`Client.v1().connect_with(serve::agent(opts), …)`).
//!
//! Namespaces: capabilities are advertised under the namespaces chosen with
//! [`ServeOptions::namespace`] (both by default). Extension messages the
//! agent sends use one namespace per connection: `ua` when the options say
//! `ua`, `lody` when they say `lody`; with both, `ua` only if the client
//! advertised its extensions under `_meta.ua` and not under `_meta.lody`,
//! otherwise `lody` (what deployed clients read). Incoming extension
//! methods are accepted in either spelling.
//!
//! Session ids are unique across processes by default: `sess-<prefix>-N`,
//! with a random 8-hex-digit prefix per process and a counter per
//! connection, because clients key their session stores by ACP session id
//! ([`SessionIds`]; `--session-ids counter` gives plain `sess-N` for
//! reproducible runs). Other ids are counters per connection (`turn-1`,
//! `call-1`, `task-1`, `run-1`), so the same input sequence produces the
//! same ids. The usage scope id (`_meta.<ns>.usageScopeId`) is a fresh UUID
//! v4 per session lifetime, as the contract requires it never to be reused
//! by a later accounting lifetime. Timestamps are real epoch seconds.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use acp_ext::serve::{self, ServeOptions};
//! serve::run_stdio(ServeOptions::new()).await
//! # }
//! ```

mod cancel;
mod dispatch;
mod ext;
mod features;
mod help;
mod ledger;
mod params;
mod runs;
mod script;
mod sessions;
mod state;
mod v2;
mod wire;

use std::sync::Arc;

use acp_extension_core::namespace::NamespaceSet;
use agent_client_protocol::{Agent, Client, ConnectTo};
use tokio::sync::watch;

pub use features::{UnknownFeature, parse_feature, parse_features};
pub use help::{PROMPT_COMMANDS, PromptCommand, prompt_help};

/// How to run the agent.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ServeOptions {
    /// Namespaces the capabilities are advertised under (default: both).
    pub namespace: ServeNamespace,
    /// Advertise only these features (capability keys such as `usage`);
    /// `None` advertises every feature the agent implements.
    pub only: Option<Vec<String>>,
    /// Counts the agent's running tasks (turns, background work); tests use
    /// it to check that nothing outlives the connection.
    pub task_monitor: TaskMonitor,
    /// How session ids are made (default: unique across processes).
    pub session_ids: SessionIds,
    /// What a client that advertised no extension gets (default: quiet).
    pub plain_clients: PlainClients,
}

/// What `serve` sends a client that advertised no extension capability at
/// all (no `_meta.ua` or `_meta.lody` in its `clientCapabilities`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum PlainClients {
    /// No agent-only extension notifications (`_<ns>/session/usage_update`,
    /// `activity_update`, `steer_applied`, `_<ns>/rate_limits/update`): a
    /// plain ACP client would print or reject them. Standard ACP traffic
    /// and `_meta.<ns>` fields on it are the same as for any client (the
    /// default).
    #[default]
    Quiet,
    /// Every notification the contract allows an agent to send unasked,
    /// as to an extension-aware client.
    Notify,
}

crate::choice::choices!(PlainClients, "plain-client behaviour" {
    Quiet = "quiet",
    Notify = "notify",
});

/// How `serve` makes session ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SessionIds {
    /// `sess-<prefix>-N`: a random prefix per process and a counter per
    /// connection, so two agents' sessions never share an id (the default).
    #[default]
    Unique,
    /// `sess-N`: the same ids for the same input, for reproducible runs.
    Counter,
}

crate::choice::choices!(SessionIds, "session id style" {
    Unique = "unique",
    Counter = "counter",
});

impl ServeOptions {
    /// Every feature under both namespaces.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the advertised namespaces.
    pub fn namespace(mut self, namespace: impl Into<ServeNamespace>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// Advertises only `features` (capability keys of agent-side features).
    pub fn only<I, S>(mut self, features: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.only = Some(features.into_iter().map(Into::into).collect());
        self
    }

    /// Sets what a client that advertised no extension gets.
    pub fn plain_clients(mut self, plain: PlainClients) -> Self {
        self.plain_clients = plain;
        self
    }

    /// Sets how session ids are made.
    pub fn session_ids(mut self, ids: SessionIds) -> Self {
        self.session_ids = ids;
        self
    }

    /// Uses `monitor` to count the agent's tasks.
    pub fn task_monitor(mut self, monitor: TaskMonitor) -> Self {
        self.task_monitor = monitor;
        self
    }
}

/// The `--namespace` choice: `ua`, `lody` or `both` (default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ServeNamespace {
    /// Advertise and send under `ua` only.
    Ua,
    /// Advertise and send under `lody` only.
    Lody,
    /// Advertise under both; send in the client's namespace (see the module docs).
    #[default]
    Both,
}

impl ServeNamespace {
    /// The advertised namespaces.
    pub fn set(self) -> NamespaceSet {
        match self {
            ServeNamespace::Ua => NamespaceSet::Ua,
            ServeNamespace::Lody => NamespaceSet::Lody,
            ServeNamespace::Both => NamespaceSet::Both,
        }
    }
}

crate::choice::choices!(ServeNamespace, "namespace" {
    Ua = "ua",
    Lody = "lody",
    Both = "both",
});

impl From<NamespaceSet> for ServeNamespace {
    fn from(set: NamespaceSet) -> Self {
        match set {
            NamespaceSet::Ua => ServeNamespace::Ua,
            NamespaceSet::Lody => ServeNamespace::Lody,
            _ => ServeNamespace::Both,
        }
    }
}

/// Counts live agent tasks. Cloning shares the count.
#[derive(Debug, Clone)]
pub struct TaskMonitor(Arc<watch::Sender<usize>>);

impl Default for TaskMonitor {
    fn default() -> Self {
        Self(Arc::new(watch::channel(0).0))
    }
}

impl TaskMonitor {
    /// A monitor with no tasks.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many tasks are running now.
    pub fn live(&self) -> usize {
        *self.0.borrow()
    }

    /// Counts one task until the guard is dropped.
    pub(crate) fn guard(&self) -> TaskGuard {
        self.0.send_modify(|n| *n += 1);
        TaskGuard(self.0.clone())
    }

    /// Waits until no task is running.
    pub(crate) async fn idle(&self) {
        let mut rx = self.0.subscribe();
        let _ = rx.wait_for(|n| *n == 0).await;
    }
}

/// Decrements its [`TaskMonitor`] when dropped.
#[derive(Debug)]
pub(crate) struct TaskGuard(Arc<watch::Sender<usize>>);

impl Drop for TaskGuard {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// The agent as an SDK component: pass it as a client's transport, or call
/// `connect_to` on it. Each call builds a fresh agent with its own state.
///
/// Fails when `options.only` names an unknown feature.
pub fn agent(options: ServeOptions) -> anyhow::Result<impl ConnectTo<Client> + 'static> {
    Ok(dispatch::builder(state::Shared::new(options)?))
}

/// Serves one client over `transport` until the connection ends; all work
/// is cancelled and drained before this returns.
///
/// The connection ending is the normal way out, whether by EOF or by the
/// peer going away mid-write (a broken pipe): both return `Ok`. The second
/// is reported on stderr.
pub async fn run(
    options: ServeOptions,
    transport: impl ConnectTo<Agent> + 'static,
) -> anyhow::Result<()> {
    let shared = state::Shared::new(options)?;
    let result = dispatch::builder(shared.clone())
        .connect_to(transport)
        .await;
    // A transport that broke (rather than reaching EOF) skips the close
    // callback: cancel whatever is left; the tasks themselves were dropped
    // with the connection.
    shared.abandon();
    if let Err(e) = result {
        // Handlers and tasks never fail the connection, so this is the
        // transport: the client went away.
        eprintln!("acp-ext serve: connection ended: {e}");
    }
    Ok(())
}

/// Serves one client over standard input and output until EOF, in the
/// version the client asks for ([`run_lines`]).
pub async fn run_stdio(options: ServeOptions) -> anyhow::Result<()> {
    use futures::StreamExt;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

    let incoming = futures::stream::unfold(
        tokio::io::BufReader::new(tokio::io::stdin()),
        |mut input| async move {
            let mut line = String::new();
            match input.read_line(&mut line).await {
                Ok(0) => None,
                Ok(_) => {
                    line.truncate(line.trim_end_matches(['\n', '\r']).len());
                    Some((Ok(line), input))
                }
                Err(e) => Some((Err(e), input)),
            }
        },
    )
    .boxed();
    let outgoing = Box::pin(futures::sink::unfold(
        tokio::io::stdout(),
        async |mut out, line: String| {
            out.write_all(line.as_bytes()).await?;
            out.write_all(b"\n").await?;
            out.flush().await?;
            Ok::<_, std::io::Error>(out)
        },
    ));
    run_lines(options, outgoing, incoming).await
}

/// Serves one client over a line transport (each item one JSON-RPC
/// message, as [`agent_client_protocol::Lines`] takes them) until its input
/// ends.
///
/// A client whose first line is an `initialize` asking for ACP v2 (or
/// later) is answered in v2: the same agent, behind a face that rewrites
/// what v2 changed (the `initialize` shapes, the prompt's receipt and its
/// turn's `state_update`s, held prompts, the updates v2 renamed; `docs/serve.md`
/// has the list). Every other client is served in v1, as [`run`] serves it.
pub async fn run_lines(
    options: ServeOptions,
    outgoing: impl futures::Sink<String, Error = std::io::Error> + Send + Unpin + 'static,
    mut incoming: impl futures::Stream<Item = std::io::Result<String>> + Send + Unpin + 'static,
) -> anyhow::Result<()> {
    use futures::StreamExt;

    let first = incoming.next().await;
    if let Some(Ok(line)) = &first
        && v2::asks_for_v2(line)
    {
        return v2::run(options, line.clone(), incoming, outgoing).await;
    }
    let incoming = futures::stream::iter(first).chain(incoming);
    run(
        options,
        agent_client_protocol::Lines::new(outgoing, incoming),
    )
    .await
}
