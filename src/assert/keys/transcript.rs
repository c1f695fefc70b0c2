//! The main agent's text: literals, regexes, host-path leaks, computer:// links;
//! the last message's text (`last_message_*`, `claude plugin eval`'s
//! `last_message` regex grader).

use serde_json::{Map, Value};

use super::*;
use crate::js::regex::compile_es_with_flags;

/// The object form of `last_message_matches`.
const LAST_MESSAGE_MATCH: &[Field] = &[
    req("pattern", Param::Str),
    opt("flags", Param::Str),
    opt("count", Param::UInt),
];

/// The object form of `last_message_not_matches` (no `count`).
const LAST_MESSAGE_NOT_MATCH: &[Field] = &[req("pattern", Param::Str), opt("flags", Param::Str)];

pub(super) const KEYS: &[Key] = &[
    Key {
        name: "transcript_contains",
        bucket: Bucket::Always,
        param: Param::NonEmpty,
        description: "the main agent's text contains this literal",
        example: Some(|| Value::from("Done")),
        ranks: Ranks {
            listed: 1,
            check: 0,
            schema: 0,
            strip: Some(0),
        },
        eval: Eval::One(transcript_contains),
        opposite: Some("transcript_not_contains"),
        ..Key::DEFAULTS
    },
    Key {
        name: "transcript_not_contains",
        bucket: Bucket::Always,
        param: Param::NonEmpty,
        description: "the main agent's text does not contain this literal",
        example: Some(|| Value::from("Done")),
        ranks: Ranks {
            listed: 2,
            check: 1,
            schema: 1,
            strip: Some(1),
        },
        eval: Eval::One(transcript_not_contains),
        ..Key::DEFAULTS
    },
    Key {
        name: "transcript_matches",
        bucket: Bucket::Always,
        param: Param::Regex,
        description: "the main agent's text matches this regex (ECMAScript, case-insensitive)",
        ranks: Ranks {
            listed: 3,
            check: 7,
            schema: 2,
            strip: Some(2),
        },
        eval: Eval::One(transcript_matches),
        opposite: Some("transcript_not_matches"),
        ..Key::DEFAULTS
    },
    Key {
        name: "transcript_not_matches",
        bucket: Bucket::Always,
        param: Param::Regex,
        description: "the main agent's text does not match this regex",
        ranks: Ranks {
            listed: 4,
            check: 8,
            schema: 3,
            strip: Some(3),
        },
        eval: Eval::One(transcript_not_matches),
        ..Key::DEFAULTS
    },
    Key {
        name: "last_message_matches",
        bucket: Bucket::Always,
        param: Param::OneOf(&[
            Param::Regex,
            Param::Object(LAST_MESSAGE_MATCH, Refine::LastMessage),
        ]),
        description: "the last assistant message with text (any agent's) matches this regex (object form: {pattern, flags (default i), count: exactly N matches})",
        example: Some(|| serde_json::json!({"pattern": "Release notes", "flags": ""})),
        ranks: Ranks {
            listed: 90,
            check: 90,
            schema: 90,
            strip: Some(77),
        },
        eval: Eval::One(last_message_matches),
        opposite: Some("last_message_not_matches"),
        ..Key::DEFAULTS
    },
    Key {
        name: "last_message_not_matches",
        bucket: Bucket::Always,
        param: Param::OneOf(&[
            Param::Regex,
            Param::Object(LAST_MESSAGE_NOT_MATCH, Refine::LastMessage),
        ]),
        description: "the last assistant message with text (any agent's) does not match this regex (object form: {pattern, flags (default i)})",
        example: Some(|| serde_json::json!({"pattern": "TODO", "flags": ""})),
        ranks: Ranks {
            listed: 91,
            check: 91,
            schema: 91,
            strip: Some(78),
        },
        eval: Eval::One(last_message_not_matches),
        ..Key::DEFAULTS
    },
    Key {
        name: "transcript_no_host_path",
        bucket: Bucket::LiveOnly,
        param: Param::True,
        description: "the transcript leaks no host path",
        ranks: Ranks {
            listed: 71,
            check: 59,
            schema: 57,
            strip: None,
        },
        eval: Eval::Live(transcript_no_host_path),
        ..Key::DEFAULTS
    },
    Key {
        name: "computer_links_resolve",
        bucket: Bucket::NeedsManifest,
        param: Param::True,
        description: "the transcript has computer:// links and each resolves to a file",
        ranks: Ranks {
            listed: 61,
            check: 60,
            schema: 58,
            strip: Some(61),
        },
        eval: Eval::One(computer_links_required),
        ..Key::DEFAULTS
    },
    Key {
        name: "computer_links_resolve_if_present",
        bucket: Bucket::NeedsManifest,
        param: Param::True,
        description: "every computer:// link in the transcript resolves (none passes)",
        ranks: Ranks {
            listed: 62,
            check: 61,
            schema: 59,
            strip: Some(62),
        },
        eval: Eval::One(computer_links_if_present),
        ..Key::DEFAULTS
    },
];

