//! The per-user release cache: where it is, what it holds, how much disk each
//! release takes, and pruning.
//!
//! `REEL_AGENTS_DIR`, else `$XDG_CACHE_HOME/reel/agents`, else
//! `~/.cache/reel/agents`. A release directory appears only complete (the
//! install renames a finished temp directory into place), so anything named
//! like a version with the marker file is usable; `.tmp-*` directories are
//! interrupted installs that `prune` removes.

use std::path::{Path, PathBuf};

use semver::Version;

use super::AgentsError;

/// The marker an install writes last, before the rename.
pub const MARKER: &str = ".reel-agent.json";

/// The release cache.
#[derive(Debug, Clone)]
pub struct Cache {
    root: PathBuf,
}

/// How a release runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// `cli.js`, run by `node` (up to 2.1.112).
    NodeScript,
    /// A native executable (from 2.1.113).
    Native,
}

/// One installed release.
#[derive(Debug, Clone)]
pub struct Installed {
    pub version: Version,
    /// The npm prefix (`<cache>/<version>`).
    pub dir: PathBuf,
    pub layout: Layout,
    /// The package's `claude` bin file inside `node_modules`.
    pub program: PathBuf,
}

impl Cache {
    /// The cache the environment names.
    pub fn from_env() -> Cache {
        let root = std::env::var_os("REEL_AGENTS_DIR")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("XDG_CACHE_HOME")
                    .filter(|v| !v.is_empty())
                    .map(|d| PathBuf::from(d).join("reel/agents"))
            })
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|v| !v.is_empty())
                    .map(|h| PathBuf::from(h).join(".cache/reel/agents"))
            })
            .unwrap_or_else(|| std::env::temp_dir().join("reel-agents"));
        Cache::at(root)
    }

    pub fn at(root: impl Into<PathBuf>) -> Cache {
        let root = root.into();
        Cache {
            root: std::path::absolute(&root).unwrap_or(root),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn dir_of(&self, v: &Version) -> PathBuf {
        self.root.join(v.to_string())
    }

    /// The installed release `v`, if complete.
    pub fn get(&self, v: &Version) -> Option<Installed> {
        Installed::read(v.clone(), self.dir_of(v))
    }

    /// Every complete release, ascending.
    pub fn installed(&self) -> Vec<Installed> {
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return Vec::new();
        };
        let mut out: Vec<Installed> = entries
            .flatten()
            .filter_map(|e| {
                let v = Version::parse(e.file_name().to_str()?).ok()?;
                Installed::read(v, e.path())
            })
            .collect();
        out.sort_by(|a, b| a.version.cmp(&b.version));
        out
    }

    /// Interrupted installs (temp directories left by a killed install).
    pub fn leftovers(&self) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(".tmp-"))
            .map(|e| e.path())
            .collect()
    }

    /// Removes `v` (a rename out of the way first, so a reader never sees
    /// half a tree); returns the bytes freed.
    pub fn remove(&self, v: &Version) -> std::io::Result<u64> {
        let dir = self.dir_of(v);
        let bytes = disk_usage(&dir);
        let doomed = self
            .root
            .join(format!(".tmp-remove-{v}-{}", std::process::id()));
        std::fs::rename(&dir, &doomed)?;
        std::fs::remove_dir_all(&doomed)?;
        Ok(bytes)
    }
}

impl Installed {
    /// The release installed in the npm prefix `dir` (`None` unless complete).
    pub fn read(version: Version, dir: PathBuf) -> Option<Installed> {
        if !dir.join(MARKER).is_file() {
            return None;
        }
        let pkg_dir = dir.join("node_modules").join(super::PACKAGE);
        let pkg: serde_json::Value =
            serde_json::from_slice(&std::fs::read(pkg_dir.join("package.json")).ok()?).ok()?;
        let bin = match &pkg["bin"] {
            serde_json::Value::String(s) => s.clone(),
            other => other.get("claude")?.as_str()?.to_owned(),
        };
        let layout = if bin.ends_with(".js") || bin.ends_with(".cjs") || bin.ends_with(".mjs") {
            Layout::NodeScript
        } else {
            Layout::Native
        };
        Some(Installed {
            version,
            program: pkg_dir.join(bin),
            dir,
            layout,
        })
    }

    /// Itself when it can run here: a `cli.js` release needs `node` on PATH.
    pub fn runnable(self) -> Result<Installed, AgentsError> {
        if self.layout == Layout::NodeScript && find_on_path("node").is_none() {
            return Err(AgentsError::unavailable(
                format!(
                    "Claude Code {} is a JavaScript release (cli.js) and no `node` is on PATH",
                    self.version
                ),
                "install Node.js 18 or newer (https://nodejs.org, or your package manager) and \
                 put `node` on PATH; releases from 2.1.113 on are native and need no node",
            ));
        }
        Ok(self)
    }

    /// Disk use of this release in bytes (hard links counted once).
    pub fn disk_usage(&self) -> u64 {
        disk_usage(&self.dir)
    }
}

/// `program` found in a directory of `$PATH` (the one lookup reel needs; a
/// crate for it would be a dependency for five lines).
pub fn find_on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(program))
            .find(|c| c.is_file())
    })
}

/// Bytes a tree takes on disk: allocated blocks, each hard-linked inode once
/// (a native release links its binary from the platform package).
pub fn disk_usage(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut seen = std::collections::HashSet::new();
    let mut total = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(meta) = e.path().symlink_metadata() else {
                continue;
            };
            if meta.is_dir() {
                stack.push(e.path());
            } else if seen.insert((meta.dev(), meta.ino())) {
                total += meta.blocks() * 512;
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_release(root: &Path, v: &str, bin: &str, marker: bool) {
        let pkg = root.join(v).join("node_modules/@anthropic-ai/claude-code");
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::write(
            pkg.join("package.json"),
            format!(r#"{{"name":"@anthropic-ai/claude-code","version":"{v}","bin":{{"claude":"{bin}"}}}}"#),
        )
        .unwrap();
        std::fs::write(pkg.join(bin.replace("bin/", "")), vec![0u8; 10_000]).unwrap();
        if marker {
            std::fs::write(root.join(v).join(MARKER), "{}").unwrap();
        }
    }

    #[test]
    fn only_complete_releases_are_listed_with_their_layout() {
        let tmp = tempfile::tempdir().unwrap();
        fake_release(tmp.path(), "2.1.112", "cli.js", true);
        fake_release(tmp.path(), "2.1.286", "bin/claude.exe", true);
        fake_release(tmp.path(), "2.1.9", "cli.js", false);
        std::fs::create_dir_all(tmp.path().join(".tmp-2.1.300-1")).unwrap();
        std::fs::create_dir_all(tmp.path().join("not-a-version")).unwrap();
        let cache = Cache::at(tmp.path());
        let got: Vec<(String, Layout)> = cache
            .installed()
            .iter()
            .map(|i| (i.version.to_string(), i.layout))
            .collect();
        assert_eq!(
            got,
            [
                ("2.1.112".to_string(), Layout::NodeScript),
                ("2.1.286".to_string(), Layout::Native)
            ]
        );
        assert_eq!(cache.leftovers().len(), 1);
        let native = cache.get(&Version::parse("2.1.286").unwrap()).unwrap();
        assert!(native.program.ends_with("claude-code/bin/claude.exe"));
        assert!(native.disk_usage() >= 10_000);
        let freed = cache.remove(&native.version).unwrap();
        assert!(freed >= 10_000);
        assert_eq!(cache.installed().len(), 1);
    }
}
