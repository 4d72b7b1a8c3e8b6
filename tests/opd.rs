//! OPD: the reverse-KL advantage, its importance-sampling / PPO loss and GKD's generalized JSD against
//! PyTorch autograd (`testdata/opd/fixtures.json`, written by `scripts/opd_fixtures.py`); an identical
//! teacher gives zero divergence and zero gradient; a teacher with another tokenizer is refused; and two
//! steps of a random student distilled towards a random teacher resume exactly.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use burn::backend::{Autodiff, NdArray};
use burn::prelude::*;
use hat::opd::gjsd::{
    generalized_jsd, generalized_jsd_sum, top_k_generalized_jsd, top_k_generalized_jsd_sum,
    GjsdConfig,
};
use hat::opd::reverse_kl::{reverse_kl_advantages, LossFn, ReverseKlConfig};
use hat::rl::policy_loss::{policy_loss, Completion};
use serde_json::Value;

mod serve_support;

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
                tis_weights: None,
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

/// The plain form summed over rows, and its gradient row after row.
fn plain_jsd_sum(s: &[Vec<f64>], t: &[Vec<f64>], cfg: &GjsdConfig) -> (f64, Vec<f64>) {
    let (mut value, mut grad) = (0.0, Vec::new());
    for (s, t) in s.iter().zip(t) {
        let (v, g) = generalized_jsd(s, t, cfg);
        value += v;
        grad.extend(g);
    }
    (value, grad)
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
        let (want_value, want_grad) = plain_jsd_sum(&s, &t, &cfg);
        assert!(
            close(value as f64, want_value, 1e-4),
            "{cfg:?}: {value} vs {want_value}"
        );
        for (g, w) in grad.iter().zip(&want_grad) {
            assert!((*g as f64 - w).abs() < 1e-4, "{cfg:?}: grad {g} vs {w}");
        }
    }
}

/// The top-k form's value and gradient, in tensors, for `[K, V]` student logits and the teacher's top
/// k `(id, log-prob)` at each row.
fn top_k_tensor_jsd(student: &[Vec<f64>], top: &[Vec<(u32, f64)>], beta: f64) -> (f64, Vec<f64>) {
    type A = Autodiff<NdArray<f32>>;
    let device = Default::default();
    let (rows, v, k) = (student.len(), student[0].len(), top[0].len());
    let flat: Vec<f32> = student.iter().flatten().map(|&y| y as f32).collect();
    let logits = Tensor::<A, 1>::from_floats(flat.as_slice(), &device)
        .reshape([rows, v])
        .require_grad();
    let ids: Vec<i64> = top.iter().flatten().map(|&(id, _)| id as i64).collect();
    let lps: Vec<f32> = top.iter().flatten().map(|&(_, lp)| lp as f32).collect();
    let ids = Tensor::<A, 2, Int>::from_data(TensorData::new(ids, [rows, k]), &device);
    let lps = Tensor::<A, 2>::from_data(TensorData::new(lps, [rows, k]), &device);
    let sum = top_k_generalized_jsd_sum(logits.clone(), ids, lps, beta);
    let value: f32 = sum.clone().into_scalar();
    let grads = sum.backward();
    let grad: Vec<f32> = logits.grad(&grads).unwrap().into_data().to_vec().unwrap();
    (value as f64, grad.into_iter().map(f64::from).collect())
}

/// The teacher's `k` most likely tokens of `logits` (temperature 1), most likely first.
fn top_k_of(logits: &[f64], k: usize) -> Vec<(u32, f64)> {
    let lse = logits.iter().map(|x| x.exp()).sum::<f64>().ln();
    let mut all: Vec<(u32, f64)> = logits
        .iter()
        .enumerate()
        .map(|(i, x)| (i as u32, x - lse))
        .collect();
    all.sort_by(|a, b| b.1.total_cmp(&a.1));
    all.truncate(k);
    all
}

