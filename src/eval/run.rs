//! Running an eval: arms resolved once, trials planned interleaved (ABBA:
//! rep 0 runs A then B, rep 1 B then A, …, so drift hits both arms alike),
//! each trial one live run (`record::live::run`, sandboxed by default), `jobs`
//! at once, rows persisted after every trial, new trials stopped once the
//! budget is spent.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::rows::{AssertionResult, Manifest, Outcome, Row, Source};
use crate::record::{Prepared, RecordOptions, live};

/// One arm, resolved: what its trials run with.
pub struct ArmSetup {
    pub name: String,
    /// The local skills the session stages (`None`: the session's own).
    pub skills: Option<Vec<PathBuf>>,
    pub claude_program: Option<PathBuf>,
    pub model: Option<String>,
    pub script: Option<PathBuf>,
    /// A `git:` arm's extracted tree, removed with the setup.
    _tree: Option<tempfile::TempDir>,
}

/// Resolves an arm's source (installing an agent release when named).
pub fn resolve_arm(name: &str, source: &Source) -> Result<ArmSetup, crate::Error> {
    let mut arm = ArmSetup {
        name: name.to_owned(),
        skills: None,
        claude_program: None,
        model: None,
        script: None,
        _tree: None,
    };
    match source {
        Source::NoSkill => arm.skills = Some(Vec::new()),
        Source::Dir(d) if d.is_dir() => arm.skills = Some(vec![d.clone()]),
        Source::Dir(d) => {
            return Err(crate::Error::usage(format!(
                "eval: arm `{name}`: `{}` is not a directory",
                d.display()
            ))
            .with_hint("an arm is a skill directory, `git:REF:PATH`, `none` or `runtime:…`"));
        }
        Source::Git { reference, path } => {
            let (tree, dir) = extract_git(reference, path).map_err(|e| {
                crate::Error::usage(format!("eval: arm `{name}`: git:{reference}:{path}: {e}"))
            })?;
            arm.skills = Some(vec![dir]);
            arm._tree = Some(tree);
        }
        Source::Runtime {
            agent,
            model,
            script,
        } => {
            arm.model = model.clone();
            arm.script = script.clone();
            if let Some(a) = agent {
                arm.claude_program = Some(agent_program(name, a)?);
            }
        }
    }
    Ok(arm)
}

fn agent_program(arm: &str, agent: &str) -> Result<PathBuf, crate::Error> {
    if agent.contains('/') {
        let p = PathBuf::from(agent);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(crate::Error::usage(format!(
                "eval: arm `{arm}`: agent `{agent}` is not a file"
            )))
        };
    }
    let version = semver::Version::parse(agent).map_err(|e| {
        crate::Error::usage(format!("eval: arm `{arm}`: agent `{agent}`: {e}"))
            .with_hint("agent=X.Y.Z (a Claude Code release) or agent=PATH")
    })?;
    let cache = crate::agents::Cache::from_env();
    let installed = crate::agents::ensure(&cache, &version, &|l| crate::messages::debug(l))?;
    Ok(installed.program)
}

/// The tree at `REF:PATH` of the repository around the working directory,
/// written to a temp dir under PATH's base name (skills stage by base name).
fn extract_git(reference: &str, path: &str) -> Result<(tempfile::TempDir, PathBuf), String> {
    let repo = git2::Repository::discover(".").map_err(|e| e.message().to_owned())?;
    let object = repo
        .revparse_single(&format!("{reference}:{path}"))
        .map_err(|e| e.message().to_owned())?;
    let tree = object.peel_to_tree().map_err(|e| e.message().to_owned())?;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let base = Path::new(path).file_name().unwrap_or_default();
    let root = tmp.path().join(base);
    let mut failure = None;
    tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
        let target = root.join(dir).join(entry.name().unwrap_or_default());
        let done = match entry.kind() {
            Some(git2::ObjectType::Blob) => entry
                .to_object(&repo)
                .map_err(|e| e.to_string())
                .and_then(|o| {
                    let blob = o.peel_to_blob().map_err(|e| e.to_string())?;
                    std::fs::write(&target, blob.content()).map_err(|e| e.to_string())
                }),
            Some(git2::ObjectType::Tree) => {
                std::fs::create_dir_all(&target).map_err(|e| e.to_string())
            }
            _ => Ok(()),
        };
        match done {
            Ok(()) => git2::TreeWalkResult::Ok,
            Err(e) => {
                failure = Some(e);
                git2::TreeWalkResult::Abort
            }
        }
    })
    .map_err(|e| e.message().to_owned())?;
    std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
    match failure {
        Some(e) => Err(e),
        None => Ok((tmp, root)),
    }
}

