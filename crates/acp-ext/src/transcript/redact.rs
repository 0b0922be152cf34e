//! Hiding secrets from recorded messages.
//!
//! Redaction only ever touches the copy that goes to the record: the bytes
//! forwarded between client and agent are never changed.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use acp_extension_core::connection::{Direction, PendingRequests};

/// What replaces a secret value in the record.
pub const REDACTED: &str = "[REDACTED]";

/// Pending elicitations beyond this many are forgotten (oldest first is not
/// tracked; the map is simply cleared), so a client that never answers
/// cannot grow the map without bound. A forgotten elicitation's answer is
/// still redacted, in full, by the unknown-answer rule.
const MAX_PENDING: usize = 4096;

/// Remembers what must be hidden across the messages of one connection and
/// produces redacted copies of messages for the record.
///
/// Hidden, whichever way the message travels (an agent that echoes what it
/// got must not leak it either):
/// - answers to elicitation properties marked secret: a property whose
///   `_meta.<ns>.elicitation.secret` is `true`, a question whose `isSecret`
///   is `true` (its `id` is the property key), a note whose `isSecret` is
///   `true` (its `fieldId` is the property key); a secret question without
///   `id` or note without `fieldId`, or a request-level `secret: true`,
///   hides every answer. Hidden in the answer (`result.content` and
///   `result._meta.<ns>.elicitation.answers`) and in the request itself
///   (`default` values, prefilled `answers`);
/// - every value of the parameters of ACP v1's `authenticate` and v2's
///   `auth/login` (keys are kept);
/// - `mcpServers[].env[].value` and `mcpServers[].headers[].value` in
///   `session/new`, `session/load`, `session/resume` and `session/fork`
///   (v1 and v2);
/// - every value of `headers` in `providers/set` (authorization headers);
/// - `env[].value` in `terminal/create`;
/// - members of a JSON-RPC batch, each on its own.
///
/// An elicitation-shaped answer (`result.action` with a `content` object)
/// whose request was never seen (it was not monitored, say) has every value
/// of its `content` hidden: when in doubt, hide.
///
/// ```
/// use acp_ext::check::Direction;
/// use acp_ext::tap::Redactor;
/// use serde_json::json;
///
/// let mut r = Redactor::new();
/// let auth = json!({"jsonrpc": "2.0", "id": 1, "method": "authenticate",
///                   "params": {"methodId": "api-key", "key": "hunter2"}});
/// let copy = r.redact(Direction::ClientToAgent, &auth).unwrap();
/// assert_eq!(copy["params"]["key"], "[REDACTED]");
/// assert!(!copy.to_string().contains("hunter2"));
/// ```
#[derive(Debug, Default)]
pub struct Redactor {
    /// Elicitation requests awaiting their answer (the connection's
    /// bounded table of pending requests): the keys to hide in the answer.
    pending: PendingRequests<SecretKeys>,
}

/// The property keys of one elicitation whose values are secret.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct SecretKeys {
    keys: BTreeSet<String>,
    /// A secret whose key could not be told (a secret question without
    /// `id`, a secret note without `fieldId`): hide every value.
    all: bool,
}

impl SecretKeys {
    fn everything() -> Self {
        Self {
            keys: BTreeSet::new(),
            all: true,
        }
    }

    fn is_empty(&self) -> bool {
        !self.all && self.keys.is_empty()
    }

    fn covers(&self, key: &str) -> bool {
        self.all || self.keys.contains(key)
    }
}

impl Redactor {
    /// A redactor that has seen nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Observes one message that travelled `direction` (remembering secret
    /// elicitation properties) and returns the copy to record when something
    /// must be hidden; `None` means the message can be recorded as it is.
    pub fn redact(&mut self, direction: Direction, message: &Value) -> Option<Value> {
        self.redact_any(direction, message)
            .filter(|copy| copy != message)
    }

