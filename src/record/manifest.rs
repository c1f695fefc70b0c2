//! The pre-run baseline and the post-run artifact manifest (docs/spec/record.md
//! §3.2–§3.4), over one walk: paths + link kind, never following a symlink,
//! skipping any directory whose realpath leaves the work root.
//!
//! Not here: secret scrubbing of bodies (`super::secrets`), evaluating the
//! manifest (`crate::assert`).

use std::collections::{HashMap, HashSet};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::cassette::{BodyEncoding, LinkKind, ManifestEntry, PreRunOrigin, TruncationReason};
use crate::fingerprint::fixture::FixtureFile;

/// Default artifact body cap (bytes ≤ cap are inlined).
pub const DEFAULT_BODY_CAP: u64 = 65_536;

/// One walked path.
#[derive(Debug, Clone, PartialEq)]
pub struct Walked {
    /// Work-root-relative POSIX path.
    pub path: String,
    pub link_kind: Option<LinkKind>,
}

/// Walks `prefixes` under `work_root` (§3.4). Returns the entries and whether
/// the walk was incomplete (an error other than a missing root).
pub fn walk(work_root: &Path, prefixes: &[String]) -> (Vec<Walked>, bool) {
    let mut out = Vec::new();
    let mut incomplete = false;
    let Ok(real_root) = fs::canonicalize(work_root) else {
        return (out, true);
    };
    let mut visited = HashSet::new();
    for prefix in prefixes {
        let dir = work_root.join(prefix);
        walk_dir(
            &dir,
            prefix,
            &real_root,
            &mut visited,
            &mut out,
            &mut incomplete,
            true,
        );
    }
    (out, incomplete)
}

fn walk_dir(
    dir: &Path,
    rel: &str,
    real_root: &Path,
    visited: &mut HashSet<PathBuf>,
    out: &mut Vec<Walked>,
    incomplete: &mut bool,
    top: bool,
) {
    let real = match fs::canonicalize(dir) {
        Ok(r) => r,
        Err(e) => {
            let missing =
                e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR);
            if !(top && missing) {
                *incomplete = true;
            }
            return;
        }
    };
    if !real.starts_with(real_root) || !visited.insert(real) {
        return; // containment skip / cycle
    }
    let mut entries: Vec<_> = match fs::read_dir(dir) {
        Ok(rd) => rd.filter_map(Result::ok).collect(),
        Err(e) => {
            if !(top && e.raw_os_error() == Some(libc::ENOTDIR)) {
                *incomplete = true;
            }
            return;
        }
    };
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let child_rel = format!("{rel}/{name}");
        let Ok(meta) = fs::symlink_metadata(e.path()) else {
            *incomplete = true;
            continue;
        };
        let ft = meta.file_type();
        if ft.is_symlink() {
            out.push(Walked {
                path: child_rel,
                link_kind: Some(LinkKind::Symlink),
            });
        } else if ft.is_dir() {
            walk_dir(
                &e.path(),
                &child_rel,
                real_root,
                visited,
                out,
                incomplete,
                false,
            );
        } else if ft.is_file() {
            out.push(Walked {
                path: child_rel,
                link_kind: (meta.nlink() > 1).then_some(LinkKind::Hardlink),
            });
        }
    }
}

/// The pre-run baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct PreRun {
    pub paths: Vec<String>,
    pub hashes: Map<String, Value>,
    pub origin: PreRunOrigin,
}

/// Captures the baseline of `[...user_visible_roots, "uploads"]` (§3.2).
pub fn pre_run(work_root: &Path, user_visible_roots: &[String]) -> PreRun {
    let mut roots = user_visible_roots.to_vec();
    roots.push("uploads".into());
    let (entries, mut incomplete) = walk(work_root, &roots);
    let mut paths = Vec::new();
    let mut hashes = Map::new();
    let hash_cap = crate::fingerprint::fixture::prerun_hash_cap();
    for e in &entries {
        paths.push(e.path.clone());
        if e.link_kind == Some(LinkKind::Symlink) {
            continue;
        }
        let full = work_root.join(&e.path);
        let hash = match fs::metadata(&full) {
            Ok(m) if m.len() > hash_cap => Value::Null,
            Ok(_) => match fs::read(&full) {
                Ok(bytes) => Value::String(hex::encode(Sha256::digest(&bytes))),
                Err(_) => {
                    incomplete = true;
                    Value::Null
                }
            },
            Err(_) => {
                incomplete = true;
                Value::Null
            }
        };
        hashes.insert(e.path.clone(), hash);
    }
    paths.sort();
    PreRun {
        paths,
        hashes,
        origin: if incomplete {
            PreRunOrigin::LocalUnreadable
        } else {
            PreRunOrigin::LocalWalk
        },
    }
}

