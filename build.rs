//! Stamps the commit reel is built from into `reel --version`
//! (`REEL_BUILD_COMMIT`): from git in a checkout; from the
//! `.cargo_vcs_info.json` that `cargo package` writes when built from a
//! packaged crate (`cargo install` of it); else `unknown commit`. Hand-written
//! with std only: a build dependency would be compiled for every build.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let commit = from_git(&dir)
        .or_else(|| from_vcs_info(&dir))
        .unwrap_or_else(|| "unknown commit".to_owned());
    println!("cargo:rustc-env=REEL_BUILD_COMMIT={commit}");
    println!("cargo:rerun-if-changed=build.rs");
}

/// Registers `path` for a rerun when it exists: cargo counts a missing
/// path as changed on every build, which re-ran this script and recompiled
/// reel and its tests on every cargo command (a checkout has no
/// `.cargo_vcs_info.json`; a worktree's common directory may have no
/// `packed-refs`).
fn rerun_if_changed(path: &Path) {
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

/// The checkout's HEAD (12 hex digits), and the files that change with it
/// registered for a rerun.
fn from_git(dir: &Path) -> Option<String> {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .current_dir(dir)
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
            .filter(|s| !s.is_empty())
    };
    // Only the checkout the crate itself lives in, not a repository around
    // an unpacked crate.
    let top = git(&["rev-parse", "--show-toplevel"])?;
    if Path::new(&top).canonicalize().ok()? != dir.canonicalize().ok()? {
        return None;
    }
    let sha = git(&["rev-parse", "--short=12", "HEAD"])?;
    if let Some(head) = git(&["rev-parse", "--git-path", "HEAD"]) {
        rerun_if_changed(&dir.join(head));
    }
    if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"])
        && let Some(file) = git(&["rev-parse", "--git-path", &r])
    {
        rerun_if_changed(&dir.join(file));
    }
    if let Some(packed) = git(&["rev-parse", "--git-path", "packed-refs"]) {
        rerun_if_changed(&dir.join(packed));
    }
    Some(sha)
}

/// `git.sha1` of the `.cargo_vcs_info.json` a packaged crate carries.
fn from_vcs_info(dir: &Path) -> Option<String> {
    rerun_if_changed(&dir.join(".cargo_vcs_info.json"));
    let text = std::fs::read_to_string(dir.join(".cargo_vcs_info.json")).ok()?;
    // `"sha1": "<40 hex>"`: found by hand, the file is cargo's own and flat.
    let at = text.find("\"sha1\"")?;
    let rest = &text[at + 6..];
    let start = rest.find('"')? + 1;
    let sha: String = rest[start..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    (sha.len() >= 12).then(|| sha[..12].to_owned())
}
