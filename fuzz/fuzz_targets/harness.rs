#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hat::fuzz::harness::check(data));
