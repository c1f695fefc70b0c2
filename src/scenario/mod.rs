//! Scenario YAML: the strict loader, defaults, cross-key checks, path
//! resolution, the slug and the default cassette path (spec/record.md §1.2,
//! §2.1), plus [`answers`], the decider used by `record` and by `replay`'s
//! `replay_protocol_fidelity`.
//!
//! **reel-only settings live outside the scenario.** cowork-harness's loader
//! rejects unknown keys, and a cassette freezes the scenario, so a scenario
//! carries only keys the original knows. reel finds its extras by
//! convention instead: the scripted model for `scenarios/<name>.yaml` is
//! `scenarios/<name>.model.yaml` when that file exists ([`Scenario::model_script`]),
//! and the agent command is a CLI flag (`--agent-cmd`) or env (`REEL_AGENT_CMD`).
//! The frozen scenario ([`Scenario::frozen`]) is therefore exactly the
//! authored keys with the original's defaults filled in, in its key order.
//!
//! Not here: the session YAML (`session.rs`, owned by the fingerprint module;
//! `session_keys` reads the few keys record needs until it lands), assertion
//! semantics (`crate::assert`).

pub mod answers;
pub mod session;
pub mod session_keys;

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use answers::{AnswerRule, Unanswered};

/// Every scenario key cowork-harness knows, in the order its loader emits
/// them (the frozen scenario's key order).
pub const SCENARIO_KEYS: &[&str] = &[
    "name",
    "baseline",
    "session",
    "fidelity",
    "execution",
    "lane",
    "prompt",
    "timeout_ms",
    "answers",
    "on_unanswered",
    "expect_denied",
    "assert",
    "skills",
    "requires_capabilities",
    "allow_host_writes",
];

/// The session value meaning "no session file: all defaults".
pub const INLINE_SESSION: &str = "(inline)";

/// Errors of the scenario loader. Messages read after "failed to".
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("read scenario `{path}`: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("parse scenario `{path}`: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("load scenario `{path}`: {message}")]
    Invalid {
        path: PathBuf,
        message: String,
        hint: Option<String>,
    },
}

impl From<ScenarioError> for crate::Error {
    fn from(e: ScenarioError) -> Self {
        let hint = match &e {
            ScenarioError::Invalid { hint, .. } => hint.clone(),
            ScenarioError::Parse { .. } => Some("the scenario must be a YAML mapping".into()),
            ScenarioError::Read { .. } => None,
        };
        let err = crate::Error::usage(e.to_string());
        match hint {
            Some(h) => err.with_hint(h),
            None => err,
        }
    }
}

/// A loaded, validated scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The scenario file as given.
    pub path: PathBuf,
    /// `name` (defaults to the file stem).
    pub name: String,
    /// `session` as authored (`(inline)` when absent).
    pub session: String,
    /// The session file resolved against the scenario's directory; `None` for
    /// `(inline)`.
    pub session_path: Option<PathBuf>,
    /// `fidelity` (reel records at `protocol` only).
    pub fidelity: String,
    pub prompt: String,
    pub timeout_ms: Option<u64>,
    pub answers: Vec<AnswerRule>,
    pub on_unanswered: Unanswered,
    /// `assert:` items, each validated by `crate::assert::catalog::validate`.
    pub assert: Vec<Value>,
    /// The scenario as a cassette freezes it: defaults filled, original key
    /// order, `session` as authored (the recorder rewrites it relative to the
    /// cassette).
    pub frozen: Map<String, Value>,
    /// The scripted model found by convention (`<stem>.model.yaml`).
    pub model_script: Option<PathBuf>,
}

/// Assertion keys whose string (or string-list) parameter is a JS regex.
const REGEX_ASSERTIONS: &[&str] = &[
    "transcript_matches",
    "transcript_not_matches",
    "question_asked",
    "subagent_dispatched",
    "tool_result_matches",
    "tool_result_not_matches",
];

