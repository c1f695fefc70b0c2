//! `reel record`: arguments and the thin glue to [`crate::record`].

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::Result;
use crate::record::{RecordOptions, record};

#[derive(Debug, clap::Args)]
pub struct RecordArgs {
    /// Scenario YAML files, or directories of them (non-recursive; files with a
    /// top-level `prompt:`).
    #[arg(required = true, value_name = "SCENARIO")]
    pub scenarios: Vec<PathBuf>,
    /// Write the cassette here instead of `cassettes/<slug>.cassette.json`
    /// (one scenario only).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Run this command instead of `claude` (whitespace-split, no quoting; it
    /// must speak the stream-json control protocol). Env: REEL_AGENT_CMD.
    #[arg(long, value_name = "CMD")]
    pub agent_cmd: Option<String>,
    /// Scripted model to serve to the agent (default: `<scenario>.model.yaml`
    /// beside the scenario, when it exists).
    #[arg(long, value_name = "FILE", conflicts_with = "no_model_script")]
    pub model_script: Option<PathBuf>,
    /// Ignore a `<scenario>.model.yaml` and use the real model API (needs a
    /// credential).
    #[arg(long)]
    pub no_model_script: bool,
    /// Write the cassette even when the live verdict fails.
    #[arg(long)]
    pub allow_failing: bool,
    /// Largest artifact body inlined in the cassette, in bytes.
    #[arg(long, value_name = "N", default_value_t = crate::record::manifest::DEFAULT_BODY_CAP,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_artifact_bytes: u64,
    /// Override the scenario's `timeout_ms` (default budget: 600000).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_ms: Option<u64>,
    /// Keep the run directory (work root, logs) after a successful recording.
    #[arg(long)]
    pub keep_run_dir: bool,
    /// Overwrite a default-path cassette recorded from a differently named
    /// scenario with the same slug.
    #[arg(long)]
    pub force: bool,
    /// Over an existing cassette, write in place even when the re-recording
    /// differs (default: a differing one goes to `NAME.cassette.json.new` for
    /// `reel review`; an identical one writes nothing; under CI=true a
    /// differing one fails).
    #[arg(long)]
    pub accept: bool,
}

pub fn run(args: RecordArgs) -> Result<u8> {
    let mut files = Vec::new();
    for p in &args.scenarios {
        if p.is_dir() {
            files.extend(discover(p)?);
        } else {
            files.push(p.clone());
        }
    }
    if files.is_empty() {
        return Err(crate::Error::usage("record: no scenario found")
            .with_hint("pass a scenario YAML with a top-level `prompt:`"));
    }
    if args.out.is_some() && files.len() > 1 {
        return Err(crate::Error::usage(
            "record: `--out` needs exactly one scenario",
        ));
    }
    if files.len() > 1 && args.out.is_none() {
        refuse_slug_collisions(&files)?;
    }
    let mut code = crate::exit::SUCCESS;
    let single = files.len() == 1;
    for file in files {
        let mut opts = RecordOptions::new(&file);
        opts.out = args.out.clone();
        opts.agent_cmd = args.agent_cmd.clone();
        opts.model_script = args.model_script.clone();
        opts.no_model_script = args.no_model_script;
        opts.allow_failing = args.allow_failing;
        opts.max_artifact_bytes = args.max_artifact_bytes;
        opts.timeout = args.timeout_ms.map(Duration::from_millis);
        opts.keep_run_dir = args.keep_run_dir;
        opts.force = args.force;
        opts.stage = crate::review::StageOptions {
            accept: args.accept,
            ci: crate::review::ci_from_env(),
        };
        match record(&opts) {
            Ok(rec) => {
                let mut err = std::io::stderr().lock();
                for w in &rec.warnings {
                    let _ = writeln!(err, "warning: {w}");
                }
                let written = report_staged(&mut err, &rec.staged);
                if rec.live_pass {
                    let _ = writeln!(err, "recorded {} (live verdict PASS)", written.display());
                } else {
                    let _ = writeln!(
                        err,
                        "recorded {} with a FAILING live verdict (--allow-failing):",
                        written.display()
                    );
                    for f in &rec.failures {
                        let _ = writeln!(err, "  - {f}");
                    }
                }
                if let Some(d) = &rec.run_dir {
                    let _ = writeln!(err, "run directory kept: {}", d.display());
                }
                let _ = writeln!(std::io::stdout().lock(), "{}", written.display());
            }
            Err(e) => {
                if let crate::record::RecordError::Rerecording(s) = &e
                    && let Some(d) = s.diff()
                {
                    let _ = anstream::stderr()
                        .lock()
                        .write_all(crate::diff::render::diff_text(d, true).as_bytes());
                }
                let e = crate::Error::from(e);
                if single {
                    return Err(e);
                }
                crate::cli::print_error(&e);
                code = crate::exit::worst(code, e.exit_code());
            }
        }
    }
    Ok(code)
}

/// Says what staging a re-recording did; returns the file now holding it
/// (the cassette, or its pending `.new`).
fn report_staged<'a>(err: &mut impl Write, staged: &'a crate::review::Outcome) -> &'a Path {
    use crate::review::Outcome;
    match staged {
        Outcome::Written {
            path,
            removed_pending,
        } => {
            if *removed_pending {
                let _ = writeln!(
                    err,
                    "removed the pending {} (--accept wrote in place)",
                    crate::review::pending_path(path).display()
                );
            }
            path
        }
        Outcome::Unchanged {
            path,
            removed_pending,
        } => {
            let _ = writeln!(
                err,
                "{}: re-recording identical to the committed cassette; nothing written",
                path.display()
            );
            if *removed_pending {
                let _ = writeln!(
                    err,
                    "removed the stale {}",
                    crate::review::pending_path(path).display()
                );
            }
            path
        }
        Outcome::Pending {
            path,
            new,
            summary,
            review_command,
            ..
        } => {
            let _ = writeln!(
                err,
                "{}: re-recording {summary}; written to {} for review",
                path.display(),
                new.display()
            );
            let _ = writeln!(
                err,
                "review it: {review_command}   (or `reel diff {} {}`, `reel accept`, `reel reject`; --accept overwrites in place)",
                path.display(),
                new.display()
            );
            new
        }
    }
}

/// Two scenarios of one batch whose names slugify to the same default
/// cassette path would overwrite each other: refuse before recording any.
fn refuse_slug_collisions(files: &[PathBuf]) -> Result<()> {
    let mut seen: std::collections::HashMap<PathBuf, &Path> = Default::default();
    for f in files {
        let Ok(s) = crate::scenario::Scenario::load(f) else {
            continue;
        };
        if let Some(first) = seen.insert(s.default_cassette_path(), f) {
            return Err(crate::Error::usage(format!(
                "record: `{}` and `{}` would both write `{}`",
                first.display(),
                f.display(),
                s.default_cassette_path().display()
            ))
            .with_hint("give one of them a different `name:`"));
        }
    }
    Ok(())
}

/// `*.yaml`/`*.yml` in `dir` (sorted, non-recursive) with a top-level
/// `prompt:`; model scripts and sessions are skipped.
fn discover(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let rd = std::fs::read_dir(dir)
        .map_err(|e| crate::Error::usage(format!("record: read `{}`: {e}", dir.display())))?;
    let mut paths: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !(name.ends_with(".yaml") || name.ends_with(".yml")) || name.ends_with(".model.yaml") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        let has_prompt = serde_yaml::from_str::<serde_json::Value>(&text)
            .ok()
            .is_some_and(|v| v.get("prompt").is_some());
        if has_prompt {
            out.push(p);
        }
    }
    Ok(out)
}
