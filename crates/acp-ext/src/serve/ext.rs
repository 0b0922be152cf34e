//! The contract's extension requests (`_ua/…` or `_lody/…`).
//!
//! Params are parsed with the library's typed [`ExtensionRequest`]; only
//! advertised features are served, and any other extension method,
//! including the contract's own when not advertised, is `-32601`.

use std::sync::Arc;

use acp_extension_core::capabilities::Feature;
use acp_extension_core::mcp_apps::{
    McpAppLoadResponse, McpAppResourceReadResponse, McpCallToolResult, McpResourceContents,
};
use acp_extension_core::meta::fields;
use acp_extension_core::methods::ExtensionRequest;
use acp_extension_core::rate_limits::{
    RateLimit, RateLimitScope, RateLimitWindow, RateLimitsSnapshot,
};
use acp_extension_core::session::{
    EmptyResponse, GoalControlRequest, GoalControlResponse, GoalSnapshot, GoalStatus, SteerOutcome,
    SteerResponse, SubagentCancelRequest, SubagentOutputRequest, SubagentOutputResponse,
    SubagentsListRequest, SubagentsListResponse,
};
use acp_extension_core::standard::{
    GOAL_METHOD, STEERING_METHOD, SteeringRequest, SteeringResponse,
};
use acp_extension_core::wire::{EpochSeconds, Percent};
use agent_client_protocol::Error;
use agent_client_protocol::v1::schema::{ContentBlock, SessionInfoUpdate, SessionUpdate};
use serde::Serialize;
use serde_json::Value;

use super::ledger::DEFAULT_MODEL;
use super::params::{invalid_params, method_not_found, unknown_session};
use super::runs::cancel_run;
use super::sessions::{open_session, replay};
use super::state::{AppCall, Goal, Inner, Shared, Steer};
use super::wire::{self, nn};
use crate::time;

fn to_value<T: Serialize>(v: T) -> Result<Value, Error> {
    serde_json::to_value(v).map_err(Error::into_internal_error)
}

/// Whether the contract method `path` is served by an advertised feature
/// (an unadvertised method is "not found" even with bad params).
fn served(shared: &Shared, path: &str) -> bool {
    match acp_extension_core::methods::method_info(path).map(|m| m.feature) {
        // Two-sided: served only when the client advertised it too.
        Some(Feature::McpApps) => shared.has(Feature::McpApps) && shared.lock().client.mcp_apps,
        Some(feature) => shared.has(feature),
        None => false,
    }
}

/// Answers one extension request.
pub(crate) fn request(shared: &Arc<Shared>, method: &str, params: &Value) -> Result<Value, Error> {
    let path = acp_extension_core::namespace::split_method(method).map_or("", |(_, p)| p);
    let is_request = acp_extension_core::methods::method_kind(method)
        == Some(acp_extension_core::methods::MethodKind::Request);
    if !is_request || !served(shared, path) {
        return Err(method_not_found(method));
    }
    let request = match ExtensionRequest::parse(method, params) {
        Ok(Some((_, request))) => request,
        Ok(None) => return Err(method_not_found(method)),
        Err(e) => return Err(e.to_rpc_error()),
    };
    match request {
        ExtensionRequest::RateLimitsGet(_) => to_value(rate_limits(&shared.lock())),
        ExtensionRequest::SessionSteer(r) => {
            let text = steer_text(r.content_blocks());
            steer(shared, &r.session_id, r.steer_id, text)
        }
        ExtensionRequest::SessionGoal(r) => goal(shared, r),
        ExtensionRequest::SessionHistoryRead(r) => {
            let inner = shared.lock();
            let Some(session) = inner.sessions.get(&r.session_id) else {
                return Err(unknown_session(&r.session_id));
            };
            replay(shared, inner.client.ns, session);
            to_value(EmptyResponse::new())
        }
        ExtensionRequest::SubagentsList(r) => subagents_list(shared, r),
        ExtensionRequest::SubagentsCancel(r) => subagents_cancel(shared, r),
        ExtensionRequest::SubagentsOutput(r) => subagents_output(shared, r),
        ExtensionRequest::McpAppsLoad(r) => {
            let app = app_call(shared, &r.session_id, &r.tool_call_id)?;
            to_value(McpAppLoadResponse::new(app.app, app.input, app.result))
        }
        ExtensionRequest::McpAppsResourceRead(r) => {
            let app = app_call(shared, &r.session_id, &r.tool_call_id)?;
            if r.uri != app.app.resource_uri {
                return Err(invalid_params(
                    "uri",
                    format!(
                        "resource {:?} is not the app's UI resource ({:?})",
                        r.uri, app.app.resource_uri
                    ),
                ));
            }
            to_value(McpAppResourceReadResponse::new(vec![
                McpResourceContents::new(r.uri)
                    .mime_type("text/html;profile=mcp-app")
                    .text(APP_HTML),
            ]))
        }
        ExtensionRequest::McpAppsToolCall(r) => {
            let app = app_call(shared, &r.session_id, &r.tool_call_id)?;
            if r.name != app.app.tool {
                return Err(invalid_params(
                    "name",
                    format!(
                        "tool {:?} is not on this server or not visible to the app (server {:?})",
                        r.name, app.app.server
                    ),
                ));
            }
            let points = r
                .arguments
                .as_ref()
                .and_then(|a| a.get("series"))
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            to_value(McpCallToolResult::new(vec![serde_json::json!({
                "type": "text",
                "text": format!("Chart redrawn: {points} points."),
            })]))
        }
        _ => Err(method_not_found(method)),
    }
}