impl Scenario {
    /// Loads and validates `path`.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Read {
            path: path.to_owned(),
            source,
        })?;
        Scenario::from_str(path, &text)
    }

    /// Loads scenario text as if read from `path` (paths resolve against its
    /// directory).
    pub fn from_str(path: &Path, text: &str) -> Result<Scenario, ScenarioError> {
        let invalid = |message: String, hint: Option<String>| ScenarioError::Invalid {
            path: path.to_owned(),
            message,
            hint,
        };
        let doc: Value = serde_yaml::from_str(text).map_err(|e| ScenarioError::Parse {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        let Value::Object(map) = doc else {
            return Err(ScenarioError::Parse {
                path: path.to_owned(),
                message: "the top level is not a mapping".into(),
            });
        };
        for key in map.keys() {
            if !SCENARIO_KEYS.contains(&key.as_str()) {
                return Err(invalid(
                    format!("unknown key `{key}`{}", did_you_mean(key, SCENARIO_KEYS)),
                    Some(
                        "reel-only settings do not go in the scenario: the scripted model is \
                         `<name>.model.yaml` beside it, the agent command is `--agent-cmd`"
                            .into(),
                    ),
                ));
            }
        }
        let string = |key: &str| -> Result<Option<String>, ScenarioError> {
            match map.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(invalid(format!("`{key}` must be a string"), None)),
            }
        };
        let one_of =
            |key: &str, allowed: &[&str], default: &str| -> Result<String, ScenarioError> {
                let v = string(key)?.unwrap_or_else(|| default.to_owned());
                if allowed.contains(&v.as_str()) {
                    Ok(v)
                } else {
                    Err(invalid(
                        format!("`{key}: {v}` is not one of {}", allowed.join(", ")),
                        None,
                    ))
                }
            };
        let string_list = |key: &str| -> Result<Vec<Value>, ScenarioError> {
            match map.get(key) {
                None | Some(Value::Null) => Ok(Vec::new()),
                Some(Value::Array(items)) if items.iter().all(Value::is_string) => {
                    Ok(items.clone())
                }
                Some(_) => Err(invalid(format!("`{key}` must be a list of strings"), None)),
            }
        };

        let prompt = match string("prompt")? {
            Some(p) if !p.trim().is_empty() => p,
            _ => {
                return Err(invalid(
                    "`prompt` is required (the user turn sent to the agent)".into(),
                    None,
                ));
            }
        };
        let name = match string("name")? {
            Some(n) if !n.is_empty() => n,
            _ => file_stem(path),
        };
        let baseline = string("baseline")?.unwrap_or_else(|| "latest".into());
        let session = string("session")?.unwrap_or_else(|| INLINE_SESSION.into());
        let fidelity = one_of(
            "fidelity",
            &["protocol", "container", "microvm", "hostloop", "cowork"],
            "container",
        )?;
        if fidelity != "protocol" {
            let how = if map.contains_key("fidelity") {
                format!("`fidelity: {fidelity}`")
            } else {
                "no `fidelity` (the original's default is `container`)".into()
            };
            return Err(invalid(
                format!("{how}: reel records at the protocol tier only"),
                Some("set `fidelity: protocol` in the scenario".into()),
            ));
        }
        let execution = one_of("execution", &["local", "cloud-describe"], "local")?;
        if execution == "cloud-describe" {
            return Err(invalid(
                "`execution: cloud-describe` is reserved and cannot be run".into(),
                Some("remove `execution` (default `local`)".into()),
            ));
        }
        let lane = one_of("lane", &["local", "remote"], "local")?;
        let timeout_ms = match map.get("timeout_ms") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_u64() {
                Some(n) if n > 0 => Some(n),
                _ => {
                    return Err(invalid(
                        "`timeout_ms` must be a positive integer (milliseconds)".into(),
                        None,
                    ));
                }
            },
        };
        let answers_value = map.get("answers").cloned().unwrap_or(Value::Array(vec![]));
        let answers = answers::parse_rules(&answers_value, "answers")
            .map_err(|m| invalid(m, Some("see docs: answers rules".into())))?;
        let on_unanswered = match string("on_unanswered")?.as_deref() {
            None | Some("fail") => Unanswered::Fail,
            Some("first") => Unanswered::First,
            Some(v @ ("prompt" | "llm")) => {
                return Err(invalid(
                    format!("`on_unanswered: {v}` cannot be recorded by reel"),
                    Some("script the gate in `answers:`, or use `fail` / `first`".into()),
                ));
            }
            Some(v) => {
                return Err(invalid(
                    format!("`on_unanswered: {v}` is not one of fail, prompt, llm, first"),
                    None,
                ));
            }
        };
        let expect_denied = string_list("expect_denied")?;
        let skills = string_list("skills")?;
        let requires = string_list("requires_capabilities")?;
        let allow_host_writes = match map.get("allow_host_writes") {
            None => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => {
                return Err(invalid(
                    "`allow_host_writes` must be a boolean".into(),
                    None,
                ));
            }
        };
        let assert = match map.get("assert") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items.clone(),
            Some(_) => {
                return Err(invalid(
                    "`assert` must be a list of assertions".into(),
                    None,
                ));
            }
        };
        check_assertions(&assert, &lane, &expect_denied).map_err(|(m, h)| invalid(m, h))?;

        let session_path = if session == INLINE_SESSION {
            None
        } else {
            Some(
                resolve_path(&session, dir_of(path))
                    .map_err(|m| invalid(format!("`session`: {m}"), None))?,
            )
        };

        let mut frozen = Map::new();
        frozen.insert("name".into(), Value::String(name.clone()));
        frozen.insert("baseline".into(), Value::String(baseline));
        frozen.insert("session".into(), Value::String(session.clone()));
        frozen.insert("fidelity".into(), Value::String(fidelity.clone()));
        frozen.insert("execution".into(), Value::String(execution));
        frozen.insert("lane".into(), Value::String(lane));
        frozen.insert("prompt".into(), Value::String(prompt.clone()));
        if let Some(v) = map.get("timeout_ms") {
            frozen.insert("timeout_ms".into(), v.clone());
        }
        frozen.insert("answers".into(), answers_value);
        if let Some(v) = map.get("on_unanswered").filter(|v| !v.is_null()) {
            frozen.insert("on_unanswered".into(), v.clone());
        }
        frozen.insert("expect_denied".into(), Value::Array(expect_denied));
        frozen.insert("assert".into(), Value::Array(assert.clone()));
        frozen.insert("skills".into(), Value::Array(skills));
        frozen.insert("requires_capabilities".into(), Value::Array(requires));
        if let Some(b) = allow_host_writes {
            frozen.insert("allow_host_writes".into(), Value::Bool(b));
        }

        let model_script = model_script_beside(path);
        Ok(Scenario {
            path: path.to_owned(),
            name,
            session,
            session_path,
            fidelity,
            prompt,
            timeout_ms,
            answers,
            on_unanswered,
            assert,
            frozen,
            model_script,
        })
    }

    /// `cassettes/<slug(name)>.cassette.json`, relative to the current directory.
    pub fn default_cassette_path(&self) -> PathBuf {
        PathBuf::from("cassettes").join(format!("{}.cassette.json", slug(&self.name)))
    }

    /// True when any assertion item carries `key` with a truthy parameter.
    pub fn asserts_flag(&self, key: &str) -> bool {
        self.assert.iter().any(|a| {
            a.get(key)
                .is_some_and(|v| !matches!(v, Value::Bool(false) | Value::Null))
        })
    }
}

