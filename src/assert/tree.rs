//! The replay work tree, seen through the manifest.
//!
//! CONTRACT with `replay` (which materialises the manifest): every
//! `artifacts[]` entry is written at its work-root-relative path under
//! `Context::work_root` — its decoded body, or an empty placeholder for a
//! body-less (truncated / link / unreadable) entry — and nothing else is
//! written there. Because that tree is a pure function of the manifest, the
//! manifest-bucket keys are evaluated from `cassette.artifacts()` directly
//! (existence = an entry or an ancestor directory of one; content = the
//! inlined body) and `work_root` is only used to name the root in messages.
//! This avoids re-reading disk and any symlink question: the materialised
//! tree contains no links (link entries are placeholders, reported as
//! evidence-unavailable).

use std::collections::{BTreeMap, HashMap, HashSet};

use base64::Engine as _;

use crate::cassette::{BodyEncoding, Cassette, ManifestEntry, TruncationReason};

/// Lexically resolves `p` under the root (`path.resolve` + `path.relative`):
/// `None` for an absolute path or one whose `..` escapes the root.
pub fn contained_rel(p: &str) -> Option<String> {
    if p.starts_with('/') || p.contains('\0') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(parts.join("/"))
}

/// The manifest as a file tree.
#[derive(Debug, Default)]
pub struct ReplayTree {
    /// normalised path → entry.
    pub files: HashMap<String, ManifestEntry>,
    dirs: HashSet<String>,
    /// Walk order (`readdir` sorted, depth-first) for `no_unexpected_files`.
    ordered: Vec<String>,
}

impl ReplayTree {
    /// Builds the tree from the cassette's `artifacts` (absent ⇒ empty).
    pub fn from_cassette(cassette: &Cassette) -> ReplayTree {
        let mut tree = ReplayTree::default();
        let mut ordered: BTreeMap<Vec<String>, String> = BTreeMap::new();
        for e in cassette.artifacts().unwrap_or_default() {
            let Some(rel) = contained_rel(&e.path) else {
                continue;
            };
            if rel.is_empty() {
                continue;
            }
            let segs: Vec<&str> = rel.split('/').collect();
            for i in 1..segs.len() {
                tree.dirs.insert(segs[..i].join("/"));
            }
            ordered.insert(segs.iter().map(|s| (*s).to_owned()).collect(), rel.clone());
            tree.files.insert(rel, e);
        }
        tree.ordered = ordered.into_values().collect();
        tree
    }

    /// Whether `rel` (normalised) exists in the materialised tree.
    pub fn exists(&self, rel: &str) -> bool {
        rel.is_empty() || self.files.contains_key(rel) || self.dirs.contains(rel)
    }

    /// Whether `rel` was a symlink/hardlink at record time.
    pub fn is_link(&self, rel: &str) -> bool {
        self.files.get(rel).is_some_and(|e| e.link_kind.is_some())
    }

    /// `Some(reason)` when `rel` is a truncated (body-less) entry.
    pub fn truncation(&self, rel: &str) -> Option<Option<TruncationReason>> {
        self.files
            .get(rel)
            .filter(|e| e.truncated == Some(true))
            .map(|e| e.truncation_reason)
    }

    /// The materialised bytes of a file entry (decoded body; empty placeholder otherwise).
    pub fn bytes(&self, rel: &str) -> Option<Vec<u8>> {
        let e = self.files.get(rel)?;
        let Some(body) = &e.body else {
            return Some(Vec::new());
        };
        Some(match e.encoding {
            Some(BodyEncoding::Base64) => base64::engine::general_purpose::STANDARD
                .decode(body)
                .unwrap_or_default(),
            _ => body.as_bytes().to_vec(),
        })
    }

    /// Files under `prefixes`, in the original's walk order (per prefix,
    /// depth-first with sorted directory entries), each once.
    pub fn walk(&self, prefixes: &[String]) -> Vec<String> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for prefix in prefixes {
            let Some(p) = contained_rel(prefix) else {
                continue;
            };
            for path in &self.ordered {
                let under = p.is_empty() || path.starts_with(&format!("{p}/"));
                if under && seen.insert(path.clone()) {
                    out.push(path.clone());
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containment_is_lexical() {
        assert_eq!(
            contained_rel("outputs/./a//b.md").as_deref(),
            Some("outputs/a/b.md")
        );
        assert_eq!(contained_rel("outputs/../x").as_deref(), Some("x"));
        assert_eq!(contained_rel("outputs/../../x"), None);
        assert_eq!(contained_rel("/etc/passwd"), None);
    }
}
