//! Each grader kind and option → the reel assertion with the same meaning,
//! or a refusal saying why none has it and what to change. The rule is one
//! way: an assertion may be stricter than its grader (fail where the grader
//! would pass, said in its note), never laxer. docs/plugin-eval.md tabulates
//! this file.

use serde_json::{Value, json};

use super::case::{Grader, Target, ToolRef};

/// Where a mapped assertion goes: a turn's `assert:` (the graded turn) or
/// the scenario's top level (keys reel evaluates once per session).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    Turn,
    Session,
}

/// A grader with a reel equivalent.
#[derive(Debug, Clone, PartialEq)]
pub struct Mapped {
    pub assertion: Value,
    pub placement: Placement,
    /// Where the assertion is stricter than the grader, or how it is judged.
    pub note: Option<&'static str>,
}

/// A grader without one: the field at fault, why, and the fix.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub field: &'static str,
    pub reason: String,
    pub fix: &'static str,
}

type Mapping = Result<Mapped, Refusal>;

fn refuse(field: &'static str, reason: impl Into<String>, fix: &'static str) -> Mapping {
    Err(Refusal {
        field,
        reason: reason.into(),
        fix,
    })
}

fn turn(assertion: Value, note: Option<&'static str>) -> Mapping {
    Ok(Mapped {
        assertion,
        placement: Placement::Turn,
        note,
    })
}

fn session(assertion: Value, note: Option<&'static str>) -> Mapping {
    Ok(Mapped {
        assertion,
        placement: Placement::Session,
        note,
    })
}

/// The reel assertion of `g`.
pub fn map(g: &Grader) -> Mapping {
    match g {
        Grader::Regex {
            target,
            pattern,
            flags,
            match_,
            ..
        } => regex(target, pattern, flags, match_),
        Grader::ToolUsed {
            tool,
            input_match,
            min,
            max,
            ..
        } => tool_used(tool, input_match.as_deref(), *min, *max),
        Grader::ToolOrder { before, after, .. } => tool_order(before, after),
        Grader::FileExists { path, exists, .. } => file_exists(path, *exists),
        Grader::Llm {
            criteria, focus, ..
        } => llm(criteria, focus),
        Grader::Baseline {
            baseline_file,
            criteria,
            ..
        } => session(
            // The path is the case's; `scenario::build` copies the file
            // beside the scenario and rewrites it.
            json!({"semantic_matches": {
                "rubric": [criteria.trim()],
                "baseline_transcript": baseline_file,
            }}),
            Some(
                "judged as the first-party grader: the same prompt, 3 PASS/FAIL votes, the majority decides",
            ),
        ),
    }
}

/// `contains` / `not_contains` / `count:0` (absent) / `count:N`.
enum Want {
    Present,
    Absent,
    Count,
}

fn want(match_: &str) -> Result<Want, Refusal> {
    match match_ {
        "contains" => Ok(Want::Present),
        "not_contains" | "count:0" => Ok(Want::Absent),
        m if m
            .strip_prefix("count:")
            .is_some_and(|n| n.parse::<u64>().is_ok()) =>
        {
            Ok(Want::Count)
        }
        other => Err(Refusal {
            field: "match",
            reason: format!("\"{other}\" is not contains | not_contains | count:N"),
            fix: "use match: contains, not_contains or count:N",
        }),
    }
}

fn regex(target: &Target, pattern: &str, flags: &str, match_: &str) -> Mapping {
    let want = want(match_)?;
    if flags.contains('y') {
        return refuse(
            "flags",
            "flag `y` anchors the match at the start of the text, and no reel regex key does",
            "drop `y` (anchor the pattern with ^ instead)",
        );
    }
    match target {
        Target::Named(t) if t == "last_message" => last_message(pattern, flags, match_, want),
        Target::Named(t) => refuse(
            "target",
            format!(
                "reel has no assertion over `{t}` (the raw trace, the created-file list, the mock calls)"
            ),
            "grade the last message or a file the agent writes instead",
        ),
        Target::File(f) => {
            if let Some(bad) = flags.chars().find(|c| !"igd".contains(*c)) {
                return refuse(
                    "flags",
                    format!(
                        "flag `{bad}` changes what the pattern matches, and reel's artifact_text \
                         regexes take no flag but `i`"
                    ),
                    "drop the flag (artifact_text regexes are ECMAScript, case-insensitive, \
                     without m/s/u/v)",
                );
            }
            if matches!(want, Want::Count) {
                return refuse(
                    "match",
                    "reel has no assertion that counts regex matches in a file",
                    "use match: contains or not_contains",
                );
            }
            let path = file_path(&f.source, &f.path)?;
            file_regex(path, pattern, flags.contains('i'), want)
        }
    }
}

