//! Harness evolution, the loop HAT exists to serve: operators change the harness instead of retraining.
//! Diagnose the failures of a dev run (`diagnose`), propose an edit for a cluster (`propose`: rules
//! offline, or an OpenAI-compatible endpoint: `endpoint`), apply it to a copy and validate it
//! (`candidate`), evaluate it with the same policy and seeds, decide on each judge dimension, and keep
//! every version with its figures and decision in a ledger (`ledger`); `run` is the loop, `cli` the
//! `hat evolve` commands.

pub mod candidate;
pub mod cli;
pub mod diagnose;
pub mod endpoint;
pub mod ledger;
pub mod propose;
pub mod run;
