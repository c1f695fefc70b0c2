//! `artifact_json.schema: {file: <path>}`: the JSON Schema read from a file
//! beside the scenario and inlined into the assertion at load, so the frozen
//! scenario (and every cassette recorded from it) carries the schema itself
//! and replay never needs the file (test/artifact-json-schema.test.ts,
//! "{file:} is inlined at load").

use std::path::{Path, PathBuf};

use serde_json::Value;

/// A schema file larger than this is refused (a schema is hand-written).
const MAX_SCHEMA_FILE_BYTES: u64 = 1024 * 1024;

/// Replaces every `artifact_json.schema: {file: …}` in `assert` with the
/// parsed file. `scenario` is the scenario file's path; a relative `file`
/// resolves against its directory and must stay inside the scenario's tree
/// (its repository, else its directory).
pub(super) fn inline_schema_files(
    assert: &mut [Value],
    scenario: &Path,
) -> Result<(), (String, Option<String>)> {
    for (i, item) in assert.iter_mut().enumerate() {
        let Some(schema) = item
            .get_mut("artifact_json")
            .and_then(|aj| aj.get_mut("schema"))
        else {
            continue;
        };
        let Some(file) = file_reference(schema) else {
            continue;
        };
        let at = format!("assert[{i}].artifact_json.schema.file");
        *schema =
            read_schema(&file, scenario).map_err(|(why, hint)| (format!("{at}: {why}"), hint))?;
    }
    Ok(())
}

/// Replaces every `semantic_matches.baseline_transcript: FILE` in `assert`
/// with `{file, text}`, the file read beside the scenario as a schema file is
/// (inside the scenario's tree, at most 1 MiB), so the frozen scenario carries
/// the baseline and replay, regrade and export never need the file. Already
/// `{file, text}` (a scenario frozen in a cassette) is left as it is.
pub(super) fn inline_baseline_transcripts(
    assert: &mut [Value],
    scenario: &Path,
) -> Result<(), (String, Option<String>)> {
    for (i, item) in assert.iter_mut().enumerate() {
        let Some(b) = item
            .get_mut("semantic_matches")
            .and_then(|sm| sm.get_mut("baseline_transcript"))
        else {
            continue;
        };
        let at = format!("assert[{i}].semantic_matches.baseline_transcript");
        let file = match &*b {
            Value::String(f) => f.clone(),
            Value::Object(o) if o.get("text").is_some_and(Value::is_string) => continue,
            _ => {
                return Err((
                    format!("{at}: expected the path of a transcript file"),
                    Some("name a .jsonl file relative to the scenario".into()),
                ));
            }
        };
        let text = read_text(&file, scenario, "baseline transcript")
            .map_err(|(why, hint)| (format!("{at}: {why}"), hint))?;
        *b = serde_json::json!({"file": file, "text": text});
    }
    Ok(())
}

/// `{file: "<path>"}` (the only key), or `None` for an inline schema.
fn file_reference(schema: &Value) -> Option<String> {
    let o = schema.as_object()?;
    if o.len() != 1 {
        return None;
    }
    o.get("file")?.as_str().map(str::to_owned)
}

fn read_schema(file: &str, scenario: &Path) -> Result<Value, (String, Option<String>)> {
    let text = read_text(file, scenario, "schema file")?;
    serde_json::from_str(&text).map_err(|e| {
        (
            format!("the schema file `{file}` is not valid JSON: {e}"),
            Some("a schema file holds one JSON Schema (draft 2020-12) as JSON".into()),
        )
    })
}

/// The text of `file` (relative to the scenario's directory, inside its tree,
/// a regular file of at most 1 MiB); `what` names it in errors.
fn read_text(file: &str, scenario: &Path, what: &str) -> Result<String, (String, Option<String>)> {
    let dir = scenario
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let target = dir.join(file);
    let unreadable = |e: std::io::Error| {
        (
            format!("cannot read the {what} `{file}` ({e})"),
            Some(format!(
                "a relative `file` resolves against the scenario's directory ({})",
                dir.display()
            )),
        )
    };
    let real = target.canonicalize().map_err(unreadable)?;
    let root = tree_root(dir);
    if !real.starts_with(&root) {
        return Err((
            format!(
                "the {what} `{file}` is outside the scenario's tree ({})",
                root.display()
            ),
            Some("keep such files in the repository beside the scenario".into()),
        ));
    }
    let meta = std::fs::metadata(&real).map_err(unreadable)?;
    if !meta.is_file() {
        return Err((format!("the {what} `{file}` is not a regular file"), None));
    }
    if meta.len() > MAX_SCHEMA_FILE_BYTES {
        return Err((
            format!(
                "the {what} `{file}` is {} bytes, over the {MAX_SCHEMA_FILE_BYTES}-byte limit",
                meta.len()
            ),
            None,
        ));
    }
    std::fs::read_to_string(&real).map_err(unreadable)
}

/// The repository holding `dir` (the nearest ancestor with `.git`), else
/// `dir` itself, as a real path.
fn tree_root(dir: &Path) -> PathBuf {
    let real = dir.canonicalize().unwrap_or_else(|_| dir.to_owned());
    real.ancestors()
        .find(|a| a.join(".git").exists())
        .map(Path::to_owned)
        .unwrap_or(real)
}
