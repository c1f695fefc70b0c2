//! Reading hook sources: settings files, plugin roots (`hooks/hooks.json`,
//! the manifest's `hooks`), and the `hooks:` frontmatter of skills, commands
//! and agents. Each reader adds the events on which an eligible hook is
//! declared; a source that exists but does not read or parse is
//! [`Unreadable`] (the caller counts it, and the inventory becomes unknown).

use std::collections::{BTreeSet, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use serde_json::{Map, Value};

/// Events on which `CLAUDE_CODE_RESTRICT_PERSONAL_CONFIG` makes the user's
/// own synchronous hooks block when they fail.
const PERSONAL_BLOCK_EVENTS: &[&str] = &[
    "PreToolUse",
    "PermissionRequest",
    "PreModelSwitch",
    "UserPromptSubmit",
    "UserPromptExpansion",
];

/// Directory entries one scan may look at before it gives up (a runaway
/// tree makes the inventory unknown, never a slow record).
const BUDGET: i64 = 50_000;

/// A source that exists but cannot be read or parsed.
#[derive(Debug)]
pub(super) struct Unreadable;

pub(super) type Step<T = ()> = Result<T, Unreadable>;

/// One scan's state.
pub(super) struct Scan {
    pub(super) events: BTreeSet<String>,
    budget: i64,
    /// `CLAUDE_CODE_RESTRICT_PERSONAL_CONFIG` is on.
    restrict: bool,
    /// Real paths already read: a symlink loop, or a file reached twice, is
    /// read once.
    seen: HashSet<PathBuf>,
}

impl Scan {
    pub(super) fn new(restrict: bool) -> Scan {
        Scan {
            events: BTreeSet::new(),
            budget: BUDGET,
            restrict,
            seen: HashSet::new(),
        }
    }

    /// Adds the eligible events of an events map (`{Event: [{matcher?,
    /// hooks: [...]}]}`, or the same under a `hooks` member).
    pub(super) fn add_events_map(&mut self, doc: Option<&Value>, personal: bool) -> Step {
        let doc = match doc {
            None | Some(Value::Null) => return Ok(()),
            Some(Value::Object(o)) => o,
            Some(_) => return Err(Unreadable),
        };
        let map = match doc.get("hooks") {
            Some(Value::Object(inner)) => inner,
            // `typeof null` and arrays are "object" too: not an events map.
            Some(Value::Null | Value::Array(_)) => return Err(Unreadable),
            _ => doc,
        };
        for (event, groups) in map {
            let groups = groups.as_array().ok_or(Unreadable)?;
            for group in groups {
                let Some(hooks) = group.as_object().and_then(|g| g.get("hooks")) else {
                    continue;
                };
                let hooks = hooks.as_array().ok_or(Unreadable)?;
                let personal = personal && self.restrict;
                if hooks.iter().any(|h| eligible(h, event, personal)) {
                    self.events.insert(event.clone());
                }
            }
        }
        Ok(())
    }

    /// The first visit of `p`'s real location (a path that does not resolve
    /// counts as a first visit).
    pub(super) fn first_visit(&mut self, p: &Path) -> bool {
        match fs::canonicalize(p) {
            Ok(real) => self.seen.insert(real),
            Err(_) => true,
        }
    }

    /// Lets a plugin root found by a walk be visited again by its reader.
    pub(super) fn forget(&mut self, p: &Path) {
        if let Ok(real) = fs::canonicalize(p) {
            self.seen.remove(&real);
        }
    }

    /// Spends one directory entry of the budget.
    pub(super) fn spend(&mut self) -> Step {
        self.budget -= 1;
        if self.budget < 0 {
            return Err(Unreadable);
        }
        Ok(())
    }

    /// A settings file's `hooks`.
    pub(super) fn add_settings(&mut self, file: &Path, personal: bool) -> Step {
        if !is_file(file) || !self.first_visit(file) {
            return Ok(());
        }
        let doc = read_json(file)?;
        self.add_events_map(doc.get("hooks"), personal)
    }

    /// A markdown file's frontmatter `hooks:`. A frontmatter that does not
    /// parse counts only if it declares a `hooks:` key: a description with a
    /// stray colon (which the agent's own loader tolerates) does not make the
    /// inventory unknown.
    pub(super) fn add_frontmatter(&mut self, file: &Path, personal: bool) -> Step {
        static FRONTMATTER: LazyLock<regex::Regex> = LazyLock::new(|| {
            regex::Regex::new(r"\A---\r?\n((?s:.)*?)\r?\n---(?:\r?\n|\z)").expect("valid regex")
        });
        static HOOKS_KEY: LazyLock<regex::Regex> =
            LazyLock::new(|| regex::Regex::new(r"(?m)^\s*hooks\s*:").expect("valid regex"));
        if !self.first_visit(file) {
            return Ok(());
        }
        let text = read_text(file)?;
        let Some(body) = FRONTMATTER.captures(&text).and_then(|c| c.get(1)) else {
            return Ok(());
        };
        let Ok(front) = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(body.as_str()) else {
            return if HOOKS_KEY.is_match(body.as_str()) {
                Err(Unreadable)
            } else {
                Ok(())
            };
        };
        let Some(hooks) = front.as_mapping().and_then(|m| m.get("hooks")) else {
            return Ok(());
        };
        let hooks = serde_json::to_value(hooks).map_err(|_| Unreadable)?;
        self.add_events_map(Some(&hooks), personal)
    }

    /// Markdown files at most `depth` directories under `dir` (a file is
    /// itself), following symlinks once; `node_modules` and `.git*` skipped.
    pub(super) fn markdown_under(&mut self, dir: &Path, depth: u32) -> Step<Vec<PathBuf>> {
        if is_file(dir) {
            let md = dir.extension().is_some_and(|e| e == "md");
            return Ok(if md { vec![dir.to_owned()] } else { Vec::new() });
        }
        let mut out = Vec::new();
        if is_dir(dir) {
            self.walk_markdown(dir, depth, &mut out)?;
        }
        Ok(out)
    }

    fn walk_markdown(&mut self, dir: &Path, left: u32, out: &mut Vec<PathBuf>) -> Step {
        if !self.first_visit(dir) {
            return Ok(());
        }
        for name in list(dir)? {
            self.spend()?;
            let p = dir.join(&name);
            if is_dir(&p) {
                if left > 0 && descend(&name) {
                    self.walk_markdown(&p, left - 1, out)?;
                }
            } else if name.ends_with(".md") && is_file(&p) {
                out.push(p);
            }
        }
        Ok(())
    }
}

/// The agent's test for a hook that blocks when it fails: a synchronous
/// command hook or an http hook with `onFailure: "block"` — or, for the
/// user's own hooks under `CLAUDE_CODE_RESTRICT_PERSONAL_CONFIG`, any
/// synchronous one on the events that rule covers.
fn eligible(hook: &Value, event: &str, personal: bool) -> bool {
    let Some(h) = hook.as_object() else {
        return false;
    };
    let sync = synchronous(h);
    (sync && h.get("onFailure").and_then(Value::as_str) == Some("block"))
        || (sync && personal && PERSONAL_BLOCK_EVENTS.contains(&event))
}

fn synchronous(h: &Map<String, Value>) -> bool {
    match h.get("type").and_then(Value::as_str) {
        Some("command") => {
            h.get("async") != Some(&Value::Bool(true))
                && h.get("asyncRewake") != Some(&Value::Bool(true))
        }
        Some("http") => true,
        _ => false,
    }
}

/// Does `name` lead somewhere a hook source may live?
pub(super) fn descend(name: &str) -> bool {
    name != "node_modules" && !name.starts_with(".git")
}

/// A directory's entry names, sorted (so the budget and the first visit
/// fall the same way on every machine).
pub(super) fn list(dir: &Path) -> Step<Vec<String>> {
    let entries = fs::read_dir(dir).map_err(|_| Unreadable)?;
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Ok(names)
}

/// Following symlinks, as the agent does.
pub(super) fn is_file(p: &Path) -> bool {
    fs::metadata(p).is_ok_and(|m| m.is_file())
}

pub(super) fn is_dir(p: &Path) -> bool {
    fs::metadata(p).is_ok_and(|m| m.is_dir())
}

fn read_text(file: &Path) -> Step<String> {
    let bytes = fs::read(file).map_err(|_| Unreadable)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

pub(super) fn read_json(file: &Path) -> Step<Value> {
    serde_json::from_str(&read_text(file)?).map_err(|_| Unreadable)
}
