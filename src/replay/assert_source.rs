//! Which `assert:` block a replay evaluates (docs/spec/replay.md §2.4): the frozen
//! one (default), or the on-disk scenario's (`--assert-from FILE` /
//! `--reassert`) after the recording-shaping drift check; the default replay's
//! notices about a sibling scenario that no longer matches the cassette; and
//! `--write`, which persists a re-validated block back into the cassette
//! atomically.
//!
//! The on-disk scenario is read by the one scenario loader
//! (`crate::scenario::Scenario::load_authored`), found by the one sibling
//! resolver (`crate::scenario::sibling`) and checked for drift by the one
//! recording-shaping comparison (`crate::scenario::shaping::drift`). Blocks
//! are compared as `JSON.stringify` text (`shaping::js_text`), key order
//! included, as the original compares them. This module does not evaluate
//! anything and never touches `events`/`controlOut`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use crate::assert::catalog::{self, Bucket};
use crate::cassette::Cassette;
use crate::cassette::write::{self, WriteStyle};
use crate::scenario::metrics::{self, MetricDecl};
use crate::scenario::shaping::{self, FieldDrift};
use crate::scenario::{Scenario, ScenarioError, sibling};

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

    fn flag(&self) -> &'static str {
        match self {
            AssertSource::Reassert => "--reassert",
            _ => "--assert-from",
        }
    }
}

/// Why the on-disk block could not be used (a per-file error, exit 2).
#[derive(Debug, thiserror::Error)]
pub enum AssertSourceError {
    #[error(
        "--reassert: no sibling scenario found for this cassette (looked at {looked}{missing}) — \
            pass --assert-from <scenario.yaml>",
        missing = persisted_missing.as_ref().map(|s| format!("; recorded scenarioSource `{s}` is \
            missing")).unwrap_or_default()
    )]
    NoSibling {
        looked: String,
        persisted_missing: Option<String>,
    },
    #[error("{flag}: {source}{}", hint_suffix(.source))]
    Unloadable {
        flag: &'static str,
        source: ScenarioError,
    },
    #[error(
        "scenario `{path}` drifted from the recording: {} — the assert-only loop cannot change \
            what shaped the recording; re-record the cassette",
        fields
            .iter()
            .map(|d| format!(
                "`{}` differs (on disk {}, recorded {})",
                d.field,
                compact(&d.on_disk),
                compact(&d.recorded)
            ))
            .collect::<Vec<_>>()
            .join(", ")
    )]
    Drift {
        path: String,
        /// Every drifted recording-shaping field, in the original's order.
        fields: Vec<FieldDrift>,
    },
}

/// ` (hint: …)` for a loader error that carries one.
fn hint_suffix(e: &ScenarioError) -> String {
    e.hint()
        .map(|h| format!(" (hint: {h})"))
        .unwrap_or_default()
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
    /// The `metrics:` to measure, from the same scenario as the assertions.
    pub metrics: Vec<MetricDecl>,
}

/// The frozen scenario's `metrics:`. A block this build cannot read is not
/// measured, with a warning (the assertions still run).
fn frozen_metrics(scenario: &Map<String, Value>) -> (Vec<MetricDecl>, Vec<String>) {
    match metrics::parse(scenario.get("metrics")) {
        Ok(decls) => (decls, Vec::new()),
        Err((message, _)) => (
            Vec::new(),
            vec![format!(
                "::warning:: [replay] frozen scenario metrics are not measured: {message}"
            )],
        ),
    }
}

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
    let frozen_denied = || {
        scenario
            .get("expect_denied")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let (path, shown) = match source {
        AssertSource::Frozen => {
            let (metrics, notices) = frozen_metrics(scenario);
            return Ok(ChosenAsserts {
                items: items_of(scenario.get("assert")),
                expect_denied: frozen_denied(),
                notices,
                metrics,
                ..Default::default()
            });
        }
        AssertSource::From(p) => (p.clone(), p.display().to_string()),
        AssertSource::Reassert => {
            let p = sibling_scenario(cassette)?;
            let shown = p.display().to_string();
            (p, shown)
        }
    };
    let disk =
        Scenario::load_authored(&path).map_err(|source_error| AssertSourceError::Unloadable {
            flag: source.flag(),
            source: source_error,
        })?;
    let drifted = shaping::drift(scenario, crate::scenario::dir_of(&cassette.path), &disk);
    if !drifted.is_empty() {
        return Err(AssertSourceError::Drift {
            path: path.display().to_string(),
            fields: drifted,
        });
    }
    let disk_denied = disk
        .frozen
        .get("expect_denied")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut chosen = ChosenAsserts {
        items: disk
            .assert
            .iter()
            .filter_map(|i| i.as_object().cloned())
            .collect(),
        expect_denied: disk_denied,
        scenario_file: Some(path.clone()),
        notices: Vec::new(),
        metrics: disk.metrics.clone(),
    };
    let frozen_denied_changed = chosen.expect_denied != frozen_denied();
    chosen.notices = reassert_notices(cassette, &disk, &shown, frozen_denied_changed);
    Ok(chosen)
}

