//! hat::rl against PyTorch: the clipped policy loss and its gradient with respect to every token's
//! log-probability (token, sequence and sequence-token ratios; grpo, dapo and dr_grpo; with and without
//! the k3 KL term), and GRPO/GDPO advantages with a missing reward, from testdata/rl/fixtures.json
//! (scripts/rl_fixtures.py).

mod fake_endpoint;
mod rl_support;
mod serve_support;

use hat::rl::advantage::{advantages, AdvantageConfig, Aggregation, ScaleRewards};
use hat::rl::policy_loss::{
    policy_loss, Completion, ImportanceSamplingLevel, LossType, PolicyLossConfig,
};
use serde_json::Value;

fn fixtures() -> Value {
    let text = std::fs::read_to_string("testdata/rl/fixtures.json").expect("fixture file");
    serde_json::from_str(&text).expect("fixture json")
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

fn ragged(v: &Value) -> Vec<Vec<f64>> {
    v.as_array().expect("array").iter().map(floats).collect()
}

#[test]
fn policy_loss_and_its_gradient_match_pytorch() {
    let f = fixtures();
    let cases = f["policy_loss"].as_array().expect("cases");
    assert!(cases.len() >= 30);
    let mut clipped_cases = 0;
    for (n, case) in cases.iter().enumerate() {
        let level = match case["importance_sampling_level"].as_str() {
            Some("token") => ImportanceSamplingLevel::Token,
            Some("sequence") => ImportanceSamplingLevel::Sequence,
            _ => ImportanceSamplingLevel::SequenceToken,
        };
        let loss_type = match case["loss_type"].as_str() {
            Some("grpo") => LossType::Grpo,
            Some("dapo") => LossType::Dapo,
            _ => LossType::DrGrpo,
        };
        let cfg = PolicyLossConfig {
            epsilon: case["epsilon"].as_f64().unwrap(),
            epsilon_high: case["epsilon_high"].as_f64().unwrap(),
            importance_sampling_level: level,
            loss_type,
            beta: case["beta"].as_f64().unwrap(),
            max_completion_length: case["max_completion_length"].as_u64().unwrap() as usize,
        };
        let (logp, old, reference) = (
            ragged(&case["logp"]),
            ragged(&case["old_logp"]),
            ragged(&case["ref_logp"]),
        );
        let adv = floats(&case["advantages"]);
        let completions: Vec<Completion> = (0..logp.len())
            .map(|i| Completion {
                logp: &logp[i],
                old_logp: &old[i],
                ref_logp: Some(&reference[i]),
                advantage: adv[i],
                token_advantages: None,
                tis_weights: None,
            })
            .collect();
        let out = policy_loss(&completions, &cfg);
        let want = case["loss"].as_f64().unwrap();
        assert!(
            (out.loss - want).abs() < 1e-9,
            "case {n} ({level:?}, {loss_type:?}, β {}): loss {} vs torch {want}",
            cfg.beta,
            out.loss
        );
        for (i, (got, want)) in out.grad.iter().zip(ragged(&case["grad"])).enumerate() {
            for (t, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (g - w).abs() < 1e-9,
                    "case {n} ({level:?}, {loss_type:?}): ∂L/∂logp[{i}][{t}] {g} vs torch {w}"
                );
            }
        }
        clipped_cases += usize::from(out.clip_ratio_region > 0.0);
    }
    // The fixture exercises the clipped branch, not only the on-policy one.
    assert!(clipped_cases >= 10, "{clipped_cases} cases clip");
}

