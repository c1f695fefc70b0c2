//! Materialises a cassette's artifacts manifest (docs/spec/replay.md §2.5 step
//! 10): every entry checked as if written under a private work root.
//!
//! The manifest keys read the tree from the manifest itself (the tree is a
//! pure function of it: `crate::assert::tree`), so a replay does not write
//! it: [`materialise`] makes every check writing would make — the same
//! refusals, in the same order, with the same messages — and names a root
//! for messages (`…/reel-replay-XXXXXX`, as the original names its
//! `cwh-replay-XXXXXX`), without creating a file. Writing a thousand small
//! trees was most of a batch replay's time (ext4 inode allocation).
//! [`materialise_on_disk`] also writes the tree, for `replay --mutate`,
//! which perturbs materialised files ([`Materialised::rewrite`]).
//!
//! The cassette is untrusted input: every entry path is checked before it is
//! joined (no absolute path, drive letter, UNC prefix, backslash, NUL, empty /
//! `.` / `..` segment), each parent directory is created one segment at a time
//! and must be a real directory (never a symlink), files are opened with
//! `O_NOFOLLOW`, and link entries (`linkKind`) become empty placeholder files —
//! never real links. Nothing is ever written outside the temp dir, which is
//! removed when [`Materialised`] is dropped.
//!
//! Every inlined body is verified against its recorded sha256; a mismatch is a
//! per-file error (exit 2, "refusing to replay"), as in cowork-harness.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine;
use sha2::{Digest, Sha256};

use crate::cassette::{BodyEncoding, ManifestEntry, TruncationReason};

/// Why a manifest could not be materialised.
#[derive(Debug, thiserror::Error)]
pub enum MaterialiseError {
    #[error(
        "artifacts[{index}].path {path:?}: {why} — the cassette is corrupt or hostile; refusing to \
            replay"
    )]
    UnsafePath {
        index: usize,
        path: String,
        why: &'static str,
    },
    #[error(
        "artifacts[{index}] `{path}`: body does not match its recorded sha256 (recorded \
            {recorded}, body hashes to {actual}) — cassette is corrupt or tampered; refusing to \
            replay"
    )]
    ShaMismatch {
        index: usize,
        path: String,
        recorded: String,
        actual: String,
    },
    #[error(
        "artifacts[{index}] `{path}`: body is not valid base64 ({detail}) — cassette is corrupt; \
            re-record"
    )]
    BadBase64 {
        index: usize,
        path: String,
        detail: String,
    },
    #[error("artifacts[{index}] `{path}`: {detail}")]
    Io {
        index: usize,
        path: String,
        detail: String,
    },
    #[error(
        "artifacts[{index}] `{path}`: duplicate path (first at artifacts[{first}]) — the manifest \
            is ambiguous; the cassette is corrupt or hostile; refusing to replay"
    )]
    DuplicatePath {
        index: usize,
        first: usize,
        path: String,
    },
    #[error("artifacts: {0} — the cassette is corrupt; refusing to replay (re-record it)")]
    Malformed(String),
    #[error("could not create the replay temp dir: {0}")]
    TempDir(std::io::Error),
}

/// A checked manifest; a tree written to disk is deleted on drop.
#[derive(Debug)]
pub struct Materialised {
    root: Root,
    /// Body-less entries and why they have no body.
    pub truncated: BTreeMap<String, Option<TruncationReason>>,
    /// Entries recorded as symlinks/hardlinks (placeholders on disk).
    pub links: BTreeSet<String>,
}

impl Materialised {
    /// The work root the files are (or, unwritten, would be) under.
    pub fn root(&self) -> &Path {
        match &self.root {
            Root::Named(p) => p,
            Root::OnDisk(dir) => dir.path(),
        }
    }

