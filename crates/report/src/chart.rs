//! The report's charts, as SVG text (plotters' `SVGBackend::with_string`).
//!
//! - [`latency_cdf`]: completion latency CDFs, one curve per job and direction, on a log
//!   x-axis (ms) with markers at p50 (circle), p99 (triangle) and p99.9 (cross); [`ms_cdf`]
//!   the same chart for CDFs kept in ms (`reproduce`, `validate-disk` and `calibrate`'s
//!   `--plot`).
//! - [`share_bars`]: each group's share of the I/Os, with its share of the weights as a black
//!   line across the bar when weights are known.
//! - [`metric_lines`]: a sweep's metric along one of its axes, a line per combination of
//!   the others, means with min–max whiskers.
//! - [`time_lines`]: a rate over simulated time (bandwidth, IOPS), a line per group.
//!
//! The SVG depends only on the data: no fonts are measured from the system (plotters'
//! built-in text metrics), no clock, no randomness.

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;

use crate::input::Latency;

/// Chart size in pixels.
pub const WIDTH: u32 = 760;
pub const HEIGHT: u32 = 420;
/// Most curves in one CDF chart (one colour each); the page says when there were more.
pub const MAX_CURVES: usize = 10;
/// Most bars in one share chart.
pub const MAX_BARS: usize = 24;

/// Tableau 10: distinguishable, and fixed.
const PALETTE: [RGBColor; MAX_CURVES] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0xba, 0xb0, 0xac),
];

/// The colour of curve or series `i`, as CSS writes it.
pub fn color_hex(i: usize) -> String {
    let RGBColor(r, g, b) = PALETTE[i % PALETTE.len()];
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// The percentiles marked on each curve, and their marker names.
pub const MARKED: [(f64, &str); 3] = [(50.0, "p50"), (99.0, "p99"), (99.9, "p99.9")];

/// One curve: a label, the CDF as (latency ns, fraction at or below) and the marked
/// percentiles as (percent, ns).
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    pub markers: Vec<(f64, u64)>,
}

/// The CDF of one direction's completion latency as a staircase of (ns, fraction): from
/// json+'s histogram bins when the file has them, else from fio's percentile table (a
/// coarser staircase through 1 %, 5 %, ..., 99.99 %). Empty without I/Os.
pub fn cdf_points(clat: &Latency) -> Vec<(f64, f64)> {
    let steps: Vec<(f64, f64)> = if !clat.bins.is_empty() {
        let total: u64 = clat.bins.iter().map(|&(_, n)| n).fold(0, u64::saturating_add);
        if total == 0 {
            return Vec::new();
        }
        let mut below = 0u64;
        clat.bins
            .iter()
            .map(|&(ns, n)| {
                below = below.saturating_add(n);
                (ns as f64, below as f64 / total as f64)
            })
            .collect()
    } else {
        clat.percentiles.iter().map(|&(p, ns)| (ns as f64, p / 100.0)).collect()
    };
    let mut out = Vec::with_capacity(steps.len() * 2);
    let mut last = 0.0f64;
    for (ns, f) in steps {
        // The inputs are sorted by fraction (percentiles) or by latency (bins), and each
        // is monotone in the other; `max` keeps the staircase monotone whatever a file says.
        let f = f.clamp(last, 1.0);
        out.push((ns, last));
        out.push((ns, f));
        last = f;
    }
    for i in 1..out.len() {
        out[i].0 = out[i].0.max(out[i - 1].0);
    }
    out
}

/// A CDF kept by `reproduce` ((ms, fraction at or below), one point per percent) as curve
/// points in ns, drawn as a line through them. Made monotone in both coordinates whatever a
/// file says, like [`cdf_points`].
pub fn cdf_line(ms_points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(ms_points.len());
    for &(ms, f) in ms_points {
        let (mut ns, mut f) = (ms * 1e6, f.clamp(0.0, 1.0));
        if let Some(&(last_ns, last_f)) = out.last() {
            ns = ns.max(last_ns);
            f = f.max(last_f);
        }
        out.push((ns, f));
    }
    out
}

