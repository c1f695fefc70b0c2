//! Per-key evaluation (cowork-harness `check()`, src/assert.ts) with the
//! original's messages. One function per key family; [`check`] walks
//! [`CHECK_ORDER`] and AND-s the results.

use serde_json::{Map, Value};

use super::catalog::{Bucket, CHECK_ORDER, VERDICT_MODIFIERS, bucket};
use super::glob::{self, Glob, GlobList};
use super::json::{self, DotResolve};
use super::links::{self, LinkResolution};
use super::tree::{ReplayTree, contained_rel};
use super::{AssertionOutcome, Context};
use crate::cassette::{PreRunOrigin, TruncationReason};
use crate::evidence::RunRecord;
use crate::js::number::of_json as js_number;
use crate::js::regex::{EsRegex, compile_es};

/// `Ok(evidence)` or `Err(message)`.
type KeyResult = Result<Option<String>, String>;

fn ok() -> KeyResult {
    Ok(None)
}

fn ok_ev(e: String) -> KeyResult {
    Ok(Some(e))
}

/// JavaScript template rendering of a JSON number parameter.
fn num(v: &Value) -> String {
    match v {
        Value::Number(n) => js_number(n),
        other => json::stringify(Some(other)),
    }
}

/// JavaScript rendering of an f64.
fn f(x: f64) -> String {
    match serde_json::Number::from_f64(x) {
        Some(n) => js_number(&n),
        None => x.to_string(),
    }
}

struct Env<'a> {
    ctx: &'a Context<'a>,
    run: &'a RunRecord,
    warnings: Vec<String>,
}

impl<'a> Env<'a> {
    /// The materialised tree, from the context's shared manifest view.
    fn tree(&self) -> &'a ReplayTree {
        &self.ctx.manifest().tree
    }

    fn root(&self) -> String {
        self.ctx
            .work_root
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    }

    fn lane_remote(&self) -> bool {
        self.ctx
            .cassette
            .scenario()
            .get("lane")
            .and_then(Value::as_str)
            == Some("remote")
    }

    fn tier(&self) -> Option<&str> {
        self.ctx.cassette.effective_fidelity()
    }

    fn prefixes(&self) -> &'a [String] {
        &self.ctx.manifest().user_visible_roots
    }

    fn re(&self, key: &str, pattern: &str) -> Result<EsRegex, String> {
        compile_es(pattern).map_err(|e| format!("{key}: bad regex \"{pattern}\": {e}"))
    }

    fn warn_if_regexish(&mut self, key: &str, pattern: &str) {
        if glob::looks_like_regex(pattern) {
            self.warnings.push(format!(
                "::warning:: {key}: \"{pattern}\" looks like a regex, but this key is GLOB-matched (use * and ?, not .* or | []). A regex-only pattern matches no tool name and can silently pass a _not_/_absent assert."
            ));
        }
    }
}

/// `test()` that turns a regex timeout into the key's failure.
fn t(key: &str, re: &EsRegex, text: &str) -> Result<bool, String> {
    re.is_match(text)
        .map_err(|e| format!("{key}: regex \"{}\": {e}", re.source()))
}

fn any_t<'s>(
    key: &str,
    re: &EsRegex,
    mut texts: impl Iterator<Item = &'s str>,
) -> Result<bool, String> {
    texts.try_fold(false, |acc, s| if acc { Ok(true) } else { t(key, re, s) })
}

fn bad_param(key: &str) -> String {
    format!(
        "{key}: invalid parameter — run the cassette through validation (`reel verify-cassettes`)"
    )
}

fn str_param<'v>(key: &str, v: &'v Value) -> Result<&'v str, String> {
    v.as_str().ok_or_else(|| bad_param(key))
}

fn obj_param<'v>(key: &str, v: &'v Value) -> Result<&'v Map<String, Value>, String> {
    v.as_object().ok_or_else(|| bad_param(key))
}

fn f64_param(key: &str, v: &Value) -> Result<f64, String> {
    v.as_f64().ok_or_else(|| bad_param(key))
}

fn opt_str<'v>(m: &'v Map<String, Value>, k: &str) -> Option<&'v str> {
    m.get(k).and_then(Value::as_str)
}

fn str_list(v: Option<&Value>) -> Option<Vec<String>> {
    v?.as_array()?
        .iter()
        .map(|s| s.as_str().map(str::to_owned))
        .collect()
}

pub(super) fn check(
    item: &Map<String, Value>,
    ctx: &Context<'_>,
) -> (AssertionOutcome, Vec<String>) {
    let mut env = Env {
        ctx,
        run: ctx.run,
        warnings: Vec::new(),
    };
    let mut results: Vec<KeyResult> = Vec::new();
    for key in CHECK_ORDER {
        let Some(v) = item.get(*key) else { continue };
        eval_key(&mut env, key, v, &mut results);
    }
    let assertion = Value::Object(item.clone());
    let outcome = if results.is_empty() {
        AssertionOutcome {
            assertion,
            pass: false,
            message: "empty assertion".into(),
            evidence: None,
            source: None,
        }
    } else if let Some(Err(m)) = results.iter().find(|r| r.is_err()) {
        AssertionOutcome {
            assertion,
            pass: false,
            message: m.clone(),
            evidence: None,
            source: None,
        }
    } else {
        let ev: Vec<String> = results
            .into_iter()
            .filter_map(|r| r.ok().flatten())
            .filter(|e| !e.is_empty())
            .collect();
        AssertionOutcome {
            assertion,
            pass: true,
            message: String::new(),
            evidence: if ev.is_empty() {
                None
            } else {
                Some(ev.join("; "))
            },
            source: None,
        }
    };
    (outcome, env.warnings)
}

