//! Where a fresh run parted from its recording, turn by turn.
//!
//! After each model turn the agent sends back what its tools produced: every
//! `tool_result` (matched by tool call: parallel calls finish in any order)
//! and the content that travels with them (a Skill call's body arrives as a
//! separate text block after `Launching skill: …`). Those are compared per
//! conversation and turn, then the answers delivered to the agent's prompts
//! (`controlOut`); the produced files are [`super::outputs`]'s.
//!
//! Both sides are normalised first, so only a real change shows:
//! - run paths → `{{cwd}}`, `{{config}}`, `{{home}}`, `{{run}}` ([`super::paths`]);
//! - UUIDs → `<uuid>`; long hex ids (agent ids, hashes) → `<hex>`;
//! - ISO-8601 timestamps → `<time>`; a short hex id after an id-like key
//!   (`report id: 3fa9c2d1`, `"run_id": "a1b2c3"`) → `<id>`;
//! - durations (`12ms`, `1.5s`, `3 seconds`, `duration_ms: 445`) → `<duration>`;
//! - `ls -l` style dates (`Aug 21 11:19`, `Aug 21  2025`) → `<date>`;
//! - Claude Code's per-user temp dir (`/tmp/claude-501/`) → `/tmp/claude-<uid>/`,
//!   and the run's own `TMPDIR` (`{{run}}/tmp/`, set since runs are
//!   sandboxed) → `/tmp/`, what a recording made without one shows;
//! - control-request ids are not compared (they are random per run);
//! - then the project's own masks (`reel.toml` `[masks]`, [`Masks`]).
//!
//! Masks decide what is equal; they never rewrite what a user reads. A
//! divergence shows each side as it was (run roots as placeholders only),
//! and its diff is aligned on the masked lines but prints the real ones: a
//! line equal only after masking shows the recorded line with the fresh one
//! as a note, so a number in a traceback's source line stays a number.
//!
//! Tool-use ids need no masking: the recorded replies are served with their
//! recorded ids.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use regex::Regex;
use serde::Serialize;
use serde_json::Value;

use crate::mask::Roots;
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
    /// A call a frozen MCP server has no recorded answer to.
    McpCall,
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
    /// The recorded value as it was (run roots as placeholders), shortened.
    pub recorded: String,
    /// The fresh value as it was (run roots as placeholders), shortened.
    pub now: String,
    /// A unified diff of the whole values, aligned on their masked lines,
    /// showing the real ones (`-` recorded, `+` now, two lines of context,
    /// long diffs kept head and tail); empty when one side is missing.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diff: Vec<String>,
    /// The user turn (1-based) of a multi-turn recording whose slice holds
    /// this main-conversation turn (`rerun::turns`); absent otherwise.
    #[serde(rename = "userTurn", skip_serializing_if = "Option::is_none")]
    pub user_turn: Option<usize>,
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
    /// tool_use id → the text with run roots only replaced (what the masks
    /// saw, for [`hidden_by_masks`]).
    raw: BTreeMap<String, String>,
    /// Text blocks sent back after this turn (masked, compared).
    content: Vec<String>,
    /// The same blocks with run roots only replaced (shown).
    content_raw: Vec<String>,
}