#[test]
fn grpo_and_gdpo_advantages_match_pytorch() {
    let f = fixtures();
    for (n, case) in f["advantages"]
        .as_array()
        .expect("cases")
        .iter()
        .enumerate()
    {
        let rewards: Vec<Vec<Option<f64>>> = case["rewards"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| row.as_array().unwrap().iter().map(Value::as_f64).collect())
            .collect();
        let groups: Vec<usize> = case["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g.as_u64().unwrap() as usize)
            .collect();
        for (aggregation, key) in [
            (Aggregation::SumThenNormalize, "sum_then_normalize"),
            (Aggregation::NormalizeThenSum, "normalize_then_sum"),
        ] {
            let cfg = AdvantageConfig {
                aggregation,
                scale_rewards: ScaleRewards::Group,
                weights: floats(&case["weights"]),
                epsilon: 1e-4,
            };
            let got = advantages(&rewards, &groups, &cfg).values;
            for (i, (g, w)) in got.iter().zip(floats(&case[key])).enumerate() {
                assert!(
                    (g - w).abs() < 1e-9,
                    "case {n} {key} row {i}: {g} vs torch {w}"
                );
            }
        }
    }
}

mod end_to_end {
    use super::rl_support::policy_dir;
    use std::path::Path;
    use std::sync::atomic::AtomicBool;

    use burn::backend::{Autodiff, NdArray};
    use hat::agent::{Agent, SimEnv};
    use hat::hsa::variant::load_harness;
    use hat::model::CausalLm;
    use hat::opd::reverse_kl::KlPenalty;
    use hat::rl::advantage::{AdvantageConfig, Aggregation, ScaleRewards};
    use hat::rl::learner::Start;
    use hat::rl::policy_loss::{ImportanceSamplingLevel, LossType, PolicyLossConfig};
    use hat::rl::remote::{RemoteConfig, RemoteRollouts};
    use hat::rl::trainer::{train, GrpoConfig, Policies, RunInputs, REPLY_REWARDS, TOOL_REWARDS};
    use hat::rl::update::{logprobs, spans_of, update, Batch, UpdateConfig};
    use hat::sim::catalog::{Catalog, Split};
    use hat::sim::faults::FaultPlan;
    use hat::sim::tasks::{generate, TaskConfig};
    use hat::train::optim::{AdamW, AdamWConfig};
    use hat::train::view::ViewBuilder;
    use serde_json::Value;

    type B = Autodiff<NdArray<f32>>;

    fn config(max_steps: usize) -> GrpoConfig {
        let advantage = |n: usize| AdvantageConfig {
            aggregation: Aggregation::NormalizeThenSum,
            scale_rewards: ScaleRewards::Group,
            weights: vec![1.0; n],
            epsilon: 1e-4,
        };
        GrpoConfig {
            max_steps,
            learning_rate: 1e-3,
            warmup_steps: 0,
            adamw: AdamWConfig::default(),
            max_grad_norm: 1.0,
            seed: 5,
            batch_tokens: 8192,
            num_generations: 2,
            tasks_per_step: 2,
            num_iterations: 2,
            tool_advantage: advantage(TOOL_REWARDS.len()),
            reply_advantage: advantage(REPLY_REWARDS.len()),
            loss: PolicyLossConfig {
                epsilon: 0.2,
                epsilon_high: 0.28,
                importance_sampling_level: ImportanceSamplingLevel::Token,
                loss_type: LossType::Dapo,
                beta: 0.0,
                max_completion_length: 12,
            },
            save_steps: 1,
            router_aux_loss_coef: None,
            kl_penalty: KlPenalty {
                kl_penalty_coef: 0.0,
                kl_discount_factor: 0.0,
            },
            tis_imp_ratio_cap: None,
            async_rollouts: false,
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
                    .retain(|k, _| !k.starts_with("time/"));
                v
            })
            .collect()
    }

    /// What the loop tests play in: the sample harness, a 40-product catalog, 8 training tasks, a
    /// random policy whose prompts fit (`dir`), timeouts injected.
    struct World {
        catalog: Catalog,
        tasks: Vec<hat::record::Trajectory>,
        dir: tempfile::TempDir,
        agents: Vec<(String, Agent)>,
        faults: FaultPlan,
        views: ViewBuilder,
    }

    impl World {
        fn new() -> World {
            let (harness, names) = load_harness(Path::new("harness-samples/taolive")).unwrap();
            let catalog = Catalog::generate(7, 40);
            let tasks = generate(&catalog, &TaskConfig::new(Split::Train, 3), 8).unwrap();
            let dir = policy_dir(&harness, &tasks);
            let views = ViewBuilder::from_dir(dir.path()).unwrap();
            World {
                catalog,
                tasks,
                agents: vec![("taolive".to_string(), Agent::new(&harness, names).unwrap())],
                dir,
                faults: "timeout=0.2".parse().unwrap(),
                views,
            }
        }

        fn env(&self) -> SimEnv<'_> {
            SimEnv {
                catalog: &self.catalog,
                faults: &self.faults,
                seed: 11,
            }
        }

        /// Rollouts on the server at `url` (up to /v1) serving `model` (`None`: ask it), writing the
        /// weights it loads under `out`; replies of at most 12 tokens, as `config`'s.
        fn remote(&self, url: &str, model: Option<&str>, out: &Path) -> RemoteRollouts {
            RemoteRollouts::new(
                &RemoteConfig {
                    urls: vec![url.to_string()],
                    model: model.map(str::to_string),
                    api_key: None,
                    timeout: std::time::Duration::from_secs(120),
                    max_tokens: 12,
                    tool_call_format: hat::chat::ToolCallFormat::Hermes,
                },
                &out.join("rollout-weights"),
                hat::tokenizer::load(self.dir.path()).unwrap(),
            )
            .unwrap()
        }

        /// Trains the random policy from scratch (or, with `resume`, from `inputs.out`).
        fn train(
            &self,
            cfg: &GrpoConfig,
            inputs: &RunInputs<'_>,
            resume: bool,
        ) -> anyhow::Result<Vec<std::path::PathBuf>> {
            let model = CausalLm::<B>::load(self.dir.path(), &Default::default()).unwrap();
            train::<B>(
                cfg,
                Policies::Single(Start {
                    model,
                    reference: None,
                }),
                None,
                inputs,
                resume,
                &AtomicBool::new(false),
                &Default::default(),
            )
        }

        /// A run into `out`, one episode at a time or, with `remote`, two at once on its servers.
        fn inputs<'a>(
            &'a self,
            env: &'a SimEnv<'a>,
            out: &'a Path,
            remote: Option<&'a hat::rl::remote::RemoteRollouts>,
        ) -> RunInputs<'a> {
            RunInputs {
                tasks: &self.tasks,
                agents: &self.agents,
                env,
                views: &self.views,
                tokenizer_dir: self.dir.path(),
                out,
                concurrency: if remote.is_some() { 2 } else { 1 },
                remote,
            }
        }
    }

    /// Two GRPO steps of a random policy in the simulator with faults, then the same run resumed from
    /// its step-1 checkpoint: the episodes are judged and written, the metrics carry TRL's names, and
    /// the resumed run reproduces step 2 exactly (task and harness draws, sampling, judging). A random
    /// policy earns the same rewards within a group, so no update happens here: that the update follows
    /// the advantages is `the_update_follows_the_advantages`.
    #[test]
    fn grpo_trains_in_the_simulator_and_resumes_exactly() {
        let world = World::new();
        let env = world.env();
        let run = |out: &Path, resume: bool| {
            let inputs = world.inputs(&env, out, None);
            let model = CausalLm::<B>::load(world.dir.path(), &Default::default()).unwrap();
            train::<B>(
                &config(2),
                Policies::Single(Start {
                    model,
                    reference: None,
                }),
                None,
                &inputs,
                resume,
                &AtomicBool::new(false),
                &Default::default(),
            )
            .unwrap()
        };
        let whole = tempfile::tempdir().unwrap();
        let last = run(whole.path(), false);
        assert_eq!(last, [whole.path().join("checkpoint-000002")]);
        let m = metrics(whole.path());
        assert_eq!(m.len(), 2);
        for key in [
            "reward",
            "rewards/accuracy/mean",
            "frac_reward_zero_std/tool",
            "clip_ratio/region_mean",
            "entropy",
            "completions/mean_length",
            "grad_norm",
        ] {
            assert!(m[1].get(key).is_some(), "metrics lack {key}: {}", m[1]);
        }
        assert_eq!(m[0]["episodes"], 4);
        let step1 =
            std::fs::read_to_string(whole.path().join("rollouts/step-000001.jsonl")).unwrap();
        let episodes: Vec<hat::record::Trajectory> = step1
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(episodes.len(), 4);
        assert!(episodes
            .iter()
            .all(|t| t.scores.effectiveness.is_some() && t.meta.contains_key("rl_group")));
        assert!(whole.path().join("reward.svg").exists());

        let resumed = tempfile::tempdir().unwrap();
        copy_dir(
            &whole.path().join("checkpoint-000001"),
            &resumed.path().join("checkpoint-000001"),
        );
        std::fs::copy(
            whole.path().join("metrics.jsonl"),
            resumed.path().join("metrics.jsonl"),
        )
        .unwrap();
        run(resumed.path(), true);
        assert_eq!(
            metrics(resumed.path()),
            m,
            "the resumed run's metrics differ from the uninterrupted run's"
        );
    }

    /// A tiny policy and two replies to one viewer, as training views: a good one with advantage +1
    /// and a bad one with advantage −1 (one span each).
    fn good_and_bad_replies() -> (
        tempfile::TempDir,
        ViewBuilder,
        Vec<hat::train::view::TrainingView>,
        Vec<hat::rl::update::Span>,
    ) {
        let (harness, _) = load_harness(Path::new("harness-samples/taolive")).unwrap();
        let tasks = generate(
            &Catalog::generate(7, 40),
            &TaskConfig::new(Split::Train, 3),
            8,
        )
        .unwrap();
        let dir = policy_dir(&harness, &tasks);
        let record = |id: &str, reply: &str| -> hat::record::Trajectory {
            serde_json::from_value(serde_json::json!({"id": id, "messages": [
                {"role": "system", "content": "你是直播间主播。"},
                {"role": "user", "content": "这款还有货吗"},
                {"role": "assistant", "content": reply}
            ]}))
            .unwrap()
        };
        let builder = ViewBuilder::from_dir(dir.path()).unwrap();
        let views = vec![
            builder
                .build(&record("good", "宝宝们，这款还有货哦"))
                .unwrap(),
            builder.build(&record("bad", "哈哈")).unwrap(),
        ];
        let spans: Vec<_> = views
            .iter()
            .enumerate()
            .flat_map(|(i, v)| spans_of(i, v, |_| if i == 0 { 1.0 } else { -1.0 }))
            .collect();
        (dir, builder, views, spans)
    }

    /// The update moves probability the way the advantages say: a completion with a positive
    /// advantage becomes likelier, one with a negative advantage less likely, and only the policy's own
    /// tokens (not the viewer's or the tool's) are scored.
    #[test]
    fn the_update_follows_the_advantages() {
        let (dir, builder, views, spans) = good_and_bad_replies();
        assert_eq!(spans.len(), 2);
        let device = Default::default();
        let model = CausalLm::<B>::load(dir.path(), &device).unwrap();
        let pad = builder.end_of_turn();
        let total = |m: &CausalLm<NdArray<f32>>| -> Vec<f64> {
            let (lp, _) = logprobs(m, &views, pad, 4096, &device).unwrap();
            lp.iter().map(|v| v.iter().sum()).collect()
        };
        use burn::module::AutodiffModule;
        let before = total(&model.valid());
        let (old, _) = logprobs(&model.valid(), &views, pad, 4096, &device).unwrap();
        assert_eq!(old[1].len(), views[1].trained_tokens());
        let mut opt = AdamW::new(AdamWConfig::default());
        let (model, out, grad_norm) =
            three_grpo_passes(model, &mut opt, &views, &spans, &old, pad).unwrap();
        let after = total(&model.valid());
        assert!(grad_norm > 0.0);
        assert!(
            after[0] > before[0] + 0.5,
            "the good reply: {} → {}",
            before[0],
            after[0]
        );
        assert!(
            after[1] < before[1] - 0.5,
            "the bad reply: {} → {}",
            before[1],
            after[1]
        );
        // By the third pass the ratios have moved off 1 and some tokens are clipped.
        assert!(out.clip_ratio_region > 0.0, "{out:?}");
    }

    /// `update` as the tests here take it: token-level GRPO (ε 0.2 / 0.28, no KL), three passes at 3e-3,
    /// on `spans` of `views` with the `old` log-probs and no extra terms.
    fn three_grpo_passes(
        model: CausalLm<B>,
        opt: &mut AdamW<NdArray<f32>>,
        views: &[hat::train::view::TrainingView],
        spans: &[hat::rl::update::Span],
        old: &[Vec<f64>],
        pad: u32,
    ) -> anyhow::Result<(CausalLm<B>, hat::rl::policy_loss::PolicyLoss, f64)> {
        let loss = PolicyLossConfig {
            epsilon: 0.2,
            epsilon_high: 0.28,
            importance_sampling_level: ImportanceSamplingLevel::Token,
            loss_type: LossType::Grpo,
            beta: 0.0,
            max_completion_length: 16,
        };
        let settings = UpdateConfig {
            loss: &loss,
            num_iterations: 3,
            learning_rate: 3e-3,
            max_grad_norm: 1.0,
            batch_tokens: 4096,
            aux_coef: 0.0,
            pad,
        };
        let batch = Batch {
            views,
            spans,
            old,
            reference: None,
            token_advantages: None,
            tis_weights: None,
        };
        update(model, opt, &batch, &settings, &Default::default())
    }

    /// A NaN reaching the loss (here through the advantages) stops the update before any weight moves,
    /// with the error the trainer turns into "step N stopped the run: the last good checkpoint is …".
    #[test]
    fn a_nan_advantage_stops_the_update_before_the_weights_move() {
        let (dir, builder, views, _) = good_and_bad_replies();
        let spans: Vec<_> = views
            .iter()
            .enumerate()
            .flat_map(|(i, v)| spans_of(i, v, |_| f64::NAN))
            .collect();
        let device = Default::default();
        let model = CausalLm::<B>::load(dir.path(), &device).unwrap();
        let pad = builder.end_of_turn();
        use burn::module::AutodiffModule;
        let (old, _) = logprobs(&model.valid(), &views, pad, 4096, &device).unwrap();
        let mut opt = AdamW::new(AdamWConfig::default());
        let err = match three_grpo_passes(model, &mut opt, &views, &spans, &old, pad) {
            Ok(_) => panic!("a NaN advantage must not give an update"),
            Err(e) => e,
        };
        assert!(
            err.downcast_ref::<hat::train::optim::NonFiniteGradient>()
                .is_some(),
            "{err:#}"
        );
        assert_eq!(opt.step, 0, "no optimizer step was taken");
    }

    /// The log-probs of `views` after `num_iterations` DAPO updates of a fresh load of the policy in
    /// `dir` (its own AdamW), with optional per-token advantage terms and TIS weights: the one update
    /// the OPD-term and TIS tests compare with and without their extra input.
    #[allow(clippy::too_many_arguments)]
    fn logprobs_after_update(
        dir: &Path,
        views: &[hat::train::view::TrainingView],
        spans: &[hat::rl::update::Span],
        old: &[Vec<f64>],
        num_iterations: usize,
        token_advantages: Option<&[Vec<f64>]>,
        tis_weights: Option<&[Vec<f64>]>,
        pad: u32,
    ) -> Vec<f64> {
        use burn::module::AutodiffModule;
        let device = Default::default();
        let loss = PolicyLossConfig {
            epsilon: 0.2,
            epsilon_high: 0.28,
            importance_sampling_level: ImportanceSamplingLevel::Token,
            loss_type: LossType::Dapo,
            beta: 0.0,
            max_completion_length: 16,
        };
        let settings = UpdateConfig {
            loss: &loss,
            num_iterations,
            learning_rate: 3e-3,
            max_grad_norm: 1.0,
            batch_tokens: 4096,
            aux_coef: 0.0,
            pad,
        };
        let batch = Batch {
            views,
            spans,
            old,
            reference: None,
            token_advantages,
            tis_weights,
        };
        let mut opt = AdamW::new(AdamWConfig::default());
        let model = CausalLm::<B>::load(dir, &device).unwrap();
        let (model, _, _) = update(model, &mut opt, &batch, &settings, &device).unwrap();
        let (lp, _) = logprobs(&model.valid(), views, pad, 4096, &device).unwrap();
        lp.into_iter().flatten().collect()
    }

    /// The OPD term of `grpo-train` through the real update: with `kl_penalty_coef` 0 (any teacher) or
    /// with the student itself as teacher, the term is exactly 0 and the updated weights are exactly
    /// those of the plain GRPO update; a different teacher with λ = 1 gives a non-zero term that moves
    /// the weights.
    #[test]
    fn the_opd_term_is_zero_for_coefficient_0_or_the_student_as_teacher() {
        use burn::module::AutodiffModule;
        use hat::rl::opd_term::opd_term;
        let (dir, builder, views, spans) = good_and_bad_replies();
        let device = Default::default();
        let pad = builder.end_of_turn();
        let student = CausalLm::<B>::load(dir.path(), &device).unwrap();
        let (old, _) = logprobs(&student.valid(), &views, pad, 4096, &device).unwrap();
        // Another random model with the same tokenizer as the teacher.
        let mut cfg = student.config.clone();
        cfg.max_position_embeddings = 16384;
        let other = CausalLm::<NdArray<f32>>::init(&cfg, 11, &device).unwrap();
        let (other_lp, _) = logprobs(&other, &views, pad, 4096, &device).unwrap();
        let after = |term: Option<&[Vec<f64>]>| -> Vec<f64> {
            logprobs_after_update(dir.path(), &views, &spans, &old, 1, term, None, pad)
        };
        let penalty = |coef: f64| KlPenalty {
            kl_penalty_coef: coef,
            kl_discount_factor: 0.0,
        };
        let plain = after(None);

        let (zero_coef, kl) = opd_term(&old, &other_lp, &penalty(0.0));
        assert!(kl.unwrap().abs() > 1e-3, "a random teacher differs: {kl:?}");
        assert!(zero_coef.iter().flatten().all(|&a| a == 0.0));
        assert_eq!(
            after(Some(zero_coef.as_slice())),
            plain,
            "λ = 0 changes the update"
        );

        let (same, kl) = opd_term(&old, &old, &penalty(1.0));
        assert_eq!(kl, Some(0.0));
        assert!(same.iter().flatten().all(|&a| a == 0.0));
        // The student scored again as its own teacher: the same log-probs, so the same zero term.
        let (again, _) = logprobs(&student.valid(), &views, pad, 4096, &device).unwrap();
        let (same_again, _) = opd_term(&old, &again, &penalty(1.0));
        assert!(same_again.iter().flatten().all(|&a| a.abs() < 1e-9));
        assert_eq!(
            after(Some(same.as_slice())),
            plain,
            "a teacher equal to the student changes the update"
        );

        let (term, _) = opd_term(&old, &other_lp, &penalty(1.0));
        assert!(term.iter().flatten().any(|&a| a != 0.0));
        assert_ne!(
            after(Some(term.as_slice())),
            plain,
            "a different teacher must move the update"
        );
    }

    /// TIS through the real update: with sampler log-probs equal to the trainer's own, every weight is
    /// exactly 1 and the updated weights are bit for bit those of the update without TIS; a sampler
    /// that disagrees gives other weights and another update.
    #[test]
    fn tis_with_the_trainers_own_log_probs_is_bit_identical_to_no_tis() {
        use burn::module::AutodiffModule;
        use hat::rl::tis::{tis_weights, TisStats};
        let (dir, builder, views, spans) = good_and_bad_replies();
        let device = Default::default();
        let pad = builder.end_of_turn();
        let student = CausalLm::<B>::load(dir.path(), &device).unwrap();
        let (old, _) = logprobs(&student.valid(), &views, pad, 4096, &device).unwrap();
        let after = |weights: Option<&[Vec<f64>]>| -> Vec<f64> {
            logprobs_after_update(dir.path(), &views, &spans, &old, 2, None, weights, pad)
        };
        // The weights of every span (completion) against a sampler that gave `shift(log π_old)`.
        let weights = |shift: f64| -> (Vec<Vec<f64>>, TisStats) {
            let mut stats = TisStats::default();
            let w = spans
                .iter()
                .map(|s| {
                    let own = &old[s.view][s.first..s.first + s.len];
                    let sampler: Vec<Option<f64>> = own.iter().map(|&l| Some(l - shift)).collect();
                    tis_weights(own, &sampler, 2.0, &mut stats)
                })
                .collect();
            (w, stats)
        };
        let plain = after(None);
        let (same, stats) = weights(0.0);
        assert!(same.iter().flatten().all(|&w| w == 1.0));
        assert_eq!(stats.matched_frac(), Some(1.0));
        assert_eq!(
            after(Some(same.as_slice())),
            plain,
            "TIS with the trainer's own log-probs changes the update"
        );
        // A sampler that gave every token 0.3 nats less: ratios e^{0.3}, the update moves further.
        let (lower, _) = weights(0.3);
        assert!(lower
            .iter()
            .flatten()
            .all(|&w| (w - 0.3f64.exp()).abs() < 1e-12));
        assert_ne!(after(Some(lower.as_slice())), plain);
    }

    /// The local policy records, for every token it generated, the log-prob its sampler gave it: the
    /// model's own log-softmax of that token, as the trainer's teacher-forced forward computes it
    /// (another code path: full sequence, no KV cache). The view of the episode finds them again.
    #[test]
    fn the_local_policy_records_the_models_own_log_probs() {
        use hat::model::generation::generate::TextGenerator;
        use hat::model::generation::sampling::SamplingParams;
        use hat::policy::local::{LocalOptions, LocalPolicy};
        use hat::policy::sampler_logprobs::SamplerLogprobs;
        use hat::policy::{Conversation, Policy};
        use hat::record::{Message, Role, Trajectory};
        use hat::rl::tis::sampler_logprobs;
        use hat::train::view::TrainingView;
        let (harness, _) = load_harness(Path::new("harness-samples/taolive")).unwrap();
        let tasks = generate(
            &Catalog::generate(7, 40),
            &TaskConfig::new(Split::Train, 3),
            8,
        )
        .unwrap();
        let dir = policy_dir(&harness, &tasks);
        let options = LocalOptions {
            sampling: SamplingParams {
                temperature: 1.0,
                max_tokens: 24,
                seed: 4,
                logprobs: true,
                ..SamplingParams::default()
            },
            ..LocalOptions::default()
        };
        let policy = LocalPolicy::load(dir.path(), options).unwrap();
        let mut messages = vec![
            Message::text(Role::System, "你是直播间主播。"),
            Message::text(Role::User, "这款还有货吗"),
        ];
        let conv = Conversation {
            messages: &messages,
            tools: &[],
            turn_start: 2,
            task: None,
            session: None,
        };
        let reply = policy.respond(&conv).unwrap();
        let recorded = SamplerLogprobs::of(&reply).expect("the reply carries its log-probs");
        assert!(!recorded.is_empty());
        assert_eq!(recorded.token_ids.len(), recorded.len());

        let generator =
            TextGenerator::<NdArray<f32>>::load(dir.path(), &Default::default()).unwrap();
        let rendered: Vec<Value> = messages
            .iter()
            .map(|m| serde_json::to_value(m).unwrap())
            .collect();
        let prompt = generator
            .encode(&generator.render_chat(&rendered, None).unwrap())
            .unwrap();
        let mut tokens = prompt.clone();
        tokens.extend(&recorded.token_ids);
        let view = TrainingView {
            id: "forced".into(),
            loss_mask: (0..tokens.len())
                .map(|k| u8::from(k >= prompt.len()))
                .collect(),
            tokens,
            segments: Vec::new(),
            weights: None,
        };
        let pad = generator.eos_token_ids[0];
        let (forced, _) =
            logprobs(generator.model(), &[view], pad, 8192, &Default::default()).unwrap();
        assert_eq!(forced[0].len(), recorded.len());
        for (k, (f, r)) in forced[0].iter().zip(&recorded.logprobs).enumerate() {
            assert!(
                (f - r).abs() < 1e-5,
                "token {k}: forward {f} vs sampler {r}"
            );
        }

        // The training view of the episode lines the recorded log-probs up with its own tokens.
        messages.push(reply);
        let record = Trajectory {
            id: "episode".into(),
            task: None,
            harness: None,
            tools: Vec::new(),
            messages,
            scores: Default::default(),
            meta: Default::default(),
            extra: Default::default(),
        };
        let builder = ViewBuilder::from_dir(dir.path()).unwrap();
        let view = builder.build(&record).unwrap();
        let aligned = sampler_logprobs(&view, &record, builder.tokenizer());
        assert_eq!(aligned.len(), view.trained_tokens());
        let matched: Vec<f64> = aligned.iter().flatten().copied().collect();
        assert!(!matched.is_empty(), "no generated token found in the view");
        assert!(matched.iter().all(|lp| recorded.logprobs.contains(lp)));
        eprintln!(
            "view: {} trained tokens, {} with the sampler's log-prob",
            aligned.len(),
            matched.len()
        );
    }

    /// The weight loads our server at `url` (up to /v1) has counted (`/metrics`).
    fn weight_updates(url: &str) -> u64 {
        let root = url.trim_end_matches("/v1");
        let text = ureq::get(&format!("{root}/metrics"))
            .call()
            .unwrap()
            .into_string()
            .unwrap();
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix("hat_weight_updates_total "));
        line.unwrap().parse().unwrap()
    }

    /// Copies `from` (a checkpoint directory) to `to`.
    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for f in std::fs::read_dir(from).unwrap() {
            let f = f.unwrap();
            std::fs::copy(f.path(), to.join(f.file_name())).unwrap();
        }
    }

    /// Rollouts on our own server (`serve --enable-weight-updates`), started on OTHER weights than the
    /// trainer's: before each of two steps the trainer writes its weights and the server loads them.
    /// Afterwards the server scores a prompt exactly as the weights the trainer last wrote do, and
    /// not as its own starting weights; the episodes are the server's (its model name on them), and
    /// the log-probs it reported for the tokens it sampled line up with the trainer's (TIS).
    #[test]
    fn rollouts_on_a_server_that_loads_each_steps_weights() {
        let world = World::new();
        let served = tempfile::tempdir().unwrap();
        copy_dir(world.dir.path(), served.path());
        let own = CausalLm::<NdArray<f32>>::load(world.dir.path(), &Default::default()).unwrap();
        let other = CausalLm::<NdArray<f32>>::init(&own.config, 9, &Default::default()).unwrap();
        hat::model::io::checkpoint::save(&other, served.path(), Default::default()).unwrap();
        let context = own.config.max_position_embeddings;
        let (rt, server, url) =
            super::serve_support::serve_checkpoint(served.path(), "served", context, true);

        let env = world.env();
        let out = tempfile::tempdir().unwrap();
        let mut cfg = config(2);
        cfg.tis_imp_ratio_cap = Some(2.0);
        let remote = world.remote(&url, None, out.path());
        let inputs = world.inputs(&env, out.path(), Some(&remote));
        world.train(&cfg, &inputs, false).unwrap();
        let m = metrics(out.path());
        assert_eq!(m.len(), 2);
        for step in &m {
            assert!(step["tis/matched_frac"].as_f64().unwrap() > 0.3, "{step}");
            let ratio = step["tis/mean_ratio"].as_f64().unwrap();
            assert!((ratio - 1.0).abs() < 1e-2, "{step}");
        }
        let step2 = std::fs::read_to_string(out.path().join("rollouts/step-000002.jsonl")).unwrap();
        let episodes: Vec<hat::record::Trajectory> = step2
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(episodes.len(), 4);
        assert!(episodes.iter().all(|t| t.meta["policy"] == "served"));
        use hat::serve::prompt_logprobs::{ModelScorer, PromptScorer};
        let prompt: Vec<u32> = (5..60).collect();
        let body = serde_json::json!({"model": "served", "prompt": prompt, "max_tokens": 0,
            "prompt_logprobs": 0});
        let answer: Value = serde_json::from_str(
            &ureq::post(&format!("{url}/completions"))
                .set("Content-Type", "application/json")
                .send_string(&body.to_string())
                .unwrap()
                .into_string()
                .unwrap(),
        )
        .unwrap();
        let rows = &answer["choices"][0]["prompt_logprobs"];
        let gap = |model: CausalLm<NdArray<f32>>| -> f64 {
            let want = ModelScorer::new(model, Default::default())
                .score(&prompt, 0)
                .unwrap();
            want.iter()
                .enumerate()
                .map(|(t, w)| {
                    let got = rows[t + 1][w.token.to_string()]["logprob"]
                        .as_f64()
                        .unwrap();
                    (got - f64::from(w.logprob)).abs()
                })
                .fold(0.0, f64::max)
        };
        let synced = out.path().join("rollout-weights");
        let synced = CausalLm::<NdArray<f32>>::load(&synced, &Default::default()).unwrap();
        assert!(
            gap(synced) < 1e-5,
            "the server does not run the trainer's weights"
        );
        assert!(
            gap(other) > 1e-3,
            "pick starting weights that score differently"
        );
        assert_eq!(weight_updates(&url), 2);

        // The server gone, a resumed run stops at the next step's sync, naming it.
        rt.block_on(server.shutdown()).unwrap();
        drop(rt);
        let e = world.train(&config(3), &inputs, true).unwrap_err();
        assert!(
            format!("{e:#}").contains(&format!(
                "{}/update_weights_from_disk",
                url.trim_end_matches("/v1")
            )),
            "{e:#}"
        );
        assert_eq!(metrics(out.path()).len(), 2);
    }

    /// `--async`: each step's successor is played on the server while the step learns, one step
    /// stale (`staleness` 0, 1, 1; `rl_policy_step` 0, 0, 1 on the episodes), with two weight loads
    /// for three steps (before the first step, and before the third step's rollouts). A run resumed
    /// from the step-2 checkpoint takes step 3's rollouts from where step 2 left them — with the
    /// server gone — and gives the uninterrupted run's metrics.
    #[test]
    fn async_rollouts_run_one_step_ahead_and_resume_exactly() {
        let world = World::new();
        let context = CausalLm::<NdArray<f32>>::load(world.dir.path(), &Default::default())
            .unwrap()
            .config
            .max_position_embeddings;
        let (rt, server, url) =
            super::serve_support::serve_checkpoint(world.dir.path(), "served", context, true);
        let env = world.env();
        let mut cfg = config(3);
        cfg.async_rollouts = true;
        cfg.tis_imp_ratio_cap = Some(2.0);
        let run = |out: &Path, resume: bool| {
            let remote = world.remote(&url, Some("served"), out);
            world
                .train(&cfg, &world.inputs(&env, out, Some(&remote)), resume)
                .unwrap()
        };
        let whole = tempfile::tempdir().unwrap();
        run(whole.path(), false);
        let m = metrics(whole.path());
        let staleness: Vec<u64> = m.iter().map(|r| r["staleness"].as_u64().unwrap()).collect();
        assert_eq!(staleness, [0, 1, 1]);
        for (step, played_by) in [(1, 0), (2, 0), (3, 1)] {
            let path = whole.path().join(format!("rollouts/step-{step:06}.jsonl"));
            let text = std::fs::read_to_string(path).unwrap();
            assert!(text
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .all(|t| t["meta"]["rl_policy_step"] == played_by));
        }
        assert_eq!(weight_updates(&url), 2);
        rt.block_on(server.shutdown()).unwrap();
        drop(rt);

        let resumed = tempfile::tempdir().unwrap();
        copy_dir(
            &whole.path().join("checkpoint-000002"),
            &resumed.path().join("checkpoint-000002"),
        );
        std::fs::create_dir_all(resumed.path().join("rollouts")).unwrap();
        for f in ["metrics.jsonl", "rollouts/ahead-step-000003.json"] {
            std::fs::copy(whole.path().join(f), resumed.path().join(f)).unwrap();
        }
        run(resumed.path(), true);
        assert_eq!(metrics(resumed.path()), m);
    }

    /// A rollout server that starts failing mid-run: requests are retried, episodes that still fail
    /// are left out of their groups and counted (`rollout_errors`), and the step in which none could
    /// be played stops the run, naming the step and the error, with the steps before it kept.
    #[test]
    fn a_failing_rollout_server_drops_episodes_then_stops_the_run() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let world = World::new();
        // Weight loads succeed; chat requests 0..6 get a reply, every later one a 500.
        let chats = AtomicUsize::new(0);
        let (url, _) = super::fake_endpoint::serve_json(move |body, _| {
            if body.contains("model_path") {
                return (
                    200,
                    serde_json::json!({"success": true, "message": "loaded"}),
                );
            }
            if chats.fetch_add(1, Ordering::SeqCst) < 6 {
                let msg = serde_json::json!({"role": "assistant", "content": "宝宝们好"});
                (200, serde_json::json!({"choices": [{"message": msg}]}))
            } else {
                (500, serde_json::json!({"error": "the server is down"}))
            }
        });
        let env = world.env();
        let out = tempfile::tempdir().unwrap();
        let remote = world.remote(&format!("{url}/v1"), Some("fake"), out.path());
        let e = train::<B>(
            &config(3),
            Policies::Single(Start {
                model: CausalLm::<B>::load(world.dir.path(), &Default::default()).unwrap(),
                reference: None,
            }),
            None,
            &RunInputs {
                // One episode at a time: requests arrive in a fixed order.
                concurrency: 1,
                ..world.inputs(&env, out.path(), Some(&remote))
            },
            false,
            &AtomicBool::new(false),
            &Default::default(),
        )
        .unwrap_err();
        let e = format!("{e:#}");
        assert!(
            e.contains("step 3: none of the 4 episodes could be played"),
            "{e}"
        );
        assert!(e.contains("the server is down"), "{e}");
        let m = metrics(out.path());
        assert_eq!(m.len(), 2);
        assert_eq!(
            (&m[0]["episodes"], &m[0]["rollout_errors"]),
            (&4.into(), &0.into())
        );
        assert_eq!(
            (&m[1]["episodes"], &m[1]["rollout_errors"]),
            (&2.into(), &2.into())
        );
    }

    /// Two-agent mode through the whole loop: two steps of a random tool agent and reply agent in the
    /// simulator, with the OPD term against a random teacher so that the models move, then the run
    /// resumed from both agents' step-1 checkpoints gives the same metrics. Every policy message is
    /// tagged with its author; an agent that wrote nothing keeps its weights.
    #[test]
    fn two_agents_train_and_resume_exactly() {
        use burn::module::AutodiffModule;
        let world = World::new();
        let env = world.env();
        let device = Default::default();
        let mut cfg = config(2);
        cfg.kl_penalty.kl_penalty_coef = 1.0;
        let run = |out: &Path, resume: bool| {
            let inputs = world.inputs(&env, out, None);
            let start = || Start {
                model: CausalLm::<B>::load(world.dir.path(), &device).unwrap(),
                reference: None,
            };
            let mut teacher_cfg = start().model.config.clone();
            teacher_cfg.max_position_embeddings = 16384;
            let teacher = CausalLm::<NdArray<f32>>::init(&teacher_cfg, 11, &device).unwrap();
            train::<B>(
                &cfg,
                Policies::TwoAgent {
                    tool: start(),
                    reply: start(),
                },
                Some(teacher),
                &inputs,
                resume,
                &AtomicBool::new(false),
                &device,
            )
            .unwrap()
        };
        let whole = tempfile::tempdir().unwrap();
        let last = run(whole.path(), false);
        assert_eq!(
            last,
            [
                whole.path().join("tool/checkpoint-000002"),
                whole.path().join("reply/checkpoint-000002")
            ]
        );
        let m = metrics(whole.path());
        assert_eq!(m.len(), 2);
        for key in [
            "reward",
            "tool/loss",
            "tool/completions",
            "reply/grad_norm",
            "reply/opd/reverse_kl",
        ] {
            assert!(m[1].get(key).is_some(), "metrics lack {key}: {}", m[1]);
        }
        let step1 =
            std::fs::read_to_string(whole.path().join("rollouts/step-000001.jsonl")).unwrap();
        for line in step1.lines() {
            let t: hat::record::Trajectory = serde_json::from_str(line).unwrap();
            for msg in t.messages.iter().filter(|m| m.is_trained()) {
                assert!(
                    hat::agent::two_agent::AgentRole::of(msg).is_some(),
                    "an untagged policy message in {}",
                    t.id
                );
            }
        }
        // Each agent moved exactly when it wrote something (the OPD term gives every token a gradient).
        let probe = [world
            .views
            .build(
                &serde_json::from_value(serde_json::json!({"id": "probe", "messages": [
                    {"role": "system", "content": "你是直播间主播。"},
                    {"role": "user", "content": "这款还有货吗"},
                    {"role": "assistant", "content": "宝宝们，这款还有货哦"}
                ]}))
                .unwrap(),
            )
            .unwrap()];
        let pad = world.views.end_of_turn();
        let scored = |d: &Path| -> Vec<f64> {
            let m = CausalLm::<B>::load(d, &device).unwrap().valid();
            logprobs(&m, &probe, pad, 4096, &device).unwrap().0.concat()
        };
        let initial = scored(world.dir.path());
        for (agent, ckpt) in ["tool", "reply"].iter().zip(&last) {
            let wrote: u64 = m
                .iter()
                .map(|r| r[format!("{agent}/completions")].as_u64().unwrap())
                .sum();
            assert_eq!(
                scored(ckpt) != initial,
                wrote > 0,
                "{agent} wrote {wrote} completions"
            );
        }

        let resumed = tempfile::tempdir().unwrap();
        for agent in ["tool", "reply"] {
            copy_dir(
                &whole.path().join(agent).join("checkpoint-000001"),
                &resumed.path().join(agent).join("checkpoint-000001"),
            );
        }
        std::fs::copy(
            whole.path().join("metrics.jsonl"),
            resumed.path().join("metrics.jsonl"),
        )
        .unwrap();
        run(resumed.path(), true);
        assert_eq!(
            metrics(resumed.path()),
            m,
            "the resumed two-agent run's metrics differ from the uninterrupted run's"
        );
        for agent in ["tool", "reply"] {
            let ckpt = |root: &Path| root.join(agent).join("checkpoint-000002");
            assert_eq!(scored(&ckpt(resumed.path())), scored(&ckpt(whole.path())));
        }
    }

    /// The two-agent update on a made-up episode: a tool call, a malformed call attempt (written by the
    /// tool agent, though it renders as a reply) and the reply agent's answer. Each completion goes to
    /// its author with its author's advantage; with the reply reward zeroed the reply model keeps every
    /// weight while the tool model moves, and the other way round.
    #[test]
    fn each_agent_learns_only_its_own_moves_with_its_own_reward() {
        use burn::module::AutodiffModule;
        use hat::agent::two_agent::AgentRole;
        use hat::rl::learner::{Learner, StepData};
        use hat::rl::sides::completions;
        let (dir, builder, _, _) = good_and_bad_replies();
        let device = Default::default();
        let pad = builder.end_of_turn();
        let episode = |id: &str, answer: &str| -> hat::record::Trajectory {
            serde_json::from_value(serde_json::json!({"id": id, "messages": [
                {"role": "system", "content": "你是直播间主播。"},
                {"role": "user", "content": "这款还有货吗"},
                {"role": "assistant", "content": "<tool_call>{\"name\": \"get_st", "agent": "tool"},
                {"role": "user", "content": "[tool-call error] the call is not valid JSON"},
                {"role": "assistant", "content": "", "agent": "tool", "tool_calls": [{"id": "call_2_0",
                    "type": "function", "function": {"name": "get_stock", "arguments": "{\"product_id\": \"p1\"}"}}]},
                {"role": "tool", "tool_call_id": "call_2_0", "content": "{\"stock\": 3}"},
                {"role": "assistant", "content": answer, "agent": "reply"}
            ]}))
            .unwrap()
        };
        let episodes = [episode("a", "宝宝们，还有3件哦"), episode("b", "哈哈")];
        let refs: Vec<&hat::record::Trajectory> = episodes.iter().collect();
        let cfg = config(1);
        let step = |tool_adv: [f64; 2], reply_adv: [f64; 2]| -> [bool; 2] {
            let c = completions(&refs, &builder, [&tool_adv, &reply_adv], true);
            let sides: Vec<(AgentRole, hat::train::view::SegmentKind, f64)> = c
                .spans
                .iter()
                .filter(|(_, s)| s.view == 0)
                .map(|(side, s)| (*side, s.kind, s.advantage))
                .collect();
            use hat::train::view::SegmentKind::{Reply, ToolCall};
            assert_eq!(
                sides,
                [
                    (AgentRole::Tool, Reply, tool_adv[0]),
                    (AgentRole::Tool, ToolCall, tool_adv[0]),
                    (AgentRole::Reply, Reply, reply_adv[0])
                ]
            );
            let data = StepData {
                views: &c.views,
                teacher: None,
                sampler: None,
                learning_rate: 3e-3,
                pad,
            };
            [AgentRole::Tool, AgentRole::Reply].map(|role| {
                let out = tempfile::tempdir().unwrap();
                let start = Start {
                    model: CausalLm::<B>::load(dir.path(), &device).unwrap(),
                    reference: None,
                };
                let learner = Learner::new(
                    Some(role),
                    start,
                    out.path().to_path_buf(),
                    &cfg,
                    dir.path(),
                    false,
                    &device,
                )
                .unwrap();
                let before = logprobs(&learner.model.valid(), &c.views, pad, 4096, &device)
                    .unwrap()
                    .0;
                let own: Vec<_> = c
                    .spans
                    .iter()
                    .filter(|(side, _)| *side == role)
                    .map(|(_, s)| *s)
                    .collect();
                let (learner, _) = learner.learn(&own, &data, &cfg, &device).unwrap();
                let after = logprobs(&learner.model.valid(), &c.views, pad, 4096, &device)
                    .unwrap()
                    .0;
                after != before
            })
        };
        assert_eq!(
            step([1.0, -1.0], [0.0, 0.0]),
            [true, false],
            "reply reward zeroed"
        );
        assert_eq!(
            step([0.0, 0.0], [1.0, -1.0]),
            [false, true],
            "tool reward zeroed"
        );
    }
}
