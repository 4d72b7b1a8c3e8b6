use burn::backend::NdArray;
use hat::model::{CausalLm, WeightDtype};
use hat::model::generation::cache::Cache;
use std::time::Instant;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dtype = match args[2].as_str() { "bf16" => WeightDtype::Bf16, "int8" => WeightDtype::Int8, _ => WeightDtype::F32 };
    let steps: usize = args[3].parse().unwrap();
    let rows: usize = args.get(4).map_or(4, |r| r.parse().unwrap());
    let m = CausalLm::<NdArray<f32>>::load_as(std::path::Path::new(&args[1]), dtype, &Default::default()).unwrap();
    let v = m.config.vocab_size as u32;
    let prompt: Vec<u32> = (0..128u32).map(|i| (i * 7919 + 13) % v).collect();
    let caches: Vec<_> = (0..rows).map(|r| { let mut c = m.new_cache(); m.prefill(&prompt[..128 - 4 * r], &mut c).unwrap(); c }).collect();
    let mut stacked = Cache::stack(&caches).unwrap();
    for s in 0..8 { let t: Vec<Vec<u32>> = (0..rows).map(|r| vec![((r * 31 + s) as u32) % v]).collect(); m.extend_stacked(&t, &mut stacked).unwrap(); }
    let t0 = Instant::now();
    for s in 0..steps { let t: Vec<Vec<u32>> = (0..rows).map(|r| vec![((r * 31 + s) as u32) % v]).collect(); m.extend_stacked(&t, &mut stacked).unwrap(); }
    eprintln!("x{rows}: {:.1} tok/s", (rows * steps) as f64 / t0.elapsed().as_secs_f64());
}
