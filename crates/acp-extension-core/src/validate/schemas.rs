//! The JSON Schemas of the kinds that need the JSON tree (feature
//! `schema`).

use schemars::{Schema, json_schema};

use crate::capabilities::{AgentExtensionCapabilities, ClientExtensionCapabilities};

fn capabilities_schema<T: schemars::JsonSchema>(title: &str, owner: &str) -> Schema {
    let mut g = crate::schema::generator();
    let inner = g.subschema_for::<T>();
    let mut s = json_schema!({
        "title": title,
        "description": format!("Either `{owner}` with the extension object under `_meta.ua` and/or `_meta.lody`, or the extension object itself."),
        "anyOf": [
            {
                "type": "object",
                "required": ["_meta"],
                "properties": { "_meta": { "type": "object", "properties": { "ua": inner.clone(), "lody": inner.clone() } } }
            },
            inner,
        ]
    });
    crate::schema::attach_defs(&mut s, g);
    s
}

pub(super) fn agent_capabilities_schema() -> Schema {
    capabilities_schema::<AgentExtensionCapabilities>("AgentCapabilities", "agentCapabilities")
}

pub(super) fn client_capabilities_schema() -> Schema {
    capabilities_schema::<ClientExtensionCapabilities>("ClientCapabilities", "clientCapabilities")
}

pub(super) fn message_schema() -> Schema {
    json_schema!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "JsonRpcMessage",
        "description": "A JSON-RPC 2.0 message. Its method selects the payload kind; `_meta.ua` / `_meta.lody` sections anywhere in it are checked against the contract. The per-kind schemas (`acp-ext schema KIND`) describe each payload.",
        "type": "object",
        "properties": {
            "jsonrpc": { "const": "2.0" },
            "method": { "type": "string" },
            "params": {},
            "result": {},
            "error": { "type": "object" }
        }
    })
}

pub(super) fn elicitation_request_schema() -> Schema {
    let mut g = crate::schema::generator();
    let meta = g.subschema_for::<crate::elicitation::ElicitationMeta>();
    let mut s = json_schema!({
        "title": "ElicitationRequest",
        "description": "`elicitation/create` params. Contract metadata sits at `_meta.<ns>.elicitation` on the request and on each property of `requestedSchema`; answer-note references across properties are checked by `acp-ext validate` (JSON Schema cannot express them).",
        "type": "object",
        "properties": {
            "_meta": { "type": ["object", "null"], "properties": {
                "ua": { "type": "object", "properties": { "elicitation": meta.clone() } },
                "lody": { "type": "object", "properties": { "elicitation": meta.clone() } }
            } },
            "requestedSchema": { "type": "object", "properties": { "properties": {
                "type": "object",
                "additionalProperties": { "type": "object", "properties": { "_meta": { "type": ["object", "null"], "properties": {
                    "ua": { "type": "object", "properties": { "elicitation": meta.clone() } },
                    "lody": { "type": "object", "properties": { "elicitation": meta } }
                } } } }
            } } }
        }
    });
    crate::schema::attach_defs(&mut s, g);
    s
}