/// Conversations of a run by key (`None` = main).
fn turns_of(events: &[Value], roots: &Roots, masks: &Masks) -> BTreeMap<Option<String>, Turns> {
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
                            let full = protocol::tool_result_text(content);
                            let text = masks.apply(&full, roots);
                            if let Some(turn) = conv
                                .turns
                                .iter_mut()
                                .rev()
                                .find(|t| t.calls.iter().any(|(c, _)| c == id))
                            {
                                turn.results.insert(id.to_owned(), (text, is_error));
                                turn.raw.insert(id.to_owned(), roots.to_placeholders(&full));
                            }
                        }
                        protocol::Block::Text(t) => {
                            if let Some(turn) = conv.turns.last_mut() {
                                turn.content.push(masks.apply(t, roots));
                                turn.content_raw.push(roots.to_placeholders(t));
                            }
                        }
                        _ => {}
                    }
                }
                if let Some(turn) = conv.turns.last_mut() {
                    turn.content
                        .extend(text_blocks.iter().map(|t| masks.apply(t, roots)));
                    turn.content_raw
                        .extend(text_blocks.iter().map(|t| roots.to_placeholders(t)));
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
    masks: &Masks,
) -> Vec<Divergence> {
    let before = turns_of(recorded, recorded_roots, masks);
    let after = turns_of(fresh, fresh_roots, masks);
    let empty = Turns::default();
    let mut out = Vec::new();
    for (key, rec) in &before {
        let conversation = key
            .as_deref()
            .map_or_else(|| "main".to_owned(), |k| format!("subagent:{k}"));
        let now = after.get(key).unwrap_or(&empty);
        for (k, rt) in rec.turns.iter().enumerate() {
            let at = TurnAt {
                conversation: &conversation,
                turn: k,
            };
            let Some(nt) = now.turns.get(k) else {
                out.push(at.divergence(
                    rt.calls.first().map(|(_, n)| n.clone()),
                    Kind::MissingTurn,
                    (
                        format!("turn {} was served", k + 1),
                        "the fresh run ended before this turn".into(),
                    ),
                    Vec::new(),
                ));
                break;
            };
            out.extend(at.tool_results(rt, nt));
            if rt.content != nt.content {
                let (a, b) = (rt.content.join("\n"), nt.content.join("\n"));
                let (ra, rb) = (rt.content_raw.join("\n"), nt.content_raw.join("\n"));
                out.push(at.divergence(
                    rt.calls.first().map(|(_, n)| n.clone()),
                    Kind::UserContent,
                    (excerpt(&ra), excerpt(&rb)),
                    unified_shown((&a, &b), (&ra, &rb)),
                ));
            }
        }
    }
    out
}

/// One served turn of one conversation, where its divergences are found.
struct TurnAt<'a> {
    conversation: &'a str,
    turn: usize,
}

impl TurnAt<'_> {
    fn divergence(
        &self,
        tool: Option<String>,
        kind: Kind,
        (recorded, now): (String, String),
        diff: Vec<String>,
    ) -> Divergence {
        Divergence {
            conversation: self.conversation.to_owned(),
            turn: Some(self.turn),
            tool,
            kind,
            recorded,
            now,
            diff,
            user_turn: None,
        }
    }

    /// Each recorded call's result against the fresh run's, in call order.
    fn tool_results(&self, rt: &TurnSeen, nt: &TurnSeen) -> Vec<Divergence> {
        let mut out = Vec::new();
        for (id, name) in &rt.calls {
            // What the user reads: the result as it was.
            let raw = |t: &TurnSeen, masked: &(String, bool)| {
                flagged(t.raw.get(id).unwrap_or(&masked.0), masked.1)
            };
            match (rt.results.get(id), nt.results.get(id)) {
                (Some(r), Some(n)) if r == n => {}
                (Some(r), Some(n)) => out.push(self.divergence(
                    Some(name.clone()),
                    Kind::ToolResult,
                    (excerpt(&raw(rt, r)), excerpt(&raw(nt, n))),
                    unified_shown(
                        (&flagged(&r.0, r.1), &flagged(&n.0, n.1)),
                        (&raw(rt, r), &raw(nt, n)),
                    ),
                )),
                (Some(r), None) => out.push(self.divergence(
                    Some(name.clone()),
                    Kind::MissingResult,
                    (excerpt(&raw(rt, r)), "(no tool_result)".into()),
                    Vec::new(),
                )),
                // The recording itself holds no result (the run ended).
                (None, _) => {}
            }
        }
        out
    }
}