/// One planned trial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trial {
    pub scenario: usize,
    pub arm: usize,
    pub rep: u64,
    pub seed: u64,
}

/// A trial's seed: the same for both arms of a pair (common random numbers
/// in a varying model script).
pub fn seed_of(base: u64, rep: u64) -> u64 {
    base.wrapping_mul(1_000_003).wrapping_add(rep)
}

/// The trials of `manifest`, interleaved ABBA, keeping `shard`'s pairs
/// (keyed `scenario#rep`, so a pair never splits across shards).
pub fn plan(m: &Manifest, names: &[String], shard: Option<crate::shard::Shard>) -> Vec<Trial> {
    let mut out = Vec::new();
    for rep in 0..m.reps {
        for (s, name) in names.iter().enumerate() {
            if shard.is_some_and(|sh| !sh.contains_key(&format!("{name}#{rep}"))) {
                continue;
            }
            let order = if rep % 2 == 0 { [0, 1] } else { [1, 0] };
            for arm in order {
                out.push(Trial {
                    scenario: s,
                    arm,
                    rep,
                    seed: seed_of(m.seed, rep),
                });
            }
        }
    }
    out
}

/// Everything the trials share.
pub struct Context<'a> {
    pub scenarios: &'a [(PathBuf, Prepared)],
    pub arms: &'a [ArmSetup; 2],
    pub timeout: Option<Duration>,
    pub sandbox: crate::sandbox::Mode,
    pub jobs: usize,
    pub max_budget_usd: Option<f64>,
    pub out: &'a Path,
    pub manifest: &'a Manifest,
}

/// Runs `trials`; returns the rows of the trials run (a spent budget stops
/// new ones) and whether the budget stopped any.
pub fn run(ctx: &Context<'_>, trials: &[Trial], prior: Vec<Row>) -> (Vec<Row>, bool) {
    let next = AtomicUsize::new(0);
    let rows = Mutex::new(prior);
    let spent = Mutex::new(0.0_f64);
    let stopped = Mutex::new(false);
    std::thread::scope(|scope| {
        for _ in 0..ctx.jobs.clamp(1, trials.len().max(1)) {
            scope.spawn(|| {
                loop {
                    if let Some(max) = ctx.max_budget_usd
                        && *spent.lock().unwrap_or_else(|e| e.into_inner()) >= max
                    {
                        *stopped.lock().unwrap_or_else(|e| e.into_inner()) = true;
                        return;
                    }
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(trial) = trials.get(i) else { return };
                    let row = run_trial(ctx, trial);
                    *spent.lock().unwrap_or_else(|e| e.into_inner()) += row.cost_usd.unwrap_or(0.0);
                    let mut all = rows.lock().unwrap_or_else(|e| e.into_inner());
                    all.push(row);
                    if let Err(e) = super::rows::write(ctx.out, ctx.manifest, &all) {
                        crate::messages::warn(format!("eval: write rows: {e}"));
                    }
                }
            });
        }
    });
    let mut rows = rows.into_inner().unwrap_or_else(|e| e.into_inner());
    rows.sort_by(|a, b| (&a.scenario, a.rep, &a.arm).cmp(&(&b.scenario, b.rep, &b.arm)));
    let stopped = *stopped.lock().unwrap_or_else(|e| e.into_inner());
    (rows, stopped)
}

