//! Scenario YAML: the strict loader, defaults, cross-key checks, path
//! resolution, the slug and the default cassette path (docs/spec/record.md §1.2,
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
//! Two layers, one parser: [`Scenario::load_authored`] is the original's
//! loader (its schema plus its load-time checks, any fidelity tier — what
//! `replay --assert-from`/`--reassert` and the sibling notices read);
//! [`Scenario::load`] adds what reel's recorder cannot do. Errors say which
//! layer refused ([`Refusal`]). [`sibling`] finds the scenario a cassette was
//! recorded from; [`shaping`] compares its recording-shaping fields with the
//! cassette's frozen copy.
//!
//! Not here: the session YAML (`session.rs`, owned by the fingerprint module;
//! `session_keys` reads the few keys record needs until it lands), assertion
//! semantics (`crate::assert`).
//!
//! Files: `authored` reads and type-checks each top-level key in the original's
//! reporting order; `metrics` checks `metrics:` declarations; `schema_file`
//! inlines `artifact_json.schema: {file:}` at load; `session` is the session
//! loader; `answers` the decider (`when_question`, `when_tool`, `allow_if`
//! through `js::sandbox`); `sibling` the one resolver of a cassette's sibling
//! scenario; `shaping` the one recording-shaping comparison (frozen vs on-disk,
//! as `JSON.stringify` text). `load_authored` is what replay and
//! verify-cassettes use; `load` adds record's refusals.

pub mod answers;
mod authored;
pub mod metrics;
mod schema_file;
pub mod session;
pub mod session_keys;
pub mod shaping;
pub mod sibling;
pub mod turns;

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use answers::{AnswerRule, Unanswered};
use authored::Authored;

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
    "workspace_fixture",
    "metrics",
];

/// The session value meaning "no session file: all defaults".
pub const INLINE_SESSION: &str = "(inline)";

/// Which check refused a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The document does not fit the scenario schema: an unknown key, a wrong
    /// type or enum value, a malformed assertion or answer rule, a cross-key
    /// rule of the schema itself (`no_delete_in_outputs` with
    /// `allow_outputs_delete`). The original's loader reports these as
    /// schema errors (`replay` shows them as a `does not load` notice).
    Schema,
    /// Fits the schema, but a load-time check refuses it: a pattern or
    /// predicate that does not compile, an authored
    /// `replay_protocol_fidelity`, `execution: cloud-describe`, a key that
    /// cannot pass on `lane: remote`.
    LoadCheck,
    /// Loads, but `record` refuses it: a blank `prompt`, a tier other than
    /// `protocol`, egress assertions, an interactive `on_unanswered`, assertions that contradict
    /// each other, a `~user` session path.
    Unrecordable,
}

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
        /// What is wrong, led by the field's path (`assert[2].tool_called: …`).
        message: String,
        hint: Option<String>,
        refusal: Refusal,
    },
}

impl ScenarioError {
    /// The document was read and parsed as YAML but breaks the scenario
    /// schema (see [`Refusal::Schema`]); a read or YAML-syntax failure is not.
    pub fn is_schema(&self) -> bool {
        matches!(
            self,
            ScenarioError::Invalid {
                refusal: Refusal::Schema,
                ..
            }
        )
    }

    /// The problem without the ``load scenario `<path>`:`` lead (for a line that
    /// already names the file).
    pub fn detail(&self) -> String {
        match self {
            ScenarioError::Read { source, .. } => source.to_string(),
            ScenarioError::Parse { message, .. } | ScenarioError::Invalid { message, .. } => {
                message.clone()
            }
        }
    }

    /// The `hint:` line, if the loader has one.
    pub fn hint(&self) -> Option<String> {
        match self {
            ScenarioError::Invalid { hint, .. } => hint.clone(),
            ScenarioError::Parse { .. } => Some("the scenario must be a YAML mapping".into()),
            ScenarioError::Read { .. } => None,
        }
    }
}