/// Tool results that differ between the runs but are equal after masking,
/// each with the masks that made them equal (`turn 2 Bash: equal after
/// masking by built-in uuid, 'id: [0-9a-f]+' (reel.toml)`): what
/// `rerun --explain` prints, so a mask that hides a real change shows.
pub fn hidden_by_masks(
    recorded: &[Value],
    recorded_roots: &Roots,
    fresh: &[Value],
    fresh_roots: &Roots,
    masks: &Masks,
) -> Vec<String> {
    let before = turns_of(recorded, recorded_roots, masks);
    let after = turns_of(fresh, fresh_roots, masks);
    let mut out = Vec::new();
    for (key, rec) in &before {
        let Some(now) = after.get(key) else { continue };
        let conversation = key
            .as_deref()
            .map_or("main".to_owned(), |k| format!("subagent:{k}"));
        for (k, (rt, nt)) in rec.turns.iter().zip(&now.turns).enumerate() {
            for (id, name) in &rt.calls {
                let (Some(r), Some(n)) = (rt.results.get(id), nt.results.get(id)) else {
                    continue;
                };
                let (Some(rr), Some(nr)) = (rt.raw.get(id), nt.raw.get(id)) else {
                    continue;
                };
                if r == n && rr != nr {
                    let mut names = masks.matching(rr, &Roots::default());
                    for m in masks.matching(nr, &Roots::default()) {
                        if !names.contains(&m) {
                            names.push(m);
                        }
                    }
                    out.push(format!(
                        "{conversation} turn {} {name}: equal after masking by {}",
                        k + 1,
                        names.join(", ")
                    ));
                }
            }
        }
    }
    out
}

/// Compares the answers delivered to permission and question prompts, each
/// paired with the prompt it answers (tool and tool call, else tool and
/// input), not by position: a prompt the fresh run no longer asks is one
/// divergence, not a shift of every later answer.
pub fn compare_answers(
    recorded: (&[Value], &[String]),
    recorded_roots: &Roots,
    fresh: (&[Value], &[String]),
    fresh_roots: &Roots,
    masks: &Masks,
) -> Vec<Divergence> {
    let a = answers_by_prompt(recorded.0, recorded.1, recorded_roots, masks);
    let mut b = answers_by_prompt(fresh.0, fresh.1, fresh_roots, masks);
    let mut out = Vec::new();
    let answer = |tool: &str, r: Option<&Answer>, n: Option<&Answer>| Divergence {
        conversation: "-".into(),
        turn: None,
        tool: Some(tool.to_owned()),
        kind: Kind::Answer,
        recorded: r.map_or("(no prompt)".into(), |s| excerpt(&s.raw)),
        now: n.map_or("(no prompt)".into(), |s| excerpt(&s.raw)),
        // From the whole answers, so an excerpt's cut never shows as a change.
        diff: match (r, n) {
            (Some(r), Some(n)) => unified_shown((&r.masked, &n.masked), (&r.raw, &n.raw)),
            _ => Vec::new(),
        },
        user_turn: None,
    };
    for ((tool, prompt), recorded) in &a {
        let now = b
            .remove(&(tool.clone(), prompt.clone()))
            .unwrap_or_default();
        for i in 0..recorded.len().max(now.len()) {
            if recorded.get(i).map(|a| &a.masked) != now.get(i).map(|a| &a.masked) {
                out.push(answer(tool, recorded.get(i), now.get(i)));
            }
        }
    }
    for ((tool, _), now) in &b {
        out.extend(now.iter().map(|n| answer(tool, None, Some(n))));
    }
    out
}

/// One delivered answer: masked (compared) and as sent (shown).
#[derive(Debug, Default, PartialEq, Eq)]
struct Answer {
    masked: String,
    raw: String,
}

