//! Where a fresh run parted from its recording, turn by turn.
//!
//! After each model turn the agent sends back what its tools produced: every
//! `tool_result` (matched by tool call: parallel calls finish in any order)
//! and the content that travels with them (a Skill call's body arrives as a
//! separate text block after `Launching skill: …`). Those are compared per
//! conversation and turn, then the answers delivered to the agent's prompts
//! (`controlOut`) and the produced files (the manifest).
//!
//! Both sides are normalised first, so only a real change shows:
//! - run paths → `{{cwd}}`, `{{config}}`, `{{home}}`, `{{run}}` ([`super::paths`]);
//! - UUIDs → `<uuid>`; long hex ids (agent ids, hashes) → `<hex>`;
//! - ISO-8601 timestamps → `<time>`;
//! - durations (`12ms`, `1.5s`, `3 seconds`, `duration_ms: 445`) → `<duration>`;
//! - `ls -l` style dates (`Aug 21 11:19`, `Aug 21  2025`) → `<date>`;
//! - Claude Code's per-user temp dir (`/tmp/claude-501/`) → `/tmp/claude-<uid>/`;
//! - control-request ids are not compared (they are random per run).
//!
//! Tool-use ids need no masking: the recorded replies are served with their
//! recorded ids.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use regex::Regex;
use serde::Serialize;
use serde_json::Value;

use super::paths::Roots;
use crate::protocol::{self, Line};

/// What diverged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A tool's result differs.
    ToolResult,
    /// A recorded tool call got no result in the fresh run.
    MissingResult,
    /// Content sent back with the results (a skill body) differs.
    UserContent,
    /// The fresh run ended before this recorded turn.
    MissingTurn,
    /// The agent asked for a turn the recording does not hold.
    RepliesExhausted,
    /// An answer delivered to a question or permission prompt differs.
    Answer,
    /// A produced file was added, removed or changed.
    File,
}

/// One divergence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Divergence {
    /// `main`, `subagent:<dispatching tool_use id>`, or `-` (answers, files).
    pub conversation: String,
    /// The turn (0-based, per conversation) whose tool results differ.
    pub turn: Option<usize>,
    pub tool: Option<String>,
    pub kind: Kind,
    /// Normalised, shortened recorded value.
    pub recorded: String,
    /// Normalised, shortened fresh value.
    pub now: String,
    /// A unified diff of the whole normalised values (`-` recorded, `+`
    /// now, two lines of context, long diffs kept head and tail); empty
    /// when one side is missing.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diff: Vec<String>,
}

/// Longest value kept in a divergence (head and tail, middle elided).
const EXCERPT: usize = 1200;
/// Most diff lines kept in a divergence (head and tail, middle elided).
const DIFF_LINES: usize = 30;

/// One conversation's turns as the agent saw them.
#[derive(Debug, Default)]
struct Turns {
    turns: Vec<TurnSeen>,
}

#[derive(Debug, Default)]
struct TurnSeen {
    message_id: Option<String>,
    /// (tool_use id, tool name) in block order.
    calls: Vec<(String, String)>,
    /// tool_use id → (normalised text, is_error).
    results: BTreeMap<String, (String, bool)>,
    /// Text blocks sent back after this turn.
    content: Vec<String>,
}

/// Conversations of a run by key (`None` = main).
fn turns_of(events: &[Value], roots: &Roots) -> BTreeMap<Option<String>, Turns> {
    let mut convs: BTreeMap<Option<String>, Turns> = BTreeMap::new();
    for v in events {
        match Line::of(v) {
            Line::Assistant(m) if m.model != Some("<synthetic>") => {
                let conv = convs
                    .entry(m.parent_tool_use_id.map(str::to_owned))
                    .or_default();
                let id = m.id.map(str::to_owned);
                let continues =
                    id.is_some() && conv.turns.last().is_some_and(|t| t.message_id == id);
                if !continues {
                    conv.turns.push(TurnSeen {
                        message_id: id,
                        ..TurnSeen::default()
                    });
                }
                let turn = conv.turns.last_mut().expect("a turn was just ensured");
                for b in m.blocks() {
                    if let protocol::Block::ToolUse {
                        id: Some(id), name, ..
                    } = b
                    {
                        turn.calls.push((id.to_owned(), name.to_owned()));
                    }
                }
            }
            Line::User(m) => {
                let Some(conv) = convs.get_mut(&m.parent_tool_use_id.map(str::to_owned)) else {
                    continue;
                };
                let text_blocks: Vec<String> = match m.content {
                    Some(Value::String(s)) => vec![s.clone()],
                    _ => Vec::new(),
                };
                for b in m.blocks() {
                    match b {
                        protocol::Block::ToolResult {
                            tool_use_id: Some(id),
                            content,
                            is_error,
                        } => {
                            let text = normalise(&protocol::tool_result_text(content), roots);
                            if let Some(turn) = conv
                                .turns
                                .iter_mut()
                                .rev()
                                .find(|t| t.calls.iter().any(|(c, _)| c == id))
                            {
                                turn.results.insert(id.to_owned(), (text, is_error));
                            }
                        }
                        protocol::Block::Text(t) => {
                            if let Some(turn) = conv.turns.last_mut() {
                                turn.content.push(normalise(t, roots));
                            }
                        }
                        _ => {}
                    }
                }
                if let Some(turn) = conv.turns.last_mut() {
                    turn.content
                        .extend(text_blocks.iter().map(|t| normalise(t, roots)));
                }
            }
            _ => {}
        }
    }
    convs
}

