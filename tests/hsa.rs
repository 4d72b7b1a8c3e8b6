//! Harness-State Augmentation: every variant validates, renames invert byte for byte, seeds
//! reproduce, train and eval pools are disjoint, each op and dimension does what it says, stream-mode
//! trajectories are consistent with their variant, and the oracle teacher's success rate is unchanged
//! under random variants (task preservation, measured in the simulator).

mod harness_support;

use harness_support::placed_in_context;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use hat::agent::checks::schema_errors;
use hat::agent::{Agent, SimEnv};
use hat::harness::hooks::{Hook, OnFail};
use hat::harness::{Harness, LiveContext};
use hat::hsa::matchers::drift;
use hat::hsa::ops::rename_files;
use hat::hsa::rewrite::compose;
use hat::hsa::solvable::{masks_needed_skill, needed_skills};
use hat::hsa::{Augmenter, Config, Dim, Pool, Selection, Spec, Variant, OPS};
use hat::judge::report::report;
use hat::judge::verifiable::{score, TokenCounter};
use hat::policy::oracle::Oracle;
use hat::policy::reading::ReadingOracle;
use hat::policy::{Conversation, Policy};
use hat::record::{Names, Role, Trajectory};
use hat::sim::catalog::{Catalog, Split};
use hat::sim::context::live_context;
use hat::sim::faults::FaultPlan;
use hat::sim::served::Served;
use hat::sim::success;
use hat::sim::tasks::{self, Room, TaskConfig};
use rayon::prelude::*;
use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn sample(name: &str) -> Harness {
    Harness::load(root().join("harness-samples").join(name)).unwrap()
}

/// The names the simulator's canonical ids have in each sample: its `[serves]` declaration.
fn base_names(name: &str) -> Names {
    sample(name).names()
}

fn spec(config: Config, ops: &[&str], pool: Pool) -> Spec {
    Spec {
        config,
        selection: Selection::new(Vec::new(), ops.iter().map(|s| s.to_string()).collect()).unwrap(),
        pool,
        keep_skills: BTreeSet::new(),
        paraphraser: Default::default(),
    }
}

/// The default config with every op's probability raised to 1.
fn all_on() -> Config {
    ops_at(1.0)
}

/// Every op runs with probability `p` (for the parameters, see [`all_on`]).
fn ops_at(p: f64) -> Config {
    let mut text = String::new();
    for op in OPS {
        text.push_str(&format!("[ops.{}]\np = {p}\n", op.name));
        if ["mask_skill", "add_synthetic_skill", "add_noise_skill"].contains(&op.name) {
            text.push_str("max = 2\n");
        }
        if op.name == "reorder_blocks" {
            text.push_str("keep_first = true\n");
        }
        if op.name == "perturb_limits" {
            text.push_str(
                "reply_chars_factor = [0.7, 1.5]\nrounds_delta = [-2, 3]\nmin_rounds = 4\n",
            );
        }
        if op.name == "hook_retries" {
            text.push_str("share = 0.5\nmin = 1\nmax = 3\n");
        }
    }
    Config::parse(&text).unwrap()
}

#[test]
fn shipped_config_equals_the_defaults_and_typos_are_errors() {
    assert_eq!(
        Config::load(&root().join("configs/hsa.toml")).unwrap(),
        Config::default()
    );
    let err = Config::parse("[ops.rename_tol]\np = 0.5\n").unwrap_err();
    assert!(format!("{err:#}").contains("rename_tol"), "{err:#}");
    let err = Config::parse("[ops.rename_tool]\np = 1.5\n").unwrap_err();
    assert!(format!("{err:#}").contains("rename_tool.p"), "{err:#}");
    assert!(Selection::new(vec![], vec!["no_such_op".into()]).is_err());
}

#[test]
fn the_coined_config_changes_only_the_coinage() {
    let coined = Config::load(&root().join("configs/hsa-coined.toml")).unwrap();
    let mut expected = Config::default();
    expected.ops.rename_skill.coined = 0.5;
    expected.ops.rename_tool.coined = 0.5;
    assert_eq!(coined, expected);
    let err = Config::parse("[ops.rename_tool]\np = 0.5\ncoined = 2\n").unwrap_err();
    assert!(format!("{err:#}").contains("rename_tool.coined"), "{err:#}");
}

#[test]
fn every_variant_of_every_sample_validates() {
    for name in ["taolive", "aftersales", "shopdesk"] {
        let base = sample(name);
        for (config, label) in [(Config::default(), "default"), (all_on(), "all ops")] {
            for pool in [Pool::Train, Pool::Eval] {
                let s = spec(config.clone(), &[], pool);
                (0..30u64).into_par_iter().for_each(|seed| {
                    let v = Variant::draw(&base, &s, seed)
                        .unwrap_or_else(|e| panic!("{name} {label} {pool:?} seed {seed}: {e:#}"));
                    assert!(v.harness.validate().is_empty());
                    // The variant's own files reload to the same harness.
                    let again = Harness::from_files(v.harness.files().clone()).unwrap();
                    assert_eq!(again.hash(), v.harness.hash());
                });
            }
        }
    }
}

#[test]
fn rename_then_inverse_restores_the_original_byte_for_byte() {
    let mut config = all_on();
    config.ops.rename_tool.share = 1.0;
    config.ops.rename_skill.share = 1.0;
    for name in ["taolive", "aftersales", "shopdesk"] {
        let base = sample(name);
        for seed in 0..10 {
            let v = Variant::draw(
                &base,
                &spec(
                    config.clone(),
                    &["rename_tool", "rename_skill"],
                    Pool::Train,
                ),
                seed,
            )
            .unwrap();
            assert_eq!(
                v.names.tools.len(),
                base.tools().len(),
                "every tool renamed"
            );
            assert!(v.harness.files() != base.files());
            // The variant's own [serves] declaration followed the renames: it names what the variant
            // serves each canonical id with, as the manifest's canonical names do.
            let declared = v.harness.names();
            let canonical = v.canonical_names();
            for (c, s) in &declared.tools {
                assert_eq!(canonical.tool_surface(c), s, "{name} seed {seed}: {c}");
            }
            for (c, s) in &declared.skills {
                assert_eq!(canonical.skill_surface(c), s, "{name} seed {seed}: {c}");
            }
            // Each sample has entries to check: a [serves] table, or a renamed skill loader.
            assert!(!declared.tools.is_empty(), "{name} seed {seed}");
            let inverse: HashMap<String, String> = v
                .names
                .tools
                .iter()
                .chain(&v.names.skills)
                .map(|(c, s)| (s.clone(), c.clone()))
                .collect();
            assert_eq!(
                &rename_files(v.harness.files(), &inverse),
                base.files(),
                "{name} seed {seed}"
            );
        }
    }
}

