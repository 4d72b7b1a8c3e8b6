//! Training core: the training view's mask, bucketing, schedule, AdamW, clipping, accumulation,
//! checkpoints (atomic, corruption detected), exact resume, and bad inputs.

use std::sync::atomic::AtomicBool;

use burn::backend::{Autodiff, NdArray};
use burn::module::{Module, Param};
use burn::prelude::*;
use burn::tensor::TensorData;
use hat::eval::free_opening::free_openings;
use hat::eval::name_ranking::rank_names;
use hat::model::generation::generate::TextGenerator;
use hat::model::{presets, CausalLm};
use hat::record::Trajectory;
use hat::tokenizer::{save_hf, train_bpe, TrainOptions, QWEN3_CHAT_TEMPLATE};
use hat::train::batch::{bucket, bucket_shared, shared_prefix, to_tensors, Cursor, Sampler};
use hat::train::checkpoint;
use hat::train::data::load_views;
use hat::train::optim::{
    cosine_with_warmup, fresh_leaves, AdamW, AdamWConfig, GradBuffer, LrSchedulerType,
};
use hat::train::trainer::{
    dev_metrics, masked_token_loss, micro_batch_loss, train, trained_token_loss, Outcome, RunDirs,
    TrainConfig, TrainData,
};
use hat::train::view::{check_tokenizer_fits, SegmentKind, Skip, TrainingView, ViewBuilder};
use serde_json::json;
use tempfile::TempDir;

type B = Autodiff<NdArray<f32>>;
type Inner = NdArray<f32>;

/// A record with a tool call, its result and a final reply.
fn record(id: &str, question: &str, reply: &str) -> Trajectory {
    record_with_system(
        id,
        "You are the host of a live shopping stream.",
        question,
        reply,
    )
}

fn record_with_system(id: &str, system: &str, question: &str, reply: &str) -> Trajectory {
    serde_json::from_value(json!({
        "id": id,
        "tools": [{"type": "function", "function": {"name": "check_inventory", "description": "Stock of a product.",
                   "parameters": {"type": "object", "properties": {"product_id": {"type": "string"}}}}}],
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": question},
            {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "check_inventory", "arguments": "{\"product_id\": \"p1\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "{\"stock\": 3}"},
            {"role": "assistant", "content": reply}
        ]
    }))
    .unwrap()
}

/// A small BPE tokenizer with the Qwen3 chat template, trained on text like the records'.
fn tokenizer_dir() -> TempDir {
    let mut corpus = Vec::new();
    for i in 0..60 {
        corpus.push(format!(
            "<|im_start|>user\nIs p{i} in stock? Yes, {i} left.<|im_end|>\n<tool_call>\n{{\"name\": \"check_inventory\", \"arguments\": {{\"product_id\": \"p{i}\"}}}}\n</tool_call> You are the host of a live shopping stream. Stock of a product. function parameters type object properties string"
        ));
    }
    let tok = train_bpe(
        corpus,
        &TrainOptions {
            vocab_size: 700,
            min_frequency: 2,
        },
    )
    .unwrap();
    let dir = TempDir::new().unwrap();
    save_hf(&tok, dir.path(), QWEN3_CHAT_TEMPLATE, 4096).unwrap();
    dir
}

fn decode(b: &ViewBuilder, ids: &[u32]) -> String {
    b.tokenizer().decode(ids, false).unwrap()
}

