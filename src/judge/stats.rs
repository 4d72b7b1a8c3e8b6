//! The statistics the judge reports need, written out so their definitions are visible: Cohen's κ,
//! Pearson's r, Spearman's ρ (Pearson on average ranks, as scipy computes it) and the exact two-sided
//! binomial (sign) test. `testdata/judge/stats.json` holds the values scipy and scikit-learn give on
//! the same inputs; the tests assert agreement.

/// Cohen's κ between two label sequences of equal length: (p_o − p_e) / (1 − p_e), with p_e from the
/// two raters' marginal label frequencies. `None` when undefined (empty input, or p_e = 1: both raters
/// used one and the same label throughout, where scikit-learn returns NaN).
pub fn cohen_kappa<T: PartialEq + Clone>(a: &[T], b: &[T]) -> Option<f64> {
    if a.len() != b.len() || a.is_empty() {
        return None;
    }
    let n = a.len() as f64;
    let mut labels: Vec<T> = Vec::new();
    for x in a.iter().chain(b) {
        if !labels.contains(x) {
            labels.push(x.clone());
        }
    }
    let observed = a.iter().zip(b).filter(|(x, y)| x == y).count() as f64 / n;
    let expected: f64 = labels
        .iter()
        .map(|l| {
            let pa = a.iter().filter(|x| *x == l).count() as f64 / n;
            let pb = b.iter().filter(|x| *x == l).count() as f64 / n;
            pa * pb
        })
        .sum();
    if (1.0 - expected).abs() < 1e-15 {
        return None;
    }
    Some((observed - expected) / (1.0 - expected))
}

/// Pearson's r. `None` for fewer than 2 points or a constant sequence.
pub fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() != y.len() || x.len() < 2 {
        return None;
    }
    let n = x.len() as f64;
    let mx = x.iter().sum::<f64>() / n;
    let my = y.iter().sum::<f64>() / n;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    if sxx == 0.0 || syy == 0.0 {
        return None;
    }
    Some((sxy / (sxx.sqrt() * syy.sqrt())).clamp(-1.0, 1.0))
}

/// Spearman's ρ: Pearson's r of the ranks, ties sharing their average rank.
pub fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() != y.len() {
        return None;
    }
    pearson(&ranks(x), &ranks(y))
}

/// 1-based ranks with ties averaged (scipy's `rankdata(method="average")`).
pub fn ranks(x: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..x.len()).collect();
    order.sort_by(|&i, &j| x[i].total_cmp(&x[j]));
    let mut out = vec![0.0; x.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && x[order[j + 1]] == x[order[i]] {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            out[k] = avg;
        }
        i = j + 1;
    }
    out
}

/// ln C(n, k).
fn ln_choose(n: u64, k: u64) -> f64 {
    let k = k.min(n - k);
    (0..k)
        .map(|i| ((n - i) as f64).ln() - ((i + 1) as f64).ln())
        .sum()
}

/// The exact two-sided binomial test of `k` successes in `n` trials at p = 0.5 (the sign test): the
/// probability of an outcome at most as likely as the one seen, as scipy's `binomtest` defines it. At
/// p = 0.5 that is min(1, 2·P(X ≤ min(k, n−k))). `n = 0` gives 1 (no evidence either way).
pub fn sign_test(k: u64, n: u64) -> f64 {
    if n == 0 {
        return 1.0;
    }
    let low = k.min(n - k);
    if 2 * low == n {
        return 1.0;
    }
    let ln_half_n = n as f64 * 0.5f64.ln();
    let tail: f64 = (0..=low).map(|i| (ln_choose(n, i) + ln_half_n).exp()).sum();
    (2.0 * tail).min(1.0)
}

