//! Finding the files a batch command works on inside a directory argument:
//! the one discovery every batch command shares (`replay`, `verify-cassettes`,
//! `record`, `rehash`, `lint`, `verify-cassettes --orphans`).
//!
//! Non-recursive and sorted by name, so a batch reports in a stable order
//! and `--shard` keys ([`crate::shard`]) are plain file names. A symlink
//! counts as what it points to.
//!
//! The two finders: `cassettes_in` (`*.cassette.json`) and `scenarios_in` (YAML
//! files with a top-level `prompt:`); `rerun` uses them too. Filtering by
//! `--shard` is not done here.

use std::path::{Path, PathBuf};

/// The suffix of a cassette file.
pub const CASSETTE_SUFFIX: &str = ".cassette.json";

/// The `*.cassette.json` regular files of `dir`, sorted.
pub fn cassettes_in(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    files_in(dir, |p, name| {
        name.ends_with(CASSETTE_SUFFIX) && p.is_file()
    })
}

/// The scenario YAML files of `dir`, sorted: `*.yaml`/`*.yml` with a
/// top-level `prompt:` key, or a multi-turn scenario's `turns:`. Model scripts (`*.model.yaml`) and session files
/// (no `prompt:`) are skipped; a file that does not parse as YAML is skipped
/// too (it is not recognisably a scenario).
pub fn scenarios_in(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    files_in(dir, |p, name| {
        if !(name.ends_with(".yaml") || name.ends_with(".yml")) || name.ends_with(".model.yaml") {
            return false;
        }
        let Ok(text) = std::fs::read_to_string(p) else {
            return false;
        };
        serde_yaml_ng::from_str::<serde_json::Value>(&text)
            .ok()
            .is_some_and(|v| v.get("prompt").is_some() || v.get("turns").is_some())
    })
}

/// Whether `path` is a cassette rather than a scenario: named
/// `*.cassette.json`, or a file whose first bytes are a JSON object with a
/// `cassetteVersion` member. For commands that take scenarios, so a cassette
/// given by mistake is named as one instead of failing as YAML.
pub fn is_cassette(path: &Path) -> bool {
    if path.to_string_lossy().ends_with(CASSETTE_SUFFIX) {
        return path.is_file();
    }
    let mut head = [0u8; 4096];
    let n = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .unwrap_or(0);
    let head = String::from_utf8_lossy(&head[..n]);
    head.trim_start().starts_with('{') && head.contains("\"cassetteVersion\"")
}

/// The one-line refusal of a cassette given to a command that takes
/// scenarios (`record`, `lint`).
pub fn cassette_given_for_scenario(command: &str, path: &Path) -> String {
    format!(
        "{command}: `{}` is a cassette, not a scenario: use `reel replay {}` (or `reel rerun`)",
        path.display(),
        path.display()
    )
}

fn files_in(dir: &Path, keep: impl Fn(&Path, &str) -> bool) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let path = e.path();
            keep(&path, &name).then_some(path)
        })
        .collect();
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cassettes_and_scenarios_are_told_apart() {
        let d = tempfile::tempdir().unwrap();
        let w = |n: &str, t: &str| std::fs::write(d.path().join(n), t).unwrap();
        w("b.cassette.json", "{}");
        w("a.cassette.json", "{}");
        w("notes.json", "{}");
        w("s.yaml", "name: s\nprompt: hi\n");
        w("s.model.yaml", "prompt: not a scenario\n");
        w("session.yaml", "folders: []\n");
        w("broken.yml", ": : :\n\t");
        std::fs::create_dir(d.path().join("dir.cassette.json")).unwrap();
        let names = |v: Vec<PathBuf>| -> Vec<String> {
            v.iter()
                .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(
            names(cassettes_in(d.path()).unwrap()),
            ["a.cassette.json", "b.cassette.json"]
        );
        assert_eq!(names(scenarios_in(d.path()).unwrap()), ["s.yaml"]);
        assert!(cassettes_in(&d.path().join("missing")).is_err());
    }
}