/// Every chart's frame: its title above, room for the axes' labels (`y_label_px` wide on the
/// left, for the y values' widths).
fn frame<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    title: &str,
    y_label_px: u32,
) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut b = ChartBuilder::on(root);
    b.caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(y_label_px);
    b
}

/// The series' labels in a box at `position`, the same in every chart.
fn legend<'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
    position: SeriesLabelPosition,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(svg_error)
}

fn svg_error<E: std::fmt::Debug>(e: E) -> String {
    format!("cannot draw a chart: {e:?}")
}

/// `v` in ms as an axis label: decades only (1e-3 → "0.001", 100 → "100"), others blank.
fn decade_label(v: &f64) -> String {
    let l = v.log10();
    if (l - l.round()).abs() > 1e-6 {
        return String::new();
    }
    let e = l.round() as i32;
    if e >= 0 {
        format!("{:.0}", 10f64.powi(e))
    } else {
        format!("{:.*}", (-e) as usize, 10f64.powi(e))
    }
}

/// Latency CDFs with a log x-axis in ms. At most [`MAX_CURVES`] curves are drawn.
pub fn latency_cdf(title: &str, curves: &[Curve]) -> Result<String, String> {
    cdf_chart(title, "completion latency (ms, log scale)", curves)
}

/// CDFs kept as (ms, fraction at or below) — what `reproduce --plot`, `validate-disk --plot`
/// and `calibrate --plot` draw — in [`latency_cdf`]'s chart, `x_desc` naming the quantity
/// (in ms, log scale), with markers where each curve reaches p50, p99 and p99.9.
pub fn ms_cdf(
    title: &str,
    x_desc: &str,
    series: &[(&str, &[(f64, f64)])],
) -> Result<String, String> {
    let curves: Vec<Curve> = series
        .iter()
        .map(|&(label, ms_points)| {
            // A log axis shows no 0 ms, and a histogram's empty buckets below the first
            // access would stretch it: the curve starts where it starts to rise.
            let mut points = cdf_line(ms_points);
            points.retain(|p| p.0 > 0.0);
            let rise = points.iter().position(|p| p.1 > 0.0).unwrap_or(0);
            points.drain(..rise.saturating_sub(1));
            let markers = MARKED
                .iter()
                .filter_map(|&(p, _)| {
                    let at = points.iter().find(|&&(_, f)| f * 100.0 >= p - 1e-9)?;
                    Some((p, at.0.round() as u64))
                })
                .collect();
            Curve { label: label.to_string(), points, markers }
        })
        .collect();
    cdf_chart(title, &format!("{x_desc} (ms, log scale)"), &curves)
}

fn cdf_chart(title: &str, x_desc: &str, curves: &[Curve]) -> Result<String, String> {
    let curves: Vec<&Curve> =
        curves.iter().filter(|c| !c.points.is_empty()).take(MAX_CURVES).collect();
    // ns → ms, kept at least 1 ns so that the log axis has a bottom.
    let ms = |ns: f64| ns.max(1.0) / 1e6;
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for c in &curves {
        for &(ns, _) in &c.points {
            lo = lo.min(ms(ns));
            hi = hi.max(ms(ns));
        }
    }
    if curves.is_empty() {
        (lo, hi) = (1.0, 10.0);
    }
    let lo = 10f64.powi(lo.log10().floor() as i32);
    let mut hi = 10f64.powi(hi.log10().ceil() as i32);
    if hi <= lo {
        hi = lo * 10.0;
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(svg_error)?;
        let mut chart = frame(&root, title, 50)
            .build_cartesian_2d((lo..hi).log_scale(), 0.0..100.0)
            .map_err(svg_error)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc("I/Os at or below (%)")
            .x_label_formatter(&decade_label)
            .y_label_formatter(&|y| format!("{y:.0}"))
            .y_max_light_lines(1)
            .light_line_style(RGBColor(0xee, 0xee, 0xee))
            .draw()
            .map_err(svg_error)?;
        for (i, c) in curves.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            chart
                .draw_series(LineSeries::new(
                    c.points.iter().map(|&(ns, f)| (ms(ns), f * 100.0)),
                    color.stroke_width(2),
                ))
                .map_err(svg_error)?
                .label(c.label.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
            for &(p, ns) in &c.markers {
                let at = (ms(ns as f64), p);
                let style = color.stroke_width(2);
                if p < 90.0 {
                    chart.draw_series(std::iter::once(Circle::new(at, 4, style)))
                } else if p < 99.5 {
                    chart.draw_series(std::iter::once(TriangleMarker::new(at, 5, style)))
                } else {
                    chart.draw_series(std::iter::once(Cross::new(at, 4, style)))
                }
                .map_err(svg_error)?;
            }
        }
        legend(&mut chart, SeriesLabelPosition::LowerRight)?;
        root.present().map_err(svg_error)?;
    }
    Ok(svg)
}

