//! Running an eval: arms resolved once, trials planned interleaved (ABBA:
//! rep 0 runs A then B, rep 1 B then A, …, so drift hits both arms alike),
//! each trial one live run (`run::run`, sandboxed by default), `jobs`
//! at once, rows persisted after every trial, new trials stopped once the
//! budget is spent.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::rows::{AssertionResult, Manifest, Outcome, Row, Source};
use crate::record::{Prepared, RecordOptions};
use crate::run as live;

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
            let (tree, dir) = extract_git(Path::new("."), reference, path).map_err(|e| {
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

/// The tree at `REF:PATH` of the repository around `within` (the working
/// directory), written to a temp dir under PATH's base name (skills stage
/// by base name). Every directory is created before what it holds, and the
/// first I/O error is what the caller sees (libgit2 only says the walk was
/// aborted).
fn extract_git(
    within: &Path,
    reference: &str,
    path: &str,
) -> Result<(tempfile::TempDir, PathBuf), String> {
    let repo = git2::Repository::discover(within).map_err(|e| {
        format!(
            "no git repository around the working directory: {}",
            e.message()
        )
    })?;
    let object = repo
        .revparse_single(&format!("{reference}:{path}"))
        .map_err(|e| e.message().to_owned())?;
    let tree = object
        .peel_to_tree()
        .map_err(|_| format!("`{path}` at `{reference}` is a file; an arm is a skill directory"))?;
    let tmp = tempfile::tempdir().map_err(|e| format!("create a temp dir: {e}"))?;
    let base = Path::new(path.trim_end_matches('/'))
        .file_name()
        .unwrap_or_default();
    let root = tmp.path().join(base);
    std::fs::create_dir_all(&root).map_err(|e| format!("create `{}`: {e}", root.display()))?;
    let mut failure = None;
    let walked = tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
        let target = root.join(dir).join(entry.name().unwrap_or_default());
        match write_entry(&repo, entry, &target) {
            Ok(()) => git2::TreeWalkResult::Ok,
            Err(e) => {
                failure = Some(e);
                git2::TreeWalkResult::Abort
            }
        }
    });
    match (failure, walked) {
        (Some(e), _) => Err(e),
        (None, Err(e)) => Err(e.message().to_owned()),
        (None, Ok(())) => Ok((tmp, root)),
    }
}

/// Writes one tree entry at `target`: a directory, a file (keeping its
/// executable bit) or a symbolic link.
fn write_entry(
    repo: &git2::Repository,
    entry: &git2::TreeEntry<'_>,
    target: &Path,
) -> Result<(), String> {
    let io = |what: &str, e: std::io::Error| format!("{what} `{}`: {e}", target.display());
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io("create the directory of", e))?;
    }
    match entry.kind() {
        Some(git2::ObjectType::Tree) => {
            std::fs::create_dir_all(target).map_err(|e| io("create", e))
        }
        Some(git2::ObjectType::Blob) => {
            let blob = entry
                .to_object(repo)
                .and_then(|o| o.peel_to_blob())
                .map_err(|e| format!("read `{}`: {}", target.display(), e.message()))?;
            if entry.filemode() == 0o120000 {
                #[cfg(unix)]
                return std::os::unix::fs::symlink(
                    String::from_utf8_lossy(blob.content()).as_ref(),
                    target,
                )
                .map_err(|e| io("link", e));
            }
            std::fs::write(target, blob.content()).map_err(|e| io("write", e))?;
            #[cfg(unix)]
            if entry.filemode() == 0o100755 {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(target, std::fs::Permissions::from_mode(0o755))
                    .map_err(|e| io("chmod", e))?;
            }
            Ok(())
        }
        // A submodule (commit) has no content in this repository.
        _ => Ok(()),
    }
}

