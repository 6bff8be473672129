//! An SVG plot of percentile distributions as capacity engineers read them (HdrHistogram's
//! plotter): percentile on a logarithmic `1/(1-percentile)` axis, so 90%, 99%, 99.9% and
//! 99.99% are evenly spaced and labelled, and latency in ms on the other axis, logarithmic
//! when the distribution spans more than a decade and a half (a 150 ms tail over a 1 ms
//! median would otherwise press everything below p99 flat onto zero), linear otherwise.
//!
//! Every series is in the legend, below the plot, with the figures the caller gives it; a
//! series without values (no request ever queued) is listed as such rather than left out.
//! Lines that may lie on each other stay visible: the first series of each colour is drawn
//! wide and pale, the next ones dashed or dotted on top of it. Several runs or clusters go
//! on one chart, one colour each.
//!
//! Written by hand rather than with a plotting crate: the plot is a few polylines, axes and
//! labels on a fixed layout; `plotters`, the usual choice, brings font loading and
//! rasterising dependencies (and their build time on a 2-core machine) for none of which
//! this needs. Text is XML-escaped; the result is checked as XML in the tests.
//!
//! Must not touch: files (callers write the string), sockets.

use std::fmt::Write as _;

use hdrhistogram::Histogram;

use super::distribution::TICKS_PER_HALF_DISTANCE;

const WIDTH: f64 = 900.0;
const PLOT_HEIGHT: f64 = 400.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 30.0;
const TITLE_LINE: f64 = 20.0;
const LEGEND_LINE: f64 = 18.0;
const COLOURS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// How a series' line is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stroke {
    /// Wide and a little transparent: drawn first, visible around lines on top of it.
    Wide,
    Dashed,
    Dotted,
}

impl Stroke {
    fn attributes(self) -> &'static str {
        match self {
            Stroke::Wide => r#"stroke-width="5" stroke-opacity="0.45""#,
            Stroke::Dashed => r#"stroke-width="2" stroke-dasharray="7 4""#,
            Stroke::Dotted => r#"stroke-width="2" stroke-dasharray="2 3""#,
        }
    }
}

/// One line of the plot: `(percentile as a quantile, value in ms)` points.
#[derive(Debug, Clone)]
pub struct Series {
    /// What the line is (`data-series`), e.g. `total` or `run2 upstream`.
    pub name: String,
    /// The legend's text for it (its name and figures).
    pub label: String,
    pub points: Vec<(f64, f64)>,
    /// Index into the palette.
    pub colour: usize,
    pub stroke: Stroke,
}

impl Series {
    /// The percentile distribution of `h` (µs), values shown in ms; labelled by its name.
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
            label: name.to_string(),
            points,
            colour: 0,
            stroke: Stroke::Wide,
        }
    }

    /// The same series with another legend text, colour and stroke.
    pub fn styled(mut self, label: String, colour: usize, stroke: Stroke) -> Series {
        self.label = label;
        self.colour = colour;
        self.stroke = stroke;
        self
    }
}

/// `x` position of quantile `q` as decades of `1/(1-q)`, capped at `max_decades`.
fn decades(q: f64, max_decades: f64) -> f64 {
    if q >= 1.0 {
        return max_decades;
    }
    (1.0 / (1.0 - q)).log10().clamp(0.0, max_decades)
}

/// A round upper bound for a linear value axis.
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

