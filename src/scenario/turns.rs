//! `turns:` — a multi-turn scenario (docs/multi-turn.md): one agent session,
//! several user turns, each with its own `prompt`, `answers:`, `assert:` and
//! `timeout_ms`, beside the top-level `assert:` that judges the whole
//! session.
//!
//! A reel-only key: cowork-harness 2.0.0 has no multi-turn scenario, so a
//! cassette freezes the turns under `scenario.turns` and carries no top-level
//! `prompt` (its shape check refuses the cassette instead of passing it while
//! dropping the per-turn assertions; `docs/multi-turn.md` § cowork-harness).
//!
//! Which assertion keys make sense inside a turn is the catalog's
//! ([`session_only`]): a key that reads what exists only once per session
//! (the artifacts manifest, the pre-run baseline, live telemetry, a verdict
//! modifier) belongs to the top-level block.

use serde_json::{Map, Value};

use super::answers::AnswerRule;
use super::authored::Authored;
use super::{ScenarioError, did_you_mean};

/// The reel-only top-level key of a multi-turn scenario.
pub const TURNS_KEY: &str = "turns";

/// The keys of one `turns:` item, in the order the frozen copy writes them.
pub const TURN_KEYS: &[&str] = &["prompt", "timeout_ms", "answers", "assert"];

/// One user turn of a multi-turn scenario.
#[derive(Debug, Clone)]
pub struct Turn {
    /// The user message sent for this turn.
    pub prompt: String,
    /// This turn's own budget (the scenario's `timeout_ms` when absent).
    pub timeout_ms: Option<u64>,
    /// This turn's rules, consulted before the top-level `answers:`.
    pub answers: Vec<AnswerRule>,
    /// Evaluated against this turn's slice of the evidence.
    pub assert: Vec<Value>,
}

pub use crate::assert::catalog::session_only;

