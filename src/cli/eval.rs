//! `reel eval`: paired live trials of two arms, and `reel eval report DIR…`.
//! Exit codes: 0 evaluated, 1 a regression at `--fail-on`, 2 usage or
//! refusal, 3 could not run (no trial completed, or infrastructure errors).

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use crate::error::Result;
use crate::eval::policy::{Policy, Status};
use crate::eval::rows::{self, Arm, Manifest, Source};
use crate::eval::{report, run, stats};
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
    /// Output directory (eval.json, runs.jsonl, report.json, report.md).
    #[arg(long, default_value = "eval-out")]
    pub out: PathBuf,
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
        return rebuild(&args.targets[1..], &args.out, args.fail_on);
    }
    let manifest = manifest(args)?;
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
    let estimate = estimate(&prepared, trials.len());
    if args.dry_run {
        return dry_run(&manifest, &trials, estimate);
    }
    if let (Some(max), Some(e)) = (args.max_budget_usd, estimate)
        && e > max
    {
        return Err(crate::Error::usage(format!(
            "eval: the plan is estimated at ${e:.4}, above --max-budget-usd {max}"
        ))
        .with_hint("fewer --reps or scenarios, or a larger budget (see --dry-run)"));
    }
    let [a, b] = &manifest.arms;
    let arms = [
        run::resolve_arm(
            &a.name,
            &Source::parse(&a.source).map_err(crate::Error::usage)?,
        )?,
        run::resolve_arm(
            &b.name,
            &Source::parse(&b.source).map_err(crate::Error::usage)?,
        )?,
    ];
    rows::write(&args.out, &manifest, &[]).map_err(|e| io_error(&args.out, e))?;
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
        out: &args.out,
        manifest: &manifest,
    };
    let (_, stopped) = run::run(&ctx, &trials, Vec::new());
    if stopped {
        eprintln!("eval: --max-budget-usd spent: no new trials were scheduled");
    }
    rebuild(std::slice::from_ref(&args.out), &args.out, args.fail_on)
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

/// The cost of the plan from each scenario's recorded cassette, if all have one.
fn estimate(prepared: &[(PathBuf, crate::record::Prepared)], trials: usize) -> Option<f64> {
    let per: Option<Vec<f64>> = prepared
        .iter()
        .map(|(_, p)| recorded_cost(&p.cassette_path))
        .collect();
    let per = per?;
    Some(per.iter().sum::<f64>() / per.len().max(1) as f64 * trials as f64)
}

fn recorded_cost(cassette: &Path) -> Option<f64> {
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(cassette).ok()?).ok()?;
    doc.get("events")?.as_array()?.iter().rev().find_map(|e| {
        let line: serde_json::Value = serde_json::from_str(e.as_str()?).ok()?;
        line.get("total_cost_usd")?.as_f64()
    })
}

fn dry_run(m: &Manifest, trials: &[run::Trial], estimate: Option<f64>) -> Result<ExitStatus> {
    let mut out = std::io::stdout().lock();
    let pairs = trials.len() as u64 / 2;
    let per_scenario = m.reps;
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
    let _ = writeln!(
        out,
        "  estimated cost: {}",
        estimate.map_or(
            "unknown (no recorded cassette to estimate from)".into(),
            |e| format!("${e:.4}")
        )
    );
    let _ = writeln!(
        out,
        "  smallest detectable difference per scenario at {per_scenario} reps: {}",
        stats::smallest_detectable_difference(per_scenario, m.policy.alpha).map_or(
            format!(
                "none — fewer than {} pairs can never be significant",
                stats::min_discordant_for(m.policy.alpha)
            ),
            |d| format!("{:.0} points (every discordant pair one way)", d * 100.0)
        )
    );
    Ok(ExitStatus::Success)
}

/// Rebuilds report.json and report.md of `dirs` into `out`, refusing a
/// persisted report its rows contradict.
fn rebuild(dirs: &[PathBuf], out: &Path, fail_on: FailOn) -> Result<ExitStatus> {
    if dirs.is_empty() {
        return Err(crate::Error::usage(
            "eval report: name one or more eval directories",
        ));
    }
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
    if dirs.len() > 1 || !out.join(rows::MANIFEST_FILE).exists() {
        rows::write(out, &loaded.manifest, &loaded.rows).map_err(|e| io_error(out, e))?;
    }
    let json = serde_json::to_string_pretty(&report::envelope(&fresh)).unwrap_or_default();
    crate::atomic::write_atomic(&out.join("report.json"), format!("{json}\n").as_bytes())
        .map_err(|e| io_error(out, e))?;
    let md = crate::report::eval::markdown(&fresh);
    crate::atomic::write_atomic(&out.join("report.md"), md.as_bytes())
        .map_err(|e| io_error(out, e))?;
    let _ = writeln!(std::io::stdout().lock(), "{json}");
    Ok(exit_of(&fresh, fail_on))
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
