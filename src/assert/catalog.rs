//! The 77 assertion keys of the cowork-harness v12 scenario schema, their
//! replay buckets and (in `validate`) their parameter types.
//!
//! This is the one list of assertion keys in reel: the cassette loader, the
//! scenario loader, replay's bucket exclusion and the evaluator all read it.

use serde_json::{Map, Value};

/// Which replay class a key belongs to (spec/replay.md §4.1–4.4).
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

/// Every key, in the order of spec/replay.md §4 (evaluation order is `check`'s).
pub const KEYS: &[(&str, Bucket)] = &[
    ("result", Bucket::Always),
    ("transcript_contains", Bucket::Always),
    ("transcript_not_contains", Bucket::Always),
    ("transcript_matches", Bucket::Always),
    ("transcript_not_matches", Bucket::Always),
    ("tool_called", Bucket::Always),
    ("tool_not_called", Bucket::Always),
    ("tool_result_contains", Bucket::Always),
    ("tool_result_not_contains", Bucket::Always),
    ("tool_result_matches", Bucket::Always),
    ("tool_result_not_matches", Bucket::Always),
    ("subagent_tool_used", Bucket::Always),
    ("subagent_tool_absent", Bucket::Always),
    ("subagent_dispatched", Bucket::Always),
    ("subagent_declared_but_unused", Bucket::Always),
    ("subagent_output_contains", Bucket::Always),
    ("dispatch_count_max", Bucket::Always),
    ("subagent_file_write", Bucket::Always),
    ("subagent_dispatch_healthy", Bucket::Always),
    ("no_vm_path_file_op", Bucket::Always),
    ("skill_triggered", Bucket::Always),
    ("no_skill_triggered", Bucket::Always),
    ("skill_available", Bucket::Always),
    ("connector_available", Bucket::Always),
    ("tool_available", Bucket::Always),
    ("skill_tool_used", Bucket::Always),
    ("max_cost_usd", Bucket::Always),
    ("max_tokens", Bucket::Always),
    ("tool_calls_max", Bucket::Always),
    ("max_turns", Bucket::Always),
    ("tool_no_error", Bucket::Always),
    ("tool_no_error_if_called", Bucket::Always),
    ("max_tool_errors", Bucket::Always),
    ("max_redundant_tool_calls", Bucket::Always),
    ("compaction_occurred", Bucket::Always),
    ("all_tasks_completed", Bucket::Always),
    ("task_count_min", Bucket::Always),
    ("task_status", Bucket::Always),
    ("no_scratchpad_leak", Bucket::Always),
    ("present_files_called", Bucket::Always),
    ("allow_permissive_auto_allow", Bucket::Always),
    ("allow_missing_capability", Bucket::Always),
    ("allow_l0_plugin_divergence", Bucket::Always),
    ("allow_stall", Bucket::Always),
    ("allow_undelivered_deliverables", Bucket::Always),
    ("allow_outputs_delete", Bucket::Always),
    ("allow_delete_in", Bucket::Always),
    ("question_asked", Bucket::NeedsControlOut),
    ("question_options", Bucket::NeedsControlOut),
    ("questions_count_max", Bucket::NeedsControlOut),
    ("gate_answers_delivered", Bucket::NeedsControlOut),
    ("gate_answer_count_min", Bucket::NeedsControlOut),
    ("hook_blocked", Bucket::NeedsControlOut),
    ("no_hook_blocked", Bucket::NeedsControlOut),
    ("vm_path_denied", Bucket::NeedsControlOut),
    ("path_denied", Bucket::NeedsControlOut),
    ("no_path_denied", Bucket::NeedsControlOut),
    ("file_exists", Bucket::NeedsManifest),
    ("user_visible_artifact", Bucket::NeedsManifest),
    ("artifact_json", Bucket::NeedsManifest),
    ("artifact_text", Bucket::NeedsManifest),
    ("computer_links_resolve", Bucket::NeedsManifest),
    ("computer_links_resolve_if_present", Bucket::NeedsManifest),
    ("no_unexpected_files", Bucket::NeedsManifest),
    ("input_unmodified", Bucket::NeedsManifest),
    ("file_absent", Bucket::LiveOnly),
    ("egress_denied", Bucket::LiveOnly),
    ("egress_allowed", Bucket::LiveOnly),
    ("no_delete_in_outputs", Bucket::LiveOnly),
    ("no_delete_in_mounts", Bucket::LiveOnly),
    ("self_heal_ran", Bucket::LiveOnly),
    ("transcript_no_host_path", Bucket::LiveOnly),
    ("no_mcp_error", Bucket::LiveOnly),
    ("max_peak_rss_bytes", Bucket::LiveOnly),
    ("semantic_matches", Bucket::LiveOnly),
    ("no_lost_write_back", Bucket::LiveOnly),
    ("replay_protocol_fidelity", Bucket::Synthesized),
];

