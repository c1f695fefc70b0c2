//! Which `assert:` block a replay evaluates (spec/replay.md §2.4): the frozen
//! one (default), or the on-disk scenario's (`--assert-from FILE` /
//! `--reassert`) after the recording-shaping drift check; and `--write`, which
//! persists a re-validated block back into the cassette atomically.
//!
//! It does not evaluate anything and never touches `events`/`controlOut`.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::assert::catalog::{self, Bucket};
use crate::cassette::Cassette;
use crate::cassette::write::{self, WriteStyle};

/// Where the evaluated assertions come from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum AssertSource {
    /// The cassette's frozen `scenario.assert` / `expect_denied`.
    #[default]
    Frozen,
    /// `--assert-from FILE`.
    From(PathBuf),
    /// `--reassert`: the cassette's sibling scenario YAML.
    Reassert,
}

impl AssertSource {
    pub fn is_reassert(&self) -> bool {
        !matches!(self, AssertSource::Frozen)
    }
}

/// Why the on-disk block could not be used (a per-file error, exit 2).
#[derive(Debug, thiserror::Error)]
pub enum AssertSourceError {
    #[error(
        "--reassert: no sibling scenario found for this cassette (looked at {looked}) — pass --assert-from <scenario.yaml>"
    )]
    NoSibling { looked: String },
    #[error("scenario `{path}`: {detail}")]
    Unloadable { path: String, detail: String },
    #[error(
        "scenario `{path}` drifted from the recording: `{field}` differs (on disk {disk}, recorded {recorded}) — the assert-only loop cannot change what shaped the recording; re-record the cassette"
    )]
    Drift {
        path: String,
        field: &'static str,
        disk: String,
        recorded: String,
    },
}

/// The assertions to evaluate, plus the notices choosing them produced.
#[derive(Debug, Clone, Default)]
pub struct ChosenAsserts {
    pub items: Vec<Map<String, Value>>,
    /// `expect_denied` hosts (each one full skip).
    pub expect_denied: Vec<Value>,
    /// The on-disk file used (reassert modes).
    pub scenario_file: Option<PathBuf>,
    /// `::notice::` / `::warning::` lines to print before the footer.
    pub notices: Vec<String>,
}

/// Produces a field's default value.
type DefaultValue = fn() -> Value;

/// Recording-shaping fields and their defaults (`RECORDING_SHAPING_FIELDS`).
const SHAPING: [(&str, DefaultValue); 7] = [
    ("prompt", || Value::Null),
    ("baseline", || Value::String("latest".into())),
    ("fidelity", || Value::String("container".into())),
    ("lane", || Value::String("local".into())),
    ("answers", || Value::Array(Vec::new())),
    ("skills", || Value::Array(Vec::new())),
    ("requires_capabilities", || Value::Array(Vec::new())),
];

fn items_of(v: Option<&Value>) -> Vec<Map<String, Value>> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|i| i.as_object().cloned()).collect())
        .unwrap_or_default()
}

/// Chooses the assertions for `cassette` per `source`.
pub fn choose(
    cassette: &Cassette,
    source: &AssertSource,
) -> Result<ChosenAsserts, AssertSourceError> {
    let scenario = cassette.scenario();
    let frozen = || ChosenAsserts {
        items: items_of(scenario.get("assert")),
        expect_denied: scenario
            .get("expect_denied")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        ..Default::default()
    };
    let (path, shown) = match source {
        AssertSource::Frozen => return Ok(frozen()),
        AssertSource::From(p) => (p.clone(), p.display().to_string()),
        AssertSource::Reassert => {
            let p = find_sibling(cassette)?;
            let shown = std::fs::canonicalize(&p)
                .unwrap_or_else(|_| p.clone())
                .display()
                .to_string();
            (p, shown)
        }
    };
    let disk = load_scenario(&path)?;
    for (field, default) in SHAPING {
        let norm = |v: Option<&Value>| v.cloned().unwrap_or_else(default);
        let d = norm(disk.get(field));
        let r = norm(scenario.get(field));
        if d != r {
            return Err(AssertSourceError::Drift {
                path: path.display().to_string(),
                field,
                disk: compact(&d),
                recorded: compact(&r),
            });
        }
    }
    let mut chosen = ChosenAsserts {
        items: items_of(disk.get("assert")),
        expect_denied: disk
            .get("expect_denied")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        scenario_file: Some(path.clone()),
        notices: Vec::new(),
    };
    chosen.notices.push(format!(
        "::notice:: [replay] re-asserting from on-disk {shown} (authored fields prompt/baseline/fidelity/lane/answers/skills/requires_capabilities verified unchanged; skill-content drift will hard-fail; session model/mounts/discovery is NOT verified — re-record if the session changed)"
    ));
    let frozen_denied = frozen().expect_denied;
    if chosen.expect_denied != frozen_denied {
        chosen.notices.push(format!(
            "::warning:: [replay] {shown}: expect_denied changed — sourced, NOT evaluated (egress is live-only); re-record to check it"
        ));
    }
    if cassette.fingerprint().and_then(|f| f.skill_hash).is_none() {
        chosen.notices.push(
            "::warning:: [replay] this cassette has no fingerprint.skillHash — skill drift cannot be verified for the re-asserted block"
                .into(),
        );
    }
    Ok(chosen)
}

