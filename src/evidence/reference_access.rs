//! Observed accesses to a mounted skill's `references/` and `scripts/` files
//! (cowork-harness 2.5.0 `referencesAccessed`, what `reference_read` and
//! `no_observed_reference_access` judge): a `Read` of the file, a `Grep`
//! over it, or a shell command that reads it. Each access names its
//! channels. A command that only names a path (`ls`, `test -f`, `echo`), or
//! writes, moves or deletes it, is no access; a path not rooted in a mounted
//! plugin, or one that walks out of it with `..`, never counts. The shell
//! reading is a heuristic that under-approximates by design (a `$VAR`-built
//! path or a bare relative one after `cd` is missed), which is why the
//! negative key promises no proof of absence.

use serde_json::{Map, Value};

use super::tool_output::skill_reference_read_path;

/// One skill file the run reached, and through which channels, in the
/// order first seen.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReferenceAccess {
    pub path: String,
    /// `read`, `grep` and/or `bash`.
    pub via: Vec<&'static str>,
}

/// Adds `path` reached through `via` to `list`, merging channels per path.
pub(super) fn note(list: &mut Vec<ReferenceAccess>, path: String, via: &'static str) {
    match list.iter_mut().find(|a| a.path == path) {
        Some(a) if !a.via.contains(&via) => a.via.push(via),
        Some(_) => {}
        None => list.push(ReferenceAccess {
            path,
            via: vec![via],
        }),
    }
}

/// The skill files one tool call reaches, each with its channel.
pub(super) fn accesses_of(tool: &str, input: &Map<String, Value>) -> Vec<(String, &'static str)> {
    let text = |k: &str| input.get(k).and_then(Value::as_str).unwrap_or_default();
    match tool {
        "Read" => channel(skill_reference_read_path(text("file_path")), "read"),
        // `path` only: a `glob` is a file-name filter, never a plugin path.
        "Grep" => channel(skill_reference_read_path(text("path")), "grep"),
        t if t == "Bash" || t.ends_with("__bash") => bash_paths(text("command"))
            .into_iter()
            .map(|p| (p, "bash"))
            .collect(),
        _ => Vec::new(),
    }
}

fn channel(path: Option<String>, via: &'static str) -> Vec<(String, &'static str)> {
    path.map(|p| vec![(p, via)]).unwrap_or_default()
}

/// Verbs that only name a path: an existence or name check reads nothing.
const NAME_ONLY: &[&str] = &[
    "ls", "test", "[", "stat", "echo", "printf", "basename", "dirname", "realpath", "readlink",
];
/// Verbs that create, change, move or delete every path they are given.
const WRITES: &[&str] = &[
    "rm", "rmdir", "chmod", "chown", "touch", "mv", "tee", "mkdir", "ln", "truncate", "unlink",
];
/// Prefixes that run the verb after them.
const WRAPPERS: &[&str] = &["sudo", "env", "command", "nohup", "time", "nice", "exec"];

/// The skill files a shell command reads, deduplicated, in order.
pub(super) fn bash_paths(command: &str) -> Vec<String> {
    // Every path found names a mounted plugin; most commands name none, and
    // tokenising each of a long run's commands was a fifth of its replay.
    // Quotes are dropped from tokens before they are read, so from the
    // command too: a token that names a plugin still does after this.
    // memchr's searches: `str::contains` with a char set walked a long
    // command char by char, twice per record in a multi-turn replay.
    let unquoted = if memchr::memchr2(b'"', b'\'', command.as_bytes()).is_some() {
        std::borrow::Cow::Owned(command.replace(['"', '\''], ""))
    } else {
        std::borrow::Cow::Borrowed(command)
    };
    // Built once: a searcher per call was a fifth of this pre-check.
    static MARKERS: std::sync::LazyLock<[memchr::memmem::Finder<'static>; 2]> =
        std::sync::LazyLock::new(|| {
            [".local-plugins/", ".remote-plugins/"].map(memchr::memmem::Finder::new)
        });
    if !MARKERS
        .iter()
        .any(|m| m.find(unquoted.as_bytes()).is_some())
    {
        return Vec::new();
    }
    let mut out: Vec<String> = Vec::new();
    for segment in command.split(['\n', ';', '|', '&']) {
        for path in segment_reads(segment) {
            if !out.contains(&path) {
                out.push(path);
            }
        }
    }
    out
}

/// The plugin-rooted paths one simple command reads: its arguments (less
/// those its verb does not read) and its input redirects, never an output
/// redirect's target.
fn segment_reads(segment: &str) -> Vec<String> {
    let tokens: Vec<String> = segment
        .split_whitespace()
        .map(|t| t.replace(['"', '\''], ""))
        .collect();
    let mut args: Vec<&str> = Vec::new();
    let mut inputs: Vec<&str> = Vec::new();
    let mut it = tokens.iter().map(String::as_str);
    while let Some(t) = it.next() {
        let op = t.trim_start_matches(|c: char| c.is_ascii_digit() || c == '&');
        if let Some(target) = op.strip_prefix('<') {
            let target = target.trim_start_matches('<');
            inputs.extend(if target.is_empty() {
                it.next()
            } else {
                Some(target)
            });
        } else if let Some(target) = op.strip_prefix('>') {
            if target.trim_start_matches('>').is_empty() {
                it.next();
            }
        } else {
            args.push(t);
        }
    }
    let verb_at = args
        .iter()
        .position(|a| !(WRAPPERS.contains(a) || a.contains('=') || a.starts_with('-')));
    let read = match verb_at.map(|i| (args[i], &args[i + 1..])) {
        Some((verb, _)) if NAME_ONLY.contains(&verb) || WRITES.contains(&verb) => Vec::new(),
        Some(("cp", rest)) => copy_sources(rest),
        Some((_, rest)) => rest.to_vec(),
        None => Vec::new(),
    };
    read.into_iter()
        .chain(inputs)
        .filter_map(plugin_path)
        .collect()
}

/// `cp`'s sources: every argument but the destination (the last one, or
/// the one after `-t`).
fn copy_sources<'a>(rest: &[&'a str]) -> Vec<&'a str> {
    match rest.iter().position(|a| *a == "-t") {
        Some(i) => [&rest[..i], rest.get(i + 2..).unwrap_or_default()].concat(),
        None => rest[..rest.len().saturating_sub(1)].to_vec(),
    }
}

