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
    EmptyResponse, GoalControlRequest, GoalControlResponse, GoalStatus, SteerOutcome,
    SteerResponse, SubagentCancelRequest, SubagentOutputRequest, SubagentOutputResponse,
    SubagentsListRequest, SubagentsListResponse,
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
    match acp_extension_core::methods::feature_of(path) {
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
            let text = r
                .prompt
                .iter()
                .filter_map(|b| match b.block() {
                    ContentBlock::Text(t) => Some(t.text.clone()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n");
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
    let mut inner = shared.lock();
    let session = open_session(&mut inner, session_id)?;
    let live = session.live.as_ref().expect("open");
    let outcome = match &live.turn {
        Some(turn) if turn.steer.send(Steer { steer_id, text }).is_ok() => SteerOutcome::Injected,
        _ => SteerOutcome::Failed,
    };
    to_value(SteerResponse::new(outcome))
}

/// `session/goal`: the status-only actions (`pause`, `clear`), accepted
/// while a prompt runs; `set` and `resume` start work and travel on
/// `session/prompt` as `_meta.<ns>.goalControl`.
fn goal(shared: &Arc<Shared>, request: GoalControlRequest) -> Result<Value, Error> {
    let (session_id, pause) = match &request {
        GoalControlRequest::Pause(r) => (r.session_id.clone(), true),
        GoalControlRequest::Clear(r) => (r.session_id.clone(), false),
        other => {
            return Err(invalid_params(
                "action",
                format!(
                    "{:?} starts work: send it as session/prompt _meta.<ns>.goalControl (promptActions); this request accepts pause and clear (controlActions)",
                    other.tag()
                ),
            ));
        }
    };
    let mut inner = shared.lock();
    let ns = inner.client.ns;
    let session = open_session(&mut inner, &session_id)?;
    if pause {
        if let Some(g) = &mut session.goal {
            g.status = GoalStatus::Paused;
            g.last_reason = Some("paused by the client".to_owned());
            g.updated = time::now();
        }
    } else {
        session.goal = None;
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
    to_value(GoalControlResponse::new(snapshot))
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
    let (ns, events) = (inner.client.ns, inner.client.subagent_events);
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
