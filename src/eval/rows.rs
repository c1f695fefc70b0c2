//! What an eval persists: the manifest (`eval.json`: arms, axis, reps,
//! seed, policy) and one row per trial (`runs.jsonl`). Everything a report
//! says is derived from these two; rows from several directories (CI
//! shards of one manifest) merge.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::policy::Policy;

pub const MANIFEST_FILE: &str = "eval.json";
pub const ROWS_FILE: &str = "runs.jsonl";

/// The treatment axis an eval moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Axis {
    Skill,
    Runtime,
}

/// What an arm runs with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The scenario without its local skills.
    NoSkill,
    /// A skill directory.
    Dir(PathBuf),
    /// `git:REF:PATH`: the tree at `REF:PATH` of the current repository.
    Git { reference: String, path: String },
    /// `runtime:agent=…,model=…,script=…`.
    Runtime {
        agent: Option<String>,
        model: Option<String>,
        script: Option<PathBuf>,
    },
}

impl Source {
    /// Parses an arm source (`none`, `git:REF:PATH`, `runtime:…`, a directory).
    pub fn parse(text: &str) -> Result<Source, String> {
        if text == "none" {
            return Ok(Source::NoSkill);
        }
        if let Some(rest) = text.strip_prefix("git:") {
            let (reference, path) = rest
                .split_once(':')
                .filter(|(r, p)| !r.is_empty() && !p.is_empty())
                .ok_or_else(|| {
                    format!("`{text}`: write `git:REF:PATH`, e.g. `git:main:skills/x`")
                })?;
            return Ok(Source::Git {
                reference: reference.into(),
                path: path.into(),
            });
        }
        if let Some(rest) = text.strip_prefix("runtime:") {
            let (mut agent, mut model, mut script) = (None, None, None);
            for part in rest.split(',').filter(|p| !p.is_empty()) {
                match part.split_once('=') {
                    Some(("agent", v)) => agent = Some(v.to_owned()),
                    Some(("model", v)) => model = Some(v.to_owned()),
                    Some(("script", v)) => script = Some(PathBuf::from(v)),
                    _ => {
                        return Err(format!(
                            "`{text}`: `{part}` is not agent=VERSION|PATH, model=NAME or \
                                script=PATH"
                        ));
                    }
                }
            }
            if agent.is_none() && model.is_none() && script.is_none() {
                return Err(format!(
                    "`{text}`: a runtime profile names agent=, model= or script="
                ));
            }
            return Ok(Source::Runtime {
                agent,
                model,
                script,
            });
        }
        Ok(Source::Dir(PathBuf::from(text)))
    }

    pub fn axis(&self) -> Axis {
        match self {
            Source::Runtime { .. } => Axis::Runtime,
            _ => Axis::Skill,
        }
    }
}

/// One arm as given: `NAME=SOURCE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Arm {
    pub name: String,
    pub source: String,
}

/// The plan every row of an eval belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub format: u32,
    pub axis: Axis,
    /// Baseline (A) first, candidate (B) second.
    pub arms: [Arm; 2],
    /// Scenario files, as given.
    pub scenarios: Vec<PathBuf>,
    pub reps: u64,
    pub seed: u64,
    pub policy: Policy,
    /// Each arm's identity when it ran (docs/eval.md, History): what makes
    /// two evals' arms "unchanged".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identities: Option<[String; 2]>,
}

impl Manifest {
    /// Checks a manifest: two distinct arm names, parseable sources, one
    /// axis moved, a usable policy.
    pub fn check(&self) -> Result<(), String> {
        let [a, b] = &self.arms;
        if a.name == b.name || a.name.is_empty() || b.name.is_empty() {
            return Err("the two arms need two different, non-empty names".into());
        }
        let (sa, sb) = (Source::parse(&a.source)?, Source::parse(&b.source)?);
        if sa.axis() != sb.axis() {
            return Err(format!(
                "arm `{}` moves the {:?} axis and arm `{}` the {:?} axis: an eval moves exactly \
                    one (compare skills under one runtime, or runtimes with one skill)",
                a.name,
                sa.axis(),
                b.name,
                sb.axis()
            )
            .to_lowercase());
        }
        if sa.axis() != self.axis {
            return Err(format!(
                "`axis` says {:?} but the arms move the other",
                self.axis
            ));
        }
        if self.reps == 0 {
            return Err("`reps` must be at least 1".into());
        }
        self.policy.check()
    }

