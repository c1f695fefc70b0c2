//! The authored top-level mapping of one scenario file, read key by key.
//!
//! Each reader checks one key as the original's schema does and builds errors
//! that name the file. Not here: the order the keys are read in, which is the
//! order the original reports problems in (`Scenario::from_str_authored` owns
//! it), nor the frozen copy (`frozen_of`).

use std::path::Path;

use serde_json::{Map, Value};

use super::answers::{self, AnswerRule, Unanswered};
use super::turns::TURNS_KEY;
use super::{
    Refusal, SCENARIO_KEYS, ScenarioError, assertion_in_schema_order, check_assertion_schema,
    check_assertions_at_load, did_you_mean, file_stem, schema_file,
};

/// A scenario document whose top level is a mapping, with the path its errors
/// name.
pub(super) struct Authored<'a> {
    path: &'a Path,
    pub(super) map: Map<String, Value>,
}

impl<'a> Authored<'a> {
    /// Parses `text` as YAML; anything but a top-level mapping is a parse error.
    pub(super) fn parse(path: &'a Path, text: &str) -> Result<Self, ScenarioError> {
        let parse_error = |message: String| ScenarioError::Parse {
            path: path.to_owned(),
            message,
        };
        let doc: Value = serde_yaml_ng::from_str(text).map_err(|e| parse_error(e.to_string()))?;
        let Value::Object(map) = doc else {
            return Err(parse_error("the top level is not a mapping".into()));
        };
        Ok(Authored { path, map })
    }

    /// A refusal of the schema ([`Refusal::Schema`]).
    pub(super) fn schema(&self, message: String, hint: Option<String>) -> ScenarioError {
        self.invalid(message, hint, Refusal::Schema)
    }

    /// A refusal of a load-time check ([`Refusal::LoadCheck`]).
    pub(super) fn load_check(&self, message: String, hint: Option<String>) -> ScenarioError {
        self.invalid(message, hint, Refusal::LoadCheck)
    }

    fn invalid(&self, message: String, hint: Option<String>, refusal: Refusal) -> ScenarioError {
        ScenarioError::Invalid {
            path: self.path.to_owned(),
            message,
            hint,
            refusal,
        }
    }

