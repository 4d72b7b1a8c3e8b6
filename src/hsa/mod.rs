//! HSA — Harness-State Augmentation (DESIGN §1): task-preserving rewrites of a harness along five
//! dimensions, and the matching rewrite of trajectories.
//!
//! ```text
//! config.rs         configs/hsa.toml: each op's probability and parameters; --dims/--ops selection; pools
//! ops.rs            op registry (application order) and the variant-in-progress state
//! skill_ids.rs      1. mask / rename skills, rewrite descriptions, add synthetic and noise skills
//! skill_content.rs  2. paraphrase, mask, reorder rules
//! tools.rs          3. rename tools and argument keys, rewrite tool and parameter descriptions
//! prompt.rs         4. reorder blocks and items, perturb limits
//! hooks.rs          5. retry budgets, fix vs retry, feedback role and wording, guard hooks
//! matchers.rs       hook matchers kept matching the same tools across tool renames
//! banks.rs          offline bilingual banks, split into train and eval pools
//! naming.rs         naming styles for tool and skill names
//! text.rs           identifier renaming and protected paraphrase
//! variant.rs        a seeded variant: harness + names map + manifest
//! rewrite.rs        trajectories rewritten consistently with a variant
//! solvable.rs       masking that keeps tasks solvable: the skills a task set needs
//! ```
//! Ground truth stays canonical; a variant changes the names map (`harness.names`) and the text, so
//! scoring through the map is unaffected: augmentation is task-preserving by construction, and
//! `tests/hsa.rs` measures it with the oracle teacher in the simulator.

pub mod banks;
pub mod config;
pub mod hooks;
pub mod matchers;
pub mod naming;
pub mod ops;
pub mod paraphraser;
pub mod prompt;
pub mod rewrite;
pub mod skill_content;
pub mod skill_ids;
pub mod solvable;
pub mod text;
pub mod tools;
pub mod variant;

pub use config::{Config, Pool, Selection};
pub use ops::{Dim, OPS};
pub use paraphraser::Paraphraser;
pub use rewrite::{Augmenter, Rejection};
pub use variant::{Spec, Variant};
