//! `reel verify-cassettes`: arguments and the thin glue to the library
//! ([`crate::verify::gate`]) and its renderer ([`crate::report::verify`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::cli::OutputFormat;
use crate::cli::flags::{OutputFormatArg, SessionArg};
use crate::cli::shard::ShardArgs;
use crate::error::{Error, Result};
use crate::exit::ExitStatus;
use crate::report::verify::{self as report, Coverage};
use crate::verify::detect::Class;
use crate::verify::gate::{self, MaxAgeCheck, TargetError, VerifyOptions};
use crate::verify::lifecycle::{self, MaxAge};
use crate::verify::margins::CassetteMargins;
use crate::verify::scan::AllowList;

#[derive(Debug, clap::Args)]
#[command(
    mut_arg("output_format", |a| a.help("`text` (report on stderr) or `json` (envelope on \
        stdout)")),
    mut_arg("session", |a| a.help("Resolve skill sources from THIS session (for a moved cassette; \
        one cassette only)")),
    after_help = "Text mode prints a status line per cassette (PASS/FAIL/STALE/ERROR) with its \
        findings under it \
                  and a closing `N passed, N failed` line on stderr; --verbose prints the \
                      original's report.\n\
                  Exit codes: 0 clean · 1 a real finding (privacy, staleness drift, scenario \
                      drift) · \
                  3 could not verify (unresolvable skill dirs, newer cassette format, unreadable \
                      file) · 2 usage.\n\
                  --allow REGEX is a PATTERN that must match a finding's WHOLE sample (anchored, \
                      case-insensitive; \
                  the sample is the matched text, or the artifact path for a body finding); \
                  --allow-patterns-file is a FILE of such patterns, one per line (`#` comments and \
                      blank lines ignored)."
)]
pub struct VerifyArgs {
    /// Cassette files, or directories whose `*.cassette.json` are verified (non-recursive).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub session: SessionArg,
    /// Skip the privacy scan.
    #[arg(long)]
    pub skip_privacy: bool,
    /// Skip the staleness and session-shape checks.
    #[arg(long)]
    pub skip_staleness: bool,
    /// Skip the scenario recording-shaping drift check.
    #[arg(long)]
    pub skip_scenario_drift: bool,
    /// Also report recorded-vs-budget and the margin of every count-bound assertion
    /// (re-drives those cassettes; single-sample estimate; diagnostic only, never changes the verdict).
    #[arg(long)]
    pub margins: bool,
    /// A directory that exists but holds no cassettes exits 0 instead of 2.
    #[arg(long)]
    pub allow_empty: bool,
    /// Allow findings of any class whose whole sample matches REGEX (anchored, case-insensitive).
    #[arg(long, value_name = "REGEX")]
    pub allow: Vec<String>,
    /// Allow `[domain]` findings whose whole sample matches REGEX (a reviewed public domain).
    #[arg(long, value_name = "REGEX")]
    pub allow_domain: Vec<String>,
    /// Allow `[email]` findings whose whole sample matches REGEX (a reviewed synthetic address).
    #[arg(long, value_name = "REGEX")]
    pub allow_email: Vec<String>,
    /// Allow `[path]` findings (a recording machine's absolute path) matching REGEX.
    #[arg(long, value_name = "REGEX")]
    pub allow_path: Vec<String>,
    /// Allow `[machine-inventory]` findings (the recording machine's tools, versions) matching REGEX.
    #[arg(long, value_name = "REGEX")]
    pub allow_machine_inventory: Vec<String>,
    /// Allow `[host-inventory]` findings (MCP servers, plugins of the recording host) matching REGEX.
    #[arg(long, value_name = "REGEX")]
    pub allow_host_inventory: Vec<String>,
    /// Allow a reviewed synthetic secret (e.g. a documentation key).
    #[arg(long, value_name = "REGEX")]
    pub allow_secret: Vec<String>,
    /// Allow reviewed synthetic personal data.
    #[arg(long, value_name = "REGEX")]
    pub allow_personal: Vec<String>,
    /// Allow reviewed host details (hostnames, addresses, home paths).
    #[arg(long, value_name = "REGEX")]
    pub allow_host: Vec<String>,
    /// A FILE of allow patterns, one regex per line (`#` comments, blanks ignored).
    #[arg(long, value_name = "FILE")]
    pub allow_patterns_file: Vec<PathBuf>,
    #[command(flatten)]
    pub output_format: OutputFormatArg,
    /// No text report when everything is clean.
    #[arg(long, short)]
    pub quiet: bool,
    /// Text mode: the original's report (cowork-harness format: findings by class, one line per
    /// finding) instead of a status line per cassette.
    #[arg(long)]
    pub verbose: bool,
    /// Fail a cassette recorded longer ago than DURATION (`90d`, `12w`, `36h`; units s m h d w),
    /// read from the cassette (`timelineHeader.startedAtWall`, else its newest event timestamp).
    #[arg(long, value_name = "DURATION", value_parser = parse_max_age)]
    pub max_age: Option<(MaxAge, String)>,
    /// Fail on orphans: a cassette whose recorded `scenarioSource` is gone, and a scenario
    /// (in `<cassette dir>/../scenarios` or beside the recorded ones) that no cassette records.
    #[arg(long)]
    pub orphans: bool,
    #[command(flatten)]
    pub shard: ShardArgs,
}

