//! `acp-ext`: command-line tool for ACP Extension Core.
fn main() {}
