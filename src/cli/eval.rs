//! `reel eval`: paired live trials of two arms, and `reel eval report DIR…`.
//! The text report and progress go to stderr; `--output-format json` puts
//! the envelope (schema/eval-report.json) on stdout.
//! Exit codes: 0 evaluated, 1 a regression at `--fail-on`, 2 usage or
//! refusal, 3 could not run (no trial completed, or infrastructure errors).

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use crate::cli::OutputFormat;
use crate::cli::flags::OutputFormatArg;
use crate::error::Result;
use crate::eval::policy::{Policy, Status};
use crate::eval::rows::{self, Arm, Manifest, Source};
use crate::eval::{history, report, run, stats};
use crate::exit::ExitStatus;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// A scenario verdict regresses, or its cost guardrail is exceeded.
    Verdict,
    /// Any row (verdict or assertion) regresses.
    Assertion,
    /// Never exit 1.
    Never,
}

#[derive(Debug, Args)]
#[command(mut_arg("output_format", |a| a.help("Output format: text (the report and progress on \
    stderr) or json (the envelope on stdout, schema/eval-report.json)")))]
#[command(
    after_help = "Exit codes: 0 evaluated; 1 a regression at --fail-on; 2 usage or a \
    refusal; 3 could not run (no trial completed, or infrastructure errors)."
)]
pub struct EvalArgs {
    /// Scenario files or directories; or `report DIR…` to rebuild (and check)
    /// the report of one or more eval directories (shards merge).
    #[arg(required = true)]
    pub targets: Vec<PathBuf>,
    /// `NAME=SOURCE`, twice (baseline first): a skill directory, `git:REF:PATH`,
    /// `none`, or `runtime:agent=VERSION|PATH,model=NAME,script=PATH`.
    #[arg(long = "arm", value_name = "NAME=SOURCE")]
    pub arms: Vec<String>,
    /// Repetitions per arm and scenario.
    #[arg(long, default_value_t = 10)]
    pub reps: u64,
    /// Trials run at once.
    #[arg(long, default_value_t = 1)]
    pub jobs: usize,
    /// Output directory (eval.json, runs.jsonl, history.jsonl, report.json,
    /// report.md); default `eval-out`. `eval report` writes into its one
    /// directory, and needs --out only to merge shards.
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub output_format: OutputFormatArg,
    /// Base seed of the trials' model-script draws.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Minimum completed pairs (never below 2).
    #[arg(long, default_value_t = Policy::default().min_pairs)]
    pub min_pairs: u64,
    /// Largest errored share of attempted trials.
    #[arg(long, default_value_t = Policy::default().max_error_share)]
    pub max_error_share: f64,
    /// Significance level (after Holm's correction).
    #[arg(long, default_value_t = Policy::default().alpha)]
    pub alpha: f64,
    /// Largest cost ratio B / A per completed trial.
    #[arg(long, default_value_t = Policy::default().max_cost_ratio)]
    pub max_cost_ratio: f64,
    /// What exits 1.
    #[arg(long, value_enum, default_value_t = FailOn::Verdict)]
    pub fail_on: FailOn,
    /// Print the plan (trials, cost estimate, smallest detectable difference); run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Refuse when the estimate exceeds this; stop scheduling once spent.
    #[arg(long)]
    pub max_budget_usd: Option<f64>,
    /// Per-trial timeout override.
    #[arg(long)]
    pub timeout_ms: Option<u64>,
    /// Run agents unconfined (every report says so).
    #[arg(long)]
    pub no_sandbox: bool,
    #[command(flatten)]
    pub shard: crate::cli::shard::ShardArgs,
}