/// The bucket of `key`, or `None` for an unknown key.
pub fn bucket(key: &str) -> Option<Bucket> {
    KEYS.iter().find(|(k, _)| *k == key).map(|(_, b)| *b)
}

/// The seven verdict modifiers: always-passing no-ops that `computeVerdict`
/// reads from `assertions[]`.
pub const VERDICT_MODIFIERS: &[&str] = &[
    "allow_permissive_auto_allow",
    "allow_missing_capability",
    "allow_l0_plugin_divergence",
    "allow_stall",
    "allow_undelivered_deliverables",
    "allow_outputs_delete",
    "allow_delete_in",
];

/// The order replay rebuilds an assertion in when it strips it to the keys the
/// cassette can check (cowork-harness `replayCassette`'s `stripToContent`
/// walks its always-content keys, then the question/gate keys, then the active
/// manifest keys, copying each present one): the `assertion` a replayed result
/// echoes lists its keys in this order, whatever order the cassette froze.
pub const REPLAY_STRIP_ORDER: &[&str] = &[
    "transcript_contains",
    "transcript_not_contains",
    "transcript_matches",
    "transcript_not_matches",
    "tool_result_contains",
    "tool_result_not_contains",
    "tool_result_matches",
    "tool_result_not_matches",
    "tool_called",
    "tool_not_called",
    "subagent_tool_used",
    "subagent_tool_absent",
    "subagent_dispatched",
    "subagent_declared_but_unused",
    "subagent_output_contains",
    "dispatch_count_max",
    "skill_triggered",
    "no_skill_triggered",
    "skill_available",
    "connector_available",
    "tool_available",
    "skill_tool_used",
    "max_cost_usd",
    "max_tokens",
    "tool_calls_max",
    "tool_no_error",
    "tool_no_error_if_called",
    "max_tool_errors",
    "max_redundant_tool_calls",
    "max_turns",
    "compaction_occurred",
    "all_tasks_completed",
    "task_count_min",
    "task_status",
    "result",
    "no_scratchpad_leak",
    "present_files_called",
    "no_vm_path_file_op",
    "subagent_file_write",
    "subagent_dispatch_healthy",
    "allow_permissive_auto_allow",
    "allow_missing_capability",
    "allow_l0_plugin_divergence",
    "allow_stall",
    "allow_undelivered_deliverables",
    "allow_outputs_delete",
    "allow_delete_in",
    "question_asked",
    "question_options",
    "questions_count_max",
    "gate_answers_delivered",
    "gate_answer_count_min",
    "hook_blocked",
    "no_hook_blocked",
    "vm_path_denied",
    "path_denied",
    "no_path_denied",
    "file_exists",
    "artifact_text",
    "user_visible_artifact",
    "artifact_json",
    "computer_links_resolve",
    "computer_links_resolve_if_present",
    "no_unexpected_files",
    "input_unmodified",
];

