//! Truncated importance sampling (TIS) against the rollout engine's log-probabilities (verl's
//! `actor.tis_imp_ratio_cap`, TRL's `vllm_importance_sampling_mode = token_truncate`; reference/
//! rl_algorithms.md §1.8, §7.5).
//!
//! The trainer recomputes `log π_old` of every policy token on its re-rendered view of the episode; the
//! sampler that generated the token gave it `log π_sampler`, through another numeric path (the cached
//! decode, an inference server, lower precision). The policy gradient is an expectation under the
//! sampler, so each token's policy-gradient loss is weighted by `min(π_old / π_sampler, C)`: the
//! importance ratio corrects the mismatch, the cap `C` bounds the variance it adds. The weight is a
//! constant (no gradient flows through it) and, as in verl and TRL, it multiplies the clipped
//! surrogate only, not the KL term. With identical log-probs every weight is exactly 1.
//!
//! The view is rendered again from the messages, so its tokens are not always the ones the sampler
//! drew (the template adds an empty think block and the end-of-turn token of a reply cut at the length
//! limit, a byte-fallback token decodes to U+FFFD and comes back as other tokens, a stop hook rewrites
//! a reply, tool-call JSON is written again). The sampled tokens are lined up with the view's by a
//! diff of the two sequences (Myers, as `similar` computes it): a view token inside a run the diff
//! finds equal takes the sampler's log-prob of its counterpart; the others keep weight 1 and are
//! counted as unmatched (`tis/matched_frac`).

use serde::Serialize;
use similar::{capture_diff_slices, Algorithm, DiffOp};
use tokenizers::Tokenizer;

use crate::policy::sampler_logprobs::SamplerLogprobs;
use crate::record::Trajectory;
use crate::train::view::TrainingView;

/// For every trained token of `view` (in score order), the log-prob the sampler gave that very token
/// when it generated `record`, or `None` where there is none (no record of it, or another token).
pub fn sampler_logprobs(
    view: &TrainingView,
    record: &Trajectory,
    tokenizer: &Tokenizer,
) -> Vec<Option<f64>> {
    let mut out = Vec::with_capacity(view.trained_tokens());
    for s in &view.segments {
        let trained: Vec<u32> = (s.start..s.end)
            .filter(|&t| view.loss_mask[t] == 1)
            .map(|t| view.tokens[t])
            .collect();
        if trained.is_empty() {
            continue;
        }
        let recorded = record.messages.get(s.message).and_then(SamplerLogprobs::of);
        match recorded {
            Some(r) => out.extend(align(&trained, &r, tokenizer)),
            None => out.extend(std::iter::repeat_n(None, trained.len())),
        }
    }
    out
}

/// The sampler's log-prob of each of `trained` that the diff of the two sequences finds equal to a
/// sampled token (by id, or without ids by each id's decoded text), `None` for the rest.
fn align(trained: &[u32], sampled: &SamplerLogprobs, tokenizer: &Tokenizer) -> Vec<Option<f64>> {
    let ops = if sampled.token_ids.is_empty() {
        let texts: Vec<String> = trained
            .iter()
            .map(|&id| tokenizer.decode(&[id], false).unwrap_or_default())
            .collect();
        capture_diff_slices(Algorithm::Myers, &sampled.tokens, &texts)
    } else {
        capture_diff_slices(Algorithm::Myers, &sampled.token_ids, trained)
    };
    let mut out = vec![None; trained.len()];
    for op in ops {
        if let DiffOp::Equal {
            old_index,
            new_index,
            len,
        } = op
        {
            for k in 0..len {
                let lp = sampled.logprobs[old_index + k];
                out[new_index + k] = lp.is_finite().then_some(lp);
            }
        }
    }
    out
}

/// What a step's TIS weights looked like, over the tokens they were computed for (the metrics).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TisStats {
    tokens: usize,
    matched: usize,
    clipped: usize,
    weight_sum: f64,
}

impl TisStats {
    /// Mean weight over the tokens with a sampler log-prob (`tis/mean_ratio`).
    pub fn mean_ratio(&self) -> Option<f64> {
        (self.matched > 0).then(|| self.weight_sum / self.matched as f64)
    }

    /// Share of those whose ratio exceeded the cap (`tis/clipped_frac`).
    pub fn clipped_frac(&self) -> Option<f64> {
        (self.matched > 0).then(|| self.clipped as f64 / self.matched as f64)
    }

    /// Share of all tokens that had a sampler log-prob (`tis/matched_frac`).
    pub fn matched_frac(&self) -> Option<f64> {
        (self.tokens > 0).then(|| self.matched as f64 / self.tokens as f64)
    }
}

