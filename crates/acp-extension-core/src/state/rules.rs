//! The rules of a call, a result and a `session/update`: what the state
//! records when a message breaks them, and what a linter of the traffic
//! reports through the same functions.

use serde_json::{Map, Value};

use super::*;
use crate::namespace;
use crate::session::NoticeLevel;
use crate::violation::{Rule, Violation};

/// The session updates of ACP v1 (schema 1.17, unstable ones included).
const STANDARD_UPDATES: &[&str] = &[
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "available_commands_update",
    "current_mode_update",
    "config_option_update",
    "session_info_update",
    "usage_update",
    "notice",
    "compaction_update",
    "compaction_summary_chunk",
    "plan_update",
    "plan_removed",
    "subagent_update",
    "session_message",
    "session_message_chunk",
];

/// Whether `tag` is a session update of ACP v1, or one of v2's (whole
/// messages, `state_update`, `terminal_update`).
pub(super) fn is_standard_update(tag: &str) -> bool {
    STANDARD_UPDATES.contains(&tag) || V2_UPDATES.contains(&tag)
}

/// Session updates of ACP v2 that v1 lacks.
const V2_UPDATES: &[&str] = &[
    "user_message",
    "agent_message",
    "agent_thought",
    "state_update",
    "tool_call_content_chunk",
    "terminal_update",
    "terminal_output_chunk",
    "replay_complete",
];

/// A custom session update (`_` first; v2's `Other`, which receivers
/// preserve and otherwise ignore), and not one of AIR's the state reads:
/// transcript to the state.
pub(super) fn is_custom_update(tag: &str) -> bool {
    tag.starts_with('_') && !AIR_UPDATES.contains(&tag)
}

/// The session updates outside ACP that the state reads: AIR's subagent
/// draft and its async tasks (v2 with a leading `_`).
const AIR_UPDATES: &[&str] = &[
    "subagent_spawned",
    "subagent_state_update",
    "_subagent_update",
    "async_task_spawned",
    "async_task_progress",
    "async_task_state_update",
    "_async_task_spawned",
    "_async_task_progress",
    "_async_task_state_update",
];

/// Whether the state reads a `session/update` with this `sessionUpdate`
/// tag: ACP v1's and v2's updates, AIR's, and custom ones (`_` first,
/// read as transcript). A linter warns on any other
/// (`unknown-session-update`), as the state records it.
pub fn is_known_session_update(tag: &str) -> bool {
    is_standard_update(tag) || AIR_UPDATES.contains(&tag) || is_custom_update(tag)
}

/// A standard `notice`'s level and text (its `title`, with its
/// `description`).
pub(super) fn notice_of(update: &Value) -> (NoticeLevel, String) {
    let level = match str_at(update, "severity") {
        Some("error") => NoticeLevel::Error,
        Some("warning") => NoticeLevel::Warning,
        _ => NoticeLevel::Info,
    };
    let mut message = str_at(update, "title").unwrap_or("").to_owned();
    if let Some(d) = str_at(update, "description") {
        message = format!("{message}: {d}");
    }
    (level, message)
}

pub(super) fn meta_of(v: &Value) -> Option<&Map<String, Value>> {
    v.get("_meta").and_then(Value::as_object)
}

/// `key` of the contract section (`_meta.ua` first, then `_meta.lody`).
pub(super) fn ext_key<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    meta_of(v)
        .and_then(|m| namespace::read_key(m, key))
        .map(|(_, v)| v)
}

