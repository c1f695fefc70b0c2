//! Readers of tool inputs and outputs the record draws facts from: a Read's
//! path (and the skill file it names), a WebSearch result's links, a
//! TaskCreate result's task id, a present_files call's files. Pure string
//! and JSON parsing; what the facts mean is the folds' business.

use serde_json::{Map, Value};

use super::run::WebSearchLink;
use crate::js::coerce::js_string;

/// `String(input.file_path ?? "")` of a Read call.
pub(super) fn read_file_path(inp: &Map<String, Value>) -> String {
    inp.get("file_path")
        .filter(|v| !v.is_null())
        .map(js_string)
        .unwrap_or_default()
}

/// The skill-relative `references/…` or `scripts/…` path of a file under a
/// plugin tree (`.local-plugins/` or `.remote-plugins/`); `None` otherwise.
pub(super) fn skill_reference_read_path(file_path: &str) -> Option<String> {
    if !file_path.contains(".local-plugins/") && !file_path.contains(".remote-plugins/") {
        return None;
    }
    // `/((?:references|scripts)\/.+)$`: the first such segment wins; `.`
    // stops at a line break, so the match must run to the end without one.
    let mut from = 0;
    while let Some(i) = file_path[from..].find('/') {
        let at = from + i + 1;
        let rest = &file_path[at..];
        for dir in ["references/", "scripts/"] {
            if let Some(tail) = rest.strip_prefix(dir)
                && !tail.is_empty()
                && !rest.contains(['\n', '\r', '\u{2028}', '\u{2029}'])
            {
                return Some(rest.to_owned());
            }
        }
        from = at;
    }
    None
}

/// The `{title, url}` pairs of the JSON array after the first `Links: ` in
/// a WebSearch result; `None` when there is none, it is cut off, or it is
/// not a JSON array. Entries that are not objects, or have no url, are
/// dropped.
pub(super) fn web_search_links(text: &str) -> Option<Vec<WebSearchLink>> {
    let start = text.find("Links: [")? + "Links: ".len();
    let bytes = text.as_bytes();
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    let mut end = None;
    for (i, &b) in bytes.iter().enumerate().skip(start) {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' => depth += 1,
            b']' => {
                depth -= 1;
                if depth == 0 {
                    end = Some(i + 1);
                    break;
                }
            }
            _ => {}
        }
    }
    let arr: Value = serde_json::from_str(&text[start..end?]).ok()?;
    let field = |o: &Map<String, Value>, k: &str| {
        o.get(k)
            .filter(|v| !v.is_null())
            .map(js_string)
            .unwrap_or_default()
    };
    Some(
        arr.as_array()?
            .iter()
            .filter_map(|r| match r {
                Value::Object(o) => Some(WebSearchLink {
                    title: field(o, "title"),
                    url: field(o, "url"),
                }),
                // `typeof [] === "object"`: an array entry has neither key.
                Value::Array(_) => Some(WebSearchLink {
                    title: String::new(),
                    url: String::new(),
                }),
                _ => None,
            })
            .filter(|l| !l.url.is_empty())
            .collect(),
    )
}

/// `^Task #(\S+) created successfully`.
pub(super) fn task_created_id(text: &str) -> Option<String> {
    let rest = text.strip_prefix("Task #")?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let (id, tail) = rest.split_at(end);
    if id.is_empty() || !tail.starts_with(" created successfully") {
        return None;
    }
    Some(id.to_owned())
}

/// The `files[].file_path`s of a present_files call and how many entries
/// had none (a non-array `files` counts as one malformed entry).
pub(super) fn present_files_input(input: &Value) -> (Vec<String>, u64) {
    match input.get("files") {
        None => (Vec::new(), 0),
        Some(Value::Array(items)) => {
            let mut files = Vec::new();
            let mut bad = 0;
            for f in items {
                match f.get("file_path").and_then(Value::as_str) {
                    Some(p) => files.push(p.to_owned()),
                    None => bad += 1,
                }
            }
            (files, bad)
        }
        Some(_) => (Vec::new(), 1),
    }
}
