//! Masking that keeps tasks solvable: a variant may mask a skill only when no task it will be played
//! or scored on needs it. Masking a needed skill removes the one piece of harness the right behaviour
//! depends on, so no policy could pass: the pair measures nothing and teaches the wrong thing.
//!
//! Callers that draw variants for a known task set (`teacher-distill collect`, `hsa-augment
//! --keep-skills-of`) put [`needed_skills`] into `Spec::keep_skills`; [`masks_needed_skill`] is the
//! check for a single (task, variant) pair, for sets drawn before the tasks were known.

use std::collections::BTreeSet;

use crate::harness::Harness;
use crate::record::{Names, Trajectory};

/// The base-harness skill names the tasks' ground truth needs (`task.expected.skill`, canonical, read
/// through `names`, the canonical → base-surface map). Records without a task need nothing.
pub fn needed_skills<'a>(
    tasks: impl IntoIterator<Item = &'a Trajectory>,
    names: &Names,
) -> BTreeSet<String> {
    tasks
        .into_iter()
        .filter_map(|t| t.task.as_ref()?.expected.as_ref()?.skill.as_deref())
        .map(|s| names.skill_surface(s).to_string())
        .collect()
}

/// The skill `task` needs (base surface name) when `variant` — whose names map canonical ids to its
/// surface names — no longer has it; `None` when the task is solvable under the variant. A skill the
/// base harness itself lacks is not the variant's doing and is not reported.
pub fn masks_needed_skill(
    task: &Trajectory,
    base: &Harness,
    base_names: &Names,
    variant: &Harness,
    variant_names: &Names,
) -> Option<String> {
    let skill = task.task.as_ref()?.expected.as_ref()?.skill.as_deref()?;
    let in_base = base_names.skill_surface(skill);
    (base.skill(in_base).is_some() && variant.skill(variant_names.skill_surface(skill)).is_none())
        .then(|| in_base.to_string())
}
