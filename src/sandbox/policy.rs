//! What one confined run may touch: the paths it may write and read, the
//! devices a shell needs, the TCP ports it may connect to, and whether its
//! network is loopback only. Built by the live run from its run directory,
//! the agent command and its `PATH`; applied by the helper.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// System directories an agent needs to run, read and execute only. `/dev`
/// is not among them: raw disks are readable by root.
pub const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/nix/store",
    "/snap",
    "/proc",
    "/sys",
    "/run/systemd/resolve",
];

/// The devices a shell needs, read and write. No terminal: the host's
/// `/dev/pts` holds every terminal of the machine and `/dev/tty` is the
/// controlling one; a run with a mount namespace gets a private devpts
/// instance instead (`super::mounts::PRIVATE_TERMINALS`, added by the helper).
pub const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// The devices the pre-check lets a recorded command name (the kernel still
/// decides: a terminal opens only in a private devpts instance).
pub fn allowed_device(path: &str) -> bool {
    DEVICES.contains(&path)
        || matches!(path, "/dev/tty" | "/dev/ptmx" | "/dev/pts")
        || path.starts_with("/dev/pts/")
        || matches!(path, "/dev/stdout" | "/dev/stderr" | "/dev/stdin")
        || path.starts_with("/dev/fd/")
}

/// The network a run may reach.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Network {
    /// A scripted model: only these `127.0.0.1` ports (the model's, then
    /// reel's MCP fronts'); in a network namespace with loopback only, each
    /// port relayed in from the host, every other loopback port refused.
    Loopback { ports: Vec<u16> },
    /// A live run: TCP connect to these ports only (DNS still works; there is
    /// no network namespace, as the agent must reach the API; reel's MCP
    /// fronts are among them).
    Ports(Vec<u16>),
}

/// What a run may touch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    /// Read, write, create and delete beneath these.
    pub write: Vec<PathBuf>,
    /// Read and execute beneath these (directories or single files).
    pub read: Vec<PathBuf>,
    /// Read and write these device files.
    pub devices: Vec<PathBuf>,
    pub network: Network,
}

/// Extra read-only paths for every run, `:`-separated (a toolchain reel
/// cannot infer from the agent's `PATH`, a wrapper's own agent).
pub const EXTRA_READ_ENV: &str = "REEL_SANDBOX_READ";

/// [`EXTRA_READ_ENV`]'s paths.
pub fn extra_read_from_env() -> Vec<PathBuf> {
    std::env::var_os(EXTRA_READ_ENV)
        .map(|v| {
            std::env::split_paths(&v)
                .filter(|p| p.is_absolute())
                .collect()
        })
        .unwrap_or_default()
}

/// The inputs of [`Policy::for_run`].
pub struct RunInputs<'a> {
    /// The fresh run directory (work root, home, config dir, `tmp/`).
    pub run_dir: &'a Path,
    /// The agent's program and arguments.
    pub program: &'a Path,
    pub args: &'a [String],
    /// The agent's `PATH`.
    pub path_var: Option<&'a str>,
    /// The user's home, never readable as a whole.
    pub home: Option<&'a Path>,
    /// Extra read-only paths (the session's MCP config, the project
    /// configuration's, [`EXTRA_READ_ENV`]).
    pub extra_read: &'a [PathBuf],
    pub network: Network,
}

impl Policy {
    /// The policy of one run.
    pub fn for_run(inputs: &RunInputs<'_>) -> Policy {
        let mut read: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
        let home = inputs
            .home
            .map(|h| canonical(h).unwrap_or_else(|| h.to_owned()));
        let add = |p: PathBuf, read: &mut Vec<PathBuf>| {
            if !never_whole(&p, home.as_deref()) && !read.contains(&p) {
                read.push(p);
            }
        };
        for p in agent_install(inputs.program, inputs.path_var) {
            add(p, &mut read);
        }
        for p in argument_files(inputs.args, inputs.run_dir) {
            add(p, &mut read);
        }
        for p in toolchains(inputs.path_var, home.as_deref()) {
            add(p, &mut read);
        }
        for p in inputs.extra_read {
            if let Some(c) = canonical(p) {
                add(c, &mut read);
            }
        }
        Policy {
            write: vec![canonical(inputs.run_dir).unwrap_or_else(|| inputs.run_dir.to_owned())],
            read,
            devices: DEVICES.iter().map(PathBuf::from).collect(),
            network: inputs.network.clone(),
        }
    }
}

fn canonical(p: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(p).ok()
}

/// `/`, the home directory and its ancestors are never opened whole.
fn never_whole(p: &Path, home: Option<&Path>) -> bool {
    p == Path::new("/") || !p.is_absolute() || home.is_some_and(|h| h.starts_with(p))
}

