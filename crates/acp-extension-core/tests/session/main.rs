//! Session extension types (contract §9): round trips, absent versus `null`,
//! the contract's rejections, and every `_meta.lody.<field>` value of the
//! adapters' recorded corpus.

#[path = "../common/mod.rs"]
mod common;

use common::{rejects, round_trip};

use std::path::{Path, PathBuf};

use acp_extension_core::session::*;
use acp_extension_core::validate::{Check, check};
use acp_extension_core::wire::{Count, EpochSeconds, MaybeUndefined, NonNegF64, WireObject};
use agent_client_protocol::v1::schema::{ContentBlock, TextContent};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Parses `v` as `T`, checks it is valid and that it serializes back to the
/// same JSON value.
/// Asserts that `v` does not parse as `T` and that `check` reports exactly
/// the given `(pointer, rule id)` violations.
fn num(n: f64) -> NonNegF64 {
    NonNegF64::new(n).unwrap()
}

mod activity;
mod canonical_tools;
mod corpus;
mod establishment;
mod goals;
mod notices;
mod steering;
mod subagent_queries;
mod tasks;
