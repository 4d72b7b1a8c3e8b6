//! Sampling, batched decoding, generation, text stop strings, speculative decoding and the local
//! policy, on tiny random models (the presets and the transformers fixtures of tests/model.rs).

use burn::backend::NdArray;
use burn::tensor::activation::log_softmax;
use hat::model::generation::generate::{generate, FinishReason, TextGenerator};
use hat::model::generation::sampling::{log_softmax_at, Sampler, SamplingParams};
use hat::model::presets::preset;
use hat::model::{ids_tensor, CausalLm};
use std::collections::BTreeSet;
use std::path::PathBuf;

type B = NdArray<f32>;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/model")
        .join(name)
}

/// The `tiny` preset (3 DeltaNet + 1 attention layer, MoE, MTP) with a 512-token vocabulary.
fn tiny(seed: u64) -> CausalLm<B> {
    let cfg = preset("tiny", Some(512)).unwrap();
    CausalLm::init(&cfg, seed, &Default::default()).unwrap()
}

fn draws(params: &SamplingParams, logits: &[f32], n: usize) -> Vec<u32> {
    let mut s = Sampler::new(params);
    (0..n).map(|_| s.sample(logits).token).collect()
}

fn sampled(p: SamplingParams) -> SamplingParams {
    SamplingParams {
        temperature: 1.0,
        ..p
    }
}

#[test]
fn same_seed_same_tokens_other_seed_other_tokens() {
    let flat = vec![0.0f32; 1000];
    let p = SamplingParams {
        seed: 7,
        ..Default::default()
    };
    assert_eq!(draws(&p, &flat, 32), draws(&p, &flat, 32));
    let q = SamplingParams {
        seed: 8,
        ..p.clone()
    };
    assert_ne!(draws(&p, &flat, 32), draws(&q, &flat, 32));
}

#[test]
fn top_k_and_top_p_keep_exactly_the_expected_tokens() {
    // Probabilities 0.5, 0.3, 0.15, 0.05 (token order shuffled to make sorting matter).
    let probs = [0.15f32, 0.5, 0.05, 0.3];
    let logits: Vec<f32> = probs.iter().map(|p| p.ln()).collect();
    let support = |p: SamplingParams| draws(&p, &logits, 400).into_iter().collect::<BTreeSet<_>>();
    let base = sampled(SamplingParams {
        seed: 3,
        ..Default::default()
    });
    assert_eq!(
        support(SamplingParams {
            top_k: 2,
            ..base.clone()
        }),
        BTreeSet::from([1, 3])
    );
    assert_eq!(
        support(SamplingParams {
            top_k: 1,
            ..base.clone()
        }),
        BTreeSet::from([1])
    );
    // Just under 0.5 + 0.3: two tokens suffice; just over needs the third.
    assert_eq!(
        support(SamplingParams {
            top_p: 0.79,
            ..base.clone()
        }),
        BTreeSet::from([1, 3])
    );
    assert_eq!(
        support(SamplingParams {
            top_p: 0.81,
            ..base.clone()
        }),
        BTreeSet::from([0, 1, 3])
    );
    assert_eq!(support(base.clone()), BTreeSet::from([0, 1, 2, 3]));
    // Frequencies follow the renormalised distribution: within top-2, 0.5/0.8 = 0.625.
    let n = 4000;
    let ones = draws(
        &SamplingParams {
            top_k: 2,
            ..base.clone()
        },
        &logits,
        n,
    )
    .iter()
    .filter(|&&t| t == 1)
    .count();
    let f = ones as f64 / n as f64;
    assert!((f - 0.625).abs() < 0.03, "token 1 drawn with frequency {f}");
    // Temperature sharpens: at T = 0.25 the top token's share is 0.5^4 / sum p^4 ≈ 0.86.
    let sharp = draws(
        &SamplingParams {
            temperature: 0.25,
            ..base
        },
        &logits,
        n,
    );
    let f = sharp.iter().filter(|&&t| t == 1).count() as f64 / n as f64;
    let expect = 0.5f64.powi(4) / probs.iter().map(|&p| (p as f64).powi(4)).sum::<f64>();
    assert!((f - expect).abs() < 0.03, "T=0.25: {f} vs {expect}");
}

