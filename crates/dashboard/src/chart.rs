//! Charts drawn on the server as inline SVG: no script, no library, a few hundred bytes a
//! series. Each chart names itself for screen readers, and its page lists the numbers in a
//! table beside it.

use std::fmt::Write;

/// One line of a chart: a label and a value per day (`None`: nothing reported).
pub(crate) struct Series {
    pub label: String,
    pub values: Vec<Option<f64>>,
}

/// Colours with a 3:1 contrast on white, told apart without relying on hue alone (the legend
/// and the table name each series). The legend's swatches are the stylesheet's `.c0`–`.c7`
/// (the CSP allows no inline style), in this order.
pub(crate) const COLOURS: &[&str] = &[
    "#1f5fbf", "#b3411b", "#17663a", "#7a3fb0", "#8a6100", "#0f6f78", "#a3265c", "#4e5666",
];

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 220.0;
const LEFT: f64 = 48.0;
const RIGHT: f64 = 12.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 28.0;

/// The largest value drawn: a round number at or above the data's maximum.
fn ceiling(max: f64) -> f64 {
    if max <= 0.0 {
        return 1.0;
    }
    let magnitude = 10f64.powf(max.log10().floor());
    for step in [1.0, 2.0, 5.0, 10.0] {
        if step * magnitude >= max {
            return step * magnitude;
        }
    }
    10.0 * magnitude
}

/// Whole numbers as people read them (`12,345`; `1.2M` past a million).
pub(crate) fn count(v: f64) -> String {
    if v.abs() >= 1_000_000.0 {
        return format!("{:.1}M", v / 1_000_000.0);
    }
    let whole = v.round() as i64;
    let digits = whole.abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if whole < 0 {
        out.insert(0, '-');
    }
    out
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A line chart of `series` over `days` (labels of the x axis, `YYYY-MM-DD`), titled `title`.
/// A day without a value breaks its line.
pub(crate) fn lines(title: &str, days: &[String], series: &[Series]) -> String {
    let max = series
        .iter()
        .flat_map(|s| s.values.iter().flatten())
        .fold(0.0f64, |a, &b| a.max(b));
    // Counts: at least 0-4, so every grid line is a whole number.
    let top = ceiling(max).max(4.0);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let x = |i: usize| {
        if days.len() <= 1 {
            LEFT + plot_w / 2.0
        } else {
            LEFT + plot_w * i as f64 / (days.len() - 1) as f64
        }
    };
    let y = |v: f64| TOP + plot_h * (1.0 - v / top);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{}" xmlns="http://www.w3.org/2000/svg">"#,
        escape(title)
    );
    for step in 0..=4 {
        let v = top * f64::from(step) / 4.0;
        let _ = write!(
            svg,
            r##"<line x1="{LEFT}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#d6dae2"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            WIDTH - RIGHT,
            LEFT - 6.0,
            y(v) + 4.0,
            count(v),
            y = y(v),
        );
    }
    // At most 7 date labels, evenly spread.
    let every = days.len().div_ceil(7).max(1);
    for (i, day) in days.iter().enumerate() {
        if i % every == 0 || i + 1 == days.len() {
            // The last label ends at the plot's edge, so none is cut off.
            let anchor = if i + 1 == days.len() && days.len() > 1 {
                "end"
            } else {
                "middle"
            };
            let _ = write!(
                svg,
                r#"<text x="{:.1}" y="{}" text-anchor="{anchor}">{}</text>"#,
                x(i),
                HEIGHT - 8.0,
                escape(day.get(5..).unwrap_or(day))
            );
        }
    }
    for (n, s) in series.iter().enumerate() {
        let colour = COLOURS[n % COLOURS.len()];
        let mut path = String::new();
        let mut pen_down = false;
        for (i, v) in s.values.iter().enumerate() {
            match v {
                Some(v) => {
                    let _ = write!(
                        path,
                        "{}{:.1},{:.1} ",
                        if pen_down { "L" } else { "M" },
                        x(i),
                        y(*v)
                    );
                    pen_down = true;
                }
                None => pen_down = false,
            }
        }
        if !path.is_empty() {
            let _ = write!(
                svg,
                r#"<path d="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
                path.trim_end()
            );
        }
        for (i, v) in s.values.iter().enumerate() {
            if let Some(v) = v {
                let _ = write!(
                    svg,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{colour}"><title>{}: {} {}</title></circle>"#,
                    x(i),
                    y(*v),
                    escape(&s.label),
                    escape(&days[i]),
                    count(*v)
                );
            }
        }
    }
    svg.push_str("</svg>");
    svg
}

