//! Diagnose: cluster the failures of scored episodes by what failed (judge dimension, kind of
//! shortfall, the canonical tool, skill, fact or limit it is about) and by hooks that fired, and point
//! each cluster at the harness files an edit would touch.
//!
//! The judge writes every shortfall as a countable `scores.failures` entry (`judge::verifiable`), so a
//! cluster is a count over those entries, never a parse of the reasons' wording.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::harness::Harness;
use crate::judge::metric::intent_key;
use crate::judge::verifiable::{Failure, FailureKind};
use crate::record::{Names, Role, Trajectory};

/// Episodes shown per cluster in the report.
const EXAMPLES: usize = 3;

/// What a cluster is about; written as its snake_case name (`no_skill`, `hook_fired`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A judge shortfall.
    Judge(FailureKind),
    /// A hook fired (the policy broke a rule the harness enforces); the subject is the hook.
    HookFired,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kind::Judge(k) => {
                let v = serde_json::to_value(k).map_err(|_| fmt::Error)?;
                write!(f, "{}", v.as_str().unwrap_or("?"))
            }
            Kind::HookFired => write!(f, "hook_fired"),
        }
    }
}

impl Serialize for Kind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct ClusterKey {
    /// Judge dimension, or `hooks`.
    pub dimension: String,
    pub kind: Kind,
    /// Canonical tool or skill id, fact, limit or hook name; empty when the kind needs none.
    pub subject: String,
}

