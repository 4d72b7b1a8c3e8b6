//! The verifiable judge: scores a trajectory against its canonical ground truth (`task.expected`),
//! through the variant's name map, on the four reward dimensions plus the chain-of-thought length term.
//! No model is involved, so it is exact, deterministic and fast enough to be an RL reward.
//!
//! Results go into `scores` (`accuracy`, `effectiveness`, `tool_rationality`, `skill_selection`,
//! `cot_length`, `judge: "verifiable"`), one short reason per dimension into `scores.reasons`, and the
//! counts the rubric metrics aggregate into `scores.details`. Every shortfall is also written as a
//! countable [`Failure`] into `scores.failures` (what `hat evolve diagnose` clusters). A dimension that
//! cannot be observed (no expected skill, no way to see the choice) is left unset and says why, never a
//! silent 0.

pub mod accuracy;
pub mod cot;
pub mod effectiveness;
pub mod episode;
pub mod skill_selection;
pub mod tool_rationality;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::record::Trajectory;
pub use cot::TokenCounter;
use episode::Episode;

/// One dimension's score in [0, 1] and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Dimension {
    pub value: f64,
    pub reason: String,
    /// Counts behind the score, for aggregate metrics.
    pub details: Option<Value>,
    /// What fell short, one entry per shortfall (`reason` says the same in words).
    pub shortfalls: Vec<(FailureKind, String)>,
}

impl Dimension {
    pub fn new(value: f64, reason: impl Into<String>) -> Dimension {
        Dimension {
            value: value.clamp(0.0, 1.0),
            reason: reason.into(),
            details: None,
            shortfalls: Vec::new(),
        }
    }

    pub fn with_details(mut self, details: Value) -> Dimension {
        self.details = Some(details);
        self
    }

    /// Adds a shortfall of `kind` about `subject` (a canonical tool or skill id, a fact, a limit).
    pub fn with_shortfall(mut self, kind: FailureKind, subject: impl Into<String>) -> Dimension {
        self.shortfalls.push((kind, subject.into()));
        self
    }
}

/// The kinds of shortfall the verifiable judge tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// A number in the reply found in no tool result, viewer message or prompt (subject: the number).
    UngroundedNumber,
    /// No final reply where one was due.
    NoReply,
    /// A reply where the harness requires silence.
    RepliedWhenSilent,
    /// An expected fact not stated (subject: the fact).
    MissingFact,
    /// Facts missing from a reply that used (nearly) all of `max_reply_chars`: the limit cut them.
    ReplyAtLimit,
    /// A reply longer than the active `max_reply_chars`.
    OverLongReply,
    /// A compliance term said (subject: the term).
    ForbiddenTerm,
    NoClarifyingQuestion,
    NoPurchaseLink,
    /// An expected call not made, or made with wrong key arguments (subject: canonical tool id).
    MissingCall,
    /// A call to a tool the record does not offer (subject: the name called).
    HallucinatedTool,
    /// Arguments that are not a JSON object (subject: canonical tool id).
    MalformedArgs,
    /// The same successful call made again (subject: canonical tool id).
    RedundantCall,
    /// A data tool called where a clarifying question or silence was wanted (subject: canonical id).
    UnnecessaryCall,
    /// A failed call never retried (subject: canonical tool id).
    FaultNotRecovered,
    /// No skill chosen where one applies (subject: the expected canonical skill id).
    NoSkill,
    /// Another skill chosen (subject: the expected canonical skill id).
    WrongSkill,
    /// The expected skill chosen among too many (subject: the expected canonical skill id).
    TooManySkills,
}

/// One countable shortfall of a scored record: the dimension, its kind and what it is about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Failure {
    pub dimension: String,
    pub kind: FailureKind,
    pub subject: String,
}

/// All scores of one trajectory.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// `Err(reason)` when the reply states nothing checkable although the task asked for facts.
    pub accuracy: Result<Dimension, String>,
    pub effectiveness: Dimension,
    pub tool_rationality: Dimension,
    /// `Err(reason)` when skill choice is not observable for this record.
    pub skill_selection: Result<Dimension, String>,
    pub cot_tokens: usize,
    pub cot_length: f64,
    pub reply_chars: Option<u64>,
    pub max_reply_chars: Option<u64>,
}

