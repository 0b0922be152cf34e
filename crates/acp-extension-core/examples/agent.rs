//! A small ACP agent on the official SDK that speaks ACP Extension Core
//! through [`AgentExtensions`]: it advertises `usage`, `sessionTitle`,
//! `subagentEvents` and `steering` (request transport), and for every
//! prompt sends a title, a subagent run, the answer in a few chunks and a
//! usage update. A steer sent while a turn runs is injected, confirmed
//! with `steer_applied` and echoed in the answer.
//!
//! It serves both kinds of client with the same code: a Core client gets
//! `subagents/event` and steers on `_<ns>/session/steer`; a client of
//! standard ACP (`clientCapabilities.subagents: {}`, as the official
//! adapters' clients) gets the run as a `subagent_update` with a child
//! session, and steers on `_session/steering` (advertised in
//! `InitializeResponse._meta.steering`). The handle picks the dialect
//! (feature `unstable_subagents`).
//!
//! It runs its turns off the SDK's dispatch loop (`cx.spawn`), which is
//! what lets a steer be answered mid-turn.
//!
//! ```sh
//! cargo run -p acp-extension-core --example agent            # an agent on stdio
//! acp-ext probe --session --prompt hello -- target/debug/examples/agent
//! acp-ext probe --client standard --session --prompt hello -- target/debug/examples/agent
//! ```
//!
//! The CI runs both probes and requires no finding at all.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_extension_core::capabilities::{
    AdvertiseExtensions, AgentExtensionCapabilities, ConfigPolicy, SteeringCapability,
    SteeringTransport, UpstreamTurn, VersionOneCapability,
};
use acp_extension_core::indexmap::IndexMap;
use acp_extension_core::methods::{AnyExtensionRequest, ExtensionResponse};
use acp_extension_core::namespace::NamespaceSet;
use acp_extension_core::producer::{
    AgentExtensions, Delivery, ExtensionRequestHandler, SendError, handle_any, handle_standard,
};
use acp_extension_core::session::{SteerOutcome, SteerRequest, SteerResponse, TitleSource};
use acp_extension_core::standard::{StandardRequest, StandardResponse, advertise_steering};
use acp_extension_core::subagent_emitter::{OutputIds, SnapshotPatch};
use acp_extension_core::subagent_events::{
    OutputRead, SubagentSnapshot, SubagentState, SubagentStream, SubagentSupport,
};
use acp_extension_core::usage::ModelUsage;
use acp_extension_core::wire::EpochSeconds;
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, ContentBlock, ContentChunk, Implementation, InitializeRequest,
    InitializeResponse, NewSessionRequest, NewSessionResponse, PromptRequest, PromptResponse,
    SessionId, SessionUpdate, StopReason,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Stdio};
use serde_json::json;

/// What the agent remembers of one session.
#[derive(Default)]
struct Session {
    prompts: u64,
    /// Steers waiting for the running turn, `None` between turns.
    steers: Option<Vec<SteerRequest>>,
}

#[derive(Default)]
struct State {
    ext: Mutex<Option<AgentExtensions>>,
    sessions: Mutex<HashMap<String, Session>>,
}

impl State {
    fn ext(&self) -> Option<AgentExtensions> {
        self.ext.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// The extension requests this agent implements: steering only; every
/// other method answers -32601.
struct Handler(Arc<State>);

impl ExtensionRequestHandler for Handler {
    async fn steer(&self, request: SteerRequest) -> agent_client_protocol::Result<SteerResponse> {
        let mut sessions = self.0.sessions.lock().unwrap_or_else(|p| p.into_inner());
        let outcome = match sessions
            .get_mut(&request.session_id)
            .and_then(|s| s.steers.as_mut())
        {
            Some(queue) => {
                queue.push(request);
                SteerOutcome::Injected
            }
            // No turn is running: nothing to steer.
            None => SteerOutcome::Failed,
        };
        Ok(SteerResponse::new(outcome))
    }
}

fn capabilities() -> AgentCapabilities {
    let steering = SteeringCapability::new(
        SteeringTransport::Request,
        UpstreamTurn::Same,
        ConfigPolicy::Active,
    );
    let ours = AgentExtensionCapabilities::new()
        .usage(VersionOneCapability::new())
        .session_title(VersionOneCapability::new())
        .subagent_events(VersionOneCapability::new())
        .steering(steering);
    // Both spellings while clients migrate; what the agent writes follows
    // the client (`Negotiated::agent_writes`).
    AgentCapabilities::new().extensions(&ours, NamespaceSet::Both)
}

/// Applies the steers that arrived so far: confirm each one, then let it
/// shape the answer. `close` ends the turn for later steers.
fn apply_steers(
    state: &State,
    ext: &AgentExtensions,
    sid: &SessionId,
    close: bool,
) -> Result<(), SendError> {
    let mut sessions = state.sessions.lock().unwrap_or_else(|p| p.into_inner());
    let Some(session) = sessions.get_mut(&*sid.0) else {
        return Ok(());
    };
    let steers = if close {
        session.steers.take().unwrap_or_default()
    } else {
        session
            .steers
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    };
    for steer in steers {
        // The confirmation comes before the prompt's response.
        ext.steer_applied(sid, steer.steer_id.clone())?;
        let text: String = steer
            .content_blocks()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.clone()),
                _ => None,
            })
            .collect();
        ext.session_update(
            sid,
            SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from(format!(
                " (Steered: {text})"
            )))),
        )?;
    }
    Ok(())
}

