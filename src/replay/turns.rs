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

/// Each turn's slice re-driven in the loader's one pass
/// ([`RunRecord::from_read_lines_by_turn`]), for the `ranges` it was given.
pub struct TurnRuns {
    pub ranges: Vec<(usize, usize)>,
    pub runs: Vec<RunRecord>,
}

/// How much of a file's end [`marks_from_tail`] reads: `reelTurns` is the
/// document's last key, ~250 bytes a turn pretty-printed.
const TAIL_BYTES: u64 = 128 * 1024;

/// The `[start, end)` ranges of the `reelTurns` marks at the end of the
/// file at `path`, read before it is loaded so the one re-drive can fold
/// each turn's slice as it goes; empty when the tail holds none (a
/// one-prompt recording), or a mark without its range, or ranges out of
/// order. Only a guess: [`collect`] uses what it folded only when these
/// are the loaded document's own marks.
pub fn marks_from_tail(path: &std::path::Path) -> Vec<(usize, usize)> {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let mut tail = Vec::new();
    let from = len.saturating_sub(TAIL_BYTES);
    if file.seek(SeekFrom::Start(from)).is_err() || file.read_to_end(&mut tail).is_err() {
        return Vec::new();
    }
    let key = format!("\"{REEL_TURNS}\":");
    let Some(at) = memchr::memmem::rfind(&tail, key.as_bytes()) else {
        return Vec::new();
    };
    let rest = &tail[at + key.len()..];
    let Some(Ok(value)) = serde_json::Deserializer::from_slice(rest)
        .into_iter::<Value>()
        .next()
    else {
        return Vec::new();
    };
    let Some(marks) = value.get("turns").and_then(Value::as_array) else {
        return Vec::new();
    };
    let ranges: Option<Vec<(usize, usize)>> = (marks.iter())
        .map(|m| {
            let n = |k: &str| m.get(k)?.as_u64().map(|v| v as usize);
            Some((n("eventStart")?, n("eventEnd")?))
        })
        .collect();
    ranges
        .filter(|r| crate::evidence::ranges_in_order(r))
        .unwrap_or_default()
}

