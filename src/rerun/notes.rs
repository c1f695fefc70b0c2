//! The notices a rerun prints beside its verdict: what the fresh run met
//! (MCP sources, sandbox refusals, strict denials), what changed since the
//! recording and what to do about it, and when frozen replies are suspect.

use super::divergence::{self, Divergence, Kind};
use super::{RerunOptions, Sides, mcp_note};
use crate::cassette::Cassette;
use crate::model::ProblemKind;
use crate::run::LiveRun;

/// What the notes after a fresh run are drawn from.
pub(super) struct AfterRun<'a> {
    pub run: &'a LiveRun,
    pub freeze: &'a crate::mcp::Freeze,
    /// `--live-model`'s real API, when it served the run.
    pub upstream: Option<&'a crate::model::Upstream>,
    pub cassette: &'a Cassette,
    pub opts: &'a RerunOptions,
    pub sides: &'a Sides<'a>,
    pub divergences: &'a [Divergence],
    pub failures: &'a [String],
    /// The agent version recorded, and the one that ran now.
    pub versions: (&'a Option<String>, &'a Option<String>),
}

/// Every note about the fresh run and what changed since the recording, in
/// the order a reader wants them: what ran, then why it may differ.
pub(super) fn after_run(a: &AfterRun<'_>) -> Vec<String> {
    let mut notes = run_notes(a.run, a.freeze);
    if let Some(up) = a.upstream {
        let from = a.opts.from_turn.unwrap_or(1);
        notes.push(super::live_model::note(from, up, a.run.forwarded));
    }
    let passed = a.failures.is_empty();
    notes.extend(drift_notes(a.cassette, a.opts, passed, a.divergences));
    notes.extend(unknown_conversation_notes(a.run));
    notes.extend(version_note(a.versions.0, a.versions.1));
    if a.opts.explain {
        notes.extend(explained(a.sides));
    }
    notes.extend(frozen_replies_note(a.divergences, a.failures));
    notes
}

/// Which MCP source served each server, what the sandbox refused, and the
/// denials `--strict` answers turned into.
fn run_notes(run: &LiveRun, freeze: &crate::mcp::Freeze) -> Vec<String> {
    let mut notes: Vec<String> = mcp_note(run.mcp.as_ref(), freeze).into_iter().collect();
    notes.extend(
        run.denials
            .iter()
            .map(|d| format!("::notice:: [rerun] the sandbox refused what a tool tried: {d}")),
    );
    notes.extend(
        run.log
            .decisions
            .strict_denies
            .iter()
            .map(|m| format!("::warning:: [rerun] {m}")),
    );
    notes.extend(
        run.over_budget
            .iter()
            .map(|m| format!("::warning:: [rerun] {m}")),
    );
    notes
}

/// What changed since the recording is what this rerun ran: said, so a
/// divergence can be read against it, with what to do next.
fn drift_notes(
    cassette: &Cassette,
    opts: &RerunOptions,
    passed: bool,
    divergences: &[Divergence],
) -> Vec<String> {
    crate::fingerprint::staleness::compute(cassette, opts.session.as_deref())
        .findings
        .iter()
        .filter(|f| f.class.is_skill_drift())
        .map(|f| {
            let change = f.message.trim_end_matches(" — re-record");
            format!(
                "::notice:: [rerun] ran the current skill files; since the recording: {change} \
                    ({})",
                drift_advice(passed, divergences)
            )
        })
        .collect()
}

/// A request of no recorded conversation got a neutral answer: logged.
fn unknown_conversation_notes(run: &LiveRun) -> Vec<String> {
    run.model_problems
        .iter()
        .filter(|p| p.kind == ProblemKind::UnknownConversation)
        .map(|p| format!("::notice:: [rerun] {}", p.message))
        .collect()
}

fn version_note(recorded: &Option<String>, now: &Option<String>) -> Option<String> {
    (recorded != now).then(|| {
        format!(
            "::notice:: [rerun] the agent is {} now; the recording was made with {}",
            now.as_deref().unwrap_or("(unknown version)"),
            recorded.as_deref().unwrap_or("(unknown version)")
        )
    })
}

/// `--explain`: the differences the masks hid.
fn explained(sides: &Sides<'_>) -> Vec<String> {
    divergence::hidden_by_masks(
        sides.recorded,
        sides.recorded_roots,
        sides.fresh,
        sides.fresh_roots,
        sides.masks,
    )
    .into_iter()
    .map(|n| format!("::notice:: [rerun] {n}"))
    .collect()
}

/// Output files are not what the model saw: only a divergence in what went
/// back to the model makes its frozen replies suspect.
fn frozen_replies_note(divergences: &[Divergence], failures: &[String]) -> Option<String> {
    let model_saw_a_change = divergences.iter().any(|d| d.kind != Kind::File);
    (model_saw_a_change && failures.is_empty()).then(|| {
        "::notice:: [rerun] the fresh run diverged from the recording: the recorded model \
            replies were \
         made from other inputs, so assertions on what the model wrote may pass only because \
             its replies \
         are frozen — re-record to see what the model says now"
            .into()
    })
}

/// What helps after a rerun of changed skill files: `--write` only when the
/// fresh run matches and passes (writing a failing or diverged run would
/// freeze it as the new truth).
fn drift_advice(passed: bool, divergences: &[Divergence]) -> &'static str {
    if !passed {
        "the change broke the run: fix the skill files, or, if the change is intended, update the \
         scenario's assertions and re-record with `reel record`"
    } else if divergences.is_empty() {
        "`reel rerun --write` refreshes the cassette"
    } else if divergences.iter().any(|d| d.kind != Kind::File) {
        "re-record (`reel record`) to see what the model makes of the change; `--write \
         --accept-divergence` keeps this run, marked as diverged"
    } else {
        "only output files changed: if that is intended, `reel rerun --write --accept-divergence` \
         keeps this run, marked as diverged"
    }
}
