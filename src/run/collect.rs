//! The pre-run baseline and the post-run artifact manifest (docs/spec/record.md
//! §3.2–§3.4), over one walk: paths + link kind, never following a symlink,
//! skipping any directory whose realpath leaves the work root.
//!
//! Not here: secret scrubbing of bodies (`super::secrets`), evaluating the
//! manifest (`crate::assert`).

use std::collections::{HashMap, HashSet};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Instant;

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

/// Bounds on reel's own work over a run's files, which happens outside the
/// sandbox and after the agent is gone: the tree is the agent's to shape (a
/// 1,400-level directory, a million files, a sparse file of terabytes).
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Directory levels below a root (deeper ones are not walked).
    pub max_depth: usize,
    /// Paths walked in all.
    pub max_entries: usize,
    /// Bytes read to hash, in all (a file that would pass it is not read).
    pub max_hashed_bytes: u64,
    /// When the work stops, what is left recorded unread.
    pub deadline: Option<Instant>,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            max_depth: 128,
            max_entries: 100_000,
            max_hashed_bytes: 1 << 30,
            deadline: None,
        }
    }
}

impl Budget {
    fn past_deadline(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}

/// What a bounded walk or manifest left out, for the run's notices.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrun {
    /// Directories not entered: deeper than `max_depth`.
    pub too_deep: usize,
    /// Paths not walked: past `max_entries`.
    pub over_entries: bool,
    /// Files not read: past `max_hashed_bytes`.
    pub not_hashed: usize,
    /// The deadline passed: the rest was not walked or read.
    pub out_of_time: bool,
}

impl Overrun {
    /// The run's notices (none when the budget held).
    pub fn notices(&self, budget: &Budget) -> Vec<String> {
        let mut out = Vec::new();
        if self.too_deep > 0 {
            out.push(format!(
                "artifact manifest — {} directory(ies) deeper than {} levels not walked (over \
                 budget): their files are not in the manifest",
                self.too_deep, budget.max_depth
            ));
        }
        if self.over_entries {
            out.push(format!(
                "artifact manifest — more than {} paths: the rest not walked (over budget)",
                budget.max_entries
            ));
        }
        if self.not_hashed > 0 {
            out.push(format!(
                "artifact manifest — {} file(s) not read (over budget: {} bytes hashed in all); \
                 recorded with their size, truncationReason `unreadable`",
                self.not_hashed, budget.max_hashed_bytes
            ));
        }
        if self.out_of_time {
            out.push(
                "artifact manifest — the run's deadline passed: the files left were not read \
                 (truncationReason `unreadable`)"
                    .into(),
            );
        }
        out
    }
}

/// Walks `prefixes` under `work_root` (§3.4). Returns the entries and whether
/// the walk was incomplete (an error other than a missing root).
pub fn walk(work_root: &Path, prefixes: &[String]) -> (Vec<Walked>, bool) {
    let (out, incomplete, _) = walk_bounded(work_root, prefixes, &Budget::default());
    (out, incomplete)
}

/// [`walk`] under `budget`. Only each prefix is resolved to its real path
/// (the containment check); below it the walk never follows a symlink, so
/// a directory found is inside, and no path is resolved again per level
/// (which made a deep tree quadratic). Cycles (a bind mount) are caught by
/// device and inode.
pub fn walk_bounded(
    work_root: &Path,
    prefixes: &[String],
    budget: &Budget,
) -> (Vec<Walked>, bool, Overrun) {
    let mut walker = Walker {
        out: Vec::new(),
        incomplete: false,
        visited: HashSet::new(),
        overrun: Overrun::default(),
        budget,
    };
    let Ok(real_root) = fs::canonicalize(work_root) else {
        return (walker.out, true, walker.overrun);
    };
    for prefix in prefixes {
        let dir = work_root.join(prefix);
        let real = match fs::canonicalize(&dir) {
            Ok(r) => r,
            Err(e) => {
                let missing = e.kind() == std::io::ErrorKind::NotFound
                    || e.raw_os_error() == Some(libc::ENOTDIR);
                walker.incomplete |= !missing;
                continue;
            }
        };
        if !real.starts_with(&real_root) {
            continue; // containment skip
        }
        walker.dir(&dir, prefix, 0);
    }
    (walker.out, walker.incomplete, walker.overrun)
}

struct Walker<'a> {
    out: Vec<Walked>,
    incomplete: bool,
    visited: HashSet<(u64, u64)>,
    overrun: Overrun,
    budget: &'a Budget,
}