/// Each turn with assertions, its slice re-driven: taken from `folded`
/// (the loader's one pass) when it folded the document's own marks, else
/// re-driven here. Read before the cassette's own re-drive, which may take
/// its lines away.
pub fn collect(cassette: &Cassette, folded: Option<TurnRuns>) -> Vec<TurnEvidence> {
    let Some(turns) = cassette.scenario().get("turns").and_then(Value::as_array) else {
        return Vec::new();
    };
    let ranges = event_ranges(cassette);
    let mut folded: Vec<Option<RunRecord>> = match folded {
        Some(f) if f.ranges == ranges && f.runs.len() == ranges.len() => {
            f.runs.into_iter().map(Some).collect()
        }
        _ => Vec::new(),
    };
    let control_out = cassette.control_out();
    // Read once, only when a turn was not folded already; each turn takes
    // its slice (no per-turn walk from the start).
    let mut lines: Option<Vec<_>> = None;
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
        let run = match folded.get_mut(i).and_then(Option::take) {
            Some(run) => run,
            None => {
                let lines = lines.get_or_insert_with(|| cassette.event_lines().collect());
                let (start, end) = ranges.get(i).copied().unwrap_or((0, 0));
                let end = end.min(lines.len());
                drive(lines[start.min(end)..end].to_vec(), control_out.as_deref())
            }
        };
        out.push(TurnEvidence {
            number: i + 1,
            run,
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

    /// The loader's one pass folds each turn's slice to the record the
    /// slice alone re-drives to, and the marks read off the file's end are
    /// the document's own.
    #[test]
    fn the_one_pass_turn_records_are_the_slices_own() {
        use crate::evidence::RecordedLine;
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("cassettes/conversation.cassette.json");
        let cassette = Cassette::load(&path).unwrap();
        let ranges = event_ranges(&cassette);
        assert_eq!(ranges.len(), 3);
        assert_eq!(marks_from_tail(&path), ranges);
        let co = cassette.control_out();
        let lines: Vec<_> = cassette.event_lines().collect();
        let (whole, turns) = RunRecord::from_read_lines_by_turn(
            lines.iter().map(RecordedLine::read),
            co.as_deref(),
            0,
            &ranges,
        );
        assert_eq!(
            format!("{whole:?}"),
            format!("{:?}", drive(lines.clone(), co.as_deref()))
        );
        for ((start, end), run) in ranges.iter().zip(&turns) {
            let alone = drive(lines[*start..*end].to_vec(), co.as_deref());
            assert_eq!(
                format!("{run:?}"),
                format!("{alone:?}"),
                "turn {start}..{end}"
            );
        }
        // Replayed from the file (the one pass) and from a loaded cassette
        // (each slice re-driven): the same outcomes.
        let opts = crate::replay::ReplayOptions::default();
        let from_file = crate::replay::replay_file(&path, &opts);
        let from_loaded = crate::replay::replay_cassette(&cassette, &opts).unwrap();
        assert_eq!(
            format!("{:?}", from_file.assertions),
            format!("{:?}", from_loaded.assertions)
        );
        assert_eq!(tally(&from_file.assertions).len(), 4);
    }

    /// A line with two calls, a call outside every turn and a turn with
    /// none: each record is still the one its lines alone re-drive to (the
    /// whole run's fold copies the call inputs its turn's fold wrote).
    #[test]
    fn shared_call_inputs_keep_each_record_its_own() {
        use crate::evidence::RecordedLine;
        let call = |id: &str, cmd: &str| json!({"type": "tool_use", "id": id, "name": "Bash", "input": {"command": cmd, "n": [1, 2]}});
        let assistant = |content: Value| {
            json!({"type": "assistant", "message": {"role": "assistant", "content": content}})
                .to_string()
        };
        let lines = vec![
            assistant(json!([call("a", "ls")])),
            assistant(json!([call("b", "pwd"), call("c", "echo hi")])),
            assistant(json!([{"type": "text", "text": "between"}])),
            assistant(json!([call("d", "date")])),
            json!({"type": "result", "subtype": "success", "is_error": false, "result": "ok"})
                .to_string(),
        ];
        let ranges = [(1, 3), (4, 5)];
        let (whole, turns) = RunRecord::from_read_lines_by_turn(
            lines.iter().map(RecordedLine::read),
            None,
            0,
            &ranges,
        );
        assert_eq!(whole.tool_calls.len(), 4);
        assert_eq!(
            format!("{whole:?}"),
            format!("{:?}", drive(lines.clone(), None))
        );
        for ((start, end), run) in ranges.iter().zip(&turns) {
            let alone = drive(lines[*start..*end].to_vec(), None);
            assert_eq!(
                format!("{run:?}"),
                format!("{alone:?}"),
                "turn {start}..{end}"
            );
        }
        assert_eq!(turns[0].tool_calls.len(), 2);
    }

    /// The record as `{:?}` shows it, the `controlOut` index's map in key
    /// order (a `HashMap` shows its own order, which differs by instance).
    fn shown(record: &RunRecord) -> String {
        let mut record = record.clone();
        let bodies: std::collections::BTreeMap<_, _> =
            std::mem::take(&mut record.control_out.bodies)
                .into_iter()
                .collect();
        format!("{record:?} {bodies:?}")
    }

    /// The one-pass re-drive of a session cut at `ranges`: its whole-run
    /// record is the one [`drive`] makes of every line, and each turn's the
    /// one [`drive`] makes of its slice alone.
    fn assert_one_pass_is_each_alone(
        name: &str,
        lines: &[String],
        co: Option<&[&str]>,
        ranges: &[(usize, usize)],
    ) {
        use crate::evidence::RecordedLine;
        let read = || lines.iter().map(RecordedLine::read);
        let (whole, turns) = RunRecord::from_read_lines_by_turn(read(), co, 1 << 20, ranges);
        assert_eq!(
            shown(&whole),
            shown(&drive(lines.to_vec(), co)),
            "{name}: whole run"
        );
        assert_eq!(turns.len(), ranges.len(), "{name}");
        for ((start, end), turn) in ranges.iter().zip(&turns) {
            let alone = drive(lines[*start..(*end).min(lines.len())].to_vec(), co);
            assert_eq!(shown(turn), shown(&alone), "{name}: turn {start}..{end}");
        }
    }

    /// Cuts `n` lines into turns: a gap before the first and between two,
    /// an empty turn, and a last turn running past the lines.
    fn cut(n: usize, turns: usize) -> Vec<(usize, usize)> {
        let per = (n / turns).max(1);
        let mut ranges = vec![(n.min(1), n.min(1))];
        let mut at = n.min(1);
        while at < n {
            let end = (at + per).min(n);
            ranges.push((at, end));
            // A line between two turns belongs to none.
            at = end + usize::from(ranges.len() % 3 == 0);
        }
        ranges.push((n, n + 2));
        ranges
    }

    /// Every cassette of the repository (its own turn marks where it has
    /// them, else cut into turns), then its lines repeated into a longer
    /// session of more turns: sub-agents, `Skill` and fork scopes, questions
    /// and hooks carried across a turn's boundary, malformed and truncated
    /// streams.
    #[test]
    fn the_turn_folds_are_each_slice_alone_on_every_cassette() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut checked = 0;
        for dir in ["cassettes", "tests/data", "tests/compat"] {
            for entry in walkdir::WalkDir::new(root.join(dir)).sort_by_file_name() {
                let path = entry.unwrap().into_path();
                if !path.to_string_lossy().ends_with(".cassette.json") {
                    continue;
                }
                let Ok(cassette) = Cassette::load(&path) else {
                    continue;
                };
                let name = path.strip_prefix(root).unwrap().display().to_string();
                let co = cassette.control_out();
                let lines: Vec<String> = cassette
                    .event_lines()
                    .map(|l| l.text().into_owned())
                    .collect();
                let own = event_ranges(&cassette);
                let ranges = if own.is_empty() {
                    cut(lines.len(), 3)
                } else {
                    own
                };
                assert_one_pass_is_each_alone(&name, &lines, co.as_deref(), &ranges);
                let long: Vec<String> = lines
                    .iter()
                    .cycle()
                    .take((lines.len() * 40).min(900))
                    .cloned()
                    .collect();
                assert_one_pass_is_each_alone(&name, &long, co.as_deref(), &cut(long.len(), 7));
                checked += 1;
            }
        }
        assert!(checked >= 80, "only {checked} cassettes loaded");
    }

    #[test]
    fn marks_out_of_order_or_missing_are_no_guess() {
        let dir = tempfile::tempdir().unwrap();
        let write = |text: &str| {
            let p = dir.path().join("c.json");
            std::fs::write(&p, text).unwrap();
            marks_from_tail(&p)
        };
        let marks = |m: &str| format!(r#"{{"events": [], "reelTurns": {{"turns": [{m}]}}}}"#);
        assert_eq!(
            write(&marks(
                r#"{"eventStart": 0, "eventEnd": 2}, {"eventStart": 2, "eventEnd": 5}"#
            )),
            [(0, 2), (2, 5)]
        );
        assert_eq!(
            write(&marks(
                r#"{"eventStart": 0, "eventEnd": 4}, {"eventStart": 2, "eventEnd": 5}"#
            )),
            []
        );
        assert_eq!(write(&marks(r#"{"eventStart": 0}"#)), []);
        assert_eq!(write(r#"{"events": []}"#), []);
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