/// A horizontal bar chart: one bar per `(label, value)`, titled `title`.
pub(crate) fn bars(title: &str, items: &[(String, f64)]) -> String {
    const ROW: f64 = 26.0;
    const LABEL: f64 = 150.0;
    let height = TOP + ROW * items.len() as f64 + 8.0;
    let top = ceiling(items.iter().fold(0.0f64, |a, (_, v)| a.max(*v)));
    let plot_w = WIDTH - LABEL - RIGHT - 60.0;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="chart" viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{}" xmlns="http://www.w3.org/2000/svg">"#,
        escape(title)
    );
    for (i, (label, value)) in items.iter().enumerate() {
        let y = TOP + ROW * i as f64;
        let w = (plot_w * value / top).max(1.0);
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text><rect x="{LABEL}" y="{:.1}" width="{w:.1}" height="{:.1}" fill="{}"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            LABEL - 6.0,
            y + ROW / 2.0 + 4.0,
            escape(label),
            y + 4.0,
            ROW - 8.0,
            COLOURS[0],
            LABEL + w + 6.0,
            y + ROW / 2.0 + 4.0,
            count(*value)
        );
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stylesheet_has_a_swatch_of_each_colour() {
        let css = include_str!("../assets/app.css");
        for (i, colour) in COLOURS.iter().enumerate() {
            let rule = format!(".c{i} {{ background: {colour}; }}");
            assert!(css.contains(&rule), "app.css lacks {rule}");
        }
    }

    #[test]
    fn the_axis_ends_at_a_round_number_over_the_data() {
        assert_eq!(ceiling(0.0), 1.0);
        assert_eq!(ceiling(7.0), 10.0);
        assert_eq!(ceiling(12.0), 20.0);
        assert_eq!(ceiling(450.0), 500.0);
        assert_eq!(ceiling(1000.0), 1000.0);
    }

    #[test]
    fn counts_read_as_people_write_them() {
        assert_eq!(count(0.0), "0");
        assert_eq!(count(999.0), "999");
        assert_eq!(count(12345.0), "12,345");
        assert_eq!(count(-1234.0), "-1,234");
        assert_eq!(count(2_500_000.0), "2.5M");
    }

    #[test]
    fn a_missing_day_breaks_the_line_and_labels_are_escaped() {
        let days: Vec<String> = ["2026-11-01", "2026-11-02", "2026-11-03"]
            .map(String::from)
            .to_vec();
        let svg = lines(
            "Views <per day>",
            &days,
            &[Series {
                label: "A&B".into(),
                values: vec![Some(10.0), None, Some(20.0)],
            }],
        );
        assert!(svg.contains(r#"aria-label="Views &lt;per day&gt;""#));
        assert!(svg.contains("A&amp;B"));
        let path = svg.split(r#"<path d=""#).nth(1).unwrap();
        let path = &path[..path.find('"').unwrap()];
        assert_eq!(path.matches('M').count(), 2, "{path}");
        assert!(!path.contains('L'));
        assert_eq!(svg.matches("<circle").count(), 2);
    }

    #[test]
    fn bars_are_as_long_as_their_share_of_the_axis() {
        let svg = bars("Views", &[("A".into(), 50.0), ("B".into(), 100.0)]);
        let widths: Vec<f64> = svg
            .split(r#"width=""#)
            .skip(1)
            .map(|w| w[..w.find('"').unwrap()].parse().unwrap())
            .collect();
        assert_eq!(widths.len(), 2);
        assert!((widths[1] - 2.0 * widths[0]).abs() < 0.2, "{widths:?}");
    }
}
