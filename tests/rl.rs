//! hat::rl against PyTorch: the clipped policy loss and its gradient with respect to every token's
//! log-probability (token, sequence and sequence-token ratios; grpo, dapo and dr_grpo; with and without
//! the k3 KL term), and GRPO/GDPO advantages with a missing reward, from testdata/rl/fixtures.json
//! (scripts/rl_fixtures.py).

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
