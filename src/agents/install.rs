//! Installing one release: `npm install --prefix` into a temp directory of
//! the cache, checked (the package's version, its program answering
//! `--version`), then renamed into place, so a broken or interrupted install
//! never sits in the cache under a version's name.

use std::time::Duration;

use semver::Version;

use super::cache::{Cache, Installed, MARKER};
use super::registry::{last_lines, offline, run_npm};
use super::{AgentsError, PACKAGE};

/// Budget for the whole `npm install` (a native release is ~200 MB).
pub const INSTALL_TIMEOUT: Duration = Duration::from_secs(15 * 60);
/// Budget for the installed program's `--version`.
const VERSION_TIMEOUT: Duration = Duration::from_secs(60);

/// Installs `version` (a no-op when it is already installed).
pub fn install(
    cache: &Cache,
    version: &Version,
    progress: &dyn Fn(&str),
) -> Result<Installed, AgentsError> {
    if let Some(found) = cache.get(version) {
        return Ok(found);
    }
    std::fs::create_dir_all(cache.root()).map_err(|e| {
        AgentsError::unavailable(
            format!("create the agent cache {}: {e}", cache.root().display()),
            "set REEL_AGENTS_DIR to a writable directory",
        )
    })?;
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".tmp-{version}-"))
        .tempdir_in(cache.root())
        .map_err(|e| {
            AgentsError::unavailable(
                format!("create a directory in {}: {e}", cache.root().display()),
                "set REEL_AGENTS_DIR to a writable directory",
            )
        })?;
    progress(&format!(
        "agents: installing Claude Code {version} from npm …"
    ));
    let started = std::time::Instant::now();
    let prefix = tmp.path().to_string_lossy().into_owned();
    let spec = format!("{PACKAGE}@{version}");
    let out = run_npm(
        &[
            "install",
            "--prefix",
            &prefix,
            "--no-save",
            "--no-audit",
            "--no-fund",
            "--no-package-lock",
            &spec,
        ],
        INSTALL_TIMEOUT,
    )?;
    if !out.success {
        return Err(install_failure(version, &out.stderr));
    }
    std::fs::write(
        tmp.path().join(MARKER),
        serde_json::json!({"package": PACKAGE, "version": version.to_string()}).to_string(),
    )
    .map_err(|e| AgentsError::unavailable(format!("write {MARKER}: {e}"), "check disk space"))?;
    let staged = check(version, tmp.path())?;
    let dest = cache.dir_of(version);
    let tmp_path = tmp.keep();
    if let Err(e) = std::fs::rename(&tmp_path, &dest) {
        let _ = std::fs::remove_dir_all(&tmp_path);
        // Another reel installed the same release meanwhile: use that one.
        return cache.get(version).ok_or_else(|| {
            AgentsError::unavailable(
                format!("move the install into {}: {e}", dest.display()),
                "remove the directory by hand (`reel agents prune`) and retry",
            )
        });
    }
    progress(&format!(
        "agents: installed Claude Code {version} ({} layout, {:.0} MB) in {:.1} s",
        match staged.layout {
            super::Layout::NodeScript => "cli.js",
            super::Layout::Native => "native",
        },
        super::cache::disk_usage(&dest) as f64 / 1e6,
        started.elapsed().as_secs_f64()
    ));
    cache.get(version).ok_or_else(|| {
        AgentsError::unavailable(
            format!("{} vanished after the install", dest.display()),
            "retry",
        )
    })
}

/// npm's failure, classified (all exit 3: the install cannot happen), with
/// the fix for each cause.
fn install_failure(version: &Version, stderr: &str) -> AgentsError {
    if stderr.contains("ETARGET")
        || stderr.contains("E404")
        || stderr.contains("No matching version")
    {
        return AgentsError::unavailable(
            format!("Claude Code {version} is not published on the npm registry"),
            "pick a published release: `reel agents list --available`",
        );
    }
    let network = [
        "ENOTFOUND",
        "EAI_AGAIN",
        "ECONNREFUSED",
        "ETIMEDOUT",
        "ECONNRESET",
        "network",
    ];
    if network.iter().any(|n| stderr.contains(n)) {
        return offline(stderr);
    }
    AgentsError::unavailable(
        format!(
            "npm install {PACKAGE}@{version} failed: {}",
            last_lines(stderr, 4)
        ),
        "see npm's message; for a native release (2.1.113 on) npm must be allowed to install \
         optional dependencies and run install scripts",
    )
}

/// The staged install is the release asked for and its program runs.
fn check(version: &Version, prefix: &std::path::Path) -> Result<Installed, AgentsError> {
    let found = Installed::read(version.clone(), prefix.to_path_buf()).ok_or_else(|| {
        AgentsError::unavailable(
            format!("npm installed no {PACKAGE} {version} package with a `claude` program"),
            "retry; if it persists, report the release (the package layout may have changed)",
        )
    })?;
    let found = found.runnable()?;
    let out = run_version(&found.program)?;
    if !out.contains(&version.to_string()) {
        return Err(AgentsError::unavailable(
            format!(
                "the installed {} answered `--version` with {:?}, not {version}",
                found.program.display(),
                out.trim()
            ),
            "for a native release the per-platform package must install (npm's \
             optional dependencies on; --omit=optional off)",
        ));
    }
    Ok(found)
}

/// `<program> --version`, bounded.
fn run_version(program: &std::path::Path) -> Result<String, AgentsError> {
    let mut child = std::process::Command::new(program)
        .arg("--version")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| {
            AgentsError::unavailable(
                format!("run {} --version: {e}", program.display()),
                "the download may be broken for this platform; retry",
            )
        })?;
    let started = std::time::Instant::now();
    loop {
        if child.try_wait().ok().flatten().is_some() {
            break;
        }
        if started.elapsed() >= VERSION_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(AgentsError::unavailable(
                format!("{} --version did not answer in 60 s", program.display()),
                "the release may not run on this machine",
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut text = String::new();
    if let Some(mut out) = child.stdout.take() {
        let _ = std::io::Read::read_to_string(&mut out, &mut text);
    }
    Ok(text)
}