/// `last_message`: the grader's own regex, flags and count, exactly.
fn last_message(pattern: &str, flags: &str, match_: &str, want: Want) -> Mapping {
    let mut o = json!({"pattern": pattern, "flags": flags});
    let key = match want {
        Want::Present => "last_message_matches",
        Want::Absent => "last_message_not_matches",
        Want::Count => {
            o["count"] = match_["count:".len()..]
                .parse::<u64>()
                .unwrap_or_default()
                .into();
            "last_message_matches"
        }
    };
    let mut item = serde_json::Map::new();
    item.insert(key.into(), o);
    let item = Value::Object(item);
    compiled_turn(item, "pattern", "the pattern or its flags do not compile")
}

fn tool_order(before: &ToolRef, after: &ToolRef) -> Mapping {
    let end = |r: &ToolRef, field: &'static str| -> Result<Value, Refusal> {
        let (tool, input_match) = match r {
            ToolRef::Name(t) => (t.as_str(), None),
            ToolRef::Match { tool, input_match } => (tool.as_str(), input_match.as_deref()),
        };
        one_tool_name(tool, field)?;
        // An empty input_match is no constraint to the grader (`if (input_match)`).
        Ok(match input_match.filter(|m| !m.is_empty()) {
            None => Value::from(tool),
            Some(m) => json!({"tool": tool, "input_json": m}),
        })
    };
    let item =
        json!({"tool_order": {"before": end(before, "before")?, "after": end(after, "after")?}});
    compiled_turn(item, "input_match", "the input regex does not compile")
}

/// The mapped assertion as a graded-turn item, refused when its regex does
/// not compile (`failed` says what did not, `field` is the grader's).
fn compiled_turn(item: Value, field: &'static str, failed: &str) -> Mapping {
    crate::assert::catalog::validate(&item).map_err(|e| Refusal {
        field,
        reason: format!("{failed}: {e}"),
        fix: "fix the pattern (the first-party runner would throw on it too)",
    })?;
    turn(item, None)
}

/// One exact tool name: reel reads `*` and `?` (and regex-looking names) as globs.
fn one_tool_name(tool: &str, field: &'static str) -> Result<(), Refusal> {
    if tool.is_empty() || tool.contains(['*', '?']) || crate::assert::glob::looks_like_regex(tool) {
        return Err(Refusal {
            field,
            reason: format!("\"{tool}\" is not one tool name (reel reads `*` and `?` as globs)"),
            fix: "name the tool exactly, e.g. Write or mcp__server__tool",
        });
    }
    Ok(())
}

fn file_regex(path: &str, pattern: &str, insensitive: bool, want: Want) -> Mapping {
    let literal = !pattern.chars().any(|c| "\\^$.|?*+()[]{}".contains(c));
    let note = Some("reel reads the file from the run's captured outputs (outputs/ or a folder)");
    let body = match want {
        Want::Present if literal && !insensitive => {
            json!({"artifact": path, "contains": [pattern]})
        }
        Want::Present if insensitive || case_free(pattern) => {
            json!({"artifact": path, "matches": pattern})
        }
        Want::Present => {
            return refuse(
                "pattern",
                "reel's artifact_text regexes ignore case, so a case-sensitive pattern would \
                 pass where this grader fails",
                "add flags: i, or make the pattern a literal (no regex characters)",
            );
        }
        Want::Absent if literal && !insensitive => {
            json!({"artifact": path, "not_contains": [pattern]})
        }
        // Ignoring case only makes an absence check stricter.
        Want::Absent | Want::Count => json!({"artifact": path, "not_matches": pattern}),
    };
    session(json!({ "artifact_text": body }), note)
}

