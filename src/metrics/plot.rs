//! An SVG plot of percentile distributions, drawn as HdrHistogram's plotter draws them:
//! latency (ms, linear) against percentile on a logarithmic `1/(1-percentile)` axis, so
//! 90%, 99%, 99.9% … are evenly spaced and the tail is visible.
//!
//! Written by hand rather than with a plotting crate: the plot is a few polylines, axes and
//! labels on a fixed layout, about a hundred lines of SVG text; `plotters`, the usual
//! choice, brings font loading and rasterising dependencies (and their build time on a
//! 2-core machine) for none of which this needs. Text is XML-escaped; the result is
//! checked as XML in the tests.
//!
//! Must not touch: files (callers write the string), sockets.

use std::fmt::Write as _;

use hdrhistogram::Histogram;

use super::latency::TICKS_PER_HALF_DISTANCE;

const WIDTH: f64 = 860.0;
const HEIGHT: f64 = 500.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 160.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 60.0;
const COLOURS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
];

/// One line of the plot: `(percentile as a quantile, value in ms)` points.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

impl Series {
    /// The percentile distribution of `h` (µs), values shown in ms.
    pub fn of_histogram(name: &str, h: &Histogram<u64>) -> Series {
        let points = if h.is_empty() {
            Vec::new()
        } else {
            h.iter_quantiles(TICKS_PER_HALF_DISTANCE)
                .map(|v| {
                    (
                        v.quantile_iterated_to(),
                        v.value_iterated_to() as f64 / 1000.0,
                    )
                })
                .collect()
        };
        Series {
            name: name.to_string(),
            points,
        }
    }
}

/// `x` position of quantile `q` as decades of `1/(1-q)`, capped at `max_decades`.
fn decades(q: f64, max_decades: f64) -> f64 {
    if q >= 1.0 {
        return max_decades;
    }
    (1.0 / (1.0 - q)).log10().clamp(0.0, max_decades)
}

/// A round upper bound for the value axis.
fn nice_ceiling(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    let mag = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|&c| c >= v)
        .unwrap_or(10.0 * mag)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn percentile_label(decade: u32) -> String {
    if decade == 0 {
        return "0%".into();
    }
    // 1 - 10^-d as a percentage: 90%, 99%, 99.9%, ...
    let digits = decade.saturating_sub(2) as usize;
    format!("{:.*}%", digits, 100.0 - 100.0 / 10f64.powi(decade as i32))
}

/// The SVG document: `title` on top, one polyline per series (`data-series` = its name).
pub fn svg(title: &str, series: &[Series]) -> String {
    let max_q = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .filter(|&q| q < 1.0)
        .fold(0.0f64, f64::max);
    let max_decades = decades(max_q, 9.0).ceil().max(2.0);
    let max_v = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0f64, f64::max);
    let top_v = nice_ceiling(max_v);
    let (pw, ph) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let x = |q: f64| LEFT + decades(q, max_decades) / max_decades * pw;
    let y = |v: f64| TOP + ph - (v / top_v).min(1.0) * ph;

    let mut s = String::with_capacity(8192);
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, "<title>{}</title>", escape(title));
    let _ = writeln!(
        s,
        r#"<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="28" text-anchor="middle" font-size="15">{}</text>"#,
        LEFT + pw / 2.0,
        escape(title)
    );
    // Grid and axis labels.
    for d in 0..=max_decades as u32 {
        let gx = LEFT + f64::from(d) / max_decades * pw;
        let _ = writeln!(
            s,
            r##"<line x1="{gx:.1}" y1="{TOP}" x2="{gx:.1}" y2="{:.1}" stroke="#ddd"/><text x="{gx:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            TOP + ph,
            TOP + ph + 18.0,
            percentile_label(d)
        );
    }
    for i in 0..=5 {
        let v = top_v * f64::from(i) / 5.0;
        let gy = y(v);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{gy:.1}" x2="{:.1}" y2="{gy:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + pw,
            LEFT - 6.0,
            gy + 4.0,
            format_ms(v)
        );
    }
    let _ = writeln!(
        s,
        r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>"##
    );
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">percentile</text>"#,
        LEFT + pw / 2.0,
        HEIGHT - 14.0
    );
    let _ = writeln!(
        s,
        r#"<text x="18" y="{:.1}" text-anchor="middle" transform="rotate(-90 18 {:.1})">latency (ms)</text>"#,
        TOP + ph / 2.0,
        TOP + ph / 2.0
    );
    for (i, ser) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let points: Vec<String> = ser
            .points
            .iter()
            .map(|&(q, v)| format!("{:.1},{:.1}", x(q), y(v)))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline class="series" data-series="{}" fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
            escape(&ser.name),
            points.join(" ")
        );
        let ly = TOP + 10.0 + 20.0 * i as f64;
        let lx = LEFT + pw + 14.0;
        let _ = writeln!(
            s,
            r#"<line x1="{lx}" y1="{ly}" x2="{:.1}" y2="{ly}" stroke="{colour}" stroke-width="2"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            lx + 20.0,
            lx + 26.0,
            ly + 4.0,
            escape(&ser.name)
        );
    }
    s.push_str("</svg>\n");
    s
}

