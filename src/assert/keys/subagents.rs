//! Sub-agent dispatches: their tools, outputs, writes, health and the dispatch budget.

use serde_json::{Value, json};

use super::tools::{glob_matches, tool_sample};
use super::*;

const OUTPUT_CONTAINS: &[Field] = &[opt("match", Param::Str), req("contains", Param::Str)];

const SUBAGENT_FILE_WRITE: &[Field] = &[
    opt("path", Param::NonEmpty),
    opt("path_suffix", Param::NonEmpty),
    opt("tool", Param::ToolGlob),
];

const DISPATCH_HEALTHY: &[Field] = &[
    opt("type", Param::Str),
    opt("delivered", Param::Bool),
    opt("path", Param::NonEmpty),
    opt("path_suffix", Param::NonEmpty),
    opt("no_vm_paths", Param::Bool),
];

pub(super) const KEYS: &[Key] = &[
    Key {
        name: "subagent_tool_used",
        bucket: Bucket::Always,
        param: Param::ToolGlob,
        description: "a sub-agent called a tool matching this glob",
        example: Some(|| Value::from("Read")),
        ranks: Ranks {
            listed: 11,
            check: 15,
            schema: 12,
            strip: Some(10),
        },
        eval: Eval::One(subagent_tool_used),
        opposite: Some("subagent_tool_absent"),
        ..Key::DEFAULTS
    },
    Key {
        name: "subagent_tool_absent",
        bucket: Bucket::Always,
        param: Param::ToolGlob,
        description: "no sub-agent called a tool matching this glob",
        example: Some(|| Value::from("Read")),
        ranks: Ranks {
            listed: 12,
            check: 16,
            schema: 13,
            strip: Some(11),
        },
        eval: Eval::One(subagent_tool_absent),
        ..Key::DEFAULTS
    },
    Key {
        name: "subagent_dispatched",
        bucket: Bucket::Always,
        param: Param::Regex,
        description: "a sub-agent whose type or description matches this regex was dispatched",
        ranks: Ranks {
            listed: 13,
            check: 17,
            schema: 20,
            strip: Some(12),
        },
        eval: Eval::One(subagent_dispatched),
        ..Key::DEFAULTS
    },
    Key {
        name: "subagent_declared_but_unused",
        bucket: Bucket::Always,
        param: Param::Str,
        description: "no dispatch declared this tool without using it",
        ranks: Ranks {
            listed: 14,
            check: 19,
            schema: 21,
            strip: Some(13),
        },
        eval: Eval::One(subagent_declared_but_unused),
        ..Key::DEFAULTS
    },
    Key {
        name: "subagent_output_contains",
        bucket: Bucket::Always,
        param: Param::Object(OUTPUT_CONTAINS, Refine::None),
        description: "a (selected) sub-agent's output contains this literal",
        example: Some(|| json!({"contains": "done"})),
        ranks: Ranks {
            listed: 15,
            check: 18,
            schema: 22,
            strip: Some(14),
        },
        eval: Eval::One(subagent_output_contains),
        ..Key::DEFAULTS
    },
    Key {
        name: "dispatch_count_max",
        bucket: Bucket::Always,
        param: Param::UInt,
        description: "at most N sub-agents were dispatched",
        ranks: Ranks {
            listed: 16,
            check: 20,
            schema: 23,
            strip: Some(15),
        },
        eval: Eval::One(dispatch_count_max),
        margin: Some(Margin {
            rank: 6,
            kind: MarginKind::Max,
            recorded: |r| Some(r.dispatch_count() as f64),
        }),
        excludes: Some(Excludes {
            when: is_zero,
            others: &[("subagent_dispatched", any), ("subagent_tool_used", any)],
            why: "`dispatch_count_max: 0` allows no sub-agent",
            refusal: None,
        }),
        ..Key::DEFAULTS
    },
    Key {
        name: "subagent_file_write",
        bucket: Bucket::Always,
        param: Param::Object(SUBAGENT_FILE_WRITE, Refine::PathOrSuffix),
        description: "a sub-agent wrote this file successfully",
        example: Some(|| json!({"path_suffix": "outputs/report.md"})),
        ranks: Ranks {
            listed: 17,
            check: 73,
            schema: 18,
            strip: Some(38),
        },
        eval: Eval::One(subagent_file_write),
        ..Key::DEFAULTS
    },
    Key {
        name: "subagent_dispatch_healthy",
        bucket: Bucket::Always,
        param: Param::Object(DISPATCH_HEALTHY, Refine::None),
        description: "every selected dispatch delivered its own write and stayed off VM paths",
        ranks: Ranks {
            listed: 18,
            check: 74,
            schema: 19,
            strip: Some(39),
        },
        eval: Eval::One(subagent_dispatch_healthy),
        ..Key::DEFAULTS
    },
];