/// `<dir>/<stem>.model.yaml` next to a scenario file, if it exists.
pub fn model_script_beside(scenario: &Path) -> Option<PathBuf> {
    let candidate = dir_of(scenario).join(format!("{}.model.yaml", file_stem(scenario)));
    candidate.is_file().then_some(candidate)
}

fn file_stem(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.strip_suffix(".yaml")
        .or_else(|| name.strip_suffix(".yml"))
        .unwrap_or(&name)
        .to_owned()
}

/// The directory a file's relative paths resolve against.
pub fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Resolves an authored path: `~`/`~/x` → home, `~user` refused, relative →
/// against `base`.
pub fn resolve_path(p: &str, base: &Path) -> Result<PathBuf, String> {
    if p == "~" || p.starts_with("~/") {
        let home = std::env::var_os("HOME").ok_or("`~` used but HOME is not set")?;
        return Ok(PathBuf::from(home).join(p.trim_start_matches('~').trim_start_matches('/')));
    }
    if p.starts_with('~') {
        return Err(format!(
            "`{p}`: `~user` paths are not supported; write the full path"
        ));
    }
    let path = Path::new(p);
    Ok(if path.is_absolute() {
        path.to_owned()
    } else {
        base.join(path)
    })
}

/// cowork-harness's slug: `/` and `\` → `-`, runs of `..` → `.`, leading
/// `.`/`-` stripped, `scenario` if empty, >128 chars truncated plus a hash.
pub fn slug(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| if c == '/' || c == '\\' { '-' } else { c })
        .collect();
    while s.contains("..") {
        s = s.replace("..", ".");
    }
    let s = s.trim_start_matches(['.', '-']).to_owned();
    if s.is_empty() {
        return "scenario".into();
    }
    if s.chars().count() > 128 {
        use sha2::Digest;
        let digest = hex::encode(sha2::Sha256::digest(s.as_bytes()));
        let head: String = s.chars().take(128).collect();
        return format!("{head}-{}", &digest[..8]);
    }
    s
}