fn transcript_not_contains(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let s = str_param(key, v)?;
    if env.run.transcript.contains(s) {
        Err(format!("transcript unexpectedly contains \"{s}\""))
    } else {
        ok()
    }
}

fn transcript_matches(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let p = str_param(key, v)?;
    let re = env.re(key, p)?;
    if t(key, &re, &env.run.transcript)? {
        ok()
    } else {
        Err(format!("transcript did not match /{p}/i"))
    }
}

fn transcript_not_matches(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let p = str_param(key, v)?;
    let re = env.re(key, p)?;
    if t(key, &re, &env.run.transcript)? {
        Err(format!("transcript unexpectedly matched /{p}/i"))
    } else {
        ok()
    }
}

/// Live only: the run's working directory (system/init `cwd`) is the host path.
fn transcript_no_host_path(env: &mut Env<'_>, _key: &'static str, _v: &Value) -> KeyResult {
    let host = env.run.init.as_ref().and_then(|i| i.cwd.clone());
    match host.filter(|h| h.starts_with('/') && h.len() > 1) {
        Some(h) if env.run.transcript.contains(&h) => {
            Err(format!("transcript leaks the host path {h}"))
        }
        Some(_) => ok(),
        None => Err(
            "evidence unavailable: transcript_no_host_path needs the run's working directory \
                (system/init cwd)"
                .into(),
        ),
    }
}

fn computer_links_required(env: &mut Env<'_>, key: &'static str, _v: &Value) -> KeyResult {
    computer_links(env, key, true)
}

fn computer_links_if_present(env: &mut Env<'_>, key: &'static str, _v: &Value) -> KeyResult {
    computer_links(env, key, false)
}

fn transcript_contains(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let s = str_param(key, v)?;
    if env.run.transcript.contains(s) {
        ok_ev(format!("transcript_contains: found \"{s}\""))
    } else {
        Err(format!("transcript missing \"{s}\""))
    }
}

fn computer_links(env: &Env<'_>, key: &str, require_presence: bool) -> KeyResult {
    let found = links::extract(&env.run.transcript);
    if found.is_empty() {
        return if require_presence {
            Err(format!(
                "{key}: no computer:// link in the transcript — cannot verify a deliverable link \
                    resolves (use computer_links_resolve_if_present to pass when no link is \
                    expected)"
            ))
        } else {
            ok_ev(format!(
                "{key}: no computer:// links in the transcript (vacuous pass — _if_present)"
            ))
        };
    }
    let tier_note = env
        .tier()
        .filter(|t| !t.is_empty())
        .map(|t| format!(" (tier: {t})"))
        .unwrap_or_default();
    let root = env.root();
    let res = LinkResolution {
        folder_prefixes: env
            .ctx
            .cassette
            .folder_prefix_map()
            .map(|m| m.into_iter().map(|e| (e.from, e.mount)).collect()),
        tree: env.tree(),
        root_display: &root,
    };
    let dangling: Vec<String> = found
        .iter()
        .filter_map(|l| {
            let (resolved, desc) = links::resolve(l, &res);
            (!resolved).then(|| format!("computer://{} — checked {desc}", l.raw))
        })
        .collect();
    if dangling.is_empty() {
        ok_ev(format!(
            "{key}: {} computer:// link(s) all resolved{tier_note}",
            found.len()
        ))
    } else {
        Err(format!(
            "dangling computer:// link(s){tier_note}: {}",
            dangling.join("; ")
        ))
    }
}

