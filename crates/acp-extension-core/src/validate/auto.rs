//! Kinds that need the JSON tree: whole messages, capabilities in either
//! namespace, and elicitation requests.

use serde_json::{Map, Value};

use super::{Check, Rule, Violation, child};
use crate::capabilities::{AgentExtensionCapabilities, ClientExtensionCapabilities};
use crate::meta::SessionMeta;
use crate::methods::{ExtensionNotification, ExtensionRequest, method_kind};
use crate::namespace::{Namespace, split_method};

/// Prefixes every pointer with `at`.
fn rebase(violations: Vec<Violation>, at: &str) -> impl Iterator<Item = Violation> + '_ {
    violations.into_iter().map(move |mut v| {
        v.pointer = format!("{at}{}", v.pointer);
        v
    })
}

/// Which contract object a `_meta.<ns>` section holds, from the key that
/// owns the `_meta`.
#[derive(Clone, Copy)]
enum Section {
    Agent,
    Client,
    Session,
}

fn section_for(owner: Option<&str>) -> Section {
    match owner {
        Some("agentCapabilities") | Some("capabilities") => Section::Agent,
        Some("clientCapabilities") => Section::Client,
        _ => Section::Session,
    }
}

fn check_sections(
    meta: &serde_json::Map<String, Value>,
    at: &str,
    section: Section,
    out: &mut Vec<Violation>,
) {
    for ns in Namespace::ALL {
        if let Some(v) = meta.get(ns.key()) {
            let here = child(at, ns.key());
            match section {
                Section::Agent => AgentExtensionCapabilities::check(v, &here, out),
                Section::Client => ClientExtensionCapabilities::check(v, &here, out),
                Section::Session => SessionMeta::check(v, &here, out),
            }
        }
    }
}

/// Finds every `_meta` object below `v` and validates its contract sections.
pub(crate) fn walk_meta(v: &Value, at: &str, owner: Option<&str>, out: &mut Vec<Violation>) {
    match v {
        Value::Object(obj) => {
            for (k, child_value) in obj {
                let here = child(at, k);
                if k == "_meta" {
                    if let Value::Object(meta) = child_value {
                        check_sections(meta, &here, section_for(owner), out);
                    }
                    continue;
                }
                walk_meta(child_value, &here, Some(k), out);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk_meta(item, &format!("{at}/{i}"), owner, out);
            }
        }
        _ => {}
    }
}

/// Why an object is no JSON-RPC message (the pointer and the words), or
/// `None` when it is a request, a notification, a response or a bare
/// subagent event: an `id` that is no string, number or null; a message
/// without `"jsonrpc": "2.0"`; a `method` that is no string; an `id`
/// without `result` or `error`; no envelope at
/// all (named by [`resembles`] when it is a known part of a message). The
/// connection follower and `validate`'s `auto` kind judge by this one rule.
pub(crate) fn envelope_problem(obj: &Map<String, Value>) -> Option<(&'static str, String)> {
    // JSON-RPC 2.0: an id is a string, a number or null.
    if let Some(id) = obj.get("id")
        && !matches!(id, Value::String(_) | Value::Number(_) | Value::Null)
    {
        return Some((
            "/id",
            format!(
                "a JSON-RPC `id` must be a string, a number or null, found {}",
                crate::wire::json_type(id)
            ),
        ));
    }
    let message =
        obj.contains_key("method") || obj.contains_key("result") || obj.contains_key("error");
    // JSON-RPC 2.0: every request, notification and response says so.
    if message && obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Some((
            "/jsonrpc",
            match obj.get("jsonrpc") {
                None => "a JSON-RPC 2.0 message needs `\"jsonrpc\": \"2.0\"`".to_owned(),
                Some(v) => format!("`jsonrpc` must be \"2.0\", found {v}"),
            },
        ));
    }
    if let Some(method) = obj.get("method") {
        return (!method.is_string()).then(|| ("/method", "`method` must be a string".to_owned()));
    }
    if message {
        return None;
    }
    if obj.contains_key("id") {
        return Some(("", "a response needs `result` or `error`".to_owned()));
    }
    if is_bare_subagent_event(obj) {
        return None;
    }
    let why = match resembles_object(obj) {
        Some(shape) => format!(
            "not placed: {shape} on its own is not a JSON-RPC message (it needs the message that carries it)"
        ),
        None => "an object without `method`, or `id` with `result` or `error`, is not a JSON-RPC message"
            .to_owned(),
    };
    Some(("", why))
}