/// (tool, prompt key) → the answers, in order. The prompt is the
/// `control_request` in `events` whose `request_id` the answer carries.
fn answers_by_prompt(
    events: &[Value],
    control_out: &[String],
    roots: &Roots,
    masks: &Masks,
) -> BTreeMap<(String, String), Vec<Answer>> {
    let mut prompts: BTreeMap<&str, (String, String)> = BTreeMap::new();
    for v in events {
        if let Line::ControlRequest {
            request_id: Some(id),
            request: Some(r),
            ..
        } = Line::of(v)
        {
            let tool = r.get("tool_name").and_then(Value::as_str).unwrap_or("-");
            let key = match r.get("tool_use_id").and_then(Value::as_str) {
                Some(call) => call.to_owned(),
                None => masks.apply(
                    &r.get("input").map(Value::to_string).unwrap_or_default(),
                    roots,
                ),
            };
            prompts.insert(id, (tool.to_owned(), key));
        }
    }
    let mut out: BTreeMap<(String, String), Vec<Answer>> = BTreeMap::new();
    for v in control_out
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    {
        let Line::ControlResponse(r) = Line::of(&v) else {
            continue;
        };
        let Some(body) = r.get("response").and_then(|x| x.get("response")) else {
            continue;
        };
        // Only answers to prompts: permission and question replies.
        if body.get("behavior").is_none() {
            continue;
        }
        let id = r
            .get("response")
            .and_then(|x| x.get("request_id"))
            .and_then(Value::as_str);
        let prompt = id
            .and_then(|id| prompts.get(id).cloned())
            .unwrap_or_else(|| ("-".into(), id.unwrap_or_default().to_owned()));
        let body = body.to_string();
        out.entry(prompt).or_default().push(Answer {
            masked: masks.apply(&body, roots),
            raw: roots.to_placeholders(&body),
        });
    }
    out
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
/// two lines of context, at most thirty lines (head and tail
/// kept). Diffed before any shortening, so a cut never shows as a change.
pub fn unified(recorded: &str, now: &str) -> Vec<String> {
    // A missing final newline is not a change worth a line of its own.
    let (recorded, now) = (
        format!("{}\n", recorded.trim_end_matches('\n')),
        format!("{}\n", now.trim_end_matches('\n')),
    );
    let (recorded, now) = same_window(&recorded, &now);
    let diff = similar::TextDiff::from_lines(&recorded, &now);
    let mut lines = Vec::new();
    for (i, group) in diff.grouped_ops(CONTEXT_LINES).iter().enumerate() {
        if i > 0 {
            lines.push("  …".to_owned());
        }
        for op in group {
            for change in diff.iter_changes(op) {
                let text = change.value().trim_end_matches('\n');
                // A value shortened before it reached here (an excerpt, a
                // cassette's own cut) carries an elision line: a note on
                // its side, not a changed line.
                let sign = match (change.tag(), crate::elide::is_marker(text)) {
                    (similar::ChangeTag::Delete, true) => "  (recorded: ",
                    (similar::ChangeTag::Insert, true) => "  (now: ",
                    (similar::ChangeTag::Equal, true) => "  (both: ",
                    (similar::ChangeTag::Delete, false) => "- ",
                    (similar::ChangeTag::Insert, false) => "+ ",
                    (similar::ChangeTag::Equal, false) => "  ",
                };
                if sign.ends_with(": ") {
                    lines.push(format!("{sign}{text})"));
                    continue;
                }
                lines.push(format!("{sign}{}", crate::elide::head_tail(text, EXCERPT)));
            }
        }
    }
    crate::elide::head_tail_lines(lines, DIFF_LINES)
}

/// A unified diff of two values aligned on their masked forms (so a value
/// only a mask changed is no change) that prints the values as they were.
/// A line equal only after masking shows the recorded line, then the
/// fresh one as a note. Falls back to [`unified`] of the shown values when
/// a mask changed the number of lines (the alignment would not map back).
pub fn unified_shown(masked: (&str, &str), shown: (&str, &str)) -> Vec<String> {
    if masked == shown {
        return unified(masked.0, masked.1);
    }
    let lines = |t: &str| -> Vec<String> {
        t.trim_end_matches('\n')
            .split('\n')
            .map(str::to_owned)
            .collect()
    };
    let (ma, mb, sa, sb) = (
        lines(masked.0),
        lines(masked.1),
        lines(shown.0),
        lines(shown.1),
    );
    if ma.len() != sa.len() || mb.len() != sb.len() {
        return unified(shown.0, shown.1);
    }
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, &ma, &mb);
    let groups = similar::group_diff_ops(ops, CONTEXT_LINES);
    let mut out = Vec::new();
    for (i, group) in groups.iter().enumerate() {
        if i > 0 {
            out.push("  …".to_owned());
        }
        for op in group {
            let (tag, old, new) = op.as_tag_tuple();
            match tag {
                similar::DiffTag::Equal => {
                    for (a, b) in old.zip(new) {
                        out.push(shown_line("  ", &sa[a]));
                        if sa[a] != sb[b] {
                            out.push(format!(
                                "  (now, equal after masking: {})",
                                crate::elide::head_tail(&sb[b], EXCERPT)
                            ));
                        }
                    }
                }
                _ => {
                    out.extend(old.map(|a| shown_line("- ", &sa[a])));
                    out.extend(new.map(|b| shown_line("+ ", &sb[b])));
                }
            }
        }
    }
    crate::elide::head_tail_lines(out, DIFF_LINES)
}