/// The synthetic rate limits: deterministic in the number of prompts
/// accepted on this connection.
pub(crate) fn rate_limits(inner: &Inner) -> RateLimitsSnapshot {
    let n = inner.counters.prompts;
    let now = time::now();
    let window = |label: &str, used: u64, secs: u64| {
        RateLimitWindow::new(
            Percent::new(used as f64).unwrap_or_default(),
            Some(nn(secs as f64)),
            Some(EpochSeconds::from_secs(now + secs)),
        )
        .label(label)
    };
    RateLimitsSnapshot::new(vec![
        RateLimit::new(
            "serve-default",
            RateLimitScope::new("acp-ext-serve").model_id(DEFAULT_MODEL),
            vec![
                window("5h", (n * 7) % 100, 18_000),
                window("Weekly", (n * 3) % 100, 604_800),
            ],
        )
        .limit_name(Some("Synthetic limits".to_owned()))
        .plan_name(Some("Reference".to_owned())),
    ])
    .fetched_at_epoch_seconds(now)
}

/// `session/steer`: inject into the running turn (`injected`), or `failed`
/// when no turn is running.
fn steer(
    shared: &Arc<Shared>,
    session_id: &str,
    steer_id: String,
    text: String,
) -> Result<Value, Error> {
    let injected = inject(shared, session_id, steer_id, text, false)?;
    to_value(SteerResponse::new(if injected {
        SteerOutcome::Injected
    } else {
        SteerOutcome::Failed
    }))
}

/// Hands a steer to the session's running turn; whether there was one.
fn inject(
    shared: &Arc<Shared>,
    session_id: &str,
    steer_id: String,
    text: String,
    standard: bool,
) -> Result<bool, Error> {
    let mut inner = shared.lock();
    let session = open_session(&mut inner, session_id)?;
    let live = session.live.as_ref().expect("open");
    let steer = Steer {
        steer_id,
        text,
        standard,
    };
    Ok(matches!(&live.turn, Some(turn) if turn.steer.send(steer).is_ok()))
}