fn eval_key(env: &mut Env<'_>, key: &str, v: &Value, out: &mut Vec<KeyResult>) {
    if VERDICT_MODIFIERS.contains(&key) {
        out.push(ok());
        return;
    }
    // Replay strips an inactive manifest key before evaluation; a direct
    // caller that did not still gets a failure, never a vacuous pass over an
    // empty tree.
    if !env.ctx.live && super::catalog::manifest_key_active(key, env.ctx.cassette) == Some(false) {
        out.push(Err(format!(
            "evidence unavailable: {key} needs the cassette's artifacts manifest (and, for the baseline keys, its pre-run baseline), which this cassette lacks — re-record"
        )));
        return;
    }
    if bucket(key) == Some(Bucket::LiveOnly) {
        out.push(if env.ctx.live {
            live_only(env, key, v)
        } else {
            Err(format!(
                "{key}: live-only — not evaluable on replay (the replay lane strips it)"
            ))
        });
        return;
    }
    let r = match key {
        "transcript_contains" => transcript_contains(env, v),
        "transcript_not_contains" => str_param(key, v).and_then(|s| {
            if env.run.transcript.contains(s) { Err(format!("transcript unexpectedly contains \"{s}\"")) } else { ok() }
        }),
        "tool_result_contains" => tool_result_contains(env, v),
        "tool_result_not_contains" => tool_result_not_contains(env, v),
        "tool_result_matches" => tool_result_matches(env, v),
        "tool_result_not_matches" => tool_result_not_matches(env, v),
        "transcript_matches" => str_param(key, v).and_then(|p| {
            let re = env.re(key, p)?;
            if t(key, &re, &env.run.transcript)? { ok() } else { Err(format!("transcript did not match /{p}/i")) }
        }),
        "transcript_not_matches" => str_param(key, v).and_then(|p| {
            let re = env.re(key, p)?;
            if t(key, &re, &env.run.transcript)? { Err(format!("transcript unexpectedly matched /{p}/i")) } else { ok() }
        }),
        "file_exists" => file_exists(env, v),
        "user_visible_artifact" => user_visible_artifact(env, v),
        "tool_called" => tool_called(env, v),
        "tool_not_called" => tool_not_called(env, v),
        "subagent_tool_used" => subagent_tool_used(env, v),
        "subagent_tool_absent" => subagent_tool_absent(env, v),
        "subagent_dispatched" => subagent_dispatched(env, v),
        "subagent_output_contains" => subagent_output_contains(env, v),
        "subagent_declared_but_unused" => subagent_declared_but_unused(env, v),
        "dispatch_count_max" => f64_param(key, v).and_then(|max| {
            let n = env.run.dispatch_count();
            if (n as f64) <= max {
                ok()
            } else {
                Err(format!(
                    "dispatched {n} sub-agents, max {} (author-chosen budget under Cowork's agent-side fan-out cap — see SPEC §10)",
                    num(v)
                ))
            }
        }),
        "skill_triggered" => skill_triggered(env, v),
        "max_cost_usd" => f64_param(key, v).and_then(|max| match env.run.cost_usd {
            None => Err("evidence unavailable: cost telemetry absent — cannot evaluate max_cost_usd".into()),
            Some(c) if c <= max => ok_ev(format!("max_cost_usd: ${} ≤ ${}", f(c), num(v))),
            Some(c) => Err(format!("cost ${} exceeds max ${}", f(c), num(v))),
        }),
        "max_tokens" => f64_param(key, v).and_then(|max| match env.run.tokens_total() {
            None => Err("evidence unavailable: token telemetry absent — cannot evaluate max_tokens".into()),
            Some(tk) if tk <= max => ok_ev(format!("max_tokens: {} ≤ {}", f(tk), num(v))),
            Some(tk) => Err(format!("{} tokens exceeds max {}", f(tk), num(v))),
        }),
        "tool_calls_max" => f64_param(key, v).and_then(|max| {
            let n = env.run.tool_calls_total();
            if (n as f64) <= max { ok() } else { Err(format!("{n} tool calls exceeds max {}", num(v))) }
        }),
        "tool_no_error" => tool_no_error(env, key, v, true),
        "tool_no_error_if_called" => tool_no_error(env, key, v, false),
        "max_tool_errors" => f64_param(key, v).and_then(|max| {
            let n = env.run.tool_errors_total();
            if (n as f64) <= max { ok() } else { Err(format!("{n} tool errors exceeds max {}", num(v))) }
        }),
        "max_redundant_tool_calls" => f64_param(key, v).and_then(|max| {
            let n = env.run.redundant_calls_total();
            if (n as f64) <= max {
                ok()
            } else {
                Err(format!("{n} wasted redundant call(s) exceeds max {}", num(v)))
            }
        }),
        "max_turns" => f64_param(key, v).and_then(|max| match env.run.turns {
            None => Err("evidence unavailable: turn telemetry absent — cannot evaluate max_turns".into()),
            Some(n) if n <= max => ok(),
            Some(n) => Err(format!("{} turns exceeds max {}", f(n), num(v))),
        }),
        "compaction_occurred" => {
            if env.run.context_events.iter().any(|e| e.subtype == "compact_boundary") {
                ok()
            } else {
                Err("compaction_occurred: no compact_boundary event was recorded".into())
            }
        }
        "hook_blocked" => hook_blocked(env, v),
        "no_hook_blocked" => match &env.run.hook_events {
            None => Err("no_hook_blocked: no hook events (older run / replay without controlOut) — cannot verify".into()),
            Some(h) => match h.iter().find(|h| h.decision == "block") {
                Some(b) => Err(format!(
                    "no_hook_blocked: \"{}\" was blocked{}",
                    b.tool.clone().unwrap_or_else(|| b.callback_id.clone()),
                    b.reason.as_deref().filter(|r| !r.is_empty()).map(|r| format!(" ({r})")).unwrap_or_default()
                )),
                None => ok(),
            },
        },
        "no_scratchpad_leak" => no_scratchpad_leak(env),
        "present_files_called" => present_files_called(env),
        "no_skill_triggered" => no_skill_triggered(env, v),
        "skill_available" => skill_available(env, v),
        "connector_available" => connector_available(env, v),
        "tool_available" => tool_available(env, v),
        "skill_tool_used" => skill_tool_used(env, v),
        "all_tasks_completed" => all_tasks_completed(env),
        "task_count_min" => f64_param(key, v).and_then(|min| {
            let e = env.run.evidence_errors.task_tracking;
            if e > 0 {
                return Err(format!(
                    "task_count_min: {e} TaskCreate result(s) were unparseable — task count is under-reported, cannot verify (malformed)"
                ));
            }
            let n = env.run.task_count();
            if (n as f64) >= min { ok() } else { Err(format!("task_count_min: {n} task(s) created, need ≥ {}", num(v))) }
        }),
        "task_status" => task_status(env, v),
        "no_unexpected_files" => no_unexpected_files(env, v),
        "input_unmodified" => input_unmodified(env, v),
        "computer_links_resolve" => computer_links(env, key, true),
        "computer_links_resolve_if_present" => computer_links(env, key, false),
        "question_asked" => str_param(key, v).and_then(|p| {
            let re = env.re(key, p)?;
            if any_t(key, &re, env.run.questions.iter().map(String::as_str))? {
                ok()
            } else {
                Err(format!("no question matched: {p}"))
            }
        }),
        "question_options" => question_options(env, v),
        "questions_count_max" => f64_param(key, v).and_then(|max| {
            let n = env.run.question_count();
            if (n as f64) <= max { ok() } else { Err(format!("asked {n} questions, max {}", num(v))) }
        }),
        "gate_answers_delivered" => gate_answers_delivered(env, v),
        "gate_answer_count_min" => f64_param(key, v).and_then(|min| {
            let n = env.run.gate_answers_delivered();
            if (n as f64) >= min {
                ok()
            } else {
                Err(format!("only {n} gate answer(s) confirmed delivered, need ≥ {}", num(v)))
            }
        }),
        "artifact_text" => {
            artifact_text(env, v, out);
            return;
        }
        "artifact_json" => {
            artifact_json(env, v, out);
            return;
        }
        "no_vm_path_file_op" => no_vm_path_file_op(env),
        "vm_path_denied" => hostloop_only(env, key).and_then(|_| match &env.run.path_denials {
            None => Err("vm_path_denied: no path-denial telemetry (older run / replay without controlOut) — cannot verify".into()),
            Some(d) if d.iter().any(|d| is_vm(d.path.as_deref())) => ok(),
            Some(_) => Err("vm_path_denied: no /sessions-targeted denial recorded".into()),
        }),
        "path_denied" => path_denied(env, v),
        "no_path_denied" => hostloop_only(env, key).and_then(|_| match &env.run.path_denials {
            None => Err("no_path_denied: no path-denial telemetry (older run / replay without controlOut) — cannot verify".into()),
            Some(d) => match d.first() {
                Some(d) => Err(format!(
                    "no_path_denied: {} denied {} on \"{}\"",
                    d.source,
                    d.tool,
                    d.path.as_deref().unwrap_or("?")
                )),
                None => ok(),
            },
        }),
        "subagent_file_write" => subagent_file_write(env, v),
        "subagent_dispatch_healthy" => subagent_dispatch_healthy(env, v),
        "result" => str_param(key, v).and_then(|want| {
            let got = env.run.result.as_str();
            if got == want { ok_ev(format!("result: {got}")) } else { Err(format!("result was {got}, expected {want}")) }
        }),
        // `replay_protocol_fidelity` (synthesised) has no branch in the original.
        _ => return,
    };
    out.push(r);
}

fn is_vm(p: Option<&str>) -> bool {
    p.is_some_and(|v| v == "/sessions" || v.starts_with("/sessions/"))
}

fn transcript_contains(env: &Env<'_>, v: &Value) -> KeyResult {
    let s = str_param("transcript_contains", v)?;
    if env.run.transcript.contains(s) {
        ok_ev(format!("transcript_contains: found \"{s}\""))
    } else {
        Err(format!("transcript missing \"{s}\""))
    }
}

