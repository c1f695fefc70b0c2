//! A `claude plugin eval` case read the way Claude Code 2.1.332 reads it:
//! `prompt.md` (front matter + the prompt body), `graders/*.md` (front matter
//! with `type:`, the body filling `criteria` / `pattern`), an optional
//! `case.yaml` underneath (prose wins, graders are appended), every object
//! strict. Cases are found below the eval dir (`evals/`), skipping the
//! directories the first-party discovery skips.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Problem;

/// Directories case discovery never enters (first-party `wr`).
const SKIPPED: &[&str] = &["node_modules", ".claude", "results", "mocks"];
/// Front-matter keys of `prompt.md`: the case's top level, then `execution`.
const TOP_KEYS: &[&str] = &[
    "schema_version",
    "name",
    "description",
    "tags",
    "plugins",
    "runs",
    "expected_outcome",
];
const EXECUTION_KEYS: &[&str] = &[
    "model",
    "max_turns",
    "timeout_seconds",
    "allowed_tools",
    "disallowed_tools",
    "artifact_publish",
    "growthbook_overrides",
    "append_system_prompt",
    "env",
];

/// One case, validated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub schema_version: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugins: Option<Vec<String>>,
    #[serde(default)]
    pub context: Context,
    pub execution: Execution,
    #[serde(default = "default_runs")]
    pub runs: u32,
    pub graders: Vec<Grader>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_outcome: Option<String>,
}

fn default_runs() -> u32 {
    3
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Context {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scaffold_script: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_file: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub add_dirs: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Execution {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    #[serde(default = "default_max_turns")]
    pub max_turns: u32,
    #[serde(default = "default_timeout")]
    pub timeout_seconds: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_tools: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disallowed_tools: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_publish: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub growthbook_overrides: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub append_system_prompt: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

fn default_max_turns() -> u32 {
    10
}
fn default_timeout() -> u32 {
    300
}

/// Where a `regex` grader looks, or what an `llm` grader shows the judge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Target {
    /// `last_message`, `trace`, `files` or `mock_calls`.
    Named(String),
    /// `{source: file, path}`: a file of the run's working directory.
    File(FileSource),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSource {
    pub source: String,
    pub path: String,
}

impl Default for Target {
    fn default() -> Self {
        Target::Named("last_message".into())
    }
}

/// `before` / `after` of a `tool_order` grader: a tool name or `{tool, input_match}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolRef {
    Name(String),
    Match {
        tool: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input_match: Option<String>,
    },
}

/// One grader, by `type:` (the first-party schema, strict).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Grader {
    Regex {
        name: String,
        #[serde(default)]
        target: Target,
        pattern: String,
        #[serde(default)]
        flags: String,
        #[serde(default = "default_match", rename = "match")]
        match_: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        weight: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arm: Option<String>,
    },
    ToolOrder {
        name: String,
        before: ToolRef,
        after: ToolRef,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        weight: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arm: Option<String>,
    },
    ToolUsed {
        name: String,
        tool: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input_match: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        weight: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arm: Option<String>,
    },
    FileExists {
        name: String,
        path: String,
        #[serde(default = "default_true")]
        exists: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        weight: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arm: Option<String>,
    },
    Llm {
        name: String,
        criteria: String,
        #[serde(default)]
        focus: Target,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        weight: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arm: Option<String>,
    },
    Baseline {
        name: String,
        baseline_file: String,
        criteria: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        weight: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arm: Option<String>,
    },
}

fn default_match() -> String {
    "contains".into()
}
fn default_true() -> bool {
    true
}

impl Grader {
    pub fn name(&self) -> &str {
        match self {
            Grader::Regex { name, .. }
            | Grader::ToolOrder { name, .. }
            | Grader::ToolUsed { name, .. }
            | Grader::FileExists { name, .. }
            | Grader::Llm { name, .. }
            | Grader::Baseline { name, .. } => name,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Grader::Regex { .. } => "regex",
            Grader::ToolOrder { .. } => "tool_order",
            Grader::ToolUsed { .. } => "tool_used",
            Grader::FileExists { .. } => "file_exists",
            Grader::Llm { .. } => "llm",
            Grader::Baseline { .. } => "baseline",
        }
    }

    pub fn arm(&self) -> Option<&str> {
        match self {
            Grader::Regex { arm, .. }
            | Grader::ToolOrder { arm, .. }
            | Grader::ToolUsed { arm, .. }
            | Grader::FileExists { arm, .. }
            | Grader::Llm { arm, .. }
            | Grader::Baseline { arm, .. } => arm.as_deref(),
        }
    }
}

/// A case found on disk: its directory, the file each grader came from, the case.
#[derive(Debug, Clone)]
pub struct Found {
    pub dir: PathBuf,
    /// The directory path below the eval dir (`/`-joined): the case's id.
    pub rel: String,
    pub case: Case,
    /// Grader name → the file it came from (for error messages).
    pub grader_files: BTreeMap<String, PathBuf>,
}

/// Every case directory below `eval_dir`, sorted by path.
pub fn discover(eval_dir: &Path) -> Result<Vec<PathBuf>, Problem> {
    let mut out = Vec::new();
    walk(eval_dir, &mut out, 0)?;
    out.sort();
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) -> Result<(), Problem> {
    if depth > 8 {
        return Ok(());
    }
    let entries = std::fs::read_dir(dir).map_err(|e| Problem::io(dir, "read the directory", e))?;
    let is_case = ["case.yaml", "prompt.md", "graders"]
        .iter()
        .any(|n| dir.join(n).exists());
    if is_case && depth > 0 {
        out.push(dir.to_path_buf());
    }
    let mut subdirs: Vec<PathBuf> = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let skip = name.starts_with('.') || SKIPPED.contains(&name.as_str()) || name == "graders";
        if !skip && e.file_type().is_ok_and(|t| t.is_dir()) {
            subdirs.push(e.path());
        }
    }
    subdirs.sort();
    for d in subdirs {
        walk(&d, out, depth + 1)?;
    }
    Ok(())
}