/// Compares the fresh run's events with the recording's.
pub fn compare_turns(
    recorded: &[Value],
    recorded_roots: &Roots,
    fresh: &[Value],
    fresh_roots: &Roots,
) -> Vec<Divergence> {
    let before = turns_of(recorded, recorded_roots);
    let after = turns_of(fresh, fresh_roots);
    let empty = Turns::default();
    let mut out = Vec::new();
    for (key, rec) in &before {
        let conversation = key
            .as_deref()
            .map_or_else(|| "main".to_owned(), |k| format!("subagent:{k}"));
        let now = after.get(key).unwrap_or(&empty);
        for (k, rt) in rec.turns.iter().enumerate() {
            let Some(nt) = now.turns.get(k) else {
                out.push(Divergence {
                    conversation: conversation.clone(),
                    turn: Some(k),
                    tool: rt.calls.first().map(|(_, n)| n.clone()),
                    kind: Kind::MissingTurn,
                    recorded: format!("turn {} was served", k + 1),
                    now: "the fresh run ended before this turn".into(),
                    diff: Vec::new(),
                });
                break;
            };
            for (id, name) in &rt.calls {
                let r = rt.results.get(id);
                let n = nt.results.get(id);
                match (r, n) {
                    (Some(r), Some(n)) if r == n => {}
                    (Some(r), Some(n)) => out.push(Divergence {
                        conversation: conversation.clone(),
                        turn: Some(k),
                        tool: Some(name.clone()),
                        kind: Kind::ToolResult,
                        recorded: shown(&r.0, r.1),
                        now: shown(&n.0, n.1),
                        diff: unified(&flagged(&r.0, r.1), &flagged(&n.0, n.1)),
                    }),
                    (Some(r), None) => out.push(Divergence {
                        conversation: conversation.clone(),
                        turn: Some(k),
                        tool: Some(name.clone()),
                        kind: Kind::MissingResult,
                        recorded: shown(&r.0, r.1),
                        now: "(no tool_result)".into(),
                        diff: Vec::new(),
                    }),
                    // The recording itself holds no result (the run ended).
                    (None, _) => {}
                }
            }
            if rt.content != nt.content {
                let (a, b) = (rt.content.join("\n"), nt.content.join("\n"));
                out.push(Divergence {
                    conversation: conversation.clone(),
                    turn: Some(k),
                    tool: rt.calls.first().map(|(_, n)| n.clone()),
                    kind: Kind::UserContent,
                    recorded: excerpt(&a),
                    now: excerpt(&b),
                    diff: unified(&a, &b),
                });
            }
        }
    }
    out
}

/// Compares the answers delivered to the agent's prompts (`controlOut`
/// control responses, request ids dropped, in order).
pub fn compare_answers(
    recorded: &[String],
    recorded_roots: &Roots,
    fresh: &[String],
    fresh_roots: &Roots,
) -> Vec<Divergence> {
    let answers = |lines: &[String], roots: &Roots| -> Vec<String> {
        lines
            .iter()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|v| match Line::of(&v) {
                Line::ControlResponse(r) => {
                    let body = r.get("response")?.get("response")?;
                    // Only answers to prompts: permission and question replies.
                    body.get("behavior")?;
                    Some(normalise(&body.to_string(), roots))
                }
                _ => None,
            })
            .collect()
    };
    let a = answers(recorded, recorded_roots);
    let b = answers(fresh, fresh_roots);
    let mut out = Vec::new();
    for i in 0..a.len().max(b.len()) {
        let (r, n) = (a.get(i), b.get(i));
        if r != n {
            out.push(Divergence {
                conversation: "-".into(),
                turn: None,
                tool: None,
                kind: Kind::Answer,
                recorded: r.map_or("(none)".into(), |s| excerpt(s)),
                now: n.map_or("(none)".into(), |s| excerpt(s)),
                diff: Vec::new(),
            });
        }
    }
    out
}

