//! Run directories as a resource: where they live, the marker that makes a
//! directory one of reel's, and `reel gc`, which removes kept ones.
//!
//! The root is `REEL_RUNS_DIR`, else `<tmp>/reel-<uid>/runs`, where `<tmp>`
//! is the system temp dir (`TMPDIR`, else `/tmp`) unless that path is
//! personal (beneath `HOME`, or one of the home-like prefixes the privacy
//! gate reports), then `/tmp`. Why not the home's cache: every recorded
//! event spells the run's paths (the agent's cwd, tool inputs, the skill's
//! base directory), so a run under `~/.cache` put the user's home and login
//! name into every cassette and failed `verify-cassettes`' path check. A
//! path under the temp dir carries neither; `reel-<uid>` is created `0700`
//! and refused unless it is a real directory owned by this user with no
//! access for others (another user may create the name first in a shared
//! `/tmp`). A run is `<root>/<scenario slug>/local_<id>`. reel writes
//! [`MARKER`] into each run directory as it creates it, and `gc` removes
//! only directories holding it: never a symlink, never anything else found
//! in the root.
//!
//! `create` makes a run directory marked with `.reel-run`; `gc` removes by age
//! (a week by default) or all. Printing is `report::gc`; what a run does is
//! `run`.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::Serialize;

/// The file reel writes first into every run directory.
pub const MARKER: &str = ".reel-run";

/// Path prefixes that name a person's directories (the privacy gate's
/// `path` class, `verify::detect`): a temp dir under one is not used.
const PERSONAL: &[&str] = &[
    "/Users/",
    "/home/",
    "/root/",
    "/private/var/",
    "/var/folders/",
    "/Volumes/",
];

fn env_path(key: &str) -> Option<PathBuf> {
    std::env::var_os(key)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The runs root the environment names.
pub fn root() -> PathBuf {
    let root = env_path("REEL_RUNS_DIR").unwrap_or_else(default_root);
    std::path::absolute(&root).unwrap_or(root)
}

/// `<tmp>/reel-<uid>/runs`: the root when `REEL_RUNS_DIR` is unset.
pub fn default_root() -> PathBuf {
    private_parent().join("runs")
}

/// `<tmp>/reel-<uid>`, the directory that keeps the default root private.
fn private_parent() -> PathBuf {
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    neutral_temp_dir().join(format!("reel-{uid}"))
}

/// The system temp dir, unless it is personal (then `/tmp`).
fn neutral_temp_dir() -> PathBuf {
    let tmp = std::env::temp_dir();
    let home = env_path("HOME").filter(|h| h.is_absolute() && h != Path::new("/"));
    let text = format!("{}/", tmp.display());
    let personal = home.as_deref().is_some_and(|h| tmp.starts_with(h))
        || PERSONAL.iter().any(|p| text.starts_with(p));
    if personal || !tmp.is_absolute() {
        PathBuf::from("/tmp")
    } else {
        tmp
    }
}

/// Creates `dir` (mode `0700`) if missing, then refuses it unless it is a
/// real directory (not a symlink) owned by this user that no one else may
/// enter: in a shared temp dir another user can create the name first.
fn ensure_private(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent)?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(dir)?;
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let why = if meta.file_type().is_symlink() {
        Some("it is a symlink".to_owned())
    } else if !meta.is_dir() {
        Some("it is not a directory".to_owned())
    } else if meta.uid() != uid {
        Some(format!(
            "it belongs to uid {}, not to you (uid {uid})",
            meta.uid()
        ))
    } else if meta.permissions().mode() & 0o077 != 0 {
        Some(format!(
            "others may access it (mode {:o}, want 700)",
            meta.permissions().mode() & 0o777
        ))
    } else {
        None
    };
    match why {
        None => Ok(()),
        Some(why) => Err(std::io::Error::other(format!(
            "`{}` cannot hold reel's runs: {why}; remove it (or `chmod 700` it if it is \
             yours), or set REEL_RUNS_DIR",
            dir.display()
        ))),
    }
}

/// A new run directory for scenario `name`, marked as reel's:
/// `<root>/<slug>/local_<base36 ns><pid>`.
pub fn create(name: &str) -> std::io::Result<PathBuf> {
    if env_path("REEL_RUNS_DIR").is_none() {
        ensure_private(&private_parent())?;
    }
    create_in(&root(), name)
}

/// [`create`] under a given runs root.
pub fn create_in(root: &Path, name: &str) -> std::io::Result<PathBuf> {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let mut id = String::new();
    let mut n = nanos;
    while n > 0 {
        let d = (n % 36) as u32;
        id.insert(0, std::char::from_digit(d, 36).unwrap_or('0'));
        n /= 36;
    }
    let dir = root
        .join(crate::scenario::slug(name))
        .join(format!("local_{id}{}", std::process::id()));
    create_private(&dir)?;
    crate::atomic::write_atomic(&dir.join(MARKER), b"reel run directory\n")?;
    Ok(dir)
}

