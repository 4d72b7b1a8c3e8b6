//! `replay-bench`: replay fixed deployment requests against any OpenAI-compatible endpoint and measure
//! what the paper reports for deployment — wall-clock P50/P95, TTFT, decode throughput, execution
//! success and 15-second attainment — with vLLM's metric definitions and JSON key names.
//!
//! [`set`] (the replay set and its generator) · [`arrivals`] (Poisson/gamma send times) · [`client`]
//! (one timed request, plain or agent mode) · [`stats`] (percentiles, summary) · [`report`] (JSON, CSV,
//! SVG CDF, compare) · [`cli`].

pub mod arrivals;
pub mod cli;
pub mod client;
pub mod report;
pub mod set;
pub mod stats;