#[test]
fn the_same_seed_gives_the_same_variant() {
    let base = sample("taolive");
    let s = spec(Config::default(), &[], Pool::Train);
    let a = Variant::draw(&base, &s, 42).unwrap();
    let b = Variant::draw(&base, &s, 42).unwrap();
    assert_eq!(a.harness.files(), b.harness.files());
    assert_eq!(a.manifest(), b.manifest());
    let hashes: BTreeSet<String> = (0..8)
        .map(|seed| Variant::draw(&base, &s, seed).unwrap().harness.hash())
        .collect();
    assert!(
        hashes.len() >= 7,
        "seeds give different variants: {hashes:?}"
    );
}

#[test]
fn train_and_eval_pools_produce_disjoint_surface_names() {
    let mut config = all_on();
    config.ops.rename_tool.share = 1.0;
    config.ops.rename_skill.share = 1.0;
    for name in ["taolive", "aftersales", "shopdesk"] {
        let base = sample(name);
        let names = |pool: Pool| -> BTreeSet<String> {
            let s = spec(config.clone(), &[], pool);
            (0..40)
                .flat_map(|seed| {
                    let v = Variant::draw(&base, &s, seed).unwrap();
                    let original: BTreeSet<&str> = base
                        .tools()
                        .iter()
                        .map(|t| t.name.as_str())
                        .chain(base.skills().iter().map(|s| s.name()))
                        .collect();
                    v.harness
                        .tools()
                        .iter()
                        .map(|t| t.name.clone())
                        .chain(v.harness.skills().iter().map(|s| s.name().to_string()))
                        .filter(|n| !original.contains(n.as_str()))
                        .collect::<Vec<_>>()
                })
                .collect()
        };
        let (train, eval) = (names(Pool::Train), names(Pool::Eval));
        assert!(
            train.len() > 50 && eval.len() > 50,
            "{} {}",
            train.len(),
            eval.len()
        );
        let shared: Vec<_> = train.intersection(&eval).collect();
        assert!(shared.is_empty(), "{name}: names in both pools: {shared:?}");
    }
}

/// Draws variants with only `op` on until it applies; returns the first that did.
fn with_op(base: &Harness, op: &str) -> Variant {
    let s = spec(all_on(), &[op], Pool::Train);
    (0..20)
        .map(|seed| Variant::draw(base, &s, seed).unwrap())
        .find(|v| v.ops.iter().any(|o| o["op"] == op))
        .unwrap_or_else(|| panic!("op {op} never applied"))
}

fn render(h: &Harness) -> String {
    h.render_system_prompt(&LiveContext::default_context())
        .unwrap()
}

#[test]
fn each_op_applies_and_changes_what_it_names() {
    let base = sample("taolive");
    for op in OPS {
        let v = with_op(&base, op.name);
        assert_eq!(v.ops.len(), 1, "{}: {:?}", op.name, v.ops);
        assert_eq!(v.ops[0]["dim"], op.dim.as_str());
        assert_ne!(v.harness.hash(), base.hash(), "{} changed nothing", op.name);
    }

    let v = with_op(&base, "mask_skill");
    let masked = v.ops[0]["skills"].as_array().unwrap();
    assert!(masked
        .iter()
        .all(|s| v.harness.skill(s.as_str().unwrap()).is_none()));
    assert!(
        v.harness.skill("compliance-guard").is_some(),
        "skills in [skills] order are never masked"
    );

    let v = with_op(&base, "rename_tool");
    for (c, s) in &v.names.tools {
        assert!(v.harness.tool(c).is_none() && v.harness.tool(s).is_some());
        assert!(!render(&v.harness).contains(&format!("`{c}`")));
    }

    let v = with_op(&base, "rename_skill");
    let (c, s) = v.names.skills.iter().next().unwrap();
    assert!(v.harness.skill(c).is_none() && v.harness.skill(s).is_some());
    assert!(
        render(&v.harness).contains(&format!("- {s}:")),
        "the catalog shows the new name"
    );

    let v = with_op(&base, "rename_params");
    assert!(!v.names.params.is_empty());
    for (tool, keys) in &v.names.params {
        let params = v.harness.tool(tool).unwrap().parameter_names();
        for (old, new) in keys {
            assert!(
                params.contains(&new.as_str()) && !params.contains(&old.as_str()),
                "{tool}: {old} → {new}"
            );
        }
    }
    let v = with_op(&base, "add_synthetic_skill");
    assert!(v.harness.skills().len() > base.skills().len());
    let v = with_op(&base, "add_noise_skill");
    assert!(v.harness.skills().len() > base.skills().len());

    let v = with_op(&base, "mask_rules");
    let body_lines = |h: &Harness| {
        h.skills()
            .iter()
            .map(|s| s.body.lines().count())
            .sum::<usize>()
    };
    assert!(body_lines(&v.harness) < body_lines(&base));
    for s in v.harness.skills() {
        let orig = base.skill(s.name()).unwrap();
        for line in orig.body.lines().filter(|l| l.contains('`')) {
            assert!(s.body.contains(line), "essential rule dropped: {line}");
        }
    }

    let v = with_op(&base, "reorder_rules");
    let sorted = |h: &Harness| {
        let mut l: Vec<String> = h
            .skills()
            .iter()
            .flat_map(|s| s.body.lines().map(str::to_string).collect::<Vec<_>>())
            .collect();
        l.sort();
        l
    };
    assert_eq!(
        sorted(&v.harness),
        sorted(&base),
        "reordering keeps every rule"
    );

    let v = with_op(&base, "reorder_blocks");
    assert_eq!(v.harness.pipeline().blocks[0].name, "persona");
    let names = |h: &Harness| {
        h.pipeline()
            .blocks
            .iter()
            .map(|b| b.name.clone())
            .collect::<Vec<_>>()
    };
    assert_ne!(names(&v.harness), names(&base));

    let v = with_op(&base, "perturb_limits");
    let (old, new) = (base.limits(), v.harness.limits());
    assert!(old != new);
    assert!(render(&v.harness).contains(&format!("每条回复不超过 {} 个字", new.max_reply_chars)));
    assert!(new.max_rounds >= 4 && new.max_tool_calls >= 4);

    let builtin = |h: &Harness| -> Vec<(OnFail, u32, Option<String>)> {
        h.hooks()
            .iter()
            .filter_map(|(_, _, hook)| match hook {
                Hook::Builtin(b) => Some((
                    b.on_fail,
                    b.max_retries,
                    b.feedback
                        .as_ref()
                        .map(|f| format!("{:?}{}", f.role, f.template)),
                )),
                Hook::Command(_) => None,
            })
            .collect()
    };
    for op in [
        "hook_retries",
        "hook_on_fail",
        "feedback_role",
        "feedback_wording",
        "guard_hook",
    ] {
        let v = with_op(&base, op);
        assert_ne!(builtin(&v.harness), builtin(&base), "{op}");
    }
}