fn format_ms(v: f64) -> String {
    if v == 0.0 || v >= 10.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::window::new_histogram;

    fn histogram(values: impl Iterator<Item = u64>) -> Histogram<u64> {
        let mut h = new_histogram();
        for v in values {
            h.record(v).unwrap();
        }
        h
    }

    #[test]
    fn the_plot_is_well_formed_xml_with_one_line_per_series() {
        let total = histogram((1..=10_000).map(|i| 500 + i % 997 * 3));
        let upstream = histogram((1..=10_000).map(|i| 300 + i % 991));
        let series = [
            Series::of_histogram("total", &total),
            Series::of_histogram("upstream <&\"odd\">", &upstream),
            Series::of_histogram("queue", &new_histogram()),
        ];
        let text = svg("cluster acme & co, last 5m", &series);
        let doc = roxmltree::Document::parse(&text).expect("well-formed XML");
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "svg");
        assert_eq!(
            root.tag_name().namespace(),
            Some("http://www.w3.org/2000/svg")
        );
        let lines: Vec<_> = doc
            .descendants()
            .filter(|n| n.has_tag_name("polyline"))
            .collect();
        let names: Vec<&str> = lines
            .iter()
            .map(|n| n.attribute("data-series").unwrap())
            .collect();
        assert_eq!(names, ["total", "upstream <&\"odd\">", "queue"]);
        for line in &lines[..2] {
            let pts: Vec<(f64, f64)> = line
                .attribute("points")
                .unwrap()
                .split(' ')
                .map(|p| {
                    let (x, y) = p.split_once(',').unwrap();
                    (x.parse().unwrap(), y.parse().unwrap())
                })
                .collect();
            assert!(pts.len() > 20, "a distribution has many points");
            assert!(pts
                .iter()
                .all(|&(x, y)| (0.0..=WIDTH).contains(&x) && (0.0..=HEIGHT).contains(&y)));
            assert!(
                pts.windows(2).all(|w| w[0].0 <= w[1].0),
                "percentiles ascend"
            );
            assert!(
                pts.windows(2).all(|w| w[0].1 >= w[1].1),
                "latency rises (y falls)"
            );
        }
        let title = doc.descendants().find(|n| n.has_tag_name("title")).unwrap();
        assert_eq!(title.text(), Some("cluster acme & co, last 5m"));
        let labels: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
        for l in ["0%", "90%", "99%", "99.9%", "99.99%"] {
            assert!(labels.contains(&l), "axis label {l} in {labels:?}");
        }
    }

    #[test]
    fn axis_helpers() {
        assert_eq!(nice_ceiling(3.2), 5.0);
        assert_eq!(nice_ceiling(0.7), 1.0);
        assert_eq!(nice_ceiling(1200.0), 2000.0);
        assert_eq!(percentile_label(3), "99.9%");
        assert_eq!(percentile_label(5), "99.999%");
        assert!((decades(0.99, 6.0) - 2.0).abs() < 1e-9);
        assert_eq!(decades(1.0, 6.0), 6.0);
    }
}