/// One bar: a group's share of the I/Os and of the weights (fractions).
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    pub label: String,
    pub share: f64,
    pub weight_share: Option<f64>,
}

/// Labels longer than this are cut in the chart (the tables give them whole).
const MAX_LABEL_CHARS: usize = 20;

fn short(label: &str) -> String {
    if label.chars().count() <= MAX_LABEL_CHARS {
        label.to_string()
    } else {
        let cut: String = label.chars().take(MAX_LABEL_CHARS - 1).collect();
        format!("{cut}…")
    }
}

/// Each group's share of the I/Os (%), one bar each, at most [`MAX_BARS`].
pub fn share_bars(title: &str, bars: &[Bar]) -> Result<String, String> {
    let bars = &bars[..bars.len().min(MAX_BARS)];
    let n = bars.len().max(1) as i32;
    let labels: Vec<String> = bars.iter().map(|b| short(&b.label)).collect();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(svg_error)?;
        let mut chart = frame(&root, title, 50)
            .build_cartesian_2d((0..n - 1).into_segmented(), 0.0..100.0)
            .map_err(svg_error)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .y_desc("share of the I/Os (%)")
            .x_labels(bars.len().max(1))
            .x_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => labels.get(*i as usize).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .y_label_formatter(&|y| format!("{y:.0}"))
            .y_max_light_lines(1)
            .light_line_style(RGBColor(0xee, 0xee, 0xee))
            .draw()
            .map_err(svg_error)?;
        let bar_color = PALETTE[0];
        chart
            .draw_series(bars.iter().enumerate().map(|(i, b)| {
                let i = i as i32;
                let mut r = Rectangle::new(
                    [(SegmentValue::Exact(i), 0.0), (SegmentValue::Exact(i + 1), b.share * 100.0)],
                    bar_color.filled(),
                );
                r.set_margin(0, 0, 10, 10);
                r
            }))
            .map_err(svg_error)?
            .label("share of the I/Os")
            .legend(move |(x, y)| {
                Rectangle::new([(x, y - 5), (x + 12, y + 5)], bar_color.filled())
            });
        chart
            .draw_series(bars.iter().enumerate().map(|(i, b)| {
                // Above the bar, or inside a bar that reaches the top, in white.
                let pct = b.share * 100.0;
                let (y, color) = if pct > 92.0 { (pct - 4.0, WHITE) } else { (pct + 4.0, BLACK) };
                Text::new(
                    format!("{pct:.1}%"),
                    (SegmentValue::CenterOf(i as i32), y),
                    ("sans-serif", 13).into_font().color(&color).pos(text_centre()),
                )
            }))
            .map_err(svg_error)?;
        if bars.iter().any(|b| b.weight_share.is_some()) {
            chart
                .draw_series(bars.iter().enumerate().filter_map(|(i, b)| {
                    let w = b.weight_share? * 100.0;
                    let i = i as i32;
                    // A thin black bar as wide as the group's bar, at its share of weights.
                    let mut r = Rectangle::new(
                        [(SegmentValue::Exact(i), w - 0.4), (SegmentValue::Exact(i + 1), w + 0.4)],
                        BLACK.filled(),
                    );
                    r.set_margin(0, 0, 4, 4);
                    Some(r)
                }))
                .map_err(svg_error)?
                .label("share of the weights")
                .legend(|(x, y)| {
                    PathElement::new(vec![(x, y), (x + 12, y)], BLACK.stroke_width(3))
                });
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        root.present().map_err(svg_error)?;
    }
    Ok(svg)
}

