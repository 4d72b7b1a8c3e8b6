//! Fuzz properties: one function per parser family that takes outside input, checked on arbitrary
//! bytes. Each panics when its property fails, so the same code serves two drivers:
//! * libFuzzer (`fuzz/`, `make fuzz`): coverage-guided search, one binary per target;
//! * `cargo test` on stable (`tests/fuzz_corpus.rs`): every committed input under
//!   `testdata/fuzz/<target>/` replayed as a regression case.
//!
//! A property says more than "no panic": what parses re-renders or writes back to the same thing, and
//! what is rejected says where (file, line, field; or a 4xx with an OpenAI error body). See
//! docs/fuzzing.md for the targets, how to run them and what they found.
//!
//! Inputs that hold several parts (a JSONL file and a response, a config and a weights file) split
//! them at the first NUL byte ([`split_at_nul`]): libFuzzer mutates one byte as easily as any other.

pub mod chat_template;
pub mod checkpoint;
pub mod harness;
pub mod ifeval;
pub mod jsonl_record;
mod kept;
pub mod replay_set;
pub mod serve_http;
pub mod tool_calls;

/// Every target by name (the folder of its corpus under `testdata/fuzz/` and its binary in `fuzz/`).
pub const TARGETS: &[(&str, fn(&[u8]))] = &[
    ("tool_calls", tool_calls::check),
    ("jsonl_record", jsonl_record::check),
    ("harness", harness::check),
    ("chat_template", chat_template::check),
    ("serve_http", serve_http::check),
    ("ifeval", ifeval::check),
    ("replay_set", replay_set::check),
    ("checkpoint", checkpoint::check),
];

/// The bytes before the first NUL and those after it (empty when there is none).
pub fn split_at_nul(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}