/// The session a `session/update` names and its update, or the rule its
/// params break (at a pointer into the message): they must be an object
/// whose `sessionId` is a non-empty string, with an `update` object. An
/// update that breaks it is placed in no session (not in the current one,
/// nor the only one: a client cannot tell where it belongs); the state
/// records it and a linter reports it, both by this rule.
///
/// ```
/// use acp_extension_core::state::session_update_parts;
/// use serde_json::json;
///
/// let params = json!({"sessionId": "s", "update": {"sessionUpdate": "plan", "entries": []}});
/// assert_eq!(session_update_parts(&params).unwrap().0, "s");
/// let v = session_update_parts(&json!({"update": {}})).unwrap_err();
/// assert_eq!((v.pointer.as_str(), v.rule.id()), ("/params/sessionId", "required"));
/// let v = session_update_parts(&json!({"sessionId": "", "update": {}})).unwrap_err();
/// assert_eq!((v.pointer.as_str(), v.rule.id()), ("/params/sessionId", "non-empty"));
/// let v = session_update_parts(&json!("x")).unwrap_err();
/// assert_eq!((v.pointer.as_str(), v.rule.id()), ("/params", "type"));
/// ```
pub fn session_update_parts(params: &Value) -> Result<(&str, &Value), Violation> {
    let Some(o) = params.as_object() else {
        return Err(Violation::new(
            "/params",
            Rule::Type {
                expected: "an object",
                found: crate::wire::json_type(params),
            },
        ));
    };
    let sid = match o.get("sessionId") {
        None => {
            return Err(Violation::new(
                "/params/sessionId",
                Rule::Required {
                    expected: "a non-empty string",
                },
            ));
        }
        Some(Value::String(s)) if s.is_empty() => {
            return Err(Violation::new("/params/sessionId", Rule::NonEmpty));
        }
        Some(Value::String(s)) => s.as_str(),
        Some(other) => {
            return Err(Violation::new(
                "/params/sessionId",
                Rule::Type {
                    expected: "a non-empty string",
                    found: crate::wire::json_type(other),
                },
            ));
        }
    };
    match o.get("update") {
        Some(update @ Value::Object(_)) => Ok((sid, update)),
        None => Err(Violation::new(
            "/params/update",
            Rule::Required {
                expected: "an object",
            },
        )),
        Some(other) => Err(Violation::new(
            "/params/update",
            Rule::Type {
                expected: "an object",
                found: crate::wire::json_type(other),
            },
        )),
    }
}

/// How a [`result_violation`] reads after "the `<method>` result": the
/// rule, and the field when it is one of the result's.
pub fn result_words(v: &Violation) -> String {
    if v.pointer == "/result" {
        format!(" {}", v.rule)
    } else {
        format!(": `{}` {}", v.pointer, v.rule)
    }
}

/// Whether [`call_violations`] has rules for calls of `method`: a caller
/// whose params are costly to build (a message read straight into its
/// type) builds them only then.
pub fn call_has_rules(method: &str) -> bool {
    matches!(
        method,
        "session/load" | "session/resume" | "session/close" | "session/delete" | "session/prompt"
    )
}

/// Every rule a standard ACP call the state folds breaks, at its pointer in
/// the message: `session/load`, `session/resume`, `session/close`,
/// `session/delete` and `session/prompt` need params with a non-empty
/// string `sessionId`. The state records each and folds nothing of the
/// call; a linter reports each (`shape`); both by this rule.
///
/// ```
/// use acp_extension_core::state::call_violations;
/// use serde_json::json;
///
/// assert!(call_violations("session/prompt", &json!({"sessionId": "s", "prompt": []})).is_empty());
/// let v = call_violations("session/prompt", &json!({"prompt": []}));
/// assert_eq!((v[0].pointer.as_str(), v[0].rule.id()), ("/params/sessionId", "required"));
/// assert_eq!(call_violations("session/load", &json!(null))[0].pointer, "/params");
/// assert!(call_violations("session/set_mode", &json!(null)).is_empty());
/// ```
pub fn call_violations(method: &str, params: &Value) -> Vec<Violation> {
    use crate::wire::{NonEmptyString, check_req};
    let mut out = Vec::new();
    if !call_has_rules(method) {
        return out;
    }
    match params.as_object() {
        Some(o) => check_req::<NonEmptyString>(o, "sessionId", "/params", &mut out),
        None => out.push(Violation::new(
            "/params",
            Rule::type_of("an object", params),
        )),
    }
    out
}