/// True when case cannot change what `pattern` matches: its only letters
/// are escapes such as `\d` or `\s`.
fn case_free(pattern: &str) -> bool {
    let mut escaped = false;
    for c in pattern.chars() {
        if escaped {
            escaped = false;
            if c.is_alphabetic() && !"dDsSwWbBntrfv".contains(c) {
                return false;
            }
            continue;
        }
        if c == '\\' {
            escaped = true;
        } else if c.to_lowercase().ne(c.to_uppercase()) {
            return false;
        }
    }
    true
}

/// A relative path inside the run directory, without glob characters.
fn file_path<'a>(source: &str, path: &'a str) -> Result<&'a str, Refusal> {
    if source != "file" {
        return Err(Refusal {
            field: "target.source",
            reason: format!("\"{source}\" is not `file`"),
            fix: "write target: {source: file, path: …}",
        });
    }
    literal_path(path, "target.path")
}

fn literal_path<'a>(path: &'a str, field: &'static str) -> Result<&'a str, Refusal> {
    let bad = path.starts_with('/')
        || path.split('/').any(|s| s == "..")
        || path.is_empty()
        || path.starts_with(".claude/");
    if bad {
        return Err(Refusal {
            field,
            reason: format!("\"{path}\" is not a relative path inside the run directory"),
            fix: "name a file below the working directory, e.g. outputs/report.md",
        });
    }
    if path.contains(['*', '?', '[', '{']) {
        return Err(Refusal {
            field,
            reason: format!("\"{path}\" is a glob; reel's file assertions name one file"),
            fix: "name the one file the case expects",
        });
    }
    Ok(path)
}

fn tool_used(tool: &str, input_match: Option<&str>, min: Option<u64>, max: Option<u64>) -> Mapping {
    one_tool_name(tool, "tool")?;
    // An empty input_match is no constraint to the grader (`if (input_match)`).
    let input_match = input_match.filter(|m| !m.is_empty());
    let min = min.unwrap_or(1);
    if let Some(max) = max
        && max < min
    {
        // The first-party runner defaults min to 1, so `max: 0` alone never passes.
        return refuse(
            "max",
            format!("max {max} is below min {min}: the grader never passes"),
            "set max ≥ min (for \"never called\": min: 0, max: 0)",
        );
    }
    if max == Some(0) {
        let mut o = json!({"tool": tool, "scope": "any"});
        if let Some(m) = input_match {
            o["input_json"] = m.into();
        }
        return checked_tool(json!({ "tool_not_called": o }));
    }
    if min == 0 && max.is_none() {
        return refuse(
            "min",
            "min: 0 without max passes on every run",
            "drop the grader, or set max",
        );
    }
    let mut o = json!({"tool": tool, "scope": "any"});
    if let Some(m) = input_match {
        o["input_json"] = m.into();
    }
    if min != 1 || max.is_some() {
        let mut count = serde_json::Map::new();
        count.insert("min".into(), min.into());
        if let Some(max) = max {
            count.insert("max".into(), max.into());
        }
        o["count"] = Value::Object(count);
    }
    checked_tool(json!({ "tool_called": o }))
}

/// The tool assertion, or a refusal when its `input_json` does not compile.
fn checked_tool(item: Value) -> Mapping {
    compiled_turn(item, "input_match", "the input regex does not compile")
}

fn file_exists(path: &str, exists: bool) -> Mapping {
    let path = literal_path(path, "path")?;
    if exists {
        session(
            json!({ "file_exists": path }),
            Some("the run starts without the file (no scaffold), so existing means created"),
        )
    } else {
        session(
            json!({ "file_absent": path }),
            Some("live-only: record and rerun check it; replay skips it"),
        )
    }
}

fn llm(criteria: &str, focus: &Target) -> Mapping {
    let note = Some("judged: 3 votes, the majority decides (first-party: 2 of 3)");
    match focus {
        Target::Named(f) if f == "last_message" => session(
            json!({"semantic_matches": {"rubric": [criteria.trim()]}}),
            note,
        ),
        Target::File(f) => {
            let path = file_path(&f.source, &f.path).map_err(|mut r| {
                r.field = "focus.path";
                r
            })?;
            session(
                json!({"semantic_matches": {"rubric": [criteria.trim()], "evidence_files": [path]}}),
                note,
            )
        }
        Target::Named(f) => refuse(
            "focus",
            format!("reel's judge is shown the main agent's text and named files, not `{f}`"),
            "use focus: last_message or {source: file, path: …}",
        ),
    }
}

