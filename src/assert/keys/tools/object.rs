//! The object form of `tool_called` / `tool_not_called` (cowork-harness v13,
//! `src/tool-call-assert.ts`): what a call carried (its top-level input
//! fields), where it ran (main agent / sub-agent) and what its paired result
//! said. Every "could not look" case fails closed: a truncated input or
//! result a regex missed, an unpaired call under a `result` predicate, a
//! field or regex a redaction policy rewrote — such a call is unknown, and an
//! unknown call never lets a negative pass nor a positive say "not called".

use serde_json::{Map, Value};

use super::*;
use crate::evidence::{ToolCall, ToolResult};
use crate::js::regex::compile_es_with_flags;

/// Where a redaction policy rewrote recorded bytes.
const REDACTION_TOKEN: &str = "[REDACTED";

/// A predicate's outcome on one call.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Status {
    Yes,
    No,
    Unknown,
}

fn all(parts: &[Status]) -> Status {
    if parts.contains(&Status::No) {
        Status::No
    } else if parts.contains(&Status::Unknown) {
        Status::Unknown
    } else {
        Status::Yes
    }
}

/// The globs to evaluate as the string form, when the object constrains
/// nothing but `tool` (`input: {}`, `result: {}`, `count: {}` and
/// `scope: main` constrain nothing); `None` when its own evaluator must run.
pub(super) fn routed_globs(v: &Value) -> Option<Vec<Value>> {
    let o = v.as_object()?;
    let empty = |x: &Value| x.as_object().is_some_and(Map::is_empty);
    let constrains = |(k, x): (&String, &Value)| match k.as_str() {
        "tool" => false,
        "scope" => x.as_str() != Some("main"),
        "input" | "result" | "count" => !empty(x),
        _ => true,
    };
    if o.iter().any(constrains) {
        return None;
    }
    match o.get("tool")? {
        Value::Array(globs) => Some(globs.clone()),
        glob => Some(vec![glob.clone()]),
    }
}

/// The object's regexes, compiled, by where they live.
struct Regexes {
    input: Vec<(String, String, EsRegex)>,
    input_any: Option<(String, EsRegex)>,
    input_json: Option<(String, EsRegex)>,
    matches: Option<(String, EsRegex)>,
    not_matches: Option<(String, EsRegex)>,
    subagent_type: Option<EsRegex>,
}

fn compile_all(key: &str, o: &Map<String, Value>) -> Result<Regexes, String> {
    let mut sources: Vec<(String, String)> = Vec::new();
    if let Some(fields) = o.get("input").and_then(Value::as_object) {
        for (f, src) in fields {
            sources.push((
                format!("input.{f}"),
                src.as_str().unwrap_or_default().to_owned(),
            ));
        }
    }
    let result = o.get("result").and_then(Value::as_object);
    for (where_, v) in [
        ("input_any", o.get("input_any")),
        ("input_json", o.get("input_json")),
        ("result.matches", result.and_then(|r| r.get("matches"))),
        (
            "result.not_matches",
            result.and_then(|r| r.get("not_matches")),
        ),
        ("subagent_type", o.get("subagent_type")),
    ] {
        if let Some(src) = v.and_then(Value::as_str) {
            sources.push((where_.to_owned(), src.to_owned()));
        }
    }
    if let Some((where_, src)) = sources.iter().find(|(_, s)| s.contains(REDACTION_TOKEN)) {
        return Err(format!(
            "evidence unavailable: {key}.{where_} was rewritten by the cassette's redaction policy \
                (\"{}\") — it cannot be evaluated on replay. Assert on a literal the policy does not \
                rewrite, or check it on a live run",
            crate::js::utf16::slice(src, 120)
        ));
    }
    let mut re = Regexes {
        input: Vec::new(),
        input_any: None,
        input_json: None,
        matches: None,
        not_matches: None,
        subagent_type: None,
    };
    for (where_, src) in sources {
        // `input_json` is case-sensitive, as the grader it mirrors.
        let flags = if where_ == "input_json" { "" } else { "i" };
        let compiled = compile_es_with_flags(&src, flags)
            .map_err(|e| format!("{key}: bad regex \"{src}\" in {where_}: {e}"))?;
        match where_.as_str() {
            "input_any" => re.input_any = Some((src, compiled)),
            "input_json" => re.input_json = Some((src, compiled)),
            "result.matches" => re.matches = Some((src, compiled)),
            "result.not_matches" => re.not_matches = Some((src, compiled)),
            "subagent_type" => re.subagent_type = Some(compiled),
            field => re
                .input
                .push((field["input.".len()..].to_owned(), src, compiled)),
        }
    }
    Ok(re)
}

