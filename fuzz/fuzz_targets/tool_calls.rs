#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hat::fuzz::tool_calls::check(data));
