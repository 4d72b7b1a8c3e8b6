//! Judges: scorers that turn model outputs into verdicts and reports.

pub mod ifeval;
pub mod verifiable;
pub mod stats;
pub mod compare;
pub mod metric;
pub mod report;
pub mod rubric;
pub mod calibrate;
pub mod endpoint;
pub mod llm;
pub mod commands;