fn check_assertions(
    assert: &[Value],
    lane: &str,
    expect_denied: &[Value],
) -> Result<(), (String, Option<String>)> {
    let has = |key: &str, pred: &dyn Fn(&Value) -> bool| {
        assert.iter().any(|a| a.get(key).is_some_and(pred))
    };
    let any = |_: &Value| true;
    let truthy = |v: &Value| v.as_bool() == Some(true);
    for (i, item) in assert.iter().enumerate() {
        crate::assert::catalog::validate(item).map_err(|e| {
            let key = e
                .split('`')
                .nth(1)
                .map(|k| {
                    did_you_mean(
                        k,
                        &crate::assert::catalog::KEYS
                            .iter()
                            .map(|(k, _)| *k)
                            .collect::<Vec<_>>(),
                    )
                })
                .unwrap_or_default();
            (format!("assert[{i}]: {e}{key}"), None)
        })?;
        let Some(map) = item.as_object() else {
            continue;
        };
        if map.contains_key("replay_protocol_fidelity") {
            return Err((
                format!(
                    "assert[{i}]: `replay_protocol_fidelity` is produced by replay and cannot be authored"
                ),
                Some("remove it".into()),
            ));
        }
        for key in REGEX_ASSERTIONS {
            let patterns: Vec<&str> = match map.get(*key) {
                Some(Value::String(s)) => vec![s.as_str()],
                Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
                _ => continue,
            };
            for p in patterns {
                crate::assert::regex::compile_es(p)
                    .map_err(|e| (format!("assert[{i}].{key}: invalid regex `{p}`: {e}"), None))?;
            }
        }
        if lane == "remote" {
            for key in [
                "present_files_called",
                "no_scratchpad_leak",
                "user_visible_artifact",
            ] {
                if map.contains_key(key) {
                    return Err((
                        format!("assert[{i}].{key}: not available with `lane: remote`"),
                        None,
                    ));
                }
            }
        }
        for key in ["egress_denied", "egress_allowed"] {
            if map.contains_key(key) {
                return Err((
                    format!(
                        "assert[{i}].{key}: the protocol tier has no egress sandbox, so this would false-pass"
                    ),
                    Some("test egress at container fidelity with cowork-harness".into()),
                ));
            }
        }
    }
    if !expect_denied.is_empty() {
        return Err((
            "`expect_denied`: the protocol tier has no egress sandbox, so this would false-pass"
                .into(),
            Some("remove `expect_denied`".into()),
        ));
    }
    let contradictions: [(&str, bool, bool); 3] = [
        (
            "`questions_count_max: 0` contradicts gate assertions (gate_answer_count_min / question_asked / question_options / gate_answers_delivered: false)",
            has("questions_count_max", &|v| v.as_u64() == Some(0)),
            has("gate_answer_count_min", &|v| {
                v.as_u64().is_some_and(|n| n >= 1)
            }) || has("question_asked", &any)
                || has("question_options", &any)
                || has("gate_answers_delivered", &|v| v.as_bool() == Some(false)),
        ),
        (
            "`no_hook_blocked: true` contradicts `hook_blocked`",
            has("no_hook_blocked", &truthy),
            has("hook_blocked", &any),
        ),
        (
            "`no_path_denied: true` contradicts `path_denied` / `vm_path_denied`",
            has("no_path_denied", &truthy),
            has("path_denied", &any) || has("vm_path_denied", &any),
        ),
    ];
    for (message, a, b) in contradictions {
        if a && b {
            return Err((
                message.into(),
                Some("one of the two can never pass; remove it".into()),
            ));
        }
    }
    if has("no_delete_in_outputs", &truthy)
        && (has("allow_outputs_delete", &truthy)
            || has("allow_delete_in", &|v| {
                v.as_array()
                    .is_some_and(|a| a.iter().any(|x| x.as_str() == Some("outputs")))
            }))
    {
        return Err((
            "`no_delete_in_outputs` and `allow_outputs_delete`/`allow_delete_in: [outputs]` are mutually exclusive".into(),
            None,
        ));
    }
    Ok(())
}

