//! The contract's extension requests (`_ua/…` or `_lody/…`).
//!
//! Only advertised features are served; any other extension method,
//! including the contract's own when not advertised, is `-32601`.

use std::sync::Arc;

use acp_extension_core::namespace::split_method;
use agent_client_protocol::Error;
use agent_client_protocol::v1::schema::{ContentBlock, SessionInfoUpdate, SessionUpdate};
use serde::Deserialize;
use serde_json::{Value, json};

use super::params::{self, invalid_params, method_not_found, unknown_session};
use super::script::cancel_run;
use super::sessions::{open_session, replay};
use super::state::{DEFAULT_MODEL, Goal, Inner, Shared, Steer};
use super::time;
use super::wire::{self, Cx};

/// Answers one extension request.
pub(crate) fn request(shared: &Arc<Shared>, method: &str, params: &Value, cx: &Cx) -> Result<Value, Error> {
    let Some((_, path)) = split_method(method) else {
        return Err(method_not_found(method));
    };
    let feature = match path {
        "session/steer" => "steering",
        "session/goal" => "goal",
        "session/history/read" => "sessionHistory",
        "subagents/list" | "subagents/cancel" | "subagents/output" => "subagents",
        "rate_limits/get" => "rateLimits",
        _ => return Err(method_not_found(method)),
    };
    if !shared.has(feature) {
        return Err(method_not_found(method));
    }
    match path {
        "session/steer" => steer(shared, params),
        "session/goal" => goal(shared, params, cx),
        "session/history/read" => history(shared, params, cx),
        "subagents/list" => subagents_list(shared, params),
        "subagents/cancel" => subagents_cancel(shared, params, cx),
        "subagents/output" => subagents_output(shared, params),
        _ => {
            let _: RateLimitsGet = params::parse(params)?;
            Ok(rate_limits(&shared.lock()))
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct RateLimitsGet {
    session_id: Option<String>,
    account_id: Option<String>,
    model_id: Option<String>,
}

/// The synthetic rate limits: deterministic in the number of prompts
/// accepted on this connection.
pub(crate) fn rate_limits(inner: &Inner) -> Value {
    let n = inner.counters.prompts;
    let now = time::now();
    json!({
        "rateLimits": [{
            "limitId": "serve-default",
            "scope": {"providerId": "acp-ext-serve", "modelId": DEFAULT_MODEL},
            "limitName": "Synthetic limits",
            "planName": "Reference",
            "windows": [
                {"label": "5h", "usedPercent": (n * 7) % 100, "windowDurationSeconds": 18_000, "resetsAtEpochSeconds": now + 18_000},
                {"label": "Weekly", "usedPercent": (n * 3) % 100, "windowDurationSeconds": 604_800, "resetsAtEpochSeconds": now + 604_800}
            ]
        }],
        "fetchedAtEpochSeconds": now
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SteerParams {
    session_id: String,
    prompt: Vec<ContentBlock>,
    steer_id: String,
}

/// `session/steer`: inject into the running turn (`injected`), or `failed`
/// when no turn is running.
fn steer(shared: &Arc<Shared>, params: &Value) -> Result<Value, Error> {
    let p: SteerParams = params::parse(params)?;
    let text = p
        .prompt
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut inner = shared.lock();
    let session = open_session(&mut inner, &p.session_id)?;
    let live = session.live.as_ref().expect("open");
    let outcome = match &live.turn {
        Some(turn) => {
            let steer = Steer {
                steer_id: p.steer_id,
                text,
            };
            if turn.steer.send(steer).is_ok() {
                "injected"
            } else {
                "failed"
            }
        }
        None => "failed",
    };
    Ok(json!({ "outcome": outcome }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GoalParams {
    session_id: String,
    action: String,
    objective: Option<String>,
}

/// `session/goal`: the status-only actions (`pause`, `clear`), accepted
/// while a prompt runs; `set` and `resume` start work and travel on
/// `session/prompt` as `_meta.<ns>.goalControl`.
fn goal(shared: &Arc<Shared>, params: &Value, cx: &Cx) -> Result<Value, Error> {
    let p: GoalParams = params::parse(params)?;
    match p.action.as_str() {
        "pause" | "clear" => {}
        "set" | "resume" => {
            return Err(invalid_params(
                "action",
                format!(
                    "{:?} starts work: send it as session/prompt _meta.<ns>.goalControl (promptActions); this request accepts pause and clear (controlActions)",
                    p.action
                ),
            ));
        }
        other => {
            return Err(invalid_params(
                "action",
                format!("expected one of \"set\", \"pause\", \"resume\", \"clear\", got {other:?}"),
            ));
        }
    }
    let _ = p.objective;
    let mut inner = shared.lock();
    let ns = inner.client.ns;
    let session = open_session(&mut inner, &p.session_id)?;
    if p.action == "pause" {
        if let Some(g) = &mut session.goal {
            g.status = "paused";
            g.last_reason = Some("paused by the client".to_owned());
            g.updated = time::now();
        }
    } else {
        session.goal = None;
    }
    let snapshot = session.goal.as_ref().map(Goal::snapshot);
    wire::update(
        cx,
        &p.session_id,
        SessionUpdate::SessionInfoUpdate(
            SessionInfoUpdate::new().meta(wire::ns_meta(ns, json!({ "goal": snapshot }))),
        ),
    );
    Ok(json!({ "goal": snapshot }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionOnly {
    session_id: String,
}

/// `session/history/read`: replays the transcript as `session/update`s.
fn history(shared: &Arc<Shared>, params: &Value, cx: &Cx) -> Result<Value, Error> {
    let p: SessionOnly = params::parse(params)?;
    let inner = shared.lock();
    let Some(session) = inner.sessions.get(&p.session_id) else {
        return Err(unknown_session(&p.session_id));
    };
    replay(cx, inner.client.ns, session);
    Ok(json!({}))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListParams {
    session_id: String,
    active_only: Option<bool>,
}

fn subagents_list(shared: &Arc<Shared>, params: &Value) -> Result<Value, Error> {
    let p: ListParams = params::parse(params)?;
    let mut inner = shared.lock();
    let session = open_session(&mut inner, &p.session_id)?;
    let live = session.live.as_ref().expect("open");
    Ok(json!({ "tasks": live.runs.tasks(p.active_only.unwrap_or(false)) }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TaskParams {
    session_id: String,
    task_id: String,
    reason: Option<String>,
    tail: Option<f64>,
}

fn unknown_task(session_id: &str, task_id: &str) -> Error {
    invalid_params(
        "taskId",
        format!("session {session_id:?} has no subagent task {task_id:?}"),
    )
}

fn subagents_cancel(shared: &Arc<Shared>, params: &Value, cx: &Cx) -> Result<Value, Error> {
    let p: TaskParams = params::parse(params)?;
    let mut guard = shared.lock();
    let inner = &mut *guard;
    let (ns, events) = (inner.client.ns, inner.client.subagent_events);
    let session = open_session(inner, &p.session_id)?;
    let live = session.live.as_mut().expect("open");
    if live.runs.get(&p.task_id).is_none() {
        return Err(unknown_task(&p.session_id, &p.task_id));
    }
    let reason = p.reason.unwrap_or_else(|| "cancelled by the client".to_owned());
    // A finished run stays as it is: cancelling it is a no-op.
    cancel_run(shared, cx, ns, events, &p.session_id, live, &p.task_id, &reason);
    Ok(json!({}))
}

fn subagents_output(shared: &Arc<Shared>, params: &Value) -> Result<Value, Error> {
    let p: TaskParams = params::parse(params)?;
    let tail = match p.tail {
        None => None,
        Some(t) if t >= 0.0 && t.fract() == 0.0 => Some(t as usize),
        Some(_) => return Err(invalid_params("tail", "expected a non-negative integer")),
    };
    let mut inner = shared.lock();
    let session = open_session(&mut inner, &p.session_id)?;
    let live = session.live.as_ref().expect("open");
    let Some(record) = live.runs.get(&p.task_id) else {
        return Err(unknown_task(&p.session_id, &p.task_id));
    };
    let lines: Vec<&str> = record.output.lines().collect();
    let output = match tail {
        Some(n) if n < lines.len() => lines[lines.len() - n..].join("\n"),
        _ => lines.join("\n"),
    };
    Ok(json!({ "output": output }))
}
