//! The version ledger of an evolution run: one JSONL line per harness version — its content hash,
//! parent, the proposal that made it, its dev figures, the per-dimension comparisons with its parent and
//! the decision. It sits beside the versions it describes (`<out>/ledger.jsonl`, `<out>/versions/vN/`),
//! is appended one line per round, and is all `hat evolve history`/`diff`/`checkout` read.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::propose::Proposal;
use crate::judge::compare::Comparison;

pub const LEDGER_FILE: &str = "ledger.jsonl";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The starting version.
    Baseline,
    /// Better on at least one dimension, worse on none (sign tests at alpha).
    Accept,
    /// Not significantly better on any dimension.
    Reject,
    /// Significantly worse on at least one dimension.
    Regression,
    /// Never evaluated: the edits were unsafe or the harness they made does not validate.
    Refused,
}

/// One dimension's comparison of a version with its parent, as `judge compare` reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judged {
    pub metric: String,
    pub mean_parent: Option<f64>,
    pub mean: Option<f64>,
    pub wins: u64,
    pub ties: u64,
    pub losses: u64,
    pub p_value: f64,
    pub verdict: String,
}

impl From<&Comparison> for Judged {
    fn from(c: &Comparison) -> Judged {
        Judged {
            metric: c.metric.as_str().to_string(),
            mean_parent: c.mean_a,
            mean: c.mean_b,
            wins: c.tally.wins,
            ties: c.tally.ties,
            losses: c.tally.losses,
            p_value: c.p_value,
            verdict: c.verdict.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub version: usize,
    /// `sha256:…` of the version's files; empty for a refused proposal (no version was made).
    pub hash: String,
    pub parent: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal: Option<Proposal>,
    /// Dev episodes played.
    pub episodes: usize,
    /// Mean of each judge dimension on the dev set.
    pub figures: BTreeMap<String, f64>,
    /// Against the parent, one per dimension.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comparisons: Vec<Judged>,
    pub decision: Decision,
    pub reason: String,
}

pub struct Ledger {
    pub dir: PathBuf,
    pub entries: Vec<Entry>,
}

impl Ledger {
    /// The ledger in `dir`, empty when the run has not started.
    pub fn open(dir: &Path) -> Result<Ledger> {
        let path = dir.join(LEDGER_FILE);
        let mut entries = Vec::new();
        if path.exists() {
            let text =
                fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
            for (i, line) in text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
            {
                entries.push(serde_json::from_str(line).with_context(|| {
                    format!("{}:{}: not a ledger entry", path.display(), i + 1)
                })?);
            }
        }
        Ok(Ledger {
            dir: dir.to_path_buf(),
            entries,
        })
    }

    /// Appends `entry` to memory and to the file (one flushed line, so an interrupted run loses at most
    /// the round in progress).
    pub fn append(&mut self, entry: Entry) -> Result<()> {
        let path = self.dir.join(LEDGER_FILE);
        let mut f = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        writeln!(f, "{}", serde_json::to_string(&entry)?)?;
        f.sync_all()?;
        self.entries.push(entry);
        Ok(())
    }

    /// The current best version: the newest baseline or accepted one.
    pub fn best(&self) -> Option<&Entry> {
        self.entries
            .iter()
            .rev()
            .find(|e| matches!(e.decision, Decision::Baseline | Decision::Accept))
    }

    /// The next version number.
    pub fn next_version(&self) -> usize {
        self.entries.len()
    }

    /// Rounds since the last accepted version (what early stopping counts).
    pub fn failed_in_a_row(&self) -> usize {
        self.entries
            .iter()
            .rev()
            .take_while(|e| !matches!(e.decision, Decision::Baseline | Decision::Accept))
            .count()
    }

    pub fn version_dir(&self, version: usize) -> PathBuf {
        self.dir.join("versions").join(format!("v{version}"))
    }

    pub fn run_file(&self, version: usize) -> PathBuf {
        self.dir.join("runs").join(format!("v{version}.jsonl"))
    }

    /// The entry of `version`, which must have files (not a refused proposal).
    pub fn get(&self, version: usize) -> Result<&Entry> {
        let Some(e) = self.entries.iter().find(|e| e.version == version) else {
            bail!(
                "{} has no version {version} (versions 0–{})",
                self.dir.join(LEDGER_FILE).display(),
                self.entries.len().saturating_sub(1)
            );
        };
        if e.decision == Decision::Refused {
            bail!("version {version} was refused before evaluation and has no files");
        }
        Ok(e)
    }

    /// The history as a table like the paper's: version, parent, the four dimensions, decision, edit.
    pub fn markdown(&self) -> String {
        let mut s = String::from(
            "| version | parent | accuracy | effectiveness | tool rationality | skill selection | decision | edit |\n\
             |---|---|---|---|---|---|---|---|\n",
        );
        for e in &self.entries {
            let f = |k: &str| {
                e.figures
                    .get(k)
                    .map_or("–".into(), |v| format!("{:.2}", v * 100.0))
            };
            s += &format!(
                "| v{} | {} | {} | {} | {} | {} | {} | {} |\n",
                e.version,
                e.parent.map_or("–".into(), |p| format!("v{p}")),
                f("accuracy"),
                f("effectiveness"),
                f("tool_rationality"),
                f("skill_selection"),
                serde_json::to_value(e.decision)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                e.proposal.as_ref().map_or("–", |p| p.title.as_str()),
            );
        }
        s
    }
}
