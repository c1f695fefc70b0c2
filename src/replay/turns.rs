//! Per-turn verdicts of a multi-turn cassette (docs/multi-turn.md): each
//! turn's `assert:` (frozen under `scenario.turns[i].assert`) is evaluated
//! against that turn's slice of the evidence — the events from its user
//! message to its `result`, as the recorder marked them in `reelTurns` —
//! and its outcomes join the cassette's, labelled `turn N` (their `source`
//! and the lead of their message), so every report shows them per turn and
//! a failing turn fails the verdict.

use serde_json::{Map, Value};

use super::buckets::{self, Evidence};
use crate::assert::{self, AssertionOutcome, Context};
use crate::cassette::Cassette;
use crate::evidence::{RunRecord, drive};

/// The reel-only cassette key of a multi-turn recording: the session id,
/// what `maxTurns` was applied, and one mark per turn.
pub const REEL_TURNS: &str = "reelTurns";

/// One turn to judge: its 1-based number, its slice's re-drive, its items.
pub struct TurnEvidence {
    pub number: usize,
    pub run: RunRecord,
    pub items: Vec<Map<String, Value>>,
}

/// The `[start, end)` event range of each marked turn, in order.
pub fn event_ranges(cassette: &Cassette) -> Vec<(usize, usize)> {
    let Some(marks) = cassette
        .doc
        .get(REEL_TURNS)
        .and_then(|t| t.get("turns"))
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    let total = cassette.event_lines().len();
    marks
        .iter()
        .map(|m| {
            let n = |k: &str| m.get(k).and_then(Value::as_u64).map(|v| v as usize);
            let start = n("eventStart").unwrap_or(total).min(total);
            let end = n("eventEnd").unwrap_or(total).clamp(start, total);
            (start, end)
        })
        .collect()
}

/// Each turn with assertions, its slice re-driven. Read before the
/// cassette's own re-drive, which may take its lines away.
pub fn collect(cassette: &Cassette) -> Vec<TurnEvidence> {
    let ranges = event_ranges(cassette);
    let Some(turns) = cassette.scenario().get("turns").and_then(Value::as_array) else {
        return Vec::new();
    };
    let control_out = cassette.control_out();
    // Read once; each turn takes its slice (no per-turn walk from the start).
    let lines: Vec<_> = cassette.event_lines().collect();
    let mut out = Vec::new();
    for (i, turn) in turns.iter().enumerate() {
        let items: Vec<Map<String, Value>> = turn
            .get("assert")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|v| v.as_object().cloned()).collect())
            .unwrap_or_default();
        if items.is_empty() {
            continue;
        }
        let (start, end) = ranges.get(i).copied().unwrap_or((0, 0));
        let end = end.min(lines.len());
        let slice = lines[start.min(end)..end].to_vec();
        out.push(TurnEvidence {
            number: i + 1,
            run: drive(slice, control_out.as_deref()),
            items,
        });
    }
    out
}

/// The `turn N` label of an outcome of a turn's assertion (an authored
/// one, like a top-level outcome); `None` for a top-level or pseudo one.
pub fn turn_of(outcome: &AssertionOutcome) -> Option<&str> {
    outcome.source.as_deref().filter(|s| s.starts_with("turn "))
}

/// An authored outcome: a top-level assertion's or a turn's (not a
/// pseudo-assertion about the cassette).
pub fn is_authored(outcome: &AssertionOutcome) -> bool {
    outcome.source.is_none() || turn_of(outcome).is_some()
}

/// The outcomes of every turn's assertions, `turn N`-labelled; a turn the
/// recording never reached fails each of its assertions.
pub fn evaluate(
    cassette: &Cassette,
    turns: &[TurnEvidence],
    evidence: &Evidence,
    live: bool,
    notices: &mut Vec<String>,
) -> Vec<AssertionOutcome> {
    let mut out = Vec::new();
    for turn in turns {
        let stripped = buckets::strip(&turn.items, 0, evidence);
        let label = format!("turn {}", turn.number);
        notices.extend(stripped.warnings.iter().map(|w| format!("{w} ({label})")));
        let ctx = Context::new(cassette, &turn.run, None).for_live_run(live);
        for item in &stripped.items {
            let (mut outcome, warnings) = assert::check_with_warnings(item, &ctx);
            notices.extend(warnings);
            if !outcome.message.is_empty() {
                outcome.message = format!("{label}: {}", outcome.message);
            }
            outcome.source = Some(label.clone());
            out.push(outcome);
        }
    }
    out
}