#[test]
fn logprob_is_the_raw_log_softmax_even_when_truncated() {
    let logits = [1.0f32, 3.0, -2.0, 0.5];
    let p = SamplingParams {
        temperature: 0.7,
        top_k: 2,
        seed: 1,
        ..Default::default()
    };
    let mut s = Sampler::new(&p);
    for _ in 0..20 {
        let d = s.sample(&logits);
        let z: f64 = logits.iter().map(|&l| (l as f64).exp()).sum();
        let expect = (logits[d.token as usize] as f64 - z.ln()) as f32;
        assert!((d.logprob - expect).abs() < 1e-6);
        assert!((d.logprob - log_softmax_at(&logits, d.token as usize)).abs() < 1e-7);
    }
}

#[test]
fn invalid_sampling_params_are_rejected() {
    for bad in [
        SamplingParams {
            temperature: -1.0,
            ..Default::default()
        },
        SamplingParams {
            temperature: f32::NAN,
            ..Default::default()
        },
        SamplingParams {
            top_p: 0.0,
            ..Default::default()
        },
        SamplingParams {
            max_tokens: 0,
            ..Default::default()
        },
        SamplingParams {
            stop: vec![String::new()],
            ..Default::default()
        },
    ] {
        assert!(bad.validate().is_err(), "{bad:?}");
    }
}

#[test]
fn temperature_zero_equals_greedy_and_full_recomputation() {
    let m = tiny(1);
    let dev = Default::default();
    let prompt: Vec<u32> = vec![5, 17, 300, 42, 9];
    let g = &generate(&m, &[prompt.clone()], &[SamplingParams::greedy(12)]).unwrap()[0];
    assert_eq!(g.finish_reason, FinishReason::Length);
    assert_eq!(g.tokens, m.generate_greedy(&prompt, 12, &[], &dev).unwrap());
    // Without any cache: arg-max of a full forward over the growing sequence.
    let mut seq = prompt.clone();
    for _ in 0..12 {
        let logits = m
            .forward(ids_tensor::<B>(&[seq.clone()], &dev).unwrap())
            .logits;
        let t = logits.dims()[1];
        let next = logits
            .narrow(1, t - 1, 1)
            .flatten::<1>(0, 2)
            .argmax(0)
            .into_scalar();
        seq.push(next as u32);
    }
    assert_eq!(g.tokens, seq[prompt.len()..]);
}

/// Decoding N sequences of different lengths as one batch gives each the logits it gets alone.
#[test]
fn batched_decode_step_equals_single_sequences() {
    let qwen3 = CausalLm::<B>::load(&fixture("qwen3_moe"), &Default::default()).unwrap();
    for (name, m) in [("tiny qwen3_5_moe", tiny(2)), ("qwen3_moe fixture", qwen3)] {
        let v = m.config.vocab_size as u32;
        let prompts: Vec<Vec<u32>> = [3usize, 9, 1, 6]
            .iter()
            .map(|&n| (0..n as u32).map(|i| (i * 37 + n as u32) % v).collect())
            .collect();
        let mut caches: Vec<_> = prompts
            .iter()
            .map(|p| {
                let mut c = m.new_cache();
                m.prefill(p, &mut c).unwrap();
                c
            })
            .collect();
        let mut alone = caches.clone();
        for step in 0..3u32 {
            let tokens: Vec<u32> = (0..prompts.len() as u32)
                .map(|r| (r * 11 + step * 5 + 1) % v)
                .collect();
            let batched = m.decode_step(&tokens, &mut caches).unwrap();
            for (r, tok) in tokens.iter().enumerate() {
                let single = m.decode_step(&[*tok], &mut alone[r..r + 1]).unwrap();
                let d = batched[r]
                    .iter()
                    .zip(&single[0])
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0f32, f32::max);
                assert!(d < 1e-4, "{name}: row {r} step {step} differs by {d}");
                assert_eq!(caches[r].seq_len, prompts[r].len() + step as usize + 1);
            }
        }
    }
}

