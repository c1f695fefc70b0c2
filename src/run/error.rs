//! Why a run wrote nothing ([`RecordError`]): every refusal and failure of
//! the run pipeline, and how each maps to the top-level error (exit code
//! and `hint:`). Named for `record`, its first caller; rerun, eval and the
//! matrix wrap it.

use std::path::PathBuf;

use super::stage;

/// Why nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error(transparent)]
    Scenario(#[from] crate::scenario::ScenarioError),
    #[error("load session of `{scenario}`: {message}")]
    Session { scenario: PathBuf, message: String },
    #[error("stage the work root: {0}")]
    Stage(#[from] stage::StageError),
    #[error("{message}")]
    Setup {
        message: String,
        hint: Option<String>,
    },
    /// The agent program could not be started (nothing ran).
    #[error("{message}\n    no cassette was written")]
    AgentMissing { message: String, hint: String },
    /// The run cannot be confined here (nothing ran).
    #[error("{0}\n    nothing was run")]
    Sandbox(crate::sandbox::Refusal),
    /// The agent run itself failed in a way that cannot be frozen.
    #[error("{message}")]
    Run {
        message: String,
        hint: Option<String>,
        run_dir: Option<PathBuf>,
    },
    /// The live verdict failed and `--allow-failing` was not given.
    #[error("refusing to freeze a failing run: {}", cause_then_details(failures))]
    FailingVerdict {
        failures: Vec<String>,
        run_dir: Option<PathBuf>,
    },
    #[error("write cassette `{path}`: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A re-recording could not be staged (CI refusing a differing one, or
    /// the write failing).
    #[error(transparent)]
    Rerecording(#[from] crate::review::StageError),
}

impl From<RecordError> for crate::Error {
    fn from(e: RecordError) -> Self {
        let (kind_usage, hint) = match &e {
            RecordError::Scenario(s) => return crate::Error::from(ScenarioPassthrough(s)),
            RecordError::Session { .. } => (
                true,
                Some("fix the session YAML the scenario names".to_owned()),
            ),
            RecordError::Stage(_) => (true, None),
            RecordError::Setup { hint, .. } => (true, hint.clone()),
            RecordError::AgentMissing { hint, .. } => (false, Some(hint.clone())),
            RecordError::Sandbox(refusal) => {
                return crate::Error {
                    kind: crate::error::ErrorKind::Unverified,
                    message: format!("record: {e}"),
                    hint: Some(refusal.hint()),
                };
            }
            RecordError::Run { hint, run_dir, .. } => (
                false,
                hint.clone().or_else(|| {
                    run_dir
                        .as_ref()
                        .map(|d| format!("the run's logs are kept in {}", d.display()))
                }),
            ),
            RecordError::FailingVerdict { run_dir, .. } => (
                false,
                Some(format!(
                    "fix the scenario or the skill, or pass --allow-failing to freeze it anyway{}",
                    run_dir
                        .as_ref()
                        .map(|d| format!(" (logs in {})", d.display()))
                        .unwrap_or_default()
                )),
            ),
            RecordError::Write { .. } => (true, None),
            RecordError::Rerecording(_) => {
                let RecordError::Rerecording(inner) = e else {
                    unreachable!()
                };
                let mut err = crate::Error::from(inner);
                err.message = format!("record: {}", err.message);
                return err;
            }
        };
        let msg = format!("record: {e}");
        let err = if kind_usage {
            crate::Error::usage(msg)
        } else {
            crate::Error::failure(msg)
        };
        match hint {
            Some(h) => err.with_hint(h),
            None => err,
        }
    }
}

struct ScenarioPassthrough<'a>(&'a crate::scenario::ScenarioError);

impl From<ScenarioPassthrough<'_>> for crate::Error {
    fn from(s: ScenarioPassthrough<'_>) -> Self {
        let hint = match s.0 {
            crate::scenario::ScenarioError::Invalid { hint, .. } => hint.clone(),
            _ => None,
        };
        let err = crate::Error::usage(format!("record: {}", s.0));
        match hint {
            Some(h) => err.with_hint(h),
            None => err,
        }
    }
}

/// The first failure on the first line, each other one on its own line
/// under it.
fn cause_then_details(failures: &[String]) -> String {
    let mut out = failures
        .first()
        .map(|f| f.replace('\n', "\n  "))
        .unwrap_or_default();
    for f in failures.iter().skip(1) {
        out.push_str("\n  also: ");
        out.push_str(&f.replace('\n', "\n    "));
    }
    out
}
