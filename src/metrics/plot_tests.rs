use super::*;
use crate::metrics::window::new_histogram;

fn histogram(values: impl Iterator<Item = u64>) -> Histogram<u64> {
    let mut h = new_histogram();
    for v in values {
        h.record(v).unwrap();
    }
    h
}

fn points(n: roxmltree::Node) -> Vec<(f64, f64)> {
    let text = n.attribute("points").unwrap();
    if text.is_empty() {
        return Vec::new();
    }
    text.split(' ')
        .map(|p| {
            let (x, y) = p.split_once(',').unwrap();
            (x.parse().unwrap(), y.parse().unwrap())
        })
        .collect()
}

fn texts<'a>(doc: &'a roxmltree::Document, class: &str) -> Vec<&'a str> {
    doc.descendants()
        .filter(|n| n.attribute("class") == Some(class))
        .filter_map(|n| n.text())
        .collect()
}

#[test]
fn the_plot_is_well_formed_xml_with_one_line_and_one_legend_row_per_series() {
    let total = histogram((1..=10_000).map(|i| 500 + i % 997 * 3));
    let upstream = histogram((1..=10_000).map(|i| 300 + i % 991));
    let series = [
        Series::of_histogram("total", &total),
        Series::of_histogram("upstream <&\"odd\">", &upstream).styled(
            "upstream <&\"odd\">".into(),
            0,
            Stroke::Dashed,
        ),
        Series::of_histogram("queue", &new_histogram()).styled(
            "queue: no request waited".into(),
            0,
            Stroke::Dotted,
        ),
    ];
    let title = ["cluster acme & co".to_string(), "last 5m".to_string()];
    let text = svg(&title, &series);
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
    let height: f64 = root.attribute("height").unwrap().parse().unwrap();
    for line in &lines[..2] {
        let pts = points(*line);
        assert!(pts.len() > 20, "a distribution has many points");
        assert!(pts
            .iter()
            .all(|&(x, y)| (0.0..=WIDTH).contains(&x) && (0.0..=height).contains(&y)));
        assert!(
            pts.windows(2).all(|w| w[0].0 <= w[1].0),
            "percentiles ascend"
        );
        assert!(
            pts.windows(2).all(|w| w[0].1 >= w[1].1),
            "latency rises (y falls)"
        );
    }
    // Every series has its legend row, the empty one included, with its label.
    let legend: Vec<&str> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("legend"))
        .map(|n| n.attribute("data-series").unwrap())
        .collect();
    assert_eq!(legend, names);
    let labels: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
    assert!(labels.contains(&"queue: no request waited"));
    // The two lines that may lie on each other are drawn differently.
    assert_ne!(
        lines[0].attribute("stroke-width"),
        lines[1].attribute("stroke-width")
    );
    assert!(lines[1].attribute("stroke-dasharray").is_some());
    let svg_title = doc.descendants().find(|n| n.has_tag_name("title")).unwrap();
    assert_eq!(svg_title.text(), Some("cluster acme & co | last 5m"));
    assert_eq!(texts(&doc, "title"), ["cluster acme & co", "last 5m"]);
    let ticks = texts(&doc, "percentile-tick");
    for l in ["0%", "50%", "90%", "99%", "99.9%", "99.99%"] {
        assert!(ticks.contains(&l), "axis label {l} in {ticks:?}");
    }
}

#[test]
fn a_long_tail_gets_a_log_value_axis_that_keeps_the_body_off_the_floor() {
    // 1 ms for 99% of the requests, a tail to 150 ms.
    let h = histogram((0..100_000u64).map(|i| if i % 100 == 0 { 150_000 } else { 900 + i % 200 }));
    let text = svg(&["tail".into()], &[Series::of_histogram("total", &h)]);
    let doc = roxmltree::Document::parse(&text).unwrap();
    let labels: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
    assert!(labels.contains(&"latency (ms, log scale)"), "{labels:?}");
    let ticks = texts(&doc, "value-tick");
    assert_eq!(ticks, ["0.1", "1", "10", "100", "1000"]);
    let line = doc
        .descendants()
        .find(|n| n.has_tag_name("polyline"))
        .unwrap();
    let pts = points(line);
    let (lowest_y, highest_y) = (pts[0].1, pts.last().unwrap().1);
    // The median sits well above the floor: on a linear axis to 200 ms it would be at
    // 0.5% of the height.
    let top = 20.0 + TITLE_LINE;
    let floor = top + PLOT_HEIGHT;
    assert!(
        floor - lowest_y > PLOT_HEIGHT * 0.2,
        "{lowest_y} vs floor {floor}"
    );
    assert!(highest_y < lowest_y - PLOT_HEIGHT * 0.3);
}

#[test]
fn a_narrow_distribution_keeps_a_linear_axis_from_zero() {
    let h = histogram((0..10_000u64).map(|i| 1_000 + i % 3_000));
    let text = svg(&["narrow".into()], &[Series::of_histogram("total", &h)]);
    let doc = roxmltree::Document::parse(&text).unwrap();
    assert_eq!(texts(&doc, "value-tick"), ["0", "1", "2", "3", "4", "5"]);
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
    assert_eq!(format_ms(0.1), "0.1");
    assert_eq!(format_ms(2.5), "2.5");
    assert_eq!(format_ms(150.0), "150");
    let log = ValueAxis::of([0.5, 150.0].into_iter());
    assert_eq!(
        log,
        ValueAxis::Log {
            low_exp: -1,
            high_exp: 3
        }
    );
    assert!((log.fraction(1.0) - 0.25).abs() < 1e-9);
    assert_eq!(
        ValueAxis::of([1.0, 20.0].into_iter()),
        ValueAxis::Linear { top: 20.0 }
    );
}

#[test]
fn a_line_too_long_for_the_chart_is_squeezed_to_fit_not_cut() {
    let h = histogram((1..=100).map(|i| i * 10));
    let long = "x".repeat(200);
    let series = [Series::of_histogram("total", &h).styled(long.clone(), 0, Stroke::Wide)];
    let text = svg(&[long.clone(), "short".to_string()], &series);
    let doc = roxmltree::Document::parse(&text).unwrap();
    let fitted: Vec<Option<&str>> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text") && n.text().is_some_and(|t| t == long || t == "short"))
        .map(|n| n.attribute("textLength"))
        .collect();
    // The long title, the short line, the long legend row.
    assert_eq!(fitted, [Some("880"), None, Some("766")]);
}
