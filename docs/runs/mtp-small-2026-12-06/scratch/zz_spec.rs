//! Scratch: the parts of a speculative round against a plain decode step, in one process,
//! alternated. `zz_spec DIR PROMPT_TOKENS ITERS`
use burn::backend::NdArray;
use hat::model::generation::sampling::argmax;
use hat::model::generation::speculative::{round, MtpHead};
use hat::model::CausalLm;
use std::time::Instant;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let m = CausalLm::<NdArray<f32>>::load(std::path::Path::new(&args[1]), &Default::default()).unwrap();
    if args[2] == "experts" {
        // Distinct experts per sparse layer that checks of 2 and 3 consecutive tokens of real
        // text route to (top-k each), against k for one token. `zz_spec DIR experts TEXT_FILE`
        let tok = hat::tokenizer::load(&std::path::Path::new(&args[1]).join("tokenizer.json")).unwrap();
        let text = std::fs::read_to_string(&args[3]).unwrap();
        let ids: Vec<u32> = tok.encode(text, false).unwrap().get_ids().iter().copied().take(4000).collect();
        let (_, router) = m.hidden_states(hat::model::ids_tensor(&[ids.clone()], &Default::default()).unwrap(), None);
        let k = m.config.num_experts_per_tok;
        for span in [2usize, 3] {
            let (mut union, mut n) = (0usize, 0usize);
            for logits in &router {
                let e = logits.dims()[1];
                let rows: Vec<f32> = logits.clone().into_data().into_vec().unwrap();
                let top: Vec<Vec<usize>> = rows.chunks(e).map(|r| {
                    let mut idx: Vec<usize> = (0..e).collect();
                    idx.sort_by(|&a, &b| r[b].total_cmp(&r[a]));
                    idx[..k].to_vec()
                }).collect();
                for w in top.windows(span) {
                    let mut all: Vec<usize> = w.concat();
                    all.sort();
                    all.dedup();
                    union += all.len();
                    n += 1;
                }
            }
            eprintln!("{} tokens, {span}-token checks over {} sparse layers: {:.2} distinct experts a layer (one token: {k}), {:.2}x the experts of one token",
                ids.len(), router.len(), union as f64 / n as f64, union as f64 / n as f64 / k as f64);
        }
        return;
    }
    let n: usize = args[2].parse().unwrap();
    let iters: usize = args[3].parse().unwrap();
    let v = m.config.vocab_size as u32;
    let prompt: Vec<u32> = (0..n as u32).map(|i| (i * 7919 + 13) % v).collect();
    let mut base = m.new_cache();
    let (_, hidden) = m.extend_stacked(&[prompt.clone()], &mut base).unwrap();
    let last_hidden = hidden.narrow(1, n - 1, 1);
    if args.get(4).map(String::as_str) == Some("reject") {
        // A rejected draft (k = 1: one token kept of two) taken back as this commit does
        // (drop_last) and as before (snapshot, verify, restore, feed the kept token again).
        for block in 0..4 {
            let mut c = base.clone();
            let t0 = Instant::now();
            for s in 0..iters {
                assert!(c.keep_token_states());
                m.extend_stacked(&[vec![(s as u32 * 31) % v, 7]], &mut c).unwrap();
                c.drop_last(1).unwrap();
            }
            let new = t0.elapsed().as_secs_f64() * 1e3 / iters as f64;
            let mut c = base.clone();
            let t0 = Instant::now();
            for s in 0..iters {
                let snapshot = c.clone();
                let tok = (s as u32 * 31) % v;
                m.extend_stacked(&[vec![tok, 7]], &mut c).unwrap();
                c = snapshot;
                m.extend_stacked(&[vec![tok]], &mut c).unwrap();
            }
            let old = t0.elapsed().as_secs_f64() * 1e3 / iters as f64;
            eprintln!("block {block}: rejected round, taken back {new:.2} ms, snapshot and re-feed {old:.2} ms ({:.2}x)", old / new);
        }
        return;
    }
    if let Some(t) = args.get(4) {
        // Only forwards of `t` tokens (kept), for a profile.
        let t: usize = t.parse().unwrap();
        let mut c = base.clone();
        let t0 = Instant::now();
        for s in 0..iters {
            let toks: Vec<u32> = (0..t as u32).map(|j| (s as u32 * 31 + j) % v).collect();
            if t > 1 { assert!(c.keep_token_states()); }
            m.extend_stacked(&[toks], &mut c).unwrap();
            if t > 1 { c.drop_last(t - 1).unwrap(); }
        }
        eprintln!("{t} tokens: {:.2} ms", t0.elapsed().as_secs_f64() * 1e3 / iters as f64);
        return;
    }
    for block in 0..4 {
        // plain steps
        let mut c = base.clone();
        m.extend_stacked(&[vec![5]], &mut c).unwrap();
        let t0 = Instant::now();
        for s in 0..iters { m.extend_stacked(&[vec![(s as u32 * 31) % v]], &mut c).unwrap(); }
        let plain = t0.elapsed().as_secs_f64() * 1e3 / iters as f64;
        // verify forwards of 2 and 3 tokens, armed, all kept
        let mut verify = [0.0; 2];
        for (i, t) in [2usize, 3].into_iter().enumerate() {
            let mut c = base.clone();
            m.extend_stacked(&[vec![5]], &mut c).unwrap();
            let t0 = Instant::now();
            for s in 0..iters {
                assert!(c.keep_token_states());
                let toks: Vec<u32> = (0..t as u32).map(|j| (s as u32 * 31 + j) % v).collect();
                m.extend_stacked(&[toks], &mut c).unwrap();
                c.drop_last(1).unwrap();
            }
            verify[i] = t0.elapsed().as_secs_f64() * 1e3 / iters as f64;
        }
        // whole greedy rounds, k = 1
        let mut c = base.clone();
        let mut head = MtpHead::prime(&m, last_hidden.clone(), &[5]).unwrap();
        let mut last = 5u32;
        let (mut toks, mut acc) = (0usize, 0usize);
        let t0 = Instant::now();
        for _ in 0..iters {
            let mut emitted = vec![];
            let r = round(&m, &mut c, &mut head, last, 1, &mut |row| { let t = argmax(row) as u32; emitted.push(t); (Some(t), true) }).unwrap();
            acc += r.accepted;
            toks += r.accepted + 1;
            last = *emitted.last().unwrap();
        }
        let per_round = t0.elapsed().as_secs_f64() * 1e3 / iters as f64;
        eprintln!("block {block}: plain step {plain:.2} ms | verify 2 tokens {:.2} ms, 3 tokens {:.2} ms (each + drop_last 1) | round k=1 {per_round:.2} ms, {:.2} tokens/round (acceptance {:.2}) -> {:.2} ms/token, {:.2}x",
            verify[0], verify[1], toks as f64 / iters as f64, acc as f64 / iters as f64, per_round * iters as f64 / toks as f64, plain / (per_round * iters as f64 / toks as f64));
    }
}
