//! The stage-by-stage report of `make reproduce` (`hat report`): every stage's checkpoint measured on
//! the same held-out sets, laid out like the paper's results table, each cell with its 95% interval and
//! n, the paired sign test between adjacent stages, Harness-Variant QA-lite variant by variant, the
//! method's four claims checked in sentences (a claim that does not reproduce says so instead of hiding
//! its row), the agent-mode latency of the final model, and the wall-clock of each stage.
//!
//! It reads what the Make stages wrote under one directory:
//! * `eval/STAGE.SET.jsonl` — the stage's scored episodes on SET (`teacher-distill eval --episodes`,
//!   or `hat sim rollout` + `judge score` for the oracle), SET one of `primary` (Live-Stream QA-lite:
//!   held-out tasks, original harness), `heldout` (Harness-Variant QA-lite: the same tasks under held-out
//!   variants), `phrasings` (Synthetic LS-QA: held-out wording);
//! * `ifeval/STAGE.json` — IFEval-lite of the stage (`hat general eval`), and `ifeval/STAGE.answers.jsonl`
//!   its per-prompt answers (`--answers`) for the paired test between stages;
//! * `replay/summary.json` — `replay-bench run --mode agent` against the served final model;
//! * `times.tsv` — `STAGE<TAB>seconds` per line; a stage run again appends a line, and its last one counts.
//!
//! A missing file leaves its cells empty ("–"): the report of a partial run is still a report.
//! The QA-lite score is the share of episodes that solve their task (`meta.success`: the expected calls
//! made, the facts stated, the limits kept; ×100) — not the judge's accuracy alone, which only checks
//! that the numbers a reply states are grounded (and leaves a reply that states none unscored).
//! Right tool and the judge's dimensions are in the detail table, accuracy with how many it scored.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;

use super::bars::{grouped_bars_svg, Bar};
use super::rollout::{paired_right_tool, summarise, Estimate, EvalSummary};
use crate::general::answers::{compare, Answer, Level, Strictness};
use crate::general::score::IfevalLite;
use crate::jsonl::read_all;
use crate::judge::stats::paired_sign_test;
use crate::record::{HarnessRef, Trajectory};

/// The evaluation sets, as file names and the paper's column names.
const SETS: [(&str, &str); 3] = [
    ("primary", "Live-Stream QA-lite"),
    ("heldout", "Harness-Variant QA-lite"),
    ("phrasings", "Synthetic LS-QA"),
];

/// The paper's figures for the complete agent on one H20: P50 and P95 end-to-end seconds.
const PAPER_P50_S: f64 = 3.4;
const PAPER_P95_S: f64 = 8.1;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The directory the reproduce stages wrote (eval/, ifeval/, replay/, times.tsv).
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// The stages in training order, as NAME=LABEL (repeat): base, fixed-harness SFT, HSA-SFT, OPD, RL.
    /// The claims use the names base, fixed, hsa, opd (OPD from hsa), opd-fixed (OPD from fixed) and rl;
    /// adjacent stages get the paired test.
    #[arg(long = "stage", value_name = "NAME=LABEL", required = true)]
    pub stages: Vec<String>,
    /// The teacher's episodes as NAME=LABEL: a reference row, not a stage.
    #[arg(long, value_name = "NAME=LABEL")]
    pub oracle: Option<String>,
    /// Where to write the markdown.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// Where to write the plot (default: scores.svg beside the markdown). Two reports of one
    /// directory (make reproduce's and make opd's) need two names.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
}

/// Everything measured about one stage (or the oracle).
struct Row {
    name: String,
    label: String,
    /// Per set name: the scored episodes and their summary.
    sets: BTreeMap<&'static str, (Vec<Trajectory>, EvalSummary)>,
    ifeval: Option<IfevalLite>,
    answers: Option<Vec<Answer>>,
}

