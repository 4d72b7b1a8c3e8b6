//! Training checkpoints: a Hugging Face model directory (config, weights, tokenizer files) plus the
//! trainer state, written atomically and verified on load.
//!
//! ```text
//! checkpoint-000120/
//!   config.json model.safetensors        model::io::checkpoint::save (loads in transformers)
//!   tokenizer.json tokenizer_config.json copied from the tokenizer directory
//!   optimizer.safetensors                AdamW moments, `exp_avg.{i}` / `exp_avg_sq.{i}` by parameter index
//!   trainer_state.json                   step, sampler cursor, seed, optimizer step, metrics file length
//!   manifest.json                        sha256 of every other file
//! ```
//! A checkpoint is written into `.checkpoint-….tmp` and renamed into place, so a crash leaves either
//! the previous checkpoint or the new one, never half of one. Loading recomputes the manifest's hashes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use burn::prelude::*;
use safetensors::tensor::{Dtype, TensorView};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::batch::Cursor;
use super::optim::{AdamW, NonFiniteGradient};
use crate::model::host::floats;
use crate::model::io::checkpoint::{save as save_model, SaveOptions};
use crate::model::CausalLm;

pub const MANIFEST: &str = "manifest.json";
pub const STATE: &str = "trainer_state.json";
pub const OPTIMIZER: &str = "optimizer.safetensors";
/// Tokenizer files copied next to the weights so the directory is a complete HF model.
pub const TOKENIZER_FILES: [&str; 2] = ["tokenizer.json", "tokenizer_config.json"];

/// Everything besides weights and moments that a resumed run needs to continue exactly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainerState {
    /// Optimizer steps completed.
    pub step: usize,
    pub cursor: Cursor,
    pub seed: u64,
    /// Lines of `metrics.jsonl` written up to this step (a resumed run truncates the file there).
    pub metrics_lines: usize,
    /// Training tokens seen so far.
    pub tokens: u64,
}

/// Writes `dir` atomically: everything goes into a temporary sibling which is renamed at the end.
pub fn save<B: Backend, O: Backend>(
    dir: &Path,
    model: &CausalLm<B>,
    tokenizer_dir: &Path,
    opt: &AdamW<O>,
    state: &TrainerState,
) -> Result<()> {
    write_atomically(dir, |tmp| {
        write_model(tmp, model, tokenizer_dir)?;
        save_optimizer(&tmp.join(OPTIMIZER), opt)?;
        std::fs::write(tmp.join(STATE), serde_json::to_string_pretty(state)? + "\n")?;
        write_manifest(tmp)
    })
}

/// Writes `model` to `dir` atomically as a Hugging Face model directory (weights, config, tokenizer
/// files), without a trainer's state: what an inference server loads.
pub fn save_weights<B: Backend>(
    dir: &Path,
    model: &CausalLm<B>,
    tokenizer_dir: &Path,
) -> Result<()> {
    write_atomically(dir, |tmp| write_model(tmp, model, tokenizer_dir))
}

fn write_model<B: Backend>(dir: &Path, model: &CausalLm<B>, tokenizer_dir: &Path) -> Result<()> {
    save_model(model, dir, SaveOptions::default())?;
    for f in TOKENIZER_FILES {
        let from = tokenizer_dir.join(f);
        std::fs::copy(&from, dir.join(f)).with_context(|| format!("copying {}", from.display()))?;
    }
    Ok(())
}

/// Runs `write` on a temporary sibling of `dir`, then renames it to `dir` (replacing what was there).
fn write_atomically(dir: &Path, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    let parent = dir.parent().unwrap_or(Path::new("."));
    let name = dir
        .file_name()
        .ok_or_else(|| anyhow!("checkpoint path {} has no name", dir.display()))?
        .to_string_lossy();
    let tmp = parent.join(format!(".{name}.tmp"));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp)
            .with_context(|| format!("removing stale {}", tmp.display()))?;
    }
    write(&tmp)?;
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("replacing {}", dir.display()))?;
    }
    std::fs::rename(&tmp, dir)
        .with_context(|| format!("renaming {} to {}", tmp.display(), dir.display()))
}

fn sha256_file(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(format!("{:x}", Sha256::digest(&bytes)))
}

fn write_manifest(dir: &Path) -> Result<()> {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name().to_string_lossy().to_string();
        if name != MANIFEST {
            files.insert(name.clone(), sha256_file(&dir.join(&name))?);
        }
    }
    let text = serde_json::to_string_pretty(&serde_json::json!({ "sha256": files }))? + "\n";
    std::fs::write(dir.join(MANIFEST), text).context("writing manifest.json")
}