/// What makes two evals' runs of an arm "the same arm" (docs/eval.md,
/// History): the content signature of its skill directory, `none`, or the
/// runtime profile with its model script's bytes.
pub fn identity(arm: &ArmSetup, source: &Source) -> String {
    let digest = |bytes: &[u8]| {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(bytes))
    };
    match (source, &arm.skills) {
        (Source::NoSkill, _) => "none".into(),
        (Source::Runtime { .. }, _) => {
            let script = arm
                .script
                .as_ref()
                .and_then(|p| std::fs::read(p).ok())
                .map(|b| digest(&b))
                .unwrap_or_default();
            format!(
                "runtime:{}:{script}",
                digest(format!("{source:?}").as_bytes())
            )
        }
        (_, Some(dirs)) => {
            let sigs: Vec<String> = dirs
                .iter()
                .map(|d| {
                    crate::fingerprint::fixture::scan(d, "eval arm")
                        .map(|s| s.sig)
                        .unwrap_or_else(|e| format!("unreadable:{e}"))
                })
                .collect();
            format!("skill:{}", sigs.join(","))
        }
        (_, None) => "session".into(),
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
    /// Told after each trial: (trials done, trials planned, time since start).
    pub progress: &'a (dyn Fn(usize, usize, Duration) + Sync),
}

/// Runs `trials`; returns the rows of the trials run (a spent budget stops
/// new ones) and whether the budget stopped any.
pub fn run(ctx: &Context<'_>, trials: &[Trial], prior: Vec<Row>) -> (Vec<Row>, bool) {
    let next = AtomicUsize::new(0);
    let rows = Mutex::new(prior);
    let spent = Mutex::new(0.0_f64);
    let stopped = Mutex::new(false);
    let done = AtomicUsize::new(0);
    let started = Instant::now();
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
                    drop(all);
                    let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                    (ctx.progress)(n, trials.len(), started.elapsed());
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
        cause: None,
        scripted: false,
    };
    live_trial(ctx, path, prepared, arm, &mut row);
    row.duration_ms = started.elapsed().as_millis() as u64;
    row
}

/// Runs the trial and fills `row`: its outcome, assertions, cost and first
/// cause. A trial the arm broke (the agent exited, the scripted model's
/// `expect:` no longer matched, a question went unanswered) is *failed*:
/// evidence against the arm. Only what lies outside both arms (agent
/// missing, sandbox refused, the API down) is *errored*.
fn live_trial(ctx: &Context<'_>, path: &Path, prepared: &Prepared, arm: &ArmSetup, row: &mut Row) {
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
    row.scripted = script_path.is_some();
    let script = match &script_path {
        Some(p) => match crate::model::Script::load_seeded(p, row.seed) {
            Ok(s) => Some(s),
            Err(e) => {
                row.error = Some(format!("model script `{}`: {e}", p.display()));
                return;
            }
        },
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
        max_artifact_bytes: crate::run::collect::DEFAULT_BODY_CAP,
        sandbox: ctx.sandbox,
        // Live trials run every MCP server for real.
        mcp: None,
        hook: None,
        upstream: None,
        carried_verdicts: None,
    });
    let run = match run {
        Ok(run) => run,
        // An unanswered question or a failing answer rule: the arm led the
        // agent somewhere the scenario did not expect.
        Err(crate::run::RecordError::Run { message, .. }) => {
            row.outcome = Outcome::Failed;
            row.cause = Some(format!("run error: {}", first_line(&message)));
            row.cost_usd = row.scripted.then_some(0.0);
            return;
        }
        Err(e) => {
            row.error = Some(e.to_string().replace("\n    ", "; "));
            return;
        }
    };
    judge(&run, row);
    let _ = run.run_dir.finish(false);
}