/// The agent's own installation: its program resolved, and the whole
/// `node_modules` tree it lives in (a native build's per-platform package is
/// a sibling package), else the directory holding it.
fn agent_install(program: &Path, path_var: Option<&str>) -> Vec<PathBuf> {
    let Some(real) = which(program, path_var).and_then(|p| canonical(&p)) else {
        return Vec::new();
    };
    // The file alone otherwise: a native build is one file, and a wrapper
    // script's directory may be a whole checkout.
    let tree = real
        .ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == "node_modules"));
    let mut out = vec![real.clone()];
    out.extend(tree.map(Path::to_owned));
    // The `.bin` symlink itself, when the program was named through it.
    if let Some(named) = which(program, path_var).filter(|n| *n != real) {
        out.push(named);
    }
    out
}

/// `program` as the kernel will find it: a path, or the first match on PATH.
fn which(program: &Path, path_var: Option<&str>) -> Option<PathBuf> {
    if program.components().count() > 1 {
        return Some(std::path::absolute(program).unwrap_or_else(|_| program.to_owned()));
    }
    std::env::split_paths(path_var?)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Absolute arguments naming existing files (`node /x/agent.js`): the file
/// itself, never its directory.
fn argument_files(args: &[String], run_dir: &Path) -> Vec<PathBuf> {
    args.iter()
        .map(Path::new)
        .filter(|p| p.is_absolute() && p.is_file() && !p.starts_with(run_dir))
        .filter_map(canonical)
        .collect()
}

/// Toolchains the agent's `PATH` names: each directory on it, a version
/// manager's root for a `shims` directory (pyenv, rbenv, asdf), and for a
/// `<prefix>/bin` outside the system the prefix's library directories (nvm's
/// node, `~/.local`'s Python packages) — never the prefix's `share/` or the
/// home itself.
fn toolchains(path_var: Option<&str>, home: Option<&Path>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in std::env::split_paths(path_var.unwrap_or_default()) {
        let Some(dir) = canonical(&dir).filter(|d| d.is_dir()) else {
            continue;
        };
        if never_whole(&dir, home) {
            continue;
        }
        out.push(dir.clone());
        let Some(prefix) = dir.parent().filter(|p| !never_whole(p, home)) else {
            continue;
        };
        match dir.file_name().and_then(|n| n.to_str()) {
            Some("shims") => out.push(prefix.to_owned()),
            Some("bin") if !prefix.starts_with("/usr") => {
                for lib in ["lib", "lib64", "libexec"] {
                    out.push(prefix.join(lib));
                }
                // rustup's proxies in ~/.cargo/bin run toolchains from ~/.rustup.
                if prefix.file_name().is_some_and(|n| n == ".cargo")
                    && let Some(rustup) = prefix.parent().map(|h| h.join(".rustup"))
                {
                    out.push(rustup);
                }
            }
            _ => {}
        }
    }
    out.retain(|p| p.exists());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_home_and_root_are_never_readable_whole() {
        let home = Path::new("/home/u");
        assert!(never_whole(Path::new("/"), Some(home)));
        assert!(never_whole(Path::new("/home"), Some(home)));
        assert!(never_whole(Path::new("/home/u"), Some(home)));
        assert!(!never_whole(Path::new("/home/u/.pyenv"), Some(home)));
        assert!(never_whole(Path::new("relative"), Some(home)));
    }

    #[test]
    fn toolchains_follow_path_without_opening_the_home() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        for d in [
            ".pyenv/shims",
            ".pyenv/versions/3.11/bin",
            ".local/bin",
            ".local/lib",
            "bin",
        ] {
            std::fs::create_dir_all(home.join(d)).unwrap();
        }
        std::fs::create_dir_all(home.join(".local/share/keyrings")).unwrap();
        let path = std::env::join_paths([
            home.join(".pyenv/shims"),
            home.join(".local/bin"),
            home.join("bin"),
            home.clone(),
        ])
        .unwrap();
        let home = canonical(&home).unwrap();
        let got = toolchains(path.to_str(), Some(&home));
        assert!(got.contains(&home.join(".pyenv")), "{got:?}");
        assert!(got.contains(&home.join(".local/lib")), "{got:?}");
        assert!(got.contains(&home.join("bin")), "{got:?}");
        assert!(!got.contains(&home), "{got:?}");
        assert!(
            !got.iter()
                .any(|p| p.ends_with("share") || p.ends_with(".local")),
            "{got:?}"
        );
    }

    #[test]
    fn a_node_modules_install_is_readable_whole() {
        let t = tempfile::tempdir().unwrap();
        let nm = t.path().join("node_modules");
        let pkg = nm.join("@anthropic-ai/claude-code");
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::write(pkg.join("cli.js"), "").unwrap();
        let got = agent_install(&pkg.join("cli.js"), None);
        assert!(got.contains(&canonical(&nm).unwrap()), "{got:?}");
    }
}
