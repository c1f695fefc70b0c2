//! The tool-duration timeline as an inline SVG chart: one bar per tool call
//! from its `tool_use` to its `tool_result` on the recording's clock (the
//! cassette `timeline`), and one bar per tool for its total time (the
//! `toolDurations` fold replay computes). Coordinates are computed here; the
//! template only writes `<rect>`s with them.

use std::collections::HashMap;

use crate::cassette::TimelineEntry;
use crate::evidence::timeline;

/// Spans drawn at most (the rest is named in the chart's note).
const MAX_SPANS: usize = 300;
const WIDTH: f64 = 860.0;
const LABEL: f64 = 140.0;
const ROW: f64 = 14.0;

/// One drawn bar.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub x: String,
    pub y: String,
    pub w: String,
    pub label: String,
    /// The tooltip (`<title>`): name, duration, start.
    pub title: String,
    pub error: bool,
}

/// A chart ready to draw.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Chart {
    pub width: String,
    pub height: String,
    pub label_x: String,
    pub bars: Vec<Bar>,
    /// `"0 ms"`, `"1,234 ms"` at the axis ends.
    pub axis_end: String,
    pub note: Option<String>,
}

/// The per-call span chart, `None` without a timeline or a tool call.
pub fn spans(entries: &[TimelineEntry]) -> Option<Chart> {
    let ts = |e: &TimelineEntry| e.get("ts").and_then(|v| v.number());
    let start = entries.iter().find_map(ts)?;
    let mut open: HashMap<String, (String, f64)> = HashMap::new();
    let mut spans: Vec<(String, f64, f64, bool)> = Vec::new();
    for e in entries {
        let (Some(kind), Some(id), Some(t)) = (
            e.get("type").and_then(|v| v.as_str()),
            e.get("toolUseId").and_then(|v| v.as_str()),
            ts(e),
        ) else {
            continue;
        };
        match kind {
            "tool_use" => {
                let name = e.get("name").and_then(|v| v.as_str()).unwrap_or("?");
                open.insert(id.to_owned(), (name.to_owned(), t));
            }
            "tool_result" => {
                if let Some((name, from)) = open.remove(id) {
                    spans.push((name, from - start, t - start, false));
                }
            }
            _ => {}
        }
    }
    if spans.is_empty() {
        return None;
    }
    let total = spans.len();
    spans.truncate(MAX_SPANS);
    let end = spans.iter().map(|s| s.2).fold(1.0_f64, f64::max);
    let scale = (WIDTH - LABEL) / end;
    let bars = spans
        .iter()
        .enumerate()
        .map(|(i, (name, from, to, error))| Bar {
            x: fmt(LABEL + from * scale),
            y: fmt(i as f64 * ROW),
            w: fmt(((to - from) * scale).max(1.0)),
            label: name.clone(),
            title: format!("{name}: {} ms, from {} ms", fmt(to - from), fmt(*from)),
            error: *error,
        })
        .collect();
    Some(Chart {
        width: fmt(WIDTH),
        height: fmt(spans.len() as f64 * ROW + ROW),
        label_x: fmt(LABEL - 4.0),
        bars,
        axis_end: format!("{} ms", fmt(end)),
        note: (total > MAX_SPANS)
            .then(|| format!("the first {MAX_SPANS} of {total} tool calls are drawn")),
    })
}

/// Total time per tool (the `toolDurations` fold), longest first.
pub fn totals(entries: &[TimelineEntry]) -> Option<Chart> {
    let mut rows = timeline::tool_durations(entries).0;
    rows.retain(|(_, d)| d.total_ms.is_finite());
    if rows.is_empty() {
        return None;
    }
    rows.sort_by(|a, b| b.1.total_ms.total_cmp(&a.1.total_ms));
    let max = rows[0].1.total_ms.max(1.0);
    let scale = (WIDTH - LABEL) / max;
    let bars = rows
        .iter()
        .enumerate()
        .map(|(i, (name, d))| Bar {
            x: fmt(LABEL),
            y: fmt(i as f64 * ROW),
            w: fmt((d.total_ms * scale).max(1.0)),
            label: name.clone(),
            title: format!(
                "{name}: {} calls, {} ms total, {} ms longest",
                d.calls,
                fmt(d.total_ms),
                fmt(d.max_ms)
            ),
            error: false,
        })
        .collect();
    Some(Chart {
        width: fmt(WIDTH),
        height: fmt(rows.len() as f64 * ROW + ROW),
        label_x: fmt(LABEL - 4.0),
        bars,
        axis_end: format!("{} ms", fmt(max)),
        note: None,
    })
}

/// A coordinate with one decimal at most.
pub(super) fn fmt(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r.fract() == 0.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}