/// `rename_params` renames a key in every tool that takes it and wherever the harness mentions it —
/// schema, `required`, skill bodies, the prompt's literal text — while Jinja expressions that read the
/// live context keep their field names, so the rendered prompt still carries the product id.
#[test]
fn rename_params_follows_every_mention_but_not_template_fields() {
    let mut config = all_on();
    config.ops.rename_params.share = 1.0;
    let base = sample("taolive");
    let v = Variant::draw(&base, &spec(config, &["rename_params"], Pool::Train), 3).unwrap();
    let new = &v.names.params["get_product_detail"]["product_id"];
    for (tool, keys) in &v.names.params {
        if let Some(k) = keys.get("product_id") {
            assert_eq!(k, new, "{tool}: one key, one new name");
        }
    }
    let tools_with_it = base
        .tools()
        .iter()
        .filter(|t| t.parameter_names().contains(&"product_id"))
        .count();
    assert_eq!(
        v.names
            .params
            .values()
            .filter(|k| k.contains_key("product_id"))
            .count(),
        tools_with_it
    );
    let t = v.harness.tool("create_purchase_link").unwrap();
    assert_eq!(t.input_schema["required"], serde_json::json!([new]));
    for skill in v.harness.skills() {
        let words: Vec<&str> = skill
            .body
            .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .collect();
        assert!(
            !words.contains(&"product_id"),
            "{}: {}",
            skill.name(),
            skill.body
        );
    }
    assert!(v
        .harness
        .skill("purchase-guide")
        .unwrap()
        .body
        .contains(&format!("create_purchase_link({new}")));
    // A simulated room: the current product and the queue show their ids under the argument key.
    let catalog = Catalog::generate(7, 40);
    let task = dev_tasks(&catalog, 1, None).remove(0);
    let t0 = task.task.as_ref().unwrap();
    let room: Room = serde_json::from_value(t0.room.clone()).unwrap();
    let ctx = LiveContext::from_value(live_context(&catalog, &room, &t0.viewer)).unwrap();
    let before = base.render_system_prompt(&ctx).unwrap();
    let after = v.harness.render_system_prompt(&ctx).unwrap();
    assert!(before.matches("product_id=").count() >= 2, "{before}");
    assert_eq!(
        before.matches("product_id=").count(),
        after.matches(&format!("{new}=")).count()
    );
    assert!(!after.contains("product_id="), "{after}");
    // The load tool's `name` and one-word keys stay.
    assert!(v
        .harness
        .tool("load_skill")
        .unwrap()
        .parameter_names()
        .contains(&"name"));
    assert!(t.parameter_names().contains(&"quantity"));
}

/// A regex matcher (`get_(…)`) cannot follow a tool rename by substitution: `rename_tool` pins it to the
/// new names of the tools it matched, and a variant whose matcher drifted is reported with its field.
#[test]
fn regex_hook_matchers_keep_matching_the_same_tools_after_renames() {
    let mut files = sample("taolive").files().clone();
    let hooks = files.get_mut("hooks/hooks.json").unwrap();
    let text = String::from_utf8(hooks.bytes.clone()).unwrap();
    hooks.bytes = text
        .replace(
            r#""matcher": "create_purchase_link""#,
            r#""matcher": "get_(promotions|product_detail)""#,
        )
        .into_bytes();
    let base = Harness::from_files(files).unwrap();
    assert!(base.validate().is_empty(), "{:?}", base.validate());
    let mut config = all_on();
    config.ops.rename_tool.share = 1.0;
    let s = spec(config, &["rename_tool"], Pool::Train);
    for seed in 0..5 {
        let v = Variant::draw(&base, &s, seed).unwrap();
        assert!(drift(&base, &v.harness, &v.names).is_empty());
        let group = &v.harness.hooks().events[0].groups[0];
        for t in v.harness.tools() {
            let was = ["get_promotions", "get_product_detail"]
                .iter()
                .any(|b| v.names.tool_surface(b) == t.name);
            assert_eq!(group.matches(&t.name), was, "seed {seed}: {}", t.name);
        }
        assert!(v.ops[0]["matchers"].is_object(), "{:?}", v.ops);
        // Undo the pin: the variant is rejected, naming the file and field.
        let mut files = v.harness.files().clone();
        let f = files.get_mut("hooks/hooks.json").unwrap();
        let pinned = group.matcher.clone().unwrap();
        let text = String::from_utf8(f.bytes.clone()).unwrap();
        f.bytes = text
            .replace(
                &serde_json::to_string(&pinned).unwrap(),
                r#""get_(promotions|product_detail)""#,
            )
            .into_bytes();
        let broken = Harness::from_files(files).unwrap();
        let problems = drift(&base, &broken, &v.names);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].file, "hooks/hooks.json");
        assert_eq!(
            problems[0].field.as_deref(),
            Some("hooks.PreToolUse[0].matcher")
        );
    }
}

#[test]
fn dims_select_ops_by_dimension() {
    let base = sample("taolive");
    let mut s = spec(all_on(), &[], Pool::Eval);
    s.selection = Selection::new(vec![Dim::Hooks, Dim::Prompt], Vec::new()).unwrap();
    let v = Variant::draw(&base, &s, 5).unwrap();
    assert!(!v.ops.is_empty());
    assert!(
        v.ops
            .iter()
            .all(|o| o["dim"] == "hooks" || o["dim"] == "prompt"),
        "{:?}",
        v.ops
    );
    assert!(v.names.is_empty());
}

/// Oracle rollouts of dev tasks under `h` with `names` (canonical → surface).
fn rollouts(h: &Harness, names: Names, tasks: &[Trajectory], catalog: &Catalog) -> Vec<Trajectory> {
    let oracle = Oracle::new(h, names.clone());
    rollouts_of(&oracle, h, names, tasks, catalog)
}

fn rollouts_of(
    policy: &dyn Policy,
    h: &Harness,
    names: Names,
    tasks: &[Trajectory],
    catalog: &Catalog,
) -> Vec<Trajectory> {
    let agent = Agent::new(h, names).unwrap();
    let plan = FaultPlan::default();
    let env = SimEnv {
        catalog,
        faults: &plan,
        seed: 3,
    };
    tasks
        .par_iter()
        .map(|t| agent.run(policy, t, &env).unwrap())
        .collect()
}

fn dev_tasks(catalog: &Catalog, n: usize, mix: Option<&str>) -> Vec<Trajectory> {
    let mut cfg = TaskConfig::new(Split::Dev, 11);
    if let Some(m) = mix {
        cfg.mix = m.parse().unwrap();
    }
    tasks::generate(catalog, &cfg, n).unwrap()
}