impl From<ScenarioError> for crate::Error {
    fn from(e: ScenarioError) -> Self {
        let hint = e.hint();
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
    /// `(inline)` (and for a `~user` path, which only [`Scenario::load`]
    /// refuses).
    pub session_path: Option<PathBuf>,
    /// `fidelity` (default `container`; reel records at `protocol` only).
    pub fidelity: String,
    pub prompt: String,
    pub timeout_ms: Option<u64>,
    pub answers: Vec<AnswerRule>,
    /// `on_unanswered` for the decider: `first`, else `fail` (`prompt`/`llm`
    /// load, but [`Scenario::load`] refuses them).
    pub on_unanswered: Unanswered,
    /// `assert:` items, each validated by `crate::assert::catalog::validate`,
    /// with their keys in the order the original's loader emits them
    /// ([`assertion_in_schema_order`]).
    pub assert: Vec<Value>,
    /// The scenario as a cassette freezes it: defaults filled, the original's
    /// key order (top level, assertion items, answer rules), `session` as
    /// authored (the recorder rewrites it relative to the cassette).
    pub frozen: Map<String, Value>,
    /// The scripted model found by convention (`<stem>.model.yaml`).
    pub model_script: Option<PathBuf>,
    /// `workspace_fixture` as authored (relative to the scenario file; the
    /// cassette freezes it as written): a saved outputs tree staged before
    /// turn 1 (`fingerprint::fixture`).
    pub workspace_fixture: Option<String>,
    /// `metrics:` (numbers measured from the run's JSON outputs, reported
    /// beside the verdict), in declaration order.
    pub metrics: Vec<metrics::MetricDecl>,
    /// `turns:` (docs/multi-turn.md); empty for a one-prompt scenario, whose
    /// one turn is [`Scenario::prompt`] ([`Scenario::session_turns`]).
    pub turns: Vec<turns::Turn>,
    /// `fidelity` was written (not defaulted), for `record`'s message.
    fidelity_authored: bool,
}

impl Scenario {
    /// Loads and validates `path` for recording: [`Scenario::load_authored`]
    /// plus what reel's recorder cannot do ([`Refusal::Unrecordable`]).
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = read(path)?;
        Scenario::from_str(path, &text)
    }

    /// [`Scenario::load`] on text, as if read from `path` (paths resolve
    /// against its directory).
    pub fn from_str(path: &Path, text: &str) -> Result<Scenario, ScenarioError> {
        let scenario = Scenario::from_str_authored(path, text)?;
        scenario.check_recordable()?;
        Ok(scenario)
    }

    /// Loads `path` as the original's loader does (its schema plus its
    /// load-time checks), at any fidelity tier: what `replay --assert-from`,
    /// `--reassert` and the sibling-scenario notices read.
    pub fn load_authored(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = read(path)?;
        Scenario::from_str_authored(path, &text)
    }

