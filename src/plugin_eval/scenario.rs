//! One case → the files of its reel scenario: the scenario YAML (prompt or
//! `turns:`, answers from the tool lists, limits, the mapped assertions),
//! its session (the plugin's skills, the mocked MCP servers), the mock
//! server's files and the `reel eval` plan (`runs`, the no-plugin arm).
//! Pure: every file is text built here; [`super::write`] puts them on disk.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::case::{Found, basename};
use super::graders::{self, Placement};
use super::{GraderRow, Problem, mocks};
use crate::paths::relative_posix;

/// What one case becomes.
#[derive(Debug, Clone)]
pub struct Built {
    /// The scenario file (`OUT/<slug>.yaml`).
    pub scenario: PathBuf,
    /// Every file to write, scenario first, as (path, text).
    pub files: Vec<(PathBuf, String)>,
    pub graders: Vec<GraderRow>,
    pub notes: Vec<String>,
}

/// The plugin under test, as the importer needs it.
pub struct Plugin<'a> {
    pub dir: &'a Path,
    pub eval_dir: &'a Path,
    pub name: String,
    /// `skills/<name>` directories, sorted.
    pub skills: Vec<PathBuf>,
}

/// The file stem of a case's scenario: its path below the eval dir, `/` → `-`.
pub fn slug(rel: &str) -> String {
    rel.replace(['/', '\\'], "-")
}

/// Builds a case's files; `Err` lists every problem (case-level refusals,
/// and refused graders unless `drop_unmapped`).
pub fn build(
    found: &Found,
    plugin: &Plugin<'_>,
    out: &Path,
    drop_unmapped: bool,
) -> Result<Built, Vec<Problem>> {
    let case = &found.case;
    let at = found.dir.join(if found.dir.join("case.yaml").exists() {
        "case.yaml"
    } else {
        "prompt.md"
    });
    let mut problems = case_refusals(found, &at);
    let (mut rows, turn_asserts, mut session_asserts) =
        map_graders(found, drop_unmapped, &mut problems);
    let slug = slug(&found.rel);
    let baselines = baseline_files(found, &slug, out, &mut session_asserts, &mut problems);
    // The report shows each baseline assertion as written (the copied file's
    // path): rows and assertions list the baseline graders in the same order.
    let written = session_asserts.iter().filter(|a| is_baseline(a));
    let shown = (rows.iter_mut()).filter_map(|r| r.assertion.as_mut().filter(|a| is_baseline(a)));
    for (row, a) in shown.zip(written) {
        *row = a.clone();
    }
    let history = match &case.context.history_file {
        Some(h) => match super::history::user_prompts(&found.dir.join(h)) {
            Ok(p) => p,
            Err(e) => {
                problems.push(e);
                Vec::new()
            }
        },
        None => Vec::new(),
    };
    let servers = mocks::read(plugin.eval_dir, &found.dir).map_err(|e| vec![e])?;
    if !problems.is_empty() {
        return Err(problems);
    }
    let scenario_path = out.join(format!("{slug}.yaml"));
    let mut scenario = scenario_yaml(
        found,
        plugin,
        &slug,
        &history,
        turn_asserts,
        session_asserts,
    );
    let dropped: Vec<String> = rows
        .iter()
        .filter(|r| r.status == "refused")
        .map(|r| format!("{} ({})", r.name, r.kind))
        .collect();
    if !dropped.is_empty() {
        // Said in the file itself, so a reader of the scenario sees what it does not check.
        let at = scenario.find("name:").unwrap_or(0);
        let line = format!(
            "# Not imported (no reel assertion with the same meaning): {}.\n",
            dropped.join(", ")
        );
        scenario.insert_str(at, &line);
    }
    let mut files = vec![(scenario_path.clone(), scenario)];
    let session = session_yaml(case, plugin, out, &slug, !servers.is_empty());
    files.push((out.join("sessions").join(format!("{slug}.yaml")), session));
    files.extend(mock_files(&servers, &out.join("mcp").join(&slug)));
    files.extend(baselines);
    let (plan, mut notes) = eval_plan(found, plugin, out, &slug, !history.is_empty());
    files.push((out.join("eval").join(format!("{slug}.json")), pretty(&plan)));
    notes.extend(plugin_notes(plugin.dir));
    Ok(Built {
        scenario: scenario_path,
        files,
        graders: rows,
        notes,
    })
}

fn is_baseline(assertion: &Value) -> bool {
    (assertion.pointer("/semantic_matches/baseline_transcript")).is_some()
}

