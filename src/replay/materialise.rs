//! Materialises a cassette's artifacts manifest into a private temp directory
//! so the manifest-bucket assertions can look at files (spec/replay.md §2.5
//! step 10).
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
        "artifacts[{index}].path {path:?}: {why} — the cassette is corrupt or hostile; refusing to replay"
    )]
    UnsafePath {
        index: usize,
        path: String,
        why: &'static str,
    },
    #[error(
        "artifacts[{index}] `{path}`: body does not match its recorded sha256 (recorded {recorded}, body hashes to {actual}) — cassette is corrupt or tampered; refusing to replay"
    )]
    ShaMismatch {
        index: usize,
        path: String,
        recorded: String,
        actual: String,
    },
    #[error(
        "artifacts[{index}] `{path}`: body is not valid base64 ({detail}) — cassette is corrupt; re-record"
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
        "artifacts[{index}] `{path}`: duplicate path (first at artifacts[{first}]) — the manifest is ambiguous; the cassette is corrupt or hostile; refusing to replay"
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

/// A materialised manifest; the directory is deleted on drop.
#[derive(Debug)]
pub struct Materialised {
    dir: tempfile::TempDir,
    /// Body-less entries and why they have no body.
    pub truncated: BTreeMap<String, Option<TruncationReason>>,
    /// Entries recorded as symlinks/hardlinks (placeholders on disk).
    pub links: BTreeSet<String>,
}

impl Materialised {
    /// The work root the files were written under.
    pub fn root(&self) -> &Path {
        self.dir.path()
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

/// Writes every manifest entry under a fresh private temp dir.
pub fn materialise(entries: &[ManifestEntry]) -> Result<Materialised, MaterialiseError> {
    let dir = tempfile::Builder::new()
        .prefix("reel-replay-")
        .tempdir()
        .map_err(MaterialiseError::TempDir)?;
    let mut out = Materialised {
        dir,
        truncated: BTreeMap::new(),
        links: BTreeSet::new(),
    };
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (index, entry) in entries.iter().enumerate() {
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
        let target = make_parents(out.root(), &segs).map_err(|detail| MaterialiseError::Io {
            index,
            path: entry.path.clone(),
            detail,
        })?;
        // A link entry is a placeholder: its bytes are never written.
        let body: &[u8] = if entry.link_kind.is_some() {
            b""
        } else {
            &bytes
        };
        write_no_follow(&target, body).map_err(|e| MaterialiseError::Io {
            index,
            path: entry.path.clone(),
            detail: e,
        })?;
        if entry.link_kind.is_some() {
            out.links.insert(entry.path.clone());
        }
        if truncated || entry.body.is_none() {
            out.truncated
                .insert(entry.path.clone(), entry.truncation_reason);
        }
    }
    Ok(out)
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
        let m = materialise(&[entry("outputs/a/b.md", Some("hi\n")), link, big]).unwrap();
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
        let m = materialise(&[entry("outputs/r.json", Some("{}"))]).unwrap();
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
        let m = materialise(&[e]).unwrap();
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
            let err = materialise(&[entry(&p, Some("x"))]).unwrap_err();
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
}