/// The text of a steer's content blocks.
fn steer_text<'a>(blocks: impl Iterator<Item = &'a ContentBlock>) -> String {
    blocks
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The official adapters' requests, served beside the contract's when
/// their feature is advertised: `_session/steering` (steering) and
/// `_session/goal` (goal).
pub(crate) fn standard_request(
    shared: &Arc<Shared>,
    method: &str,
    params: &Value,
) -> Result<Value, Error> {
    match method {
        STEERING_METHOD if shared.has(Feature::Steering) => {
            let r: SteeringRequest = super::params::parse(params)?;
            // No steer id reaches a standard client (it gets no
            // `steer_applied`); the request's own, if any, is kept.
            let steer_id = r
                .steer_id
                .clone()
                .unwrap_or_else(|| STEERING_METHOD.to_owned());
            let injected = inject(
                shared,
                &r.session_id.0,
                steer_id,
                steer_text(r.prompt.iter()),
                true,
            )?;
            // serve never starts a turn of its own: without
            // `promptRequired`, a steer with no turn running fails.
            to_value(match (injected, r.prompt_required()) {
                (true, _) => SteeringResponse::Injected,
                (false, true) => SteeringResponse::no_running_turn(),
                (false, false) => SteeringResponse::Failed,
            })
        }
        GOAL_METHOD if shared.has(Feature::Goal) => {
            let request: GoalControlRequest = super::params::parse(params)?;
            goal_update(shared, request)?;
            to_value(EmptyResponse::new())
        }
        other => Err(method_not_found(other)),
    }
}

/// `session/goal`: the status-only actions (`pause`, `clear`), accepted
/// while a prompt runs; `set` and `resume` start work and travel on
/// `session/prompt` as `_meta.<ns>.goalControl`.
fn goal(shared: &Arc<Shared>, request: GoalControlRequest) -> Result<Value, Error> {
    if let GoalControlRequest::Set(_) | GoalControlRequest::Resume(_) = &request {
        return Err(invalid_params(
            "action",
            format!(
                "{:?} starts work: send it as session/prompt _meta.<ns>.goalControl (promptActions); this request accepts pause and clear (controlActions)",
                request.tag()
            ),
        ));
    }
    to_value(GoalControlResponse::new(goal_update(shared, request)?))
}

/// Applies a goal action to the session's goal and publishes the snapshot
/// on `session_info_update`; returns it. `set` and `resume`
/// only change the goal here (`_session/goal`); the contract's request
/// refuses them, as they travel on `session/prompt`.
fn goal_update(
    shared: &Arc<Shared>,
    request: GoalControlRequest,
) -> Result<Option<GoalSnapshot>, Error> {
    let now = time::now();
    let mut inner = shared.lock();
    let ns = inner.client.ns;
    let session_id = match &request {
        GoalControlRequest::Set(r) => r.session_id.clone(),
        GoalControlRequest::Pause(r)
        | GoalControlRequest::Resume(r)
        | GoalControlRequest::Clear(r) => r.session_id.clone(),
        other => {
            return Err(invalid_params(
                "action",
                format!("{:?} is not served", other.tag()),
            ));
        }
    };
    let session = open_session(&mut inner, &session_id)?;
    match request {
        GoalControlRequest::Set(r) => {
            session.goal = Some(Goal::new(r.objective, now));
        }
        GoalControlRequest::Pause(_) | GoalControlRequest::Resume(_) => {
            let resume = matches!(request, GoalControlRequest::Resume(_));
            if let Some(g) = &mut session.goal {
                g.status = if resume {
                    GoalStatus::Active
                } else {
                    GoalStatus::Paused
                };
                g.last_reason = Some(
                    if resume {
                        "resumed by the client"
                    } else {
                        "paused by the client"
                    }
                    .to_owned(),
                );
                g.updated = now;
            }
        }
        _ => session.goal = None,
    }
    let snapshot = session.goal.as_ref().map(Goal::snapshot);
    shared.update(
        &session_id,
        SessionUpdate::SessionInfoUpdate(
            SessionInfoUpdate::new().meta(
                wire::MetaBuilder::new(ns)
                    .with::<fields::Goal>(snapshot.clone())
                    .build(),
            ),
        ),
    );
    Ok(snapshot)
}

/// The app's HTML document (`text/html;profile=mcp-app`).
const APP_HTML: &str =
    "<!doctype html><html><body><h1>Chart</h1><canvas id=\"chart\"></canvas></body></html>";

/// The tool call an `_<ns>/mcp_apps/*` request is scoped to.
fn app_call(shared: &Shared, session_id: &str, tool_call_id: &str) -> Result<AppCall, Error> {
    let inner = shared.lock();
    if !inner.sessions.contains_key(session_id) {
        return Err(invalid_params(
            "sessionId",
            format!("session {session_id:?} does not exist on this connection"),
        ));
    }
    inner
        .apps
        .get(&(session_id.to_owned(), tool_call_id.to_owned()))
        .cloned()
        .ok_or_else(|| {
            invalid_params(
                "toolCallId",
                format!("session {session_id:?} has no MCP app tool call {tool_call_id:?}"),
            )
        })
}

fn subagents_list(shared: &Arc<Shared>, r: SubagentsListRequest) -> Result<Value, Error> {
    let mut inner = shared.lock();
    let session = open_session(&mut inner, &r.session_id)?;
    let live = session.live.as_ref().expect("open");
    to_value(SubagentsListResponse::new(
        live.runs.tasks(r.active_only.unwrap_or(false)),
    ))
}

fn unknown_task(session_id: &str, task_id: &str) -> Error {
    invalid_params(
        "taskId",
        format!("session {session_id:?} has no subagent task {task_id:?}"),
    )
}

fn subagents_cancel(shared: &Arc<Shared>, r: SubagentCancelRequest) -> Result<Value, Error> {
    let mut guard = shared.lock();
    let inner = &mut *guard;
    let (ns, events) = (inner.client.ns, inner.client.reads_runs);
    let session = open_session(inner, &r.session_id)?;
    let live = session.live.as_mut().expect("open");
    if live.runs.get(&r.task_id).is_none() {
        return Err(unknown_task(&r.session_id, &r.task_id));
    }
    let reason = r
        .reason
        .unwrap_or_else(|| "cancelled by the client".to_owned());
    // A finished run stays as it is: cancelling it is a no-op.
    cancel_run(shared, ns, events, &r.session_id, live, &r.task_id, &reason);
    to_value(EmptyResponse::new())
}

fn subagents_output(shared: &Arc<Shared>, r: SubagentOutputRequest) -> Result<Value, Error> {
    let tail = match r.tail.map(f64::from) {
        None => None,
        Some(t) if t.fract() == 0.0 => Some(t as usize),
        Some(_) => return Err(invalid_params("tail", "expected a whole number of lines")),
    };
    let mut inner = shared.lock();
    let session = open_session(&mut inner, &r.session_id)?;
    let live = session.live.as_ref().expect("open");
    let Some(record) = live.runs.get(&r.task_id) else {
        return Err(unknown_task(&r.session_id, &r.task_id));
    };
    let lines: Vec<&str> = record.output.lines().collect();
    let output = match tail {
        Some(n) if n < lines.len() => lines[lines.len() - n..].join("\n"),
        _ => lines.join("\n"),
    };
    to_value(SubagentOutputResponse::new(output))
}
