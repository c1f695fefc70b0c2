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
//!
//! [`ManifestView`] is everything the manifest keys consult — this tree, the
//! pre-run baseline, the post-run hashes, the user-visible roots and the
//! files under them — read from the cassette once per evaluation context
//! (`Context::manifest`) and shared by its assertions, rather than
//! re-deserialised per assertion (a 2,000-artifact manifest made that the
//! cost of a replay).

use std::collections::{HashMap, HashSet};

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
    /// Walk order (`readdir` sorted, depth-first) for `no_unexpected_files`;
    /// also answers "is this a directory" by binary search, rather than a
    /// set of every ancestor (quadratic in a hostile path's depth).
    ordered: Vec<String>,
}

/// Everything the manifest-bucket keys read from a cassette, built once per
/// evaluation context (see [`crate::assert::Context::manifest`]).
#[derive(Debug)]
pub struct ManifestView {
    /// The materialised tree (`artifacts`, absent ⇒ empty).
    pub tree: ReplayTree,
    /// `preRunPaths` with `\` read as `/`; `None` when absent.
    pub pre_run_paths: Option<HashSet<String>>,
    /// `preRunHashes` in document order; `None` when absent.
    pub pre_run_hashes: Option<Vec<(String, Option<String>)>>,
    /// `artifacts[].path` as recorded → its last non-empty `sha256`.
    post_hashes: HashMap<String, String>,
    /// `userVisibleRoots`, or the legacy `["outputs", ".projects"]`.
    pub user_visible_roots: Vec<String>,
    /// The files under `user_visible_roots`, in walk order
    /// (`tree.walk(&user_visible_roots)`).
    pub user_visible_files: Vec<String>,
}

impl ManifestView {
    /// Reads the manifest fields of `cassette` (each once).
    pub fn from_cassette(cassette: &Cassette) -> ManifestView {
        let artifacts = cassette.artifacts().unwrap_or_default();
        // The last entry with a hash wins (a path listed twice keeps its
        // final state), as a reverse scan for the first hashed entry would.
        let mut post_hashes = HashMap::new();
        for e in &artifacts {
            if !e.sha256.is_empty() {
                post_hashes.insert(e.path.clone(), e.sha256.clone());
            }
        }
        let tree = ReplayTree::from_entries(artifacts);
        let user_visible_roots = cassette
            .user_visible_roots()
            .unwrap_or_else(|| vec!["outputs".into(), ".projects".into()]);
        let user_visible_files = tree.walk(&user_visible_roots);
        ManifestView {
            tree,
            pre_run_paths: cassette.pre_run_paths().map(|paths| {
                paths
                    .iter()
                    .map(|p| crate::paths::forward_slashes(p).into_owned())
                    .collect()
            }),
            pre_run_hashes: cassette.pre_run_hashes(),
            post_hashes,
            user_visible_roots,
            user_visible_files,
        }
    }

    /// Whether the run wrote `rel` (normalised), decided as cowork-harness
    /// v14 decides `authored: true`: a path absent from `preRunHashes` was
    /// created by the run; one present with the same post-run sha256 is
    /// untouched (identical bytes rewritten read as untouched: there is no
    /// write signal).
    pub fn authorship(&self, rel: &str) -> Authorship {
        let Some(hashes) = &self.pre_run_hashes else {
            return Authorship::NoBaseline;
        };
        let Some((_, before)) = hashes.iter().find(|(path, _)| path == rel) else {
            return Authorship::Written;
        };
        let Some(before) = before else {
            return Authorship::Scrubbed;
        };
        match self.post_hash(rel) {
            Some(after) if after == before => Authorship::Untouched,
            _ => Authorship::Written,
        }
    }

    /// The post-run hash of `path` (as recorded in `artifacts[].path`):
    /// `None` when no entry for it carries a non-empty `sha256`.
    pub fn post_hash(&self, path: &str) -> Option<&str> {
        self.post_hashes.get(path).map(String::as_str)
    }
}

/// Whether the run wrote a file ([`ManifestView::authorship`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Authorship {
    /// Created or rewritten by the run.
    Written,
    /// There before the run, with the same content after it.
    Untouched,
    /// The cassette has no pre-run hash manifest (`preRunHashes`).
    NoBaseline,
    /// The file's pre-run hash was scrubbed at record time.
    Scrubbed,
}

impl ReplayTree {
    /// Builds the tree from the cassette's `artifacts` (absent ⇒ empty).
    pub fn from_cassette(cassette: &Cassette) -> ReplayTree {
        ReplayTree::from_entries(cassette.artifacts().unwrap_or_default())
    }