fn result_texts(run: &RunRecord) -> impl Iterator<Item = &str> {
    run.tool_results
        .iter()
        .map(|r| r.assert_text.as_deref().unwrap_or(&r.text))
}

fn any_display_truncated(run: &RunRecord) -> bool {
    run.tool_results.iter().any(|r| r.assert_text.is_none())
}

fn tool_result_contains(env: &Env<'_>, v: &Value) -> KeyResult {
    let needle = str_param("tool_result_contains", v)?;
    if result_texts(env.run).any(|t| t.contains(needle)) {
        ok()
    } else if any_display_truncated(env.run) {
        Err(format!(
            "evidence unavailable: no captured tool result contained \"{needle}\", but one or more results are display-truncated (no assertText) — a match may be past the cap"
        ))
    } else {
        Err(format!("no tool result contained \"{needle}\""))
    }
}

fn tool_result_not_contains(env: &Env<'_>, v: &Value) -> KeyResult {
    let forbidden = str_param("tool_result_not_contains", v)?;
    if result_texts(env.run).any(|t| t.contains(forbidden)) {
        Err(format!(
            "a tool result unexpectedly contained \"{forbidden}\""
        ))
    } else if any_display_truncated(env.run) {
        Err("evidence unavailable: one or more tool results are display-truncated (no assertText) — cannot rule out forbidden substring".into())
    } else {
        ok()
    }
}

fn tool_result_matches(env: &Env<'_>, v: &Value) -> KeyResult {
    let key = "tool_result_matches";
    let p = str_param(key, v)?;
    let re = env.re(key, p)?;
    if any_t(key, &re, result_texts(env.run))? {
        ok()
    } else if any_display_truncated(env.run) {
        Err(format!(
            "evidence unavailable: no captured tool result matched /{p}/i, but one or more results are display-truncated (no assertText) — a match may be past the cap"
        ))
    } else {
        Err(format!("no tool result matched /{p}/i"))
    }
}

fn tool_result_not_matches(env: &Env<'_>, v: &Value) -> KeyResult {
    let key = "tool_result_not_matches";
    let p = str_param(key, v)?;
    let re = env.re(key, p)?;
    if any_t(key, &re, result_texts(env.run))? {
        Err(format!("a tool result matched forbidden /{p}/i"))
    } else if any_display_truncated(env.run) {
        Err("evidence unavailable: one or more tool results are display-truncated (no assertText) — cannot rule out a forbidden regex match".into())
    } else {
        ok()
    }
}

fn link_unavailable(p: &str) -> String {
    format!(
        "evidence unavailable: \"{p}\" was a symlink/hardlink at record time — replay can't confirm it resolves to real in-root content; re-record or assert on the deliverable"
    )
}

fn file_exists(env: &Env<'_>, v: &Value) -> KeyResult {
    let p = str_param("file_exists", v)?;
    let Some(rel) = contained_rel(p) else {
        return Err(format!(
            "unsafe file_exists path \"{p}\" — must stay under the work root (no absolute paths or \"..\")"
        ));
    };
    let tree = env.tree();
    if tree.is_link(&rel) {
        return Err(link_unavailable(p));
    }
    if tree.truncation(&rel).is_some() {
        return ok();
    }
    if tree.exists(&rel) {
        ok_ev(format!("file_exists: \"{p}\" present under {}", env.root()))
    } else {
        Err(format!("file not found: {p} (under {})", env.root()))
    }
}

/// A live-only key on a live run (record, rerun): the post-run manifest is an
/// exhaustive walk of the run's captured roots, the pre-run baseline says
/// what was there before, and the events say what the agent saw. Keys whose
/// evidence a protocol-tier run does not produce fail, never pass vacuously.
fn live_only(env: &Env<'_>, key: &str, v: &Value) -> KeyResult {
    let view = env.ctx.manifest();
    match key {
        "file_absent" => {
            let p = str_param(key, v)?;
            let Some(rel) = contained_rel(p) else {
                return Err(format!(
                    "unsafe file_absent path \"{p}\" — must stay under the work root (no absolute paths or \"..\")"
                ));
            };
            if !visible(&view.user_visible_roots, &rel) {
                return Err(format!(
                    "evidence unavailable: file_absent: \"{p}\" is outside the run's captured roots ({})",
                    view.user_visible_roots.join(", ")
                ));
            }
            if view.tree.exists(&rel) {
                Err(format!("file unexpectedly present: {p}"))
            } else {
                ok_ev(format!("file_absent: \"{p}\" absent after the run"))
            }
        }
        "no_delete_in_outputs" | "no_delete_in_mounts" => {
            let Some(pre) = &view.pre_run_paths else {
                return Err(format!(
                    "evidence unavailable: {key} needs the pre-run baseline (preRunPaths)"
                ));
            };
            let mounts: Vec<String> = env
                .ctx
                .cassette
                .folder_prefix_map()
                .unwrap_or_default()
                .into_iter()
                .map(|f| f.mount)
                .collect();
            let in_scope = |rel: &str| {
                if key == "no_delete_in_outputs" {
                    visible(&["outputs".to_owned()], rel)
                } else {
                    visible(&mounts, rel)
                }
            };
            let mut gone: Vec<&String> = pre
                .iter()
                .filter(|p| in_scope(p) && !view.tree.exists(p))
                .collect();
            gone.sort();
            if gone.is_empty() {
                ok()
            } else {
                let names: Vec<&str> = gone.iter().map(|s| s.as_str()).collect();
                Err(format!(
                    "{key}: {} file(s) present before the run are gone: {}",
                    gone.len(),
                    names.join(", ")
                ))
            }
        }
        "transcript_no_host_path" => {
            let host = env.run.init.as_ref().and_then(|i| i.cwd.clone());
            match host.filter(|h| h.starts_with('/') && h.len() > 1) {
                Some(h) if env.run.transcript.contains(&h) => {
                    Err(format!("transcript leaks the host path {h}"))
                }
                Some(_) => ok(),
                None => Err(
                    "evidence unavailable: transcript_no_host_path needs the run's working directory (system/init cwd)"
                        .into(),
                ),
            }
        }
        "no_mcp_error" => {
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
        other => Err(format!(
            "evidence unavailable: {other} needs telemetry a protocol-tier run does not produce \
             (egress proxy, resource sampler, LLM judge or container scans); assert it at container \
             fidelity with cowork-harness"
        )),
    }
}

fn visible(prefixes: &[String], rel: &str) -> bool {
    prefixes
        .iter()
        .any(|pre| rel == pre || rel.starts_with(&format!("{pre}/")))
}

fn user_visible_artifact(env: &Env<'_>, v: &Value) -> KeyResult {
    let p = str_param("user_visible_artifact", v)?;
    let Some(rel) = contained_rel(p) else {
        return Err(format!(
            "unsafe user_visible_artifact path \"{p}\" — must stay under the work root (no absolute paths or \"..\")"
        ));
    };
    if env.lane_remote() {
        return Err("user_visible_artifact asserts LOCATION, which delivers nothing on `lane: remote` — a remote container has no auto-delivering outputs dir and is reclaimed at session end. Tool-level delivery is NOT YET ASSERTABLE on this lane (no remote delivery tool is modeled). Either assert the written path plus the agent's own statement of it (`file_exists` + `transcript_matches`), or use `lane: local` if this scenario models the desktop lane".into());
    }
    let tree = env.tree();
    if tree.is_link(&rel) {
        return Err(link_unavailable(p));
    }
    let prefixes = env.prefixes();
    if !visible(prefixes, &rel) {
        return Err(format!(
            "\"{p}\" is not under a user-visible prefix ({}) — invisible to the user in Cowork",
            prefixes.join(", ")
        ));
    }
    if tree.truncation(&rel).is_some() || tree.exists(&rel) {
        ok()
    } else {
        Err(format!("user-visible artifact not found: {p}"))
    }
}

fn tool_sample(names: &[String]) -> String {
    if names.is_empty() {
        return "(none called)".into();
    }
    let mut s = names
        .iter()
        .take(12)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > 12 {
        s.push_str(&format!(", …(+{})", names.len() - 12));
    }
    s
}

fn tool_called(env: &mut Env<'_>, v: &Value) -> KeyResult {
    let p = str_param("tool_called", v)?;
    env.warn_if_regexish("tool_called", p);
    let g = Glob::new(p);
    match env.run.tools_called.iter().find(|t| g.is_match(t)) {
        Some(hit) => ok_ev(format!("tool_called: \"{p}\" matched {hit}")),
        None => Err(format!(
            "tool not called: no called tool matched \"{p}\" (called: {})",
            tool_sample(&env.run.tools_called)
        )),
    }
}

fn tool_not_called(env: &mut Env<'_>, v: &Value) -> KeyResult {
    let p = str_param("tool_not_called", v)?;
    env.warn_if_regexish("tool_not_called", p);
    let g = Glob::new(p);
    let hits: Vec<&str> = env
        .run
        .tools_called
        .iter()
        .filter(|t| g.is_match(t))
        .map(String::as_str)
        .collect();
    if hits.is_empty() {
        ok()
    } else {
        Err(format!(
            "tool unexpectedly called: \"{p}\" matched {}",
            hits.join(", ")
        ))
    }
}

fn subagent_tool_used(env: &mut Env<'_>, v: &Value) -> KeyResult {
    let p = str_param("subagent_tool_used", v)?;
    env.warn_if_regexish("subagent_tool_used", p);
    let g = Glob::new(p);
    match env.run.subagent_tools.iter().find(|t| g.is_match(t)) {
        Some(hit) => ok_ev(format!("subagent_tool_used: \"{p}\" matched {hit}")),
        None => Err(format!(
            "sub-agent did not use: no sub-agent tool matched \"{p}\" (used: {})",
            tool_sample(&env.run.subagent_tools)
        )),
    }
}

fn subagent_tool_absent(env: &mut Env<'_>, v: &Value) -> KeyResult {
    let p = str_param("subagent_tool_absent", v)?;
    env.warn_if_regexish("subagent_tool_absent", p);
    let g = Glob::new(p);
    let hits: Vec<&str> = env
        .run
        .subagent_tools
        .iter()
        .filter(|t| g.is_match(t))
        .map(String::as_str)
        .collect();
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

fn subagent_dispatched(env: &Env<'_>, v: &Value) -> KeyResult {
    let key = "subagent_dispatched";
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

fn subagent_output_contains(env: &Env<'_>, v: &Value) -> KeyResult {
    let key = "subagent_output_contains";
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
                    "evidence unavailable: a sub-agent matching \"{pat}\" had its output truncated at the assert cap — cannot verify it does not contain \"{contains}\""
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
                    "evidence unavailable: a sub-agent's output was truncated at the assert cap — cannot verify it does not contain \"{contains}\""
                ))
            } else {
                Err(format!("no sub-agent's output contained \"{contains}\""))
            }
        }
    }
}

