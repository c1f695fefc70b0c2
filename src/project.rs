//! The project configuration file, `reel.toml`: reel-only settings of a
//! project, never part of a cassette's frozen scenario.
//!
//! It is found by walking up from the current directory to the first
//! directory holding `reel.toml`, stopping at a repository root (a directory
//! holding `.git`). Keys are strict: an unknown section or key, or a value of
//! the wrong type, is an error naming the file, the key and the fix.
//!
//! ```toml
//! # Volatile values: regex → placeholder, applied in this order to tool
//! # results, texts and output files before `rerun` compares and `diff` shows.
//! [masks]
//! 'report id: [0-9a-f]{8}' = "report id: <id>"
//!
//! # Output files whose content changes on every run (path globs).
//! [volatile]
//! "outputs/*.log" = "presence"      # compared by presence only
//! "outputs/summary.txt" = "masked"  # compared by their masked text
//!
//! # Extra read-only paths the agent's sandbox allows (`~` = home).
//! [sandbox]
//! read = ["~/.cache/ms-playwright"]
//!
//! # Workspace snapshots (docs/snapshots.md): where the store is, and
//! # whether `record` takes them.
//! [snapshots]
//! dir = "cassettes/.reel-snapshots"   # relative to this file
//! record = true
//! ```
//!
//! `sandbox_read_paths()` hands the `[sandbox] read` list to the run's sandbox
//! policy. Masks are applied elsewhere: `rerun::divergence::Masks` and
//! `mask::normalize`.

use std::path::{Path, PathBuf};

use regex::Regex;

use crate::assert::glob::Glob;

/// The file name looked for.
pub const FILE_NAME: &str = "reel.toml";

/// A user mask: a regex and what replaces each match.
#[derive(Debug, Clone)]
pub struct Mask {
    /// The pattern as written (what `--explain`-style output names).
    pub pattern: String,
    pub regex: Regex,
    /// The replacement (`$1` names a capture group, as in `regex`).
    pub placeholder: String,
}

/// How a volatile file is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Volatile {
    /// Only whether it exists.
    Presence,
    /// Its text after the masks.
    Masked,
}

/// A loaded `reel.toml` (or the empty configuration when there is none).
#[derive(Debug, Clone, Default)]
pub struct ProjectConfig {
    /// Where it was read from (`None`: no file).
    pub path: Option<PathBuf>,
    pub masks: Vec<Mask>,
    volatile: Vec<(String, Glob, Volatile)>,
    sandbox_read: Vec<String>,
    /// `[snapshots]` (default: a store beside each cassette, taken on record).
    pub snapshots: Snapshots,
}

/// `[snapshots]`: the snapshot store's place and whether `record` takes
/// snapshots (docs/snapshots.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshots {
    /// `dir`, resolved against the directory of `reel.toml` (`None`: the
    /// default, `.reel-snapshots/` beside each cassette).
    pub dir: Option<PathBuf>,
    /// `record = false`: `record` takes no snapshot and writes no checkpoint.
    pub record: bool,
}

impl Default for Snapshots {
    fn default() -> Snapshots {
        Snapshots {
            dir: None,
            record: true,
        }
    }
}

/// A `reel.toml` that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {key}: {problem}\nhint: {fix}")]
pub struct ConfigError {
    pub file: PathBuf,
    /// The key path (`masks."a(b"`, `volatile`, `sandbox.read[1]`).
    pub key: String,
    pub problem: String,
    pub fix: String,
}

impl ProjectConfig {
    /// The configuration that applies in `start`: the nearest `reel.toml`
    /// at or above it (not above the repository root), or none.
    pub fn discover(start: &Path) -> Result<ProjectConfig, ConfigError> {
        match find(start) {
            Some(path) => ProjectConfig::load(&path),
            None => Ok(ProjectConfig::default()),
        }
    }

    /// [`ProjectConfig::discover`] from the current directory.
    pub fn discover_cwd() -> Result<ProjectConfig, ConfigError> {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        ProjectConfig::discover(&cwd)
    }

