//! `claude plugin eval` suites in and out of reel (docs/plugin-eval.md).
//!
//! Import reads a plugin's eval cases the way Claude Code 2.1.332 does and
//! writes, per case, a reel scenario whose assertions mean what its graders
//! mean (stricter at most, never laxer; refused otherwise), a session with
//! the plugin's skills and its eval's MCP mocks as a stand-in server the
//! recording captures (the rerun serves it frozen), earlier `turns:` from a
//! history file, and a `reel eval` plan for `runs` and the no-plugin arm.
//! Export writes a scenario back as a case, listing what has no grader.
//!
//! Files: `case` (discovery, prose + case.yaml, the strict schema),
//! `graders` (grader ↔ assertion, both ways), `mocks` (fixed responders →
//! the stand-in server; `mock_server.py`), `history` (transcript → user
//! turns), `scenario` (one case → its files), `write` (byte-identical files
//! left alone, the rest written atomically), `export` (scenario → case).
//! Not here: recording, judging, the eval itself (the imported files are
//! ordinary scenarios for `record`, `replay`, `rerun`, `eval`).

pub mod case;
pub mod export;
pub mod graders;
pub mod history;
pub mod mocks;
pub mod scenario;
pub mod write;

use std::path::{Path, PathBuf};

use serde::Serialize;

/// Bad input: the file, the field, what is wrong and how to fix it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Problem {
    pub file: String,
    pub field: String,
    pub message: String,
    pub fix: String,
}

impl Problem {
    pub fn new(
        file: &Path,
        field: &str,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Problem {
            file: file.display().to_string(),
            field: field.to_owned(),
            message: message.into(),
            fix: fix.into(),
        }
    }

    pub fn io(file: &Path, what: &str, e: std::io::Error) -> Self {
        Problem::new(
            file,
            "(file)",
            format!("cannot {what}: {e}"),
            "check the path and its permissions",
        )
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {}: {} (fix: {})",
            self.file, self.field, self.message, self.fix
        )
    }
}

/// One grader's fate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GraderRow {
    pub name: String,
    pub kind: String,
    /// `mapped` or `refused`.
    pub status: &'static str,
    /// The assertion it became.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assertion: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl GraderRow {
    fn mapped(g: &case::Grader, m: &graders::Mapped) -> Self {
        GraderRow {
            name: g.name().to_owned(),
            kind: g.kind().to_owned(),
            status: "mapped",
            assertion: Some(m.assertion.clone()),
            note: m.note.map(str::to_owned),
        }
    }

    fn refused(g: &case::Grader, r: &graders::Refusal) -> Self {
        GraderRow {
            name: g.name().to_owned(),
            kind: g.kind().to_owned(),
            status: "refused",
            assertion: None,
            note: Some(format!("{}: {}", r.field, r.reason)),
        }
    }
}

/// One case's result.
#[derive(Debug, Clone, Serialize)]
pub struct CaseReport {
    /// The case directory below the eval dir.
    pub case: String,
    /// The scenario written (`None` when refused).
    pub scenario: Option<String>,
    /// Files written, and files left as they were (byte-identical).
    pub written: Vec<String>,
    pub unchanged: Vec<String>,
    pub graders: Vec<GraderRow>,
    pub problems: Vec<Problem>,
    pub notes: Vec<String>,
}

/// What an import did.
#[derive(Debug, Clone, Serialize)]
pub struct ImportReport {
    pub plugin: String,
    pub out: String,
    pub cases: Vec<CaseReport>,
}

impl ImportReport {
    pub fn ok(&self) -> bool {
        !self.cases.is_empty() && self.cases.iter().all(|c| c.problems.is_empty())
    }
}

/// The eval dir of a plugin: `experimental.evals` of its manifest, else `evals/`.
pub fn eval_dir(plugin: &Path) -> PathBuf {
    let manifest = plugin.join(".claude-plugin").join("plugin.json");
    let declared = std::fs::read_to_string(manifest)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| {
            v.pointer("/experimental/evals")
                .and_then(|e| e.as_str())
                .map(str::to_owned)
        })
        .filter(|d| crate::paths::stays_inside(d));
    plugin.join(declared.unwrap_or_else(|| "evals".into()))
}

