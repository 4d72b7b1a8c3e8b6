//! Benchmark statistics, defined as vLLM's `benchmark_serving` defines them (reference §3.1) so numbers
//! compare across engines: numpy-style linearly interpolated percentiles, TPOT excluding the first token,
//! ITL pooled over all requests, goodput and the 15-second attainment with failures counted as misses.

use serde::Serialize;

/// What the client measured for one request.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Measured {
    pub id: String,
    pub intent: String,
    /// Seconds from the benchmark start to the send.
    pub start_s: f64,
    /// HTTP OK, a complete response and a valid final reply.
    pub ok: bool,
    /// The judge's verdict when the task has ground truth.
    pub task_success: Option<bool>,
    pub http_status: u16,
    pub e2e_ms: f64,
    /// Time to the first content (streaming only).
    pub ttft_ms: Option<f64>,
    /// Gaps between consecutive streamed chunks.
    pub itl_ms: Vec<f64>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub error: String,
    /// The server root the request went to.
    pub endpoint: String,
}

impl Measured {
    /// `(e2e - ttft) / (output - 1)`, defined when more than one token was generated.
    pub fn tpot_ms(&self) -> Option<f64> {
        let ttft = self.ttft_ms?;
        (self.output_tokens > 1).then(|| (self.e2e_ms - ttft) / (self.output_tokens - 1) as f64)
    }
}

/// numpy.percentile with the default linear interpolation; `p` in [0, 100]. `None` for no data.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = p / 100.0 * (sorted.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64))
}

/// mean, median, std (population, as numpy) and the percentiles of one metric.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Distribution {
    pub mean: Option<f64>,
    pub median: Option<f64>,
    pub std: Option<f64>,
    pub p50: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
}

impl Distribution {
    pub fn of(values: &[f64]) -> Distribution {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return Distribution::default();
        }
        v.sort_by(f64::total_cmp);
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        Distribution {
            mean: Some(mean),
            median: percentile(&v, 50.0),
            std: Some(var.sqrt()),
            p50: percentile(&v, 50.0),
            p95: percentile(&v, 95.0),
            p99: percentile(&v, 99.0),
        }
    }
}

/// Aggregate results over the measured requests (warm-up already excluded).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    pub duration: f64,
    pub completed: u64,
    pub failed: u64,
    pub total_input_tokens: u64,
    pub total_output_tokens: u64,
    pub request_throughput: f64,
    pub output_throughput: f64,
    pub total_token_throughput: f64,
    /// Requests per second that succeeded within the SLO.
    pub request_goodput: f64,
    pub max_concurrent_requests: u64,
    pub ttft_ms: Distribution,
    pub tpot_ms: Distribution,
    pub itl_ms: Distribution,
    pub e2el_ms: Distribution,
    /// Per-request decode speed, `1000 / tpot`.
    pub decode_tokens_per_s: Distribution,
    pub execution_success_rate: f64,
    /// Share of judged requests that solved their task; `None` when nothing could be judged.
    pub task_success_rate: Option<f64>,
    pub slo_e2e_ms: f64,
    /// Share of all requests that succeeded within `slo_e2e_ms` (failures are misses).
    pub attainment: f64,
}

/// Summarises `runs`, which took `duration` seconds of wall clock.
pub fn summarize(runs: &[Measured], duration: f64, slo_e2e_ms: f64) -> Summary {
    let ok: Vec<&Measured> = runs.iter().filter(|r| r.ok).collect();
    let good = ok.iter().filter(|r| r.e2e_ms <= slo_e2e_ms).count();
    let total_in: u64 = ok.iter().map(|r| r.input_tokens).sum();
    let total_out: u64 = ok.iter().map(|r| r.output_tokens).sum();
    let per_s = |x: f64| if duration > 0.0 { x / duration } else { 0.0 };
    let judged: Vec<bool> = runs.iter().filter_map(|r| r.task_success).collect();
    let share = |n: usize, d: usize| if d == 0 { 0.0 } else { n as f64 / d as f64 };
    let tpots: Vec<f64> = ok.iter().filter_map(|r| r.tpot_ms()).collect();
    Summary {
        duration,
        completed: ok.len() as u64,
        failed: (runs.len() - ok.len()) as u64,
        total_input_tokens: total_in,
        total_output_tokens: total_out,
        request_throughput: per_s(ok.len() as f64),
        output_throughput: per_s(total_out as f64),
        total_token_throughput: per_s((total_in + total_out) as f64),
        request_goodput: per_s(good as f64),
        max_concurrent_requests: max_concurrency(runs),
        ttft_ms: Distribution::of(&ok.iter().filter_map(|r| r.ttft_ms).collect::<Vec<_>>()),
        tpot_ms: Distribution::of(&tpots),
        itl_ms: Distribution::of(
            &ok.iter()
                .flat_map(|r| r.itl_ms.iter().copied())
                .collect::<Vec<_>>(),
        ),
        e2el_ms: Distribution::of(&ok.iter().map(|r| r.e2e_ms).collect::<Vec<_>>()),
        decode_tokens_per_s: Distribution::of(
            &tpots
                .iter()
                .filter(|t| **t > 0.0)
                .map(|t| 1000.0 / t)
                .collect::<Vec<_>>(),
        ),
        execution_success_rate: share(ok.len(), runs.len()),
        task_success_rate: (!judged.is_empty())
            .then(|| share(judged.iter().filter(|s| **s).count(), judged.len())),
        slo_e2e_ms,
        attainment: share(good, runs.len()),
    }
}

/// The most requests in flight at once (a sweep over start and end times).
pub fn max_concurrency(runs: &[Measured]) -> u64 {
    let mut events: Vec<(f64, i64)> = runs
        .iter()
        .flat_map(|r| [(r.start_s, 1), (r.start_s + r.e2e_ms / 1000.0, -1)])
        .collect();
    // Ends sort before starts at the same instant.
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut now, mut peak) = (0i64, 0i64);
    for (_, d) in events {
        now += d;
        peak = peak.max(now);
    }
    peak as u64
}

/// One endpoint's share of a run: its requests, failures (with the first error) and latencies.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct EndpointShare {
    pub url: String,
    pub requests: u64,
    pub failed: u64,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub first_error: String,
    pub e2el_ms: Distribution,
    pub ttft_ms: Distribution,
}

/// Per endpoint of `urls` (in that order), the requests of `runs` sent there.
pub fn by_endpoint(runs: &[Measured], urls: &[String]) -> Vec<EndpointShare> {
    urls.iter()
        .map(|url| {
            let mine: Vec<&Measured> = runs.iter().filter(|r| &r.endpoint == url).collect();
            let ok: Vec<&&Measured> = mine.iter().filter(|r| r.ok).collect();
            EndpointShare {
                url: url.clone(),
                requests: mine.len() as u64,
                failed: mine.iter().filter(|r| !r.ok).count() as u64,
                first_error: mine
                    .iter()
                    .find(|r| !r.ok)
                    .map_or(String::new(), |r| r.error.clone()),
                e2el_ms: Distribution::of(&ok.iter().map(|r| r.e2e_ms).collect::<Vec<_>>()),
                ttft_ms: Distribution::of(&ok.iter().filter_map(|r| r.ttft_ms).collect::<Vec<_>>()),
            }
        })
        .collect()
}