/// The skill-relative path of a raw shell token rooted in a mounted plugin;
/// never one that walks out with `..` or is built from a variable.
fn plugin_path(token: &str) -> Option<String> {
    if token.contains('$') || token.split('/').any(|s| s == "..") {
        return None;
    }
    skill_reference_read_path(token)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const PLUGIN: &str = "/sessions/s1/mnt/.local-plugins/acme/references/env.md";
    const SCRIPT: &str = "/sessions/s1/mnt/.remote-plugins/acme/scripts/run.py";

    fn paths(c: &str) -> Vec<String> {
        bash_paths(c)
    }

    /// The original's tests of `bashReferenceAccessPaths` (src/run/run.ts),
    /// "positives".
    #[test]
    fn reads_through_the_shell_are_accesses() {
        let env = vec!["references/env.md".to_owned()];
        assert_eq!(paths(&format!("cat {PLUGIN}")), env);
        assert_eq!(paths(&format!("head -50 \"{PLUGIN}\" | grep -i tier")), env);
        assert_eq!(paths(&format!("wc -l < {PLUGIN}")), env);
        assert_eq!(
            paths(&format!("sed -n '1,20p' {SCRIPT}")),
            ["scripts/run.py"]
        );
        assert_eq!(paths(&format!("diff {PLUGIN} {PLUGIN}")), env);
        assert_eq!(
            paths(&format!("cat {PLUGIN} && echo done >> {PLUGIN}")),
            env
        );
        assert_eq!(paths(&format!("cp {PLUGIN} /tmp/x")), env);
    }

    /// "the false positives it must NOT produce" and the deliberate misses.
    #[test]
    fn naming_writing_and_unrooted_paths_are_not() {
        for c in [
            format!("ls -la {PLUGIN}"),
            format!("test -f {PLUGIN} && echo yes"),
            format!("stat {PLUGIN}"),
            format!("echo {PLUGIN}"),
            format!("basename {PLUGIN}"),
            format!("rm -f {PLUGIN}"),
            format!("rm -rf {PLUGIN}"),
            format!("rm /tmp/a {PLUGIN}"),
            format!("chmod +x {SCRIPT}"),
            format!("echo x | tee {PLUGIN}"),
            format!("sudo cp /tmp/x {PLUGIN}"),
            format!("env X=1 cp /tmp/x {PLUGIN}"),
            format!("mkdir -p /tmp/o && cp /tmp/n {PLUGIN}"),
            format!("cp -t {PLUGIN} /tmp/x"),
            format!("cp /tmp/x {PLUGIN}"),
            format!("mv {PLUGIN} /tmp/x"),
            format!("touch {SCRIPT}"),
            format!("echo hi > {PLUGIN}"),
            format!("cat <<'EOF' >> {PLUGIN}\nbody\nEOF"),
            "cat /x/.local-plugins/acme/references/../../../Acme-Corp/secret.md".to_owned(),
            "node scripts/build.js".to_owned(),
            "cat /Users/someone/acme-client/references/pricing.md".to_owned(),
            "cd /sessions/s1/mnt/.local-plugins/acme && cat references/env.md".to_owned(),
            "cat \"$SKILL_DIR/references/env.md\"".to_owned(),
        ] {
            assert!(paths(&c).is_empty(), "{c}: {:?}", paths(&c));
        }
    }

    /// "referenceAccessesOf — channel routing" and "noteReferenceAccess".
    #[test]
    fn each_tool_has_its_channel_and_channels_merge_per_path() {
        let of = |tool: &str, input: Value| accesses_of(tool, input.as_object().unwrap());
        let env = |via| vec![("references/env.md".to_owned(), via)];
        assert_eq!(of("Read", json!({"file_path": PLUGIN})), env("read"));
        assert_eq!(of("Grep", json!({"path": PLUGIN})), env("grep"));
        assert!(of("Glob", json!({"path": PLUGIN})).is_empty());
        assert!(
            of(
                "Grep",
                json!({"pattern": "t", "glob": "references/**/*.md"})
            )
            .is_empty()
        );
        let cat = json!({"command": format!("cat {PLUGIN}")});
        assert_eq!(of("Bash", cat.clone()), env("bash"));
        assert_eq!(of("mcp__workspace__bash", cat), env("bash"));
        assert!(of("WebSearch", json!({"query": "references/env.md"})).is_empty());
        assert!(of("Bash", json!({})).is_empty());

        let mut list = Vec::new();
        for via in ["bash", "read", "bash"] {
            note(&mut list, "references/env.md".into(), via);
        }
        note(&mut list, "scripts/b.py".into(), "read");
        assert_eq!(list[0].via, ["bash", "read"]);
        assert_eq!(list[1].path, "scripts/b.py");
    }
}