/// The outcome of a finished run, in `record`'s words and order
/// (`record::cause_first`).
fn judge(run: &live::LiveRun, row: &mut Row) {
    let mut failures = run.failures.clone();
    failures.extend(
        run.model_problems
            .iter()
            .map(|p| format!("scripted model: {p}")),
    );
    if !failures.is_empty() {
        failures.extend(run.log.decisions.strict_denies.iter().cloned());
    }
    crate::record::cause_first(&mut failures);
    // The agent exits when the scripted model answers an unmet `expect:`
    // with an error: the model's problem is the cause, the exit its effect.
    if let Some(i) = failures
        .iter()
        .position(|f| f.starts_with("scripted model"))
    {
        let first = failures.remove(i);
        failures.insert(0, first);
    }
    let mut cause = failures.first().cloned();
    if let (Some(c), crate::agent::RunEnd::Failed { .. }) = (&mut cause, &run.log.end)
        && c.starts_with("run error")
    {
        let tail = last_lines(&run.log.stderr_tail(), 3);
        if !tail.is_empty() {
            c.push_str(&format!(" — stderr: {tail}"));
        }
    }
    if !row.scripted && run.model_problems.is_empty() && api_unavailable(run) {
        row.error = Some(cause.unwrap_or_else(|| "the model API did not answer".into()));
        return;
    }
    if run.judged.is_none() && failures.is_empty() {
        row.error = Some("the run could not be judged (no verdict)".into());
        return;
    }
    if let Some(why) = run.judged.as_ref().and_then(|j| {
        let asserted = run
            .cassette
            .scenario()
            .get("assert")
            .and_then(Value::as_array);
        unjudged(
            asserted.map_or(&[][..], Vec::as_slice),
            &j.assertions,
            &run.warnings,
        )
    }) {
        row.error = Some(why);
        return;
    }
    row.outcome = if failures.is_empty() {
        Outcome::Passed
    } else {
        Outcome::Failed
    };
    row.cause = cause;
    row.assertions = (run.judged.as_ref())
        .map(|j| AssertionResult::of_verdict(&j.assertions))
        .unwrap_or_default();
    // A scripted model bills nothing, whatever usage the script declares.
    row.cost_usd = if row.scripted {
        Some(0.0)
    } else {
        run.log
            .result
            .as_ref()
            .and_then(|r| r.get("total_cost_usd"))
            .and_then(Value::as_f64)
    };
}

/// Why a trial's `semantic_matches` have no verdict (the judge could not
/// grade: no credential, no scripted `judge:` replies, a failed call), in
/// the judge's words; `None` when each has one. Such a trial is errored:
/// the judge is outside both arms, and passing it with the judged row
/// silently missing would count a verdict nobody gave.
pub(crate) fn unjudged(
    asserted: &[Value],
    outcomes: &[crate::assert::AssertionOutcome],
    warnings: &[String],
) -> Option<String> {
    let key = crate::judge::KEY;
    let want = asserted.iter().filter(|i| i.get(key).is_some()).count();
    let got = (outcomes.iter())
        .filter(|a| a.source.is_none() && a.assertion.get(key).is_some())
        .count();
    (got < want).then(|| {
        let why = (warnings.iter().find(|w| w.starts_with("judge:")))
            .map_or("no verdict was frozen for it", |w| {
                w.trim_start_matches("judge:").trim()
            });
        format!(
            "{} of {want} semantic_matches assertion(s) not judged: {why}",
            want - got
        )
    })
}