fn parse_max_age(s: &str) -> std::result::Result<(MaxAge, String), String> {
    Ok((s.parse()?, s.trim().to_owned()))
}

impl From<TargetError> for Error {
    fn from(e: TargetError) -> Self {
        let hint = match &e {
            TargetError::NotFound(_) => {
                "check the path (a directory means its *.cassette.json files)"
            }
            TargetError::EmptyDir(_) => {
                "pass --allow-empty if this directory deliberately holds no cassettes"
            }
        };
        Error::usage(format!("verify-cassettes: {e}")).with_hint(hint)
    }
}

fn build_allow(args: &VerifyArgs) -> Result<AllowList> {
    let mut allow = AllowList::default();
    let groups: [(&[String], Option<Class>, &str); 9] = [
        (&args.allow, None, "--allow"),
        (&args.allow_domain, Some(Class::Domain), "--allow-domain"),
        (&args.allow_email, Some(Class::Email), "--allow-email"),
        (&args.allow_path, Some(Class::Path), "--allow-path"),
        (
            &args.allow_machine_inventory,
            Some(Class::MachineInventory),
            "--allow-machine-inventory",
        ),
        (
            &args.allow_host_inventory,
            Some(Class::HostInventory),
            "--allow-host-inventory",
        ),
        (&args.allow_secret, Some(Class::Secret), "--allow-secret"),
        (
            &args.allow_personal,
            Some(Class::Personal),
            "--allow-personal",
        ),
        (&args.allow_host, Some(Class::Host), "--allow-host"),
    ];
    for (sources, class, flag) in groups {
        for src in sources {
            allow
                .add(src, class)
                .map_err(|e| Error::usage(format!("{flag}: invalid regex: {src} ({e})")))?;
        }
    }
    for file in &args.allow_patterns_file {
        let text = std::fs::read_to_string(file).map_err(|e| {
            Error::usage(format!(
                "--allow-patterns-file: cannot read {}: {e}",
                file.display()
            ))
            .with_hint(
                "--allow-patterns-file takes a FILE of patterns; to allow a value, use \
                    --allow REGEX",
            )
        })?;
        allow.add_patterns_text(&text).map_err(|e| {
            Error::usage(format!("--allow-patterns-file ({}): {e}", file.display()))
        })?;
    }
    Ok(allow)
}

/// A `verify-cassettes` run the flags allow. Every cross-flag check is in
/// [`VerifyPlan::from_args`], so [`run`] works on a checked plan.
pub enum VerifyPlan {
    /// `--allow-empty` and a directory without cassettes: nothing to verify.
    Empty {
        dir: String,
        coverage: Coverage,
    },
    Run(Box<VerifyRun>),
}

/// The cassettes to verify (this shard's), how, and the notices due first.
pub struct VerifyRun {
    pub files: Vec<PathBuf>,
    pub opts: VerifyOptions,
    pub coverage: Coverage,
    /// `--orphans`: the scenarios no cassette of the whole batch records
    /// (this shard's).
    pub orphan_scenarios: Option<Vec<lifecycle::OrphanScenario>>,
    /// stderr lines (the `--session` override in effect, an empty shard).
    pub notices: Vec<String>,
}

impl VerifyPlan {
    pub fn from_args(args: &VerifyArgs) -> Result<VerifyPlan> {
        if args.skip_privacy && args.skip_staleness {
            return Err(Error::usage(
                "verify-cassettes: --skip-privacy and --skip-staleness are mutually exclusive \
                    (together they'd check nothing)",
            ));
        }
        let allow = build_allow(args)?;
        let coverage = Coverage {
            privacy: !args.skip_privacy,
            staleness: !args.skip_staleness,
            scenario_drift: !args.skip_scenario_drift,
        };
        let files = match gate::collect_targets(&args.paths) {
            Ok(f) => f,
            Err(TargetError::EmptyDir(dir)) if args.allow_empty && args.session.file.is_none() => {
                return Ok(VerifyPlan::Empty { dir, coverage });
            }
            Err(e) => return Err(e.into()),
        };
        let mut notices = Vec::new();
        if let Some(session) = &args.session.file {
            notices.push(session_notice(args, session, &files)?);
        }
        let discovered = files.len();
        // Orphan scenarios are judged against the whole batch (a scenario is
        // recorded if ANY cassette records it), then sharded by their own name.
        let orphan_scenarios = args.orphans.then(|| {
            lifecycle::orphan_scenarios(&files)
                .into_iter()
                .filter(|o| {
                    args.shard
                        .shard
                        .is_none_or(|s| s.contains(Path::new(&o.scenario)))
                })
                .collect::<Vec<_>>()
        });
        let files = args.shard.select(files);
        if files.is_empty()
            && let Some(notice) = args.shard.empty_notice("verify-cassettes", discovered)
        {
            notices.push(notice);
        }
        let opts = VerifyOptions {
            session: args.session.file.clone(),
            privacy: coverage.privacy,
            staleness: coverage.staleness,
            scenario_drift: coverage.scenario_drift,
            allow,
            margins: args.margins,
            max_age: args.max_age.clone().map(|(max, text)| MaxAgeCheck {
                max,
                text,
                now: std::time::SystemTime::now(),
            }),
            orphans: args.orphans,
        };
        Ok(VerifyPlan::Run(Box::new(VerifyRun {
            files,
            opts,
            coverage,
            orphan_scenarios,
            notices,
        })))
    }
}