async fn run_turn(
    state: Arc<State>,
    request: PromptRequest,
) -> agent_client_protocol::Result<PromptResponse> {
    let sid = request.session_id.clone();
    let Some(ext) = state.ext() else {
        return Err(agent_client_protocol::Error::internal_error());
    };
    let n = {
        let mut sessions = state.sessions.lock().unwrap_or_else(|p| p.into_inner());
        let session = sessions.entry(sid.0.to_string()).or_default();
        session.prompts += 1;
        session.prompts
    };
    let text: String = request
        .prompt
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect();

    // A title the agent generated, tagged in the negotiated namespace.
    // Every send answers `Ok(Delivery)`, `Withheld` when the client did
    // not ask for it (a standard or plain client): `?` passes that on and
    // fails the turn only on a closed connection or a message wrong as
    // written.
    let title: String = format!("Example: {}", text.chars().take(40).collect::<String>());
    if let Delivery::Withheld(why) = ext.title(&sid, title, TitleSource::Generated)? {
        eprintln!("agent example: no title for this client: {why}");
    }

    // One subagent run per prompt, when the client takes subagent events.
    if let Some(runs) = ext.subagent_emitter(&sid) {
        let support =
            SubagentSupport::new(vec![SubagentStream::Text], false, OutputRead::None, false);
        let native = format!("explorer-{n}");
        let snapshot = SubagentSnapshot::new(SubagentState::Running, support)
            .name("Explorer")
            .started_at_epoch_seconds(EpochSeconds::now())
            // A direct child of the session (a standard client needs the
            // lineage to place it; absent means "not known yet").
            .parent_run_id(None);
        runs.start(&native, snapshot).await?;
        let chunk = json!({"sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "Looked around the workspace."}});
        runs.output_value(&native, chunk, OutputIds::new()).await?;
        runs.snapshot(
            &native,
            SnapshotPatch::new()
                .state(SubagentState::Completed)
                .summary("Looked around the workspace")
                .ended_at_epoch_seconds(EpochSeconds::now()),
        )
        .await?;
    }

    // The answer, in a few chunks, taking steers between them.
    let words = ["You", " said:", " ", text.as_str(), "."];
    for word in words {
        tokio::time::sleep(Duration::from_millis(80)).await;
        apply_steers(&state, &ext, &sid, false)?;
        ext.session_update(
            &sid,
            SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from(
                word.to_owned(),
            ))),
        )?;
    }
    apply_steers(&state, &ext, &sid, true)?;

    // Usage of this turn, in the session's own ledger (the handle keeps one
    // per session: cumulative per scope, never shared between sessions).
    let mut rows = IndexMap::new();
    rows.insert(
        "example-model".to_owned(),
        ModelUsage::new(100 * n, 20u64, 0u64),
    );
    // A Core client gets the ledger (a standard one has no use for it: the
    // handle withholds it, and nothing is lost) …
    ext.usage(&sid, &format!("turn-{n}"), &rows)?;
    // … and every client the context occupancy, in standard ACP.
    ext.context_usage(&sid, 120 * n, 200_000, None)?;
    Ok(PromptResponse::new(StopReason::EndTurn))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> agent_client_protocol::Result<()> {
    let state = Arc::new(State::default());
    let (on_init, on_new, on_prompt, on_ext, on_standard) = (
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
    );
    Agent
        .v1()
        .name("acp-extension-core-example")
        .on_receive_request(
            async move |request: InitializeRequest,
                        responder: Responder<InitializeResponse>,
                        cx: ConnectionTo<Client>| {
                // Steering for standard clients too: `_meta.steering`.
                let response = advertise_steering(
                    InitializeResponse::new(ProtocolVersion::V1)
                        .agent_info(Implementation::new(
                            "acp-extension-core-example",
                            env!("CARGO_PKG_VERSION"),
                        ))
                        .agent_capabilities(capabilities()),
                );
                let ext = AgentExtensions::from_initialize(cx, &request, &response);
                *on_init.ext.lock().unwrap_or_else(|p| p.into_inner()) = Some(ext);
                responder.respond(response)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_: NewSessionRequest,
                        responder: Responder<NewSessionResponse>,
                        _cx: ConnectionTo<Client>| {
                let mut sessions = on_new.sessions.lock().unwrap_or_else(|p| p.into_inner());
                let id = format!("example-{}", sessions.len() + 1);
                sessions.insert(id.clone(), Session::default());
                responder.respond(NewSessionResponse::new(id))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest,
                        responder: Responder<PromptResponse>,
                        cx: ConnectionTo<Client>| {
                // The turn is open for steers from here on.
                if let Some(s) = on_prompt
                    .sessions
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get_mut(&*request.session_id.0)
                {
                    s.steers = Some(Vec::new());
                }
                // Off the dispatch loop: later messages (steers) are
                // handled while the turn runs.
                let state = on_prompt.clone();
                cx.spawn(
                    async move { responder.respond_with_result(run_turn(state, request).await) },
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: AnyExtensionRequest,
                        responder: Responder<ExtensionResponse>,
                        _cx: ConnectionTo<Client>| {
                let handler = Handler(on_ext.clone());
                responder.respond_with_result(handle_any(&handler, request).await)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            // `_session/steering` and `_session/goal`, served by the same
            // handler.
            async move |request: StandardRequest,
                        responder: Responder<StandardResponse>,
                        _cx: ConnectionTo<Client>| {
                let handler = Handler(on_standard.clone());
                responder.respond_with_result(handle_standard(&handler, request).await)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_to(Stdio::new())
        .await
}
