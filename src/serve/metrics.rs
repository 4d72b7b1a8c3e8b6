//! Server metrics in the Prometheus text format: request counts by endpoint and status, latency
//! histograms (end-to-end and time to first token), token counters, and the engine's queue depth and
//! running batch size. Plain atomics: the engine thread and the HTTP tasks update them lock-free.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds in seconds; the 15 s bucket is the deployment SLO.
const BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 30.0, 60.0,
];

#[derive(Default)]
pub struct Histogram {
    counts: [AtomicU64; BUCKETS.len()],
    count: AtomicU64,
    sum_us: AtomicU64,
}

impl Histogram {
    pub fn observe(&self, d: Duration) {
        let s = d.as_secs_f64();
        for (b, c) in BUCKETS.iter().zip(&self.counts) {
            if s <= *b {
                c.fetch_add(1, Relaxed);
            }
        }
        self.count.fetch_add(1, Relaxed);
        self.sum_us.fetch_add(d.as_micros() as u64, Relaxed);
    }

    fn write(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        for (b, c) in BUCKETS.iter().zip(&self.counts) {
            let _ = writeln!(out, "{name}_bucket{{le=\"{b}\"}} {}", c.load(Relaxed));
        }
        let n = self.count.load(Relaxed);
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {n}");
        let sum = self.sum_us.load(Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_sum {sum}\n{name}_count {n}");
    }
}

#[derive(Default)]
pub struct Metrics {
    /// (endpoint, HTTP status) → count.
    requests: Mutex<BTreeMap<(String, u16), u64>>,
    pub e2e: Histogram,
    pub ttft: Histogram,
    pub prompt_tokens: AtomicU64,
    /// Prompt tokens whose state came from the prefix cache.
    pub cached_prompt_tokens: AtomicU64,
    pub generation_tokens: AtomicU64,
    /// Requests accepted but not yet admitted into the running batch.
    pub queue_depth: AtomicU64,
    /// Sequences in the batch of the latest engine step.
    pub running: AtomicU64,
    /// The largest batch any decode step has run (shows that batching happens).
    pub max_running: AtomicU64,
    pub decode_steps: AtomicU64,
}

impl Metrics {
    pub fn count_request(&self, endpoint: &str, status: u16) {
        let mut m = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        *m.entry((endpoint.to_string(), status)).or_default() += 1;
    }

    pub fn set_running(&self, n: usize) {
        self.running.store(n as u64, Relaxed);
        self.max_running.fetch_max(n as u64, Relaxed);
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        out.push_str("# HELP hat_requests_total HTTP requests by endpoint and status.\n# TYPE hat_requests_total counter\n");
        for ((ep, status), n) in self
            .requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            let _ = writeln!(
                out,
                "hat_requests_total{{endpoint=\"{ep}\",status=\"{status}\"}} {n}"
            );
        }
        self.e2e.write(
            &mut out,
            "hat_request_e2e_seconds",
            "End-to-end latency of generation requests.",
        );
        self.ttft.write(
            &mut out,
            "hat_request_ttft_seconds",
            "Time to first generated token.",
        );
        let gauges = [
            (
                "hat_prompt_tokens_total",
                "counter",
                "Prompt tokens prefilled.",
                &self.prompt_tokens,
            ),
            (
                "hat_prefix_cache_hit_tokens_total",
                "counter",
                "Prompt tokens reused from the prefix cache instead of prefilled.",
                &self.cached_prompt_tokens,
            ),
            (
                "hat_generation_tokens_total",
                "counter",
                "Tokens generated.",
                &self.generation_tokens,
            ),
            (
                "hat_queue_depth",
                "gauge",
                "Requests waiting for a batch slot.",
                &self.queue_depth,
            ),
            (
                "hat_running_batch_size",
                "gauge",
                "Sequences in the latest decode step.",
                &self.running,
            ),
            (
                "hat_max_running_batch_size",
                "gauge",
                "Largest decode batch so far.",
                &self.max_running,
            ),
            (
                "hat_decode_steps_total",
                "counter",
                "Batched decode steps run.",
                &self.decode_steps,
            ),
        ];
        for (name, kind, help, v) in gauges {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {}",
                v.load(Relaxed)
            );
        }
        out
    }
}
