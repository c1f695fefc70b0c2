//! Hooks, path permissions, VM paths and egress.

use serde_json::Value;

use super::*;

const PATH_DENIED: &[Field] = &[
    opt("tool", Param::ToolGlob),
    opt("path_matches", Param::Str),
    opt("source", Param::Str),
    opt("agent_scope", Param::Str),
];

pub(super) const KEYS: &[Key] = &[
    Key {
        name: "hook_blocked",
        bucket: Bucket::NeedsControlOut,
        param: Param::Str,
        description: "a hook blocked a tool matching this regex",
        ranks: Ranks {
            listed: 52,
            check: 33,
            schema: 44,
            strip: Some(52),
        },
        eval: Eval::One(hook_blocked),
        ..Key::DEFAULTS
    },
    Key {
        name: "no_hook_blocked",
        bucket: Bucket::NeedsControlOut,
        param: Param::True,
        description: "no hook blocked any tool",
        ranks: Ranks {
            listed: 53,
            check: 34,
            schema: 45,
            strip: Some(53),
        },
        eval: Eval::One(no_hook_blocked),
        excludes: Some(Excludes {
            when: is_true,
            others: &[("hook_blocked", any)],
            why: "no hook may block",
            refusal: Some("`no_hook_blocked: true` contradicts `hook_blocked`"),
        }),
        ..Key::DEFAULTS
    },
    Key {
        name: "vm_path_denied",
        bucket: Bucket::NeedsControlOut,
        param: Param::True,
        description: "a file access to a /sessions VM path was denied (hostloop)",
        ranks: Ranks {
            listed: 54,
            check: 70,
            schema: 15,
            strip: Some(54),
        },
        eval: Eval::One(vm_path_denied),
        ..Key::DEFAULTS
    },
    Key {
        name: "path_denied",
        bucket: Bucket::NeedsControlOut,
        param: Param::Object(PATH_DENIED, Refine::None),
        description: "a path permission denial matched these fields (hostloop)",
        ranks: Ranks {
            listed: 55,
            check: 71,
            schema: 16,
            strip: Some(55),
        },
        eval: Eval::One(path_denied),
        ..Key::DEFAULTS
    },
    Key {
        name: "no_path_denied",
        bucket: Bucket::NeedsControlOut,
        param: Param::True,
        description: "no path permission was denied (hostloop)",
        ranks: Ranks {
            listed: 56,
            check: 72,
            schema: 17,
            strip: Some(56),
        },
        eval: Eval::One(no_path_denied),
        excludes: Some(Excludes {
            when: is_true,
            others: &[("path_denied", any), ("vm_path_denied", any)],
            why: "no path may be denied",
            refusal: Some("`no_path_denied: true` contradicts `path_denied` / `vm_path_denied`"),
        }),
        ..Key::DEFAULTS
    },
    Key {
        name: "no_vm_path_file_op",
        bucket: Bucket::Always,
        param: Param::True,
        description: "no file operation touched a /sessions VM path (hostloop)",
        ranks: Ranks {
            listed: 19,
            check: 69,
            schema: 14,
            strip: Some(37),
        },
        eval: Eval::One(no_vm_path_file_op),
        ..Key::DEFAULTS
    },
    Key {
        name: name::EGRESS_DENIED,
        bucket: Bucket::LiveOnly,
        param: Param::Str,
        description: "the egress proxy denied this host",
        example: Some(|| Value::from("example.com")),
        ranks: Ranks {
            listed: 66,
            check: 45,
            schema: 48,
            strip: None,
        },
        eval: Eval::Live(outcome::needs_live_telemetry),
        ..Key::DEFAULTS
    },
    Key {
        name: name::EGRESS_ALLOWED,
        bucket: Bucket::LiveOnly,
        param: Param::Str,
        description: "the egress proxy allowed this host",
        example: Some(|| Value::from("example.com")),
        ranks: Ranks {
            listed: 67,
            check: 46,
            schema: 49,
            strip: None,
        },
        eval: Eval::Live(outcome::needs_live_telemetry),
        ..Key::DEFAULTS
    },
];

fn no_hook_blocked(env: &mut Env<'_>, _key: &'static str, _v: &Value) -> KeyResult {
    let Some(hooks) = &env.run.hook_events else {
        return Err(
            "no_hook_blocked: no hook events (older run / replay without controlOut) — \
            cannot verify"
                .into(),
        );
    };
    match hooks.iter().find(|h| h.decision == "block") {
        Some(b) => Err(format!(
            "no_hook_blocked: \"{}\" was blocked{}",
            b.tool.clone().unwrap_or_else(|| b.callback_id.clone()),
            b.reason
                .as_deref()
                .filter(|r| !r.is_empty())
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        )),
        None => ok(),
    }
}

fn vm_path_denied(env: &mut Env<'_>, key: &'static str, _v: &Value) -> KeyResult {
    hostloop_only(env, key)?;
    match &env.run.path_denials {
        None => Err(
            "vm_path_denied: no path-denial telemetry (older run / replay without \
            controlOut) — cannot verify"
                .into(),
        ),
        Some(d) if d.iter().any(|d| is_vm(d.path.as_deref())) => ok(),
        Some(_) => Err("vm_path_denied: no /sessions-targeted denial recorded".into()),
    }
}

fn no_path_denied(env: &mut Env<'_>, key: &'static str, _v: &Value) -> KeyResult {
    hostloop_only(env, key)?;
    match &env.run.path_denials {
        None => Err(
            "no_path_denied: no path-denial telemetry (older run / replay without \
            controlOut) — cannot verify"
                .into(),
        ),
        Some(d) => match d.first() {
            Some(d) => Err(format!(
                "no_path_denied: {} denied {} on \"{}\"",
                d.source,
                d.tool,
                d.path.as_deref().unwrap_or("?")
            )),
            None => ok(),
        },
    }
}

fn hook_blocked(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
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

fn path_denied(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    hostloop_only(env, key)?;
    let Some(denials) = &env.run.path_denials else {
        return Err(
            "path_denied: no path-denial telemetry (older run / replay without controlOut) \
            — cannot verify"
                .into(),
        );
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

fn no_vm_path_file_op(env: &mut Env<'_>, _key: &'static str, _v: &Value) -> KeyResult {
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