fn compact(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 80 {
        format!("{}…", s.chars().take(80).collect::<String>())
    } else {
        s
    }
}

/// `scenarioSource` resolved against the cassette dir, else
/// `<dir>/../scenarios/<name>.y(a)ml`, `<dir>/<name>.y(a)ml`.
fn find_sibling(cassette: &Cassette) -> Result<PathBuf, AssertSourceError> {
    let dir = cassette.dir();
    let mut candidates = Vec::new();
    if let Some(src) = cassette.scenario_source() {
        candidates.push(dir.join(src));
    }
    let mut names: Vec<String> = Vec::new();
    if let Some(n) = cassette.scenario().get("name").and_then(Value::as_str) {
        names.push(n.to_string());
    }
    if let Some(stem) = cassette.path.file_name().and_then(|f| f.to_str()).map(|f| {
        f.trim_end_matches(".json")
            .trim_end_matches(".cassette")
            .to_string()
    }) && !names.contains(&stem)
    {
        names.push(stem);
    }
    for n in &names {
        // A name from an untrusted cassette must not walk the filesystem.
        if n.contains('/') || n.contains('\\') || n.contains("..") || n.is_empty() {
            continue;
        }
        for ext in ["yaml", "yml"] {
            candidates.push(dir.join("..").join("scenarios").join(format!("{n}.{ext}")));
            candidates.push(dir.join(format!("{n}.{ext}")));
        }
    }
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .ok_or_else(|| AssertSourceError::NoSibling {
            looked: candidates
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Reads a scenario YAML and validates its `assert:` items strictly.
///
/// INTEGRATION POINT: the strict scenario loader belongs to `crate::scenario`
/// (the "record" helper); until it is on `main` this reads the YAML and checks
/// the assertion block with the shared catalog.
fn load_scenario(path: &Path) -> Result<Map<String, Value>, AssertSourceError> {
    let unloadable = |detail: String| AssertSourceError::Unloadable {
        path: path.display().to_string(),
        detail,
    };
    let text =
        std::fs::read_to_string(path).map_err(|e| unloadable(format!("cannot read: {e}")))?;
    let yaml: serde_yaml::Value =
        serde_yaml::from_str(&text).map_err(|e| unloadable(format!("invalid YAML: {e}")))?;
    let json = serde_json::to_value(yaml)
        .map_err(|e| unloadable(format!("not representable as JSON: {e}")))?;
    let Value::Object(map) = json else {
        return Err(unloadable("a scenario must be a mapping of keys".into()));
    };
    if !map.get("prompt").is_some_and(Value::is_string) {
        return Err(unloadable("`prompt` is required (a string)".into()));
    }
    if let Some(items) = map.get("assert") {
        let Some(items) = items.as_array() else {
            return Err(unloadable("`assert` must be a list".into()));
        };
        for (i, item) in items.iter().enumerate() {
            catalog::validate(item).map_err(|e| unloadable(format!("assert[{i}]: {e}")))?;
        }
    }
    Ok(map)
}

/// Why `--write` refused.
#[derive(Debug, thiserror::Error)]
pub enum WriteRefusal {
    #[error("refusing to persist: {0}")]
    Unverifiable(String),
    #[error(
        "refusing to persist a failing verdict (read the failures, then pass --allow-failing if you really mean it)"
    )]
    Failing,
    #[error("could not write the cassette: {0}")]
    Io(String),
}

/// Keys of `items` that this cassette could not evaluate for lack of evidence
/// (live-only keys are allowed: they are skipped on every replay).
pub fn unverifiable_keys(
    items: &[Map<String, Value>],
    is_active: impl Fn(&str) -> bool,
) -> Vec<String> {
    let mut out = Vec::new();
    for k in items.iter().flat_map(|m| m.keys()) {
        let needs_evidence = matches!(
            catalog::bucket(k),
            Some(Bucket::NeedsControlOut) | Some(Bucket::NeedsManifest)
        );
        if needs_evidence && !is_active(k) && !out.contains(k) {
            out.push(k.clone());
        }
    }
    out
}

/// Persists `chosen` as the cassette's `scenario.assert` / `expect_denied`
/// (only those two keys change; `events`/`controlOut`/`fingerprint` keep their
/// bytes). The file keeps the spelling it was written in (JS or Python
/// `json.dump` style, see `cassette::write`), so an unchanged block rewrites
/// byte-identically; the write is atomic.
pub fn write_back(cassette: &Cassette, chosen: &ChosenAsserts) -> Result<(), WriteRefusal> {
    let mut doc = cassette.doc.clone();
    let Some(Value::Object(s)) = doc.get_mut("scenario") else {
        return Err(WriteRefusal::Io("cassette has no scenario object".into()));
    };
    s.insert(
        "assert".into(),
        Value::Array(chosen.items.iter().cloned().map(Value::Object).collect()),
    );
    s.insert(
        "expect_denied".into(),
        Value::Array(chosen.expect_denied.clone()),
    );
    let style = std::fs::read(&cassette.path)
        .map(|b| WriteStyle::detect(&b))
        .unwrap_or(WriteStyle::JS);
    let text = write::to_json_pretty_with(&doc, style);
    crate::atomic::write_atomic(&cassette.path, text.as_bytes())
        .map_err(|e| WriteRefusal::Io(format!("write `{}`: {e}", cassette.path.display())))
}
