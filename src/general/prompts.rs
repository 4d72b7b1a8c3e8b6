//! The seeded generator of general prompts: a topic, a request, and one to three verifiable
//! instructions, written as IFEval input rows (`key`, `prompt`, `instruction_id_list`, `kwargs`) that also
//! carry `{"messages": …}` — the user turn, and on the train split the teacher's answer.
//!
//! The eval split is held out twice: its topics are not train topics, and its instruction
//! combinations (the set of ids of a prompt with two or more) are ones the train split never draws, so
//! IFEval-lite measures following instructions, not recalling answers.

use serde::Serialize;
use serde_json::{json, Value};

use super::instructions::{Constraint, Layout};
use super::teacher::respond;
use super::topics::{Topic, EN_FORBIDDEN, EVAL, TRAIN, ZH_FORBIDDEN};
use crate::rng::Rng;

/// Which split to draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[value(rename_all = "lowercase")]
#[serde(rename_all = "lowercase")]
pub enum Split {
    Train,
    Eval,
}

/// One generated row.
#[derive(Debug, Clone, Serialize)]
pub struct GeneralPrompt {
    /// A record id, so `teacher-distill train` reads the train split as trajectory records.
    pub id: String,
    pub key: i64,
    pub prompt: String,
    pub instruction_id_list: Vec<String>,
    pub kwargs: Vec<Value>,
    pub messages: Vec<Value>,
    pub lang: &'static str,
    pub split: Split,
    pub topic: &'static str,
}

const EN_REQUESTS: &[&str] = &[
    "Write a short piece about {}.",
    "Tell me about {}.",
    "Explain {} to a curious reader.",
    "Share a few facts about {}.",
];
const ZH_REQUESTS: &[&str] = &[
    "写一段关于{}的短文。",
    "给我讲讲{}。",
    "向好奇的读者介绍一下{}。",
    "分享几条关于{}的知识。",
];
const EN_END: &[&str] = &[
    "Is there anything else I can help with?",
    "Let me know if you have additional questions.",
    "Any other questions?",
];
const ZH_END: &[&str] = &["还有别的问题吗？", "希望对你有帮助。"];

/// Whether a combination of instruction ids belongs to the eval split: a fixed hash of the sorted ids,
/// so the assignment is the same for every seed. Single instructions stay in train, so every
/// instruction kind is trained.
pub fn held_out(ids: &[&str]) -> bool {
    if ids.len() < 2 {
        return false;
    }
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    // FNV-1a: stable across Rust versions, unlike the std hasher.
    let h = sorted
        .join("|")
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
    h % 4 == 0
}

/// One random instruction; Chinese prompts draw only from the first ten kinds (the rest are English only).
fn draw_constraint(rng: &mut Rng, topic: &Topic, zh: bool) -> Constraint {
    let kinds = if zh { 10 } else { 13 };
    match rng.below(kinds) {
        0 => Constraint::Layout(Layout::Paragraphs(rng.range(2, 4) as usize)),
        1 => Constraint::Layout(Layout::Bullets(rng.range(2, 5) as usize)),
        2 => Constraint::Layout(Layout::Sections {
            splitter: *rng.pick(&["Section", "SECTION"]),
            n: rng.range(2, 3) as usize,
        }),
        3 => Constraint::Layout(Layout::Json),
        4 => {
            let pool = if zh {
                topic.zh_keywords
            } else {
                topic.en_keywords
            };
            let first = rng.below(pool.len());
            Constraint::Keywords(vec![pool[first], pool[(first + 1) % pool.len()]])
        }
        5 => {
            let pool = if zh { ZH_FORBIDDEN } else { EN_FORBIDDEN };
            let first = rng.below(pool.len());
            Constraint::Forbidden(vec![pool[first], pool[(first + 2) % pool.len()]])
        }
        6 => Constraint::Highlights(rng.range(1, 3) as usize),
        7 => Constraint::Title,
        8 => Constraint::Postscript(*rng.pick(&["P.S.", "P.P.S"])),
        9 => Constraint::EndPhrase(*rng.pick(if zh { ZH_END } else { EN_END })),
        10 => match rng.below(3) {
            0 => Constraint::Quotation,
            1 => Constraint::NoComma,
            _ => Constraint::Lowercase,
        },
        11 => Constraint::Words {
            at_least: true,
            n: rng.range(4, 10) as usize * 10,
        },
        _ => Constraint::Words {
            at_least: false,
            n: rng.range(12, 20) as usize * 10,
        },
    }
}

/// `n` rows of `split` from `seed`, alternately English and Chinese.
pub fn generate(split: Split, n: usize, seed: u64) -> Vec<GeneralPrompt> {
    let mut rng = Rng::derive(
        seed,
        if split == Split::Train {
            "general-train"
        } else {
            "general-eval"
        },
    );
    let topics = if split == Split::Train { TRAIN } else { EVAL };
    (0..n)
        .map(|i| {
            let zh = i % 2 == 1;
            let topic = rng.pick(topics);
            let constraints = loop {
                let want = if split == Split::Train {
                    rng.range(1, 3)
                } else {
                    rng.range(2, 3)
                } as usize;
                let mut set: Vec<Constraint> = Vec::new();
                for _ in 0..want * 4 {
                    if set.len() == want {
                        break;
                    }
                    let c = draw_constraint(&mut rng, topic, zh);
                    if (!zh || !c.english_only()) && set.iter().all(|s| s.compatible(&c)) {
                        set.push(c);
                    }
                }
                let ids: Vec<&str> = set.iter().map(Constraint::id).collect();
                if !set.is_empty() && held_out(&ids) == (split == Split::Eval) {
                    break set;
                }
            };
            let request = rng.pick(if zh { ZH_REQUESTS } else { EN_REQUESTS });
            let mut prompt = request.replace("{}", if zh { topic.zh } else { topic.en });
            for c in &constraints {
                if !zh {
                    prompt.push(' ');
                }
                prompt.push_str(&c.phrase(zh));
            }
            let mut order: Vec<usize> = (0..topic.en_sentences.len()).collect();
            rng.shuffle(&mut order);
            let mut messages = vec![json!({"role": "user", "content": prompt})];
            if split == Split::Train {
                let answer = respond(topic, zh, &constraints, &order);
                messages.push(json!({"role": "assistant", "content": answer}));
            }
            GeneralPrompt {
                id: format!(
                    "general-{}-{i:06}",
                    if split == Split::Train {
                        "train"
                    } else {
                        "eval"
                    }
                ),
                key: if split == Split::Train { 1 } else { 100_001 } + i as i64,
                prompt,
                instruction_id_list: constraints.iter().map(|c| c.id().to_string()).collect(),
                kwargs: constraints.iter().map(Constraint::kwargs).collect(),
                messages,
                lang: if zh { "zh" } else { "en" },
                split,
                topic: topic.en,
            }
        })
        .collect()
}
