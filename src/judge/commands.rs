//! The `judge` subcommands built on this module (`score`, `llm`, `rubric`, `calibrate`, `report`,
//! `compare`): their flags, help text and the glue from files to the library. The binary only lists
//! them (`src/bin/judge.rs`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use rayon::prelude::*;
use serde::Serialize;
use serde_json::{json, Value};

use super::calibrate::{calibrate, read_labels};
use super::compare::compare;
use super::endpoint::{Endpoint, EndpointConfig};
use super::llm::{LlmJudge, Tally};
use super::metric::Metric;
use super::report::report;
use super::rubric::rubric;
use super::verifiable::{score_all, TokenCounter};
use crate::jsonl::{JsonlArgs, LineReader, OnError, Records};
use crate::record::Trajectory;

/// Where a report goes: markdown or JSON on stdout, and optionally both to files.
#[derive(Debug, Clone, Args)]
pub struct ReportOut {
    /// What to print on stdout.
    #[arg(long, value_enum, default_value_t = Format::Markdown)]
    pub format: Format,
    /// Also write the JSON report here.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write the markdown report here.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Markdown,
    Json,
}

impl ReportOut {
    fn emit<T: Serialize>(&self, value: &T, markdown: &str) -> Result<()> {
        let json = serde_json::to_string_pretty(value)?;
        if let Some(p) = &self.json {
            std::fs::write(p, format!("{json}\n"))
                .with_context(|| format!("cannot write '{}'", p.display()))?;
        }
        if let Some(p) = &self.markdown {
            std::fs::write(p, markdown)
                .with_context(|| format!("cannot write '{}'", p.display()))?;
        }
        match self.format {
            Format::Markdown => print!("{markdown}"),
            Format::Json => println!("{json}"),
        }
        Ok(())
    }
}

/// Read a whole JSONL file of records with the given bad-line policy.
fn read_records(path: &str, on_error: OnError) -> Result<Vec<Trajectory>> {
    let mut records = Records::<Trajectory>::new(LineReader::open(path)?, on_error);
    let mut out = Vec::new();
    for r in records.by_ref() {
        out.push(r?);
    }
    let stats = records.stats();
    if stats.rejected > 0 {
        eprintln!("{path}: skipped {} bad line(s)", stats.rejected);
    }
    Ok(out)
}

/// Score trajectories against their canonical ground truth (no model needed).
///
/// Reads trajectory records (JSONL) and writes them back with `scores` filled in: accuracy (every
/// number in the final reply is grounded in this turn's tool results, the viewer's words or the system
/// prompt), effectiveness (expected facts stated, clarifying question asked, purchase link handed over;
/// a forbidden term zeroes it, a reply over the active max_reply_chars halves it), tool_rationality
/// (recall of the expected calls by surface name and key arguments × share of calls that are not
/// hallucinated, malformed, redundant or unnecessary × share of failed calls retried), skill_selection
/// (the loaded or declared skill maps back to expected.skill) and cot_length (0 up to 100 reasoning
/// tokens, down to -0.1 at 200). Ground truth is canonical; names go through harness.names, so renamed
/// tools and skills are judged by their new names. Reasons per dimension go to scores.reasons, counts
/// to scores.details, and scores.judge is "verifiable".
///
/// A record without task.expected (a real log) cannot be scored: it is written back without scores,
/// with scores.unscorable saying why, named on stderr and counted apart (never scored 0).
///
/// The reply-length limit is read from meta.limits.max_reply_chars, else harness.limits, else the
/// system prompt's wording ("不超过 N 个字", "within N characters").
#[derive(Debug, Args)]
#[command(
    after_help = "EXAMPLES:\n  judge score -i rollouts.jsonl -o scored.jsonl\n  \
cat rollouts.jsonl | judge score --on-error skip --rejects bad.jsonl | judge report\n  \
judge score -i rollouts.jsonl --tokenizer ckpt/tokenizer.json --shard 0/4 -o part0.jsonl"
)]
pub struct ScoreArgs {
    #[command(flatten)]
    pub io: JsonlArgs,
    /// Count reasoning tokens with this tokenizer.json instead of the CJK-char/whitespace approximation.
    #[arg(long, value_name = "FILE")]
    pub tokenizer: Option<String>,
    /// Records scored in parallel per batch (output order is input order).
    #[arg(long, default_value_t = 4096)]
    pub batch: usize,
}

