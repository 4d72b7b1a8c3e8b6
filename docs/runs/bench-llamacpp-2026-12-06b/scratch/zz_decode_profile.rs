use burn::backend::NdArray;
use hat::model::{CausalLm, WeightDtype};
use std::time::Instant;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dtype = match args[2].as_str() { "bf16" => WeightDtype::Bf16, "int8" => WeightDtype::Int8, _ => WeightDtype::F32 };
    let steps: usize = args[3].parse().unwrap();
    let m = CausalLm::<NdArray<f32>>::load_as(std::path::Path::new(&args[1]), dtype, &Default::default()).unwrap();
    let v = m.config.vocab_size as u32;
    let prompt: Vec<u32> = (0..128u32).map(|i| (i * 7919 + 13) % v).collect();
    let mut cache = m.new_cache();
    m.prefill(&prompt, &mut cache).unwrap();
    for s in 0..16 { m.decode_step(&[s as u32 % v], std::slice::from_mut(&mut cache)).unwrap(); }
    let t0 = Instant::now();
    for s in 0..steps { m.decode_step(&[s as u32 % v], std::slice::from_mut(&mut cache)).unwrap(); }
    eprintln!("{:.1} tok/s", steps as f64 / t0.elapsed().as_secs_f64());
}
