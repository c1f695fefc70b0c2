//! The assertion keys' shared vocabulary: replay buckets, parameter
//! shapes and their validation, and the catalog rows `reel assertions`
//! prints. The keys themselves (one record each) are [`crate::assert::keys`].
//!
//! The cassette loader, the scenario loader, replay's bucket exclusion and
//! the evaluator all read the key records through this module or `keys`.

use serde_json::{Map, Value};

use super::keys::{self, Key};

/// Which replay class a key belongs to (docs/spec/replay.md §4.1–4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Bucket {
    /// Evaluated on every replay from the re-driven events.
    Always,
    /// Needs `controlOut`; excluded (with a warning) when it is absent/empty.
    NeedsControlOut,
    /// Needs the artifacts manifest (and for two keys the pre-run baseline).
    NeedsManifest,
    /// Needs live telemetry; always stripped on replay.
    LiveOnly,
    /// `replay_protocol_fidelity`: produced by replay, never evaluated from `assert:`.
    Synthesized,
}

/// The bucket of `key`, or `None` for an unknown key.
pub fn bucket(key: &str) -> Option<Bucket> {
    keys::find(key).map(|k| k.bucket)
}

/// The keys an LLM judge decides (`semantic_matches`, `semantic_pairwise`):
/// the original judges them on a live run only and skips them on replay;
/// reel replays a `semantic_matches` verdict frozen with what it judged
/// (`crate::judge`).
pub fn is_judged(key: &str) -> bool {
    matches!(key, "semantic_matches" | "semantic_pairwise")
}

/// Every key name, in catalog order (docs/spec/replay.md §4).
pub fn names() -> impl Iterator<Item = &'static str> {
    keys::all().iter().map(|k| k.name)
}

/// Whether `key` is one of the seven verdict modifiers: always-passing no-ops
/// that `computeVerdict` reads from `assertions[]`.
pub fn is_verdict_modifier(key: &str) -> bool {
    keys::find(key).is_some_and(Key::verdict_modifier)
}

/// The order the original's scenario loader emits an assertion's keys in (its
/// schema's declaration order): a loaded `assert:` item, and so a cassette's
/// frozen one, lists its keys in this order whatever order they were authored
/// in. See `crate::scenario` (which applies it) and [`object_fields`].
pub fn schema_order() -> &'static [&'static str] {
    keys::schema_order()
}

/// The order replay rebuilds an assertion in when it strips it to the keys the
/// cassette can check (cowork-harness `replayCassette`'s `stripToContent`
/// walks its always-content keys, then the question/gate keys, then the active
/// manifest keys, copying each present one): the `assertion` a replayed result
/// echoes lists its keys in this order, whatever order the cassette froze.
pub fn replay_strip_order() -> &'static [&'static str] {
    keys::strip_order()
}

/// The fields of an object-valued key's parameter in schema declaration
/// order (the order the loader emits them); empty for any other key.
pub fn object_fields(key: &str) -> Vec<&'static str> {
    fn fields_of(p: Param) -> Vec<&'static str> {
        match p {
            Param::Object(fields, _) => fields.iter().map(|f| f.name).collect(),
            Param::OneOf(alternatives) => alternatives.iter().flat_map(|a| fields_of(*a)).collect(),
            _ => Vec::new(),
        }
    }
    keys::find(key).map_or_else(Vec::new, |k| fields_of(k.param))
}

/// Whether a `NeedsManifest` key is evaluable on `cassette` (spec §2.5 step 9):
/// the content keys need a non-empty `artifacts`; a key that also needs a
/// pre-run baseline field (`no_unexpected_files`: `preRunPaths`,
/// `input_unmodified`: `preRunHashes`) needs `artifacts` present (empty
/// allowed) and that field. `None` for a key outside the manifest bucket.
pub fn manifest_key_active(key: &str, cassette: &crate::cassette::Cassette) -> Option<bool> {
    let key = keys::find(key).filter(|k| k.bucket == Bucket::NeedsManifest)?;
    let artifacts = cassette.doc.get("artifacts").and_then(Value::as_array);
    Some(match key.baseline {
        Some(field) => artifacts.is_some() && cassette.doc.get(field).is_some_and(|v| !v.is_null()),
        None => artifacts.is_some_and(|a| !a.is_empty()),
    })
}