    /// Reads and checks the file at `path`.
    pub fn load(path: &Path) -> Result<ProjectConfig, ConfigError> {
        let err = |key: &str, problem: String, fix: &str| ConfigError {
            file: path.to_path_buf(),
            key: key.to_owned(),
            problem,
            fix: fix.to_owned(),
        };
        let text = std::fs::read_to_string(path).map_err(|e| {
            err(
                "(file)",
                format!("cannot be read: {e}"),
                "check its permissions",
            )
        })?;
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            err(
                "(syntax)",
                e.message().to_owned() + &line_of(&text, e.span()),
                "fix the TOML syntax (https://toml.io)",
            )
        })?;
        let mut config = ProjectConfig {
            path: Some(path.to_path_buf()),
            ..ProjectConfig::default()
        };
        for (section, value) in &table {
            match section.as_str() {
                "masks" => config.masks = masks(value, &err)?,
                "volatile" => config.volatile = volatile(value, &err)?,
                "sandbox" => config.sandbox_read = sandbox(value, &err)?,
                "snapshots" => config.snapshots = snapshots(value, path, &err)?,
                other => {
                    return Err(err(
                        other,
                        "unknown section".into(),
                        "the sections are [masks], [volatile], [sandbox] and [snapshots] \
                         (docs/project-config.md)",
                    ));
                }
            }
        }
        Ok(config)
    }

    /// How the output file at `path` (relative, POSIX) is compared, when
    /// `[volatile]` names it (the first matching glob wins).
    pub fn volatile(&self, path: &str) -> Option<Volatile> {
        self.volatile
            .iter()
            .find(|(_, g, _)| g.is_match(path))
            .map(|(_, _, v)| *v)
    }

    /// `[sandbox] read`: extra read-only paths the agent's sandbox allows,
    /// `~` expanded to the home directory.
    pub fn sandbox_read_paths(&self) -> Vec<PathBuf> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        self.sandbox_read
            .iter()
            .map(|p| match (p.strip_prefix('~'), &home) {
                (Some(rest), Some(h)) if rest.is_empty() || rest.starts_with('/') => {
                    h.join(rest.trim_start_matches('/'))
                }
                _ => PathBuf::from(p),
            })
            .collect()
    }
}

/// The nearest `reel.toml` at or above `start`, not above the first
/// directory holding `.git`.
fn find(start: &Path) -> Option<PathBuf> {
    for dir in start.ancestors() {
        let candidate = dir.join(FILE_NAME);
        if candidate.is_file() {
            return Some(candidate);
        }
        if dir.join(".git").exists() {
            return None;
        }
    }
    None
}

/// ` (line N)` for a parse error's span.
fn line_of(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    span.map(|s| {
        let line = text[..s.start.min(text.len())].matches('\n').count() + 1;
        format!(" (line {line})")
    })
    .unwrap_or_default()
}

type Err<'a> = dyn Fn(&str, String, &str) -> ConfigError + 'a;

fn masks(value: &toml::Value, err: &Err<'_>) -> Result<Vec<Mask>, ConfigError> {
    let table = value.as_table().ok_or_else(|| {
        err(
            "masks",
            format!("must be a table, found {}", value.type_str()),
            "write `[masks]` then lines `'PATTERN' = \"PLACEHOLDER\"`",
        )
    })?;
    let mut out = Vec::new();
    for (pattern, placeholder) in table {
        let key = format!("masks.{}", toml_key(pattern));
        let placeholder = placeholder.as_str().ok_or_else(|| {
            err(
                &key,
                format!(
                    "the placeholder must be a string, found {}",
                    placeholder.type_str()
                ),
                "write `'PATTERN' = \"<placeholder>\"`",
            )
        })?;
        let regex = Regex::new(pattern).map_err(|e| {
            err(
                &key,
                format!("not a valid regex: {e}"),
                "the pattern is a Rust `regex` (https://docs.rs/regex); escape literal `.` `(` `[` with `\\\\`",
            )
        })?;
        out.push(Mask {
            pattern: pattern.clone(),
            regex,
            placeholder: placeholder.to_owned(),
        });
    }
    Ok(out)
}

