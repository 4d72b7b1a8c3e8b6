//! Records file → training views, with every skipped record counted by reason (and copied to the
//! rejects file when one is given).

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Result;
use rayon::prelude::*;
use serde::Serialize;

use super::view::{TrainingView, ViewBuilder};
use crate::jsonl::{JsonlArgs, OnError, RawLine};
use crate::record::Trajectory;

/// What loading kept and skipped.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LoadSummary {
    pub records: u64,
    pub views: u64,
    /// reason → count: `no_assistant_tokens`, `longer_than_max_seq_length`, ….
    pub skipped: BTreeMap<String, u64>,
    pub tokens: u64,
    pub trained_tokens: u64,
    pub max_len: usize,
}

/// Reads `path` and builds views. Sequences longer than `max_seq_length` are skipped, not truncated:
/// the trained tokens sit at the end of a conversation, after the long system prompt, so cutting the
/// tail would keep the cost and lose the signal.
pub fn load_views(
    path: &str,
    rejects: Option<PathBuf>,
    builder: &ViewBuilder,
    max_seq_length: usize,
) -> Result<(Vec<TrainingView>, LoadSummary)> {
    let args = JsonlArgs {
        input: path.to_string(),
        output: "-".into(),
        on_error: if rejects.is_some() {
            OnError::Skip
        } else {
            OnError::Fail
        },
        rejects,
        shard: None,
    };
    let mut records = args.records::<Trajectory>()?;
    let mut lines: Vec<(RawLine, Trajectory)> = Vec::new();
    while let Some(item) = records.next_numbered() {
        lines.push(item?);
    }
    let built: Vec<_> = lines.par_iter().map(|(_, t)| builder.build(t)).collect();
    let mut summary = LoadSummary {
        records: lines.len() as u64,
        ..LoadSummary::default()
    };
    let mut views = Vec::new();
    for ((line, rec), result) in lines.iter().zip(built) {
        let reason = match result {
            Ok(v) if v.len() > max_seq_length => Err((
                "longer_than_max_seq_length",
                format!("{} tokens > max_seq_length {max_seq_length}", v.len()),
            )),
            Ok(v) => Ok(v),
            Err(skip) => Err((skip.reason(), skip.to_string())),
        };
        match reason {
            Ok(v) => {
                summary.tokens += v.len() as u64;
                summary.trained_tokens += v.trained_tokens() as u64;
                summary.max_len = summary.max_len.max(v.len());
                views.push(v);
            }
            Err((key, why)) => {
                *summary.skipped.entry(key.to_string()).or_default() += 1;
                if args.rejects.is_some() {
                    records.reject(line, format!("record {:?}: {why}", rec.id))?;
                }
            }
        }
    }
    summary.views = views.len() as u64;
    Ok((views, summary))
}
