use burn::backend::NdArray;
use hat::model::{CausalLm, WeightDtype};
use std::time::Instant;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dtype = match args[2].as_str() { "bf16" => WeightDtype::Bf16, "int8" => WeightDtype::Int8, _ => WeightDtype::F32 };
    let m = CausalLm::<NdArray<f32>>::load_as(std::path::Path::new(&args[1]), dtype, &Default::default()).unwrap();
    let v = m.config.vocab_size as u32;
    let prompt: Vec<u32> = (0..128u32).map(|i| (i * 7919 + 13) % v).collect();
    let mut c = m.new_cache(); m.prefill(&prompt[..8], &mut c).unwrap();
    let mut best = f64::MAX;
    for _ in 0..5 { let mut c = m.new_cache(); let t0 = Instant::now(); m.prefill(&prompt, &mut c).unwrap(); best = best.min(t0.elapsed().as_secs_f64()); }
    eprintln!("{:.1}", 128.0 / best);
}