fn subagent_declared_but_unused(env: &Env<'_>, v: &Value) -> KeyResult {
    let tool = str_param("subagent_declared_but_unused", v)?;
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

fn skill_triggered(env: &Env<'_>, v: &Value) -> KeyResult {
    let key = "skill_triggered";
    let p = str_param(key, v)?;
    let re = env.re(key, p)?;
    if !env.run.init_tools.iter().any(|t| t == "Skill") {
        return Err("evidence unavailable: this agent's init tool list has no \"Skill\" tool — cannot evaluate skill_triggered (agent-version drift?)".into());
    }
    if any_t(key, &re, env.run.skills_invoked.iter().map(String::as_str))? {
        ok()
    } else {
        let inv = env.run.skills_invoked.join(", ");
        Err(format!(
            "no invoked skill matched \"{p}\" (invoked: {})",
            if inv.is_empty() { "none" } else { &inv }
        ))
    }
}

fn no_skill_triggered(env: &Env<'_>, v: &Value) -> KeyResult {
    let key = "no_skill_triggered";
    let p = str_param(key, v)?;
    let re = env.re(key, p)?;
    if !env.run.init_tools.iter().any(|t| t == "Skill") {
        return Err("evidence unavailable: this agent's init tool list has no \"Skill\" tool — cannot evaluate no_skill_triggered (agent-version drift?)".into());
    }
    if any_t(key, &re, env.run.skills_invoked.iter().map(String::as_str))? {
        Err(format!("skill unexpectedly triggered matching \"{p}\""))
    } else {
        ok()
    }
}

fn tool_no_error(env: &Env<'_>, key: &str, v: &Value, require_presence: bool) -> KeyResult {
    let p = str_param(key, v)?;
    let re = env.re(key, p)?;
    let mut matching = Vec::new();
    for (name, c) in &env.run.tool_errors {
        if t(key, &re, name)? {
            matching.push((name, c));
        }
    }
    if matching.is_empty() {
        return if require_presence {
            Err(format!(
                "{key}: no tool matching \"{p}\" was called — cannot verify it ran error-free (use tool_no_error_if_called to pass when the tool may legitimately not run)"
            ))
        } else {
            ok()
        };
    }
    let errored: Vec<String> = matching
        .iter()
        .filter(|(_, c)| c.errors > 0)
        .map(|(n, c)| format!("{n} ({})", c.errors))
        .collect();
    if errored.is_empty() {
        ok()
    } else {
        Err(format!(
            "tool(s) matching \"{p}\" had errors: {}",
            errored.join(", ")
        ))
    }
}

fn hook_blocked(env: &Env<'_>, v: &Value) -> KeyResult {
    let key = "hook_blocked";
    let p = str_param(key, v)?;
    let re = env.re(key, p)?;
    let Some(hooks) = &env.run.hook_events else {
        return Err(
            "hook_blocked: no hook events (older run / replay without controlOut) — cannot verify"
                .into(),
        );
    };
    for h in hooks {
        if h.decision == "block"
            && let Some(tool) = &h.tool
            && t(key, &re, tool)?
        {
            return ok();
        }
    }
    Err(format!("hook_blocked: no blocked tool matched \"{p}\""))
}

fn no_scratchpad_leak(env: &Env<'_>) -> KeyResult {
    if env.lane_remote() {
        return Err("no_scratchpad_leak: present_files is not served on `lane: remote` (a local MCP server cannot reach a remote Cowork session), so there is no promotion to leak — cannot verify. Without this gate the check would pass VACUOUSLY on an empty presentedFiles list".into());
    }
    if env.tier() != Some("container") {
        return Err(format!(
            "no_scratchpad_leak: promotion/leak semantics apply only at the container tier (this run: {}) — hostloop's present_files never promotes (production's host-loop branch passes a validated path through without copying, so there is no scratch→outputs copy to leak) — cannot verify; use fidelity: container for present_files-based delivery",
            env.tier().unwrap_or("unknown")
        ));
    }
    let bad = env.run.evidence_errors.present_files_malformed;
    if bad > 0 {
        return Err(format!(
            "no_scratchpad_leak: {bad} malformed/unclassifiable present_files call(s) — leak evidence is incomplete, cannot verify (e.g. malformed input, or no cwd to classify scratchpad membership)"
        ));
    }
    match env.run.presented_files.iter().find(|p| p.leaked) {
        Some(l) => Err(format!(
            "no_scratchpad_leak: \"{}\" was presented but never left the scratchpad",
            l.from
        )),
        None => ok(),
    }
}

fn present_files_called(env: &Env<'_>) -> KeyResult {
    if env.lane_remote() {
        return Err("present_files_called: present_files is not served on `lane: remote` — a local MCP server cannot reach a remote Cowork session, which delivers via the agent-native SendUserFile instead (not modeled; see docs/fidelity-gaps.md) — cannot verify".into());
    }
    if !matches!(env.tier(), Some("container") | Some("hostloop")) {
        return Err(format!(
            "present_files_called: present_files is served only on the container/hostloop tiers (this run: {}) — cannot verify; use fidelity: container or hostloop for present_files-based delivery",
            env.tier().unwrap_or("unknown")
        ));
    }
    if env.run.presented_files.is_empty() {
        Err("present_files_called: no file was delivered via present_files (the tool was never called)".into())
    } else {
        ok()
    }
}

fn skill_available(env: &Env<'_>, v: &Value) -> KeyResult {
    let key = "skill_available";
    let p = str_param(key, v)?;
    let re = env.re(key, p)?;
    let Some(skills) = env.run.init.as_ref().and_then(|i| i.skills.as_ref()) else {
        return Err("evidence unavailable: availableSkills absent from result.json — cannot evaluate skill_available".into());
    };
    if any_t(key, &re, skills.iter().map(String::as_str))? {
        ok()
    } else {
        Err(format!("no staged skill matched \"{p}\""))
    }
}

fn connector_available(env: &Env<'_>, v: &Value) -> KeyResult {
    let key = "connector_available";
    let p = str_param(key, v)?;
    let re = env.re(key, p)?;
    let Some(init) = &env.run.init else {
        return Err("evidence unavailable: mcpServers absent from result.json — cannot evaluate connector_available".into());
    };
    for s in &init.mcp_servers {
        let name = match s.get("name") {
            Some(n) => crate::js::coerce::js_string(n),
            None => "undefined".into(),
        };
        if t(key, &re, &name)? {
            return ok();
        }
    }
    Err(format!("no connector matched \"{p}\""))
}

fn tool_available(env: &Env<'_>, v: &Value) -> KeyResult {
    let key = "tool_available";
    let p = str_param(key, v)?;
    let re = env.re(key, p)?;
    let Some(init) = &env.run.init else {
        return Err("evidence unavailable: availableTools absent from result.json — cannot evaluate tool_available".into());
    };
    if any_t(key, &re, init.tools.iter().map(String::as_str))? {
        return ok();
    }
    let discovery = p.contains("mcp__skills") || p.contains("mcp__plugins");
    let mut msg = format!(
        "no tool in the init manifest matched \"{p}\" — note context.tools is the EAGERLY-LOADED tool set; a factory-deferred tool (surfaced via a system-reminder) can be available yet absent here, so a miss is \"not eagerly loaded\", not \"provably unavailable\""
    );
    if discovery {
        msg.push_str(". The mcp__skills__*/mcp__plugins__* discovery tools ARE modeled as alwaysLoad on container/hostloop (and cowork, which resolves to one of those) — a miss there is a real absence, but microvm/protocol still declare no such server, so a miss on those tiers means \"not modeled at this tier\", not \"provably unavailable\"");
    }
    Err(msg)
}

fn skill_tool_used(env: &Env<'_>, v: &Value) -> KeyResult {
    let key = "skill_tool_used";
    let m = obj_param(key, v)?;
    let (Some(skill), Some(tool)) = (opt_str(m, "skill"), opt_str(m, "tool")) else {
        return Err(bad_param(key));
    };
    let Some(timeline) = env.ctx.cassette.timeline() else {
        return Err("evidence unavailable: skill-activity telemetry absent from result.json — cannot evaluate skill_tool_used".into());
    };
    let skill_re = env.re(key, skill)?;
    let tool_re = env.re(key, tool)?;
    let windows = crate::evidence::timeline::skill_activity(timeline);
    let mut matching = Vec::new();
    for w in &windows {
        if t(key, &skill_re, &w.skill_label())? {
            matching.push(w);
        }
    }
    for w in &matching {
        if any_t(key, &tool_re, w.tool_counts.iter().map(|(n, _)| n.as_str()))? {
            return ok();
        }
    }
    if matching.is_empty() {
        Err(format!("no skill-activation window matched \"{skill}\""))
    } else {
        Err(format!(
            "no tool matching \"{tool}\" ran inside a window matching \"{skill}\""
        ))
    }
}

fn all_tasks_completed(env: &Env<'_>) -> KeyResult {
    let e = env.run.evidence_errors.task_tracking;
    if e > 0 {
        return Err(format!(
            "all_tasks_completed: {e} TaskCreate result(s) were unparseable — task telemetry is incomplete, cannot verify (malformed)"
        ));
    }
    if env.run.tasks.is_empty() {
        return Err("all_tasks_completed: no tasks were created — cannot verify completion (assert task_count_min for presence, or drop this)".into());
    }
    let open: Vec<String> = env
        .run
        .tasks
        .iter()
        .filter(|t| t.status != "completed")
        .map(|t| format!("{} ({})", t.subject, t.status))
        .collect();
    if open.is_empty() {
        ok()
    } else {
        Err(format!("not all tasks are completed: {}", open.join(", ")))
    }
}

fn task_status(env: &Env<'_>, v: &Value) -> KeyResult {
    let key = "task_status";
    let m = obj_param(key, v)?;
    let (Some(pat), Some(status)) = (opt_str(m, "match"), opt_str(m, "status")) else {
        return Err(bad_param(key));
    };
    let e = env.run.evidence_errors.task_tracking;
    if e > 0 {
        return Err(format!(
            "task_status: {e} TaskCreate result(s) were unparseable — task telemetry is incomplete, cannot verify (malformed)"
        ));
    }
    let re = env.re(key, pat)?;
    let mut found = None;
    for task in &env.run.tasks {
        if t(key, &re, &task.subject)? || t(key, &re, &task.id)? {
            found = Some(task);
            break;
        }
    }
    match found {
        None => Err(format!("no task matched \"{pat}\"")),
        Some(task) if task.status == status => ok(),
        Some(task) => Err(format!(
            "task \"{}\" matched \"{pat}\" but has status \"{}\", expected \"{status}\"",
            task.subject, task.status
        )),
    }
}

fn origin_unavailable(env: &Env<'_>, tail: &str) -> Option<String> {
    let origin = env.ctx.cassette.pre_run_origin()?;
    let (name, why) = match origin {
        PreRunOrigin::LocalWalk => return None,
        PreRunOrigin::RemoteUnavailable => (
            "remote-unavailable",
            "a cloud run's filesystem is not locally observable",
        ),
        PreRunOrigin::LocalUnreadable => (
            "local-unreadable",
            "a connected-folder source was unreadable, so the baseline is incomplete",
        ),
    };
    Some(format!(
        "evidence unavailable: pre-run manifest origin is {name} ({why}) — {tail}"
    ))
}

fn no_unexpected_files(env: &Env<'_>, v: &Value) -> KeyResult {
    let globs = str_list(Some(v)).ok_or_else(|| bad_param("no_unexpected_files"))?;
    if let Some(m) = origin_unavailable(env, "cannot compute created files") {
        return Err(m);
    }
    let view = env.ctx.manifest();
    let Some(pre) = &view.pre_run_paths else {
        return Err("evidence unavailable: no pre-run manifest for this run/cassette (a --resume run, or a run/cassette predating 0.24) — cannot compute created files; re-run without --resume, or re-record".into());
    };
    let allow = GlobList::new(&globs);
    let stray: Vec<&str> = view
        .user_visible_files
        .iter()
        .filter(|p| !pre.contains(*p) && !allow.is_match(p))
        .map(String::as_str)
        .collect();
    if stray.is_empty() {
        ok()
    } else {
        let allow = globs.join(", ");
        Err(format!(
            "unexpected file(s) created outside the allowlist: {} (allow: {})",
            stray.join(", "),
            if allow.is_empty() { "(none)" } else { &allow }
        ))
    }
}

fn input_unmodified(env: &Env<'_>, v: &Value) -> KeyResult {
    let globs: Vec<String> = match v {
        Value::String(s) => vec![s.clone()],
        other => str_list(Some(other)).ok_or_else(|| bad_param("input_unmodified"))?,
    };
    if let Some(m) = origin_unavailable(env, "cannot compare content") {
        return Err(m);
    }
    let view = env.ctx.manifest();
    let Some(pre_hashes) = &view.pre_run_hashes else {
        return Err("evidence unavailable: no pre-run hash manifest for this run/cassette (a --resume run, or a run/cassette predating the fingerprinted manifest) — cannot compare content; re-run without --resume, or re-record".into());
    };
    let allow = GlobList::new(&globs);
    let matched: Vec<&(String, Option<String>)> = pre_hashes
        .iter()
        .filter(|(p, _)| allow.is_match(p))
        .collect();
    if matched.is_empty() {
        return Err(format!(
            "input_unmodified matched no pre-run path(s): glob(s) {} matched nothing in the pre-run manifest — nothing to verify; check the mount name/glob (a typo or renamed mount reads as a vacuous pass otherwise)",
            globs.join(", ")
        ));
    }
    // Replay: the manifest's sha256 is the authoritative post-run hash
    // (never re-hash the placeholder tree); an absent or "" sha ⇒ removed.
    let (mut modified, mut removed, mut uncheckable) = (Vec::new(), Vec::new(), Vec::new());
    for (p, pre) in matched {
        let Some(pre) = pre else {
            uncheckable.push(p.as_str());
            continue;
        };
        match view.post_hash(p) {
            None => removed.push(p.as_str()),
            Some(h) if h != pre => modified.push(p.as_str()),
            Some(_) => {}
        }
    }
    let first5 = |v: &[&str]| v.iter().take(5).copied().collect::<Vec<_>>().join(", ");
    if !uncheckable.is_empty() {
        // The original uses the size-cap wording for scrubbed (null) pre-hashes too (spec §8.8).
        return Err(format!(
            "evidence unavailable: pre-run hash missing (over size cap) for: {} — raise COWORK_HARNESS_PRERUN_HASH_CAP or narrow the glob",
            first5(&uncheckable)
        ));
    }
    if modified.is_empty() && removed.is_empty() {
        return ok();
    }
    let mut parts = Vec::new();
    if !modified.is_empty() {
        parts.push(format!("modified in place: {}", first5(&modified)));
    }
    if !removed.is_empty() {
        parts.push(format!("removed: {}", first5(&removed)));
    }
    Err(format!(
        "pre-existing file(s) changed — {}",
        parts.join("; ")
    ))
}

fn computer_links(env: &Env<'_>, key: &str, require_presence: bool) -> KeyResult {
    let found = links::extract(&env.run.transcript);
    if found.is_empty() {
        return if require_presence {
            Err(format!(
                "{key}: no computer:// link in the transcript — cannot verify a deliverable link resolves (use computer_links_resolve_if_present to pass when no link is expected)"
            ))
        } else {
            ok_ev(format!(
                "{key}: no computer:// links in the transcript (vacuous pass — _if_present)"
            ))
        };
    }
    let tier_note = env
        .tier()
        .filter(|t| !t.is_empty())
        .map(|t| format!(" (tier: {t})"))
        .unwrap_or_default();
    let root = env.root();
    let res = LinkResolution {
        folder_prefixes: env
            .ctx
            .cassette
            .folder_prefix_map()
            .map(|m| m.into_iter().map(|e| (e.from, e.mount)).collect()),
        tree: env.tree(),
        root_display: &root,
    };
    let dangling: Vec<String> = found
        .iter()
        .filter_map(|l| {
            let (resolved, desc) = links::resolve(l, &res);
            (!resolved).then(|| format!("computer://{} — checked {desc}", l.raw))
        })
        .collect();
    if dangling.is_empty() {
        ok_ev(format!(
            "{key}: {} computer:// link(s) all resolved{tier_note}",
            found.len()
        ))
    } else {
        Err(format!(
            "dangling computer:// link(s){tier_note}: {}",
            dangling.join("; ")
        ))
    }
}

fn same_multiset(a: &[&str], b: &[String]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut rest: Vec<&str> = b.iter().map(String::as_str).collect();
    for x in a {
        match rest.iter().position(|y| y == x) {
            Some(i) => {
                rest.swap_remove(i);
            }
            None => return false,
        }
    }
    true
}

fn question_options(env: &Env<'_>, v: &Value) -> KeyResult {
    let key = "question_options";
    let qo = obj_param(key, v)?;
    if env.run.gate_options_missing() {
        return Err("evidence unavailable: gate-option evidence absent for this run — cannot evaluate question_options".into());
    }
    let equals = str_list(qo.get("equals"));
    let contains = str_list(qo.get("contains"));
    if equals.is_some() == contains.is_some() {
        return Err("question_options: set exactly one of `equals` or `contains`".into());
    }
    let all = &env.run.gate_options;
    let when = opt_str(qo, "when_question");
    let (pool, selector) = match when {
        Some(w) => {
            let re = env.re(key, w)?;
            let mut pool = Vec::new();
            for g in all {
                if t(key, &re, &g.question)? {
                    pool.push(g);
                }
            }
            (pool, format!(" matching /{w}/i"))
        }
        None => (all.iter().collect(), String::new()),
    };
    if pool.is_empty() {
        return Err(format!(
            "question_options: no question{selector} was asked ({} gate(s) recorded)",
            all.len()
        ));
    }
    if when.is_none() && all.len() > 1 {
        let asked: Vec<String> = all
            .iter()
            .map(|g| json::stringify(Some(&Value::String(g.question.clone()))))
            .collect();
        return Err(format!(
            "question_options: {} sub-questions were asked and no `when_question` selects one — add a selector (asked: {})",
            all.len(),
            asked.join(", ")
        ));
    }
    let is_equals = equals.is_some();
    let want = equals.or(contains).unwrap_or_default();
    let exact = opt_str(qo, "order").unwrap_or("exact") == "exact";
    let mut why = Vec::new();
    let hit = pool.into_iter().find(|g| {
        let got: Vec<&str> = g.options.iter().map(|o| o.label.as_str()).collect();
        let offered = got.join(", ");
        if is_equals {
            let good = if exact {
                got.len() == want.len() && got.iter().zip(&want).all(|(a, b)| a == b)
            } else {
                same_multiset(&got, &want)
            };
            if !good {
                why.push(format!("offered [{offered}]"));
            }
            return good;
        }
        let missing: Vec<&str> = want
            .iter()
            .filter(|w| !got.contains(&w.as_str()))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            why.push(format!(
                "offered [{offered}] (missing {})",
                missing.join(", ")
            ));
            return false;
        }
        if !exact {
            return true;
        }
        let mut i = 0;
        for l in &got {
            if i < want.len() && *l == want[i] {
                i += 1;
            }
        }
        if i != want.len() {
            why.push(format!("offered [{offered}] (present but out of order)"));
        }
        i == want.len()
    });
    match hit {
        Some(g) => ok_ev(format!(
            "question_options: gate {} offered the expected options",
            json::stringify(Some(&Value::String(g.question.clone())))
        )),
        None => Err(format!(
            "question_options ({}{}): expected [{}]; {}",
            if is_equals { "equals" } else { "contains" },
            if exact {
                ", order exact"
            } else {
                ", order any"
            },
            want.join(", "),
            why.join("; ")
        )),
    }
}

