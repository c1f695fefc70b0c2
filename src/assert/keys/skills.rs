//! Skills, connectors and tools the session offered, and skill activity windows.

use serde_json::{Value, json};

use super::*;
use crate::evidence::ReferenceAccess;

const SKILL_TOOL_USED: &[Field] = &[req("skill", Param::Str), req("tool", Param::Str)];

pub(super) const KEYS: &[Key] = &[
    Key {
        name: "reference_read",
        bucket: Bucket::Always,
        param: Param::NonEmptyRegex,
        description: "a skill references/ or scripts/ file whose path matches this regex was read",
        example: Some(|| Value::from("references/pricing\\.md")),
        ranks: Ranks {
            listed: 86,
            check: 86,
            schema: 86,
            strip: Some(74),
        },
        eval: Eval::One(reference_read),
        opposite: Some("no_observed_reference_access"),
        ..Key::DEFAULTS
    },
    Key {
        name: "no_observed_reference_access",
        bucket: Bucket::Always,
        param: Param::NonEmptyRegex,
        description: "no observed read of a skill references/ or scripts/ file matches this regex",
        example: Some(|| Value::from("references/legacy")),
        ranks: Ranks {
            listed: 87,
            check: 87,
            schema: 87,
            strip: Some(75),
        },
        eval: Eval::One(no_observed_reference_access),
        ..Key::DEFAULTS
    },
    Key {
        name: name::SKILL_TRIGGERED,
        bucket: Bucket::Always,
        param: Param::Str,
        description: "the Skill tool invoked a skill whose id matches this regex",
        example: Some(|| Value::from("my-skill")),
        ranks: Ranks {
            listed: 20,
            check: 21,
            schema: 24,
            strip: Some(16),
        },
        eval: Eval::One(skill_triggered),
        opposite: Some("no_skill_triggered"),
        ..Key::DEFAULTS
    },
    Key {
        name: "no_skill_triggered",
        bucket: Bucket::Always,
        param: Param::Str,
        description: "the Skill tool invoked no skill whose id matches this regex",
        example: Some(|| Value::from("my-skill")),
        ranks: Ranks {
            listed: 21,
            check: 37,
            schema: 25,
            strip: Some(17),
        },
        eval: Eval::One(no_skill_triggered),
        ..Key::DEFAULTS
    },
    Key {
        name: "skill_available",
        bucket: Bucket::Always,
        param: Param::Str,
        description: "the session offered a skill whose id matches this regex",
        example: Some(|| Value::from("my-skill")),
        ranks: Ranks {
            listed: 22,
            check: 38,
            schema: 26,
            strip: Some(18),
        },
        eval: Eval::One(skill_available),
        ..Key::DEFAULTS
    },
    Key {
        name: "connector_available",
        bucket: Bucket::Always,
        param: Param::Str,
        description: "the session offered an MCP server whose name matches this regex",
        ranks: Ranks {
            listed: 23,
            check: 39,
            schema: 27,
            strip: Some(19),
        },
        eval: Eval::One(connector_available),
        ..Key::DEFAULTS
    },
    Key {
        name: "tool_available",
        bucket: Bucket::Always,
        param: Param::Str,
        description: "the session offered a tool whose name matches this regex",
        ranks: Ranks {
            listed: 24,
            check: 40,
            schema: 28,
            strip: Some(20),
        },
        eval: Eval::One(tool_available),
        ..Key::DEFAULTS
    },
    Key {
        name: "skill_tool_used",
        bucket: Bucket::Always,
        param: Param::Object(SKILL_TOOL_USED, Refine::None),
        description: "while a matching skill was active, a matching tool was used",
        example: Some(|| json!({"skill": "my-skill", "tool": "Write"})),
        ranks: Ranks {
            listed: 25,
            check: 41,
            schema: 36,
            strip: Some(21),
        },
        eval: Eval::One(skill_tool_used),
        ..Key::DEFAULTS
    },
];

