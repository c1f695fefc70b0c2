//! Masking what differs between two recordings of the same run.
//!
//! A live re-recording gets a new run directory (`/tmp/reel-runs/<slug>/
//! local_xxx/work`), new session and request UUIDs, new timestamps and new
//! durations; a scripted model may also mint new tool-use and message ids.
//! None of that is what the run *did*. [`Normalizer`] replaces each with a
//! placeholder: run roots by name (`{{cwd}}`, `{{run}}`), ids by order of first
//! appearance (`toolu_…` → `<tool-1>`, a UUID → `<uuid-1>`), timestamps and
//! durations by a constant. Run directories are found by the one root
//! finder, [`Roots`] (what the recording itself states). Two sides are
//! normalised by two normalisers fed in the same order, so the same run
//! yields the same placeholders.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

use serde_json::{Map, Value};

use super::roots::{Roots, run_tmp_as_system_tmp};

/// Ids, UUIDs and ISO-8601 timestamps, in one pass.
static VOLATILE: LazyLock<Regex> = LazyLock::new(|| {
    // ASCII word boundaries and digits: Unicode `\b` makes the regex engine
    // leave its DFA on any non-ASCII text, which every transcript has.
    Regex::new(concat!(
        r"(?-u:\b)(?:",
        r"(?P<tool>(?:srv)?toolu_[A-Za-z0-9_]+)",
        r"|(?P<msg>msg_[A-Za-z0-9_]+)",
        r"|(?P<req>req_[A-Za-z0-9_]+)",
        // Claude Code's background-agent ids (`agentId: a8a64346fecb20a58`).
        r"|(?P<agent>a[0-9a-f]{16}(?-u:\b))",
        r"|(?P<uuid>[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?-u:\b))",
        r"|(?P<time>[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?)",
        r")",
    ))
    .expect("static regex")
});

/// Keys whose values are durations or clock readings.
fn is_duration_key(key: &str) -> bool {
    matches!(
        key,
        "ts" | "startedAtMono" | "startedAtWall" | "timestamp" | "elapsed" | "duration"
    ) || key.ends_with("_ms")
        || key.ends_with("Ms")
        || key.starts_with("duration")
}

