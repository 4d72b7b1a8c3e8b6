//! Writing results: the summary as JSON with vLLM's `benchmark_serving` key names where they overlap
//! (`mean_ttft_ms`, `p99_tpot_ms`, `request_throughput`, …) plus HAT's (`execution_success_rate`,
//! `attainment`, `slo_e2e_ms`), a per-request CSV, an SVG latency CDF, and a side-by-side comparison
//! of two summaries.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::{json, Map, Value};

use super::stats::{Distribution, Measured, Summary};

/// The flat result object: run metadata first, then the metrics.
pub fn summary_json(s: &Summary, meta: Map<String, Value>) -> Value {
    let mut out = meta;
    let scalars = json!({
        "duration": s.duration, "completed": s.completed, "failed": s.failed,
        "total_input_tokens": s.total_input_tokens, "total_output_tokens": s.total_output_tokens,
        "request_throughput": s.request_throughput, "request_goodput": s.request_goodput,
        "output_throughput": s.output_throughput, "total_token_throughput": s.total_token_throughput,
        "max_concurrent_requests": s.max_concurrent_requests,
        "execution_success_rate": s.execution_success_rate, "task_success_rate": s.task_success_rate,
        "slo_e2e_ms": s.slo_e2e_ms, "attainment": s.attainment,
    });
    if let Value::Object(m) = scalars {
        out.extend(m);
    }
    for (name, d) in [
        ("ttft", &s.ttft_ms),
        ("tpot", &s.tpot_ms),
        ("itl", &s.itl_ms),
        ("e2el", &s.e2el_ms),
    ] {
        put_distribution(&mut out, name, "_ms", d);
    }
    put_distribution(&mut out, "decode", "_tokens_per_s", &s.decode_tokens_per_s);
    Value::Object(out)
}

fn put_distribution(out: &mut Map<String, Value>, name: &str, unit: &str, d: &Distribution) {
    for (stat, v) in [
        ("mean", d.mean),
        ("median", d.median),
        ("std", d.std),
        ("p50", d.p50),
        ("p95", d.p95),
        ("p99", d.p99),
    ] {
        out.insert(format!("{stat}_{name}{unit}"), json!(v));
    }
}

pub fn write_csv(path: &Path, runs: &[Measured]) -> Result<()> {
    let mut w =
        csv::Writer::from_path(path).with_context(|| format!("creating {}", path.display()))?;
    w.write_record([
        "id",
        "intent",
        "start_s",
        "http_status",
        "ok",
        "task_success",
        "e2e_ms",
        "ttft_ms",
        "tpot_ms",
        "mean_itl_ms",
        "input_tokens",
        "output_tokens",
        "error",
        "endpoint",
    ])?;
    let num = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v:.3}"));
    for r in runs {
        let mean_itl =
            (!r.itl_ms.is_empty()).then(|| r.itl_ms.iter().sum::<f64>() / r.itl_ms.len() as f64);
        w.write_record([
            r.id.clone(),
            r.intent.clone(),
            format!("{:.3}", r.start_s),
            r.http_status.to_string(),
            r.ok.to_string(),
            r.task_success.map_or(String::new(), |b| b.to_string()),
            format!("{:.3}", r.e2e_ms),
            num(r.ttft_ms),
            num(r.tpot_ms()),
            num(mean_itl),
            r.input_tokens.to_string(),
            r.output_tokens.to_string(),
            r.error.clone(),
            r.endpoint.clone(),
        ])?;
    }
    w.flush()?;
    Ok(())
}