    /// [`Scenario::load_authored`] on text, as if read from `path`.
    pub fn from_str_authored(path: &Path, text: &str) -> Result<Scenario, ScenarioError> {
        let doc = Authored::parse(path, text)?;
        // The keys are read in the order the original reports problems in:
        // unknown keys, each key's type, then the load-time checks.
        doc.check_known_keys()?;
        let prompt = doc.prompt()?;
        let name = doc.name()?;
        doc.string("baseline")?;
        let session = doc
            .string("session")?
            .unwrap_or_else(|| INLINE_SESSION.into());
        let fidelity = doc.one_of(
            "fidelity",
            &["protocol", "container", "microvm", "hostloop", "cowork"],
            "container",
        )?;
        let execution = doc.one_of("execution", &["local", "cloud-describe"], "local")?;
        let lane = doc.one_of("lane", &["local", "remote"], "local")?;
        let timeout_ms = doc.timeout_ms()?;
        let (answers, answers_compile_error) = doc.answers()?;
        let on_unanswered = doc.on_unanswered()?;
        doc.check_frozen_only_keys()?;
        let workspace_fixture = doc.workspace_fixture()?;
        let assert = doc.assertions(&execution, &lane)?;
        let turns = turns::parse(&doc, &execution, &lane)?;
        if let Some(message) = answers_compile_error {
            return Err(doc.load_check(message, None));
        }
        let metrics = metrics::parse(doc.map.get("metrics")).map_err(|(m, h)| doc.schema(m, h))?;

        // `~user` is refused by `load` (check_recordable), not here: the
        // original leaves such a path as authored.
        let session_path = (session != INLINE_SESSION)
            .then(|| resolve_path(&session, dir_of(path)).ok())
            .flatten();
        let mut frozen = frozen_of(&doc.map, &name, &assert);
        if let Some(Value::Array(authored)) = doc.map.get(turns::TURNS_KEY) {
            // No top-level `prompt`: the original's cassette shape check
            // then refuses the cassette (docs/multi-turn.md).
            frozen.shift_remove("prompt");
            frozen.insert(turns::TURNS_KEY.into(), turns::frozen(&turns, authored));
        }
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
            model_script: model_script_beside(path),
            workspace_fixture,
            metrics,
            turns,
            fidelity_authored: doc.map.contains_key("fidelity"),
        })
    }

    /// What reel's recorder refuses in a scenario that loads
    /// ([`Refusal::Unrecordable`]).
    fn check_recordable(&self) -> Result<(), ScenarioError> {
        let refuse = |message: String, hint: Option<String>| ScenarioError::Invalid {
            path: self.path.clone(),
            message,
            hint,
            refusal: Refusal::Unrecordable,
        };
        for (i, turn) in self.turns.iter().enumerate() {
            if turn.prompt.trim().is_empty() {
                return Err(refuse(
                    format!("turns[{i}]: `prompt` is blank: there is no user message to send"),
                    Some("write the user message of this turn in its `prompt:`".into()),
                ));
            }
            check_recordable_assertions(&turn.assert)
                .map_err(|(m, h)| refuse(format!("turns[{i}]: {m}"), h))?;
        }
        if self.turns.is_empty() && self.prompt.trim().is_empty() {
            return Err(refuse(
                "`prompt` is blank: there is no user turn to send to the agent".into(),
                Some("write the user turn in `prompt:`".into()),
            ));
        }
        if self.fidelity != "protocol" {
            let how = if self.fidelity_authored {
                format!("`fidelity: {}`", self.fidelity)
            } else {
                "no `fidelity` (the original's default is `container`)".into()
            };
            return Err(refuse(
                format!("{how}: reel records at the protocol tier only"),
                Some("set `fidelity: protocol` in the scenario".into()),
            ));
        }
        if self.frozen_str("execution") == Some("cloud-describe") {
            // Unreachable through `from_str_authored` (a load-time check),
            // kept so the two layers cannot drift apart.
            return Err(refuse(
                "`execution: cloud-describe` is reserved and cannot be run".into(),
                Some("remove `execution` (default `local`)".into()),
            ));
        }
        if let Some(v @ ("prompt" | "llm")) = self.frozen_str("on_unanswered") {
            return Err(refuse(
                format!("`on_unanswered: {v}` cannot be recorded by reel"),
                Some("script the gate in `answers:`, or use `fail` / `first`".into()),
            ));
        }
        check_recordable_assertions(&self.assert).map_err(|(m, h)| refuse(m, h))?;
        if self
            .frozen
            .get("expect_denied")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
        {
            return Err(refuse(
                "`expect_denied`: the protocol tier has no egress sandbox, so this would false-pass"
                    .into(),
                Some("remove `expect_denied`".into()),
            ));
        }
        if self.session != INLINE_SESSION {
            resolve_path(&self.session, dir_of(&self.path))
                .map_err(|m| refuse(format!("`session`: {m}"), None))?;
        }
        Ok(())
    }

    /// The `workspace_fixture` directory, resolved against the scenario's
    /// directory (as `session:` is).
    pub fn workspace_fixture_dir(&self) -> Option<Result<PathBuf, String>> {
        let f = self.workspace_fixture.as_deref()?;
        Some(resolve_path(f, dir_of(&self.path)))
    }

    /// The user turns to drive, in order: `turns:`, else the one
    /// top-level `prompt` (with no assertions of its own: the top-level
    /// block judges it).
    pub fn session_turns(&self) -> Vec<turns::Turn> {
        if !self.turns.is_empty() {
            return self.turns.clone();
        }
        vec![turns::Turn {
            prompt: self.prompt.clone(),
            timeout_ms: None,
            answers: Vec::new(),
            assert: Vec::new(),
        }]
    }

    /// A `turns:` scenario (several user messages in one session).
    pub fn is_multi_turn(&self) -> bool {
        !self.turns.is_empty()
    }

    fn frozen_str(&self, key: &str) -> Option<&str> {
        self.frozen.get(key).and_then(Value::as_str)
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

/// The scenario as a cassette freezes it, from a document that passed the
/// loader's checks: the authored keys with the original's defaults filled in,
/// in its key order (`name` as resolved, `assert` with schema files inlined).
fn frozen_of(map: &Map<String, Value>, name: &str, assert: &[Value]) -> Map<String, Value> {
    let given = |key: &str| map.get(key).filter(|v| !v.is_null());
    let text = |key: &str, default: &str| {
        given(key)
            .cloned()
            .unwrap_or_else(|| Value::String(default.into()))
    };
    let list = |key: &str| given(key).cloned().unwrap_or(Value::Array(Vec::new()));
    let mut frozen = Map::new();
    frozen.insert("name".into(), Value::String(name.into()));
    frozen.insert("baseline".into(), text("baseline", "latest"));
    frozen.insert("session".into(), text("session", INLINE_SESSION));
    frozen.insert("fidelity".into(), text("fidelity", "container"));
    frozen.insert("execution".into(), text("execution", "local"));
    frozen.insert("lane".into(), text("lane", "local"));
    frozen.insert("prompt".into(), text("prompt", ""));
    if let Some(v) = map.get("timeout_ms") {
        frozen.insert("timeout_ms".into(), v.clone());
    }
    frozen.insert("answers".into(), answers::in_schema_order(&list("answers")));
    if let Some(v) = given("on_unanswered") {
        frozen.insert("on_unanswered".into(), v.clone());
    }
    frozen.insert("expect_denied".into(), list("expect_denied"));
    frozen.insert("assert".into(), Value::Array(assert.to_vec()));
    frozen.insert("skills".into(), list("skills"));
    frozen.insert(
        "requires_capabilities".into(),
        list("requires_capabilities"),
    );
    for key in ["allow_host_writes", "workspace_fixture"] {
        if let Some(v) = given(key) {
            frozen.insert(key.into(), v.clone());
        }
    }
    if let Some(v) = given("metrics") {
        frozen.insert("metrics".into(), metrics::frozen(v));
    }
    frozen
}

/// Largest scenario file read: a scenario is a few KB, and a cassette's
/// `scenarioSource` may point anywhere (`/dev/zero`, a FIFO).
const MAX_SCENARIO_BYTES: u64 = 4 * 1024 * 1024;

/// Reads a regular file of at most [`MAX_SCENARIO_BYTES`].
fn read(path: &Path) -> Result<String, ScenarioError> {
    use std::io::Read;
    let fail = |source: std::io::Error| ScenarioError::Read {
        path: path.to_owned(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(fail)?;
    if !meta.is_file() {
        return Err(fail(std::io::Error::other("not a regular file")));
    }
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_SCENARIO_BYTES + 1).read_to_string(&mut text))
        .map_err(fail)?;
    if text.len() as u64 > MAX_SCENARIO_BYTES {
        return Err(fail(std::io::Error::other(format!(
            "larger than {MAX_SCENARIO_BYTES} bytes; a scenario is a few KB"
        ))));
    }
    Ok(text)
}

/// An `assert:` item with its keys, and its object parameters' fields, in the
/// order the original's loader emits them (`catalog::schema_order`,
/// `catalog::object_fields`). A cassette's frozen block is in this order, and
/// the original compares blocks as JSON text, so key order is significant.
/// Keys outside the schema (refused later) keep their place at the end.
pub fn assertion_in_schema_order(item: &Value) -> Value {
    use crate::assert::catalog;
    let Some(map) = item.as_object() else {
        return item.clone();
    };
    let mut out = in_order(map, catalog::schema_order());
    for (key, value) in out.iter_mut() {
        let fields = catalog::object_fields(key);
        if let (Some(inner), false) = (value.as_object(), fields.is_empty()) {
            *value = Value::Object(in_order(inner, &fields));
        }
    }
    Value::Object(out)
}

/// `map` with the keys of `order` first, in that order, then the rest as they were.
fn in_order(map: &Map<String, Value>, order: &[&str]) -> Map<String, Value> {
    let known = order
        .iter()
        .filter_map(|k| map.get_key_value(*k))
        .map(|(k, v)| (k.clone(), v.clone()));
    let rest = map
        .iter()
        .filter(|(k, _)| !order.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()));
    known.chain(rest).collect()
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
/// `.`/`-` stripped, `scenario` if empty; over 128 UTF-16 code units (a JS
/// string's length, so an emoji counts two) it keeps the first 128 units plus
/// `-` and 8 hex of the SHA-256 of the whole slug. Every other character,
/// non-ASCII included, is kept as is.
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
    const LIMIT: usize = 128;
    let units: Vec<u16> = s.encode_utf16().collect();
    if units.len() > LIMIT {
        use sha2::Digest;
        let digest = hex::encode(sha2::Sha256::digest(s.as_bytes()));
        // A cut through a surrogate pair leaves a lone surrogate, which Node
        // writes to the file system as U+FFFD: what the lossy decode gives.
        let head = String::from_utf16_lossy(&units[..LIMIT]);
        return format!("{head}-{}", &digest[..8]);
    }
    s
}

