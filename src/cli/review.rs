//! `reel review`, `reel accept`, `reel reject`, `reel pending`: arguments and
//! the thin glue to [`crate::review`].

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::cli::OutputFormat;
use crate::cli::flags::OutputFormatArg;
use crate::diff::{self, DiffOptions};
use crate::error::{Error, Result};
use crate::exit::ExitStatus;
use crate::review::{self, Pending};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "On a terminal: each pending re-recording (NAME.cassette.json.new) in turn — its \
        diff \
                  against the committed cassette, then a key: a accept (replace the cassette), \
                  r reject (delete the .new), s skip, q quit.\n\
                  Exit codes: 0 done · 2 usage (not a terminal, bad PATH)."
)]
pub struct ReviewArgs {
    /// A pending file, a cassette, or a directory searched recursively (default: `.`).
    #[arg(value_name = "PATH")]
    pub path: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit codes: 0 done (or nothing pending) · 2 usage (a PATH with nothing pending, \
        an unloadable .new)."
)]
pub struct ResolveArgs {
    /// Pending files, cassettes, or directories searched recursively (default: `.`).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
}

#[derive(Debug, clap::Args)]
#[command(
    mut_arg("output_format", |a| a.help("`text` (one line per pending file) or `json` (envelope, \
        schema/pending.json)")),
    after_help = "Lists pending re-recordings on stdout.\n\
                  Exit codes: 0 none pending · 1 some pending · 2 usage.")]
pub struct PendingArgs {
    /// Pending files, cassettes, or directories searched recursively (default: `.`).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub output_format: OutputFormatArg,
}

fn find(paths: &[PathBuf], command: &str) -> Result<Vec<Pending>> {
    let explicit = !paths.is_empty();
    let paths = if explicit {
        paths.to_vec()
    } else {
        vec![PathBuf::from(".")]
    };
    for p in &paths {
        if !p.exists() && !review::pending_path(p).exists() {
            return Err(
                Error::usage(format!("{command}: `{}` does not exist", p.display()))
                    .with_hint("pass a NAME.cassette.json.new, its cassette, or a directory"),
            );
        }
    }
    review::pending(&paths).map_err(|e| Error::usage(format!("{command}: {e}")))
}

/// `diff` of the committed cassette against its pending one (`None` when
/// either cannot be read, or there is no committed one).
fn diff_of(p: &Pending) -> Option<std::result::Result<diff::Diff, String>> {
    if !p.cassette_exists {
        return None;
    }
    Some(diff::diff_files(&p.cassette, &p.new, &DiffOptions::default()).map_err(|e| e.to_string()))
}

fn summary_of(p: &Pending) -> String {
    match diff_of(p) {
        None => "new cassette (nothing committed yet)".into(),
        Some(Ok(d)) => d.summary(),
        Some(Err(e)) => format!("cannot diff: {e}"),
    }
}

pub fn run_pending(args: PendingArgs) -> Result<ExitStatus> {
    let found = find(&args.paths, "pending")?;
    let code = if found.is_empty() {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    };
    match args.output_format.format {
        OutputFormat::Json => {
            let results: Vec<Value> = found
                .iter()
                .map(|p| {
                    json!({
                        "new": p.new.display().to_string(),
                        "cassette": p.cassette.display().to_string(),
                        "cassetteExists": p.cassette_exists,
                        "summary": summary_of(p),
                    })
                })
                .collect();
            let env = json!({
                "tool": "reel",
                "version": env!("CARGO_PKG_VERSION"),
                "command": "pending",
                "ok": found.is_empty(),
                "results": results,
                "error": Value::Null,
            });
            let _ = writeln!(std::io::stdout().lock(), "{env}");
        }
        OutputFormat::Text => {
            let mut out = std::io::stdout().lock();
            for p in &found {
                let _ = writeln!(out, "{}\t{}", p.new.display(), summary_of(p));
            }
            let mut err = std::io::stderr().lock();
            if found.is_empty() {
                let _ = writeln!(err, "no pending re-recordings");
            } else {
                let _ = writeln!(
                    err,
                    "{} pending re-recording(s); review with `reel review`, or `reel accept` / \
                        `reel reject`",
                    found.len()
                );
            }
        }
    }
    Ok(code)
}

