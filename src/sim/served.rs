//! What a harness can serve in the simulator: the traffic mix its `[serves]` table declares and the
//! canonical ids it has no counterpart for, so `hat sim tasks --harness` generates only tasks the harness
//! can serve, in its mix (`harness::serves` holds the declaration itself).

use std::collections::BTreeSet;

use super::sandbox;
use super::tasks::{Mix, TaskConfig};
use crate::harness::serves::{has_skill, has_tool};
use crate::harness::{Harness, SkillsMode};
use crate::record::{CANONICAL_SKILLS, CANONICAL_TOOLS};

#[derive(Debug, Clone, PartialEq)]
pub struct Served {
    /// The declared intents and weights; `None`: the simulator's default mix.
    pub mix: Option<Mix>,
    /// Canonical ids no generated task may need: the tools the sandbox answers that the harness has no
    /// counterpart for, the skills a tool-mode harness cannot load (an inline harness is not asked to
    /// load one), and whatever `[serves] lacks` lists.
    pub unserved: BTreeSet<String>,
}

impl Served {
    pub fn of(h: &Harness) -> Served {
        let names = h.names();
        let serves = h.manifest().serves.as_ref();
        let mut unserved: BTreeSet<String> = CANONICAL_TOOLS
            .iter()
            .filter(|id| sandbox::implements(id) && !has_tool(h, &names, id))
            .map(|id| id.to_string())
            .collect();
        if h.skills_mode() == SkillsMode::Tool {
            unserved.extend(
                CANONICAL_SKILLS
                    .iter()
                    .filter(|id| !has_skill(h, &names, id))
                    .map(|id| id.to_string()),
            );
        }
        unserved.extend(serves.into_iter().flat_map(|s| s.lacks.iter().cloned()));
        let mix = serves
            .filter(|s| !s.intents.is_empty())
            .map(|s| Mix(s.intents.iter().map(|(i, w)| (*i, *w)).collect()));
        Served { mix, unserved }
    }

    /// `cfg` generating for this harness: its mix (when declared) and its unserved ids.
    pub fn apply(&self, cfg: &mut TaskConfig) {
        if let Some(m) = &self.mix {
            cfg.mix = m.clone();
        }
        cfg.unserved = self.unserved.clone();
    }
}