/// `textLength` for a line of `chars` characters at `size` px that would be wider than
/// `room` px in a common sans-serif (about 0.55 em a character): squeezed to fit
/// rather than cut at the chart's edge. Empty when it fits.
fn fit(text: &str, size: f64, room: f64) -> String {
    let wide = text.chars().count() as f64 * size * 0.55;
    if wide <= room {
        String::new()
    } else {
        format!(r#" textLength="{room:.0}" lengthAdjust="spacingAndGlyphs""#)
    }
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

/// The value axis: linear from 0, or logarithmic over whole decades.
#[derive(Debug, Clone, Copy, PartialEq)]
enum ValueAxis {
    Linear { top: f64 },
    Log { low_exp: i32, high_exp: i32 },
}

impl ValueAxis {
    /// Logarithmic when the positive values span more than 1.5 decades.
    fn of(values: impl Iterator<Item = f64>) -> ValueAxis {
        let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
        for v in values.filter(|v| *v > 0.0) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if hi <= 0.0 || (hi / lo).log10() <= 1.5 {
            return ValueAxis::Linear {
                top: nice_ceiling(hi),
            };
        }
        let low_exp = lo.log10().floor() as i32;
        let high_exp = (hi.log10().ceil() as i32).max(low_exp + 1);
        ValueAxis::Log { low_exp, high_exp }
    }

    /// Share of the axis' height at value `v` (0 bottom, 1 top).
    fn fraction(self, v: f64) -> f64 {
        match self {
            ValueAxis::Linear { top } => (v / top).clamp(0.0, 1.0),
            ValueAxis::Log { low_exp, high_exp } => {
                let low = f64::from(low_exp);
                let span = f64::from(high_exp - low_exp);
                ((v.max(10f64.powi(low_exp)).log10() - low) / span).clamp(0.0, 1.0)
            }
        }
    }

    /// Gridlines: (value, labelled).
    fn ticks(self) -> Vec<(f64, bool)> {
        match self {
            ValueAxis::Linear { top } => {
                (0..=5).map(|i| (top * f64::from(i) / 5.0, true)).collect()
            }
            ValueAxis::Log { low_exp, high_exp } => {
                let mut t = Vec::new();
                for e in low_exp..high_exp {
                    let d = 10f64.powi(e);
                    t.extend([(d, true), (2.0 * d, false), (5.0 * d, false)]);
                }
                t.push((10f64.powi(high_exp), true));
                t
            }
        }
    }

    fn title(self) -> &'static str {
        match self {
            ValueAxis::Linear { .. } => "latency (ms)",
            ValueAxis::Log { .. } => "latency (ms, log scale)",
        }
    }
}

/// The SVG document: `title` (one line each) on top, one polyline per series
/// (`data-series` = its name), the legend below.
pub fn svg(title: &[String], series: &[Series]) -> String {
    let max_q = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .filter(|&q| q < 1.0)
        .fold(0.0f64, f64::max);
    let max_decades = decades(max_q, 9.0).ceil().clamp(4.0, 9.0);
    let axis = ValueAxis::of(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    let top = 20.0 + TITLE_LINE * title.len() as f64;
    let pw = WIDTH - LEFT - RIGHT;
    let legend_top = top + PLOT_HEIGHT + 50.0;
    let height = legend_top + LEGEND_LINE * series.len() as f64 + 10.0;
    let x = |q: f64| LEFT + decades(q, max_decades) / max_decades * pw;
    let y = |v: f64| top + PLOT_HEIGHT - axis.fraction(v) * PLOT_HEIGHT;

    let mut s = String::with_capacity(16384);
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, "<title>{}</title>", escape(&title.join(" | ")));
    let _ = writeln!(
        s,
        r#"<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="white"/>"#
    );
    for (i, line) in title.iter().enumerate() {
        let size = if i == 0 { 15 } else { 12 };
        let _ = writeln!(
            s,
            r#"<text class="title" x="{:.1}" y="{:.1}" text-anchor="middle" font-size="{size}"{}>{}</text>"#,
            WIDTH / 2.0,
            22.0 + TITLE_LINE * i as f64,
            fit(line, f64::from(size), WIDTH - 20.0),
            escape(line)
        );
    }
    percentile_grid(&mut s, max_decades, top, pw);
    for (v, labelled) in axis.ticks() {
        let gy = y(v);
        let colour = if labelled { "#ccc" } else { "#eee" };
        let _ = write!(
            s,
            r#"<line x1="{LEFT}" y1="{gy:.1}" x2="{:.1}" y2="{gy:.1}" stroke="{colour}"/>"#,
            LEFT + pw
        );
        if labelled {
            let _ = write!(
                s,
                r#"<text class="value-tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
                LEFT - 6.0,
                gy + 4.0,
                format_ms(v)
            );
        }
        s.push('\n');
    }
    let _ = writeln!(
        s,
        r##"<rect x="{LEFT}" y="{top}" width="{pw}" height="{PLOT_HEIGHT}" fill="none" stroke="#333"/>"##
    );
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">percentile</text>"#,
        LEFT + pw / 2.0,
        top + PLOT_HEIGHT + 38.0
    );
    let mid = top + PLOT_HEIGHT / 2.0;
    let _ = writeln!(
        s,
        r#"<text x="18" y="{mid:.1}" text-anchor="middle" transform="rotate(-90 18 {mid:.1})">{}</text>"#,
        axis.title()
    );
    for ser in series {
        let points: Vec<String> = ser
            .points
            .iter()
            .map(|&(q, v)| format!("{:.1},{:.1}", x(q), y(v)))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline class="series" data-series="{}" fill="none" stroke="{}" {} stroke-linejoin="round" points="{}"/>"#,
            escape(&ser.name),
            COLOURS[ser.colour % COLOURS.len()],
            ser.stroke.attributes(),
            points.join(" ")
        );
    }
    legend(&mut s, series, legend_top);
    s.push_str("</svg>\n");
    s
}

/// Vertical gridlines at 0%, 90%, 99%, ... (labelled) and 50%, 75% (lighter).
fn percentile_grid(s: &mut String, max_decades: f64, top: f64, pw: f64) {
    let bottom = top + PLOT_HEIGHT;
    let mut ticks: Vec<(f64, String, bool)> = (0..=max_decades as u32)
        .map(|d| (f64::from(d), percentile_label(d), true))
        .collect();
    ticks.push((2f64.log10(), "50%".into(), false));
    ticks.push((4f64.log10(), "75%".into(), false));
    for (d, label, major) in ticks {
        let gx = LEFT + d / max_decades * pw;
        let colour = if major { "#ccc" } else { "#eee" };
        let _ = writeln!(
            s,
            r#"<line x1="{gx:.1}" y1="{top:.1}" x2="{gx:.1}" y2="{bottom:.1}" stroke="{colour}"/><text class="percentile-tick" x="{gx:.1}" y="{:.1}" text-anchor="middle">{label}</text>"#,
            bottom + 18.0
        );
    }
}

/// One legend row per series: its line's look, then its label.
fn legend(s: &mut String, series: &[Series], legend_top: f64) {
    for (i, ser) in series.iter().enumerate() {
        let ly = legend_top + LEGEND_LINE * i as f64;
        let _ = writeln!(
            s,
            r#"<g class="legend" data-series="{}"><line x1="{LEFT}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{}" {}/><text x="{:.1}" y="{:.1}"{}>{}</text></g>"#,
            escape(&ser.name),
            LEFT + 36.0,
            COLOURS[ser.colour % COLOURS.len()],
            ser.stroke.attributes(),
            LEFT + 44.0,
            ly + 4.0,
            fit(&ser.label, 12.0, WIDTH - LEFT - 44.0 - 10.0),
            escape(&ser.label)
        );
    }
}

/// A tick's value: at most three decimals, no trailing zeros (`0.1`, `2.5`, `150`).
fn format_ms(v: f64) -> String {
    let t = format!("{v:.3}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
#[path = "plot_tests.rs"]
mod tests;