    /// The arm named `name`: 0 for A, 1 for B.
    pub fn arm_index(&self, name: &str) -> Option<usize> {
        self.arms.iter().position(|a| a.name == name)
    }
}

/// How a trial ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Passed,
    Failed,
    /// The run could not be judged (agent crash, timeout, setup): counted
    /// as attempted, never as completed.
    Errored,
}

/// One assertion's result in one trial.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssertionResult {
    pub label: String,
    pub pass: bool,
}

impl AssertionResult {
    /// The rows of one trial's verdict: every assertion it evaluated — a
    /// judged `semantic_matches` (its verdict judged and frozen when the
    /// trial recorded) like any other, a multi-turn scenario's turn
    /// assertions as rows of their own (`turn N: …`, so the report compares
    /// the arms turn by turn) — but not the pseudo-assertions about the
    /// cassette itself (`source`).
    pub fn of_verdict(outcomes: &[crate::assert::AssertionOutcome]) -> Vec<AssertionResult> {
        use crate::replay::turns;
        (outcomes.iter())
            .filter(|a| turns::is_authored(a))
            .map(|a| AssertionResult {
                label: match turns::turn_of(a) {
                    Some(turn) => format!("{turn}: {}", a.assertion),
                    None => a.assertion.to_string(),
                },
                pass: a.pass,
            })
            .collect()
    }
}

/// One trial: `runs.jsonl` holds one per line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    pub scenario: String,
    pub arm: String,
    pub rep: u64,
    pub seed: u64,
    pub outcome: Outcome,
    #[serde(default)]
    pub assertions: Vec<AssertionResult>,
    /// Recorded usage of a live trial; 0 for a scripted one.
    pub cost_usd: Option<f64>,
    pub duration_ms: u64,
    /// An errored trial's first cause, outside both arms (agent missing,
    /// API down, sandbox refused), in the words `record` uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A failed trial's first cause, in the words `record` uses: the run's
    /// error (the agent's exit and last stderr lines), the scripted model's
    /// unmet `expect:`, or the first failing assertion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// The trial ran against a scripted model: no token was billed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub scripted: bool,
}

/// A manifest and the rows of every directory given, merged.
#[derive(Debug)]
pub struct Loaded {
    pub manifest: Manifest,
    pub rows: Vec<Row>,
    /// The earlier evals' history lines the first directory snapshotted.
    pub history: Vec<super::history::Line>,
}

/// Reads `eval.json` and `runs.jsonl` of each directory; every directory
/// must hold the same manifest, and no trial may appear twice.
pub fn load(dirs: &[PathBuf]) -> Result<Loaded, String> {
    let mut manifest: Option<Manifest> = None;
    let mut rows = Vec::new();
    let mut seen = BTreeSet::new();
    for dir in dirs {
        let m = read_manifest(dir)?;
        match &manifest {
            Some(first) if *first != m => {
                return Err(format!(
                    "`{}` holds another eval's manifest than `{}`: only shards of one eval merge",
                    dir.join(MANIFEST_FILE).display(),
                    dirs[0].join(MANIFEST_FILE).display()
                ));
            }
            _ => manifest = Some(m),
        }
        for (line, row) in read_rows(dir)? {
            if !seen.insert((row.scenario.clone(), row.arm.clone(), row.rep)) {
                return Err(format!(
                    "`{}` line {line}: trial {} / {} / rep {} appears twice",
                    dir.join(ROWS_FILE).display(),
                    row.scenario,
                    row.arm,
                    row.rep
                ));
            }
            rows.push(row);
        }
    }
    let manifest = manifest.ok_or("no eval directory given")?;
    let history = super::history::read(&dirs[0].join(super::history::SNAPSHOT_FILE))?;
    for r in &rows {
        if manifest.arm_index(&r.arm).is_none() || r.rep >= manifest.reps {
            return Err(format!(
                "a row names arm `{}` rep {}, which the manifest does not plan",
                r.arm, r.rep
            ));
        }
    }
    Ok(Loaded {
        manifest,
        rows,
        history,
    })
}