/// Recomputes every hash in `dir/manifest.json`; any missing or changed file is an error naming it.
pub fn verify(dir: &Path) -> Result<()> {
    let path = dir.join(MANIFEST);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "{} is not a training checkpoint (no {MANIFEST})",
            dir.display()
        )
    })?;
    let manifest: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let files = manifest["sha256"]
        .as_object()
        .ok_or_else(|| anyhow!("{}: no `sha256` map", path.display()))?;
    for (name, want) in files {
        let file = dir.join(name);
        if !file.exists() {
            bail!(
                "checkpoint {} is corrupted: {name} is missing",
                dir.display()
            );
        }
        let got = sha256_file(&file)?;
        if Some(got.as_str()) != want.as_str() {
            bail!(
                "checkpoint {} is corrupted: {name} has sha256 {got}, the manifest says {want}",
                dir.display()
            );
        }
    }
    Ok(())
}

/// The newest complete checkpoint under `out` (`checkpoint-NNNNNN`), if any.
pub fn latest(out: &Path) -> Result<Option<PathBuf>> {
    Ok(entries(out)?
        .into_iter()
        .filter_map(|(path, name)| Some((step_of(&name)?, path)))
        .max_by_key(|(step, _)| *step)
        .map(|(_, path)| path))
}

/// The step of a complete checkpoint's directory name (`checkpoint-NNNNNN`, see [`dir_name`]).
fn step_of(name: &str) -> Option<usize> {
    name.strip_prefix("checkpoint-")?.parse().ok()
}

/// The paths and names of what `out` holds (nothing when it does not exist).
fn entries(out: &Path) -> Result<Vec<(PathBuf, String)>> {
    if !out.exists() {
        return Ok(Vec::new());
    }
    let listing = std::fs::read_dir(out).with_context(|| format!("listing {}", out.display()))?;
    let mut found = Vec::new();
    for entry in listing {
        let path = entry?.path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        found.extend(name.map(|name| (path, name)));
    }
    Ok(found)
}

/// `err` as the trainers report it: a [`NonFiniteGradient`] at `step` stops the run, and the message says
/// which step and from which checkpoint to go on (a lower learning rate, other data); any other error
/// unchanged.
pub fn halted(err: anyhow::Error, out: &Path, step: usize) -> anyhow::Error {
    if err.downcast_ref::<NonFiniteGradient>().is_none() {
        return err;
    }
    let from = match latest(out) {
        Ok(Some(dir)) => format!(
            "the last good checkpoint is {} (--resume continues from it; \
             try a lower --learning-rate or look at the step's data)",
            dir.display()
        ),
        Ok(None) => format!(
            "{} holds no checkpoint yet: the run has to start again (lower --learning-rate, or \
             --save-steps to keep more checkpoints)",
            out.display()
        ),
        Err(listing) => format!("its checkpoints could not be listed either ({listing:#})"),
    };
    err.context(format!("step {step} stopped the run: {from}"))
}

/// Fails when `out` holds checkpoints: a fresh run next to an earlier run's checkpoints would leave
/// them to be taken for its own, by a later `--resume` or by anything that picks the newest one.
pub fn ensure_none(out: &Path) -> Result<()> {
    if let Some(old) = latest(out)? {
        bail!(
            "{} already holds checkpoints of an earlier run (newest: {}): pass --resume to continue \
             that run, --overwrite-output-dir to delete its checkpoints first, or another --out",
            out.display(),
            old.display()
        );
    }
    Ok(())
}