/// The grader a reel assertion came from (export), when it is one of the
/// forms [`map`] writes; `None` for every other assertion.
pub fn unmap(name: &str, assertion: &Value) -> Option<Grader> {
    let (key, v) = assertion.as_object()?.iter().next()?;
    let name = name.to_owned();
    match key.as_str() {
        "transcript_not_matches" => Some(Grader::Regex {
            name,
            target: Target::default(),
            pattern: v.as_str()?.to_owned(),
            flags: "i".into(),
            match_: "not_contains".into(),
            weight: None,
            arm: None,
        }),
        "last_message_matches" | "last_message_not_matches" => unmap_last(name, key, v),
        "tool_order" => unmap_order(name, v.as_object()?),
        "tool_called" | "tool_not_called" => unmap_tool(name, key, v),
        "file_exists" | "file_absent" => Some(Grader::FileExists {
            name,
            path: v.as_str()?.to_owned(),
            exists: key == "file_exists",
            weight: None,
            arm: None,
        }),
        "artifact_text" => unmap_text(name, v.as_object()?),
        "semantic_matches" => unmap_judged(name, v.as_object()?),
        _ => None,
    }
}

fn unmap_tool(name: String, key: &str, v: &Value) -> Option<Grader> {
    let o = v.as_object()?;
    let allowed = ["tool", "scope", "count", "input_json"];
    if o.keys().any(|k| !allowed.contains(&k.as_str())) || o.get("scope")? != "any" {
        return None;
    }
    let tool = o.get("tool")?.as_str()?.to_owned();
    let (min, max) = if key == "tool_not_called" {
        (Some(0), Some(0))
    } else {
        let c = o.get("count");
        (
            c.and_then(|c| c.get("min")).and_then(Value::as_u64),
            c.and_then(|c| c.get("max")).and_then(Value::as_u64),
        )
    };
    if key == "tool_not_called" && o.contains_key("count") {
        return None;
    }
    Some(Grader::ToolUsed {
        name,
        tool,
        input_match: o
            .get("input_json")
            .and_then(Value::as_str)
            .map(str::to_owned),
        min,
        max,
        weight: None,
        arm: None,
    })
}

fn unmap_last(name: String, key: &str, v: &Value) -> Option<Grader> {
    let (pattern, flags, count) = match v {
        Value::String(p) => (p.clone(), "i".to_owned(), None),
        Value::Object(o) => (
            o.get("pattern")?.as_str()?.to_owned(),
            o.get("flags")
                .and_then(Value::as_str)
                .unwrap_or("i")
                .to_owned(),
            o.get("count").and_then(Value::as_u64),
        ),
        _ => return None,
    };
    let match_ = match (key, count) {
        ("last_message_not_matches", _) => "not_contains".to_owned(),
        (_, Some(n)) => format!("count:{n}"),
        _ => "contains".to_owned(),
    };
    Some(Grader::Regex {
        name,
        target: Target::default(),
        pattern,
        flags,
        match_,
        weight: None,
        arm: None,
    })
}

fn unmap_order(name: String, o: &serde_json::Map<String, Value>) -> Option<Grader> {
    let end = |v: &Value| -> Option<ToolRef> {
        match v {
            Value::String(t) => Some(ToolRef::Name(t.clone())),
            Value::Object(e) => Some(ToolRef::Match {
                tool: e.get("tool")?.as_str()?.to_owned(),
                input_match: e
                    .get("input_json")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            }),
            _ => None,
        }
    };
    Some(Grader::ToolOrder {
        name,
        before: end(o.get("before")?)?,
        after: end(o.get("after")?)?,
        weight: None,
        arm: None,
    })
}