fn rate(out: &[Trajectory]) -> f64 {
    out.iter().filter(|t| success::check(t).success).count() as f64 / out.len().max(1) as f64
}

/// `v` written to a temporary directory and loaded back, as a run would: command hooks run from disk.
/// Keep the directory while the harness is in use.
fn written(v: &Variant) -> (tempfile::TempDir, Harness) {
    let dir = tempfile::tempdir().unwrap();
    v.write_to(&dir.path().join("h")).unwrap();
    let on_disk = Harness::load(dir.path().join("h")).unwrap();
    assert_eq!(
        on_disk.hash(),
        v.harness.hash(),
        "the manifest is not part of the harness"
    );
    (dir, on_disk)
}

/// Task preservation, measured: the oracle's success on dev tasks under 50 random eval-pool variants
/// equals its success under the original. Variants are drawn keeping the skills the tasks need (as
/// `teacher-distill collect` and `hsa-augment --keep-skills-of` do), so every (task, variant) pair is
/// played; a pair whose variant masked a needed skill anyway is counted, and there must be none.
#[test]
fn oracle_success_is_unchanged_under_random_variants() {
    let catalog = Catalog::generate(7, 40);
    for (name, n_tasks) in [("taolive", 60), ("aftersales", 30), ("shopdesk", 30)] {
        let base = sample(name);
        let names = base_names(name);
        // The tasks each harness serves, in its declared mix.
        let mut cfg = TaskConfig::new(Split::Dev, 11);
        Served::of(&base).apply(&mut cfg);
        let tasks = tasks::generate(&catalog, &cfg, n_tasks).unwrap();
        let base_rate = rate(&rollouts(&base, names.clone(), &tasks, &catalog));
        let mut s = spec(Config::default(), &[], Pool::Eval);
        s.keep_skills = needed_skills(&tasks, &names);
        let (mut ok, mut total, mut masked) = (0usize, 0usize, 0usize);
        for seed in 0..50 {
            let v = Variant::draw(&base, &s, seed).unwrap();
            let (_dir, on_disk) = written(&v);
            let vnames = compose(&names, &v.names);
            masked += tasks
                .iter()
                .filter(|t| masks_needed_skill(t, &base, &names, &v.harness, &vnames).is_some())
                .count();
            let out = rollouts(&on_disk, vnames, &tasks, &catalog);
            total += out.len();
            ok += out.iter().filter(|t| success::check(t).success).count();
        }
        let variant_rate = ok as f64 / total as f64;
        eprintln!("{name}: oracle success {base_rate:.4} original, {variant_rate:.4} under 50 variants ({total} episodes, {masked} pairs with a needed skill masked)");
        assert_eq!(masked, 0, "{name}: variants masked skills the tasks need");
        assert_eq!(total, 50 * tasks.len(), "every pair is played");
        assert!(base_rate >= 0.98, "{name}: base {base_rate}");
        assert!(
            variant_rate >= 0.98 && variant_rate >= base_rate - 0.01,
            "{name}: {variant_rate} vs {base_rate}"
        );
    }
}

/// Ops whose cost to the reading oracle is intended hardness, each with the reason (docs/hsa-fidelity.md
/// gives the figures). Every other op must keep its success within 2 points of the original harness.
const HARD_FOR_READERS: &[(&str, &str)] = &[];

/// Task preservation measured by a reader: the reading oracle (src/policy/reading.rs) finds tools,
/// argument keys and skills from the tool specs and the prompt alone, without the names map. Its success
/// on taolive under 50 eval-pool variants, broken down by the ops each variant applied (its manifest's
/// `ops`), against its success under the original harness: how much of what a reader needs each op
/// destroys. Prints the table of docs/hsa-fidelity.md.
#[test]
fn reading_oracle_success_per_op() {
    let catalog = Catalog::generate(7, 40);
    let base = sample("taolive");
    let names = base_names("taolive");
    let tasks = dev_tasks(&catalog, 60, None);
    let successes = |out: &[Trajectory]| out.iter().filter(|t| success::check(t).success).count();
    let read = |h: &Harness, episode_names: Names| {
        let reader = ReadingOracle::new(&base, &names, h).unwrap();
        let out = rollouts_of(&reader, h, episode_names, &tasks, &catalog);
        (reader, out)
    };
    let (_, out) = read(&base, names.clone());
    let original = successes(&out);
    assert_eq!(
        original,
        successes(&rollouts(&base, names.clone(), &tasks, &catalog)),
        "under the original harness the reader plays as the oracle does"
    );
    let mut s = spec(Config::default(), &[], Pool::Eval);
    s.keep_skills = needed_skills(&tasks, &names);
    // op → (variants, reader's successes, successes of the oracle handed no names map); every variant
    // plays every task.
    let mut per_op: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    let (mut all, mut all_blind, mut skills_misread) = (0, 0, 0);
    for seed in 0..50 {
        let v = Variant::draw(&base, &s, seed).unwrap();
        let (_dir, on_disk) = written(&v);
        let truth = compose(&names, &v.names);
        let (reader, out) = read(&on_disk, truth.clone());
        // What it read is the variant's names map: every tool and argument key, every skill the
        // variant still lists. A skill the variant masked may read as a look-alike; count those.
        let t = &out[0];
        let surface = reader.read(&Conversation {
            messages: &t.messages,
            tools: &t.tools,
            turn_start: t.messages.len(),
            task: None,
            session: None,
        });
        assert_eq!(surface.names.tools, truth.tools, "seed {seed}: tools");
        assert_eq!(
            surface.names.params, truth.params,
            "seed {seed}: argument keys"
        );
        for skill in base.skills() {
            let canonical = names.skill_canonical(skill.name()).unwrap();
            let listed = on_disk.skill(truth.skill_surface(canonical)).is_some();
            let got = surface.names.skill_surface(canonical);
            if listed {
                assert_eq!(
                    got,
                    truth.skill_surface(canonical),
                    "seed {seed}: skill {canonical}"
                );
            } else if surface.skills.contains(got) {
                skills_misread += 1;
            }
        }
        let ok = successes(&out);
        // The control: the oracle's decisions with no names map at all (it still sees which tools and
        // skills exist), to show what finding the names is worth.
        let blind_oracle = Oracle::new(&on_disk, Names::default());
        let blind = successes(&rollouts_of(
            &blind_oracle,
            &on_disk,
            truth.clone(),
            &tasks,
            &catalog,
        ));
        all += ok;
        all_blind += blind;
        for op in &v.ops {
            let e = per_op
                .entry(op["op"].as_str().unwrap().to_string())
                .or_default();
            e.0 += 1;
            e.1 += ok;
            e.2 += blind;
        }
    }
    let n = tasks.len();
    let pct = |ok: usize, variants: usize| 100.0 * ok as f64 / (variants * n) as f64;
    let base_pct = pct(original, 1);
    let mut table = format!(
        "| harness | variants | episodes | reading oracle | Δ points | oracle without the names map |\n\
         |---|---|---|---|---|---|\n\
         | original | 1 | {n} | {base_pct:.2}% | | {base_pct:.2}% |\n\
         | all 50 variants | 50 | {} | {:.2}% | {:+.2} | {:.2}% |\n",
        50 * n,
        pct(all, 50),
        pct(all, 50) - base_pct,
        pct(all_blind, 50)
    );
    let mut too_costly = Vec::new();
    for op in OPS {
        let (variants, ok, blind) = per_op.get(op.name).copied().unwrap_or_default();
        if variants == 0 {
            table.push_str(&format!("| {} | 0 | 0 | – | | – |\n", op.name));
            continue;
        }
        let delta = pct(ok, variants) - base_pct;
        table.push_str(&format!(
            "| {} | {variants} | {} | {:.2}% | {delta:+.2} | {:.2}% |\n",
            op.name,
            variants * n,
            pct(ok, variants),
            pct(blind, variants)
        ));
        if delta < -2.0 && !HARD_FOR_READERS.iter().any(|(name, _)| *name == op.name) {
            too_costly.push(format!("{} ({delta:+.2})", op.name));
        }
    }
    eprintln!("reading oracle on taolive, {n} dev tasks ({skills_misread} masked skills read as a listed look-alike):\n{table}");
    assert!(base_pct >= 98.0, "original {base_pct}");
    assert!(
        too_costly.is_empty(),
        "ops that drop the reading oracle's success by more than 2 points: {}",
        too_costly.join(", ")
    );
}

