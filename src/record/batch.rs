//! Batches of recordings, around the one-scenario [`super::record`]:
//!
//! - [`plan_stale`] (`record --rerecord-stale`): of a set of cassettes, the
//!   ones whose staleness fingerprint drifted, each to be re-recorded from its
//!   recorded `scenarioSource` into the same file;
//! - [`preflight`] (`record --dry-run`): everything a recording checks before
//!   it runs anything — the scenario and session load with record's
//!   refusals, the model script parses, a credential exists when there is no
//!   script, a default-path cassette of another scenario is not overwritten;
//! - [`run_jobs`] (`record --jobs N`): up to N recordings at once. Each run is
//!   isolated by construction: its own run directory (work root, `HOME`,
//!   `CLAUDE_CONFIG_DIR` inside it, named by slug and time), its own scripted
//!   model on an OS-assigned port, its own agent process group.
//!
//! Printing and exit codes stay in `cli/record.rs`.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{RecordError, RecordOptions, Recorded};
use crate::cassette::Cassette;
use crate::fingerprint::staleness;
use crate::paths;

/// A cassette to re-record: from `opts.scenario` into `opts.out`.
#[derive(Debug, Clone)]
pub struct Rerecord {
    pub opts: RecordOptions,
    pub cassette: PathBuf,
    /// The drift findings that make it stale.
    pub drift: Vec<String>,
}

/// What `--rerecord-stale` found in a set of cassettes.
#[derive(Debug, Default)]
pub struct StalePlan {
    /// Drifted cassettes, in input order.
    pub rerecord: Vec<Rerecord>,
    /// Cassettes whose fingerprint still matches.
    pub fresh: Vec<PathBuf>,
    /// Cassettes that cannot be judged or re-recorded, and why (an
    /// unreadable cassette, a gone `scenarioSource`).
    pub refused: Vec<(PathBuf, String)>,
    /// Cassettes whose drift cannot be determined (`unverifiable-*`), and
    /// the findings: reported, not re-recorded.
    pub unverifiable: Vec<(PathBuf, Vec<String>)>,
}

/// Sorts `cassettes` into drifted / fresh / not judgeable. `base` carries
/// the recording flags every re-recording inherits (agent, timeouts...);
/// its `scenario` and `out` are replaced per cassette.
pub fn plan_stale(cassettes: &[PathBuf], base: &RecordOptions) -> StalePlan {
    let mut plan = StalePlan::default();
    for path in cassettes {
        let cassette = match Cassette::load(path) {
            Ok(c) => c,
            Err(e) => {
                plan.refused.push((path.clone(), e.message()));
                continue;
            }
        };
        let st = staleness::compute(&cassette, None);
        let (unverifiable, drift): (Vec<_>, Vec<_>) = st
            .findings
            .into_iter()
            .partition(|f| is_unverifiable(f.class));
        if drift.is_empty() {
            if unverifiable.is_empty() {
                plan.fresh.push(path.clone());
            } else {
                plan.unverifiable.push((
                    path.clone(),
                    unverifiable.into_iter().map(|f| f.message).collect(),
                ));
            }
            continue;
        }
        let Some(source) = cassette.scenario_source() else {
            plan.refused.push((
                path.clone(),
                "drifted, but it records no scenarioSource to re-record from — re-record it by \
                    hand: `reel record SCENARIO.yaml --out <this cassette>`"
                    .into(),
            ));
            continue;
        };
        let scenario = paths::lexical(&cassette.dir().join(source));
        if !scenario.is_file() {
            plan.refused.push((
                path.clone(),
                format!(
                    "drifted, but its recorded scenarioSource {source} ({}) is gone — re-record it \
                        from the scenario's new place with `--out`",
                    scenario.display()
                ),
            ));
            continue;
        }
        let mut opts = base.clone();
        opts.scenario = scenario;
        opts.out = Some(path.clone());
        plan.rerecord.push(Rerecord {
            opts,
            cassette: path.clone(),
            drift: drift.into_iter().map(|f| f.message).collect(),
        });
    }
    plan
}

fn is_unverifiable(class: staleness::FindingClass) -> bool {
    serde_json::to_value(class)
        .ok()
        .and_then(|v| v.as_str().map(|s| s.starts_with("unverifiable-")))
        .unwrap_or(false)
}

/// Every check a recording of `opts` makes before running anything
/// (`super::prepare`); the cassette it would write. Runs nothing and
/// writes nothing.
pub fn preflight(opts: &RecordOptions) -> Result<PathBuf, RecordError> {
    super::prepare(opts).map(|p| p.cassette_path)
}

/// Records every job, at most `parallel` at once; results in input order.
/// `started(i)` is called when job `i` begins (for progress lines). A panic
/// inside one recording becomes that job's error, never the batch's.
pub fn run_jobs(
    jobs: &[RecordOptions],
    parallel: usize,
    started: impl Fn(usize) + Sync,
) -> Vec<Result<Recorded, RecordError>> {
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<Result<Recorded, RecordError>>>> =
        jobs.iter().map(|_| Mutex::new(None)).collect();
    let workers = parallel.clamp(1, jobs.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(job) = jobs.get(i) else { break };
                    started(i);
                    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        super::record(job)
                    }))
                    .unwrap_or_else(|_| {
                        Err(RecordError::Setup {
                            message: format!(
                                "internal error while recording `{}` (a bug — please report it)",
                                job.scenario.display()
                            ),
                            hint: None,
                        })
                    });
                    if let Ok(mut slot) = slots[i].lock() {
                        *slot = Some(outcome);
                    }
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|m| {
            m.into_inner().ok().flatten().unwrap_or_else(|| {
                Err(RecordError::Setup {
                    message:
                        "a recording worker stopped before finishing (a bug — please report it)"
                            .into(),
                    hint: None,
                })
            })
        })
        .collect()
}