/// Validates one `assert:` item (strict: unknown keys and wrong parameter
/// types are refused). The error names the offending key and what is wrong.
pub fn validate(item: &Value) -> Result<(), String> {
    let Some(map) = item.as_object() else {
        return Err("an assertion must be an object of `key: parameter`".into());
    };
    validate_map(map)
}

fn validate_map(map: &Map<String, Value>) -> Result<(), String> {
    for (key, value) in map {
        let Some(kind) = keys::find(key).map(|k| k.param) else {
            return Err(format!("unknown assertion key `{key}`"));
        };
        kind.check(value).map_err(|why| format!("`{key}`: {why}"))?;
    }
    Ok(())
}

/// JSON type name for messages.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// The parameter shape of one key (cowork-harness schema/scenario.schema.json
/// plus the zod refinements that the JSON schema cannot express).
#[derive(Clone, Copy)]
pub(crate) enum Param {
    /// Any string (regexes: compiled at evaluation, never at load on replay).
    Str,
    /// A string of at least one character.
    NonEmpty,
    /// A string that is a JS regex, compiled when a scenario loads (so a bad
    /// pattern is a load error naming the item, not a failing assertion).
    Regex,
    /// A non-empty string that is a JS regex, compiled when a scenario loads.
    NonEmptyRegex,
    /// A tool glob: non-empty and no regex metacharacter.
    ToolGlob,
    /// `true` only.
    True,
    Bool,
    /// Integer ≥ 0.
    UInt,
    /// Integer > 0.
    PosInt,
    /// Number > 0.
    PosNum,
    /// `success` | `error`.
    ResultKind,
    /// Array of non-empty strings (may be empty).
    GlobList,
    /// Non-empty string, or non-empty array of non-empty strings.
    GlobOrList,
    /// Non-empty array of non-empty strings.
    NonEmptyStrList,
    Object(&'static [Field], Refine),
    /// One of several shapes (a string form and an object form): the first
    /// that accepts the value wins; a value none accepts gets the error of
    /// the alternative of its JSON type.
    OneOf(&'static [Param]),
}

/// One field of an object parameter.
pub(crate) struct Field {
    name: &'static str,
    param: Param,
    required: bool,
}

pub(crate) const fn opt(name: &'static str, param: Param) -> Field {
    Field {
        name,
        param,
        required: false,
    }
}

pub(crate) const fn req(name: &'static str, param: Param) -> Field {
    Field {
        name,
        param,
        required: true,
    }
}

/// Cross-field refinements of object parameters.
#[derive(Clone, Copy)]
pub(crate) enum Refine {
    None,
    PathOrSuffix,
    EqualsXorContains,
    /// `question_option_count`: `exactly`, or `min` and/or `max`.
    CountBound,
    /// The hook keys' objects: bounds, `via`, `decision`.
    Hook,
    /// `hook_output_*`: `stream`, exactly one needle.
    HookOutput,
    /// `artifact_json`: `match` with a glob only, the schema usable.
    ArtifactJson,
    /// The object form of `tool_called` / `tool_not_called`: `input`,
    /// `scope`, `subagent_type`, `count`.
    ToolCall,
    /// `tool_order`: each end's `input_json` compiles.
    ToolOrder,
    /// `last_message_*`: the pattern compiles with the flags.
    LastMessage,
    Any,
}

/// Marker for an untyped field (`artifact_json.equals`).
pub(crate) const ANY: Param = Param::Object(&[], Refine::Any);

fn expect(cond: bool, v: &Value, what: &str) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(format!("expected {what}, got {}", render(v)))
    }
}

pub(crate) fn render(v: &Value) -> String {
    let s = match v {
        Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null => {
            serde_json::to_string(v).unwrap_or_default()
        }
        other => type_name(other).to_owned(),
    };
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(60).collect::<String>())
    } else {
        s
    }
}

/// An integral JSON number within JavaScript's safe-integer range.
fn as_int(v: &Value) -> Option<f64> {
    let f = v.as_f64()?;
    (f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER).then_some(f)
}