/// The weights `min(exp(old − sampler), cap)` of one completion's tokens (1 where the sampler gave
/// none), counted into `stats`. Panics when the two differ in length (a caller's bug).
pub fn tis_weights(
    old: &[f64],
    sampler: &[Option<f64>],
    cap: f64,
    stats: &mut TisStats,
) -> Vec<f64> {
    assert_eq!(old.len(), sampler.len(), "sampler log-probs per token");
    stats.tokens += old.len();
    old.iter()
        .zip(sampler)
        .map(|(&old, &sampled)| match sampled {
            None => 1.0,
            Some(sampled) => {
                let ratio = (old - sampled).exp();
                stats.matched += 1;
                stats.clipped += usize::from(ratio > cap);
                let w = ratio.min(cap);
                stats.weight_sum += w;
                w
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Weights against values worked out by hand: e^0 = 1, e^{1} = 2.718… truncated to the cap 2,
    /// e^{−1.5} = 0.22313016014842982, e^{0.25} = 1.2840254166877414, and 1 where the sampler gave none.
    #[test]
    fn weights_are_the_truncated_ratio_of_trainer_to_sampler() {
        let mut stats = TisStats::default();
        let first = tis_weights(
            &[-1.0, -0.5, -2.0],
            &[Some(-1.0), Some(-1.5), Some(-0.5)],
            2.0,
            &mut stats,
        );
        let second = tis_weights(&[-0.75, -3.0], &[Some(-1.0), None], 2.0, &mut stats);
        let expected = [1.0, 2.0, 0.22313016014842982, 1.2840254166877414, 1.0];
        for (got, want) in first.iter().chain(&second).zip(expected) {
            assert!((got - want).abs() < 1e-15, "{got} vs {want}");
        }
        assert_eq!(stats.clipped_frac(), Some(0.25));
        assert_eq!(stats.matched_frac(), Some(0.8));
        let mean = (1.0 + 2.0 + 0.22313016014842982 + 1.2840254166877414) / 4.0;
        assert!((stats.mean_ratio().unwrap() - mean).abs() < 1e-15);
    }

    #[test]
    fn identical_log_probs_give_weight_exactly_one() {
        let old = [-0.3, -7.25, -1e-9];
        let same: Vec<Option<f64>> = old.iter().map(|&l| Some(l)).collect();
        let mut stats = TisStats::default();
        assert_eq!(tis_weights(&old, &same, 2.0, &mut stats), [1.0; 3]);
        assert_eq!(stats.clipped_frac(), Some(0.0));
        let mut none = TisStats::default();
        assert_eq!(tis_weights(&old, &[None; 3], 2.0, &mut none), [1.0; 3]);
        assert_eq!(none.mean_ratio(), None);
        assert_eq!(none.matched_frac(), Some(0.0));
    }

    #[test]
    fn sampled_tokens_are_found_in_the_view_by_a_diff() {
        let tokenizer = Tokenizer::new(tokenizers::models::bpe::BPE::default());
        let sampled =
            SamplerLogprobs::from_ids(vec![1, 2, 3, 4, 5], &[-0.1, -0.2, -0.3, -0.4, -0.5]);
        let f = |x: f32| Some(f64::from(x));
        // The view adds a think block (8, 8) up front and an end-of-turn token (9), and token 3 came
        // back as two others (6, 7).
        let got = align(&[8, 8, 1, 2, 6, 7, 4, 5, 9], &sampled, &tokenizer);
        assert_eq!(
            got,
            [
                None,
                None,
                f(-0.1),
                f(-0.2),
                None,
                None,
                f(-0.4),
                f(-0.5),
                None
            ]
        );
        let got = align(&[1, 2, 3, 4, 5], &sampled, &tokenizer);
        assert_eq!(got, [f(-0.1), f(-0.2), f(-0.3), f(-0.4), f(-0.5)]);
        // Without ids, by text.
        let texts = SamplerLogprobs {
            token_ids: Vec::new(),
            tokens: vec!["a".into(), "b".into()],
            logprobs: vec![-1.0, -2.0],
        };
        let vocab = [
            ("a".to_string(), 0),
            ("b".to_string(), 1),
            ("c".to_string(), 2),
        ];
        let bpe = tokenizers::models::bpe::BPE::builder()
            .vocab_and_merges(vocab, Vec::new())
            .build()
            .unwrap();
        let tokenizer = Tokenizer::new(bpe);
        assert_eq!(
            align(&[2, 0, 1], &texts, &tokenizer),
            [None, Some(-1.0), Some(-2.0)]
        );
    }
}
