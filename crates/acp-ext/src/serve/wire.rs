//! Sending: session updates, extension notifications and responses.

use acp_extension_core::namespace::Namespace;
use agent_client_protocol::v1::schema::{Meta, SessionNotification, SessionUpdate};
use agent_client_protocol::{Client, UntypedMessage};
use serde_json::Value;

/// The connection to the client, as handlers and tasks see it.
pub(crate) type Cx = agent_client_protocol::v1::ConnectionTo<Client>;

/// The responder of an untyped request.
pub(crate) type Reply = agent_client_protocol::v1::Responder<Value>;

/// `{"<ns>": fields}`: a `_meta` object holding contract fields.
pub(crate) fn ns_meta(ns: Namespace, fields: Value) -> Meta {
    let mut meta = Meta::new();
    meta.insert(ns.key().to_owned(), fields);
    meta
}

/// Sends `session/update`. A closed connection is not an error here: the
/// work that produced the update is being torn down anyway.
pub(crate) fn update(cx: &Cx, session_id: &str, update: SessionUpdate) {
    let _ = cx.send_notification(SessionNotification::new(session_id.to_owned(), update));
}

/// Sends the extension notification `_<ns>/<path>`.
pub(crate) fn ext(cx: &Cx, ns: Namespace, path: &str, params: Value) {
    if let Ok(message) = UntypedMessage::new(&ns.method(path), params) {
        let _ = cx.send_notification(message);
    }
}
