//! Training metrics: one JSON object per line (`{"step", "loss", ...}` per step,
//! `{"step", "dev_loss", "dev_tool_call_exact", "dev_first_call_exact", "dev_final_reply_exact"}` per
//! evaluation) and a hand-written SVG plot of the curves.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::Value;

/// An append-only `metrics.jsonl`. Opening it for a resumed run keeps only the first `keep` lines, the
/// ones written up to the checkpoint, so the curve has no duplicated steps.
pub struct Log {
    file: std::fs::File,
    lines: usize,
}

impl Log {
    pub fn open(path: &Path, keep: usize) -> Result<Log> {
        let kept: Vec<String> = match std::fs::read_to_string(path) {
            Ok(text) => text.lines().take(keep).map(str::to_string).collect(),
            Err(_) => Vec::new(),
        };
        let mut file =
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
        for l in &kept {
            writeln!(file, "{l}")?;
        }
        Ok(Log {
            file,
            lines: kept.len(),
        })
    }

    pub fn write(&mut self, v: &Value) -> Result<()> {
        writeln!(self.file, "{v}")?;
        self.file.flush()?;
        self.lines += 1;
        Ok(())
    }

    pub fn lines(&self) -> usize {
        self.lines
    }
}

/// Reads `(step, value)` points of `key` from a metrics file.
pub fn series(path: &Path, key: &str) -> Result<Vec<(f64, f64)>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| Some((v["step"].as_f64()?, v[key].as_f64()?)))
        .collect())
}

/// Writes an SVG with the training loss (blue), the dev loss (orange) and the dev tool-call exact-match
/// shares (green: every tool-calling turn; red: the opening one; purple: the final reply; 0–1 on the same
/// axis) against the step.
pub fn plot_loss(metrics: &Path, svg: &Path) -> Result<()> {
    plot(
        metrics,
        svg,
        &[
            ("train loss", "loss"),
            ("dev loss", "dev_loss"),
            ("dev tool calls exact", "dev_tool_call_exact"),
            ("dev first call exact", "dev_first_call_exact"),
            ("dev final reply exact", "dev_final_reply_exact"),
        ],
    )
}

const PALETTE: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
];

/// Writes an SVG of the metrics `keys` (label, key in metrics.jsonl) against the step, on one axis.
pub fn plot(metrics: &Path, svg: &Path, keys: &[(&str, &str)]) -> Result<()> {
    let curves = keys
        .iter()
        .map(|&(name, key)| Ok((name.to_string(), series(metrics, key)?)))
        .collect::<Result<Vec<_>>>()?;
    plot_curves(svg, &curves)
}

/// Writes an SVG of `(label, points)` curves against the step, on one axis, in the palette's colours.
pub fn plot_curves(svg: &Path, curves: &[(String, Vec<(f64, f64)>)]) -> Result<()> {
    let curves: Vec<(&str, &str, &Vec<(f64, f64)>)> = curves
        .iter()
        .zip(PALETTE.iter().cycle())
        .map(|((name, pts), &color)| (name.as_str(), color, pts))
        .collect();
    let points = curves.iter().flat_map(|c| c.2.iter());
    let (mut x1, mut y0, mut y1) = (1.0f64, f64::MAX, f64::MIN);
    for &(x, y) in points {
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if y0 > y1 {
        (y0, y1) = (0.0, 1.0);
    }
    let pad = ((y1 - y0) * 0.05).max(1e-6);
    let (y0, y1) = (y0 - pad, y1 + pad);
    let (w, h, m) = (720.0, 400.0, 50.0);
    let sx = |x: f64| m + x / x1 * (w - 2.0 * m);
    let sy = |y: f64| h - m - (y - y0) / (y1 - y0) * (h - 2.0 * m);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <line x1=\"{m}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"black\"/><line x1=\"{m}\" y1=\"{m}\" x2=\"{m}\" y2=\"{b}\" stroke=\"black\"/>\n\
         <text x=\"{m}\" y=\"{t}\">{y1:.3}</text><text x=\"{m}\" y=\"{bt}\">{y0:.3}</text><text x=\"{r}\" y=\"{bt}\" text-anchor=\"end\">step {x1}</text>\n",
        b = h - m,
        r = w - m,
        t = m - 6.0,
        bt = h - m + 16.0,
    );
    for (i, (name, color, pts)) in curves.iter().enumerate() {
        if pts.is_empty() {
            continue;
        }
        let path: Vec<String> = pts
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", sx(x), sy(y)))
            .collect();
        s.push_str(&format!(
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"1.5\" points=\"{}\"/>\n\
             <text x=\"{}\" y=\"{}\" fill=\"{color}\">{name}</text>\n",
            path.join(" "),
            w - m - 160.0,
            m + 16.0 * (i as f64 + 1.0)
        ));
    }
    s.push_str("</svg>\n");
    std::fs::write(svg, s).with_context(|| format!("writing {}", svg.display()))
}