/// The rule an ACP result breaks, if any: every method of ACP and of the
/// contract answers with an object, and the methods whose result the state
/// reads (`initialize`, `session/new`, `session/fork`, `session/load`,
/// `session/resume`, `session/prompt`) never with `null`; `session/new` and
/// `session/fork` name the session with a non-empty string `sessionId`; a
/// vendor's own `_…` method may answer anything. The state records such a
/// result and folds nothing of it; a linter reports it; both by
/// this rule.
///
/// ```
/// use acp_extension_core::state::result_violation;
/// use serde_json::json;
///
/// assert!(result_violation("initialize", &json!({"protocolVersion": 1})).is_none());
/// assert_eq!(result_violation("initialize", &json!(null)).unwrap().rule.id(), "type");
/// assert!(result_violation("session/set_mode", &json!(null)).is_none());
/// assert_eq!(result_violation("session/set_mode", &json!("ok")).unwrap().pointer, "/result");
/// assert_eq!(result_violation("_lody/rate_limits/get", &json!(1)).unwrap().rule.id(), "type");
/// assert!(result_violation("_vendor/ping", &json!("pong")).is_none());
/// assert_eq!(result_violation("session/new", &json!({})).unwrap().pointer, "/result/sessionId");
/// ```
pub fn result_violation(method: &str, result: &Value) -> Option<Violation> {
    const READ: &[&str] = &[
        "initialize",
        "session/new",
        "session/fork",
        "session/load",
        "session/resume",
        "session/prompt",
    ];
    if method.starts_with('_') && crate::methods::method_kind(method).is_none() {
        return None;
    }
    if let (Value::Object(o), "session/new" | "session/fork") = (result, method) {
        let mut out = Vec::new();
        crate::wire::check_req::<crate::wire::NonEmptyString>(o, "sessionId", "/result", &mut out);
        return out.into_iter().next();
    }
    let wrong = match result {
        Value::Object(_) => false,
        Value::Null => READ.contains(&method),
        _ => true,
    };
    wrong.then(|| {
        Violation::new(
            "/result",
            Rule::Type {
                expected: "an object",
                found: crate::wire::json_type(result),
            },
        )
    })
}

/// Every rule a standard session update the state folds breaks, at its
/// pointer in the message (`/params/update/…`): a `tool_call` or
/// `tool_call_update` needs a string `toolCallId`; a `notice` a string
/// `severity` and `title`; a `compaction_update` a string
/// `compactionId`; a `usage_update` non-negative integers `used` and
/// `size`, and a cost (when not `null`) with a non-negative `amount` and a
/// string `currency`; a `subagent_update` a non-empty string `sessionId`;
/// a v2 `state_update` a string `state`, and each item of its `background`
/// an object with a string `type` (else the list is not reported). The
/// state records each (folding a `notice` with its defaults, and a
/// `usage_update`'s occupancy without a bad cost; nothing of the others)
/// and a linter reports each (`shape`), both by this rule.
///
/// ```
/// use acp_extension_core::state::standard_update_violations;
/// use serde_json::json;
///
/// let v = standard_update_violations(&json!({"sessionUpdate": "usage_update", "used": -5, "size": 10}));
/// assert_eq!((v[0].pointer.as_str(), v[0].rule.id()), ("/params/update/used", "non-negative-integer"));
/// assert!(standard_update_violations(&json!({"sessionUpdate": "notice", "severity": "info", "title": "t"})).is_empty());
/// ```
pub fn standard_update_violations(update: &Value) -> Vec<Violation> {
    use crate::wire::{Count, NonEmptyString, NonNegF64, check_req};
    let mut out = Vec::new();
    let Some(o) = update.as_object() else {
        return out;
    };
    let at = "/params/update";
    match o.get("sessionUpdate").and_then(Value::as_str) {
        Some("tool_call" | "tool_call_update") => {
            check_req::<String>(o, "toolCallId", at, &mut out);
        }
        Some("notice") => {
            check_req::<String>(o, "severity", at, &mut out);
            check_req::<String>(o, "title", at, &mut out);
        }
        Some("compaction_update") => check_req::<String>(o, "compactionId", at, &mut out),
        Some("usage_update") => {
            check_req::<Count>(o, "used", at, &mut out);
            check_req::<Count>(o, "size", at, &mut out);
            match o.get("cost") {
                None | Some(Value::Null) => {}
                Some(Value::Object(cost)) => {
                    let at = "/params/update/cost";
                    check_req::<NonNegF64>(cost, "amount", at, &mut out);
                    check_req::<String>(cost, "currency", at, &mut out);
                }
                Some(other) => out.push(Violation::new(
                    "/params/update/cost",
                    Rule::type_of("an object or null", other),
                )),
            }
        }
        Some("subagent_update") => check_req::<NonEmptyString>(o, "sessionId", at, &mut out),
        Some("state_update") => {
            check_req::<String>(o, "state", at, &mut out);
            // v2: a malformed `background` list is read as not reported.
            if let Some(Value::Array(items)) = o.get("background") {
                for (i, item) in items.iter().enumerate() {
                    match item.as_object() {
                        Some(work) => check_req::<String>(
                            work,
                            "type",
                            &format!("{at}/background/{i}"),
                            &mut out,
                        ),
                        None => out.push(Violation::new(
                            format!("{at}/background/{i}"),
                            Rule::type_of("an object", item),
                        )),
                    }
                }
            }
        }
        _ => {}
    }
    out
}