#[test]
fn batched_generation_equals_one_at_a_time_and_logprobs_match_a_full_forward() {
    let m = tiny(3);
    let dev = Default::default();
    let prompts: Vec<Vec<u32>> = vec![vec![1, 2, 3], vec![400, 7, 7, 7, 7, 7, 2], vec![99]];
    let params: Vec<SamplingParams> = (0..3)
        .map(|i| SamplingParams {
            temperature: 0.9,
            top_k: 50,
            seed: 10 + i,
            max_tokens: 6 + i as usize,
            logprobs: true,
            ..Default::default()
        })
        .collect();
    let together = generate(&m, &prompts, &params).unwrap();
    for (i, g) in together.iter().enumerate() {
        let alone = generate(&m, &prompts[i..i + 1], &params[i..i + 1]).unwrap();
        assert_eq!(&alone[0], g, "prompt {i}");
        assert_eq!(g.tokens.len(), params[i].max_tokens);
        // log_softmax of one forward over prompt + generation, at the generated tokens.
        let seq: Vec<u32> = prompts[i].iter().chain(&g.tokens).copied().collect();
        let lp = log_softmax(m.forward(ids_tensor::<B>(&[seq], &dev).unwrap()).logits, 2);
        let lp: Vec<f32> = lp.into_data().convert::<f32>().into_vec().unwrap();
        let v = m.config.vocab_size;
        let p = prompts[i].len();
        for (j, (&tok, &got)) in g
            .tokens
            .iter()
            .zip(g.logprobs.as_ref().unwrap())
            .enumerate()
        {
            let want = lp[(p - 1 + j) * v + tok as usize];
            assert!(
                (got - want).abs() < 1e-4,
                "prompt {i} token {j}: {got} vs {want}"
            );
        }
    }
    // Sampling really depends on the seed.
    let other = SamplingParams {
        seed: 999,
        ..params[1].clone()
    };
    let g = generate(&m, &prompts[1..2], &[other]).unwrap();
    assert_ne!(g[0].tokens, together[1].tokens);
}

#[test]
fn stop_token_ids_end_generation_at_their_first_occurrence() {
    let m = tiny(4);
    let prompt = vec![vec![10u32, 20, 30]];
    let free = generate(&m, &prompt, &[SamplingParams::greedy(10)])
        .unwrap()
        .remove(0);
    let stop = free.tokens[3];
    let first = free.tokens.iter().position(|&t| t == stop).unwrap();
    let p = SamplingParams {
        stop_token_ids: vec![stop],
        ..SamplingParams::greedy(10)
    };
    let g = generate(&m, &prompt, &[p]).unwrap().remove(0);
    assert_eq!(g.tokens, free.tokens[..=first]);
    assert_eq!(g.finish_reason, FinishReason::Stop);
    assert_eq!(g.logprobs, None);
}

#[test]
fn bad_inputs_are_errors_that_say_what_is_wrong() {
    let m = tiny(5);
    let err = |prompt: Vec<u32>, p: SamplingParams| {
        format!("{:#}", generate(&m, &[prompt], &[p]).unwrap_err())
    };
    let e = err(vec![1, 2, 3, 5000], SamplingParams::greedy(4));
    assert!(
        e.contains("token id 5000 at position 3 is outside the vocabulary (vocab_size 512)"),
        "{e}"
    );
    let e = err(vec![], SamplingParams::greedy(4));
    assert!(e.contains("empty"), "{e}");
    let e = err(vec![1; 10], SamplingParams::greedy(4090));
    assert!(e.contains("max_position_embeddings"), "{e}");
    let e = format!("{:#}", generate(&m, &[vec![1]], &[]).unwrap_err());
    assert!(e.contains("1 prompts but 0"), "{e}");
    let mut cache = m.new_cache();
    assert!(m.prefill(&[], &mut cache).is_err());
    m.prefill(&[1, 2], &mut cache).unwrap();
    let e = format!(
        "{:#}",
        m.decode_step(&[512], std::slice::from_mut(&mut cache))
            .unwrap_err()
    );
    assert!(e.contains("token id 512 at position 2"), "{e}");
    assert!(m
        .decode_step(&[1, 2], std::slice::from_mut(&mut cache))
        .is_err());
}

