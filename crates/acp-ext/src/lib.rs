//! Library behind the `acp-ext` command-line tool: printing helpers and
//! the long-running commands (check, state, watch, tap, bridge, probe, serve, demo),
//! so that they can be driven from tests and from other crates.

#![deny(missing_docs)]

pub mod bridge;
pub mod check;
pub mod choice;
pub mod demo;
pub mod dialect;
pub mod finding;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod output;
pub mod present;
pub mod probe;
pub mod serve;
pub mod state;
pub mod tap;
pub(crate) mod time;
pub mod transcript;
pub mod watch;
