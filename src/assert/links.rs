//! `computer://` links in the transcript and their resolution on replay
//! (cowork-harness `src/run/computer-links.ts`, replay mode only).

use super::tree::{ReplayTree, contained_rel};

/// One extracted link (`raw` is percent-decoded per segment).
#[derive(Debug, Clone, PartialEq)]
pub struct ComputerLink {
    pub raw: String,
    pub vm_shaped: bool,
}

/// Everything replay knows to resolve host-shaped links.
pub struct LinkResolution<'a> {
    /// `folderPrefixMap` as `(from, mount)`; `None` when the cassette has none.
    pub folder_prefixes: Option<Vec<(String, String)>>,
    pub tree: &'a ReplayTree,
    /// The work root as printed in messages.
    pub root_display: &'a str,
}

/// `/^\/sessions\/[^/]+\/mnt\//` — returns the length of the prefix.
fn vm_mount_prefix_len(s: &str) -> Option<usize> {
    let rest = s.strip_prefix("/sessions/")?;
    let slash = rest.find('/')?;
    if slash == 0 {
        return None;
    }
    rest[slash..].strip_prefix("/mnt/")?;
    Some("/sessions/".len() + slash + "/mnt/".len())
}

fn percent_decode_segment(seg: &str) -> String {
    // decodeURIComponent: any malformed escape or invalid UTF-8 keeps the segment as given.
    if !seg.contains('%') {
        return seg.to_owned();
    }
    let bytes = seg.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = seg.get(i + 1..i + 3);
            match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                Some(b) => {
                    out.push(b);
                    i += 3;
                }
                None => return seg.to_owned(),
            }
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| seg.to_owned())
}

fn make_link(payload: &str) -> ComputerLink {
    let raw = payload
        .split('/')
        .map(percent_decode_segment)
        .collect::<Vec<_>>()
        .join("/");
    let vm_shaped = vm_mount_prefix_len(&raw).is_some();
    ComputerLink { raw, vm_shaped }
}

fn is_js_space(c: char) -> bool {
    c.is_whitespace() || c == '\u{FEFF}'
}

/// End (byte index, exclusive) of a path token starting at `start`.
fn scan_token_end(text: &str, start: usize, bare: bool) -> usize {
    let mut depth = 0usize;
    for (off, ch) in text[start..].char_indices() {
        let i = start + off;
        match ch {
            '(' => depth += 1,
            ')' => {
                if depth == 0 {
                    return i;
                }
                depth -= 1;
            }
            c if depth == 0 && bare && (matches!(c, '"' | '`' | ']' | '\\') || is_js_space(c)) => {
                return i;
            }
            _ => {}
        }
    }
    text.len()
}

/// Every `computer://` link of `text` (backtick, markdown and bare forms).
pub fn extract(text: &str) -> Vec<ComputerLink> {
    const SCHEME: &str = "computer://";
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(found) = text[pos..].find(SCHEME) {
        let at = pos + found;
        // Which alternative of
        // /(`computer:\/\/[^`]+`)|(\]\(computer:\/\/)|(computer:\/\/)/
        // matches first:
        // a match starting one or two bytes earlier wins over the bare scheme.
        let start = at + SCHEME.len();
        if at > pos
            && text.as_bytes()[at - 1] == b'`'
            && let Some(close) = text[start..].find('`')
            && close > 0
        {
            out.push(make_link(&text[start..start + close]));
            pos = start + close + 1;
            continue;
        }
        if at >= pos + 2 && &text[at - 2..at] == "](" {
            let end = scan_token_end(text, start, false);
            if text[end..].starts_with(')') {
                out.push(make_link(&text[start..end]));
                pos = end + 1;
            } else {
                let bare_end = scan_token_end(text, start, true);
                out.push(make_link(&text[start..bare_end]));
                pos = bare_end;
            }
            continue;
        }
        let end = scan_token_end(text, start, true);
        out.push(make_link(&text[start..end]));
        pos = end.max(start);
    }
    out
}