    fn redact_any(&mut self, direction: Direction, message: &Value) -> Option<Value> {
        if let Value::Array(batch) = message {
            // A JSON-RPC batch: each member on its own.
            let copies: Vec<_> = batch.iter().map(|m| self.redact(direction, m)).collect();
            if copies.iter().all(Option::is_none) {
                return None;
            }
            return Some(Value::Array(
                copies
                    .into_iter()
                    .zip(batch)
                    .map(|(copy, original)| copy.unwrap_or_else(|| original.clone()))
                    .collect(),
            ));
        }
        let obj = message.as_object()?;
        let method = obj.get("method").and_then(Value::as_str);
        // Secrets are hidden whichever way they travel (an agent that echoes
        // is still a leak); only the pairing of an elicitation with its
        // answer depends on the direction.
        let Some(method) = method else {
            return self.answer(direction, obj);
        };
        match secrets_of(method)? {
            Secrets::Elicitation => self.elicitation_request(direction, obj),
            Secrets::AllParams => {
                let params = obj.get("params")?;
                let mut copy = obj.clone();
                copy.insert("params".into(), hide_all(params));
                Some(Value::Object(copy))
            }
            Secrets::McpServers => {
                let servers = obj.get("params")?.get("mcpServers")?.as_array()?;
                if !servers.iter().any(server_has_secrets) {
                    return None;
                }
                let mut copy = obj.clone();
                if let Some(Value::Array(servers)) =
                    copy.get_mut("params").and_then(|p| p.get_mut("mcpServers"))
                {
                    servers.iter_mut().for_each(hide_server_secrets);
                }
                Some(Value::Object(copy))
            }
            Secrets::Headers | Secrets::Env => {
                let params = obj.get("params")?;
                if !server_has_secrets(params) {
                    return None;
                }
                let mut copy = obj.clone();
                if let Some(params) = copy.get_mut("params") {
                    hide_server_secrets(params);
                }
                Some(Value::Object(copy))
            }
        }
    }

    /// Whether [`redact`](Self::redact) could change a message, or its
    /// state, from its `method` and `result` text alone: when `false`, the
    /// message can be recorded as it is without parsing it. Errs on the side
    /// of `true`.
    pub fn may_redact(&self, method: Option<&str>, result: Option<&str>) -> bool {
        match method {
            Some(method) => secrets_of(method).is_some(),
            None => {
                !self.pending.is_empty()
                    || result.is_some_and(|r| r.contains("action") || r.contains("\\u"))
            }
        }
    }

    fn elicitation_request(
        &mut self,
        direction: Direction,
        obj: &Map<String, Value>,
    ) -> Option<Value> {
        let params = obj.get("params")?;
        let secrets = secret_keys(params);
        if let Some(id) = obj.get("id") {
            self.pending
                .insert(direction, id, secrets.clone(), MAX_PENDING);
        }
        if secrets.is_empty() {
            return None;
        }
        // Prefilled values of secret properties: schema defaults and
        // persisted answers.
        let mut copy = obj.clone();
        let params = copy.get_mut("params")?;
        if let Some(Value::Object(props)) = params
            .get_mut("requestedSchema")
            .and_then(|s| s.get_mut("properties"))
        {
            for (key, prop) in props.iter_mut() {
                if secrets.covers(key)
                    && let Some(default) = prop.get_mut("default")
                {
                    *default = Value::from(REDACTED);
                }
                if let Some(meta) = prop.get_mut("_meta") {
                    hide_meta_answers(meta, &secrets);
                }
            }
        }
        if let Some(meta) = params.get_mut("_meta") {
            hide_meta_answers(meta, &secrets);
        }
        Some(Value::Object(copy))
    }

    fn answer(&mut self, direction: Direction, obj: &Map<String, Value>) -> Option<Value> {
        let result = obj.get("result")?.as_object()?;
        let secrets = match obj.get("id").map(|id| self.pending.take(direction, id)) {
            Some(Some(secrets)) => secrets,
            // Never saw the request: hide every answer of anything shaped
            // like an elicitation answer.
            _ if looks_like_elicitation_answer(result) => SecretKeys::everything(),
            _ => return None,
        };
        if secrets.is_empty() {
            return None;
        }
        let mut copy = obj.clone();
        let result = copy.get_mut("result")?;
        hide_answer(result, &secrets);
        // Older shape: `{"action": {"action": "accept", "content": {…}}}`.
        if let Some(action @ Value::Object(_)) = result.get_mut("action") {
            hide_answer(action, &secrets);
        }
        Some(Value::Object(copy))
    }
}

/// Where a request carries what the record must not show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Secrets {
    /// Every value of its params (keys kept).
    AllParams,
    /// `mcpServers[].env[].value` and `mcpServers[].headers[].value`.
    McpServers,
    /// Every value of `params.headers`.
    Headers,
    /// `params.env[].value`.
    Env,
    /// Secret elicitation properties: prefilled here, answered in the
    /// response.
    Elicitation,
}

/// Every request of ACP v1 and v2 that can carry a credential, and where.
const SECRET_BEARING: &[(&str, Secrets)] = &[
    ("authenticate", Secrets::AllParams),
    ("auth/login", Secrets::AllParams),
    ("session/new", Secrets::McpServers),
    ("session/load", Secrets::McpServers),
    ("session/resume", Secrets::McpServers),
    ("session/fork", Secrets::McpServers),
    ("providers/set", Secrets::Headers),
    ("terminal/create", Secrets::Env),
    ("elicitation/create", Secrets::Elicitation),
];

fn secrets_of(method: &str) -> Option<Secrets> {
    SECRET_BEARING
        .iter()
        .find(|(m, _)| *m == method)
        .map(|&(_, s)| s)
}