/// ` (did you mean `x`?)` when a known key is close to `key`, else "".
pub fn did_you_mean(key: &str, known: &[&str]) -> String {
    known
        .iter()
        .map(|k| (levenshtein(key, k), *k))
        .filter(|(d, k)| *d <= (k.len().max(key.len())).div_ceil(3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default()
}

/// Edit distance over chars.
pub fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur.push((prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<Scenario, ScenarioError> {
        Scenario::from_str(Path::new("scenarios/demo.yaml"), text)
    }

    #[test]
    fn defaults_are_filled_in_the_original_key_order() {
        let s = load("fidelity: protocol\nprompt: hi\nsession: ../sessions/s.yaml\n").unwrap();
        assert_eq!(s.name, "demo");
        let keys: Vec<_> = s.frozen.keys().cloned().collect();
        assert_eq!(
            keys,
            [
                "name",
                "baseline",
                "session",
                "fidelity",
                "execution",
                "lane",
                "prompt",
                "answers",
                "expect_denied",
                "assert",
                "skills",
                "requires_capabilities"
            ]
        );
        assert_eq!(
            s.session_path,
            Some(PathBuf::from("scenarios/../sessions/s.yaml"))
        );
        assert_eq!(
            s.default_cassette_path(),
            PathBuf::from("cassettes/demo.cassette.json")
        );
    }

    #[test]
    fn unknown_keys_name_the_nearest_valid_key() {
        let err = load("fidelity: protocol\nprompt: hi\nasert: []\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unknown key `asert` (did you mean `assert`?)"),
            "{err}"
        );
        let err = load("fidelity: protocol\nprompt: hi\nassert:\n  - file_exist: x\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("assert[0]"), "{err}");
    }

    #[test]
    fn cross_key_and_tier_checks() {
        for (yaml, want) in [
            ("prompt: hi\n", "protocol tier only"),
            (
                "fidelity: protocol\nprompt: hi\nexpect_denied: [x.com]\n",
                "expect_denied",
            ),
            (
                "fidelity: protocol\nprompt: hi\non_unanswered: prompt\n",
                "cannot be recorded",
            ),
            (
                "fidelity: protocol\nprompt: hi\ntimeout_ms: 0\n",
                "positive integer",
            ),
            (
                "fidelity: protocol\nprompt: hi\nassert:\n  - replay_protocol_fidelity: true\n",
                "cannot be authored",
            ),
            (
                "fidelity: protocol\nprompt: hi\nassert:\n  - transcript_matches: '('\n",
                "invalid regex",
            ),
            (
                "fidelity: protocol\nprompt: hi\nassert:\n  - questions_count_max: 0\n  - question_asked: x\n",
                "contradicts",
            ),
            (
                "fidelity: protocol\nprompt: hi\nsession: ~bob/s.yaml\n",
                "~user",
            ),
            ("fidelity: protocol\n", "`prompt` is required"),
        ] {
            let err = load(yaml).unwrap_err().to_string();
            assert!(err.contains(want), "{yaml}: {err}");
        }
    }

    #[test]
    fn the_frozen_scenario_reloads_to_itself_with_only_original_keys() {
        let text = "fidelity: protocol\nprompt: hi\ntimeout_ms: 5000\non_unanswered: first\n\
                    answers:\n  - when_question: x\n    choose: [a, b]\n\
                    assert:\n  - result: success\n";
        let s = load(text).unwrap();
        assert!(s.frozen.keys().all(|k| SCENARIO_KEYS.contains(&k.as_str())));
        let yaml = serde_yaml::to_string(&Value::Object(s.frozen.clone())).unwrap();
        let again = load(&yaml).unwrap();
        assert_eq!(again.frozen, s.frozen);
    }

    #[test]
    fn slug_follows_the_original() {
        assert_eq!(slug("a/b\\c"), "a-b-c");
        assert_eq!(slug("..x...y"), "x.y");
        assert_eq!(slug("-.-"), "scenario");
        let long = "x".repeat(200);
        let s = slug(&long);
        assert_eq!(s.len(), 128 + 9);
    }
}
