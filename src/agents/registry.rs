//! The registry's release list, through the user's own `npm` (so its
//! registry, proxy and auth settings apply), kept in the cache as
//! `versions.json` for a short while and as the fallback when offline.

use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use super::{AgentsError, Cache, PACKAGE, VersionList};

/// How long a fetched list is reused before the registry is asked again.
pub const LIST_TTL: Duration = Duration::from_secs(10 * 60);
/// Budget for one `npm` call that reads the registry.
pub const NPM_TIMEOUT: Duration = Duration::from_secs(120);

const LIST_FILE: &str = "versions.json";

/// The release list: the cached copy when fresh, else the registry's (the
/// stale copy when the registry cannot be reached, with a warning).
pub fn versions(cache: &Cache) -> Result<VersionList, AgentsError> {
    let file = cache.root().join(LIST_FILE);
    let cached = std::fs::read_to_string(&file).ok();
    let age = std::fs::metadata(&file)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok());
    if let (Some(text), Some(age)) = (&cached, age)
        && age < LIST_TTL
        && let Ok(list) = VersionList::from_npm_json(text)
    {
        return Ok(list);
    }
    match fetch() {
        Ok(text) => {
            let list = VersionList::from_npm_json(&text).map_err(|e| {
                AgentsError::unavailable(
                    format!("npm view {PACKAGE} versions: {e}"),
                    "check `npm config get registry` names the npm registry or a mirror of it",
                )
            })?;
            let _ = std::fs::create_dir_all(cache.root());
            let _ = crate::atomic::write_atomic(&file, text.as_bytes());
            Ok(list)
        }
        Err(e) => match cached.and_then(|t| VersionList::from_npm_json(&t).ok()) {
            Some(list) => {
                crate::messages::warn(format!(
                    "agents: the registry cannot be reached ({e}); using the release list \
                     cached at {}",
                    file.display()
                ));
                Ok(list)
            }
            None => Err(e),
        },
    }
}

/// `npm view <package> versions --json`.
fn fetch() -> Result<String, AgentsError> {
    let out = run_npm(&["view", PACKAGE, "versions", "--json"], NPM_TIMEOUT)?;
    if !out.success {
        return Err(offline(&out.stderr));
    }
    Ok(out.stdout)
}

/// What an `npm` call left behind.
pub struct NpmOutput {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `npm` with `args`, quiet and non-interactive, killed after `timeout`.
pub fn run_npm(args: &[&str], timeout: Duration) -> Result<NpmOutput, AgentsError> {
    let npm = super::cache::find_on_path("npm").ok_or_else(|| {
        AgentsError::unavailable(
            "no `npm` on PATH: releases are installed from the npm registry with npm",
            "install Node.js with npm (https://nodejs.org, or your package manager), or point \
             --agent-cmd / REEL_CLAUDE_BIN at a Claude Code you installed yourself",
        )
    })?;
    let mut child = Command::new(npm)
        .args(args)
        .args([
            "--fetch-retries=1",
            "--no-update-notifier",
            "--loglevel=error",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| AgentsError::unavailable(format!("run npm: {e}"), "check your npm install"))?;
    // Read both pipes on threads so a chatty npm never blocks on a full pipe.
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let out_t = std::thread::spawn(move || read_all(&mut stdout));
    let err_t = std::thread::spawn(move || read_all(&mut stderr));
    let started = std::time::Instant::now();
    let status = loop {
        if let Ok(Some(s)) = child.try_wait() {
            break Some(s);
        }
        if started.elapsed() >= timeout {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = out_t.join().unwrap_or_default();
    let stderr = err_t.join().unwrap_or_default();
    let Some(status) = status else {
        return Err(AgentsError::unavailable(
            format!(
                "`npm {}` did not finish in {} s",
                args.join(" "),
                timeout.as_secs()
            ),
            "check the network and `npm config get registry`; a slow mirror may need a retry",
        ));
    };
    Ok(NpmOutput {
        success: status.success(),
        stdout,
        stderr,
    })
}

fn read_all(r: &mut impl std::io::Read) -> String {
    let mut buf = Vec::new();
    let _ = r.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

/// The error for a registry npm could not read, npm's own words kept.
pub fn offline(stderr: &str) -> AgentsError {
    AgentsError::unavailable(
        format!(
            "the npm registry cannot be reached: {}",
            last_lines(stderr, 3).if_empty("npm gave no reason")
        ),
        "check the network (or `npm config get registry` and your proxy settings); releases \
         already installed still run: `reel agents list`",
    )
}

/// The last `n` non-blank lines of npm's stderr, joined.
pub fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

trait IfEmpty {
    fn if_empty(self, other: &str) -> String;
}

impl IfEmpty for String {
    fn if_empty(self, other: &str) -> String {
        if self.trim().is_empty() {
            other.to_owned()
        } else {
            self
        }
    }
}