fn resolve(args: ResolveArgs, command: &str, accept: bool) -> Result<ExitStatus> {
    let found = find(&args.paths, command)?;
    if found.is_empty() {
        if !args.paths.is_empty() {
            return Err(Error::usage(format!(
                "{command}: nothing pending under {}",
                args.paths
                    .iter()
                    .map(|p| format!("`{}`", p.display()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
            .with_hint("list the pending re-recordings with `reel pending`"));
        }
        let _ = writeln!(std::io::stderr().lock(), "{command}: nothing pending");
        return Ok(ExitStatus::Success);
    }
    let mut code = ExitStatus::Success;
    for p in &found {
        let done = if accept {
            review::accept(p)
        } else {
            review::reject(p)
        };
        match done {
            Ok(()) => {
                let msg = if accept {
                    format!("accepted {} → {}", p.new.display(), p.cassette.display())
                } else {
                    format!(
                        "rejected {} (kept {})",
                        p.new.display(),
                        p.cassette.display()
                    )
                };
                let _ = writeln!(std::io::stderr().lock(), "{msg}");
                let _ = writeln!(std::io::stdout().lock(), "{}", p.cassette.display());
            }
            Err(e) => {
                let e = Error::from(e);
                crate::cli::print_error(&e);
                code = code.worst(e.status());
            }
        }
    }
    Ok(code)
}

pub fn run_accept(args: ResolveArgs) -> Result<ExitStatus> {
    resolve(args, "accept", true)
}

pub fn run_reject(args: ResolveArgs) -> Result<ExitStatus> {
    resolve(args, "reject", false)
}

/// The terminal in non-canonical, no-echo mode until dropped, so one key
/// press is read without Enter.
struct RawKeys {
    saved: Option<libc::termios>,
}

impl RawKeys {
    fn new() -> RawKeys {
        // SAFETY: tcgetattr/tcsetattr on stdin with a zeroed struct they fill.
        unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(libc::STDIN_FILENO, &mut t) != 0 {
                return RawKeys { saved: None };
            }
            let saved = t;
            t.c_lflag &= !(libc::ICANON | libc::ECHO);
            t.c_cc[libc::VMIN] = 1;
            t.c_cc[libc::VTIME] = 0;
            libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &t);
            RawKeys { saved: Some(saved) }
        }
    }

    fn key(&self) -> Option<u8> {
        let mut b = [0u8; 1];
        match std::io::stdin().lock().read(&mut b) {
            Ok(1) => Some(b[0]),
            _ => None,
        }
    }
}

impl Drop for RawKeys {
    fn drop(&mut self) {
        if let Some(t) = &self.saved {
            // SAFETY: restoring the attributes read in `new`.
            unsafe {
                libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, t);
            }
        }
    }
}

pub fn run_review(args: ReviewArgs) -> Result<ExitStatus> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(
            Error::usage("review: needs a terminal (stdin and stdout)").with_hint(
                "in scripts use `reel pending`, `reel diff A A.new`, `reel accept PATH` or `reel \
                reject PATH`",
            ),
        );
    }
    let paths: Vec<PathBuf> = args.path.into_iter().collect();
    let found = find(&paths, "review")?;
    let mut out = anstream::stdout();
    if found.is_empty() {
        let _ = writeln!(out, "no pending re-recordings");
        return Ok(ExitStatus::Success);
    }
    let (mut accepted, mut rejected, mut skipped) = (0, 0, 0);
    let keys = RawKeys::new();
    let total = found.len();
    'each: for (i, p) in found.iter().enumerate() {
        let _ = writeln!(
            out,
            "[{}/{total}] {} → {}",
            i + 1,
            p.new.display(),
            p.cassette.display()
        );
        match diff_of(p) {
            None => {
                let _ = writeln!(out, "new cassette (nothing committed yet)");
            }
            Some(Ok(d)) => {
                let _ = out.write_all(diff::render::diff_text(&d, true).as_bytes());
            }
            Some(Err(e)) => {
                let _ = writeln!(out, "cannot diff: {e}");
            }
        }
        loop {
            let _ = write!(out, "accept (a), reject (r), skip (s), quit (q)? ");
            let _ = out.flush();
            let Some(k) = keys.key() else {
                let _ = writeln!(out);
                break 'each;
            };
            let _ = writeln!(out, "{}", k as char);
            let done = match k {
                b'a' | b'A' => review::accept(p).map(|()| {
                    accepted += 1;
                    format!("accepted: {} replaced", p.cassette.display())
                }),
                b'r' | b'R' => review::reject(p).map(|()| {
                    rejected += 1;
                    format!("rejected: {} deleted", p.new.display())
                }),
                b's' | b'S' | b'\n' => {
                    skipped += 1;
                    Ok("skipped".to_owned())
                }
                b'q' | b'Q' | 3 | 4 => break 'each,
                _ => continue,
            };
            match done {
                Ok(msg) => {
                    let _ = writeln!(out, "{msg}");
                }
                Err(e) => crate::cli::print_error(&Error::from(e)),
            }
            break;
        }
    }
    drop(keys);
    let left = total - accepted - rejected;
    let _ = writeln!(
        out,
        "review: {accepted} accepted, {rejected} rejected, {skipped} skipped, {left} still pending"
    );
    Ok(ExitStatus::Success)
}
