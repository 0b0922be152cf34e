//! Fuzz target `state`: see `acp_ext_test_support::state` for the input layout and
//! the properties checked.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fuzz_target!(|data: &[u8]| acp_ext_test_support::state(data));
