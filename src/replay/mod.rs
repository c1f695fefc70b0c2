//! `replay`: re-evaluate a cassette's assertions against its frozen recording,
//! token-free, and form the same verdict cowork-harness forms
//! (docs/spec/replay.md §2).
//!
//! Per cassette: choose the assert source ([`assert_source`]), compute
//! staleness (`crate::fingerprint::staleness`), re-drive the events into a
//! run record (`crate::evidence`), strip what this cassette cannot evaluate
//! ([`buckets`]), materialise the manifest ([`materialise`]), evaluate each
//! item (`crate::assert::check`), optionally measure the assertions'
//! mutation coverage (`--mutate`, [`mutate`]; never verdict-affecting),
//! append the pseudo-assertions, and form the verdict ([`verdict`]). Every
//! message is *returned* in the [`ReplayResult`] (never printed here), so a
//! directory can be replayed in parallel and still reported in a stable
//! order.
//!
//! This module does not render anything (that is `crate::report`) and does not
//! parse events or evaluate keys itself.
//!
//! Files: `assert_source` (frozen vs `--reassert`), `buckets` (bucket exclusion
//! and skip counts), `materialise` (the artifact manifest checked as if
//! written; written to a private temp dir only for `--mutate`), `verdict`
//! (`computeVerdict`), `fidelity` (departure 2), `run_result` (result fields)
//! and `mutate` (the `--mutate` coverage report). The bulk lists
//! `contextEvents` and `toolResults` stay typed; the JSON report streams them
//! as text made on the pool a window at a time and written in order by the
//! caller, tool results written by hand. `ReplayResult::run_result_members` is
//! the one member order both the serde form and the stream write.

pub mod assert_source;
pub mod buckets;
pub mod fidelity;
pub mod materialise;
pub mod mutate;
pub mod run_result;
pub mod turns;
pub mod verdict;

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

pub use assert_source::{AssertSource, ChosenAsserts};
pub use buckets::Skipped;
pub use verdict::{Lane, Outcome, Verdict};

use crate::assert::metrics::Measurement;
use crate::assert::{self, AssertionOutcome, Context};
use crate::cassette::{CASSETTE_VERSION, Cassette};
use crate::evidence::RunRecord;
use crate::evidence::timeline::TimelineFolds;
use crate::exit::ExitStatus;
use crate::fingerprint::staleness::{self, Gate, Staleness};
use run_result::RecordFacts;

/// How to replay.
#[derive(Debug, Clone, Default)]
pub struct ReplayOptions {
    /// `--strict`: every staleness finding fails.
    pub strict: bool,
    /// `--fail-on-skill-drift` (implied by the reassert modes).
    pub fail_on_skill_drift: bool,
    /// `--session FILE`: resolve skill sources from this session.
    pub session: Option<PathBuf>,
    /// `--best-effort-future-cassette`.
    pub best_effort_future: bool,
    /// Which `assert:` block to evaluate.
    pub assert_source: AssertSource,
    /// `--write` (reassert modes only).
    pub write: bool,
    /// `--allow-failing` (relaxes `--write`'s verdict gate).
    pub allow_failing: bool,
    /// Skip building the run-result evidence fields (`toolResults`,
    /// `contextEvents`, ...) of [`ReplayResult::run`]: set it when only the
    /// verdict and the text report are needed (the JSON envelope then lacks
    /// those fields).
    pub lean: bool,
    /// `--mutate` (with its scoping flags): add a mutation-coverage report
    /// (`mutation` + notices); never changes the verdict.
    pub mutate: Option<mutate::MutateOptions>,
    /// Judge the cassette as the live run it was just made from (record,
    /// rerun): manifest keys are evaluated against the run's files even when
    /// there are none (see `assert::Context::live`).
    pub live: bool,
    /// Where a live run's files really are (its work root, kept with the
    /// run directory when the verdict fails): failure messages name it
    /// instead of the replay's private root, which is never written.
    pub live_work_root: Option<PathBuf>,
}

/// The replay of one cassette file.
#[derive(Debug, Clone)]
pub struct ReplayResult {
    /// The file as given (or as listed from a directory).
    pub file: PathBuf,
    /// `::notice::`/`::warning::` lines to print before the footer, in order.
    pub notices: Vec<String>,
    /// A per-file error (`replay: <file>: <message>`); the result is then the
    /// synthetic error result and the exit contribution is 2.
    pub error: Option<String>,
    /// The run-result JSON (everything but `verdict`/`provenance`/`outcome`).
    pub run: Map<String, Value>,
    pub assertions: Vec<AssertionOutcome>,
    pub skipped: Skipped,
    pub staleness: Staleness,
    pub verdict: Verdict,
    pub outcome: Outcome,
    pub facts: RecordFacts,
    /// The scenario's `metrics:`, measured (empty when none are declared);
    /// beside the verdict, never in it.
    pub metrics: Vec<Measurement>,
    /// Lines to print after the footer (`--write` outcome).
    pub after: Vec<String>,
    /// This file's exit contribution (0, 1 or 2).
    pub exit_code: ExitStatus,
}