    /// Builds the tree from manifest entries.
    pub fn from_entries(entries: Vec<ManifestEntry>) -> ReplayTree {
        let mut tree = ReplayTree::default();
        for e in entries {
            let Some(rel) = contained_rel(&e.path) else {
                continue;
            };
            if rel.is_empty() {
                continue;
            }
            tree.files.insert(rel, e);
        }
        // Depth-first with sorted entries = segment-wise lexicographic order.
        tree.ordered = tree.files.keys().cloned().collect();
        tree.ordered
            .sort_unstable_by(|a, b| a.split('/').cmp(b.split('/')));
        tree
    }

    /// Whether `rel` (normalised) exists in the materialised tree: the root,
    /// a file, or a directory — an ancestor of a file.
    pub fn exists(&self, rel: &str) -> bool {
        rel.is_empty() || self.files.contains_key(rel) || self.is_dir(rel)
    }

    /// Whether some file lies under `rel/`. In segment-wise order the files
    /// under `rel/` directly follow `rel` itself, so the first path ordered
    /// after `rel` is under it if any is.
    fn is_dir(&self, rel: &str) -> bool {
        let after = self
            .ordered
            .partition_point(|p| p.split('/').cmp(rel.split('/')) != std::cmp::Ordering::Greater);
        self.ordered.get(after).is_some_and(|p| {
            p.len() > rel.len() && p.starts_with(rel) && p.as_bytes()[rel.len()] == b'/'
        })
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
            let dir = format!("{p}/");
            for path in &self.ordered {
                let under = p.is_empty() || path.starts_with(&dir);
                if under && seen.insert(path.as_str()) {
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

    fn cassette(doc: serde_json::Value) -> Cassette {
        Cassette::unchecked(
            "t.cassette.json",
            doc.as_object().cloned().unwrap_or_default(),
            12,
        )
    }

    #[test]
    fn manifest_view_reads_each_field_once_as_the_keys_did() {
        let c = cassette(serde_json::json!({
            "artifacts": [
                {"path": "in/a.csv", "bytes": 1, "sha256": "h1"},
                {"path": "in/a.csv", "bytes": 0, "sha256": ""},
                {"path": "in/b.csv", "bytes": 1, "sha256": "h2"},
                {"path": "in/b.csv", "bytes": 1, "sha256": "h3"},
                {"path": "out/z.md", "bytes": 1, "sha256": "h4", "body": "z"},
                {"path": "out/d/y.md", "bytes": 1, "sha256": "h5", "body": "y"},
                {"path": "out/d.md", "bytes": 1, "sha256": "h7", "body": "d"},
                {"path": "elsewhere/x.md", "bytes": 1, "sha256": "h6", "body": "x"}
            ],
            "preRunPaths": ["in\\a.csv", "in/b.csv"],
            "preRunHashes": {"in/b.csv": "h2", "in/a.csv": null},
            "userVisibleRoots": ["out"]
        }));
        let view = ManifestView::from_cassette(&c);
        // The last entry carrying a hash wins; an empty hash is no hash.
        assert_eq!(view.post_hash("in/a.csv"), Some("h1"));
        assert_eq!(view.post_hash("in/b.csv"), Some("h3"));
        assert_eq!(view.post_hash("in/c.csv"), None);
        let pre = view.pre_run_paths.as_ref().expect("present");
        assert!(pre.contains("in/a.csv") && pre.contains("in/b.csv"));
        assert_eq!(
            view.pre_run_hashes,
            Some(vec![
                ("in/b.csv".to_owned(), Some("h2".to_owned())),
                ("in/a.csv".to_owned(), None)
            ])
        );
        assert_eq!(view.user_visible_roots, ["out"]);
        // Walk order is per directory, sorted: `d/` before `d.md`, although
        // "out/d.md" < "out/d/y.md" as strings.
        assert_eq!(
            view.user_visible_files,
            ["out/d/y.md", "out/d.md", "out/z.md"]
        );
        assert_eq!(
            view.user_visible_files,
            view.tree.walk(&view.user_visible_roots)
        );

        // Existence: the root, files, and every ancestor directory of a file.
        for present in [
            "",
            "out",
            "out/d",
            "out/d/y.md",
            "out/d.md",
            "in",
            "elsewhere",
        ] {
            assert!(view.tree.exists(present), "{present}");
        }
        for absent in [
            "ou",
            "out/d/y",
            "out/d.m",
            "out/z.md/x",
            "outs",
            "z",
            "in/a",
        ] {
            assert!(!view.tree.exists(absent), "{absent}");
        }

        let legacy = ManifestView::from_cassette(&cassette(serde_json::json!({})));
        assert!(legacy.tree.exists("") && !legacy.tree.exists("outputs"));
        assert_eq!(legacy.user_visible_roots, ["outputs", ".projects"]);
        assert!(legacy.pre_run_paths.is_none() && legacy.pre_run_hashes.is_none());
    }

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
