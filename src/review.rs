//! Pending re-recordings: insta's review loop, for cassettes.
//!
//! When a re-recording (`record`, `rerun --write`) would replace a committed
//! cassette with one that differs semantically (per [`crate::diff`]), the new
//! recording is written beside it as `NAME.cassette.json.new` and the old one
//! is left alone until a person accepts or rejects it; an identical
//! re-recording writes nothing. `--accept` writes in place as before. Under
//! CI nothing pending is ever written: a differing re-recording is an error
//! carrying the diff (insta's rule: CI must not leave files nobody reviews).
//!
//! [`stage_rerecording`] is the one entry point writers call;
//! [`pending`] finds `.new` files (for `reel pending`/`review`/`accept`/
//! `reject` and `verify-cassettes`); [`accept`] renames a `.new` over its
//! cassette atomically; [`reject`] deletes it. Nothing here prints.
//!
//! The interactive key-press loop is `cli::review`, tested in a real pty.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cassette::{Cassette, LoadError};
use crate::diff::{self, Diff, DiffOptions};

/// What a pending re-recording's file name ends with.
pub const PENDING_SUFFIX: &str = ".new";
const CASSETTE_SUFFIX: &str = ".cassette.json";

/// Where the pending re-recording of `cassette` lives.
pub fn pending_path(cassette: &Path) -> PathBuf {
    let mut s = cassette.as_os_str().to_owned();
    s.push(PENDING_SUFFIX);
    PathBuf::from(s)
}

/// The cassette a pending file would replace (`None` if `path` is not one).
pub fn target_of(path: &Path) -> Option<PathBuf> {
    let s = path.to_str()?;
    let target = s.strip_suffix(PENDING_SUFFIX)?;
    target
        .ends_with(CASSETTE_SUFFIX)
        .then(|| PathBuf::from(target))
}

/// True when the environment says this is CI (`CI` set to anything but
/// empty, `0` or `false`, as insta reads it).
pub fn ci_from_env() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.as_str(), "" | "0" | "false"))
}

/// How to stage a re-recording.
#[derive(Debug, Clone, Copy, Default)]
pub struct StageOptions {
    /// `--accept`: write in place even when it differs.
    pub accept: bool,
    /// Under CI: never write a `.new`; a differing re-recording is an error.
    pub ci: bool,
}

/// What staging did.
#[derive(Debug)]
pub enum Outcome {
    /// The cassette was written in place (new file, or `--accept`).
    Written {
        path: PathBuf,
        /// A stale `.new` beside it was removed.
        removed_pending: bool,
    },
    /// The re-recording is identical (per `diff`); nothing was written.
    Unchanged {
        path: PathBuf,
        /// A stale `.new` beside it was removed (the committed one matches).
        removed_pending: bool,
    },
    /// It differs: the new recording is at `new`, waiting for review.
    Pending {
        path: PathBuf,
        new: PathBuf,
        /// `diff` of the committed cassette against the new recording
        /// (`None` when the committed one could not be read).
        diff: Option<Box<Diff>>,
        /// One line: what differs.
        summary: String,
        /// The command that reviews it.
        review_command: String,
    },
}

/// Why a re-recording was not staged.
#[derive(Debug, thiserror::Error)]
pub enum StageError {
    /// Under CI, a differing re-recording is refused (nothing written).
    #[error(
        "`{}`: the re-recording differs from the committed cassette ({summary}) and CI=true \
            forbids writing a pending `.new`",
        path.display()
    )]
    DiffersInCi {
        path: PathBuf,
        diff: Option<Box<Diff>>,
        summary: String,
    },
    #[error("write `{}`: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl StageError {
    /// The diff text to show with the error.
    pub fn diff(&self) -> Option<&Diff> {
        match self {
            StageError::DiffersInCi { diff, .. } => diff.as_deref(),
            StageError::Write { .. } => None,
        }
    }
}

impl From<StageError> for crate::Error {
    fn from(e: StageError) -> Self {
        match &e {
            StageError::DiffersInCi { path, .. } => {
                crate::Error::failure(e.to_string()).with_hint(format!(
                    "re-record locally and review it (`reel review {}`), or pass --accept to \
                        overwrite it in place",
                    path.display()
                ))
            }
            StageError::Write { .. } => crate::Error::usage(e.to_string()).with_hint(
                "check that the directory is writable; the committed cassette was left intact",
            ),
        }
    }
}

