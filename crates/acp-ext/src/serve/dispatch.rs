//! The agent's SDK builder and the routing of incoming messages.

use std::sync::Arc;

use acp_extension_core::namespace::split_method;
use acp_extension_core::standard::{GOAL_METHOD, STEERING_METHOD};
use agent_client_protocol::{Agent, Client, ConnectTo, Error, UntypedMessage};
use serde_json::Value;

use super::params::{self, invalid_state, method_not_found};
use super::state::Shared;
use super::wire::{Cx, Reply};
use super::{ext, script, sessions};

/// The agent builder for one connection over `shared`.
pub(crate) fn builder(shared: Arc<Shared>) -> impl ConnectTo<Client> + 'static {
    let on_request = shared.clone();
    let on_notification = shared.clone();
    let on_close = shared;
    Agent
        .v1()
        .name("acp-ext-serve")
        .on_receive_request(
            async move |message: UntypedMessage, responder: Reply, cx: Cx| {
                request(&on_request, message, responder, cx)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |message: UntypedMessage, cx: Cx| {
                notification(&on_notification, message, &cx);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_close(async move |_: Cx| {
            on_close.shutdown().await;
            Ok(())
        })
}

/// Routes one request. Every failure becomes a JSON-RPC error response;
/// the connection stays up.
fn request(
    shared: &Arc<Shared>,
    message: UntypedMessage,
    responder: Reply,
    cx: Cx,
) -> Result<(), Error> {
    let (method, params) = message.into_parts();
    if method == "session/prompt" {
        return match script::prepare(shared, &params, &cx) {
            Ok(turn) => script::spawn(shared, turn, responder, cx),
            Err(e) => responder.respond_with_error(e),
        };
    }
    match answer(shared, &method, &params, &cx) {
        Ok(value) => responder.respond(value),
        Err(e) => responder.respond_with_error(e),
    }
}

fn answer(shared: &Arc<Shared>, method: &str, params: &Value, cx: &Cx) -> Result<Value, Error> {
    if method == "initialize" {
        return sessions::initialize(shared, params, cx);
    }
    {
        let inner = shared.lock();
        if !inner.initialized {
            return Err(invalid_state(format!(
                "{method}: the connection is not initialized; send `initialize` first"
            )));
        }
    }
    match method {
        "authenticate" => Ok(Value::Object(Default::default())),
        "session/new" => sessions::new_session(shared, params),
        "session/load" => sessions::load(shared, params, true),
        "session/resume" => sessions::load(shared, params, false),
        "session/fork" => sessions::fork(shared, params, cx),
        "session/list" => sessions::list(shared, params),
        "session/close" => sessions::close(shared, params),
        "session/set_config_option" => sessions::set_config_option(shared, params),
        STEERING_METHOD | GOAL_METHOD => ext::standard_request(shared, method, params),
        other if split_method(other).is_some() => ext::request(shared, other, params),
        other => Err(method_not_found(other)),
    }
}

/// Handles one notification; unknown ones are ignored (JSON-RPC forbids
/// answering them).
fn notification(shared: &Arc<Shared>, message: UntypedMessage, cx: &Cx) {
    if message.method() == "session/cancel"
        && let Ok(session_id) = params::session_id(message.params())
    {
        sessions::cancel(shared, &session_id, cx);
    }
}