/// A regex test on text whose redaction tokens can never be hit.
fn hit(key: &str, re: &EsRegex, text: &str) -> Result<bool, String> {
    if text.contains(REDACTION_TOKEN) {
        let cleaned = redaction_free(text);
        return t(key, re, &cleaned);
    }
    t(key, re, text)
}

/// `text` with each `[REDACTED…]` token replaced by a NUL no regex matches into.
fn redaction_free(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(REDACTION_TOKEN) {
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        let end = after.find(']').map_or(after.len(), |i| i + 1);
        out.push('\u{0}');
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// A miss that is no proof of absence: the text was cut, or it carries a
/// redaction token and either the miss would let the check pass, or the
/// regex names a literal of a kind redaction rewrites (then a positive red
/// says "could not look" rather than "not called").
fn miss_is_unknown(text: &str, truncated: bool, source: &str, negative_direction: bool) -> bool {
    truncated
        || (text.contains(REDACTION_TOKEN)
            && (negative_direction || names_redactable_literal(source)))
}

/// Whether a regex, read as the literal it spells (`\/` → `/`), names
/// something of a shape the reference redaction policy rewrites: a home,
/// temp or mount path, or an email address (the original's offline
/// heuristic, src/redactable-literal.ts).
fn names_redactable_literal(source: &str) -> bool {
    static SHAPES: std::sync::LazyLock<regex::RegexSet> = std::sync::LazyLock::new(|| {
        regex::RegexSet::new([
            r"/(?:Users|home|root)/[^/\s]",
            r"/private/(?:tmp|var)/",
            r"/var/folders/",
            r"/Volumes/[^/\s]",
            r"/System/Volumes/",
            r"[A-Za-z0-9._%+-]@[A-Za-z0-9.-]+\.[A-Za-z]{2,}",
        ])
        .expect("the redactable shapes compile")
    });
    // Each `\x` read as `x`; a class or group still reads as its
    // characters, which can only make the check fire more.
    let mut literal = String::with_capacity(source.len());
    let mut chars = source.chars();
    while let Some(c) = chars.next() {
        literal.push(if c == '\\' {
            chars.next().unwrap_or(c)
        } else {
            c
        });
    }
    SHAPES.is_match(&literal)
}

struct Judge<'a> {
    key: &'static str,
    negative: bool,
    re: Regexes,
    result: Option<&'a Map<String, Value>>,
    results: &'a [std::sync::Arc<ToolResult>],
}

impl Judge<'_> {
    fn input(&self, c: &ToolCall) -> Result<Status, String> {
        let mut parts = Vec::new();
        let field = |f: &str| c.input.iter().find(|(k, _)| k == f).map(|(_, v)| v);
        for (f, src, re) in &self.re.input {
            parts.push(match field(f).filter(|v| !v.text.is_empty()) {
                None => Status::No,
                Some(v) if hit(self.key, re, &v.text)? => Status::Yes,
                Some(v) if miss_is_unknown(&v.text, v.truncated, src, self.negative) => {
                    Status::Unknown
                }
                Some(_) => Status::No,
            });
        }
        if let Some((src, re)) = &self.re.input_any {
            let mut any_hit = false;
            for (_, v) in c.input.iter() {
                any_hit |= hit(self.key, re, &v.text)?;
            }
            parts.push(if any_hit {
                Status::Yes
            } else if c
                .input
                .iter()
                .any(|(_, v)| miss_is_unknown(&v.text, v.truncated, src, self.negative))
            {
                Status::Unknown
            } else {
                Status::No
            });
        }
        if let Some((src, re)) = &self.re.input_json {
            let json = c.input_json();
            parts.push(if hit(self.key, re, &json.text)? {
                Status::Yes
            } else if miss_is_unknown(&json.text, json.truncated, src, self.negative) {
                Status::Unknown
            } else {
                Status::No
            });
        }
        Ok(all(&parts))
    }

    fn result(&self, c: &ToolCall) -> Result<(Status, &'static str), String> {
        let Some(want) = self.result else {
            return Ok((Status::Yes, ""));
        };
        let paired = c.tool_use_id.as_ref().and_then(|id| {
            self.results
                .iter()
                .find(|r| r.tool_use_id.as_ref() == Some(id))
        });
        let Some(r) = paired else {
            return Ok((Status::Unknown, "unpaired"));
        };
        let text = r.assert_text.as_deref().unwrap_or(r.text());
        let cut = r.assert_text_truncated || r.assert_text.is_none();
        let mut parts = Vec::new();
        if let Some(e) = want.get("is_error").and_then(Value::as_bool) {
            parts.push(if r.is_error == e {
                Status::Yes
            } else {
                Status::No
            });
        }
        if let Some((src, re)) = &self.re.matches {
            parts.push(if hit(self.key, re, text)? {
                Status::Yes
            } else if miss_is_unknown(text, cut, src, self.negative) {
                Status::Unknown
            } else {
                Status::No
            });
        }
        if let Some((src, re)) = &self.re.not_matches {
            parts.push(if hit(self.key, re, text)? {
                Status::No
            } else if miss_is_unknown(text, cut, src, !self.negative) {
                Status::Unknown
            } else {
                Status::Yes
            });
        }
        Ok((
            all(&parts),
            if cut { "paired, truncated" } else { "paired" },
        ))
    }
}