/// With every token in the teacher's "top k", the endpoint's form is the full-vocabulary divergence
/// (PyTorch's fixture cases at temperature 1), value and gradient.
#[test]
fn the_top_k_jsd_over_the_whole_vocabulary_is_the_full_one() {
    let f = fixtures();
    let mut checked = 0;
    for case in f["generalized_jsd"].as_array().unwrap() {
        if case["temperature"].as_f64().unwrap() != 1.0 {
            continue;
        }
        let beta = case["beta"].as_f64().unwrap();
        let (s, t) = (
            ragged(&case["student_logits"]),
            ragged(&case["teacher_logits"]),
        );
        let top: Vec<Vec<(u32, f64)>> = t.iter().map(|row| top_k_of(row, row.len())).collect();
        let (value, grad) = top_k_tensor_jsd(&s, &top, beta);
        let cfg = GjsdConfig {
            beta,
            temperature: 1.0,
        };
        let (want_value, want_grad) = plain_jsd_sum(&s, &t, &cfg);
        assert!(
            close(value, want_value, 1e-4),
            "β {beta}: {value} vs {want_value}"
        );
        for (g, w) in grad.iter().zip(&want_grad) {
            assert!((g - w).abs() < 1e-4, "β {beta}: grad {g} vs {w}");
        }
        checked += 1;
    }
    assert!(checked >= 2, "{checked} fixture cases at temperature 1");
}

