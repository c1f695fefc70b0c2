//! The v16 `hookFailureBlocks` inventory a recording freezes: the hook events
//! on which a hook that blocks when it fails (`onFailure: "block"`, agent
//! 2.1.294 and later) may have run.
//!
//! The agent streams a hook's `hook_response` frame before it turns the
//! hook's failure into a block, so the hook keys must know, per event,
//! whether such a hook could have run (`assert::keys::hooks`). This reads
//! every hook source the agent could load for the run — its config dir
//! (settings, skills, agents, commands, installed plugins), the work root's
//! project settings, the `--settings` file reel passes, the host's managed
//! settings — and lists the events: `{events: [...]}` (sorted, often empty),
//! or `{unknown: true, why}` when a source exists but does not read or parse.
//! Event level only, as in the original (src/run/hook-failure-blocks.ts,
//! test/hook-failure-blocks.test.ts): matchers are not modelled. The
//! inventory names events and a count, never a path or a command.
//!
//! Staged plugins are not sources: the protocol tier does not load them
//! (`l0_plugin_divergence`).

mod read;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use self::read::{Scan, Step, descend, is_dir, is_file, list, read_json};
use crate::protocol::{self, Line};

/// The settings files the agent reads from a config or project `.claude` dir.
const SETTINGS_FILES: &[&str] = &[
    "settings.json",
    "settings.local.json",
    "cowork_settings.json",
];

/// Where a run's hooks may come from.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// The agent's config dir (`CLAUDE_CONFIG_DIR`, else `~/.claude`): the
    /// user's own hooks.
    pub config_dirs: Vec<PathBuf>,
    /// `.claude` dirs whose project settings the agent loads (its cwd's).
    pub project_claude_dirs: Vec<PathBuf>,
    /// Settings files named on the command line (`--settings`).
    pub flag_settings: Vec<PathBuf>,
    /// Host managed-settings dirs (the agent runs natively here).
    pub managed_settings_dirs: Vec<PathBuf>,
    /// The agent's environment (for `CLAUDE_CODE_RESTRICT_PERSONAL_CONFIG`).
    pub env: Vec<(String, String)>,
}

impl Sources {
    /// The sources of the agent `cmd` starts (in its working directory,
    /// with its environment and `--settings` file).
    pub fn of_command(cmd: &crate::agent::AgentCommand) -> Sources {
        let flag = cmd
            .args
            .iter()
            .position(|a| a == "--settings")
            .and_then(|i| cmd.args.get(i + 1))
            .map(Path::new);
        Sources::of_run(&cmd.env, &cmd.cwd, flag)
    }

    /// The sources of an agent started with `env` in `work_root`, given the
    /// `--settings` file (if any) and this host's managed-settings dirs.
    pub fn of_run(
        env: &[(String, String)],
        work_root: &Path,
        flag_settings: Option<&Path>,
    ) -> Sources {
        let var = |k: &str| {
            env.iter()
                .rev()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
        };
        let config_dir = match var("CLAUDE_CONFIG_DIR").filter(|v| !v.is_empty()) {
            Some(dir) => Some(PathBuf::from(dir)),
            None => var("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| Path::new(h).join(".claude")),
        };
        Sources {
            config_dirs: config_dir.into_iter().collect(),
            project_claude_dirs: vec![work_root.join(".claude")],
            flag_settings: flag_settings.map(Path::to_path_buf).into_iter().collect(),
            managed_settings_dirs: host_managed_settings_dirs(),
            env: env.to_vec(),
        }
    }
}

/// Where the agent reads managed settings on this host.
fn host_managed_settings_dirs() -> Vec<PathBuf> {
    if cfg!(target_os = "macos") {
        vec![PathBuf::from("/Library/Application Support/ClaudeCode")]
    } else if cfg!(target_os = "linux") {
        vec![PathBuf::from("/etc/claude-code")]
    } else {
        Vec::new()
    }
}

/// The inventory of a run whose agent wrote `events`: an agent at or below
/// the last one without `onFailure` (every init frame's version, at least
/// one reported) cannot block on a failure, so its sources are not read.
pub fn for_run(events: &[String], sources: &Sources) -> Value {
    if crate::assert::keys::agents_predate_on_failure(&init_versions(events)) {
        return json!({"events": []});
    }
    scan(sources)
}

/// Every init frame's `claude_code_version` (`None`: missing or empty).
fn init_versions(events: &[String]) -> Vec<Option<String>> {
    events
        .iter()
        .filter(|l| l.contains(protocol::subtype::INIT))
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| match Line::of(&v) {
            Line::System { subtype, body } if subtype == protocol::subtype::INIT => Some(
                body.get("claude_code_version")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned),
            ),
            _ => None,
        })
        .collect()
}

