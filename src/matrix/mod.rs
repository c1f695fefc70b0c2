//! Reruns across Claude Code releases: the cassettes × releases matrix
//! ([`run`]), where each cassette first changed ([`mark_changes`]), and the
//! search for the release that changed it ([`bisect`]).
//!
//! Every cell is one ordinary rerun (`crate::rerun`) with the release's
//! program from the agent cache, so a cell means exactly what `reel rerun`
//! means: the verdict, the divergences from the recording, the time taken.
//!
//! Not here: installing releases (`agents`), printing (`report::matrix`).
//!
//! A failing cell whose cause lies outside the skill is marked by
//! `Cell::environment_cause` (a phone-home caught by the tripwire, no model
//! request made) and exits 3. `bisect` searches the registry's release list.

pub mod bisect;

use std::path::PathBuf;
use std::time::Duration;

use rayon::prelude::*;
use semver::Version;

use crate::agents::Installed;
use crate::exit::ExitStatus;
use crate::rerun::{Outcome, Rerun, RerunError, RerunOptions};

/// One cassette under one release.
#[derive(Debug)]
pub struct Cell {
    pub file: PathBuf,
    pub version: Version,
    pub result: CellResult,
    /// The first release (in ascending order) at which this cassette's
    /// verdict or fresh replies differ from the release before it.
    pub first_change: bool,
}

/// What a cell's rerun gave.
#[derive(Debug)]
pub enum CellResult {
    Done(Box<Rerun>),
    Refused {
        status: ExitStatus,
        error: RerunError,
        elapsed: Duration,
    },
}

impl Cell {
    /// The exit status this cell stands for: a failure whose cause lies
    /// outside the skill ([`Cell::environment_cause`]) is the environment's
    /// (could not run here, exit 3), not the skill's (exit 1).
    pub fn status(&self) -> ExitStatus {
        match &self.result {
            CellResult::Done(_) if self.environment_cause().is_some() => ExitStatus::COULD_NOT_RUN,
            CellResult::Done(r) if r.outcome == Outcome::Fail => ExitStatus::Failure,
            CellResult::Done(_) => ExitStatus::Success,
            CellResult::Refused { status, .. } => *status,
        }
    }

    /// Why a failing cell failed for a reason outside the skill, if it did:
    /// every failure is the agent reaching for another host through the
    /// offline tripwire (a release phoning home), or the agent ended before
    /// its first model request (it crashed or refused at start).
    pub fn environment_cause(&self) -> Option<String> {
        let CellResult::Done(r) = &self.result else {
            return None;
        };
        if r.outcome != Outcome::Fail || r.failures.is_empty() {
            return None;
        }
        if r.failures.iter().all(|f| f.contains("(escape)")) {
            return Some(format!(
                "Claude Code {} reached for another host at start-up or exit (blocked by the \
                    offline tripwire): the release phones home, the skill is not at fault — {}",
                self.version, r.failures[0]
            ));
        }
        if r.replies_served == 0 {
            return Some(format!(
                "Claude Code {} ended before its first model request (it crashed or refused at \
                    start): {}",
                self.version, r.failures[0]
            ));
        }
        None
    }

    pub fn elapsed(&self) -> Duration {
        match &self.result {
            CellResult::Done(r) => r.elapsed,
            CellResult::Refused { elapsed, .. } => *elapsed,
        }
    }

    pub fn divergence_count(&self) -> usize {
        match &self.result {
            CellResult::Done(r) => r.divergences.len(),
            CellResult::Refused { .. } => 0,
        }
    }

    /// What is compared between releases: the outcome and what the fresh
    /// run got back where it diverged (a tool result's text, a skill body).
    fn signature(&self) -> String {
        match &self.result {
            CellResult::Done(r) => {
                let mut sig = format!("{:?}|{}", r.outcome, r.failures.len());
                for d in &r.divergences {
                    sig.push_str(&format!(
                        "|{}:{:?}:{:?}:{:?}:{}",
                        d.conversation, d.turn, d.tool, d.kind, d.now
                    ));
                }
                sig
            }
            CellResult::Refused { status, .. } => format!("refused:{status:?}"),
        }
    }
}

/// The cells of `files` × `releases`, in file-then-version order, keeping
/// only `shard`'s (keyed by `file-name@version`, so a CI matrix splits the
/// cells, not just the cassettes).
pub fn plan(
    files: &[PathBuf],
    releases: &[Installed],
    shard: Option<crate::shard::Shard>,
) -> Vec<(PathBuf, Installed)> {
    let mut cells = Vec::new();
    for f in files {
        for r in releases {
            let name = f.file_name().map_or_else(
                || f.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            if shard.is_none_or(|s| s.contains_key(&format!("{name}@{}", r.version))) {
                cells.push((f.clone(), r.clone()));
            }
        }
    }
    cells
}

/// Reruns every planned cell, `jobs` at once; the cells come back in plan
/// order with their first changes marked.
pub fn run(planned: &[(PathBuf, Installed)], opts: &RerunOptions, jobs: usize) -> Vec<Cell> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.clamp(1, planned.len().max(1)))
        .build();
    let one = |(file, release): &(PathBuf, Installed)| run_cell(file, release, opts);
    let mut cells: Vec<Cell> = match pool {
        Ok(pool) => pool.install(|| planned.par_iter().map(one).collect()),
        Err(_) => planned.iter().map(one).collect(),
    };
    mark_changes(&mut cells);
    cells
}

/// One rerun of `file` under `release`.
pub fn run_cell(file: &std::path::Path, release: &Installed, opts: &RerunOptions) -> Cell {
    let started = std::time::Instant::now();
    let opts = RerunOptions {
        claude_program: Some(release.program.clone()),
        ..opts.clone()
    };
    let result = match crate::rerun::rerun(file, &opts) {
        Ok(r) => CellResult::Done(Box::new(r)),
        Err(error) => CellResult::Refused {
            status: match error {
                RerunError::Invalid { .. } => ExitStatus::Usage,
                RerunError::CannotRun { .. } => ExitStatus::COULD_NOT_RUN,
            },
            error,
            elapsed: started.elapsed(),
        },
    };
    Cell {
        file: file.to_path_buf(),
        version: release.version.clone(),
        result,
        first_change: false,
    }
}

/// Marks, per cassette, the first release whose cell differs from the cell
/// of the release before it (releases ascending; a shard sees only its own
/// cells, so it compares neighbours it ran).
pub fn mark_changes(cells: &mut [Cell]) {
    let mut order: Vec<usize> = (0..cells.len()).collect();
    order.sort_by(|&a, &b| {
        (&cells[a].file, &cells[a].version).cmp(&(&cells[b].file, &cells[b].version))
    });
    let mut marked = std::collections::HashSet::new();
    for pair in order.windows(2) {
        let (prev, next) = (pair[0], pair[1]);
        if cells[prev].file != cells[next].file || marked.contains(&cells[next].file) {
            continue;
        }
        if cells[prev].signature() != cells[next].signature() {
            marked.insert(cells[next].file.clone());
            cells[next].first_change = true;
        }
    }
}