/// The paired sign test of B against A on outcomes joined by case id, over the cases both decided:
/// (cases where B is better, where A is better, p-value); ties are left out. On 0/1 outcomes "better" is
/// right where the other is wrong; on scores, higher.
pub fn paired_sign_test<'a, T: PartialOrd>(
    a: impl IntoIterator<Item = (&'a str, T)>,
    b: impl IntoIterator<Item = (&'a str, T)>,
) -> (u64, u64, f64) {
    let of_a: std::collections::HashMap<&str, T> = a.into_iter().collect();
    let (mut b_only, mut a_only) = (0, 0);
    for (id, hb) in b {
        if let Some(ha) = of_a.get(id) {
            b_only += u64::from(hb > *ha);
            a_only += u64::from(*ha > hb);
        }
    }
    (b_only, a_only, sign_test(b_only, b_only + a_only))
}

/// The Wilson score interval of `k` successes in `n` trials at 95% (z = 1.96), as statsmodels'
/// `proportion_confint(k, n, method="wilson")` gives it: sound for small `n` and rates near 0 or 1,
/// where the normal interval is not. `n = 0` gives (0, 1).
pub fn wilson(k: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (n, p, z) = (n as f64, k as f64 / n as f64, 1.959_963_984_540_054);
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// The 95% interval of a paired difference of rates, B's minus A's, from the discordant counts — `wins`
/// (B right, A wrong) and `losses` (the reverse) — of `n` paired cases: Agresti and Min's (2005) Wald
/// interval with ½ added to each cell of the 2×2 table, which keeps its coverage near 95% for small and
/// lopsided counts where the plain Wald interval fails. Clamped to [−1, 1]; `n = 0` gives (−1, 1).
pub fn paired_difference_interval(wins: u64, losses: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (-1.0, 1.0);
    }
    let (b, c, n) = (wins as f64 + 0.5, losses as f64 + 0.5, n as f64 + 2.0);
    let d = (b - c) / n;
    let half = 1.959_963_984_540_054 * ((b + c) - (b - c).powi(2) / n).sqrt() / n;
    ((d - half).max(-1.0), (d + half).min(1.0))
}

/// The mean of `values` with its 95% normal-approximation interval (mean ± 1.96·s/√n, s the sample
/// standard deviation), for per-episode scores in [0, 1] that are not plain 0/1 outcomes. Fewer than
/// two values give the whole range as the interval.
pub fn mean_interval(values: &[f64]) -> (f64, f64, f64) {
    let n = values.len() as f64;
    if values.is_empty() {
        return (0.0, 0.0, 1.0);
    }
    let mean = values.iter().sum::<f64>() / n;
    if values.len() < 2 {
        return (mean, 0.0, 1.0);
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let half = 1.959_963_984_540_054 * (var / n).sqrt();
    (mean, mean - half, mean + half)
}

/// Counts of (row label, column label) pairs over a fixed label order.
pub fn confusion<T: PartialEq>(labels: &[T], truth: &[T], predicted: &[T]) -> Vec<Vec<u64>> {
    let mut m = vec![vec![0u64; labels.len()]; labels.len()];
    for (t, p) in truth.iter().zip(predicted) {
        if let (Some(i), Some(j)) = (
            labels.iter().position(|l| l == t),
            labels.iter().position(|l| l == p),
        ) {
            m[i][j] += 1;
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_test_of_the_brief() {
        // 35 wins, 1 loss (64 ties dropped): far below 0.001.
        let p = sign_test(35, 36);
        assert!(p < 1e-3 && p > 0.0, "{p}");
        assert_eq!(sign_test(5, 10), 1.0);
        assert!((sign_test(0, 1) - 1.0).abs() < 1e-12);
        assert!((sign_test(0, 5) - 0.0625).abs() < 1e-12);
    }

    #[test]
    fn paired_difference_intervals_of_agresti_and_min() {
        // Computed by hand from the paper's formula: (b+½ − c−½)/(n+2) ± 1.96·√((b+c+1) − (b−c)²/(n+2))/(n+2).
        for (w, l, n, lo, hi) in [
            (1, 63, 483, -0.158_365_0, -0.097_305_1),
            (19, 0, 200, 0.052_651_2, 0.135_467_6),
            (0, 0, 10, -0.163_330_3, 0.163_330_3),
        ] {
            let (a, b) = paired_difference_interval(w, l, n);
            assert!(
                (a - lo).abs() < 1e-6 && (b - hi).abs() < 1e-6,
                "{w}/{l}/{n}: ({a}, {b})"
            );
        }
        // All ten discordant for B: the interval is clamped at 1.
        assert_eq!(paired_difference_interval(10, 0, 10).1, 1.0);
        assert_eq!(paired_difference_interval(0, 0, 0), (-1.0, 1.0));
    }

    #[test]
    fn wilson_intervals_match_statsmodels() {
        // proportion_confint(k, n, method="wilson")
        for (k, n, lo, hi) in [
            (50, 100, 0.403_831_5, 0.596_168_5),
            (0, 10, 0.0, 0.277_532_8),
            (7, 20, 0.181_191_8, 0.567_145_7),
        ] {
            let (a, b) = wilson(k, n);
            assert!(
                (a - lo).abs() < 1e-6 && (b - hi).abs() < 1e-6,
                "{k}/{n}: ({a}, {b})"
            );
        }
        assert_eq!(wilson(0, 0), (0.0, 1.0));
    }

    #[test]
    fn mean_interval_is_the_normal_interval_of_the_sample() {
        // mean 0.5, sample sd 0.5773503 (numpy: np.std(x, ddof=1)), n 4.
        let (m, lo, hi) = mean_interval(&[0.0, 0.0, 1.0, 1.0]);
        let half = 1.959_963_984_540_054 * 0.577_350_269_189_625_8 / 2.0;
        assert!(
            (m - 0.5).abs() < 1e-12
                && (lo - (0.5 - half)).abs() < 1e-12
                && (hi - (0.5 + half)).abs() < 1e-12
        );
        assert_eq!(mean_interval(&[0.3]), (0.3, 0.0, 1.0));
        assert_eq!(mean_interval(&[]), (0.0, 0.0, 1.0));
    }

    #[test]
    fn ranks_average_ties() {
        assert_eq!(ranks(&[3.0, 1.0, 3.0, 2.0]), vec![3.5, 1.0, 3.5, 2.0]);
    }

    #[test]
    fn kappa_is_undefined_for_one_shared_label() {
        assert_eq!(cohen_kappa(&[1, 1], &[1, 1]), None);
        assert_eq!(cohen_kappa(&[0, 1, 0, 1], &[0, 1, 0, 1]), Some(1.0));
    }
}