impl ReplayResult {
    /// The verdict's failures as a user reads them, one line each: the
    /// assertion key before a message that does not already start with it
    /// (most of the original's messages do: `artifact_json: …`), and, when
    /// two rows of one key fail with the same message (two `artifact_json`
    /// paths of one missing file), the row's `path` (else its parameters)
    /// after it, so the lines say which row each is.
    pub fn failure_lines(&self) -> Vec<String> {
        let failures = &self.verdict.failures;
        let failing: Vec<&AssertionOutcome> = self.assertions.iter().filter(|a| !a.pass).collect();
        let mut used = vec![false; failing.len()];
        failures
            .iter()
            .map(|f| {
                let Some(key) = &f.assertion else {
                    return f.message.clone();
                };
                let mut line = if f.message.starts_with(&format!("{key}:"))
                    || f.message.starts_with(&format!("{key}."))
                {
                    f.message.clone()
                } else {
                    format!("{key}: {}", f.message)
                };
                let twins = failures
                    .iter()
                    .filter(|g| g.assertion == f.assertion && g.message == f.message)
                    .count();
                let row = (0..failing.len()).find(|&i| !used[i] && failing[i].message == f.message);
                if let (true, Some(i)) = (twins > 1, row) {
                    used[i] = true;
                    if let Some(params) = failing[i].assertion.get(key.as_str()) {
                        match params.get("path") {
                            Some(Value::String(path)) => line.push_str(&format!(" (path: {path})")),
                            Some(path) => line.push_str(&format!(" (path: {path})")),
                            None => line.push_str(&format!(" ({params})")),
                        }
                    }
                }
                line
            })
            .collect()
    }

    /// `result.scenario` (frozen name, or the file path for an error result).
    pub fn scenario(&self) -> &str {
        self.run
            .get("scenario")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// `result.fidelity` (`replay:<f>`).
    pub fn fidelity(&self) -> &str {
        self.run
            .get("fidelity")
            .and_then(Value::as_str)
            .unwrap_or("replay")
    }

    /// `result.result` (`success` / `error`).
    pub fn result(&self) -> &str {
        self.run
            .get("result")
            .and_then(Value::as_str)
            .unwrap_or("error")
    }

    /// The `provenance` object of the envelope.
    pub fn provenance(&self) -> Value {
        if self.error.is_some() {
            return json!({"model": "unknown", "skill": "unknown", "ablated": false});
        }
        let model = if self.facts.models.is_empty() {
            "unknown".to_string()
        } else {
            self.facts.models.join(",")
        };
        json!({
            "model": model,
            "skill": format!(
                "{},{}",
                if self.facts.skill_offered { "offered" } else { "NOT-offered" },
                if self.facts.skill_invoked { "invoked" } else { "NOT-invoked" }
            ),
            "ablated": false,
        })
    }

    /// The full run-result object of the JSON envelope.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self.run_result_json()).unwrap_or(Value::Null)
    }

    /// The same object as [`ReplayResult::to_json`], serialised in place
    /// (its members as [`ReplayResult::run_result_members`] gives them).
    pub fn run_result_json(&self) -> impl serde::Serialize + '_ {
        RunResultJson(self)
    }

    /// The run-result object's members, in order, to `member`: `run`
    /// followed by `outcome`, `verdict`, `provenance` and `file` (each replacing a
    /// same-named key of `run` where it stands, like a map insert) —
    /// without copying `run`, which on a large cassette is the size of the
    /// recording. The one definition of the object that both the serde
    /// form and the JSON report's stream (`report::json`) write.
    pub fn run_result_members<E>(
        &self,
        mut member: impl FnMut(&str, RunResultMember<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let tail = [
            (
                "outcome",
                serde_json::to_value(self.outcome).unwrap_or(Value::Null),
            ),
            (
                "verdict",
                serde_json::to_value(&self.verdict).unwrap_or(Value::Null),
            ),
            ("provenance", self.provenance()),
            // reel's addition: which cassette this result is, so a batch's
            // JSON reads back file by file (as rerun's, verify's and rehash's).
            ("file", Value::from(self.file.display().to_string())),
        ];
        for (k, v) in &self.run {
            if let Some((_, replaced)) = tail.iter().find(|(t, _)| t == k) {
                member(k, RunResultMember::Value(replaced))?;
            } else if let (Value::Null, Some(bulk)) = (v, self.facts.bulk.field(k)) {
                // A bulk list's placeholder: the list, written straight
                // from the record's types.
                member(k, RunResultMember::Bulk(bulk))?;
            } else {
                member(k, RunResultMember::Value(v))?;
            }
        }
        for (k, v) in &tail {
            if !self.run.contains_key(*k) {
                member(k, RunResultMember::Value(v))?;
            }
        }
        Ok(())
    }
}

/// One member's value of the run-result object
/// ([`ReplayResult::run_result_members`]).
pub enum RunResultMember<'a> {
    Value(&'a Value),
    /// A bulk list, kept typed ([`run_result::Bulk`]).
    Bulk(run_result::BulkField<'a>),
}

impl serde::Serialize for RunResultMember<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RunResultMember::Value(v) => v.serialize(s),
            RunResultMember::Bulk(b) => b.serialize(s),
        }
    }
}

struct RunResultJson<'a>(&'a ReplayResult);

impl serde::Serialize for RunResultJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        self.0
            .run_result_members(|k, member| map.serialize_entry(k, &member))?;
        map.end()
    }
}

/// Why a cassette could not be replayed (a per-file error, exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("{0}")]
    Load(String),
    #[error(transparent)]
    AssertSource(#[from] assert_source::AssertSourceError),
    #[error(transparent)]
    Materialise(#[from] materialise::MaterialiseError),
    #[error(
        "--session cannot apply: the cassette's scenario.session is \"(inline)\" (no skill sources \
            to resolve)"
    )]
    InlineSession,
}

impl From<ReplayError> for crate::Error {
    fn from(e: ReplayError) -> Self {
        crate::Error::usage(e.to_string())
    }
}

