//! Serve the model: the scripted Messages API of a plan that has one, on a
//! loopback port with the run's placeholders filled, started before the
//! agent is confined (the sandbox needs its port) and stopped after it.

use std::path::Path;

use super::{LivePlan, RecordError, stage};

/// The scripted model of `plan` (if any), serving on a free loopback port
/// with the run's placeholders filled.
pub(super) fn start_model(
    plan: &LivePlan<'_>,
    staged: &stage::Staged,
    run_dir: &Path,
) -> Result<Option<crate::model::Server>, RecordError> {
    let Some(script) = &plan.script else {
        return Ok(None);
    };
    let vars = vec![
        ("config".into(), staged.config_dir.display().to_string()),
        ("home".into(), staged.home.display().to_string()),
        ("run".into(), run_dir.display().to_string()),
        (
            "cwd-slug".into(),
            crate::paths::slug(&staged.work_root.display().to_string()),
        ),
    ];
    let options = crate::model::ServeOptions {
        port: 0,
        log: Some(run_dir.join("model-requests.jsonl")),
        vars,
        upstream: plan.upstream.clone(),
    };
    crate::model::Server::start(script.clone(), options)
        .map(Some)
        .map_err(|e| RecordError::Setup {
            message: format!("start the scripted model: {e}"),
            hint: None,
        })
}

/// The scripted model stopped: what went wrong in it, the replies it served
/// and how many requests it forwarded to the live model (nothing without a
/// scripted model).
pub(super) fn stop_model(
    server: Option<crate::model::Server>,
) -> (
    Vec<crate::model::Problem>,
    Vec<(crate::model::ConversationId, usize)>,
    usize,
) {
    match server {
        Some(s) => {
            let (served, forwarded) = (s.served(), s.forwarded());
            (s.shutdown(), served, forwarded)
        }
        None => (Vec::new(), Vec::new(), 0),
    }
}