fn str_items(v: &Value, min_items: usize) -> Result<(), String> {
    let Some(items) = v.as_array() else {
        return Err(format!(
            "expected an array of non-empty strings, got {}",
            render(v)
        ));
    };
    if items.len() < min_items {
        return Err("expected at least one entry, got an empty array".into());
    }
    for (i, it) in items.iter().enumerate() {
        match it.as_str() {
            Some(s) if !s.is_empty() => {}
            Some(_) => return Err(format!("entry [{i}] is an empty string")),
            None => {
                return Err(format!(
                    "entry [{i}]: expected a string, got {}",
                    render(it)
                ));
            }
        }
    }
    Ok(())
}

impl Param {
    /// The first shape of a [`Param::OneOf`] (its string form), else itself:
    /// what two opposite keys both name.
    #[cfg(test)]
    pub(crate) fn primary(self) -> Param {
        match self {
            Param::OneOf([first, ..]) => *first,
            other => other,
        }
    }

    /// A JS regex the scenario loader compiles (a key whose string form is
    /// one: its object form's refinement compiles the rest).
    pub(crate) fn is_regex(self) -> bool {
        match self {
            Param::OneOf([first, ..]) => first.is_regex(),
            other => matches!(other, Param::Regex | Param::NonEmptyRegex),
        }
    }

    fn check(self, v: &Value) -> Result<(), String> {
        match self {
            Param::Str | Param::Regex => expect(v.is_string(), v, "a string"),
            Param::NonEmpty | Param::NonEmptyRegex => {
                expect(v.is_string(), v, "a string")?;
                expect(
                    v.as_str().is_some_and(|s| !s.is_empty()),
                    v,
                    "a non-empty string",
                )
            }
            Param::ToolGlob => check_tool_glob(v),
            Param::True => expect(*v == Value::Bool(true), v, "`true`"),
            Param::Bool => expect(v.is_boolean(), v, "a boolean"),
            Param::UInt => expect(as_int(v).is_some_and(|n| n >= 0.0), v, "an integer ≥ 0"),
            Param::PosInt => expect(as_int(v).is_some_and(|n| n > 0.0), v, "an integer > 0"),
            Param::PosNum => expect(v.as_f64().is_some_and(|n| n > 0.0), v, "a number > 0"),
            Param::ResultKind => expect(
                matches!(v.as_str(), Some("success" | "error")),
                v,
                "\"success\" or \"error\"",
            ),
            Param::GlobList => str_items(v, 0),
            Param::GlobOrList => match v {
                Value::String(s) if !s.is_empty() => Ok(()),
                Value::String(_) => Err("expected a non-empty glob, got \"\"".into()),
                Value::Array(_) => str_items(v, 1),
                other => Err(format!(
                    "expected a glob or a list of globs, got {}",
                    render(other)
                )),
            },
            Param::NonEmptyStrList => str_items(v, 1),
            Param::OneOf(alternatives) => check_one_of(alternatives, v),
            Param::Object(_, Refine::Any) => Ok(()),
            Param::Object(fields, refine) => check_object(fields, refine, v),
        }
    }
}

fn check_tool_glob(v: &Value) -> Result<(), String> {
    expect(v.is_string(), v, "a tool glob string")?;
    let g = v.as_str().unwrap_or_default();
    if g.is_empty() {
        return Err(
            "tool glob is empty — an empty glob matches no tool and passes vacuously".into(),
        );
    }
    if super::glob::looks_like_regex(g) {
        return Err(format!(
            "tool glob looks like a regex or brace-expansion — only * and ? are special (no .* \
                | [] {{}}): {}",
            render(v)
        ));
    }
    Ok(())
}

