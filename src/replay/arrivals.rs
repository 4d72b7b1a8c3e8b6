//! Request arrival times, as vLLM's benchmark draws them: gaps from Gamma(shape = burstiness,
//! scale = 1 / (rate · burstiness)) — burstiness 1 is a Poisson process, below 1 burstier, above 1 more
//! regular — then the cumulative times rescaled so the last request is sent at `n / rate` (the run's
//! nominal length, no ramp-up). An infinite rate sends everything at once. Seeded, so a schedule is
//! reproducible.

use crate::rng::Rng;

/// Send times in seconds from the start, one per request, non-decreasing.
pub fn schedule(n: usize, rate: Option<f64>, burstiness: f64, seed: u64) -> Vec<f64> {
    let Some(rate) = rate.filter(|r| r.is_finite() && *r > 0.0) else {
        return vec![0.0; n];
    };
    if burstiness.is_infinite() {
        return (0..n).map(|i| i as f64 / rate).collect();
    }
    let mut rng = Rng::derive(seed, "arrivals");
    let scale = 1.0 / (rate * burstiness);
    let mut t = 0.0;
    let mut times: Vec<f64> = (0..n)
        .map(|_| {
            let at = t;
            t += gamma(&mut rng, burstiness) * scale;
            at
        })
        .collect();
    let last = times.last().copied().unwrap_or(0.0);
    if n > 1 && last > 0.0 {
        let target = n as f64 / rate;
        times.iter_mut().for_each(|x| *x *= target / last);
    }
    times
}

/// A Gamma(shape, 1) draw: Marsaglia–Tsang for shape ≥ 1, boosted by `U^(1/shape)` below 1.
pub fn gamma(rng: &mut Rng, shape: f64) -> f64 {
    if shape < 1.0 {
        let u = open_unit(rng);
        return gamma(rng, shape + 1.0) * u.powf(1.0 / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal(rng);
        let v = (1.0 + c * x).powi(3);
        if v <= 0.0 {
            continue;
        }
        let u = open_unit(rng);
        if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return d * v;
        }
    }
}

/// Uniform in (0, 1): never 0, so logarithms stay finite.
fn open_unit(rng: &mut Rng) -> f64 {
    loop {
        let u = rng.unit();
        if u > 0.0 {
            return u;
        }
    }
}

/// Standard normal by Box–Muller.
fn normal(rng: &mut Rng) -> f64 {
    let (u1, u2) = (open_unit(rng), rng.unit());
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}