/// Loads and replays one file: the per-file loop body of spec §2.2 (load,
/// `--session` notice, assert source, replay, `--write`). Never fails: a
/// problem becomes an error result with exit contribution 2.
pub fn replay_file(path: &Path, opts: &ReplayOptions) -> ReplayResult {
    let writing = opts.write && opts.assert_source.is_reassert();
    // Nothing is written and no mutant is built from the document, so its
    // bulky arrays can stay text, and its lines are read while it loads.
    let loaded = if writing || opts.mutate.is_some() {
        Cassette::load(path).map(|c| (c, None))
    } else {
        load_folding(path, opts)
    };
    let (cassette, read) = match loaded {
        Ok(loaded) => loaded,
        Err(e) => return error_result(path, Vec::new(), e.message()),
    };
    let mut notices = Vec::new();
    if let Some(session) = &opts.session {
        notices.push(session_notice(&cassette, session));
    }
    notices.extend(
        crate::snapshot::checkpoint::missing(path, &cassette.doc)
            .into_iter()
            .map(|m| format!("::warning:: [replay] {m}")),
    );
    let mut chosen = match assert_source::choose(&cassette, &opts.assert_source) {
        Ok(c) => c,
        Err(e) => return error_result(path, notices, e.to_string()),
    };
    if opts.assert_source == AssertSource::Frozen {
        chosen
            .notices
            .extend(assert_source::sibling_notices(&cassette));
    }
    if !writing {
        // Nothing reads the cassette after the replay: hand it over whole so
        // the re-drive can free the recorded lines as it reads them.
        let prefolded = match read {
            Some(folded) => Prefolded {
                run: Some(folded.lines.0),
                turns: folded.lines.1,
                timeline_folds: folded.timeline,
            },
            None => Prefolded::default(),
        };
        return match replay_inner(Cow::Owned(cassette), prefolded, &chosen, opts) {
            Ok(mut result) => {
                notices.append(&mut result.notices);
                result.notices = notices;
                result
            }
            Err(e) => error_result(path, notices, e.to_string()),
        };
    }
    let mut result = match replay_with(Cow::Borrowed(&cassette), &chosen, opts) {
        Ok(r) => r,
        Err(e) => return error_result(path, notices, e.to_string()),
    };
    notices.append(&mut result.notices);
    result.notices = notices;
    {
        if let Err(why) = write_gate(&cassette, &chosen, &result, opts) {
            result
                .after
                .push(format!("replay --write: {}: {why}", path.display()));
            result.exit_code = result.exit_code.worst(ExitStatus::Usage);
        } else {
            result.after.push(format!(
                "replay --write: {}: persisted the re-validated assert: block (events/controlOut \
                    unchanged)",
                path.display()
            ));
        }
    }
    result
}

/// What the streaming load folds: the run's record and, for a multi-turn
/// session, each turn's.
type FoldedRun = (RunRecord, Option<turns::TurnRuns>);

/// The lean load that reads and re-drives the lines while it scans
/// ([`Cassette::load_lean_reading`]). A multi-turn session's turn marks are
/// read off the file's end first, so the one re-drive folds each turn's
/// slice too.
fn load_folding(
    path: &Path,
    opts: &ReplayOptions,
) -> Result<
    (
        Cassette,
        Option<crate::cassette::FoldedWhileLoading<FoldedRun, TimelineFolds>>,
    ),
    crate::cassette::LoadError,
> {
    // The JSON result reads the timeline: parsed while the lines are.
    // A text report writes no `contextEvents`: their lines are not kept.
    let read = crate::evidence::LineReader {
        carried_lines: !opts.lean,
    };
    let fold_timeline: crate::cassette::FoldTimeline<'_, _> = &TimelineFolds::of_each;
    // The transcript is some of the file's text: the file's size bounds it
    // (a hint only).
    let text_room = std::fs::metadata(path).map_or(0, |m| m.len() as usize);
    let marks = turns::marks_from_tail(path);
    Cassette::load_lean_reading(
        path,
        &read,
        &mut |control_out, lines| {
            if marks.is_empty() {
                return (
                    RunRecord::from_read_lines(lines, control_out, text_room),
                    None,
                );
            }
            let (run, runs) =
                RunRecord::from_read_lines_by_turn(lines, control_out, text_room, &marks);
            let ranges = marks.clone();
            (run, Some(turns::TurnRuns { ranges, runs }))
        },
        (!opts.lean).then_some(fold_timeline),
    )
}

fn write_gate(
    cassette: &Cassette,
    chosen: &ChosenAsserts,
    result: &ReplayResult,
    opts: &ReplayOptions,
) -> Result<(), assert_source::WriteRefusal> {
    let evidence = evidence_of(cassette);
    let missing = assert_source::unverifiable_keys(&chosen.items, |k| evidence.is_active(k));
    if !missing.is_empty() {
        return Err(assert_source::WriteRefusal::Unverifiable(format!(
            "key(s) {} cannot be evaluated on this cassette (no controlOut / manifest / pre-run \
                baseline) and would silently skip on every replay — re-record instead",
            missing.join(", ")
        )));
    }
    if !result.verdict.pass && !opts.allow_failing {
        return Err(assert_source::WriteRefusal::Failing);
    }
    assert_source::write_back(cassette, chosen)
}

fn session_notice(cassette: &Cassette, session: &Path) -> String {
    let sources = crate::fingerprint::resolve_sources(
        crate::fingerprint::cassette_session(cassette),
        Some(cassette.dir()),
        Some(session),
    );
    let dirs = match (&sources.failure, sources.roots.is_empty()) {
        (Some(why), _) => format!("(none: {why})"),
        (None, true) => "(no skill sources declared)".to_string(),
        (None, false) => sources
            .roots
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    };
    format!(
        "::notice:: [replay] --session override in effect: {} -> {dirs}",
        session.display()
    )
}