/// An SVG plot of the empirical CDF of end-to-end latency (and TTFT when streamed), with the SLO
/// marked. Failed requests never finish, so the E2E curve tops out at the success rate.
pub fn cdf_svg(runs: &[Measured], slo_ms: f64, title: &str) -> String {
    let (w, h, pad) = (640.0, 400.0, 50.0);
    let curve = |vals: Vec<f64>| {
        let mut v = vals;
        v.sort_by(f64::total_cmp);
        v
    };
    let e2e = curve(
        runs.iter()
            .filter(|r| r.ok)
            .map(|r| r.e2e_ms / 1000.0)
            .collect(),
    );
    let ttft = curve(
        runs.iter()
            .filter(|r| r.ok)
            .filter_map(|r| r.ttft_ms)
            .map(|t| t / 1000.0)
            .collect(),
    );
    let n = runs.len().max(1) as f64;
    // The axis spans the data, not the SLO: a run whose requests all finish in half a second
    // would otherwise be a vertical line at the left edge of a 15 s axis.
    let slowest = e2e.last().or(ttft.last()).copied().unwrap_or(1.0);
    let x_max = nice_ceil(slowest * 1.05);
    let x = |s: f64| pad + s / x_max * (w - 2.0 * pad);
    let y = |p: f64| h - pad - p * (h - 2.0 * pad);
    let mut svg = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n");
    let _ = writeln!(svg, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>");
    let _ = writeln!(
        svg,
        "<text x=\"{}\" y=\"20\" text-anchor=\"middle\">{}</text>",
        w / 2.0,
        escape(title)
    );
    let _ = writeln!(
        svg,
        "<line x1=\"{pad}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>",
        y(0.0),
        w - pad,
        y(0.0)
    );
    let _ = writeln!(
        svg,
        "<line x1=\"{pad}\" y1=\"{}\" x2=\"{pad}\" y2=\"{}\" stroke=\"black\"/>",
        y(0.0),
        y(1.0)
    );
    for i in 0..=5 {
        let p = i as f64 / 5.0;
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{:.0}%</text>",
            pad - 5.0,
            y(p) + 4.0,
            p * 100.0
        );
        let s = x_max * p;
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            x(s),
            y(0.0) + 16.0,
            tick_label(s, x_max)
        );
    }
    let _ = writeln!(
        svg,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">latency (s)</text>",
        w / 2.0,
        h - 8.0
    );
    let slo = slo_ms / 1000.0;
    if slo <= x_max {
        let _ = writeln!(svg, "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"red\" stroke-dasharray=\"4\"/><text x=\"{0}\" y=\"{3}\" fill=\"red\">SLO {slo} s</text>", x(slo), y(0.0), y(1.0), y(1.0) - 4.0);
    } else {
        // Every request finished well inside the SLO: say where it is instead of stretching the axis.
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{}\" fill=\"red\" text-anchor=\"end\">SLO {slo} s (beyond the axis) →</text>",
            w - pad,
            y(1.0) - 4.0
        );
    }
    for (vals, color, label, row) in [
        (&e2e, "steelblue", "E2E", 0.0),
        (&ttft, "darkorange", "TTFT", 1.0),
    ] {
        if vals.is_empty() {
            continue;
        }
        let pts: Vec<String> = vals
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{:.1},{:.1}", x(*s), y((i + 1) as f64 / n)))
            .collect();
        let _ = writeln!(
            svg,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>",
            pts.join(" ")
        );
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{}\" fill=\"{color}\">{label}</text>",
            w - pad - 40.0,
            pad + 14.0 * row
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// The smallest of 1, 2, 2.5 or 5 × a power of ten that is at least `v`, so the five ticks
/// fall on round numbers.
fn nice_ceil(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return 1.0;
    }
    let base = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * base)
        .find(|&c| c >= v * (1.0 - 1e-9))
        .unwrap_or(10.0 * base)
}

/// A tick value with as many decimals as the axis needs (0.05 on a 0.25 s axis, 3 on a 15 s one).
fn tick_label(s: f64, x_max: f64) -> String {
    let decimals = (-(x_max / 5.0).log10().floor()).clamp(0.0, 4.0) as usize + 1;
    let t = format!("{s:.decimals$}");
    if t.contains('.') {
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        t
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A table of every numeric field the two summaries share: A, B and the relative change.
pub fn compare(a: &Value, b: &Value, a_name: &str, b_name: &str) -> String {
    let mut out = format!(
        "{:<32} {:>14} {:>14} {:>9}\n",
        "metric", a_name, b_name, "change"
    );
    let (Some(ma), Some(mb)) = (a.as_object(), b.as_object()) else {
        return out;
    };
    for (k, va) in ma {
        let (Some(x), Some(y)) = (va.as_f64(), mb.get(k).and_then(Value::as_f64)) else {
            continue;
        };
        let change = if x != 0.0 {
            format!("{:+.1}%", (y - x) / x.abs() * 100.0)
        } else {
            "-".into()
        };
        let _ = writeln!(out, "{k:<32} {x:>14.3} {y:>14.3} {change:>9}");
    }
    out
}
