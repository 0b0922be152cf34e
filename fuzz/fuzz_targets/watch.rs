//! Fuzz target `watch`: see `acp_ext_test_support::watch` for the input layout and
//! the properties checked.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fuzz_target!(|data: &[u8]| acp_ext_test_support::watch(data));