fn skill_triggered(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let p = str_param(key, v)?;
    let re = env.re(key, p)?;
    if !env.run.init_tools.iter().any(|t| t == "Skill") {
        return Err(
            "evidence unavailable: this agent's init tool list has no \"Skill\" tool — \
            cannot evaluate skill_triggered (agent-version drift?)"
                .into(),
        );
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

fn no_skill_triggered(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let p = str_param(key, v)?;
    let re = env.re(key, p)?;
    if !env.run.init_tools.iter().any(|t| t == "Skill") {
        return Err(
            "evidence unavailable: this agent's init tool list has no \"Skill\" tool — \
            cannot evaluate no_skill_triggered (agent-version drift?)"
                .into(),
        );
    }
    if any_t(key, &re, env.run.skills_invoked.iter().map(String::as_str))? {
        Err(format!("skill unexpectedly triggered matching \"{p}\""))
    } else {
        ok()
    }
}

fn skill_available(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let p = str_param(key, v)?;
    let re = env.re(key, p)?;
    let Some(skills) = env.run.init.as_ref().and_then(|i| i.skills.as_ref()) else {
        return Err(
            "evidence unavailable: availableSkills absent from result.json — cannot \
            evaluate skill_available"
                .into(),
        );
    };
    if any_t(key, &re, skills.iter().map(String::as_str))? {
        ok()
    } else {
        Err(format!("no staged skill matched \"{p}\""))
    }
}

fn connector_available(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let p = str_param(key, v)?;
    let re = env.re(key, p)?;
    let Some(init) = &env.run.init else {
        return Err(
            "evidence unavailable: mcpServers absent from result.json — cannot evaluate \
            connector_available"
                .into(),
        );
    };
    // Departure: a server the agent reports as `"status":"failed"` was
    // offered but is not available; the original passes on the name alone.
    let mut failed = Vec::new();
    for s in &init.mcp_servers {
        let name = match s.get("name") {
            Some(n) => crate::js::coerce::js_string(n),
            None => "undefined".into(),
        };
        if t(key, &re, &name)? {
            if s.get("status").and_then(Value::as_str) == Some("failed") {
                failed.push(name);
                continue;
            }
            return ok();
        }
    }
    if !failed.is_empty() {
        return Err(format!(
            "connector(s) {} matched \"{p}\" but failed to start (init status \"failed\")",
            failed.join(", ")
        ));
    }
    Err(format!("no connector matched \"{p}\""))
}

fn tool_available(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let p = str_param(key, v)?;
    let re = env.re(key, p)?;
    let Some(init) = &env.run.init else {
        return Err(
            "evidence unavailable: availableTools absent from result.json — cannot evaluate \
            tool_available"
                .into(),
        );
    };
    if any_t(key, &re, init.tools.iter().map(String::as_str))? {
        return ok();
    }
    let discovery = p.contains("mcp__skills") || p.contains("mcp__plugins");
    let mut msg = format!(
        "no tool in the init manifest matched \"{p}\" — note context.tools is the EAGERLY-LOADED \
            tool set; a factory-deferred tool (surfaced via a system-reminder) can be available \
            yet absent here, so a miss is \"not eagerly loaded\", not \"provably unavailable\""
    );
    if discovery {
        msg.push_str(
            ". The mcp__skills__*/mcp__plugins__* discovery tools ARE modeled as \
            alwaysLoad on container/hostloop (and cowork, which resolves to one of those) — a miss \
            there is a real absence, but microvm/protocol still declare no such server, so a miss \
            on those tiers means \"not modeled at this tier\", not \"provably unavailable\"",
        );
    }
    Err(msg)
}

fn skill_tool_used(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let m = obj_param(key, v)?;
    let (Some(skill), Some(tool)) = (opt_str(m, "skill"), opt_str(m, "tool")) else {
        return Err(bad_param(key));
    };
    let Some(timeline) = env.ctx.cassette.timeline_entries() else {
        return Err(
            "evidence unavailable: skill-activity telemetry absent from result.json — \
            cannot evaluate skill_tool_used"
                .into(),
        );
    };
    let skill_re = env.re(key, skill)?;
    let tool_re = env.re(key, tool)?;
    let windows = crate::evidence::timeline::skill_activity(&timeline);
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

/// Every observed skill reference read (main agent, then sub-agents), or
/// evidence-unavailable when the run recorded no tool stream at all. reel
/// observes `Read` of a mounted plugin's `references/` / `scripts/` file.
/// Every skill file the run was seen to reach, main agent ∪ sub-agents,
/// channels merged per path (cowork-harness `unionReferenceAccesses`). A
/// truncated cassette was never driven: nothing was observable, which is not
/// "no access".
fn observed_references(env: &Env<'_>, key: &str) -> Result<Vec<ReferenceAccess>, String> {
    let run = env.run;
    if let Some(why) = &run.truncated {
        return Err(format!(
            "evidence unavailable: {key}: no reference access is observable ({why})"
        ));
    }
    let mut all: Vec<ReferenceAccess> = Vec::new();
    let lists = std::iter::once(&run.references_accessed)
        .chain(run.subagents.iter().map(|s| &s.references_accessed));
    for a in lists.flatten() {
        match all.iter_mut().find(|x| x.path == a.path) {
            Some(x) => {
                for v in &a.via {
                    if !x.via.contains(v) {
                        x.via.push(v);
                    }
                }
            }
            None => all.push(a.clone()),
        }
    }
    Ok(all)
}

/// `references/env.md (bash, read)`.
fn shown(a: &ReferenceAccess) -> String {
    format!("{} ({})", a.path, a.via.join(", "))
}

fn reference_read(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let p = str_param(key, v)?;
    let re = env.re(key, p)?;
    let seen = observed_references(env, key)?;
    for a in &seen {
        if t(key, &re, &a.path)? {
            return ok_ev(format!("{key}: {} matched /{p}/i", shown(a)));
        }
    }
    let observed: Vec<String> = seen.iter().map(shown).collect();
    Err(format!(
        "{key}: no observed reference access matched /{p}/i (observed: {}) — the detector \
            under-approximates (a Read, a Grep, or a shell command naming the file under its \
            plugin root; a `$VAR`-built or relative shell path is not seen)",
        if observed.is_empty() {
            "none".to_owned()
        } else {
            observed.join("; ")
        }
    ))
}

fn no_observed_reference_access(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let p = str_param(key, v)?;
    let re = env.re(key, p)?;
    for a in observed_references(env, key)? {
        if t(key, &re, &a.path)? {
            return Err(format!(
                "{key}: {} was accessed (matched /{p}/i)",
                shown(&a)
            ));
        }
    }
    ok()
}