/// One diff line: an elision line as a note on its side, else the sign and
/// the (shortened) text.
fn shown_line(sign: &str, text: &str) -> String {
    if crate::elide::is_marker(text) {
        let side = match sign {
            "- " => "recorded",
            "+ " => "now",
            _ => "both",
        };
        return format!("  ({side}: {text})");
    }
    format!("{sign}{}", crate::elide::head_tail(text, EXCERPT))
}

/// Two values each shortened around one elision line, cut at different
/// places: each side's lines that the other side elided are moved into its
/// elision (the head trimmed after the other head's last line, the tail
/// before the other tail's first line), so a line both hold never shows as
/// a change (the counts grow by what is moved).
fn same_window(a: &str, b: &str) -> (String, String) {
    let split = |t: &str| -> Option<Elided> {
        let lines: Vec<&str> = t.lines().collect();
        let at = lines.iter().position(|l| crate::elide::is_marker(l))?;
        let n: usize = lines[at]
            .trim_start_matches("… ")
            .trim_end_matches(" line(s) elided …")
            .parse()
            .ok()?;
        let own = |s: &[&str]| s.iter().map(|l| (*l).to_owned()).collect();
        Some((own(&lines[..at]), n, own(&lines[at + 1..])))
    };
    let (Some(mut a), Some(mut b)) = (split(a), split(b)) else {
        return (a.to_owned(), b.to_owned());
    };
    resync(&mut a, &b);
    resync(&mut b, &a);
    let join = |(head, n, tail): Elided| {
        let mut out = head;
        out.push(format!("… {n} line(s) elided …"));
        out.extend(tail);
        out.join("\n") + "\n"
    };
    (join(a), join(b))
}

/// A shortened text: head lines, how many were elided, tail lines.
type Elided = (Vec<String>, usize, Vec<String>);

/// Moves `x`'s lines past `y`'s head end and before `y`'s tail start into
/// `x`'s elision.
fn resync(x: &mut Elided, y: &Elided) {
    if let Some(last) = y.0.last()
        && let Some(p) = x.0.iter().rposition(|l| l == last)
    {
        x.1 += x.0.len() - (p + 1);
        x.0.truncate(p + 1);
    }
    if let Some(first) = y.2.first()
        && let Some(p) = x.2.iter().position(|l| l == first)
    {
        x.1 += p;
        x.2.drain(..p);
    }
}

/// A built-in mask: its name (what `--explain`-style notes print), pattern
/// and replacement.
struct Builtin {
    name: &'static str,
    re: Regex,
    with: &'static str,
}