pub fn run(args: &EvalArgs) -> Result<ExitStatus> {
    if args
        .targets
        .first()
        .is_some_and(|t| t == Path::new("report"))
        && args.arms.is_empty()
    {
        return rebuild(&args.targets[1..], args.out.as_deref(), args);
    }
    let mut manifest = manifest(args)?;
    let files = scenario_files(&args.targets)?;
    let sources = manifest.arms.clone().map(|a| Source::parse(&a.source));
    let mut prepared = Vec::new();
    for f in &files {
        prepared.push((f.clone(), run::prepare(f, runtime_script(&sources))?));
    }
    let names: Vec<String> = prepared
        .iter()
        .map(|(_, p)| p.scenario.name.clone())
        .collect();
    let trials = run::plan(&manifest, &names, args.shard.shard);
    let estimate = estimate(&prepared, &sources, trials.len());
    if args.dry_run {
        return dry_run(&manifest, &prepared, &trials, estimate);
    }
    if let (Some(max), Cost::Recorded(e)) = (args.max_budget_usd, estimate)
        && e > max
    {
        return Err(crate::Error::usage(format!(
            "eval: the plan is estimated at ${e:.4}, above --max-budget-usd {max}"
        ))
        .with_hint("fewer --reps or scenarios, or a larger budget (see --dry-run)"));
    }
    let arms = resolve_arms(&mut manifest)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("eval-out"));
    rows::write(&out, &manifest, &[]).map_err(|e| io_error(&out, e))?;
    let history_file = history::file_for(&files);
    snapshot_history(history_file.as_deref(), &names, &out)?;
    let text = args.output_format == OutputFormat::Text;
    let progress = |done: usize, total: usize, elapsed: std::time::Duration| {
        if text {
            eprintln!("{}", progress_line(done, total, elapsed));
        }
    };
    let ctx = run::Context {
        scenarios: &prepared,
        arms: &arms,
        timeout: args.timeout_ms.map(std::time::Duration::from_millis),
        sandbox: if args.no_sandbox {
            crate::sandbox::Mode::Off
        } else {
            crate::sandbox::Mode::Enforce
        },
        jobs: args.jobs,
        max_budget_usd: args.max_budget_usd,
        out: &out,
        manifest: &manifest,
        progress: &progress,
    };
    let (rows, stopped) = run::run(&ctx, &trials, Vec::new());
    if stopped {
        eprintln!("eval: --max-budget-usd spent: no new trials were scheduled");
    }
    let status = rebuild(std::slice::from_ref(&out), None, args)?;
    if let Some(h) = &history_file {
        let lines = history_lines(&manifest, &rows);
        if let Err(e) = history::append(h, &lines) {
            crate::messages::warn(format!("eval: append to `{}`: {e}", h.display()));
        } else if text {
            eprintln!("eval: history appended to `{}`", h.display());
        }
    }
    Ok(status)
}

/// Both arms, resolved once; their identities go into the manifest.
fn resolve_arms(manifest: &mut Manifest) -> Result<[run::ArmSetup; 2]> {
    let resolve = |a: &Arm| -> Result<(String, run::ArmSetup)> {
        let source = Source::parse(&a.source).map_err(crate::Error::usage)?;
        let setup = run::resolve_arm(&a.name, &source)?;
        Ok((run::identity(&setup, &source), setup))
    };
    let (ia, a) = resolve(&manifest.arms[0])?;
    let (ib, b) = resolve(&manifest.arms[1])?;
    manifest.identities = Some([ia, ib]);
    Ok([a, b])
}

/// `eval: trial 12/24 · 41s elapsed · ETA 41s`.
fn progress_line(done: usize, total: usize, elapsed: std::time::Duration) -> String {
    let secs = elapsed.as_secs_f64();
    let eta = (done > 0).then(|| secs / done as f64 * (total - done.min(total)) as f64);
    let hms = |s: f64| {
        let s = s.round() as u64;
        if s >= 60 {
            format!("{}m {:02}s", s / 60, s % 60)
        } else {
            format!("{s}s")
        }
    };
    format!(
        "eval: trial {done}/{total} · {} elapsed · ETA {}",
        hms(secs),
        eta.map_or("–".into(), hms)
    )
}

/// Copies the earlier history lines of these scenarios into the eval
/// directory, where its report reads them.
fn snapshot_history(file: Option<&Path>, names: &[String], out: &Path) -> Result<()> {
    let lines = match file {
        Some(f) => history::read(f).map_err(|e| crate::Error::usage(format!("eval: {e}")))?,
        None => Vec::new(),
    };
    let mut text = String::new();
    for l in lines.iter().filter(|l| names.contains(&l.scenario)) {
        text.push_str(&serde_json::to_string(l).unwrap_or_default());
        text.push('\n');
    }
    crate::atomic::write_atomic(&out.join(history::SNAPSHOT_FILE), text.as_bytes())
        .map_err(|e| io_error(out, e))
}

/// This eval's history lines: one per scenario and arm.
fn history_lines(m: &Manifest, rows: &[rows::Row]) -> Vec<history::Line> {
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let ids = m.identities.clone().unwrap_or_default();
    let mut out: Vec<history::Line> = Vec::new();
    for r in rows {
        let Some(i) = m.arm_index(&r.arm) else {
            continue;
        };
        let pos = out
            .iter()
            .position(|l| l.scenario == r.scenario && l.arm == r.arm)
            .unwrap_or_else(|| {
                out.push(history::Line {
                    format: 1,
                    at_unix_s: at,
                    scenario: r.scenario.clone(),
                    arm: r.arm.clone(),
                    source: m.arms[i].source.clone(),
                    identity: ids[i].clone(),
                    attempted: 0,
                    completed: 0,
                    passed: 0,
                });
                out.len() - 1
            });
        let l = &mut out[pos];
        l.attempted += 1;
        l.completed += u64::from(r.outcome != rows::Outcome::Errored);
        l.passed += u64::from(r.outcome == rows::Outcome::Passed);
    }
    out
}