/// The order the original's scenario loader emits an assertion's keys in (its
/// schema's declaration order): a loaded `assert:` item, and so a cassette's
/// frozen one, lists its keys in this order whatever order they were authored
/// in. See `crate::scenario` (which applies it) and [`object_fields`].
pub const SCHEMA_ORDER: &[&str] = &[
    "transcript_contains",
    "transcript_not_contains",
    "transcript_matches",
    "transcript_not_matches",
    "tool_result_contains",
    "tool_result_not_contains",
    "tool_result_matches",
    "tool_result_not_matches",
    "file_exists",
    "user_visible_artifact",
    "tool_called",
    "tool_not_called",
    "subagent_tool_used",
    "subagent_tool_absent",
    "no_vm_path_file_op",
    "vm_path_denied",
    "path_denied",
    "no_path_denied",
    "subagent_file_write",
    "subagent_dispatch_healthy",
    "subagent_dispatched",
    "subagent_declared_but_unused",
    "subagent_output_contains",
    "dispatch_count_max",
    "skill_triggered",
    "no_skill_triggered",
    "skill_available",
    "connector_available",
    "tool_available",
    "max_cost_usd",
    "max_tokens",
    "tool_calls_max",
    "tool_no_error",
    "tool_no_error_if_called",
    "max_tool_errors",
    "max_redundant_tool_calls",
    "skill_tool_used",
    "all_tasks_completed",
    "task_count_min",
    "task_status",
    "max_turns",
    "max_peak_rss_bytes",
    "compaction_occurred",
    "no_mcp_error",
    "hook_blocked",
    "no_hook_blocked",
    "no_scratchpad_leak",
    "present_files_called",
    "egress_denied",
    "egress_allowed",
    "no_delete_in_outputs",
    "no_unexpected_files",
    "file_absent",
    "artifact_text",
    "input_unmodified",
    "self_heal_ran",
    "no_lost_write_back",
    "transcript_no_host_path",
    "computer_links_resolve",
    "computer_links_resolve_if_present",
    "question_asked",
    "question_options",
    "questions_count_max",
    "gate_answers_delivered",
    "gate_answer_count_min",
    "result",
    "allow_permissive_auto_allow",
    "allow_outputs_delete",
    "no_delete_in_mounts",
    "allow_delete_in",
    "allow_l0_plugin_divergence",
    "allow_missing_capability",
    "allow_stall",
    "allow_undelivered_deliverables",
    "replay_protocol_fidelity",
    "artifact_json",
    "semantic_matches",
];

/// The fields of an object-valued key's parameter in schema declaration
/// order (the order the loader emits them); empty for any other key.
pub fn object_fields(key: &str) -> Vec<&'static str> {
    match param_kind(key) {
        Some(Param::Object(fields, _)) => fields.iter().map(|f| f.name).collect(),
        _ => Vec::new(),
    }
}

/// The order in which `check` evaluates keys (the original's `check()` if
/// chain, from `transcript_contains` to `result`); the first failing key in
/// this order supplies an item's message.
pub const CHECK_ORDER: &[&str] = &[
    "transcript_contains",
    "transcript_not_contains",
    "semantic_matches",
    "tool_result_contains",
    "tool_result_not_contains",
    "tool_result_matches",
    "tool_result_not_matches",
    "transcript_matches",
    "transcript_not_matches",
    "file_exists",
    "file_absent",
    "user_visible_artifact",
    "no_lost_write_back",
    "tool_called",
    "tool_not_called",
    "subagent_tool_used",
    "subagent_tool_absent",
    "subagent_dispatched",
    "subagent_output_contains",
    "subagent_declared_but_unused",
    "dispatch_count_max",
    "skill_triggered",
    "max_cost_usd",
    "max_tokens",
    "tool_calls_max",
    "tool_no_error",
    "tool_no_error_if_called",
    "max_tool_errors",
    "max_redundant_tool_calls",
    "max_turns",
    "compaction_occurred",
    "no_mcp_error",
    "max_peak_rss_bytes",
    "hook_blocked",
    "no_hook_blocked",
    "no_scratchpad_leak",
    "present_files_called",
    "no_skill_triggered",
    "skill_available",
    "connector_available",
    "tool_available",
    "skill_tool_used",
    "all_tasks_completed",
    "task_count_min",
    "task_status",
    "egress_denied",
    "egress_allowed",
    "no_delete_in_outputs",
    "no_delete_in_mounts",
    "no_unexpected_files",
    "input_unmodified",
    "self_heal_ran",
    "allow_permissive_auto_allow",
    "allow_missing_capability",
    "allow_l0_plugin_divergence",
    "allow_stall",
    "allow_undelivered_deliverables",
    "allow_outputs_delete",
    "allow_delete_in",
    "transcript_no_host_path",
    "computer_links_resolve",
    "computer_links_resolve_if_present",
    "question_asked",
    "question_options",
    "questions_count_max",
    "gate_answers_delivered",
    "gate_answer_count_min",
    "artifact_text",
    "artifact_json",
    "no_vm_path_file_op",
    "vm_path_denied",
    "path_denied",
    "no_path_denied",
    "subagent_file_write",
    "subagent_dispatch_healthy",
    "result",
    "replay_protocol_fidelity",
];

