//! Training: the pieces SFT uses today and OPD/RL reuse.
//!
//! ```text
//! view.rs        record → token ids + loss mask + turn segments (concatenated per turn)
//! data.rs       records file → views, skips counted by reason
//! batch.rs       length bucketing, the epoch-shuffled sampler with its cursor, batch tensors
//! optim.rs       AdamW, global-norm clipping, gradient accumulation, warmup + cosine schedule
//! trainer.rs     the loop: masked CE (+ router aux, + MTP), dev loss, metrics, checkpoints, resume
//!                (on the CPU the CE is one autodiff op with its own backward pass: model::train_ops::nll)
//! checkpoint.rs  HF directory + optimizer + trainer state, atomic, checksummed; a run's save schedule
//! run_args.rs    the flags `opd` and `grpo-train` share (out, steps, schedule, checkpoints, resume)
//! metrics.rs     metrics.jsonl and the loss plot (SVG)
//! interrupt.rs   Ctrl-C ends a run after its step, with a checkpoint
//! ```

pub mod batch;
pub mod checkpoint;
pub mod data;
pub mod interrupt;
pub mod metrics;
pub mod optim;
pub mod run_args;
pub mod trainer;
pub mod view;