/// Writes `new` as the re-recording of the cassette at `path`: in place when
/// there is none (or `accept`), nowhere when it is identical, else beside it
/// as `path.new` (or, under CI, not at all: an error with the diff).
pub fn stage_rerecording(
    path: &Path,
    new: &Cassette,
    opts: StageOptions,
) -> Result<Outcome, StageError> {
    let pending = pending_path(path);
    let write = |to: &Path| {
        crate::atomic::write_atomic(to, new.to_json_pretty().as_bytes()).map_err(|source| {
            StageError::Write {
                path: to.to_path_buf(),
                source,
            }
        })
    };
    let remove_pending = || -> Result<bool, StageError> {
        match std::fs::remove_file(&pending) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(StageError::Write {
                path: pending.clone(),
                source,
            }),
        }
    };
    if opts.accept || !path.exists() {
        write(path)?;
        let removed_pending = opts.accept && remove_pending()?;
        return Ok(Outcome::Written {
            path: path.to_path_buf(),
            removed_pending,
        });
    }
    let (diff, summary) = match Cassette::load(path) {
        Ok(old) => {
            let mut new_named = new.clone();
            new_named.path = pending.clone();
            let d = diff::diff_cassettes(&old, &new_named, &DiffOptions::default());
            if d.identical {
                let removed_pending = remove_pending()?;
                return Ok(Outcome::Unchanged {
                    path: path.to_path_buf(),
                    removed_pending,
                });
            }
            let s = d.summary();
            (Some(Box::new(d)), s)
        }
        Err(e) => (None, format!("the committed cassette cannot be read ({e})")),
    };
    if opts.ci {
        return Err(StageError::DiffersInCi {
            path: path.to_path_buf(),
            diff,
            summary,
        });
    }
    write(&pending)?;
    Ok(Outcome::Pending {
        path: path.to_path_buf(),
        review_command: format!("reel review {}", shell_word(path)),
        new: pending,
        diff,
        summary,
    })
}

fn shell_word(p: &Path) -> String {
    let s = p.display().to_string();
    shlex::try_quote(&s).map_or(s.clone(), |q| q.into_owned())
}

/// A pending re-recording found on disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pending {
    /// The `NAME.cassette.json.new` file.
    pub new: PathBuf,
    /// The cassette it would replace.
    pub cassette: PathBuf,
    /// Whether that cassette exists (a `.new` of a deleted one can only be
    /// accepted as a new file).
    pub cassette_exists: bool,
}

/// Directories never searched for pending files.
const SKIP_DIRS: &[&str] = &[".git", "target", "node_modules", ".tools"];

/// The pending re-recordings under `paths`: a `.new` file itself, the `.new`
/// of a cassette file, or every `.new` under a directory (recursively,
/// skipping `.git`, `target`, `node_modules` and hidden directories), sorted
/// and de-duplicated.
pub fn pending(paths: &[PathBuf]) -> std::io::Result<Vec<Pending>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk(p, &mut out)?;
        } else if let Some(target) = target_of(p) {
            if p.is_file() {
                out.push(found(p.clone(), target));
            }
        } else {
            let new = pending_path(p);
            if new.is_file() {
                out.push(found(new, p.clone()));
            }
        }
    }
    out.sort_by(|a, b| a.new.cmp(&b.new));
    out.dedup();
    Ok(out)
}

fn found(new: PathBuf, cassette: PathBuf) -> Pending {
    Pending {
        cassette_exists: cassette.is_file(),
        new,
        cassette,
    }
}

fn walk(dir: &Path, out: &mut Vec<Pending>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let ty = entry.file_type()?;
        if ty.is_dir() {
            if !name.starts_with('.') && !SKIP_DIRS.contains(&name.as_ref()) {
                walk(&path, out)?;
            }
        } else if ty.is_file()
            && let Some(target) = target_of(&path)
        {
            out.push(found(path, target));
        }
    }
    Ok(())
}

/// Why accepting or rejecting failed.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("`{}` is not a pending re-recording (NAME.cassette.json.new)", path.display())]
    NotPending { path: PathBuf },
    #[error("{0}")]
    Invalid(#[from] LoadError),
    #[error("`{}`: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl From<ResolveError> for crate::Error {
    fn from(e: ResolveError) -> Self {
        let hint = match &e {
            ResolveError::NotPending { .. } => {
                "list the pending re-recordings with `reel pending`".to_owned()
            }
            ResolveError::Invalid(l) => format!(
                "the pending file does not load as a cassette; reject it (`reel reject`) and \
                    re-record. {}",
                l.hint()
            ),
            ResolveError::Io { .. } => "check the file's permissions".to_owned(),
        };
        crate::Error::usage(e.to_string()).with_hint(hint)
    }
}

/// Accepts a pending re-recording: checks that it loads, then renames it
/// over its cassette (one atomic rename, directory synced).
pub fn accept(p: &Pending) -> Result<(), ResolveError> {
    if target_of(&p.new).is_none() {
        return Err(ResolveError::NotPending {
            path: p.new.clone(),
        });
    }
    Cassette::load(&p.new)?;
    let io = |source| ResolveError::Io {
        path: p.new.clone(),
        source,
    };
    std::fs::rename(&p.new, &p.cassette).map_err(io)?;
    let dir = match p.cassette.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(io)
}

