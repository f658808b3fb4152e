//! The experiment's plots, drawn with plotters on an RGB buffer with quester's embedded font:
//! pass@k per run with interval bars, and learning curves with a band over seeds.

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use quester_report::render::{encode_png, register_font, FONT, HEIGHT, WIDTH};

use crate::aggregate::{CurveSet, Summary};
use crate::error::ExperimentError;

fn err(name: &str) -> impl Fn(String) -> ExperimentError + '_ {
    move |message| ExperimentError::Plot {
        name: name.to_string(),
        message,
    }
}

/// The legend box both plots draw.
fn legend<'a, DB: DrawingBackend + 'a>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    position: SeriesLabelPosition,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(180, 180, 180))
        .label_font((FONT, 14))
        .draw()
        .map_err(|x| x.to_string())
}

/// The range of `values`, padded by 8% (a unit when flat).
fn range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = if hi - lo < 1e-9 {
        0.5
    } else {
        0.08 * (hi - lo)
    };
    (lo - pad, hi + pad)
}

/// pass@k against k for every run: the trained mean with its interval as a bar, and the
/// untrained policy as a dashed line of the same colour.
pub fn pass_at_png(s: &Summary) -> Result<Vec<u8>, ExperimentError> {
    register_font();
    let name = "pass_at";
    let e = err(name);
    let ks: Vec<usize> = s
        .metrics
        .iter()
        .filter_map(|m| m.strip_prefix("pass@")?.parse().ok())
        .collect();
    let k_max = ks.iter().copied().max().unwrap_or(1) as f64;
    let mut buffer = vec![0u8; (WIDTH * HEIGHT * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut buffer, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|x| e(x.to_string()))?;
        let pct = (s.level * 100.0).round();
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("pass@k over attempts ({pct}% intervals; dashed: untrained)"),
                (FONT, 20),
            )
            .margin(14)
            .x_label_area_size(42)
            .y_label_area_size(56)
            .build_cartesian_2d(0.6..k_max + 0.4, 0.0..1.0)
            .map_err(|x| e(x.to_string()))?;
        chart
            .configure_mesh()
            .x_desc("k (attempts)")
            .y_desc("pass@k")
            .x_labels(ks.len().max(2))
            .x_label_formatter(&|x| {
                if (x - x.round()).abs() < 1e-9 {
                    format!("{}", x.round())
                } else {
                    String::new()
                }
            })
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(|x| e(x.to_string()))?;
        let n = s.runs.len().max(1) as f64;
        for (i, r) in s.runs.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            // Side by side around each k, so the bars do not overlap.
            let dx = (i as f64 - (n - 1.0) / 2.0) * 0.08;
            let point = |figs: &crate::aggregate::Figures, k: usize| {
                figs.get(&format!("pass@{k}")).map(|v| (k as f64 + dx, *v))
            };
            if let Some(u) = &r.untrained {
                let pts: Vec<(f64, f64)> = ks
                    .iter()
                    .filter_map(|&k| point(u, k))
                    .map(|(x, v)| (x, v.mean))
                    .collect();
                chart
                    .draw_series(DashedLineSeries::new(pts, 6, 4, color.stroke_width(1)))
                    .map_err(|x| e(x.to_string()))?;
            }
            if let Some(t) = &r.trained {
                let pts: Vec<(f64, quester_algos::Interval)> =
                    ks.iter().filter_map(|&k| point(t, k)).collect();
                chart
                    .draw_series(LineSeries::new(
                        pts.iter().map(|(x, v)| (*x, v.mean)),
                        color.stroke_width(2),
                    ))
                    .map_err(|x| e(x.to_string()))?
                    .label(format!("{} ({} seeds)", r.name, r.seeds_done.len()))
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(3))
                    });
                chart
                    .draw_series(pts.iter().map(|(x, v)| {
                        PathElement::new(vec![(*x, v.lo), (*x, v.hi)], color.stroke_width(2))
                    }))
                    .map_err(|x| e(x.to_string()))?;
                chart
                    .draw_series(
                        pts.iter()
                            .map(|(x, v)| Circle::new((*x, v.mean), 4, color.filled())),
                    )
                    .map_err(|x| e(x.to_string()))?;
            }
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft).map_err(&e)?;
        root.present().map_err(|x| e(x.to_string()))?;
    }
    encode_png(&buffer, WIDTH, HEIGHT).map_err(|x| e(x.to_string()))
}

/// One learning-curve metric against training episodes: the mean over seeds as a line, the
/// lowest to the highest seed as a band.
pub fn curve_png(c: &CurveSet) -> Result<Vec<u8>, ExperimentError> {
    register_font();
    let name = format!("curve_{}", c.metric);
    let e = err(&name);
    let all = || c.runs.iter().flat_map(|r| r.points.iter());
    let (x0, x1) = range(all().map(|p| p.episodes));
    let (y0, y1) = range(all().flat_map(|p| [p.min, p.max]));
    let mut buffer = vec![0u8; (WIDTH * HEIGHT * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut buffer, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|x| e(x.to_string()))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "{} while training (mean over seeds; band: lowest to highest seed)",
                    c.metric
                ),
                (FONT, 18),
            )
            .margin(14)
            .x_label_area_size(42)
            .y_label_area_size(64)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(|x| e(x.to_string()))?;
        chart
            .configure_mesh()
            .x_desc("training episodes")
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(|x| e(x.to_string()))?;
        for (i, r) in c.runs.iter().enumerate() {
            if r.points.is_empty() {
                continue;
            }
            let color = Palette99::pick(i).to_rgba();
            let band: Vec<(f64, f64)> = r
                .points
                .iter()
                .map(|p| (p.episodes, p.max))
                .chain(r.points.iter().rev().map(|p| (p.episodes, p.min)))
                .collect();
            chart
                .draw_series(std::iter::once(Polygon::new(
                    band,
                    color.mix(0.18).filled(),
                )))
                .map_err(|x| e(x.to_string()))?;
            chart
                .draw_series(LineSeries::new(
                    r.points.iter().map(|p| (p.episodes, p.mean)),
                    color.stroke_width(2),
                ))
                .map_err(|x| e(x.to_string()))?
                .label(r.name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(3))
                });
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight).map_err(&e)?;
        root.present().map_err(|x| e(x.to_string()))?;
    }
    encode_png(&buffer, WIDTH, HEIGHT).map_err(|x| e(x.to_string()))
}
