//! `initialize` and the session lifecycle: new, load, resume, fork, list,
//! close, config options and cancel.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use acp_extension_core::capabilities::{AdvertiseExtensions, Feature};
use acp_extension_core::meta::{self, MetaError, fields};
use acp_extension_core::namespace::{self, Namespace};
use acp_extension_core::negotiation::{Side, negotiate};
use acp_extension_core::plan_mode::plan_mode_config_option;
use acp_extension_core::session::{MessagePhase, WorktreeProject};
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CloseSessionRequest, ContentBlock, ContentChunk, ForkSessionRequest,
    ForkSessionResponse, Implementation, InitializeRequest, InitializeResponse,
    ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, LoadSessionResponse, Meta,
    NewSessionRequest, NewSessionResponse, ResumeSessionRequest, ResumeSessionResponse,
    SessionCapabilities, SessionCloseCapabilities, SessionConfigOption, SessionForkCapabilities,
    SessionInfo, SessionListCapabilities, SessionResumeCapabilities, SessionUpdate,
    SetSessionConfigOptionResponse,
};
use agent_client_protocol::{Error, ErrorCode};
use serde_json::{Value, json};

use super::ServeNamespace;
use super::params::{self, invalid_params, invalid_state, unknown_session};
use super::state::{ClientSide, Inner, Live, Session, Shared, TurnRecord};
use super::wire::{self, Cx};
use crate::time;

fn to_value<T: serde::Serialize>(v: T) -> Result<Value, Error> {
    serde_json::to_value(v).map_err(Error::into_internal_error)
}

/// `initialize`: negotiate the version, advertise every capability, read
/// the client's extension capabilities.
pub(crate) fn initialize(shared: &Arc<Shared>, params: &Value, cx: &Cx) -> Result<Value, Error> {
    let _: InitializeRequest = params::parse(params)?;
    // The client's capabilities in either shape: v1's `clientCapabilities`,
    // or v2's `capabilities` from a client that asked for v2 and is
    // answered in v1.
    let raw_caps = acp_extension_core::negotiation::initialize_capabilities(params, Side::Client)
        .cloned()
        .unwrap_or(Value::Null);
    let ns = match shared.namespaces {
        ServeNamespace::Ua => Namespace::Ua,
        ServeNamespace::Lody => Namespace::Lody,
        // Advertising both spellings, serve writes what the client reads.
        ServeNamespace::Both => acp_extension_core::negotiation::write_namespace(&raw_caps),
    };
    let ext = shared.advertised.capabilities();
    let capabilities = AgentCapabilities::new()
        .load_session(true)
        .session_capabilities(
            SessionCapabilities::new()
                .list(SessionListCapabilities::new())
                .resume(SessionResumeCapabilities::new())
                .close(SessionCloseCapabilities::new())
                .fork(SessionForkCapabilities::new()),
        )
        .extensions(&ext, shared.namespaces.set());
    let negotiated = negotiate(&to_value(&capabilities)?, &raw_caps);
    let elicitation_form = raw_caps
        .pointer("/elicitation/form")
        .is_some_and(|f| !f.is_null());
    let boolean_config = raw_caps
        .pointer("/session/configOptions/boolean")
        .is_some_and(Value::is_object);
    shared.bind(cx, negotiated.clone(), ns);
    {
        let mut inner = shared.lock();
        inner.initialized = true;
        inner.client = ClientSide {
            ns,
            reads_runs: negotiated.subagent_dialect().is_some(),
            answer_notes: negotiated.answer_notes(),
            elicitation_form,
            boolean_config,
            mcp_apps: negotiated.is_active(Feature::McpApps),
        };
    }
    // ACP v1 is the only version this agent speaks; a client asking for a
    // newer one gets v1 and decides whether to continue.
    let response = InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(capabilities)
        .agent_info(
            Implementation::new("acp-ext-serve", env!("CARGO_PKG_VERSION"))
                .title("ACP Extension Core reference agent".to_string()),
        );
    // `_session/steering` is served with steering, and advertised where the
    // official adapters advertise it.
    if shared.has(Feature::Steering) {
        to_value(acp_extension_core::standard::advertise_steering(response))
    } else {
        to_value(response)
    }
}

