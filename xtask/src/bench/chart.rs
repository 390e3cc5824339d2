//! The bar chart of `cargo xtask bench`: p50 per client, in four panels (sequential HTTP
//! on loopback, the same through the 10 ms round-trip proxy, stdio, and the gateways), on a log scale (the
//! figures span 0.3 ms to seconds). Drawn with `plotters`' SVG backend.

use std::path::Path;

use anyhow::Context as _;
use plotters::prelude::*;
use serde_json::Value;

/// One panel: its title and its bars (id, p50 ms).
type Panel = (String, Vec<(String, f64)>);

/// Writes the chart of `report` (the bench.json value) to `path`.
pub(super) fn p50(report: &Value, path: &Path) -> anyhow::Result<()> {
    let panels = panels(report);
    let height = 70
        + panels
            .iter()
            .map(|(_, bars)| 50 + 26 * bars.len() as u32)
            .sum::<u32>();
    let root = SVGBackend::new(path, (900, height)).into_drawing_area();
    draw(&root, &panels).map_err(|error| anyhow::anyhow!("drawing the chart: {error}"))?;
    root.present()
        .map_err(|error| anyhow::anyhow!("writing {}: {error}", path.display()))
        .context("the chart")?;
    Ok(())
}

fn panels(report: &Value) -> Vec<Panel> {
    let bars = |array: &str, filter: Option<(&str, &str)>, ids: &[&str]| -> Vec<(String, f64)> {
        let rows: Vec<&Value> = report[array]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|row| filter.is_none_or(|(key, value)| row[key] == value))
            .collect();
        ids.iter()
            .filter_map(|id| {
                let row = rows.iter().find(|row| row["client"] == *id)?;
                Some(((*id).to_owned(), row["p50_ms"].as_f64()?))
            })
            .collect()
    };
    let http = [
        "ours-legacy",
        "ours-legacy-cold",
        "ours-modern",
        "floor",
        "ts-sdk",
        "ts-sdk-v2",
        "ts-sdk-v2-modern",
        "py-sdk",
    ];
    let panels = vec![
        (
            "Sequential HTTP, loopback (testkit, TCP_NODELAY)".to_owned(),
            bars("sequential", Some(("server", "nodelay")), &http),
        ),
        (
            format!(
                "Sequential HTTP through the delay proxy ({} ms each way)",
                report["wan_delay_ms_each_way"]
            ),
            bars("wan", None, &http),
        ),
        (
            "stdio: server-everything, a process per call".to_owned(),
            bars(
                "stdio",
                None,
                &[
                    "ours-stdio",
                    "ours-stdio-cold",
                    "floor-stdio",
                    "ts-sdk-stdio",
                    "ts-sdk-v2-stdio",
                ],
            ),
        ),
    ];
    let mut panels = panels;
    // The gateway section: each gateway's sequential p50 beside the direct call's, by era.
    let gateway: Vec<(String, f64)> = report["gateway"]["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|row| {
            let era = if row["era"] == "modern" {
                "2026-07-28"
            } else {
                "legacy"
            };
            Some((
                format!("{} {era}", row["id"].as_str()?),
                row["sequential"]["p50_ms"].as_f64()?,
            ))
        })
        .collect();
    panels.push((
        "Sequential HTTP, direct and through a gateway (testkit upstream, loopback)".to_owned(),
        gateway,
    ));
    // A run of some sections only (`--only`) draws the panels it measured.
    panels
        .into_iter()
        .filter(|(_, bars)| !bars.is_empty())
        .collect()
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    panels: &[Panel],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let root = root.titled(
        "p50 latency per call (ms, log scale; lower is better)",
        ("sans-serif", 20),
    )?;
    let mut rest = root;
    for (i, (title, bars)) in panels.iter().enumerate() {
        let height = 50 + 26 * bars.len() as u32;
        let (area, below) = if i + 1 < panels.len() {
            rest.split_vertically(height)
        } else {
            (rest.clone(), rest.clone())
        };
        rest = below;
        if bars.is_empty() {
            continue;
        }
        let low = bars.iter().map(|(_, v)| *v).fold(f64::INFINITY, f64::min);
        let high = bars.iter().map(|(_, v)| *v).fold(0.0, f64::max);
        // Whole decades around the figures, with room for the value labels.
        let from = 10f64.powf((low * 0.8).log10().floor());
        let to = 10f64.powf((high * 3.0).log10().ceil());
        let mut chart = ChartBuilder::on(&area)
            .caption(title, ("sans-serif", 15))
            .margin(6)
            .margin_right(30)
            .x_label_area_size(22)
            .y_label_area_size(130)
            .build_cartesian_2d(
                (from..to).log_scale(),
                (0..bars.len() as u32).into_segmented(),
            )?;
        let names: Vec<String> = bars.iter().map(|(id, _)| id.clone()).collect();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(bars.len())
            .y_label_formatter(&|value| match value {
                SegmentValue::CenterOf(i) => names
                    .len()
                    .checked_sub(1 + *i as usize)
                    .and_then(|i| names.get(i))
                    .cloned()
                    .unwrap_or_default(),
                _ => String::new(),
            })
            .x_label_formatter(&|value| format!("{value}"))
            .label_style(("sans-serif", 12))
            .draw()?;
        // The first bar at the top.
        let slot = |i: usize| (bars.len() - 1 - i) as u32;
        chart.draw_series(bars.iter().enumerate().map(|(i, (id, value))| {
            let colour = if id.starts_with("ours") {
                RGBColor(31, 119, 180)
            } else if id == "floor" || id.starts_with("direct") {
                RGBColor(120, 120, 120)
            } else {
                RGBColor(255, 127, 14)
            };
            let mut bar = Rectangle::new(
                [
                    (from, SegmentValue::Exact(slot(i))),
                    (*value, SegmentValue::Exact(slot(i) + 1)),
                ],
                colour.filled(),
            );
            bar.set_margin(4, 4, 0, 0);
            bar
        }))?;
        chart.draw_series(bars.iter().enumerate().map(|(i, (_, value))| {
            Text::new(
                if *value < 10.0 {
                    format!("{value:.2}")
                } else {
                    format!("{value:.0}")
                },
                (*value * 1.08, SegmentValue::CenterOf(slot(i))),
                ("sans-serif", 12),
            )
        }))?;
    }
    Ok(())
}