fn volatile(
    value: &toml::Value,
    err: &Err<'_>,
) -> Result<Vec<(String, Glob, Volatile)>, ConfigError> {
    let table = value.as_table().ok_or_else(|| {
        err(
            "volatile",
            format!("must be a table, found {}", value.type_str()),
            "write `[volatile]` then lines `\"outputs/GLOB\" = \"presence\"` (or \"masked\")",
        )
    })?;
    let mut out = Vec::new();
    for (glob, how) in table {
        let key = format!("volatile.{}", toml_key(glob));
        let how = match how.as_str() {
            Some("presence") => Volatile::Presence,
            Some("masked") => Volatile::Masked,
            _ => {
                return Err(err(
                    &key,
                    format!("must be \"presence\" or \"masked\", found {how}"),
                    "\"presence\" compares only whether the file exists; \"masked\" compares its \
                     text after the masks",
                ));
            }
        };
        out.push((glob.clone(), Glob::new(glob), how));
    }
    Ok(out)
}

fn sandbox(value: &toml::Value, err: &Err<'_>) -> Result<Vec<String>, ConfigError> {
    let table = value.as_table().ok_or_else(|| {
        err(
            "sandbox",
            format!("must be a table, found {}", value.type_str()),
            "write `[sandbox]` then `read = [\"PATH\", ...]`",
        )
    })?;
    let mut out = Vec::new();
    for (key, v) in table {
        if key != "read" {
            return Err(err(
                &format!("sandbox.{}", toml_key(key)),
                "unknown key".into(),
                "[sandbox] has one key: `read = [\"PATH\", ...]`",
            ));
        }
        let items = v.as_array().ok_or_else(|| {
            err(
                "sandbox.read",
                format!("must be an array of paths, found {}", v.type_str()),
                "write `read = [\"~/.cache/tool\"]`",
            )
        })?;
        for (i, item) in items.iter().enumerate() {
            match item.as_str() {
                Some(s) if !s.is_empty() => out.push(s.to_owned()),
                _ => {
                    return Err(err(
                        &format!("sandbox.read[{i}]"),
                        format!("must be a non-empty path string, found {item}"),
                        "write each path as a string: `read = [\"/opt/data\", \"~/.config/x\"]`",
                    ));
                }
            }
        }
    }
    Ok(out)
}

fn snapshots(value: &toml::Value, file: &Path, err: &Err<'_>) -> Result<Snapshots, ConfigError> {
    let table = value.as_table().ok_or_else(|| {
        err(
            "snapshots",
            format!("must be a table, found {}", value.type_str()),
            "write `[snapshots]` then `dir = \"PATH\"` and/or `record = false`",
        )
    })?;
    let mut out = Snapshots::default();
    for (key, v) in table {
        match (key.as_str(), v) {
            ("dir", toml::Value::String(s)) if !s.trim().is_empty() => {
                let base = file.parent().unwrap_or(Path::new("."));
                out.dir = Some(base.join(s));
            }
            ("dir", _) => {
                return Err(err(
                    "snapshots.dir",
                    format!("must be a non-empty path string, found {v}"),
                    "write `dir = \"cassettes/.reel-snapshots\"` (relative to reel.toml)",
                ));
            }
            ("record", toml::Value::Boolean(b)) => out.record = *b,
            ("record", _) => {
                return Err(err(
                    "snapshots.record",
                    format!("must be true or false, found {v}"),
                    "write `record = false` to record without snapshots",
                ));
            }
            _ => {
                return Err(err(
                    &format!("snapshots.{}", toml_key(key)),
                    "unknown key".into(),
                    "[snapshots] has two keys: `dir = \"PATH\"` and `record = true|false`",
                ));
            }
        }
    }
    Ok(out)
}