fn io_error(p: &Path, e: std::io::Error) -> crate::Error {
    crate::Error::usage(format!("eval: write `{}`: {e}", p.display()))
}

fn manifest(args: &EvalArgs) -> Result<Manifest> {
    let [a, b] = args.arms.as_slice() else {
        return Err(crate::Error::usage(
            "eval: give exactly two --arm NAME=SOURCE (baseline first)",
        ));
    };
    let arm = |s: &str| -> Result<Arm> {
        let (name, source) = s
            .split_once('=')
            .ok_or_else(|| crate::Error::usage(format!("eval: --arm `{s}`: write NAME=SOURCE")))?;
        Ok(Arm {
            name: name.into(),
            source: source.into(),
        })
    };
    let arms = [arm(a)?, arm(b)?];
    let axis = Source::parse(&arms[0].source)
        .map_err(crate::Error::usage)?
        .axis();
    let m = Manifest {
        format: 1,
        axis,
        arms,
        scenarios: args.targets.clone(),
        reps: args.reps,
        seed: args.seed,
        identities: None,
        policy: Policy {
            min_pairs: args.min_pairs,
            max_error_share: args.max_error_share,
            alpha: args.alpha,
            max_cost_ratio: args.max_cost_ratio,
            ..Policy::default()
        },
    };
    m.check()
        .map_err(|e| crate::Error::usage(format!("eval: {e}")))?;
    Ok(m)
}

/// A runtime arm's script overrides the scenario's for the load checks.
fn runtime_script(sources: &[std::result::Result<Source, String>; 2]) -> Option<PathBuf> {
    sources.iter().find_map(|s| match s {
        Ok(Source::Runtime { script, .. }) => script.clone(),
        _ => None,
    })
}

fn scenario_files(targets: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for t in targets {
        if t.is_dir() {
            out.extend(
                crate::discover::scenarios_in(t)
                    .map_err(|e| crate::Error::usage(format!("eval: `{}`: {e}", t.display())))?,
            );
        } else {
            out.push(t.clone());
        }
    }
    if out.is_empty() {
        return Err(crate::Error::usage("eval: no scenario found"));
    }
    Ok(out)
}

/// What a plan will cost.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Cost {
    /// Every trial runs against a scripted model: $0.
    Scripted,
    /// From each scenario's recorded cassette (the live usage it recorded).
    Recorded(f64),
    Unknown,
}

/// The cost of the plan: $0 when every trial is scripted (a runtime arm's
/// script or the scenario's `model_script`), else from each scenario's
/// recorded cassette, if all have one.
fn estimate(
    prepared: &[(PathBuf, crate::record::Prepared)],
    sources: &[std::result::Result<Source, String>; 2],
    trials: usize,
) -> Cost {
    let arm_scripted = |s: &std::result::Result<Source, String>| {
        matches!(
            s,
            Ok(Source::Runtime {
                script: Some(_),
                ..
            })
        )
    };
    let scripted = prepared
        .iter()
        .all(|(_, p)| p.scenario.model_script.is_some() || sources.iter().all(arm_scripted));
    if scripted {
        return Cost::Scripted;
    }
    let per: Option<Vec<f64>> = prepared
        .iter()
        .map(|(_, p)| recorded_cost(&p.cassette_path))
        .collect();
    match per {
        Some(per) => {
            Cost::Recorded(per.iter().sum::<f64>() / per.len().max(1) as f64 * trials as f64)
        }
        None => Cost::Unknown,
    }
}

fn recorded_cost(cassette: &Path) -> Option<f64> {
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(cassette).ok()?).ok()?;
    doc.get("events")?.as_array()?.iter().rev().find_map(|e| {
        let line: serde_json::Value = serde_json::from_str(e.as_str()?).ok()?;
        line.get("total_cost_usd")?.as_f64()
    })
}