/// Checks `--session FILE` against the other flags and the target, and names
/// the dirs the override resolves to: a wrong override must be visible, not a
/// silent false green.
fn session_notice(args: &VerifyArgs, session: &Path, files: &[PathBuf]) -> Result<String> {
    if args.paths.iter().any(|p| p.is_dir()) || files.len() > 1 {
        return Err(Error::usage(format!(
            "verify-cassettes --session <file> names one cassette's session and is not valid for a \
                directory target ({} cassette(s)) — run it per cassette",
            files.len()
        )));
    }
    if !session.is_file() {
        return Err(Error::usage(format!(
            "verify-cassettes --session: not a session file: {}",
            session.display()
        )));
    }
    if args.skip_staleness {
        return Err(Error::usage(
            "verify-cassettes --session has no effect with --skip-staleness — drop one of them",
        ));
    }
    if let Ok(c) = gate::load_cassette(&files[0])
        && gate::resolve_session(&c, None).is_none()
    {
        return Err(Error::usage(
            "verify-cassettes --session: this cassette records an inline scenario, which has no \
                session file to override — remove --session",
        ));
    }
    let sources = crate::fingerprint::resolve_sources("", None, Some(session));
    let dirs = if !sources.roots.is_empty() {
        sources
            .roots
            .iter()
            .map(|r| r.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    } else {
        match &sources.failure {
            Some(f) => format!("NO usable skill dirs — {f}"),
            None => "NO skill dirs — this session declares none".into(),
        }
    };
    Ok(format!(
        "::notice:: [verify-cassettes] --session override in effect: {} -> {dirs}",
        session.display()
    ))
}

pub fn run(args: VerifyArgs) -> Result<ExitStatus> {
    let plan = match VerifyPlan::from_args(&args)? {
        VerifyPlan::Empty { dir, coverage } => {
            if args.output_format == OutputFormat::Json {
                println!(
                    "{}",
                    report::json(&[], coverage, None, args.orphans.then_some(&[]))
                );
            } else if !args.quiet {
                eprintln!(
                    "✓ verify-cassettes: no cassettes under {dir} — nothing to verify \
                        (--allow-empty)"
                );
            }
            return Ok(ExitStatus::Success);
        }
        VerifyPlan::Run(plan) => *plan,
    };
    let VerifyRun {
        files,
        opts,
        coverage,
        orphan_scenarios,
        notices,
    } = plan;
    for notice in &notices {
        eprintln!("{}", crate::terminal_safe::command_line(notice));
    }
    let results = gate::verify_all(&files, &opts);
    let margins: Option<Vec<CassetteMargins>> = args
        .margins
        .then(|| results.iter().filter_map(|r| r.margins.clone()).collect());
    let code = gate::batch_status(&results, orphan_scenarios.as_deref());
    if let Some(w) = crate::report::github::write_summary_if_enabled(|| {
        crate::report::github::verify_summary(
            &results,
            orphan_scenarios.as_deref().unwrap_or_default(),
            args.shard.shard,
        )
    }) {
        eprintln!("{}", crate::terminal_safe::command_line(&w));
    }
    if args.output_format == OutputFormat::Json {
        let line = report::json(
            &results,
            coverage,
            margins.as_deref(),
            orphan_scenarios.as_deref(),
        );
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{line}");
    } else if !(args.quiet && code == ExitStatus::Success) {
        let text = if args.verbose {
            report::text(
                &results,
                coverage,
                margins.as_deref(),
                orphan_scenarios.as_deref(),
            )
        } else {
            report::status_text(
                &results,
                coverage,
                margins.as_deref(),
                orphan_scenarios.as_deref(),
            )
        };
        let _ = anstream::stderr().lock().write_all(text.as_bytes());
    }
    Ok(code)
}
