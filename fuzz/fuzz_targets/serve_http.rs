#![no_main]

// The server starts before the first input, so its start-up is not timed as that input's run.
libfuzzer_sys::fuzz_target!(init: hat::fuzz::serve_http::start(), |data: &[u8]| {
    hat::fuzz::serve_http::check(data)
});