impl fmt::Display for ClusterKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.dimension, self.kind)?;
        if !self.subject.is_empty() {
            write!(f, ": {}", self.subject)?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Cluster {
    pub key: ClusterKey,
    /// Episodes in the cluster (an episode counts once per cluster).
    pub episodes: usize,
    pub by_intent: BTreeMap<String, usize>,
    /// For a skill or tool cluster: what the policy chose instead (surface names), with counts.
    pub instead: BTreeMap<String, usize>,
    /// Ids of the first episodes, in input order.
    pub examples: Vec<String>,
    /// Harness files (root-relative) an edit for this cluster would touch.
    pub files: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Diagnosis {
    pub episodes: usize,
    /// Episodes with at least one failure or fired hook.
    pub failing: usize,
    /// Largest first; ties in key order.
    pub clusters: Vec<Cluster>,
}

/// Cluster the failures of `episodes` (scored by the verifiable judge) played under `harness`, whose
/// canonical → surface names are `names`.
pub fn diagnose(episodes: &[Trajectory], harness: &Harness, names: &Names) -> Diagnosis {
    let mut clusters: BTreeMap<ClusterKey, Cluster> = BTreeMap::new();
    let mut failing = 0;
    for t in episodes {
        let mut keys: Vec<ClusterKey> = failures(t)
            .into_iter()
            .map(|f| ClusterKey {
                dimension: f.dimension,
                kind: Kind::Judge(f.kind),
                subject: f.subject,
            })
            .chain(hooks_fired(t).into_iter().map(|hook| ClusterKey {
                dimension: "hooks".into(),
                kind: Kind::HookFired,
                subject: hook,
            }))
            .collect();
        keys.sort();
        keys.dedup();
        failing += usize::from(!keys.is_empty());
        for key in keys {
            let c = clusters.entry(key.clone()).or_insert_with(|| Cluster {
                files: files_for(&key, harness, names),
                key: key.clone(),
                episodes: 0,
                by_intent: BTreeMap::new(),
                instead: BTreeMap::new(),
                examples: Vec::new(),
            });
            c.episodes += 1;
            *c.by_intent.entry(intent_key(t)).or_default() += 1;
            for name in chosen_instead(t, &key, names) {
                *c.instead.entry(name).or_default() += 1;
            }
            if c.examples.len() < EXAMPLES {
                c.examples.push(t.id.clone());
            }
        }
    }
    let mut clusters: Vec<Cluster> = clusters.into_values().collect();
    clusters.sort_by(|a, b| b.episodes.cmp(&a.episodes).then(a.key.cmp(&b.key)));
    Diagnosis {
        episodes: episodes.len(),
        failing,
        clusters,
    }
}

/// The judge's countable failures of a scored record (`scores.failures`).
pub fn failures(t: &Trajectory) -> Vec<Failure> {
    t.scores
        .extra
        .get("failures")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

/// Hooks that fired in the episode (`meta.hooks_fired` names them).
fn hooks_fired(t: &Trajectory) -> Vec<String> {
    match t.meta.get("hooks_fired") {
        Some(Value::Object(m)) => m.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

/// Skills loaded (for a skill cluster) or tools called (for a missing-call cluster) other than the
/// expected one, by surface name.
fn chosen_instead(t: &Trajectory, key: &ClusterKey, names: &Names) -> Vec<String> {
    let calls = t
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| m.tool_calls.iter());
    match key.kind {
        Kind::Judge(FailureKind::WrongSkill | FailureKind::TooManySkills) => {
            let load = names.tool_surface("load_skill");
            let want = names.skill_surface(&key.subject);
            calls
                .filter(|c| c.function.name == load)
                .filter_map(|c| {
                    let args = c.function.parsed_arguments().ok()?;
                    Some(args.get("name")?.as_str()?.to_string())
                })
                .filter(|s| s != want)
                .collect()
        }
        Kind::Judge(FailureKind::MissingCall) => {
            let want = names.tool_surface(&key.subject);
            let load = names.tool_surface("load_skill");
            calls
                .map(|c| c.function.name.clone())
                .filter(|n| n != want && n != load)
                .collect()
        }
        _ => Vec::new(),
    }
}

/// The harness files a cluster points at: the skill or tool it is about (and, for a wrong choice, the
/// ones chosen instead are added by the report), the limits in `harness.toml`, the hooks file, or the
/// prompt pipeline.
fn files_for(key: &ClusterKey, harness: &Harness, names: &Names) -> Vec<String> {
    let skill_file = |canonical: &str| {
        harness
            .skill(names.skill_surface(canonical))
            .map(|s| s.file.clone())
    };
    let tool_file = |canonical: &str| {
        harness
            .tool(names.tool_surface(canonical))
            .map(|t| t.file.clone())
    };
    let hooks = harness.hooks_file().map(str::to_string);
    let pipeline = Some(harness.pipeline_file().to_string());
    let manifest = Some("harness.toml".to_string());
    let files = match key.kind {
        Kind::Judge(k) => match k {
            FailureKind::NoSkill | FailureKind::WrongSkill | FailureKind::TooManySkills => {
                vec![skill_file(&key.subject)]
            }
            FailureKind::MissingCall
            | FailureKind::MalformedArgs
            | FailureKind::RedundantCall
            | FailureKind::UnnecessaryCall => vec![tool_file(&key.subject)],
            FailureKind::NoPurchaseLink => vec![tool_file("create_purchase_link")],
            FailureKind::NoClarifyingQuestion => vec![skill_file("clarify-question")],
            FailureKind::FaultNotRecovered
            | FailureKind::ReplyAtLimit
            | FailureKind::OverLongReply => vec![manifest],
            FailureKind::ForbiddenTerm | FailureKind::UngroundedNumber => vec![hooks, pipeline],
            FailureKind::MissingFact
            | FailureKind::NoReply
            | FailureKind::RepliedWhenSilent
            | FailureKind::HallucinatedTool => vec![pipeline],
        },
        Kind::HookFired => vec![hooks],
    };
    files.into_iter().flatten().collect()
}

impl Diagnosis {
    /// The report: one section per cluster with its counts, the files it points at and its example
    /// episodes rendered as a transcript.
    pub fn markdown(&self, episodes: &[Trajectory]) -> String {
        let by_id: BTreeMap<&str, &Trajectory> =
            episodes.iter().map(|t| (t.id.as_str(), t)).collect();
        let mut s = format!(
            "# Failure clusters\n\n{} episodes, {} with a failure or a fired hook, {} clusters.\n\n",
            self.episodes,
            self.failing,
            self.clusters.len()
        );
        s += "| # | cluster | episodes | intents | chosen instead | files |\n|---|---|---|---|---|---|\n";
        for (i, c) in self.clusters.iter().enumerate() {
            s += &format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                i + 1,
                c.key,
                c.episodes,
                counts(&c.by_intent),
                counts(&c.instead),
                c.files.join(", ")
            );
        }
        for (i, c) in self.clusters.iter().enumerate() {
            s += &format!("\n## {}. {} ({} episodes)\n", i + 1, c.key, c.episodes);
            for id in &c.examples {
                if let Some(t) = by_id.get(id.as_str()) {
                    s += &format!("\n### {id}\n\n```\n{}```\n", transcript(t));
                }
            }
        }
        s
    }
}

fn counts(m: &BTreeMap<String, usize>) -> String {
    let mut v: Vec<(&String, &usize)> = m.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    v.iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// An episode as a reader wants it: the viewer's words, each call with its result, the reply, and the
/// judge's reasons (the system prompt is left out: it is the harness, shown by the files).
pub fn transcript(t: &Trajectory) -> String {
    const CUT: usize = 160;
    let short = |s: &str| -> String {
        let one_line = s.replace('\n', " ");
        match one_line.char_indices().nth(CUT) {
            Some((i, _)) => format!("{}…", &one_line[..i]),
            None => one_line,
        }
    };
    let mut s = format!("intent: {}\n", intent_key(t));
    for m in &t.messages {
        match m.role {
            Role::System | Role::Developer => {}
            Role::User => s += &format!("viewer: {}\n", short(&m.text_content())),
            Role::Tool => s += &format!("  -> {}\n", short(&m.text_content())),
            Role::Assistant => {
                for c in &m.tool_calls {
                    s += &format!(
                        "host calls {}({})\n",
                        c.function.name,
                        short(&c.function.arguments)
                    );
                }
                let text = m.text_content();
                if !text.is_empty() || m.tool_calls.is_empty() {
                    s += &format!("host: {}\n", short(&text));
                }
            }
        }
    }
    if let Some(Value::Object(reasons)) = t.scores.extra.get("reasons") {
        for (dim, why) in reasons {
            s += &format!("judge {dim}: {}\n", why.as_str().unwrap_or_default());
        }
    }
    s
}