    /// Overwrites the materialised file of manifest entry `path` with
    /// `bytes` (`replay --mutate` perturbs a file, then restores it). Only a
    /// regular file this module wrote can be rewritten: the path is checked
    /// as at materialisation, nothing is created, and the write never
    /// follows a link — so nothing outside the temp dir can be touched.
    pub fn rewrite(&self, path: &str, bytes: &[u8]) -> Result<(), String> {
        let segs = safe_segments(path).map_err(str::to_owned)?;
        let target = segs
            .iter()
            .fold(self.root().to_path_buf(), |p, s| p.join(s));
        match fs::symlink_metadata(&target) {
            Ok(m) if m.file_type().is_file() => write_no_follow(&target, bytes),
            Ok(_) => Err("not a regular file in the materialised tree".into()),
            Err(e) => Err(format!("not materialised: {e}")),
        }
    }
}

/// Checks one manifest path and returns its segments.
fn safe_segments(path: &str) -> Result<Vec<&str>, &'static str> {
    if path.is_empty() {
        return Err("empty path");
    }
    if path.contains('\0') {
        return Err("contains a NUL byte");
    }
    if path.contains('\\') {
        return Err("contains a backslash (Windows separators and UNC prefixes are refused)");
    }
    if path.starts_with('/') {
        return Err("is absolute");
    }
    let b = path.as_bytes();
    if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
        return Err("starts with a drive letter");
    }
    let segs: Vec<&str> = path.split('/').collect();
    for s in &segs {
        match *s {
            ".." => return Err("contains a `..` segment"),
            "" | "." => return Err("contains an empty or `.` segment"),
            _ => {}
        }
    }
    Ok(segs)
}

#[derive(Debug)]
enum Root {
    /// Checked, not written: the name messages use.
    Named(PathBuf),
    OnDisk(tempfile::TempDir),
}

const ROOT_PREFIX: &str = "reel-replay-";

/// `text` with every replay work-root name (`reel-replay-` and its random
/// six characters) spelled `reel-replay-XXXXXX`: the name differs on every
/// replay, so what compares two replays' messages (`reel diff`) must not see
/// it.
pub fn mask_root_names(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(ROOT_PREFIX) {
        let after = at + ROOT_PREFIX.len();
        out.push_str(&rest[..after]);
        let suffix = rest.as_bytes()[after..]
            .iter()
            .take(6)
            .take_while(|b| b.is_ascii_alphanumeric())
            .count();
        if suffix == 6 {
            out.push_str("XXXXXX");
            rest = &rest[after + 6..];
        } else {
            rest = &rest[after..];
        }
    }
    out.push_str(rest);
    out
}

/// Checks every manifest entry as [`materialise_on_disk`] would before
/// writing it, and writes nothing.
pub fn materialise(entries: &[ManifestEntry]) -> Result<Materialised, MaterialiseError> {
    let mut out = Materialised {
        root: Root::Named(std::env::temp_dir().join(format!("{ROOT_PREFIX}{}", root_suffix()))),
        truncated: BTreeMap::new(),
        links: BTreeSet::new(),
    };
    check_all(entries, &mut out, |_, _, _| Ok(()))?;
    Ok(out)
}

/// Checks and writes every manifest entry under a fresh private temp dir.
pub fn materialise_on_disk(entries: &[ManifestEntry]) -> Result<Materialised, MaterialiseError> {
    let dir = tempfile::Builder::new()
        .prefix(ROOT_PREFIX)
        .tempdir()
        .map_err(MaterialiseError::TempDir)?;
    let root = dir.path().to_path_buf();
    let mut out = Materialised {
        root: Root::OnDisk(dir),
        truncated: BTreeMap::new(),
        links: BTreeSet::new(),
    };
    check_all(entries, &mut out, |segs, entry, bytes| {
        let target = make_parents(&root, segs)?;
        // A link entry is a placeholder: its bytes are never written.
        let body: &[u8] = if entry.link_kind.is_some() {
            b""
        } else {
            bytes
        };
        write_no_follow(&target, body)
    })?;
    Ok(out)
}

/// Six alphanumerics, unique within the process and unpredictable across
/// processes (like a temp dir's), for a root that is only named.
fn root_suffix() -> String {
    use std::hash::{BuildHasher, RandomState};
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};
    static STATE: OnceLock<RandomState> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut n = STATE
        .get_or_init(RandomState::new)
        .hash_one(NEXT.fetch_add(1, Ordering::Relaxed));
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    (0..6)
        .map(|_| {
            let c = ALPHABET[(n % ALPHABET.len() as u64) as usize];
            n /= ALPHABET.len() as u64;
            c as char
        })
        .collect()
}

