//! Kinds that need the JSON tree: whole messages, capabilities in either
//! namespace, and elicitation requests.

use serde_json::Value;

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

/// Validates a whole JSON-RPC message.
pub(crate) fn check_message(v: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    let Some(obj) = v.as_object() else {
        out.push(Violation::new(
            "",
            Rule::type_of("a JSON-RPC message object", v),
        ));
        return out;
    };
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
