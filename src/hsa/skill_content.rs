//! Dimension 2, skill content: paraphrase rules, mask non-essential rules, reorder rules.
//!
//! A *rule* is a list line of a skill body: a bullet (`- …`) or a numbered step (`1. …`). Numbered steps
//! are a procedure, so they are paraphrased but never reordered or masked. A bullet is *essential* when
//! it names a tool or skill (a code span), states a number, or prohibits something; only the others may
//! be masked, which keeps every instruction a task depends on.

use anyhow::Result;
use serde_json::{json, Value};

use super::config::Config;
use super::ops::Ctx;
use crate::harness::skills::Skill;
use crate::rng::Rng;

/// Words that make a bullet a prohibition or a hard requirement.
const ESSENTIAL_WORDS: &[&str] = &[
    "禁止",
    "不要",
    "不得",
    "不能",
    "只",
    "必须",
    "不承诺",
    "先",
    "never",
    "must",
    "only",
    "do not",
    "don't",
    "no ",
];

fn is_bullet(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("- ") || t.starts_with("* ")
}

fn is_numbered(line: &str) -> bool {
    let t = line.trim_start();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && t[digits..].starts_with(". ")
}

fn is_essential(line: &str) -> bool {
    let lower = line.to_lowercase();
    line.contains('`')
        || line.chars().any(|c| c.is_ascii_digit())
        || ESSENTIAL_WORDS.iter().any(|w| lower.contains(w))
}

/// Applies `edit` to the body of each skill with probability `share`, and records the skills changed.
fn edit_bodies(
    cx: &mut Ctx<'_>,
    share: f64,
    rng: &mut Rng,
    mut edit: impl FnMut(&str, &mut Rng) -> String,
) -> Result<Option<Value>> {
    let skills: Vec<Skill> = cx.harness()?.skills().to_vec();
    let mut changed = Vec::new();
    for mut skill in skills {
        if !rng.chance(share) {
            continue;
        }
        let body = edit(&skill.body, rng);
        if body != skill.body {
            // Splice the new body after the original front matter, so the front matter keeps its bytes.
            let text = cx.text(&skill.file)?.to_string();
            let head = &text[..text.len() - skill.body.len()];
            cx.set_text(&skill.file, format!("{head}{body}"));
            skill.body = body;
            changed.push(skill.name().to_string());
        }
    }
    Ok((!changed.is_empty()).then(|| json!({ "skills": changed })))
}

pub fn paraphrase_rules(cx: &mut Ctx<'_>, cfg: &Config, rng: &mut Rng) -> Result<Option<Value>> {
    let c = cfg.ops.paraphrase_rules;
    let pool = cx.pool;
    let para = cx.paraphraser.clone();
    edit_bodies(cx, c.share, rng, |body, rng| {
        body.split_inclusive('\n')
            .map(|line| {
                if is_bullet(line) || is_numbered(line) {
                    para.paraphrase(line, pool, c.rate, rng)
                } else {
                    line.to_string()
                }
            })
            .collect()
    })
}

pub fn mask_rules(cx: &mut Ctx<'_>, cfg: &Config, rng: &mut Rng) -> Result<Option<Value>> {
    let c = cfg.ops.mask_rules;
    edit_bodies(cx, c.share, rng, |body, rng| {
        body.split_inclusive('\n')
            .filter(|line| !(is_bullet(line) && !is_essential(line) && rng.chance(c.rate)))
            .collect()
    })
}

pub fn reorder_rules(cx: &mut Ctx<'_>, cfg: &Config, rng: &mut Rng) -> Result<Option<Value>> {
    let c = cfg.ops.reorder_rules;
    edit_bodies(cx, c.share, rng, |body, rng| {
        let lines: Vec<&str> = body.split_inclusive('\n').collect();
        let mut out: Vec<String> = Vec::with_capacity(lines.len());
        let mut run: Vec<String> = Vec::new();
        for line in lines {
            // A bullet without a final newline ends the body; keep it last so the body's end is unchanged.
            if is_bullet(line) && line.ends_with('\n') {
                run.push(line.to_string());
                continue;
            }
            rng.shuffle(&mut run);
            out.append(&mut run);
            out.push(line.to_string());
        }
        rng.shuffle(&mut run);
        out.append(&mut run);
        out.concat()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_rule_lines() {
        assert!(is_bullet("- a") && is_bullet("  * b") && !is_bullet("-a"));
        assert!(is_numbered("12. step") && !is_numbered("1.5 kg"));
        assert!(
            is_essential("- 调用 `x`") && is_essential("- 不承诺效果") && is_essential("- 3 days")
        );
        assert!(!is_essential("- 语气亲切，像朋友聊天。"));
    }
}