/// Validates a whole JSON-RPC message: its envelope
/// ([`envelope_problem`], rule `not-a-message`; a bare subagent event is
/// validated as one), then its extension params and `_meta` sections.
pub(crate) fn check_message(v: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    let Some(obj) = v.as_object() else {
        out.push(Violation::new(
            "",
            Rule::type_of("a JSON-RPC message object", v),
        ));
        return out;
    };
    if let Some((pointer, why)) = envelope_problem(obj) {
        let record = obj.get("dir").is_some_and(Value::is_string)
            && (obj.contains_key("msg") || obj.contains_key("raw"));
        let message = if record {
            "a `tap --record` line, not a JSON-RPC message: `acp-ext check` and `acp-ext state` read record files".to_owned()
        } else if pointer.is_empty() {
            format!(
                "{why}; `--as KIND` validates a contract object, `acp-ext check` reads transcripts and fixtures"
            )
        } else {
            why
        };
        out.push(Violation::new(
            pointer,
            Rule::Relation {
                id: "not-a-message",
                message,
            },
        ));
        return out;
    }
    if !obj.contains_key("method") && !obj.contains_key("result") && !obj.contains_key("error") {
        return super::validate_value(
            super::Kind::of::<crate::subagent_events::SubagentEvent>(),
            v,
        )
        .violations;
    }
    let null = Value::Null;
    if let Some(method) = obj.get("method") {
        let Some(method) = method.as_str() else {
            out.push(Violation::new("/method", Rule::type_of("a string", method)));
            return out;
        };
        let params = obj.get("params").unwrap_or(&null);
        if split_method(method).is_some() {
            let parsed = match method_kind(method) {
                Some(crate::methods::MethodKind::Request) => {
                    ExtensionRequest::parse(method, params).map(|_| ())
                }
                Some(crate::methods::MethodKind::Notification) => {
                    ExtensionNotification::parse(method, params).map(|_| ())
                }
                None => {
                    out.push(Violation::new(
                        "/method",
                        Rule::Relation {
                            id: "unknown-extension-method",
                            message: format!(
                                "{method:?} is in the contract's namespace but is not a method of the contract"
                            ),
                        },
                    ));
                    Ok(())
                }
            };
            if let Err(e) = parsed {
                out.extend(rebase(e.violations, "/params"));
            }
            return out;
        }
        if method == "elicitation/create" {
            out.extend(rebase(
                crate::elicitation::check_elicitation_request(params),
                "/params",
            ));
        }
        walk_meta(params, "/params", None, &mut out);
    }
    if let Some(result) = obj.get("result") {
        walk_meta(result, "/result", None, &mut out);
    }
    dedup(out)
}

fn dedup(mut out: Vec<Violation>) -> Vec<Violation> {
    let mut seen = Vec::with_capacity(out.len());
    out.retain(|v| {
        let key = (v.pointer.clone(), v.rule.clone());
        if seen.contains(&key) {
            false
        } else {
            seen.push(key);
            true
        }
    });
    out
}

fn check_capabilities<T: Check>(v: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    match v.get("_meta") {
        Some(Value::Object(meta)) => {
            for ns in Namespace::ALL {
                crate::wire::check_opt::<T>(meta, ns.key(), "/_meta", &mut out);
            }
        }
        // ACP allows `_meta: null`: no extension capabilities.
        Some(Value::Null) => {}
        Some(other) => out.push(Violation::new("/_meta", Rule::type_of("an object", other))),
        None => T::check(v, "", &mut out),
    }
    out
}

/// `agent-capabilities`: the whole `agentCapabilities` or its extension object.
pub(crate) fn check_agent_capabilities(v: &Value) -> Vec<Violation> {
    check_capabilities::<AgentExtensionCapabilities>(v)
}