type Problem = (String, Option<String>);

/// True when some item carries `key` with a parameter satisfying `pred`.
fn any_item(assert: &[Value], key: &str, pred: &dyn Fn(&Value) -> bool) -> bool {
    assert.iter().any(|a| a.get(key).is_some_and(pred))
}

/// The schema's assertion rules: each item's keys and parameters
/// (`catalog::validate`), and the cross-item rule of the schema itself.
fn check_assertion_schema(assert: &[Value]) -> Result<(), Problem> {
    for (i, item) in assert.iter().enumerate() {
        crate::assert::catalog::validate(item).map_err(|e| {
            let key = e
                .strip_prefix("unknown assertion key `")
                .and_then(|rest| rest.split('`').next())
                .map(|k| did_you_mean(k, &crate::assert::catalog::names().collect::<Vec<_>>()))
                .unwrap_or_default();
            (format!("assert[{i}]: {e}{key}"), None)
        })?;
    }
    let deletes_denied = any_item(assert, "no_delete_in_outputs", &|_| true);
    let outputs_waived = any_item(assert, "allow_outputs_delete", &|v| {
        v.as_bool() == Some(true)
    }) || any_item(assert, "allow_delete_in", &|v| {
        v.as_array()
            .is_some_and(|a| a.iter().any(|x| x.as_str() == Some("outputs")))
    });
    if deletes_denied && outputs_waived {
        return Err((
            "`no_delete_in_outputs` and `allow_outputs_delete`/`allow_delete_in: [outputs]` are \
                mutually exclusive"
                .into(),
            Some("keep whichever matches the scenario's intent".into()),
        ));
    }
    Ok(())
}