/// One group of authored outcomes: a turn's (`turn N`) or the whole
/// session's (`label` `None`), with how many passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tally {
    pub label: Option<String>,
    pub passed: usize,
    pub total: usize,
}

/// The authored outcomes counted per turn, the whole session's first; empty
/// when no outcome belongs to a turn (a one-prompt scenario), so one-turn
/// reports read as before.
pub fn tally(outcomes: &[AssertionOutcome]) -> Vec<Tally> {
    tally_of(outcomes.iter().map(|a| (a.source.as_deref(), a.pass)))
}

/// [`tally`] over `(source, pass)` pairs, for a report that reads them back
/// from JSON (the HTML pages).
pub fn tally_of<'a>(outcomes: impl IntoIterator<Item = (Option<&'a str>, bool)>) -> Vec<Tally> {
    let mut out: Vec<Tally> = Vec::new();
    let mut any_turn = false;
    for (source, pass) in outcomes {
        let turn = source.filter(|s| s.starts_with("turn "));
        if source.is_some() && turn.is_none() {
            continue; // a pseudo-assertion about the cassette
        }
        any_turn |= turn.is_some();
        let label = turn.map(str::to_owned);
        let at = match out.iter().position(|t| t.label == label) {
            Some(i) => i,
            None => {
                out.push(Tally {
                    label,
                    passed: 0,
                    total: 0,
                });
                out.len() - 1
            }
        };
        out[at].total += 1;
        out[at].passed += usize::from(pass);
    }
    if !any_turn {
        return Vec::new();
    }
    // The session's own block first, then the turns in order.
    out.sort_by_key(|t| {
        t.label
            .as_deref()
            .and_then(|l| l.strip_prefix("turn ")?.parse::<usize>().ok())
            .unwrap_or(0)
    });
    out
}

/// `session 2/2 · turn 1 2/2 · turn 2 1/3`: the per-turn counts a status
/// line shows beside its total; `None` for a one-prompt scenario.
pub fn tally_line(outcomes: &[AssertionOutcome]) -> Option<String> {
    line_of(&tally(outcomes))
}

/// The text of a [`tally`]; `None` when it is empty.
pub fn line_of(tally: &[Tally]) -> Option<String> {
    (!tally.is_empty()).then(|| {
        tally
            .iter()
            .map(|t| {
                let label = t.label.as_deref().unwrap_or("session");
                format!("{label} {}/{}", t.passed, t.total)
            })
            .collect::<Vec<_>>()
            .join(" · ")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn outcome(source: Option<&str>, pass: bool) -> AssertionOutcome {
        AssertionOutcome {
            assertion: json!({"tool_called": "Read"}),
            pass,
            message: String::new(),
            evidence: None,
            source: source.map(str::to_owned),
            judge: None,
        }
    }

    #[test]
    fn a_one_prompt_verdict_has_no_tally() {
        let o = [outcome(None, true), outcome(Some("staleness"), false)];
        assert_eq!(tally_line(&o), None);
    }

    #[test]
    fn turns_are_counted_in_order_after_the_session_and_pseudo_ones_are_left_out() {
        let o = [
            outcome(Some("turn 2"), false),
            outcome(None, true),
            outcome(Some("turn 10"), true),
            outcome(Some("turn 2"), true),
            outcome(Some("cassette-format"), false),
            outcome(Some("turn 1"), true),
        ];
        assert_eq!(
            tally_line(&o).as_deref(),
            Some("session 1/1 · turn 1 1/1 · turn 2 1/2 · turn 10 1/1")
        );
    }
}