/// Reads every source; absent ones contribute nothing.
pub fn scan(sources: &Sources) -> Value {
    let managed: Vec<PathBuf> = sources
        .managed_settings_dirs
        .iter()
        .flat_map(|d| managed_files(d))
        .collect();
    let in_dirs = |dirs: &[PathBuf]| -> Vec<PathBuf> {
        dirs.iter()
            .flat_map(|d| SETTINGS_FILES.iter().map(move |f| d.join(f)))
            .collect()
    };
    let user = in_dirs(&sources.config_dirs);
    let project = in_dirs(&sources.project_claude_dirs);
    let every_file = managed
        .iter()
        .chain(&user)
        .chain(&project)
        .chain(&sources.flag_settings);
    let restrict = sources
        .env
        .iter()
        .any(|(k, v)| k == "CLAUDE_CODE_RESTRICT_PERSONAL_CONFIG" && truthy_env(v))
        || every_file.clone().any(|f| settings_restrict(f));
    let mut s = Scan::new(restrict);
    let mut failed = 0usize;
    let mut attempt = |s: &mut Scan, step: &mut dyn FnMut(&mut Scan) -> Step| {
        failed += usize::from(step(s).is_err());
    };
    // The user's own settings, skills and agents are personal hooks; project,
    // flag and managed settings are not.
    for f in &user {
        attempt(&mut s, &mut |s| s.add_settings(f, true));
    }
    for f in project.iter().chain(&sources.flag_settings) {
        attempt(&mut s, &mut |s| s.add_settings(f, false));
    }
    for dir in &sources.config_dirs {
        for sub in ["skills", "agents", "commands"] {
            attempt(&mut s, &mut |s| add_markdown(s, &dir.join(sub), true));
        }
        let mut roots = Vec::new();
        attempt(&mut s, &mut |s| {
            roots = installed_plugin_roots(&dir.join("plugins"), s)?;
            Ok(())
        });
        for root in &roots {
            attempt(&mut s, &mut |s| add_plugin_root(s, root, false));
        }
    }
    for f in &managed {
        attempt(&mut s, &mut |s| s.add_settings(f, false));
    }
    if failed > 0 {
        return json!({"unknown": true, "why": format!("{failed} hook source(s) could not be read or parsed")});
    }
    json!({"events": s.events.into_iter().collect::<Vec<_>>()})
}

/// `managed-settings.json` and `managed-settings.d/*.json` (sorted) of a dir.
fn managed_files(dir: &Path) -> Vec<PathBuf> {
    let drop_in = dir.join("managed-settings.d");
    let mut files = vec![dir.join("managed-settings.json")];
    if let Ok(names) = list(&drop_in) {
        files.extend(
            names
                .iter()
                .filter(|n| n.ends_with(".json"))
                .map(|n| drop_in.join(n)),
        );
    }
    files
}

/// Does a settings file's `env` turn `CLAUDE_CODE_RESTRICT_PERSONAL_CONFIG`
/// on? (One that does not read is reported by the hooks pass.)
fn settings_restrict(file: &Path) -> bool {
    if !is_file(file) {
        return false;
    }
    let Ok(doc) = read_json(file) else {
        return false;
    };
    match doc
        .get("env")
        .and_then(|e| e.get("CLAUDE_CODE_RESTRICT_PERSONAL_CONFIG"))
    {
        None | Some(Value::Null) => false,
        Some(v) => truthy_env(&crate::js::coerce::js_string(v)),
    }
}

/// An environment flag that is set: not empty, not `0`/`false`/`no`/`off`.
fn truthy_env(v: &str) -> bool {
    let t = v.trim().to_ascii_lowercase();
    !v.is_empty() && !matches!(t.as_str(), "0" | "false" | "no" | "off")
}

/// The frontmatter of every markdown file under `dir` (three levels).
fn add_markdown(s: &mut Scan, dir: &Path, personal: bool) -> Step {
    for md in s.markdown_under(dir, 3)? {
        s.add_frontmatter(&md, personal)?;
    }
    Ok(())
}

