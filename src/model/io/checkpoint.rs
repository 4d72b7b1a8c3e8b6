//! Hugging Face checkpoint directories: `config.json` plus one `model.safetensors` or shards
//! listed in `model.safetensors.index.json`. Loading accepts f32/bf16/f16, the `model.` and
//! `model.language_model.` prefixes, and fused (`experts.gate_up_proj` `[E, 2I, H]`,
//! `experts.down_proj` `[E, H, I]`) or per-expert (`experts.{e}.{gate,up,down}_proj.weight`)
//! layouts. Writing produces a directory transformers loads (`from_pretrained`).

use super::weights::{to_hf, HfLayout, HfVisitor, Init, StoredAs, WeightSource};
use crate::model::config::ModelConfig;
use crate::model::{CausalLm, WeightDtype};
use anyhow::{anyhow, bail, Context, Result};
use burn::module::Param;
use burn::prelude::*;
use safetensors::tensor::{Dtype, Metadata, TensorView};
use safetensors::SafeTensors;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

struct ShardFile {
    path: PathBuf,
    bytes: Vec<u8>,
    header_len: usize,
    meta: Metadata,
}

/// The tensors of a checkpoint directory, readable by name.
pub struct Checkpoint {
    dir: PathBuf,
    files: Vec<ShardFile>,
    /// tensor name → file index
    index: HashMap<String, usize>,
}

impl Checkpoint {
    pub fn open(dir: &Path) -> Result<Self> {
        let index_path = dir.join("model.safetensors.index.json");
        let paths: Vec<PathBuf> = if index_path.exists() {
            let text = std::fs::read_to_string(&index_path)
                .with_context(|| format!("reading {}", index_path.display()))?;
            let v: serde_json::Value = serde_json::from_str(&text)
                .with_context(|| format!("parsing {}", index_path.display()))?;
            let map = v
                .get("weight_map")
                .and_then(|m| m.as_object())
                .ok_or_else(|| anyhow!("{}: no `weight_map` object", index_path.display()))?;
            let mut names: Vec<String> = map
                .values()
                .filter_map(|f| f.as_str().map(str::to_string))
                .collect();
            names.sort();
            names.dedup();
            names.into_iter().map(|n| dir.join(n)).collect()
        } else {
            let mut p: Vec<PathBuf> = std::fs::read_dir(dir)
                .with_context(|| format!("listing {}", dir.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "safetensors"))
                .collect();
            p.sort();
            p
        };
        if paths.is_empty() {
            bail!("no *.safetensors files in {}", dir.display());
        }
        let shards = paths
            .into_iter()
            .map(|path| {
                let bytes =
                    std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
                Ok((path, bytes))
            })
            .collect::<Result<_>>()?;
        Self::from_shards(dir, shards)
    }

    /// The checkpoint in `dir` made of these safetensors files (path and contents, in order).
    pub fn from_shards(dir: &Path, shards: Vec<(PathBuf, Vec<u8>)>) -> Result<Self> {
        let mut files = Vec::new();
        let mut index = HashMap::new();
        for (path, bytes) in shards {
            let (header_len, meta) = SafeTensors::read_metadata(&bytes)
                .map_err(|e| anyhow!("{}: invalid safetensors: {e:?}", path.display()))?;
            for name in meta.tensors().keys() {
                index.insert(name.clone(), files.len());
            }
            files.push(ShardFile {
                path,
                bytes,
                header_len,
                meta,
            });
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            files,
            index,
        })
    }

    /// All tensor names.
    pub fn names(&self) -> impl Iterator<Item = &String> {
        self.index.keys()
    }

    /// The stored name for a canonical (`model.`-prefixed) name, trying the VLM prefix too.
    fn resolve(&self, name: &str) -> Option<String> {
        if self.index.contains_key(name) {
            return Some(name.to_string());
        }
        let alt = format!("model.language_model.{}", name.strip_prefix("model.")?);
        self.index.contains_key(&alt).then_some(alt)
    }

    /// Reads a stored tensor as f32, with its shape.
    pub fn read(&self, stored: &str) -> Result<(Vec<usize>, Vec<f32>)> {
        let f = &self.files[*self
            .index
            .get(stored)
            .ok_or_else(|| anyhow!("tensor {stored} not found in {}", self.dir.display()))?];
        let info = f
            .meta
            .info(stored)
            .ok_or_else(|| anyhow!("tensor {stored} missing from {}", f.path.display()))?;
        let (start, end) = info.data_offsets;
        let data = f
            .bytes
            .get(8 + f.header_len + start..8 + f.header_len + end)
            .ok_or_else(|| {
                anyhow!(
                    "tensor {stored}: data offsets out of range in {}",
                    f.path.display()
                )
            })?;
        let n: usize = info.shape.iter().product();
        let values: Vec<f32> = match info.dtype {
            Dtype::F32 => data
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
            Dtype::BF16 => data
                .chunks_exact(2)
                .map(|c| f32::from_bits((u16::from_le_bytes([c[0], c[1]]) as u32) << 16))
                .collect(),
            Dtype::F16 => data
                .chunks_exact(2)
                .map(|c| f16_to_f32(u16::from_le_bytes([c[0], c[1]])))
                .collect(),
            other => bail!(
                "tensor {stored} in {}: unsupported dtype {other:?} (f32, bf16, f16 supported)",
                f.path.display()
            ),
        };
        if values.len() != n {
            bail!(
                "tensor {stored} in {}: {} values for shape {:?}",
                f.path.display(),
                values.len(),
                info.shape
            );
        }
        Ok((info.shape.clone(), values))
    }

    fn read_checked(&self, name: &str, stored: &str, shape: &[usize]) -> Result<Vec<f32>> {
        let (actual, values) = self.read(stored)?;
        if actual != shape {
            bail!(
                "tensor {stored} in {}: expected shape {shape:?} (for {name}), found {actual:?}",
                self.dir.display()
            );
        }
        Ok(values)
    }

    /// Stacks per-expert tensors into the fused `[E, ...]` layout.
    fn per_expert(
        &self,
        prefix: &str,
        parts: &[&str],
        shape: &[usize],
    ) -> Result<Option<Vec<f32>>> {
        let first = format!("{prefix}.0.{}.weight", parts[0]);
        if self.resolve(&first).is_none() {
            return Ok(None);
        }
        let e = shape[0];
        let rows = shape[1] / parts.len();
        let part_shape = [rows, shape[2]];
        let mut out = Vec::with_capacity(shape.iter().product());
        for x in 0..e {
            for part in parts {
                let name = format!("{prefix}.{x}.{part}.weight");
                let stored = self
                    .resolve(&name)
                    .ok_or_else(|| anyhow!("missing tensor {name} in {}", self.dir.display()))?;
                out.extend(self.read_checked(&name, &stored, &part_shape)?);
            }
        }
        Ok(Some(out))
    }
}

