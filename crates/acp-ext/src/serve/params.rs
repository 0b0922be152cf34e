//! Parsing request params into typed values, with `-32602` errors that
//! name the offending field.

use acp_extension_core::wire::json_type;
use agent_client_protocol::{Error, ErrorCode};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Parses `params` as `T`; the error names the field at fault.
pub(crate) fn parse<T: DeserializeOwned>(params: &Value) -> Result<T, Error> {
    if !params.is_object() {
        return Err(invalid_params(
            "",
            format!("params must be an object, got {}", json_type(params)),
        ));
    }
    serde_path_to_error::deserialize::<_, T>(params).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        invalid_params(&path, e.inner().to_string())
    })
}

/// `-32602 Invalid params` naming `field` (a dotted path, empty for the
/// params object itself).
pub(crate) fn invalid_params(field: &str, problem: impl std::fmt::Display) -> Error {
    let message = if field.is_empty() {
        format!("Invalid params: {problem}")
    } else {
        format!("Invalid params: {field}: {problem}")
    };
    Error::new(ErrorCode::INVALID_PARAMS, message).data(json!({ "field": field }))
}

/// `-32002 Resource not found` for an unknown session.
pub(crate) fn unknown_session(session_id: &str) -> Error {
    Error::new(
        ErrorCode::RESOURCE_NOT_FOUND,
        format!("Resource not found: session {session_id:?} does not exist on this connection"),
    )
    .data(json!({ "sessionId": session_id }))
}

/// `-32601 Method not found`, with the method in `data`.
pub(crate) fn method_not_found(method: &str) -> Error {
    Error::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("Method not found: {method}"),
    )
    .data(json!(method))
}

/// `-32600 Invalid request`: the request is well-formed but not allowed in
/// the current state (a second prompt in flight, a closing connection).
pub(crate) fn invalid_state(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::INVALID_REQUEST, message.into())
}

/// Reads `params.sessionId` as a string.
pub(crate) fn session_id(params: &Value) -> Result<String, Error> {
    match params.get("sessionId") {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(invalid_params(
            "sessionId",
            format!("expected a string, got {}", json_type(other)),
        )),
        None => Err(invalid_params("sessionId", "missing field `sessionId`")),
    }
}