#[test]
fn stream_mode_rewrites_trajectories_consistently_with_their_variant() {
    rewrites_consistently_with_their_variant(&sample("taolive"));
}

/// The same with the live room in the context message (`placement = "context"`): the rewritten
/// system prompt and context message are both what the variant renders.
#[test]
fn stream_mode_rewrites_a_context_message_consistently_with_its_variant() {
    let placed = placed_in_context(
        &sample("taolive"),
        &["current_product", "room_state", "active_rules"],
    );
    // On disk: the rollouts run the harness's command hooks.
    let dir = tempfile::tempdir().unwrap();
    placed.write_to(dir.path().join("h")).unwrap();
    rewrites_consistently_with_their_variant(&Harness::load(dir.path().join("h")).unwrap());
}

/// A block that renders the same in every room cannot sit in the context message: augmentation
/// re-renders static blocks in the system prompt only, so it says so instead of keeping stale text.
#[test]
fn a_static_block_in_the_context_message_is_refused_by_name() {
    let placed = placed_in_context(&sample("taolive"), &["persona"]);
    let spec = spec(all_on(), &[], Pool::Train);
    let err = Augmenter::new(&placed, &spec, 9, 4).err().expect("refused");
    let msg = format!("{err:#}");
    assert!(
        msg.contains("\"persona\"") && msg.contains("placement"),
        "{msg}"
    );
}

fn rewrites_consistently_with_their_variant(base: &Harness) {
    let catalog = Catalog::generate(7, 40);
    let tasks = dev_tasks(&catalog, 40, None);
    let records = rollouts(base, Names::default(), &tasks, &catalog);
    let s = spec(all_on(), &[], Pool::Train);
    let aug = Augmenter::new(base, &s, 9, 16).unwrap();
    let mut renamed_calls = 0;
    for r in &records {
        let copies = aug
            .augment(r, 3)
            .unwrap_or_else(|e| panic!("{}: {e}", r.id));
        assert!(!copies.is_empty());
        for (k, c) in copies.iter().enumerate() {
            assert_eq!(c.id, format!("{}#hsa{k}", r.id));
            assert_eq!(c.task, r.task, "ground truth stays canonical");
            let href = c.harness.as_ref().unwrap();
            let seed = href.variant.as_ref().unwrap().seed;
            let v = Variant::draw(base, &s, seed).unwrap();
            assert_eq!(href.hash, v.harness.hash());
            assert_eq!(href.names, v.names);
            // The system prompt is exactly what the variant renders for this room.
            let room: Room = serde_json::from_value(r.task.as_ref().unwrap().room.clone()).unwrap();
            let ctx = LiveContext::from_value(live_context(
                &catalog,
                &room,
                &r.task.as_ref().unwrap().viewer,
            ))
            .unwrap();
            let prompt = v.harness.render_prompt(&ctx).unwrap();
            assert_eq!(c.messages[0].text_content(), prompt.system, "{}", c.id);
            if let Some(context) = prompt.context {
                assert_eq!(c.messages[1].text_content(), context, "{}", c.id);
            }
            // Every tool call names a tool of the variant, with arguments valid under its schema.
            for call in c.messages.iter().flat_map(|m| &m.tool_calls) {
                let tool = v.harness.tool(&call.function.name).unwrap_or_else(|| {
                    panic!("{}: {} is not a variant tool", c.id, call.function.name)
                });
                let args = Value::Object(call.function.parsed_arguments().unwrap());
                assert!(
                    schema_errors(&tool.input_schema, &args).is_empty(),
                    "{}: {args}",
                    c.id
                );
                assert!(c
                    .tools
                    .iter()
                    .any(|t| t.function.name == call.function.name));
                renamed_calls +=
                    usize::from(v.names.tools.values().any(|s| *s == call.function.name));
                if call.function.name == v.harness.manifest().skills.load_tool {
                    let skill = args["name"].as_str().unwrap();
                    assert!(v.harness.skill(skill).is_some(), "{}: loads {skill}", c.id);
                }
            }
            // Scoring through the names map still finds the episode correct.
            assert_eq!(
                success::check(c).success,
                success::check(r).success,
                "{}: {:?}",
                c.id,
                success::check(c).failures
            );
        }
    }
    assert!(renamed_calls > 20, "{renamed_calls}");
}

