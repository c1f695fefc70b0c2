//! `reel lint`: scenario footguns found before a recording is spent — each a
//! [`Finding`] with a stable code, a severity and the `file:line` it points
//! at (line numbers from [`positions`], read beside the scenario loader).
//!
//! The checks read the scenario as the loader does (`serde_yaml_ng` → JSON) and
//! lean on the one home of each concept: the assertion catalog for buckets
//! (`crate::assert::catalog`), the answers decider and its JS sandbox for
//! rules (`crate::scenario::answers`), the session loader for paths, the
//! scripted model (`<name>.model.yaml`) for the questions the run will ask.
//! A scenario the original's loader refuses is a finding too ([`Code::DoesNotLoad`]).
//!
//! Not here: printing and exit codes (`cli::lint`).
//!
//! Codes run L000 to L013 (L013 is `record::scenario_refusal`, record's own
//! pre-run refusals). Positions come from `yaml-rust2` marked events read
//! beside the `serde_yaml_ng` loader. `control_out` reads the scenario's
//! recorded cassette for whether it carries `controlOut` (L011).

mod control_out;
pub mod positions;
mod turns;

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::assert::catalog::{self, Bucket};
use crate::assert::keys;
use crate::scenario::answers::{self, AnswerRule, DecideError, Decider, QuestionReply};
use crate::scenario::{self, Scenario, ScenarioError};
use positions::Positions;

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth fixing; fails the lint only under `--strict`.
    Warning,
    /// The scenario cannot do what it says; fails the lint.
    Error,
}

/// The stable codes. Never renumber: CI configs and docs cite them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    DoesNotLoad,
    LiveOnlyKey,
    NoPreRunBaseline,
    SlashCommandNotFirst,
    AnswerNeverMatches,
    ChooseNamesNoOption,
    AllowIfSyntax,
    VacuousAssertion,
    OnlyResultAsserted,
    ContradictoryAssertions,
    PathNotFound,
    NeedsControlOut,
    DuplicateKey,
    RecordRefuses,
    PromptAndTurns,
    EmptyTurn,
    SessionKeyInTurn,
}

impl Code {
    pub fn id(self) -> &'static str {
        match self {
            Code::DoesNotLoad => "L000",
            Code::LiveOnlyKey => "L001",
            Code::NoPreRunBaseline => "L002",
            Code::SlashCommandNotFirst => "L003",
            Code::AnswerNeverMatches => "L004",
            Code::ChooseNamesNoOption => "L005",
            Code::AllowIfSyntax => "L006",
            Code::VacuousAssertion => "L007",
            Code::OnlyResultAsserted => "L008",
            Code::ContradictoryAssertions => "L009",
            Code::PathNotFound => "L010",
            Code::NeedsControlOut => "L011",
            Code::DuplicateKey => "L012",
            Code::RecordRefuses => "L013",
            Code::PromptAndTurns => "L014",
            Code::EmptyTurn => "L015",
            Code::SessionKeyInTurn => "L016",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Code::DoesNotLoad => "does-not-load",
            Code::LiveOnlyKey => "live-only-key",
            Code::NoPreRunBaseline => "no-pre-run-baseline",
            Code::SlashCommandNotFirst => "slash-command-not-first",
            Code::AnswerNeverMatches => "answer-never-matches",
            Code::ChooseNamesNoOption => "choose-names-no-option",
            Code::AllowIfSyntax => "allow-if-syntax",
            Code::VacuousAssertion => "vacuous-assertion",
            Code::OnlyResultAsserted => "only-result-asserted",
            Code::ContradictoryAssertions => "contradictory-assertions",
            Code::PathNotFound => "path-not-found",
            Code::NeedsControlOut => "needs-control-out",
            Code::DuplicateKey => "duplicate-key",
            Code::RecordRefuses => "record-refuses",
            Code::PromptAndTurns => "prompt-and-turns",
            Code::EmptyTurn => "empty-turn",
            Code::SessionKeyInTurn => "session-key-in-turn",
        }
    }

    pub fn severity(self) -> Severity {
        match self {
            Code::DoesNotLoad
            | Code::ChooseNamesNoOption
            | Code::AllowIfSyntax
            | Code::ContradictoryAssertions
            | Code::PathNotFound
            | Code::DuplicateKey
            | Code::RecordRefuses
            | Code::PromptAndTurns
            | Code::EmptyTurn
            | Code::SessionKeyInTurn => Severity::Error,
            _ => Severity::Warning,
        }
    }
}