impl ScoreArgs {
    pub fn run(&self) -> Result<()> {
        let counter = match &self.tokenizer {
            Some(p) => TokenCounter::from_file(p)?,
            None => TokenCounter::Approximate,
        };
        let mut records = self.io.records::<Trajectory>()?;
        let mut out = self.io.writer()?;
        let mut batch: Vec<Trajectory> = Vec::with_capacity(self.batch.max(1));
        let mut unscorable = 0usize;
        loop {
            let next = records.next();
            let done = next.is_none();
            if let Some(r) = next {
                batch.push(r?);
            }
            if batch.len() >= self.batch.max(1) || done {
                score_all(&mut batch, &counter);
                for t in batch.drain(..) {
                    if let Some(why) = t.scores.extra.get("unscorable").and_then(Value::as_str) {
                        unscorable += 1;
                        // Each one named, up to a screenful; the count follows in the summary.
                        if unscorable <= UNSCORABLE_SHOWN {
                            eprintln!("judge score: cannot score {}: {why}", t.id);
                        }
                    }
                    out.write(&t)?;
                }
            }
            if done {
                break;
            }
        }
        out.finish()?;
        let s = records.stats();
        eprintln!(
            "judge score: {} scored, {unscorable} unscorable (left without scores, scores.unscorable says why), {} rejected, {} outside the shard",
            (s.read as usize).saturating_sub(unscorable),
            s.rejected,
            s.out_of_shard
        );
        Ok(())
    }
}

/// Unscorable records `judge score` names one by one on stderr.
const UNSCORABLE_SHOWN: usize = 20;

/// Score trajectories with an LLM judge on an OpenAI-compatible endpoint.
///
/// Pointwise (default): renders a harness-aware prompt per record (the episode and its tool results,
/// the ground truth in the variant's surface names, the active limits; templates/judge/pointwise.j2
/// unless --template), POSTs it to {url}/v1/chat/completions (temperature 0), and parses a JSON verdict
/// {"accuracy", "effectiveness", "reason"} found anywhere in the answer. Scores go to scores.accuracy
/// and scores.effectiveness with scores.judge = "llm:<model>".
///
/// Pairwise (--pairwise B.jsonl): each input record (A) is compared with the record of the same id in
/// B, once with A shown first and once with B first (templates/judge/pairwise.j2); a winner counts
/// only when both orders agree, otherwise it is a tie. The verdict goes to scores.pairwise.
///
/// Requests time out (--timeout-s) and are retried with exponential backoff on transport errors, 429
/// and 5xx. Answers are cached by sha256(model, prompt) in --cache. A record the endpoint fails on is
/// written unscored with the error in scores.judge_error and counted; the run exits 0 so partial work
/// is kept (see the summary on stderr).
#[derive(Debug, Args)]
#[command(
    after_help = "EXAMPLES:\n  judge llm --url http://127.0.0.1:8000 --model qwen3-32b -i scored.jsonl -o llm.jsonl --cache .judge-cache\n  \
judge llm --url http://127.0.0.1:8000 --model qwen3-32b -i new.jsonl --pairwise old.jsonl -o pairs.jsonl"
)]
#[command(
    mut_arg("url", |a| a.required(true)),
    mut_arg("model", |a| a.required(true))
)]
pub struct LlmArgs {
    #[command(flatten)]
    pub io: JsonlArgs,
    #[command(flatten)]
    pub judge: LlmJudgeArgs,
    /// Compare each record with the record of the same id in this file (position-swapped pairwise).
    #[arg(long, value_name = "B.jsonl")]
    pub pairwise: Option<String>,
}