/// Whether a `NeedsManifest` key is evaluable on `cassette` (spec §2.5 step 9):
/// the six content keys need a non-empty `artifacts`; `no_unexpected_files`
/// needs `artifacts` present (empty allowed) and `preRunPaths`;
/// `input_unmodified` needs `artifacts` present and `preRunHashes`.
/// `None` for a key outside the manifest bucket.
pub fn manifest_key_active(key: &str, cassette: &crate::cassette::Cassette) -> Option<bool> {
    if bucket(key) != Some(Bucket::NeedsManifest) {
        return None;
    }
    let artifacts = cassette.doc.get("artifacts").and_then(Value::as_array);
    Some(match key {
        "no_unexpected_files" => {
            artifacts.is_some()
                && cassette
                    .doc
                    .get("preRunPaths")
                    .is_some_and(|v| !v.is_null())
        }
        "input_unmodified" => {
            artifacts.is_some()
                && cassette
                    .doc
                    .get("preRunHashes")
                    .is_some_and(|v| !v.is_null())
        }
        _ => artifacts.is_some_and(|a| !a.is_empty()),
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
        let Some(kind) = param_kind(key) else {
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
enum Param {
    /// Any string (regexes: compiled at evaluation, never at load on replay).
    Str,
    /// A string of at least one character.
    NonEmpty,
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
}

/// One field of an object parameter.
struct Field {
    name: &'static str,
    param: Param,
    required: bool,
}

const fn opt(name: &'static str, param: Param) -> Field {
    Field {
        name,
        param,
        required: false,
    }
}

const fn req(name: &'static str, param: Param) -> Field {
    Field {
        name,
        param,
        required: true,
    }
}

/// Cross-field refinements of object parameters.
#[derive(Clone, Copy)]
enum Refine {
    None,
    PathOrSuffix,
    EqualsXorContains,
    Any,
}

/// Marker for an untyped field (`artifact_json.equals`).
const ANY: Param = Param::Object(&[], Refine::Any);

fn param_kind(key: &str) -> Option<Param> {
    use Param::*;
    const PATH_DENIED: &[Field] = &[
        opt("tool", ToolGlob),
        opt("path_matches", Str),
        opt("source", Str),
        opt("agent_scope", Str),
    ];
    const SUBAGENT_FILE_WRITE: &[Field] = &[
        opt("path", NonEmpty),
        opt("path_suffix", NonEmpty),
        opt("tool", ToolGlob),
    ];
    const DISPATCH_HEALTHY: &[Field] = &[
        opt("type", Str),
        opt("delivered", Bool),
        opt("path", NonEmpty),
        opt("path_suffix", NonEmpty),
        opt("no_vm_paths", Bool),
    ];
    const OUTPUT_CONTAINS: &[Field] = &[opt("match", Str), req("contains", Str)];
    const SKILL_TOOL_USED: &[Field] = &[req("skill", Str), req("tool", Str)];
    const TASK_STATUS: &[Field] = &[req("match", Str), req("status", Str)];
    const ARTIFACT_TEXT: &[Field] = &[
        req("artifact", NonEmpty),
        opt("contains", NonEmptyStrList),
        opt("not_contains", NonEmptyStrList),
        opt("matches", NonEmpty),
        opt("not_matches", NonEmpty),
    ];
    const ARTIFACT_JSON: &[Field] = &[
        req("artifact", NonEmpty),
        opt("path", NonEmpty),
        opt("equals", ANY),
        opt("in", ANY),
        opt("gt", ANY),
        opt("exists", Bool),
        opt("absent", Bool),
        opt("is_null", Bool),
    ];
    const QUESTION_OPTIONS: &[Field] = &[
        opt("when_question", Str),
        opt("equals", ANY),
        opt("contains", ANY),
        opt("order", Str),
    ];
    const SEMANTIC: &[Field] = &[
        req("rubric", NonEmptyStrList),
        opt("min_pass", ANY),
        opt("judge_model", Str),
        opt("include_subagent_text", Bool),
    ];
    Some(match key {
        "transcript_contains"
        | "transcript_not_contains"
        | "tool_result_contains"
        | "tool_result_not_contains"
        | "tool_result_matches"
        | "tool_result_not_matches"
        | "file_exists"
        | "file_absent" => NonEmpty,
        "transcript_matches"
        | "transcript_not_matches"
        | "user_visible_artifact"
        | "subagent_dispatched"
        | "subagent_declared_but_unused"
        | "skill_triggered"
        | "no_skill_triggered"
        | "skill_available"
        | "connector_available"
        | "tool_available"
        | "tool_no_error"
        | "tool_no_error_if_called"
        | "hook_blocked"
        | "egress_denied"
        | "egress_allowed"
        | "question_asked" => Str,
        "tool_called" | "tool_not_called" | "subagent_tool_used" | "subagent_tool_absent" => {
            ToolGlob
        }
        "no_vm_path_file_op"
        | "vm_path_denied"
        | "no_path_denied"
        | "all_tasks_completed"
        | "compaction_occurred"
        | "no_mcp_error"
        | "no_hook_blocked"
        | "no_scratchpad_leak"
        | "present_files_called"
        | "no_delete_in_outputs"
        | "no_lost_write_back"
        | "transcript_no_host_path"
        | "computer_links_resolve"
        | "computer_links_resolve_if_present"
        | "no_delete_in_mounts"
        | "allow_permissive_auto_allow"
        | "allow_outputs_delete"
        | "allow_l0_plugin_divergence"
        | "allow_missing_capability"
        | "allow_stall"
        | "allow_undelivered_deliverables" => True,
        "self_heal_ran" | "gate_answers_delivered" | "replay_protocol_fidelity" => Bool,
        "dispatch_count_max"
        | "tool_calls_max"
        | "max_tool_errors"
        | "max_redundant_tool_calls"
        | "max_turns"
        | "questions_count_max"
        | "gate_answer_count_min" => UInt,
        "max_tokens" | "task_count_min" | "max_peak_rss_bytes" => PosInt,
        "max_cost_usd" => PosNum,
        "result" => ResultKind,
        "no_unexpected_files" => GlobList,
        "input_unmodified" => GlobOrList,
        "allow_delete_in" => NonEmptyStrList,
        "path_denied" => Object(PATH_DENIED, Refine::None),
        "subagent_file_write" => Object(SUBAGENT_FILE_WRITE, Refine::PathOrSuffix),
        "subagent_dispatch_healthy" => Object(DISPATCH_HEALTHY, Refine::None),
        "subagent_output_contains" => Object(OUTPUT_CONTAINS, Refine::None),
        "skill_tool_used" => Object(SKILL_TOOL_USED, Refine::None),
        "task_status" => Object(TASK_STATUS, Refine::None),
        "artifact_text" => Object(ARTIFACT_TEXT, Refine::None),
        "artifact_json" => Object(ARTIFACT_JSON, Refine::None),
        "question_options" => Object(QUESTION_OPTIONS, Refine::EqualsXorContains),
        "semantic_matches" => Object(SEMANTIC, Refine::None),
        _ => return None,
    })
}

fn expect(cond: bool, v: &Value, what: &str) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(format!("expected {what}, got {}", render(v)))
    }
}

fn render(v: &Value) -> String {
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
    fn check(self, v: &Value) -> Result<(), String> {
        match self {
            Param::Str => expect(v.is_string(), v, "a string"),
            Param::NonEmpty => {
                expect(v.is_string(), v, "a string")?;
                expect(
                    v.as_str().is_some_and(|s| !s.is_empty()),
                    v,
                    "a non-empty string",
                )
            }
            Param::ToolGlob => {
                expect(v.is_string(), v, "a tool glob string")?;
                let g = v.as_str().unwrap_or_default();
                if g.is_empty() {
                    return Err(
                        "tool glob is empty — an empty glob matches no tool and passes vacuously"
                            .into(),
                    );
                }
                if super::glob::looks_like_regex(g) {
                    return Err(format!(
                        "tool glob looks like a regex or brace-expansion — only * and ? are special (no .* | [] {{}}): {}",
                        render(v)
                    ));
                }
                Ok(())
            }
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
            Param::Object(_, Refine::Any) => Ok(()),
            Param::Object(fields, refine) => {
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
                match refine {
                    Refine::PathOrSuffix
                        if !m.contains_key("path") && !m.contains_key("path_suffix") =>
                    {
                        Err("subagent_file_write needs `path` (exact) or `path_suffix`".into())
                    }
                    Refine::EqualsXorContains
                        if m.contains_key("equals") == m.contains_key("contains") =>
                    {
                        Err("question_options: set exactly one of `equals` or `contains`".into())
                    }
                    _ => Ok(()),
                }
            }
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
    pub example: Value,
}

/// The catalog entry of `key`, or `None` for an unknown key.
pub fn entry(key: &str) -> Option<KeyEntry> {
    let (name, b) = KEYS.iter().find(|(k, _)| *k == key)?;
    Some(KeyEntry {
        key: name,
        bucket: b.name(),
        parameter: parameter(key)?,
        description: description(key)?,
        replay_evaluates: b.replay_evaluates(),
        needs_control_out: *b == Bucket::NeedsControlOut,
        needs_manifest: *b == Bucket::NeedsManifest,
        needs_pre_run_baseline: needs_pre_run_baseline(key),
        live_only: *b == Bucket::LiveOnly,
        verdict_modifier: VERDICT_MODIFIERS.contains(name),
        example: example(key)?,
    })
}

/// Every entry, in catalog order.
pub fn entries() -> Vec<KeyEntry> {
    KEYS.iter().filter_map(|(k, _)| entry(k)).collect()
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

/// The two manifest keys that also need the recording's pre-run baseline
/// (`preRunPaths` / `preRunHashes`).
pub fn needs_pre_run_baseline(key: &str) -> Option<&'static str> {
    match key {
        "no_unexpected_files" => Some("preRunPaths"),
        "input_unmodified" => Some("preRunHashes"),
        _ => None,
    }
}

/// The parameter shape of `key` in words (`tool glob`, `{ artifact: …, … }`).
pub fn parameter(key: &str) -> Option<String> {
    param_kind(key).map(Param::describe)
}

/// A parameter value `key` accepts (what `reel assertions KEY` shows as its
/// example); always passes [`validate`].
pub fn example(key: &str) -> Option<Value> {
    let p = param_kind(key)?;
    Some(match key {
        "result" => Value::from("success"),
        "tool_called" | "tool_not_called" => Value::from("Write"),
        "subagent_tool_used" | "subagent_tool_absent" => Value::from("Read"),
        "file_exists" | "user_visible_artifact" => Value::from("outputs/report.md"),
        "file_absent" => Value::from("outputs/debug.log"),
        "transcript_contains" | "transcript_not_contains" => Value::from("Done"),
        "skill_triggered" | "no_skill_triggered" | "skill_available" => Value::from("my-skill"),
        "egress_denied" | "egress_allowed" => Value::from("example.com"),
        "question_asked" => Value::from("Which format"),
        "no_unexpected_files" => serde_json::json!(["outputs/*.md"]),
        "input_unmodified" => Value::from("uploads/**"),
        "allow_delete_in" => serde_json::json!(["outputs"]),
        "artifact_text" => {
            serde_json::json!({"artifact": "outputs/report.md", "contains": ["Summary"]})
        }
        "artifact_json" => {
            serde_json::json!({"artifact": "outputs/report.json", "path": "total", "gt": 0})
        }
        "question_options" => {
            serde_json::json!({"when_question": "Which format", "contains": ["Markdown"]})
        }
        "subagent_file_write" => serde_json::json!({"path_suffix": "outputs/report.md"}),
        "subagent_output_contains" => serde_json::json!({"contains": "done"}),
        "skill_tool_used" => serde_json::json!({"skill": "my-skill", "tool": "Write"}),
        "task_status" => serde_json::json!({"match": "write", "status": "completed"}),
        "semantic_matches" => serde_json::json!({"rubric": ["The summary names the total"]}),
        _ => p.example(),
    })
}

/// A one-line description of what `key` checks.
pub fn description(key: &str) -> Option<&'static str> {
    Some(match key {
        "result" => "the run ended in success or error (the last result line)",
        "transcript_contains" => "the main agent's text contains this literal",
        "transcript_not_contains" => "the main agent's text does not contain this literal",
        "transcript_matches" => {
            "the main agent's text matches this regex (ECMAScript, case-insensitive)"
        }
        "transcript_not_matches" => "the main agent's text does not match this regex",
        "tool_called" => "the main agent called a tool matching this glob",
        "tool_not_called" => "the main agent called no tool matching this glob",
        "tool_result_contains" => "some single tool result contains this literal",
        "tool_result_not_contains" => "no tool result contains this literal",
        "tool_result_matches" => "some single tool result matches this regex",
        "tool_result_not_matches" => "no tool result matches this regex",
        "subagent_tool_used" => "a sub-agent called a tool matching this glob",
        "subagent_tool_absent" => "no sub-agent called a tool matching this glob",
        "subagent_dispatched" => {
            "a sub-agent whose type or description matches this regex was dispatched"
        }
        "subagent_declared_but_unused" => "no dispatch declared this tool without using it",
        "subagent_output_contains" => "a (selected) sub-agent's output contains this literal",
        "dispatch_count_max" => "at most N sub-agents were dispatched",
        "subagent_file_write" => "a sub-agent wrote this file successfully",
        "subagent_dispatch_healthy" => {
            "every selected dispatch delivered its own write and stayed off VM paths"
        }
        "no_vm_path_file_op" => "no file operation touched a /sessions VM path (hostloop)",
        "skill_triggered" => "the Skill tool invoked a skill whose id matches this regex",
        "no_skill_triggered" => "the Skill tool invoked no skill whose id matches this regex",
        "skill_available" => "the session offered a skill whose id matches this regex",
        "connector_available" => "the session offered an MCP server whose name matches this regex",
        "tool_available" => "the session offered a tool whose name matches this regex",
        "skill_tool_used" => "while a matching skill was active, a matching tool was used",
        "max_cost_usd" => "the recorded spend is at most this many US dollars",
        "max_tokens" => "recorded input + output tokens are at most N",
        "tool_calls_max" => "the main agent made at most N tool calls",
        "max_turns" => "the run took at most N turns",
        "tool_no_error" => "a matching tool was called and none of its calls errored",
        "tool_no_error_if_called" => "no call of a matching tool errored (not calling it passes)",
        "max_tool_errors" => "at most N tool calls errored",
        "max_redundant_tool_calls" => "at most N repeated identical tool calls",
        "compaction_occurred" => "the context was compacted during the run",
        "all_tasks_completed" => "at least one task was created and every task is completed",
        "task_count_min" => "at least N tasks were created",
        "task_status" => "the first task matching `match` has this status",
        "no_scratchpad_leak" => "no presented file leaked from the scratchpad (container)",
        "present_files_called" => "the agent presented at least one file",
        "allow_permissive_auto_allow" => {
            "verdict modifier: a permissive auto-allow does not fail the run"
        }
        "allow_missing_capability" => {
            "verdict modifier: a missing capability does not fail the run"
        }
        "allow_l0_plugin_divergence" => {
            "verdict modifier: an L0 plugin divergence does not fail the run"
        }
        "allow_stall" => "verdict modifier: stalling on a question does not fail the run",
        "allow_undelivered_deliverables" => {
            "verdict modifier: undelivered deliverables do not fail the run"
        }
        "allow_outputs_delete" => "verdict modifier: deleting in outputs/ does not fail the run",
        "allow_delete_in" => "verdict modifier: deleting in these mounts does not fail the run",
        "question_asked" => "the agent asked a question whose text matches this regex",
        "question_options" => "a (selected) question offered exactly / at least these options",
        "questions_count_max" => "the agent asked at most N sub-questions",
        "gate_answers_delivered" => {
            "every answered question reached the agent (true) or one did not (false)"
        }
        "gate_answer_count_min" => "at least N answers were delivered to the agent",
        "hook_blocked" => "a hook blocked a tool matching this regex",
        "no_hook_blocked" => "no hook blocked any tool",
        "vm_path_denied" => "a file access to a /sessions VM path was denied (hostloop)",
        "path_denied" => "a path permission denial matched these fields (hostloop)",
        "no_path_denied" => "no path permission was denied (hostloop)",
        "file_exists" => "this work-root-relative file exists after the run",
        "user_visible_artifact" => {
            "this file exists under a user-visible root (outputs/ or a folder)"
        }
        "artifact_json" => "a JSON artifact's value at a dotted path passes these checks",
        "artifact_text" => "a text artifact contains / matches these",
        "computer_links_resolve" => {
            "the transcript has computer:// links and each resolves to a file"
        }
        "computer_links_resolve_if_present" => {
            "every computer:// link in the transcript resolves (none passes)"
        }
        "no_unexpected_files" => {
            "every file the run created under a user-visible root matches a glob"
        }
        "input_unmodified" => "every pre-existing file matching these globs keeps its hash",
        "file_absent" => "this file does not exist after the run (needs an exhaustive live walk)",
        "egress_denied" => "the egress proxy denied this host",
        "egress_allowed" => "the egress proxy allowed this host",
        "no_delete_in_outputs" => "no command deleted files in outputs/",
        "no_delete_in_mounts" => "no command deleted files in a connected folder",
        "self_heal_ran" => "the harness's self-heal step ran (true) or did not (false)",
        "transcript_no_host_path" => "the transcript leaks no host path",
        "no_mcp_error" => "no MCP round-trip failed",
        "max_peak_rss_bytes" => "the agent's peak memory stayed at most N bytes",
        "semantic_matches" => "an LLM judge finds the rubric satisfied",
        "no_lost_write_back" => "no authored file was lost on write-back",
        "replay_protocol_fidelity" => "produced by replay itself; never authored",
        _ => return None,
    })
}

impl Param {
    fn describe(self) -> String {
        match self {
            Param::Str => "string".into(),
            Param::NonEmpty => "non-empty string".into(),
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
                    _ => "",
                };
                format!("{{ {} }}{rule}", parts.join(", "))
            }
        }
    }

    fn example(self) -> Value {
        match self {
            Param::Str | Param::NonEmpty => Value::from("example"),
            Param::ToolGlob => Value::from("Write"),
            Param::True | Param::Bool => Value::Bool(true),
            Param::UInt => Value::from(0),
            Param::PosInt | Param::PosNum => Value::from(1),
            Param::ResultKind => Value::from("success"),
            Param::GlobList | Param::NonEmptyStrList => serde_json::json!(["example"]),
            Param::GlobOrList => Value::from("example/**"),
            Param::Object(_, Refine::Any) => Value::Null,
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

    #[test]
    fn the_catalog_has_all_77_keys_once() {
        assert_eq!(KEYS.len(), 77);
        let mut names: Vec<_> = KEYS.iter().map(|(k, _)| *k).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 77);
    }

    #[test]
    fn every_key_has_a_parameter_shape_and_a_check_position() {
        for (k, _) in KEYS {
            assert!(param_kind(k).is_some(), "{k} has no parameter shape");
            assert!(CHECK_ORDER.contains(k), "{k} missing from CHECK_ORDER");
        }
        assert_eq!(CHECK_ORDER.len(), 77);
        for (k, _) in KEYS {
            assert!(SCHEMA_ORDER.contains(k), "{k} missing from SCHEMA_ORDER");
        }
        assert_eq!(SCHEMA_ORDER.len(), 77);
        for k in VERDICT_MODIFIERS {
            assert_eq!(bucket(k), Some(Bucket::Always));
        }
    }

    fn err(v: serde_json::Value) -> String {
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
        let mk = |doc: serde_json::Value| {
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

    #[test]
    fn every_key_is_described_with_a_valid_example() {
        for (k, b) in KEYS {
            assert!(description(k).is_some(), "{k} has no description");
            assert!(parameter(k).is_some(), "{k} has no parameter text");
            let ex = example(k).unwrap();
            let mut item = serde_json::Map::new();
            item.insert(k.to_string(), ex);
            assert_eq!(
                validate(&Value::Object(item)),
                Ok(()),
                "{k}: its example must validate"
            );
            assert_eq!(b.replay_evaluates(), REPLAY_STRIP_ORDER.contains(k), "{k}");
        }
        assert_eq!(
            parameter("subagent_file_write").unwrap(),
            "{ path?: non-empty string, path_suffix?: non-empty string, tool?: tool glob (* and ? only) } (path or path_suffix)"
        );
    }

    /// The replay strip order names every key replay can evaluate, once.
    #[test]
    fn replay_strip_order_covers_the_evaluable_buckets() {
        let mut order: Vec<&str> = REPLAY_STRIP_ORDER.to_vec();
        order.sort_unstable();
        order.dedup();
        assert_eq!(order.len(), REPLAY_STRIP_ORDER.len());
        let mut evaluable: Vec<&str> = KEYS
            .iter()
            .filter(|(_, b)| {
                matches!(
                    b,
                    Bucket::Always | Bucket::NeedsControlOut | Bucket::NeedsManifest
                )
            })
            .map(|(k, _)| *k)
            .collect();
        evaluable.sort_unstable();
        assert_eq!(order, evaluable);
    }
}
