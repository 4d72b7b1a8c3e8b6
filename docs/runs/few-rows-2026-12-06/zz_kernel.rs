//! Scratch: plain decode steps and 2-token checks of `small` (random weights, 4096 vocab), old and
//! new few-row kernels alternated in one process. `zz_kernel CTX ITERS BLOCKS`
use burn::backend::NdArray;
use hat::model::{presets, CausalLm, ZZ_OLD};
use std::sync::atomic::Ordering;
use std::time::Instant;
fn main() {
    let a: Vec<usize> = std::env::args().skip(1).map(|x| x.parse().unwrap()).collect();
    let (n, iters, blocks) = (a[0], a[1], a[2]);
    let cfg = presets::preset("small", Some(4096)).unwrap();
    let m = CausalLm::<NdArray<f32>>::init(&cfg, 7, &Default::default()).unwrap();
    let v = 4096u32;
    if let Some(&rows) = a.get(3) {
        // Batched decode steps of `rows` sequences after `n`-token prompts.
        let prompts: Vec<Vec<u32>> = (0..rows as u32).map(|r| (0..n as u32).map(|i| (i * 7919 + 13 * r + 1) % v).collect()).collect();
        let caches: Vec<_> = prompts.iter().map(|p| { let mut c = m.new_cache(); m.extend_stacked(&[p.clone()], &mut c).unwrap(); c }).collect();
        let base = hat::model::Cache::stack(&caches).unwrap();
        let mut t = [vec![], vec![]];
        for block in 0..blocks {
            for old in [block % 2 == 0, block % 2 != 0] {
                ZZ_OLD.store(old, Ordering::Relaxed);
                let mut c = base.clone();
                let step = |c: &mut hat::model::Cache<NdArray<f32>>, s: u32| {
                    let toks: Vec<Vec<u32>> = (0..rows as u32).map(|r| vec![(s * 31 + r * 7) % v]).collect();
                    m.extend_stacked(&toks, c).unwrap();
                };
                step(&mut c, 0);
                let t0 = Instant::now();
                for s in 0..iters as u32 { step(&mut c, s + 1); }
                t[old as usize].push(t0.elapsed().as_secs_f64() * 1e3 / iters as f64);
            }
        }
        let f = |v: &Vec<f64>| v.iter().map(|x| format!("{x:.2}")).collect::<Vec<_>>().join("/");
        let r: Vec<String> = (0..blocks).map(|b| format!("{:.2}", t[0][b] / t[1][b])).collect();
        eprintln!("{rows} rows, {n}-token prompts: step old {} ms | new {} ms | new/old {}", f(&t[1]), f(&t[0]), r.join("/"));
        return;
    }
    let prompt: Vec<u32> = (0..n as u32).map(|i| (i * 7919 + 13) % v).collect();
    let mut base = m.new_cache();
    m.extend_stacked(&[prompt], &mut base).unwrap();
    let mut res = vec![vec![vec![]; 2]; 2];
    for block in 0..blocks {
        for old in [block % 2 == 0, block % 2 != 0] {
            ZZ_OLD.store(old, Ordering::Relaxed);
            let mut c = base.clone();
            m.extend_stacked(&[vec![5]], &mut c).unwrap();
            let t0 = Instant::now();
            for s in 0..iters {
                m.extend_stacked(&[vec![(s as u32 * 31) % v]], &mut c).unwrap();
            }
            let plain = t0.elapsed().as_secs_f64() * 1e3 / iters as f64;
            let mut c = base.clone();
            m.extend_stacked(&[vec![5]], &mut c).unwrap();
            let t0 = Instant::now();
            for s in 0..iters {
                assert!(c.keep_token_states());
                m.extend_stacked(&[vec![(s as u32 * 31) % v, (s as u32 * 17 + 3) % v]], &mut c).unwrap();
                c.drop_last(1).unwrap();
            }
            let check = t0.elapsed().as_secs_f64() * 1e3 / iters as f64;
            let k = old as usize;
            res[k][0].push(plain);
            res[k][1].push(check);
            eprintln!("block {block} {}: plain {plain:.2} ms, check of 2 {check:.2} ms ({:.2} steps)", if old { "old" } else { "new" }, check / plain);
        }
    }
    for (k, name) in [(1, "old"), (0, "new")] {
        let r = &res[k];
        let f = |v: &Vec<f64>| v.iter().map(|x| format!("{x:.2}")).collect::<Vec<_>>().join("/");
        eprintln!("{name}: plain {} | check {}", f(&r[0]), f(&r[1]));
    }
    let ratio = |i: usize| (0..blocks).map(|b| format!("{:.2}", res[0][i][b] / res[1][i][b])).collect::<Vec<_>>().join("/");
    eprintln!("new/old time per block: plain {} | check {}", ratio(0), ratio(1));
}
