//! Hash-ignore globs: `<root>/.cowork-hashignore` lines and the session's
//! `staleness.hash_ignore` (docs/spec/fingerprint.md §1.9), compiled to regexes
//! tested against root-relative paths.
//!
//! This is upstream's own small gitignore-like dialect (no negation, `?` is a
//! literal), not gitignore; it deliberately does not use `globset`, whose
//! semantics differ.

use std::path::Path;

use regex::Regex;

/// A compiled set of ignore patterns.
#[derive(Debug, Clone, Default)]
pub struct IgnoreSet {
    rules: Vec<Regex>,
}

impl IgnoreSet {
    /// Compiles `patterns` (blank/`#` lines and empty patterns yield no rule).
    pub fn new<'a>(patterns: impl IntoIterator<Item = &'a str>) -> Self {
        IgnoreSet {
            rules: patterns.into_iter().filter_map(compile).collect(),
        }
    }

    /// The rules of `<root>/.cowork-hashignore` (absent/unreadable ⇒ none)
    /// plus `extra` (the session's `staleness.hash_ignore`).
    pub fn for_root(root: &Path, extra: &[String]) -> Self {
        let file = std::fs::read(root.join(".cowork-hashignore"))
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        Self::new(file.split('\n').chain(extra.iter().map(String::as_str)))
    }

    /// True when `rel` (a file or a directory) is ignored.
    pub fn is_ignored(&self, rel: &str) -> bool {
        self.rules.iter().any(|r| r.is_match(rel))
    }
}

fn compile(pattern: &str) -> Option<Regex> {
    let p = pattern.trim();
    if p.is_empty() || p.starts_with('#') {
        return None;
    }
    let mut p = p.trim_end_matches('/');
    if p.is_empty() {
        return None;
    }
    let rewritten;
    if let Some(rest) = p.strip_prefix("/**/") {
        rewritten = format!("**/{rest}");
        p = &rewritten;
    }
    let mut any_depth = false;
    if let Some(rest) = p.strip_prefix("**/") {
        any_depth = true;
        p = rest;
    }
    let mut leading_slash = false;
    if let Some(rest) = p.strip_prefix('/') {
        leading_slash = true;
        p = rest;
    }
    if p.is_empty() {
        return None;
    }
    let anchored = (leading_slash || p.contains('/')) && !any_depth;
    let mut body = String::new();
    let mut chars = p.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' if chars.peek() == Some(&'*') => {
                chars.next();
                body.push_str(".*");
            }
            '*' => body.push_str("[^/]*"),
            // `.` must not match `\n` (JS semantics), which is the regex
            // crate's default too.
            '.' | '+' | '^' | '$' | '{' | '}' | '(' | ')' | '|' | '[' | ']' | '\\' | '?' => {
                body.push('\\');
                body.push(c);
            }
            _ => body.push_str(&regex::escape(&c.to_string())),
        }
    }
    let prefix = if anchored { "^" } else { "^(?:.*/)?" };
    // `\z`: end of input, like JS `$` without the `m` flag.
    Regex::new(&format!("{prefix}{body}(?:/.*)?\\z")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dialect() {
        let s = IgnoreSet::new([
            "# c",
            "*.log",
            "/docs",
            "ignored-dir/",
            "  ",
            "docs/api",
            "**/*.md",
            "a?b",
        ]);
        assert!(s.is_ignored("x.log"));
        assert!(s.is_ignored("a/b.log"));
        assert!(s.is_ignored("docs"));
        assert!(s.is_ignored("docs/d.txt"));
        assert!(!s.is_ignored("sub/docs/kept.txt"));
        assert!(s.is_ignored("x/ignored-dir/f"));
        assert!(s.is_ignored("docs/api/x"));
        assert!(s.is_ignored("deep/er/r.md"));
        assert!(s.is_ignored("a?b"));
        assert!(!s.is_ignored("axb"));
        assert!(!s.is_ignored("keep.txt"));
        let t = IgnoreSet::new(["tests"]);
        assert!(t.is_ignored("tests") && t.is_ignored("a/tests/b") && !t.is_ignored("atests"));
    }
}