/// Replays a loaded cassette with its frozen (or `opts.assert_source`) assertions.
/// This is the engine `record` calls for the verdict of a fresh recording.
pub fn replay_cassette(
    cassette: &Cassette,
    opts: &ReplayOptions,
) -> Result<ReplayResult, ReplayError> {
    let chosen = assert_source::choose(cassette, &opts.assert_source)?;
    replay_with(Cow::Borrowed(cassette), &chosen, opts)
}

fn evidence_of(cassette: &Cassette) -> buckets::Evidence {
    buckets::Evidence::of(cassette)
}

/// Pseudo-assertion with `assertion: {}` or `{replay_protocol_fidelity: true}`.
fn pseudo(protocol: bool, source: &str, message: String) -> AssertionOutcome {
    AssertionOutcome {
        assertion: if protocol {
            json!({assert::keys::name::REPLAY_PROTOCOL_FIDELITY: true})
        } else {
            json!({})
        },
        pass: false,
        message,
        evidence: None,
        source: Some(source.into()),
        judge: None,
    }
}

/// Which staleness gate this replay's flags select (first matching rule of
/// spec §2.5 step 16; the gating itself lives in `fingerprint::staleness`).
fn staleness_gate(opts: &ReplayOptions) -> Gate {
    if opts.strict {
        Gate::Strict
    } else if opts.fail_on_skill_drift || opts.assert_source.is_reassert() {
        Gate::FailOnSkillDrift
    } else if opts.session.is_some() {
        Gate::ExplicitSession
    } else {
        Gate::Bare
    }
}

/// The engine: one cassette, a chosen assertion block.
///
/// An owned cassette (`Cow::Owned`) gives its `events` lines to the re-drive,
/// which frees them as it reads: peak memory is then about the cassette, not
/// the cassette plus the record. A borrowed one is left untouched.
pub fn replay_with(
    cassette: Cow<'_, Cassette>,
    chosen: &ChosenAsserts,
    opts: &ReplayOptions,
) -> Result<ReplayResult, ReplayError> {
    replay_inner(cassette, Prefolded::default(), chosen, opts)
}

/// What the loader's streaming re-drive already folded
/// ([`Cassette::load_lean_reading`]): the whole run, each user turn's slice
/// (a multi-turn session), the timeline folds.
#[derive(Default)]
struct Prefolded {
    run: Option<RunRecord>,
    turns: Option<turns::TurnRuns>,
    timeline_folds: Option<TimelineFolds>,
}

/// [`replay_with`], with the re-drive already done when the loader did it.
fn replay_inner(
    mut cassette: Cow<'_, Cassette>,
    prefolded: Prefolded,
    chosen: &ChosenAsserts,
    opts: &ReplayOptions,
) -> Result<ReplayResult, ReplayError> {
    let mut r = read_cassette(&mut cassette, prefolded.run, prefolded.turns, chosen, opts)?;
    let cassette: &Cassette = &cassette;
    let (run, artifacts) = (&r.run, r.artifacts.as_deref());
    // 10. Materialise when a manifest key is active.
    let materialised = (r.evidence)
        .any_manifest_key_active(&r.stripped.items)
        .then(|| materialise_for(artifacts.unwrap_or_default(), opts.mutate.is_some()))
        .transpose()?;

    // 13, 14. Evaluate.
    let root = (opts.live_work_root.as_deref()).or(materialised.as_ref().map(|m| m.root()));
    let ctx = Context::new(cassette, run, root).for_live_run(opts.live);
    // A cassette too new for this build is refused before any assertion is
    // evaluated: its items may have shapes this build cannot read (the
    // original since 4.x; test/cassette-v13-object-form.test.ts).
    let refuse_future = cassette.is_future() && !opts.best_effort_future;
    let (mut assertions, metrics) = if refuse_future {
        (Vec::new(), Vec::new())
    } else {
        let inputs = EvalInputs {
            ctx: &ctx,
            judged: &r.judged,
            turns: &r.turn_evidence,
            evidence: &r.evidence,
            has_manifest: artifacts.is_some(),
        };
        evaluate_all(&inputs, &mut r.stripped, chosen, opts, &mut r.notices)
    };
    free_off_the_path(std::mem::take(&mut r.turn_evidence));
    // 15. --mutate: coverage report only, before the pseudo-assertions join.
    let mutation = opts.mutate.as_ref().map(|m| {
        let inputs = mutate::Inputs {
            cassette,
            artifacts: artifacts.unwrap_or_default(),
            items: &r.stripped.items,
            run,
            materialised: materialised.as_ref(),
        };
        mutation_pass(&inputs, m, &mut r.notices)
    });
    drop(materialised);
    // Evaluation was the record's last reader: the facts (and, in JSON mode,
    // the run-result fields) are moved out of it rather than copied — on a
    // large cassette it is the size of the recording.
    let mut facts = run_result::facts(r.run, !opts.lean);
    let folds = prefolded.timeline_folds;
    add_result_fields(&mut facts, cassette, folds, chosen, &metrics, opts);

    // 16. Pseudo-assertions, in the original's order.
    let stale_failures = || r.stale.failures(staleness_gate(opts));
    let (format, answers) = (&facts.format_problems, r.answer_problems);
    push_pseudo_assertions(
        &mut assertions,
        cassette,
        refuse_future,
        stale_failures,
        format,
        answers,
    );
    Ok(conclude(
        cassette,
        Judged {
            notices: r.notices,
            assertions,
            skipped: r.stripped.skipped,
            staleness: r.stale,
            facts,
            metrics,
            mutation,
        },
    ))
}