impl Walker<'_> {
    fn dir(&mut self, dir: &Path, rel: &str, depth: usize) {
        let Ok(meta) = fs::metadata(dir) else {
            self.incomplete = true;
            return;
        };
        if !meta.is_dir() {
            self.incomplete |= depth > 0;
            return;
        }
        if !self.visited.insert((meta.dev(), meta.ino())) {
            return; // cycle
        }
        if depth > self.budget.max_depth {
            self.overrun.too_deep += 1;
            self.incomplete = true;
            return;
        }
        let mut entries: Vec<_> = match fs::read_dir(dir) {
            Ok(rd) => rd.filter_map(Result::ok).collect(),
            Err(_) => {
                self.incomplete = true;
                return;
            }
        };
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            if self.out.len() >= self.budget.max_entries {
                self.overrun.over_entries = true;
                self.incomplete = true;
                return;
            }
            if self.budget.past_deadline() {
                self.overrun.out_of_time = true;
                self.incomplete = true;
                return;
            }
            let name = e.file_name().to_string_lossy().into_owned();
            let child_rel = format!("{rel}/{name}");
            // The entry's own type (never following a symlink).
            let Ok(ft) = e.file_type() else {
                self.incomplete = true;
                continue;
            };
            if ft.is_symlink() {
                self.out.push(Walked {
                    path: child_rel,
                    link_kind: Some(LinkKind::Symlink),
                });
            } else if ft.is_dir() {
                self.dir(&e.path(), &child_rel, depth + 1);
            } else if ft.is_file() {
                let Ok(meta) = e.metadata() else {
                    self.incomplete = true;
                    continue;
                };
                self.out.push(Walked {
                    path: child_rel,
                    link_kind: (meta.nlink() > 1).then_some(LinkKind::Hardlink),
                });
            }
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
    post_run_bounded(
        work_root,
        user_visible_roots,
        readonly_roots,
        body_cap,
        &Budget::default(),
    )
    .0
}

fn empty_entry(path: &str) -> ManifestEntry {
    ManifestEntry {
        path: path.to_owned(),
        bytes: 0,
        sha256: String::new(),
        body: None,
        encoding: None,
        truncated: None,
        truncation_reason: None,
        link_kind: None,
    }
}

/// [`post_run`] under `budget`: each file's size is taken from its metadata
/// before anything is read; a body is read only when it will be inlined (at
/// most `body_cap` bytes), every other file is hashed as a stream; a file
/// that would pass the hashing budget, or any left when the deadline
/// passes, is recorded unread (its size, `truncationReason: "unreadable"`).
pub fn post_run_bounded(
    work_root: &Path,
    user_visible_roots: &[String],
    readonly_roots: &[String],
    body_cap: u64,
    budget: &Budget,
) -> (Vec<ManifestEntry>, Overrun) {
    let (visible, _, mut overrun) = walk_bounded(work_root, user_visible_roots, budget);
    let (inputs, _, more) = walk_bounded(work_root, &["uploads".to_owned()], budget);
    overrun.too_deep += more.too_deep;
    overrun.over_entries |= more.over_entries;
    overrun.out_of_time |= more.out_of_time;
    let mut reading = Reading {
        work_root,
        readonly_roots,
        body_cap,
        budget,
        hashed: 0,
        overrun,
    };
    let out = (visible.into_iter().map(|w| (w, false)))
        .chain(inputs.into_iter().map(|w| (w, true)))
        .map(|(walked, is_input)| reading.entry(&walked, is_input))
        .collect();
    (out, reading.overrun)
}

/// What the post-run manifest shares while it reads each walked path.
struct Reading<'a> {
    work_root: &'a Path,
    readonly_roots: &'a [String],
    body_cap: u64,
    budget: &'a Budget,
    /// Bytes hashed or inlined so far (bounded by the budget).
    hashed: u64,
    overrun: Overrun,
}

impl Reading<'_> {
    /// One walked path's entry: a link, an unreadable file, a hash-only
    /// one (an input, under a read-only root, over the body cap) or an
    /// inlined body, within the budget's time and bytes.
    fn entry(&mut self, walked: &Walked, is_input: bool) -> ManifestEntry {
        let path = walked.path.as_str();
        if let Some(kind) = walked.link_kind {
            return ManifestEntry {
                link_kind: Some(kind),
                ..empty_entry(path)
            };
        }
        let unread = |bytes: u64| ManifestEntry {
            bytes,
            truncated: Some(true),
            truncation_reason: Some(TruncationReason::Unreadable),
            ..empty_entry(path)
        };
        let full = self.work_root.join(path);
        let size = match crate::paths::stays_inside(path)
            .then(|| fs::symlink_metadata(&full).ok())
            .flatten()
        {
            Some(m) if m.is_file() => m.len(),
            _ => return unread(0),
        };
        if self.budget.past_deadline() {
            self.overrun.out_of_time = true;
            return unread(size);
        }
        let reason = if is_input {
            Some(TruncationReason::Input)
        } else if self.readonly_roots.iter().any(|r| under(path, r)) {
            Some(TruncationReason::Readonly)
        } else if size > self.body_cap {
            Some(TruncationReason::Size)
        } else {
            None
        };
        match reason {
            Some(_) if self.hashed.saturating_add(size) > self.budget.max_hashed_bytes => {
                self.overrun.not_hashed += 1;
                unread(size)
            }
            Some(r) => match hash_stream(&full, size) {
                Some((bytes, sha256)) => {
                    self.hashed += bytes;
                    ManifestEntry {
                        bytes,
                        sha256,
                        truncated: Some(true),
                        truncation_reason: Some(r),
                        ..empty_entry(path)
                    }
                }
                None => unread(size),
            },
            // Grown past the cap since the walk saw it: not the file it was.
            None => match read_at_most(&full, self.body_cap) {
                Some(bytes) if bytes.len() as u64 <= self.body_cap => {
                    self.hashed += bytes.len() as u64;
                    inlined(path, bytes)
                }
                _ => unread(size),
            },
        }
    }
}

