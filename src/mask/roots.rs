//! The one root finder: a recording's run directories, as the recording
//! itself states them, and their placeholders.
//!
//! A recording spells its run's paths everywhere: tool inputs, skill bodies
//! ("Base directory for this skill: …"), permission suggestions (`//tmp/…`
//! rules), answers. Each root is taken from what the recording itself states
//! — the `system/init` `cwd`, the skill base directories the agent announced
//! — never guessed. Roots are written as placeholders (`{{cwd}}`,
//! `{{config}}`, `{{home}}`, `{{run}}`) that the scripted model fills with the
//! fresh run's paths (`rerun`); comparing a fresh run with its recording
//! writes both sides' roots as the same placeholders (`diff`, the judged
//! baseline trajectory's digest).
//!
//! Layouts: reel records `<run>/work` with its config in `<run>/config`
//! (skills in `<run>/config/skills/<name>` and `<work>/.claude/skills/<name>`);
//! cowork-harness's protocol tier uses `<run>/work` and `<run>/claude-config`.
//! Both map to reel's fresh layout. A root that is redacted
//! (`[REDACTED:local-path:…]`) or not absolute cannot be mapped: paths under
//! it are left as recorded and counted.

use serde_json::Value;

/// Placeholders, as the model script spells them.
pub const CWD: &str = "{{cwd}}";
pub const CONFIG: &str = "{{config}}";
pub const HOME: &str = "{{home}}";
pub const RUN: &str = "{{run}}";
/// The work root as Claude Code spells it in its project directory names
/// (`/tmp/r/work` → `-tmp-r-work`), e.g. a background sub-agent's `output_file`.
pub const CWD_SLUG: &str = "{{cwd-slug}}";

use crate::paths::slug;

const SKILL_BASE: &str = "Base directory for this skill: ";

/// Prefix → placeholder pairs, longest prefix first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Roots {
    pairs: Vec<(String, &'static str)>,
    /// The recorded work root, as stated (even when unmappable).
    pub work: Option<String>,
}

impl Roots {
    /// The recorded roots of a cassette's events.
    pub fn recorded<'a>(events: impl Iterator<Item = &'a Value>) -> Roots {
        let mut work = None;
        let mut skill_bases = Vec::new();
        for v in events {
            match crate::protocol::Line::of(v) {
                crate::protocol::Line::System { subtype, body }
                    if subtype == crate::protocol::subtype::INIT && work.is_none() =>
                {
                    work = body.get("cwd").and_then(Value::as_str).map(str::to_owned);
                }
                crate::protocol::Line::User(m) => {
                    for block in m.blocks() {
                        if let crate::protocol::Block::Text(t) = block
                            && let Some(rest) = t.strip_prefix(SKILL_BASE)
                        {
                            skill_bases.push(rest.lines().next().unwrap_or("").trim().to_owned());
                        }
                    }
                }
                _ => {}
            }
        }
        let mut roots = Roots {
            pairs: Vec::new(),
            work: work.clone(),
        };
        let Some(work) = work.filter(|w| mappable(w)) else {
            return roots;
        };
        let work = work.trim_end_matches('/').to_owned();
        roots.pairs.push((work.clone(), CWD));
        roots.pairs.push((slug(&work), CWD_SLUG));
        if let Some(run) = work.strip_suffix("/work").filter(|r| !r.is_empty()) {
            // Each run-dir root, also as the agent often spells it from the
            // work root (`<work>/../claude-config/...`).
            for (name, placeholder) in [
                ("config", CONFIG),
                ("claude-config", CONFIG),
                ("home", HOME),
            ] {
                roots.pairs.push((format!("{run}/{name}"), placeholder));
                roots.pairs.push((format!("{work}/../{name}"), placeholder));
            }
            roots.pairs.push((run.to_owned(), RUN));
            roots.pairs.push((format!("{work}/.."), RUN));
        }
        // A skill base outside those roots states the config dir itself:
        // `<config>/skills/<name>`.
        for base in skill_bases.iter().filter(|b| mappable(b)) {
            if roots.placeholder_of(base).is_some() {
                continue;
            }
            let p = std::path::Path::new(base);
            if let Some(config) = p
                .parent()
                .filter(|s| s.ends_with("skills"))
                .and_then(|s| s.parent())
            {
                roots.pairs.push((config.display().to_string(), CONFIG));
            }
        }
        roots.sort();
        roots
    }

    /// The recorded roots of raw event lines (a cassette's `events`): only
    /// the lines that can state a root — an `init`, a skill's base
    /// directory — are parsed.
    pub fn stated<S: AsRef<str>>(lines: impl Iterator<Item = S>) -> Roots {
        let stating: Vec<Value> = lines
            .filter(|l| {
                let l = l.as_ref();
                l.contains("\"init\"") || l.contains(SKILL_BASE)
            })
            .filter_map(|l| serde_json::from_str(l.as_ref()).ok())
            .collect();
        Roots::recorded(stating.iter())
    }

    /// The fresh run's roots.
    pub fn fresh(work: &str, config: &str, home: &str, run: &str) -> Roots {
        let mut roots = Roots {
            pairs: vec![
                (work.to_owned(), CWD),
                (slug(work), CWD_SLUG),
                (config.to_owned(), CONFIG),
                (home.to_owned(), HOME),
                (run.to_owned(), RUN),
            ],
            work: Some(work.to_owned()),
        };
        roots.sort();
        roots
    }

    fn sort(&mut self) {
        self.pairs
            .sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
        self.pairs.dedup_by(|a, b| a.0 == b.0);
    }

    /// True when no root could be taken from the recording.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    fn placeholder_of(&self, path: &str) -> Option<&'static str> {
        self.pairs
            .iter()
            .find(|(p, _)| under(path, p))
            .map(|(_, ph)| *ph)
    }

    /// `text` with every root written as its placeholder (at path
    /// boundaries only: `/w/work` never rewrites `/w/workshop`).
    pub fn to_placeholders(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (prefix, placeholder) in &self.pairs {
            if out.contains(prefix.as_str()) {
                out = replace_at_boundary(&out, prefix, placeholder);
            }
        }
        out
    }

    /// Every string of `v` with roots as placeholders.
    pub fn value_to_placeholders(&self, v: &Value) -> Value {
        match v {
            Value::String(s) => Value::String(self.to_placeholders(s)),
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|i| self.value_to_placeholders(i))
                    .collect(),
            ),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), self.value_to_placeholders(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

/// A root reel can map: absolute and not redacted.
fn mappable(path: &str) -> bool {
    path.starts_with('/') && !path.contains("[REDACTED")
}

fn under(path: &str, root: &str) -> bool {
    path == root || path.strip_prefix(root).is_some_and(|r| r.starts_with('/'))
}

/// Path characters that continue a segment (so a match ending before one is
/// not a whole root).
fn continues_segment(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '~' | '@' | '+')
}

