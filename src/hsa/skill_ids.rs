//! Dimension 1, skill identifiers: mask skills no task needs, rename skills, rewrite their
//! descriptions, add synthetic and noise skills.

use std::collections::HashMap;

use anyhow::Result;
use serde_json::{json, Value};

use super::banks::{ExtraSkill, DESCRIPTION_PREFIXES, NOISE_SKILLS, SYNTHETIC_SKILLS};
use super::config::Config;
use super::naming::skill_name;
use super::ops::Ctx;
use crate::harness::skills::{Skill, SKILL_FILE};
use crate::rng::Rng;

/// Draws of a fresh name before a skill is left with its old one (collisions are rare).
const NAME_TRIES: usize = 16;

/// Removes up to `max` skills. Never one in `keep_skills` or the config's `keep`, never one the
/// manifest lists in `[skills] order` (the harness marks those as leading/always-on) or maps in
/// `[serves.skills]` (the harness serves a canonical skill with it, and the map must keep naming a
/// skill that exists), never the last.
pub fn mask_skill(cx: &mut Ctx<'_>, cfg: &Config, rng: &mut Rng) -> Result<Option<Value>> {
    let c = &cfg.ops.mask_skill;
    let h = cx.harness()?;
    let order = &h.manifest().skills.order;
    let mut candidates: Vec<(String, String)> = h
        .skills()
        .iter()
        .filter(|s| !order.iter().any(|o| o == s.name()))
        .filter(|s| {
            !h.manifest()
                .serves
                .as_ref()
                .is_some_and(|d| d.skills.values().any(|v| v == s.name()))
        })
        .filter(|s| !c.keep.iter().any(|k| k == s.name()))
        .map(|s| (s.name().to_string(), s.dir().to_string()))
        .collect();
    let total = h.skills().len();
    candidates.retain(|(name, _)| !cx.keep_skills.contains(name));
    if candidates.is_empty() || total < 2 || c.max == 0 {
        return Ok(None);
    }
    rng.shuffle(&mut candidates);
    let n = 1 + rng.below(c.max.min(candidates.len()).min(total - 1));
    let mut masked = Vec::new();
    for (name, dir) in candidates.into_iter().take(n) {
        cx.remove_prefix(&format!("{dir}/"));
        masked.push(name);
    }
    masked.sort();
    Ok(Some(json!({ "skills": masked })))
}

/// Renames each skill with probability `share` to a kebab-case name from the pool, in every file.
pub fn rename_skill(cx: &mut Ctx<'_>, cfg: &Config, rng: &mut Rng) -> Result<Option<Value>> {
    let share = cfg.ops.rename_skill.share;
    let names: Vec<String> = cx
        .harness()?
        .skills()
        .iter()
        .map(|s| s.name().to_string())
        .collect();
    let mut map = HashMap::new();
    let mut taken: Vec<String> = names.clone();
    for old in &names {
        if !rng.chance(share) {
            continue;
        }
        for _ in 0..NAME_TRIES {
            let new = skill_name(old, cx.pool, cfg.ops.rename_skill.coined, rng);
            if !taken.contains(&new) && !cx.ident_in_use(&new) {
                taken.push(new.clone());
                map.insert(old.clone(), new);
                break;
            }
        }
    }
    if map.is_empty() {
        return Ok(None);
    }
    cx.rename_everywhere(&map);
    for (old, new) in &map {
        cx.names.skills.insert(old.clone(), new.clone());
    }
    let sorted: std::collections::BTreeMap<_, _> = map.into_iter().collect();
    Ok(Some(json!({ "renames": sorted })))
}

/// Paraphrases the description of each skill with probability `share`, sometimes under a lead-in.
pub fn rewrite_description(cx: &mut Ctx<'_>, cfg: &Config, rng: &mut Rng) -> Result<Option<Value>> {
    let c = cfg.ops.rewrite_skill_description;
    let skills: Vec<Skill> = cx.harness()?.skills().to_vec();
    let mut changed = Vec::new();
    for mut skill in skills {
        if !rng.chance(c.share) {
            continue;
        }
        let mut desc = cx
            .paraphraser
            .paraphrase(&skill.front.description, cx.pool, c.rate, rng);
        if rng.chance(0.3) {
            desc = format!("{}{desc}", rng.pick(DESCRIPTION_PREFIXES.of(cx.pool)));
        }
        if desc != skill.front.description
            && desc.chars().count() <= crate::harness::skills::MAX_DESCRIPTION_CHARS
        {
            skill.front.description = desc;
            cx.set_text(&skill.file, skill.to_markdown());
            changed.push(skill.name().to_string());
        }
    }
    Ok((!changed.is_empty()).then(|| json!({ "skills": changed })))
}

pub fn add_synthetic(cx: &mut Ctx<'_>, cfg: &Config, rng: &mut Rng) -> Result<Option<Value>> {
    let max = cfg.ops.add_synthetic_skill.max;
    add_skills(cx, SYNTHETIC_SKILLS.of(cx.pool), max, rng)
}

pub fn add_noise(cx: &mut Ctx<'_>, cfg: &Config, rng: &mut Rng) -> Result<Option<Value>> {
    let max = cfg.ops.add_noise_skill.max;
    add_skills(cx, NOISE_SKILLS.of(cx.pool), max, rng)
}

/// Adds 1..=max skills from `bank` whose names are free, as `SKILL.md` files in the skills directory.
fn add_skills(
    cx: &mut Ctx<'_>,
    bank: &[ExtraSkill],
    max: usize,
    rng: &mut Rng,
) -> Result<Option<Value>> {
    let dir = cx
        .harness()?
        .manifest()
        .skills
        .dir
        .trim_end_matches('/')
        .to_string();
    let mut free: Vec<&ExtraSkill> = bank.iter().filter(|s| !cx.ident_in_use(s.name)).collect();
    if free.is_empty() || max == 0 {
        return Ok(None);
    }
    rng.shuffle(&mut free);
    let n = 1 + rng.below(max.min(free.len()));
    let mut added = Vec::new();
    for s in free.into_iter().take(n) {
        let rules: String = s.rules.iter().map(|r| format!("- {r}\n")).collect();
        let description = serde_json::to_string(s.description).unwrap_or_default();
        let text = format!(
            "---\nname: {}\ndescription: {description}\n---\n## 规则 Rules\n{rules}",
            s.name
        );
        cx.set_text(&format!("{dir}/{}/{SKILL_FILE}", s.name), text);
        added.push(s.name);
    }
    Ok(Some(json!({ "skills": added })))
}