/// Step 15: the `--mutate` pass over `inputs`, its notices kept.
fn mutation_pass(
    inputs: &mutate::Inputs<'_>,
    plan: &mutate::MutateOptions,
    notices: &mut Vec<String>,
) -> mutate::MutationReport {
    let pass = mutate::run(inputs, plan);
    notices.extend(pass.notices);
    pass.report
}

/// Frees `spent` (each user turn's record, read no more once its
/// assertions are judged) on another of the pool's threads, while this one
/// writes the verdict: freeing a 50-turn replay's records one allocation at
/// a time took 3 ms of a 75 ms replay (issue 41). On a pool of one thread
/// (a small file), here.
fn free_off_the_path(spent: Vec<turns::TurnEvidence>) {
    if spent.is_empty() || rayon::current_num_threads() < 2 {
        return;
    }
    rayon::spawn(move || drop(spent));
}

/// Steps 3–12: what replay reads of the cassette before it evaluates.
struct Read {
    stale: Staleness,
    evidence: buckets::Evidence,
    notices: Vec<String>,
    artifacts: Option<Vec<crate::cassette::ManifestEntry>>,
    answer_problems: Vec<String>,
    turn_evidence: Vec<turns::TurnEvidence>,
    run: RunRecord,
    /// The frozen verdicts of judged assertions.
    judged: Vec<crate::judge::freeze::Assessed>,
    /// The items left after bucket exclusion (judged ones apart).
    stripped: buckets::Stripped,
}

/// Staleness, the legacy mode, the preamble notices, the manifest, each
/// turn's slice, then the re-drive (which may take the lines away, so
/// everything that reads them comes first), the judged assertions and the
/// bucket exclusion.
fn read_cassette(
    cassette: &mut Cow<'_, Cassette>,
    run: Option<RunRecord>,
    turn_runs: Option<turns::TurnRuns>,
    chosen: &ChosenAsserts,
    opts: &ReplayOptions,
) -> Result<Read, ReplayError> {
    let scenario = cassette.scenario();
    if opts.session.is_some() && scenario.get("session").and_then(Value::as_str) == Some("(inline)")
    {
        return Err(ReplayError::InlineSession);
    }
    // 3. Staleness; 4. legacy (no controlOut) mode.
    let stale = staleness::compute(cassette, opts.session.as_deref());
    let mut evidence = evidence_of(cassette);
    evidence.live = opts.live;
    let mut notices = preamble_notices(cassette, chosen, opts, &stale, &evidence);
    let artifacts = manifest_entries(cassette)?;
    // Read before the re-drive, which may take the lines away.
    let answer_problems = fidelity::recorded_answer_problems(cassette);
    // Each turn's slice: folded while loading, else read now.
    let turn_evidence = turns::collect(cassette, turn_runs);
    // 6. Re-drive.
    let run = redrive(cassette, run);
    // The re-drive's own warnings, as the original prints them while
    // indexing controlOut and reading the events.
    notices.extend(run.replay_warnings());
    // Judged assertions: a frozen verdict whose keys still match, or a loud
    // `needs regrade` (reel's departure; the original skips the key). A live
    // run's verdict reads what `record` just froze.
    let judged = crate::judge::freeze::assess(cassette, &run, &chosen.items);
    let unjudged = (!judged.is_empty()).then(|| without_judged(&chosen.items));
    // 9, 11, 12. Bucket exclusion.
    let items = unjudged.as_deref().unwrap_or(&chosen.items);
    let stripped = buckets::strip(items, chosen.expect_denied.len(), &evidence);
    notices.extend(stripped.warnings.iter().cloned());
    Ok(Read {
        stale,
        evidence,
        notices,
        artifacts,
        answer_problems,
        turn_evidence,
        run,
        judged,
        stripped,
    })
}

/// What the evaluation step reads beside the stripped items.
struct EvalInputs<'a> {
    ctx: &'a Context<'a>,
    judged: &'a [crate::judge::freeze::Assessed],
    turns: &'a [turns::TurnEvidence],
    evidence: &'a buckets::Evidence,
    has_manifest: bool,
}

/// Steps 13–14: the top-level items, the frozen judged verdicts, each
/// turn's assertions on its slice, then the declared metrics.
fn evaluate_all(
    inputs: &EvalInputs<'_>,
    stripped: &mut buckets::Stripped,
    chosen: &ChosenAsserts,
    opts: &ReplayOptions,
    notices: &mut Vec<String>,
) -> (Vec<AssertionOutcome>, Vec<Measurement>) {
    let ctx = inputs.ctx;
    let mut assertions = evaluate(ctx, &stripped.items, notices);
    for a in inputs.judged {
        let (outcome, notice) = crate::judge::freeze::replay_outcome(a, opts.strict);
        notices.extend(notice);
        match outcome {
            Some(o) => assertions.push(o),
            None => stripped.skipped.full += 1,
        }
    }
    assertions.extend(turns::evaluate(
        ctx.cassette,
        inputs.turns,
        inputs.evidence,
        opts.live,
        notices,
    ));
    let metrics = measure_metrics(ctx, inputs.has_manifest, &chosen.metrics, notices);
    (assertions, metrics)
}

/// `items` without their `semantic_matches` (judged apart, from the frozen
/// verdicts); an item left empty is dropped without a tally.
fn without_judged(items: &[Map<String, Value>]) -> Vec<Map<String, Value>> {
    (items.iter())
        .map(|m| {
            let mut m = m.clone();
            m.shift_remove(crate::judge::KEY);
            m
        })
        .collect()
}

