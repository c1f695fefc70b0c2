//! The layering rule of the run pipeline (ARCHITECTURE.md, issue 41): the
//! one live run (`src/run/`) sits below every command that starts an agent,
//! so nothing in it names `record`, `rerun`, `eval`, `matrix` or `cli` — a
//! grep over its code lines (comments aside), which fails naming the file,
//! the line and the module it reached up to.

use std::path::{Path, PathBuf};

use crate::support::repo;

/// The modules above the run pipeline.
const ABOVE: [&str; 5] = ["record", "rerun", "eval", "matrix", "cli"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `line` reaches `module` by path: `crate::module`, or `module` inside a
/// `use crate::{…}` group.
fn reaches(line: &str, module: &str) -> bool {
    let code = line.split("//").next().unwrap_or("");
    let named = |text: &str, prefix: &str| {
        text.match_indices(&format!("{prefix}{module}"))
            .any(|(at, m)| {
                let rest = &text[at + m.len()..];
                !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_')
            })
    };
    named(code, "crate::")
        || (code.contains("use crate::{") && (named(code, "{") || named(code, ", ")))
}

/// Each code line of the files under `src/<dir>` that reaches one of
/// `above`, as `file:line: reaches `module`: code`.
fn reaches_up(dir: &str, above: &[&str], files: &mut Vec<PathBuf>) -> Vec<String> {
    rust_files(&repo().join("src").join(dir), files);
    let mut found = Vec::new();
    for file in files.iter() {
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let trimmed = line.trim_start();
            if trimmed.starts_with("//") {
                continue;
            }
            for module in above {
                if reaches(line, module) {
                    found.push(format!(
                        "{}:{}: reaches `{module}`: {trimmed}",
                        file.display(),
                        n + 1
                    ));
                }
            }
        }
    }
    found
}

#[test]
fn the_run_pipeline_imports_nothing_above_it() {
    let mut files = Vec::new();
    let found = reaches_up("run", &ABOVE, &mut files);
    assert!(
        files.len() >= 8,
        "src/run/ holds the pipeline's stages: {files:?}"
    );
    assert!(
        found.is_empty(),
        "src/run/ must not import the commands above it (move what it needs down into \
         run/ or a lower module):\n{}",
        found.join("\n")
    );
}

/// Issue 45: the one masker sits below everything that masks with it
/// (`rerun`, `diff`, `judge`, `html`), and `judge` masks the baseline
/// trajectory through it rather than reaching up into `diff` or `rerun`.
#[test]
fn the_masker_sits_below_what_masks_with_it() {
    let mut files = Vec::new();
    let found = reaches_up(
        "mask",
        &["rerun", "diff", "judge", "html", "replay", "record", "cli"],
        &mut files,
    );
    assert!(files.len() >= 3, "src/mask/: {files:?}");
    assert!(
        found.is_empty(),
        "src/mask/ reaches up:\n{}",
        found.join("\n")
    );
    let mut files = Vec::new();
    let found = reaches_up("judge", &["rerun", "diff", "html", "replay"], &mut files);
    assert!(
        found.is_empty(),
        "src/judge/ must mask through `crate::mask`, not the modules above it:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_grep_catches_a_reach_up() {
    assert!(reaches("use crate::record::RecordOptions;", "record"));
    assert!(reaches(
        "    let x = crate::rerun::paths::slug(s);",
        "rerun"
    ));
    assert!(reaches("use crate::{eval, model};", "eval"));
    assert!(reaches("use crate::{model, matrix::Cell};", "matrix"));
    assert!(!reaches("use crate::recording::X;", "record"));
    assert!(!reaches("let a = 1; // crate::rerun is above", "rerun"));
}

/// Issue 41: only `agent` (the process group) and `run` (the live run, and
/// `run::handshake` for doctor) start the agent; `mcp::sdk` starts SDK MCP
/// servers, not the agent. `doctor` goes through `run::handshake`.
#[test]
fn only_agent_and_run_start_the_agent() {
    let mut files = Vec::new();
    rust_files(&repo().join("src"), &mut files);
    let src = repo().join("src");
    let allowed = |rel: &Path| {
        rel.starts_with("agent") || rel.starts_with("run") || rel == Path::new("mcp/sdk.rs")
    };
    let mut found = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap();
        if allowed(rel) {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains("ProcessGroup::spawn") {
                found.push(format!("src/{}:{}: {}", rel.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "start the agent through `crate::run` (or `crate::agent::run_to_end` for a one-shot \
         command), not a private spawn:\n{}",
        found.join("\n")
    );
    let doctor = std::fs::read_to_string(src.join("doctor.rs")).unwrap();
    assert!(
        doctor.contains("crate::run::handshake::handshake("),
        "src/doctor.rs: the handshake must go through `run::handshake`"
    );
}