/// One plugin root: `hooks/hooks.json`, its manifest's `hooks` (inline, a
/// path, or a list of either), and the frontmatter of its skills, commands
/// and agents — the default dirs and any the manifest names.
fn add_plugin_root(s: &mut Scan, root: &Path, personal: bool) -> Step {
    if !s.first_visit(root) {
        return Ok(());
    }
    let hooks_json = root.join("hooks").join("hooks.json");
    if is_file(&hooks_json) && s.first_visit(&hooks_json) {
        s.add_events_map(Some(&read_json(&hooks_json)?), personal)?;
    }
    let manifest = plugin_manifest(root)?;
    let declared = manifest.as_ref().and_then(|m| m.get("hooks"));
    let items = match declared {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(one) => vec![one],
        None => Vec::new(),
    };
    for item in items {
        match item {
            Value::String(rel) => {
                let p = root.join(rel);
                if !is_file(&p) {
                    return Err(read::Unreadable);
                }
                if s.first_visit(&p) {
                    s.add_events_map(Some(&read_json(&p)?), personal)?;
                }
            }
            other => s.add_events_map(Some(other), personal)?,
        }
    }
    for sub in ["skills", "commands", "agents"] {
        let named = manifest
            .as_ref()
            .map(|m| manifest_paths(root, m.get(sub)))
            .unwrap_or_default();
        for dir in std::iter::once(root.join(sub)).chain(named) {
            add_markdown(s, &dir, personal)?;
        }
    }
    Ok(())
}

/// `.claude-plugin/plugin.json`, else `plugin.json`: the first that exists
/// (`None` inside when it is not an object).
fn plugin_manifest(root: &Path) -> Step<Option<serde_json::Map<String, Value>>> {
    for f in [
        root.join(".claude-plugin").join("plugin.json"),
        root.join("plugin.json"),
    ] {
        if is_file(&f) {
            return Ok(match read_json(&f)? {
                Value::Object(o) => Some(o),
                _ => None,
            });
        }
    }
    Ok(None)
}

/// The paths a manifest field names (a string or a list), under `root`.
fn manifest_paths(root: &Path, v: Option<&Value>) -> Vec<PathBuf> {
    let items: Vec<&Value> = match v {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(one) => vec![one],
        None => Vec::new(),
    };
    items
        .into_iter()
        .filter_map(Value::as_str)
        .map(|p| crate::paths::lexical(&root.join(p)))
        .collect()
}

/// Plugin roots under a config dir's `plugins/` (the agent's install cache):
/// those `installed_plugins.json` names when it reads; otherwise every dir
/// (eight levels down) holding a manifest or `hooks/hooks.json`.
fn installed_plugin_roots(plugins: &Path, s: &mut Scan) -> Step<Vec<PathBuf>> {
    if !is_dir(plugins) {
        return Ok(Vec::new());
    }
    if let Some(roots) = indexed_plugin_roots(&plugins.join("installed_plugins.json")) {
        return Ok(roots);
    }
    let mut roots = Vec::new();
    walk_plugin_roots(plugins, 8, s, &mut roots)?;
    Ok(roots)
}

/// The `installPath`s of an `installed_plugins.json` that reads (`None`:
/// absent or unreadable, so the caller walks).
fn indexed_plugin_roots(index: &Path) -> Option<Vec<PathBuf>> {
    if !is_file(index) {
        return None;
    }
    let doc = read_json(index).ok()?;
    let plugins = doc.get("plugins")?.as_object()?;
    let mut roots: Vec<PathBuf> = Vec::new();
    for entry in plugins.values() {
        let entries: Vec<&Value> = match entry {
            Value::Array(items) => items.iter().collect(),
            one => vec![one],
        };
        for path in entries
            .iter()
            .filter_map(|e| e.get("installPath")?.as_str())
        {
            let p = PathBuf::from(path);
            if is_dir(&p) && !roots.contains(&p) {
                roots.push(p);
            }
        }
    }
    Some(roots)
}

fn walk_plugin_roots(dir: &Path, left: u32, s: &mut Scan, roots: &mut Vec<PathBuf>) -> Step {
    if !s.first_visit(dir) {
        return Ok(());
    }
    let names = list(dir)?;
    let is_root = names
        .iter()
        .any(|n| n == ".claude-plugin" || n == "plugin.json")
        || is_file(&dir.join("hooks").join("hooks.json"));
    if is_root {
        s.forget(dir); // `add_plugin_root` visits it
        roots.push(dir.to_owned());
        return Ok(());
    }
    for name in names {
        s.spend()?;
        let p = dir.join(&name);
        if left > 0 && descend(&name) && is_dir(&p) {
            walk_plugin_roots(&p, left - 1, s, roots)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