/// The recorded artifacts written out for the manifest keys: checked only,
/// unless `--mutate` will perturb the files on disk.
fn materialise_for(
    entries: &[crate::cassette::ManifestEntry],
    mutate: bool,
) -> Result<materialise::Materialised, materialise::MaterialiseError> {
    if mutate {
        materialise::materialise_on_disk(entries)
    } else {
        materialise::materialise(entries)
    }
}

/// Each assertion item's outcome, in order; the evaluators' warnings join
/// `notices`.
fn evaluate(
    ctx: &Context<'_>,
    items: &[Map<String, Value>],
    notices: &mut Vec<String>,
) -> Vec<AssertionOutcome> {
    let mut assertions = Vec::with_capacity(items.len());
    for item in items {
        let (outcome, warnings) = assert::check_with_warnings(item, ctx);
        notices.extend(warnings);
        assertions.push(outcome);
    }
    assertions
}

/// What a replay found, before the verdict is formed ([`conclude`]).
struct Judged {
    notices: Vec<String>,
    assertions: Vec<AssertionOutcome>,
    skipped: Skipped,
    staleness: Staleness,
    facts: RecordFacts,
    metrics: Vec<Measurement>,
    mutation: Option<mutate::MutationReport>,
}

/// The verdict over what was judged, and the result that carries both.
fn conclude(cassette: &Cassette, judged: Judged) -> ReplayResult {
    let Judged {
        notices,
        assertions,
        skipped,
        staleness,
        mut facts,
        metrics,
        mutation,
    } = judged;
    let result_str = facts.result.clone().unwrap_or_else(|| "error".into());
    let verdict = verdict::compute(
        &verdict::VerdictInput {
            result: &result_str,
            result_error_kind: facts.result_error_kind.as_deref(),
            assertions: &assertions,
            stalled: facts.stalled,
            infra_errors: &facts.infra_errors,
            ..Default::default()
        },
        Lane::Replay,
    );
    let outcome = verdict::outcome(&result_str, &verdict);
    let run_json = run_result(
        cassette,
        &mut facts,
        &result_str,
        &assertions,
        skipped,
        &staleness,
        mutation.as_ref(),
    );
    let exit_code = verdict.exit_code;
    ReplayResult {
        file: cassette.path.clone(),
        notices,
        error: None,
        run: run_json,
        assertions,
        skipped,
        staleness,
        verdict,
        outcome,
        facts,
        metrics,
        after: Vec::new(),
        exit_code,
    }
}

/// The notices before any assertion: the load's, the assert source's, a
/// too-new format's (step 1), each staleness finding (step 3) and a
/// cassette without `controlOut` (step 4).
fn preamble_notices(
    cassette: &Cassette,
    chosen: &ChosenAsserts,
    opts: &ReplayOptions,
    stale: &Staleness,
    evidence: &buckets::Evidence,
) -> Vec<String> {
    let mut notices: Vec<String> = cassette.load_warnings.clone();
    notices.extend(chosen.notices.iter().cloned());
    if cassette.is_future() {
        notices.extend(future_notices(cassette, opts));
    }
    for f in &stale.findings {
        notices.push(format!(
            "::warning:: [replay] cassette stale: {}",
            f.message
        ));
    }
    // reel's own MCP check (what `verify-cassettes` fails on): a changed
    // server or its data, even outside the skill tree, is said here too.
    if let Some(Ok(Some(drift))) =
        crate::mcp::digest::cassette_drift(cassette, opts.session.as_deref())
    {
        notices.push(format!("::warning:: [replay] cassette stale: {drift}"));
    }
    if !evidence.has_control_out {
        notices.push(
            "::warning:: [replay] cassette has no controlOut (pre-full-fidelity) — question/gate \
                assertions are NOT checked; re-record to enable them"
                .into(),
        );
    }
    notices
}

/// The manifest entries (`None`: no `artifacts`). The manifest is
/// untrusted: a present `artifacts` of the wrong shape is refused
/// (cowork-harness throws on it while building the context).
fn manifest_entries(
    cassette: &Cassette,
) -> Result<Option<Vec<crate::cassette::ManifestEntry>>, ReplayError> {
    match cassette.doc.get("artifacts") {
        None => Ok(None),
        Some(_) => Ok(Some(cassette.artifacts().ok_or_else(|| {
            materialise::MaterialiseError::Malformed(
                "expected an array of manifest entries {path, bytes, sha256, body?, ...}".into(),
            )
        })?)),
    }
}

/// The run record: the loader's re-drive when it did one, else one from the
/// events (taken from an owned, fully loaded cassette, so they are freed as
/// read).
fn redrive(cassette: &mut Cow<'_, Cassette>, run: Option<RunRecord>) -> RunRecord {
    match (cassette, run) {
        (_, Some(run)) => run,
        (Cow::Owned(owned), None) if !owned.is_lean() => {
            let events = owned.take_events();
            RunRecord::from_taken_events(events, owned.control_out().as_deref())
        }
        (cassette, None) => RunRecord::from_cassette(cassette),
    }
}