/// Each baseline grader's file copied to `baselines/<slug>/` beside the
/// scenario, its `baseline_transcript` rewritten to that path (relative to
/// the scenario); a file outside the case or unreadable is a problem.
fn baseline_files(
    found: &Found,
    slug: &str,
    out: &Path,
    asserts: &mut [Value],
    problems: &mut Vec<Problem>,
) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    for b in asserts
        .iter_mut()
        .filter_map(|a| a.pointer_mut("/semantic_matches/baseline_transcript"))
    {
        let Some(name) = b.as_str().map(str::to_owned) else {
            continue;
        };
        let inside = Path::new(&name)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        let from = found.dir.join(&name);
        let text = match std::fs::read_to_string(&from) {
            Ok(t) if inside => t,
            Ok(_) => {
                problems.push(Problem::new(
                    &from,
                    "baseline_file",
                    "the baseline file is outside the case directory",
                    "keep the baseline transcript inside the case directory",
                ));
                continue;
            }
            Err(e) => {
                problems.push(Problem::io(&from, "read the baseline file", e));
                continue;
            }
        };
        if let Err(e) = crate::judge::baseline::read_transcript(&text) {
            problems.push(Problem::new(
                &from,
                "baseline_file",
                format!("the baseline transcript is not JSON lines ({e})"),
                "one JSON message per line, as a stream-json transcript",
            ));
            continue;
        }
        let rel = format!("baselines/{slug}/{name}");
        files.push((out.join(&rel), text));
        *b = Value::String(rel);
    }
    files
}

/// The stand-in server of a case's mocks: one JSON per server, the MCP
/// config naming them, and the server program (nothing without mocks).
fn mock_files(
    servers: &std::collections::BTreeMap<String, mocks::Server>,
    dir: &Path,
) -> Vec<(PathBuf, String)> {
    if servers.is_empty() {
        return Vec::new();
    }
    let mut files = Vec::new();
    let mut config = Map::new();
    for (name, server) in servers {
        let file = format!("{name}.json");
        config.insert(
            name.clone(),
            json!({"command": "python3", "args": ["./mock_server.py", file]}),
        );
        files.push((dir.join(&file), pretty(&server.to_json(name))));
    }
    files.push((dir.join("mcp.json"), pretty(&json!({"mcpServers": config}))));
    files.push((dir.join("mock_server.py"), mocks::SERVER_PY.to_owned()));
    files
}

/// The session `agent_env` key that sets environment variable `k` to `v`
/// (docs/session-format.md), if one does.
fn agent_env(k: &str, v: &str) -> Option<(String, Value)> {
    match (k, v) {
        ("CLAUDE_CODE_SUBAGENT_MODEL", m) if !m.is_empty() => {
            Some(("subagent_model".into(), m.into()))
        }
        ("ENABLE_TOOL_SEARCH", "auto") => Some(("tool_search".into(), "auto".into())),
        ("ENABLE_TOOL_SEARCH", "false") => Some(("tool_search".into(), "off".into())),
        ("CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS", "1") => {
            Some(("disable_experimental_betas".into(), true.into()))
        }
        _ => None,
    }
}

/// Case-level settings reel cannot honour the same way.
fn case_refusals(found: &Found, at: &Path) -> Vec<Problem> {
    let c = &found.case;
    let e = &c.execution;
    let mut out = Vec::new();
    let mut no = |field: &str, why: &str, fix: &str| out.push(Problem::new(at, field, why, fix));
    if c.context.scaffold_script.is_some() {
        no(
            "context.scaffold_script",
            "reel does not run author bash before a recording",
            "stage the files with a session `folders:` entry or a `workspace_fixture`, then drop scaffold_script",
        );
    }
    if !c.context.add_dirs.is_empty() {
        no(
            "context.add_dirs",
            "reel gives the agent no extra directories",
            "connect them as session `folders:` after import, then drop add_dirs",
        );
    }
    for (k, v) in &e.env {
        if agent_env(k, v).is_none() {
            no(
                &format!("execution.env.{k}"),
                "reel passes no free-form environment to the agent, only the variables a \
                 session's agent_env sets (CLAUDE_CODE_SUBAGENT_MODEL, ENABLE_TOOL_SEARCH=auto|false, \
                 CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS=1)",
                "drop the variable, or use one of those",
            );
        }
    }
    if e.append_system_prompt.is_some() {
        no(
            "execution.append_system_prompt",
            "reel does not append to the agent's system prompt",
            "move the text into the prompt or a skill",
        );
    }
    if e.growthbook_overrides
        .as_ref()
        .is_some_and(|m| !m.is_empty())
    {
        no(
            "execution.growthbook_overrides",
            "reel sets no feature flags",
            "drop growthbook_overrides",
        );
    }
    if e.artifact_publish == Some(true) {
        no(
            "execution.artifact_publish",
            "reel has no artifact-publishing stub",
            "drop artifact_publish",
        );
    }
    if c.plugins.as_ref().is_some_and(|p| !p.is_empty()) {
        no(
            "plugins",
            "reel imports the one plugin it is given",
            "import each plugin's suite on its own",
        );
    }
    for t in e
        .allowed_tools
        .iter()
        .chain(e.disallowed_tools.iter().flatten())
    {
        if t.contains(['(', '*', '?']) {
            no(
                "execution.allowed_tools",
                &format!("`{t}` is a pattern; reel's answers: take bare tool names here"),
                "list bare tool names (Write, Bash, mcp__server__tool)",
            );
        }
    }
    out
}

