//! `reel fingerprint`: prints the staleness fingerprint a recording of these
//! skill roots would store — the way to see why a cassette went stale and to
//! check the digests from outside. Data goes to stdout (the user asked for
//! it); warnings about skipped links or unreadable files go to stderr.
//!
//! The output never includes `baseline`/`promptAssetsHash`: those describe
//! the agent platform of a run, not the skill tree.

use std::path::{Path, PathBuf};

use crate::cassette::FingerprintRecord;
use crate::cli::OutputFormat;
use crate::cli::flags::{OutputFormatArg, SessionArg};
use crate::error::Result;
use crate::exit::ExitStatus;
use crate::fingerprint::{self, HashFormat, ModeRequest, Snapshot, WalkOptions};
use crate::report::fingerprint as report;

/// `--mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ModeArg {
    /// Hash the git-tracked set (error if a root is not in a git work tree).
    Git,
    /// Hash every file on disk, minus the exclusions.
    Raw,
}

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum FormatArg {
    /// v12 digests (`hashFormat: "jcs1"`), what reel records.
    #[default]
    Jcs1,
    /// Pre-epoch digests, as v9–v11 cassettes recorded them.
    Legacy,
}

#[derive(Debug, clap::Args)]
#[command(
    mut_arg("session", |a| a.help("Take the roots (and `staleness.hash_ignore`) from this session \
        YAML, as a recording of a scenario using it would").conflicts_with("roots")),
    after_help = "Mode defaults to git when every root is inside a git work tree \
    (set COWORK_HARNESS_GITSET=0 to force raw), as a recording does. \
    COWORK_HARNESS_AGENT_SCOPE=skill turns on agent scoping.\n\n\
    Exit codes: 0 printed; 1 a file could not be read (a recording would store no skillHash); 2 \
    usage or a root that is not a directory."
)]
pub struct FingerprintArgs {
    /// Skill or plugin directories to hash (omit with --session).
    #[arg(value_name = "ROOT")]
    pub roots: Vec<PathBuf>,
    /// File set to hash [default: git when every root is in a git work tree, else raw].
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Digest format.
    #[arg(long, value_enum, default_value_t)]
    pub format: FormatArg,
    #[command(flatten)]
    pub session: SessionArg,
    /// Scope the hash to these `skills/<NAME>` (a scenario's `skills:`); repeatable.
    #[arg(long = "skill", value_name = "NAME")]
    pub skills: Vec<String>,
    #[command(flatten)]
    pub output_format: OutputFormatArg,
    /// Also list every hashed entry (path, kind, digest or link target).
    #[arg(long)]
    pub files: bool,
}

fn check_root(p: &Path) -> Result<()> {
    match std::fs::metadata(p) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(crate::Error::usage(format!(
            "skill root `{}` is not a directory",
            p.display()
        ))
        .with_hint("pass the skill or plugin directory itself")),
        Err(e) => Err(
            crate::Error::usage(format!("skill root `{}`: {e}", p.display()))
                .with_hint("check the path; roots are relative to the current directory"),
        ),
    }
}

/// The snapshot and record of the skill roots a session file declares.
fn of_session(
    session: &Path,
    args: &FingerprintArgs,
    format: HashFormat,
    mode: ModeRequest,
) -> Result<(Snapshot, FingerprintRecord)> {
    if !session.is_file() {
        return Err(
            crate::Error::usage(format!("no session file at `{}`", session.display()))
                .with_hint("--session takes a session YAML file"),
        );
    }
    let live = fingerprint::build(
        &session.to_string_lossy(),
        None,
        None,
        &args.skills,
        None,
        mode,
    )?;
    if let Some(f) = &live.sources.failure {
        return Err(crate::Error::usage(format!(
            "session `{}` yields no skill roots: {f}",
            session.display()
        ))
        .with_hint("declare skill dirs under skills.local or plugins.local_plugins"));
    }
    let rec = live.records.get(format).clone();
    let Some(snap) = live.snapshot else {
        return Err(crate::Error::usage(format!(
            "session `{}` declares no skill roots",
            session.display()
        )));
    };
    Ok((snap, rec))
}

/// The snapshot and record of the roots given on the command line.
fn of_roots(
    args: &FingerprintArgs,
    format: HashFormat,
    mode: ModeRequest,
) -> Result<(Snapshot, FingerprintRecord)> {
    if args.roots.is_empty() {
        return Err(crate::Error::usage("no skill roots given")
            .with_hint("usage: reel fingerprint ROOT... (or --session FILE)"));
    }
    let cwd = std::env::current_dir()?;
    let mut roots = Vec::new();
    for r in &args.roots {
        check_root(r)?;
        roots.push(crate::paths::resolve(&cwd, r));
    }
    let mut opts = WalkOptions::from_env(args.skills.clone(), Vec::new());
    opts.mode = mode;
    let snap = fingerprint::snapshot::walk(&roots, &opts)?;
    let sources = snap
        .roots
        .iter()
        .map(|r| fingerprint::relative_path(&cwd, r))
        .collect();
    let rec = snap.record(format, None, sources, &args.skills);
    Ok((snap, rec))
}

pub fn run(args: FingerprintArgs) -> Result<ExitStatus> {
    let format = match args.format {
        FormatArg::Jcs1 => HashFormat::Jcs1,
        FormatArg::Legacy => HashFormat::Legacy,
    };
    let mode = match args.mode {
        None => ModeRequest::Auto,
        Some(ModeArg::Git) => ModeRequest::Git,
        Some(ModeArg::Raw) => ModeRequest::Raw,
    };
    let (snap, record) = match &args.session.file {
        Some(session) => of_session(session, &args, format, mode)?,
        None => of_roots(&args, format, mode)?,
    };
    let sources = record.skill_sources.clone().unwrap_or_default();
    let mut stdout = String::new();
    match args.output_format.format {
        OutputFormat::Json => {
            stdout.push_str(
                &report::json(&record, &snap, format, args.files, &sources)
                    .map_err(|e| crate::Error::failure(e.to_string()))?,
            );
            stdout.push('\n');
        }
        OutputFormat::Text => {
            stdout.push_str(&report::text(&record, &snap, format, args.files, &sources))
        }
    }
    print_stdout(&stdout);
    if snap.read_errors.is_empty() {
        Ok(ExitStatus::Success)
    } else {
        eprintln!(
            "reel: fingerprint: {} file(s) could not be read — a recording would store no \
                skillHash (can't verify ⇒ not green)",
            snap.read_errors.len()
        );
        Ok(ExitStatus::Failure)
    }
}

/// Writes to stdout; a closed pipe (`| head`) is not an error.
fn print_stdout(s: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(s.as_bytes()).and_then(|()| out.flush());
}

impl From<fingerprint::WalkError> for crate::Error {
    fn from(e: fingerprint::WalkError) -> Self {
        let hint = match e {
            fingerprint::WalkError::NotAGitWorkTree(_) => {
                "commit the skill into a git repository, or use --mode raw"
            }
            fingerprint::WalkError::GitIndex { .. } => {
                "repair the repository (`git status` shows the problem) or use --mode raw"
            }
        };
        crate::Error::usage(e.to_string()).with_hint(hint)
    }
}
