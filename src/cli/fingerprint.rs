//! `reel fingerprint`: prints the staleness fingerprint a recording of these
//! skill roots would store — the way to see why a cassette went stale and to
//! check the digests from outside. Data goes to stdout (the user asked for
//! it); warnings about skipped links or unreadable files go to stderr.
//!
//! The output never includes `baseline`/`promptAssetsHash`: those describe
//! the agent platform of a run, not the skill tree.

use crate::exit::ExitStatus;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cassette::FingerprintRecord;
use crate::cli::OutputFormat;
use crate::error::Result;
use crate::fingerprint::{self, EntryKind, HashFormat, ModeRequest, Snapshot, WalkOptions};

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
    after_help = "Mode defaults to git when every root is inside a git work tree \
    (set COWORK_HARNESS_GITSET=0 to force raw), as a recording does. \
    COWORK_HARNESS_AGENT_SCOPE=skill turns on agent scoping."
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
    /// Take the roots (and `staleness.hash_ignore`) from this session YAML,
    /// as a recording of a scenario using it would.
    #[arg(long, value_name = "FILE", conflicts_with = "roots")]
    pub session: Option<PathBuf>,
    /// Scope the hash to these `skills/<NAME>` (a scenario's `skills:`); repeatable.
    #[arg(long = "skill", value_name = "NAME")]
    pub skills: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub output_format: OutputFormat,
    /// Also list every hashed entry (path, kind, digest or link target).
    #[arg(long)]
    pub files: bool,
}

/// One hashed entry of `--files`.
#[derive(Debug, Serialize)]
struct FileRow {
    path: String,
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    sha256: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<String>,
    root: String,
}

/// The JSON document (schema: `schema/fingerprint-output.json`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Output<'a> {
    tool: &'static str,
    command: &'static str,
    fingerprint: &'a FingerprintRecord,
    read_errors: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    files: Option<Vec<FileRow>>,
}

fn file_rows(snap: &Snapshot, format: HashFormat, sources: &[String]) -> Vec<FileRow> {
    snap.main()
        .map(|e| {
            let root = sources.get(e.root).cloned().unwrap_or_default();
            match &e.kind {
                EntryKind::Dir => FileRow {
                    path: e.path.clone(),
                    kind: "dir",
                    sha256: None,
                    target: None,
                    root,
                },
                EntryKind::Link { target } => FileRow {
                    path: e.path.clone(),
                    kind: "link",
                    sha256: None,
                    target: Some(target.clone()),
                    root,
                },
                EntryKind::File { digests, .. } => FileRow {
                    path: e.path.clone(),
                    kind: "file",
                    sha256: Some(match format {
                        HashFormat::Legacy => digests.legacy.clone(),
                        HashFormat::Jcs1 => digests.jcs1.clone(),
                    }),
                    target: None,
                    root,
                },
            }
        })
        .collect()
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
    let (snap, record) = if let Some(session) = &args.session {
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
        (snap, rec)
    } else {
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
        (snap, rec)
    };
    let sources = record.skill_sources.clone().unwrap_or_default();
    let mut stdout = String::new();
    match args.output_format {
        OutputFormat::Json => {
            let out = Output {
                tool: "reel",
                command: "fingerprint",
                fingerprint: &record,
                read_errors: &snap.read_errors,
                files: args.files.then(|| file_rows(&snap, format, &sources)),
            };
            stdout.push_str(
                &serde_json::to_string(&out).map_err(|e| crate::Error::failure(e.to_string()))?,
            );
            stdout.push('\n');
        }
        OutputFormat::Text => {
            stdout.push_str(&render_text(&record, &snap, format, args.files, &sources))
        }
    }
    print_stdout(&stdout);
    if snap.read_errors.is_empty() {
        Ok(ExitStatus::Success)
    } else {
        eprintln!(
            "reel: fingerprint: {} file(s) could not be read — a recording would store no skillHash (can't verify ⇒ not green)",
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

fn render_text(
    fp: &FingerprintRecord,
    snap: &Snapshot,
    format: HashFormat,
    files: bool,
    sources: &[String],
) -> String {
    let mut s = String::new();
    let line = |s: &mut String, k: &str, v: &str| s.push_str(&format!("{k:<12}{v}\n"));
    line(
        &mut s,
        "format",
        if format == HashFormat::Jcs1 {
            "jcs1"
        } else {
            "legacy (pre-v12)"
        },
    );
    line(&mut s, "mode", fp.mode.as_deref().unwrap_or("raw"));
    line(
        &mut s,
        "skillHash",
        fp.skill_hash
            .as_deref()
            .unwrap_or("(none: unreadable files)"),
    );
    if let Some(c) = &fp.content_sig {
        line(&mut s, "contentSig", c);
    }
    for (i, src) in sources.iter().enumerate() {
        line(
            &mut s,
            if i == 0 { "sources" } else { "" },
            if src.is_empty() { "." } else { src },
        );
    }
    if let Some(scope) = &fp.skill_scope {
        line(&mut s, "skillScope", &scope.join(", "));
        if !snap.scoped {
            line(
                &mut s,
                "",
                &format!(
                    "(not applied: {} not found — whole tree hashed)",
                    snap.missed_skills.join(", ")
                ),
            );
        }
    }
    if let Some(a) = &fp.agent_scope {
        line(&mut s, "agentScope", a);
    }
    if let Some(h) = &fp.shared_hash {
        line(&mut s, "sharedHash", h);
    }
    match (&fp.file_sigs, fp.file_sigs_omitted) {
        (Some(sigs), _) => line(&mut s, "fileSigs", &format!("{} entries", sigs.len())),
        (None, Some(true)) => line(
            &mut s,
            "fileSigs",
            &format!(
                "omitted (more than {} entries)",
                fingerprint::MANIFEST_MAX_FILES
            ),
        ),
        _ => {}
    }
    for e in &snap.read_errors {
        line(&mut s, "readError", e);
    }
    if files {
        s.push('\n');
        for row in file_rows(snap, format, sources) {
            let digest = match (&row.sha256, &row.target) {
                (Some(h), _) => h[..12.min(h.len())].to_owned(),
                (None, Some(t)) => format!("-> {t:?}"),
                _ => "dir".to_owned(),
            };
            let root = if sources.len() > 1 {
                format!("[{}] ", row.root)
            } else {
                String::new()
            };
            s.push_str(&format!(
                "  {:<5} {digest:<14} {root}{:?}\n",
                row.kind, row.path
            ));
        }
    }
    s
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
