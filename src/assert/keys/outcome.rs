//! The run as a whole: its result, the synthesized fidelity key, compaction, and
//! the live-only harness telemetry keys.

use serde_json::{Value, json};

use super::*;

const SEMANTIC: &[Field] = &[
    req("rubric", Param::NonEmptyStrList),
    opt("min_pass", ANY),
    opt("judge_model", Param::Str),
    opt("include_subagent_text", Param::Bool),
    opt("include_fork_results", Param::Bool),
    opt("evidence_files", Param::GlobList),
    opt("baseline_transcript", ANY),
];

/// `semantic_pairwise` (v14): a judge compares the run with a frozen reference.
const PAIRWISE: &[Field] = &[
    opt("refs", Param::GlobList),
    opt("rubric", Param::NonEmptyStrList),
    opt("pass_if", Param::Str),
    opt("order", Param::Str),
    opt("judge_model", Param::Str),
    opt("include_subagent_text", Param::Bool),
    opt("include_fork_results", Param::Bool),
    opt("evidence_files", Param::GlobList),
];

pub(super) const KEYS: &[Key] = &[
    Key {
        name: "result",
        bucket: Bucket::Always,
        param: Param::ResultKind,
        description: "the run ended in success or error (the last result line)",
        example: Some(|| Value::from("success")),
        ranks: Ranks {
            listed: 0,
            check: 75,
            schema: 65,
            strip: Some(34),
        },
        eval: Eval::One(result),
        ..Key::DEFAULTS
    },
    Key {
        name: name::REPLAY_PROTOCOL_FIDELITY,
        bucket: Bucket::Synthesized,
        param: Param::Bool,
        description: "produced by replay itself; never authored",
        ranks: Ranks {
            listed: 76,
            check: 76,
            schema: 74,
            strip: None,
        },
        eval: Eval::Synthesized,
        ..Key::DEFAULTS
    },
    Key {
        name: "compaction_occurred",
        bucket: Bucket::Always,
        param: Param::True,
        description: "the context was compacted during the run",
        ranks: Ranks {
            listed: 34,
            check: 30,
            schema: 42,
            strip: Some(30),
        },
        eval: Eval::One(compaction_occurred),
        ..Key::DEFAULTS
    },
    Key {
        name: "self_heal_ran",
        bucket: Bucket::LiveOnly,
        param: Param::Bool,
        description: "the harness's self-heal step ran (true) or did not (false)",
        ranks: Ranks {
            listed: 70,
            check: 51,
            schema: 55,
            strip: None,
        },
        eval: Eval::Live(needs_live_telemetry),
        ..Key::DEFAULTS
    },
    Key {
        name: "no_mcp_error",
        bucket: Bucket::LiveOnly,
        param: Param::True,
        description: "no MCP round-trip failed",
        ranks: Ranks {
            listed: 72,
            check: 31,
            schema: 43,
            strip: None,
        },
        eval: Eval::Live(no_mcp_error),
        ..Key::DEFAULTS
    },
    Key {
        name: "semantic_matches",
        bucket: Bucket::LiveOnly,
        param: Param::Object(SEMANTIC, Refine::None),
        description: "an LLM judge finds the rubric satisfied",
        example: Some(|| json!({"rubric": ["The summary names the total"]})),
        ranks: Ranks {
            listed: 74,
            check: 2,
            schema: 76,
            strip: None,
        },
        eval: Eval::Live(needs_live_telemetry),
        ..Key::DEFAULTS
    },
    Key {
        name: "semantic_pairwise",
        bucket: Bucket::LiveOnly,
        param: Param::Object(PAIRWISE, Refine::None),
        description: "an LLM judge finds the run no worse than a frozen reference (live only)",
        example: Some(|| json!({"refs": ["refs/baseline"], "pass_if": "not_worse"})),
        ranks: Ranks {
            listed: 88,
            check: 88,
            schema: 88,
            strip: None,
        },
        eval: Eval::Live(needs_live_telemetry),
        ..Key::DEFAULTS
    },
    Key {
        name: "max_peak_rss_bytes",
        bucket: Bucket::LiveOnly,
        param: Param::PosInt,
        description: "the agent's peak memory stayed at most N bytes",
        ranks: Ranks {
            listed: 73,
            check: 32,
            schema: 41,
            strip: None,
        },
        eval: Eval::Live(needs_live_telemetry),
        ..Key::DEFAULTS
    },
];

fn result(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let want = str_param(key, v)?;
    let got = env.run.result.as_str();
    if got == want {
        ok_ev(format!("result: {got}"))
    } else {
        Err(format!("result was {got}, expected {want}"))
    }
}

fn compaction_occurred(env: &mut Env<'_>, _key: &'static str, _v: &Value) -> KeyResult {
    if env
        .run
        .context_events
        .iter()
        .any(|e| e.subtype == "compact_boundary")
    {
        ok()
    } else {
        Err("compaction_occurred: no compact_boundary event was recorded".into())
    }
}

fn no_mcp_error(env: &mut Env<'_>, _key: &'static str, _v: &Value) -> KeyResult {
    let failing: Vec<&str> = env
        .run
        .tool_errors
        .iter()
        .filter(|(name, c)| name.starts_with("mcp__") && c.errors > 0)
        .map(|(name, _)| name.as_str())
        .collect();
    if failing.is_empty() {
        ok()
    } else {
        Err(format!("MCP tool error(s): {}", failing.join(", ")))
    }
}

/// A live-only key whose evidence a protocol-tier run does not produce: it
/// fails on a live run, never passes vacuously.
pub(super) fn needs_live_telemetry(_env: &mut Env<'_>, key: &'static str, _v: &Value) -> KeyResult {
    Err(format!(
        "evidence unavailable: {key} needs telemetry a protocol-tier run does not produce \
         (egress proxy, resource sampler, LLM judge or container scans); assert it at container \
         fidelity with cowork-harness"
    ))
}