/// The first alternative that takes the value; else the error of the first
/// one whose JSON type matches (its message is the useful one), else the
/// first error.
fn check_one_of(alternatives: &[Param], v: &Value) -> Result<(), String> {
    let mut first_err = None;
    for alt in alternatives {
        match alt.check(v) {
            Ok(()) => return Ok(()),
            Err(e) if alt.accepts_type_of(v) => return Err(e),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    Err(first_err.unwrap_or_default())
}

/// An object parameter: known fields of the right shape, the required ones
/// present, then the key's own cross-field rule.
fn check_object(fields: &[Field], refine: Refine, v: &Value) -> Result<(), String> {
    let Some(m) = v.as_object() else {
        return Err(format!("expected an object, got {}", render(v)));
    };
    for (k, fv) in m {
        let Some(f) = fields.iter().find(|f| f.name == k) else {
            let known: Vec<&str> = fields.iter().map(|f| f.name).collect();
            return Err(format!(
                "unknown field `{k}` (expected one of: {})",
                known.join(", ")
            ));
        };
        f.param.check(fv).map_err(|e| format!("field `{k}`: {e}"))?;
    }
    for f in fields.iter().filter(|f| f.required) {
        if !m.contains_key(f.name) {
            return Err(format!("missing required field `{}`", f.name));
        }
    }
    object_extra(fields, m)?;
    match refine.problem(m) {
        Some(problem) => Err(problem),
        None => Ok(()),
    }
}

impl Refine {
    /// What the key's cross-field rule refuses in an object, if anything.
    fn problem(self, m: &Map<String, Value>) -> Option<String> {
        match self {
            Refine::PathOrSuffix if !m.contains_key("path") && !m.contains_key("path_suffix") => {
                Some("subagent_file_write needs `path` (exact) or `path_suffix`".into())
            }
            Refine::EqualsXorContains if m.contains_key("equals") == m.contains_key("contains") => {
                Some("question_options: set exactly one of `equals` or `contains`".into())
            }
            Refine::CountBound => count_bound_problem(m),
            Refine::Hook => keys::hook_object_problem(m, false),
            Refine::HookOutput => keys::hook_object_problem(m, true),
            Refine::ArtifactJson => keys::artifact_json_problem(m),
            Refine::ToolCall => keys::tool_object_problem(m),
            Refine::ToolOrder => keys::tool_order_problem(m),
            Refine::LastMessage => keys::last_message_problem(m),
            _ => None,
        }
    }
}

/// What is wrong with a `question_option_count` bound (`exactly`, or `min`
/// and/or `max`), if anything (test/question-option-count.test.ts).
pub(crate) fn count_bound_problem(m: &Map<String, Value>) -> Option<String> {
    let n = |k: &str| m.get(k).and_then(as_int);
    let (exactly, min, max) = (n("exactly"), n("min"), n("max"));
    if exactly.is_none() && min.is_none() && max.is_none() {
        return Some("set `exactly`, `min` or `max` — without a bound it checks nothing".into());
    }
    if exactly.is_some() && (min.is_some() || max.is_some()) {
        return Some("set `exactly` or `min`/`max`, not both".into());
    }
    if let (Some(lo), Some(hi)) = (min, max)
        && lo > hi
    {
        return Some(format!("`min` ({lo}) is greater than `max` ({hi})"));
    }
    // A YAML double-quoted "\b" loads a backspace: a regex that silently
    // matches nothing (test/question-option-count.test.ts, load time).
    let s = |k: &str| m.get(k).and_then(Value::as_str);
    if let Some(field) = ["matches", "when_question"].into_iter().find(|k| {
        s(k).is_some_and(|t| {
            t.chars()
                .any(|c| c.is_control() && !matches!(c, '\n' | '\t'))
        })
    }) {
        return Some(format!(
            "`{field}` holds a control character (a YAML \"\\b\" is a backspace; write '\\b' for a word boundary)"
        ));
    }
    None
}

impl Param {
    /// Whether `v` is of the JSON type this shape is about (a string for the
    /// string shapes, an object for an object shape).
    fn accepts_type_of(self, v: &Value) -> bool {
        match self {
            Param::Object(_, Refine::Any) => true,
            Param::Object(..) => v.is_object(),
            Param::True | Param::Bool => v.is_boolean(),
            Param::UInt | Param::PosInt | Param::PosNum => v.is_number(),
            Param::GlobList | Param::NonEmptyStrList => v.is_array(),
            Param::GlobOrList => v.is_string() || v.is_array(),
            Param::OneOf(alts) => alts.iter().any(|a| a.accepts_type_of(v)),
            _ => v.is_string(),
        }
    }
}

/// Field checks the table cannot express (enums, typed `ANY` fields).
fn object_extra(fields: &[Field], m: &Map<String, Value>) -> Result<(), String> {
    let has = |n: &str| fields.iter().any(|f| f.name == n);
    let enum_field = |k: &str, allowed: &[&str]| -> Result<(), String> {
        match m.get(k) {
            Some(v) if !v.as_str().is_some_and(|s| allowed.contains(&s)) => Err(format!(
                "field `{k}`: expected one of {}, got {}",
                allowed.join(" | "),
                render(v)
            )),
            _ => Ok(()),
        }
    };
    if has("source") && has("agent_scope") {
        enum_field(
            "source",
            &["pretooluse", "can_use_tool", "permission_denied"],
        )?;
        enum_field("agent_scope", &["main", "subagent", "any"])?;
    }
    if has("when_question") {
        enum_field("order", &["exact", "any"])?;
        for k in ["equals", "contains"] {
            if let Some(v) = m.get(k) {
                let ok = v.as_array().is_some_and(|a| a.iter().all(Value::is_string));
                if !ok {
                    return Err(format!(
                        "field `{k}`: expected an array of strings, got {}",
                        render(v)
                    ));
                }
            }
        }
    }
    if has("artifact") && has("gt") {
        if let Some(v) = m.get("gt")
            && !v.is_number()
        {
            return Err(format!("field `gt`: expected a number, got {}", render(v)));
        }
        if let Some(v) = m.get("in")
            && !v.is_array()
        {
            return Err(format!("field `in`: expected an array, got {}", render(v)));
        }
    }
    if has("rubric")
        && let Some(v) = m.get("min_pass")
    {
        let ok = v.as_str() == Some("all") || as_int(v).is_some_and(|n| n > 0.0);
        if !ok {
            return Err(format!(
                "field `min_pass`: expected \"all\" or an integer > 0, got {}",
                render(v)
            ));
        }
    }
    Ok(())
}

/// Everything the catalog says about one key (a row of
/// `reel assertions --output-format json`, `schema/assertions.json`).
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyEntry {
    pub key: &'static str,
    pub bucket: &'static str,
    pub parameter: String,
    pub description: &'static str,
    /// Replay evaluates it (on a cassette that carries what it needs).
    pub replay_evaluates: bool,
    pub needs_control_out: bool,
    pub needs_manifest: bool,
    /// The pre-run baseline field it also needs (`preRunPaths`/`preRunHashes`).
    pub needs_pre_run_baseline: Option<&'static str>,
    /// Evaluated only by a live run; replay always skips it.
    pub live_only: bool,
    /// A verdict modifier (always passes; relaxes the verdict).
    pub verdict_modifier: bool,
    /// Why the key cannot go in a turn's `assert:` of a multi-turn scenario
    /// (`None`: it can; docs/multi-turn.md).
    pub session_only: Option<&'static str>,
    pub example: Value,
}

/// The catalog entry of `key`, or `None` for an unknown key.
pub fn entry(key: &str) -> Option<KeyEntry> {
    keys::find(key).map(key_entry)
}

fn key_entry(k: &Key) -> KeyEntry {
    let b = k.bucket;
    KeyEntry {
        key: k.name,
        bucket: b.name(),
        parameter: k.param.describe(),
        description: k.description,
        replay_evaluates: b.replay_evaluates(),
        needs_control_out: b == Bucket::NeedsControlOut,
        needs_manifest: b == Bucket::NeedsManifest,
        needs_pre_run_baseline: k.baseline,
        live_only: b == Bucket::LiveOnly,
        verdict_modifier: k.verdict_modifier(),
        session_only: session_only(k.name),
        example: k.example(),
    }
}

/// Why `key` cannot be asserted inside one turn of a multi-turn scenario
/// (`None`: it can, or it is unknown). A turn's evidence is the events
/// between its user message and its `result`; what is captured once per
/// session is not in that slice.
pub fn session_only(key: &str) -> Option<&'static str> {
    if is_verdict_modifier(key) {
        return Some("a verdict modifier relaxes the whole session's verdict");
    }
    if is_judged(key) {
        return Some("a judged key is decided once, on the whole live run");
    }
    match bucket(key)? {
        Bucket::NeedsManifest => {
            Some("the artifacts manifest and pre-run baseline are captured once per session")
        }
        Bucket::LiveOnly => Some("live telemetry is measured once per session"),
        Bucket::Synthesized => Some("produced by replay for the whole cassette"),
        Bucket::Always | Bucket::NeedsControlOut => None,
    }
}

/// Every entry, in catalog order.
pub fn entries() -> Vec<KeyEntry> {
    keys::all().iter().map(|k| key_entry(k)).collect()
}

impl Bucket {
    /// The bucket's name in `reel assertions` (text and JSON).
    pub fn name(self) -> &'static str {
        match self {
            Bucket::Always => "always",
            Bucket::NeedsControlOut => "needs-control-out",
            Bucket::NeedsManifest => "needs-manifest",
            Bucket::LiveOnly => "live-only",
            Bucket::Synthesized => "synthesized",
        }
    }

    /// Whether replay ever evaluates a key of this bucket.
    pub fn replay_evaluates(self) -> bool {
        matches!(
            self,
            Bucket::Always | Bucket::NeedsControlOut | Bucket::NeedsManifest
        )
    }
}