/// The LLM judge's endpoint, template and cache: the flags of `judge llm`, shared with `judge serve`
/// (where they are optional: without `--url` no LLM judge is configured). The Bearer token's id is
/// `judge_api_key` so a command with a key of its own can rename its flag (`mut_arg`).
#[derive(Debug, Clone, Args)]
pub struct LlmJudgeArgs {
    /// Base URL of the LLM judge's OpenAI-compatible server (plain http or https).
    #[arg(long, requires = "model")]
    pub url: Option<String>,
    /// Model name sent in the request (and part of the cache key).
    #[arg(long, requires = "url")]
    pub model: Option<String>,
    /// Bearer token, if the endpoint wants one.
    #[arg(
        id = "judge_api_key",
        long = "api-key",
        value_name = "API_KEY",
        env = "OPENAI_API_KEY",
        hide_env_values = true
    )]
    pub api_key: Option<String>,
    /// A minijinja template replacing the shipped one (pointwise, or pairwise with `judge llm
    /// --pairwise`).
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,
    /// Cache answers here, keyed by sha256 of model and prompt.
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
    /// Deadline of one request, in seconds.
    #[arg(long, default_value_t = 120.0)]
    pub timeout_s: f64,
    /// Retries after a failed request.
    #[arg(long, default_value_t = 3)]
    pub retries: u32,
    /// First backoff between retries, in milliseconds (doubles each time).
    #[arg(long, default_value_t = 1000)]
    pub backoff_ms: u64,
    /// max_tokens of the judge's answer.
    #[arg(long, default_value_t = 1024)]
    pub max_tokens: u32,
    /// Requests in flight at once (`judge serve`: per request it serves).
    #[arg(long, default_value_t = 8)]
    pub jobs: usize,
}

impl LlmJudgeArgs {
    /// Whether an endpoint is configured.
    pub fn configured(&self) -> bool {
        self.url.is_some()
    }

    /// The judge these flags describe (the template as the pairwise one when `pairwise`), or `None`
    /// without `--url`. Fails on a bad flag, an unreadable or uncompilable template or a cache
    /// directory that cannot be made — before any record is read.
    pub fn judge(&self, pairwise: bool) -> Result<Option<LlmJudge>> {
        let Some(url) = &self.url else {
            return Ok(None);
        };
        let Some(model) = &self.model else {
            bail!("--url needs --model");
        };
        if !(self.timeout_s > 0.0) {
            bail!("--timeout-s must be positive");
        }
        let endpoint = Endpoint::new(
            EndpointConfig {
                url: url.clone(),
                model: model.clone(),
                api_key: self.api_key.clone(),
                timeout: Duration::from_secs_f64(self.timeout_s),
                retries: self.retries,
                backoff: Duration::from_millis(self.backoff_ms),
                max_tokens: self.max_tokens,
            },
            self.cache.clone(),
        )?;
        let template = match &self.template {
            Some(p) => Some(
                std::fs::read_to_string(p)
                    .with_context(|| format!("cannot read template '{}'", p.display()))?,
            ),
            None => None,
        };
        Ok(Some(if pairwise {
            LlmJudge::new(endpoint, None, template)?
        } else {
            LlmJudge::new(endpoint, template, None)?
        }))
    }
}

/// What a pairwise run found.
#[derive(Debug, Default, Serialize)]
struct PairSummary {
    pairs: u64,
    a_wins: u64,
    b_wins: u64,
    ties: u64,
    inconsistent: u64,
    without_partner: u64,
    failed: u64,
}