/// One trial: one live run of the scenario under the arm.
fn run_trial(ctx: &Context<'_>, trial: &Trial) -> Row {
    let (path, prepared) = &ctx.scenarios[trial.scenario];
    let arm = &ctx.arms[trial.arm];
    let started = Instant::now();
    let mut row = Row {
        scenario: prepared.scenario.name.clone(),
        arm: arm.name.clone(),
        rep: trial.rep,
        seed: trial.seed,
        outcome: Outcome::Errored,
        assertions: Vec::new(),
        cost_usd: None,
        duration_ms: 0,
        error: None,
    };
    match live_trial(ctx, path, prepared, arm, trial.seed) {
        Ok((outcome, assertions, cost)) => {
            row.outcome = outcome;
            row.assertions = assertions;
            row.cost_usd = cost;
        }
        Err(e) => row.error = Some(e),
    }
    row.duration_ms = started.elapsed().as_millis() as u64;
    row
}

type TrialResult = (Outcome, Vec<AssertionResult>, Option<f64>);

fn live_trial(
    ctx: &Context<'_>,
    path: &Path,
    prepared: &Prepared,
    arm: &ArmSetup,
    seed: u64,
) -> Result<TrialResult, String> {
    let mut session = prepared.session.clone();
    if let Some(skills) = &arm.skills {
        session.skills_local = skills.clone();
    }
    if arm.model.is_some() {
        session.model = arm.model.clone();
    }
    let script_path = arm
        .script
        .clone()
        .or(prepared.scenario.model_script.clone());
    let script = match &script_path {
        Some(p) => Some(crate::model::Script::load_seeded(p, seed).map_err(|e| e.to_string())?),
        None => None,
    };
    let timeout = crate::record::run_budget(ctx.timeout, prepared.scenario.timeout_ms);
    let run = live::run(&live::LivePlan {
        scenario: &prepared.scenario,
        scenario_path: path,
        session: &session,
        cassette_path: &prepared.cassette_path,
        script,
        agent_cmd: None,
        claude_program: arm.claude_program.as_deref(),
        timeout,
        max_artifact_bytes: crate::record::manifest::DEFAULT_BODY_CAP,
        sandbox: ctx.sandbox,
        // Live trials run every MCP server for real.
        mcp: None,
    })
    .map_err(|e| e.to_string())?;
    let cost = run
        .log
        .result
        .as_ref()
        .and_then(|r| r.get("total_cost_usd"))
        .and_then(serde_json::Value::as_f64);
    let failed_run = matches!(run.log.end, crate::agent::RunEnd::Failed { .. });
    let outcome = match &run.judged {
        _ if failed_run => None,
        None => None,
        Some(_) if run.failures.is_empty() && run.model_problems.is_empty() => {
            Some(Outcome::Passed)
        }
        Some(_) => Some(Outcome::Failed),
    };
    let assertions = run
        .judged
        .as_ref()
        .map(|j| {
            j.assertions
                .iter()
                .filter(|a| a.source.is_none())
                .map(|a| AssertionResult {
                    label: a.assertion.to_string(),
                    pass: a.pass,
                })
                .collect()
        })
        .unwrap_or_default();
    let end = format!("{:?}", run.log.end);
    let _ = run.run_dir.finish(false);
    match outcome {
        Some(o) => Ok((o, assertions, cost)),
        None => Err(format!("the run could not be judged: {end}")),
    }
}

/// Options for loading a scenario as `record` would (every refusal of
/// `record` before it runs applies to an eval).
pub fn prepare(path: &Path, script: Option<PathBuf>) -> Result<Prepared, crate::Error> {
    let mut opts = RecordOptions::new(path);
    opts.force = true;
    opts.model_script = script;
    crate::record::prepare(&opts).map_err(crate::Error::from)
}