impl Row {
    fn load(dir: &Path, spec: &str) -> Result<Row> {
        let (name, label) = spec.split_once('=').unwrap_or((spec, spec));
        let mut sets = BTreeMap::new();
        for (set, _) in SETS {
            let path = dir.join("eval").join(format!("{name}.{set}.jsonl"));
            if path.exists() {
                let episodes: Vec<Trajectory> = read_all(&path.to_string_lossy())?;
                let summary = summarise(set, &episodes, 0);
                sets.insert(set, (episodes, summary));
            }
        }
        let path = dir.join("ifeval").join(format!("{name}.json"));
        let ifeval = if path.exists() {
            let text = std::fs::read_to_string(&path)?;
            Some(
                serde_json::from_str(text.trim())
                    .with_context(|| format!("{}: not IFEval-lite JSON", path.display()))?,
            )
        } else {
            None
        };
        let path = dir.join("ifeval").join(format!("{name}.answers.jsonl"));
        let answers = if path.exists() {
            Some(read_all(&path.to_string_lossy())?)
        } else {
            None
        };
        Ok(Row {
            name: name.to_string(),
            label: label.to_string(),
            sets,
            ifeval,
            answers,
        })
    }

    fn summary(&self, set: &str) -> Option<&EvalSummary> {
        self.sets.get(set).map(|(_, s)| s)
    }

    /// The QA-lite score of a set: solved tasks ×100.
    fn qa(&self, set: &str) -> Option<Estimate> {
        self.summary(set).map(|s| s.success.percent())
    }

    /// IFEval-lite prompt-level strict accuracy ×100.
    fn ifeval_strict(&self) -> Option<Estimate> {
        self.ifeval.map(|i| {
            let r = i.prompt_strict;
            Estimate {
                value: r.value,
                lo: r.low,
                hi: r.high,
                n: r.total,
            }
            .percent()
        })
    }
}

/// The paired sign test of B against A on solved tasks: (B solves where A does not, the reverse, p).
fn paired_success(a: &[Trajectory], b: &[Trajectory]) -> (u64, u64, f64) {
    fn solved(side: &[Trajectory]) -> impl Iterator<Item = (&str, bool)> {
        side.iter().map(|t| (t.id.as_str(), t.solved()))
    }
    paired_sign_test(solved(a), solved(b))
}

fn cell(e: Option<Estimate>) -> String {
    e.map_or("–".into(), |e| {
        format!("{:.1} [{:.1}, {:.1}] (n = {})", e.value, e.lo, e.hi, e.n)
    })
}

/// Writes the report and its plot; returns the markdown.
pub fn write(a: &ReportArgs) -> Result<String> {
    let rows: Vec<Row> = a
        .stages
        .iter()
        .chain(a.oracle.iter())
        .map(|s| Row::load(&a.dir, s))
        .collect::<Result<_>>()?;
    let (stages, oracle) = rows.split_at(a.stages.len());
    let mut md = String::from("# HAT at toy scale: the paper's table, reproduced\n\n");
    results_table(&mut md, &rows);
    detail_table(&mut md, &rows);
    paired_tests(&mut md, stages)?;
    by_variant(&mut md, stages);
    claims(&mut md, stages, oracle.first());
    latency(&mut md, &a.dir)?;
    times(&mut md, &a.dir)?;
    if let Some(parent) = a.output.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&a.output, &md).with_context(|| format!("writing {}", a.output.display()))?;
    let svg = a
        .plot
        .clone()
        .unwrap_or_else(|| a.output.with_file_name("scores.svg"));
    std::fs::write(&svg, plot(&rows))?;
    Ok(md)
}

fn results_table(md: &mut String, rows: &[Row]) {
    md.push_str("QA-lite columns: tasks solved ×100 (the expected calls made, the facts stated, the limits kept); IFEval-lite: prompt-level strict ×100. Every cell: value [95% interval] (n).\n\n| stage |");
    for (_, column) in SETS {
        let _ = write!(md, " {column} |");
    }
    md.push_str(" IFEval-lite |\n|---|---|---|---|---|\n");
    for r in rows {
        let _ = write!(md, "| {} |", r.label);
        for (set, _) in SETS {
            let _ = write!(md, " {} |", cell(r.qa(set)));
        }
        let _ = writeln!(md, " {} |", cell(r.ifeval_strict()));
    }
}