impl LlmArgs {
    pub fn run(&self) -> Result<()> {
        let Some(judge) = self.judge.judge(self.pairwise.is_some())? else {
            bail!("--url is required");
        };
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(self.judge.jobs.max(1))
            .build()?;
        let partners: HashMap<String, Trajectory> = match &self.pairwise {
            Some(p) => read_records(p, self.io.on_error)?
                .into_iter()
                .map(|t| (t.id.clone(), t))
                .collect(),
            None => HashMap::new(),
        };
        let mut records = self.io.records::<Trajectory>()?;
        let mut out = self.io.writer()?;
        let (mut tally, mut pairs) = (Tally::default(), PairSummary::default());
        let chunk = self.judge.jobs.max(1) * 4;
        loop {
            let mut batch = Vec::with_capacity(chunk);
            for r in records.by_ref().take(chunk) {
                batch.push(r?);
            }
            if batch.is_empty() {
                break;
            }
            let tallies: Vec<Tally> = pool.install(|| {
                batch
                    .par_iter_mut()
                    .map(|t| {
                        let mut tl = Tally::default();
                        if self.pairwise.is_none() {
                            judge.score(t, &mut tl);
                        } else if let Some(b) = partners.get(&t.id) {
                            match judge.pairwise(t, b, &mut tl) {
                                Ok(v) => {
                                    t.scores.extra.remove("judge_error");
                                    t.scores.extra.insert("pairwise".into(), json!({"against": self.pairwise, "judge": judge.name(), "verdict": v}));
                                }
                                Err(e) => {
                                    tl.failed += 1;
                                    t.scores.extra.insert("judge_error".into(), json!(format!("{e:#}")));
                                }
                            }
                        }
                        tl
                    })
                    .collect()
            });
            for (t, tl) in batch.iter().zip(&tallies) {
                tally.requests += tl.requests;
                tally.cached += tl.cached;
                tally.failed += tl.failed;
                if self.pairwise.is_some() {
                    match t.scores.extra.get("pairwise").filter(|_| tl.failed == 0) {
                        _ if !partners.contains_key(&t.id) => pairs.without_partner += 1,
                        None => pairs.failed += 1,
                        Some(p) => {
                            pairs.pairs += 1;
                            let v = &p["verdict"];
                            match v["winner"].as_str() {
                                Some("A") => pairs.a_wins += 1,
                                Some("B") => pairs.b_wins += 1,
                                _ => pairs.ties += 1,
                            }
                            if v["consistent"] == json!(false) {
                                pairs.inconsistent += 1;
                            }
                        }
                    }
                }
                out.write(t)?;
            }
        }
        out.finish()?;
        let s = records.stats();
        let summary = if self.pairwise.is_some() {
            json!({"records": s.read, "rejected": s.rejected, "tally": tally, "pairwise": pairs})
        } else {
            json!({"records": s.read, "rejected": s.rejected, "tally": tally})
        };
        eprintln!("judge llm: {summary}");
        Ok(())
    }
}

/// Robustness rubric metrics over a set of scored records (see docs/judge-metrics.md).
///
/// ACQ: share of scored episodes that are correct (accuracy and effectiveness >= --pass).
/// RC: the same share among episodes with an injected tool fault (non-empty meta.faults).
/// TC: expected tool calls made with the right surface name and key arguments / expected calls.
/// FI: share of episodes that obey the active limits (reply length, forbidden terms, required silence).
/// TCO: share of episodes with a hallucinated, malformed, redundant or unnecessary call (lower is better).
/// Tool robustness reads ACQ, RC, TC; prompt robustness reads ACQ, FI, TCO. Reported overall and per
/// harness variant (name@version plus the kinds of augmentation op applied).
#[derive(Debug, Args)]
#[command(after_help = "EXAMPLE:\n  judge score -i robust.jsonl | judge rubric --json rubric.json")]
pub struct RubricArgs {
    /// Scored records (JSONL, `-` for stdin).
    #[arg(short, long, default_value = "-")]
    pub input: String,
    /// An episode is correct when accuracy and effectiveness are both at least this.
    #[arg(long, default_value_t = 0.8)]
    pub pass: f64,
    #[arg(long, value_enum, default_value_t = OnError::Fail)]
    pub on_error: OnError,
    #[command(flatten)]
    pub out: ReportOut,
}

impl RubricArgs {
    pub fn run(&self) -> Result<()> {
        let records = read_records(&self.input, self.on_error)?;
        let r = rubric(&records, self.pass);
        self.out.emit(&r, &r.markdown(&self.input))
    }
}

/// Calibrate a judge against human labels.
///
/// Joins a CSV of human labels (header `id,label[,intent]`) with judged records by id and reports the
/// agreement rate, Cohen's kappa, Spearman and Pearson correlation (judge score vs label), the
/// confusion matrix and the same per intent (from the CSV, else the record). Binary labels (0/1) are
/// compared with score >= --threshold; integer labels lo..hi with the score mapped to
/// lo + round(score * (hi - lo)). Ids without a judged record, and records the judge left unscored, are
/// listed, not dropped silently.
#[derive(Debug, Args)]
#[command(
    after_help = "EXAMPLE:\n  judge calibrate --labels human.csv --scores judged.jsonl --dimension accuracy --json calib.json"
)]
pub struct CalibrateArgs {
    /// Human labels: CSV with columns id,label[,intent].
    #[arg(long, value_name = "CSV")]
    pub labels: PathBuf,
    /// Judged records (JSONL).
    #[arg(long, value_name = "JSONL")]
    pub scores: String,
    /// Which score to calibrate.
    #[arg(long, value_enum, default_value_t = Metric::Accuracy)]
    pub dimension: Metric,
    /// Binary labels: the judge says 1 when its score is at least this.
    #[arg(long, default_value_t = 0.5)]
    pub threshold: f64,
    #[arg(long, value_enum, default_value_t = OnError::Fail)]
    pub on_error: OnError,
    #[command(flatten)]
    pub out: ReportOut,
}