/// One line of a sweep chart: a label and its points (x position, mean, min, max).
#[derive(Clone, Debug, PartialEq)]
pub struct MetricSeries {
    pub label: String,
    pub points: Vec<(usize, f64, f64, f64)>,
}

/// A metric along a sweep axis: the axis's `ticks` evenly spaced in order (a sweep's values
/// are usually chosen geometrically, 1, 4, 16, so even spacing reads as a log axis), a line
/// per series through the means with min–max whiskers, in [`color_hex`]`(i)` for series `i`.
/// At most [`MAX_CURVES`] series. The legend is the page's (a sweep's labels are long, and a
/// legend inside the plot would hide the lines).
pub fn metric_lines(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    ticks: &[String],
    series: &[MetricSeries],
) -> Result<String, String> {
    let series = &series[..series.len().min(MAX_CURVES)];
    let n = ticks.len().max(1) as i32;
    let labels: Vec<String> = ticks.iter().map(|t| short(t)).collect();
    let top = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.3))
        .filter(|y| y.is_finite())
        .fold(0.0f64, f64::max);
    let top = if top > 0.0 { top * 1.1 } else { 1.0 };
    let at = |i: usize| SegmentValue::CenterOf(i as i32);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(svg_error)?;
        let mut chart = frame(&root, title, 60)
            .build_cartesian_2d((0..n - 1).into_segmented(), 0.0..top)
            .map_err(svg_error)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_labels(ticks.len().max(1))
            .x_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => labels.get(*i as usize).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .y_label_formatter(&|y| {
                format!("{y:.3}").trim_end_matches('0').trim_end_matches('.').to_string()
            })
            .light_line_style(RGBColor(0xee, 0xee, 0xee))
            .draw()
            .map_err(svg_error)?;
        for (i, s) in series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            chart
                .draw_series(LineSeries::new(
                    s.points.iter().map(|&(x, mean, _, _)| (at(x), mean)),
                    color.stroke_width(2),
                ))
                .map_err(svg_error)?;
            chart
                .draw_series(s.points.iter().map(|&(x, mean, min, max)| {
                    ErrorBar::new_vertical(at(x), min, mean, max, color.stroke_width(1), 8)
                }))
                .map_err(svg_error)?;
        }
        root.present().map_err(svg_error)?;
    }
    Ok(svg)
}

/// A rate over simulated time, a line per series (label, value per bin of `bin_s` seconds,
/// drawn at each bin's middle), at most [`MAX_CURVES`] series, with a legend.
pub fn time_lines(
    title: &str,
    y_desc: &str,
    bin_s: f64,
    series: &[(String, Vec<f64>)],
) -> Result<String, String> {
    let series = &series[..series.len().min(MAX_CURVES)];
    let bins = series.iter().map(|(_, v)| v.len()).max().unwrap_or(0).max(1);
    let right = bins as f64 * bin_s;
    let top = series.iter().flat_map(|(_, v)| v.iter().copied()).fold(0.0f64, f64::max);
    let top = if top > 0.0 { top * 1.1 } else { 1.0 };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(svg_error)?;
        let mut chart =
            frame(&root, title, 60).build_cartesian_2d(0.0..right, 0.0..top).map_err(svg_error)?;
        chart
            .configure_mesh()
            .x_desc("simulated time (s)")
            .y_desc(y_desc)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| {
                format!("{y:.2}").trim_end_matches('0').trim_end_matches('.').to_string()
            })
            .light_line_style(RGBColor(0xee, 0xee, 0xee))
            .draw()
            .map_err(svg_error)?;
        for (i, (label, values)) in series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let points = values.iter().enumerate().map(|(k, &v)| ((k as f64 + 0.5) * bin_s, v));
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(2)))
                .map_err(svg_error)?
                .label(short(label))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        root.present().map_err(svg_error)?;
    }
    Ok(svg)
}