/// The sibling scenario `--reassert` reads, or what was looked for.
fn sibling_scenario(cassette: &Cassette) -> Result<PathBuf, AssertSourceError> {
    let lookup = sibling::resolve(cassette);
    if let Some(p) = lookup.path() {
        return Ok(p.to_owned());
    }
    let looked = if lookup.tried.is_empty() {
        "nothing: the cassette has no scenarioSource and no scenario.name".to_owned()
    } else {
        lookup
            .tried
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    Err(AssertSourceError::NoSibling {
        looked,
        persisted_missing: lookup.persisted_missing,
    })
}

/// What a re-assert from the on-disk scenario verified and what it cannot.
fn reassert_notices(
    cassette: &Cassette,
    disk: &Scenario,
    shown: &str,
    expect_denied_changed: bool,
) -> Vec<String> {
    let scenario = cassette.scenario();
    let skill_verifiable = cassette.fingerprint().and_then(|f| f.skill_hash).is_some();
    let mut notices = vec![format!(
        "::notice:: [replay] re-asserting from on-disk {shown} (authored fields {} verified \
            unchanged; skill-content drift {}; session model/mounts/discovery is NOT verified — \
            re-record if the session changed)",
        shaping::field_names(shaping::names_fixture(scenario, disk))
            .collect::<Vec<_>>()
            .join("/"),
        if skill_verifiable {
            "will hard-fail"
        } else {
            "NOT verifiable — no skill fingerprint"
        }
    )];
    if expect_denied_changed {
        notices.push(format!(
            "::warning:: [replay] {shown}: expect_denied changed — sourced, NOT evaluated (egress \
                is live-only); re-record to check it"
        ));
    }
    if !skill_verifiable {
        notices.push(
            "::warning:: [replay] this cassette has no skill fingerprint, so skill-content drift \
                can NOT be verified on the re-asserted block — re-asserting against possibly-stale \
                events; re-record to enable the skill-drift guard"
                .into(),
        );
    }
    notices
}

/// The default (frozen) replay's notices about the cassette's sibling
/// scenario (spec §2.4): it does not load, or its `assert:` or `prompt:`
/// differs from the frozen copy. Decoration only — never an error, never a
/// verdict change. A sibling that cannot be read or is not YAML (a half-written
/// file) stays silent; one that breaks the schema is worth saying.
pub fn sibling_notices(cassette: &Cassette) -> Vec<String> {
    let lookup = sibling::resolve(cassette);
    let Some(path) = lookup.path() else {
        return Vec::new();
    };
    let shown = path.display();
    let loaded = load_sibling(path);
    let disk = match &*loaded {
        Ok(s) => s,
        Err(e) if e.is_schema() => {
            return vec![format!(
                "::notice:: [replay] {shown} does not load: {} — replay used the scenario frozen \
                    in the cassette and is unaffected. Run `reel replay {} --assert-from {shown}` \
                    for the full error.",
                compact_error(&e.detail()),
                cassette.path.display()
            )];
        }
        Err(_) => return Vec::new(),
    };
    let scenario = cassette.scenario();
    let mut notices = Vec::new();
    let disk_assert = Value::Array(disk.assert.clone());
    let no_asserts = || Value::Array(Vec::new());
    if shaping::js_text(Some(&disk_assert), no_asserts)
        != shaping::js_text(scenario.get("assert"), no_asserts)
    {
        notices.push(format!(
            "::notice:: [replay] {shown} has a different `assert:` block; replay used the \
                assertions frozen in the cassette. Re-record, or `reel replay {} --assert-from \
                {shown}` to re-check against the on-disk block.",
            cassette.path.display()
        ));
    }
    let frozen_prompt = scenario.get("prompt").and_then(Value::as_str).unwrap_or("");
    if disk.prompt != frozen_prompt {
        notices.push(format!(
            "::notice:: [replay] {shown} has a different `prompt:` than the cassette's frozen \
                prompt; the frozen events reflect the recorded prompt. Re-record to sync \
                (verify-cassettes hard-fails this drift)."
        ));
    }
    notices
}

/// Whether sibling scenarios are read once per process ([`share_sibling_scenarios`]).
static SHARING: AtomicBool = AtomicBool::new(false);

type Loaded = Arc<Result<Scenario, ScenarioError>>;

/// Sibling scenarios loaded so far, by path, while [`SHARING`].
static SIBLINGS: Mutex<Option<HashMap<PathBuf, Loaded>>> = Mutex::new(None);

/// From now on, each sibling scenario file is read and validated once per
/// process, not once per cassette: `reel replay DIR` turns this on, where a
/// thousand recordings of one scenario share it (nothing writes a scenario
/// during a replay). Off by default, so a caller that edits a scenario
/// between two replays reads it afresh.
pub fn share_sibling_scenarios() {
    SHARING.store(true, Ordering::Relaxed);
}

/// The authored scenario at `path` ([`Scenario::load_authored`]), from
/// [`SIBLINGS`] when shared.
fn load_sibling(path: &Path) -> Loaded {
    if !SHARING.load(Ordering::Relaxed) {
        return Arc::new(Scenario::load_authored(path));
    }
    let lock = || {
        SIBLINGS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    if let Some(hit) = lock().get_or_insert_with(HashMap::new).get(path) {
        return Arc::clone(hit);
    }
    // Loaded outside the lock: the other threads' cassettes go on meanwhile
    // (two threads may both load a file the first time; either result is it).
    let loaded = Arc::new(Scenario::load_authored(path));
    lock()
        .get_or_insert_with(HashMap::new)
        .insert(path.to_path_buf(), Arc::clone(&loaded));
    loaded
}

/// One readable clause of a loader error: whitespace collapsed, at most 200
/// characters.
fn compact_error(message: &str) -> String {
    const LIMIT: usize = 200;
    let collapsed = message.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() > LIMIT {
        format!("{}…", collapsed.chars().take(LIMIT - 1).collect::<String>())
    } else {
        collapsed
    }
}

/// A drifted value shown in the error: at most 80 characters.
fn compact(s: &str) -> String {
    if s.chars().count() > 80 {
        format!("{}…", s.chars().take(80).collect::<String>())
    } else {
        s.to_owned()
    }
}

/// Why `--write` refused.
#[derive(Debug, thiserror::Error)]
pub enum WriteRefusal {
    #[error("refusing to persist: {0}")]
    Unverifiable(String),
    #[error(
        "refusing to persist a failing verdict (read the failures, then pass --allow-failing if \
            you really mean it)"
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_drift_error_names_every_field_with_both_values_and_the_fix() {
        let long = format!("\"{}\"", "p".repeat(100));
        let e = AssertSourceError::Drift {
            path: "s.yaml".into(),
            fields: vec![
                FieldDrift {
                    field: "prompt",
                    on_disk: long.clone(),
                    recorded: r#""hi""#.into(),
                },
                FieldDrift {
                    field: "skills",
                    on_disk: json!(["a"]).to_string(),
                    recorded: "[]".into(),
                },
            ],
        };
        let shown_prompt = format!("{}…", &long[..80]);
        assert_eq!(
            e.to_string(),
            format!(
                "scenario `s.yaml` drifted from the recording: `prompt` differs (on disk \
                    {shown_prompt}, recorded \"hi\"), \
                 `skills` differs (on disk [\"a\"], recorded []) — the assert-only loop cannot \
                     change what shaped the recording; re-record the cassette"
            )
        );
    }

    #[test]
    fn compact_error_collapses_whitespace_and_caps_the_length() {
        assert_eq!(compact_error("a\n   b\tc "), "a b c");
        let long = "x".repeat(300);
        let c = compact_error(&long);
        assert_eq!(c.chars().count(), 200);
        assert!(c.ends_with('…'));
    }
}
