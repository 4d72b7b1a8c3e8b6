//! The serve engine's persistent batch and MTP speculation, against the model core run one
//! sequence at a time: the same logits and the same tokens, whatever joins or leaves the batch.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use burn::backend::NdArray;
use hat::model::generation::cache::fill_holes;
use hat::model::generation::sampling::{argmax, SamplingParams};
use hat::model::{Cache, WeightDtype};
use hat::serve::batch::RunningBatch;
use hat::serve::engine::{self, EngineConfig, Event, GenRequest, StepModel};
use hat::serve::metrics::Metrics;
use hat::serve::model::BurnModel;
use hat::tokenizer::{train_bpe, TrainOptions};
use serde_json::Value;
use tokenizers::Tokenizer;

type B = NdArray<f32>;
type M = BurnModel<B>;

fn tiny(vocab: usize) -> M {
    M::random("tiny", vocab, 7, WeightDtype::F32, Default::default())
        .unwrap()
        .with_prefix_cache(0)
}

fn prompt(n: usize, seed: u32) -> Vec<u32> {
    (0..n as u32)
        .map(|i| (i * 37 + seed * 11 + 5) % 300)
        .collect()
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// Sequences join a running batch in two waves, some leave, and the rest go on: every step's
/// logits equal decoding each sequence alone, and greedy decoding picks the same tokens. Joins
/// and departures take both ways through `Cache::join` and `Cache::keep_rows`: rows stacked
/// again (a joiner longer than the batch; the longest leaving) and rows added or picked in place
/// (a shorter joiner; a short one leaving).
#[test]
fn persistent_batch_decodes_like_single_sequences() {
    let mut m = tiny(300);
    // Reference: each sequence on its own cache.
    let mut alone: Vec<Cache<B>> = Vec::new();
    let mut last: Vec<u32> = Vec::new();
    let mut fresh: Vec<Option<Cache<B>>> = [5usize, 70, 1, 130, 33]
        .iter()
        .enumerate()
        .map(|(i, &n)| Some(prefill(&mut m, n, i as u32, &mut alone, &mut last)))
        .collect();
    let mut batch: RunningBatch<B> = m.new_batch();
    // `rows[i]` is the sequence in batch row i.
    let mut rows: Vec<usize> = Vec::new();
    for (wave, joining) in [(0, vec![0usize, 1, 2]), (1, vec![3, 4])] {
        let states = joining.iter().map(|&s| fresh[s].take().unwrap()).collect();
        m.join(&mut batch, states).unwrap();
        rows.extend(&joining);
        let what = format!("wave {wave}");
        steps(&mut m, &mut batch, &rows, &mut alone, &mut last, &what, 3);
    }
    // The longest sequence and the first leave; three go on in their rows.
    m.keep(&mut batch, &[1, 2, 4]).unwrap();
    rows = vec![1, 2, 4];
    let what = "after leaving";
    steps(&mut m, &mut batch, &rows, &mut alone, &mut last, what, 3);
    // A late joiner behind the gaps of the others.
    let late = prefill(&mut m, 9, 9, &mut alone, &mut last);
    m.join(&mut batch, vec![late]).unwrap();
    rows.push(5);
    steps(
        &mut m,
        &mut batch,
        &rows,
        &mut alone,
        &mut last,
        "late join",
        3,
    );
    assert_eq!(batch.rows(), 4);
    // A short sequence leaves while the longest stays: the kept rows are picked out in place.
    m.keep(&mut batch, &[0, 2, 3]).unwrap();
    rows = vec![1, 4, 5];
    let what = "after a short one left";
    steps(&mut m, &mut batch, &rows, &mut alone, &mut last, what, 3);
    // Two more join; then two rows leave from the middle and the last two take their places, as
    // the engine orders a departure (`fill_holes`): only their keys move within the buffers.
    let more = vec![
        prefill(&mut m, 20, 10, &mut alone, &mut last),
        prefill(&mut m, 3, 11, &mut alone, &mut last),
    ];
    m.join(&mut batch, more).unwrap();
    rows.extend([6, 7]);
    let what = "two more joined";
    steps(&mut m, &mut batch, &rows, &mut alone, &mut last, what, 1);
    let order = fill_holes(rows.len(), |r| r != 1 && r != 2);
    assert_eq!(order, [0, 3, 4]);
    m.keep(&mut batch, &order).unwrap();
    rows = order.iter().map(|&r| rows[r]).collect();
    let what = "holes filled from the end";
    steps(&mut m, &mut batch, &rows, &mut alone, &mut last, what, 3);
    // One more joins into a row left spare, over the keys of the sequence that had it.
    let spare = prefill(&mut m, 12, 12, &mut alone, &mut last);
    m.join(&mut batch, vec![spare]).unwrap();
    rows.push(8);
    let what = "joined into a spare row";
    steps(&mut m, &mut batch, &rows, &mut alone, &mut last, what, 3);
    m.keep(&mut batch, &[]).unwrap();
    assert_eq!(batch.rows(), 0);
}

/// Prefills a `n`-token prompt alone, keeps a copy of its state as the sequence's reference (in
/// `alone`) and its first token (in `last`), and returns the state to join a batch with.
fn prefill(
    m: &mut M,
    n: usize,
    seed: u32,
    alone: &mut Vec<Cache<B>>,
    last: &mut Vec<u32>,
) -> Cache<B> {
    let pre = m
        .prefill_batch(vec![(&prompt(n, seed)[..], None)])
        .pop()
        .unwrap()
        .unwrap();
    last.push(argmax(&pre.logits) as u32);
    alone.push(pre.state.clone());
    pre.state
}

/// `n` decode steps of the batch (row r holds sequence `rows[r]`), each against every sequence
/// decoding alone: the same logits to 1e-4 and the same greedy token.
fn steps(
    m: &mut M,
    batch: &mut RunningBatch<B>,
    rows: &[usize],
    alone: &mut [Cache<B>],
    last: &mut [u32],
    what: &str,
    n: usize,
) {
    for i in 0..n {
        let tokens: Vec<u32> = rows.iter().map(|&s| last[s]).collect();
        let got = m.decode(&tokens, batch, None).unwrap().logits;
        for (r, &s) in rows.iter().enumerate() {
            let one = m
                .model
                .decode_step(&[last[s]], std::slice::from_mut(&mut alone[s]))
                .unwrap();
            let d = max_abs_diff(&got[r], &one[0]);
            assert!(
                d < 1e-4,
                "{what}, step {i}: sequence {s} (row {r}) differs by {d}"
            );
            let next = argmax(&got[r]) as u32;
            assert_eq!(
                next,
                argmax(&one[0]) as u32,
                "{what}, step {i}: sequence {s}"
            );
            last[s] = next;
        }
    }
}

fn tokenizer() -> Arc<Tokenizer> {
    let text = std::fs::read_to_string("testdata/ifeval/input_data.jsonl").unwrap();
    let corpus: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["prompt"].as_str().map(str::to_string))
        .collect();
    let opts = TrainOptions {
        vocab_size: 512,
        min_frequency: 2,
    };
    Arc::new(train_bpe(corpus, &opts).unwrap())
}

