//! A reel scenario → a `claude plugin eval` case under `PLUGIN/evals/<stem>/`:
//! `prompt.md` (limits and tool lists in its front matter), one
//! `graders/<name>.md` per assertion that has a grader equivalent (the forms
//! [`super::graders::map`] writes), `mocks/` from an imported stand-in
//! server, a `history.jsonl` of the earlier turns' prompts, and the
//! session's skills copied into the plugin when it lacks them. Every other
//! assertion and answer rule is listed, not guessed.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::case::{Grader, basename, read_text};
use super::scenario::{pretty, yaml};
use super::{Problem, graders, write};

/// An assertion (or answer rule) with no grader equivalent.
#[derive(Debug, Clone, Serialize)]
pub struct Unexported {
    pub item: Value,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ExportReport {
    pub scenario: String,
    pub case_dir: String,
    pub graders: Vec<String>,
    pub written: Vec<String>,
    pub unchanged: Vec<String>,
    pub not_exported: Vec<Unexported>,
}

/// Exports `scenario` into `plugin`.
pub fn export(scenario: &Path, plugin: &Path) -> Result<ExportReport, Problem> {
    let (loaded, raw) = load(scenario)?;
    let stem = basename(&scenario.with_extension(""));
    let evals = super::eval_dir(plugin);
    let case_dir = plugin
        .join(evals.strip_prefix(plugin).unwrap_or(Path::new("evals")))
        .join(&stem);
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    let mut not_exported = Vec::new();
    let mut front = Map::new();
    let items = graded_items(&raw, &mut not_exported);
    let names = grader_files(&items, &case_dir, &mut front, &mut files, &mut not_exported);
    baseline_files(&loaded.assert, &case_dir, &mut files);
    if names.is_empty() {
        return Err(Problem::new(
            scenario,
            "assert",
            "no assertion has a grader equivalent, and a case needs one grader",
            "add an assertion docs/plugin-eval.md lists as exportable",
        ));
    }
    if let Some(ms) = loaded.timeout_ms {
        let seconds = ms.div_ceil(1000).clamp(1, 3600);
        front.insert("timeout_seconds".into(), seconds.into());
    }
    tool_lists(&raw, &mut front, &mut not_exported);
    let (prompt, history) = prompts(&raw, &loaded);
    if !history.is_empty() {
        let case = json!({"schema_version": "1.1", "name": stem,
            "context": {"history_file": "history.jsonl"}, "execution": {}, "graders": []});
        files.push((case_dir.join("case.yaml"), yaml(&case)));
        files.push((case_dir.join("history.jsonl"), history_jsonl(&history)));
    }
    let front = if front.is_empty() {
        String::new()
    } else {
        format!("---\n{}---\n\n", yaml(&Value::Object(front)))
    };
    files.insert(
        0,
        (
            case_dir.join("prompt.md"),
            format!("{front}{}\n", prompt.trim_end()),
        ),
    );
    session_parts(&loaded, plugin, &case_dir, &mut files, &mut not_exported)?;
    let manifest = plugin.join(".claude-plugin").join("plugin.json");
    if !manifest.exists() {
        // The first-party runner loads a plugin by its manifest; name it after the directory.
        let name = basename(&crate::paths::resolve_cwd(plugin));
        files.push((manifest, pretty(&json!({"name": name, "version": "0.0.0"}))));
    }
    let w = write::all(&files)?;
    let shown = |v: &[PathBuf]| v.iter().map(|p| p.display().to_string()).collect();
    Ok(ExportReport {
        scenario: scenario.display().to_string(),
        case_dir: case_dir.display().to_string(),
        graders: names,
        written: shown(&w.written),
        unchanged: shown(&w.unchanged),
        not_exported,
    })
}

/// The scenario as reel loads it, and its raw YAML (for the keys as written).
fn load(scenario: &Path) -> Result<(crate::scenario::Scenario, Value), Problem> {
    let loaded = crate::scenario::Scenario::load_authored(scenario).map_err(|e| {
        Problem::new(
            scenario,
            "(scenario)",
            e.to_string(),
            "fix the scenario so `reel lint` accepts it",
        )
    })?;
    let raw: Value = serde_yaml_ng::from_str(&read_text(scenario)?).map_err(|e| {
        Problem::new(
            scenario,
            "(root)",
            format!("not YAML: {e}"),
            "fix the YAML syntax",
        )
    })?;
    Ok((loaded, raw))
}

/// The assertions a grader may grade: the top level's and the last turn's
/// (earlier turns' are listed as not exported).
fn graded_items(raw: &Value, not_exported: &mut Vec<Unexported>) -> Vec<Value> {
    let list = |v: Option<&Value>| v.and_then(Value::as_array).cloned().unwrap_or_default();
    let mut items = list(raw.get("assert"));
    let turns = list(raw.get("turns"));
    for (i, turn) in turns.iter().enumerate() {
        if i + 1 == turns.len() {
            items.extend(list(turn.get("assert")));
        } else if turn.get("assert").is_some() {
            not_exported.push(Unexported {
                item: turn.clone(),
                reason: format!("turn {}'s assert: graders grade only the last turn", i + 1),
            });
        }
    }
    items
}

/// One `graders/NN-<key>.md` per assertion with a grader form; `max_turns`
/// goes to the front matter. Returns the grader names.
fn grader_files(
    items: &[Value],
    case_dir: &Path,
    front: &mut Map<String, Value>,
    files: &mut Vec<(PathBuf, String)>,
    not_exported: &mut Vec<Unexported>,
) -> Vec<String> {
    let mut names = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if let Some(n) = item.get("max_turns").and_then(Value::as_u64) {
            front.insert("max_turns".into(), n.into());
            continue;
        }
        let key = item
            .as_object()
            .and_then(|o| o.keys().next())
            .cloned()
            .unwrap_or_default();
        let name = format!("{:02}-{}", i + 1, key.replace('_', "-"));
        match graders::unmap(&name, item) {
            Some(g) => {
                files.push((
                    case_dir.join("graders").join(format!("{name}.md")),
                    grader_md(&g),
                ));
                names.push(name);
            }
            None => not_exported.push(Unexported {
                item: item.clone(),
                reason: "no grader has this assertion's meaning".into(),
            }),
        }
    }
    names
}