/// Compares two manifests (`artifacts`): files added, removed, changed.
pub fn compare_files(recorded: Option<&Value>, fresh: Option<&Value>) -> Vec<Divergence> {
    let index = |v: Option<&Value>| -> BTreeMap<String, String> {
        v.and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|e| {
                let path = e.get("path")?.as_str()?.to_owned();
                let sha = e
                    .get("sha256")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                Some((path, sha))
            })
            .collect()
    };
    let a = index(recorded);
    let b = index(fresh);
    let mut out = Vec::new();
    let file = |path: &str, recorded: String, now: String| Divergence {
        conversation: "-".into(),
        turn: None,
        tool: Some(path.to_owned()),
        kind: Kind::File,
        recorded,
        now,
        diff: Vec::new(),
    };
    for (path, sha) in &a {
        match b.get(path) {
            None => out.push(file(path, format!("sha256 {sha}"), "(removed)".into())),
            Some(s) if s != sha => {
                out.push(file(path, format!("sha256 {sha}"), format!("sha256 {s}")))
            }
            _ => {}
        }
    }
    for (path, sha) in &b {
        if !a.contains_key(path) {
            out.push(file(path, "(absent)".into(), format!("sha256 {sha}")));
        }
    }
    out
}

/// A value as a divergence shows it: `[error] ` before an error result.
fn shown(text: &str, is_error: bool) -> String {
    excerpt(&flagged(text, is_error))
}

fn flagged(text: &str, is_error: bool) -> String {
    if is_error {
        format!("[error] {text}")
    } else {
        text.to_owned()
    }
}

/// A long value kept head and tail, so its last line (where a traceback
/// names its cause) always survives.
fn excerpt(text: &str) -> String {
    crate::elide::head_tail(text, EXCERPT)
}

/// Lines of context around each change in a divergence's diff.
const CONTEXT_LINES: usize = 2;

/// A unified diff of two whole values (`-` recorded, `+` now), hunks with
/// [`CONTEXT_LINES`] of context, at most [`DIFF_LINES`] lines (head and tail
/// kept). Diffed before any shortening, so a cut never shows as a change.
pub fn unified(recorded: &str, now: &str) -> Vec<String> {
    // A missing final newline is not a change worth a line of its own.
    let (recorded, now) = (
        format!("{}\n", recorded.trim_end_matches('\n')),
        format!("{}\n", now.trim_end_matches('\n')),
    );
    let diff = similar::TextDiff::from_lines(&recorded, &now);
    let mut lines = Vec::new();
    for (i, group) in diff.grouped_ops(CONTEXT_LINES).iter().enumerate() {
        if i > 0 {
            lines.push("  …".to_owned());
        }
        for op in group {
            for change in diff.iter_changes(op) {
                let sign = match change.tag() {
                    similar::ChangeTag::Delete => "- ",
                    similar::ChangeTag::Insert => "+ ",
                    similar::ChangeTag::Equal => "  ",
                };
                let text = change.value().trim_end_matches('\n');
                lines.push(format!("{sign}{}", crate::elide::head_tail(text, EXCERPT)));
            }
        }
    }
    crate::elide::head_tail_lines(lines, DIFF_LINES)
}