/// Runs `params` for `prompt` alone on an engine over `model`; returns the text, the completion
/// tokens and the engine's metrics.
fn run_alone(
    model: M,
    tok: &Arc<Tokenizer>,
    prompt: &[u32],
    params: SamplingParams,
) -> (String, usize, Arc<Metrics>) {
    let metrics = Arc::new(Metrics::default());
    let config = EngineConfig {
        queue_capacity: 4,
        max_batch: 4,
        max_context: 4096,
        prefill_chunk: engine::PREFILL_CHUNK,
        max_itl_stretch: engine::MAX_ITL_STRETCH,
    };
    let (handle, thread) = engine::spawn(model, tok.clone(), config, metrics.clone());
    let mut rx = submit(&handle, prompt, params);
    let mut text = String::new();
    let tokens = loop {
        match rx.blocking_recv().expect("an event") {
            Event::Text { text: t, .. } => text.push_str(&t),
            Event::Done {
                completion_tokens, ..
            } => break completion_tokens,
            Event::Error(e) => panic!("{e}"),
        }
    };
    drop(handle);
    thread.join().unwrap();
    (text, tokens, metrics)
}

/// `serve --mtp` gives the text plain decoding gives, greedy and sampled with a seed, for every
/// draft length, and counts its rounds in the metrics.
#[test]
fn mtp_in_the_engine_changes_nothing_but_the_speed() {
    let tok = tokenizer();
    let vocab = tok.get_vocab_size(true);
    let model = || M::random("tiny", vocab, 3, WeightDtype::F32, Default::default()).unwrap();
    let prompt: Vec<u32> = (0..40u32).map(|i| (i * 13 + 7) % vocab as u32).collect();
    let sampled = SamplingParams {
        temperature: 1.0,
        top_k: 20,
        seed: 5,
        max_tokens: 30,
        ..Default::default()
    };
    for params in [SamplingParams::greedy(30), sampled] {
        let (plain, n, _) = run_alone(model(), &tok, &prompt, params.clone());
        assert_eq!(n, 30);
        for k in [1, 3] {
            let (spec, m, metrics) =
                run_alone(model().with_mtp(k).unwrap(), &tok, &prompt, params.clone());
            assert_eq!(spec, plain, "k={k} {params:?}");
            assert_eq!(m, n);
            let rounds = metrics.spec_rounds.load(Relaxed);
            let accepted = metrics.spec_accepted.load(Relaxed);
            // One token from prefill, one plain step to get a hidden state, then rounds that
            // each give their accepted drafts plus one.
            assert!(rounds > 0, "k={k}: no speculative round ran");
            assert_eq!(2 + rounds + accepted, n as u64, "k={k}");
            assert!(metrics.spec_drafted.load(Relaxed) >= accepted);
            assert!(metrics.render().contains("hat_spec_acceptance_rate"));
        }
    }
}