/// A `tiny` model saved with a small BPE tokenizer and the Qwen3 chat template.
fn tiny_dir(seed: u64) -> tempfile::TempDir {
    use hat::tokenizer::{save_hf, train_bpe, TrainOptions, QWEN3_CHAT_TEMPLATE};
    let corpus: Vec<String> = (0..300)
        .map(|i| {
            format!(
                "宝宝们，这款羽绒服现在只要¥{}，库存还有{}件！ price {} left {}",
                100 + i,
                i % 37,
                i,
                i % 5
            )
        })
        .collect();
    let tok = train_bpe(
        corpus,
        &TrainOptions {
            vocab_size: 400,
            min_frequency: 2,
        },
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    save_hf(&tok, dir.path(), QWEN3_CHAT_TEMPLATE, 4096).unwrap();
    let cfg = preset("tiny", Some(tok.get_vocab_size(true))).unwrap();
    let m = CausalLm::<B>::init(&cfg, seed, &Default::default()).unwrap();
    hat::model::io::checkpoint::save(&m, dir.path(), Default::default()).unwrap();
    dir
}

#[test]
fn text_stop_strings_cut_the_text_and_end_generation() {
    let dir = tiny_dir(6);
    let g = TextGenerator::<B>::load(dir.path(), &Default::default()).unwrap();
    let prompt = vec!["库存还有".to_string()];
    // Sample a varied continuation, then stop at a piece of its middle.
    let p = SamplingParams {
        seed: 2,
        max_tokens: 24,
        ..Default::default()
    };
    let free = g.generate_text(&prompt, &[p.clone()]).unwrap().remove(0);
    let chars: Vec<char> = free.text.chars().collect();
    assert!(
        chars.len() > 8,
        "continuation too short to test: {:?}",
        free.text
    );
    let stop: String = chars[5..7].iter().collect();
    let cut = free.text.find(&stop).unwrap();
    let stopped = g
        .generate_text(
            &prompt,
            &[SamplingParams {
                stop: vec![stop.clone()],
                ..p
            }],
        )
        .unwrap()
        .remove(0);
    assert_eq!(stopped.text, free.text[..cut], "stop {stop:?}");
    assert_eq!(stopped.generation.finish_reason, FinishReason::Stop);
    assert!(stopped.generation.tokens.len() < free.generation.tokens.len());
    assert_eq!(
        stopped.generation.tokens,
        free.generation.tokens[..stopped.generation.tokens.len()]
    );
}

/// Constrained decoding: the mask sees the text generated so far and what it rules out is never
/// sampled. Here a random model is steered into a tool call's opening markup, and from there
/// `--tool-names listed` lets it write only a listed tool's name — whatever it would sample freely.
#[test]
fn a_masked_generation_writes_only_listed_tool_names() {
    use hat::chat::ToolCallFormat;
    use hat::policy::listed_names::ListedNames;
    let dir = tiny_dir(5);
    let g = TextGenerator::<B>::load(dir.path(), &Default::default()).unwrap();
    let listed = ListedNames::new(&g.tokenizer);
    let format = ToolCallFormat::Hermes;
    let open = format.name_open();
    let names = vec![
        "obtain_skill_body".to_string(),
        "check_inventory".to_string(),
    ];
    let pieces: Vec<String> = (0..g.tokenizer.get_vocab_size(true) as u32)
        .map(|id| g.tokenizer.decode(&[id], false).unwrap_or_default())
        .collect();
    let mut chosen = BTreeSet::new();
    for seed in 0..12 {
        let params = SamplingParams {
            temperature: 1.0,
            seed,
            max_tokens: 40,
            ..Default::default()
        };
        let out = g
            .generate_text_masked("库存还有", &params, |text, logits| {
                // Until the opening markup is written, only tokens that keep writing it.
                if open.len() > text.len() {
                    for (l, p) in logits.iter_mut().zip(&pieces) {
                        let joined = format!("{text}{p}");
                        if p.is_empty() || !(open.starts_with(&joined) || joined.starts_with(open))
                        {
                            *l = f32::NEG_INFINITY;
                        }
                    }
                }
                listed.mask(format, &names, text, logits);
            })
            .unwrap();
        let name = out.text[open.len()..].split('"').next().unwrap_or_default();
        assert!(
            names.iter().any(|n| n == name),
            "seed {seed}: {:?} names a tool that is not listed",
            out.text
        );
        chosen.insert(name.to_string());
    }
    assert_eq!(
        chosen.len(),
        2,
        "sampling reaches both listed names: {chosen:?}"
    );
}

/// Turns of one conversation share their first blocks: with the prefix cache the later turns start
/// from stored states (block ends, a prompt's last chunk boundary, where prompts part), and every
/// generation (tokens and log-probs) is the same bit for bit as on a generator whose cache was
/// cold — in any order — and agrees with one-piece prefill to 1e-4; new weights drop the stored
/// states.
#[test]
fn prefix_cached_generation_does_not_depend_on_what_ran_before() {
    let dir = tiny_dir(8);
    let load = || TextGenerator::<B>::load(dir.path(), &Default::default()).unwrap();
    // ~600 + ~900 token prompts sharing a prefix of whole blocks and more.
    let base: String = (0..120).map(|i| format!("这款羽绒服¥{i}，")).collect();
    // The third parts from the first two inside their shared start, where neither stored a
    // state: after them it stores one there, which a cold generator does not.
    let cut: String = base.chars().take(base.chars().count() * 3 / 4).collect();
    let prompts = [
        format!("{base}库存还有"),
        format!("{base}{}", "price 7 left 3 ".repeat(40)),
        format!("{cut}尺码偏大吗？"),
    ];
    let params = SamplingParams {
        temperature: 1.0,
        seed: 4,
        max_tokens: 12,
        logprobs: true,
        ..Default::default()
    };
    let run = |g: &TextGenerator<B>, i: usize| {
        g.generate_text(&prompts[i..=i], std::slice::from_ref(&params))
            .unwrap()
            .remove(0)
            .generation
    };
    let warm = load();
    let in_order = [run(&warm, 0), run(&warm, 1), run(&warm, 0), run(&warm, 2)];
    let cold = [run(&load(), 0), run(&load(), 1), run(&load(), 2)];
    assert!(
        g_len(&warm, &prompts[0]) > 512,
        "the prompts span whole blocks"
    );
    assert_eq!(in_order[0], cold[0]);
    assert_eq!(
        in_order[1], cold[1],
        "the second prompt started from the first's blocks"
    );
    assert_eq!(in_order[2], cold[0], "and the first again from its own");
    assert_eq!(in_order[3], cold[2], "the third parted from both");

    let whole = run(&load().with_prefix_cache(0), 1);
    let (a, b) = (whole.logprobs.unwrap(), cold[1].clone().logprobs.unwrap());
    assert_eq!(whole.tokens, cold[1].tokens);
    assert!(
        a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-4),
        "{a:?} vs {b:?}"
    );

    // Other weights: the stored states belong to the old ones and must not be reused.
    let mut fresh = load();
    fresh.set_model(tiny_like(&warm, 9));
    let mut reused = load();
    run(&reused, 1);
    reused.set_model(tiny_like(&warm, 9));
    assert_eq!(run(&reused, 1), run(&fresh, 1));
}