/// Contract metadata read from a session request's `_meta`.
#[derive(Debug, Default)]
struct Extras {
    project: Option<PathBuf>,
    model_id: Option<String>,
    plan_mode: Option<bool>,
}

fn field(ns: Namespace, key: &str, rest: &str) -> String {
    if rest.is_empty() {
        format!("_meta.{}.{key}", ns.key())
    } else {
        format!("_meta.{}.{key}.{rest}", ns.key())
    }
}

/// `-32602` for a contract field under `_meta` that breaks its type.
pub(crate) fn meta_error(e: MetaError) -> Error {
    let violations: Vec<Value> = e
        .violations
        .iter()
        .map(|v| json!({"path": format!("/_meta{}", v.pointer), "rule": v.rule.id(), "message": v.message()}))
        .collect();
    Error::new(ErrorCode::INVALID_PARAMS, format!("Invalid params: {e}"))
        .data(json!({ "field": format!("_meta.{}.{}", e.namespace.key(), e.key), "violations": violations }))
}

/// The `_meta` object of request params (`null` counts as absent).
pub(crate) fn request_meta(params: &Value) -> Result<Option<&Meta>, Error> {
    match params.get("_meta") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(_) => Err(invalid_params("_meta", "expected an object")),
    }
}

/// Reads `worktreeProject` and `sessionConfig` (when advertised), failing
/// with `-32602` on a malformed value or an unresolvable project root.
fn extras(shared: &Shared, params: &Value) -> Result<Extras, Error> {
    let mut out = Extras::default();
    let Some(meta) = request_meta(params)? else {
        return Ok(out);
    };
    if shared.has(Feature::WorktreeProject)
        && let Some(project) = meta::read::<fields::WorktreeProject>(meta).map_err(meta_error)?
    {
        let ns = namespace::read_key(meta, "worktreeProject").map_or(Namespace::Lody, |(ns, _)| ns);
        out.project = Some(resolve_project(ns, &project)?);
    }
    if shared.has(Feature::SessionConfig)
        && let Some(config) = meta::read::<fields::SessionConfig>(meta).map_err(meta_error)?
    {
        let ns = namespace::read_key(meta, "sessionConfig").map_or(Namespace::Lody, |(ns, _)| ns);
        out.model_id = config.model_id.clone();
        if out.model_id.as_deref() == Some("") {
            return Err(invalid_params(
                &field(ns, "sessionConfig", "modelId"),
                "must not be empty",
            ));
        }
        // Unsupported selections are left out; plan_mode must be a boolean.
        if let Some(value) = config.config_option_values.get("plan_mode") {
            match value.as_bool() {
                Some(b) => out.plan_mode = Some(b),
                None => {
                    return Err(invalid_params(
                        &field(ns, "sessionConfig", "configOptionValues.plan_mode"),
                        "plan_mode takes a boolean",
                    ));
                }
            }
        }
    }
    Ok(out)
}

/// The project root must be an existing absolute directory on this host.
fn resolve_project(ns: Namespace, project: &WorktreeProject) -> Result<PathBuf, Error> {
    let path = project.origin_project_path.as_str();
    let at = field(ns, "worktreeProject", "originProjectPath");
    let p = Path::new(path);
    if !p.is_absolute() {
        return Err(invalid_params(
            &at,
            format!("project root {path:?} is not an absolute path"),
        ));
    }
    match std::fs::canonicalize(p) {
        Ok(resolved) if resolved.is_dir() => Ok(p.to_path_buf()),
        _ => Err(invalid_params(
            &at,
            format!("project root {path:?} cannot be resolved to a directory on the agent host"),
        )),
    }
}

fn check_dirs(cwd: &Path, additional: &[PathBuf]) -> Result<(), Error> {
    if !cwd.is_absolute() {
        return Err(invalid_params("cwd", "must be an absolute path"));
    }
    for (i, d) in additional.iter().enumerate() {
        if !d.is_absolute() {
            return Err(invalid_params(
                &format!("additionalDirectories[{i}]"),
                "must be an absolute path",
            ));
        }
    }
    Ok(())
}

fn not_closing(inner: &Inner) -> Result<(), Error> {
    if inner.closing {
        Err(invalid_state("the connection is closing"))
    } else {
        Ok(())
    }
}

