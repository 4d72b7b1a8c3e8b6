//! OPD: the reverse-KL advantage, its importance-sampling / PPO loss and GKD's generalized JSD against
//! PyTorch autograd (`testdata/opd/fixtures.json`, written by `scripts/opd_fixtures.py`); an identical
//! teacher gives zero divergence and zero gradient; a teacher with another tokenizer is refused; and two
//! steps of a random student distilled towards a random teacher resume exactly.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use burn::backend::{Autodiff, NdArray};
use burn::prelude::*;
use hat::opd::gjsd::{generalized_jsd, generalized_jsd_sum, GjsdConfig};
use hat::opd::reverse_kl::{reverse_kl_advantages, LossFn, ReverseKlConfig};
use hat::rl::policy_loss::{policy_loss, Completion};
use serde_json::Value;

fn fixtures() -> Value {
    serde_json::from_str(&std::fs::read_to_string("testdata/opd/fixtures.json").unwrap()).unwrap()
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn ragged(v: &Value) -> Vec<Vec<f64>> {
    v.as_array().unwrap().iter().map(floats).collect()
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + b.abs())
}

#[test]
fn reverse_kl_loss_matches_pytorch() {
    let f = fixtures();
    for (n, case) in f["reverse_kl"].as_array().unwrap().iter().enumerate() {
        let (sampler, teacher, logp) = (
            ragged(&case["sampler_logp"]),
            ragged(&case["teacher_logp"]),
            ragged(&case["logp"]),
        );
        let cfg = ReverseKlConfig {
            kl_penalty_coef: case["kl_penalty_coef"].as_f64().unwrap(),
            kl_discount_factor: case["kl_discount_factor"].as_f64().unwrap(),
            loss_fn: if case["loss_fn"] == "ppo" {
                LossFn::Ppo
            } else {
                LossFn::ImportanceSampling
            },
            epsilon: case["epsilon"].as_f64().unwrap(),
        };
        let adv: Vec<Vec<f64>> = sampler
            .iter()
            .zip(&teacher)
            .map(|(s, t)| reverse_kl_advantages(s, t, &cfg))
            .collect();
        for (a, want) in adv
            .iter()
            .flatten()
            .zip(ragged(&case["advantages"]).iter().flatten())
        {
            assert!(
                close(*a, *want, 1e-12),
                "case {n}: advantage {a} vs torch {want}"
            );
        }
        let completions: Vec<Completion> = (0..logp.len())
            .map(|i| Completion {
                logp: &logp[i],
                old_logp: &sampler[i],
                ref_logp: None,
                advantage: 0.0,
                token_advantages: Some(&adv[i]),
            })
            .collect();
        let out = policy_loss(&completions, &cfg.policy_loss());
        let want = case["loss"].as_f64().unwrap();
        assert!(
            close(out.loss, want, 1e-9),
            "case {n} ({cfg:?}): loss {} vs torch {want}",
            out.loss
        );
        for (g, w) in out
            .grad
            .iter()
            .flatten()
            .zip(ragged(&case["grad"]).iter().flatten())
        {
            assert!(
                close(*g, *w, 1e-9),
                "case {n} ({cfg:?}): grad {g} vs torch {w}"
            );
        }
    }
}

#[test]
fn generalized_jsd_matches_pytorch() {
    let f = fixtures();
    for (n, case) in f["generalized_jsd"].as_array().unwrap().iter().enumerate() {
        let cfg = GjsdConfig {
            beta: case["beta"].as_f64().unwrap(),
            temperature: case["temperature"].as_f64().unwrap(),
        };
        let (s, t) = (
            ragged(&case["student_logits"]),
            ragged(&case["teacher_logits"]),
        );
        let mask = floats(&case["mask"]);
        let count: f64 = mask.iter().sum();
        let mut loss = 0.0;
        for (row, ((s, t), m)) in s.iter().zip(&t).zip(&mask).enumerate() {
            let want = floats(&case["grad"][row]);
            if *m == 0.0 {
                assert!(want.iter().all(|g| *g == 0.0));
                continue;
            }
            let (v, g) = generalized_jsd(s, t, &cfg);
            loss += v / count;
            for (g, w) in g.iter().zip(&want) {
                assert!(
                    close(g / count, *w, 1e-9),
                    "case {n} ({cfg:?}) row {row}: grad {} vs torch {w}",
                    g / count
                );
            }
        }
        let want = case["loss"].as_f64().unwrap();
        assert!(
            close(loss, want, 1e-9),
            "case {n} ({cfg:?}): loss {loss} vs torch {want}"
        );
    }
}

