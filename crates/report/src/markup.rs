//! The page's two text transforms, shared by every section: escaping text for HTML, and an
//! SVG chart as it goes inline.

/// HTML-escapes text for element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// The SVG as it goes inside the page: from its `<svg` on (no XML declaration), and without
/// the `xmlns` namespace attribute, which HTML does not need; so the page holds no URL at
/// all, not even a namespace name.
pub fn inline_svg(svg: &str) -> String {
    let svg = svg.find("<svg").map_or(svg, |i| &svg[i..]).trim_end();
    svg.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1)
}