fn apply_config(session: &mut Session, extras: &Extras) {
    if let Some(m) = &extras.model_id {
        session.model_id = m.clone();
    }
    if let Some(p) = extras.plan_mode {
        session.plan_mode = p;
    }
}

/// `_meta` of a session response: the effective worktree assignment.
fn response_meta(shared: &Shared, session: &Session) -> Option<Meta> {
    let project = session
        .project
        .as_ref()
        .filter(|_| shared.has(Feature::WorktreeProject))?;
    shared.meta::<fields::WorktreeProject>(WorktreeProject::new(
        project.to_string_lossy().into_owned(),
    ))
}

fn config_options(inner: &Inner, session: &Session) -> Option<Vec<SessionConfigOption>> {
    inner
        .client
        .boolean_config
        .then(|| vec![plan_mode_config_option(session.plan_mode)])
}

fn open_lifetime(inner: &mut Inner, session_id: &str) -> Live {
    let generation = inner.counters.generation();
    Live::new(
        generation,
        session_id,
        inner.client.ns,
        inner.counters.run_ids.clone(),
    )
}

/// `session/new`.
pub(crate) fn new_session(shared: &Arc<Shared>, params: &Value) -> Result<Value, Error> {
    let request: NewSessionRequest = params::parse(params)?;
    check_dirs(&request.cwd, &request.additional_directories)?;
    let extras = extras(shared, params)?;
    let mut inner = shared.lock();
    not_closing(&inner)?;
    let (seq, id) = inner.counters.session();
    let mut session = Session::new(id.clone(), seq, request.cwd.clone());
    session.additional_directories = request.additional_directories.clone();
    session.project = extras.project.clone();
    apply_config(&mut session, &extras);
    session.live = Some(open_lifetime(&mut inner, &id));
    let response = NewSessionResponse::new(id.clone())
        .config_options(config_options(&inner, &session))
        .meta(response_meta(shared, &session));
    inner.sessions.insert(id, session);
    to_value(response)
}

/// Sends the transcript of `session` as `session/update`s.
pub(crate) fn replay(shared: &Shared, ns: Namespace, session: &Session) {
    for turn in &session.history {
        shared.update(
            &session.id,
            SessionUpdate::UserMessageChunk(ContentChunk::new(ContentBlock::from(
                turn.user_text.clone(),
            ))),
        );
        shared.update(
            &session.id,
            SessionUpdate::AgentMessageChunk(
                ContentChunk::new(ContentBlock::from(turn.answer.clone())).meta(
                    wire::MetaBuilder::new(ns)
                        .with::<fields::MessagePhase>(MessagePhase::FinalAnswer)
                        .with::<fields::TurnId>(turn.turn_id.clone())
                        .build(),
                ),
            ),
        );
    }
}

/// `session/load` (with a transcript replay) and `session/resume` (without).
pub(crate) fn load(
    shared: &Arc<Shared>,
    params: &Value,
    replay_history: bool,
) -> Result<Value, Error> {
    let (session_id, cwd, additional) = if replay_history {
        let r: LoadSessionRequest = params::parse(params)?;
        (r.session_id.to_string(), r.cwd, r.additional_directories)
    } else {
        let r: ResumeSessionRequest = params::parse(params)?;
        (r.session_id.to_string(), r.cwd, r.additional_directories)
    };
    check_dirs(&cwd, &additional)?;
    let extras = extras(shared, params)?;
    let mut inner = shared.lock();
    not_closing(&inner)?;
    if !inner.sessions.contains_key(&session_id) {
        return Err(unknown_session(&session_id));
    }
    let reopened = inner.sessions[&session_id].live.is_none();
    let live = reopened.then(|| open_lifetime(&mut inner, &session_id));
    let ns = inner.client.ns;
    let session = inner.sessions.get_mut(&session_id).expect("checked above");
    session.cwd = cwd;
    session.additional_directories = additional;
    // Load and resume fill an unassigned session and keep an existing assignment.
    if session.project.is_none() {
        session.project = extras.project.clone();
    }
    apply_config(session, &extras);
    if let Some(live) = live {
        session.live = Some(live);
    }
    if replay_history {
        replay(shared, ns, session);
    }
    let session = &inner.sessions[&session_id];
    let options = config_options(&inner, session);
    let meta = response_meta(shared, session);
    if replay_history {
        to_value(
            LoadSessionResponse::new()
                .config_options(options)
                .meta(meta),
        )
    } else {
        to_value(
            ResumeSessionResponse::new()
                .config_options(options)
                .meta(meta),
        )
    }
}