fn looks_like_elicitation_answer(result: &Map<String, Value>) -> bool {
    result.contains_key("action")
        && (result.get("content").is_some_and(Value::is_object)
            || result
                .get("action")
                .and_then(|a| a.get("content"))
                .is_some_and(Value::is_object))
}

/// `params` with every value replaced by the marker (keys kept, so the
/// record still shows which fields were sent).
fn hide_all(params: &Value) -> Value {
    match params {
        Value::Object(map) => Value::Object(
            map.keys()
                .map(|k| (k.clone(), Value::from(REDACTED)))
                .collect(),
        ),
        Value::Null => Value::Null,
        _ => Value::from(REDACTED),
    }
}

/// `env` and `headers` of an MCP server (or of `providers/set` and
/// `terminal/create` params): an array of `{name, value}` (the ACP shape
/// of an MCP server's and a terminal's) or a plain object of values (the
/// shape of `providers/set`'s headers).
fn server_has_secrets(server: &Value) -> bool {
    ["env", "headers"].iter().any(|k| match server.get(*k) {
        Some(Value::Array(items)) => items.iter().any(|i| i.get("value").is_some()),
        Some(Value::Object(map)) => !map.is_empty(),
        _ => false,
    })
}

fn hide_server_secrets(server: &mut Value) {
    for key in ["env", "headers"] {
        match server.get_mut(key) {
            Some(Value::Array(items)) => {
                for item in items {
                    if let Some(v) = item.get_mut("value") {
                        *v = Value::from(REDACTED);
                    }
                }
            }
            Some(Value::Object(map)) => map.values_mut().for_each(|v| *v = Value::from(REDACTED)),
            _ => {}
        }
    }
}

/// Every `_meta.<ns>.elicitation` object inside `meta`.
fn elicitation_metas(meta: Option<&Value>) -> impl Iterator<Item = &Map<String, Value>> {
    meta.and_then(Value::as_object)
        .into_iter()
        .flat_map(|m| m.values())
        .filter_map(|ns| ns.get("elicitation")?.as_object())
}

/// Secret questions and notes listed in an elicitation meta. `own_key` is the
/// property the meta sits on (property scope), used for a secret question
/// without `id`.
fn collect_questions(meta: &Map<String, Value>, own_key: Option<&str>, out: &mut SecretKeys) {
    let Some(Value::Array(questions)) = meta.get("questions") else {
        return;
    };
    for q in questions {
        if q.get("isSecret") == Some(&Value::Bool(true)) {
            match q.get("id").and_then(Value::as_str).or(own_key) {
                Some(id) => {
                    out.keys.insert(id.to_owned());
                }
                None => out.all = true,
            }
        }
        if let Some(note) = q.get("note")
            && note.get("isSecret") == Some(&Value::Bool(true))
        {
            match note.get("fieldId").and_then(Value::as_str) {
                Some(id) => {
                    out.keys.insert(id.to_owned());
                }
                None => out.all = true,
            }
        }
    }
}

/// The secret property keys of an `elicitation/create` request.
fn secret_keys(params: &Value) -> SecretKeys {
    let mut out = SecretKeys::default();
    for meta in elicitation_metas(params.get("_meta")) {
        if meta.get("secret") == Some(&Value::Bool(true)) {
            // Request-scope `secret`: the whole form is secret.
            out.all = true;
        }
        collect_questions(meta, None, &mut out);
    }
    if let Some(Value::Object(props)) = params
        .get("requestedSchema")
        .and_then(|s| s.get("properties"))
    {
        for (key, prop) in props {
            for meta in elicitation_metas(prop.get("_meta")) {
                if meta.get("secret") == Some(&Value::Bool(true)) {
                    out.keys.insert(key.clone());
                }
                collect_questions(meta, Some(key), &mut out);
            }
        }
    }
    out
}

/// Hides secret keys in `content` and in `_meta.<ns>.elicitation.answers`.
fn hide_answer(result: &mut Value, secrets: &SecretKeys) {
    if let Some(Value::Object(content)) = result.get_mut("content") {
        hide_keys(content, secrets);
    }
    if let Some(meta) = result.get_mut("_meta") {
        hide_meta_answers(meta, secrets);
    }
}

fn hide_meta_answers(meta: &mut Value, secrets: &SecretKeys) {
    let Some(namespaces) = meta.as_object_mut() else {
        return;
    };
    for ns in namespaces.values_mut() {
        if let Some(Value::Object(answers)) =
            ns.get_mut("elicitation").and_then(|e| e.get_mut("answers"))
        {
            hide_keys(answers, secrets);
        }
    }
}

fn hide_keys(map: &mut Map<String, Value>, secrets: &SecretKeys) {
    for (key, value) in map.iter_mut() {
        if secrets.covers(key) {
            *value = Value::from(REDACTED);
        }
    }
}