/// Each `baseline_transcript`'s text (inlined by the loader) as the case's
/// baseline file, named as its grader names it (the path's last component).
fn baseline_files(assert: &[Value], case_dir: &Path, files: &mut Vec<(PathBuf, String)>) {
    for b in assert
        .iter()
        .filter_map(|a| a.pointer("/semantic_matches/baseline_transcript"))
    {
        let (Some(file), Some(text)) = (b["file"].as_str(), b["text"].as_str()) else {
            continue;
        };
        let name = file.rsplit('/').next().unwrap_or(file);
        files.push((case_dir.join(name), text.to_owned()));
    }
}

/// The graded prompt and the earlier turns' prompts.
fn prompts(raw: &Value, loaded: &crate::scenario::Scenario) -> (String, Vec<String>) {
    match raw.get("turns").and_then(Value::as_array) {
        Some(turns) if !turns.is_empty() => {
            let p: Vec<String> = turns
                .iter()
                .map(|t| {
                    t.get("prompt")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .trim_end()
                        .to_owned()
                })
                .collect();
            (p[p.len() - 1].clone(), p[..p.len() - 1].to_vec())
        }
        _ => (loaded.prompt.clone(), Vec::new()),
    }
}

fn tool_lists(raw: &Value, front: &mut Map<String, Value>, not_exported: &mut Vec<Unexported>) {
    let (mut allow, mut deny) = (Vec::new(), Vec::new());
    for rule in raw
        .get("answers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let o = rule.as_object();
        let tool = rule.get("when_tool").and_then(Value::as_str);
        let decide = rule.get("decide").and_then(Value::as_str);
        match (tool, decide, o.map_or(0, Map::len)) {
            (Some(t), Some("allow"), 2) if !t.contains(['*', '?']) => allow.push(Value::from(t)),
            (Some(t), Some("deny"), 2) if !t.contains(['*', '?']) => deny.push(Value::from(t)),
            _ => not_exported.push(Unexported {
                item: rule.clone(),
                reason:
                    "only a bare allow/deny of one tool becomes allowed_tools / disallowed_tools"
                        .into(),
            }),
        }
    }
    if !allow.is_empty() {
        front.insert("allowed_tools".into(), Value::Array(allow));
    }
    if !deny.is_empty() {
        front.insert("disallowed_tools".into(), Value::Array(deny));
    }
}

fn grader_md(g: &Grader) -> String {
    let mut v = serde_json::to_value(g).unwrap_or(Value::Null);
    let body = match g {
        Grader::Llm { criteria, .. } | Grader::Baseline { criteria, .. } => Some(criteria.clone()),
        _ => None,
    };
    if let Some(o) = v.as_object_mut() {
        o.remove("name");
        if body.is_some() {
            o.remove("criteria");
        }
        if matches!(o.get("target"), Some(Value::String(t)) if t == "last_message") {
            o.remove("target");
        }
        if matches!(o.get("focus"), Some(Value::String(t)) if t == "last_message") {
            o.remove("focus");
        }
        if o.get("flags") == Some(&Value::from("")) {
            o.remove("flags");
        }
        if o.get("exists") == Some(&Value::Bool(true)) {
            o.remove("exists");
        }
    }
    format!(
        "---\n{}---\n{}",
        yaml(&v),
        body.map(|b| format!("\n{}\n", b.trim_end()))
            .unwrap_or_default()
    )
}