fn unmap_text(name: String, o: &serde_json::Map<String, Value>) -> Option<Grader> {
    if o.len() != 2 {
        return None;
    }
    let path = o.get("artifact")?.as_str()?.to_owned();
    let one = |k: &str| -> Option<String> {
        match o.get(k)? {
            Value::String(s) => Some(s.clone()),
            Value::Array(a) if a.len() == 1 => a[0].as_str().map(str::to_owned),
            _ => None,
        }
    };
    let (pattern, flags, match_) = if let Some(p) = one("contains") {
        (p, "", "contains")
    } else if let Some(p) = one("not_contains") {
        (p, "", "not_contains")
    } else if let Some(p) = one("matches") {
        (p, "i", "contains")
    } else {
        (one("not_matches")?, "i", "not_contains")
    };
    let literal_list = o.contains_key("contains") || o.contains_key("not_contains");
    if literal_list && pattern.chars().any(|c| "\\^$.|?*+()[]{}".contains(c)) {
        return None; // a literal with regex characters has no grader form
    }
    Some(Grader::Regex {
        name,
        target: Target::File(super::case::FileSource {
            source: "file".into(),
            path,
        }),
        pattern,
        flags: flags.into(),
        match_: match_.into(),
        weight: None,
        arm: None,
    })
}

fn unmap_judged(name: String, o: &serde_json::Map<String, Value>) -> Option<Grader> {
    if let Some(b) = o.get("baseline_transcript") {
        return unmap_baseline(name, o, b);
    }
    if o.keys().any(|k| k != "rubric" && k != "evidence_files") {
        return None;
    }
    let rubric = o.get("rubric")?.as_array()?;
    let [criteria] = rubric.as_slice() else {
        return None;
    };
    let focus = match o.get("evidence_files").and_then(Value::as_array) {
        None => Target::default(),
        Some(files) if files.len() == 1 => Target::File(super::case::FileSource {
            source: "file".into(),
            path: files[0].as_str()?.to_owned(),
        }),
        Some(_) => return None,
    };
    Some(Grader::Llm {
        name,
        criteria: criteria.as_str()?.to_owned(),
        focus,
        weight: None,
        arm: None,
    })
}