/// The plugin's name: its manifest's `name`, else the directory name.
pub fn plugin_name(plugin: &Path) -> String {
    let manifest = plugin.join(".claude-plugin").join("plugin.json");
    std::fs::read_to_string(manifest)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v.get("name").and_then(|n| n.as_str()).map(str::to_owned))
        .unwrap_or_else(|| case::basename(&crate::paths::resolve_cwd(plugin)))
}

/// Imports every case of `plugin` into `out`. A refused case is reported
/// (its problems) and not written; the other cases still are. `Err` only
/// when the plugin itself cannot be read.
pub fn import(plugin_dir: &Path, out: &Path, drop_unmapped: bool) -> Result<ImportReport, Problem> {
    let evals = eval_dir(plugin_dir);
    if !evals.is_dir() {
        return Err(Problem::new(
            &evals,
            "(directory)",
            "no eval directory",
            "put the cases under evals/<case>/ (prompt.md + graders/*.md, or case.yaml)",
        ));
    }
    let skills = skill_dirs(plugin_dir)?;
    let plugin = scenario::Plugin {
        dir: plugin_dir,
        eval_dir: &evals,
        name: plugin_name(plugin_dir),
        skills,
    };
    let dirs = case::discover(&evals)?;
    if dirs.is_empty() {
        return Err(Problem::new(
            &evals,
            "(directory)",
            "holds no case",
            "add evals/<case>/prompt.md and evals/<case>/graders/<grader>.md",
        ));
    }
    let mut cases = Vec::new();
    for dir in dirs {
        let rel = crate::paths::relative_posix(&dir, &evals);
        cases.push(import_case(&dir, &rel, &plugin, out, drop_unmapped));
    }
    Ok(ImportReport {
        plugin: plugin_dir.display().to_string(),
        out: out.display().to_string(),
        cases,
    })
}

fn import_case(
    dir: &Path,
    rel: &str,
    plugin: &scenario::Plugin<'_>,
    out: &Path,
    drop_unmapped: bool,
) -> CaseReport {
    let mut report = CaseReport {
        case: rel.to_owned(),
        scenario: None,
        written: vec![],
        unchanged: vec![],
        graders: vec![],
        problems: vec![],
        notes: vec![],
    };
    let found = match case::read(dir, rel) {
        Ok(f) => f,
        Err(p) => {
            report.problems.push(p);
            return report;
        }
    };
    let built = match scenario::build(&found, plugin, out, drop_unmapped) {
        Ok(b) => b,
        Err(problems) => {
            report.problems = problems;
            report.graders = found
                .case
                .graders
                .iter()
                .map(|g| match graders::map(g) {
                    Ok(m) => GraderRow::mapped(g, &m),
                    Err(r) => GraderRow::refused(g, &r),
                })
                .collect();
            return report;
        }
    };
    report.graders = built.graders.clone();
    report.notes = built.notes.clone();
    match write::all(&built.files) {
        Ok(w) => {
            report.scenario = Some(built.scenario.display().to_string());
            report.written = w.written.iter().map(|p| p.display().to_string()).collect();
            report.unchanged = w
                .unchanged
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            if let Err(p) = check_loads(&built.scenario) {
                report.problems.push(p);
            }
        }
        Err(p) => report.problems.push(p),
    }
    report
}

/// The written scenario must load as reel loads it (a mapping bug is ours,
/// and said as such).
fn check_loads(scenario: &Path) -> Result<(), Problem> {
    crate::scenario::Scenario::load_authored(scenario)
        .map(|_| ())
        .map_err(|e| {
            Problem::new(
                scenario,
                "(scenario)",
                format!("the imported scenario does not load: {e}"),
                "report this as a reel bug, with the case",
            )
        })
}

/// The plugin's `skills/<name>/` directories (each with a SKILL.md), sorted.
pub fn skill_dirs(plugin: &Path) -> Result<Vec<PathBuf>, Problem> {
    let skills = plugin.join("skills");
    if !skills.is_dir() {
        return Ok(Vec::new());
    }
    let mut out: Vec<PathBuf> = std::fs::read_dir(&skills)
        .map_err(|e| Problem::io(&skills, "read the directory", e))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("SKILL.md").is_file())
        .collect();
    out.sort();
    Ok(out)
}