    /// The same file's nested mapping (a `turns:` item), read by the same
    /// key readers; errors name the same file.
    pub(super) fn nested(&self, map: Map<String, Value>) -> Authored<'a> {
        Authored {
            path: self.path,
            map,
        }
    }

    /// Every key is one the original knows, or reel's `turns`.
    pub(super) fn check_known_keys(&self) -> Result<(), ScenarioError> {
        let Some(key) = self
            .map
            .keys()
            .find(|k| !SCENARIO_KEYS.contains(&k.as_str()) && k.as_str() != TURNS_KEY)
        else {
            return Ok(());
        };
        Err(self.schema(
            format!("unknown key `{key}`{}", did_you_mean(key, SCENARIO_KEYS)),
            Some(
                "reel-only settings do not go in the scenario: the scripted model is \
                 `<name>.model.yaml` beside it, the agent command is `--agent-cmd`"
                    .into(),
            ),
        ))
    }

    /// An optional string key (`null` counts as absent).
    pub(super) fn string(&self, key: &str) -> Result<Option<String>, ScenarioError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.schema(format!("`{key}` must be a string"), None)),
        }
    }

    /// An enum key: one of `allowed`, else `default` when absent.
    pub(super) fn one_of(
        &self,
        key: &str,
        allowed: &[&str],
        default: &str,
    ) -> Result<String, ScenarioError> {
        let v = self.string(key)?.unwrap_or_else(|| default.to_owned());
        if allowed.contains(&v.as_str()) {
            return Ok(v);
        }
        Err(self.schema(
            format!("`{key}: {v}` is not one of {}", allowed.join(", ")),
            None,
        ))
    }

    /// `prompt`: required, but any string: the original's schema takes
    /// `prompt: ""` (a blank prompt is refused by `check_recordable` only).
    /// A multi-turn scenario has none (its turns carry the prompts): `""`.
    pub(super) fn prompt(&self) -> Result<String, ScenarioError> {
        if self.map.contains_key(TURNS_KEY) && !self.map.contains_key("prompt") {
            return Ok(String::new());
        }
        self.string("prompt")?.ok_or_else(|| {
            self.schema(
                "`prompt` is required (the user turn sent to the agent)".into(),
                None,
            )
        })
    }

    /// `name`, or the file stem when absent or empty.
    pub(super) fn name(&self) -> Result<String, ScenarioError> {
        Ok(match self.string("name")? {
            Some(n) if !n.is_empty() => n,
            _ => file_stem(self.path),
        })
    }

    /// `timeout_ms`: a positive integer when given.
    pub(super) fn timeout_ms(&self) -> Result<Option<u64>, ScenarioError> {
        match self.map.get("timeout_ms") {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if n > 0 => Ok(Some(n)),
                _ => Err(self.schema(
                    "`timeout_ms` must be a positive integer (milliseconds)".into(),
                    None,
                )),
            },
        }
    }

    /// The `answers:` rules, and the message of a rule whose pattern or
    /// predicate does not compile. That is a load-time check, which the caller
    /// reports after the schema and the assertion checks (the original's
    /// order); a malformed rule is a schema error, reported now.
    pub(super) fn answers(&self) -> Result<(Vec<AnswerRule>, Option<String>), ScenarioError> {
        let value = self
            .map
            .get("answers")
            .cloned()
            .unwrap_or(Value::Array(vec![]));
        match answers::parse_rules(&value, "answers") {
            Ok(rules) => Ok((rules, None)),
            Err(e) if e.compile => Ok((Vec::new(), Some(e.message))),
            Err(e) => Err(self.schema(e.message, Some("see docs: answers rules".into()))),
        }
    }

    /// `on_unanswered`: `first`, else `fail` (`prompt` and `llm` load as
    /// `fail`; `Scenario::load` refuses them).
    pub(super) fn on_unanswered(&self) -> Result<Unanswered, ScenarioError> {
        match self.string("on_unanswered")?.as_deref() {
            None | Some("fail" | "prompt" | "llm") => Ok(Unanswered::Fail),
            Some("first") => Ok(Unanswered::First),
            Some(v) => Err(self.schema(
                format!("`on_unanswered: {v}` is not one of fail, prompt, llm, first"),
                None,
            )),
        }
    }

    /// The keys reel only freezes, checked for their type: the string lists
    /// and `allow_host_writes`.
    pub(super) fn check_frozen_only_keys(&self) -> Result<(), ScenarioError> {
        for key in ["expect_denied", "skills", "requires_capabilities"] {
            match self.map.get(key) {
                None | Some(Value::Null) => {}
                Some(Value::Array(items)) if items.iter().all(Value::is_string) => {}
                Some(_) => {
                    return Err(self.schema(format!("`{key}` must be a list of strings"), None));
                }
            }
        }
        if self
            .map
            .get("allow_host_writes")
            .is_some_and(|v| !v.is_boolean())
        {
            return Err(self.schema("`allow_host_writes` must be a boolean".into(), None));
        }
        Ok(())
    }

    /// `workspace_fixture`: a non-blank string when given.
    pub(super) fn workspace_fixture(&self) -> Result<Option<String>, ScenarioError> {
        let fixture = self.string("workspace_fixture")?;
        if fixture.as_deref().is_some_and(|v| v.trim().is_empty()) {
            return Err(self.schema(
                "`workspace_fixture` must name a directory (it is blank)".into(),
                Some("write the fixture directory, relative to the scenario file".into()),
            ));
        }
        Ok(fixture)
    }

    /// The `assert:` items in the original's key order, schema files inlined,
    /// checked by the schema and then by the load-time checks.
    pub(super) fn assertions(
        &self,
        execution: &str,
        lane: &str,
    ) -> Result<Vec<Value>, ScenarioError> {
        let mut assert: Vec<Value> = match self.map.get("assert") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items.iter().map(assertion_in_schema_order).collect(),
            Some(_) => {
                return Err(self.schema("`assert` must be a list of assertions".into(), None));
            }
        };
        schema_file::inline_schema_files(&mut assert, self.path)
            .map_err(|(m, h)| self.load_check(m, h))?;
        schema_file::inline_baseline_transcripts(&mut assert, self.path)
            .map_err(|(m, h)| self.load_check(m, h))?;
        check_assertion_schema(&assert).map_err(|(m, h)| self.schema(m, h))?;
        check_assertions_at_load(&assert, execution, lane)
            .map_err(|(m, h)| self.load_check(m, h))?;
        Ok(assert)
    }
}