/// `normalizeHostShapedForReplay`.
fn normalize_host_shaped(host: &str, prefixes: Option<&[(String, String)]>) -> Option<String> {
    for name in ["outputs", "uploads"] {
        let marker = format!("/mnt/{name}/");
        if let Some(idx) = host.rfind(&marker) {
            return Some(format!("{name}/{}", &host[idx + marker.len()..]));
        }
        if host.ends_with(&format!("/mnt/{name}")) {
            return Some(name.to_owned());
        }
    }
    let mut by_longest: Vec<&(String, String)> = prefixes?.iter().collect();
    by_longest.sort_by_key(|e| std::cmp::Reverse(e.0.len()));
    for (prefix, mount) in by_longest {
        if host == prefix {
            return Some(mount.clone());
        }
        if let Some(rest) = host.strip_prefix(&format!("{prefix}/")) {
            return Some(format!("{mount}/{rest}"));
        }
    }
    None
}

fn join_display(root: &str, rel: &str) -> String {
    if rel.is_empty() {
        root.to_owned()
    } else {
        format!("{}/{rel}", root.trim_end_matches('/'))
    }
}

/// `resolveComputerLink` (replay mode): `(resolved, checked-description)`.
pub fn resolve(link: &ComputerLink, res: &LinkResolution<'_>) -> (bool, String) {
    if let Some(n) = vm_mount_prefix_len(&link.raw) {
        let rel = &link.raw[n..];
        let Some(norm) = contained_rel(rel) else {
            return (false, format!("unsafe path (escapes the work root): {rel}"));
        };
        if res.tree.is_link(&norm) {
            return (
                false,
                format!(
                    "replay: \"{rel}\" was a symlink/hardlink at record time — resolution not \
                        captured; re-record or assert on the deliverable"
                ),
            );
        }
        let abs = join_display(res.root_display, &norm);
        return (res.tree.exists(&norm), format!("work tree: {abs}"));
    }
    let Some(rel) = normalize_host_shaped(&link.raw, res.folder_prefixes.as_deref()) else {
        if res.folder_prefixes.is_none() {
            return (
                false,
                "evidence unavailable: this cassette has no persisted folder-mount map — a v9+ \
                    cassette must carry one, and replay refuses to re-derive it from the current \
                    session (which may have drifted since record)"
                    .into(),
            );
        }
        return (
            false,
            "no recorded folder/outputs/uploads prefix matched this host path (replay cannot probe \
                the live filesystem)".into(),
        );
    };
    let Some(norm) = contained_rel(&rel) else {
        return (
            false,
            format!("unsafe normalized path (escapes the work root): {rel}"),
        );
    };
    if res.tree.is_link(&norm) {
        return (
            false,
            format!(
                "replay: \"{rel}\" was a symlink/hardlink at record time — resolution not \
                    captured; re-record or assert on the deliverable"
            ),
        );
    }
    (
        res.tree.exists(&norm),
        format!("replay manifest (normalized from host path): {rel}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extracts_all_three_forms() {
        let t = "see [r](computer:///sessions/s1/mnt/outputs/a%20b.md) and `computer:///x/y.md` or \
            computer:///h/mnt/outputs/z.md, done";
        let l = extract(t);
        assert_eq!(l.len(), 3);
        assert_eq!(l[0].raw, "/sessions/s1/mnt/outputs/a b.md");
        assert!(l[0].vm_shaped);
        assert_eq!(l[1].raw, "/x/y.md");
        assert_eq!(l[2].raw, "/h/mnt/outputs/z.md,");
    }

    #[test]
    fn markdown_links_balance_parens() {
        let l = extract("[x](computer:///sessions/s/mnt/outputs/report (draft).pdf)");
        assert_eq!(l[0].raw, "/sessions/s/mnt/outputs/report (draft).pdf");
    }

    #[test]
    fn host_paths_normalise_by_marker_then_prefix_map() {
        assert_eq!(
            normalize_host_shaped("/Users/a/x/mnt/outputs/r.md", None).as_deref(),
            Some("outputs/r.md")
        );
        let map = vec![("/Users/a/proj".to_owned(), "project".to_owned())];
        assert_eq!(
            normalize_host_shaped("/Users/a/proj/n.txt", Some(&map)).as_deref(),
            Some("project/n.txt")
        );
        assert_eq!(normalize_host_shaped("/elsewhere", Some(&map)), None);
    }
}