fn sample(xs: &[String]) -> String {
    let mut s = xs.iter().take(5).cloned().collect::<Vec<_>>().join("; ");
    if xs.len() > 5 {
        s.push_str(&format!("; …(+{})", xs.len() - 5));
    }
    s
}

/// A call as a red lists it: name, origin, the fields the author named (or
/// the first one), and why it was set aside.
fn describe(c: &ToolCall, named_fields: &[String], note: &str) -> String {
    let names: Vec<&str> = if named_fields.is_empty() {
        c.input.iter().take(1).map(|(k, _)| k.as_str()).collect()
    } else {
        named_fields.iter().map(String::as_str).collect()
    };
    let fields: Vec<String> = names
        .iter()
        .map(|f| match c.input.iter().find(|(k, _)| k == f) {
            Some((_, v)) => format!(
                "{f}={}",
                json::stringify(Some(&Value::String(
                    crate::js::utf16::slice(&v.text, 120).to_owned()
                )))
            ),
            None => format!("{f}=(absent)"),
        })
        .collect();
    let fields = if fields.is_empty() {
        String::new()
    } else {
        format!(" {}", fields.join(" "))
    };
    let note = if note.is_empty() {
        String::new()
    } else {
        format!(" ({note})")
    };
    format!("{}[{}]{fields}{note}", c.name, c.origin.as_str())
}