/// Deletes every checkpoint under `out`, complete (`checkpoint-NNNNNN`) or left half-written by a
/// crash (`.checkpoint-….tmp`); other files stay. Returns how many were deleted.
pub fn remove_all(out: &Path) -> Result<usize> {
    let mut removed = 0;
    for (path, name) in entries(out)? {
        // `save` writes checkpoint `c` into `.c.tmp` first.
        let half_written = name.strip_prefix('.').and_then(|n| n.strip_suffix(".tmp"));
        let is_checkpoint = step_of(&name).or_else(|| step_of(half_written?)).is_some();
        if is_checkpoint && path.is_dir() {
            std::fs::remove_dir_all(&path)
                .with_context(|| format!("deleting {}", path.display()))?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// The directory name of the checkpoint after `step` optimizer steps.
pub fn dir_name(step: usize) -> String {
    format!("checkpoint-{step:06}")
}

/// A run's checkpoint schedule, shared by the on-policy trainers (`opd`, `grpo-train`): one every
/// `save_steps` steps before the last, and the last one. Each records the `metrics.jsonl` lines written
/// so far, so that `--resume` truncates the file where the checkpoint stands.
pub struct Schedule<'a> {
    pub out: &'a Path,
    pub tokenizer_dir: &'a Path,
    pub save_steps: usize,
    pub max_steps: usize,
}

impl Schedule<'_> {
    /// Saves after `state.step` when the schedule says so (never after the last step: [`Self::last`]).
    pub fn after_step<B: Backend, O: Backend>(
        &self,
        model: &CausalLm<B>,
        opt: &AdamW<O>,
        state: &mut TrainerState,
        log: &super::metrics::Log,
    ) -> Result<()> {
        if state.step < self.max_steps && self.save_steps > 0 && state.step % self.save_steps == 0 {
            state.metrics_lines = log.lines();
            save(
                &self.out.join(dir_name(state.step)),
                model,
                self.tokenizer_dir,
                opt,
                state,
            )?;
        }
        Ok(())
    }

    /// The checkpoint of the step the run stopped at (written unless it exists: a run stopped right
    /// after a scheduled save, or resumed at its end); returns its path.
    pub fn last<B: Backend, O: Backend>(
        &self,
        model: &CausalLm<B>,
        opt: &AdamW<O>,
        state: &mut TrainerState,
        log: &super::metrics::Log,
    ) -> Result<PathBuf> {
        state.metrics_lines = log.lines();
        let ckpt = self.out.join(dir_name(state.step));
        if !ckpt.exists() {
            save(&ckpt, model, self.tokenizer_dir, opt, state)?;
        }
        Ok(ckpt)
    }
}

/// With `resume`, the newest checkpoint in `out` (model, optimizer state into `opt`, trainer state);
/// otherwise, or when `out` has none, `model` at step 0 with `seed`. Shared by every trainer so that
/// all resume the same way.
pub fn resume_or_start<B: burn::tensor::backend::AutodiffBackend>(
    out: &Path,
    resume: bool,
    model: CausalLm<B>,
    opt: &mut AdamW<B::InnerBackend>,
    seed: u64,
    device: &B::Device,
) -> Result<(CausalLm<B>, TrainerState)> {
    match resume.then(|| latest(out)).transpose()?.flatten() {
        Some(dir) => {
            let (m, s) = load::<B, B::InnerBackend>(&dir, opt, device)?;
            opt.check_shapes::<B, _>(&m)?;
            eprintln!("resuming from {} (step {})", dir.display(), s.step);
            Ok((m, s))
        }
        None => Ok((
            model,
            TrainerState {
                step: 0,
                cursor: Cursor::default(),
                seed,
                metrics_lines: 0,
                tokens: 0,
            },
        )),
    }
}

/// Loads a verified checkpoint: model, optimizer state and trainer state.
pub fn load<B: Backend, O: Backend<Device = B::Device>>(
    dir: &Path,
    opt: &mut AdamW<O>,
    device: &B::Device,
) -> Result<(CausalLm<B>, TrainerState)> {
    verify(dir)?;
    let model = CausalLm::load(dir, device)?;
    let state: TrainerState = serde_json::from_str(&std::fs::read_to_string(dir.join(STATE))?)
        .with_context(|| format!("parsing {}", dir.join(STATE).display()))?;
    load_optimizer(&dir.join(OPTIMIZER), opt, device)?;
    Ok((model, state))
}

fn save_optimizer<B: Backend>(path: &Path, opt: &AdamW<B>) -> Result<()> {
    let mut tensors: Vec<(String, Vec<usize>, Vec<u8>)> = Vec::new();
    for (prefix, list) in [("exp_avg", &opt.exp_avg), ("exp_avg_sq", &opt.exp_avg_sq)] {
        for (i, t) in list.iter().enumerate() {
            if let Some(t) = t {
                let values = t
                    .to_data()
                    .convert::<f32>()
                    .into_vec::<f32>()
                    .map_err(|e| anyhow!("{e:?}"))?;
                let bytes = values.iter().flat_map(|x| x.to_le_bytes()).collect();
                tensors.push((format!("{prefix}.{i}"), vec![values.len()], bytes));
            }
        }
    }
    let views = tensors
        .iter()
        .map(|(n, s, b)| {
            Ok((
                n.clone(),
                TensorView::new(Dtype::F32, s.clone(), b).map_err(|e| anyhow!("{n}: {e:?}"))?,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut meta = std::collections::HashMap::new();
    meta.insert("step".to_string(), opt.step.to_string());
    safetensors::serialize_to_file(views, &Some(meta), path)
        .map_err(|e| anyhow!("writing {}: {e:?}", path.display()))
}

fn load_optimizer<B: Backend>(path: &Path, opt: &mut AdamW<B>, device: &B::Device) -> Result<()> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes)
        .map_err(|e| anyhow!("{}: {e:?}", path.display()))?;
    opt.step = meta
        .metadata()
        .as_ref()
        .and_then(|m| m.get("step"))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow!("{}: no optimizer step in the metadata", path.display()))?;
    let st = safetensors::SafeTensors::deserialize(&bytes)
        .map_err(|e| anyhow!("{}: {e:?}", path.display()))?;
    opt.exp_avg.clear();
    opt.exp_avg_sq.clear();
    for (name, view) in st.tensors() {
        let (prefix, index) = name
            .rsplit_once('.')
            .and_then(|(p, i)| Some((p, i.parse::<usize>().ok()?)))
            .ok_or_else(|| anyhow!("{}: unexpected tensor {name}", path.display()))?;
        let list = match prefix {
            "exp_avg" => &mut opt.exp_avg,
            "exp_avg_sq" => &mut opt.exp_avg_sq,
            _ => bail!("{}: unexpected tensor {name}", path.display()),
        };
        let values: Vec<f32> = view
            .data()
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if list.len() <= index {
            list.resize(index + 1, None);
        }
        let n = values.len();
        list[index] = Some(floats(values, [n], device));
    }
    Ok(())
}