fn gate_answers_delivered(env: &Env<'_>, v: &Value) -> KeyResult {
    let want = v
        .as_bool()
        .ok_or_else(|| bad_param("gate_answers_delivered"))?;
    let gd = &env.run.gate_deliveries;
    if want {
        let bad: Vec<String> = gd
            .iter()
            .filter(|g| g.delivered != Some(true))
            .map(|g| {
                let why = match (g.delivered, g.reason) {
                    (Some(false), _) => g.error.clone().unwrap_or_else(|| "tool error".into()),
                    (_, "no-pairing-metadata") => {
                        "no pairing metadata — gate had no toolUseId".into()
                    }
                    _ => "delivery unobserved — no tool_result for this gate".into(),
                };
                format!("\"{}\" ({why})", g.question)
            })
            .collect();
        if bad.is_empty() {
            ok()
        } else {
            Err(format!(
                "gate answer(s) not confirmed delivered to the model: {}",
                bad.join("; ")
            ))
        }
    } else if gd.iter().any(|g| g.delivered == Some(false)) {
        ok()
    } else {
        Err("expected a confirmed gate-delivery failure but none was observed".into())
    }
}

const TEN_MIB: usize = 10 * 1024 * 1024;

fn artifact_text(env: &Env<'_>, v: &Value, out: &mut Vec<KeyResult>) {
    let key = "artifact_text";
    let Ok(at) = obj_param(key, v) else {
        out.push(Err(bad_param(key)));
        return;
    };
    let artifact = opt_str(at, "artifact").unwrap_or("");
    let contains = str_list(at.get("contains"));
    let not_contains = str_list(at.get("not_contains"));
    let matches = opt_str(at, "matches");
    let not_matches = opt_str(at, "not_matches");
    if contains.is_none() && not_contains.is_none() && matches.is_none() && not_matches.is_none() {
        out.push(Err(
            "artifact_text: set at least one of contains / not_contains / matches / not_matches"
                .into(),
        ));
        return;
    }
    if env.lane_remote() {
        out.push(Err("artifact_text cannot be evaluated on `lane: remote` — a remote container's filesystem is not locally observable, so there is no body to scan. Assert on the agent's own statement of the content (`transcript_matches`), or use `lane: local`".into()));
        return;
    }
    let Some(rel) = contained_rel(artifact) else {
        out.push(Err(format!(
            "unsafe artifact_text path \"{artifact}\" — must stay under the work root (no absolute paths or \"..\")"
        )));
        return;
    };
    let tree = env.tree();
    if tree.is_link(&rel) {
        out.push(Err(format!(
            "evidence unavailable: \"{artifact}\" was a symlink/hardlink at record time — its content is not in the cassette; re-record or assert on the deliverable"
        )));
        return;
    }
    if !tree.exists(&rel) {
        out.push(Err(format!(
            "artifact_text: file not found: {artifact} (under {})",
            env.root()
        )));
        return;
    }
    if let Some(reason) = tree.truncation(&rel) {
        let cause = match reason {
            Some(TruncationReason::Input) => {
                "(an uploaded input — captured hash-only, never inlined)"
            }
            Some(TruncationReason::Readonly) => {
                "(read-only connected-folder input — its content is never captured)"
            }
            Some(TruncationReason::Size) => {
                "(larger than the artifact-body cap — raise --max-artifact-bytes to capture it)"
            }
            _ => "(a read-only input, or an artifact larger than the body cap)",
        };
        out.push(Err(format!(
            "evidence unavailable: artifact_text target \"{artifact}\" was captured body-less {cause} — content is not available to match against"
        )));
        return;
    }
    let Some(bytes) = tree.bytes(&rel) else {
        // A directory: reading it fails like EISDIR.
        out.push(Err(format!(
            "artifact_text: {artifact} could not be read: EISDIR: illegal operation on a directory, read"
        )));
        return;
    };
    if bytes.len() > TEN_MIB {
        out.push(Err(format!(
            "artifact_text: file too large to scan ({} bytes, limit 10 MiB)",
            bytes.len()
        )));
        return;
    }
    let negative = not_contains.is_some() || not_matches.is_some();
    let body = match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => {
            if negative {
                out.push(Err(format!(
                    "evidence unavailable: \"{artifact}\" is not lossless UTF-8 (binary or invalid encoding) — a negative text assertion over it would pass without reading the real bytes"
                )));
                return;
            }
            String::from_utf8_lossy(e.as_bytes()).into_owned()
        }
    };
    let quote = |s: &str| json::stringify(Some(&Value::String(s.to_owned())));
    let missing: Vec<String> = contains
        .unwrap_or_default()
        .iter()
        .filter(|n| !body.contains(n.as_str()))
        .map(|n| quote(n))
        .collect();
    let present: Vec<String> = not_contains
        .unwrap_or_default()
        .iter()
        .filter(|n| body.contains(n.as_str()))
        .map(|n| quote(n))
        .collect();
    let before = out.len();
    if !missing.is_empty() {
        out.push(Err(format!(
            "artifact_text: {artifact} does not contain {}",
            missing.join(", ")
        )));
    }
    if !present.is_empty() {
        out.push(Err(format!(
            "artifact_text: {artifact} unexpectedly contains {}",
            present.join(", ")
        )));
    }
    for (pat, want) in [(matches, true), (not_matches, false)] {
        let Some(pat) = pat else { continue };
        match compile_es(pat) {
            Err(e) => out.push(Err(format!("artifact_text: bad regex \"{pat}\": {e}"))),
            Ok(re) => match re.is_match(&body) {
                Err(e) => out.push(Err(format!("artifact_text: regex \"{pat}\": {e}"))),
                Ok(got) if got != want => out.push(Err(if want {
                    format!("artifact_text: {artifact} did not match /{pat}/i")
                } else {
                    format!("artifact_text: {artifact} unexpectedly matched /{pat}/i")
                })),
                Ok(_) => {}
            },
        }
    }
    let earlier_artifact_text_failure = out[..before]
        .iter()
        .any(|r| matches!(r, Err(m) if m.starts_with("artifact_text")));
    if out.len() == before && !earlier_artifact_text_failure {
        out.push(ok_ev(format!(
            "artifact_text: {artifact} satisfied every matcher"
        )));
    }
}

