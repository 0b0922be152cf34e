//! The legacy `_acp_ext:*` payloads (the 0.0.5 API some adapters still
//! emit), mapped onto the same state and marked [`Dialect::Legacy`]. The
//! contract allows this consumer-side compatibility for a bounded time;
//! adapters must not emit them.
//!
//! * `_acp_ext:session_usage_update` `{usage, modelUsage?}` has no
//!   `sessionId`: it belongs to the connection's current session (the last
//!   one started or prompted), unscoped, without `delta`; a `null`
//!   `contextWindow` is dropped first.
//! * `_acp_ext:codex_proposed_plan` `{sessionId, turnId, markdown,
//!   status}` is the session's markdown plan (`planId` = `turnId`);
//!   `cleared` removes it.
//! * `_acp_ext:session_rate_limits` becomes one `RateLimit`, upserted like
//!   any other: `limitId` from the legacy `limitId`, else `limitName`, else
//!   `legacy`; provider `providerId`, else the agent's `agentInfo.name`,
//!   else `unknown`; minutes ×60; a reset
//!   time ≥ 10^12 is milliseconds (divided, floored), ≤ 0 is `null`;
//!   `usedPercent` clamped to 0..100 (claude's fraction 0..1 ×100); a
//!   clamp (`percent-clamped`) and a time in milliseconds
//!   (`epoch-milliseconds`) are recorded at their field, folded;
//!   without `windows`, `fiveHour` and `sevenDay` become 18000 s and
//!   604800 s windows, except that codex's lone `fiveHour` is its weekly
//!   window; an `extraUsage` that is a valid `RateLimitWallet` is the
//!   row's `wallet`. `apiUnavailable` and `schemaVersion` are not mapped.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::*;
use crate::methods::{ContractMethod, ExtensionNotification};
use crate::namespace::Namespace;
use crate::standard::epoch_seconds as epoch;
use crate::violation::Violation;

pub(super) const USAGE: &str = "_acp_ext:session_usage_update";
pub(super) const RATE_LIMITS: &str = "_acp_ext:session_rate_limits";

pub(super) const PROPOSED_PLAN: &str = "_acp_ext:codex_proposed_plan";

pub(super) fn is_legacy(method: &str) -> bool {
    method == USAGE || method == RATE_LIMITS || method == PROPOSED_PLAN
}

/// Whether `method` is a legacy `_acp_ext:*` method the state reads
/// (`session_usage_update`, `session_rate_limits`, `codex_proposed_plan`).
/// Any other `_acp_ext:*` method is unknown, to the state and to a
/// linter alike.
pub fn is_legacy_method(method: &str) -> bool {
    is_legacy(method)
}

/// The params without `_meta.<ns>.usageScopeId` when every violation is
/// about that key; `None` otherwise.
pub(super) fn without_bad_scope(params: &Value, violations: &[Violation]) -> Option<Value> {
    let about_scope =
        |v: &Violation| v.pointer.starts_with("/_meta/") && v.pointer.ends_with("/usageScopeId");
    if violations.is_empty() || !violations.iter().all(about_scope) {
        return None;
    }
    let mut p = params.clone();
    if let Some(meta) = p.get_mut("_meta").and_then(Value::as_object_mut) {
        for ns in crate::namespace::Namespace::ALL {
            if let Some(section) = meta.get_mut(ns.key()).and_then(Value::as_object_mut) {
                section.remove("usageScopeId");
            }
        }
    }
    Some(p)
}

fn drop_null_context_window(row: &mut Value) {
    if let Some(o) = row.as_object_mut()
        && o.get("contextWindow").is_some_and(Value::is_null)
    {
        o.remove("contextWindow");
    }
}

/// A used percentage clamped to 0..100; claude reports a fraction 0..1.
fn percent(v: Option<&Value>, fraction: bool) -> Value {
    let n = v.and_then(Value::as_f64).unwrap_or(0.0);
    let n = if fraction && n <= 1.0 { n * 100.0 } else { n };
    json!(n.clamp(0.0, 100.0))
}