fn detail_table(md: &mut String, rows: &[Row]) {
    md.push_str("\n## Detail by set\n\n| stage | set | right tool (n tool tasks) | skill selection | accuracy (n scored) | effectiveness | tool rationality |\n|---|---|---|---|---|---|---|\n");
    for r in rows {
        for (set, column) in SETS {
            if let Some(s) = r.summary(set) {
                let _ = writeln!(
                    md,
                    "| {} | {column} | {} ({}) | {} | {} ({}) | {} | {} |",
                    r.label,
                    s.right_tool.display(),
                    s.right_tool.n,
                    s.skill_selection.display(),
                    s.accuracy.display(),
                    s.accuracy.n,
                    s.effectiveness.display(),
                    s.tool_rationality.display()
                );
            }
        }
    }
}

fn paired_tests(md: &mut String, stages: &[Row]) -> Result<()> {
    md.push_str("\n## Adjacent stages, paired sign tests on the same tasks\n\n| later vs earlier | set | solved: later only / earlier only, p | right tool: later only / earlier only, p |\n|---|---|---|---|\n");
    for pair in stages.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        for (set, column) in SETS {
            let (Some((ea, _)), Some((eb, _))) = (a.sets.get(set), b.sets.get(set)) else {
                continue;
            };
            let solved = paired_success(ea, eb);
            let right = paired_right_tool(ea, eb);
            let _ = writeln!(
                md,
                "| {} vs {} | {column} | {} / {}, p = {:.2e} | {} / {}, p = {:.2e} |",
                b.label, a.label, solved.0, solved.1, solved.2, right.0, right.1, right.2
            );
        }
        if let (Some(aa), Some(ab)) = (&a.answers, &b.answers) {
            let c = compare(aa, ab, Level::Prompt, Strictness::Strict)?;
            let _ = writeln!(
                md,
                "| {} vs {} | IFEval-lite (prompt strict) | {} / {}, p = {:.2e} | – |",
                b.label, a.label, c.wins, c.losses, c.p_value
            );
        }
    }
    Ok(())
}

/// Harness-Variant QA-lite split by the held-out variant each episode ran under (its harness hash), in
/// the order the variants first appear: a variant no stage solves a task under is a harness change the
/// method does not yet survive, which the column's average hides. Each variant is named by its hash and
/// what it renames, the skill loader first (the change every stage so far has failed on).
fn by_variant(md: &mut String, stages: &[Row]) {
    let measured: Vec<(&Row, &[Trajectory])> = stages
        .iter()
        .filter_map(|r| r.sets.get("heldout").map(|(e, _)| (r, e.as_slice())))
        .collect();
    let Some((_, first)) = measured.first() else {
        return;
    };
    let mut variants: Vec<(&str, String)> = Vec::new();
    for t in *first {
        if let Some(h) = &t.harness {
            if !variants.iter().any(|(hash, _)| *hash == h.hash) {
                variants.push((h.hash.as_str(), variant_label(h)));
            }
        }
    }
    if variants.len() < 2 {
        return;
    }
    md.push_str("\n## Harness-Variant QA-lite by variant\n\nTasks solved / episodes under each held-out variant.\n\n| variant |");
    for (r, _) in &measured {
        let _ = write!(md, " {} |", r.label);
    }
    md.push_str("\n|---|");
    md.push_str(&"---|".repeat(measured.len()));
    md.push('\n');
    let mut unsolved = Vec::new();
    for (hash, label) in &variants {
        let _ = write!(md, "| {label} |");
        let mut any = false;
        for (_, episodes) in &measured {
            let (mut n, mut solved) = (0, 0);
            for t in episodes
                .iter()
                .filter(|t| t.harness.as_ref().is_some_and(|h| h.hash == *hash))
            {
                n += 1;
                solved += usize::from(t.solved());
            }
            any |= solved > 0;
            let _ = write!(md, " {solved} / {n} |");
        }
        md.push('\n');
        if !any {
            unsolved.push(label.as_str());
        }
    }
    if !unsolved.is_empty() {
        let _ = writeln!(
            md,
            "\nNo stage solves a task under {} of the {} variants: {}.",
            unsolved.len(),
            variants.len(),
            unsolved.join("; ")
        );
    }
}