fn artifact_json(env: &Env<'_>, v: &Value, out: &mut Vec<KeyResult>) {
    let key = "artifact_json";
    let Ok(aj) = obj_param(key, v) else {
        out.push(Err(bad_param(key)));
        return;
    };
    let artifact = opt_str(aj, "artifact").unwrap_or("");
    let path = opt_str(aj, "path");
    let Some(rel) = contained_rel(artifact) else {
        out.push(Err(format!(
            "unsafe artifact_json path \"{artifact}\" — must stay under the work root (no absolute paths or \"..\")"
        )));
        return;
    };
    let tree = env.tree();
    if tree.is_link(&rel) {
        out.push(Err(format!(
            "evidence unavailable: \"{artifact}\" was a symlink/hardlink at record time — its content is not in the cassette (replay materializes a 0-byte placeholder); re-record or assert on the deliverable"
        )));
        return;
    }
    if !tree.exists(&rel) {
        out.push(Err(format!(
            "artifact_json: file not found: {artifact} (under {})",
            env.root()
        )));
        return;
    }
    if let Some(reason) = tree.truncation(&rel) {
        let cause = match reason {
            Some(TruncationReason::Input) => {
                "(an uploaded input — its content is captured hash-only, never inlined; assert artifact_json on a deliverable instead)"
            }
            Some(TruncationReason::Readonly) => {
                "(read-only connected-folder input — its content is never captured; assert artifact_json on a deliverable instead)"
            }
            Some(TruncationReason::Size) => {
                "(larger than the artifact-body cap — raise --max-artifact-bytes to capture it)"
            }
            _ => {
                "(a read-only connected-folder input, or an artifact larger than the body cap — if an input, assert on a deliverable; if a large deliverable, raise --max-artifact-bytes)"
            }
        };
        out.push(Err(format!(
            "evidence unavailable: artifact_json target \"{artifact}\" was captured body-less {cause} — content is not in the cassette, so it cannot be evaluated on replay"
        )));
        return;
    }
    let Some(bytes) = tree.bytes(&rel) else {
        out.push(Err(format!(
            "artifact_json: {artifact} could not be read/parsed as JSON: EISDIR: illegal operation on a directory, read"
        )));
        return;
    };
    if bytes.len() > TEN_MIB {
        out.push(Err(format!(
            "artifact_json: file too large to parse as JSON ({} bytes, limit 10 MiB)",
            bytes.len()
        )));
        return;
    }
    let text = String::from_utf8_lossy(&bytes);
    let doc: Value = match serde_json::from_str(&text) {
        Ok(d) => d,
        Err(e) => {
            let why = crate::js::json::v8_parse_error(&text, &e.to_string());
            out.push(Err(format!(
                "artifact_json: {artifact} could not be read/parsed as JSON: {why}"
            )));
            return;
        }
    };
    let resolved = json::resolve_dot_path(&doc, path);
    if let DotResolve::Unresolved { at } = &resolved {
        out.push(Err(format!(
            "artifact_json: path \"{}\" unresolvable in {artifact} — intermediate \"{at}\" is missing or not an object",
            path.unwrap_or("undefined")
        )));
        return;
    }
    let present = matches!(resolved, DotResolve::Value(_));
    let val = match &resolved {
        DotResolve::Value(v) => Some(v),
        _ => None,
    };
    let p_root = path.unwrap_or("(root)");
    let p_raw = path.unwrap_or("undefined");
    let mut any = false;
    if let Some(want) = aj.get("exists").and_then(Value::as_bool) {
        any = true;
        out.push(if present == want {
            ok()
        } else {
            Err(format!(
                "artifact_json: \"{p_root}\" exists={present}, expected {want}"
            ))
        });
    }
    if let Some(want) = aj.get("absent").and_then(Value::as_bool) {
        any = true;
        let absent = matches!(resolved, DotResolve::Absent);
        out.push(if absent == want {
            ok()
        } else {
            Err(format!(
                "artifact_json: \"{p_raw}\" absent={absent}, expected {want}"
            ))
        });
    }
    if let Some(want) = aj.get("is_null").and_then(Value::as_bool) {
        any = true;
        out.push(match val {
            None => Err(format!(
                "artifact_json: \"{p_root}\" is_null: path is absent — cannot determine null-ness (use absent: true to assert absence)"
            )),
            Some(v) => {
                let is_null = v.is_null();
                if is_null == want { ok() } else { Err(format!("artifact_json: \"{p_root}\" is_null={is_null}, expected {want}")) }
            }
        });
    }
    if let Some(want) = aj.get("equals") {
        any = true;
        out.push(if val.is_some_and(|v| json::deep_eq(v, want)) {
            ok()
        } else {
            Err(format!(
                "artifact_json: \"{p_raw}\" = {}, expected {}",
                json::stringify(val),
                json::stringify(Some(want))
            ))
        });
    }
    if let Some(gt) = aj.get("gt") {
        any = true;
        let good = match (val.and_then(Value::as_f64), gt.as_f64()) {
            (Some(x), Some(n)) => val.is_some_and(Value::is_number) && x > n,
            _ => false,
        };
        out.push(if good {
            ok()
        } else {
            Err(format!(
                "artifact_json: \"{p_raw}\" = {}, expected > {}",
                json::stringify(val),
                num(gt)
            ))
        });
    }
    if let Some(set) = aj.get("in") {
        any = true;
        let good = match (val, set.as_array()) {
            (Some(v), Some(items)) => items.iter().any(|x| json::deep_eq(v, x)),
            _ => false,
        };
        out.push(if good {
            ok()
        } else {
            Err(format!(
                "artifact_json: \"{p_raw}\" = {}, expected one of {}",
                json::stringify(val),
                json::stringify(Some(set))
            ))
        });
    }
    if !any {
        out.push(if present {
            ok()
        } else {
            Err(format!(
                "artifact_json: \"{p_root}\" is not present (no operator given → existence check)"
            ))
        });
    }
}