/// `s` with each occurrence of `from` that is a whole token (not followed
/// by a name character, so `bench` does not match in `bench-model`)
/// replaced by `to`.
fn replace_whole(s: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(from) {
        let after = &rest[i + from.len()..];
        let mut next = after.chars();
        let ends = match next.next() {
            None => true,
            // A sentence's full stop ends it; `bench.txt` does not.
            Some('.') => !next.next().is_some_and(|c| c.is_alphanumeric()),
            Some(c) => !(c.is_alphanumeric() || matches!(c, '_' | '-')),
        };
        out.push_str(&rest[..i]);
        out.push_str(if ends { to } else { from });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// One side's masker. Not `Sync`: each side has its own.
#[derive(Debug, Clone)]
pub struct Normalizer {
    enabled: bool,
    /// The run's directories → placeholders.
    roots: Roots,
    /// The recorded session id (masked as `<session>`).
    session: Option<String>,
    ids: HashMap<String, String>,
    counts: HashMap<&'static str, usize>,
    /// The project's masks (`reel.toml`), applied last.
    masks: Vec<crate::project::Mask>,
}

impl Normalizer {
    /// A normaliser that changes nothing (`--no-normalize`).
    pub fn off() -> Normalizer {
        Normalizer {
            enabled: false,
            roots: Roots::default(),
            session: None,
            ids: HashMap::new(),
            counts: HashMap::new(),
            masks: Vec::new(),
        }
    }

    /// A normaliser for one recording: `roots` are the run's directories as
    /// the recording states them (the one root finder, shared with `rerun`:
    /// `{{cwd}}`, `{{run}}`, `{{config}}`, `{{home}}`, `{{cwd-slug}}`),
    /// `session_id` the recorded session id.
    pub fn new(roots: Roots, session_id: Option<&str>) -> Normalizer {
        Normalizer {
            enabled: true,
            roots,
            // A short id ("bench") would mask ordinary words; UUIDs are
            // masked by the pattern anyway.
            session: session_id.filter(|s| s.len() >= 8).map(str::to_owned),
            ids: HashMap::new(),
            counts: HashMap::new(),
            masks: Vec::new(),
        }
    }

    /// The same normaliser applying `masks` after the built-in ones.
    pub fn with_masks(mut self, masks: Vec<crate::project::Mask>) -> Normalizer {
        self.masks = masks;
        self
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The masked form of `s`.
    pub fn text(&mut self, s: &str) -> String {
        if !self.enabled {
            return s.to_owned();
        }
        let mut out = run_tmp_as_system_tmp(self.roots.to_placeholders(s));
        if let Some(session) = &self.session
            && out.contains(session.as_str())
        {
            out = replace_whole(&out, session, "<session>");
        }
        if !VOLATILE.is_match(&out) {
            return self.user_masks(out);
        }
        let mut result = String::with_capacity(out.len());
        let mut last = 0;
        for caps in VOLATILE.captures_iter(&out) {
            let m = caps.get(0).expect("group 0");
            result.push_str(&out[last..m.start()]);
            let kind = ["tool", "msg", "req", "agent", "uuid", "time"]
                .into_iter()
                .find(|k| caps.name(k).is_some())
                .unwrap_or("id");
            if kind == "time" {
                result.push_str("<time>");
            } else {
                result.push_str(&self.placeholder(kind, m.as_str()));
            }
            last = m.end();
        }
        result.push_str(&out[last..]);
        self.user_masks(result)
    }

    fn user_masks(&self, mut out: String) -> String {
        for m in &self.masks {
            if m.regex.is_match(&out) {
                out = m
                    .regex
                    .replace_all(&out, m.placeholder.as_str())
                    .into_owned();
            }
        }
        out
    }

    fn placeholder(&mut self, kind: &'static str, id: &str) -> String {
        if let Some(p) = self.ids.get(id) {
            return p.clone();
        }
        let n = self.counts.entry(kind).or_default();
        *n += 1;
        let p = format!("<{kind}-{n}>");
        self.ids.insert(id.to_owned(), p.clone());
        p
    }

    /// The masked form of a JSON value: every string, and the values of
    /// duration / clock keys.
    pub fn value(&mut self, v: &Value) -> Value {
        if !self.enabled {
            return v.clone();
        }
        match v {
            Value::String(s) => Value::String(self.text(s)),
            Value::Array(items) => Value::Array(items.iter().map(|i| self.value(i)).collect()),
            Value::Object(map) => {
                let mut out = Map::with_capacity(map.len());
                for (k, v) in map {
                    let v = if is_duration_key(k) && (v.is_number() || v.is_string()) {
                        Value::String("<duration>".into())
                    } else {
                        self.value(v)
                    };
                    out.insert(self.text(k), v);
                }
                Value::Object(out)
            }
            other => other.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn roots(cwd: &str) -> Roots {
        let init = json!({"type": "system", "subtype": "init", "cwd": cwd});
        Roots::recorded(std::iter::once(&init))
    }

    #[test]
    fn masks_roots_ids_and_times_by_first_appearance() {
        let mut n = Normalizer::new(
            roots("/tmp/reel-runs/x/local_abc/work"),
            Some("f17089ac-0d94-488f-b869-85c587725621"),
        );
        assert_eq!(
            n.text(
                "/tmp/reel-runs/x/local_abc/work/outputs/a.md and \
                /tmp/reel-runs/x/local_abc/config/skills"
            ),
            "{{cwd}}/outputs/a.md and {{config}}/skills"
        );
        assert_eq!(
            n.text("/tmp/claude-0/-tmp-reel-runs-x-local-abc-work/tasks/a8a64346fecb20a58.output"),
            "/tmp/claude-0/{{cwd-slug}}/tasks/<agent-1>.output"
        );
        assert_eq!(
            n.text("toolu_9 then toolu_2 then toolu_9"),
            "<tool-1> then <tool-2> then <tool-1>"
        );
        assert_eq!(
            n.text("s=f17089ac-0d94-488f-b869-85c587725621 r=bf8b856c-9490-4719-a4d8-475c5b157f12"),
            "s=<session> r=<uuid-1>"
        );
        assert_eq!(n.text("at 2026-11-30T06:48:31.702Z"), "at <time>");
        assert_eq!(
            n.value(&json!({"duration_ms": 12, "ts": 5, "name": "msg_1"})),
            json!({"duration_ms": "<duration>", "ts": "<duration>", "name": "<msg-1>"})
        );
    }

    #[test]
    fn roots_and_sessions_mask_whole_tokens_only() {
        let mut n = Normalizer::new(roots("/sessions/bench"), Some("bench"));
        assert_eq!(
            n.text("/sessions/bench/a /sessions/bench2/b bench-model"),
            "{{cwd}}/a /sessions/bench2/b bench-model"
        );
        let mut n = Normalizer::new(Roots::default(), Some("session-0042"));
        assert_eq!(
            n.text("session-0042 session-00421"),
            "<session> session-00421"
        );
    }

    #[test]
    fn off_changes_nothing() {
        let mut n = Normalizer::off();
        assert_eq!(
            n.text("toolu_1 2026-11-30T06:48:31Z"),
            "toolu_1 2026-11-30T06:48:31Z"
        );
        assert_eq!(n.value(&json!({"ts": 1})), json!({"ts": 1}));
    }

    #[test]
    fn project_masks_apply_after_the_built_in_ones() {
        let dir = tempfile::tempdir().unwrap();
        let toml = dir.path().join("reel.toml");
        std::fs::write(
            &toml,
            "[masks]\n'report id: [0-9a-f]{8}' = \"report id: <id>\"\n",
        )
        .unwrap();
        let masks = crate::project::ProjectConfig::load(&toml).unwrap().masks;
        let mut n = Normalizer::new(roots("/r/work"), None).with_masks(masks);
        assert_eq!(
            n.text("/r/work/out: report id: 3fa9c2d1 at 2025-01-01T00:00:00Z"),
            "{{cwd}}/out: report id: <id> at <time>"
        );
        assert_eq!(n.text("report id: 77aa01bc"), "report id: <id>");
    }
}