/// With fewer tokens than the vocabulary: the tensor form equals the plain one, its gradient the plain
/// one's finite differences, and it never exceeds the full-vocabulary divergence; an identical
/// teacher gives 0.
#[test]
fn the_top_k_jsd_is_a_lower_bound_of_the_full_one() {
    let mut rng = hat::rng::Rng::new(7);
    for beta in [0.0, 0.5, 0.9, 1.0] {
        for k in [1, 3, 7] {
            let logits = |rng: &mut hat::rng::Rng| -> Vec<f64> {
                (0..8).map(|_| (rng.unit() - 0.5) * 6.0).collect()
            };
            let (s, t) = (logits(&mut rng), logits(&mut rng));
            let top = top_k_of(&t, k);
            let plain = top_k_generalized_jsd(&s, &top, beta);
            let full = generalized_jsd(
                &s,
                &t,
                &GjsdConfig {
                    beta,
                    temperature: 1.0,
                },
            )
            .0;
            assert!(
                plain >= 0.0 && plain <= full + 1e-12,
                "β {beta}, k {k}: {plain} vs full {full}"
            );
            let (value, grad) =
                top_k_tensor_jsd(std::slice::from_ref(&s), std::slice::from_ref(&top), beta);
            assert!(
                close(value, plain, 1e-4),
                "β {beta}, k {k}: tensor {value} vs plain {plain}"
            );
            for (u, g) in grad.iter().enumerate() {
                let h = 1e-5;
                let (mut up, mut down) = (s.clone(), s.clone());
                up[u] += h;
                down[u] -= h;
                let numeric = (top_k_generalized_jsd(&up, &top, beta)
                    - top_k_generalized_jsd(&down, &top, beta))
                    / (2.0 * h);
                assert!(
                    (g - numeric).abs() < 1e-3,
                    "β {beta}, k {k}, logit {u}: {g} vs {numeric}"
                );
            }
            let same = top_k_generalized_jsd(&t, &top, beta);
            assert!(same.abs() < 1e-12, "identical teacher: {same}");
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
                tis_weights: None,
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

/// vLLM's `prompt_logprobs` read back under each prompt token's own id, with the malformed shapes
/// refused.
#[test]
fn prompt_logprobs_are_read_under_the_prompts_own_ids() {
    use hat::policy::prompt_logprobs::read_prompt_logprobs;
    let v = serde_json::json!([null,
        {"7": {"logprob": -0.5, "rank": 1, "decoded_token": "a"}, "9": {"logprob": -2.0, "rank": 3, "decoded_token": "b"}},
        {"4": {"logprob": -1.25, "rank": 2}}]);
    let got = read_prompt_logprobs(&v, &[1, 9, 4]).unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].logprob, -2.0);
    assert_eq!(got[0].decoded.as_deref(), Some("b"));
    assert_eq!(got[1].logprob, -1.25);
    assert!(got[1].decoded.is_none());
    assert_eq!(
        got[0].alternatives,
        vec![(7, -0.5), (9, -2.0)],
        "most likely first"
    );
    assert_eq!(got[1].alternatives, vec![(4, -1.25)]);
    assert!(
        read_prompt_logprobs(&v, &[1, 8, 4]).is_err(),
        "token 8 is not in row 1"
    );
    assert!(
        read_prompt_logprobs(&v, &[1, 9]).is_err(),
        "a length mismatch"
    );
    assert!(read_prompt_logprobs(&serde_json::json!(null), &[1]).is_err());
}

/// A live-room trajectory: a tool call, its result, the reply.
fn trajectory(id: &str) -> Value {
    serde_json::json!({
        "id": id,
        "tools": [{"type": "function", "function": {"name": "get_product_detail",
            "description": "a product's details",
            "parameters": {"type": "object", "properties": {"product_id": {"type": "string"}}}}}],
        "messages": [
            {"role": "system", "content": "You host a live shopping stream."},
            {"role": "user", "content": "how heavy are the shoes?"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": "get_product_detail", "arguments": "{\"product_id\":\"p092\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "{\"weight\":\"230 g\"}"},
            {"role": "assistant", "content": "About 230 g."}
        ]
    })
}

#[test]
fn every_assistant_turn_of_a_trajectory_is_a_prompt() {
    use hat::opd::cli::prompts_of;
    let p = prompts_of(&trajectory("t"), "rows.jsonl", 3).unwrap();
    assert_eq!(p.len(), 2);
    assert_eq!((p[0].id.as_str(), p[1].id.as_str()), ("t", "t#4"));
    assert_eq!(
        p[0].conversation.len(),
        2,
        "system and viewer before the call"
    );
    assert_eq!(
        p[1].conversation.len(),
        4,
        "and the call and its result before the reply"
    );
    assert_eq!(
        p[1].conversation[2]["content"], "",
        "a call's null content is rendered as training renders it"
    );
    assert_eq!(
        (p[0].answer.as_deref(), p[1].answer.as_deref()),
        (None, Some("About 230 g."))
    );
    assert!(p
        .iter()
        .all(|p| p.tools.as_ref().is_some_and(|t| t.len() == 1)));

    let general = serde_json::json!({"messages": [{"role": "user", "content": "Write a haiku."},
        {"role": "assistant", "content": "Leaves."}]});
    let g = prompts_of(&general, "rows.jsonl", 4).unwrap();
    assert_eq!(g.len(), 1);
    assert_eq!(
        (g[0].id.as_str(), g[0].tools.is_none()),
        ("rows.jsonl:4", true)
    );

    let bad = serde_json::json!({"messages": [{"role": "assistant", "content": "hi"}]});
    let e = prompts_of(&bad, "rows.jsonl", 7).unwrap_err().to_string();
    assert!(e.contains("rows.jsonl:7") && e.contains("messages"), "{e}");
}

mod end_to_end {
    use super::*;
    use hat::general::prompts::{generate, Split};
    use hat::judge::ifeval::InputExample;
    use hat::model::presets::preset;
    use hat::model::CausalLm;
    use hat::opd::cli::prompts_of;
    use hat::opd::reverse_kl::{LossFn, ReverseKlConfig};
    use hat::opd::teacher::check_compatible;
    use hat::opd::trainer::{train, OpdConfig, OpdLoss, RunInputs};
    use hat::tokenizer::{save_hf, train_bpe, TrainOptions, QWEN3_CHAT_TEMPLATE};
    use hat::train::optim::AdamWConfig;

    type B = Autodiff<NdArray<f32>>;

    /// A random `tiny` model (weights from `seed`) with a BPE tokenizer of `vocab` trained on the
    /// general prompts.
    fn model_dir(seed: u64, vocab: usize) -> tempfile::TempDir {
        model_dir_from(seed, vocab, |text| text.to_string())
    }

    /// [`model_dir`] with the tokenizer trained on `map` of each text (another map, another tokenizer).
    fn model_dir_from(seed: u64, vocab: usize, map: impl Fn(&str) -> String) -> tempfile::TempDir {
        let corpus: Vec<String> = generate(Split::Train, 200, 0)
            .iter()
            .flat_map(|r| {
                r.messages
                    .iter()
                    .map(|m| map(m["content"].as_str().unwrap()))
                    .collect::<Vec<_>>()
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
        cfg.max_position_embeddings = 1024;
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
            domain_share: 0.0,
            teacher_top_k: 20,
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
        rows.push(serde_json::json!({"prompt": "tea ".repeat(1200)}));
        let prompts: Vec<_> = rows
            .iter()
            .enumerate()
            .flat_map(|(i, r)| prompts_of(r, "rows", i + 1).unwrap())
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
                domain: &[],
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

    #[test]
    fn a_domain_teacher_scores_the_domain_prompts() {
        use hat::opd::teacher::Teachers;
        let student = model_dir(1, 500);
        let base = model_dir(2, 500);
        let general: Vec<_> = generate(Split::Train, 6, 1)
            .iter()
            .enumerate()
            .flat_map(|(i, r)| {
                prompts_of(&serde_json::to_value(r).unwrap(), "rows", i + 1).unwrap()
            })
            .collect();
        let domain: Vec<_> = (0..3)
            .flat_map(|i| prompts_of(&trajectory(&format!("d{i}")), "domain", i + 1).unwrap())
            .collect();
        let reverse_kl = OpdLoss::ReverseKl(ReverseKlConfig {
            kl_penalty_coef: 1.0,
            kl_discount_factor: 0.0,
            loss_fn: LossFn::ImportanceSampling,
            epsilon: 0.2,
        });
        let run = |domain_teacher: bool, loss: OpdLoss, share: f64| {
            let out = tempfile::tempdir().unwrap();
            let mut cfg = config(loss);
            (cfg.domain_share, cfg.prompts_per_step, cfg.eval_steps) = (share, 6, 0);
            let inputs = RunInputs {
                prompts: &general,
                domain: &domain,
                eval: &[],
                tokenizer_dir: student.path(),
                out: out.path(),
            };
            let device = Default::default();
            let load = |dir: &Path| CausalLm::<B>::load(dir, &device).unwrap();
            let teachers = Teachers {
                general: load(base.path()).into(),
                domain: domain_teacher.then(|| load(student.path()).into()),
            };
            train::<B>(
                &cfg,
                load(student.path()),
                teachers,
                &inputs,
                false,
                &AtomicBool::new(false),
                &device,
            )
            .unwrap();
            metrics(out.path())
        };
        // Step 1's samples come from the student's own weights, so a domain teacher that is the
        // student scores them as the sampler did: no divergence on the domain prompts, while the
        // general ones still diverge from the other model.
        let first = &run(true, reverse_kl, 0.5)[0];
        assert!(first["prompts/domain"].as_u64().unwrap() > 0, "{first}");
        assert!(
            first["reverse_kl/domain"].as_f64().unwrap().abs() < 1e-4,
            "{first}"
        );
        assert!(
            first["reverse_kl"].as_f64().unwrap().abs() > 1e-3,
            "{first}"
        );
        let single = &run(false, reverse_kl, 0.5)[0];
        assert_eq!(
            single["prompts/domain"], first["prompts/domain"],
            "the same draws"
        );
        assert!(
            single["reverse_kl/domain"].as_f64().unwrap().abs() > 1e-3,
            "{single}"
        );
        // The full-vocabulary update compares each micro-batch with its own teacher: on domain
        // prompts only, with the student as their teacher, the divergence is 0 (the gradient is the
        // router's balance loss alone).
        let gjsd = OpdLoss::Gjsd {
            loss: GjsdConfig {
                beta: 0.5,
                temperature: 1.0,
            },
            lmbda: 1.0,
        };
        let own = &run(true, gjsd, 1.0)[0];
        assert!(own["loss"].as_f64().unwrap().abs() < 1e-6, "{own}");
        let mixed = &run(true, gjsd, 0.5)[0];
        assert!(mixed["loss"].as_f64().unwrap() > 1e-4, "{mixed}");
    }

    fn endpoint(url: &str, student: &Path, retries: u32) -> hat::opd::teacher::EndpointTeacher {
        hat::opd::teacher::EndpointTeacher::new(
            hat::policy::prompt_logprobs::PromptLogprobsConfig {
                url: url.into(),
                model: "teacher".into(),
                api_key: None,
                timeout: std::time::Duration::from_secs(60),
                retries,
                concurrency: 3,
            },
            hat::tokenizer::load(student).unwrap(),
        )
    }

    /// The endpoint path (our `serve` as teacher, `prompt_logprobs`) against the in-process teacher on
    /// the same checkpoint: the teacher's log-prob of every sampled token agrees to 1e-4, and two
    /// steps of OPD give the same reverse KL and loss; its top 20 are the in-process teacher's; GKD
    /// through it is a lower bound of the full-vocabulary loss; a server with another tokenizer, and
    /// one that is down, fail with the URL named.
    #[test]
    fn endpoint_teacher_matches_the_in_process_one() {
        use burn::module::AutodiffModule;
        use hat::model::generation::generate::TextGenerator;
        use hat::model::generation::sampling::SamplingParams;
        let student = model_dir(1, 500);
        let teacher = model_dir(2, 500);
        let (_rt, server, url) =
            super::serve_support::serve_checkpoint(teacher.path(), "teacher", 384, false);
        let rows: Vec<Value> = generate(Split::Train, 6, 1)
            .iter()
            .map(|r| serde_json::to_value(r).unwrap())
            .collect();
        let prompts: Vec<_> = rows
            .iter()
            .enumerate()
            .flat_map(|(i, r)| prompts_of(r, "rows", i + 1).unwrap())
            .collect();

        // Teacher log-probs of the student's samples, both ways.
        let device = Default::default();
        let generator = TextGenerator::new(
            CausalLm::<NdArray<f32>>::load(student.path(), &device).unwrap(),
            hat::tokenizer::load(student.path()).unwrap(),
            Some(hat::chat::ChatTemplate::from_model_dir(student.path()).unwrap()),
        )
        .unwrap();
        let refs: Vec<&hat::opd::trainer::Prompt> = prompts.iter().collect();
        let params = SamplingParams {
            temperature: 1.0,
            max_tokens: 24,
            ..SamplingParams::default()
        };
        let samples = hat::opd::sample::sample(&generator, &refs, 2, &params, 5, 0).unwrap();
        assert_eq!(samples.views.len(), 12);
        let t = CausalLm::<B>::load(teacher.path(), &device)
            .unwrap()
            .valid();
        let (local, _) = hat::rl::update::logprobs(&t, &samples.views, 0, 4096, &device).unwrap();
        let remote = endpoint(&url, student.path(), 1)
            .logprobs(&samples.views)
            .unwrap();
        let mut worst = 0f64;
        let mut count = 0;
        for (l, r) in local.iter().zip(&remote) {
            assert_eq!(l.len(), r.len());
            for (a, b) in l.iter().zip(r) {
                worst = worst.max((a - b).abs());
                count += 1;
            }
        }
        assert!(count > 12, "{count} sampled tokens");
        assert!(
            worst < 1e-4,
            "endpoint vs in-process teacher log-probs differ by {worst}"
        );
        eprintln!(
            "teacher log-probs of {count} sampled tokens: max |endpoint − in-process| = {worst:e}"
        );

        // The top 20 of the first view's trained positions: the in-process teacher's 20 best.
        let view = &samples.views[0];
        let top = endpoint(&url, student.path(), 1)
            .score(std::slice::from_ref(view), 20)
            .unwrap()
            .top
            .remove(0);
        let batch = hat::train::batch::to_tensors::<B>(&[view], 0, false, &device).unwrap();
        let t = CausalLm::<B>::load(teacher.path(), &device).unwrap();
        let (hidden, _) = hat::train::trainer::batch_hidden_states(&t, &batch);
        let logits = hat::train::trainer::trained_logits(&t, hidden, &batch);
        let logp = burn::tensor::activation::log_softmax(logits, 1);
        let rows: Vec<f32> = logp.into_data().to_vec().unwrap();
        assert_eq!(top.len(), view.trained_tokens());
        for (position, served) in top.iter().enumerate() {
            let row = &rows[position * 500..(position + 1) * 500];
            let mut best: Vec<usize> = (0..500).collect();
            best.sort_by(|&a, &b| row[b].total_cmp(&row[a]));
            assert_eq!(served.len(), 20);
            for (&(id, lp), &want) in served.iter().zip(&best) {
                assert!(
                    (lp - row[want] as f64).abs() < 1e-4,
                    "position {position}: {lp} vs {}",
                    row[want]
                );
                assert!(
                    (row[id as usize] as f64 - lp).abs() < 1e-4,
                    "token {id} at {position}"
                );
            }
        }

        // Two steps of OPD, teacher in-process vs behind the endpoint.
        let run = |out: &Path, teacher_model: bool, loss: OpdLoss| {
            let inputs = RunInputs {
                prompts: &prompts,
                domain: &[],
                eval: &[],
                tokenizer_dir: student.path(),
                out,
            };
            let model = CausalLm::<B>::load(student.path(), &device).unwrap();
            let mut cfg = config(loss);
            cfg.eval_steps = 0;
            if teacher_model {
                let t = CausalLm::<B>::load(teacher.path(), &device).unwrap();
                train::<B>(
                    &cfg,
                    model,
                    t,
                    &inputs,
                    false,
                    &AtomicBool::new(false),
                    &device,
                )
            } else {
                train::<B>(
                    &cfg,
                    model,
                    endpoint(&url, student.path(), 1),
                    &inputs,
                    false,
                    &AtomicBool::new(false),
                    &device,
                )
            }
        };
        let rk = OpdLoss::ReverseKl(ReverseKlConfig {
            kl_penalty_coef: 1.0,
            kl_discount_factor: 0.0,
            loss_fn: LossFn::ImportanceSampling,
            epsilon: 0.2,
        });
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        run(a.path(), true, rk).unwrap();
        run(b.path(), false, rk).unwrap();
        let (ma, mb) = (metrics(a.path()), metrics(b.path()));
        assert_eq!(ma.len(), 2);
        assert_eq!(mb.len(), 2);
        for (x, y) in ma.iter().zip(&mb) {
            for key in ["reverse_kl", "loss", "completions/mean_length"] {
                let (p, q) = (x[key].as_f64().unwrap(), y[key].as_f64().unwrap());
                assert!(close(p, q, 1e-4), "{key}: in-process {p} vs endpoint {q}");
            }
            eprintln!(
                "step {}: reverse KL in-process {} endpoint {}",
                x["step"], x["reverse_kl"], y["reverse_kl"]
            );
        }

        // GKD through the endpoint: the top 20 at each position, the rest as one bucket. Step 1
        // samples the same tokens both ways, so the reverse KL agrees; the coarse-grained divergence
        // is positive and never above the full-vocabulary one.
        let gkd = |temperature: f64| OpdLoss::Gjsd {
            loss: GjsdConfig {
                beta: 0.5,
                temperature,
            },
            lmbda: 1.0,
        };
        let (c, d) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        run(c.path(), true, gkd(1.0)).unwrap();
        run(d.path(), false, gkd(1.0)).unwrap();
        let (full, top) = (&metrics(c.path())[0], &metrics(d.path())[0]);
        let (kl_full, kl_top) = (
            full["reverse_kl"].as_f64().unwrap(),
            top["reverse_kl"].as_f64().unwrap(),
        );
        assert!(
            close(kl_full, kl_top, 1e-4),
            "reverse KL {kl_full} vs {kl_top}"
        );
        let (lf, lt) = (
            full["loss"].as_f64().unwrap(),
            top["loss"].as_f64().unwrap(),
        );
        assert!(lt > 0.0 && lt <= lf + 1e-6, "top-20 JSD {lt}, full {lf}");
        let mass = top["teacher/top_k_mass"].as_f64().unwrap();
        assert!(mass > 20.0 / 500.0 && mass < 1.0, "top-20 mass {mass}");
        assert!(full.get("teacher/top_k_mass").is_none());
        eprintln!("step 1 generalized JSD: full vocabulary {lf}, endpoint top 20 + rest {lt}");
        let e = tempfile::tempdir().unwrap();
        let err = run(e.path(), false, gkd(0.9)).unwrap_err().to_string();
        assert!(
            err.contains("--temperature 1") && err.contains(&url),
            "{err}"
        );

        // A server whose tokenizer is another: refused on its first answer.
        let other = model_dir_from(1, 500, |text| text.chars().rev().collect());
        let (_rt2, server2, url2) =
            super::serve_support::serve_checkpoint(other.path(), "teacher", 384, false);
        let e = endpoint(&url2, student.path(), 0)
            .logprobs(&samples.views)
            .unwrap_err();
        let e = format!("{e:#}");
        assert!(
            (e.contains("tokenizer") || e.contains("vocabulary")) && e.contains(&url2),
            "{e}"
        );

        // A server that is down: the URL and the attempts are named.
        let e = endpoint("http://127.0.0.1:9/v1", student.path(), 1)
            .logprobs(&samples.views[..1])
            .unwrap_err();
        let e = format!("{e:#}");
        assert!(e.contains("127.0.0.1:9") && e.contains("2 attempts"), "{e}");
        _rt.block_on(server.shutdown()).unwrap();
        _rt2.block_on(server2.shutdown()).unwrap();
    }

    /// `--domain-share`: a seeded share of each step's prompts comes from the domain prompts; 0 leaves
    /// the general draws exactly as they were, 1 replaces all of them, and the same seed draws the same.
    #[test]
    fn domain_share_mixes_a_seeded_share_of_domain_prompts() {
        use hat::opd::mix::{step_prompts, Source};
        use hat::opd::trainer::Prompt;
        let make = |prefix: &str, n: usize| -> Vec<Prompt> {
            (0..n)
                .map(|i| Prompt {
                    id: format!("{prefix}{i}"),
                    ..Prompt::default()
                })
                .collect()
        };
        let (general, domain) = (make("g", 50), make("d", 7));
        let ids = |share: f64, seed: u64| -> Vec<String> {
            (0..200)
                .flat_map(|step| step_prompts(&general, &domain, share, seed, step, 8))
                .map(|(p, source)| {
                    assert_eq!(source == Source::Domain, p.id.starts_with('d'));
                    p.id.clone()
                })
                .collect()
        };
        let plain: Vec<String> = (0..200)
            .flat_map(|step| hat::rl::rollout::draws(3, step, 8, general.len(), 1))
            .map(|(i, _)| general[i].id.clone())
            .collect();
        assert_eq!(ids(0.0, 3), plain);
        assert!(ids(1.0, 3).iter().all(|id| id.starts_with('d')));
        let mixed = ids(0.3, 3);
        let share =
            mixed.iter().filter(|id| id.starts_with('d')).count() as f64 / mixed.len() as f64;
        assert!((share - 0.3).abs() < 0.04, "domain share {share}");
        assert_eq!(mixed, ids(0.3, 3), "seeded");
        assert_ne!(mixed, ids(0.3, 4));
    }
}