#[test]
fn mtp_needs_a_head() {
    let qwen3 = M::load(
        std::path::Path::new("testdata/model/qwen3_moe"),
        hat::model::WeightDtype::F32,
        Default::default(),
    )
    .unwrap();
    let e = qwen3.with_mtp(2).err().expect("no MTP head");
    assert!(format!("{e:#}").contains("no MTP head"), "{e:#}");
    assert!(tiny(300).with_mtp(0).is_err());
}

/// Submits `prompt` with `params`; the receiver gets its events.
fn submit(
    handle: &engine::EngineHandle,
    prompt: &[u32],
    params: SamplingParams,
) -> tokio::sync::mpsc::UnboundedReceiver<Event> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    handle
        .submit(GenRequest {
            prompt: prompt.to_vec(),
            params,
            top_logprobs: 0,
            tokens_as_ids: false,
            guide: None,
            events: tx,
        })
        .map_err(|e| format!("{e:?}"))
        .unwrap();
    rx
}

/// The text a request streamed and the tokens it counted, once it is done.
fn collect(mut rx: tokio::sync::mpsc::UnboundedReceiver<Event>) -> (String, usize) {
    let mut text = String::new();
    let mut tokens_before_done = 0;
    loop {
        match rx.blocking_recv().expect("an event") {
            Event::Text {
                text: t, tokens, ..
            } => {
                text.push_str(&t);
                tokens_before_done += tokens;
            }
            Event::Done { .. } => return (text, tokens_before_done),
            Event::Error(e) => panic!("{e}"),
        }
    }
}

