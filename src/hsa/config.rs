//! The HSA config file (`configs/hsa.toml`): every op with its probability `p` and its parameters.
//!
//! ```toml
//! [ops.rename_tool]
//! p = 0.6        # chance the op runs in a variant
//! share = 0.4    # chance each tool is renamed when it runs
//! ```
//! Missing ops and fields take the defaults below (which `configs/hsa.toml` spells out); unknown ops
//! or fields are errors, so a misspelt key never silently does nothing.

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::ops::{Dim, OPS};

/// Which half of every bank a variant draws from (held-out evaluation uses `Eval`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Pool {
    Train,
    Eval,
}

impl Pool {
    pub fn as_str(self) -> &'static str {
        match self {
            Pool::Train => "train",
            Pool::Eval => "eval",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub ops: Ops,
}

/// One field per op, in application order (see `ops::OPS`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Ops {
    pub mask_skill: MaskSkill,
    pub rename_skill: Rename,
    pub rename_tool: Rename,
    pub rewrite_skill_description: Rewrite,
    pub add_synthetic_skill: AddSkills,
    pub add_noise_skill: AddSkills,
    pub paraphrase_rules: Rewrite,
    pub mask_rules: Rewrite,
    pub reorder_rules: Rewrite,
    pub rewrite_tool_description: Rewrite,
    pub rewrite_param_descriptions: Rewrite,
    pub reorder_blocks: ReorderBlocks,
    pub reorder_items: Rewrite,
    pub perturb_limits: PerturbLimits,
    pub hook_retries: HookRetries,
    pub hook_on_fail: Rewrite,
    pub feedback_role: Rewrite,
    pub feedback_wording: Rewrite,
    pub guard_hook: Chance,
    pub rename_params: Rewrite,
}

impl Default for Ops {
    fn default() -> Self {
        let rw = |p, share, rate| Rewrite { p, share, rate };
        Ops {
            mask_skill: MaskSkill {
                p: 0.3,
                max: 2,
                keep: Vec::new(),
            },
            rename_skill: Rename::new(0.5, 0.4),
            rename_tool: Rename::new(0.6, 0.4),
            rewrite_skill_description: rw(0.5, 0.5, 0.6),
            add_synthetic_skill: AddSkills { p: 0.3, max: 2 },
            add_noise_skill: AddSkills { p: 0.3, max: 1 },
            paraphrase_rules: rw(0.5, 0.5, 0.5),
            mask_rules: rw(0.3, 0.5, 0.3),
            reorder_rules: rw(0.4, 0.5, 1.0),
            rewrite_tool_description: rw(0.5, 0.5, 0.6),
            rewrite_param_descriptions: rw(0.4, 0.5, 0.6),
            reorder_blocks: ReorderBlocks {
                p: 0.4,
                keep_first: true,
            },
            reorder_items: rw(0.5, 1.0, 1.0),
            perturb_limits: PerturbLimits::default(),
            hook_retries: HookRetries {
                p: 0.4,
                share: 0.5,
                min: 1,
                max: 3,
            },
            hook_on_fail: rw(0.3, 0.5, 1.0),
            feedback_role: rw(0.3, 0.5, 1.0),
            feedback_wording: rw(0.5, 0.7, 0.6),
            guard_hook: Chance { p: 0.2 },
            rename_params: rw(0.4, 0.5, 1.0),
        }
    }
}

/// Ops with nothing to tune but their probability.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Chance {
    pub p: f64,
}

/// Ops that touch a random subset of items: each item with probability `share`; text rewrites replace
/// each bank phrase found with probability `rate` (ignored by ops that rewrite no text).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rewrite {
    pub p: f64,
    #[serde(default = "one")]
    pub share: f64,
    #[serde(default = "one")]
    pub rate: f64,
}

/// The two rename ops: each skill or tool renamed with probability `share`. In the train pool a share
/// `coined` of the new names carry a coined word (`tavomi`: consonant-vowel syllables, in no bank) in
/// place of the bank's verb or marker: a name that no bank and no other variant repeats, so a model
/// can lower its loss on it only by copying it from the prompt — what a name it never saw (the eval
/// pool's) asks of it. The eval pool never coins.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rename {
    pub p: f64,
    #[serde(default = "one")]
    pub share: f64,
    #[serde(default)]
    pub coined: f64,
}

impl Rename {
    fn new(p: f64, share: f64) -> Rename {
        Rename {
            p,
            share,
            coined: 0.0,
        }
    }
}

