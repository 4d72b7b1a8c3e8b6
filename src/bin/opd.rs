//! `opd`: General On-Policy Distillation. The student samples general prompts, the pre-SFT base
//! checkpoint (in-process or behind an endpoint's `prompt_logprobs`) scores its samples, and the student is distilled towards it on its own tokens (per-token
//! reverse KL with an importance-sampling or PPO ratio, or GKD's generalized JSD). Logic lives in
//! `hat::opd`.

use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;
use hat::opd::cli::{run, OpdArgs};

#[cfg(not(feature = "cuda"))]
type Backend = burn::backend::Autodiff<burn::backend::NdArray<f32>>;
#[cfg(feature = "cuda")]
type Backend = burn::backend::Autodiff<burn::backend::Cuda<f32>>;

const AFTER_HELP: &str = "\
OUTPUT (in --out)
  metrics.jsonl   one line per step: loss, reverse_kl (mean log q - log p_teacher over sampled tokens),
                  entropy, sampler_mismatch, completions/{mean_length,clipped_ratio}, prompts/too_long,
                  prompts/domain,
                  time/{sampling,teacher,update}_s, tokens_per_s/{sampling,teacher,update};
                  at eval steps ifeval/{prompt,instruction}_{strict,loose} with _low/_high (95% Wilson)
  opd.svg         reverse KL, loss, entropy and IFEval-lite against the step
  checkpoint-NNNNNN/  HF directory + optimizer + trainer state; --resume continues exactly

EXAMPLE
  hat general prompts --split train --n 2000 -o out/general-train.jsonl
  hat general prompts --split eval --n 200 -o out/general-eval.jsonl
  opd --model out/sft/checkpoint-000400 --teacher out/base/checkpoint-000200 \\
      --prompts out/general-train.jsonl --eval-prompts out/general-eval.jsonl --eval-steps 10 \\
      --max-steps 50 --out out/opd
  # the teacher behind our serve (or vLLM / SGLang) via prompt_logprobs; reverse_kl only
  serve --model out/base/checkpoint-000200 --port 8001 &
  opd --model out/sft/checkpoint-000400 --teacher-url http://127.0.0.1:8001/v1 \
      --teacher-model checkpoint-000200 --prompts out/general-train.jsonl --out out/opd-endpoint
  # 20% of the prompts from the live room
  opd ... --domain-prompts out/teacher-sft.jsonl --domain-share 0.2";

#[derive(Debug, Parser)]
#[command(
    name = "opd",
    version,
    about = "General on-policy distillation from the pre-SFT base model",
    after_help = AFTER_HELP
)]
struct Cli {
    #[command(flatten)]
    args: OpdArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result: Result<()> = hat::train::interrupt::ctrl_c_flag()
        .and_then(|stop| run::<Backend>(&cli.args, &stop, &Default::default()));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("opd: {e:#}");
            ExitCode::FAILURE
        }
    }
}
