//! Work-root staging at the protocol tier (docs/spec/record.md §1.4): the managed
//! config dir with its two settings files and skills, `outputs/`, `uploads/`,
//! connected folders and projects copied (never dereferencing symlinks, with
//! realpath containment), local plugins copied under `.local-plugins/`.
//!
//! Skills under test are copied into `<config>/skills/<basename>` and, so
//! the agent sees them whichever config branch it takes, into
//! `<work>/.claude/skills/<basename>` (a project skill; never part of a
//! manifest, which walks only the user-visible roots and `uploads`). When a
//! skill dir is inside a git work tree only its git-tracked files are copied
//! (`REEL_GITSET=0` / `COWORK_HARNESS_GITSET=0` disables).

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::scenario::session_keys::SessionKeys;

/// Names a connected folder may never take.
const RESERVED: &[&str] = &[
    "outputs",
    "uploads",
    ".host-home",
    ".auto-memory",
    ".remote-plugins",
    ".local-plugins",
    ".projects",
    ".claude",
];

/// One staged mount.
#[derive(Debug, Clone, PartialEq)]
pub struct Mount {
    /// Work-root-relative POSIX path.
    pub mount_path: String,
    pub source: PathBuf,
    /// `r`, `rw` or `rwd`.
    pub mode: String,
    pub kind: MountKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MountKind {
    Upload,
    Folder,
    Project,
    Plugin,
}

/// A staged run directory.
#[derive(Debug, Clone)]
pub struct Staged {
    pub run_dir: PathBuf,
    pub work_root: PathBuf,
    pub config_dir: PathBuf,
    pub home: PathBuf,
    pub mounts: Vec<Mount>,
    /// `["outputs", <folder and project mounts in order>]`.
    pub user_visible_roots: Vec<String>,
    /// Mounts whose bodies are never inlined (`mode: r` folders, projects).
    pub readonly_roots: Vec<String>,
    /// A plugin mount exists (protocol-tier divergence signal).
    pub plugin_divergence: bool,
    pub notices: Vec<String>,
}

/// Why staging failed.
#[derive(Debug, thiserror::Error)]
pub enum StageError {
    #[error("stage `{path}`: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Invalid(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StageError + '_ {
    move |source| StageError::Io {
        path: path.to_owned(),
        source,
    }
}

fn safe_segment(name: &str) -> Result<(), StageError> {
    if name.is_empty()
        || name == "."
        || name == ".."
        || name
            .chars()
            .any(|c| matches!(c, '/' | '\\' | ':') || c.is_control())
    {
        return Err(StageError::Invalid(format!(
            "`{name}` is not a safe single path segment for a mount name"
        )));
    }
    Ok(())
}

fn basename(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The host-loop folder naming: basename unless taken, else prepend parent
/// segments joined with `--` until free.
pub fn folder_names(sources: &[PathBuf]) -> Result<Vec<String>, StageError> {
    let mut taken: Vec<String> = RESERVED.iter().map(|s| s.to_string()).collect();
    let mut names = Vec::new();
    for src in sources {
        let real = fs::canonicalize(src).unwrap_or_else(|_| src.clone());
        let segs: Vec<String> = real
            .components()
            .filter_map(|c| match c {
                std::path::Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect();
        let mut chosen = None;
        for n in 1..=segs.len() {
            let candidate = segs[segs.len() - n..].join("--");
            if !taken.contains(&candidate) {
                chosen = Some(candidate);
                break;
            }
        }
        let Some(name) = chosen else {
            return Err(StageError::Invalid(format!(
                "connected folder `{}` cannot be given a unique mount name",
                src.display()
            )));
        };
        safe_segment(&name)?;
        taken.push(name.clone());
        names.push(name);
    }
    Ok(names)
}

/// Creates `run_dir/{work,config,home}` and stages everything the session
/// declares. `run_dir` must not exist or be empty.
pub fn stage(run_dir: &Path, session: &SessionKeys) -> Result<Staged, StageError> {
    let work_root = run_dir.join("work");
    let config_dir = run_dir.join("config");
    let home = run_dir.join("home");
    for d in [
        work_root.join("outputs"),
        work_root.join("uploads"),
        config_dir.join("skills"),
        config_dir.join("plugins"),
        home.clone(),
    ] {
        fs::create_dir_all(&d).map_err(io(&d))?;
    }
    let mounts = plan_mounts(session)?;
    let mut notices = Vec::new();
    write_settings(&config_dir)?;
    stage_skills(session, &config_dir, &work_root, &mut notices)?;
    copy_mounts(&work_root, &mounts)?;

    let user_visible_roots: Vec<String> = std::iter::once("outputs".to_owned())
        .chain(
            mounts
                .iter()
                .filter(|m| matches!(m.kind, MountKind::Folder | MountKind::Project))
                .map(|m| m.mount_path.clone()),
        )
        .collect();
    let readonly_roots = mounts
        .iter()
        .filter(|m| m.kind == MountKind::Project || (m.kind == MountKind::Folder && m.mode == "r"))
        .map(|m| m.mount_path.clone())
        .collect();
    let plugin_divergence = mounts.iter().any(|m| m.kind == MountKind::Plugin);
    if plugin_divergence {
        notices.push(
            "plugins are staged but not loaded at the protocol tier (l0_plugin_divergence); \
             assert `allow_l0_plugin_divergence: true` to accept"
                .into(),
        );
    }
    Ok(Staged {
        run_dir: run_dir.to_owned(),
        work_root,
        config_dir,
        home,
        mounts,
        user_visible_roots,
        readonly_roots,
        plugin_divergence,
        notices,
    })
}

impl Mount {
    /// A mount the agent may only read.
    fn read_only(mount_path: String, source: &Path, kind: MountKind) -> Mount {
        Mount {
            mount_path,
            source: source.to_owned(),
            mode: "r".into(),
            kind,
        }
    }
}

/// Every mount the session declares, in staging order (uploads, folders,
/// projects, plugins), each at a distinct work-root path. An unsafe upload
/// name is reported before missing sources, which are reported all at once.
fn plan_mounts(session: &SessionKeys) -> Result<Vec<Mount>, StageError> {
    let mut mounts = Vec::new();
    for u in session.uploads.iter().filter(|u| u.is_file()) {
        let name = basename(u);
        safe_segment(&name)?;
        mounts.push(Mount::read_only(
            format!("uploads/{name}"),
            u,
            MountKind::Upload,
        ));
    }
    check_sources_exist(session)?;
    let folder_sources: Vec<PathBuf> = session.folders.iter().map(|f| f.from.clone()).collect();
    for (f, name) in session.folders.iter().zip(folder_names(&folder_sources)?) {
        mounts.push(Mount {
            mount_path: name,
            source: f.from.clone(),
            mode: f.mode.clone(),
            kind: MountKind::Folder,
        });
    }
    for (uuid, from) in &session.projects {
        safe_segment(uuid)?;
        mounts.push(Mount::read_only(
            format!(".projects/{uuid}"),
            from,
            MountKind::Project,
        ));
    }
    for p in &session.local_plugins {
        let name = basename(p);
        safe_segment(&name)?;
        mounts.push(Mount::read_only(
            format!(".local-plugins/marketplaces/local-desktop-app-uploads/{name}"),
            p,
            MountKind::Plugin,
        ));
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(m) = mounts.iter().find(|m| !seen.insert(m.mount_path.clone())) {
        return Err(StageError::Invalid(format!(
            "two sources would be staged at `{}`; rename one",
            m.mount_path
        )));
    }
    Ok(mounts)
}

/// Every source the session names exists, else one error listing them all.
fn check_sources_exist(session: &SessionKeys) -> Result<(), StageError> {
    let mut missing = Vec::new();
    for u in session.uploads.iter().filter(|u| !u.is_file()) {
        missing.push(format!("upload `{}` is not a file", u.display()));
    }
    let dirs = [
        (
            "connected folder",
            session.folders.iter().map(|f| &f.from).collect::<Vec<_>>(),
        ),
        ("project", session.projects.iter().map(|p| &p.1).collect()),
        ("local plugin", session.local_plugins.iter().collect()),
        ("skill dir", session.skills_local.iter().collect()),
    ];
    for (what, paths) in dirs {
        for p in paths.into_iter().filter(|p| !p.is_dir()) {
            missing.push(format!("{what} `{}` is not a directory", p.display()));
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    Err(StageError::Invalid(format!(
        "the session names sources that do not exist:\n  {}",
        missing.join("\n  ")
    )))
}

/// Both settings files the agent may read, with the same JSON.
fn write_settings(config_dir: &Path) -> Result<(), StageError> {
    let settings = json!({
        "localAgentModeTrustedFolders": [],
        "autoMountFolders": false,
    });
    let text = serde_json::to_string_pretty(&settings).unwrap_or_default();
    for f in ["settings.json", "cowork_settings.json"] {
        let p = config_dir.join(f);
        fs::write(&p, &text).map_err(io(&p))?;
    }
    crate::agent::seed_agent_config(config_dir)
        .map_err(io(&config_dir.join(crate::agent::AGENT_CONFIG_FILE)))
}

/// Copies each skill under test to the config's skills and the work root's
/// project skills (see the module docs).
fn stage_skills(
    session: &SessionKeys,
    config_dir: &Path,
    work_root: &Path,
    notices: &mut Vec<String>,
) -> Result<(), StageError> {
    for (source, name, filter) in skill_file_sets(session, notices)? {
        for dest in [
            config_dir.join("skills").join(&name),
            work_root.join(".claude/skills").join(&name),
        ] {
            copy_tree(&source, &dest, filter.as_ref())?;
        }
    }
    Ok(())
}

/// A skill to stage: its source, its folder name, its git file set.
type SkillFileSet = (PathBuf, String, Option<std::collections::HashSet<PathBuf>>);

/// Each local skill's folder name (unique, safe) and git file set: every
/// refusal staging the skills makes, without writing.
fn skill_file_sets(
    session: &SessionKeys,
    notices: &mut Vec<String>,
) -> Result<Vec<SkillFileSet>, StageError> {
    let mut skill_names = std::collections::HashSet::new();
    let mut out = Vec::new();
    for s in &session.skills_local {
        let name = basename(s);
        safe_segment(&name)?;
        if !skill_names.insert(name.clone()) {
            return Err(StageError::Invalid(format!(
                "two skill dirs share the basename `{name}`; rename one"
            )));
        }
        let filter = git_filter(s, notices)?;
        out.push((s.clone(), name, filter));
    }
    Ok(out)
}

/// Every refusal [`stage`] would make from the session alone (mount plan,
/// missing sources, skill names, a skill in a git work tree with no tracked
/// file), writing nothing: what a recording checks before it starts and
/// what `reel lint` reports (`crate::record::scenario_refusal`).
pub fn check(session: &SessionKeys) -> Result<(), StageError> {
    plan_mounts(session)?;
    skill_file_sets(session, &mut Vec::new())?;
    Ok(())
}

/// Copies each mount's source to its place under the work root, refusing a
/// place a symlink would lead outside it.
fn copy_mounts(work_root: &Path, mounts: &[Mount]) -> Result<(), StageError> {
    let real_root = fs::canonicalize(work_root).map_err(io(work_root))?;
    for m in mounts {
        let dest = work_root.join(&m.mount_path);
        let parent = dest.parent().unwrap_or(work_root).to_owned();
        fs::create_dir_all(&parent).map_err(io(&parent))?;
        let real_parent = fs::canonicalize(&parent).map_err(io(&parent))?;
        if !real_parent.starts_with(&real_root) {
            return Err(StageError::Invalid(format!(
                "mount `{}` escapes the work root through a symlink",
                m.mount_path
            )));
        }
        let meta = fs::symlink_metadata(&m.source).map_err(io(&m.source))?;
        if meta.is_dir() {
            copy_tree(&m.source, &dest, None)?;
        } else {
            fs::copy(&m.source, &dest).map_err(io(&m.source))?;
        }
    }
    Ok(())
}

/// The git-tracked file set of `dir` (relative paths), when it lives in a git
/// work tree and the filter is not disabled.
fn git_filter(
    dir: &Path,
    notices: &mut Vec<String>,
) -> Result<Option<std::collections::HashSet<PathBuf>>, StageError> {
    let disabled = ["REEL_GITSET", "COWORK_HARNESS_GITSET"]
        .iter()
        .any(|k| std::env::var(k).is_ok_and(|v| v == "0"));
    if disabled {
        return Ok(None);
    }
    let Ok(repo) = git2::Repository::discover(dir) else {
        return Ok(None);
    };
    let Some(workdir) = repo.workdir() else {
        return Ok(None);
    };
    let (Ok(real_dir), Ok(real_wd)) = (fs::canonicalize(dir), fs::canonicalize(workdir)) else {
        return Ok(None);
    };
    let Ok(rel) = real_dir.strip_prefix(&real_wd) else {
        return Ok(None);
    };
    let index = repo
        .index()
        .map_err(|e| StageError::Invalid(format!("read git index of `{}`: {e}", dir.display())))?;
    let mut files = std::collections::HashSet::new();
    for entry in index.iter() {
        let path = PathBuf::from(String::from_utf8_lossy(&entry.path).into_owned());
        if let Ok(inside) = path.strip_prefix(rel) {
            files.insert(inside.to_owned());
        }
    }
    if files.is_empty() {
        return Err(StageError::Invalid(format!(
            "skill dir `{}` is inside a git work tree but has no tracked files",
            dir.display()
        ))
        .with_hint_text("commit the skill, or set REEL_GITSET=0 to copy the raw tree"));
    }
    let mut total = 0usize;
    count_files(dir, &mut total);
    if total > files.len() {
        notices.push(format!(
            "skill `{}`: {} untracked file(s) not staged (git file-set mode)",
            dir.display(),
            total - files.len()
        ));
    }
    Ok(Some(files))
}

impl StageError {
    fn with_hint_text(self, hint: &str) -> StageError {
        match self {
            StageError::Invalid(m) => StageError::Invalid(format!("{m} ({hint})")),
            other => other,
        }
    }
}

fn count_files(dir: &Path, total: &mut usize) {
    for e in fs::read_dir(dir).into_iter().flatten().flatten() {
        match e.file_type() {
            Ok(t) if t.is_dir() => count_files(&e.path(), total),
            Ok(_) => *total += 1,
            Err(_) => {}
        }
    }
}

/// Recursive copy that never dereferences symlinks (they are recreated as
/// symlinks). `filter` keeps only those relative paths.
fn copy_tree(
    src: &Path,
    dest: &Path,
    filter: Option<&std::collections::HashSet<PathBuf>>,
) -> Result<(), StageError> {
    copy_rec(src, dest, Path::new(""), filter)
}

fn copy_rec(
    src: &Path,
    dest: &Path,
    rel: &Path,
    filter: Option<&std::collections::HashSet<PathBuf>>,
) -> Result<(), StageError> {
    fs::create_dir_all(dest).map_err(io(dest))?;
    let mut entries: Vec<_> = fs::read_dir(src)
        .map_err(io(src))?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name();
        let from = e.path();
        let to = dest.join(&name);
        let rel_child = rel.join(&name);
        let meta = fs::symlink_metadata(&from).map_err(io(&from))?;
        if meta.is_dir() {
            if filter.is_some_and(|f| !f.iter().any(|p| p.starts_with(&rel_child))) {
                continue;
            }
            copy_rec(&from, &to, &rel_child, filter)?;
        } else {
            if filter.is_some_and(|f| !f.contains(&rel_child)) {
                continue;
            }
            if meta.file_type().is_symlink() {
                let target = fs::read_link(&from).map_err(io(&from))?;
                std::os::unix::fs::symlink(target, &to).map_err(io(&to))?;
            } else {
                fs::copy(&from, &to).map_err(io(&from))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folder_names_avoid_reserved_and_taken_names() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("x/outputs");
        let b = t.path().join("y/data");
        let c = t.path().join("z/data");
        for d in [&a, &b, &c] {
            fs::create_dir_all(d).unwrap();
        }
        let names = folder_names(&[a, b, c]).unwrap();
        assert_eq!(names, ["x--outputs", "data", "z--data"]);
    }

    #[test]
    fn stages_uploads_folders_and_symlinks_without_following_them() {
        let t = tempfile::tempdir().unwrap();
        let src = t.path().join("src/proj");
        fs::create_dir_all(src.join("sub")).unwrap();
        fs::write(src.join("sub/a.txt"), "a").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", src.join("link")).unwrap();
        let up = t.path().join("report.pdf");
        fs::write(&up, b"%PDF").unwrap();
        let session = SessionKeys {
            uploads: vec![up],
            folders: vec![crate::scenario::session_keys::Folder {
                from: src,
                mode: "r".into(),
            }],
            ..SessionKeys::default()
        };
        let s = stage(&t.path().join("run"), &session).unwrap();
        assert_eq!(s.user_visible_roots, ["outputs", "proj"]);
        assert_eq!(s.readonly_roots, ["proj"]);
        assert!(s.work_root.join("uploads/report.pdf").is_file());
        assert!(s.work_root.join("proj/sub/a.txt").is_file());
        let link = fs::symlink_metadata(s.work_root.join("proj/link")).unwrap();
        assert!(link.file_type().is_symlink());
    }

    #[test]
    fn missing_sources_are_listed_together_in_session_order() {
        let t = tempfile::tempdir().unwrap();
        let gone = |name: &str| t.path().join(name);
        let session = SessionKeys {
            uploads: vec![gone("u.pdf")],
            folders: vec![crate::scenario::session_keys::Folder {
                from: gone("folder"),
                mode: "r".into(),
            }],
            projects: vec![("p1".into(), gone("project"))],
            local_plugins: vec![gone("plugin")],
            skills_local: vec![gone("skill")],
            ..SessionKeys::default()
        };
        let err = stage(&t.path().join("run"), &session)
            .unwrap_err()
            .to_string();
        let at = |name: &str| gone(name).display().to_string();
        assert_eq!(
            err,
            format!(
                "the session names sources that do not exist:\n  \
                 upload `{}` is not a file\n  \
                 connected folder `{}` is not a directory\n  \
                 project `{}` is not a directory\n  \
                 local plugin `{}` is not a directory\n  \
                 skill dir `{}` is not a directory",
                at("u.pdf"),
                at("folder"),
                at("project"),
                at("plugin"),
                at("skill"),
            )
        );
    }

    #[test]
    fn two_sources_at_one_mount_path_are_refused() {
        let t = tempfile::tempdir().unwrap();
        let mut uploads = Vec::new();
        for dir in ["a", "b"] {
            fs::create_dir_all(t.path().join(dir)).unwrap();
            let file = t.path().join(dir).join("same.txt");
            fs::write(&file, "x").unwrap();
            uploads.push(file);
        }
        let session = SessionKeys {
            uploads,
            ..SessionKeys::default()
        };
        let err = stage(&t.path().join("run"), &session)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "two sources would be staged at `uploads/same.txt`; rename one"
        );
    }
}
