//! `mocks/<server>/<tool>.md` (fixed responders) → the stand-in server a
//! recording runs: `mock_server.py` (stdlib Python, the shape of the bundled
//! `skills/price-check/mcp` server) over one JSON file per server. The
//! recording captures its traffic like any live server's, so `reel rerun`
//! serves the tape frozen. Layers from the eval dir down to the case dir,
//! the nearer `<tool>.md` winning (first-party `Ys`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::Problem;
use super::case::{front_matter, read_text};

/// The server program every imported mock runs.
pub const SERVER_PY: &str = include_str!("mock_server.py");

/// One mocked server: its tools' canned answers, and its saved listing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Server {
    /// Tool → (`text`, `isError`).
    pub tools: BTreeMap<String, (String, bool)>,
    /// `_tools.json`'s entries, by tool.
    pub listing: BTreeMap<String, Value>,
}

impl Server {
    /// The JSON file `mock_server.py` reads.
    pub fn to_json(&self, name: &str) -> Value {
        let mut tools = Map::new();
        for (t, (text, is_error)) in &self.tools {
            let mut spec = self.listing.get(t).cloned().unwrap_or_else(
                || json!({"name": t, "description": "", "inputSchema": {"type": "object"}}),
            );
            spec["answer"] = json!({"text": text, "isError": is_error});
            tools.insert(t.clone(), spec);
        }
        json!({"server": name, "tools": tools})
    }
}

/// The mocks for a case: every `<dir>/mocks` from `eval_dir` down to `case_dir`.
pub fn read(eval_dir: &Path, case_dir: &Path) -> Result<BTreeMap<String, Server>, Problem> {
    let mut layers: Vec<PathBuf> = Vec::new();
    let mut d = case_dir.to_path_buf();
    loop {
        layers.push(d.join("mocks"));
        if d == eval_dir || !d.starts_with(eval_dir) {
            break;
        }
        match d.parent() {
            Some(p) => d = p.to_path_buf(),
            None => break,
        }
    }
    layers.reverse();
    let mut servers: BTreeMap<String, Server> = BTreeMap::new();
    for layer in layers.iter().filter(|l| l.is_dir()) {
        for (name, dir) in subdirs(layer)? {
            let server = servers.entry(name.clone()).or_default();
            read_server(&dir, &name, server)?;
        }
    }
    servers.retain(|_, s| !s.tools.is_empty());
    Ok(servers)
}

fn subdirs(dir: &Path) -> Result<Vec<(String, PathBuf)>, Problem> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)
        .map_err(|e| Problem::io(dir, "read the directory", e))?
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !e.path().is_dir() {
            continue;
        }
        if !plain(&name) {
            return Err(Problem::new(
                &e.path(),
                "(directory name)",
                "not a tool-name segment",
                "name the directory after the server (letters, digits, _ and - only)",
            ));
        }
        out.push((name, e.path()));
    }
    out.sort();
    Ok(out)
}

fn plain(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn read_server(dir: &Path, name: &str, server: &mut Server) -> Result<(), Problem> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Problem::io(dir, "read the directory", e))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    for f in files {
        let file = f
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if file == "_tools.json" {
            read_listing(&f, server)?;
        } else if file == "_server.md" {
            return Err(Problem::new(
                &f,
                "type",
                "an agent responder (a model plays the server) has no token-free equivalent",
                "answer each tool with a fixed <tool>.md",
            ));
        } else if let Some(tool) = file.strip_suffix(".md") {
            if !plain(tool) {
                return Err(Problem::new(
                    &f,
                    "(file name)",
                    "not a tool-name segment",
                    "name the file after the tool, e.g. list_issues.md",
                ));
            }
            let answer = read_responder(&f)?;
            server.tools.insert(tool.to_owned(), answer);
        }
    }
    let _ = name;
    Ok(())
}

/// A fixed responder's answer; every other form is refused.
fn read_responder(f: &Path) -> Result<(String, bool), Problem> {
    let (fm, body) = front_matter(f, &read_text(f)?)?;
    let mut is_error = false;
    for (k, v) in &fm {
        match (k.as_str(), v) {
            ("type", Value::String(t)) if t == "fixed" => {}
            ("type", _) => {
                return Err(Problem::new(
                    f,
                    "type",
                    "an agent responder (a model plays the server) has no token-free equivalent",
                    "write the canned answer as the body, type: fixed",
                ));
            }
            ("error", Value::Bool(b)) => is_error = *b,
            ("expect", _) => {
                return Err(Problem::new(
                    f,
                    "expect",
                    "an input guard is not served by reel's stand-in",
                    "drop expect:, and grade the call with a tool_used grader",
                ));
            }
            (other, _) => {
                return Err(Problem::new(
                    f,
                    "(front matter)",
                    format!("`{other}` is not a fixed responder's key"),
                    "use type: fixed and error: true|false",
                ));
            }
        }
    }
    let text = body.trim_start_matches('\n').trim_end().to_owned();
    if text.is_empty() {
        return Err(Problem::new(
            f,
            "(body)",
            "the canned answer is empty",
            "write the tool's result as the file's body",
        ));
    }
    Ok((text, is_error))
}

fn read_listing(f: &Path, server: &mut Server) -> Result<(), Problem> {
    let v: Value = serde_json::from_str(&read_text(f)?).map_err(|e| {
        Problem::new(
            f,
            "(root)",
            format!("not JSON: {e}"),
            "save the server's tools/list response",
        )
    })?;
    let v = v.get("result").cloned().unwrap_or(v);
    let Some(tools) = v.get("tools").and_then(Value::as_array) else {
        return Err(Problem::new(
            f,
            "tools",
            "expected {\"tools\": [{\"name\", \"description\", \"inputSchema\"}]}",
            "save the server's tools/list response",
        ));
    };
    for t in tools {
        if let Some(n) = t.get("name").and_then(Value::as_str) {
            let spec = json!({
                "name": n,
                "description": t.get("description").cloned().unwrap_or_else(|| "".into()),
                "inputSchema": t.get("inputSchema").cloned().unwrap_or_else(|| json!({"type": "object"})),
            });
            server.listing.insert(n.to_owned(), spec);
        }
    }
    Ok(())
}