/// Reads `turns:` (`Ok(vec![])` when absent): a non-empty list of mappings
/// with strict keys, each turn's `answers:` and `assert:` checked as the
/// top-level ones are, with messages led by `turns[i].`.
pub(super) fn parse(
    doc: &Authored<'_>,
    execution: &str,
    lane: &str,
) -> Result<Vec<Turn>, ScenarioError> {
    let items = match doc.map.get("turns") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(doc.schema(
                "`turns` must be a list of turns (each with `prompt:`)".into(),
                Some("write `turns:` as a YAML list: `- prompt: …`".into()),
            ));
        }
    };
    if items.is_empty() {
        return Err(doc.schema(
            "`turns` is empty: a multi-turn scenario needs at least one turn".into(),
            Some("add `- prompt: …` items, or use a top-level `prompt:`".into()),
        ));
    }
    if doc.map.contains_key("prompt") {
        return Err(doc.schema(
            "`prompt` and `turns` are both given: a scenario is either one prompt or a list \
                of turns"
                .into(),
            Some("move the prompt into the first turn (`turns: [{prompt: …}]`)".into()),
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| parse_one(doc, i, item, execution, lane))
        .collect()
}

/// One `turns[i]` item.
fn parse_one(
    doc: &Authored<'_>,
    i: usize,
    item: &Value,
    execution: &str,
    lane: &str,
) -> Result<Turn, ScenarioError> {
    let at = format!("turns[{i}]");
    let Value::Object(map) = item else {
        return Err(doc.schema(
            format!("{at}: a turn must be a mapping with `prompt:`"),
            None,
        ));
    };
    if let Some(key) = map.keys().find(|k| !TURN_KEYS.contains(&k.as_str())) {
        return Err(doc.schema(
            format!(
                "{at}: unknown turn key `{key}`{}",
                did_you_mean(key, TURN_KEYS)
            ),
            Some(format!(
                "a turn takes {}; session-wide keys go at the top level",
                TURN_KEYS.join(", ")
            )),
        ));
    }
    let turn = doc.nested(map.clone());
    let lead = |e: ScenarioError| prefix_error(e, &at);
    let prompt = match turn.string("prompt").map_err(lead)? {
        Some(p) => p,
        None => {
            return Err(doc.schema(
                format!("{at}: `prompt` is required (the user message of this turn)"),
                None,
            ));
        }
    };
    let timeout_ms = turn.timeout_ms().map_err(lead)?;
    let (answers, compile_error) = turn.answers().map_err(lead)?;
    if let Some(message) = compile_error {
        return Err(doc.load_check(format!("{at}.{message}"), None));
    }
    let assert = turn.assertions(execution, lane).map_err(lead)?;
    for (j, item) in assert.iter().enumerate() {
        let Some(map) = item.as_object() else {
            continue;
        };
        if let Some((key, why)) = map
            .keys()
            .find_map(|k| session_only(k).map(|why| (k.as_str(), why)))
        {
            return Err(doc.schema(
                format!("{at}.assert[{j}].{key}: not a per-turn key: {why}"),
                Some(format!(
                    "move `{key}` to the top-level `assert:` (it judges the whole session)"
                )),
            ));
        }
    }
    Ok(Turn {
        prompt,
        timeout_ms,
        answers,
        assert,
    })
}

/// `e` with its message led by `at` (`turns[1]: assert[0]: …`).
fn prefix_error(e: ScenarioError, at: &str) -> ScenarioError {
    match e {
        ScenarioError::Invalid {
            path,
            message,
            hint,
            refusal,
        } => ScenarioError::Invalid {
            path,
            message: format!("{at}: {message}"),
            hint,
            refusal,
        },
        other => other,
    }
}

/// The frozen copy of the turns: each turn's keys in [`TURN_KEYS`] order,
/// answers and assertions in the original's order (as the top level's).
pub(super) fn frozen(turns: &[Turn], authored: &[Value]) -> Value {
    let items = turns.iter().zip(authored).map(|(turn, raw)| {
        let mut m = Map::new();
        m.insert("prompt".into(), Value::String(turn.prompt.clone()));
        if let Some(t) = raw.get("timeout_ms") {
            m.insert("timeout_ms".into(), t.clone());
        }
        let answers = raw
            .get("answers")
            .filter(|v| !v.is_null())
            .cloned()
            .unwrap_or(Value::Array(Vec::new()));
        m.insert("answers".into(), super::answers::in_schema_order(&answers));
        m.insert("assert".into(), Value::Array(turn.assert.clone()));
        Value::Object(m)
    });
    Value::Array(items.collect())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use crate::scenario::{Refusal, Scenario, ScenarioError};

    fn load(yaml: &str) -> Result<Scenario, ScenarioError> {
        Scenario::from_str(Path::new("/nowhere/s.yaml"), yaml)
    }

    fn message(e: ScenarioError) -> String {
        e.detail()
    }

    const THREE: &str = "name: t\nfidelity: protocol\nturns:\n  - prompt: one\n    assert:\n      - transcript_contains: a\n  - prompt: two\n    timeout_ms: 5000\n    answers:\n      - when_tool: Bash\n        decide: allow\n  - prompt: three\nassert:\n  - result: success\n";

    #[test]
    fn a_multi_turn_scenario_loads_with_each_turns_keys() {
        let s = load(THREE).unwrap();
        assert!(s.is_multi_turn());
        let turns = s.session_turns();
        assert_eq!(
            turns.iter().map(|t| t.prompt.as_str()).collect::<Vec<_>>(),
            ["one", "two", "three"]
        );
        assert_eq!(turns[1].timeout_ms, Some(5000));
        assert_eq!(turns[1].answers.len(), 1);
        assert_eq!(turns[0].assert, vec![json!({"transcript_contains": "a"})]);
        assert_eq!(s.assert, vec![json!({"result": "success"})]);
        // Frozen: no top-level prompt (the original's shape check refuses
        // such a cassette), the turns in their own key order.
        assert!(!s.frozen.contains_key("prompt"));
        assert_eq!(
            s.frozen["turns"][1],
            json!({"prompt": "two", "timeout_ms": 5000,
                   "answers": [{"when_tool": "Bash", "decide": "allow"}], "assert": []})
        );
    }

    #[test]
    fn a_one_prompt_scenario_is_one_turn_and_freezes_as_before() {
        let s = load("name: p\nfidelity: protocol\nprompt: hi\n").unwrap();
        assert!(!s.is_multi_turn());
        assert_eq!(s.session_turns().len(), 1);
        assert_eq!(s.session_turns()[0].prompt, "hi");
        assert!(!s.frozen.contains_key("turns"));
        assert_eq!(s.frozen["prompt"], json!("hi"));
    }

    #[test]
    fn turn_footguns_are_refused_naming_the_turn() {
        let cases = [
            (
                "prompt: x\nturns:\n  - prompt: y\n",
                "`prompt` and `turns` are both given",
            ),
            ("turns: []\n", "`turns` is empty"),
            ("turns: x\n", "`turns` must be a list"),
            ("turns:\n  - {}\n", "turns[0]: `prompt` is required"),
            (
                "turns:\n  - prompt: a\n  - promt: b\n",
                "turns[1]: unknown turn key `promt` (did you mean `prompt`?)",
            ),
            (
                "turns:\n  - prompt: a\n    assert:\n      - no_unexpected_files: []\n",
                "turns[0].assert[0].no_unexpected_files: not a per-turn key",
            ),
            (
                "turns:\n  - prompt: a\n    assert:\n      - tool_calld: Bash\n",
                "turns[0]: assert[0]: unknown assertion key `tool_calld`",
            ),
            (
                "turns:\n  - prompt: a\n    timeout_ms: 0\n",
                "turns[0]: `timeout_ms` must be",
            ),
        ];
        for (body, want) in cases {
            let e = load(&format!("fidelity: protocol\n{body}")).unwrap_err();
            assert!(
                e.is_schema() || matches!(e, ScenarioError::Invalid { .. }),
                "{body}"
            );
            let m = message(e);
            assert!(m.contains(want), "{body}: {m}");
        }
    }

    #[test]
    fn a_blank_turn_prompt_loads_but_is_not_recordable() {
        let yaml = "fidelity: protocol\nturns:\n  - prompt: a\n  - prompt: '  '\n";
        let path = Path::new("/nowhere/s.yaml");
        assert!(Scenario::from_str_authored(path, yaml).is_ok());
        match Scenario::from_str(path, yaml).unwrap_err() {
            ScenarioError::Invalid {
                message, refusal, ..
            } => {
                assert_eq!(refusal, Refusal::Unrecordable);
                assert!(
                    message.starts_with("turns[1]: `prompt` is blank"),
                    "{message}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