fn dispatch_count_max(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let max = f64_param(key, v)?;
    let n = env.run.dispatch_count();
    if (n as f64) <= max {
        ok()
    } else {
        Err(format!(
            "dispatched {n} sub-agents, max {} (author-chosen budget under Cowork's agent-side \
                fan-out cap — see SPEC §10)",
            num(v)
        ))
    }
}

fn subagent_tool_used(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let run = env.run;
    let (p, hits) = glob_matches(env, key, v, &run.subagent_tools)?;
    match hits.first() {
        Some(hit) => ok_ev(format!("subagent_tool_used: \"{p}\" matched {hit}")),
        None => Err(format!(
            "sub-agent did not use: no sub-agent tool matched \"{p}\" (used: {})",
            tool_sample(&run.subagent_tools)
        )),
    }
}

fn subagent_tool_absent(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let run = env.run;
    let (p, hits) = glob_matches(env, key, v, &run.subagent_tools)?;
    if hits.is_empty() {
        ok()
    } else {
        Err(format!(
            "sub-agent unexpectedly used: \"{p}\" matched {}",
            hits.join(", ")
        ))
    }
}

/// Dispatch selection by type, resolved type or description (subagent_dispatched & co).
fn selects(key: &str, re: &EsRegex, s: &crate::evidence::Subagent) -> Result<bool, String> {
    Ok(t(key, re, &s.dispatch_agent_type)?
        || match &s.resolved_agent_type {
            Some(r) => t(key, re, r)?,
            None => false,
        }
        || t(key, re, s.description.as_deref().unwrap_or(""))?)
}

fn subagent_dispatched(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let p = str_param(key, v)?;
    let re = env.re(key, p)?;
    for s in &env.run.subagents {
        if selects(key, &re, s)? {
            return ok();
        }
    }
    Err(format!(
        "no sub-agent matching \"{p}\" was dispatched (by type or description)"
    ))
}

fn subagent_output_contains(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let m = obj_param(key, v)?;
    let contains = opt_str(m, "contains").ok_or_else(|| bad_param(key))?;
    let has =
        |s: &crate::evidence::Subagent| s.output.as_deref().is_some_and(|o| o.contains(contains));
    match opt_str(m, "match") {
        Some(pat) => {
            let re = env.re(key, pat)?;
            let mut candidates = Vec::new();
            for s in &env.run.subagents {
                if selects(key, &re, s)? {
                    candidates.push(s);
                }
            }
            if candidates.iter().any(|s| has(s)) {
                ok()
            } else if candidates.is_empty() {
                Err(format!("no sub-agent matching \"{pat}\" was dispatched"))
            } else if candidates.iter().any(|s| s.output_truncated) {
                Err(format!(
                    "evidence unavailable: a sub-agent matching \"{pat}\" had its output truncated \
                        at the assert cap — cannot verify it does not contain \"{contains}\""
                ))
            } else {
                Err(format!(
                    "no sub-agent matching \"{pat}\" had output containing \"{contains}\""
                ))
            }
        }
        None => {
            if env.run.subagents.iter().any(has) {
                ok()
            } else if env.run.subagents.iter().any(|s| s.output_truncated) {
                Err(format!(
                    "evidence unavailable: a sub-agent's output was truncated at the assert cap — \
                        cannot verify it does not contain \"{contains}\""
                ))
            } else {
                Err(format!("no sub-agent's output contained \"{contains}\""))
            }
        }
    }
}

fn subagent_declared_but_unused(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let tool = str_param(key, v)?;
    let culprit = env.run.subagents.iter().find(|s| {
        s.declared_tools.iter().any(|d| d == tool) && !s.tools_used.iter().any(|(n, _)| n == tool)
    });
    match culprit {
        Some(c) => {
            let used = c
                .tools_used
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            Err(format!(
                "sub-agent \"{}\" declared \"{tool}\" but never used it (used: {})",
                c.dispatch_agent_type,
                if used.is_empty() { "none" } else { &used }
            ))
        }
        None => ok(),
    }
}

fn write_tool(n: &str) -> bool {
    n == "Write" || n == "Edit" || n == "MultiEdit"
}

fn paired_ok(run: &RunRecord, tool_use_id: Option<&str>) -> bool {
    tool_use_id.is_some_and(|id| {
        run.tool_results
            .iter()
            .any(|r| r.tool_use_id.as_deref() == Some(id) && !r.is_error)
    })
}