/// Real logs carry no canonical ground truth and no names map. Stream mode reads them through the
/// harness's `[serves]` declaration and rewrites them exactly as it rewrites the same episodes with their
/// ground truth; the verifiable judge then reports them unscorable, where it scores the others.
#[test]
fn stream_mode_rewrites_records_without_ground_truth_consistently() {
    let catalog = Catalog::generate(7, 40);
    let base = sample("aftersales");
    let declared = base.names();
    assert!(!declared.is_empty());
    let mut cfg = TaskConfig::new(Split::Dev, 11);
    Served::of(&base).apply(&mut cfg);
    let played = rollouts(
        &base,
        declared.clone(),
        &tasks::generate(&catalog, &cfg, 30).unwrap(),
        &catalog,
    );
    let logs: Vec<Trajectory> = played
        .iter()
        .cloned()
        .map(|mut r| {
            r.task.as_mut().unwrap().expected = None;
            r.harness.as_mut().unwrap().names = Names::default();
            r
        })
        .collect();
    let s = spec(all_on(), &[], Pool::Train);
    let aug = Augmenter::new(&base, &s, 9, 16).unwrap();
    let mut renamed_calls = 0;
    for (log, truth) in logs.iter().zip(&played) {
        let copies = aug
            .augment(log, 2)
            .unwrap_or_else(|e| panic!("{}: {e}", log.id));
        let reference = aug.augment(truth, 2).unwrap();
        assert_eq!(copies.len(), reference.len(), "{}", log.id);
        for (c, r) in copies.iter().zip(&reference) {
            let href = c.harness.as_ref().unwrap();
            let v = Variant::draw(&base, &s, href.variant.as_ref().unwrap().seed).unwrap();
            assert_eq!(href.names, compose(&declared, &v.names), "{}", c.id);
            assert_eq!(href, r.harness.as_ref().unwrap(), "{}", c.id);
            assert_eq!((&c.messages, &c.tools), (&r.messages, &r.tools), "{}", c.id);
            assert!(c.task.as_ref().unwrap().expected.is_none());
            for call in c.messages.iter().flat_map(|m| &m.tool_calls) {
                assert!(
                    v.harness.tool(&call.function.name).is_some(),
                    "{}: {} is not a variant tool",
                    c.id,
                    call.function.name
                );
                renamed_calls +=
                    usize::from(href.names.tools.values().any(|n| *n == call.function.name));
            }
            // The judge: the log cannot be scored and says so; its twin with ground truth scores.
            let (mut unscored, mut scored) = (c.clone(), r.clone());
            score(&mut unscored, &TokenCounter::Approximate);
            score(&mut scored, &TokenCounter::Approximate);
            assert_eq!(unscored.scores.accuracy, None);
            assert_eq!(unscored.scores.effectiveness, None);
            assert!(unscored.scores.extra["unscorable"]
                .as_str()
                .unwrap()
                .contains("no task.expected"));
            assert!(scored.scores.effectiveness.is_some());
            assert!(!scored.scores.extra.contains_key("unscorable"));
        }
    }
    assert!(renamed_calls > 10, "{renamed_calls}");
    let scored: Vec<Trajectory> = logs
        .iter()
        .cloned()
        .map(|mut t| {
            score(&mut t, &TokenCounter::Approximate);
            t
        })
        .collect();
    let r = report(&scored, 0.5);
    assert_eq!((r.overall.unscored, r.overall.passed), (30, 0));
}

#[test]
fn stream_mode_is_deterministic_and_keeps_unchanged_records_unchanged() {
    let catalog = Catalog::generate(7, 40);
    let base = sample("taolive");
    let records = rollouts(
        &base,
        Names::default(),
        &dev_tasks(&catalog, 10, None),
        &catalog,
    );
    let s = spec(Config::default(), &[], Pool::Train);
    let a = Augmenter::new(&base, &s, 4, 8).unwrap();
    let b = Augmenter::new(&base, &s, 4, 8).unwrap();
    for r in &records {
        let x = serde_json::to_string(&a.augment(r, 2).unwrap()).unwrap();
        assert_eq!(x, serde_json::to_string(&b.augment(r, 2).unwrap()).unwrap());
    }
    // With every op off, a copy differs from its record only in id and harness ref.
    let none = spec(Config::default(), &["guard_hook"], Pool::Train);
    let mut config = Config::default();
    config.ops.guard_hook.p = 0.0;
    let id = Augmenter::new(&base, &Spec { config, ..none }, 1, 1).unwrap();
    for r in &records {
        let c = &id.augment(r, 1).unwrap()[0];
        assert_eq!(c.messages, r.messages);
        assert_eq!(c.tools, r.tools);
    }
}

#[test]
fn records_that_do_not_fit_the_harness_are_rejected_with_the_reason() {
    let catalog = Catalog::generate(7, 40);
    let base = sample("taolive");
    let records = rollouts(
        &base,
        Names::default(),
        &dev_tasks(&catalog, 20, Some("product_qa=1")),
        &catalog,
    );
    let aug = Augmenter::new(&base, &spec(Config::default(), &[], Pool::Train), 1, 4).unwrap();
    let mut r = records
        .iter()
        .find(|r| r.messages.iter().any(|m| !m.tool_calls.is_empty()))
        .unwrap()
        .clone();
    let call = r
        .messages
        .iter_mut()
        .find(|m| !m.tool_calls.is_empty())
        .unwrap();
    call.tool_calls[0].function.name = "no_such_tool".into();
    let e = aug.augment(&r, 1).unwrap_err();
    assert!(e.0.contains("no_such_tool"), "{e}");

    let mut r = records[0].clone();
    r.messages[0] = hat::record::Message::text(Role::System, "You are a helpful assistant.");
    let e = aug.augment(&r, 1).unwrap_err();
    assert!(e.0.contains("not rendered by harness taolive"), "{e}");

    let other = sample("aftersales");
    let aug = Augmenter::new(&other, &spec(Config::default(), &[], Pool::Train), 1, 4).unwrap();
    let e = aug.augment(&records[0], 1).unwrap_err();
    assert!(e.0.contains("taolive"), "{e}");
}

