//! `reel report`: arguments and the thin glue to [`crate::html`].

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::cassette::Cassette;
use crate::error::{Error, Result};
use crate::exit::ExitStatus;
use crate::html::{self, Options};

#[derive(Debug, clap::Args)]
#[command(
    group(clap::ArgGroup::new("input").required(true)
        .args(["cassette", "rerun", "diff", "matrix", "eval"])),
    after_help = "Writes one self-contained HTML page (inline CSS and SVG, no network access, \
                  works with scripts off) for one of:\n  \
                  a recording:  reel report CASSETTE --out run.html\n  \
                  a rerun:      reel rerun CASSETTE --output-format json > rerun.json; \
                  reel report --rerun rerun.json --out rerun.html\n  \
                  a diff:       reel report --diff A B --out diff.html\n  \
                  a matrix:     reel report --matrix matrix.json (schema/report-matrix.json)\n  \
                  an eval:      reel report --eval DIR (eval directory; schema/eval-report.json)\n\
                  The page renders the run; it does not judge it: the exit code says whether \
                  the page was written, not whether the run passed.\n\
                  Exit codes: 0 written · 2 usage or unreadable input."
)]
pub struct ReportArgs {
    /// A recording to show.
    #[arg(value_name = "CASSETTE")]
    pub cassette: Option<PathBuf>,
    /// A rerun's JSON envelope (`reel rerun --output-format json`).
    #[arg(long, value_name = "RERUN.json")]
    pub rerun: Option<PathBuf>,
    /// Two recordings to compare, view by view.
    #[arg(long, num_args = 2, value_names = ["A", "B"])]
    pub diff: Option<Vec<PathBuf>>,
    /// A version matrix (cassettes x agent versions), schema/report-matrix.json.
    #[arg(long, value_name = "MATRIX.json")]
    pub matrix: Option<PathBuf>,
    /// An eval directory (or its report.json), schema/eval-report.json.
    #[arg(long, value_name = "EVAL_DIR")]
    pub eval: Option<PathBuf>,
    /// Where to write the page (atomically); stdout when absent.
    #[arg(long, short = 'o', value_name = "FILE.html")]
    pub out: Option<PathBuf>,
    /// The first turn of the conversation shown (1-based).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub from_turn: u64,
    /// Turns shown at most (the page says which were left out).
    #[arg(long, value_name = "N", default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_turns: u64,
    /// Bytes kept of one recorded body (tool input or result, text, file); the rest is cut with a note.
    #[arg(long, value_name = "BYTES", default_value_t = 4096, value_parser = clap::value_parser!(u64).range(64..))]
    pub body_cap: u64,
}

pub fn run(args: ReportArgs) -> Result<ExitStatus> {
    let opts = Options {
        from_turn: (args.from_turn - 1) as usize,
        max_turns: args.max_turns as usize,
        body_cap: args.body_cap as usize,
        ..Options::default()
    };
    let invalid = |e: html::rerun::InputError| {
        Error::usage(format!("report: {e}")).with_hint("see `reel report --help` for the inputs")
    };
    let page = if let Some(path) = &args.cassette {
        html::recording::render_file(path, &opts).map_err(load_error)?
    } else if let Some(path) = &args.rerun {
        html::rerun::render(path, &opts).map_err(invalid)?
    } else if let Some([a, b]) = args.diff.as_deref() {
        let diff =
            crate::diff::diff_cassettes(&load(a)?, &load(b)?, &crate::diff::DiffOptions::default());
        html::diff::render(&diff, opts.body_cap)
    } else if let Some(path) = &args.matrix {
        html::matrix::render(&html::matrix::MatrixInput::load(path).map_err(invalid)?)
    } else if let Some(path) = &args.eval {
        html::eval::render(&html::eval::EvalInput::load(path).map_err(invalid)?)
    } else {
        return Err(Error::usage("report: no input given"));
    }
    .map_err(|e| Error::failure(format!("report: rendering the page failed: {e}")))?;
    write(args.out.as_deref(), &page)?;
    if let Some(out) = &args.out {
        // Data went to a file: say where, on stderr (stdout stays empty).
        let _ = writeln!(
            anstream::stderr().lock(),
            "wrote {} ({} bytes)",
            out.display(),
            page.len()
        );
    }
    Ok(ExitStatus::Success)
}

fn load(path: &Path) -> Result<Cassette> {
    Cassette::load(path).map_err(load_error)
}

fn load_error(e: crate::cassette::LoadError) -> Error {
    Error::usage(format!("report: {e}")).with_hint(e.hint())
}

fn write(out: Option<&Path>, page: &str) -> Result<()> {
    match out {
        Some(path) => crate::atomic::write_atomic(path, page.as_bytes()).map_err(|e| {
            Error::usage(format!("report: cannot write {}: {e}", path.display()))
                .with_hint("check that the directory exists and is writable")
        }),
        None => {
            let _ = std::io::stdout().lock().write_all(page.as_bytes());
            Ok(())
        }
    }
}
