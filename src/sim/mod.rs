//! The live-room simulator: a seeded catalog, viewers asking things, a tool sandbox with injected
//! faults, and a success check against the task's canonical ground truth.

pub mod catalog;
pub mod cli;
pub mod context;
pub mod copy_task;
pub mod faults;
pub mod noise;
pub mod phrasing;
pub mod sandbox;
pub mod served;
pub mod success;
pub mod tasks;