/// Maximal runs of mask = 1 as (start, end).
fn runs(mask: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, &m) in mask.iter().chain(std::iter::once(&0)).enumerate() {
        match (m, start) {
            (1, None) => start = Some(i),
            (0, Some(s)) => {
                out.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    out
}

#[test]
fn view_masks_exactly_the_generated_assistant_tokens() {
    let dir = tokenizer_dir();
    let b = ViewBuilder::from_dir(dir.path()).unwrap();
    let v = b
        .build(&record("r1", "Is p1 in stock?", "Yes, 3 left."))
        .unwrap();
    assert_eq!(v.tokens.len(), v.loss_mask.len());
    let call = "<think>\n\n</think>\n\n<tool_call>\n{\"name\": \"check_inventory\", \"arguments\": {\"product_id\": \"p1\"}}\n</tool_call><|im_end|>";
    let reply = "<think>\n\n</think>\n\nYes, 3 left.<|im_end|>";
    let r = runs(&v.loss_mask);
    assert_eq!(r.len(), 2, "two assistant turns, two trained spans: {r:?}");
    assert_eq!(decode(&b, &v.tokens[r[0].0..r[0].1]), call);
    assert_eq!(decode(&b, &v.tokens[r[1].0..r[1].1]), reply);
    // Right before each span: the untrained generation header; right after: the untrained newline.
    assert!(decode(&b, &v.tokens[..r[0].0]).ends_with("<|im_start|>assistant\n"));
    assert_eq!(decode(&b, &v.tokens[r[0].1..r[0].1 + 1]), "\n");
    assert_eq!(
        r[1].1,
        v.tokens.len() - 1,
        "the final newline is not trained"
    );
    // The context between the turns is the tool result, as the template renders it, untrained.
    let between = decode(&b, &v.tokens[r[0].1..r[1].0]);
    assert_eq!(
        between,
        "\n<|im_start|>user\n<tool_response>\n{\"stock\": 3}\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
    );
    // The stream is the generation-time prompt + each completion, token for token.
    let full = decode(&b, &v.tokens);
    assert!(full.starts_with("<|im_start|>system\nYou are the host"));
    let kinds: Vec<SegmentKind> = v.segments.iter().map(|s| s.kind).collect();
    assert_eq!(
        kinds,
        [
            SegmentKind::Context,
            SegmentKind::ToolCall,
            SegmentKind::Context,
            SegmentKind::Reply
        ]
    );
    assert_eq!(v.segments.last().unwrap().end, v.tokens.len());
    assert_eq!(v.trained_tokens(), (r[0].1 - r[0].0) + (r[1].1 - r[1].0));
}

/// Assistant messages marked `"weight": 0` (a task's scripted host line, a rejected retry attempt) are
/// context: rendered in the stream, never trained; the policy's own turns after them are.
#[test]
fn weight_zero_assistant_messages_are_context_not_loss() {
    let dir = tokenizer_dir();
    let b = ViewBuilder::from_dir(dir.path()).unwrap();
    let rec: Trajectory = serde_json::from_value(json!({
        "id": "scripted",
        "messages": [
            {"role": "system", "content": "You are the host of a live shopping stream."},
            {"role": "user", "content": "How much is it?"},
            {"role": "assistant", "content": "Which product do you mean?", "weight": 0},
            {"role": "user", "content": "p1"},
            {"role": "assistant", "content": "Yes, 3 left."}
        ]
    }))
    .unwrap();
    let v = b.build(&rec).unwrap();
    let r = runs(&v.loss_mask);
    assert_eq!(r.len(), 1, "only the policy's own turn is trained: {r:?}");
    assert_eq!(
        decode(&b, &v.tokens[r[0].0..r[0].1]),
        "<think>\n\n</think>\n\nYes, 3 left.<|im_end|>"
    );
    let context = decode(&b, &v.tokens[..r[0].0]);
    assert!(context.contains("Which product do you mean?"), "{context}");
    // Unmarked, the same line is trained like any assistant turn.
    let mut plain = rec.clone();
    plain.messages[2].extra.remove("weight");
    assert_eq!(runs(&b.build(&plain).unwrap().loss_mask).len(), 2);
}

/// The tokens of the view whose text overlaps the one occurrence of `text` in the decoded stream.
fn tokens_of(b: &ViewBuilder, v: &TrainingView, text: &str) -> std::ops::Range<usize> {
    let full = decode(b, &v.tokens);
    let at = full
        .find(text)
        .unwrap_or_else(|| panic!("{text:?} is not in the view"));
    assert_eq!(
        full.matches(text).count(),
        1,
        "{text:?} occurs more than once"
    );
    // Where each token's text starts (ASCII records: every prefix decodes to a prefix of the stream).
    let starts: Vec<usize> = (0..=v.tokens.len())
        .map(|k| decode(b, &v.tokens[..k]).len())
        .collect();
    let first = starts.iter().rposition(|&o| o <= at).unwrap();
    let end = starts.iter().position(|&o| o >= at + text.len()).unwrap();
    first..end
}

/// A retry trajectory as collection keeps it in full (`filter` with keep-retry-prob 1): the hook's
/// rejections stay in the context, and at the token level the rejected attempts — a purchase call over
/// the quantity limit, a reply over the length limit — carry no loss, while the retried call and the
/// accepted reply are trained.
#[test]
fn a_kept_retry_trajectory_trains_the_retried_call_and_not_the_rejected_attempt() {
    use hat::distill::collect::{filter, Filter, Summary};

    let dir = tokenizer_dir();
    let b = ViewBuilder::from_dir(dir.path()).unwrap();
    let rejected_call = r#"{"product_id": "p1", "quantity": 50}"#;
    let retried_call = r#"{"product_id": "p1", "quantity": 20}"#;
    let rejected_reply =
        "Here is your link for 20 pieces, a great deal, grab it now before the stream ends!";
    let reply = "Link: https://s.shop/p1 for 20.";
    let call = |id: &str, args: &str| {
        json!({"role": "assistant", "tool_calls": [{"id": id, "type": "function",
               "function": {"name": "create_purchase_link", "arguments": args}}]})
    };
    let rec: Trajectory = serde_json::from_value(json!({
        "id": "retry",
        "tools": [{"type": "function", "function": {"name": "create_purchase_link", "description": "A purchase link.",
                   "parameters": {"type": "object", "properties": {"product_id": {"type": "string"}, "quantity": {"type": "integer"}}}}}],
        "messages": [
            {"role": "system", "content": "You are the host of a live shopping stream."},
            {"role": "user", "content": "50 of p1 please"},
            call("c1", rejected_call),
            {"role": "tool", "tool_call_id": "c1",
             "content": "{\"error\": {\"code\": \"denied\", \"message\": \"at most 20 per order\"}}"},
            call("c2", retried_call),
            {"role": "tool", "tool_call_id": "c2", "content": "{\"link\": \"https://s.shop/p1\", \"quantity\": 20}"},
            {"role": "assistant", "content": rejected_reply},
            {"role": "user", "content": "[reply_length] Too long: keep it within 40 characters."},
            {"role": "assistant", "content": reply}
        ],
        "scores": {"accuracy": 1.0, "effectiveness": 1.0},
        "meta": {"turn_start": 2, "hooks_fired": {"limit_quantity.sh": {"block": 1}, "reply_length": {"retry": 1}}}
    }))
    .unwrap();
    let mut summary = Summary::default();
    let full = Filter {
        min_accuracy: 1.0,
        min_effectiveness: 1.0,
        keep_retry_prob: 1.0,
        seed: 0,
    };
    let kept = filter(rec, &full, &mut summary).expect("kept");
    assert_eq!(kept.meta["retry_trajectory"], json!("full"));
    assert_eq!(summary.kept_with_feedback, 1);
    let v = b.build(&kept).unwrap();
    let all_zero = |text: &str| v.loss_mask[tokens_of(&b, &v, text)].iter().all(|&m| m == 0);
    let all_one = |text: &str| v.loss_mask[tokens_of(&b, &v, text)].iter().all(|&m| m == 1);
    // The rejected attempts and the feedback are in the stream, with no loss on any of their tokens.
    assert!(all_zero(rejected_call), "the rejected call is trained");
    assert!(all_zero(rejected_reply), "the rejected reply is trained");
    assert!(all_zero("at most 20 per order") && all_zero("keep it within 40 characters"));
    // The retried call and the accepted reply are trained, token for token, and nothing else is.
    assert!(all_one(retried_call), "the retried call is not trained");
    assert!(all_one(reply), "the accepted reply is not trained");
    let r = runs(&v.loss_mask);
    let trained: Vec<String> = r
        .iter()
        .map(|&(s, e)| decode(&b, &v.tokens[s..e]))
        .collect();
    assert_eq!(trained.len(), 2, "{trained:?}");
    assert!(
        trained[0].contains(retried_call) && trained[1].contains(reply),
        "{trained:?}"
    );
}

#[test]
fn scaling_tool_call_segments_weights_only_their_trained_tokens() {
    let dir = tokenizer_dir();
    let b = ViewBuilder::from_dir(dir.path()).unwrap();
    let mut v = b
        .build(&record("r1", "Is p1 in stock?", "Yes, 3 left."))
        .unwrap();
    v.scale_segments(SegmentKind::ToolCall, 4.0);
    let w = v.weights.clone().unwrap();
    let r = runs(&v.loss_mask);
    assert!(
        w[r[0].0..r[0].1].iter().all(|&x| x == 4.0),
        "tool call: {w:?}"
    );
    assert!(w[r[1].0..r[1].1].iter().all(|&x| x == 1.0), "reply: {w:?}");
    // Untrained tokens stay at 0 (the mask), so the batch never trains them.
    let untrained = (0..v.len()).filter(|&i| v.loss_mask[i] == 0);
    assert!(untrained.map(|i| w[i]).all(|x| x == 0.0));
    // Scaling composes with existing weights.
    v.scale_segments(SegmentKind::ToolCall, 0.5);
    assert!(v.weights.clone().unwrap()[r[0].0..r[0].1]
        .iter()
        .all(|&x| x == 2.0));
    // A base stage trains every token: the scaled ones keep their weight, the rest get 1.
    v.train_on_every_token();
    let w = v.weights.unwrap();
    assert!(v.loss_mask.iter().all(|&m| m == 1));
    assert!(w[r[0].0..r[0].1].iter().all(|&x| x == 2.0));
    assert!((0..r[0].0).all(|i| w[i] == 1.0), "context: {w:?}");
}

#[test]
fn a_zero_tool_call_weight_leaves_the_reply_as_the_only_trained_weight() {
    let dir = tokenizer_dir();
    let b = ViewBuilder::from_dir(dir.path()).unwrap();
    let mut v = b
        .build(&record("r1", "Is p1 in stock?", "Yes, 3 left."))
        .unwrap();
    let r = runs(&v.loss_mask);
    assert_eq!(v.trained_weight(), v.trained_tokens() as f32);
    v.scale_segments(SegmentKind::ToolCall, 0.0);
    assert_eq!(v.trained_weight(), (r[1].1 - r[1].0) as f32);
    assert!(v.trained_weight() > 0.0);
}

#[test]
fn records_without_assistant_tokens_and_overlong_ones_are_counted_skips() {
    let dir = tokenizer_dir();
    let b = ViewBuilder::from_dir(dir.path()).unwrap();
    let mut no_assistant = record("r2", "hi", "x");
    no_assistant.messages.truncate(2);
    assert_eq!(b.build(&no_assistant), Err(Skip::NoAssistantTokens));

    let data = TempDir::new().unwrap();
    let path = data.path().join("r.jsonl");
    let long = record("r3", &"very long question ".repeat(200), "ok");
    let lines: Vec<String> = [record("r1", "Is p1 in stock?", "Yes."), no_assistant, long]
        .iter()
        .map(|r| serde_json::to_string(r).unwrap())
        .collect();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let rejects = data.path().join("rejects.jsonl");
    let (views, s) = load_views(path.to_str().unwrap(), Some(rejects.clone()), &b, 400).unwrap();
    assert_eq!(views.len(), 1);
    assert_eq!(s.skipped["no_assistant_tokens"], 1);
    assert_eq!(s.skipped["longer_than_max_seq_length"], 1);
    let reasons = std::fs::read_to_string(data.path().join("rejects.jsonl.reasons.jsonl")).unwrap();
    assert!(
        reasons.contains("r2") && reasons.contains("max_seq_length"),
        "{reasons}"
    );
    assert_eq!(
        std::fs::read_to_string(&rejects).unwrap().lines().count(),
        2
    );
}

#[test]
fn a_tokenizer_that_does_not_fit_the_model_is_a_clear_error() {
    let dir = tokenizer_dir();
    let b = ViewBuilder::from_dir(dir.path()).unwrap();
    let err = check_tokenizer_fits(b.tokenizer(), 256, b.end_of_turn()).unwrap_err();
    assert!(err.to_string().contains("vocab_size is 256"), "{err}");
    assert!(check_tokenizer_fits(
        b.tokenizer(),
        b.tokenizer().get_vocab_size(true),
        b.end_of_turn()
    )
    .is_ok());
}

#[test]
fn bucketing_respects_the_token_budget_and_the_sampler_resumes_from_its_cursor() {
    let lengths = [10, 50, 12, 48, 11, 100, 9];
    let batches = bucket(&lengths, 40);
    let mut seen: Vec<usize> = batches.concat();
    seen.sort();
    assert_eq!(seen, (0..lengths.len()).collect::<Vec<_>>());
    for b in &batches {
        let max = b.iter().map(|&i| lengths[i]).max().unwrap();
        assert!(b.len() == 1 || b.len() * max <= 40, "{b:?}");
    }
    // Short rows go together: 9, 10, 11 (3 × 11 = 33 ≤ 40), then 12 alone would make 4 × 12 = 48.
    assert_eq!(batches[0], vec![6, 0, 4]);

    let mut a = Sampler::new(batches.clone(), 7, Cursor::default());
    let first: Vec<Vec<usize>> = (0..12).map(|_| a.next_batch().to_vec()).collect();
    let mut b = Sampler::new(batches.clone(), 7, Cursor::default());
    for _ in 0..5 {
        b.next_batch();
    }
    let mut c = Sampler::new(batches, 7, b.cursor);
    let rest: Vec<Vec<usize>> = (5..12).map(|_| c.next_batch().to_vec()).collect();
    assert_eq!(&first[5..], &rest[..]);
    assert_eq!(
        c.cursor.epoch, 2,
        "12 batches over 5 per epoch end in the third epoch"
    );
}

#[test]
fn cosine_schedule_with_warmup_matches_transformers() {
    let lr = |s| cosine_with_warmup(1e-3, s, 10, 110);
    assert_eq!(lr(0), 0.0);
    assert!((lr(5) - 5e-4).abs() < 1e-15);
    assert!((lr(10) - 1e-3).abs() < 1e-15);
    assert!((lr(60) - 5e-4).abs() < 1e-12, "half-way through the cosine");
    assert!(lr(110).abs() < 1e-15);
    assert!((lr(35) - 1e-3 * 0.5 * (1.0 + (std::f64::consts::PI * 0.25).cos())).abs() < 1e-15);
}

#[test]
fn constant_schedule_warms_up_then_holds_the_peak() {
    let lr = |s| LrSchedulerType::ConstantWithWarmup.at(1e-3, s, 10, 110);
    assert_eq!(lr(0), 0.0);
    assert!((lr(5) - 5e-4).abs() < 1e-15);
    assert_eq!(lr(10), 1e-3);
    assert_eq!(lr(109), 1e-3);
    assert_eq!(
        LrSchedulerType::Cosine.at(1e-3, 60, 10, 110),
        cosine_with_warmup(1e-3, 60, 10, 110)
    );
}

// burn's `derive(Module)` recognises the backend only under the generic name `B` (with another name
// the fields are treated as constants and never visited); it shadows the `B` alias here.
#[derive(Module, Debug)]
struct Toy<B: Backend> {
    w: Param<Tensor<B, 2>>,
    b: Param<Tensor<B, 1>>,
}

fn toy(w: [f32; 2], b: f32) -> Toy<B> {
    let d = Default::default();
    Toy {
        w: Param::from_tensor(
            Tensor::from_data(TensorData::new(w.to_vec(), [1, 2]), &d).require_grad(),
        ),
        b: Param::from_tensor(Tensor::from_data(TensorData::new(vec![b], [1]), &d).require_grad()),
    }
}

/// loss = Σ c·w + d·b, so the gradients are c and d whatever the parameters.
fn toy_grads(m: &Toy<B>, c: [f32; 2], d: f32, buf: &mut GradBuffer<Inner>) {
    let dev = Default::default();
    let ct = Tensor::<B, 2>::from_data(TensorData::new(c.to_vec(), [1, 2]), &dev);
    let m = fresh_leaves(m);
    let loss = (m.w.val() * ct).sum() + m.b.val().mul_scalar(d).sum();
    buf.accumulate::<B, _>(&m, &loss.backward());
}

fn values<const D: usize>(t: Tensor<B, D>) -> Vec<f32> {
    t.into_data().convert::<f32>().into_vec().unwrap()
}

#[test]
fn adamw_steps_match_hand_computed_values() {
    let cfg = AdamWConfig {
        beta1: 0.9,
        beta2: 0.999,
        eps: 1e-8,
        weight_decay: 0.1,
    };
    let mut opt = AdamW::<Inner>::new(cfg);
    let mut m = toy([1.0, -2.0], 0.5);
    let (lr, grads) = (0.01, [[0.5f64, -1.0, 2.0], [-0.25, 0.5, 1.0]]);
    // Reference: torch.optim.AdamW, in f64, decay on w only (b is a vector).
    let mut p = [1.0f64, -2.0, 0.5];
    let (mut mm, mut vv) = ([0.0f64; 3], [0.0f64; 3]);
    for (t, g) in grads.iter().enumerate() {
        let mut buf = GradBuffer::default();
        toy_grads(&m, [g[0] as f32, g[1] as f32], g[2] as f32, &mut buf);
        m = opt.step::<B, _>(m, lr, &mut buf);
        let t = (t + 1) as i32;
        for k in 0..3 {
            if k < 2 {
                p[k] *= 1.0 - lr * cfg.weight_decay;
            }
            mm[k] = 0.9 * mm[k] + 0.1 * g[k];
            vv[k] = 0.999 * vv[k] + 0.001 * g[k] * g[k];
            let mhat = mm[k] / (1.0 - 0.9f64.powi(t));
            let vhat = vv[k] / (1.0 - 0.999f64.powi(t));
            p[k] -= lr * mhat / (vhat.sqrt() + 1e-8);
        }
        let got: Vec<f32> = values(m.w.val())
            .into_iter()
            .chain(values(m.b.val()))
            .collect();
        for k in 0..3 {
            assert!(
                (got[k] as f64 - p[k]).abs() < 1e-6,
                "step {t} param {k}: {} vs {}",
                got[k],
                p[k]
            );
        }
    }
    assert_eq!(opt.step, 2);
}

#[test]
fn clipping_scales_to_the_global_norm_and_accumulation_sums() {
    let m = toy([0.0, 0.0], 0.0);
    let mut buf = GradBuffer::default();
    toy_grads(&m, [3.0, 0.0], 4.0, &mut buf);
    toy_grads(&m, [3.0, 0.0], 4.0, &mut buf); // accumulated: (6, 0), 8 → norm 10
    assert!((buf.norm() - 10.0).abs() < 1e-5);
    let before = buf.clip(1.0);
    assert!((before - 10.0).abs() < 1e-5);
    assert!((buf.norm() - 1.0).abs() < 1e-5);
    let w: Vec<f32> = buf.grads[0]
        .clone()
        .unwrap()
        .into_data()
        .convert::<f32>()
        .into_vec()
        .unwrap();
    assert!((w[0] - 0.6).abs() < 1e-5 && w[1].abs() < 1e-7);
    // Under the limit nothing changes.
    let n = buf.clip(5.0);
    assert!((n - 1.0).abs() < 1e-5 && (buf.norm() - 1.0).abs() < 1e-5);
}

/// Every parameter's gradient agrees within 1e-5.
fn assert_same_gradients(a: &GradBuffer<Inner>, c: &GradBuffer<Inner>) {
    for (x, y) in a.grads.iter().zip(&c.grads) {
        if let (Some(x), Some(y)) = (x, y) {
            let diff = (x.clone() - y.clone()).abs().max().into_scalar();
            assert!(diff < 1e-5, "max gradient difference {diff}");
        }
    }
}

fn tiny_model(vocab: usize, seed: u64) -> CausalLm<B> {
    let mut cfg = presets::preset("tiny", Some(vocab)).unwrap();
    cfg.router_aux_loss_coef = 0.0;
    CausalLm::init(&cfg, seed, &Default::default()).unwrap()
}

fn views(b: &ViewBuilder) -> Vec<TrainingView> {
    (0..6)
        .map(|i| {
            b.build(&record(
                &format!("r{i}"),
                &format!("Is p{i} in stock?"),
                &format!("Yes, {i} left."),
            ))
            .unwrap()
        })
        .collect()
}

#[test]
fn two_accumulated_half_batches_give_the_full_batch_gradient() {
    let dir = tokenizer_dir();
    let b = ViewBuilder::from_dir(dir.path()).unwrap();
    let vs = views(&b);
    let model = tiny_model(b.tokenizer().get_vocab_size(true), 3);
    let d = Default::default();
    let all: Vec<&TrainingView> = vs[..4].iter().collect();
    let full = to_tensors::<B>(&all, 0, false, &d).unwrap();
    let halves = [
        to_tensors::<B>(&all[..2], 0, false, &d).unwrap(),
        to_tensors::<B>(&all[2..], 0, false, &d).unwrap(),
    ];
    let norm = full.trained;
    assert_eq!(norm, halves[0].trained + halves[1].trained);
    let mut one = GradBuffer::default();
    let m = fresh_leaves(&model);
    let (loss, _) = micro_batch_loss(&m, &full, norm, 0.0, 1, 0.0).unwrap();
    one.accumulate::<B, _>(&m, &loss.backward());
    let mut two = GradBuffer::default();
    for h in &halves {
        let m = fresh_leaves(&model);
        let (loss, _) = micro_batch_loss(&m, h, norm, 0.0, 2, 0.0).unwrap();
        two.accumulate::<B, _>(&m, &loss.backward());
    }
    let (n1, n2) = (one.norm(), two.norm());
    assert!(n1 > 0.0);
    assert!((n1 - n2).abs() / n1 < 1e-4, "{n1} vs {n2}");
    assert_same_gradients(&one, &two);
}

/// The LM head at the trained positions only gives the loss (and gradient) of the LM head over every
/// position with the untrained ones masked out, per-token weights included.
#[test]
fn loss_at_trained_positions_equals_the_masked_loss_over_all_positions() {
    let dir = tokenizer_dir();
    let b = ViewBuilder::from_dir(dir.path()).unwrap();
    let mut vs = views(&b);
    let n = vs[1].len();
    vs[1].weights = Some((0..n).map(|i| 0.5 + (i % 3) as f32).collect());
    let model = tiny_model(b.tokenizer().get_vocab_size(true), 5);
    let rows: Vec<&TrainingView> = vs[..3].iter().collect();
    let batch = to_tensors::<B>(&rows, 0, false, &Default::default()).unwrap();
    let (m1, m2) = (fresh_leaves(&model), fresh_leaves(&model));
    let out = m1.forward(batch.ids.clone());
    let t = batch.ids.dims()[1];
    let full = masked_token_loss(
        out.logits.narrow(1, 0, t - 1),
        batch.targets.clone(),
        batch.mask.clone(),
    );
    // A second forward: each backward consumes its graph.
    let (hidden, _) = m2.hidden_states(batch.ids.clone(), None);
    let picked = trained_token_loss(&m2, hidden, &batch);
    let (a, c) = (values(full.clone())[0], values(picked.clone())[0]);
    assert!(a > 1.0 && (a - c).abs() / a < 1e-5, "{a} vs {c}");
    let (mut ga, mut gc) = (GradBuffer::default(), GradBuffer::default());
    ga.accumulate::<B, _>(&m1, &full.backward());
    gc.accumulate::<B, _>(&m2, &picked.backward());
    let (na, nc) = (ga.norm(), gc.norm());
    assert!(na > 0.0 && (na - nc).abs() / na < 1e-4, "{na} vs {nc}");
}

/// Records of one harness: a long system prompt (tools rendered after it by the template), then
/// different viewer questions.
fn harness_views(b: &ViewBuilder, system: &str, n: usize) -> Vec<TrainingView> {
    (0..n)
        .map(|i| {
            let q = format!("Is p{i} in stock?{}", " Yes?".repeat(i));
            b.build(&record_with_system(
                &format!("{system:.8}{i}"),
                system,
                &q,
                &format!("Yes, {i} left."),
            ))
            .unwrap()
        })
        .collect()
}

/// Running the prefix the rows share once and continuing every row from a copy of its cache gives the
/// loss and the gradients of running the whole rows, the MTP loss included.
#[test]
fn a_shared_prefix_run_once_gives_the_loss_and_gradients_of_whole_rows() {
    let dir = tokenizer_dir();
    let b = ViewBuilder::from_dir(dir.path()).unwrap();
    let vs = harness_views(
        &b,
        &"You are the host of a live shopping stream. ".repeat(30),
        3,
    );
    let rows: Vec<&TrainingView> = vs.iter().collect();
    let p = shared_prefix(&rows);
    assert!(p >= 128 && p % 64 == 0, "shared prefix {p}");
    let d = Default::default();
    let shared = to_tensors::<B>(&rows, 0, true, &d).unwrap();
    let whole = to_tensors::<B>(&rows, 0, false, &d).unwrap();
    assert!(shared.prefix.is_some() && whole.prefix.is_none());
    assert_eq!(shared.trained, whole.trained);
    assert_eq!(shared.tokens, whole.tokens);
    let longest = vs.iter().map(|v| v.len()).max().unwrap();
    assert_eq!(shared.computed, p + 3 * (longest - p));
    assert_eq!(whole.computed, 3 * longest);

    // Every expert active: the two computations order their sums differently, and a router choosing
    // 2 of 8 experts between near-equal scores can then pick differently for a token (a 0.3 % loss
    // difference seen once under load); with all 8 the choice is continuous in the scores.
    let mut cfg = presets::preset("tiny", Some(b.tokenizer().get_vocab_size(true))).unwrap();
    cfg.router_aux_loss_coef = 0.0;
    cfg.num_experts_per_tok = cfg.num_experts;
    let model: CausalLm<B> = CausalLm::init(&cfg, 11, &Default::default()).unwrap();
    let norm = whole.trained;
    // The MTP head has its own attention layer, which must see the prefix's slots too.
    for mtp_weight in [0.0, 0.3] {
        let (mut gw, mut gs) = (GradBuffer::default(), GradBuffer::default());
        let (ms, mw) = (fresh_leaves(&model), fresh_leaves(&model));
        let (ls, ps) = micro_batch_loss(&ms, &shared, norm, 0.0, 1, mtp_weight).unwrap();
        let c = values(ls.clone())[0];
        gs.accumulate::<B, _>(&ms, &ls.backward());
        let (lw, pw) = micro_batch_loss(&mw, &whole, norm, 0.0, 1, mtp_weight).unwrap();
        let a = values(lw.clone())[0];
        assert!(a > 1.0 && (a - c).abs() / a < 1e-5, "{a} vs {c}");
        if mtp_weight > 0.0 {
            let (mw, ms) = (pw.mtp_sum, ps.mtp_sum);
            assert!(mw > 1.0 && (mw - ms).abs() / mw < 1e-5, "MTP {mw} vs {ms}");
            // The head's loss over every slot of the whole rows, masked: slot i predicts token i+2.
            let t = whole.ids.dims()[1];
            let hidden = model.forward(whole.ids.clone()).hidden;
            let logits = model.mtp_logits(hidden, whole.ids.clone()).unwrap();
            let reference = values(masked_token_loss(
                logits.narrow(1, 0, t - 2),
                whole.targets.clone().narrow(1, 1, t - 2),
                whole.mask.clone().narrow(1, 1, t - 2),
            ))[0] as f64;
            assert!(
                (mw - reference).abs() / mw < 1e-5,
                "MTP {mw} vs {reference}"
            );
        }
        gw.accumulate::<B, _>(&mw, &lw.backward());
        let (nw, ns) = (gw.norm(), gs.norm());
        assert!(nw > 0.0 && (nw - ns).abs() / nw < 1e-4, "{nw} vs {ns}");
        assert_same_gradients(&gw, &gs);
    }
}

/// Shared-prefix batches keep records of different harnesses apart and stay within the budget, each
/// batch costing its prefix once.
#[test]
fn shared_prefix_batches_group_records_of_one_harness_within_the_budget() {
    let dir = tokenizer_dir();
    let b = ViewBuilder::from_dir(dir.path()).unwrap();
    let mut vs = harness_views(
        &b,
        &"You are the host of a live shopping stream. ".repeat(30),
        5,
    );
    vs.extend(harness_views(&b, &"Stock of a product. ".repeat(40), 5));
    let budget = vs[0].len() * 2;
    let batches = bucket_shared(&vs, budget);
    let mut seen: Vec<usize> = batches.concat();
    seen.sort();
    assert_eq!(seen, (0..10).collect::<Vec<_>>());
    assert!(batches.iter().any(|r| r.len() >= 3), "{batches:?}");
    for rows in &batches {
        assert!(
            rows.iter().all(|&i| i < 5) || rows.iter().all(|&i| i >= 5),
            "{batches:?}"
        );
        let refs: Vec<&TrainingView> = rows.iter().map(|&i| &vs[i]).collect();
        let cost = to_tensors::<Inner>(&refs, 0, true, &Default::default())
            .unwrap()
            .computed;
        assert!(
            rows.len() == 1 || cost <= budget,
            "{rows:?} costs {cost} > {budget}"
        );
    }
}

/// The dev tool-call exact match counts a turn exactly when greedy decoding reproduces it: a record
/// whose tool call is replaced by the model's own greedy continuation counts, the others do not, whether
/// the records share a prefix in one micro-batch or run alone.
#[test]
fn dev_tool_call_exact_counts_the_turns_greedy_decoding_reproduces() {
    let dir = tokenizer_dir();
    let b = ViewBuilder::from_dir(dir.path()).unwrap();
    let mut vs = harness_views(
        &b,
        &"You are the host of a live shopping stream. ".repeat(30),
        3,
    );
    let model = tiny_model(b.tokenizer().get_vocab_size(true), 17);
    let d = Default::default();
    let greedy = &mut vs[1];
    let call = greedy
        .segments
        .iter()
        .find(|s| s.kind == SegmentKind::ToolCall)
        .unwrap()
        .clone();
    for j in call.start..call.end {
        if greedy.loss_mask[j] == 1 {
            let ids: Vec<i64> = greedy.tokens[..j].iter().map(|&t| t as i64).collect();
            let logits = model
                .forward(Tensor::<B, 2, Int>::from_data(
                    TensorData::new(ids, [1, j]),
                    &d,
                ))
                .logits;
            let last = logits.narrow(1, j - 1, 1).argmax(2);
            greedy.tokens[j] = last.into_data().convert::<i64>().to_vec::<i64>().unwrap()[0] as u32;
        }
    }
    for budget in [100_000, 1] {
        let dev = dev_metrics(&model, &vs, 0, budget, &d).unwrap().unwrap();
        assert!(dev.loss > 0.0);
        let exact = dev.tool_call_exact.unwrap();
        assert!((exact - 1.0 / 3.0).abs() < 1e-9, "budget {budget}: {exact}");
        // Each record has one tool-calling turn, so its opening call is that turn.
        assert_eq!(dev.first_call_exact, dev.tool_call_exact);
    }
}

fn config(steps: usize) -> TrainConfig {
    TrainConfig {
        max_steps: steps,
        learning_rate: 1e-2,
        batch_tokens: 400,
        gradient_accumulation_steps: 2,
        warmup_steps: 1,
        lr_scheduler_type: LrSchedulerType::Cosine,
        adamw: AdamWConfig::default(),
        max_grad_norm: 1.0,
        seed: 5,
        eval_steps: 2,
        save_steps: 2,
        router_aux_loss_coef: Some(0.001),
        mtp_loss_weight: 0.3,
        stop_after: None,
        max_seconds: None,
    }
}

/// A fresh run of `cfg` in a temporary directory (kept alive by the returned handle), never interrupted.
fn train_to_the_end(
    cfg: &TrainConfig,
    model: CausalLm<B>,
    data: &TrainData,
    tokenizer: &TempDir,
) -> (TempDir, Outcome) {
    let out = TempDir::new().unwrap();
    let dirs = RunDirs {
        out: out.path(),
        tokenizer: tokenizer.path(),
    };
    let o = train(
        cfg,
        model,
        data,
        &dirs,
        false,
        &AtomicBool::new(false),
        &Default::default(),
    )
    .unwrap();
    (out, o)
}

fn losses(dir: &std::path::Path) -> Vec<(u64, f64)> {
    std::fs::read_to_string(dir.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter_map(|v| {
            Some((
                v["step"].as_u64()?,
                v["loss"].as_f64().or(v["dev_loss"].as_f64())?,
            ))
        })
        .collect()
}

#[test]
fn an_interrupted_and_resumed_run_reproduces_the_uninterrupted_loss_curve() {
    let tok = tokenizer_dir();
    let b = ViewBuilder::from_dir(tok.path()).unwrap();
    let vocab = b.tokenizer().get_vocab_size(true);
    let data = TrainData {
        train: views(&b),
        dev: views(&b)[..2].to_vec(),
        pad: 0,
    };
    let stop = AtomicBool::new(false);
    let d = Default::default();
    let run = |cfg: TrainConfig, model_seed: u64, out: &std::path::Path, resume: bool| {
        let dirs = RunDirs {
            out,
            tokenizer: tok.path(),
        };
        train(
            &cfg,
            tiny_model(vocab, model_seed),
            &data,
            &dirs,
            resume,
            &stop,
            &d,
        )
    };

    let straight = TempDir::new().unwrap();
    assert_eq!(run(config(5), 3, straight.path(), false).unwrap().steps, 5);

    let split = TempDir::new().unwrap();
    let interrupted = TrainConfig {
        stop_after: Some(3),
        ..config(5)
    };
    let first = run(interrupted, 3, split.path(), false).unwrap();
    assert!(first.interrupted && first.steps == 3);
    assert!(split
        .path()
        .join(checkpoint::dir_name(3))
        .join("tokenizer.json")
        .exists());
    // A different initial model proves the weights come from the checkpoint.
    assert_eq!(run(config(5), 99, split.path(), true).unwrap().steps, 5);

    let (x, y) = (losses(straight.path()), losses(split.path()));
    assert_eq!(x.len(), y.len(), "{x:?}\n{y:?}");
    for (p, q) in x.iter().zip(&y) {
        assert_eq!(p.0, q.0);
        assert!((p.1 - q.1).abs() < 1e-5, "step {}: {} vs {}", p.0, p.1, q.1);
    }

    // A fresh run into a directory holding another run's checkpoints is refused (a later --resume
    // would take them for its own) until they are deleted, which deletes checkpoints only.
    let fresh = || run(config(2), 3, split.path(), false);
    let refused = format!("{:#}", fresh().unwrap_err());
    assert!(
        refused.contains("checkpoint-000005")
            && refused.contains("--resume")
            && refused.contains("--overwrite-output-dir"),
        "{refused}"
    );
    std::fs::create_dir(split.path().join(".checkpoint-000006.tmp")).unwrap();
    // 2, 3 (the interruption), 4, 5 and the half-written one.
    assert_eq!(checkpoint::remove_all(split.path()).unwrap(), 5);
    assert!(split.path().join("metrics.jsonl").exists());
    assert_eq!(fresh().unwrap().steps, 2);
}

/// A record whose tool call names the product the viewer asked about: the call is a decision that
/// depends on the input, not template text.
fn asking(i: usize) -> Trajectory {
    let mut r = record(
        &format!("ask{i}"),
        &format!("Is p{i} in stock?"),
        &format!("Yes, {i} left."),
    );
    r.messages[2].tool_calls[0].function.arguments = format!("{{\"product_id\": \"p{i}\"}}");
    r
}

/// Training learns what the records teach, decisions included: on eight records whose tool call
/// copies the product the viewer asked about, the loss falls to a small fraction of its start and
/// greedy decoding reproduces every record's tool call and final reply. A model that answered every viewer with the
/// same call would leave the tool-call exact match at 1/8 — which is what this set gives at a learning
/// rate of 1e-2 (loss 0.10, every token memorised but the product id, still 1/8 at step 200), and
/// 3/8 at 3e-3 after 150 steps; at 1e-3 it is 8/8 by step 150 (docs/learning-default.md).
#[test]
fn training_memorises_the_input_dependent_calls_of_a_small_set() {
    let tok = tokenizer_dir();
    let b = ViewBuilder::from_dir(tok.path()).unwrap();
    let vocab = b.tokenizer().get_vocab_size(true);
    let set: Vec<TrainingView> = (0..8).map(|i| b.build(&asking(i)).unwrap()).collect();
    let data = TrainData {
        train: set.clone(),
        dev: set,
        pad: 0,
    };
    let cfg = TrainConfig {
        mtp_loss_weight: 0.0,
        eval_steps: 0,
        save_steps: 0,
        warmup_steps: 5,
        learning_rate: 1e-3,
        ..config(300)
    };
    let (out, o) = train_to_the_end(&cfg, tiny_model(vocab, 1), &data, &tok);
    let curve = losses(out.path());
    let first = curve[0].1;
    let dev = o.dev.unwrap();
    assert!(
        dev.loss < 0.05 * first,
        "loss {first} at the start, dev (= train) loss {} at the end",
        dev.loss
    );
    assert_eq!(dev.tool_call_exact, Some(1.0), "{dev:?}");
    assert_eq!(dev.first_call_exact, Some(1.0), "{dev:?}");
    assert_eq!(dev.final_reply_exact, Some(1.0), "{dev:?}");

    // Written by the model itself from the prompt alone, the opening message carries each record's
    // own product id (`teacher-distill probe --free-running`).
    let generator =
        TextGenerator::<NdArray<f32>>::load(&o.checkpoint, &Default::default()).unwrap();
    let records: Vec<Trajectory> = (0..8).map(asking).collect();
    let free = free_openings(&generator, &records, 64).unwrap();
    assert_eq!(
        (free.calls.hits, free.calls.n),
        (8, 8),
        "{:#?}",
        free.decisions
    );
    // The same model against records that call for another product: every call is counted wrong.
    let mut shifted = records.clone();
    for (r, i) in shifted.iter_mut().zip(1..) {
        r.messages[2].tool_calls[0].function.arguments =
            format!("{{\"product_id\": \"p{}\"}}", i % 8);
    }
    let free = free_openings(&generator, &shifted, 64).unwrap();
    assert_eq!(
        (free.calls.hits, free.tools.hits),
        (0, 8),
        "{:#?}",
        free.decisions
    );

    // With a second tool listed, the model ranks the name it was trained on first
    // (`teacher-distill probe --rank-names`)…
    let mut listed = records.clone();
    for r in listed.iter_mut() {
        let mut other = r.tools[0].clone();
        other.function.name = "get_promotions".into();
        r.tools.push(other);
    }
    let ranked = rank_names(&generator, &listed).unwrap();
    assert_eq!(
        (ranked.by_total.hits, ranked.by_total.n, ranked.by_mean.hits),
        (8, 8, 8),
        "{:#?}",
        ranked.records
    );
    assert_eq!(ranked.renamed_by_total.n, 0);
    // …so where the teacher calls the other listed tool — counted as renamed when the record's
    // names map it from another canonical id — the right name is never first.
    for r in listed.iter_mut() {
        r.messages[2].tool_calls[0].function.name = "get_promotions".into();
        r.harness = Some(
            serde_json::from_value(
                json!({"name": "t", "names": {"tools": {"get_promotions_v0": "get_promotions"}}}),
            )
            .unwrap(),
        );
    }
    let ranked = rank_names(&generator, &listed).unwrap();
    assert_eq!(
        (
            ranked.by_total.hits,
            ranked.renamed_by_total.hits,
            ranked.renamed_by_total.n
        ),
        (0, 0, 8),
        "{:#?}",
        ranked.records
    );
    assert!(ranked
        .records
        .iter()
        .all(|r| r.rank_by_total == 2 && r.listed == 2));
}

#[test]
fn checkpoints_are_atomic_and_corruption_is_detected_on_load() {
    let tok = tokenizer_dir();
    let out = TempDir::new().unwrap();
    let o = run_in(out.path(), &tok, &config(2), false).unwrap();
    let names: Vec<String> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    assert!(
        !names.iter().any(|n| n.ends_with(".tmp")),
        "no temporary directory left: {names:?}"
    );
    assert_eq!(
        checkpoint::latest(out.path()).unwrap().unwrap(),
        o.checkpoint
    );
    checkpoint::verify(&o.checkpoint).unwrap();
    // The checkpoint is a plain HF directory.
    let loaded = CausalLm::<Inner>::load(&o.checkpoint, &Default::default()).unwrap();
    let vocab = ViewBuilder::from_dir(tok.path())
        .unwrap()
        .tokenizer()
        .get_vocab_size(true);
    assert_eq!(loaded.config.vocab_size, vocab);

    let weights = o.checkpoint.join("model.safetensors");
    let mut bytes = std::fs::read(&weights).unwrap();
    let k = bytes.len() - 5;
    bytes[k] ^= 0x40;
    std::fs::write(&weights, bytes).unwrap();
    let mut opt = AdamW::<Inner>::new(AdamWConfig::default());
    let err =
        checkpoint::load::<Inner, Inner>(&o.checkpoint, &mut opt, &Default::default()).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("corrupted") && msg.contains("model.safetensors"),
        "{msg}"
    );
    let err = run_in(out.path(), &tok, &config(3), true).unwrap_err();
    assert!(format!("{err:#}").contains("corrupted"));
}

/// A run of `cfg` on [`views`] (no dev set) of a fresh `tiny` model of seed 3 into `out`; with `resume`,
/// from its newest checkpoint there.
fn run_in(
    out: &std::path::Path,
    tok: &TempDir,
    cfg: &TrainConfig,
    resume: bool,
) -> anyhow::Result<Outcome> {
    let b = ViewBuilder::from_dir(tok.path()).unwrap();
    let data = TrainData {
        train: views(&b),
        dev: Vec::new(),
        pad: 0,
    };
    let dirs = RunDirs {
        out,
        tokenizer: tok.path(),
    };
    let model = tiny_model(b.tokenizer().get_vocab_size(true), 3);
    let never = AtomicBool::new(false);
    train(
        cfg,
        model,
        &data,
        &dirs,
        resume,
        &never,
        &Default::default(),
    )
}

#[test]
fn a_non_finite_gradient_stops_the_run_naming_the_step_and_the_last_good_checkpoint() {
    let tok = tokenizer_dir();
    let out = TempDir::new().unwrap();
    // A learning rate no model survives: AdamW moves every weight by about the learning rate, so the
    // activations overflow within a few steps and the loss becomes NaN or infinite.
    let cfg = TrainConfig {
        learning_rate: 1e30,
        max_grad_norm: 0.0,
        save_steps: 1,
        eval_steps: 0,
        ..config(8)
    };
    let err = run_in(out.path(), &tok, &cfg, false).unwrap_err();
    let msg = format!("{err:#}");
    let last = checkpoint::latest(out.path()).unwrap().unwrap();
    let saved = losses(out.path());
    let halted_at = saved.len() + 1;
    assert!(
        msg.contains(&format!("step {halted_at} stopped the run"))
            && msg.contains(&last.display().to_string())
            && msg.contains("the weights were not updated"),
        "{msg}"
    );
    assert!(saved.iter().all(|(_, loss)| loss.is_finite()), "{saved:?}");
    // The named checkpoint holds the weights before the bad step, every one finite.
    let model = CausalLm::<Inner>::load(&last, &Default::default()).unwrap();
    let (mut params, mut finite) = (0, 0);
    for p in model
        .embed_tokens
        .weight
        .val()
        .into_data()
        .to_vec::<f32>()
        .unwrap()
    {
        params += 1;
        finite += p.is_finite() as usize;
    }
    assert!(
        params > 0 && finite == params,
        "{finite} of {params} finite"
    );
    assert_eq!(last, out.path().join(checkpoint::dir_name(halted_at - 1)));
}

#[test]
fn hat_plot_draws_one_curve_per_run_and_key_and_tabulates_them() {
    use hat::train::metrics::{run_plot, PlotArgs};
    let dir = TempDir::new().unwrap();
    for (run, rewards) in [("grpo", [0.1, 0.3, 0.2]), ("gspo", [0.2, 0.4, 0.5])] {
        std::fs::create_dir(dir.path().join(run)).unwrap();
        let lines: Vec<String> = rewards
            .iter()
            .enumerate()
            .map(|(i, r)| json!({"step": i + 1, "reward": r, "kl": r / 10.0}).to_string())
            .chain([json!({"step": 3, "dev_loss": 1.0}).to_string()])
            .collect();
        std::fs::write(dir.path().join(run).join("metrics.jsonl"), lines.join("\n")).unwrap();
    }
    let svg = dir.path().join("plot.svg");
    let args = |runs: Vec<String>, keys: &[&str]| PlotArgs {
        runs,
        keys: keys.iter().map(|k| k.to_string()).collect(),
        from_step: 0.0,
        output: svg.clone(),
    };
    let grpo = dir.path().join("grpo").display().to_string();
    let gspo = format!("GSPO={}", dir.path().join("gspo/metrics.jsonl").display());
    let mut table = Vec::new();
    run_plot(
        &args(vec![grpo.clone(), gspo.clone()], &["reward", "kl"]),
        &mut table,
    )
    .unwrap();
    let table = String::from_utf8(table).unwrap();
    assert!(
        table.contains("| grpo reward | 3 | 0.1000 | 0.2000 | 0.1000 | 0.3000 |"),
        "{table}"
    );
    assert!(
        table.contains("| GSPO reward | 3 | 0.2000 | 0.5000 | 0.2000 | 0.5000 |"),
        "{table}"
    );
    assert!(
        table.contains("| GSPO kl | 3 | 0.0200 | 0.0500 |"),
        "{table}"
    );
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert_eq!(drawn.matches("<polyline").count(), 4);
    assert!(drawn.contains(">GSPO kl</text>") && drawn.contains(">grpo reward</text>"));

    let err = run_plot(&args(vec![grpo.clone()], &["rewrd"]), &mut Vec::new()).unwrap_err();
    assert!(
        format!("{err:#}").contains("no run has a numeric value for rewrd"),
        "{err:#}"
    );
    let missing = dir.path().join("nope").display().to_string();
    let err = run_plot(&args(vec![missing.clone()], &["reward"]), &mut Vec::new()).unwrap_err();
    assert!(format!("{err:#}").contains(&missing), "{err:#}");
}

/// Rows of random filler with one cue token among them, then a fixed run of template tokens, then the
/// answer, the one trained token: the token that names the cue's class. The shape of an opening call,
/// whose skill depends on words of the viewer's message a few dozen tokens back.
fn cue_rows(n: usize, seed: u64) -> Vec<(TrainingView, u32)> {
    const FILLER: usize = 20;
    let mut rng = hat::rng::Rng::new(seed);
    (0..n)
        .map(|i| {
            let class = rng.below(8) as u32;
            let mut tokens: Vec<u32> = (0..FILLER).map(|_| 300 + rng.below(300) as u32).collect();
            tokens[rng.below(FILLER - 2)] = 100 + class;
            tokens.extend(200..210);
            tokens.push(120 + class);
            let n = tokens.len();
            let loss_mask = (0..n).map(|k| u8::from(k == n - 1)).collect();
            let view = TrainingView {
                id: format!("cue{i}"),
                tokens,
                loss_mask,
                segments: Vec::new(),
                weights: None,
            };
            (view, 120 + class)
        })
        .collect()
}

/// The share of `rows` whose answer is the model's argmax after the row's prefix, and how many distinct
/// answers it gave.
fn cue_accuracy(m: &CausalLm<Inner>, rows: &[(TrainingView, u32)]) -> (f64, usize) {
    let t = rows[0].0.len() - 1;
    let ids: Vec<i64> = rows
        .iter()
        .flat_map(|(v, _)| v.tokens[..t].iter().map(|&x| x as i64))
        .collect();
    let ids = Tensor::<Inner, 2, Int>::from_data(
        TensorData::new(ids, [rows.len(), t]),
        &Default::default(),
    );
    let said: Vec<i64> = m
        .forward(ids)
        .logits
        .narrow(1, t - 1, 1)
        .argmax(2)
        .into_data()
        .to_vec()
        .unwrap();
    let right = rows
        .iter()
        .zip(&said)
        .filter(|((_, answer), &s)| s == *answer as i64)
        .count();
    let distinct: std::collections::BTreeSet<i64> = said.into_iter().collect();
    (right as f64 / rows.len() as f64, distinct.len())
}

#[test]
fn training_learns_an_answer_that_depends_on_one_earlier_token() {
    // The embedded default once answered every viewer the same way; this is the smallest form of its
    // job. Held-out rows (new filler, new cue positions) so that memorising rows cannot pass.
    let tok = tokenizer_dir();
    let rows = cue_rows(3000, 1);
    let held_out = cue_rows(200, 2);
    let data = TrainData {
        train: rows.into_iter().map(|(v, _)| v).collect(),
        dev: Vec::new(),
        pad: 0,
    };
    let cfg = TrainConfig {
        batch_tokens: 32 * 31,
        gradient_accumulation_steps: 1,
        learning_rate: 1e-3,
        warmup_steps: 10,
        eval_steps: 0,
        save_steps: 0,
        mtp_loss_weight: 0.0,
        ..config(150)
    };
    let (_out, o) = train_to_the_end(&cfg, tiny_model(700, 3), &data, &tok);
    let m = CausalLm::<Inner>::load(&o.checkpoint, &Default::default()).unwrap();
    let (accuracy, distinct) = cue_accuracy(&m, &held_out);
    assert!(
        accuracy >= 0.9 && distinct == 8,
        "held-out accuracy {accuracy}, {distinct} distinct answers"
    );
}