#[test]
fn cli_writes_valid_variant_dirs_and_rewrites_a_stream() {
    let exe = env!("CARGO_BIN_EXE_hsa-augment");
    let dir = tempfile::tempdir().unwrap();
    let taolive = root().join("harness-samples/taolive");
    let out = dir.path().join("variants");
    let status = std::process::Command::new(exe)
        .args([
            "--harness",
            taolive.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--n",
            "3",
            "--seed",
            "5",
            "--pool",
            "eval",
        ])
        .status()
        .unwrap();
    assert!(status.success());
    for i in 0..3 {
        let d = out.join(format!("variant-{i:03}"));
        assert!(hat::harness::check_dir(&d).is_empty(), "{}", d.display());
        let manifest: Value =
            serde_json::from_str(&std::fs::read_to_string(d.join(".hsa-manifest.json")).unwrap())
                .unwrap();
        assert_eq!(manifest["pool"], "eval");
        assert_eq!(manifest["hash"], Harness::load(&d).unwrap().hash());
    }
    assert_eq!(
        std::fs::read_to_string(out.join("variants.jsonl"))
            .unwrap()
            .lines()
            .count(),
        3
    );

    // Stream mode: one good record, one calling a tool the harness lacks (rejected with the reason).
    let catalog = Catalog::generate(7, 40);
    let base = sample("taolive");
    let records = rollouts(
        &base,
        Names::default(),
        &dev_tasks(&catalog, 6, Some("product_qa=1")),
        &catalog,
    );
    let good = records
        .iter()
        .find(|r| r.messages.iter().any(|m| !m.tool_calls.is_empty()))
        .unwrap();
    let mut bad = good.clone();
    bad.id = "bad".into();
    bad.messages
        .iter_mut()
        .find(|m| !m.tool_calls.is_empty())
        .unwrap()
        .tool_calls[0]
        .function
        .name = "ghost_tool".into();
    let input = dir.path().join("in.jsonl");
    std::fs::write(
        &input,
        format!(
            "{}\n{}\n",
            serde_json::to_string(good).unwrap(),
            serde_json::to_string(&bad).unwrap()
        ),
    )
    .unwrap();
    let output = dir.path().join("out.jsonl");
    let rejects = dir.path().join("rejects.jsonl");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "--harness",
            taolive.to_str().unwrap(),
            "-i",
            input.to_str().unwrap(),
            "-o",
            output.to_str().unwrap(),
            "--n",
            "2",
            "--seed",
            "3",
        ];
        args.extend_from_slice(extra);
        std::process::Command::new(exe)
            .args(&args)
            .output()
            .unwrap()
    };
    let failed = run(&[]);
    assert!(!failed.status.success());
    assert!(String::from_utf8_lossy(&failed.stderr).contains("ghost_tool"));
    let ok = run(&["--on-error", "skip", "--rejects", rejects.to_str().unwrap()]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let first = std::fs::read_to_string(&output).unwrap();
    let ids: Vec<String> = first
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        ids,
        [format!("{}#hsa0", good.id), format!("{}#hsa1", good.id)]
    );
    let reasons = std::fs::read_to_string(dir.path().join("rejects.jsonl.reasons.jsonl")).unwrap();
    assert!(reasons.contains("ghost_tool"), "{reasons}");
    // Same seed, same bytes.
    std::fs::remove_file(&output).unwrap();
    std::fs::remove_file(&rejects).ok();
    std::fs::remove_file(dir.path().join("rejects.jsonl.reasons.jsonl")).ok();
    assert!(
        run(&["--on-error", "skip", "--rejects", rejects.to_str().unwrap()])
            .status
            .success()
    );
    assert_eq!(std::fs::read_to_string(&output).unwrap(), first);
}

/// A minimal OpenAI-compatible endpoint on a local port, standing in for an LLM paraphraser (none
/// can run in tests): it answers each chat completion with the user text's clauses in reverse
/// order, except that every third request "forgets" the numbers, which the paraphraser must catch.
fn reversing_endpoint() -> (String, std::thread::JoinHandle<usize>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        listener.set_nonblocking(false).unwrap();
        let mut served = 0;
        // The test ends the server by sending a request with the body "quit".
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut len = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
                if line == "\r\n" || line.is_empty() {
                    break;
                }
            }
            let mut body = vec![0; len];
            reader.read_exact(&mut body).unwrap();
            if body == b"quit" {
                return served;
            }
            served += 1;
            let req: Value = serde_json::from_slice(&body).unwrap();
            let text = req["messages"][1]["content"].as_str().unwrap().to_string();
            let mut clauses: Vec<&str> = text.split(['，', ',']).collect();
            clauses.reverse();
            let mut reply = clauses.join("，");
            if served % 3 == 0 {
                reply.retain(|c| !c.is_ascii_digit());
            }
            let out = serde_json::json!({"choices": [{"message": {"role": "assistant", "content": reply}}]})
                .to_string();
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{out}",
                out.len()
            )
            .unwrap();
        }
        served
    });
    (url, handle)
}

fn stop_endpoint(url: &str) {
    let addr = url.trim_start_matches("http://").trim_end_matches("/v1");
    let _ = ureq::post(&format!("http://{addr}/quit")).send_string("quit");
}

#[test]
fn endpoint_paraphrases_are_validated_cached_and_replayable_offline() {
    use hat::hsa::paraphraser::Endpoint;
    use hat::hsa::Paraphraser;
    use hat::policy::openai::OpenAiConfig;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    let base = sample("taolive");
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache.jsonl");
    let ops = [
        "rewrite_tool_description",
        "rewrite_param_descriptions",
        "paraphrase_rules",
    ];
    let draw = |url: &str| {
        let mut cfg = OpenAiConfig::new(url, "test-paraphraser");
        cfg.retries = 0;
        cfg.timeout = std::time::Duration::from_secs(5);
        let endpoint = Arc::new(Endpoint::new(cfg, Some(cache.clone())).unwrap());
        let mut s = spec(all_on(), &ops, Pool::Train);
        s.paraphraser = Paraphraser::Endpoint(endpoint.clone());
        let v = Variant::draw(&base, &s, 5).unwrap();
        (v, endpoint)
    };

    let (url, server) = reversing_endpoint();
    let (online, endpoint) = draw(&url);
    stop_endpoint(&url);
    let served = server.join().unwrap();
    assert!(served > 3, "the endpoint was used ({served} requests)");
    assert_eq!(endpoint.calls.load(Ordering::Relaxed) as usize, served);
    assert!(
        endpoint.fallbacks.load(Ordering::Relaxed) > 0,
        "replies that lost their numbers fell back to the banks"
    );
    assert!(online.harness.validate().is_empty());
    // Some description now reads as the endpoint's clause reversal of the original.
    let reversed = base
        .tools()
        .iter()
        .zip(online.harness.tools())
        .any(|(a, b)| {
            let mut clauses: Vec<&str> = a.description.split(['，', ',']).collect();
            clauses.len() > 1 && {
                clauses.reverse();
                b.description.contains(&clauses.join("，"))
            }
        });
    assert!(reversed, "an endpoint rewrite made it into the variant");

    // The endpoint is gone: the same seed replays from the cache, byte for byte.
    let (offline, endpoint) = draw("http://127.0.0.1:9/v1");
    assert_eq!(
        endpoint.calls.load(Ordering::Relaxed),
        0,
        "every verdict was cached"
    );
    assert!(endpoint.hits.load(Ordering::Relaxed) as usize >= served);
    assert_eq!(render(&online.harness), render(&offline.harness));
    assert_eq!(online.harness.hash(), offline.harness.hash());
}