/// A key as TOML would need it written (quoted unless bare).
fn toml_key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_owned()
    } else {
        serde_json::to_string(k).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<ProjectConfig, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        std::fs::write(&path, text).unwrap();
        ProjectConfig::load(&path).map_err(|e| {
            e.to_string()
                .replace(&dir.path().display().to_string(), "DIR")
        })
    }

    #[test]
    fn the_snapshots_section_is_strict_and_its_dir_is_relative_to_the_file() {
        let c = load("[snapshots]\ndir = \"snaps\"\nrecord = false\n").unwrap();
        assert!(c.snapshots.dir.unwrap().ends_with("snaps"));
        assert!(!c.snapshots.record);
        assert_eq!(load("").unwrap().snapshots, Snapshots::default());
        let e = load("[snapshots]\nrecord = \"no\"\n").unwrap_err();
        assert!(e.contains("snapshots.record: must be true or false"), "{e}");
        let e = load("[snapshots]\nstore = \"x\"\n").unwrap_err();
        assert!(e.contains("snapshots.store: unknown key"), "{e}");
        let e = load("[snapshots]\ndir = \"\"\n").unwrap_err();
        assert!(e.contains("snapshots.dir: must be a non-empty path"), "{e}");
    }

    #[test]
    fn every_section_is_read_in_order() {
        let c = load(
            "[masks]\n'id: [0-9a-f]{8}' = \"id: <id>\"\n'b+' = \"B\"\n\
             [volatile]\n\"outputs/*.log\" = \"presence\"\n\"outputs/s.txt\" = \"masked\"\n\
             [sandbox]\nread = [\"~/.cache/x\", \"/opt/d\"]\n",
        )
        .unwrap();
        let pats: Vec<&str> = c.masks.iter().map(|m| m.pattern.as_str()).collect();
        assert_eq!(pats, ["id: [0-9a-f]{8}", "b+"]);
        assert_eq!(c.volatile("outputs/run.log"), Some(Volatile::Presence));
        assert_eq!(c.volatile("outputs/s.txt"), Some(Volatile::Masked));
        assert_eq!(c.volatile("outputs/other.txt"), None);
        let paths = c.sandbox_read_paths();
        assert_eq!(paths[1], PathBuf::from("/opt/d"));
        if let Some(home) = std::env::var_os("HOME") {
            assert_eq!(paths[0], PathBuf::from(home).join(".cache/x"));
        }
    }

    #[test]
    fn bad_files_name_the_file_the_key_and_the_fix() {
        let cases = [
            ("[mask]\n", "DIR/reel.toml: mask: unknown section"),
            (
                "[masks]\n'(' = \"x\"\n",
                "DIR/reel.toml: masks.\"(\": not a valid regex",
            ),
            (
                "[masks]\na = 1\n",
                "DIR/reel.toml: masks.a: the placeholder must be a string",
            ),
            (
                "[volatile]\n\"o/*\" = \"gone\"\n",
                "DIR/reel.toml: volatile.\"o/*\": must be",
            ),
            (
                "[sandbox]\nwrite = []\n",
                "DIR/reel.toml: sandbox.write: unknown key",
            ),
            (
                "[sandbox]\nread = [\"\"]\n",
                "DIR/reel.toml: sandbox.read[0]: must be",
            ),
            ("[masks\n", "DIR/reel.toml: (syntax): "),
        ];
        for (text, want) in cases {
            let e = load(text).unwrap_err();
            assert!(e.starts_with(want), "{text:?}: {e}");
            assert!(e.contains("\nhint: "), "{e}");
        }
    }

    #[test]
    fn discovery_walks_up_and_stops_at_the_repository_root() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let deep = repo.join("a/b");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::create_dir(repo.join(".git")).unwrap();
        // Above the repository root: not found.
        std::fs::write(dir.path().join(FILE_NAME), "[masks]\n").unwrap();
        assert!(ProjectConfig::discover(&deep).unwrap().path.is_none());
        std::fs::write(repo.join(FILE_NAME), "[masks]\n'x' = \"y\"\n").unwrap();
        let c = ProjectConfig::discover(&deep).unwrap();
        assert_eq!(c.path.as_deref(), Some(repo.join(FILE_NAME).as_path()));
        assert_eq!(c.masks.len(), 1);
    }
}