fn volatile() -> &'static [(Regex, &'static str)] {
    static RES: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
    RES.get_or_init(|| {
        // Invariant: the patterns are literals that compile.
        let re = |p: &str| Regex::new(p).expect("static pattern");
        vec![
            (
                re(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"),
                "<uuid>",
            ),
            (
                re(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?\b"),
                "<time>",
            ),
            (re(r"\b[0-9a-f]{12,}\b"), "<hex>"),
            (
                re(r"\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\s+\d{1,2}\s+(\d{1,2}:\d{2}|\d{4})\b"),
                "<date>",
            ),
            (re(r"/claude-\d+/"), "/claude-<uid>/"),
            (
                re(r#"(?i)\b(\w*duration\w*|elapsed\w*|took)("?\s*[:=]\s*)\d+(\.\d+)?"#),
                "${1}${2}<duration>",
            ),
            (
                re(r"\b\d+(\.\d+)?\s?(ms|milliseconds?|s|secs?|seconds?)\b"),
                "<duration>",
            ),
        ]
    })
}

/// A value with run roots and volatile fields masked (the list in the module docs).
pub fn normalise(text: &str, roots: &Roots) -> String {
    let mut out = roots.to_placeholders(text);
    for (re, with) in volatile() {
        if re.is_match(&out) {
            out = re.replace_all(&out, *with).into_owned();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(cwd: &str, result: &str, body: &str) -> Vec<Value> {
        vec![
            json!({"type": "system", "subtype": "init", "cwd": cwd}),
            json!({"type": "assistant", "message": {"id": "m0", "content": [
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {}},
                {"type": "tool_use", "id": "t2", "name": "Skill", "input": {}}]}}),
            // Completion order differs from block order.
            json!({"type": "user", "message": {"content": [
                {"type": "tool_result", "tool_use_id": "t2", "content": "Launching skill: s"}]}}),
            json!({"type": "user", "message": {"content": [
                {"type": "text", "text": format!("Base directory for this skill: \
                    {cwd}/.claude/skills/s\n\n{body}")}]}}),
            json!({"type": "user", "message": {"content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": result}]}}),
            json!({"type": "assistant", "message": {"id": "m1", "content": [{"type": "text", "text": "done"}]}}),
        ]
    }

    #[test]
    fn identical_runs_in_other_dirs_do_not_diverge() {
        let a = run("/r/a/work", "ok in 12ms at 2026-01-01T00:00:00Z", "body");
        let b = run("/r/b/work", "ok in 40ms at 2026-02-03T04:05:06Z", "body");
        let c = run("/r/c/work", "ls: Aug 21 11:19 x, /tmp/claude-501/t", "body");
        let d = run("/r/d/work", "ls: Dec  1 09:05 x, /tmp/claude-0/t", "body");
        let (rc, rd) = (Roots::recorded(c.iter()), Roots::recorded(d.iter()));
        assert_eq!(compare_turns(&c, &rc, &d, &rd), vec![]);
        let (ra, rb) = (Roots::recorded(a.iter()), Roots::recorded(b.iter()));
        assert_eq!(compare_turns(&a, &ra, &b, &rb), vec![]);
    }

    #[test]
    fn a_changed_result_and_body_diverge_at_their_turn() {
        let a = run("/r/a/work", "ok", "body");
        let b = run("/r/b/work", "ok\nextra", "new body");
        let (ra, rb) = (Roots::recorded(a.iter()), Roots::recorded(b.iter()));
        let d = compare_turns(&a, &ra, &b, &rb);
        assert_eq!(d.len(), 2, "{d:?}");
        assert_eq!(
            (d[0].kind, d[0].turn, d[0].tool.as_deref()),
            (Kind::ToolResult, Some(0), Some("Bash"))
        );
        assert_eq!(d[0].now, "ok\nextra");
        assert_eq!(d[1].kind, Kind::UserContent);
        assert!(
            d[1].now.contains("{{cwd}}/.claude/skills/s"),
            "{}",
            d[1].now
        );
    }

    #[test]
    fn a_long_traceback_keeps_its_last_line_and_diffs_without_fake_changes() {
        let mut tb = String::from("Traceback (most recent call last):\n");
        for i in 0..120 {
            tb.push_str(&format!(
                "  File \"/s/fill.py\", line {i}, in step\n    step()\n"
            ));
        }
        let a = run("/r/a/work", &format!("{tb}KeyError: 'name'"), "body");
        let b = run("/r/b/work", &format!("{tb}KeyError: 'field_id'"), "body");
        let (ra, rb) = (Roots::recorded(a.iter()), Roots::recorded(b.iter()));
        let d = compare_turns(&a, &ra, &b, &rb);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].now.ends_with("KeyError: 'field_id'"), "{}", d[0].now);
        assert!(d[0].now.starts_with("Traceback"), "{}", d[0].now);
        assert!(d[0].now.contains("line(s) elided"), "{}", d[0].now);
        // The diff holds the one changed line, with its context, nothing cut.
        let changed: Vec<&String> = d[0]
            .diff
            .iter()
            .filter(|l| l.starts_with("- ") || l.starts_with("+ "))
            .collect();
        assert_eq!(
            changed,
            vec!["- KeyError: 'name'", "+ KeyError: 'field_id'"],
            "{:?}",
            d[0].diff
        );
    }

    #[test]
    fn a_run_that_stops_early_reports_the_missing_turn() {
        let a = run("/r/a/work", "ok", "body");
        let b = a[..5].to_vec();
        let r = Roots::recorded(a.iter());
        let d = compare_turns(&a, &r, &b, &r);
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].kind, d[0].turn), (Kind::MissingTurn, Some(1)));
    }

    #[test]
    fn files_added_removed_changed() {
        let a = json!([{"path": "outputs/a", "sha256": "1"}, {"path": "outputs/b", "sha256": "2"}]);
        let b = json!([{"path": "outputs/a", "sha256": "9"}, {"path": "outputs/c", "sha256": "3"}]);
        let d = compare_files(Some(&a), Some(&b));
        let names: Vec<_> = d
            .iter()
            .map(|d| (d.tool.clone().unwrap(), d.now.clone()))
            .collect();
        assert_eq!(
            names,
            [
                ("outputs/a".to_string(), "sha256 9".to_string()),
                ("outputs/b".to_string(), "(removed)".to_string()),
                ("outputs/c".to_string(), "sha256 3".to_string())
            ]
        );
    }
}