fn hostloop_only(env: &Env<'_>, key: &str) -> Result<(), String> {
    if env.tier() == Some("hostloop") {
        Ok(())
    } else {
        Err(format!(
            "{key}: hostloop-only — /sessions/... is valid and there is no path hook on tier \"{}\" — cannot verify; pin fidelity: hostloop",
            env.tier().unwrap_or("unknown")
        ))
    }
}

fn no_vm_path_file_op(env: &Env<'_>) -> KeyResult {
    hostloop_only(env, "no_vm_path_file_op")?;
    match env
        .run
        .file_tool_attempts
        .iter()
        .find(|a| is_vm(a.file_path.as_deref()) || is_vm(a.path.as_deref()))
    {
        Some(hit) => Err(format!(
            "no_vm_path_file_op: {} ({}) attempted VM path \"{}\"",
            hit.tool,
            hit.origin,
            hit.file_path
                .as_deref()
                .or(hit.path.as_deref())
                .unwrap_or("undefined")
        )),
        None => ok(),
    }
}

fn path_denied(env: &Env<'_>, v: &Value) -> KeyResult {
    let key = "path_denied";
    hostloop_only(env, key)?;
    let Some(denials) = &env.run.path_denials else {
        return Err("path_denied: no path-denial telemetry (older run / replay without controlOut) — cannot verify".into());
    };
    let q = obj_param(key, v)?;
    let re = match opt_str(q, "path_matches").filter(|p| !p.is_empty()) {
        Some(p) => Some(env.re(key, p)?),
        None => None,
    };
    let tool_glob = opt_str(q, "tool").map(Glob::new);
    let source = opt_str(q, "source");
    let scope = opt_str(q, "agent_scope");
    for d in denials {
        let tool_ok = tool_glob.as_ref().is_none_or(|g| g.is_match(&d.tool));
        let source_ok = source.is_none_or(|s| s == d.source);
        let path_ok = match &re {
            None => true,
            Some(re) => match &d.path {
                Some(p) => t(key, re, p)?,
                None => false,
            },
        };
        let scope_ok = match scope {
            None | Some("any") => true,
            Some(s) => (s == "subagent") == d.agent_id.is_some(),
        };
        if tool_ok && source_ok && path_ok && scope_ok {
            return ok_ev(format!(
                "{}: {} {}",
                d.source,
                d.tool,
                d.path.as_deref().unwrap_or("")
            ));
        }
    }
    Err("path_denied: no recorded denial matched all matchers".into())
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

fn subagent_file_write(env: &Env<'_>, v: &Value) -> KeyResult {
    let key = "subagent_file_write";
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
                "subagent_file_write: no SUB-AGENT-origin {} attempt with path {want} and a non-error paired result",
                tool.unwrap_or("Write/Edit/MultiEdit")
            ))
        }
    }
}