fn g_len(g: &TextGenerator<B>, text: &str) -> usize {
    g.encode(text).unwrap().len()
}

/// Random weights of `g`'s shape from another seed.
fn tiny_like(g: &TextGenerator<B>, seed: u64) -> CausalLm<B> {
    CausalLm::init(&g.model().config, seed, &Default::default()).unwrap()
}

#[test]
fn local_policy_answers_a_conversation_with_tools() {
    use hat::policy::local::{LocalOptions, LocalPolicy};
    use hat::policy::{Conversation, Policy};
    use hat::record::{Message, Role, Tool};
    let dir = tiny_dir(7);
    let policy = LocalPolicy::load(
        dir.path(),
        LocalOptions {
            sampling: SamplingParams {
                max_tokens: 16,
                seed: 1,
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .unwrap();
    let tools: Vec<Tool> =
        serde_json::from_value(serde_json::json!([{"type": "function", "function": {
        "name": "check_inventory", "description": "stock of a product",
        "parameters": {"type": "object", "properties": {"sku": {"type": "string"}}}}}]))
        .unwrap();
    let messages = vec![
        Message::text(Role::System, "你是直播间主播。"),
        Message::text(Role::User, "羽绒服还有货吗？"),
    ];
    let conv = Conversation {
        messages: &messages,
        tools: &tools,
        turn_start: 2,
        task: None,
        session: None,
    };
    let a = policy.respond(&conv).unwrap();
    let b = policy.respond(&conv).unwrap();
    assert_eq!(a.role, Role::Assistant);
    assert!(!a.text_content().is_empty() || !a.tool_calls.is_empty());
    assert_eq!(a, b, "same conversation and seed, same reply");
    assert!(policy.name().starts_with("local:"));
}

/// A cache that kept its per-token states takes the last tokens of a forward back (a speculative
/// round's rejected drafts): what follows is what a cache that never saw them gives, on a DeltaNet
/// model; and it refuses to take back more than the forward kept.
#[test]
fn a_cache_takes_back_the_last_tokens_of_a_forward() {
    let m = tiny(8);
    let mut cache = m.new_cache();
    m.extend_stacked(&[vec![3, 50, 7, 90, 11]], &mut cache)
        .unwrap();
    let mut fresh = cache.clone();
    assert!(cache.keep_token_states());
    m.extend_stacked(&[vec![4, 5, 6]], &mut cache).unwrap();
    cache.drop_last(2).unwrap();
    let (taken_back, _) = m.extend_stacked(&[vec![9]], &mut cache).unwrap();
    m.extend_stacked(&[vec![4]], &mut fresh).unwrap();
    let (never_seen, _) = m.extend_stacked(&[vec![9]], &mut fresh).unwrap();
    assert_eq!(cache.seq_len, 7);
    let diff = (taken_back - never_seen).abs().max().into_scalar();
    assert!(diff < 1e-4, "logits differ by {diff}");

    assert!(cache.keep_token_states());
    m.extend_stacked(&[vec![4, 5]], &mut cache).unwrap();
    let e = cache.drop_last(2).unwrap_err();
    assert!(
        format!("{e:#}").contains("cannot take back 2 tokens"),
        "{e:#}"
    );
}

/// Speculative decoding with the MTP head gives the same tokens as plain decoding, greedy and
/// sampled, on a DeltaNet model (rejections restore the recurrent state) and on the transformers
/// fixture.
#[test]
fn mtp_speculative_decoding_matches_plain_decoding() {
    use hat::model::generation::speculative::generate_speculative;
    let q35 = CausalLm::<B>::load(&fixture("qwen3_5_moe"), &Default::default()).unwrap();
    for (name, m) in [("tiny", tiny(8)), ("qwen3_5_moe fixture", q35)] {
        assert!(m.mtp.is_some(), "{name} has an MTP head");
        let prompt = vec![3u32, 50, 7, 90, 11];
        for params in [
            SamplingParams::greedy(20),
            SamplingParams {
                temperature: 1.0,
                top_k: 20,
                seed: 4,
                max_tokens: 20,
                logprobs: true,
                ..Default::default()
            },
        ] {
            let plain = generate(&m, &[prompt.clone()], &[params.clone()])
                .unwrap()
                .remove(0);
            for k in [1, 3] {
                let (spec, stats) = generate_speculative(&m, &prompt, &params, k).unwrap();
                assert_eq!(spec.tokens, plain.tokens, "{name} k={k} {params:?}");
                assert_eq!(spec.finish_reason, plain.finish_reason);
                if let (Some(a), Some(b)) = (&spec.logprobs, &plain.logprobs) {
                    assert!(a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-4));
                }
                assert!(stats.rounds > 0 && stats.accepted <= stats.drafted);
                assert_eq!(
                    1 + stats.rounds + stats.accepted,
                    spec.tokens.len(),
                    "{name}: prefill emits one token, each round accepted + 1"
                );
            }
        }
    }
    let e = generate_speculative(
        &CausalLm::<B>::load(&fixture("qwen3_moe"), &Default::default()).unwrap(),
        &[1],
        &SamplingParams::greedy(3),
        2,
    );
    assert!(format!("{:#}", e.unwrap_err()).contains("no MTP head"));
}