/// The pre-run baseline field a manifest key also needs (`preRunPaths` /
/// `preRunHashes`), if any.
pub fn needs_pre_run_baseline(key: &str) -> Option<&'static str> {
    keys::find(key)?.baseline
}

/// The parameter shape of `key` in words (`tool glob`, `{ artifact: …, … }`).
pub fn parameter(key: &str) -> Option<String> {
    keys::find(key).map(|k| k.param.describe())
}

/// A parameter value `key` accepts (what `reel assertions KEY` shows as its
/// example); always passes [`validate`].
pub fn example(key: &str) -> Option<Value> {
    keys::find(key).map(Key::example)
}

impl Param {
    pub(crate) fn describe(self) -> String {
        match self {
            Param::Str | Param::Regex => "string".into(),
            Param::NonEmpty | Param::NonEmptyRegex => "non-empty string".into(),
            Param::ToolGlob => "tool glob (* and ? only)".into(),
            Param::True => "true".into(),
            Param::Bool => "boolean".into(),
            Param::UInt => "integer ≥ 0".into(),
            Param::PosInt => "integer > 0".into(),
            Param::PosNum => "number > 0".into(),
            Param::ResultKind => "\"success\" | \"error\"".into(),
            Param::GlobList => "[path glob, …] (may be empty)".into(),
            Param::GlobOrList => "path glob | [path glob, …]".into(),
            Param::NonEmptyStrList => "[non-empty string, …] (at least one)".into(),
            Param::Object(_, Refine::Any) => "any JSON value".into(),
            Param::OneOf(alternatives) => alternatives
                .iter()
                .map(|a| a.describe())
                .collect::<Vec<_>>()
                .join(" | "),
            Param::Object(fields, refine) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|f| {
                        format!(
                            "{}{}: {}",
                            f.name,
                            if f.required { "" } else { "?" },
                            f.param.describe()
                        )
                    })
                    .collect();
                let rule = match refine {
                    Refine::PathOrSuffix => " (path or path_suffix)",
                    Refine::EqualsXorContains => " (exactly one of equals, contains)",
                    Refine::CountBound => " (exactly, or min and/or max)",
                    Refine::ArtifactJson => {
                        " (a glob `artifact` needs match: each | any; schema: JSON Schema 2020-12, \
                         inline or {file: path} read beside the scenario at load)"
                    }
                    Refine::ToolCall => {
                        " (input: {field: regex}; scope: main | subagent | any; subagent_type \
                         only with scope: subagent; count.min ≤ count.max; input_json: a \
                         case-sensitive regex over the input's JSON)"
                    }
                    Refine::ToolOrder => {
                        " (each end a tool glob or {tool, input_json}: a case-sensitive regex \
                         over the call's input JSON)"
                    }
                    Refine::LastMessage => {
                        " (flags: ECMAScript flags from d g i m s u v, default i; \"\" is \
                         case-sensitive)"
                    }
                    _ => "",
                };
                format!("{{ {} }}{rule}", parts.join(", "))
            }
        }
    }

    pub(crate) fn example(self) -> Value {
        match self {
            Param::Str | Param::NonEmpty | Param::Regex | Param::NonEmptyRegex => {
                Value::from("example")
            }
            Param::ToolGlob => Value::from("Write"),
            Param::True | Param::Bool => Value::Bool(true),
            Param::UInt => Value::from(0),
            Param::PosInt | Param::PosNum => Value::from(1),
            Param::ResultKind => Value::from("success"),
            Param::GlobList | Param::NonEmptyStrList => serde_json::json!(["example"]),
            Param::GlobOrList => Value::from("example/**"),
            Param::Object(_, Refine::Any) => Value::Null,
            Param::OneOf(alternatives) => alternatives.first().map_or(Value::Null, |a| a.example()),
            Param::Object(fields, _) => Value::Object(
                fields
                    .iter()
                    .filter(|f| f.required)
                    .map(|f| (f.name.to_string(), f.param.example()))
                    .collect(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(v: Value) -> String {
        validate(&v).unwrap_err()
    }

    #[test]
    fn validation_names_the_key_and_the_problem() {
        use serde_json::json;
        assert!(
            validate(&json!({"tool_called": "mcp__workspace__*", "result": "success"})).is_ok()
        );
        assert_eq!(err(json!({"nope": 1})), "unknown assertion key `nope`");
        assert!(
            err(json!({"tool_called": "Bash|Read"}))
                .starts_with("`tool_called`: tool glob looks like a regex")
        );
        assert!(
            err(json!({"tool_not_called": ""}))
                .starts_with("`tool_not_called`: tool glob is empty")
        );
        assert_eq!(
            err(json!({"transcript_contains": ""})),
            "`transcript_contains`: expected a non-empty string, got \"\""
        );
        assert_eq!(
            err(json!({"max_turns": -1})),
            "`max_turns`: expected an integer ≥ 0, got -1"
        );
        assert_eq!(
            err(json!({"max_tokens": 0})),
            "`max_tokens`: expected an integer > 0, got 0"
        );
        assert_eq!(
            err(json!({"max_tokens": 1.5})),
            "`max_tokens`: expected an integer > 0, got 1.5"
        );
        assert!(validate(&json!({"max_turns": 3.0})).is_ok());
        assert_eq!(
            err(json!({"max_cost_usd": 0})),
            "`max_cost_usd`: expected a number > 0, got 0"
        );
        assert_eq!(
            err(json!({"no_hook_blocked": false})),
            "`no_hook_blocked`: expected `true`, got false"
        );
        assert_eq!(
            err(json!({"result": "ok"})),
            "`result`: expected \"success\" or \"error\", got \"ok\""
        );
        assert_eq!(
            err(json!({"question_options": {"equals": ["a"], "contains": ["a"]}})),
            "`question_options`: question_options: set exactly one of `equals` or `contains`"
        );
        assert_eq!(
            err(json!({"subagent_file_write": {"tool": "Write"}})),
            "`subagent_file_write`: subagent_file_write needs `path` (exact) or `path_suffix`"
        );
        assert!(
            err(json!({"path_denied": {"source": "hook"}}))
                .contains("expected one of pretooluse | can_use_tool | permission_denied")
        );
        assert!(
            err(json!({"artifact_json": {"path": "a"}}))
                .contains("missing required field `artifact`")
        );
        assert!(
            err(json!({"artifact_json": {"artifact": "a", "bogus": 1}}))
                .contains("unknown field `bogus`")
        );
        assert!(
            err(json!({"artifact_text": {"artifact": "a", "contains": []}}))
                .contains("at least one entry")
        );
        assert!(err(json!({"input_unmodified": []})).contains("at least one entry"));
        assert!(validate(&json!({"input_unmodified": "uploads/**"})).is_ok());
        assert!(validate(&json!({"no_unexpected_files": []})).is_ok());
        assert!(
            validate(&json!({"artifact_json": {"artifact": "a.json", "equals": {"x": [1]}}}))
                .is_ok()
        );
        assert!(validate(&json!({})).is_ok());
        assert!(err(json!([1])).contains("must be an object"));
    }

    #[test]
    fn manifest_activity_follows_the_cassette() {
        use crate::cassette::Cassette;
        let mk = |doc: Value| {
            Cassette::unchecked(
                "x.cassette.json",
                doc.as_object().cloned().unwrap_or_default(),
                12,
            )
        };
        let c = mk(serde_json::json!({"artifacts": [], "preRunPaths": []}));
        assert_eq!(manifest_key_active("file_exists", &c), Some(false));
        assert_eq!(manifest_key_active("no_unexpected_files", &c), Some(true));
        assert_eq!(manifest_key_active("input_unmodified", &c), Some(false));
        assert_eq!(manifest_key_active("result", &c), None);
    }
}
