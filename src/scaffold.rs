//! `reel scaffold`: a starter scenario (and its model script) from a
//! recording, so any recording becomes a token-free test in one command.
//!
//! The scenario keeps the recording's prompt, tier and timeout, points at its
//! session (re-relativised to where the scenario is written), answers with
//! the recording's own `answers:` rules (they reproduced it, through the one
//! decider) plus a rule per answered gate or permission they do not cover,
//! and asserts what happened: `result`, `file_exists` per created file,
//! `no_unexpected_files` for the set, `input_unmodified` for the uploads
//! (the inputs a skill must read, never write), `tool_called` per tool the
//! main agent used but `skill_triggered: NAME` per skill it loaded (not
//! `tool_called: Skill`, which any skill satisfies), `question_asked` per
//! gate with `gate_answers_delivered`. The model script is `reel model
//! extract`'s (`crate::rerun::replies`).
//!
//! Facts come from a replay of the cassette (`crate::replay`), never from a
//! second reading of the events.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::assert::keys::name;
use crate::cassette::Cassette;
use crate::js::regex::escape_literal;
use crate::replay::{ReplayOptions, ReplayResult, replay_file};
use crate::scenario::answers::{self, Decider};

/// A scaffolded scenario and model script.
#[derive(Debug, Clone)]
pub struct Scaffold {
    pub scenario_yaml: String,
    /// `None` when the recording has no model reply to extract.
    pub model_yaml: Option<String>,
    pub notes: Vec<String>,
}

/// The recorded question gates: (the questions with their options, the answers given).
fn answered_gates(cassette: &Cassette) -> Vec<(Value, Map<String, Value>)> {
    cassette
        .control_out()
        .unwrap_or_default()
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| {
            let input = v.pointer("/response/response/updatedInput")?;
            let questions = input.get("questions")?.clone();
            let answers = input.get("answers")?.as_object()?.clone();
            Some((questions, answers))
        })
        .collect()
}

/// Builds the scaffold of `cassette_path` for a scenario written at `out`.
pub fn scaffold(cassette_path: &Path, out: &Path) -> Result<Scaffold, String> {
    let cassette = Cassette::load(cassette_path).map_err(|e| e.to_string())?;
    let result = replay_file(cassette_path, &ReplayOptions::default());
    if let Some(e) = &result.error {
        return Err(format!("the cassette does not replay: {e}"));
    }
    let frozen = cassette.scenario();
    let out_dir = crate::paths::resolve_cwd_clamped(out.parent().unwrap_or(Path::new(".")));
    let mut notes = Vec::new();
    let mut doc = Map::new();
    doc.insert(
        "fidelity".into(),
        frozen.get("fidelity").cloned().unwrap_or(json!("protocol")),
    );
    if let Some(session) = session_entry(&cassette, &out_dir, &mut notes) {
        doc.insert("session".into(), session);
    }
    if let Some(t) = frozen.get("timeout_ms") {
        doc.insert("timeout_ms".into(), t.clone());
    }
    match frozen.get("turns").and_then(Value::as_array) {
        // A multi-turn recording scaffolds a multi-turn scenario
        // (docs/multi-turn.md): each turn's prompt, and its own answers and
        // assertions as recorded.
        Some(turns) => {
            doc.insert(
                "turns".into(),
                Value::Array(turns.iter().map(turn_entry).collect()),
            );
        }
        None => {
            doc.insert(
                "prompt".into(),
                frozen.get("prompt").cloned().unwrap_or(json!("")),
            );
        }
    }
    let gates = answered_gates(&cassette);
    let rules = answer_rules(&cassette, &result, &gates, &mut notes)?;
    if !rules.is_empty() {
        doc.insert("answers".into(), Value::Array(rules));
    }
    doc.insert(
        "assert".into(),
        Value::Array(assertions(&cassette, &result, &gates)),
    );
    // The recording's numbers stay declared: they measure the run, not the
    // scaffold's guesses.
    if let Some(metrics) = frozen.get("metrics").filter(|m| !m.is_null()) {
        doc.insert("metrics".into(), metrics.clone());
    }

    let body = serde_yaml_ng::to_string(&crate::scenario::yaml_value(&Value::Object(doc)))
        .map_err(|e| e.to_string())?;
    let scenario_yaml = format!(
        "# Scaffolded from {} by `reel scaffold`: a starting point — edit the assertions to say\n# \
            what the skill must do (`reel assertions` lists them), then `reel lint` this \
            file.\n{body}",
        cassette_path.display()
    );
    let model_yaml = model_script(&cassette, cassette_path, &mut notes);
    Ok(Scaffold {
        scenario_yaml,
        model_yaml,
        notes,
    })
}