fn replace_at_boundary(text: &str, prefix: &str, with: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(prefix) {
        let after = &rest[at + prefix.len()..];
        out.push_str(&rest[..at]);
        if after.chars().next().is_some_and(continues_segment) {
            out.push_str(prefix);
        } else {
            out.push_str(with);
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// A masked text with the run's own `TMPDIR` (`{{run}}/tmp/`, set since
/// runs are sandboxed) read as the system temp dir, what a recording made
/// without one shows. For comparisons only: served replies keep the run's.
pub fn run_tmp_as_system_tmp(masked: String) -> String {
    const RUN_TMP: &str = "{{run}}/tmp/";
    if masked.contains(RUN_TMP) {
        masked.replace(RUN_TMP, "/tmp/")
    } else {
        masked
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn events() -> Vec<Value> {
        vec![
            json!({"type": "system", "subtype": "init", "cwd": "/tmp/r/local_1/work"}),
            json!({"type": "user", "message": {"content": [{"type": "text",
                "text": "Base directory for this skill: \
                    /tmp/r/local_1/config/skills/s\n\nbody"}]}}),
        ]
    }

    #[test]
    fn recorded_roots_become_placeholders_at_boundaries() {
        let r = Roots::recorded(events().iter());
        assert_eq!(
            r.to_placeholders("/tmp/r/local_1/work/outputs/a.md and /tmp/r/local_1/workshop"),
            "{{cwd}}/outputs/a.md and {{run}}/workshop"
        );
        assert_eq!(
            r.to_placeholders("Read(//tmp/r/local_1/config/skills/s/**)"),
            "Read(/{{config}}/skills/s/**)"
        );
        assert_eq!(
            r.to_placeholders("/tmp/r/local_1/claude-config/x"),
            "{{config}}/x"
        );
        assert_eq!(r.to_placeholders("/etc/passwd"), "/etc/passwd");
    }

    #[test]
    fn raw_lines_state_roots_through_init_and_skill_bases_only() {
        let lines = [
            "not json".to_owned(),
            json!({"type": "assistant", "cwd": "/elsewhere/work"}).to_string(),
        ]
        .into_iter()
        .chain(events().into_iter().map(|v| v.to_string()));
        let r = Roots::stated(lines);
        assert_eq!(r.work.as_deref(), Some("/tmp/r/local_1/work"));
        assert_eq!(r, Roots::recorded(events().iter()));
    }

    #[test]
    fn a_redacted_cwd_maps_nothing() {
        let ev = [json!({"type": "system", "subtype": "init", "cwd": "[REDACTED:local-path:ab]"})];
        let r = Roots::recorded(ev.iter());
        assert!(r.is_empty());
        assert_eq!(r.work.as_deref(), Some("[REDACTED:local-path:ab]"));
    }

    #[test]
    fn a_skill_base_outside_the_run_names_the_config_dir() {
        let ev = [
            json!({"type": "system", "subtype": "init", "cwd": "/sessions/x"}),
            json!({"type": "user", "message": {"content": [{"type": "text",
                "text": "Base directory for this skill: /cfg/skills/s\n\nbody"}]}}),
        ];
        let r = Roots::recorded(ev.iter());
        assert_eq!(
            r.to_placeholders("/cfg/skills/s/run.sh"),
            "{{config}}/skills/s/run.sh"
        );
        assert_eq!(r.to_placeholders("/sessions/x/a"), "{{cwd}}/a");
    }
}