impl WeightSource for Checkpoint {
    fn get(&mut self, name: &str, shape: &[usize], _init: Init) -> Result<Vec<f32>> {
        if let Some(stored) = self.resolve(name) {
            return self.read_checked(name, &stored, shape);
        }
        let fused = if let Some(p) = name.strip_suffix(".gate_up_proj") {
            self.per_expert(p, &["gate_proj", "up_proj"], shape)?
        } else if let Some(p) = name
            .strip_suffix(".down_proj")
            .filter(|p| p.ends_with(".experts"))
        {
            self.per_expert(p, &["down_proj"], shape)?
        } else {
            None
        };
        fused.ok_or_else(|| {
            anyhow!(
                "missing tensor {name} (shape {shape:?}) in {}: tried `{name}`{}",
                self.dir.display(),
                name.strip_prefix("model.")
                    .map(|r| format!(" and `model.language_model.{r}`"))
                    .unwrap_or_default()
            )
        })
    }

    fn contains(&self, name: &str) -> bool {
        self.resolve(name).is_some()
    }
}

/// IEEE half → f32, including subnormals, infinities and NaN.
fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h >> 15) as u32) << 31;
    let exp = ((h >> 10) & 0x1f) as u32;
    let frac = (h & 0x3ff) as u32;
    let bits = match (exp, frac) {
        (0, 0) => sign,
        (0, f) => {
            // Subnormal: value = f * 2^-24.
            let v = f as f32 * (1.0 / 16_777_216.0);
            return if sign != 0 { -v } else { v };
        }
        (0x1f, f) => sign | 0x7f80_0000 | (f << 13),
        (e, f) => sign | ((e + 112) << 23) | (f << 13),
    };
    f32::from_bits(bits)
}

/// Loads `dir` (config + weights) onto `device`, its projections stored as `dtype`.
pub fn load<B: Backend>(dir: &Path, dtype: WeightDtype, device: &B::Device) -> Result<CausalLm<B>> {
    let cfg = ModelConfig::from_dir(dir)?;
    let mut ck = Checkpoint::open(dir)?;
    let mut src = StoredAs {
        src: &mut ck,
        dtype,
    };
    CausalLm::from_source(&cfg, &mut src, device)
        .with_context(|| format!("loading checkpoint {}", dir.display()))
}

/// How routed experts are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpertLayout {
    /// `experts.{e}.{gate,up,down}_proj.weight` (what transformers' `save_pretrained` writes).
    PerExpert,
    /// `experts.gate_up_proj` `[E, 2I, H]` and `experts.down_proj` `[E, H, I]` (official Qwen3.5 files).
    Fused,
}

#[derive(Clone, Copy, Debug)]
pub struct SaveOptions {
    pub expert_layout: ExpertLayout,
    /// Write decoder tensors as `model.language_model.*` (the VLM checkpoint naming).
    pub language_model_prefix: bool,
}