fn builtins() -> &'static [Builtin] {
    static RES: OnceLock<Vec<Builtin>> = OnceLock::new();
    RES.get_or_init(|| {
        // Invariant: the patterns are literals that compile.
        let b = |name, p: &str, with| Builtin {
            name,
            re: Regex::new(p).expect("static pattern"),
            with,
        };
        vec![
            b(
                "uuid",
                r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
                "<uuid>",
            ),
            b(
                "iso-time",
                r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?\b",
                "<time>",
            ),
            b("long-hex", r"\b[0-9a-f]{12,}\b", "<hex>"),
            // A short random id printed next to an id-like key
            // (`report id: 3fa9c2d1`, `"run_id": "a1b2c3"`): 6 to 11 hex digits.
            b(
                "id-hex",
                r#"\b((?:\w+[_-])?(?:id|ID)|\w*[a-z]Id)(["']?\s*[:=]\s*["']?)[0-9a-f]{6,11}\b"#,
                "${1}${2}<id>",
            ),
            b(
                "ls-date",
                r"\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\s+\d{1,2}\s+(\d{1,2}:\d{2}|\d{4})\b",
                "<date>",
            ),
            b("claude-tmp", r"/claude-\d+/", "/claude-<uid>/"),
            b(
                "duration-key",
                r#"(?i)\b(\w*duration\w*|elapsed\w*|took)("?\s*[:=]\s*)\d+(\.\d+)?"#,
                "${1}${2}<duration>",
            ),
            b(
                "duration",
                r"\b\d+(\.\d+)?\s?(ms|milliseconds?|s|secs?|seconds?)\b",
                "<duration>",
            ),
        ]
    })
}

/// The masks a comparison applies: run roots, the built-ins, then the
/// project's (`reel.toml` `[masks]`, in file order).
#[derive(Debug, Clone, Default)]
pub struct Masks {
    user: Vec<crate::project::Mask>,
}

impl Masks {
    /// The built-ins and `user` after them.
    pub fn with_user(user: Vec<crate::project::Mask>) -> Masks {
        Masks { user }
    }

    /// `text` with roots and every mask applied.
    pub fn apply(&self, text: &str, roots: &Roots) -> String {
        self.apply_naming(text, roots, &mut |_| {})
    }

    /// The names of the masks that change `text` (`uuid`, `'re' (reel.toml)`).
    pub fn matching(&self, text: &str, roots: &Roots) -> Vec<String> {
        let mut names = Vec::new();
        self.apply_naming(text, roots, &mut |n| names.push(n));
        names
    }

    fn apply_naming(&self, text: &str, roots: &Roots, seen: &mut dyn FnMut(String)) -> String {
        let mut out = crate::mask::roots::run_tmp_as_system_tmp(roots.to_placeholders(text));
        for b in builtins() {
            if b.re.is_match(&out) {
                let next = b.re.replace_all(&out, b.with).into_owned();
                if next != out {
                    seen(format!("built-in {}", b.name));
                }
                out = next;
            }
        }
        for m in &self.user {
            if m.regex.is_match(&out) {
                out = m
                    .regex
                    .replace_all(&out, m.placeholder.as_str())
                    .into_owned();
                seen(format!("'{}' (reel.toml)", m.pattern));
            }
        }
        out
    }
}

/// A value with run roots and the built-in masks applied (the list in the
/// module docs).
pub fn normalise(text: &str, roots: &Roots) -> String {
    Masks::default().apply(text, roots)
}