/// Reads the case in `dir` (`rel` is its path below the eval dir).
pub fn read(dir: &Path, rel: &str) -> Result<Found, Problem> {
    let yaml_path = dir.join("case.yaml");
    let base = if yaml_path.exists() {
        let text = read_text(&yaml_path)?;
        let v: Value = serde_yaml_ng::from_str(&text).map_err(|e| {
            Problem::new(
                &yaml_path,
                "(root)",
                format!("not YAML: {e}"),
                "fix the YAML syntax",
            )
        })?;
        if !v.is_object() {
            return Err(Problem::new(
                &yaml_path,
                "(root)",
                "case.yaml must be a YAML object",
                "write the case as a mapping",
            ));
        }
        Some(v)
    } else {
        None
    };
    let mut obj = match base {
        Some(Value::Object(m)) => m,
        _ => {
            let mut m = Map::new();
            m.insert("schema_version".into(), "1.1".into());
            m.insert("name".into(), basename(dir).into());
            m
        }
    };
    let mut grader_files = BTreeMap::new();
    merge_prose(dir, &mut obj, &mut grader_files)?;
    let at = if yaml_path.exists() {
        yaml_path.clone()
    } else {
        dir.join("prompt.md")
    };
    let case: Case = serde_json::from_value(Value::Object(obj)).map_err(|e| {
        Problem::new(
            &at,
            "(case)",
            format!("invalid case: {e}"),
            "use the keys `claude plugin eval` documents (see docs/plugin-eval.md)",
        )
    })?;
    check(&case, &at)?;
    Ok(Found {
        dir: dir.to_path_buf(),
        rel: rel.to_owned(),
        case,
        grader_files,
    })
}

/// `prompt.md` over the case, `graders/*.md` appended (first-party `Us`).
fn merge_prose(
    dir: &Path,
    obj: &mut Map<String, Value>,
    grader_files: &mut BTreeMap<String, PathBuf>,
) -> Result<(), Problem> {
    merge_prompt_md(dir, obj)?;
    let mut graders: Vec<Value> = match obj.remove("graders") {
        Some(Value::Array(a)) => a,
        _ => Vec::new(),
    };
    for g in &graders {
        if let Some(n) = g.get("name").and_then(Value::as_str) {
            grader_files.insert(n.to_owned(), dir.join("case.yaml"));
        }
    }
    for file in grader_mds(dir)? {
        if let Some(g) = grader_md(&file)? {
            let name = g["name"].as_str().unwrap_or_default().to_owned();
            grader_files.insert(name, file.clone());
            graders.push(g);
        }
    }
    obj.insert("graders".into(), Value::Array(graders));
    Ok(())
}

/// `prompt.md`'s front matter over the case (top-level and execution
/// keys), its body as `execution.prompt`.
fn merge_prompt_md(dir: &Path, obj: &mut Map<String, Value>) -> Result<(), Problem> {
    let prompt_md = dir.join("prompt.md");
    let mut execution = match obj.remove("execution") {
        Some(Value::Object(m)) => m,
        Some(_) => {
            let at = dir.join("case.yaml");
            return Err(Problem::new(
                &at,
                "execution",
                "must be a mapping",
                "write execution: as a mapping",
            ));
        }
        None => Map::new(),
    };
    if prompt_md.exists() {
        let (fm, body) = front_matter(&prompt_md, &read_text(&prompt_md)?)?;
        for (k, v) in fm {
            if TOP_KEYS.contains(&k.as_str()) {
                obj.insert(k, v);
            } else if EXECUTION_KEYS.contains(&k.as_str()) {
                execution.insert(k, v);
            } else {
                let known = [TOP_KEYS, EXECUTION_KEYS].concat().join(", ");
                return Err(Problem::new(
                    &prompt_md,
                    &k,
                    "unknown front-matter key",
                    format!("use one of: {known}"),
                ));
            }
        }
        let body = body.trim();
        if !body.is_empty() {
            execution.insert("prompt".into(), body.into());
        }
    }
    obj.insert("execution".into(), Value::Object(execution));
    Ok(())
}