fn subagent_file_write(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let q = obj_param(key, v)?;
    let path = opt_str(q, "path");
    let suffix = opt_str(q, "path_suffix");
    let tool = opt_str(q, "tool");
    let tool_glob = tool.map(Glob::new);
    let path_match = |gp: Option<&str>| match (gp, path, suffix) {
        (Some(gp), Some(p), _) => gp == p,
        (Some(gp), None, Some(s)) => gp.ends_with(s),
        _ => false,
    };
    let chain = env.run.file_tool_attempts.iter().find(|a| {
        a.origin == "subagent"
            && tool_glob
                .as_ref()
                .map_or_else(|| write_tool(&a.tool), |g| g.is_match(&a.tool))
            && path_match(a.gate_path.as_deref())
            && paired_ok(env.run, a.tool_use_id.as_deref())
    });
    match chain {
        Some(c) => ok_ev(format!(
            "{} {}",
            c.tool,
            c.gate_path.as_deref().unwrap_or("undefined")
        )),
        None => {
            let want = match path {
                Some(p) => format!("== \"{p}\""),
                None => format!("ending \"{}\"", suffix.unwrap_or("undefined")),
            };
            Err(format!(
                "subagent_file_write: no SUB-AGENT-origin {} attempt with path {want} and a \
                    non-error paired result",
                tool.unwrap_or("Write/Edit/MultiEdit")
            ))
        }
    }
}

fn subagent_dispatch_healthy(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    hostloop_only(env, key)?;
    let q = obj_param(key, v)?;
    let ty = opt_str(q, "type");
    let re = match ty {
        Some(p) => Some(env.re(key, p)?),
        None => None,
    };
    let mut selected = Vec::new();
    for s in &env.run.subagents {
        if re.as_ref().map_or(Ok(true), |re| selects(key, re, s))? {
            selected.push(s);
        }
    }
    if let (Some(p), true) = (ty, selected.is_empty()) {
        return Err(format!(
            "subagent_dispatch_healthy: no sub-agent matching \"{p}\" was dispatched (by type or \
                description)"
        ));
    }
    let want_delivered = q.get("delivered").and_then(Value::as_bool) != Some(false);
    let want_no_vm = q.get("no_vm_paths").and_then(Value::as_bool) != Some(false);
    let path = opt_str(q, "path");
    let suffix = opt_str(q, "path_suffix");
    let path_match = |gp: Option<&str>| match (path, suffix) {
        (None, None) => true,
        (Some(p), _) => gp == Some(p),
        (None, Some(s)) => gp.is_some_and(|g| g.ends_with(s)),
    };
    let want = match (path, suffix) {
        (Some(p), _) => format!("== \"{p}\""),
        (None, Some(s)) => format!("ending \"{s}\""),
        _ => "(any path)".into(),
    };
    for s in selected {
        let reason =
            dispatch_unhealthy(env.run, s, (want_delivered, want_no_vm), &path_match, &want);
        if let Some(r) = reason {
            return Err(format!(
                "subagent_dispatch_healthy: dispatch \"{}\" ({}) unhealthy — {r}",
                s.dispatch_agent_type, s.tool_use_id
            ));
        }
    }
    ok()
}

/// Why dispatch `s` is unhealthy: no delivered write of its own matching
/// `path_match` (described by `want`), or a VM-path attempt; each check
/// only when asked for (delivered, no VM paths).
fn dispatch_unhealthy(
    run: &RunRecord,
    s: &crate::evidence::Subagent,
    (want_delivered, want_no_vm): (bool, bool),
    path_match: &dyn Fn(Option<&str>) -> bool,
    want: &str,
) -> Option<String> {
    let mine = |a: &&crate::evidence::FileToolAttempt| {
        a.parent_tool_use_id.as_deref() == Some(s.tool_use_id.as_str())
    };
    let mut reason = None;
    if want_delivered {
        let chain = run.file_tool_attempts.iter().filter(mine).any(|a| {
            a.origin == "subagent"
                && write_tool(&a.tool)
                && path_match(a.gate_path.as_deref())
                && paired_ok(run, a.tool_use_id.as_deref())
        });
        if !chain {
            reason = Some(format!(
                "delivered: no SUB-AGENT-origin write {want} under its OWN dispatch with a \
                    non-error paired result"
            ));
        }
    }
    if reason.is_none()
        && want_no_vm
        && let Some(hit) = run
            .file_tool_attempts
            .iter()
            .filter(mine)
            .find(|a| is_vm(a.file_path.as_deref()) || is_vm(a.path.as_deref()))
    {
        reason = Some(format!(
            "no_vm_paths: attempted VM path \"{}\"",
            hit.file_path
                .as_deref()
                .or(hit.path.as_deref())
                .unwrap_or("undefined")
        ));
    }
    reason
}