/// A resumable transcript of the earlier turns: each prompt and a stand-in
/// reply, chained by `parentUuid` as Claude Code's `--resume` needs (the
/// scenario holds no recorded replies; `history.rs` reads the prompts back).
fn history_jsonl(prompts: &[String]) -> String {
    let session = "00000000-0000-4000-8000-000000005e55";
    let id = |n: usize| format!("00000000-0000-4000-8000-{n:012x}");
    let mut out = String::new();
    let mut parent = Value::Null;
    for (i, p) in prompts.iter().enumerate() {
        let (user, assistant) = (id(2 * i + 1), id(2 * i + 2));
        let lines = [
            json!({"type": "user", "parentUuid": parent, "uuid": user, "sessionId": session, "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/",
                   "message": {"role": "user", "content": p}}),
            json!({"type": "assistant", "parentUuid": user, "uuid": assistant, "sessionId": session, "timestamp": "2026-01-01T00:00:01.000Z", "cwd": "/",
                   "message": {"id": format!("msg_reel_history_{}", i + 1), "type": "message", "role": "assistant", "model": "reel-export",
                               "content": [{"type": "text", "text": "(the reply to this turn is not part of the scenario)"}],
                               "stop_reason": "end_turn", "usage": {"input_tokens": 0, "output_tokens": 0}}}),
        ];
        for l in lines {
            out += &serde_json::to_string(&l).unwrap_or_default();
            out.push('\n');
        }
        parent = Value::from(assistant);
    }
    out
}

/// The session's skills (copied into the plugin when missing) and an
/// imported stand-in server's answers (back to `mocks/<server>/<tool>.md`).
fn session_parts(
    loaded: &crate::scenario::Scenario,
    plugin: &Path,
    case_dir: &Path,
    files: &mut Vec<(PathBuf, String)>,
    not_exported: &mut Vec<Unexported>,
) -> Result<(), Problem> {
    let Some(session) = &loaded.session_path else {
        return Ok(());
    };
    let raw: Value = serde_yaml_ng::from_str(&read_text(session)?).unwrap_or(Value::Null);
    let base = crate::scenario::dir_of(session);
    for s in raw
        .pointer("/skills/local")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        let src = crate::paths::lexical(&base.join(s));
        let dst = plugin.join("skills").join(basename(&src));
        if crate::paths::lexical(&crate::paths::resolve_cwd(&dst)) != src && !dst.exists() {
            copy_tree(&src, &dst, files)?;
        }
    }
    if let Some(cfg) = raw.pointer("/mcp/config").and_then(Value::as_str) {
        let cfg = base.join(cfg);
        let dir = crate::scenario::dir_of(&cfg).to_path_buf();
        if dir.join("mock_server.py").is_file() {
            mocks_back(&dir, case_dir, files)?;
        } else {
            not_exported.push(Unexported {
                item: json!({"mcp": {"config": cfg.display().to_string()}}),
                reason: "a real MCP server: first-party runs it only with --mocks off".into(),
            });
        }
    }
    Ok(())
}

fn mocks_back(
    dir: &Path,
    case_dir: &Path,
    files: &mut Vec<(PathBuf, String)>,
) -> Result<(), Problem> {
    let mut specs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Problem::io(dir, "read the directory", e))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") && !p.ends_with("mcp.json"))
        .collect();
    specs.sort();
    for spec in specs {
        let v: Value = serde_json::from_str(&read_text(&spec)?).map_err(|e| {
            Problem::new(
                &spec,
                "(root)",
                format!("not JSON: {e}"),
                "re-import the case",
            )
        })?;
        let server = v.get("server").and_then(Value::as_str).unwrap_or_default();
        let mut listing = Vec::new();
        for (tool, t) in v
            .get("tools")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let text = t
                .pointer("/answer/text")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let fm = if t.pointer("/answer/isError") == Some(&Value::Bool(true)) {
                "---\nerror: true\n---\n"
            } else {
                ""
            };
            files.push((
                case_dir
                    .join("mocks")
                    .join(server)
                    .join(format!("{tool}.md")),
                format!("{fm}{text}\n"),
            ));
            let (d, s) = (
                t.get("description").cloned().unwrap_or_default(),
                t.get("inputSchema").cloned().unwrap_or_default(),
            );
            if d != "" || s != json!({"type": "object"}) {
                listing.push(json!({"name": tool, "description": d, "inputSchema": s}));
            }
        }
        if !listing.is_empty() {
            files.push((
                case_dir.join("mocks").join(server).join("_tools.json"),
                pretty(&json!({"tools": listing})),
            ));
        }
    }
    Ok(())
}

fn copy_tree(src: &Path, dst: &Path, files: &mut Vec<(PathBuf, String)>) -> Result<(), Problem> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(src)
        .map_err(|e| Problem::io(src, "read the directory", e))?
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        let meta = std::fs::symlink_metadata(&p).map_err(|e| Problem::io(&p, "stat", e))?;
        let to = dst.join(basename(&p));
        if meta.is_dir() {
            copy_tree(&p, &to, files)?;
        } else if meta.is_file() {
            let text = std::fs::read_to_string(&p)
                .map_err(|e| Problem::io(&p, "read (skills are copied as text)", e))?;
            files.push((to, text));
        }
    }
    Ok(())
}
