//! `hook_output_contains` / `hook_output_not_contains`: what a hook printed
//! on stdout / stderr. `text` is a case-sensitive literal, `matches` a
//! case-insensitive regex. A stream a redaction policy rewrote (`[REDACTED…]`
//! tokens) keeps a literal hit outside the tokens; a literal miss or any
//! regex result over it cannot be trusted.

use std::ops::Range;

use serde_json::Value;

use super::frames::{Frame, frames};
use super::{Env, KeyResult, bad_param, listed, ok_ev, scoped};
use crate::js::regex::{EsRegex, compile_es_with_flags};

const TOKEN_START: &str = "[REDACTED";
/// Excerpts stay within about this many characters.
const EXCERPT: usize = 200;

enum Needle {
    Text(String),
    Regex(EsRegex, String),
}

impl Needle {
    fn shown(&self) -> String {
        match self {
            Needle::Text(t) => serde_json::to_string(t).unwrap_or_default(),
            Needle::Regex(_, src) => format!("/{src}/i"),
        }
    }
}

struct Spec<'a> {
    event: &'a str,
    stream: &'a str,
    needle: Needle,
}

fn spec<'a>(key: &str, v: &'a Value) -> Result<Spec<'a>, String> {
    let o = v.as_object().ok_or_else(|| bad_param(key))?;
    let s = |k: &str| o.get(k).and_then(Value::as_str);
    let needle = match (s("text"), s("matches")) {
        (Some(t), None) => Needle::Text(t.to_owned()),
        (None, Some(m)) => Needle::Regex(
            compile_es_with_flags(m, "i").map_err(|e| format!("{key}: regex \"{m}\": {e}"))?,
            m.to_owned(),
        ),
        _ => return Err(bad_param(key)),
    };
    if let Needle::Text(t) = &needle
        && t.contains(TOKEN_START)
    {
        return Err(format!(
            "evidence unavailable: {key}: the needle was rewritten by the cassette's redaction policy — \
             cannot verify"
        ));
    }
    Ok(Spec {
        event: s("event").unwrap_or_default(),
        stream: s("stream").unwrap_or("any"),
        needle,
    })
}

/// One searched stream of one frame.
enum Searched {
    Hit {
        stream: &'static str,
        excerpt: String,
    },
    Miss {
        rewritten: bool,
    },
    Missing,
}

fn streams(stream: &str) -> &'static [&'static str] {
    match stream {
        "stdout" => &["stdout"],
        "stderr" => &["stderr"],
        _ => &["stdout", "stderr"],
    }
}

/// Each selected stream of `frame`, searched.
fn search(frame: &Frame, spec: &Spec<'_>) -> Result<Vec<Searched>, String> {
    let mut out = Vec::new();
    for &name in streams(spec.stream) {
        let Some(text) = frame
            .response
            .as_ref()
            .and_then(|r| r.get(name))
            .and_then(Value::as_str)
        else {
            out.push(Searched::Missing);
            continue;
        };
        let rewritten = text.contains(TOKEN_START);
        let hit = match &spec.needle {
            Needle::Text(t) => segments(text).find_map(|seg| {
                text[seg.clone()]
                    .find(t.as_str())
                    .map(|at| seg.start + at..seg.start + at + t.len())
            }),
            Needle::Regex(re, _) if rewritten => {
                return Err(String::from(
                    "a regex over a stream rewritten by a redaction policy",
                ));
            }
            Needle::Regex(re, _) => re.find_ranges(text)?.into_iter().next(),
        };
        out.push(match hit {
            Some(at) => Searched::Hit {
                stream: name,
                excerpt: excerpt(text, at),
            },
            None => Searched::Miss { rewritten },
        });
    }
    Ok(out)
}

/// The ranges of `text` outside redaction tokens.
fn segments(text: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at > text.len() {
            return None;
        }
        let rest = &text[at..];
        let Some(start) = rest.find(TOKEN_START) else {
            let seg = at..text.len();
            at = text.len() + 1;
            return Some(seg);
        };
        let seg = at..at + start;
        at += start
            + rest[start..]
                .find(']')
                .map_or(rest.len() - start, |e| e + 1);
        Some(seg)
    })
}