/// A `baseline_transcript` back to its grader; the file is named by its
/// last path component (export writes the text there, beside prompt.md).
fn unmap_baseline(name: String, o: &serde_json::Map<String, Value>, b: &Value) -> Option<Grader> {
    if o.keys()
        .any(|k| k != "rubric" && k != "baseline_transcript")
    {
        return None;
    }
    let [criteria] = o.get("rubric")?.as_array()?.as_slice() else {
        return None;
    };
    let file = b.get("file").or(Some(b))?.as_str()?;
    Some(Grader::Baseline {
        name,
        baseline_file: file.rsplit('/').next()?.to_owned(),
        criteria: criteria.as_str()?.to_owned(),
        weight: None,
        arm: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin_eval::case::FileSource;

    fn regex(target: Target, pattern: &str, flags: &str, match_: &str) -> Grader {
        Grader::Regex {
            name: "g".into(),
            target,
            pattern: pattern.into(),
            flags: flags.into(),
            match_: match_.into(),
            weight: None,
            arm: None,
        }
    }

    fn file(path: &str) -> Target {
        Target::File(FileSource {
            source: "file".into(),
            path: path.into(),
        })
    }

    fn tool_used(min: Option<u64>, max: Option<u64>, input_match: Option<&str>) -> Grader {
        Grader::ToolUsed {
            name: "g".into(),
            tool: "Write".into(),
            input_match: input_match.map(str::to_owned),
            min,
            max,
            weight: None,
            arm: None,
        }
    }

    #[test]
    fn each_mapped_form_maps_back_to_a_grader_that_maps_to_it_again() {
        let graders = [
            regex(Target::default(), "sorry", "i", "not_contains"),
            regex(file("outputs/a.md"), "Friday", "", "contains"),
            regex(file("outputs/a.md"), "Friday", "", "not_contains"),
            regex(file("outputs/a.md"), "^fri.*day$", "i", "contains"),
            regex(file("outputs/a.md"), "\\d+", "", "not_contains"),
            tool_used(None, None, None),
            tool_used(Some(2), Some(3), None),
            tool_used(Some(0), Some(0), None),
            tool_used(Some(0), Some(0), Some("\"command\":\"rm ")),
            tool_used(Some(1), Some(2), Some("notes/")),
            tool_used(None, None, Some("Note")),
            regex(Target::default(), "Released", "", "contains"),
            regex(Target::default(), "sorry", "", "not_contains"),
            regex(Target::default(), "note", "i", "count:2"),
            regex(Target::default(), "^a.b$", "ms", "contains"),
            Grader::ToolOrder {
                name: "g".into(),
                before: ToolRef::Name("Skill".into()),
                after: ToolRef::Match {
                    tool: "Bash".into(),
                    input_match: Some("write_note".into()),
                },
                weight: None,
                arm: None,
            },
            Grader::FileExists {
                name: "g".into(),
                path: "outputs/a.md".into(),
                exists: true,
                weight: None,
                arm: None,
            },
            Grader::FileExists {
                name: "g".into(),
                path: "outputs/a.md".into(),
                exists: false,
                weight: None,
                arm: None,
            },
            Grader::Llm {
                name: "g".into(),
                criteria: "says hi".into(),
                focus: Target::default(),
                weight: None,
                arm: None,
            },
            Grader::Llm {
                name: "g".into(),
                criteria: "says hi".into(),
                focus: file("outputs/a.md"),
                weight: None,
                arm: None,
            },
        ];
        for g in graders {
            let first = map(&g).unwrap_or_else(|r| panic!("{g:?}: {r:?}")).assertion;
            let back = unmap("g", &first).unwrap_or_else(|| panic!("{first}: no grader form"));
            assert_eq!(map(&back).unwrap().assertion, first, "{g:?}");
        }
    }

    #[test]
    fn graders_that_would_pass_where_the_assertion_fails_or_back_are_refused() {
        let refused = [
            (regex(Target::default(), "done", "y", "contains"), "flags"),
            (regex(Target::default(), "(", "", "contains"), "pattern"),
            (regex(file("outputs/a.md"), "x", "", "count:2"), "match"),
            (
                regex(Target::Named("trace".into()), "x", "", "not_contains"),
                "target",
            ),
            (
                regex(file("outputs/a.md"), "Fri.ay", "", "contains"),
                "pattern",
            ),
            (regex(file("outputs/a.md"), "x", "m", "contains"), "flags"),
            (
                Grader::ToolOrder {
                    name: "g".into(),
                    before: ToolRef::Name("mcp__*".into()),
                    after: ToolRef::Name("Bash".into()),
                    weight: None,
                    arm: None,
                },
                "before",
            ),
            (
                regex(file("outputs/*.md"), "x", "i", "contains"),
                "target.path",
            ),
            (regex(file("../a.md"), "x", "i", "contains"), "target.path"),
            (tool_used(None, None, Some("[")), "input_match"),
            (tool_used(Some(0), None, None), "min"),
            (tool_used(Some(3), Some(1), None), "max"),
            (tool_used(None, Some(0), None), "max"),
        ];
        for (g, field) in refused {
            let r = map(&g).expect_err(&format!("{g:?} must be refused"));
            assert_eq!(r.field, field, "{g:?}: {}", r.reason);
            assert!(!r.fix.is_empty());
        }
    }

    #[test]
    fn case_free_patterns_are_those_whose_only_letters_are_class_escapes() {
        for p in ["\\d+", "[0-9]{2}", "\\s\\w", "_-_", "\\."] {
            assert!(case_free(p), "{p}");
        }
        for p in ["a", "\\p{L}", "[a-z]", "É", "\\x41"] {
            assert!(!case_free(p), "{p}");
        }
    }

    proptest::proptest! {
        /// A literal (no regex character) on a file, any flags reel takes and
        /// either direction, survives map → unmap → map unchanged.
        #[test]
        fn literal_file_regexes_round_trip(
            lit in "[A-Za-z0-9 _,:-]{1,12}",
            flags in proptest::sample::select(vec!["", "i", "g", "gi"]),
            absent in proptest::bool::ANY,
        ) {
            let g = regex(file("outputs/x.txt"), &lit, flags, if absent { "not_contains" } else { "contains" });
            let first = map(&g).unwrap().assertion;
            let back = unmap("g", &first).unwrap();
            proptest::prop_assert_eq!(map(&back).unwrap().assertion, first);
        }
    }
}
