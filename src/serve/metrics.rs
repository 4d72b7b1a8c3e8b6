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
    /// Prompt tokens prefilled ahead of admission, a chunk per iteration, while sequences decoded.
    pub chunked_prompt_tokens: AtomicU64,
    pub generation_tokens: AtomicU64,
    /// Requests accepted but not yet admitted into the running batch.
    pub queue_depth: AtomicU64,
    /// Sequences in the batch of the latest engine step.
    pub running: AtomicU64,
    /// The largest batch any decode step has run (shows that batching happens).
    pub max_running: AtomicU64,
    /// Prompt tokens the next iteration may prefill beside running sequences (chunked prefill).
    pub prefill_budget: AtomicU64,
    pub decode_steps: AtomicU64,
    /// MTP speculation (`serve --mtp`): rounds, drafted and accepted tokens.
    pub spec_rounds: AtomicU64,
    pub spec_drafted: AtomicU64,
    pub spec_accepted: AtomicU64,
    /// New weights loaded while serving (`POST /update_weights_from_disk`).
    pub weight_updates: AtomicU64,
    /// Steps while one sequence ran alone, plain and speculative: tokens and nanoseconds, whose
    /// ratio of rates is the speed-up speculation gives at concurrency 1.
    lone_plain: [AtomicU64; 2],
    lone_spec: [AtomicU64; 2],
    /// Nanoseconds the engine thread spent in each [`Phase`]: where a busy server's time goes.
    engine_ns: [AtomicU64; Phase::ALL.len()],
}

/// What the engine thread is doing, for `hat_engine_seconds_total{phase}`.
#[derive(Clone, Copy)]
pub enum Phase {
    /// Decode steps that also prefilled a piece of a waiting prompt (chunked prefill).
    ChunkedPrefill,
    /// The admitted prompts' (rest of) prefill, batched.
    Prefill,
    /// Prefilled sequences joining the running batch's states.
    Join,
    /// Batched decode steps (and speculative rounds), sampling included.
    Decode,
    /// Finished sequences' states leaving the batch.
    Leave,
}

impl Phase {
    const ALL: [Phase; 5] = [
        Phase::ChunkedPrefill,
        Phase::Prefill,
        Phase::Join,
        Phase::Decode,
        Phase::Leave,
    ];

    fn label(self) -> &'static str {
        match self {
            Phase::ChunkedPrefill => "chunked_prefill",
            Phase::Prefill => "prefill",
            Phase::Join => "join",
            Phase::Decode => "decode",
            Phase::Leave => "leave",
        }
    }
}

impl Metrics {
    pub fn count_request(&self, endpoint: &str, status: u16) {
        let mut m = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        *m.entry((endpoint.to_string(), status)).or_default() += 1;
    }

    /// A route's answer, its error turned into the 4xx/5xx response, counted by status.
    pub fn counted(
        &self,
        endpoint: &str,
        answer: Result<axum::response::Response, super::error::ApiError>,
    ) -> axum::response::Response {
        use axum::response::IntoResponse;
        let response = answer.unwrap_or_else(|e| e.into_response());
        self.count_request(endpoint, response.status().as_u16());
        response
    }

    pub fn set_running(&self, n: usize) {
        self.running.store(n as u64, Relaxed);
        self.max_running.fetch_max(n as u64, Relaxed);
    }

    pub fn record_speculation(&self, drafted: usize, accepted: usize) {
        self.spec_rounds.fetch_add(1, Relaxed);
        self.spec_drafted.fetch_add(drafted as u64, Relaxed);
        self.spec_accepted.fetch_add(accepted as u64, Relaxed);
    }

    /// A step (plain, or a speculative round) of a lone sequence that gave it `tokens` tokens.
    pub fn record_lone_step(&self, speculative: bool, tokens: usize, took: std::time::Duration) {
        let [t, ns] = if speculative {
            &self.lone_spec
        } else {
            &self.lone_plain
        };
        t.fetch_add(tokens as u64, Relaxed);
        ns.fetch_add(took.as_nanos() as u64, Relaxed);
    }