/// `client-capabilities`: the whole `clientCapabilities` or its extension object.
pub(crate) fn check_client_capabilities(v: &Value) -> Vec<Violation> {
    check_capabilities::<ClientExtensionCapabilities>(v)
}

/// `{version, sessionId, runId, type, …}` without a JSON-RPC envelope.
fn is_bare_subagent_event(o: &Map<String, Value>) -> bool {
    ["version", "sessionId", "runId", "type"]
        .iter()
        .all(|k| o.contains_key(*k))
}

/// What a value that is no message looks like, when it is a known part of
/// one (a bare `ModelUsage` row, a `RateLimit`, a `TaskMeta`, a capability
/// map, params without their envelope): the words for a record saying it
/// was not placed.
///
/// ```
/// use acp_extension_core::validate::resembles;
/// use serde_json::json;
///
/// let row = json!({"inputTokens": 1, "outputTokens": 2, "cacheReadInputTokens": 0});
/// assert_eq!(resembles(&row), Some("a bare `ModelUsage` row"));
/// assert_eq!(resembles(&json!({"stopReason": "end_turn"})), None);
/// assert_eq!(resembles(&json!({"usage": {"version": 1}})), Some("a bare capability map"));
/// assert!(resembles(&json!({"usage": {"inputTokens": 1, "outputTokens": 2}})).unwrap().contains("`usage` object"));
/// ```
pub fn resembles(value: &Value) -> Option<&'static str> {
    resembles_object(value.as_object()?)
}

fn resembles_object(o: &Map<String, Value>) -> Option<&'static str> {
    let has = |k: &str| o.contains_key(k);
    if has("inputTokens") && has("outputTokens") {
        Some("a bare `ModelUsage` row")
    } else if has("limitId") && has("windows") {
        Some("a bare `RateLimit`")
    } else if has("taskId") && has("kind") && has("status") {
        Some("a bare `TaskMeta`")
    } else if has("sessionId") && has("usage") {
        Some("usage update params without their envelope")
    } else if has("rateLimits") {
        Some("rate-limit params without their envelope")
    } else if has("fiveHour") || has("sevenDay") || (has("planName") && has("windows")) {
        Some("legacy rate-limit params without their envelope")
    } else if has("sessionUpdate") {
        Some("a session update without its `session/update` envelope")
    } else if o
        .get("usage")
        .is_some_and(|u| u.get("inputTokens").is_some() || u.get("totalTokens").is_some())
    {
        Some("a `usage` object (of a prompt result, or legacy usage params) without its message")
    } else if !o.is_empty()
        && o.iter().all(|(k, v)| {
            k == "version"
                || (crate::capabilities::Feature::from_key(k).is_some()
                    && v.get("version").is_some())
        })
    {
        Some("a bare capability map")
    } else if capability_fragment(o) {
        Some(
            "a capability advertisement's `_meta` (a fragment of `clientCapabilities` or `agentCapabilities`)",
        )
    } else {
        None
    }
}

/// `{"_meta": {"<ns>": {…}}}` whose sections hold only capability keys:
/// a piece of an advertisement, not session metadata.
fn capability_fragment(o: &Map<String, Value>) -> bool {
    let Some(meta) = o.get("_meta").and_then(Value::as_object) else {
        return false;
    };
    let sections: Vec<&Map<String, Value>> = Namespace::ALL
        .iter()
        .filter_map(|ns| meta.get(ns.key()).and_then(Value::as_object))
        .collect();
    let standard = [
        "_meta",
        "fs",
        "terminal",
        "elicitation",
        "auth",
        "session",
        "plan",
        "subagents",
        "loadSession",
        "promptCapabilities",
        "mcpCapabilities",
        "sessionCapabilities",
    ];
    !sections.is_empty()
        && sections.iter().all(|s| {
            !s.is_empty()
                && s.keys()
                    .all(|k| crate::capabilities::Feature::from_key(k).is_some())
        })
        && o.keys().all(|k| standard.contains(&k.as_str()))
}