/// Whole-stream consistency: a stream of noisy-teacher rollouts (hook feedback, runtime notes, refused
/// calls, tool faults) rewritten under a pool of 20 variants drawn with every op in the mix. In every
/// copy, no renamed base identifier (tool, skill, argument key) survives where the variant renamed it —
/// system prompt, tools, call names and arguments, tool errors, skill bodies, assistant text, feedback,
/// runtime notes — every call that was valid under the base schema is valid under the variant's, and
/// the turn fits the variant's round limit. 1,000 records × 2 copies take about 3 s in a debug build.
#[test]
fn whole_stream_rewrites_leave_no_renamed_base_name_behind() {
    use hat::hsa::text::idents;
    use hat::hsa::variant::variant_seed;
    use hat::policy::noise::{NoiseRates, Noisy};

    let catalog = Catalog::generate(7, 60);
    let base = sample("taolive");
    let mut cfg = TaskConfig::new(Split::Train, 21);
    cfg.viewers_per_room = 8;
    let tasks = tasks::generate(&catalog, &cfg, 1000).unwrap();
    let noise = NoiseRates {
        long_reply: 0.1,
        forbidden_term: 0.08,
        ungrounded_price: 0.08,
        over_quantity: 0.5,
        malformed_args: 0.15,
        wrong_tool: 0.08,
        ..NoiseRates::NONE
    };
    let agent = Agent::new(&base, Names::default()).unwrap();
    let teacher: Box<dyn Policy> = Box::new(Noisy::new(
        Box::new(Oracle::new(&base, Names::default())),
        &base,
        Names::default(),
        noise,
        5,
    ));
    let plan: FaultPlan = "timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03"
        .parse()
        .unwrap();
    let env = SimEnv {
        catalog: &catalog,
        faults: &plan,
        seed: 5,
    };
    let records: Vec<Trajectory> = tasks
        .par_iter()
        .map(|t| agent.run(teacher.as_ref(), t, &env).unwrap())
        .collect();
    let notes = records
        .iter()
        .flat_map(|r| &r.messages)
        .filter(|m| m.text_content().starts_with("[tool-call error]"))
        .count();
    assert!(notes > 0, "the stream has runtime notes");

    // Every op on in some variants and off in others; renames touch most names.
    let mut config = ops_at(0.7);
    config.ops.rename_tool.share = 0.8;
    config.ops.rename_skill.share = 0.8;
    config.ops.rename_params.share = 0.8;
    let s = spec(config, &[], Pool::Train);
    let aug = Augmenter::new(&base, &s, 13, 20).unwrap();
    let variants: HashMap<u64, Variant> = (0..20)
        .map(|i| {
            let seed = variant_seed(13, i);
            (seed, Variant::draw(&base, &s, seed).unwrap())
        })
        .collect();
    let mut ops_seen = BTreeSet::new();
    let (mut copies, mut rejected, mut renamed_args, mut feedback_checked) = (0, 0, 0, 0);
    for r in &records {
        let Ok(out) = aug.augment(r, 2) else {
            rejected += 1;
            continue;
        };
        for c in &out {
            copies += 1;
            let v = &variants[&c.harness.as_ref().unwrap().variant.as_ref().unwrap().seed];
            ops_seen.extend(v.ops.iter().map(|o| o["op"].as_str().unwrap().to_string()));
            let names: BTreeSet<&str> = v
                .names
                .tools
                .keys()
                .chain(v.names.skills.keys())
                .map(String::as_str)
                .collect();
            let keys: BTreeSet<&str> = v
                .names
                .params
                .values()
                .flat_map(|m| m.keys())
                .map(String::as_str)
                .collect();
            let stale = |text: &str, with_keys: bool| -> Option<String> {
                idents(text)
                    .find(|i| names.contains(i) || (with_keys && keys.contains(i)))
                    .map(str::to_string)
            };
            let check = |what: &str, text: &str, with_keys: bool| {
                if let Some(old) = stale(text, with_keys) {
                    panic!("{}: {what} still says {old:?}: {text}", c.id);
                }
            };
            check("system prompt", &c.messages[0].text_content(), true);
            check("tools", &serde_json::to_string(&c.tools).unwrap(), true);
            let start = c.meta["turn_start"].as_u64().unwrap() as usize;
            let bodies: BTreeSet<String> = v
                .harness
                .skills()
                .iter()
                .map(|s| s.body.trim().to_string())
                .collect();
            for (i, m) in c.messages.iter().enumerate().skip(1) {
                let text = m.text_content();
                match m.role {
                    Role::Assistant => {
                        check("assistant text", &text, true);
                        for call in &m.tool_calls {
                            check("call name", &call.function.name, false);
                            let orig = r.messages[i]
                                .tool_calls
                                .iter()
                                .find(|o| o.id == call.id)
                                .unwrap();
                            let Ok(args) = call.function.parsed_arguments() else {
                                continue;
                            };
                            for k in args.keys() {
                                check("argument key", k, true);
                            }
                            renamed_args += usize::from(args.keys().any(|k| {
                                v.names.params.values().any(|m| m.values().any(|n| n == k))
                            }));
                            let (Some(bt), Some(vt)) = (
                                base.tool(&orig.function.name),
                                v.harness.tool(&call.function.name),
                            ) else {
                                continue;
                            };
                            let valid = |schema: &Value, a: &str| {
                                serde_json::from_str::<Value>(a)
                                    .is_ok_and(|a| schema_errors(schema, &a).is_empty())
                            };
                            assert_eq!(
                                valid(&bt.input_schema, &orig.function.arguments),
                                valid(&vt.input_schema, &call.function.arguments),
                                "{}: {} {}",
                                c.id,
                                call.function.name,
                                call.function.arguments
                            );
                        }
                    }
                    Role::Tool
                        if text.starts_with("{\"error\"") || bodies.contains(text.trim()) =>
                    {
                        check("tool error or skill body", &text, true)
                    }
                    Role::Tool => check("tool result", &text, false),
                    Role::User | Role::System if i >= start => {
                        feedback_checked += 1;
                        check("feedback or runtime note", &text, true);
                    }
                    _ => {}
                }
            }
            let rounds = c.messages[start..]
                .iter()
                .filter(|m| m.role == Role::Assistant)
                .count() as u64;
            assert!(
                rounds <= v.harness.limits().max_rounds,
                "{}: {rounds} rounds",
                c.id
            );
        }
    }
    eprintln!("{copies} copies of {} records ({rejected} rejected), {renamed_args} calls with renamed keys, {feedback_checked} feedback/notes", records.len());
    let all: BTreeSet<String> = OPS.iter().map(|o| o.name.to_string()).collect();
    assert_eq!(ops_seen, all, "every op is in the mix");
    assert!(copies >= records.len(), "{copies}");
    assert!(
        rejected * 20 <= records.len(),
        "{rejected} records rejected"
    );
    assert!(
        renamed_args > 100 && feedback_checked > 50,
        "{renamed_args} {feedback_checked}"
    );
}
