//! The connection's types and the `_meta` builder (every message goes out
//! through the library's handle, [`super::state::Shared::send`]).

use acp_extension_core::meta::{MetaExt, MetaField};
use acp_extension_core::namespace::Namespace;
use acp_extension_core::wire::NonNegF64;
use agent_client_protocol::Client;
use agent_client_protocol::v1::schema::Meta;
use serde_json::Value;

/// The connection to the client, as handlers and tasks see it.
pub(crate) type Cx = agent_client_protocol::v1::ConnectionTo<Client>;

/// The responder of an untyped request.
pub(crate) type Reply = agent_client_protocol::v1::Responder<Value>;

/// A non-negative finite number (counts, epoch seconds); anything else is 0.
pub(crate) fn nn(x: f64) -> NonNegF64 {
    NonNegF64::new(x).unwrap_or_default()
}

/// Builds a `_meta` object from typed contract fields in one namespace.
#[derive(Debug)]
pub(crate) struct MetaBuilder {
    ns: Namespace,
    meta: Option<Meta>,
}

impl MetaBuilder {
    pub(crate) fn new(ns: Namespace) -> Self {
        Self { ns, meta: None }
    }

    /// Sets `_meta.<ns>.<F>`.
    pub(crate) fn with<F: MetaField>(mut self, value: F::Value) -> Self {
        self.meta.set_ext::<F>(self.ns, value);
        self
    }

    pub(crate) fn build(self) -> Meta {
        self.meta.unwrap_or_default()
    }
}