    /// Runs `f`, counting its wall time to `phase`.
    pub fn timed<R>(&self, phase: Phase, f: impl FnOnce() -> R) -> R {
        let started = std::time::Instant::now();
        let r = f();
        self.record_phase(phase, started.elapsed());
        r
    }

    /// Counts `took` to `phase`.
    pub fn record_phase(&self, phase: Phase, took: Duration) {
        self.engine_ns[phase as usize].fetch_add(took.as_nanos() as u64, Relaxed);
    }

    /// Accepted / drafted MTP tokens (0 before any round).
    pub fn acceptance_rate(&self) -> f64 {
        let drafted = self.spec_drafted.load(Relaxed);
        if drafted == 0 {
            return 0.0;
        }
        self.spec_accepted.load(Relaxed) as f64 / drafted as f64
    }

    /// Decode tokens/s of a lone sequence with speculation over without (0 until both ran).
    pub fn speculation_speedup(&self) -> f64 {
        let rate = |[t, ns]: &[AtomicU64; 2]| {
            let (t, ns) = (t.load(Relaxed), ns.load(Relaxed));
            (ns > 0).then(|| t as f64 / ns as f64)
        };
        match (rate(&self.lone_spec), rate(&self.lone_plain)) {
            (Some(spec), Some(plain)) if plain > 0.0 => spec / plain,
            _ => 0.0,
        }
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
                "hat_chunked_prefill_tokens_total",
                "counter",
                "Prompt tokens prefilled in chunks between decode steps (chunked prefill).",
                &self.chunked_prompt_tokens,
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
                "hat_prefill_budget_tokens",
                "gauge",
                "Prompt tokens an engine iteration may prefill beside running sequences, sized to --max-itl-stretch.",
                &self.prefill_budget,
            ),
            (
                "hat_decode_steps_total",
                "counter",
                "Batched decode steps run.",
                &self.decode_steps,
            ),
            (
                "hat_spec_rounds_total",
                "counter",
                "MTP speculative rounds (one verifying forward each).",
                &self.spec_rounds,
            ),
            (
                "hat_spec_draft_tokens_total",
                "counter",
                "Tokens the MTP head drafted.",
                &self.spec_drafted,
            ),
            (
                "hat_spec_accepted_tokens_total",
                "counter",
                "Drafted tokens the main model agreed with.",
                &self.spec_accepted,
            ),
            (
                "hat_weight_updates_total",
                "counter",
                "New weights loaded while serving (POST /update_weights_from_disk).",
                &self.weight_updates,
            ),
        ];
        for (name, kind, help, v) in gauges {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {}",
                v.load(Relaxed)
            );
        }
        out.push_str("# HELP hat_engine_seconds_total Engine thread time by phase.\n# TYPE hat_engine_seconds_total counter\n");
        for phase in Phase::ALL {
            let s = self.engine_ns[phase as usize].load(Relaxed) as f64 / 1e9;
            let _ = writeln!(
                out,
                "hat_engine_seconds_total{{phase=\"{}\"}} {s}",
                phase.label()
            );
        }
        let _ = writeln!(
            out,
            "# HELP hat_spec_acceptance_rate Accepted / drafted MTP tokens.\n# TYPE hat_spec_acceptance_rate gauge\nhat_spec_acceptance_rate {:.4}",
            self.acceptance_rate()
        );
        let _ = writeln!(
            out,
            "# HELP hat_spec_decode_speedup Decode tokens/s of a lone sequence with MTP speculation over plain steps (0 until both ran); reads high: the plain steps are the first after a batch change; compare runs with and without --mtp.\n# TYPE hat_spec_decode_speedup gauge\nhat_spec_decode_speedup {:.4}",
            self.speculation_speedup()
        );
        out
    }
}