/// One finding.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Finding {
    pub code: &'static str,
    pub name: &'static str,
    pub severity: Severity,
    /// The file the line is in (the scenario, or the session it names).
    pub file: PathBuf,
    /// 1-based; `None` when the document gives no position for it.
    pub line: Option<usize>,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// A scenario that cannot be read or is not YAML (exit 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Unreadable(pub String);

/// Tools a Claude Code agent can be offered by name (`mcp__<server>__<tool>`
/// names come from the session's MCP servers and are not listed).
pub const KNOWN_TOOLS: &[&str] = &[
    "Agent",
    "AskUserQuestion",
    "Bash",
    "BashOutput",
    "Edit",
    "ExitPlanMode",
    "Glob",
    "Grep",
    "KillBash",
    "KillShell",
    "LS",
    "ListMcpResourcesTool",
    "MultiEdit",
    "NotebookEdit",
    "NotebookRead",
    "Read",
    "ReadMcpResourceTool",
    "SlashCommand",
    "Skill",
    "Task",
    "TaskCreate",
    "TaskGet",
    "TaskList",
    "TaskOutput",
    "TaskStop",
    "TaskUpdate",
    "TodoWrite",
    "ToolSearch",
    "WebFetch",
    "WebSearch",
    "Write",
];

/// The scenario files of `target`: the file itself, or a directory's
/// scenarios ([`crate::discover::scenarios_in`]: `*.yaml`/`*.yml` with a
/// top-level `prompt:`, sorted, non-recursive; model scripts and sessions
/// are not scenarios).
pub fn collect_targets(target: &Path) -> Result<Vec<PathBuf>, Unreadable> {
    let meta =
        std::fs::metadata(target).map_err(|e| Unreadable(format!("{}: {e}", target.display())))?;
    if !meta.is_dir() {
        return Ok(vec![target.to_path_buf()]);
    }
    crate::discover::scenarios_in(target)
        .map_err(|e| Unreadable(format!("{}: {e}", target.display())))
}

/// Lints one scenario file: [`lint_text`], then, when nothing there is an
/// error, every refusal `reel record` would make before running
/// ([`Code::RecordRefuses`], through `crate::record::scenario_refusal`: the
/// same code, so lint never passes what record refuses at once).
pub fn lint_file(path: &Path) -> Result<Vec<Finding>, Unreadable> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Unreadable(format!("read `{}`: {e}", path.display())))?;
    let mut findings = lint_text(path, &text)?;
    if !findings.iter().any(|f| f.severity == Severity::Error)
        && let Some((message, hint)) = crate::record::scenario_refusal(path)
    {
        findings.push(Finding {
            code: Code::RecordRefuses.id(),
            name: Code::RecordRefuses.name(),
            severity: Severity::Error,
            file: path.to_owned(),
            line: Positions::of(&text).line("session"),
            message: format!("`reel record` refuses this scenario: {message}"),
            hint: Some(hint),
        });
    }
    Ok(findings)
}

/// Lints scenario `text` as if read from `path` (paths resolve against its
/// directory; the model script is looked up beside it).
pub fn lint_text(path: &Path, text: &str) -> Result<Vec<Finding>, Unreadable> {
    let doc: Value = serde_yaml_ng::from_str(text)
        .map_err(|e| Unreadable(format!("parse `{}`: {e}", path.display())))?;
    let Value::Object(_) = &doc else {
        return Err(Unreadable(format!(
            "parse `{}`: the top level is not a mapping",
            path.display()
        )));
    };
    let mut l = Linter {
        path,
        text,
        pos: Positions::of(text),
        doc: &doc,
        findings: Vec::new(),
    };
    l.run();
    let mut findings = l.findings;
    // The loader's own refusals, unless a check above already says why (a
    // duplicate key never does: the loader reads the last one).
    let explained =
        |f: &Finding| f.severity == Severity::Error && f.code != Code::DuplicateKey.id();
    if !findings.iter().any(explained) {
        let pos = Positions::of(text);
        for r in loader_refusals(path, text, &doc) {
            findings.push(Finding {
                code: Code::DoesNotLoad.id(),
                name: Code::DoesNotLoad.name(),
                severity: Severity::Error,
                file: path.to_owned(),
                line: r.field.as_deref().and_then(|f| pos.line(f)),
                message: format!("the scenario does not load: {}", r.message),
                hint: r.hint,
            });
        }
    }
    findings.sort_by_key(|f| (f.file.clone(), f.line.unwrap_or(0)));
    Ok(findings)
}

/// One refusal of the scenario loader, and the field it names.
struct Refusal {
    message: String,
    hint: Option<String>,
    field: Option<String>,
}