/// The calls the object form considered, sorted by what they showed.
#[derive(Default)]
struct Tally {
    satisfied: Vec<String>,
    unknown: Vec<String>,
    rejected: Vec<String>,
    /// Input-matching calls outside the scope, by where they ran.
    out_of_scope: Vec<(String, usize)>,
    named: usize,
    in_scope: usize,
    /// Name-matching calls outside the scope, by origin, in the order met
    /// (what a negative pass did not look at).
    skipped: Vec<(&'static str, usize)>,
}

/// `tool_called` / `tool_not_called` given as an object with predicates.
pub(super) fn check_object(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let o = obj_param(key, v)?;
    let globs: Vec<&str> = match o.get("tool") {
        Some(Value::Array(g)) => g.iter().filter_map(Value::as_str).collect(),
        Some(Value::String(g)) => vec![g.as_str()],
        _ => return Err(bad_param(key)),
    };
    for g in &globs {
        env.warn_if_regexish(key, g);
    }
    let shown_tool = globs.join(" | ");
    let negative = key == name::TOOL_NOT_CALLED;
    let judge = Judge {
        key,
        negative,
        re: compile_all(key, o)?,
        result: o.get("result").and_then(Value::as_object),
        results: &env.run.tool_results,
    };
    let scope = opt_str(o, "scope").unwrap_or("main");
    let tally = tally(env.run, &judge, &globs, scope)?;
    if negative {
        return negative_verdict(&tally, &shown_tool, scope);
    }
    let count = o.get("count").and_then(Value::as_object);
    let bound = |k: &str| count.and_then(|c| c.get(k)).and_then(Value::as_f64);
    positive_verdict(
        &tally,
        &shown_tool,
        scope,
        bound("min").unwrap_or(1.0),
        bound("max"),
    )
}

fn tally(run: &RunRecord, judge: &Judge<'_>, globs: &[&str], scope: &str) -> Result<Tally, String> {
    let compiled: Vec<Glob> = globs.iter().map(|g| Glob::new(g)).collect();
    let type_ok = |c: &ToolCall| -> Result<bool, String> {
        let Some(re) = &judge.re.subagent_type else {
            return Ok(true);
        };
        let Some(d) = c
            .parent
            .as_ref()
            .and_then(|p| run.subagents.iter().find(|s| &s.tool_use_id == p))
        else {
            return Ok(false);
        };
        Ok(t(judge.key, re, &d.dispatch_agent_type)?
            || d.resolved_agent_type
                .as_deref()
                .map_or(Ok(false), |r| t(judge.key, re, r))?
            || t(judge.key, re, d.description.as_deref().unwrap_or(""))?)
    };
    let named_fields: Vec<String> = judge.re.input.iter().map(|(f, _, _)| f.clone()).collect();
    let mut out = Tally::default();
    for c in run
        .tool_calls
        .iter()
        .filter(|c| compiled.iter().any(|g| g.is_match(&c.name)))
    {
        out.named += 1;
        let input = judge.input(c)?;
        let typed = type_ok(c)?;
        if !((scope == "any" || c.origin.as_str() == scope) && typed) {
            match out
                .skipped
                .iter_mut()
                .find(|(o, _)| *o == c.origin.as_str())
            {
                Some((_, n)) => *n += 1,
                None => out.skipped.push((c.origin.as_str(), 1)),
            }
            if input != Status::No {
                let origin = c.origin.as_str();
                let at = if typed || scope != "subagent" {
                    origin.to_owned()
                } else {
                    format!("{origin}, other subagent_type")
                };
                match out.out_of_scope.iter_mut().find(|(w, _)| *w == at) {
                    Some((_, n)) => *n += 1,
                    None => out.out_of_scope.push((at, 1)),
                }
            }
            continue;
        }
        out.in_scope += 1;
        if input == Status::No {
            out.rejected
                .push(describe(c, &named_fields, "input mismatch"));
            continue;
        }
        let (result, note) = judge.result(c)?;
        if result == Status::No {
            out.rejected.push(describe(
                c,
                &named_fields,
                &format!("result mismatch, {note}"),
            ));
        } else if input == Status::Unknown {
            out.unknown
                .push(describe(c, &named_fields, "input truncated or redacted"));
        } else if result == Status::Unknown {
            out.unknown
                .push(describe(c, &named_fields, &format!("result {note}")));
        } else {
            out.satisfied.push(describe(c, &named_fields, note));
        }
    }
    Ok(out)
}

fn negative_verdict(tally: &Tally, tool: &str, scope: &str) -> KeyResult {
    if !tally.satisfied.is_empty() {
        return Err(format!(
            "tool unexpectedly called: {} {tool} call(s) in scope {scope} satisfied every \
                predicate: {}",
            tally.satisfied.len(),
            sample(&tally.satisfied)
        ));
    }
    if !tally.unknown.is_empty() {
        return Err(format!(
            "evidence unavailable: {} {tool} call(s) in scope {scope} could not be ruled out — {}. \
                A negative check cannot pass over evidence it could not read",
            tally.unknown.len(),
            sample(&tally.unknown)
        ));
    }
    // What the pass did not look at, by origin (the original's words).
    let not_checked = if tally.skipped.is_empty() {
        String::new()
    } else {
        let parts: Vec<String> = tally
            .skipped
            .iter()
            .map(|(origin, n)| {
                let label = match *origin {
                    "subagent" => "sub-agent",
                    "main" => "main-agent",
                    _ => "unknown-origin",
                };
                format!("{n} {label} call{}", if *n == 1 { "" } else { "s" })
            })
            .collect();
        let one = tally.skipped.len() == 1 && tally.skipped[0].1 == 1;
        format!(
            "; {} not checked (use `scope: any` to include {})",
            parts.join(", "),
            if one { "it" } else { "them" }
        )
    };
    ok_ev(format!(
        "tool_not_called: no {tool} call satisfied every predicate — {} in scope {scope} \
            checked{not_checked}",
        tally.in_scope
    ))
}

fn positive_verdict(
    tally: &Tally,
    tool: &str,
    scope: &str,
    min: f64,
    max: Option<f64>,
) -> KeyResult {
    let n = tally.satisfied.len();
    let unknown = tally.unknown.len();
    let within_max = |k: usize| max.is_none_or(|m| k as f64 <= m);
    if n == 0 && min == 0.0 && within_max(unknown) {
        return ok_ev(format!(
            "tool_called: 0 {tool} call(s) in scope {scope} satisfied every predicate, which \
                count.min 0 allows ({} name-matching call(s) checked)",
            tally.named
        ));
    }
    if n as f64 >= min && within_max(n + unknown) {
        return ok_ev(format!(
            "tool_called: {n} {tool} call(s) in scope {scope} satisfied every predicate: {}",
            redaction_free(&sample(&tally.satisfied)).replace('\u{0}', "(redacted)")
        ));
    }
    let range = match max {
        Some(m) => format!("{}..{}", f(min), f(m)),
        None => format!("{}+", f(min)),
    };
    if max.is_some_and(|m| n as f64 > m) {
        return Err(format!(
            "tool called too often: {n} {tool} call(s) satisfied every predicate (max {}): {}",
            f(max.unwrap_or_default()),
            sample(&tally.satisfied)
        ));
    }
    if unknown > 0 {
        return Err(format!(
            "evidence unavailable: {n} {tool} call(s) satisfied every predicate (need {range}), \
                and {unknown} more could not be settled — {}",
            sample(&tally.unknown)
        ));
    }
    let hints: Vec<String> = tally
        .out_of_scope
        .iter()
        .map(|(at, k)| {
            let first = at.split(',').next().unwrap_or(at);
            format!(
                "{k} matching call{} in scope {at} — set `scope: any` (or `scope: {first}`) to \
                    count {}",
                if *k == 1 { "" } else { "s" },
                if *k == 1 { "it" } else { "them" }
            )
        })
        .collect();
    let mut context = if !tally.rejected.is_empty() {
        format!(" Considered in scope {scope}: {}.", sample(&tally.rejected))
    } else if tally.named == 0 {
        format!(" No {tool} call was recorded at all.")
    } else {
        String::new()
    };
    if !hints.is_empty() {
        context.push_str(&format!(" {}.", hints.join("; ")));
    }
    Err(if n == 0 {
        format!(
            "tool not called: no {tool} call in scope {scope} satisfied every predicate.{context}"
        )
    } else {
        format!(
            "tool called too rarely: {n} {tool} call(s) satisfied every predicate (min {}).{context}",
            f(min)
        )
    })
}