/// What [`fixture_hash_only`] did, for the recorder's notices.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FixtureInlining {
    /// Untouched fixture files whose (text) bodies stay inlined, and their bytes.
    pub inlined: usize,
    pub inlined_bytes: u64,
    /// Untouched binary fixture files recorded hash-only.
    pub hash_only: usize,
    /// Untouched text files holding a session-path token (rewritten by
    /// staging), recorded hash-only.
    pub hash_only_tokenised: usize,
}

impl FixtureInlining {
    /// The recorder's notices (none when the fixture left no file untouched).
    pub fn notices(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.inlined > 0 {
            out.push(format!(
                "workspace_fixture — {} untouched fixture file(s) ({} bytes) are inlined in the \
                 cassette: the step did not rewrite them",
                self.inlined, self.inlined_bytes
            ));
        }
        if self.hash_only > 0 {
            out.push(format!(
                "workspace_fixture — {} untouched binary file(s) recorded hash-only \
                 (truncationReason `fixture`): test input, not a deliverable",
                self.hash_only
            ));
        }
        if self.hash_only_tokenised > 0 {
            out.push(format!(
                "workspace_fixture — {} untouched session-path file(s) recorded hash-only \
                 (truncationReason `fixture`): staging wrote this run's session root into them",
                self.hash_only_tokenised
            ));
        }
        out
    }
}

/// An untouched binary `workspace_fixture` file is test input, not a
/// deliverable: its body is dropped (`truncationReason: "fixture"`), path,
/// size and digest kept; so is an untouched text file holding a session-path
/// token, whose staged body names this run's session (the original's
/// `fixtureBinariesHashOnly`, test/fixture-session-tokens.test.ts). Untouched
/// means its digest is the one the pre-run baseline took after staging; a
/// file the step rewrote keeps its body.
pub fn fixture_hash_only(
    entries: &mut [ManifestEntry],
    fixture: &[FixtureFile],
    pre: &PreRun,
) -> FixtureInlining {
    let mut out = FixtureInlining::default();
    let staged: HashMap<String, bool> = fixture
        .iter()
        .map(|f| (format!("outputs/{}", f.path), f.tokens))
        .collect();
    for e in entries.iter_mut() {
        let Some(&tokens) = staged.get(&e.path) else {
            continue;
        };
        let untouched = e.body.is_some()
            && pre.hashes.get(&e.path).and_then(Value::as_str) == Some(e.sha256.as_str());
        if !untouched {
            continue;
        }
        let binary = e.encoding == Some(BodyEncoding::Base64);
        if binary || tokens {
            e.body = None;
            e.encoding = None;
            e.truncated = Some(true);
            e.truncation_reason = Some(TruncationReason::Fixture);
            if binary {
                out.hash_only += 1;
            } else {
                out.hash_only_tokenised += 1;
            }
        } else {
            out.inlined += 1;
            out.inlined_bytes += e.bytes;
        }
    }
    out
}

fn under(path: &str, root: &str) -> bool {
    path == root || path.starts_with(&format!("{root}/"))
}