type Asserts = Vec<Value>;

fn map_graders(
    found: &Found,
    drop_unmapped: bool,
    problems: &mut Vec<Problem>,
) -> (Vec<GraderRow>, Asserts, Asserts) {
    let (mut rows, mut per_turn, mut per_session) = (Vec::new(), Vec::new(), Vec::new());
    for g in &found.case.graders {
        let file = found
            .grader_files
            .get(g.name())
            .cloned()
            .unwrap_or_else(|| found.dir.clone());
        match graders::map(g) {
            Ok(m) => {
                rows.push(GraderRow::mapped(g, &m));
                match m.placement {
                    Placement::Turn => per_turn.push(m.assertion),
                    Placement::Session => per_session.push(m.assertion),
                }
            }
            Err(r) => {
                rows.push(GraderRow::refused(g, &r));
                if !drop_unmapped {
                    let field = format!("{} (grader {}, type {})", r.field, g.name(), g.kind());
                    problems.push(Problem::new(&file, &field, r.reason, r.fix));
                }
            }
        }
    }
    (rows, per_turn, per_session)
}

fn scenario_yaml(
    found: &Found,
    plugin: &Plugin<'_>,
    slug: &str,
    history: &[String],
    turn: Asserts,
    session: Asserts,
) -> String {
    let c = &found.case;
    let mut s = Map::new();
    // The plugin's name first: a case name alone (`write-note`) would share its
    // default cassette path with any other scenario of that name.
    s.insert("name".into(), format!("{}-{}", plugin.name, c.name).into());
    s.insert("session".into(), format!("sessions/{slug}.yaml").into());
    s.insert("fidelity".into(), "protocol".into());
    s.insert(
        "timeout_ms".into(),
        (u64::from(c.execution.timeout_seconds) * 1000).into(),
    );
    let prompt = c.execution.prompt.clone().unwrap_or_default();
    if history.is_empty() {
        s.insert("prompt".into(), block(&prompt).into());
    }
    let answers = answers(c);
    if !answers.is_empty() {
        s.insert("answers".into(), Value::Array(answers));
    }
    // The turn limit is judged on the graded turn, as the first-party runner applies it.
    let mut turn = turn;
    turn.insert(0, json!({"max_turns": c.execution.max_turns}));
    let mut top = Vec::new();
    if history.is_empty() {
        top.extend(turn.iter().cloned());
    }
    top.extend(session);
    s.insert("assert".into(), Value::Array(top));
    if !history.is_empty() {
        let mut turns: Vec<Value> = history
            .iter()
            .map(|p| json!({"prompt": block(p)}))
            .collect();
        let mut last = Map::new();
        last.insert("prompt".into(), block(&prompt).into());
        if !turn.is_empty() {
            last.insert("assert".into(), Value::Array(turn));
        }
        turns.push(Value::Object(last));
        s.insert("turns".into(), Value::Array(turns));
    }
    let header = format!(
        "# Imported by `reel import plugin-eval` from {}/{} of plugin `{}`.\n\
         # Re-import to refresh; docs/plugin-eval.md maps each grader.\n",
        relative_posix(plugin.eval_dir, plugin.dir),
        found.rel,
        plugin.name
    );
    header + &yaml(&Value::Object(s))
}

/// A prompt as a block scalar's text (one trailing newline).
fn block(p: &str) -> String {
    format!("{}\n", p.trim_end())
}

fn answers(c: &super::case::Case) -> Vec<Value> {
    let allow = c
        .execution
        .allowed_tools
        .iter()
        .map(|t| json!({"when_tool": t, "decide": "allow"}));
    let deny = c
        .execution
        .disallowed_tools
        .iter()
        .flatten()
        .map(|t| json!({"when_tool": t, "decide": "deny"}));
    deny.chain(allow).collect()
}