/// One entry's place in the tree so far: the files and directories the
/// entries before it made.
#[derive(Default)]
struct TreeShape<'a> {
    files: std::collections::HashSet<String>,
    dirs: std::collections::HashSet<String>,
    seen: std::collections::HashMap<&'a str, usize>,
}

impl TreeShape<'_> {
    /// The refusal writing `segs` would meet (the directory/file conflicts
    /// [`make_parents`] finds on disk), recording its place otherwise.
    fn place(&mut self, segs: &[&str]) -> Result<(), String> {
        let (_, parents) = segs.split_last().ok_or("empty path")?;
        let mut prefix = String::new();
        for s in parents {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(s);
            if self.files.contains(&prefix) {
                return Err(format!(
                    "`{s}` is already a file (or link) in the manifest, so it cannot be a directory"
                ));
            }
            self.dirs.insert(prefix.clone());
        }
        let full = segs.join("/");
        if self.dirs.contains(&full) {
            return Err("the path is already a directory in the manifest".into());
        }
        self.files.insert(full);
        Ok(())
    }
}

/// The checks of every entry, in manifest order; `write` is called for each
/// entry that passed them, with its segments and decoded body.
fn check_all(
    entries: &[ManifestEntry],
    out: &mut Materialised,
    mut write: impl FnMut(&[&str], &ManifestEntry, &[u8]) -> Result<(), String>,
) -> Result<(), MaterialiseError> {
    let mut shape = TreeShape::default();
    for (index, entry) in entries.iter().enumerate() {
        let seen = &mut shape.seen;
        if let Some(&first) = seen.get(entry.path.as_str()) {
            return Err(MaterialiseError::DuplicatePath {
                index,
                first,
                path: entry.path.clone(),
            });
        }
        seen.insert(&entry.path, index);
        let unsafe_path = |why| MaterialiseError::UnsafePath {
            index,
            path: entry.path.clone(),
            why,
        };
        let segs = safe_segments(&entry.path).map_err(unsafe_path)?;
        let bytes = decode_body(index, entry)?;
        let truncated = entry.truncated == Some(true);
        if !truncated && entry.body.is_some() && !entry.sha256.is_empty() {
            let actual = hex::encode(Sha256::digest(&bytes));
            if !actual.eq_ignore_ascii_case(&entry.sha256) {
                return Err(MaterialiseError::ShaMismatch {
                    index,
                    path: entry.path.clone(),
                    recorded: entry.sha256.clone(),
                    actual,
                });
            }
        }
        let io = |detail| MaterialiseError::Io {
            index,
            path: entry.path.clone(),
            detail,
        };
        shape.place(&segs).map_err(io)?;
        write(&segs, entry, &bytes).map_err(io)?;
        if entry.link_kind.is_some() {
            out.links.insert(entry.path.clone());
        }
        if truncated || entry.body.is_none() {
            out.truncated
                .insert(entry.path.clone(), entry.truncation_reason);
        }
    }
    Ok(())
}

fn decode_body(index: usize, entry: &ManifestEntry) -> Result<Vec<u8>, MaterialiseError> {
    let Some(body) = &entry.body else {
        return Ok(Vec::new());
    };
    if entry.encoding == Some(BodyEncoding::Base64) {
        base64::engine::general_purpose::STANDARD
            .decode(body.as_bytes())
            .map_err(|e| MaterialiseError::BadBase64 {
                index,
                path: entry.path.clone(),
                detail: e.to_string(),
            })
    } else {
        Ok(body.as_bytes().to_vec())
    }
}

