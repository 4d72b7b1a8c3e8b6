// Append to src/model/cpu/few_rows.rs, then:
//   cargo test --release --lib few_rows_vs_gemm -- --ignored --nocapture
// One thread, same process, gemm and `accumulate` alternated ten times on ~0.4 GB of weights of
// `small`'s shapes; prints the median and range of gemm's time ÷ ours (> 1: ours faster).
#[cfg(test)]
mod few_rows_vs_gemm {
    use super::*;
    #[test]
    #[ignore]
    fn few_rows_vs_gemm() {
        let shapes = [(512usize, 256usize), (256, 512), (192, 512), (512, 384), (512, 512), (512, 768), (512, 1024), (512, 2064), (512, 32000)];
        for (k, n, m) in shapes.into_iter().flat_map(|(k, n)| [1usize, 2, 4, 8].map(|m| (k, n, m))) {
            let count = (100_000_000 / (k * n)).max(2);
            let ws: Vec<Vec<f32>> = (0..count).map(|i| (0..k * n).map(|j| ((i + j) % 97) as f32 * 0.01).collect()).collect();
            let x: Vec<f32> = (0..m * k).map(|j| (j % 13) as f32 * 0.1).collect();
            let mut out = vec![0f32; m * n];
            let mut ratios = vec![];
            for _ in 0..10 {
                let t0 = std::time::Instant::now();
                for w in &ws {
                    unsafe { gemm::gemm(m, n, k, out.as_mut_ptr(), 1, n as isize, false, x.as_ptr(), 1, k as isize, w.as_ptr(), 1, n as isize, 0.0, 1.0, false, false, false, gemm::Parallelism::None) };
                }
                let g = t0.elapsed().as_secs_f64();
                let t0 = std::time::Instant::now();
                for w in &ws {
                    out.fill(0.0);
                    let p = Operands { n, x: x.as_ptr(), x_rs: k, w: w.as_ptr(), w_rs: n, dst: out.as_mut_ptr(), dst_rs: n };
                    unsafe { accumulate(m, 0..k, &p) };
                }
                ratios.push(g / t0.elapsed().as_secs_f64());
            }
            ratios.sort_by(f64::total_cmp);
            eprintln!("k {k} n {n} m {m}: gemm ÷ ours median {:.2} ({:.2}–{:.2})", ratios[5], ratios[0], ratios[9]);
        }
    }
}