fn subagent_dispatch_healthy(env: &Env<'_>, v: &Value) -> KeyResult {
    let key = "subagent_dispatch_healthy";
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
            "subagent_dispatch_healthy: no sub-agent matching \"{p}\" was dispatched (by type or description)"
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
        let mine = |a: &&crate::evidence::FileToolAttempt| {
            a.parent_tool_use_id.as_deref() == Some(s.tool_use_id.as_str())
        };
        let mut reason = None;
        if want_delivered {
            let chain = env.run.file_tool_attempts.iter().filter(mine).any(|a| {
                a.origin == "subagent"
                    && write_tool(&a.tool)
                    && path_match(a.gate_path.as_deref())
                    && paired_ok(env.run, a.tool_use_id.as_deref())
            });
            if !chain {
                reason = Some(format!(
                    "delivered: no SUB-AGENT-origin write {want} under its OWN dispatch with a non-error paired result"
                ));
            }
        }
        if reason.is_none()
            && want_no_vm
            && let Some(hit) = env
                .run
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
        if let Some(r) = reason {
            return Err(format!(
                "subagent_dispatch_healthy: dispatch \"{}\" ({}) unhealthy — {r}",
                s.dispatch_agent_type, s.tool_use_id
            ));
        }
    }
    ok()
}
