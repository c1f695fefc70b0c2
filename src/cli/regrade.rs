//! `reel regrade`: arguments and the thin glue to [`crate::judge::regrade`]
//! and [`crate::review`] (the new cassette is staged as `.new` unless
//! `--accept`). Rows on stderr, one JSON line per cassette on stdout.

use std::io::Write;
use std::path::PathBuf;

use crate::cassette::Cassette;
use crate::error::{Error, Result};
use crate::exit::ExitStatus;
use crate::judge::client::{Complete, MessagesClient};
use crate::judge::regrade::{Selection, regrade};
use crate::judge::{Budget, DEFAULT_VOTES};
use crate::model::{Script, ServeOptions, Server};
use crate::review::{self, StageOptions};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Re-judges the semantic_matches assertions whose frozen verdict is stale \
    (evidence, rubric, judge prompt or judge model changed), or those asked for, from the \
    recorded evidence; the agent never runs. The judge is the Messages API with \
    ANTHROPIC_API_KEY (REEL_JUDGE_BASE_URL / ANTHROPIC_BASE_URL override the URL), or \
    --judge-script FILE (a model script's `judge:` replies, token-free). The new cassette is \
    staged as NAME.cassette.json.new for `reel review` unless --accept.\n\n\
    Exit codes: 0 judged (or nothing stale); 1 an assertion's evidence was refused; 2 usage or \
    a budget refusal; 3 the judge could not be reached."
)]
pub struct RegradeArgs {
    /// Cassette files or directories (their `*.cassette.json`).
    #[arg(required = true, value_name = "CASSETTE|DIR")]
    pub paths: Vec<PathBuf>,
    /// Re-judge every judged assertion, stale or not.
    #[arg(long)]
    pub all: bool,
    /// Re-judge assertion N (1-based), stale or not; repeatable.
    #[arg(long = "assertion", value_name = "N")]
    pub assertions: Vec<usize>,
    /// A model script whose `judge:` replies answer the judge ($0, no credential).
    #[arg(long, value_name = "FILE")]
    pub judge_script: Option<PathBuf>,
    /// Judge calls per assertion (majority per claim).
    #[arg(long, default_value_t = DEFAULT_VOTES)]
    pub votes: u32,
    /// Refuse judging that could spend more than this (USD, live judge only).
    #[arg(long, value_name = "USD")]
    pub max_budget_usd: Option<f64>,
    /// Write the cassette in place instead of staging a `.new`.
    #[arg(long)]
    pub accept: bool,
}

pub fn run(args: RegradeArgs) -> Result<ExitStatus> {
    if args.votes == 0 {
        return Err(Error::usage("regrade: --votes must be at least 1"));
    }
    let files = files(&args)?;
    let (client, server) = judge(&args)?;
    let selection = Selection {
        all: args.all,
        assertions: args.assertions.clone(),
    };
    let mut budget = Budget {
        max_usd: args.max_budget_usd,
        ..Budget::default()
    };
    let mut status = ExitStatus::Success;
    for file in &files {
        let s = one(file, &*client, &selection, &args, &mut budget)?;
        status = status.worst(s);
    }
    drop(server);
    eprintln!(
        "judge cost: ${:.4}{} (the agent's cost is not included; a scripted judge is $0)",
        budget.spent_usd,
        if budget.unknown {
            " + calls of unknown price"
        } else {
            ""
        }
    );
    Ok(status)
}

fn one(
    file: &PathBuf,
    client: &dyn Complete,
    selection: &Selection,
    args: &RegradeArgs,
    budget: &mut Budget,
) -> Result<ExitStatus> {
    let mut cassette = Cassette::load(file)
        .map_err(|e| Error::usage(format!("regrade: {}: {e}", file.display())))?;
    let (rows, error) = match regrade(&mut cassette, client, selection, args.votes, budget) {
        Ok(rows) => (rows, None),
        Err((rows, e)) => (rows, Some(e)),
    };
    if let Some(n) =
        (selection.assertions.iter()).find(|n| !rows.iter().any(|r| r.assertion == **n))
    {
        return Err(Error::usage(format!(
            "regrade: {}: assertion {n} is not a semantic_matches assertion",
            file.display()
        ))
        .with_hint("`reel show` lists a cassette's assertions; numbers are 1-based"));
    }
    for r in &rows {
        let verdict = r.pass.map_or("", |p| if p { " PASS" } else { " FAIL" });
        eprintln!(
            "{}: assertion {} {}{verdict}{}",
            file.display(),
            r.assertion,
            r.action,
            if r.reasons.is_empty() {
                String::new()
            } else {
                format!(" ({})", r.reasons.join("; "))
            }
        );
    }
    let line = serde_json::json!({"file": file, "assertions": rows, "error": error.as_ref().map(|e| e.to_string())});
    let _ = writeln!(std::io::stdout(), "{line}");
    if rows.iter().any(|r| r.action == "regraded") {
        let opts = StageOptions {
            accept: args.accept,
            ci: review::ci_from_env(),
        };
        let outcome = review::stage_rerecording(file, &cassette, opts)?;
        if let review::Outcome::Pending {
            new,
            review_command,
            ..
        } = outcome
        {
            eprintln!(
                "{}: staged {} — review with `{review_command}`",
                file.display(),
                new.display()
            );
        }
    }
    Ok(match error {
        Some(crate::judge::JudgeError::Budget { .. }) => {
            return Err(Error::usage(
                error.map(|e| e.to_string()).unwrap_or_default(),
            ));
        }
        Some(e) => {
            eprintln!("regrade: {}: {e}", file.display());
            ExitStatus::Unverified
        }
        None if rows.iter().any(|r| r.action == "refused") => ExitStatus::Failure,
        None => ExitStatus::Success,
    })
}

fn files(args: &RegradeArgs) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in &args.paths {
        if p.is_dir() {
            out.extend(
                crate::discover::cassettes_in(p).map_err(|e| {
                    Error::usage(format!("regrade: cannot list {}: {e}", p.display()))
                })?,
            );
        } else if p.is_file() {
            out.push(p.clone());
        } else {
            return Err(Error::usage(format!(
                "regrade: no such file or directory: {}",
                p.display()
            )));
        }
    }
    Ok(out)
}

/// The operator's judge: the scripted endpoint (kept running while the
/// client is used) or the live Messages API.
fn judge(args: &RegradeArgs) -> Result<(Box<dyn Complete>, Option<Server>)> {
    if let Some(path) = &args.judge_script {
        let script = Script::load(path)
            .map_err(|e| Error::usage(format!("regrade: --judge-script: {e}")))?;
        let server = Server::start(script, ServeOptions::default())
            .map_err(|e| Error::usage(format!("regrade: start the scripted judge: {e}")))?;
        let client = MessagesClient::scripted(&server.url());
        return Ok((Box::new(client), Some(server)));
    }
    match MessagesClient::live_from_env() {
        Some(c) => Ok((Box::new(c), None)),
        None => Err(Error::usage("regrade: no judge configured").with_hint(
            "set ANTHROPIC_API_KEY for the Messages API, or pass --judge-script FILE (a model \
             script with `judge:` replies)",
        )),
    }
}