/// A long prompt that arrives while another request decodes is prefilled a piece per decode step
/// (inside it, through the prefix cache) and still gets the output it gets alone; so does the
/// running one, which decodes long enough (300 steps, however many it takes before the long one is
/// picked up) for 16-token pieces to carry ≥ 1,024 of the 1,100 prompt tokens.
#[test]
fn chunked_prefill_changes_no_output() {
    let tok = tokenizer();
    let vocab = tok.get_vocab_size(true) as u32;
    let short: Vec<u32> = (0..20u32).map(|i| (i * 13 + 7) % vocab).collect();
    let long: Vec<u32> = (0..1100u32).map(|i| (i * 31 + 3) % vocab).collect();
    let model = || {
        M::random(
            "tiny",
            vocab as usize,
            3,
            WeightDtype::F32,
            Default::default(),
        )
        .unwrap()
    };
    let (short_alone, _, _) = run_alone(model(), &tok, &short, SamplingParams::greedy(300));
    let (long_alone, _, _) = run_alone(model(), &tok, &long, SamplingParams::greedy(8));

    let metrics = Arc::new(Metrics::default());
    // Fixed 16-token pieces (no stretch target), whatever the machine's speed.
    let config = EngineConfig {
        queue_capacity: 4,
        max_batch: 4,
        max_context: 4096,
        prefill_chunk: 16,
        max_itl_stretch: 0.0,
    };
    let (handle, thread) = engine::spawn(model(), tok.clone(), config, metrics.clone());
    let greedy = |prompt: &[u32], n| submit(&handle, prompt, SamplingParams::greedy(n));
    let mut running = greedy(&short, 300);
    // Wait for the short request's first token, so the long one arrives mid-decode.
    let mut text = String::new();
    let mut seen = 0;
    while seen == 0 {
        if let Event::Text {
            text: t, tokens, ..
        } = running.blocking_recv().unwrap()
        {
            text.push_str(&t);
            seen += tokens;
        }
    }
    let long_rx = greedy(&long, 8);
    let (rest, _) = collect(running);
    let (long_text, _) = collect(long_rx);
    text.push_str(&rest);
    assert_eq!(text, short_alone);
    assert_eq!(long_text, long_alone);
    // The long prompt was prefilled in chunks between the running request's decode steps.
    let chunked = metrics.chunked_prompt_tokens.load(Relaxed);
    assert!(
        chunked >= 1024,
        "{chunked} prompt tokens prefilled in pieces"
    );
    drop(handle);
    thread.join().unwrap();
}

/// A weight update queued while a request decodes waits for it: that request finishes on the old
/// weights and the one queued after the update runs on the new ones, each giving what its model
/// gives alone. A checkpoint that cannot load fails the update and leaves the weights as they were.
#[test]
fn a_weight_update_waits_for_running_sequences() {
    let tok = tokenizer();
    let vocab = tok.get_vocab_size(true);
    let model =
        |seed| M::random("tiny", vocab, seed, WeightDtype::F32, Default::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    hat::model::io::checkpoint::save(&model(5).model, dir.path(), Default::default()).unwrap();
    let first: Vec<u32> = (0..20u32).map(|i| (i * 13 + 7) % vocab as u32).collect();
    let second: Vec<u32> = (0..30u32).map(|i| (i * 7 + 1) % vocab as u32).collect();
    let (old_first, _, _) = run_alone(model(3), &tok, &first, SamplingParams::greedy(40));
    let (old_second, _, _) = run_alone(model(3), &tok, &second, SamplingParams::greedy(20));
    let (new_second, _, _) = run_alone(model(5), &tok, &second, SamplingParams::greedy(20));
    assert_ne!(
        old_second, new_second,
        "pick seeds whose models answer differently"
    );

    let metrics = Arc::new(Metrics::default());
    let config = EngineConfig {
        queue_capacity: 8,
        max_batch: 4,
        max_context: 4096,
        prefill_chunk: engine::PREFILL_CHUNK,
        max_itl_stretch: engine::MAX_ITL_STRETCH,
    };
    let (handle, thread) = engine::spawn(model(3), tok.clone(), config, metrics.clone());
    let failed = handle.load_weights("/no/such/checkpoint".into()).unwrap();
    assert!(failed.blocking_recv().unwrap().is_err());
    let mut running = submit(&handle, &first, SamplingParams::greedy(40));
    let mut text = match running.blocking_recv().unwrap() {
        Event::Text { text, .. } => text,
        e => panic!("{e:?}"),
    };
    let update = handle.load_weights(dir.path().to_path_buf()).unwrap();
    let after = submit(&handle, &second, SamplingParams::greedy(20));
    text.push_str(&collect(running).0);
    assert_eq!(text, old_first, "the running request switched weights");
    update.blocking_recv().unwrap().unwrap();
    assert_eq!(
        collect(after).0,
        new_second,
        "the request after the update ran on the old weights"
    );
    assert_eq!(metrics.weight_updates.load(Relaxed), 1);
    drop(handle);
    thread.join().unwrap();
}
