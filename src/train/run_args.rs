//! The flags the on-policy trainers (`opd`, `grpo-train`) share — where the run goes, how long, the
//! optimizer schedule, checkpoints and resuming — defined once so the two stay alike, and how `--out`
//! is prepared from them.

use std::path::PathBuf;

use anyhow::Result;

use super::checkpoint;

#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// Output directory: checkpoints, metrics.jsonl, plots.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    #[arg(long, default_value_t = 50)]
    pub max_steps: usize,
    /// Peak learning rate (cosine schedule after the warm-up).
    #[arg(long, default_value_t = 1e-4)]
    pub learning_rate: f64,
    #[arg(long, default_value_t = 0)]
    pub warmup_steps: usize,
    #[arg(long, default_value_t = 1.0)]
    pub max_grad_norm: f64,
    /// Tokens a micro-batch computes at most; a step's micro-batches accumulate into one optimizer step.
    #[arg(long, default_value_t = 8192)]
    pub batch_tokens: usize,
    /// A checkpoint every N steps (and after the last).
    #[arg(long, default_value_t = 10)]
    pub save_steps: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Continue from the newest checkpoint in --out.
    #[arg(long)]
    pub resume: bool,
    /// Delete the checkpoints in --out first.
    #[arg(long)]
    pub overwrite_output_dir: bool,
}

impl RunArgs {
    /// Clears `--out`'s checkpoints with `--overwrite-output-dir`; otherwise refuses an `--out` that
    /// has some unless `--resume` continues from them.
    pub fn prepare_out(&self) -> Result<()> {
        if self.overwrite_output_dir {
            checkpoint::remove_all(&self.out)?;
        } else if !self.resume {
            checkpoint::ensure_none(&self.out)?;
        }
        Ok(())
    }
}