/// Creates `dir` and its missing parents `0700`, and makes `dir` itself
/// `0700` whatever existed: a run directory holds what the agent saw (its
/// MCP config, the session's files, the outputs) and is its user's alone.
fn create_private(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

/// Which kept runs `gc` removes.
#[derive(Debug, Clone, Copy)]
pub enum Select {
    All,
    /// Runs created at least this long ago.
    OlderThan(Duration),
}

/// One run directory `gc` looked at.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunEntry {
    pub path: PathBuf,
    /// Seconds since it was created (its marker's modification time).
    pub age_seconds: u64,
    /// Bytes of its regular files.
    pub bytes: u64,
    /// Removed (or, under `--dry-run`, would be).
    pub removed: bool,
}

/// Something in the root that is not a reel run directory, left alone.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

/// What `gc` did.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GcReport {
    pub root: PathBuf,
    pub dry_run: bool,
    pub runs: Vec<RunEntry>,
    pub skipped: Vec<Skipped>,
    /// A run that matched but could not be removed, with why.
    pub errors: Vec<Skipped>,
}

/// Removes (or, `dry_run`, lists) the kept runs under `root` that `select`
/// picks, as of `now`. A missing root is an empty report.
pub fn gc(root: &Path, select: Select, dry_run: bool, now: SystemTime) -> GcReport {
    let mut report = GcReport {
        root: root.to_path_buf(),
        dry_run,
        ..GcReport::default()
    };
    for slug in sorted_entries(root) {
        if !is_real_dir(&slug, &mut report.skipped) {
            continue;
        }
        for run in sorted_entries(&slug) {
            if !is_real_dir(&run, &mut report.skipped) {
                continue;
            }
            let Some(created) = marker_time(&run) else {
                report.skipped.push(Skipped {
                    path: run,
                    reason: format!("no {MARKER} marker: not a reel run directory"),
                });
                continue;
            };
            let age = now.duration_since(created).unwrap_or_default();
            let picked = match select {
                Select::All => true,
                Select::OlderThan(limit) => age >= limit,
            };
            let mut entry = RunEntry {
                bytes: size_of(&run),
                path: run,
                age_seconds: age.as_secs(),
                removed: picked,
            };
            if picked
                && !dry_run
                && let Err(e) = std::fs::remove_dir_all(&entry.path)
            {
                entry.removed = false;
                report.errors.push(Skipped {
                    path: entry.path.clone(),
                    reason: e.to_string(),
                });
            }
            report.runs.push(entry);
        }
        if !dry_run {
            // Only an emptied scenario directory goes (rmdir refuses others).
            let _ = std::fs::remove_dir(&slug);
        }
    }
    report
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    out.sort();
    out
}

/// A directory itself, not a symlink to one (a link is never followed).
fn is_real_dir(p: &Path, skipped: &mut Vec<Skipped>) -> bool {
    let reason = match std::fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => return true,
        Ok(m) if m.file_type().is_symlink() => "a symlink: never followed",
        Ok(_) => "not a directory",
        Err(_) => "unreadable",
    };
    skipped.push(Skipped {
        path: p.to_path_buf(),
        reason: reason.into(),
    });
    false
}

/// When the run was created: its marker's modification time, if the marker
/// is a regular file.
fn marker_time(run: &Path) -> Option<SystemTime> {
    let m = std::fs::symlink_metadata(run.join(MARKER)).ok()?;
    m.is_file().then(|| m.modified().ok()).flatten()
}

/// Bytes of the regular files under `dir`, links not followed.
fn size_of(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(t) if t.is_file() => total += e.metadata().map_or(0, |m| m.len()),
                _ => {}
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A run directory, and the parents reel creates for it, are private
    /// to the user; an existing run directory is made so.
    #[test]
    fn run_directories_are_created_0700() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("runs");
        let dir = create_in(&root, "Some scenario").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(dir.parent().unwrap()), 0o700);
        assert_eq!(mode(&root), 0o700);
        let open = t.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        create_private(&open).unwrap();
        assert_eq!(mode(&open), 0o700);
    }

    #[test]
    fn the_private_parent_is_created_0700_and_refused_when_shared_or_a_link() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("reel-1");
        ensure_private(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        ensure_private(&dir).unwrap();

        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let e = ensure_private(&dir).unwrap_err().to_string();
        assert!(e.contains("others may access it (mode 755"), "{e}");
        assert!(e.contains("REEL_RUNS_DIR"), "{e}");

        let link = t.path().join("reel-2");
        std::os::unix::fs::symlink(t.path().join("elsewhere"), &link).unwrap();
        std::fs::create_dir(t.path().join("elsewhere")).unwrap();
        let e = ensure_private(&link).unwrap_err().to_string();
        assert!(e.contains("it is a symlink"), "{e}");

        let file = t.path().join("reel-3");
        std::fs::write(&file, "").unwrap();
        let e = ensure_private(&file).unwrap_err().to_string();
        assert!(e.contains("not a directory"), "{e}");
    }

    #[test]
    fn the_default_root_is_named_by_uid_only() {
        let root = default_root();
        let text = root.display().to_string();
        // SAFETY: geteuid has no preconditions.
        let uid = unsafe { libc::geteuid() };
        assert!(text.ends_with(&format!("/reel-{uid}/runs")), "{text}");
        assert!(!PERSONAL.iter().any(|p| text.starts_with(p)), "{text}");
    }
}