/// Creates each parent directory of `segs` under `root`, refusing any
/// existing component that is not a real directory.
fn make_parents(root: &Path, segs: &[&str]) -> Result<PathBuf, String> {
    let mut cur = root.to_path_buf();
    let (last, parents) = segs.split_last().ok_or("empty path")?;
    for s in parents {
        cur.push(s);
        match fs::symlink_metadata(&cur) {
            Ok(m) if m.file_type().is_dir() => {}
            Ok(_) => {
                return Err(format!(
                    "`{s}` is already a file (or link) in the manifest, so it cannot be a directory"
                ));
            }
            Err(_) => fs::create_dir(&cur).map_err(|e| format!("create directory: {e}"))?,
        }
    }
    cur.push(last);
    if let Ok(m) = fs::symlink_metadata(&cur) {
        if m.file_type().is_dir() {
            return Err("the path is already a directory in the manifest".into());
        }
        if m.file_type().is_symlink() {
            return Err("refusing to write through a symbolic link".into());
        }
    }
    Ok(cur)
}

fn write_no_follow(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let mut opts = fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NOFOLLOW).mode(0o600);
    }
    let mut f = opts.open(path).map_err(|e| format!("write: {e}"))?;
    f.write_all(bytes).map_err(|e| format!("write: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cassette::LinkKind;

    fn entry(path: &str, body: Option<&str>) -> ManifestEntry {
        let sha = body
            .map(|b| hex::encode(Sha256::digest(b.as_bytes())))
            .unwrap_or_default();
        ManifestEntry {
            path: path.into(),
            bytes: body.map_or(0, |b| b.len() as u64),
            sha256: sha,
            body: body.map(str::to_owned),
            encoding: None,
            truncated: None,
            truncation_reason: None,
            link_kind: None,
        }
    }

    #[test]
    fn writes_bodies_and_placeholders_under_the_temp_dir() {
        let mut link = entry("outputs/link", None);
        link.link_kind = Some(LinkKind::Symlink);
        let mut big = entry("uploads/big.pdf", None);
        big.truncated = Some(true);
        big.truncation_reason = Some(TruncationReason::Input);
        big.sha256 = "ab".repeat(32);
        let m = materialise_on_disk(&[entry("outputs/a/b.md", Some("hi\n")), link, big]).unwrap();
        assert_eq!(fs::read(m.root().join("outputs/a/b.md")).unwrap(), b"hi\n");
        let l = fs::symlink_metadata(m.root().join("outputs/link")).unwrap();
        assert!(
            l.file_type().is_file(),
            "a link entry must never become a real link"
        );
        assert!(m.links.contains("outputs/link"));
        assert_eq!(
            m.truncated.get("uploads/big.pdf"),
            Some(&Some(TruncationReason::Input))
        );
        let root = m.root().to_path_buf();
        drop(m);
        assert!(!root.exists(), "temp dir must be removed on drop");
    }

    #[test]
    fn rewrite_overwrites_only_materialised_files() {
        let m = materialise_on_disk(&[entry("outputs/r.json", Some("{}"))]).unwrap();
        m.rewrite("outputs/r.json", b"[1]").unwrap();
        assert_eq!(fs::read(m.root().join("outputs/r.json")).unwrap(), b"[1]");
        for bad in ["outputs/new.json", "outputs", "../x", "/etc/passwd"] {
            assert!(m.rewrite(bad, b"x").is_err(), "{bad}");
        }
        assert!(!m.root().join("outputs/new.json").exists());
    }

    #[test]
    fn base64_bodies_are_decoded_and_verified() {
        let raw = [0u8, 159, 146, 150];
        let mut e = entry("outputs/bin", None);
        e.body = Some(base64::engine::general_purpose::STANDARD.encode(raw));
        e.encoding = Some(BodyEncoding::Base64);
        e.sha256 = hex::encode(Sha256::digest(raw));
        let m = materialise_on_disk(&[e]).unwrap();
        assert_eq!(fs::read(m.root().join("outputs/bin")).unwrap(), raw);
    }

    #[test]
    fn a_sha_mismatch_refuses_to_replay() {
        let mut e = entry("outputs/x.md", Some("real"));
        e.body = Some("tampered".into());
        let err = materialise(&[e]).unwrap_err().to_string();
        assert!(err.contains("does not match its recorded sha256"), "{err}");
        assert!(err.contains("refusing to replay"), "{err}");
    }

    #[test]
    fn hostile_paths_are_refused_and_nothing_escapes() {
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("pwned");
        let hostile = [
            victim.to_string_lossy().into_owned(),
            "../pwned".into(),
            "outputs/../../pwned".into(),
            "C:/Windows/pwned".into(),
            "c:pwned".into(),
            "\\\\server\\share\\pwned".into(),
            "outputs\\..\\..\\pwned".into(),
            "outputs/\0pwned".into(),
            "".into(),
            "outputs//x".into(),
            "./x".into(),
        ];
        for p in hostile {
            let err = materialise_on_disk(&[entry(&p, Some("x"))]).unwrap_err();
            assert!(
                matches!(err, MaterialiseError::UnsafePath { .. }),
                "{p:?}: {err}"
            );
        }
        assert!(!victim.exists());
    }

    #[test]
    fn duplicate_paths_are_refused() {
        let err = materialise(&[
            entry("outputs/a", Some("one")),
            entry("outputs/a", Some("two")),
        ])
        .unwrap_err();
        assert!(
            matches!(
                err,
                MaterialiseError::DuplicatePath {
                    index: 1,
                    first: 0,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn a_file_then_a_directory_of_the_same_name_is_an_error_not_an_escape() {
        let err = materialise(&[
            entry("outputs/a", Some("x")),
            entry("outputs/a/b", Some("y")),
        ])
        .unwrap_err();
        assert!(matches!(err, MaterialiseError::Io { .. }), "{err}");
    }

    #[test]
    fn link_entries_followed_by_entries_under_them_stay_inside() {
        // A recorded symlink `outputs/l` and a later entry `outputs/l/x`: the
        // placeholder is a plain file, so the second entry is refused instead
        // of being written wherever the original link pointed.
        let mut link = entry("outputs/l", None);
        link.link_kind = Some(LinkKind::Symlink);
        let err = materialise(&[link, entry("outputs/l/x", Some("y"))]).unwrap_err();
        assert!(matches!(err, MaterialiseError::Io { .. }), "{err}");
    }

    #[test]
    fn checking_refuses_what_writing_refuses_and_writes_nothing() {
        let mut link = entry("outputs/l", None);
        link.link_kind = Some(LinkKind::Symlink);
        let mut tampered = entry("outputs/t.md", Some("real"));
        tampered.body = Some("tampered".into());
        let cases: Vec<Vec<ManifestEntry>> = vec![
            vec![
                entry("outputs/a", Some("x")),
                entry("outputs/a/b", Some("y")),
            ],
            vec![
                entry("outputs/a/b", Some("y")),
                entry("outputs/a", Some("x")),
            ],
            vec![link, entry("outputs/l/x", Some("y"))],
            vec![
                entry("outputs/a", Some("one")),
                entry("outputs/a", Some("two")),
            ],
            vec![entry("../x", Some("x"))],
            vec![tampered],
            vec![
                entry("outputs/ok/a.md", Some("a")),
                entry("outputs/ok/b.md", Some("b")),
            ],
        ];
        for entries in cases {
            let checked = materialise(&entries).map(|m| m.root().to_path_buf());
            let written = materialise_on_disk(&entries).map(|_| ());
            assert_eq!(
                checked.as_ref().err().map(ToString::to_string),
                written.as_ref().err().map(ToString::to_string),
                "{entries:?}"
            );
            if let Ok(root) = checked {
                assert!(!root.exists(), "nothing is written: {}", root.display());
                let name = root.file_name().unwrap().to_string_lossy().into_owned();
                assert!(
                    name.starts_with("reel-replay-") && name.len() == 18,
                    "{name}"
                );
            }
        }
    }

    #[test]
    fn root_names_are_masked_whole() {
        assert_eq!(
            mask_root_names("under /tmp/reel-replay-4FxR2G/a and reel-replay-ab"),
            "under /tmp/reel-replay-XXXXXX/a and reel-replay-ab"
        );
    }
}