/// `session/fork`, honouring `_meta.<ns>.forkAtTurn`.
pub(crate) fn fork(shared: &Arc<Shared>, params: &Value, _cx: &Cx) -> Result<Value, Error> {
    let request: ForkSessionRequest = params::parse(params)?;
    check_dirs(&request.cwd, &request.additional_directories)?;
    let extras = extras(shared, params)?;
    let source_id = request.session_id.to_string();
    let at_turn = fork_at_turn(shared, params)?;
    let mut inner = shared.lock();
    not_closing(&inner)?;
    let Some(source) = inner.sessions.get(&source_id) else {
        return Err(unknown_session(&source_id));
    };
    let history: Vec<TurnRecord> = match &at_turn {
        None => source.history.clone(),
        Some((ns, turn_id)) => {
            let Some(pos) = source.history.iter().position(|t| &t.turn_id == turn_id) else {
                return Err(invalid_params(
                    &field(*ns, "forkAtTurn", "turnId"),
                    format!("session {source_id:?} has no completed turn {turn_id:?}"),
                ));
            };
            source.history[..=pos].to_vec()
        }
    };
    let (title, project, model_id, plan_mode, context_used) = (
        source.title.clone(),
        source.project.clone(),
        source.model_id.clone(),
        source.plan_mode,
        source.context_used,
    );
    let (seq, id) = inner.counters.session();
    let mut session = Session::new(id.clone(), seq, request.cwd.clone());
    session.additional_directories = request.additional_directories.clone();
    session.history = history;
    session.title = title;
    session.model_id = model_id;
    session.plan_mode = plan_mode;
    session.context_used = context_used;
    // Fork targets use the requested project; otherwise they keep the source's.
    session.project = extras.project.clone().or(project);
    apply_config(&mut session, &extras);
    session.live = Some(open_lifetime(&mut inner, &id));
    let response = ForkSessionResponse::new(id.clone())
        .config_options(config_options(&inner, &session))
        .meta(response_meta(shared, &session));
    inner.sessions.insert(id, session);
    to_value(response)
}

/// Reads `_meta.<ns>.forkAtTurn` when advertised: `Some((ns, turnId))`
/// for a specific turn, `None` for "fork everything".
fn fork_at_turn(shared: &Shared, params: &Value) -> Result<Option<(Namespace, String)>, Error> {
    if !shared.has(Feature::ForkAtTurn) {
        return Ok(None);
    }
    let Some(meta) = request_meta(params)? else {
        return Ok(None);
    };
    let Some(at) = meta::read::<fields::ForkAtTurn>(meta).map_err(meta_error)? else {
        return Ok(None);
    };
    let ns = namespace::read_key(meta, "forkAtTurn").map_or(Namespace::Lody, |(ns, _)| ns);
    Ok(at.turn_id.map(|t| (ns, t)))
}

/// `session/list`: every session of this connection, oldest first.
pub(crate) fn list(shared: &Arc<Shared>, params: &Value) -> Result<Value, Error> {
    let request: ListSessionsRequest = params::parse(params)?;
    let inner = shared.lock();
    let mut sessions: Vec<&Session> = inner
        .sessions
        .values()
        .filter(|s| request.cwd.as_ref().is_none_or(|cwd| &s.cwd == cwd))
        .collect();
    sessions.sort_by_key(|s| s.seq);
    let infos = sessions
        .into_iter()
        .map(|s| {
            SessionInfo::new(s.id.clone(), s.cwd.clone())
                .title(s.title.clone())
                .updated_at(time::rfc3339(s.updated_at))
        })
        .collect();
    to_value(ListSessionsResponse::new(infos))
}