/// What [`rate_limits_params`] clamps or converts of a legacy payload, at
/// its pointer (`/params/…`): a percentage outside 0..100 and a reset time
/// in milliseconds. Each is recorded, folded.
fn rate_limit_adjustments(p: &Map<String, Value>, fraction: bool) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut check =
        |used: Option<&Value>, reset: Option<&Value>, used_at: String, reset_at: String| {
            if let Some(n) = used.and_then(Value::as_f64) {
                let scaled = if fraction && n <= 1.0 { n * 100.0 } else { n };
                if !(0.0..=100.0).contains(&scaled) {
                    out.push(Violation::new(
                        used_at,
                        crate::Rule::Relation {
                            id: "percent-clamped",
                            message: format!(
                                "a used percentage of {scaled} is outside 0..100; shown clamped"
                            ),
                        },
                    ));
                }
            }
            if let Some(r) = reset.and_then(Value::as_f64)
                && r >= 1e12
            {
                out.push(Violation::new(
                reset_at,
                crate::Rule::Relation {
                    id: "epoch-milliseconds",
                    message: format!(
                        "a reset time of {r} is in milliseconds; read as seconds divided by 1000"
                    ),
                },
            ));
            }
        };
    match p.get("windows").and_then(Value::as_array) {
        Some(ws) => {
            for (i, w) in ws.iter().enumerate() {
                check(
                    w.get("usedPercent"),
                    w.get("resetsAt"),
                    format!("/params/windows/{i}/usedPercent"),
                    format!("/params/windows/{i}/resetsAt"),
                );
            }
        }
        None => {
            for (k, reset) in [
                ("fiveHour", "fiveHourResetAt"),
                ("sevenDay", "sevenDayResetAt"),
            ] {
                check(
                    p.get(k),
                    p.get(reset),
                    format!("/params/{k}"),
                    format!("/params/{reset}"),
                );
            }
        }
    }
    out
}

/// The `RateLimitsSnapshot` params a legacy rate-limit payload stands for,
/// and what the mapping clamped or converted ([`rate_limit_adjustments`]).
fn rate_limits_params(p: &Map<String, Value>, agent: Option<&str>) -> (Value, Vec<Violation>) {
    let text = |k: &str| p.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
    let limit_id = text("limitId").or(text("limitName")).unwrap_or("legacy");
    let provider = text("providerId").or(agent).unwrap_or("unknown");
    let vendor = |name: &str| agent.is_some_and(|a| a.contains(name)) || limit_id == name;
    let claude = vendor("claude");
    // codex's only window, sent as `fiveHour`, is its weekly one.
    let lone_five_hour = vendor("codex") && !p.get("sevenDay").is_some_and(Value::is_number);
    let five_hour_secs = if lone_five_hour { 604800 } else { 18000 };
    let windows: Vec<Value> = match p.get("windows").and_then(Value::as_array) {
        Some(ws) => ws
            .iter()
            .map(|w| {
                let minutes = w.get("windowDurationMins").and_then(Value::as_f64);
                json!({
                    "usedPercent": percent(w.get("usedPercent"), claude),
                    "windowDurationSeconds": minutes.map_or(Value::Null, |m| json!(m * 60.0)),
                    "resetsAtEpochSeconds": epoch(w.get("resetsAt")),
                })
            })
            .collect(),
        None => [
            ("fiveHour", "fiveHourResetAt", five_hour_secs),
            ("sevenDay", "sevenDayResetAt", 604800),
        ]
        .into_iter()
        .filter(|(k, _, _)| p.get(*k).is_some_and(Value::is_number))
        .map(|(k, reset, secs)| {
            json!({
                "usedPercent": percent(p.get(k), claude),
                "windowDurationSeconds": secs,
                "resetsAtEpochSeconds": epoch(p.get(reset)),
            })
        })
        .collect(),
    };
    let mut limit = serde_json::Map::new();
    limit.insert("limitId".into(), json!(limit_id));
    limit.insert("scope".into(), json!({"providerId": provider}));
    limit.insert("windows".into(), json!(windows));
    for key in ["planName", "limitName"] {
        if let Some(v) = p.get(key).filter(|v| v.is_string() || v.is_null()) {
            limit.insert(key.into(), v.clone());
        }
    }
    // A valid `extraUsage` is the limit's wallet.
    if let Some(extra) = p.get("extraUsage")
        && crate::rate_limits::RateLimitWallet::deserialize(extra).is_ok()
    {
        limit.insert("wallet".into(), extra.clone());
    }
    (
        json!({"rateLimits": [limit]}),
        rate_limit_adjustments(p, claude),
    )
}

