//! The recording-shaping fields of a scenario (cowork-harness
//! `RECORDING_SHAPING_FIELDS`: what shaped the recording, so a cassette's
//! frozen events stop corresponding to a scenario that changed them) and the
//! one comparison of a cassette's frozen scenario against an on-disk one.
//!
//! Each field is default-normalised (absent or `null` stands for its default
//! on either side) and compared as `JSON.stringify` text
//! ([`crate::js::json::legacy_serde`]), key order included, as the original
//! compares it. The on-disk side is the loader's output
//! ([`super::Scenario::frozen`]), whose answer rules are in schema order like
//! the original loader's, so only a hand-reordered frozen copy differs by
//! order alone.
//!
//! `workspace_fixture` (v14; in the original's `RECORDING_SHAPING_FIELDS`
//! since, test/replay-reassert.test.ts) is compared as the directory each
//! side names: the cassette stores it relative to itself, a scenario
//! relative to its own file, so the text alone would always differ.
//!
//! Deliberately not compared: `session` (the cassette stores it relative to
//! itself, the loader resolves it) and `execution` (one legal value), nor
//! `assert`/`expect_denied`, which do not shape a recording. What a drift
//! means is the caller's: `replay --assert-from` refuses, `verify-cassettes`
//! fails or notes. A multi-turn scenario's `turns:` (reel's) shape the
//! recording too: compared without each turn's `assert:`.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::Scenario;

/// Produces a field's default value.
pub type DefaultValue = fn() -> Value;

/// The recording-shaping fields, in the original's order, with the default
/// an absent value stands for.
const FIELDS: [(&str, DefaultValue); 7] = [
    ("prompt", || Value::String(String::new())),
    ("baseline", || Value::String("latest".into())),
    ("fidelity", || Value::String("container".into())),
    ("lane", || Value::String("local".into())),
    ("answers", || Value::Array(Vec::new())),
    ("skills", || Value::Array(Vec::new())),
    ("requires_capabilities", || Value::Array(Vec::new())),
];

/// The staged fixture directory, compared by the directory it names.
const FIXTURE: &str = "workspace_fixture";

/// A multi-turn scenario's turns, compared without their assertions.
const TURNS: &str = "turns";

/// One recording-shaping field that differs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldDrift {
    pub field: &'static str,
    /// The on-disk value as `JSON.stringify` text.
    pub on_disk: String,
    /// The cassette's frozen value, likewise.
    pub recorded: String,
}

/// The recording-shaping field names, in the original's order (what a
/// message listing "the fields verified unchanged" names). `fixture`: a side
/// names a `workspace_fixture`; without one the list is 2.0.0's, so its
/// messages stay byte for byte the original's of that release.
pub fn field_names(fixture: bool) -> impl Iterator<Item = &'static str> {
    FIELDS
        .iter()
        .map(|(field, _)| *field)
        .chain(fixture.then_some(FIXTURE))
}

/// Does either side name a `workspace_fixture`?
pub fn names_fixture(recorded: &Map<String, Value>, on_disk: &Scenario) -> bool {
    recorded.get(FIXTURE).is_some_and(|v| !v.is_null()) || on_disk.workspace_fixture.is_some()
}

/// `JSON.stringify(v ?? default)`: the text the original compares (an absent
/// or `null` value stands for `default`; key order counts).
pub fn js_text(v: Option<&Value>, default: DefaultValue) -> String {
    match v.filter(|v| !v.is_null()) {
        Some(v) => crate::js::json::legacy_serde(v),
        None => crate::js::json::legacy_serde(&default()),
    }
}

/// The recording-shaping fields where the cassette's frozen scenario
/// (`recorded`, from a cassette in `recorded_dir`) and the on-disk scenario
/// differ, in the original's order.
pub fn drift(
    recorded: &Map<String, Value>,
    recorded_dir: &Path,
    on_disk: &Scenario,
) -> Vec<FieldDrift> {
    FIELDS
        .iter()
        .filter_map(|(field, default)| {
            let d = js_text(on_disk.frozen.get(*field), *default);
            let r = js_text(recorded.get(*field), *default);
            (d != r).then_some(FieldDrift {
                field,
                on_disk: d,
                recorded: r,
            })
        })
        .chain(fixture_drift(recorded, recorded_dir, on_disk))
        .chain(turns_drift(recorded, on_disk))
        .collect()
}

