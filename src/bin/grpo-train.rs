//! `grpo-train`: HSA-RL. Groups of episodes of the policy (or of a tool agent and a reply agent) in the
//! live-room simulator under the original harness and HSA variants with faults, the judge's rewards,
//! GRPO/GDPO advantages per turn kind, and the clipped policy-gradient update (token-level or GSPO,
//! optionally with truncated importance sampling), rollouts in-process or on inference servers. Logic lives in `hat::rl`.

use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;
use hat::rl::cli::{run, GrpoArgs};

#[cfg(not(feature = "cuda"))]
type Backend = burn::backend::Autodiff<burn::backend::NdArray<f32>>;
#[cfg(feature = "cuda")]
type Backend = burn::backend::Autodiff<burn::backend::Cuda<f32>>;

const AFTER_HELP: &str = "\
OUTPUT (in --out)
  metrics.jsonl   one line per step, TRL's names: reward, rewards/<name>/mean, reward_std/<kind>,
                  frac_reward_zero_std/<kind>, clip_ratio/{low,high,region}_mean, kl, entropy,
                  completions/mean_length, right_tool,
                  time/{weight_sync,rollout,scoring,reference,update}_s, staleness;
                  with --teacher: opd/reverse_kl, opd/advantage_mean;
                  with --tis-imp-ratio-cap: tis/mean_ratio, tis/clipped_frac, tis/matched_frac;
                  with --two-agent the policy's own metrics (loss, kl, clip ratios, ...) as tool/… and reply/…
  reward.svg      the reward curves, right tool, KL and clip ratio against the step
  rollouts/       step-NNNNNN.jsonl: every episode of the step, judged (reads with `judge report`)
  checkpoint-NNNNNN/  HF directory + optimizer + trainer state; --resume continues exactly
                  (--two-agent: tool/checkpoint-NNNNNN/ and reply/checkpoint-NNNNNN/)
  rollout-weights/  with --rollout-endpoint: the weights the servers load before each step
  rollouts/ahead-step-NNNNNN.json  with --async: a step's episodes as played ahead (--resume reads them)

EXAMPLE
  hsa-augment --harness harness --out out/variants -n 8 --pool train
  hat sim tasks --split train -n 2000 > out/rl-tasks.jsonl
  grpo-train --model out/distill/checkpoint-000400 --tasks out/rl-tasks.jsonl \\
      --harness harness --harness out/variants/variant-000 --faults timeout=0.1 \\
      --num-generations 4 --tasks-per-step 8 --max-steps 50 --out out/grpo
  # plus the OPD term: per-token -0.5*(log p_policy - log p_base) added to the advantages
  grpo-train ... --teacher out/base/checkpoint-000200 --kl-penalty-coef 0.5
  # truncated importance sampling against the sampler's recorded log-probs
  grpo-train ... --tis-imp-ratio-cap 2
  # rollouts on two inference servers that load each step's weights from disk
  serve --model out/distill/checkpoint-000400 --port 8001 --enable-weight-updates &
  serve --model out/distill/checkpoint-000400 --port 8002 --enable-weight-updates &
  grpo-train ... --rollout-endpoint http://127.0.0.1:8001/v1 --rollout-endpoint http://127.0.0.1:8002/v1 \\
      --concurrency 16 --tis-imp-ratio-cap 2 --async   # the next step's rollouts while this one learns
  # a tool agent and a reply agent, both from the SFT checkpoint
  grpo-train ... --two-agent --out out/grpo-two-agent";

#[derive(Debug, Parser)]
#[command(
    name = "grpo-train",
    version,
    about = "HSA-RL: GRPO/GSPO with GDPO advantages in the live-room simulator",
    after_help = AFTER_HELP
)]
struct Cli {
    #[command(flatten)]
    args: GrpoArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result: Result<()> = hat::train::interrupt::ctrl_c_flag()
        .and_then(|stop| run::<Backend>(&cli.args, &stop, &Default::default()));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("grpo-train: {e:#}");
            ExitCode::FAILURE
        }
    }
}