fn text_centre() -> plotters::style::text_anchor::Pos {
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    Pos::new(HPos::Center, VPos::Center)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn latency(percentiles: &[(f64, u64)], bins: &[(u64, u64)]) -> Latency {
        Latency {
            min_ns: 0,
            max_ns: 0,
            mean_ns: 0.0,
            percentiles: percentiles.to_vec(),
            bins: bins.to_vec(),
        }
    }

    fn monotone(points: &[(f64, f64)]) -> bool {
        points.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1)
    }

    #[test]
    fn cdf_from_bins_is_monotone_and_ends_at_one() {
        let l = latency(&[], &[(100, 3), (250, 1), (900, 6), (5000, 0), (7000, 10)]);
        let p = cdf_points(&l);
        assert!(monotone(&p), "{p:?}");
        assert_eq!(p.first(), Some(&(100.0, 0.0)));
        assert_eq!(p.last(), Some(&(7000.0, 1.0)));
        assert_eq!(p[1], (100.0, 0.15));
    }

    #[test]
    fn cdf_from_percentiles_is_monotone_even_from_a_bad_file() {
        let l = latency(&[(1.0, 10), (50.0, 40), (99.0, 30), (99.9, 400)], &[]);
        let p = cdf_points(&l);
        assert!(monotone(&p), "{p:?}");
        assert_eq!(p.last(), Some(&(400.0, 99.9 / 100.0)));
        assert_eq!(cdf_points(&latency(&[], &[])), vec![]);
        assert_eq!(cdf_points(&latency(&[], &[(5, 0)])), vec![]);
    }

    #[test]
    fn reproduce_cdfs_become_monotone_lines_in_ns() {
        let p = cdf_line(&[(0.5, 0.0), (2.0, 0.5), (1.0, 0.4), (3.0, 1.0)]);
        assert_eq!(p, vec![(500_000.0, 0.0), (2e6, 0.5), (2e6, 0.5), (3e6, 1.0)]);
        assert!(monotone(&p));
        assert_eq!(cdf_line(&[]), vec![]);
    }

    #[test]
    fn axis_labels_are_decades_with_fixed_digits() {
        assert_eq!(decade_label(&0.001), "0.001");
        assert_eq!(decade_label(&1.0), "1");
        assert_eq!(decade_label(&1000.0), "1000");
        assert_eq!(decade_label(&3.0), "");
    }

    #[test]
    fn charts_are_one_svg_each_and_repeatable() {
        let curve = Curve {
            label: "a <b> & c".into(),
            points: cdf_points(&latency(&[], &[(100_000, 1), (2_000_000, 1)])),
            markers: vec![(50.0, 100_000), (99.0, 2_000_000), (99.9, 2_000_000)],
        };
        let a = latency_cdf("t", &[curve.clone(), curve.clone()]).unwrap();
        assert_eq!(a, latency_cdf("t", &[curve.clone(), curve]).unwrap());
        assert_eq!(a.matches("<svg").count(), 1);
        assert!(a.contains("a &lt;b&gt; &amp; c"));
        let bars = [
            Bar { label: "x".into(), share: 0.75, weight_share: Some(0.5) },
            Bar { label: "y".into(), share: 0.25, weight_share: Some(0.5) },
        ];
        let b = share_bars("s", &bars).unwrap();
        assert_eq!(b, share_bars("s", &bars).unwrap());
        assert_eq!(b.matches("<svg").count(), 1);
        assert!(b.contains("75.0%") && b.contains("share of the weights"));
        // One bar, or none, still draws.
        share_bars("one", &bars[..1]).unwrap();
        share_bars("none", &[]).unwrap();
        latency_cdf("empty", &[]).unwrap();
    }

    #[test]
    fn ms_cdfs_draw_as_latency_cdfs() {
        let a = [(0.0, 0.0), (0.5, 0.0), (5.0, 0.5), (10.0, 1.0)];
        let b = [(0.0, 0.0), (6.0, 0.4), (12.0, 1.0)];
        let s = ms_cdf("Access time <CDF>", "access time", &[("measured", &a), ("DiskSim", &b)])
            .unwrap();
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
        assert!(s.contains("measured") && s.contains("DiskSim") && s.contains("&lt;CDF&gt;"));
        assert!(s.contains("access time (ms, log scale)"));
        // The log axis starts at the decade below the rise (0.5 ms), not near the 0 ms point.
        let lines: Vec<&str> = s.lines().collect();
        assert!(lines.contains(&"10") && !lines.contains(&"0.01") && !lines.contains(&"0.001"));
    }
}