/// One `graders/<name>.md` as a grader object (named after the file, the
/// body filling `criteria` / `pattern`); `None` without front matter, which
/// the first-party loader skips too.
fn grader_md(file: &Path) -> Result<Option<Value>, Problem> {
    let text = read_text(file)?;
    if !text.trim_start_matches('\u{feff}').starts_with("---") {
        return Ok(None);
    }
    let (mut fm, body) = front_matter(file, &text)?;
    let ty = fm
        .get("type")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| {
            Problem::new(
                file,
                "type",
                "front matter must include `type:`",
                "add type: regex | tool_order | tool_used | file_exists | llm | baseline",
            )
        })?;
    let fill = match ty.as_str() {
        "llm" | "baseline" => Some("criteria"),
        "regex" => Some("pattern"),
        _ => None,
    };
    if let Some(field) = fill
        && !fm.contains_key(field)
        && !body.trim().is_empty()
    {
        fm.insert(field.into(), body.trim().into());
    }
    let mut g = Map::new();
    g.insert("name".into(), basename(&file.with_extension("")).into());
    g.extend(fm);
    Ok(Some(Value::Object(g)))
}

fn grader_mds(dir: &Path) -> Result<Vec<PathBuf>, Problem> {
    let g = dir.join("graders");
    if !g.is_dir() {
        return Ok(Vec::new());
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&g)
        .map_err(|e| Problem::io(&g, "read the directory", e))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md") && p.is_file())
        .collect();
    files.sort();
    Ok(files)
}

/// Splits `---\nYAML\n---\n` off `text`; no front matter gives an empty map.
pub fn front_matter(path: &Path, text: &str) -> Result<(Map<String, Value>, String), Problem> {
    let text = text.trim_start_matches('\u{feff}').replace("\r\n", "\n");
    let Some(rest) = text.strip_prefix("---\n") else {
        return Ok((Map::new(), text));
    };
    let (yaml, body) = match rest.find("\n---\n") {
        Some(i) => (&rest[..i], &rest[i + 5..]),
        None if rest.ends_with("\n---") => (&rest[..rest.len() - 4], ""),
        None if rest.starts_with("---\n") => ("", &rest[4..]),
        None => {
            return Err(Problem::new(
                path,
                "(front matter)",
                "unterminated front matter (an opening `---` with no closing `---`)",
                "close it with a `---` line",
            ));
        }
    };
    let v: Value = serde_yaml_ng::from_str(yaml).map_err(|e| {
        Problem::new(
            path,
            "(front matter)",
            format!("invalid YAML: {e}"),
            "fix the YAML between the `---` lines",
        )
    })?;
    match v {
        Value::Null => Ok((Map::new(), body.to_owned())),
        Value::Object(m) => Ok((m, body.to_owned())),
        _ => Err(Problem::new(
            path,
            "(front matter)",
            "must be a YAML mapping",
            "write key: value lines",
        )),
    }
}

/// The first-party loader's own checks beyond the schema.
fn check(case: &Case, at: &Path) -> Result<(), Problem> {
    let major = case
        .schema_version
        .split('.')
        .next()
        .unwrap_or("")
        .parse::<u32>();
    match major {
        Ok(1) | Ok(0) => {}
        _ => {
            return Err(Problem::new(
                at,
                "schema_version",
                format!(
                    "\"{}\" is not a version this importer reads (1.x)",
                    case.schema_version
                ),
                "set schema_version: \"1.1\"",
            ));
        }
    }
    if case
        .execution
        .prompt
        .as_deref()
        .is_none_or(|p| p.trim().is_empty())
    {
        return Err(Problem::new(
            at,
            "execution.prompt",
            "the case has no prompt",
            "write the prompt as the body of prompt.md (or execution.prompt in case.yaml)",
        ));
    }
    if case.graders.is_empty() {
        return Err(Problem::new(
            at,
            "graders",
            "the case has no grader",
            "add a graders/<name>.md with a `type:` front matter",
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for g in &case.graders {
        if !seen.insert(g.name()) {
            return Err(Problem::new(
                at,
                "graders",
                format!("duplicate grader name \"{}\"", g.name()),
                "give every grader its own name",
            ));
        }
    }
    if !(1..=50).contains(&case.runs) {
        return Err(Problem::new(at, "runs", "must be 1..50", "set runs: 3"));
    }
    Ok(())
}

pub fn read_text(path: &Path) -> Result<String, Problem> {
    std::fs::read_to_string(path).map_err(|e| Problem::io(path, "read", e))
}

pub fn basename(p: &Path) -> String {
    p.file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}