/// Rejects a pending re-recording: deletes the `.new`, leaving the cassette.
pub fn reject(p: &Pending) -> Result<(), ResolveError> {
    if target_of(&p.new).is_none() {
        return Err(ResolveError::NotPending {
            path: p.new.clone(),
        });
    }
    std::fs::remove_file(&p.new).map_err(|source| ResolveError::Io {
        path: p.new.clone(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundled(name: &str) -> Cassette {
        let p =
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("cassettes/{name}.cassette.json"));
        Cassette::load(&p).unwrap()
    }

    /// A copy of `name` in `dir` (byte for byte) and the loaded original.
    fn committed(dir: &Path, name: &str) -> (PathBuf, Cassette) {
        let c = bundled(name);
        let to = dir.join(format!("{name}.cassette.json"));
        std::fs::copy(&c.path, &to).unwrap();
        (to, c)
    }

    #[test]
    fn identical_writes_nothing_differing_goes_pending_ci_refuses_accept_overwrites() {
        let tmp = tempfile::tempdir().unwrap();
        let (path, same) = committed(tmp.path(), "write-note");
        let before = std::fs::read(&path).unwrap();
        let out = stage_rerecording(&path, &same, StageOptions::default()).unwrap();
        assert!(
            matches!(
                out,
                Outcome::Unchanged {
                    removed_pending: false,
                    ..
                }
            ),
            "{out:?}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), before);
        assert!(!pending_path(&path).exists());

        let other = bundled("skill-triggered");
        let err = stage_rerecording(
            &path,
            &other,
            StageOptions {
                accept: false,
                ci: true,
            },
        )
        .unwrap_err();
        assert!(matches!(err, StageError::DiffersInCi { .. }), "{err}");
        assert!(err.diff().is_some_and(|d| !d.identical));
        assert!(!pending_path(&path).exists(), "CI wrote a .new");

        let out = stage_rerecording(&path, &other, StageOptions::default()).unwrap();
        let Outcome::Pending {
            new,
            summary,
            review_command,
            ..
        } = out
        else {
            panic!("{out:?}")
        };
        assert_eq!(new, pending_path(&path));
        assert!(summary.starts_with("differs: "), "{summary}");
        assert!(
            review_command.starts_with("reel review "),
            "{review_command}"
        );
        assert_eq!(
            std::fs::read(&path).unwrap(),
            before,
            "the committed one changed"
        );
        assert_eq!(
            std::fs::read_to_string(&new).unwrap(),
            other.to_json_pretty()
        );

        let out = stage_rerecording(
            &path,
            &other,
            StageOptions {
                accept: true,
                ci: true,
            },
        )
        .unwrap();
        assert!(
            matches!(
                out,
                Outcome::Written {
                    removed_pending: true,
                    ..
                }
            ),
            "{out:?}"
        );
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            other.to_json_pretty()
        );
        assert!(!pending_path(&path).exists());
    }

    #[test]
    fn accept_renames_and_reject_deletes() {
        let tmp = tempfile::tempdir().unwrap();
        let (path, _) = committed(tmp.path(), "write-note");
        let before = std::fs::read(&path).unwrap();
        let other = bundled("pick-format");
        stage_rerecording(&path, &other, StageOptions::default()).unwrap();
        let found = pending(&[tmp.path().to_path_buf()]).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].cassette, path);
        reject(&found[0]).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), before);
        assert!(pending(std::slice::from_ref(&path)).unwrap().is_empty());

        stage_rerecording(&path, &other, StageOptions::default()).unwrap();
        let new_bytes = std::fs::read(pending_path(&path)).unwrap();
        let found = pending(std::slice::from_ref(&path)).unwrap();
        accept(&found[0]).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), new_bytes);
        assert!(!pending_path(&path).exists());
    }

    #[test]
    fn a_damaged_pending_file_is_not_accepted() {
        let tmp = tempfile::tempdir().unwrap();
        let (path, _) = committed(tmp.path(), "write-note");
        let before = std::fs::read(&path).unwrap();
        std::fs::write(pending_path(&path), "{ truncated").unwrap();
        let found = pending(std::slice::from_ref(&path)).unwrap();
        let err = accept(&found[0]).unwrap_err();
        assert!(matches!(err, ResolveError::Invalid(_)), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }

    #[test]
    fn pending_paths_round_trip() {
        let c = Path::new("cassettes/a.cassette.json");
        let n = pending_path(c);
        assert_eq!(n, Path::new("cassettes/a.cassette.json.new"));
        assert_eq!(target_of(&n).as_deref(), Some(c));
        assert_eq!(target_of(Path::new("x.json.new")), None);
        assert_eq!(target_of(c), None);
    }
}