impl CalibrateArgs {
    pub fn run(&self) -> Result<()> {
        let labels = read_labels(&self.labels)?;
        let records = read_records(&self.scores, self.on_error)?;
        let c = calibrate(&labels, &records, self.dimension, self.threshold)?;
        self.out.emit(&c, &c.markdown())
    }
}

/// Aggregate scored records by dimension, intent and harness variant.
///
/// For every group: records, pass rate (every set dimension >= --pass), the mean and count of each
/// dimension and of the CoT term, and how many records a judge left unscored or failed on.
#[derive(Debug, Args)]
#[command(
    after_help = "EXAMPLE:\n  judge report -i scored.jsonl --markdown report.md --json report.json"
)]
pub struct ReportArgs {
    /// Scored records (JSONL, `-` for stdin).
    #[arg(short, long, default_value = "-")]
    pub input: String,
    /// Pass threshold for every dimension.
    #[arg(long, default_value_t = 0.8)]
    pub pass: f64,
    #[arg(long, value_enum, default_value_t = OnError::Fail)]
    pub on_error: OnError,
    #[command(flatten)]
    pub out: ReportOut,
}

impl ReportArgs {
    pub fn run(&self) -> Result<()> {
        let records = read_records(&self.input, self.on_error)?;
        let r = report(&records, self.pass);
        self.out.emit(&r, &r.markdown(&self.input))
    }
}

/// Accept or reject a harness edit: compare a candidate run (B) with the baseline (A) on a dev set.
///
/// Joins the two scored files by id, counts per case whether B's metric is higher (win), lower (loss)
/// or within --epsilon (tie), and runs an exact two-sided sign test on wins vs losses (ties dropped).
/// Verdict: accept when B wins more than it loses and p < --alpha; otherwise reject (flagged as a
/// regression when B is significantly worse). Lists the cases B lost, and a per-intent breakdown.
#[derive(Debug, Args)]
#[command(
    after_help = "EXAMPLE:\n  judge compare v1.jsonl v2.jsonl --metric mean --alpha 0.05 --check\n\n\
EXIT STATUS: 0, or 2 on an error; with --check a rejected candidate is an error too."
)]
pub struct CompareArgs {
    /// Baseline run (A), scored records.
    #[arg(value_name = "A.jsonl")]
    pub baseline: String,
    /// Candidate run (B), scored records.
    #[arg(value_name = "B.jsonl")]
    pub candidate: String,
    #[arg(long, value_enum, default_value_t = Metric::Mean)]
    pub metric: Metric,
    /// Significance level of the sign test.
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// Score differences up to this count as ties.
    #[arg(long, default_value_t = 1e-9)]
    pub epsilon: f64,
    /// Exit with an error when the candidate is rejected (for CI gates).
    #[arg(long)]
    pub check: bool,
    #[arg(long, value_enum, default_value_t = OnError::Fail)]
    pub on_error: OnError,
    #[command(flatten)]
    pub out: ReportOut,
}

impl CompareArgs {
    pub fn run(&self) -> Result<()> {
        let a = read_records(&self.baseline, self.on_error)?;
        let b = read_records(&self.candidate, self.on_error)?;
        let c = compare(&a, &b, self.metric, self.alpha, self.epsilon)?;
        self.out
            .emit(&c, &c.markdown(&self.baseline, &self.candidate))?;
        if self.check && c.verdict != "accept" {
            bail!("candidate rejected: {}", c.reason);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: LlmArgs,
    }

    #[test]
    fn judge_llm_still_requires_url_and_model() {
        let e = Cli::try_parse_from(["llm", "--model", "m"])
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("--url"), "{e}");
        let e = Cli::try_parse_from(["llm", "--url", "http://x"])
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("--model"), "{e}");
        let a = Cli::try_parse_from(["llm", "--url", "http://x", "--model", "m", "--api-key", "k"])
            .unwrap()
            .args;
        assert_eq!(a.judge.api_key.as_deref(), Some("k"));
        assert_eq!(a.judge.judge(false).unwrap().unwrap().name(), "llm:m");
    }
}