/// The run-result fields beyond the record's: the measured `metrics` (only
/// when some are declared: an empty list is none) and, in JSON mode, the
/// timeline folds.
fn add_result_fields(
    facts: &mut RecordFacts,
    cassette: &Cassette,
    timeline_folds: Option<TimelineFolds>,
    chosen: &ChosenAsserts,
    metrics: &[Measurement],
    opts: &ReplayOptions,
) {
    if !chosen.metrics.is_empty() {
        let list = metrics.iter().map(Measurement::to_json).collect();
        facts.fields.insert("metrics".into(), Value::Array(list));
    }
    if opts.lean {
        return;
    }
    let folds = timeline_folds.or_else(|| {
        cassette
            .timeline_entries()
            .map(|timeline| TimelineFolds::of(&timeline))
    });
    if let Some(folds) = folds {
        run_result::timeline_fields(&mut facts.fields, folds);
    }
}

/// The notices of a cassette newer than this build: the frozen scenario's
/// keys it does not know, and `--best-effort-future-cassette`'s warning.
fn future_notices(cassette: &Cassette, opts: &ReplayOptions) -> Vec<String> {
    let mut notices = Vec::new();
    let scenario = cassette.scenario();
    let unknown: Vec<&str> = scenario
        .keys()
        .map(String::as_str)
        .filter(|k| !crate::scenario::SCENARIO_KEYS.contains(k))
        .collect();
    if !unknown.is_empty() {
        notices.push(format!(
            "::notice:: [replay] frozen scenario carries unknown top-level key(s) from a newer \
                format (not consulted by this build): {}",
            unknown.join(", ")
        ));
    }
    if opts.best_effort_future {
        notices.push(format!(
            "::warning:: [replay] cassette format v{} is newer than this build understands \
                (v{CASSETTE_VERSION}) — replaying anyway (--best-effort-future-cassette); \
                results may be unreliable",
            cassette.version
        ));
    }
    notices
}

/// Measures the chosen `metrics:` over the manifest the assertions read,
/// warning on each outcome the recording (not the run) caused.
fn measure_metrics(
    ctx: &Context<'_>,
    has_manifest: bool,
    decls: &[crate::scenario::metrics::MetricDecl],
    notices: &mut Vec<String>,
) -> Vec<Measurement> {
    let lane = ctx.cassette.scenario().get("lane").and_then(Value::as_str);
    let evidence = assert::metrics::Evidence {
        view: ctx.manifest(),
        has_manifest,
        lane_remote: lane == Some("remote"),
    };
    let measured = assert::metrics::measure(&evidence, decls);
    for m in &measured {
        if let Err(u) = &m.value
            && u.evidence_limited
        {
            notices.push(format!(
                "::warning:: [replay] metric \"{}\" unavailable ({}): {}",
                m.id,
                u.reason.as_str(),
                u.why
            ));
        }
    }
    measured
}

/// The pseudo-assertions that follow the authored ones, in the original's
/// order: staleness failures, a too-new format, cassette-format problems and
/// recorded answers that do not re-serialise. The staleness failures are
/// asked for only when the cassette is not refused as too new.
fn push_pseudo_assertions(
    assertions: &mut Vec<AssertionOutcome>,
    cassette: &Cassette,
    refuse_future: bool,
    staleness_failures: impl FnOnce() -> Vec<String>,
    format_problems: &[String],
    answer_problems: Vec<String>,
) {
    if refuse_future {
        assertions.push(pseudo(
            false,
            "cassette-format",
            format!(
                "cassette format too new: cassette format v{} is newer than this harness \
                    understands (v{CASSETTE_VERSION}) — results may be unreliable; upgrade reel \
                    (pass --best-effort-future-cassette to attempt replay anyway)",
                cassette.version
            ),
        ));
        return;
    }
    for m in staleness_failures() {
        assertions.push(pseudo(false, "staleness", m));
    }
    for m in format_problems {
        assertions.push(pseudo(true, "cassette-format", m.clone()));
    }
    for p in answer_problems {
        assertions.push(pseudo(true, "cassette-format", fidelity::message(&p)));
    }
}

/// Assembles the run-result object (spec §2.8) in the original's key order
/// where reel knows it; record-derived fields come from `facts.fields`.
fn run_result(
    cassette: &Cassette,
    facts: &mut RecordFacts,
    result: &str,
    assertions: &[AssertionOutcome],
    skipped: Skipped,
    stale: &Staleness,
    mutation: Option<&mutate::MutationReport>,
) -> Map<String, Value> {
    let mut m = result_header(cassette, mutation);
    m.insert("result".into(), json!(result));
    // Written only when the run stalled (the original's optional flag).
    if facts.stalled {
        m.insert("stalledOnQuestion".into(), json!(true));
    }
    for (k, v) in [
        ("resultErrorKind", &facts.result_error_kind),
        ("errorSource", &facts.error_source),
        ("resultSubtype", &facts.result_subtype),
    ] {
        if let Some(v) = v {
            m.insert(k.into(), json!(v));
        }
    }
    m.insert(
        "decisions".into(),
        Value::Array(std::mem::take(&mut facts.decisions)),
    );
    // Moved, not cloned: on a large cassette these are most of the result.
    for (k, v) in std::mem::take(&mut facts.fields) {
        m.insert(k, v);
    }
    m.insert("egress".into(), json!([]));
    m.insert(
        "assertions".into(),
        serde_json::to_value(assertions).unwrap_or_else(|_| json!([])),
    );
    // Departure 1: a replay-served answer is not "auto-answered".
    m.insert("nonReproducibleAnswers".into(), json!([]));
    m.insert("outDir".into(), json!("(replay)"));
    m.insert(
        "skippedAssertions".into(),
        serde_json::to_value(skipped).unwrap_or(Value::Null),
    );
    m.insert("nonDeterministic".into(), json!(false));
    let prompt = cassette.scenario().get("prompt").and_then(Value::as_str);
    m.insert("prompt".into(), json!(prompt.unwrap_or("")));
    m.insert("preRunLinkAware".into(), json!(cassette.version >= 10));
    if let Some(Value::Object(fp)) = cassette.doc.get("fingerprint") {
        let mut fp = fp.clone();
        fp.insert("frozen".into(), json!(true));
        m.insert("fingerprint".into(), Value::Object(fp));
    }
    if !stale.findings.is_empty() {
        m.insert(
            "staleness".into(),
            serde_json::to_value(&stale.findings).unwrap_or(Value::Null),
        );
    }
    in_original_order(m)
}