/// The plan on stdout: trials, cost, and the smallest detectable difference
/// under the decision rule (the verdict alone at α; assertion rows under
/// Tarone + Holm).
fn dry_run(
    m: &Manifest,
    prepared: &[(PathBuf, crate::record::Prepared)],
    trials: &[run::Trial],
    estimate: Cost,
) -> Result<ExitStatus> {
    let mut out = std::io::stdout().lock();
    let pairs = trials.len() as u64 / 2;
    let alpha = m.policy.alpha;
    let _ = writeln!(
        out,
        "eval plan: {} trials ({} pairs), axis {:?}",
        trials.len(),
        pairs,
        m.axis
    );
    for a in &m.arms {
        let _ = writeln!(out, "  arm {} = {}", a.name, a.source);
    }
    let cost = match estimate {
        Cost::Scripted => "$0 (scripted: every trial runs against a scripted model)".into(),
        Cost::Recorded(e) => format!("${e:.4} (from the recorded cassettes' usage)"),
        Cost::Unknown => "unknown (no recorded cassette to estimate from)".into(),
    };
    let _ = writeln!(out, "  estimated cost: {cost}");
    let pct = |d: u64| format!("{:.0} points", d as f64 * 100.0 / m.reps.max(1) as f64);
    let primary = stats::min_discordant_for(alpha);
    if m.reps < primary {
        let _ = writeln!(
            out,
            "  smallest detectable difference at {} reps: none — the verdict needs at least {primary}              discordant pairs (p < {alpha}); these reps cannot detect any difference",
            m.reps
        );
        return Ok(ExitStatus::Success);
    }
    let _ = writeln!(
        out,
        "  smallest detectable difference at {} reps: verdict (primary, tested alone) {}          ({primary} discordant pairs all one way)",
        m.reps,
        pct(primary)
    );
    let most = prepared
        .iter()
        .map(|(_, p)| p.scenario.assert.len() as u64)
        .max()
        .unwrap_or(0);
    if most > 0 {
        let worst = stats::min_discordant_secondary(alpha, most);
        let all_vary = if worst <= m.reps {
            pct(worst)
        } else {
            "none".into()
        };
        let _ = writeln!(
            out,
            "  an assertion row (secondary, Tarone + Holm): {} when it alone can reach              significance; {all_vary} when all {most} rows of a scenario can",
            pct(primary)
        );
    }
    Ok(ExitStatus::Success)
}

/// Rebuilds report.json and report.md of `dirs`, refusing a persisted
/// report its rows contradict. One directory: reads and writes only it.
/// Several (shards): merged into `--out`, which is then required.
fn rebuild(dirs: &[PathBuf], out: Option<&Path>, args: &EvalArgs) -> Result<ExitStatus> {
    if dirs.is_empty() {
        return Err(crate::Error::usage(
            "eval report: name one or more eval directories",
        ));
    }
    let out = match (dirs, out) {
        ([one], None) => one.as_path(),
        (_, Some(o)) => o,
        _ => {
            return Err(crate::Error::usage(
                "eval report: merging several directories needs --out DIR",
            ));
        }
    };
    let loaded = rows::load(dirs).map_err(|e| crate::Error::usage(format!("eval report: {e}")))?;
    let fresh = report::build(&loaded);
    for d in dirs {
        let path = d.join("report.json");
        if let Ok(text) = std::fs::read_to_string(&path) {
            let stored: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                crate::Error::usage(format!("eval report: `{}`: {e}", path.display()))
            })?;
            if dirs.len() == 1 {
                report::verify(&stored, &fresh).map_err(|e| {
                    crate::Error::usage(format!("eval report: `{}`: {e}", path.display()))
                        .with_hint("delete report.json to rebuild it from runs.jsonl")
                })?;
            }
        }
    }
    if dirs.len() > 1 {
        rows::write(out, &loaded.manifest, &loaded.rows).map_err(|e| io_error(out, e))?;
        let snapshot = dirs[0].join(history::SNAPSHOT_FILE);
        if snapshot.exists() {
            std::fs::copy(&snapshot, out.join(history::SNAPSHOT_FILE))
                .map_err(|e| io_error(out, e))?;
        }
    }
    let json = serde_json::to_string_pretty(&report::envelope(&fresh)).unwrap_or_default();
    crate::atomic::write_atomic(&out.join("report.json"), format!("{json}\n").as_bytes())
        .map_err(|e| io_error(out, e))?;
    let md = crate::report::eval::markdown(&fresh);
    crate::atomic::write_atomic(&out.join("report.md"), md.as_bytes())
        .map_err(|e| io_error(out, e))?;
    if args.output_format == OutputFormat::Json {
        let _ = writeln!(std::io::stdout().lock(), "{json}");
    } else {
        let _ = write!(std::io::stderr().lock(), "{md}");
        eprintln!("eval: report in `{}`", out.join("report.md").display());
    }
    Ok(exit_of(&fresh, args.fail_on))
}

fn exit_of(r: &report::Report, fail_on: FailOn) -> ExitStatus {
    let completed: u64 = r
        .scenarios
        .iter()
        .flat_map(|s| s.trials.iter().map(|t| t.completed))
        .sum();
    if completed == 0
        || r.scenarios
            .iter()
            .any(|s| s.status == Status::InfrastructureError)
    {
        return ExitStatus::COULD_NOT_RUN;
    }
    let regressed = r.scenarios.iter().any(|s| match fail_on {
        FailOn::Never => false,
        FailOn::Verdict => s.status == Status::Regression || s.cost.guardrail == "exceeded",
        FailOn::Assertion => s.rows.iter().any(|row| row.status == Status::Regression),
    });
    if regressed {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    }
}