/// `` `259ccd6`: loader → `obtain_skill_body`; renamed: tools 5, skills 7, argument keys 0 ``.
fn variant_label(h: &HarnessRef) -> String {
    let short = h.hash.trim_start_matches("sha256:");
    let short = &short[..short.len().min(7)];
    let loader = match h.names.tools.get("load_skill") {
        Some(name) => format!("loader → `{name}`"),
        None => "loader kept".to_string(),
    };
    let params: usize = h.names.params.values().map(|m| m.len()).sum();
    format!(
        "`{short}`: {loader}; renamed: tools {}, skills {}, argument keys {params}",
        h.names.tools.len(),
        h.names.skills.len()
    )
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "reproduces"
    } else {
        "does NOT reproduce"
    }
}

/// The paper's pattern, one sentence per claim, with the figures it rests on. A claim is checked when
/// the stage it is about is in the report (make opd's report has no HSA or RL stage); a stage listed
/// whose files are missing gives "not measured".
fn claims(md: &mut String, stages: &[Row], oracle: Option<&Row>) {
    let find = |name: &str| stages.iter().find(|r| r.name == name);
    md.push_str("\n## The paper's claims at toy scale\n\n");
    match (find("fixed"), find("hsa")) {
        (_, None) => {}
        (Some(fixed), Some(hsa)) => match (fixed.sets.get("heldout"), hsa.sets.get("heldout")) {
            (Some((ef, sf)), Some((eh, sh))) => {
                let delta = 100.0 * (sh.success.value - sf.success.value);
                let (better, worse, p) = paired_success(ef, eh);
                let _ = writeln!(md, "* HSA-SFT ahead of fixed-harness SFT on Harness-Variant QA-lite by ≥ 20 points (paired p < 0.01): {} — {delta:+.1} points, HSA solves {better} tasks fixed does not, fixed {worse} the other way, p = {p:.2e}.", verdict(delta >= 20.0 && p < 0.01));
            }
            _ => md.push_str("* HSA-SFT vs fixed SFT on held-out variants: not measured (no heldout episodes).\n"),
        },
        _ => md.push_str("* HSA-SFT vs fixed SFT: not measured (stage missing).\n"),
    }
    // OPD's claim for every OPD stage whose SFT stage is in the report: make reproduce's `opd` (from
    // HSA-SFT) and make opd's `opd-fixed` (from fixed-harness SFT).
    let opd_runs: Vec<_> = [("hsa", "opd"), ("fixed", "opd-fixed")]
        .into_iter()
        .filter_map(|(sft, opd)| Some((find("base")?, find(sft)?, find(opd)?)))
        .collect();
    for &(base, sft, opd) in &opd_runs {
        opd_claim(md, base, sft, opd);
    }
    if opd_runs.is_empty() {
        md.push_str(
            "* OPD's recovery of IFEval-lite: not measured (no OPD stage after an SFT stage).\n",
        );
    }
    if find("rl").is_none() {
        return;
    }
    match (
        find("opd").and_then(|r| r.qa("heldout")),
        find("rl").and_then(|r| r.qa("heldout")),
    ) {
        (Some(opd), Some(rl)) => {
            let delta = rl.value - opd.value;
            let _ = writeln!(md, "* RL adds ≥ 2 points on Harness-Variant QA-lite: {} — {delta:+.1} points ({:.1} → {:.1}).", verdict(delta >= 2.0), opd.value, rl.value);
        }
        _ => md.push_str("* RL's gain on held-out variants: not measured.\n"),
    }
    match (
        oracle.and_then(|r| r.qa("primary")),
        find("rl").and_then(|r| r.qa("primary")),
    ) {
        (Some(oracle), Some(rl)) => {
            let gap = oracle.value - rl.value;
            let _ = writeln!(md, "* The final model within 5 points of the teacher on Live-Stream QA-lite: {} — teacher {:.1}, final {:.1} ({gap:.1} points behind).", verdict(gap <= 5.0), oracle.value, rl.value);
        }
        _ => md.push_str("* Final model vs teacher: not measured.\n"),
    }
}

