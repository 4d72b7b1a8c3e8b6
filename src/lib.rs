//! HAT — Harness-Aware Training toolkit.
//!
//! A library with thin binaries in `src/bin/`; every stage reads and writes JSONL trajectory records
//! ([`record`], [`jsonl`]) so the tools pipe together. See `README.md` for the tour and DESIGN.md for the method.

pub mod agent;
pub mod chat;
pub mod distill;
pub mod eval;
pub mod evidence;
pub mod evolve;
pub mod fresh_ids;
pub mod fresh_names;
pub mod fuzz;
pub mod general;
pub mod harness;
pub mod heap;
pub mod hsa;
pub mod jsonl;
pub mod judge;
pub mod model;
pub mod opd;
pub mod policy;
pub mod record;
pub mod records_cli;
pub mod replay;
pub mod rl;
pub mod rng;
pub mod serve;
pub mod service;
pub mod sim;
pub mod tokenizer;
pub mod tokenizer_cli;
pub mod train;