impl Default for SaveOptions {
    fn default() -> Self {
        Self {
            expert_layout: ExpertLayout::PerExpert,
            language_model_prefix: false,
        }
    }
}

/// Collects parameter values as HF-named f32 tensors.
struct Collect(Vec<(String, Vec<usize>, Vec<f32>)>);

impl<B: Backend> HfVisitor<B> for Collect {
    fn visit<const D: usize>(&mut self, name: &str, param: &Param<Tensor<B, D>>, layout: HfLayout) {
        for (n, data) in to_hf(name, param.val(), layout) {
            let shape = data.shape.clone();
            let values = data
                .convert::<f32>()
                .into_vec::<f32>()
                .expect("parameters are float tensors");
            self.0.push((n, shape, values));
        }
    }
}

/// All parameters under HF names (per-expert layout), in visiting order.
pub fn hf_tensors<B: Backend>(model: &CausalLm<B>) -> Vec<(String, Vec<usize>, Vec<f32>)> {
    let mut c = Collect(Vec::new());
    model.visit_hf(&mut c);
    c.0
}

/// Fuses `….experts.{e}.{gate,up,down}_proj.weight` into `gate_up_proj` / `down_proj`.
fn fuse_experts(
    tensors: Vec<(String, Vec<usize>, Vec<f32>)>,
) -> Result<Vec<(String, Vec<usize>, Vec<f32>)>> {
    // prefix → expert → part → (shape, values)
    let mut groups: BTreeMap<String, BTreeMap<usize, HashMap<String, (Vec<usize>, Vec<f32>)>>> =
        BTreeMap::new();
    let mut out = Vec::new();
    for (name, shape, values) in tensors {
        let parsed = name.split_once(".experts.").and_then(|(p, rest)| {
            let (e, part) = rest.split_once('.')?;
            let part = part.strip_suffix(".weight")?;
            Some((p.to_string(), e.parse::<usize>().ok()?, part.to_string()))
        });
        match parsed {
            Some((p, e, part)) => {
                groups
                    .entry(p)
                    .or_default()
                    .entry(e)
                    .or_default()
                    .insert(part, (shape, values));
            }
            None => out.push((name, shape, values)),
        }
    }
    for (prefix, experts) in groups {
        let e = experts.len();
        let mut gate_up = Vec::new();
        let mut down = Vec::new();
        let (mut gu_shape, mut d_shape) = (vec![], vec![]);
        for (x, parts) in experts.into_iter().enumerate() {
            if parts.0 != x {
                bail!("experts under {prefix} are not numbered 0..{e}");
            }
            let get = |k: &str| {
                parts
                    .1
                    .get(k)
                    .ok_or_else(|| anyhow!("expert {x} under {prefix} lacks {k}"))
            };
            let (gs, gv) = get("gate_proj")?;
            let (_, uv) = get("up_proj")?;
            let (ds, dv) = get("down_proj")?;
            gu_shape = vec![e, 2 * gs[0], gs[1]];
            d_shape = vec![e, ds[0], ds[1]];
            gate_up.extend_from_slice(gv);
            gate_up.extend_from_slice(uv);
            down.extend_from_slice(dv);
        }
        out.push((format!("{prefix}.experts.gate_up_proj"), gu_shape, gate_up));
        out.push((format!("{prefix}.experts.down_proj"), d_shape, down));
    }
    Ok(out)
}

/// Writes `config.json` and `model.safetensors` (f32) into `dir` (created if needed).
pub fn save<B: Backend>(model: &CausalLm<B>, dir: &Path, opts: SaveOptions) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut tensors = hf_tensors(model);
    if opts.expert_layout == ExpertLayout::Fused {
        tensors = fuse_experts(tensors)?;
    }
    if opts.language_model_prefix {
        for t in &mut tensors {
            if let Some(rest) = t.0.strip_prefix("model.") {
                t.0 = format!("model.language_model.{rest}");
            }
        }
    }
    let bytes: Vec<(String, Vec<usize>, Vec<u8>)> = tensors
        .into_iter()
        .map(|(n, s, v)| (n, s, v.iter().flat_map(|x| x.to_le_bytes()).collect()))
        .collect();
    let views = bytes
        .iter()
        .map(|(n, s, b)| {
            Ok((
                n.clone(),
                TensorView::new(Dtype::F32, s.clone(), b)
                    .map_err(|e| anyhow!("tensor {n}: {e:?}"))?,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut meta = HashMap::new();
    meta.insert("format".to_string(), "pt".to_string());
    let path = dir.join("model.safetensors");
    safetensors::serialize_to_file(views, &Some(meta), &path)
        .map_err(|e| anyhow!("writing {}: {e:?}", path.display()))?;
    let cfg_path = dir.join("config.json");
    std::fs::write(
        &cfg_path,
        serde_json::to_string_pretty(&model.config.to_hf_json())?,
    )
    .with_context(|| format!("writing {}", cfg_path.display()))?;
    Ok(())
}