/// Builds the post-run manifest (§3.3): user-visible roots, then `uploads`.
pub fn post_run(
    work_root: &Path,
    user_visible_roots: &[String],
    readonly_roots: &[String],
    body_cap: u64,
) -> Vec<ManifestEntry> {
    let (visible, _) = walk(work_root, user_visible_roots);
    let (inputs, _) = walk(work_root, &["uploads".to_owned()]);
    let empty = |path: &str| ManifestEntry {
        path: path.to_owned(),
        bytes: 0,
        sha256: String::new(),
        body: None,
        encoding: None,
        truncated: None,
        truncation_reason: None,
        link_kind: None,
    };
    let mut out = Vec::new();
    for (walked, is_input) in visible
        .into_iter()
        .map(|w| (w, false))
        .chain(inputs.into_iter().map(|w| (w, true)))
    {
        let path = walked.path.as_str();
        if let Some(kind) = walked.link_kind {
            out.push(ManifestEntry {
                link_kind: Some(kind),
                ..empty(path)
            });
            continue;
        }
        let bytes = if crate::paths::stays_inside(path) {
            fs::read(work_root.join(path)).ok()
        } else {
            None
        };
        let Some(bytes) = bytes else {
            out.push(ManifestEntry {
                truncated: Some(true),
                truncation_reason: Some(TruncationReason::Unreadable),
                ..empty(path)
            });
            continue;
        };
        let mut entry = ManifestEntry {
            bytes: bytes.len() as u64,
            sha256: hex::encode(Sha256::digest(&bytes)),
            ..empty(path)
        };
        let reason = if is_input {
            Some(TruncationReason::Input)
        } else if readonly_roots.iter().any(|r| under(path, r)) {
            Some(TruncationReason::Readonly)
        } else if bytes.len() as u64 > body_cap {
            Some(TruncationReason::Size)
        } else {
            None
        };
        match reason {
            Some(r) => {
                entry.truncated = Some(true);
                entry.truncation_reason = Some(r);
            }
            None => match String::from_utf8(bytes) {
                Ok(text) => entry.body = Some(text),
                Err(e) => {
                    entry.body =
                        Some(base64::engine::general_purpose::STANDARD.encode(e.into_bytes()));
                    entry.encoding = Some(BodyEncoding::Base64);
                }
            },
        }
        out.push(entry);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_follows_the_rules_in_order() {
        let t = tempfile::tempdir().unwrap();
        let w = t.path();
        for d in ["outputs/sub", "uploads", "ro"] {
            fs::create_dir_all(w.join(d)).unwrap();
        }
        fs::write(w.join("outputs/a.md"), "hello").unwrap();
        fs::write(w.join("outputs/sub/bin.dat"), [0xffu8, 0x00, 0x01]).unwrap();
        fs::write(w.join("outputs/big.txt"), "x".repeat(11)).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", w.join("outputs/link")).unwrap();
        fs::write(w.join("uploads/in.csv"), "a,b").unwrap();
        fs::write(w.join("ro/r.txt"), "r").unwrap();
        let roots = vec!["outputs".to_owned(), "ro".to_owned()];
        let m = post_run(w, &roots, &["ro".to_owned()], 10);
        let doc = serde_json::to_value(&m).unwrap();
        let want = serde_json::json!([
            {"path": "outputs/a.md", "bytes": 5, "sha256": hex::encode(Sha256::digest(b"hello")), "body": "hello"},
            {"path": "outputs/big.txt", "bytes": 11, "sha256": hex::encode(Sha256::digest("x".repeat(11))), "truncated": true, "truncationReason": "size"},
            {"path": "outputs/link", "bytes": 0, "sha256": "", "linkKind": "symlink"},
            {"path": "outputs/sub/bin.dat", "bytes": 3, "sha256": hex::encode(Sha256::digest([0xffu8, 0, 1])), "body": "/wAB", "encoding": "base64"},
            {"path": "ro/r.txt", "bytes": 1, "sha256": hex::encode(Sha256::digest(b"r")), "truncated": true, "truncationReason": "readonly"},
            {"path": "uploads/in.csv", "bytes": 3, "sha256": hex::encode(Sha256::digest(b"a,b")), "truncated": true, "truncationReason": "input"},
        ]);
        assert_eq!(doc, want);
        let pre = pre_run(w, &roots);
        assert_eq!(pre.origin, PreRunOrigin::LocalWalk);
        assert!(pre.paths.contains(&"outputs/link".to_owned()));
        assert!(!pre.hashes.contains_key("outputs/link"));
        assert_eq!(
            pre.hashes["uploads/in.csv"],
            Value::String(hex::encode(Sha256::digest(b"a,b")))
        );
    }

    #[test]
    fn a_symlinked_directory_escaping_the_root_is_not_walked() {
        let t = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret"), "s").unwrap();
        fs::create_dir_all(t.path().join("outputs")).unwrap();
        std::os::unix::fs::symlink(outside.path(), t.path().join("outputs/escape")).unwrap();
        let (w, _) = walk(t.path(), &["outputs".to_owned()]);
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].link_kind, Some(LinkKind::Symlink));
        assert!(
            !crate::paths::stays_inside("../x")
                && !crate::paths::stays_inside("/etc")
                && crate::paths::stays_inside("a/../b")
        );
    }

    fn fixture_file(path: &str, tokens: bool) -> FixtureFile {
        FixtureFile {
            path: path.into(),
            sha256: String::new(),
            exec: false,
            mode: 0o644,
            bytes: 4,
            tokens,
        }
    }

    fn entry(path: &str, sha: &str, base64: bool) -> ManifestEntry {
        ManifestEntry {
            path: path.into(),
            bytes: 4,
            sha256: sha.into(),
            body: Some("AAEC".into()),
            encoding: base64.then_some(BodyEncoding::Base64),
            truncated: None,
            truncation_reason: None,
            link_kind: None,
        }
    }

    fn baseline_of(hashes: &[(&str, &str)]) -> PreRun {
        PreRun {
            paths: Vec::new(),
            hashes: hashes
                .iter()
                .map(|(p, h)| ((*p).to_owned(), Value::String((*h).to_owned())))
                .collect(),
            origin: PreRunOrigin::LocalWalk,
        }
    }

    /// test/cassette-fixture (fixtureBinariesHashOnly): an untouched binary
    /// fixture file goes hash-only, a rewritten one and text stay inline.
    #[test]
    fn untouched_binary_fixture_files_go_hash_only() {
        let mut entries = vec![
            entry("outputs/deck.pptx", "a", true),
            entry("outputs/chart.png", "b", true),
            entry("outputs/report.md", "c", false),
            entry("outputs/new.bin", "d", true),
        ];
        let pre = baseline_of(&[
            ("outputs/deck.pptx", "a"),
            ("outputs/chart.png", "old"),
            ("outputs/report.md", "c"),
        ]);
        let fixture = ["deck.pptx", "chart.png", "report.md"].map(|p| fixture_file(p, false));
        let note = fixture_hash_only(&mut entries, &fixture, &pre);
        assert_eq!(
            serde_json::to_value(&entries[0]).unwrap(),
            serde_json::json!({"path": "outputs/deck.pptx", "bytes": 4, "sha256": "a",
                "truncated": true, "truncationReason": "fixture"})
        );
        assert!(entries[1].body.is_some() && entries[2].body.is_some());
        assert!(entries[3].body.is_some());
        assert_eq!(
            note,
            FixtureInlining {
                inlined: 1,
                inlined_bytes: 4,
                hash_only: 1,
                hash_only_tokenised: 0
            }
        );
    }

    /// test/fixture-session-tokens.test.ts ("record: an untouched tokenised
    /// fixture file is recorded hash-only"): a session-path text file staging
    /// rewrote goes hash-only, other text stays inline, and one the step
    /// rewrote is a deliverable.
    #[test]
    fn untouched_session_path_text_files_go_hash_only() {
        let mut entries = vec![
            entry("outputs/a.json", "1", false),
            entry("outputs/b.md", "2", false),
            entry("outputs/c.json", "3", false),
        ];
        let pre = baseline_of(&[
            ("outputs/a.json", "1"),
            ("outputs/b.md", "2"),
            ("outputs/c.json", "changed"),
        ]);
        let fixture = [
            fixture_file("a.json", true),
            fixture_file("b.md", false),
            fixture_file("c.json", true),
        ];
        let note = fixture_hash_only(&mut entries, &fixture, &pre);
        assert_eq!(
            entries[0].truncation_reason,
            Some(TruncationReason::Fixture)
        );
        assert!(entries[0].body.is_none());
        assert_eq!(entries[1].body.as_deref(), Some("AAEC"));
        assert_eq!(entries[2].body.as_deref(), Some("AAEC"));
        assert_eq!(note.hash_only_tokenised, 1);
        assert!(note.notices()[1].contains("1 untouched session-path file(s) recorded hash-only"));
    }
}