/// The original's load-time checks on a schema-valid scenario, in its order:
/// an authored `replay_protocol_fidelity`, `execution: cloud-describe`, keys
/// that cannot pass on `lane: remote`, regexes that do not compile.
fn check_assertions_at_load(assert: &[Value], execution: &str, lane: &str) -> Result<(), Problem> {
    if let Some(i) = assert.iter().position(|a| {
        a.get(crate::assert::keys::name::REPLAY_PROTOCOL_FIDELITY)
            .is_some()
    }) {
        return Err((
            format!(
                "assert[{i}]: `replay_protocol_fidelity` is produced by replay and cannot be \
                    authored"
            ),
            Some("remove it".into()),
        ));
    }
    if execution == "cloud-describe" {
        return Err((
            "`execution: cloud-describe` is reserved and cannot be run".into(),
            Some("remove `execution` (default `local`)".into()),
        ));
    }
    if lane == "remote" {
        for (i, item) in assert.iter().enumerate() {
            for key in [
                "present_files_called",
                "no_scratchpad_leak",
                "user_visible_artifact",
            ] {
                if item.get(key).is_some() {
                    return Err((
                        format!("assert[{i}].{key}: not available with `lane: remote`"),
                        Some(
                            "assert the written path with `file_exists`, or set `lane: local`"
                                .into(),
                        ),
                    ));
                }
            }
        }
    }
    for (i, item) in assert.iter().enumerate() {
        let regex_keys = crate::assert::keys::all()
            .iter()
            .filter(|k| k.param.is_regex());
        for key in regex_keys.map(|k| k.name) {
            let patterns: Vec<&str> = match item.get(key) {
                Some(Value::String(s)) => vec![s.as_str()],
                Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
                _ => continue,
            };
            for p in patterns {
                crate::js::regex::compile_es(p)
                    .map_err(|e| (format!("assert[{i}].{key}: invalid regex `{p}`: {e}"), None))?;
            }
        }
    }
    Ok(())
}