#[cfg(test)]
mod tests {
    /// Two long values shortened head and tail (by different amounts, as
    /// their last lines differ in length): the diff shows the last line
    /// changed and each elision as a note, never `- … N line(s) elided …`.
    #[test]
    fn an_elided_middle_is_a_note_not_a_changed_line() {
        let body = |n: usize, last: &str| {
            let mut lines: Vec<String> = (0..n).map(|i| format!("line {i}")).collect();
            lines.push(last.to_owned());
            lines.join("\n")
        };
        let shown = |recorded: usize, now: usize| {
            let recorded = crate::elide::head_tail(&body(recorded, "ok"), 120);
            let now = crate::elide::head_tail(&body(now, "KeyError: 'field_id'"), 120);
            let diff = unified(&recorded, &now);
            assert!(
                diff.iter()
                    .all(|l| !(l.starts_with("- ") || l.starts_with("+ ")) || !l.contains("elided")),
                "{diff:#?}"
            );
            diff.join("\n")
        };
        // Cut at different places: the same window of each, only the last
        // line changed.
        insta::assert_snapshot!(shown(400, 400), @r"
          line 398
          line 399
        - ok
        + KeyError: 'field_id'
        ");
        // A longer output: the lines it added, none it shares.
        insta::assert_snapshot!(shown(400, 403), @r"
          line 398
          line 399
        - ok
        + line 400
        + line 401
        + line 402
        + KeyError: 'field_id'
        ");
        // Short tails: each side's elision is a note beside the change.
        let recorded = crate::elide::head_tail(&body(400, "ok"), 40);
        let now = crate::elide::head_tail(&body(900, "fail"), 40);
        insta::assert_snapshot!(unified(&recorded, &now).join("\n"), @r"
          line 0
          (recorded: … 397 line(s) elided …)
        - line 398
        - line 399
        - ok
          (now: … 897 line(s) elided …)
        + line 898
        + line 899
        + fail
        ");
    }

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
        assert_eq!(compare_turns(&c, &rc, &d, &rd, &Masks::default()), vec![]);
        let (ra, rb) = (Roots::recorded(a.iter()), Roots::recorded(b.iter()));
        assert_eq!(compare_turns(&a, &ra, &b, &rb, &Masks::default()), vec![]);
    }

    #[test]
    fn a_changed_result_and_body_diverge_at_their_turn() {
        let a = run("/r/a/work", "ok", "body");
        let b = run("/r/b/work", "ok\nextra", "new body");
        let (ra, rb) = (Roots::recorded(a.iter()), Roots::recorded(b.iter()));
        let d = compare_turns(&a, &ra, &b, &rb, &Masks::default());
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

    /// Masks decide equality only: a traceback's source line quoting a
    /// number next to a duration-like name is shown as written, and a line
    /// equal only after masking shows both sides.
    #[test]
    fn masks_compare_but_the_evidence_is_shown_as_it_was() {
        let tb = |err: &str, at: &str| {
            format!(
                "Traceback (most recent call last):\n  File \"/s/x.py\", line 3, in \
                 <module>\n    self.elapsed = 1000 / self.count\nafter {at}\n{err}"
            )
        };
        let a = run(
            "/r/a/work",
            &tb("ZeroDivisionError: division by zero", "12ms"),
            "b",
        );
        let b = run("/r/b/work", &tb("KeyError: 'count'", "40ms"), "b");
        let (ra, rb) = (Roots::recorded(a.iter()), Roots::recorded(b.iter()));
        let d = compare_turns(&a, &ra, &b, &rb, &Masks::default());
        assert_eq!(d.len(), 1, "{d:?}");
        let shown = format!("{}\n{}\n{}", d[0].recorded, d[0].now, d[0].diff.join("\n"));
        assert!(!shown.contains("<duration>"), "{shown}");
        assert!(
            d[0].recorded.contains("self.elapsed = 1000 / self.count"),
            "{shown}"
        );
        assert!(d[0].now.contains("after 40ms"), "{shown}");
        assert_eq!(
            d[0].diff,
            [
                "      self.elapsed = 1000 / self.count",
                "  after 12ms",
                "  (now, equal after masking: after 40ms)",
                "- ZeroDivisionError: division by zero",
                "+ KeyError: 'count'",
            ]
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
        let d = compare_turns(&a, &ra, &b, &rb, &Masks::default());
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
        let d = compare_turns(&a, &r, &b, &r, &Masks::default());
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].kind, d[0].turn), (Kind::MissingTurn, Some(1)));
    }

    #[test]
    fn short_ids_next_to_an_id_key_are_masked_and_masks_are_named() {
        let r = Roots::default();
        let m = Masks::default();
        assert_eq!(m.apply("report id: 3fa9c2d1", &r), "report id: <id>");
        assert_eq!(
            m.apply("{\"run_id\": \"a1b2c3\"}", &r),
            "{\"run_id\": \"<id>\"}"
        );
        // Not an id-like key, or too short to be random: left alone.
        assert_eq!(
            m.apply("paid: 3fa9c2d1, id: 42", &r),
            "paid: 3fa9c2d1, id: 42"
        );
        let dir = tempfile::tempdir().unwrap();
        let toml = dir.path().join("reel.toml");
        std::fs::write(&toml, "[masks]\n'seed=\\d+' = \"seed=<n>\"\n").unwrap();
        let user = Masks::with_user(crate::project::ProjectConfig::load(&toml).unwrap().masks);
        assert_eq!(
            user.matching("seed=7 id: 3fa9c2d1", &r),
            ["built-in id-hex", "'seed=\\d+' (reel.toml)"]
        );
    }

    #[test]
    fn explain_names_the_masks_that_made_two_results_equal() {
        let a = run("/r/a/work", "seed=1", "body");
        let b = run("/r/b/work", "seed=2", "body");
        let (ra, rb) = (Roots::recorded(a.iter()), Roots::recorded(b.iter()));
        let dir = tempfile::tempdir().unwrap();
        let toml = dir.path().join("reel.toml");
        std::fs::write(&toml, "[masks]\n'seed=\\d+' = \"seed=<n>\"\n").unwrap();
        let masks = Masks::with_user(crate::project::ProjectConfig::load(&toml).unwrap().masks);
        assert_eq!(compare_turns(&a, &ra, &b, &rb, &masks), vec![]);
        assert_eq!(
            hidden_by_masks(&a, &ra, &b, &rb, &masks),
            ["main turn 1 Bash: equal after masking by 'seed=\\d+' (reel.toml)"]
        );
    }

    /// Prompts for `calls` (random request ids per run) and their answers.
    fn prompts(calls: &[(&str, &str, &str)]) -> (Vec<Value>, Vec<String>) {
        let mut events = Vec::new();
        let mut out = Vec::new();
        for (i, (tool, call, behavior)) in calls.iter().enumerate() {
            let id = format!("req-{i}-{}", calls.len());
            events.push(
                json!({"type": "control_request", "request_id": id, "request":
                {"subtype": "can_use_tool", "tool_name": tool, "input": {}, "tool_use_id": call}}),
            );
            out.push(
                json!({"type": "control_response", "response": {"subtype": "success",
                "request_id": id, "response": {"behavior": behavior}}})
                .to_string(),
            );
        }
        (events, out)
    }

    #[test]
    fn answers_pair_by_prompt_not_position() {
        let roots = Roots::recorded(std::iter::empty::<&Value>());
        let (re, ro) = prompts(&[
            ("Write", "t1", "allow"),
            ("Bash", "t2", "allow"),
            ("Edit", "t3", "deny"),
        ]);
        // The fresh run no longer asks about t1: one divergence, not three.
        let (fe, fo) = prompts(&[("Bash", "t2", "allow"), ("Edit", "t3", "deny")]);
        let d = compare_answers((&re, &ro), &roots, (&fe, &fo), &roots, &Masks::default());
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].tool.as_deref(), Some("Write"));
        assert_eq!(d[0].now, "(no prompt)");
        // The same prompts answered differently: named at the prompt.
        let (fe, fo) = prompts(&[
            ("Write", "t1", "allow"),
            ("Bash", "t2", "deny"),
            ("Edit", "t3", "deny"),
        ]);
        let d = compare_answers((&re, &ro), &roots, (&fe, &fo), &roots, &Masks::default());
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].tool.as_deref(), Some("Bash"));
    }
}
