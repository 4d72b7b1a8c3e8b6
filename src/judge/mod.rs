//! Judges: scorers that turn model outputs into verdicts and reports.

pub mod calibrate;
pub mod commands;
pub mod compare;
pub mod endpoint;
pub mod ifeval;
pub mod llm;
pub mod metric;
pub mod report;
pub mod rubric;
pub mod stats;
pub mod verifiable;