/// The tensor form training differentiates agrees with the plain one, value and gradient.
#[test]
fn the_tensor_form_of_the_jsd_agrees_with_the_plain_one() {
    type A = Autodiff<NdArray<f32>>;
    let f = fixtures();
    let device = Default::default();
    for case in f["generalized_jsd"].as_array().unwrap() {
        let cfg = GjsdConfig {
            beta: case["beta"].as_f64().unwrap(),
            temperature: case["temperature"].as_f64().unwrap(),
        };
        let (s, t) = (
            ragged(&case["student_logits"]),
            ragged(&case["teacher_logits"]),
        );
        let (k, v) = (s.len(), s[0].len());
        let tensor = |x: &[Vec<f64>]| {
            let flat: Vec<f32> = x.iter().flatten().map(|&y| y as f32).collect();
            Tensor::<A, 1>::from_floats(flat.as_slice(), &device).reshape([k, v])
        };
        let student = tensor(&s).require_grad();
        let sum = generalized_jsd_sum(student.clone(), tensor(&t), &cfg);
        let value: f32 = sum.clone().into_scalar();
        let grads = sum.backward();
        let grad: Vec<f32> = student.grad(&grads).unwrap().into_data().to_vec().unwrap();
        let (mut want_value, mut want_grad) = (0.0, Vec::new());
        for (s, t) in s.iter().zip(&t) {
            let (val, g) = generalized_jsd(s, t, &cfg);
            want_value += val;
            want_grad.extend(g);
        }
        assert!(
            close(value as f64, want_value, 1e-4),
            "{cfg:?}: {value} vs {want_value}"
        );
        for (g, w) in grad.iter().zip(&want_grad) {
            assert!((*g as f64 - w).abs() < 1e-4, "{cfg:?}: grad {g} vs {w}");
        }
    }
}

#[test]
fn an_identical_teacher_gives_zero_divergence_and_zero_gradient() {
    let logp = vec![-0.3, -2.1, -0.05, -1.4];
    for loss_fn in [LossFn::ImportanceSampling, LossFn::Ppo] {
        for gamma in [0.0, 0.9] {
            let cfg = ReverseKlConfig {
                kl_penalty_coef: 1.0,
                kl_discount_factor: gamma,
                loss_fn,
                epsilon: 0.2,
            };
            let adv = reverse_kl_advantages(&logp, &logp, &cfg);
            assert!(adv.iter().all(|a| *a == 0.0));
            let c = Completion {
                logp: &logp,
                old_logp: &logp,
                ref_logp: None,
                advantage: 0.0,
                token_advantages: Some(&adv),
            };
            let out = policy_loss(&[c], &cfg.policy_loss());
            assert_eq!(out.loss, 0.0);
            assert!(out.grad[0].iter().all(|g| *g == 0.0));
        }
    }
    let logits = vec![1.5, -0.2, 0.3, 2.2, -1.0];
    for beta in [0.0, 0.3, 0.5, 1.0] {
        for temperature in [1.0, 0.9] {
            let (v, g) = generalized_jsd(&logits, &logits, &GjsdConfig { beta, temperature });
            assert!(v.abs() < 1e-15, "β {beta}: {v}");
            assert!(g.iter().all(|x| x.abs() < 1e-15), "β {beta}: {g:?}");
        }
    }
}

mod end_to_end {
    use super::*;
    use hat::general::prompts::{generate, Split};
    use hat::judge::ifeval::InputExample;
    use hat::model::presets::preset;
    use hat::model::CausalLm;
    use hat::opd::cli::prompt_of;
    use hat::opd::reverse_kl::{LossFn, ReverseKlConfig};
    use hat::opd::teacher::check_compatible;
    use hat::opd::trainer::{train, OpdConfig, OpdLoss, RunInputs};
    use hat::tokenizer::{save_hf, train_bpe, TrainOptions, QWEN3_CHAT_TEMPLATE};
    use hat::train::optim::AdamWConfig;

    type B = Autodiff<NdArray<f32>>;

    /// A random `tiny` model (weights from `seed`) with a BPE tokenizer of `vocab` trained on the
    /// general prompts.
    fn model_dir(seed: u64, vocab: usize) -> tempfile::TempDir {
        let corpus: Vec<String> = generate(Split::Train, 200, 0)
            .iter()
            .flat_map(|r| {
                r.messages
                    .iter()
                    .map(|m| m["content"].as_str().unwrap().to_string())
            })
            .collect();
        let tok = train_bpe(
            corpus,
            &TrainOptions {
                vocab_size: vocab,
                min_frequency: 2,
            },
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        save_hf(&tok, dir.path(), QWEN3_CHAT_TEMPLATE, 1024).unwrap();
        let mut cfg = preset("tiny", Some(tok.get_vocab_size(true))).unwrap();
        cfg.max_position_embeddings = 384;
        let m = CausalLm::<NdArray<f32>>::init(&cfg, seed, &Default::default()).unwrap();
        hat::model::io::checkpoint::save(&m, dir.path(), Default::default()).unwrap();
        dir
    }

    fn config(loss: OpdLoss) -> OpdConfig {
        OpdConfig {
            max_steps: 2,
            learning_rate: 1e-3,
            warmup_steps: 0,
            adamw: AdamWConfig::default(),
            max_grad_norm: 1.0,
            seed: 5,
            batch_tokens: 4096,
            prompts_per_step: 3,
            num_generations: 2,
            max_new_tokens: 24,
            temperature: 1.0,
            loss,
            save_steps: 1,
            eval_steps: 2,
        }
    }

    fn metrics(out: &Path) -> Vec<Value> {
        std::fs::read_to_string(out.join("metrics.jsonl"))
            .unwrap()
            .lines()
            .map(|l| {
                let mut v: Value = serde_json::from_str(l).unwrap();
                // Wall-clock times differ between runs; everything else must not.
                v.as_object_mut()
                    .unwrap()
                    .retain(|k, _| !k.starts_with("time/") && !k.starts_with("tokens_per_s/"));
                v
            })
            .collect()
    }

    #[test]
    fn another_tokenizer_is_refused() {
        let (a, b) = (model_dir(1, 500), model_dir(1, 560));
        let e = check_compatible(a.path(), b.path())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("different tokenizers") && e.contains("OPD"),
            "{e}"
        );
        check_compatible(a.path(), a.path()).unwrap();
    }