/// The flags a `last_message_*` regex takes: those that change what
/// `test()` and a global `match()` find from the start (`y` would anchor).
const LAST_MESSAGE_FLAGS: &str = "dgimsuv";

/// A pattern that does not compile with its flags, or a flag it cannot take.
pub(crate) fn last_message_problem(m: &Map<String, Value>) -> Option<String> {
    let (pattern, flags) = last_message_regex_parts(m);
    if let Some(bad) = flags.chars().find(|c| !LAST_MESSAGE_FLAGS.contains(*c)) {
        return Some(format!(
            "field `flags`: `{bad}` is not a flag this key takes (use any of \
             {LAST_MESSAGE_FLAGS}; `y` would anchor the match at the start)"
        ));
    }
    let mut seen = String::new();
    for c in flags.chars() {
        if seen.contains(c) {
            return Some(format!(
                "field `flags`: `{c}` is given twice (give each flag once)"
            ));
        }
        seen.push(c);
    }
    if seen.contains('u') && seen.contains('v') {
        return Some("field `flags`: `u` and `v` cannot be combined (keep one)".into());
    }
    compile_es_with_flags(pattern, &search_flags(flags))
        .err()
        .map(|e| format!("field `pattern`: bad regex \"{pattern}\": {e} (fix the pattern)"))
}

/// `(pattern, flags)` of either form: a bare pattern takes reel's `i`.
fn last_message_regex_parts(m: &Map<String, Value>) -> (&str, &str) {
    (
        m.get("pattern").and_then(Value::as_str).unwrap_or_default(),
        m.get("flags").and_then(Value::as_str).unwrap_or("i"),
    )
}

/// The flags that change a search: `d` (indices) and `g` do not.
fn search_flags(flags: &str) -> String {
    let mut f: Vec<char> = flags.chars().filter(|c| !matches!(c, 'd' | 'g')).collect();
    f.sort_unstable();
    f.dedup();
    f.into_iter().collect()
}

/// The key's regex, its display (`/p/flags`) and `count`.
fn last_message_regex(key: &str, v: &Value) -> Result<(EsRegex, String, Option<u64>), String> {
    let (pattern, flags, count) = match v {
        Value::String(p) => (p.as_str(), "i", None),
        Value::Object(m) => {
            let (p, f) = last_message_regex_parts(m);
            (p, f, m.get("count").and_then(Value::as_u64))
        }
        _ => return Err(bad_param(key)),
    };
    let flags = search_flags(flags);
    let re = compile_es_with_flags(pattern, &flags)
        .map_err(|e| format!("{key}: bad regex \"{pattern}\": {e}"))?;
    Ok((re, format!("/{pattern}/{flags}"), count))
}

/// The last message's text; `""` when no assistant message had text (what
/// the grader tests then).
fn last_message<'r>(env: &Env<'r>) -> &'r str {
    env.run.last_message.as_deref().unwrap_or_default()
}

fn last_message_matches(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let (re, shown, count) = last_message_regex(key, v)?;
    let text = last_message(env);
    match count {
        None if t(key, &re, text)? => ok_ev(format!("{key}: the last message matched {shown}")),
        None => Err(format!("the last message did not match {shown}")),
        Some(want) => {
            let found = re
                .find_ranges(text)
                .map_err(|e| format!("{key}: regex \"{}\": {e}", re.source()))?
                .len() as u64;
            if found == want {
                ok_ev(format!(
                    "{key}: {found} match(es) of {shown} in the last message"
                ))
            } else {
                Err(format!(
                    "the last message has {found} match(es) of {shown} (expected exactly {want})"
                ))
            }
        }
    }
}

fn last_message_not_matches(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let (re, shown, _) = last_message_regex(key, v)?;
    let text = last_message(env);
    if t(key, &re, text)? {
        Err(format!("the last message unexpectedly matched {shown}"))
    } else {
        ok()
    }
}
