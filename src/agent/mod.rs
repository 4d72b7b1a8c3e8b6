//! The agent runtime: runs a policy against a harness in the simulated live room, with the harness's
//! hooks and limits enforced, and records each episode as a trajectory.

pub mod checks;
pub mod cli;
pub mod hooks;
pub mod rollout;
pub mod runtime;
pub mod two_agent;

pub use runtime::{Agent, SimEnv};
