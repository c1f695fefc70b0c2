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
//! Deliberately not compared: `session` (the cassette stores it relative to
//! itself, the loader resolves it) and `execution` (one legal value), nor
//! `assert`/`expect_denied`, which do not shape a recording. What a drift
//! means is the caller's: `replay --assert-from` refuses, `verify-cassettes`
//! fails or notes.

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
/// message listing "the fields verified unchanged" names).
pub fn field_names() -> impl Iterator<Item = &'static str> {
    FIELDS.iter().map(|(field, _)| *field)
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
/// (`recorded`) and the on-disk scenario differ, in the original's order.
pub fn drift(recorded: &Map<String, Value>, on_disk: &Scenario) -> Vec<FieldDrift> {
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
        .collect()
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
            field_names().collect::<Vec<_>>().join("/"),
            "prompt/baseline/fidelity/lane/answers/skills/requires_capabilities"
        );
    }

    #[test]
    fn absent_and_null_stand_for_the_defaults_on_either_side() {
        let disk = on_disk("prompt: hi\n");
        let recorded = json!({"prompt": "hi", "baseline": null, "answers": null});
        assert_eq!(drift(recorded.as_object().unwrap(), &disk), vec![]);
        let recorded = json!({"prompt": "hi", "lane": "remote", "skills": ["a"]});
        assert_eq!(
            drift(recorded.as_object().unwrap(), &disk),
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
        assert_eq!(drift(recorded.as_object().unwrap(), &disk), vec![]);
        // A frozen copy whose keys were reordered by hand is different text.
        let recorded = json!({"prompt": "hi", "answers": [{"choose": "A", "when_question": "q"}]});
        assert_eq!(
            fields(&drift(recorded.as_object().unwrap(), &disk)),
            ["answers"]
        );
    }

    #[test]
    fn an_empty_on_disk_prompt_is_compared_like_any_other() {
        let disk = on_disk("prompt: ''\n");
        // An absent frozen prompt stands for "", so nothing drifted.
        assert_eq!(drift(json!({}).as_object().unwrap(), &disk), vec![]);
        let recorded = json!({"prompt": "hi"});
        assert_eq!(
            drift(recorded.as_object().unwrap(), &disk),
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
            fields(&drift(recorded.as_object().unwrap(), &disk)),
            ["prompt"]
        );
    }
}
