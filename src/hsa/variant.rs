//! One harness variant: a seeded draw of ops applied to a base harness, giving the variant harness,
//! its names map (canonical → surface) and a manifest of what was done.
//!
//! Determinism: the variant depends only on (base files, config, selection, pool, keep set, seed). Each
//! op draws from its own stream `Rng::derive(seed, op)`, so switching one op off leaves the draws of the
//! others unchanged.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde_json::{json, Map, Value};

use super::config::{Config, Pool, Selection};
use super::ops::{Ctx, OPS};
use super::paraphraser::Paraphraser;
use crate::harness::Harness;
use crate::record::{self, Names};
use crate::rng::Rng;

/// The file (hidden, so not part of the harness or its hash) that describes a written variant.
pub const MANIFEST_FILE: &str = ".hsa-manifest.json";

/// How to draw variants.
#[derive(Debug, Clone)]
pub struct Spec {
    pub config: Config,
    pub selection: Selection,
    pub pool: Pool,
    /// Canonical skills no variant may mask.
    pub keep_skills: BTreeSet<String>,
    /// Where paraphrases come from (the offline banks by default).
    pub paraphraser: Paraphraser,
}

#[derive(Debug, Clone)]
pub struct Variant {
    pub seed: u64,
    pub pool: Pool,
    pub harness: Harness,
    /// Base surface → variant surface (what the ops renamed).
    pub names: Names,
    /// Canonical → base surface: the base harness's declaration (`Harness::names`).
    pub base_names: Names,
    /// `{"op", "dim", …params}` per op applied, in order.
    pub ops: Vec<Value>,
    pub base_hash: String,
}

impl Variant {
    /// Draws the variant of `base` for `seed`. The result always validates; a problem means an op is
    /// wrong, and is reported with the ops applied.
    pub fn draw(base: &Harness, spec: &Spec, seed: u64) -> Result<Variant> {
        let mut cx = Ctx::new(base, spec.pool, &spec.keep_skills, spec.paraphraser.clone());
        let mut ops = Vec::new();
        let mut gate = Rng::derive(seed, "hsa-gate");
        for op in OPS {
            // Always draw the gate, so selections do not shift other ops' decisions.
            let on = gate.chance(spec.config.p(op.name));
            if !on || !spec.selection.allows(op.name, op.dim) {
                continue;
            }
            let mut rng = Rng::derive(seed, op.name);
            let params = (op.apply)(&mut cx, &spec.config, &mut rng)
                .with_context(|| format!("op {}", op.name))?;
            if let Some(Value::Object(params)) = params {
                let mut entry = Map::new();
                entry.insert("op".into(), json!(op.name));
                entry.insert("dim".into(), json!(op.dim.as_str()));
                entry.extend(params);
                ops.push(Value::Object(entry));
            }
        }
        let names = cx.names.clone();
        let harness = cx.harness()?.clone();
        let mut problems = harness.validate();
        problems.extend(super::matchers::drift(base, &harness, &names));
        if !problems.is_empty() {
            let list: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
            bail!(
                "variant seed {seed} does not validate after ops {}: {}",
                Value::Array(ops).to_string(),
                list.join("; ")
            );
        }
        Ok(Variant {
            seed,
            pool: spec.pool,
            harness,
            names,
            base_names: base.names(),
            ops,
            base_hash: base.hash(),
        })
    }

    /// Canonical → variant surface: what the runtime, the sandbox and the judges need to read an
    /// episode played under the variant.
    pub fn canonical_names(&self) -> Names {
        super::rewrite::compose(&self.base_names, &self.names)
    }

    /// What a record's `harness.variant` says about this variant.
    pub fn record_variant(&self) -> record::Variant {
        let mut extra = Map::new();
        extra.insert("pool".into(), json!(self.pool.as_str()));
        extra.insert("base_hash".into(), json!(self.base_hash));
        record::Variant {
            seed: self.seed,
            ops: self.ops.clone(),
            extra,
        }
    }

    /// The manifest written beside a variant harness.
    pub fn manifest(&self) -> Value {
        json!({
            "harness": self.harness.name(),
            "version": self.harness.version(),
            "seed": self.seed,
            "pool": self.pool.as_str(),
            "base_hash": self.base_hash,
            "hash": self.harness.hash(),
            "ops": self.ops,
            "names": self.canonical_names(),
        })
    }

    /// Writes the harness into `dir` (absent or empty) with its manifest.
    pub fn write_to(&self, dir: &Path) -> Result<()> {
        self.harness.write_to(dir)?;
        let path = dir.join(MANIFEST_FILE);
        let mut text =
            serde_json::to_string_pretty(&self.manifest()).context("manifest serialises")?;
        text.push('\n');
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
    }
}

/// The harness in `dir` and its canonical → surface names: those of the HSA manifest for a variant
/// directory written by `hsa-augment --out`, else the harness's own `[serves]` declaration.
pub fn load_harness(dir: &Path) -> Result<(Harness, Names)> {
    let harness = Harness::load(dir)?;
    let manifest = dir.join(MANIFEST_FILE);
    if !manifest.exists() {
        let names = harness.names();
        return Ok((harness, names));
    }
    let text = std::fs::read_to_string(&manifest)
        .with_context(|| format!("reading {}", manifest.display()))?;
    let v: Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", manifest.display()))?;
    let names = serde_json::from_value(v["names"].clone())
        .with_context(|| format!("{}: `names`", manifest.display()))?;
    Ok((harness, names))
}

/// The seed of variant `index` of a run seeded with `seed`.
pub fn variant_seed(seed: u64, index: u64) -> u64 {
    Rng::derive(
        seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15),
        "hsa-variant",
    )
    .next_u64()
}
