//! The diff view of two recordings: `diff`'s comparison, view by view
//! (tools, answers, transcript, files, assertions, meta), each change with
//! its before | after side by side and, for text, its unified diff.
//! Values are masked by `diff::Normalizer` as `reel diff` masks them; the
//! placeholders are marked.

use askama::Template;
use serde_json::Value;

use super::text::{Segment, segments};
use super::{Chrome, Clip, RenderError};
use crate::diff::{Change, ChangeKind, Diff};

/// One view of the comparison.
pub struct ViewSection {
    pub name: &'static str,
    pub advisory: bool,
    pub identical: bool,
    pub changes: Vec<ChangeView>,
}

/// One change, ready to show.
pub struct ChangeView {
    pub kind: &'static str,
    pub item: String,
    pub path: String,
    pub before: Option<Vec<Segment>>,
    pub after: Option<Vec<Segment>>,
    /// Unified-diff lines with their class (`add`, `del`, `hunk`, ``).
    pub unified: Vec<(&'static str, String)>,
}

#[derive(Template)]
#[template(path = "diff.html")]
struct Page<'a> {
    chrome: Chrome,
    a: String,
    b: String,
    summary: String,
    identical: bool,
    normalized: bool,
    views: &'a [ViewSection],
}

/// Changes shown per view at most (a rewritten recording can differ everywhere).
const MAX_CHANGES: usize = 500;

/// The diff view of `diff` as one HTML page.
pub fn render(diff: &Diff, cap: usize) -> Result<String, RenderError> {
    let views: Vec<ViewSection> = diff
        .views
        .iter()
        .map(|v| ViewSection {
            name: v.view.name(),
            advisory: v.advisory,
            identical: v.identical,
            changes: v
                .changes
                .iter()
                .take(MAX_CHANGES)
                .map(|c| change(c, cap))
                .collect(),
        })
        .collect();
    Page {
        chrome: Chrome::new(format!(
            "reel report — diff {} {}",
            diff.a.display(),
            diff.b.display()
        )),
        a: diff.a.display().to_string(),
        b: diff.b.display().to_string(),
        summary: diff.summary(),
        identical: diff.identical,
        normalized: diff.normalized,
        views: &views,
    }
    .render()
}

fn change(c: &Change, cap: usize) -> ChangeView {
    let side = |v: &Option<Value>| {
        v.as_ref().map(|v| {
            let text = match v {
                Value::String(s) => s.clone(),
                other => serde_json::to_string_pretty(other).unwrap_or_default(),
            };
            segments(&Clip::new(&text, cap).text)
        })
    };
    let unified = c
        .unified
        .as_deref()
        .map(|u| {
            Clip::new(u, cap * 4)
                .text
                .lines()
                .map(|l| {
                    let class = match l.as_bytes().first() {
                        Some(b'+') if !l.starts_with("+++") => "add",
                        Some(b'-') if !l.starts_with("---") => "del",
                        Some(b'@') => "hunk",
                        _ => "",
                    };
                    (class, l.to_owned())
                })
                .collect()
        })
        .unwrap_or_default();
    ChangeView {
        kind: match c.kind {
            ChangeKind::Added => "added",
            ChangeKind::Removed => "removed",
            ChangeKind::Changed => "changed",
        },
        item: c.item.clone(),
        path: c.path.clone().unwrap_or_default(),
        before: if c.unified.is_some() {
            None
        } else {
            side(&c.before)
        },
        after: if c.unified.is_some() {
            None
        } else {
            side(&c.after)
        },
        unified,
    }
}