    /// Two steps of each loss; the reverse-KL run resumed from its step-1 checkpoint gives the same
    /// metrics; a prompt longer than the context is counted, not fatal.
    #[test]
    fn opd_trains_and_resumes_exactly() {
        let student = model_dir(1, 500);
        let teacher = model_dir(2, 500);
        let mut rows: Vec<Value> = generate(Split::Train, 6, 1)
            .iter()
            .map(|r| serde_json::to_value(r).unwrap())
            .collect();
        rows.push(serde_json::json!({"prompt": "tea ".repeat(400)}));
        let prompts: Vec<_> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| prompt_of(r, "rows", i + 1).unwrap())
            .collect();
        let eval: Vec<InputExample> = generate(Split::Eval, 4, 1)
            .iter()
            .map(|r| serde_json::from_value(serde_json::to_value(r).unwrap()).unwrap())
            .collect();
        let rk = OpdLoss::ReverseKl(ReverseKlConfig {
            kl_penalty_coef: 1.0,
            kl_discount_factor: 0.0,
            loss_fn: LossFn::Ppo,
            epsilon: 0.2,
        });
        let run = |out: &Path, resume: bool, loss: OpdLoss| {
            let inputs = RunInputs {
                prompts: &prompts,
                eval: &eval,
                tokenizer_dir: student.path(),
                out,
            };
            let device = Default::default();
            train::<B>(
                &config(loss),
                CausalLm::<B>::load(student.path(), &device).unwrap(),
                CausalLm::<B>::load(teacher.path(), &device).unwrap(),
                &inputs,
                resume,
                &AtomicBool::new(false),
                &device,
            )
            .unwrap()
        };
        let whole = tempfile::tempdir().unwrap();
        assert!(run(whole.path(), false, rk).ends_with("checkpoint-000002"));
        let m = metrics(whole.path());
        assert_eq!(
            m.len(),
            3,
            "an eval line before step 1, then two steps: {m:?}"
        );
        assert!(m[0]["ifeval/prompt_strict"].is_number());
        assert!(m[2]["ifeval/instruction_loose_high"].is_number());
        for line in &m[1..] {
            // A sample mean of log q − log π_T: its expectation is the KL, a sample of 12 can be below 0.
            assert!(
                line["reverse_kl"].as_f64().unwrap().abs() > 1e-6,
                "random teacher: {line}"
            );
            assert!(line["grad_norm"].as_f64().unwrap() > 0.0);
            let skipped = line["prompts/too_long"].as_u64().unwrap();
            assert_eq!(line["completions"].as_u64().unwrap(), 2 * (3 - skipped));
            // The sampler's log-probs are the trainer's, up to float noise.
            assert!(line["sampler_mismatch"].as_f64().unwrap() < 1e-3, "{line}");
        }
        let too_long: u64 = m[1..]
            .iter()
            .map(|l| l["prompts/too_long"].as_u64().unwrap())
            .sum();
        assert!(
            too_long >= 1,
            "the long prompt is drawn in 2 steps × 3 of 7 prompts"
        );
        assert!(whole.path().join("opd.svg").exists());

        let resumed = tempfile::tempdir().unwrap();
        let from = whole.path().join("checkpoint-000001");
        let to = resumed.path().join("checkpoint-000001");
        std::fs::create_dir_all(&to).unwrap();
        for f in std::fs::read_dir(&from).unwrap() {
            let f = f.unwrap();
            std::fs::copy(f.path(), to.join(f.file_name())).unwrap();
        }
        std::fs::copy(
            whole.path().join("metrics.jsonl"),
            resumed.path().join("metrics.jsonl"),
        )
        .unwrap();
        run(resumed.path(), true, rk);
        assert_eq!(
            metrics(resumed.path()),
            m,
            "the resumed run differs from the uninterrupted one"
        );

        let gkd = tempfile::tempdir().unwrap();
        let loss = OpdLoss::Gjsd {
            loss: GjsdConfig {
                beta: 0.5,
                temperature: 1.0,
            },
            lmbda: 0.5,
        };
        run(gkd.path(), false, loss);
        let g = metrics(gkd.path());
        assert!(
            g[1..].iter().all(
                |l| l["loss"].as_f64().unwrap() > 0.0 && l["grad_norm"].as_f64().unwrap() > 0.0
            ),
            "{g:?}"
        );
    }
}
