//! Minimal SVG writer for comparing CDFs (measured vs simulated), the picture DiskSim
//! validation papers show next to the rms figure. Plain text, no dependencies.

use std::fmt::Write;

const COLORS: [&str; 6] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf"];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Draw CDFs: each series is `(label, points (x, cumulative in [0,1]))`, x ascending.
pub fn cdf_svg(title: &str, x_label: &str, series: &[(&str, &[(f64, f64)])]) -> String {
    let (w, h) = (720.0f64, 460.0f64);
    let (ml, mr, mt, mb) = (70.0, 20.0, 40.0, 60.0);
    let pw = w - ml - mr;
    let ph = h - mt - mb;
    let xmax = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.0))
        .filter(|x| x.is_finite())
        .fold(0.0f64, f64::max);
    let xmax = if xmax > 0.0 { nice(xmax) } else { 1.0 };
    let sx = |x: f64| ml + (x / xmax).clamp(0.0, 1.0) * pw;
    let sy = |y: f64| mt + (1.0 - y.clamp(0.0, 1.0)) * ph;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="15">{}</text>"#,
        w / 2.0,
        esc(title)
    );
    for k in 0..=5 {
        let x = xmax * k as f64 / 5.0;
        let y = k as f64 / 5.0;
        let _ = writeln!(
            s,
            r##"<line x1="{0:.1}" y1="{1}" x2="{0:.1}" y2="{2}" stroke="#ddd"/><text x="{0:.1}" y="{3}" text-anchor="middle">{4}</text>"##,
            sx(x),
            mt,
            mt + ph,
            mt + ph + 16.0,
            fmt_num(x)
        );
        let _ = writeln!(
            s,
            r##"<line x1="{0}" y1="{1:.1}" x2="{2}" y2="{1:.1}" stroke="#ddd"/><text x="{3}" y="{4:.1}" text-anchor="end">{5:.1}</text>"##,
            ml,
            sy(y),
            ml + pw,
            ml - 6.0,
            sy(y) + 4.0,
            y
        );
    }
    let _ = writeln!(
        s,
        r#"<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="black"/>"#
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        ml + pw / 2.0,
        h - 18.0,
        esc(x_label)
    );
    let _ = writeln!(
        s,
        r#"<text x="18" y="{}" text-anchor="middle" transform="rotate(-90 18 {})">cumulative fraction</text>"#,
        mt + ph / 2.0,
        mt + ph / 2.0
    );
    for (k, (label, pts)) in series.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        let mut d = String::new();
        for (j, &(x, y)) in pts.iter().filter(|p| p.0.is_finite() && p.1.is_finite()).enumerate() {
            let _ = write!(d, "{}{:.2},{:.2} ", if j == 0 { "M" } else { "L" }, sx(x), sy(y));
        }
        let _ = writeln!(
            s,
            r#"<path d="{}" fill="none" stroke="{color}" stroke-width="1.5"/>"#,
            d.trim_end()
        );
        let ly = mt + 16.0 + 18.0 * k as f64;
        let lx = ml + pw - 190.0;
        let _ = writeln!(
            s,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="3"/><text x="{}" y="{}">{}</text>"#,
            lx + 24.0,
            lx + 30.0,
            ly + 4.0,
            esc(label)
        );
    }
    s.push_str("</svg>\n");
    s
}

fn nice(x: f64) -> f64 {
    let p = 10f64.powf(x.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * p >= x {
            return m * p;
        }
    }
    10.0 * p
}

fn fmt_num(x: f64) -> String {
    if x == x.trunc() {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}