/// One frozen turn as a scenario's `turns:` item: its prompt, and its
/// answers and assertions when it has any.
fn turn_entry(turn: &Value) -> Value {
    let mut item = Map::new();
    item.insert(
        "prompt".into(),
        turn.get("prompt").cloned().unwrap_or(json!("")),
    );
    for key in ["timeout_ms", "answers", "assert"] {
        match turn.get(key) {
            Some(Value::Array(a)) if a.is_empty() => {}
            Some(v) if !v.is_null() => {
                item.insert(key.into(), v.clone());
            }
            _ => {}
        }
    }
    Value::Object(item)
}

/// The recorded session, re-relativised to `out_dir`; kept as recorded
/// (with a note) when it does not resolve; `None` for an inline session.
fn session_entry(cassette: &Cassette, out_dir: &Path, notes: &mut Vec<String>) -> Option<Value> {
    let session = cassette
        .scenario()
        .get("session")
        .and_then(Value::as_str)
        .unwrap_or(crate::scenario::INLINE_SESSION);
    if session == crate::scenario::INLINE_SESSION {
        return None;
    }
    match crate::fingerprint::resolve_session_path(session, Some(cassette.dir()), None) {
        Some(p) if p.is_file() => {
            let rel =
                crate::paths::relative_lexical(out_dir, &crate::paths::resolve_cwd_clamped(&p));
            Some(json!(rel.display().to_string()))
        }
        _ => {
            notes.push(format!(
                "the recorded session `{session}` does not resolve from the cassette; the \
                    scenario keeps it as recorded"
            ));
            Some(json!(session))
        }
    }
}

/// The recording's own `answers:` rules, then one per answered gate and
/// per decided tool they do not cover.
fn answer_rules(
    cassette: &Cassette,
    result: &ReplayResult,
    gates: &[(Value, Map<String, Value>)],
    notes: &mut Vec<String>,
) -> Result<Vec<Value>, String> {
    let mut rules: Vec<Value> = cassette
        .scenario()
        .get("answers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let parsed = answers::parse_rules(&Value::Array(rules.clone()), "answers")
        .map_err(|e| format!("the recorded answers do not load: {}", e.message))?;
    let decider = Decider {
        rules: parsed.clone(),
        parity: Default::default(),
        unanswered: answers::Unanswered::Fail,
    };
    for (questions, given) in gates {
        if decider.decide_question(questions).is_err() {
            rules.extend(gate_rules(questions, given));
        }
    }
    rules.extend(tool_rules(result, &parsed, notes));
    Ok(rules)
}

/// One rule per question of a gate the recorded rules do not answer:
/// `choose` when the answer is the options' labels, else the literal answer.
fn gate_rules(questions: &Value, given: &Map<String, Value>) -> Vec<Value> {
    let mut rules = Vec::new();
    for q in questions.as_array().into_iter().flatten() {
        let Some(text) = q.get("question").and_then(Value::as_str) else {
            continue;
        };
        let Some(answer) = given.get(text).and_then(Value::as_str) else {
            continue;
        };
        let labels = crate::protocol::option_labels(q);
        let picked: Vec<&str> = answer.split(", ").collect();
        rules.push(if picked.iter().all(|p| labels.contains(p)) {
            json!({"when_question": escape_literal(text), "choose": picked})
        } else {
            json!({"when_question": escape_literal(text), "answer": answer})
        });
    }
    rules
}

/// One `when_tool` rule per tool the run decided on that no recorded rule
/// covers (a tool both allowed and denied gets a note instead).
fn tool_rules(
    result: &ReplayResult,
    parsed: &[answers::AnswerRule],
    notes: &mut Vec<String>,
) -> Vec<Value> {
    let covered = |tool: &str| {
        parsed
            .iter()
            .any(|r| matches!(r, answers::AnswerRule::Tool { tool: t, .. } if t == tool))
    };
    let mut decided: Vec<(String, String)> = Vec::new();
    for d in result
        .run
        .get("decisions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (Some("tool"), Some(name), Some(decision)) = (
            d.get("kind").and_then(Value::as_str),
            d.get("name").and_then(Value::as_str),
            d.get("decision").and_then(Value::as_str),
        ) else {
            continue;
        };
        if name == "AskUserQuestion" || covered(name) {
            continue;
        }
        match decided.iter().find(|(n, _)| n == name) {
            Some((_, prev)) if prev != decision => notes.push(format!(
                "`{name}` was both allowed and denied: write an `allow_if` rule for it"
            )),
            Some(_) => {}
            None => decided.push((name.to_string(), decision.to_string())),
        }
    }
    decided
        .into_iter()
        .map(|(name, decision)| json!({"when_tool": name, "decide": decision}))
        .collect()
}

