//! Run directories as a resource: where they live, the marker that makes a
//! directory one of reel's, and `reel gc`, which removes kept ones.
//!
//! The root is `REEL_RUNS_DIR`, else `$XDG_CACHE_HOME/reel/runs`, else
//! `~/.cache/reel/runs` (per user, not a shared `/tmp`); a run is
//! `<root>/<scenario slug>/local_<id>`. reel writes [`MARKER`] into each run
//! directory as it creates it, and `gc` removes only directories holding it:
//! never a symlink, never anything else found in the root.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::Serialize;

/// The file reel writes first into every run directory.
pub const MARKER: &str = ".reel-run";

/// The runs root the environment names.
pub fn root() -> PathBuf {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let root = var("REEL_RUNS_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("reel/runs")))
        .or_else(|| var("HOME").map(|h| h.join(".cache/reel/runs")))
        .unwrap_or_else(|| std::env::temp_dir().join("reel-runs"));
    std::path::absolute(&root).unwrap_or(root)
}

/// A new run directory for scenario `name`, marked as reel's:
/// `<root>/<slug>/local_<base36 ns><pid>`.
pub fn create(name: &str) -> std::io::Result<PathBuf> {
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
}
