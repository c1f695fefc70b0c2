//! The scenario YAML a cassette was recorded from — its "sibling" — found the
//! way cowork-harness finds it (spec/replay.md §2.4): the cassette's
//! `scenarioSource` resolved against the cassette's directory when that path
//! exists, else a lookup by the slug of the frozen `scenario.name` at
//! `<dir>/../scenarios/<slug>.yaml|.yml` then `<dir>/<slug>.yaml|.yml`.
//!
//! This is the one resolver: `replay --reassert`, the default replay's
//! sibling notices and `verify-cassettes`' scenario-drift and session-shape
//! checks use it. It only finds a path; it does not read or parse
//! the file (that is [`super::Scenario::load_authored`]).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::cassette::Cassette;

/// How the sibling was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// The cassette's recorded `scenarioSource`.
    Persisted,
    /// The slug of `scenario.name` at one of the conventional places.
    NameLookup,
}

/// The outcome of a lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lookup {
    /// The sibling, absolute and lexically normalised (`..` collapsed, no
    /// symlink followed), as the original shows it.
    pub found: Option<(PathBuf, Via)>,
    /// `scenarioSource` as recorded, when it names a path that is gone.
    pub persisted_missing: Option<String>,
    /// Every path tried, in order (for a "none found" message).
    pub tried: Vec<PathBuf>,
}

impl Lookup {
    /// The sibling's path, if one was found.
    pub fn path(&self) -> Option<&Path> {
        self.found.as_ref().map(|(p, _)| p.as_path())
    }
}

/// Finds the sibling scenario of `cassette`.
pub fn resolve(cassette: &Cassette) -> Lookup {
    let dir = crate::paths::resolve_cwd(cassette.dir());
    let mut lookup = Lookup {
        found: None,
        persisted_missing: None,
        tried: Vec::new(),
    };
    if let Some(src) = cassette.scenario_source() {
        let persisted = crate::paths::resolve_cwd(&dir.join(src));
        lookup.tried.push(persisted.clone());
        if persisted.exists() {
            lookup.found = Some((persisted, Via::Persisted));
            return lookup;
        }
        lookup.persisted_missing = Some(src.to_owned());
    }
    // A nameless cassette has no derivable scenario path. The slug never
    // contains a separator or `..`, so an untrusted name cannot walk away.
    let Some(name) = cassette
        .scenario()
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    else {
        return lookup;
    };
    let slug = super::slug(name);
    let scenarios = crate::paths::resolve_cwd(&dir.join("..").join("scenarios"));
    for candidate in [
        scenarios.join(format!("{slug}.yaml")),
        scenarios.join(format!("{slug}.yml")),
        dir.join(format!("{slug}.yaml")),
        dir.join(format!("{slug}.yml")),
    ] {
        lookup.tried.push(candidate.clone());
        if candidate.exists() {
            lookup.found = Some((candidate, Via::NameLookup));
            break;
        }
    }
    lookup
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cassette_at(path: &Path, doc: Value) -> Cassette {
        std::fs::write(path, serde_json::to_string(&doc).unwrap()).unwrap();
        Cassette::load(path).unwrap()
    }

    fn doc(name: &str, source: Option<&str>) -> Value {
        let mut d = json!({
            "cassetteVersion": 12,
            "scenario": {"name": name, "prompt": "hi", "session": "(inline)", "assert": []},
            "events": []
        });
        if let Some(s) = source {
            d["scenarioSource"] = json!(s);
        }
        d
    }

    #[test]
    fn persisted_source_first_then_the_slug_lookup_in_order() {
        let tmp = tempfile::tempdir().unwrap();
        let cassettes = tmp.path().join("cassettes");
        let scenarios = tmp.path().join("scenarios");
        std::fs::create_dir_all(&cassettes).unwrap();
        std::fs::create_dir_all(&scenarios).unwrap();
        std::fs::write(scenarios.join("a-b.yml"), "prompt: x\n").unwrap();
        std::fs::write(cassettes.join("a-b.yaml"), "prompt: x\n").unwrap();
        std::fs::write(tmp.path().join("elsewhere.yaml"), "prompt: x\n").unwrap();

        let c = cassette_at(
            &cassettes.join("x.cassette.json"),
            doc("a/b", Some("../elsewhere.yaml")),
        );
        let l = resolve(&c);
        assert_eq!(
            l.found,
            Some((
                crate::paths::resolve_cwd(&tmp.path().join("elsewhere.yaml")),
                Via::Persisted
            ))
        );

        // A recorded source that is gone falls back to the name (slugged).
        let c = cassette_at(
            &cassettes.join("x.cassette.json"),
            doc("a/b", Some("../gone.yaml")),
        );
        let l = resolve(&c);
        assert_eq!(l.persisted_missing.as_deref(), Some("../gone.yaml"));
        assert_eq!(
            l.found,
            Some((
                crate::paths::resolve_cwd(&scenarios.join("a-b.yml")),
                Via::NameLookup
            ))
        );
        assert_eq!(l.tried.len(), 3, "{:?}", l.tried);

        std::fs::remove_file(scenarios.join("a-b.yml")).unwrap();
        let l = resolve(&c);
        assert_eq!(
            l.path(),
            Some(crate::paths::resolve_cwd(&cassettes.join("a-b.yaml")).as_path())
        );
    }

    #[test]
    fn a_nameless_cassette_without_a_source_has_no_sibling() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("scenario.yaml"), "prompt: x\n").unwrap();
        let c = cassette_at(&tmp.path().join("x.cassette.json"), doc("", None));
        let l = resolve(&c);
        assert_eq!(l.found, None);
        assert!(l.tried.is_empty());
    }
}