/// What happened: the result, the files created under the user-visible
/// roots (and that no other file was), the tools the main agent used, the
/// questions asked and their answers delivered.
fn assertions(
    cassette: &Cassette,
    result: &ReplayResult,
    gates: &[(Value, Map<String, Value>)],
) -> Vec<Value> {
    let mut asserts = vec![json!({"result": result.result()})];
    let created = created_files(cassette);
    for p in &created {
        asserts.push(json!({name::FILE_EXISTS: p}));
    }
    if cassette
        .doc
        .get("preRunPaths")
        .is_some_and(|v| !v.is_null())
    {
        asserts.push(json!({name::NO_UNEXPECTED_FILES: created}));
    }
    if has_uploads(cassette) {
        asserts.push(json!({name::INPUT_UNMODIFIED: "uploads/**"}));
    }
    let skills: Vec<&str> = result
        .run
        .get("skillsInvoked")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(counts) = result.run.get("toolCounts").and_then(Value::as_object) {
        for tool in counts.keys() {
            if tool == "Skill" && !skills.is_empty() {
                continue;
            }
            if !crate::assert::glob::looks_like_regex(tool) && !tool.is_empty() {
                asserts.push(json!({name::TOOL_CALLED: tool}));
            }
        }
    }
    for skill in skills {
        asserts.push(json!({name::SKILL_TRIGGERED: skill}));
    }
    for (questions, _) in gates {
        for q in questions.as_array().into_iter().flatten() {
            if let Some(text) = q.get("question").and_then(Value::as_str) {
                asserts.push(json!({name::QUESTION_ASKED: escape_literal(text)}));
            }
        }
    }
    if !gates.is_empty() {
        asserts.push(json!({name::GATE_ANSWERS_DELIVERED: true}));
    }
    asserts
}

/// The run had uploads in its pre-run baseline (hashed, so
/// `input_unmodified` can check them).
fn has_uploads(cassette: &Cassette) -> bool {
    cassette
        .doc
        .get("preRunHashes")
        .and_then(Value::as_object)
        .is_some_and(|h| h.keys().any(|p| p.starts_with("uploads/")))
}

/// Manifest paths under the user-visible roots that were not there before the run.
fn created_files(cassette: &Cassette) -> Vec<String> {
    let roots: Vec<String> = cassette
        .doc
        .get("userVisibleRoots")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_else(|| vec!["outputs".into()]);
    let pre: Vec<&str> = cassette
        .doc
        .get("preRunPaths")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    cassette
        .doc
        .get("artifacts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|a| a.get("path").and_then(Value::as_str))
        .filter(|p| roots.iter().any(|r| p.starts_with(&format!("{r}/"))))
        .filter(|p| !pre.contains(p))
        .map(str::to_owned)
        .collect()
}

/// The model script `reel model extract` would write (`None`, with a note,
/// when the recording has no reply to extract).
fn model_script(cassette: &Cassette, path: &Path, notes: &mut Vec<String>) -> Option<String> {
    match crate::rerun::replies::from_cassette(cassette) {
        Ok(replies) => {
            notes.extend(replies.notes.iter().cloned());
            Some(format!(
                "# Model replies extracted from {} by `reel scaffold` (as `reel model \
                    extract`).\n{}",
                path.display(),
                replies.script.to_yaml()
            ))
        }
        Err(e) => {
            notes.push(format!("no model script: {e}"));
            None
        }
    }
}

/// `<dir>/<stem>.model.yaml` for a scenario `<dir>/<stem>.yaml` (the file
/// `reel record` picks up beside it).
pub fn model_script_path(scenario: &Path) -> PathBuf {
    let stem = scenario
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "scenario".into());
    scenario.with_file_name(format!("{stem}.model.yaml"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_and_relative_paths() {
        assert_eq!(
            escape_literal("Which format (a.b)?"),
            "Which format \\(a\\.b\\)\\?"
        );
        assert_eq!(
            crate::paths::relative_lexical(
                Path::new("/a/b/scenarios"),
                Path::new("/a/sessions/x.yaml")
            ),
            PathBuf::from("../../sessions/x.yaml")
        );
        assert_eq!(
            model_script_path(Path::new("s/x.yaml")),
            PathBuf::from("s/x.model.yaml")
        );
    }
}