fn session_yaml(
    c: &super::case::Case,
    plugin: &Plugin<'_>,
    out: &Path,
    slug: &str,
    mocked: bool,
) -> String {
    let sessions = out.join("sessions");
    let mut s = Map::new();
    if let Some(m) = &c.execution.model {
        s.insert("model".into(), m.clone().into());
    }
    s.insert("permission_mode".into(), "default".into());
    s.insert("permission_parity".into(), "strict".into());
    if !plugin.skills.is_empty() {
        let local: Vec<Value> = plugin
            .skills
            .iter()
            .map(|p| relative_posix(p, &sessions).into())
            .collect();
        s.insert("skills".into(), json!({ "local": local }));
    }
    let env: Map<String, Value> = c
        .execution
        .env
        .iter()
        .filter_map(|(k, v)| agent_env(k, v))
        .collect();
    if !env.is_empty() {
        s.insert("agent_env".into(), Value::Object(env));
    }
    if mocked {
        s.insert(
            "mcp".into(),
            json!({"config": format!("../mcp/{slug}/mcp.json")}),
        );
    }
    format!(
        "# The plugin `{}` under test (its skills{}), written by `reel import plugin-eval`.\n{}",
        plugin.name,
        if mocked {
            ", and its eval's MCP mocks"
        } else {
            ""
        },
        yaml(&Value::Object(s))
    )
}

/// `runs` and the no-plugin arm as a `reel eval` plan.
fn eval_plan(
    found: &Found,
    plugin: &Plugin<'_>,
    out: &Path,
    slug: &str,
    resumed: bool,
) -> (Value, Vec<String>) {
    let c = &found.case;
    let mut notes = Vec::new();
    let with_only: Vec<&str> = c
        .graders
        .iter()
        .filter(|g| g.arm() == Some("with-only"))
        .map(|g| g.name())
        .collect();
    let weights: Map<String, Value> = c
        .graders
        .iter()
        .filter_map(|g| weight(g).map(|w| (g.name().to_owned(), json!(w))))
        .collect();
    let mut argv: Vec<String> = vec!["reel".into(), "eval".into(), format!("{slug}.yaml")];
    let arms = if resumed {
        notes.push(format!("{}: a case with history_file runs without the no-plugin arm (as first-party); the plan is `runs` trials of the plugin", c.name));
        Value::Null
    } else {
        match plugin.skills.as_slice() {
            [one] => {
                let with = relative_posix(one, out);
                argv.extend([
                    "--arm".into(),
                    "without-plugin=none".into(),
                    "--arm".into(),
                    format!("with-plugin={with}"),
                ]);
                json!({"baseline": {"name": "without-plugin", "skill": "none"}, "candidate": {"name": "with-plugin", "skill": with}})
            }
            _ => {
                notes.push(format!("{}: `reel eval` arms move one skill directory; the plugin has {} skills, so the plan names no arms", c.name, plugin.skills.len()));
                Value::Null
            }
        }
    };
    argv.extend(["--reps".into(), c.runs.to_string()]);
    let plan = json!({
        "case": c.name,
        "scenario": format!("{slug}.yaml"),
        "reps": c.runs,
        "arms": arms,
        "command": if arms.is_null() { Value::Null } else { json!(argv) },
        "with_only": with_only,
        "weights": weights,
    });
    (plan, notes)
}

fn weight(g: &super::case::Grader) -> Option<f64> {
    use super::case::Grader::*;
    match g {
        Regex { weight, .. }
        | ToolOrder { weight, .. }
        | ToolUsed { weight, .. }
        | FileExists { weight, .. }
        | Llm { weight, .. }
        | Baseline { weight, .. } => *weight,
    }
}

/// Plugin parts reel does not stage, said once per case.
fn plugin_notes(dir: &Path) -> Vec<String> {
    ["commands", "agents", "hooks"]
        .iter()
        .filter(|d| dir.join(d).is_dir())
        .map(|d| {
            format!(
                "plugin {}: its {d}/ is not staged by reel (skills and mocked MCP servers are)",
                basename(dir)
            )
        })
        .collect()
}

/// YAML text of `v`, key order kept (serde_json's `preserve_order`).
pub fn yaml(v: &Value) -> String {
    serde_yaml_ng::to_string(&crate::scenario::yaml_value(v)).unwrap_or_default()
}

/// Two-space JSON with a trailing newline.
pub fn pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}
