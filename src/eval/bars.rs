//! Grouped bar charts with 95% intervals as standalone SVG: one group per evaluation set, one bar per
//! model or stage, the interval drawn as a whisker. Written beside the markdown tables so a reader sees
//! at a glance which differences are larger than their intervals.

use std::fmt::Write;

/// One bar: its value and interval, all on the same scale as the chart's axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bar {
    pub value: f64,
    pub lo: f64,
    pub hi: f64,
}

impl From<super::rollout::Estimate> for Bar {
    fn from(e: super::rollout::Estimate) -> Bar {
        Bar {
            value: e.value,
            lo: e.lo,
            hi: e.hi,
        }
    }
}

/// Bars in `groups` (name, one optional bar per series — `None` leaves a gap), series named in
/// `series`, values on a 0..=`max` axis.
pub fn grouped_bars_svg(
    title: &str,
    series: &[String],
    groups: &[(String, Vec<Option<Bar>>)],
    max: f64,
) -> String {
    const COLOURS: [&str; 8] = [
        "#9e9e9e", "#f28e2b", "#4e79a7", "#59a14f", "#e15759", "#76b7b2", "#b07aa1", "#edc948",
    ];
    let (bar_w, gap, left, top, plot_h) = (18.0, 24.0, 48.0, 36.0, 240.0);
    let group_w = bar_w * series.len().max(1) as f64 + gap;
    let width = left + group_w * groups.len().max(1) as f64 + 180.0;
    let height = top + plot_h + 48.0;
    let y = |v: f64| top + plot_h * (1.0 - (v / max).clamp(0.0, 1.0));
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{left}\" y=\"18\" font-size=\"13\">{}</text>\n",
        escape(title)
    );
    for k in 0..=4 {
        let v = max * k as f64 / 4.0;
        let _ = writeln!(
            svg,
            "<line x1=\"{left}\" y1=\"{0:.1}\" x2=\"{1:.1}\" y2=\"{0:.1}\" stroke=\"#e0e0e0\"/><text x=\"{2}\" y=\"{3:.1}\" text-anchor=\"end\">{v:.0}</text>",
            y(v),
            width - 180.0,
            left - 4.0,
            y(v) + 4.0
        );
    }
    for (g, (name, bars)) in groups.iter().enumerate() {
        let x0 = left + gap / 2.0 + g as f64 * group_w;
        for (s, bar) in bars.iter().enumerate() {
            let Some(b) = bar else { continue };
            let x = x0 + s as f64 * bar_w;
            let colour = COLOURS[s % COLOURS.len()];
            let mid = x + bar_w / 2.0;
            let _ = writeln!(
                svg,
                "<rect x=\"{x:.1}\" y=\"{0:.1}\" width=\"{1:.1}\" height=\"{2:.1}\" fill=\"{colour}\"/>\n<line x1=\"{mid:.1}\" y1=\"{3:.1}\" x2=\"{mid:.1}\" y2=\"{4:.1}\" stroke=\"black\"/>",
                y(b.value),
                bar_w - 2.0,
                y(0.0) - y(b.value),
                y(b.lo),
                y(b.hi)
            );
        }
        let _ = writeln!(
            svg,
            "<text x=\"{0:.1}\" y=\"{1:.1}\" text-anchor=\"middle\">{2}</text>",
            x0 + bar_w * bars.len() as f64 / 2.0,
            y(0.0) + 16.0,
            escape(name)
        );
    }
    let legend_x = width - 170.0;
    for (s, name) in series.iter().enumerate() {
        let ly = top + 16.0 * s as f64;
        let _ = writeln!(
            svg,
            "<rect x=\"{legend_x}\" y=\"{ly}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>",
            COLOURS[s % COLOURS.len()],
            legend_x + 14.0,
            ly + 9.0,
            escape(name)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_and_whiskers_sit_at_their_values_and_gaps_stay_empty() {
        let bar = |v: f64| {
            Some(Bar {
                value: v,
                lo: v - 10.0,
                hi: v + 10.0,
            })
        };
        let svg = grouped_bars_svg(
            "scores <by stage>",
            &["a".into(), "b".into()],
            &[
                ("set 1".into(), vec![bar(50.0), None]),
                ("set 2".into(), vec![bar(100.0), bar(0.0)]),
            ],
            100.0,
        );
        assert!(svg.contains("scores &lt;by stage&gt;"));
        assert_eq!(
            svg.matches("<rect x=").count(),
            3 + 2,
            "three bars and two legend keys"
        );
        // plot_h 240 from y = 36: value 50 puts the bar top at 156, its whisker from 180 to 132.
        assert!(
            svg.contains("y=\"156.0\" width=\"16.0\" height=\"120.0\""),
            "{svg}"
        );
        assert!(
            svg.contains("y1=\"180.0\" x2=\"69.0\" y2=\"132.0\""),
            "{svg}"
        );
        // A whisker above the axis maximum is clipped to the top of the plot.
        assert!(svg.contains("y2=\"36.0\""));
    }
}