/// `hat plot`: curves of several runs' `metrics.jsonl` on one plot (GSPO against GRPO, one seed against
/// another), and each curve's figures as a table on stdout.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example:\n  hat plot gspo=out/rl-gspo grpo=out/rl-grpo --key reward \\\n      --key clip_ratio/region_mean -o gspo-vs-grpo.svg"
)]
pub struct PlotArgs {
    /// Runs to plot: `LABEL=PATH` or `PATH`, where PATH is a run directory holding metrics.jsonl or
    /// the file itself (the label is then the directory's name).
    #[arg(required = true)]
    pub runs: Vec<String>,
    /// Metrics to plot, as named in metrics.jsonl (`loss`, `reward`, `kl`, `clip_ratio/region_mean`,
    /// `rewards/accuracy/mean`, …); one curve per run and key.
    #[arg(long = "key", default_value = "loss")]
    pub keys: Vec<String>,
    /// Leave out the points before this step (a loss curve's first steps dwarf the rest).
    #[arg(long, default_value_t = 0.0)]
    pub from_step: f64,
    /// The SVG to write.
    #[arg(short, long)]
    pub output: std::path::PathBuf,
}

/// One run named on the command line: its label and its metrics file.
fn run_of(arg: &str) -> (String, std::path::PathBuf) {
    let (label, path) = match arg.split_once('=') {
        Some((label, path)) if !label.is_empty() => (Some(label.to_string()), path),
        _ => (None, arg),
    };
    let path = Path::new(path);
    let (file, dir) = if path.is_dir() {
        (path.join("metrics.jsonl"), path)
    } else {
        (path.to_path_buf(), path.parent().unwrap_or(path))
    };
    let label = label.unwrap_or_else(|| {
        dir.file_name()
            .map_or_else(|| arg.to_string(), |n| n.to_string_lossy().into_owned())
    });
    (label, file)
}

/// Runs `hat plot`: writes the SVG and prints one row per curve (points, first, last, min, max).
pub fn run_plot(args: &PlotArgs, out: &mut impl Write) -> Result<()> {
    let mut curves = Vec::new();
    for arg in &args.runs {
        let (label, file) = run_of(arg);
        for key in &args.keys {
            let name = if args.keys.len() == 1 {
                label.clone()
            } else {
                format!("{label} {key}")
            };
            let mut points = series(&file, key)?;
            points.retain(|&(step, _)| step >= args.from_step);
            curves.push((name, points));
        }
    }
    if curves.iter().all(|(_, pts)| pts.is_empty()) {
        anyhow::bail!(
            "no run has a numeric value for {}: check the key names in metrics.jsonl",
            args.keys.join(", ")
        );
    }
    plot_curves(&args.output, &curves)?;
    writeln!(out, "| curve | points | first | last | min | max |")?;
    writeln!(out, "|---|---|---|---|---|---|")?;
    for (name, pts) in &curves {
        let ys = pts.iter().map(|p| p.1);
        let (min, max) = ys.fold((f64::MAX, f64::MIN), |(a, b), y| (a.min(y), b.max(y)));
        match (pts.first(), pts.last()) {
            (Some(first), Some(last)) => writeln!(
                out,
                "| {name} | {} | {:.4} | {:.4} | {min:.4} | {max:.4} |",
                pts.len(),
                first.1,
                last.1
            )?,
            _ => writeln!(out, "| {name} | 0 | – | – | – | – |")?,
        }
    }
    Ok(())
}