fn read_manifest(dir: &Path) -> Result<Manifest, String> {
    let path = dir.join(MANIFEST_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "read `{}`: {e} (is this an eval directory?)",
            path.display()
        )
    })?;
    let m: Manifest = serde_json::from_str(&text)
        .map_err(|e| format!("`{}`: {e} (see schema/eval-report.json)", path.display()))?;
    m.check()
        .map_err(|e| format!("`{}`: {e}", path.display()))?;
    Ok(m)
}

fn read_rows(dir: &Path) -> Result<Vec<(usize, Row)>, String> {
    let path = dir.join(ROWS_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("read `{}`: {e}", path.display())),
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .map(|r| (i + 1, r))
                .map_err(|e| format!("`{}` line {}: {e}", path.display(), i + 1))
        })
        .collect()
}

/// Writes the manifest and the rows of one directory (atomically each).
pub fn write(dir: &Path, manifest: &Manifest, rows: &[Row]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let json = serde_json::to_string_pretty(manifest).map_err(std::io::Error::other)?;
    crate::atomic::write_atomic(&dir.join(MANIFEST_FILE), format!("{json}\n").as_bytes())?;
    let mut lines = String::new();
    for r in rows {
        lines.push_str(&serde_json::to_string(r).map_err(std::io::Error::other)?);
        lines.push('\n');
    }
    crate::atomic::write_atomic(&dir.join(ROWS_FILE), lines.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(a: &str, b: &str) -> Manifest {
        Manifest {
            format: 1,
            axis: Source::parse(a).unwrap().axis(),
            arms: [
                Arm {
                    name: "a".into(),
                    source: a.into(),
                },
                Arm {
                    name: "b".into(),
                    source: b.into(),
                },
            ],
            scenarios: vec![],
            reps: 3,
            seed: 0,
            policy: Policy::default(),
            identities: None,
        }
    }

    #[test]
    fn a_turns_assertions_are_rows_of_their_own_and_pseudo_ones_are_not() {
        let outcome = |source: Option<&str>, pass: bool| crate::assert::AssertionOutcome {
            assertion: serde_json::json!({"tool_called": "Bash"}),
            pass,
            message: String::new(),
            evidence: None,
            source: source.map(str::to_owned),
            judge: None,
        };
        let rows = AssertionResult::of_verdict(&[
            outcome(None, true),
            outcome(Some("turn 2"), false),
            outcome(Some("staleness"), false),
        ]);
        let labels: Vec<(&str, bool)> = rows.iter().map(|r| (r.label.as_str(), r.pass)).collect();
        assert_eq!(
            labels,
            [
                (r#"{"tool_called":"Bash"}"#, true),
                (r#"turn 2: {"tool_called":"Bash"}"#, false)
            ]
        );
    }

    #[test]
    fn a_manifest_moving_two_axes_is_refused() {
        let e = manifest("skills/x", "runtime:agent=2.1.0")
            .check()
            .unwrap_err();
        assert!(e.contains("exactly one"), "{e}");
        manifest("none", "git:main:skills/x").check().unwrap();
        manifest("runtime:model=m1", "runtime:script=s.yaml")
            .check()
            .unwrap();
        assert!(Source::parse("runtime:colour=red").is_err());
        assert!(Source::parse("git:main").is_err());
    }
}