/// What a refusal names: a top-level key, or an item of a top-level list.
enum Offender {
    Key(String),
    Item(String, usize),
}

/// Keys without which every later refusal would only be about their absence.
const REQUIRED: &[&str] = &["name", "prompt"];

/// Every refusal of the loader, not only its first: the loader stops at
/// one, so the offending key (or list item) is taken out and the rest loaded
/// again, until it loads or a refusal names nothing that can be taken out.
/// A list item's index is the one in the file, whatever was taken out
/// before it.
fn loader_refusals(path: &Path, text: &str, doc: &Value) -> Vec<Refusal> {
    let mut doc = doc.clone();
    let mut current = text.to_owned();
    let mut out = Vec::new();
    // Per list: the file's indices of the items taken out, ascending.
    let mut taken: std::collections::BTreeMap<String, Vec<usize>> = Default::default();
    for _ in 0..64 {
        let Err(e) = Scenario::from_str_authored(path, &current) else {
            break;
        };
        let (mut message, hint) = match &e {
            ScenarioError::Invalid { message, hint, .. } => (message.clone(), hint.clone()),
            other => (other.to_string(), None),
        };
        let offender = offender(&message, &doc);
        let field = match &offender {
            Some(Offender::Key(k)) => Some(k.clone()),
            Some(Offender::Item(list, i)) => {
                let gone = taken.entry(list.clone()).or_default();
                let mut original = *i;
                for g in gone.iter() {
                    if *g <= original {
                        original += 1;
                    }
                }
                message =
                    message.replacen(&format!("{list}[{i}]"), &format!("{list}[{original}]"), 1);
                gone.push(original);
                gone.sort_unstable();
                Some(format!("{list}[{original}]"))
            }
            None => None,
        };
        out.push(Refusal {
            message,
            hint,
            field,
        });
        let removed = match &offender {
            Some(Offender::Key(k)) if !REQUIRED.contains(&k.as_str()) => {
                doc.as_object_mut().and_then(|m| m.shift_remove(k))
            }
            Some(Offender::Item(list, i)) => doc
                .get_mut(list)
                .and_then(Value::as_array_mut)
                .filter(|a| *i < a.len())
                .map(|a| a.remove(*i)),
            _ => None,
        };
        match (removed, serde_yaml_ng::to_string(&doc)) {
            (Some(_), Ok(t)) => current = t,
            _ => break,
        }
    }
    out
}

/// The key or list item a loader message is about: `assert[2]: …`,
/// `` `timeout_ms` must be … ``, ``unknown key `answerz` …``.
fn offender(message: &str, doc: &Value) -> Option<Offender> {
    let top = |k: &str| doc.get(k).is_some().then(|| Offender::Key(k.to_owned()));
    if let Some(rest) = message.strip_prefix("unknown key `") {
        return top(rest.split('`').next()?);
    }
    if let Some(rest) = message.strip_prefix('`') {
        return top(rest.split('`').next()?);
    }
    let head = message.split(':').next()?;
    let key = head.split(['[', '.']).next()?;
    if let Some(index) = head.strip_prefix(key).and_then(|r| r.strip_prefix('[')) {
        let i: usize = index.split(']').next()?.parse().ok()?;
        return doc
            .get(key)?
            .as_array()
            .is_some()
            .then(|| Offender::Item(key.to_owned(), i));
    }
    top(key)
}

struct Linter<'a> {
    path: &'a Path,
    text: &'a str,
    pos: Positions,
    doc: &'a Value,
    findings: Vec<Finding>,
}

/// The keys of `assert:` items with their item index.
fn assert_items(doc: &Value) -> Vec<(usize, &serde_json::Map<String, Value>)> {
    doc.get("assert")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .enumerate()
                .filter_map(|(i, v)| v.as_object().map(|m| (i, m)))
                .collect()
        })
        .unwrap_or_default()
}