/// What reel's recorder refuses among loadable assertions: egress keys (the
/// protocol tier has no egress sandbox) and pairs that can never both pass
/// (the original's `record` refuses those too).
fn check_recordable_assertions(assert: &[Value]) -> Result<(), Problem> {
    for (i, item) in assert.iter().enumerate() {
        for key in [
            crate::assert::keys::name::EGRESS_DENIED,
            crate::assert::keys::name::EGRESS_ALLOWED,
        ] {
            if item.get(key).is_some() {
                return Err((
                    format!(
                        "assert[{i}].{key}: the protocol tier has no egress sandbox, so this would \
                            false-pass"
                    ),
                    Some("test egress at container fidelity with cowork-harness".into()),
                ));
            }
        }
    }
    // The contradictions the original's `record` refuses, in catalog order.
    for key in crate::assert::keys::all() {
        let Some(rule) = key.excludes else { continue };
        let Some(message) = rule.refusal else {
            continue;
        };
        let excluded = rule
            .others
            .iter()
            .any(|(other, pred)| any_item(assert, other, pred));
        if any_item(assert, key.name, &rule.when) && excluded {
            return Err((
                message.into(),
                Some("one of the two can never pass; remove it".into()),
            ));
        }
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

/// Edit distance over chars (the "did you mean" hints of the loaders).
pub use strsim::levenshtein;

/// The YAML form of a JSON value (serde_json's arbitrary-precision numbers
/// do not serialise through serde_yaml_ng directly).
pub fn yaml_value(v: &Value) -> serde_yaml_ng::Value {
    use serde_yaml_ng::Value as Y;
    match v {
        Value::Null => Y::Null,
        Value::Bool(b) => Y::Bool(*b),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                Y::Number(u.into())
            } else if let Some(i) = n.as_i64() {
                Y::Number(i.into())
            } else {
                Y::Number(n.as_f64().unwrap_or(0.0).into())
            }
        }
        Value::String(s) => Y::String(s.clone()),
        Value::Array(a) => Y::Sequence(a.iter().map(yaml_value).collect()),
        Value::Object(m) => Y::Mapping(
            m.iter()
                .map(|(k, v)| (Y::String(k.clone()), yaml_value(v)))
                .collect(),
        ),
    }
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
                "fidelity: protocol\nprompt: hi\nassert:\n  - last_message_matches: '('\n",
                "invalid regex",
            ),
            (
                "fidelity: protocol\nprompt: hi\nassert:\n  - last_message_not_matches: \
                    {pattern: 'a', flags: 'y'}\n",
                "`y` is not a flag this key takes",
            ),
            (
                "fidelity: protocol\nprompt: hi\nassert:\n  - questions_count_max: 0\n  - \
                    question_asked: x\n",
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
        let yaml = serde_yaml_ng::to_string(&Value::Object(s.frozen.clone())).unwrap();
        let again = load(&yaml).unwrap();
        assert_eq!(again.frozen, s.frozen);
    }

    fn refusal(text: &str) -> Refusal {
        match Scenario::from_str_authored(Path::new("scenarios/demo.yaml"), text)
            .and_then(|s| s.check_recordable().map(|()| s))
        {
            Err(ScenarioError::Invalid { refusal, .. }) => refusal,
            other => panic!("{text}: expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn refusals_say_which_layer_refused() {
        for (yaml, want) in [
            ("prompt: hi\nbogus: 1\n", Refusal::Schema),
            ("prompt: hi\ntimeout_ms: -5\n", Refusal::Schema),
            ("prompt: hi\nfidelity: warp\n", Refusal::Schema),
            (
                "prompt: hi\nassert:\n  - tool_called: 'a(b'\n",
                Refusal::Schema,
            ),
            (
                "prompt: hi\nanswers:\n  - when_tool: Bash\n",
                Refusal::Schema,
            ),
            (
                "prompt: hi\nassert:\n  - no_delete_in_outputs: true\n  - allow_outputs_delete: \
                    true\n",
                Refusal::Schema,
            ),
            (
                "prompt: hi\nassert:\n  - transcript_matches: '('\n",
                Refusal::LoadCheck,
            ),
            (
                "prompt: hi\nanswers:\n  - when_question: '('\n    answer: x\n",
                Refusal::LoadCheck,
            ),
            (
                "prompt: hi\nassert:\n  - replay_protocol_fidelity: true\n",
                Refusal::LoadCheck,
            ),
            (
                "prompt: hi\nexecution: cloud-describe\n",
                Refusal::LoadCheck,
            ),
            (
                "prompt: hi\nlane: remote\nassert:\n  - present_files_called: true\n",
                Refusal::LoadCheck,
            ),
            ("prompt: hi\n", Refusal::Unrecordable),
            (
                "fidelity: protocol\nprompt: hi\nexpect_denied: [x.com]\n",
                Refusal::Unrecordable,
            ),
            (
                "fidelity: protocol\nprompt: hi\nassert:\n  - egress_denied: x.com\n",
                Refusal::Unrecordable,
            ),
            (
                "fidelity: protocol\nprompt: hi\non_unanswered: llm\n",
                Refusal::Unrecordable,
            ),
            (
                "fidelity: protocol\nprompt: hi\nsession: ~bob/s.yaml\n",
                Refusal::Unrecordable,
            ),
        ] {
            assert_eq!(refusal(yaml), want, "{yaml}");
        }
        // A schema problem wins over a load-time one, as in the original.
        assert_eq!(
            refusal("prompt: hi\nbogus: 1\nassert:\n  - transcript_matches: '('\n"),
            Refusal::Schema
        );
        let e = Scenario::from_str_authored(Path::new("s.yaml"), "prompt: [\n").unwrap_err();
        assert!(!e.is_schema(), "{e}");
    }

    #[test]
    fn a_blank_prompt_loads_as_authored_but_record_refuses_it() {
        // The original's schema is `prompt: z.string()`: any string loads.
        for yaml in [
            "fidelity: protocol\nprompt: ''\n",
            "fidelity: protocol\nprompt: \"  \\n\"\n",
        ] {
            let s = Scenario::from_str_authored(Path::new("s.yaml"), yaml).unwrap();
            assert!(s.prompt.trim().is_empty(), "{yaml}");
            assert_eq!(s.frozen["prompt"], Value::String(s.prompt.clone()));
            assert_eq!(refusal(yaml), Refusal::Unrecordable, "{yaml}");
            let err = load(yaml).unwrap_err();
            assert!(
                err.to_string()
                    .contains("scenarios/demo.yaml`: `prompt` is blank"),
                "{err}"
            );
            assert_eq!(
                err.hint().as_deref(),
                Some("write the user turn in `prompt:`")
            );
        }
        // Absent or null is still the schema's refusal, at both layers.
        for yaml in [
            "fidelity: protocol\n",
            "fidelity: protocol\nprompt:\n",
            "prompt: ~\n",
        ] {
            let err = Scenario::from_str_authored(Path::new("s.yaml"), yaml).unwrap_err();
            assert!(err.is_schema(), "{yaml}: {err}");
            assert!(err.to_string().contains("`prompt` is required"), "{err}");
            assert_eq!(refusal(yaml), Refusal::Schema, "{yaml}");
        }
    }

    #[test]
    fn load_authored_takes_every_tier_the_original_takes() {
        for tier in ["container", "hostloop", "microvm", "cowork", "protocol"] {
            let text = format!("fidelity: {tier}\nprompt: hi\nexpect_denied: [x.com]\n");
            let s = Scenario::from_str_authored(Path::new("s.yaml"), &text).unwrap();
            assert_eq!(s.fidelity, tier);
        }
        let s = Scenario::from_str_authored(Path::new("s.yaml"), "prompt: hi\n").unwrap();
        assert_eq!(s.frozen["fidelity"], "container");
        let err = load("prompt: hi\n").unwrap_err();
        assert!(err.to_string().contains("protocol tier only"), "{err}");
    }

    #[test]
    fn assertions_and_answer_rules_freeze_in_the_schema_order() {
        let s = load(
            "fidelity: protocol\nprompt: hi\n\
             answers:\n  - choose: a\n    when_question: x\n\
             assert:\n  - result: success\n    transcript_contains: hi\n\
             \x20 - artifact_text: {matches: b, artifact: o.md}\n",
        )
        .unwrap();
        let text = crate::js::json::legacy_serde(&s.frozen["assert"]);
        assert_eq!(
            text,
            r#"[{"transcript_contains":"hi","result":"success"},{"artifact_text":{"artifact":"o.md","matches":"b"}}]"#
        );
        assert_eq!(
            crate::js::json::legacy_serde(&s.frozen["answers"]),
            r#"[{"when_question":"x","choose":"a"}]"#
        );
        assert_eq!(Value::Array(s.assert.clone()), s.frozen["assert"]);
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

    /// Vectors from the original's rule run under Node (`slugForPath`):
    /// non-ASCII kept, the length bound in UTF-16 code units.
    #[test]
    fn slug_keeps_non_ascii_and_counts_utf16_units_like_the_original() {
        assert_eq!(slug("Résumé / 日本語 review"), "Résumé - 日本語 review");
        assert_eq!(
            slug(&"é".repeat(130)),
            format!("{}-0e453436", "é".repeat(128))
        );
        // 70 emoji are 140 units: cut after 64 of them.
        assert_eq!(
            slug(&"😀".repeat(70)),
            format!("{}-6461d28f", "😀".repeat(64))
        );
        // The cut falls inside a surrogate pair.
        assert_eq!(
            slug(&format!("a{}", "😀".repeat(70))),
            format!("a{}\u{FFFD}-74598a83", "😀".repeat(63))
        );
    }

    #[test]
    fn edit_distance_counts_characters_not_bytes() {
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        assert_eq!(levenshtein("é", "e"), 1);
        assert_eq!(
            did_you_mean("tool_calld", &["tool_called", "tool_not_called"]),
            " (did you mean `tool_called`?)"
        );
    }
}
