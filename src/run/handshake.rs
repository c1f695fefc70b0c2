//! The handshake: stages 1–4 of a run (stage, serve, confine, drive) and
//! nothing after — no manifest, no cassette, no verdict. `reel doctor`
//! checks through it that a run's staging, scripted model and confinement
//! work on this machine, so it sees what a recording will.

use super::{LivePlan, RecordError, RunDir, stage_run, start_model, stop_model};
use super::{confined_agent, drive_agent, refuse_unrecordable, write_logs};
use crate::agent;

/// What the agent did against the plan's scripted model.
pub struct Handshake {
    pub log: agent::RunLog,
    /// Replies the scripted model served.
    pub served: usize,
    /// Problems the scripted model saw.
    pub model_problems: Vec<crate::model::Problem>,
}

/// Runs `plan`'s stages up to the agent's end; the run directory is removed
/// after (kept when the plan's agent could not be driven: see
/// [`RecordError::Run`]'s `run_dir`).
pub fn handshake(plan: &LivePlan<'_>) -> Result<Handshake, RecordError> {
    let mut warnings = Vec::new();
    let (run_dir, staged, _pre) = stage_run(plan, None, &mut warnings)?;
    let server = start_model(plan, &staged, run_dir.path())?;
    let confined = confined_agent(plan, &staged, run_dir.path(), server.as_ref());
    let (mcp, cmd) = match confined {
        Ok(c) => c,
        Err(e) => {
            stop_model(server);
            return Err(e);
        }
    };
    let log = drive_agent(plan, &cmd, mcp.as_ref());
    let (model_problems, served, _) = stop_model(server);
    let log = log?;
    write_logs(run_dir.path(), &log);
    let run_dir: RunDir = refuse_unrecordable(plan, &cmd, &log, run_dir)?;
    let _ = run_dir.finish(false);
    Ok(Handshake {
        log,
        served: served.len(),
        model_problems,
    })
}