/// `session/close`: cancels the session's work and ends its lifetime.
pub(crate) fn close(shared: &Arc<Shared>, params: &Value) -> Result<Value, Error> {
    let request: CloseSessionRequest = params::parse(params)?;
    let id = request.session_id.to_string();
    let mut inner = shared.lock();
    let ns = inner.client.ns;
    let events = inner.client.reads_runs;
    let Some(session) = inner.sessions.get_mut(&id) else {
        return Err(unknown_session(&id));
    };
    if let Some(mut live) = session.live.take() {
        // Live subagent runs end here, with their root tool calls.
        for task in live.runs.live_task_ids() {
            super::runs::cancel_run(
                shared,
                ns,
                events,
                &id,
                &mut live,
                &task,
                "the session was closed",
            );
        }
        live.cancel_all();
        // The lifetime ends here: report the session idle with no work.
        live.turn = None;
        live.background.clear();
        live.waiting = 0;
        shared.sync_activity(&id, &mut live);
    }
    Ok(json!({}))
}

/// `session/set_config_option`: only `plan_mode` (boolean). A boolean
/// value is `{"type": "boolean", "value": true}`; a bare JSON boolean
/// `value` is accepted too.
pub(crate) fn set_config_option(shared: &Arc<Shared>, params: &Value) -> Result<Value, Error> {
    let id = params::session_id(params)?;
    let config_id = match params.get("configId") {
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(invalid_params("configId", "expected a string")),
        None => return Err(invalid_params("configId", "missing field `configId`")),
    };
    if config_id != "plan_mode" {
        return Err(invalid_params(
            "configId",
            format!("unknown config option {config_id:?}; this agent has plan_mode"),
        ));
    }
    let value = match (
        params.get("type").and_then(Value::as_str),
        params.get("value"),
    ) {
        (None | Some("boolean"), Some(Value::Bool(b))) => *b,
        (_, None) => return Err(invalid_params("value", "missing field `value`")),
        _ => return Err(invalid_params("value", "plan_mode takes a boolean")),
    };
    let mut inner = shared.lock();
    let Some(session) = inner.sessions.get_mut(&id).filter(|s| s.live.is_some()) else {
        return Err(unknown_session(&id));
    };
    session.plan_mode = value;
    to_value(SetSessionConfigOptionResponse::new(vec![
        plan_mode_config_option(value),
    ]))
}

/// `session/cancel`: ends the running turn with `cancelled`; with no turn
/// in flight it cancels the session's background work. Unknown ids are a
/// no-op (it is a notification).
pub(crate) fn cancel(shared: &Arc<Shared>, session_id: &str, _cx: &Cx) {
    let mut inner = shared.lock();
    if !inner.sessions.contains_key(session_id) {
        cancel_child(shared, &mut inner, session_id);
        return;
    }
    if let Some(live) = inner.sessions.get(session_id).and_then(|s| s.live.as_ref()) {
        match &live.turn {
            Some(turn) => turn.cancel.cancel(),
            None => {
                for task in live.background.values() {
                    task.cancel.cancel();
                }
            }
        }
    }
}

/// `session/cancel` of a standard client's child session: cancels the
/// subagent run written as that child (as `_<ns>/subagents/cancel` does).
fn cancel_child(shared: &Arc<Shared>, inner: &mut Inner, child: &str) {
    let Some(ext) = shared.handle() else { return };
    let (ns, events) = (inner.client.ns, inner.client.reads_runs);
    let child = agent_client_protocol::v1::schema::SessionId::new(child);
    for (root, session) in inner.sessions.iter_mut() {
        let Some(run) = ext.standard_child_run(
            &agent_client_protocol::v1::schema::SessionId::new(root.as_str()),
            &child,
        ) else {
            continue;
        };
        let Some(live) = session.live.as_mut() else {
            return;
        };
        let task = live.runs.task_of_run(&run).map(str::to_owned);
        if let Some(task) = task {
            super::runs::cancel_run(
                shared,
                ns,
                events,
                root,
                live,
                &task,
                "cancelled by the client",
            );
        }
        return;
    }
}

/// Looks `session_id` up among open sessions.
pub(crate) fn open_session<'a>(
    inner: &'a mut Inner,
    session_id: &str,
) -> Result<&'a mut Session, Error> {
    inner
        .sessions
        .get_mut(session_id)
        .filter(|s| s.live.is_some())
        .ok_or_else(|| unknown_session(session_id))
}