/// A live run that ended on the API's side (an `API Error`, no connection):
/// outside both arms.
fn api_unavailable(run: &live::LiveRun) -> bool {
    if !matches!(run.log.end, crate::agent::RunEnd::Failed { .. })
        && !run
            .log
            .result
            .as_ref()
            .and_then(|r| r.get("is_error"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    {
        return false;
    }
    let text = run
        .log
        .result
        .as_ref()
        .and_then(|r| r.get("result"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
        + &run.log.stderr_tail();
    [
        "API Error",
        "Connection error",
        "overloaded_error",
        "ECONNREFUSED",
    ]
    .iter()
    .any(|w| text.contains(w))
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}

fn last_lines(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

/// Options for loading a scenario as `record` would (every refusal of
/// `record` before it runs applies to an eval).
pub fn prepare(path: &Path, script: Option<PathBuf>) -> Result<Prepared, crate::Error> {
    let mut opts = RecordOptions::new(path);
    opts.force = true;
    opts.model_script = script;
    crate::record::prepare(&opts).map_err(crate::Error::from)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A repository with one commit holding `files` (path, content).
    fn repo_with(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(dir.path()).unwrap();
        for (path, content) in files {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, content).unwrap();
        }
        let mut index = repo.index().unwrap();
        index
            .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
            .unwrap();
        index.write().unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let who = git2::Signature::now("t", "t@example.com").unwrap();
        repo.commit(Some("HEAD"), &who, &who, "one", &tree, &[])
            .unwrap();
        dir
    }

    fn extracted(repo: &Path, path: &str) -> Vec<(String, String)> {
        let (tmp, root) = extract_git(repo, "HEAD", path).unwrap();
        assert_eq!(root.file_name().unwrap(), "report");
        let mut out = Vec::new();
        for e in walk(&root) {
            let rel = e.strip_prefix(&root).unwrap().display().to_string();
            out.push((rel, std::fs::read_to_string(&e).unwrap()));
        }
        drop(tmp);
        out.sort();
        out
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
        out
    }

    #[test]
    fn a_git_arm_whose_first_entry_is_a_file_extracts_whole() {
        let repo = repo_with(&[
            ("skills/report/SKILL.md", "skill"),
            ("skills/report/scripts/run.sh", "echo ok"),
        ]);
        assert_eq!(
            extracted(repo.path(), "skills/report"),
            vec![
                ("SKILL.md".into(), "skill".into()),
                ("scripts/run.sh".into(), "echo ok".into())
            ]
        );
    }

    #[test]
    fn a_git_arm_whose_first_entry_is_a_folder_extracts_whole() {
        let repo = repo_with(&[
            ("skills/report/A-lib/deep/helper.sh", "helper"),
            ("skills/report/SKILL.md", "skill"),
        ]);
        assert_eq!(
            extracted(repo.path(), "skills/report/"),
            vec![
                ("A-lib/deep/helper.sh".into(), "helper".into()),
                ("SKILL.md".into(), "skill".into())
            ]
        );
    }

    #[test]
    fn a_git_arm_names_what_is_wrong() {
        let repo = repo_with(&[("skills/report/SKILL.md", "skill")]);
        let e = extract_git(repo.path(), "HEAD", "skills/report/SKILL.md").unwrap_err();
        assert!(e.contains("is a file"), "{e}");
        let e = extract_git(repo.path(), "no-such-ref", "skills/report").unwrap_err();
        assert!(!e.contains("-7"), "{e}");
    }

    /// The verdict `reel replay` gives the bundled judged example, its
    /// judged assertion's rubric edited by `edit` (then `needs regrade`).
    fn judged_example(edit: bool, strict: bool) -> crate::replay::ReplayResult {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("cassettes/judged-note.cassette.json");
        let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(src).unwrap()).unwrap();
        if edit {
            doc["scenario"]["assert"][2]["semantic_matches"]["rubric"][1] =
                "Mentions the team".into();
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("judged-note.cassette.json");
        std::fs::write(&path, doc.to_string()).unwrap();
        let opts = crate::replay::ReplayOptions {
            strict,
            ..Default::default()
        };
        let verdict = crate::replay::replay_file(&path, &opts);
        assert!(verdict.error.is_none(), "{:?}", verdict.error);
        verdict
    }

    /// Issue 42 Deliver 6: a judged `semantic_matches` is an eval row like any
    /// other — labelled by its item, passing by its frozen verdict; failing
    /// when its verdict fails — and a trial whose judged assertion has no
    /// verdict is named as such, never counted as a pass without it.
    #[test]
    fn a_judged_assertion_is_an_eval_row_like_any_other() {
        let verdict = judged_example(false, false);
        let rows = AssertionResult::of_verdict(&verdict.assertions);
        assert_eq!(rows.len(), 3, "{rows:?}");
        let judged = rows
            .iter()
            .find(|r| r.label.contains("semantic_matches"))
            .unwrap();
        assert!(judged.pass, "{rows:?}");
        let item = json!({"semantic_matches": {"rubric": [
            "The note says the release is on Friday", "The note is addressed to the team"]}});
        assert_eq!(judged.label, item.to_string());
        let asserted = [json!({"result": "success"}), item];
        assert_eq!(unjudged(&asserted, &verdict.assertions, &[]), None);

        // Stale (rubric edited): under --strict a failing row…
        let strict = judged_example(true, true);
        let rows = AssertionResult::of_verdict(&strict.assertions);
        let judged = rows
            .iter()
            .find(|r| r.label.contains("semantic_matches"))
            .unwrap();
        assert!(!judged.pass, "{rows:?}");
        // …else no row, and the trial says why (in the judge's words).
        let loose = judged_example(true, false);
        let rows = AssertionResult::of_verdict(&loose.assertions);
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert!(rows.iter().all(|r| !r.label.contains("semantic_matches")));
        let why = unjudged(&asserted, &loose.assertions, &[]).unwrap();
        assert_eq!(
            why,
            "1 of 1 semantic_matches assertion(s) not judged: no verdict was frozen for it"
        );
        let said = ["judge: no ANTHROPIC_API_KEY, so semantic_matches was not judged".to_owned()];
        let why = unjudged(&asserted, &loose.assertions, &said).unwrap();
        assert!(
            why.ends_with(": no ANTHROPIC_API_KEY, so semantic_matches was not judged"),
            "{why}"
        );
    }
}
