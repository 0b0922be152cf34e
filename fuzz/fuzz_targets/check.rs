//! Fuzz target `check`: see `acp_ext::fuzzing::check` for the input layout and
//! the properties checked.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| acp_ext::fuzzing::check(data));