fn one() -> f64 {
    1.0
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MaskSkill {
    pub p: f64,
    /// At most this many skills are masked in one variant.
    pub max: usize,
    /// Skills never masked (in addition to the ones the tasks need, `--keep-skill`).
    #[serde(default)]
    pub keep: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddSkills {
    pub p: f64,
    /// 1..=max skills are added when the op runs.
    pub max: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReorderBlocks {
    pub p: f64,
    /// Keep the first block (the persona/role) in place: it frames everything after it.
    pub keep_first: bool,
}

/// Numeric limits are redrawn inside these bounds; each also stays inside the harness's valid range.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerturbLimits {
    pub p: f64,
    /// `max_reply_chars` is multiplied by a factor drawn from this range (rounded to a multiple of 10).
    pub reply_chars_factor: [f64; 2],
    /// `max_rounds` and `max_tool_calls` move by a delta drawn from this range …
    pub rounds_delta: [i64; 2],
    /// … but never below this floor (a turn needs room to load a skill, call a tool, retry and reply).
    pub min_rounds: u64,
}

impl Default for PerturbLimits {
    fn default() -> Self {
        PerturbLimits {
            p: 0.5,
            reply_chars_factor: [0.7, 1.5],
            rounds_delta: [-2, 3],
            min_rounds: 4,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookRetries {
    pub p: f64,
    pub share: f64,
    pub min: u32,
    pub max: u32,
}

impl Config {
    pub fn load(path: &Path) -> Result<Config> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        Config::parse(&text).with_context(|| format!("{}: invalid HSA config", path.display()))
    }

    pub fn parse(text: &str) -> Result<Config> {
        let config: Config = toml::from_str(text)?;
        config.check()?;
        Ok(config)
    }

    fn check(&self) -> Result<()> {
        for op in OPS {
            let p = self.p(op.name);
            if !(0.0..=1.0).contains(&p) {
                bail!("ops.{}.p = {p} is not a probability in [0, 1]", op.name);
            }
        }
        let o = &self.ops;
        for (name, v) in [
            ("rename_skill", o.rename_skill),
            ("rename_tool", o.rename_tool),
        ] {
            for (field, x) in [("share", v.share), ("coined", v.coined)] {
                if !(0.0..=1.0).contains(&x) {
                    bail!("ops.{name}.{field} = {x} is not in [0, 1]");
                }
            }
        }
        for (name, v) in [
            ("rewrite_skill_description", o.rewrite_skill_description),
            ("paraphrase_rules", o.paraphrase_rules),
            ("mask_rules", o.mask_rules),
            ("reorder_rules", o.reorder_rules),
            ("rewrite_tool_description", o.rewrite_tool_description),
            ("rewrite_param_descriptions", o.rewrite_param_descriptions),
            ("reorder_items", o.reorder_items),
            ("hook_on_fail", o.hook_on_fail),
            ("feedback_role", o.feedback_role),
            ("feedback_wording", o.feedback_wording),
            ("rename_params", o.rename_params),
        ] {
            for (field, x) in [("share", v.share), ("rate", v.rate)] {
                if !(0.0..=1.0).contains(&x) {
                    bail!("ops.{name}.{field} = {x} is not in [0, 1]");
                }
            }
        }
        let l = &o.perturb_limits;
        if !(l.reply_chars_factor[0] > 0.0 && l.reply_chars_factor[0] <= l.reply_chars_factor[1]) {
            bail!("ops.perturb_limits.reply_chars_factor must be [lo, hi] with 0 < lo <= hi");
        }
        if l.rounds_delta[0] > l.rounds_delta[1] {
            bail!("ops.perturb_limits.rounds_delta must be [lo, hi] with lo <= hi");
        }
        let r = &o.hook_retries;
        if !(r.min <= r.max && r.max <= crate::harness::hooks::MAX_RETRIES)
            || !(0.0..=1.0).contains(&r.share)
        {
            bail!(
                "ops.hook_retries: need min <= max <= {} and share in [0, 1]",
                crate::harness::hooks::MAX_RETRIES
            );
        }
        Ok(())
    }

    /// The probability of op `name` (0 for an unknown name).
    pub fn p(&self, name: &str) -> f64 {
        let o = &self.ops;
        match name {
            "mask_skill" => o.mask_skill.p,
            "rename_skill" => o.rename_skill.p,
            "rename_tool" => o.rename_tool.p,
            "rewrite_skill_description" => o.rewrite_skill_description.p,
            "add_synthetic_skill" => o.add_synthetic_skill.p,
            "add_noise_skill" => o.add_noise_skill.p,
            "paraphrase_rules" => o.paraphrase_rules.p,
            "mask_rules" => o.mask_rules.p,
            "reorder_rules" => o.reorder_rules.p,
            "rewrite_tool_description" => o.rewrite_tool_description.p,
            "rewrite_param_descriptions" => o.rewrite_param_descriptions.p,
            "reorder_blocks" => o.reorder_blocks.p,
            "reorder_items" => o.reorder_items.p,
            "perturb_limits" => o.perturb_limits.p,
            "hook_retries" => o.hook_retries.p,
            "hook_on_fail" => o.hook_on_fail.p,
            "feedback_role" => o.feedback_role.p,
            "feedback_wording" => o.feedback_wording.p,
            "guard_hook" => o.guard_hook.p,
            "rename_params" => o.rename_params.p,
            _ => 0.0,
        }
    }
}

/// Which ops may run: `--dims` and `--ops` narrow the set (both empty = all ops).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    pub dims: Vec<Dim>,
    pub ops: Vec<String>,
}

impl Selection {
    /// Checks every name against the op registry so a typo is an error, not an op that never runs.
    pub fn new(dims: Vec<Dim>, ops: Vec<String>) -> Result<Selection> {
        for op in &ops {
            if !OPS.iter().any(|o| o.name == op) {
                let known: Vec<&str> = OPS.iter().map(|o| o.name).collect();
                bail!("unknown op {op:?}; ops are: {}", known.join(", "));
            }
        }
        Ok(Selection { dims, ops })
    }

    pub fn allows(&self, name: &str, dim: Dim) -> bool {
        (self.dims.is_empty() || self.dims.contains(&dim))
            && (self.ops.is_empty() || self.ops.iter().any(|o| o == name))
    }
}
