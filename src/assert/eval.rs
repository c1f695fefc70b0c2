//! Evaluation of one assertion item (cowork-harness `check()`, src/assert.ts):
//! [`check`] walks the keys in `check()` order and AND-s their results; each
//! key's evaluator is a field of its record in [`super::keys`]. The helpers
//! here are what the evaluators share.

use serde_json::{Map, Value};

use super::glob;
use super::json::{self};
use super::keys::{self, Eval, Key};
use super::tree::ReplayTree;
use super::{AssertionOutcome, Context};
use crate::evidence::RunRecord;
use crate::js::number::of_json as js_number;
use crate::js::regex::{EsRegex, compile_es};

/// `Ok(evidence)` or `Err(message)`.
pub(crate) type KeyResult = Result<Option<String>, String>;

pub(super) fn ok() -> KeyResult {
    Ok(None)
}

pub(super) fn ok_ev(e: String) -> KeyResult {
    Ok(Some(e))
}

/// JavaScript template rendering of a JSON number parameter.
pub(super) fn num(v: &Value) -> String {
    match v {
        Value::Number(n) => js_number(n),
        other => json::stringify(Some(other)),
    }
}

/// JavaScript rendering of an f64.
pub(super) fn f(x: f64) -> String {
    match serde_json::Number::from_f64(x) {
        Some(n) => js_number(&n),
        None => x.to_string(),
    }
}

pub(crate) struct Env<'a> {
    pub(super) ctx: &'a Context<'a>,
    pub(super) run: &'a RunRecord,
    pub(super) warnings: Vec<String>,
}

impl<'a> Env<'a> {
    /// The materialised tree, from the context's shared manifest view.
    pub(super) fn tree(&self) -> &'a ReplayTree {
        &self.ctx.manifest().tree
    }

    pub(super) fn root(&self) -> String {
        self.ctx
            .work_root
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    }

    pub(super) fn lane_remote(&self) -> bool {
        self.ctx
            .cassette
            .scenario()
            .get("lane")
            .and_then(Value::as_str)
            == Some("remote")
    }

    pub(super) fn tier(&self) -> Option<&str> {
        self.ctx.cassette.effective_fidelity()
    }

    pub(super) fn prefixes(&self) -> &'a [String] {
        &self.ctx.manifest().user_visible_roots
    }

    pub(super) fn re(&self, key: &str, pattern: &str) -> Result<EsRegex, String> {
        compile_es(pattern).map_err(|e| format!("{key}: bad regex \"{pattern}\": {e}"))
    }

    pub(super) fn warn_if_regexish(&mut self, key: &str, pattern: &str) {
        if glob::looks_like_regex(pattern) {
            self.warnings.push(format!(
                "::warning:: {key}: \"{pattern}\" looks like a regex, but this key is GLOB-matched \
                    (use * and ?, not .* or | []). A regex-only pattern matches no tool name and \
                    can silently pass a _not_/_absent assert."
            ));
        }
    }
}

/// `test()` that turns a regex timeout into the key's failure.
pub(super) fn t(key: &str, re: &EsRegex, text: &str) -> Result<bool, String> {
    re.is_match(text)
        .map_err(|e| format!("{key}: regex \"{}\": {e}", re.source()))
}

pub(super) fn any_t<'s>(
    key: &str,
    re: &EsRegex,
    mut texts: impl Iterator<Item = &'s str>,
) -> Result<bool, String> {
    texts.try_fold(false, |acc, s| if acc { Ok(true) } else { t(key, re, s) })
}

pub(super) fn bad_param(key: &str) -> String {
    format!(
        "{key}: invalid parameter — run the cassette through validation (`reel verify-cassettes`)"
    )
}

pub(super) fn str_param<'v>(key: &str, v: &'v Value) -> Result<&'v str, String> {
    v.as_str().ok_or_else(|| bad_param(key))
}

pub(super) fn obj_param<'v>(key: &str, v: &'v Value) -> Result<&'v Map<String, Value>, String> {
    v.as_object().ok_or_else(|| bad_param(key))
}

pub(super) fn f64_param(key: &str, v: &Value) -> Result<f64, String> {
    v.as_f64().ok_or_else(|| bad_param(key))
}

pub(super) fn opt_str<'v>(m: &'v Map<String, Value>, k: &str) -> Option<&'v str> {
    m.get(k).and_then(Value::as_str)
}

pub(super) fn str_list(v: Option<&Value>) -> Option<Vec<String>> {
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
    for key in keys::check_order() {
        let Some(v) = item.get(key.name) else {
            continue;
        };
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
            judge: None,
        }
    } else if let Some(Err(m)) = results.iter().find(|r| r.is_err()) {
        AssertionOutcome {
            assertion,
            pass: false,
            message: m.clone(),
            evidence: None,
            source: None,
            judge: None,
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
            judge: None,
        }
    };
    (outcome, env.warnings)
}

fn eval_key(env: &mut Env<'_>, key: &Key, v: &Value, out: &mut Vec<KeyResult>) {
    let name = key.name;
    if key.verdict_modifier() {
        out.push(ok());
        return;
    }
    // Replay strips an inactive manifest key before evaluation; a direct
    // caller that did not still gets a failure, never a vacuous pass over an
    // empty tree.
    if !env.ctx.live && super::catalog::manifest_key_active(name, env.ctx.cassette) == Some(false) {
        out.push(Err(format!(
            "evidence unavailable: {name} needs the cassette's artifacts manifest (and, for the \
                baseline keys, its pre-run baseline), which this cassette lacks — re-record"
        )));
        return;
    }
    match key.eval {
        Eval::Live(_) if !env.ctx.live => out.push(Err(format!(
            "{name}: live-only — not evaluable on replay (the replay lane strips it)"
        ))),
        Eval::One(eval) | Eval::Live(eval) => out.push(eval(env, name, v)),
        Eval::Many(eval) => eval(env, name, v, out),
        // `replay_protocol_fidelity` has no branch in the original.
        Eval::VerdictModifier | Eval::Synthesized => {}
    }
}

pub(super) fn is_vm(p: Option<&str>) -> bool {
    p.is_some_and(|v| v == "/sessions" || v.starts_with("/sessions/"))
}

pub(super) fn hostloop_only(env: &Env<'_>, key: &str) -> Result<(), String> {
    if env.tier() == Some("hostloop") {
        Ok(())
    } else {
        Err(format!(
            "{key}: hostloop-only — /sessions/... is valid and there is no path hook on \
                tier \"{}\" — cannot verify; pin fidelity: hostloop",
            env.tier().unwrap_or("unknown")
        ))
    }
}
