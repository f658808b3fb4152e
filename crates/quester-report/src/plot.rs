//! Line plots of metric families as PNG, drawn with plotters on an RGB buffer in the shared
//! size and font of [`crate::render`].

use plotters::prelude::*;

use crate::render::{encode_png, register_font, FONT, HEIGHT, WIDTH};
use crate::ReportError;

/// The range `[lo, hi]` of `values` widened by 5% (or by a unit when flat).
fn padded_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if !lo.is_finite() || !hi.is_finite() {
        return (0.0, 1.0);
    }
    if hi - lo < 1e-12 {
        let pad = if lo.abs() > 1e-12 {
            lo.abs() * 0.1
        } else {
            0.5
        };
        return (lo - pad, hi + pad);
    }
    let pad = (hi - lo) * 0.05;
    (lo - pad, hi + pad)
}

/// The corner of the plot area holding the fewest points, for the legend box.
fn emptiest_corner(
    series: &[(String, Vec<(f64, f64)>)],
    x: (f64, f64),
    y: (f64, f64),
) -> SeriesLabelPosition {
    let corners = [
        (SeriesLabelPosition::UpperLeft, false, true),
        (SeriesLabelPosition::UpperRight, true, true),
        (SeriesLabelPosition::LowerRight, true, false),
        (SeriesLabelPosition::LowerLeft, false, false),
    ];
    let count = |right: bool, upper: bool| {
        let in_x = |v: f64| {
            let f = (v - x.0) / (x.1 - x.0);
            if right {
                f > 0.6
            } else {
                f < 0.4
            }
        };
        let in_y = |v: f64| {
            let f = (v - y.0) / (y.1 - y.0);
            if upper {
                f > 0.6
            } else {
                f < 0.4
            }
        };
        series
            .iter()
            .flat_map(|(_, p)| p.iter())
            .filter(|(px, py)| in_x(*px) && in_y(*py))
            .count()
    };
    corners
        .into_iter()
        .min_by_key(|(_, right, upper)| count(*right, *upper))
        .map(|(pos, _, _)| pos)
        .unwrap_or(SeriesLabelPosition::UpperLeft)
}

/// Draws `series` (name, points) as lines with markers and encodes the picture as PNG.
pub fn render_png(
    title: &str,
    x_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<Vec<u8>, ReportError> {
    render_png_with(title, x_label, series, None)
}

/// The tick label of a log2 axis: k = 2^x at whole x, nothing between.
pub fn log2_tick(x: &f64) -> String {
    if (x - x.round()).abs() < 1e-9 && (0.0..63.0).contains(&x.round()) {
        format!("{}", 1u64 << x.round() as u32)
    } else {
        String::new()
    }
}

/// [`render_png`] with the x tick labels written by `x_ticks` (default: the numbers).
pub fn render_png_with(
    title: &str,
    x_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
    x_ticks: Option<&dyn Fn(&f64) -> String>,
) -> Result<Vec<u8>, ReportError> {
    register_font();
    let err = |message: String| ReportError::Plot {
        family: title.to_string(),
        message,
    };
    let (x0, x1) = padded_range(series.iter().flat_map(|(_, p)| p.iter().map(|q| q.0)));
    let (y0, y1) = padded_range(series.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)));
    let mut buffer = vec![0u8; (WIDTH * HEIGHT * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut buffer, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, 22))
            .margin(14)
            .x_label_area_size(42)
            .y_label_area_size(64)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(|e| err(e.to_string()))?;
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(x_label)
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .light_line_style(RGBColor(235, 235, 235));
        if let Some(f) = x_ticks {
            mesh.x_label_formatter(f);
        }
        mesh.draw().map_err(|e| err(e.to_string()))?;
        for (i, (name, points)) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(
                    points.iter().copied(),
                    color.stroke_width(2),
                ))
                .map_err(|e| err(e.to_string()))?
                .label(name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(3))
                });
            chart
                .draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))
                .map_err(|e| err(e.to_string()))?;
        }
        chart
            .configure_series_labels()
            .position(emptiest_corner(series, (x0, x1), (y0, y1)))
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(180, 180, 180))
            .label_font((FONT, 14))
            .draw()
            .map_err(|e| err(e.to_string()))?;
        root.present().map_err(|e| err(e.to_string()))?;
    }
    encode_png(&buffer, WIDTH, HEIGHT).map_err(|e| err(format!("PNG encoding: {e}")))
}
