// Append to src/model/cpu/few_rows.rs, then:
//   cargo test --release --lib zz_m2_vs_m1 -- --ignored --nocapture
// One thread, ~0.4 GB of weights per shape (DRAM-cold), 1, 2 and 3 rows alternated eight times; medians.
#[cfg(test)]
mod zz_m2_vs_m1 {
    use super::*;
    #[test]
    #[ignore]
    fn zz_m2_vs_m1() {
        for (k, n) in [(512usize, 256usize), (512, 384), (512, 512), (512, 1024), (192, 512), (256, 512)] {
            let count = (100_000_000 / (k * n)).max(2);
            let ws: Vec<Vec<f32>> = (0..count).map(|i| (0..k * n).map(|j| ((i + j) % 97) as f32 * 0.01).collect()).collect();
            let mut t = [vec![], vec![], vec![]];
            for _ in 0..8 {
                for (i, m) in [1usize, 2, 3].into_iter().enumerate() {
                    let x: Vec<f32> = (0..m * k).map(|j| (j % 13) as f32 * 0.1).collect();
                    let mut out = vec![0f32; m * n];
                    let t0 = std::time::Instant::now();
                    for w in &ws {
                        out.fill(0.0);
                        let p = Operands { n, x: x.as_ptr(), x_rs: k, w: w.as_ptr(), w_rs: n, dst: out.as_mut_ptr(), dst_rs: n };
                        unsafe { accumulate(m, 0..k, &p) };
                    }
                    t[i].push(t0.elapsed().as_secs_f64() / count as f64 * 1e6);
                }
            }
            let med = |v: &mut Vec<f64>| { v.sort_by(f64::total_cmp); v[v.len() / 2] };
            let (a, b, c) = (med(&mut t[0]), med(&mut t[1]), med(&mut t[2]));
            eprintln!("k {k} n {n}: m1 {a:.1} µs ({:.1} GB/s), m2 {b:.1} µs ({:.2}x), m3 {c:.1} µs ({:.2}x)", (k * n * 4) as f64 / a / 1e3, b / a, c / a);
        }
    }
}
