// Times `prefill_batch` of N random prompts of LEN tokens on a random `small` (f32), median of
// ITERS. Copy to examples/ and run: cargo build --release --example zz_prefill &&
// target/release/examples/zz_prefill 32 48 5   (the serve bench's c32 burst)
use burn::backend::NdArray;
use hat::model::WeightDtype;
use hat::serve::engine::StepModel;
use hat::serve::model::BurnModel;
use std::time::Instant;
type M = BurnModel<NdArray<f32>>;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).map_or(32, |s| s.parse().unwrap());
    let len: usize = args.get(2).map_or(48, |s| s.parse().unwrap());
    let iters: usize = args.get(3).map_or(5, |s| s.parse().unwrap());
    let mut m = M::random("small", 4096, 1, WeightDtype::F32, Default::default()).unwrap();
    let prompts: Vec<Vec<u32>> = (0..n as u32)
        .map(|r| (0..len as u32).map(|i| (i * 37 + r * 101 + 5) % 4096).collect())
        .collect();
    let mut times = vec![];
    for _ in 0..iters {
        let t = Instant::now();
        let out = m.prefill_batch(prompts.iter().map(|p| (p.as_slice(), None)).collect());
        assert!(out.iter().all(|r| r.is_ok()));
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    let med = times[times.len() / 2];
    println!("{n} x {len}: median {:.1} ms, {:.0} tok/s", med * 1e3, (n * len) as f64 / med);
}