/// Score one trajectory.
pub fn judge(traj: &Trajectory, counter: &TokenCounter) -> Verdict {
    let ep = Episode::read(traj);
    let cot_tokens = counter.count(&ep.reasoning);
    let skill_selection = skill_selection::score(traj, &ep).ok_or_else(|| {
        if ep.expected.and_then(|e| e.skill.as_ref()).is_none() {
            "no expected skill to check against".to_string()
        } else {
            "not observable: no skill-loading tool offered and no meta.skill".to_string()
        }
    });
    Verdict {
        accuracy: accuracy::score(&ep),
        effectiveness: effectiveness::score(&ep),
        tool_rationality: tool_rationality::score(traj, &ep),
        skill_selection,
        cot_tokens,
        cot_length: cot::penalty(cot_tokens),
        reply_chars: ep.reply.as_ref().map(|r| r.chars().count() as u64),
        max_reply_chars: ep.max_reply_chars.map(|(n, _)| n),
    }
}

/// Why this judge cannot score `traj`, if it cannot: every dimension is measured against the canonical
/// ground truth, and a real log carries none. Scoring such a record would read as a 0, a failure the
/// episode may not have had.
pub fn unscorable(traj: &Trajectory) -> Option<&'static str> {
    traj.task
        .as_ref()
        .and_then(|t| t.expected.as_ref())
        .is_none()
        .then_some("no task.expected: the verifiable judge scores against the canonical ground truth, which this record does not carry (score it with `judge llm`, or play its task in the simulator)")
}

/// Score `traj` in place: set its scores, reasons and details; a record it cannot score gets no
/// dimension and `scores.unscorable` saying why.
pub fn score(traj: &mut Trajectory, counter: &TokenCounter) {
    if let Some(why) = unscorable(traj) {
        let s = &mut traj.scores;
        s.accuracy = None;
        s.effectiveness = None;
        s.tool_rationality = None;
        s.skill_selection = None;
        s.cot_length = None;
        s.judge = Some("verifiable".into());
        s.extra.insert("unscorable".into(), json!(why));
        return;
    }
    let v = judge(traj, counter);
    let s = &mut traj.scores;
    s.accuracy = v.accuracy.as_ref().ok().map(|d| d.value);
    s.effectiveness = Some(v.effectiveness.value);
    s.tool_rationality = Some(v.tool_rationality.value);
    s.skill_selection = v.skill_selection.as_ref().ok().map(|d| d.value);
    s.cot_length = Some(v.cot_length);
    s.judge = Some("verifiable".into());
    let reason = |d: &Result<Dimension, String>| match d {
        Ok(d) => d.reason.clone(),
        Err(why) => why.clone(),
    };
    let mut reasons = Map::new();
    reasons.insert("accuracy".into(), json!(reason(&v.accuracy)));
    reasons.insert("effectiveness".into(), json!(v.effectiveness.reason));
    reasons.insert("tool_rationality".into(), json!(v.tool_rationality.reason));
    reasons.insert("skill_selection".into(), json!(reason(&v.skill_selection)));
    reasons.insert(
        "cot_length".into(),
        json!(format!("{} reasoning tokens", v.cot_tokens)),
    );
    s.extra.insert("reasons".into(), Value::Object(reasons));
    let failures: Vec<Failure> = [
        ("accuracy", v.accuracy.as_ref().ok()),
        ("effectiveness", Some(&v.effectiveness)),
        ("tool_rationality", Some(&v.tool_rationality)),
        ("skill_selection", v.skill_selection.as_ref().ok()),
    ]
    .into_iter()
    .flat_map(|(dimension, d)| {
        d.into_iter().flat_map(move |d| {
            d.shortfalls.iter().map(move |(kind, subject)| Failure {
                dimension: dimension.into(),
                kind: *kind,
                subject: subject.clone(),
            })
        })
    })
    .collect();
    if failures.is_empty() {
        s.extra.remove("failures");
    } else {
        s.extra.insert("failures".into(), json!(failures));
    }
    s.extra.insert(
        "details".into(),
        json!({
            "tools": v.tool_rationality.details,
            "reply_chars": v.reply_chars,
            "max_reply_chars": v.max_reply_chars,
            "cot_tokens": v.cot_tokens,
        }),
    );
}

/// Score a batch in parallel; the order of records is kept.
pub fn score_all(batch: &mut [Trajectory], counter: &TokenCounter) {
    batch.par_iter_mut().for_each(|t| score(t, counter));
}