/// A multi-turn scenario's `turns:` (reel's, docs/multi-turn.md) when a
/// turn's recording-shaping part differs: its prompt, its `answers:`, any
/// setting but its `assert:` (which shapes nothing, as the top-level one).
/// Compared only when a side has turns, so a one-prompt scenario's
/// messages stay the original's.
fn turns_drift(recorded: &Map<String, Value>, on_disk: &Scenario) -> Option<FieldDrift> {
    let shaping = |v: Option<&Value>| -> Option<Value> {
        let turns = v?.as_array()?;
        Some(Value::Array(
            (turns.iter())
                .map(|t| {
                    let mut t = t.clone();
                    if let Value::Object(m) = &mut t {
                        m.shift_remove("assert");
                    }
                    t
                })
                .collect(),
        ))
    };
    let r = shaping(recorded.get(TURNS));
    let d = shaping(on_disk.frozen.get(TURNS));
    if r.is_none() && d.is_none() {
        return None;
    }
    let (r, d) = (
        js_text(r.as_ref(), || Value::Array(Vec::new())),
        js_text(d.as_ref(), || Value::Array(Vec::new())),
    );
    (r != d).then_some(FieldDrift {
        field: TURNS,
        on_disk: d,
        recorded: r,
    })
}

/// `workspace_fixture` when the two sides name different directories (or
/// only one names one); each shown as the absolute directory, `null` for
/// none.
fn fixture_drift(
    recorded: &Map<String, Value>,
    recorded_dir: &Path,
    on_disk: &Scenario,
) -> Option<FieldDrift> {
    let dir = |authored: Option<&str>, base: &Path| -> Option<PathBuf> {
        let authored = authored?;
        let p = super::resolve_path(authored, base).unwrap_or_else(|_| PathBuf::from(authored));
        Some(crate::paths::resolve_cwd(&p))
    };
    let r = dir(recorded.get(FIXTURE).and_then(Value::as_str), recorded_dir);
    let d = dir(
        on_disk.frozen.get(FIXTURE).and_then(Value::as_str),
        super::dir_of(&on_disk.path),
    );
    let text = |p: Option<PathBuf>| match p {
        Some(p) => crate::js::json::legacy_serde(&Value::String(p.display().to_string())),
        None => "null".to_owned(),
    };
    (r != d).then(|| FieldDrift {
        field: FIXTURE,
        on_disk: text(d),
        recorded: text(r),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    fn on_disk(yaml: &str) -> Scenario {
        Scenario::from_str_authored(Path::new("s.yaml"), yaml).unwrap()
    }

    fn fields(d: &[FieldDrift]) -> Vec<&str> {
        d.iter().map(|d| d.field).collect()
    }

    #[test]
    fn js_text_defaults_absent_and_null_and_keeps_key_order() {
        let empty = || Value::Array(Vec::new());
        assert_eq!(js_text(None, empty), "[]");
        assert_eq!(js_text(Some(&Value::Null), empty), "[]");
        let ab = json!([{"a": 1, "b": 2}]);
        let ba = json!([{"b": 2, "a": 1}]);
        assert_ne!(js_text(Some(&ab), empty), js_text(Some(&ba), empty));
        // JS number text: 1.0 and 1 are the same number.
        let one: Value = serde_json::from_str("[1.0]").unwrap();
        assert_eq!(js_text(Some(&one), empty), "[1]");
    }

    #[test]
    fn field_names_are_the_originals_list_in_order() {
        assert_eq!(
            field_names(false).collect::<Vec<_>>().join("/"),
            "prompt/baseline/fidelity/lane/answers/skills/requires_capabilities"
        );
        assert_eq!(
            field_names(true).last(),
            Some("workspace_fixture"),
            "named when a side has a fixture"
        );
    }

    #[test]
    fn a_turns_prompt_drifts_and_its_assertions_do_not() {
        let disk = on_disk(
            "turns:\n  - prompt: first\n    assert: [{tool_called: Read}]\n  - prompt: second\n",
        );
        let recorded = disk.frozen.clone();
        assert_eq!(drift(&recorded, Path::new("."), &disk), vec![]);
        let mut reasserted = recorded.clone();
        reasserted["turns"][1]["assert"] = json!([{"tool_called": "Bash"}]);
        assert_eq!(drift(&reasserted, Path::new("."), &disk), vec![]);
        let mut reprompted = recorded.clone();
        reprompted["turns"][1]["prompt"] = json!("another");
        assert_eq!(
            fields(&drift(&reprompted, Path::new("."), &disk)),
            ["turns"]
        );
    }

    #[test]
    fn absent_and_null_stand_for_the_defaults_on_either_side() {
        let disk = on_disk("prompt: hi\n");
        let recorded = json!({"prompt": "hi", "baseline": null, "answers": null});
        assert_eq!(
            drift(recorded.as_object().unwrap(), Path::new("."), &disk),
            vec![]
        );
        let recorded = json!({"prompt": "hi", "lane": "remote", "skills": ["a"]});
        assert_eq!(
            drift(recorded.as_object().unwrap(), Path::new("."), &disk),
            vec![
                FieldDrift {
                    field: "lane",
                    on_disk: r#""local""#.into(),
                    recorded: r#""remote""#.into(),
                },
                FieldDrift {
                    field: "skills",
                    on_disk: "[]".into(),
                    recorded: r#"["a"]"#.into(),
                },
            ]
        );
    }

    #[test]
    fn answers_compare_in_schema_order_and_assert_is_not_shaping() {
        // Authored out of schema order: the loader re-emits schema order.
        let disk = on_disk(
            "prompt: hi\nanswers:\n  - choose: A\n    when_question: q\nassert:\n  - result: \
                success\n",
        );
        let recorded = json!({
            "prompt": "hi",
            "answers": [{"when_question": "q", "choose": "A"}],
            "assert": [{"result": "error"}],
        });
        assert_eq!(
            drift(recorded.as_object().unwrap(), Path::new("."), &disk),
            vec![]
        );
        // A frozen copy whose keys were reordered by hand is different text.
        let recorded = json!({"prompt": "hi", "answers": [{"choose": "A", "when_question": "q"}]});
        assert_eq!(
            fields(&drift(recorded.as_object().unwrap(), Path::new("."), &disk)),
            ["answers"]
        );
    }

    #[test]
    fn an_empty_on_disk_prompt_is_compared_like_any_other() {
        let disk = on_disk("prompt: ''\n");
        // An absent frozen prompt stands for "", so nothing drifted.
        assert_eq!(
            drift(json!({}).as_object().unwrap(), Path::new("."), &disk),
            vec![]
        );
        let recorded = json!({"prompt": "hi"});
        assert_eq!(
            drift(recorded.as_object().unwrap(), Path::new("."), &disk),
            vec![FieldDrift {
                field: "prompt",
                on_disk: r#""""#.into(),
                recorded: r#""hi""#.into(),
            }]
        );
    }

    #[test]
    fn a_non_string_frozen_value_is_not_its_string_text() {
        let disk = on_disk("prompt: '5'\n");
        let recorded = json!({"prompt": 5});
        assert_eq!(
            fields(&drift(recorded.as_object().unwrap(), Path::new("."), &disk)),
            ["prompt"]
        );
    }

    /// test/replay-reassert.test.ts: `workspace_fixture` is a
    /// recording-shaping field. The cassette names it relative to itself, the
    /// scenario relative to its own file: the same directory does not drift.
    #[test]
    fn workspace_fixture_drifts_by_the_directory_it_names() {
        let disk = Scenario::from_str_authored(
            Path::new("/p/scenarios/s.yaml"),
            "prompt: hi\nworkspace_fixture: ../fixtures/step1\n",
        )
        .unwrap();
        let same = json!({"prompt": "hi", "workspace_fixture": "../../fixtures/step1"});
        let cassettes = Path::new("/p/cassettes/new");
        assert_eq!(drift(same.as_object().unwrap(), cassettes, &disk), vec![]);
        let other = json!({"prompt": "hi", "workspace_fixture": "../../fixtures/step2"});
        assert_eq!(
            drift(other.as_object().unwrap(), cassettes, &disk),
            vec![FieldDrift {
                field: "workspace_fixture",
                on_disk: r#""/p/fixtures/step1""#.into(),
                recorded: r#""/p/fixtures/step2""#.into(),
            }]
        );
        let none = json!({"prompt": "hi"});
        assert_eq!(
            fields(&drift(none.as_object().unwrap(), cassettes, &disk)),
            ["workspace_fixture"]
        );
    }
}