/// A file's bytes, read only when they are at most `cap` (the size taken
/// before may have grown since): `None` when unreadable.
fn read_at_most(path: &Path, cap: u64) -> Option<Vec<u8>> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    fs::File::open(path)
        .ok()?
        .take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .ok()?;
    Some(bytes)
}

/// The size and sha256 of a file's first `size` bytes (what its metadata
/// said when the walk saw it), read 64 KiB at a time.
fn hash_stream(path: &Path, size: u64) -> Option<(u64, String)> {
    use std::io::Read as _;
    let file = fs::File::open(path).ok()?;
    let mut hasher = Sha256::new();
    let n = std::io::copy(&mut file.take(size), &mut hasher).ok()?;
    Some((n, hex::encode(hasher.finalize())))
}

/// An entry with its body inlined (text, else base64).
fn inlined(path: &str, bytes: Vec<u8>) -> ManifestEntry {
    let mut entry = ManifestEntry {
        bytes: bytes.len() as u64,
        sha256: hex::encode(Sha256::digest(&bytes)),
        ..empty_entry(path)
    };
    match String::from_utf8(bytes) {
        Ok(text) => entry.body = Some(text),
        Err(e) => {
            entry.body = Some(base64::engine::general_purpose::STANDARD.encode(e.into_bytes()));
            entry.encoding = Some(BodyEncoding::Base64);
        }
    }
    entry
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

    /// A sparse file past the hashing budget is recorded with its size and
    /// never read; one under it is hashed as a stream; a directory deeper
    /// than the depth budget is not walked, and says so.
    #[test]
    fn the_post_run_manifest_stays_within_its_budget() {
        let t = tempfile::tempdir().unwrap();
        let w = t.path();
        fs::create_dir_all(w.join("outputs")).unwrap();
        let sparse = fs::File::create(w.join("outputs/huge.bin")).unwrap();
        sparse.set_len(3 << 30).unwrap();
        fs::write(w.join("outputs/mid.bin"), vec![7u8; 4096]).unwrap();
        let mut deep = w.join("outputs/deep");
        for _ in 0..40 {
            deep.push("d");
        }
        fs::create_dir_all(&deep).unwrap();
        fs::write(deep.join("leaf.txt"), "x").unwrap();
        let budget = Budget {
            max_depth: 16,
            max_hashed_bytes: 1 << 20,
            ..Budget::default()
        };
        let roots = ["outputs".to_owned()];
        let (m, overrun) = post_run_bounded(w, &roots, &[], 1024, &budget);
        let huge = m.iter().find(|e| e.path == "outputs/huge.bin").unwrap();
        assert_eq!(huge.bytes, 3 << 30);
        assert_eq!(huge.sha256, "");
        assert_eq!(huge.truncation_reason, Some(TruncationReason::Unreadable));
        let mid = m.iter().find(|e| e.path == "outputs/mid.bin").unwrap();
        assert_eq!(mid.sha256, hex::encode(Sha256::digest(vec![7u8; 4096])));
        assert_eq!(mid.truncation_reason, Some(TruncationReason::Size));
        assert!(!m.iter().any(|e| e.path.ends_with("leaf.txt")));
        assert_eq!(overrun.too_deep, 1);
        assert_eq!(overrun.not_hashed, 1);
        let notices = overrun.notices(&budget).join("\n");
        assert!(
            notices.contains("deeper than 16 levels not walked"),
            "{notices}"
        );
        assert!(
            notices.contains("1 file(s) not read (over budget"),
            "{notices}"
        );

        let past = Budget {
            deadline: Some(Instant::now()),
            ..Budget::default()
        };
        let (_, overrun) = post_run_bounded(w, &roots, &[], 1024, &past);
        assert!(overrun.out_of_time);
    }

    #[test]
    fn the_walk_stops_at_its_entry_budget() {
        let t = tempfile::tempdir().unwrap();
        fs::create_dir_all(t.path().join("outputs")).unwrap();
        for i in 0..10 {
            fs::write(t.path().join(format!("outputs/{i}")), "").unwrap();
        }
        let budget = Budget {
            max_entries: 4,
            ..Budget::default()
        };
        let (w, incomplete, overrun) = walk_bounded(t.path(), &["outputs".to_owned()], &budget);
        assert_eq!(w.len(), 4);
        assert!(incomplete && overrun.over_entries);
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