impl Linter<'_> {
    fn push(&mut self, code: Code, at: &str, message: String, hint: Option<&str>) {
        self.findings.push(Finding {
            code: code.id(),
            name: code.name(),
            severity: code.severity(),
            file: self.path.to_owned(),
            line: self.pos.line(at),
            message,
            hint: hint.map(str::to_owned),
        });
    }

    fn str_field(&self, key: &str) -> Option<&str> {
        self.doc.get(key).and_then(Value::as_str)
    }

    fn run(&mut self) {
        self.findings
            .extend(duplicate_keys(self.path, &self.pos, "scenario"));
        let session = self.session();
        self.live_only_keys();
        self.pre_run_baseline(session.as_ref().map(|(_, s)| s));
        self.slash_command();
        self.answers();
        self.vacuous(session.as_ref().map(|(_, s)| s));
        self.only_result();
        self.contradictions();
        self.control_out_keys();
        self.turns();
    }

    /// L011: keys that read the host's control responses, on a scenario whose
    /// recorded cassette has none — replay skips them there, so they can
    /// never fail.
    fn control_out_keys(&mut self) {
        let keys: Vec<(usize, String)> = assert_items(self.doc)
            .into_iter()
            .flat_map(|(i, item)| item.keys().map(move |k| (i, k.clone())))
            .filter(|(_, k)| catalog::bucket(k) == Some(Bucket::NeedsControlOut))
            .collect();
        if keys.is_empty() {
            return;
        }
        let Some((cassette, false)) = control_out::recorded(self.path, self.doc) else {
            return;
        };
        for (i, key) in keys {
            self.push(
                Code::NeedsControlOut,
                &format!("assert[{i}].{key}"),
                format!(
                    "`{key}` reads the host's control responses (`controlOut`), and the recorded \
                        cassette {} carries none — replay skips it there, so it can never fail",
                    cassette.display()
                ),
                Some(
                    "re-record the scenario (`reel record` always records controlOut), or assert \
                    what the cassette carries (`reel assertions` lists each key's bucket)",
                ),
            );
        }
    }

    fn fidelity(&self) -> &str {
        self.str_field("fidelity").unwrap_or("container")
    }

    /// L001: at `fidelity: protocol` (what reel records) a live-only key is
    /// never evaluated — reel's live verdict is replay's. At the original's
    /// live tiers it is checked on the live run, so it is not flagged there.
    fn live_only_keys(&mut self) {
        if self.fidelity() != "protocol" {
            return;
        }
        for (i, item) in assert_items(self.doc) {
            for key in item.keys() {
                // reel freezes a `semantic_matches` verdict and replays it
                // (`crate::judge`): it can fail on a protocol recording.
                if catalog::bucket(key) == Some(Bucket::LiveOnly) && key != crate::judge::KEY {
                    let what = if catalog::is_judged(key) {
                        "LLM-judged: a judge decides it on a live run only, replay skips it \
                            (a cassette holds no judge result)"
                    } else {
                        "live-only: replay never evaluates it"
                    };
                    self.push(
                        Code::LiveOnlyKey,
                        &format!("assert[{i}].{key}"),
                        format!(
                            "`{key}` is {what}, and a protocol recording's verdict is replay's — \
                                it can never fail"
                        ),
                        Some(
                            "remove it, or test it live with cowork-harness at container fidelity \
                            (`reel assertions` lists each key's bucket)",
                        ),
                    );
                }
            }
        }
    }

    /// L002: the two baseline keys where the recording has no usable pre-run
    /// baseline.
    fn pre_run_baseline(&mut self, session: Option<&scenario::session::Session>) {
        let remote = self.str_field("lane") == Some("remote");
        let microvm = self.fidelity() == "microvm";
        // The baseline key that compares content (pre-run hashes, not paths).
        let hashes = |key: &str| catalog::needs_pre_run_baseline(key) == Some("preRunHashes");
        for (i, item) in assert_items(self.doc) {
            for key in catalog::names().filter(|k| catalog::needs_pre_run_baseline(k).is_some()) {
                if !item.contains_key(key) {
                    continue;
                }
                let at = format!("assert[{i}].{key}");
                if remote {
                    self.push(
                        Code::NoPreRunBaseline,
                        &at,
                        format!(
                            "`{key}` on `lane: remote`: the remote lane takes no pre-run baseline, \
                                so the key is always evidence-unavailable"
                        ),
                        Some("assert the deliverables with file_exists / artifact_* instead"),
                    );
                } else if microvm && hashes(key) {
                    self.push(
                        Code::NoPreRunBaseline,
                        &at,
                        "`input_unmodified` at `fidelity: microvm`: that tier records no pre-run \
                            hashes, so replay skips the key"
                            .into(),
                        Some("use container or hostloop fidelity for an input_unmodified check"),
                    );
                } else if hashes(key)
                    && let Some(s) = session
                    && s.uploads.is_empty()
                    && s.folders.is_empty()
                    && s.projects.is_empty()
                {
                    self.push(
                        Code::NoPreRunBaseline,
                        &at,
                        "`input_unmodified`: the session stages no uploads, folders or projects, \
                            so the pre-run baseline is empty and the key fails (\"matched no \
                            pre-run path\")"
                            .into(),
                        Some(
                            "add the inputs to the session's `uploads:` / `folders:`, or remove \
                            the key",
                        ),
                    );
                }
            }
        }
    }

    /// L003: a slash command the agent would only expand at the very start.
    fn slash_command(&mut self) {
        let Some(prompt) = self.str_field("prompt") else {
            return;
        };
        let re = regex::Regex::new(r"(?:^|\s)(/[A-Za-z][\w:-]*)(?:\s|$)").expect("static regex");
        let trimmed = prompt.trim_start();
        for m in re.captures_iter(prompt) {
            let cmd = m.get(1).expect("group 1");
            // `prompt.trim_start()` starting with it is the one working place.
            let offset_in_trimmed = cmd.start() as isize - (prompt.len() - trimmed.len()) as isize;
            if offset_in_trimmed == 0 {
                continue;
            }
            let word = cmd.as_str();
            // The line in the file: the first line at or after `prompt:` holding it.
            let from = self.pos.line("prompt").unwrap_or(1);
            let line = self
                .text
                .lines()
                .enumerate()
                .skip(from - 1)
                .find(|(_, l)| l.contains(word))
                .map(|(i, _)| i + 1);
            self.findings.push(Finding {
                code: Code::SlashCommandNotFirst.id(),
                name: Code::SlashCommandNotFirst.name(),
                severity: Code::SlashCommandNotFirst.severity(),
                file: self.path.to_owned(),
                line: line.or(Some(from)),
                message: format!(
                    "`{word}` is not at the start of `prompt:`: the agent expands a slash command \
                        only as the prompt's first word, elsewhere it is plain text"
                ),
                hint: Some(format!("start the prompt with `{word} …`, or reword it")),
            });
            break;
        }
    }

    /// L004 / L005 / L006: answers rules.
    fn answers(&mut self) {
        let Some(rules) = self.doc.get("answers").and_then(Value::as_array) else {
            return;
        };
        let gates = self.scripted_gates();
        for (i, rule) in rules.iter().enumerate() {
            let Some(m) = rule.as_object() else { continue };
            if let Some(expr) = m.get("allow_if").and_then(Value::as_str)
                && let Err(e) = answers::check_allow_if(expr)
            {
                self.push(
                    Code::AllowIfSyntax,
                    &format!("answers[{i}].allow_if"),
                    format!("`allow_if` does not parse as JavaScript: {e}"),
                    Some(
                        "an allow_if is one JavaScript expression over the tool input (e.g. \
                        `!command.includes('rm ')`)",
                    ),
                );
            }
            if let Some(tool) = m.get("when_tool").and_then(Value::as_str)
                && !tool_is_known(tool)
            {
                self.push(
                    Code::AnswerNeverMatches,
                    &format!("answers[{i}].when_tool"),
                    format!(
                        "`when_tool: {tool}` names no tool the agent offers (matched exactly, \
                            case-sensitive){}",
                        scenario::did_you_mean(tool, KNOWN_TOOLS)
                    ),
                    Some(
                        "use a tool name such as Bash, Write, Read, Skill, or \
                        mcp__<server>__<tool>",
                    ),
                );
            }
            if m.contains_key("when_question") {
                self.question_rule(i, rule, gates.as_deref());
            }
        }
    }

    /// The AskUserQuestion gates (`input.questions`) the scenario's scripted
    /// model will ask, or `None` with no model script (a live model).
    fn scripted_gates(&self) -> Option<Vec<Value>> {
        let script_path = scenario::model_script_beside(self.path)?;
        let script = crate::model::script::Script::load(&script_path).ok()?;
        Some(
            script
                .turns
                .iter()
                .flat_map(|t| &t.blocks)
                .filter_map(|b| match b {
                    crate::model::script::Block::ToolUse { name, input, .. }
                        if name == "AskUserQuestion" =>
                    {
                        input.get("questions").cloned()
                    }
                    _ => None,
                })
                .collect(),
        )
    }

    fn question_rule(&mut self, i: usize, rule: &Value, gates: Option<&[Value]>) {
        let Some(gates) = gates else {
            return self.choose_against_asserted_options(i, rule);
        };
        let Ok(mut parsed) = answers::parse_rules(&Value::Array(vec![rule.clone()]), "answers")
        else {
            return; // the loader reports a malformed rule
        };
        let Some(AnswerRule::Question {
            pattern,
            regex,
            reply,
        }) = parsed.pop()
        else {
            return;
        };
        let asked: Vec<&str> = gates
            .iter()
            .flat_map(|g| g.as_array().into_iter().flatten())
            .filter_map(|q| q.get("question").and_then(Value::as_str))
            .collect();
        let matching: Vec<&str> = asked
            .iter()
            .copied()
            .filter(|q| regex.is_match(q).unwrap_or(false))
            .collect();
        if matching.is_empty() {
            let what = if asked.is_empty() {
                "the scenario's model script asks no question".to_string()
            } else {
                format!(
                    "no question the model script asks matches it (asked: {})",
                    asked
                        .iter()
                        .map(|q| format!("{q:?}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            self.push(
                Code::AnswerNeverMatches,
                &format!("answers[{i}].when_question"),
                format!("`when_question: {pattern:?}` can never match: {what}"),
                Some(
                    "match a word of the question text (case-insensitive regex), or remove the \
                    rule",
                ),
            );
            return;
        }
        if !matches!(reply, QuestionReply::Choose(_)) {
            return;
        }
        // Resolve `choose:` against each gate it answers, with the decider.
        let decider = Decider {
            rules: vec![AnswerRule::Question {
                pattern,
                regex,
                reply,
            }],
            parity: Default::default(),
            unanswered: answers::Unanswered::Fail,
        };
        for gate in gates {
            if let Err(DecideError::Script(msg)) = decider.decide_question(gate) {
                self.push(
                    Code::ChooseNamesNoOption,
                    &format!("answers[{i}].choose"),
                    format!("`choose:` names no option the question offers: {msg}"),
                    Some("choose an offered label, a 1-based index, `first` or `recommended`"),
                );
                return;
            }
        }
    }

    /// L005 without a model script: a `question_options: {equals: [...]}`
    /// assertion states the options a question offers; a `choose:` of a rule
    /// that selects that question must name one of them. The assertion
    /// applies when it has no `when_question` (one gate) or the rule's
    /// `when_question` matches its selector text.
    fn choose_against_asserted_options(&mut self, i: usize, rule: &Value) {
        let (Some(when), Some(choose)) = (
            rule.get("when_question").and_then(Value::as_str),
            rule.get("choose"),
        ) else {
            return;
        };
        let Ok(parsed) = answers::parse_rules(&Value::Array(vec![rule.clone()]), "answers") else {
            return; // the loader reports a malformed rule
        };
        let Some(AnswerRule::Question { regex, .. }) = parsed.first() else {
            return;
        };
        // The same `choose:` under a rule that matches any question text, so
        // the decider resolves it against the stated labels.
        let any = serde_json::json!([{"when_question": ".?", "choose": choose}]);
        let Ok(rules) = answers::parse_rules(&any, "answers") else {
            return;
        };
        let decider = Decider {
            rules,
            parity: Default::default(),
            unanswered: answers::Unanswered::Fail,
        };
        for (_, item) in assert_items(self.doc) {
            let Some(qo) = item.get("question_options").and_then(Value::as_object) else {
                continue;
            };
            let Some(labels) = qo.get("equals").and_then(Value::as_array) else {
                continue; // `contains` states only some of the options
            };
            let selector = qo.get("when_question").and_then(Value::as_str);
            if selector.is_some_and(|s| s != when && !regex.is_match(s).unwrap_or(false)) {
                continue;
            }
            let options: Vec<Value> = labels
                .iter()
                .filter_map(Value::as_str)
                .map(|l| serde_json::json!({"label": l}))
                .collect();
            let gate = serde_json::json!([{
                "question": selector.unwrap_or("the question"),
                "multiSelect": true,
                "options": options,
            }]);
            if let Err(DecideError::Script(msg)) = decider.decide_question(&gate) {
                self.push(
                    Code::ChooseNamesNoOption,
                    &format!("answers[{i}].choose"),
                    format!(
                        "`choose:` names no option the question offers (as `question_options` \
                            states them): {msg}"
                    ),
                    Some("choose an offered label, a 1-based index, `first` or `recommended`"),
                );
                return;
            }
        }
    }

    /// L007: assertions that pass (or fail) whatever the run does.
    fn vacuous(&mut self, session: Option<&scenario::session::Session>) {
        let mut roots: Vec<String> = vec!["outputs".into(), ".projects".into()];
        if let Some(s) = session {
            roots.extend(s.folders.iter().filter_map(|f| {
                Path::new(&f.from)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
            }));
        }
        for (i, item) in assert_items(self.doc) {
            if let Some(glob) = item
                .get(keys::name::TOOL_NOT_CALLED)
                .and_then(Value::as_str)
                && !glob.is_empty()
                && !glob.starts_with("mcp__")
                && !KNOWN_TOOLS
                    .iter()
                    .any(|t| crate::assert::glob::matches(glob, t))
            {
                self.push(
                    Code::VacuousAssertion,
                    &format!("assert[{i}].tool_not_called"),
                    format!(
                        "`tool_not_called: {glob}` matches no tool the agent offers, so it always \
                            passes{}",
                        scenario::did_you_mean(glob, KNOWN_TOOLS)
                    ),
                    Some("name a real tool (`reel assertions tool_not_called`)"),
                );
            }
            if let Some(p) = item.get(keys::name::FILE_EXISTS).and_then(Value::as_str) {
                let norm = p.trim_start_matches("./");
                let first = norm.split('/').next().unwrap_or_default();
                let at = format!("assert[{i}].file_exists");
                if first == "uploads" {
                    self.push(
                        Code::VacuousAssertion,
                        &at,
                        format!(
                            "`file_exists: {p}` is a staged input: it exists before the agent \
                                starts, so it always passes"
                        ),
                        Some("assert an output (outputs/…), or `input_unmodified` for inputs"),
                    );
                } else if !roots.iter().any(|r| r == first) || !norm.contains('/') {
                    self.push(
                        Code::VacuousAssertion,
                        &at,
                        format!(
                            "`file_exists: {p}` is outside the user-visible roots ({}): the \
                                artifact manifest never records it",
                            roots.join(", ")
                        ),
                        Some("write paths relative to the work root, e.g. outputs/report.md"),
                    );
                }
            }
        }
    }

    /// L008: nothing asserted beyond how the run ended.
    fn only_result(&mut self) {
        let items = assert_items(self.doc);
        let beyond = items.iter().any(|(_, m)| {
            m.keys()
                .any(|k| k != "result" && !catalog::is_verdict_modifier(k))
        });
        if !beyond {
            let at = if self.doc.get("assert").is_some() {
                "assert"
            } else {
                "prompt"
            };
            // Name only what the file holds: `result` when it asserts it.
            let what = if items.iter().any(|(_, m)| m.contains_key("result")) {
                "no assertion beyond `result`"
            } else if items.is_empty() {
                "no assertion"
            } else {
                "no assertion beyond verdict modifiers"
            };
            self.push(
                Code::OnlyResultAsserted,
                at,
                format!("{what}: any run that ends passes, whatever the skill did"),
                Some(
                    "assert what the skill must do: a file (file_exists, artifact_text), a tool \
                    (tool_called), the answer (transcript_contains)",
                ),
            );
        }
    }

    /// L009: pairs of assertions that can never both pass.
    fn contradictions(&mut self) {
        let items = assert_items(self.doc);
        let find = |key: &str, pred: &dyn Fn(&Value) -> bool| -> Option<usize> {
            items
                .iter()
                .find(|(_, m)| m.get(key).is_some_and(pred))
                .map(|(i, _)| *i)
        };
        let mut report = |a: (&str, usize), b: (&str, usize), why: String| {
            let (first, second) = if a.1 <= b.1 { (a, b) } else { (b, a) };
            self.push(
                Code::ContradictoryAssertions,
                &format!("assert[{}].{}", second.1, second.0),
                format!(
                    "`{}` (assert[{}]) contradicts `{}` (assert[{}]): {why}",
                    second.0, second.1, first.0, first.1
                ),
                Some("one of the two can never pass; remove it"),
            );
        };
        // Same-value opposites.
        for (yes, no) in keys::all()
            .iter()
            .filter_map(|k| Some((k.name, k.opposite?)))
        {
            for (i, m) in &items {
                let Some(v) = m.get(yes) else { continue };
                if let Some((j, _)) = items.iter().find(|(_, n)| n.get(no) == Some(v)) {
                    report(
                        (yes, *i),
                        (no, *j),
                        format!("both name {}", serde_json::to_string(v).unwrap_or_default()),
                    );
                }
            }
        }
        let results: Vec<(usize, &str)> = items
            .iter()
            .filter_map(|(i, m)| m.get("result").and_then(Value::as_str).map(|r| (*i, r)))
            .collect();
        if let Some((i, a)) = results.first()
            && let Some((j, b)) = results.iter().find(|(_, r)| r != a)
        {
            report(
                ("result", *i),
                ("result", *j),
                format!("a run ends in {a} or {b}, not both"),
            );
        }
        // A key whose value leaves no room for another.
        for key in keys::all() {
            let Some(rule) = key.excludes else { continue };
            let Some(i) = find(key.name, &rule.when) else {
                continue;
            };
            for (other, pred) in rule.others {
                if let Some(j) = find(other, pred) {
                    report((key.name, i), (other, j), rule.why.into());
                }
            }
        }
    }

    /// L010 for the session file and the paths it stages; returns the loaded
    /// session (for the checks that read it).
    fn session(&mut self) -> Option<(PathBuf, scenario::session::Session)> {
        let raw = self.str_field("session")?.to_string();
        if raw == scenario::INLINE_SESSION {
            return None;
        }
        let Ok(path) = scenario::resolve_path(&raw, scenario::dir_of(self.path)) else {
            return None; // `~user`: the loader's refusal
        };
        if !path.is_file() {
            self.push(
                Code::PathNotFound,
                "session",
                format!("`session: {raw}` does not exist ({})", path.display()),
                Some("session paths are relative to the scenario's directory"),
            );
            return None;
        }
        let text = std::fs::read_to_string(&path).ok()?;
        let spos = Positions::of(&text);
        self.findings
            .extend(duplicate_keys(&path, &spos, "session"));
        let session = scenario::session::Session::parse(&text, &path).ok()?;
        let base = scenario::dir_of(&path).to_path_buf();
        let mut staged: Vec<(String, String)> = Vec::new();
        for (i, u) in session.uploads.iter().enumerate() {
            staged.push((format!("uploads[{i}]"), u.clone()));
        }
        for (i, f) in session.folders.iter().enumerate() {
            staged.push((format!("folders[{i}].from"), f.from.clone()));
        }
        for (i, p) in session.projects.iter().enumerate() {
            staged.push((format!("projects[{i}].from"), p.from.clone()));
        }
        for (i, s) in session.skills.local.iter().enumerate() {
            staged.push((format!("skills.local[{i}]"), s.clone()));
        }
        for (at, p) in staged {
            let Ok(resolved) = scenario::resolve_path(&p, &base) else {
                continue;
            };
            if !resolved.exists() {
                self.findings.push(Finding {
                    code: Code::PathNotFound.id(),
                    name: Code::PathNotFound.name(),
                    severity: Code::PathNotFound.severity(),
                    file: path.clone(),
                    line: spos.line(&at),
                    message: format!(
                        "`{at}: {p}` does not exist ({}), named by the session of {}",
                        resolved.display(),
                        self.path.display()
                    ),
                    hint: Some("session paths are relative to the session file's directory".into()),
                });
            }
        }
        Some((path, session))
    }
}

/// L012: every key given again in a mapping of `file` (the scenario, or
/// the session it names) that already has it. The loader keeps the last
/// value and drops the first without a word, so an edit of the first does
/// nothing.
fn duplicate_keys(file: &Path, pos: &Positions, what: &str) -> Vec<Finding> {
    let code = Code::DuplicateKey;
    pos.duplicates()
        .iter()
        .map(|d| {
            let at = if d.mapping.is_empty() {
                String::new()
            } else {
                format!(" in `{}`", d.mapping)
            };
            Finding {
                code: code.id(),
                name: code.name(),
                severity: code.severity(),
                file: file.to_owned(),
                line: Some(d.line),
                message: format!(
                    "duplicate key `{}`{at}: already given on line {}; the {what} keeps only this \
                     one, and line {}'s value is silently dropped",
                    d.key, d.first_line, d.first_line
                ),
                hint: Some(format!(
                    "keep one `{}:` — delete the line you do not mean, or merge the two values \
                     (a key that takes several values takes a list)",
                    d.key
                )),
            }
        })
        .collect()
}

/// Whether a `when_tool` value can name a tool the agent is offered.
fn tool_is_known(tool: &str) -> bool {
    KNOWN_TOOLS.contains(&tool) || tool.starts_with("mcp__") || tool.starts_with("webfetch:")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_stable() {
        let all = [
            Code::DoesNotLoad,
            Code::LiveOnlyKey,
            Code::NoPreRunBaseline,
            Code::SlashCommandNotFirst,
            Code::AnswerNeverMatches,
            Code::ChooseNamesNoOption,
            Code::AllowIfSyntax,
            Code::VacuousAssertion,
            Code::OnlyResultAsserted,
            Code::ContradictoryAssertions,
            Code::PathNotFound,
            Code::NeedsControlOut,
            Code::DuplicateKey,
        ];
        let ids: std::collections::BTreeSet<_> = all.iter().map(|c| c.id()).collect();
        assert_eq!(ids.len(), all.len());
        assert_eq!(Code::PathNotFound.id(), "L010");
    }
}