/// The run result's leading keys: the command, the scenario's name, lane,
/// fidelity and baseline (the scenario's or the original's defaults).
fn result_header(
    cassette: &Cassette,
    mutation: Option<&mutate::MutationReport>,
) -> Map<String, Value> {
    let scenario = cassette.scenario();
    let s = |k: &str, d: &str| {
        scenario
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or(d)
            .to_string()
    };
    let fidelity = s("fidelity", "container");
    let effective = cassette
        .effective_fidelity()
        .map(str::to_owned)
        .unwrap_or_else(|| fidelity.clone());
    let mut m = Map::new();
    m.insert("command".into(), json!("replay"));
    if let Some(report) = mutation {
        m.insert(
            "mutation".into(),
            serde_json::to_value(report).unwrap_or(Value::Null),
        );
    }
    m.insert("lane".into(), json!(s("lane", "local")));
    m.insert("scratchpadEvidenceComplete".into(), json!(false));
    m.insert(
        "scenario".into(),
        json!(
            scenario
                .get("name")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| cassette.path.display().to_string())
        ),
    );
    m.insert("mode".into(), json!("run"));
    if let Some(loc) = cassette.environment().and_then(|e| e.location) {
        m.insert("execution".into(), json!({"location": loc}));
    }
    m.insert("fidelity".into(), json!(format!("replay:{fidelity}")));
    m.insert(
        "effectiveFidelity".into(),
        json!(format!("replay:{effective}")),
    );
    m.insert("baseline".into(), json!(s("baseline", "latest")));
    m
}

/// The run-result keys in the order the original's replay writes them (its
/// `assembleRunResult` literal); `outcome`/`verdict`/`provenance` follow from
/// the envelope.
const RUN_RESULT_ORDER: &[&str] = &[
    "command",
    "mutation",
    "lane",
    "scratchpadEvidenceComplete",
    "referencesRead",
    "scenario",
    "mode",
    "execution",
    "fidelity",
    "effectiveFidelity",
    "baseline",
    "result",
    "resultErrorKind",
    "errorSource",
    "resultSubtype",
    "finalMessage",
    "stalledOnQuestion",
    "decisions",
    "toolCounts",
    "webSearches",
    "infraErrors",
    "evidenceErrors",
    "toolDurations",
    "skillActivity",
    "models",
    "thinking",
    "thinkingElided",
    "toolErrors",
    "modelUsage",
    "redundantToolCalls",
    "tasks",
    "context",
    "gateDeliveries",
    "egress",
    "assertions",
    "metrics",
    "subagents",
    "nonReproducibleAnswers",
    "usage",
    "cost",
    "skillsInvoked",
    "skillToolAvailable",
    "outDir",
    "staleness",
    "skippedAssertions",
    "nonDeterministic",
    "prompt",
    run_result::Bulk::CONTEXT_EVENTS,
    "hookEvents",
    "fileToolAttempts",
    "pathDenials",
    "presentedFiles",
    "preRunLinkAware",
    "fingerprint",
    run_result::Bulk::TOOL_RESULTS,
];

/// `m` with its keys in [`RUN_RESULT_ORDER`] (a key not listed keeps its
/// place after them). The values are moved, not copied.
fn in_original_order(m: Map<String, Value>) -> Map<String, Value> {
    let rank = |k: &str| {
        RUN_RESULT_ORDER
            .iter()
            .position(|o| *o == k)
            .unwrap_or(RUN_RESULT_ORDER.len())
    };
    let mut entries: Vec<(String, Value)> = m.into_iter().collect();
    entries.sort_by_key(|(k, _)| rank(k));
    entries.into_iter().collect()
}

/// The synthetic error result of a file that could not be replayed.
pub fn error_result(path: &Path, notices: Vec<String>, message: String) -> ReplayResult {
    let assertions = Vec::new();
    let verdict = verdict::compute(
        &verdict::VerdictInput {
            result: "error",
            assertions: &assertions,
            ..Default::default()
        },
        Lane::Replay,
    );
    let mut run = Map::new();
    run.insert("command".into(), json!("replay"));
    run.insert("scratchpadEvidenceComplete".into(), json!(false));
    run.insert("scenario".into(), json!(path.display().to_string()));
    run.insert("fidelity".into(), json!("replay"));
    run.insert("baseline".into(), json!(""));
    run.insert("result".into(), json!("error"));
    run.insert("decisions".into(), json!([]));
    run.insert("egress".into(), json!([]));
    run.insert("assertions".into(), json!([]));
    run.insert("outDir".into(), json!(""));
    run.insert("durationMs".into(), json!(0));
    run.insert("mode".into(), json!("run"));
    ReplayResult {
        file: path.to_path_buf(),
        notices,
        error: Some(message),
        run,
        assertions,
        skipped: Skipped::default(),
        staleness: Staleness::default(),
        outcome: Outcome::Errored,
        verdict,
        facts: RecordFacts::default(),
        metrics: Vec::new(),
        after: Vec::new(),
        exit_code: ExitStatus::Usage,
    }
}
