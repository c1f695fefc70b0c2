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

/// When the cached release list may stand in for the registry's.
#[derive(Debug, Clone, Copy, Default)]
pub struct ListPolicy<'a> {
    /// Ask the registry whatever the cache holds (`--refresh`).
    pub refresh: bool,
    /// Releases the caller names by number: a cached list without one of
    /// them is out of date, so the registry is asked.
    pub must_hold: &'a [semver::Version],
}

/// The release list: the cached copy when fresh, else the registry's (the
/// stale copy when the registry cannot be reached, with a warning).
pub fn versions(cache: &Cache) -> Result<VersionList, AgentsError> {
    versions_with(cache, ListPolicy::default())
}

/// The release list under `policy`: the cached copy only when it is younger
/// than [`LIST_TTL`], `--refresh` was not given and it holds every release
/// asked for by number; else the registry's, written back to the cache. When
/// the registry cannot be reached the cached copy is used with a warning
/// naming its age.
pub fn versions_with(cache: &Cache, policy: ListPolicy<'_>) -> Result<VersionList, AgentsError> {
    let file = cache.root().join(LIST_FILE);
    let cached = std::fs::read_to_string(&file)
        .ok()
        .and_then(|t| VersionList::from_npm_json(&t).ok());
    let age = std::fs::metadata(&file)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok());
    if let (Some(list), Some(age)) = (&cached, age)
        && age < LIST_TTL
        && !policy.refresh
        && policy.must_hold.iter().all(|v| list.contains(v))
    {
        return Ok(list.clone());
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
        Err(e) => match cached {
            Some(list) => {
                crate::messages::warn(format!(
                    "agents: the registry cannot be reached ({e}); using the release list \
                     cached at {} {} (newest release in it: {})",
                    file.display(),
                    age.map_or("at an unknown time".into(), |a| format!(
                        "{} ago",
                        describe_age(a)
                    )),
                    list.latest().map_or("none".into(), ToString::to_string),
                ));
                Ok(list)
            }
            None => Err(e),
        },
    }
}

/// An age as a person reads it: `40 s`, `12 min`, `3 h 5 min`, `2 days`.
pub fn describe_age(age: Duration) -> String {
    let s = age.as_secs();
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min", s / 60),
        3600..86_400 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        _ => format!("{} days", s / 86_400),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_as_a_person_says_them() {
        let d = Duration::from_secs;
        assert_eq!(describe_age(d(40)), "40 s");
        assert_eq!(describe_age(d(12 * 60 + 5)), "12 min");
        assert_eq!(describe_age(d(3 * 3600 + 5 * 60)), "3 h 5 min");
        assert_eq!(describe_age(d(2 * 86_400 + 7)), "2 days");
    }
}