/// About [`EXCERPT`] characters centred on `hit`, tokens shown as
/// `(redacted)` and never cut in half, as a JSON string.
fn excerpt(text: &str, hit: Range<usize>) -> String {
    let half = EXCERPT.saturating_sub(text[hit.clone()].chars().count()) / 2;
    let mut start = text[..hit.start]
        .char_indices()
        .rev()
        .nth(half.saturating_sub(1))
        .map_or(0, |(i, _)| i);
    let mut end = text[hit.end..]
        .char_indices()
        .nth(half)
        .map_or(text.len(), |(i, _)| hit.end + i);
    if let Some(open) = text[..start].rfind(TOKEN_START)
        && !text[open..start].contains(']')
    {
        start = open;
    }
    if let Some(open) = text[..end].rfind(TOKEN_START)
        && let Some(close) = text[open..].find(']').map(|c| open + c + 1)
        && close > end
    {
        end = close;
    }
    let mut shown = String::from(if start > 0 { "…" } else { "" });
    let mut rest = &text[start..end];
    while let Some(open) = rest.find(TOKEN_START) {
        shown.push_str(&rest[..open]);
        shown.push_str("(redacted)");
        rest = rest[open..].find(']').map_or("", |c| &rest[open + c + 1..]);
    }
    shown.push_str(rest);
    if end < text.len() {
        shown.push('…');
    }
    serde_json::to_string(&shown).unwrap_or_default()
}

fn on(stream: &str) -> &str {
    if stream == "any" {
        "stdout or stderr"
    } else {
        stream
    }
}

pub(super) fn contains(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let spec = spec(key, v)?;
    let all = frames(env.run);
    let scope = scoped(key, &all, spec.event, None)?;
    let (mut missing, mut rewritten, mut seen) = (0, false, Vec::new());
    for frame in &scope {
        let searched = search(frame, &spec).map_err(|why| unavailable(key, &why))?;
        for s in searched {
            match s {
                Searched::Hit { stream, excerpt } => {
                    return ok_ev(format!(
                        "{key}: {} printed {} on {stream}: {excerpt}",
                        frame.name,
                        spec.needle.shown()
                    ));
                }
                Searched::Miss { rewritten: r } => rewritten |= r,
                Searched::Missing => missing += 1,
            }
        }
        seen.push(seen_label(frame, spec.stream));
    }
    if missing > 0 {
        return Err(unavailable(
            key,
            &format!(
                "no match, and the frames cannot all be read ({missing} without the {} field)",
                field(spec.stream)
            ),
        ));
    }
    if rewritten {
        return Err(unavailable(
            key,
            "no literal match in a stream rewritten by a redaction policy",
        ));
    }
    Err(format!(
        "{key}: no `{}` hook printed {} on {} — seen: {}",
        spec.event,
        spec.needle.shown(),
        on(spec.stream),
        listed(seen)
    ))
}

pub(super) fn not_contains(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let spec = spec(key, v)?;
    let all = frames(env.run);
    let scope = scoped(key, &all, spec.event, None)?;
    let (mut missing, mut rewritten, mut hits) = (0, false, Vec::new());
    for frame in &scope {
        let searched = search(frame, &spec).map_err(|why| unavailable(key, &why))?;
        let mut frame_hit = None;
        for s in searched {
            match s {
                Searched::Hit { stream, excerpt } => {
                    frame_hit = frame_hit.or(Some((stream, excerpt)))
                }
                Searched::Miss { rewritten: r } => rewritten |= r,
                Searched::Missing => missing += 1,
            }
        }
        if let Some((stream, excerpt)) = frame_hit {
            let code = frame
                .exit_code()
                .map_or_else(|| "no exit code".into(), |c| format!("exit {c}"));
            hits.push((stream, format!("{} ({code}): {excerpt}", frame.name)));
        }
    }
    if let Some((stream, _)) = hits.first() {
        let stream = if spec.stream == "any" {
            *stream
        } else {
            spec.stream
        };
        return Err(format!(
            "{key}: {} `{}` hook frame(s) printed {} on {stream}: {}",
            hits.len(),
            spec.event,
            spec.needle.shown(),
            listed(hits.into_iter().map(|(_, l)| l))
        ));
    }
    if missing > 0 {
        return Err(unavailable(
            key,
            &format!("{missing} frame(s) carry no {} field", field(spec.stream)),
        ));
    }
    if rewritten {
        return Err(unavailable(
            key,
            "no literal match in a stream rewritten by a redaction policy",
        ));
    }
    ok_ev(format!(
        "{key}: none of {} `{}` hook frame(s) printed {} on {}",
        scope.len(),
        spec.event,
        spec.needle.shown(),
        on(spec.stream)
    ))
}

fn field(stream: &str) -> &str {
    if stream == "any" {
        "stdout and stderr"
    } else {
        stream
    }
}

fn unavailable(key: &str, why: &str) -> String {
    format!("evidence unavailable: {key}: {why} — cannot verify")
}

/// `Stop: "…"`: what a frame printed on the selected stream(s).
fn seen_label(frame: &Frame, stream: &str) -> String {
    let text: Vec<&str> = streams(stream)
        .iter()
        .filter_map(|s| frame.response.as_ref()?.get(*s)?.as_str())
        .filter(|t| !t.is_empty())
        .collect();
    let joined = text.join(" | ");
    let shown = excerpt(&joined, 0..0);
    format!("{}: {shown}", frame.name)
}