/// OPD recovers ≥ 80% of what SFT lost on IFEval-lite (prompt strict), and keeps the shop: Live-Stream
/// right tool no more than 2 points below the SFT model's.
fn opd_claim(md: &mut String, base: &Row, sft: &Row, opd: &Row) {
    let (Some(b), Some(s), Some(o)) = (
        base.ifeval_strict(),
        sft.ifeval_strict(),
        opd.ifeval_strict(),
    ) else {
        let _ = writeln!(
            md,
            "* OPD from {}: not measured (a stage's IFEval-lite is missing).",
            sft.label
        );
        return;
    };
    let lost = b.value - s.value;
    if lost <= 0.0 {
        let _ = writeln!(md, "* OPD from {} recovers ≥ 80% of SFT's IFEval-lite loss: not testable — SFT lost nothing here (base {:.1}, SFT {:.1}, OPD {:.1}).", sft.label, b.value, s.value, o.value);
    } else {
        let recovered = (o.value - s.value) / lost;
        let _ = writeln!(md, "* OPD from {} recovers ≥ 80% of SFT's IFEval-lite loss: {} — SFT lost {lost:.1} points (base {:.1} → {:.1}), OPD recovered {:.0}% ({:.1}).", sft.label, verdict(recovered >= 0.8), b.value, s.value, 100.0 * recovered, o.value);
    }
    if let (Some(s), Some(o)) = (sft.summary("primary"), opd.summary("primary")) {
        let delta = 100.0 * (o.right_tool.value - s.right_tool.value);
        let _ = writeln!(md, "* OPD from {} keeps Live-Stream right tool within 2 points: {} — {:.3} → {:.3} ({delta:+.1} points).", sft.label, verdict(delta >= -2.0), s.right_tool.value, o.right_tool.value);
    }
}

fn latency(md: &mut String, dir: &Path) -> Result<()> {
    let path = dir.join("replay").join("summary.json");
    if !path.exists() {
        return Ok(());
    }
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path)?)
        .with_context(|| format!("{}: not JSON", path.display()))?;
    let ms = |k: &str| s[k].as_f64().unwrap_or(f64::NAN);
    let ttft = ms("p50_ttft_ms");
    let ttft = if ttft.is_finite() {
        format!("; TTFT P50 {ttft:.0} ms")
    } else {
        String::new()
    };
    let _ = writeln!(
        md,
        "\n## The complete agent, served (replay-bench, agent mode)\n\n{} requests, {} failed: end-to-end P50 {:.2} s, P95 {:.2} s (the paper, 35B-A3B on one H20: {PAPER_P50_S} s / {PAPER_P95_S} s){ttft}. Latency CDF: replay/cdf.svg.",
        s["completed"], s["failed"], ms("p50_e2el_ms") / 1e3, ms("p95_e2el_ms") / 1e3
    );
    Ok(())
}

fn times(md: &mut String, dir: &Path) -> Result<()> {
    let path = dir.join("times.tsv");
    if !path.exists() {
        return Ok(());
    }
    md.push_str("\n## Wall-clock by stage\n\n| stage | seconds |\n|---|---|\n");
    // In first-run order, each stage's latest time: a re-run replaces what it redid.
    let mut stages: Vec<(String, f64)> = Vec::new();
    for line in std::fs::read_to_string(&path)?.lines() {
        if let Some((stage, secs)) = line.split_once('\t') {
            let secs: f64 = secs.trim().parse().with_context(|| {
                format!("{}: {line:?}: expected STAGE<TAB>seconds", path.display())
            })?;
            match stages.iter_mut().find(|(s, _)| s == stage) {
                Some(entry) => entry.1 = secs,
                None => stages.push((stage.to_string(), secs)),
            }
        }
    }
    for (stage, secs) in &stages {
        let _ = writeln!(md, "| {stage} | {secs:.0} |");
    }
    let total: f64 = stages.iter().map(|(_, s)| s).sum();
    let _ = writeln!(md, "| total | {total:.0} |");
    Ok(())
}

fn plot(rows: &[Row]) -> String {
    let series: Vec<String> = rows.iter().map(|r| r.label.clone()).collect();
    let bar = |e: Option<Estimate>| e.map(Bar::from);
    let mut groups: Vec<(String, Vec<Option<Bar>>)> = SETS
        .iter()
        .map(|(set, column)| {
            (
                column.to_string(),
                rows.iter().map(|r| bar(r.qa(set))).collect(),
            )
        })
        .collect();
    groups.push((
        "IFEval-lite".into(),
        rows.iter().map(|r| bar(r.ifeval_strict())).collect(),
    ));
    grouped_bars_svg("Scores by stage (95% intervals)", &series, &groups, 100.0)
}
