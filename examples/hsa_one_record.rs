//! Harness-State Augmentation of one teacher trajectory, as `hsa-augment` stream mode does for each
//! line: the copy runs under a variant of the harness (renamed tools and skills, rewritten text,
//! reordered blocks, other limits and hooks) and every part of the record is rewritten to match, while
//! the ground truth stays canonical.
//!
//!     cargo run --example hsa_one_record [SEED]

mod common;

use std::collections::BTreeSet;

use anyhow::{Context, Result};
use hat::harness::Harness;
use hat::hsa::{Augmenter, Config, Paraphraser, Pool, Selection, Spec};
use hat::record::{Role, Trajectory};

fn main() -> Result<()> {
    let seed: u64 = std::env::args().nth(1).map_or(Ok(1), |s| s.parse())?;
    let base = Harness::load(common::sample_harness_dir())?;
    let record = common::teacher_episode(&base, "product_qa=1", "", seed)?;

    // The shipped op config (configs/hsa.toml), with tool renaming made certain so that the name map
    // below is never empty; the rest of the variant is drawn as in the pipeline.
    let mut config = Config::default();
    config.ops.rename_tool.p = 1.0;
    let spec = Spec {
        config,
        selection: Selection::new(Vec::new(), Vec::new())?,
        pool: Pool::Train,
        keep_skills: BTreeSet::new(),
        paraphraser: Paraphraser::Bank,
    };
    // A pool of 8 variants, as `hsa-augment --variants 8`; each record copy takes one it fits.
    let augmenter = Augmenter::new(&base, &spec, seed, 8)?;
    let copy = augmenter
        .augment(&record, 1)
        .map_err(|reason| anyhow::anyhow!("record rejected: {reason}"))?
        .pop()
        .context("no compatible variant")?;

    let harness = copy
        .harness
        .as_ref()
        .context("the copy names its harness")?;
    println!("{} -> {}", record.id, copy.id);
    let ops = harness.variant.as_ref().map_or(0, |v| v.ops.len());
    println!("variant: {ops} ops, harness hash {}", harness.hash);
    println!("name map (canonical -> surface):");
    for (canonical, surface) in harness.names.tools.iter().chain(&harness.names.skills) {
        println!("  {canonical:<26} -> {surface}");
    }
    println!(
        "tools shown to the model:\n  {:?}\n  {:?}",
        tool_names(&record),
        tool_names(&copy)
    );
    println!("tool calls: {:?} -> {:?}", called(&record), called(&copy));
    println!("system prompt, changed lines (- original, + variant):");
    for line in line_diff(&system_prompt(&record), &system_prompt(&copy))
        .iter()
        .take(24)
    {
        println!("  {line}");
    }
    Ok(())
}

fn system_prompt(t: &Trajectory) -> String {
    t.messages
        .iter()
        .find(|m| m.role == Role::System)
        .map(|m| m.text_content())
        .unwrap_or_default()
}

fn tool_names(t: &Trajectory) -> Vec<&str> {
    t.tools
        .iter()
        .map(|tool| tool.function.name.as_str())
        .collect()
}

fn called(t: &Trajectory) -> Vec<&str> {
    let calls = t.messages.iter().flat_map(|m| &m.tool_calls);
    calls.map(|c| c.function.name.as_str()).collect()
}

/// The lines only one side has, in order, from a longest-common-subsequence alignment.
fn line_diff(a: &str, b: &str) -> Vec<String> {
    let (a, b): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    // lcs[i][j]: length of the longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            (i, j) = (i + 1, j + 1);
        } else if j == b.len() || (i < a.len() && lcs[i + 1][j] >= lcs[i][j + 1]) {
            out.push(format!("- {}", a[i]));
            i += 1;
        } else {
            out.push(format!("+ {}", b[j]));
            j += 1;
        }
    }
    out
}