/// The rule for an `_acp_ext:*` message: the contract forbids adapters to
/// emit them; a consumer reads them for a bounded time.
pub(super) const LEGACY_METHOD: &str = "legacy-method";

impl ConnectionState {
    pub(super) fn legacy(&mut self, method: &str, params: &Value, out: &mut Changes) {
        self.record(out, Record::new("/method", LEGACY_METHOD, format!("`{method}` is the legacy 0.0.5 API, which the contract forbids adapters to emit; read for compatibility")).method(method).session_opt(params.get("sessionId").and_then(Value::as_str)).folded());
        let Some(p) = params.as_object() else {
            self.record(
                out,
                Record::new(
                    "/params",
                    "type-object",
                    "legacy params must be an object".to_owned(),
                )
                .method(method),
            );
            return;
        };
        if method == PROPOSED_PLAN {
            let (Some(sid), Some(turn)) = (
                p.get("sessionId").and_then(Value::as_str),
                p.get("turnId").and_then(Value::as_str),
            ) else {
                self.record(
                    out,
                    Record::new(
                        "/params",
                        "required",
                        "a proposed plan needs string `sessionId` and `turnId`".to_owned(),
                    )
                    .method(method),
                );
                return;
            };
            let sid = sid.to_owned();
            let cleared = p.get("status").and_then(Value::as_str) == Some("cleared");
            let plan = json!({"type": "markdown", "planId": turn,
                "content": p.get("markdown").and_then(Value::as_str).unwrap_or("")});
            let s = self.session_mut(&sid);
            if cleared {
                let current = s.plan.as_ref().and_then(|p| p.get("planId"));
                if current.and_then(Value::as_str) == Some(turn) {
                    s.plan = None;
                }
            } else {
                s.plan = Some(plan);
            }
            out.add(|| Change::Plan { session_id: sid });
            return;
        }
        if method == RATE_LIMITS {
            let (mapped, adjusted) = rate_limits_params(p, self.agent_name());
            self.violations(out, method, None, "", &adjusted, true);
            match ExtensionNotification::parse(
                ContractMethod::RateLimitsUpdate.method(Namespace::Lody),
                &mapped,
            ) {
                Ok(Some((_, ExtensionNotification::RateLimitsUpdate(snapshot)))) => {
                    self.upsert_rate_limits(snapshot, Dialect::Legacy, out)
                }
                Ok(_) => {}
                Err(e) => {
                    for v in &e.violations {
                        self.record(
                            out,
                            Record::new(
                                "/params",
                                v.rule.id(),
                                format!(
                                    "the legacy rate limits map to an invalid row ({}): {}",
                                    v.pointer,
                                    v.message()
                                ),
                            )
                            .method(method),
                        );
                    }
                }
            }
            return;
        }
        let Some(sid) = self.unnamed_session() else {
            self.record(out, Record::new("", "no-session", "legacy usage names no session, and none was started or prompted before it (nor is there a single session to give it to); dropped".to_owned()).method(method));
            return;
        };
        let mut mapped = Map::new();
        mapped.insert("sessionId".into(), json!(sid));
        if let Some(mut u) = p.get("usage").cloned() {
            drop_null_context_window(&mut u);
            mapped.insert("usage".into(), u);
        }
        if let Some(mut rows) = p.get("modelUsage").cloned() {
            if let Some(o) = rows.as_object_mut() {
                for row in o.values_mut() {
                    drop_null_context_window(row);
                }
            }
            mapped.insert("modelUsage".into(), rows);
        }
        let mapped = Value::Object(mapped);
        match ExtensionNotification::parse(
            ContractMethod::SessionUsageUpdate.method(Namespace::Lody),
            &mapped,
        ) {
            Ok(Some((_, ExtensionNotification::SessionUsageUpdate(u)))) => {
                self.usage_update(method, &u, &mapped, Dialect::Legacy, out)
            }
            Ok(_) => {}
            Err(e) => {
                let violations = e.violations.clone();
                for v in &violations {
                    self.record(
                        out,
                        Record::new(format!("/params{}", v.pointer), v.rule.id(), v.message())
                            .method(method)
                            .session(&sid),
                    );
                }
            }
        }
    }
}
