//! Path arithmetic, in one place: lexical normalisation, resolution against a
//! base, relative paths, separators and containment. Each variant is named for
//! what it does, because the differences matter (whether a `..` above the
//! start is kept, whether symlinks are resolved, which separators come out).
//!
//! Nothing here touches the file system except [`canonical_lenient`] and
//! [`relative_posix`] (which resolve symlinks of what exists) and the
//! `*_cwd` variants (which read the current directory).
//!
//! The variants: `lexical` / `lexical_clamped` (a `..` above the start kept /
//! dropped), `resolve` / `resolve_cwd` (Node's `path.resolve`),
//! `canonical_lenient` and `relative_posix` (real paths, for what a cassette
//! records), `relative_lexical`, `posix_normalize_abs` (recorded POSIX paths),
//! `forward_slashes` / `to_posix`, and `stays_inside`. Run-root placeholders
//! are `mask::roots`, not here.

use std::borrow::Cow;
use std::path::{Component, Path, PathBuf};

/// Lexical resolution: `.` dropped, `..` collapsed, no symlinks followed. A
/// `..` with nothing left to pop is kept (`../x` stays `../x`; `/..` is
/// `/..`).
pub fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Like [`lexical`], but a `..` with nothing left to pop is dropped (`/..` is
/// `/`, as POSIX resolves it; `../x` becomes `x`).
pub fn lexical_clamped(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Node's `path.resolve(base, p)`: `p` against `base`, lexically normalised
/// ([`lexical`]).
pub fn resolve(base: &Path, p: &Path) -> PathBuf {
    lexical(&base.join(p))
}

/// Node's `path.resolve(p)`: absolute against the current directory, `.` and
/// `..` collapsed lexically ([`lexical`]).
pub fn resolve_cwd(p: &Path) -> PathBuf {
    lexical(&std::path::absolute(p).unwrap_or_else(|_| p.to_owned()))
}

/// Absolute against the current directory, `..` removed lexically and
/// clamped at the root ([`lexical_clamped`]), so relative paths computed from
/// it come out short.
pub fn resolve_cwd_clamped(p: &Path) -> PathBuf {
    lexical_clamped(&std::path::absolute(p).unwrap_or_else(|_| p.to_owned()))
}

/// The real path of `p`, which need not exist: the deepest existing ancestor
/// is canonicalised (symlinks resolved) and the rest appended, then `..`
/// removed lexically ([`lexical_clamped`]).
pub fn canonical_lenient(p: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(p) {
        return real;
    }
    // Canonicalise the deepest existing ancestor, then append the rest.
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_owned());
    let mut tail = Vec::new();
    let mut cur = abs.as_path();
    while let Some(parent) = cur.parent() {
        if let Some(name) = cur.file_name() {
            tail.push(name.to_owned());
        }
        if let Ok(real) = std::fs::canonicalize(parent) {
            let mut out = real;
            for t in tail.iter().rev() {
                out.push(t);
            }
            return lexical_clamped(&out);
        }
        cur = parent;
    }
    lexical_clamped(&abs)
}

/// `target` relative to directory `base`, both taken as real paths
/// ([`canonical_lenient`]), with POSIX separators; `.` when they are the same.
pub fn relative_posix(target: &Path, base: &Path) -> String {
    let t = canonical_lenient(target);
    let b = canonical_lenient(base);
    let tc: Vec<_> = t.components().collect();
    let bc: Vec<_> = b.components().collect();
    let common = tc.iter().zip(&bc).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = std::iter::repeat_n("..".to_owned(), bc.len() - common).collect();
    parts.extend(
        tc[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

/// `to` relative to the directory `from`, component by component (both
/// already absolute and normalised; nothing is resolved); empty when equal.
pub fn relative_lexical(from: &Path, to: &Path) -> PathBuf {
    let f: Vec<Component<'_>> = from.components().collect();
    let t: Vec<Component<'_>> = to.components().collect();
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..f.len() {
        out.push("..");
    }
    for c in &t[common..] {
        out.push(c.as_os_str());
    }
    out
}

/// POSIX `path.normalize` of an absolute `/`-separated path (as recorded in
/// a cassette, whatever the host); `None` for a relative one. A trailing `/`
/// is kept.
pub fn posix_normalize_abs(p: &str) -> Option<String> {
    if !p.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    let mut out = format!("/{}", parts.join("/"));
    if p.ends_with('/') && out != "/" {
        out.push('/');
    }
    Some(out)
}

/// A recorded path with Windows separators turned into `/` (cassette paths
/// are compared in POSIX form).
pub fn forward_slashes(p: &str) -> Cow<'_, str> {
    if p.contains('\\') {
        Cow::Owned(p.replace('\\', "/"))
    } else {
        Cow::Borrowed(p)
    }
}

/// A native path's text with `/` separators.
pub fn to_posix(p: &Path) -> String {
    p.to_string_lossy().replace('\\', "/")
}

/// True when `rel` is relative and stays inside its root lexically (no
/// prefix, no root, never more `..` than names before it).
pub fn stays_inside(rel: &str) -> bool {
    let p = Path::new(rel);
    if p.is_absolute() {
        return false;
    }
    let mut depth: i64 = 0;
    for c in p.components() {
        match c {
            Component::Normal(_) => depth += 1,
            Component::ParentDir => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            Component::CurDir => {}
            _ => return false,
        }
    }
    true
}

/// Claude Code's project-directory slug of a path: every character that is
/// not an ASCII letter or digit becomes `-`.
pub fn slug(path: &str) -> String {
    path.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_variants_differ_only_above_the_start() {
        assert_eq!(lexical(Path::new("a/./b/../c")), PathBuf::from("a/c"));
        assert_eq!(lexical(Path::new("../x")), PathBuf::from("../x"));
        assert_eq!(lexical(Path::new("/..")), PathBuf::from("/.."));
        assert_eq!(
            lexical_clamped(Path::new("a/./b/../c")),
            PathBuf::from("a/c")
        );
        assert_eq!(lexical_clamped(Path::new("../x")), PathBuf::from("x"));
        assert_eq!(lexical_clamped(Path::new("/..")), PathBuf::from("/"));
        assert_eq!(
            resolve(Path::new("/a/b"), Path::new("../c")),
            PathBuf::from("/a/c")
        );
        assert_eq!(
            resolve(Path::new("/a/b"), Path::new("/abs")),
            PathBuf::from("/abs")
        );
        assert!(resolve_cwd(Path::new("x/../y")).ends_with("y"));
        assert!(resolve_cwd_clamped(Path::new("x/../y")).is_absolute());
    }

    #[test]
    fn relative_paths() {
        assert_eq!(
            relative_lexical(Path::new("/a/b/scenarios"), Path::new("/a/sessions/x.yaml")),
            PathBuf::from("../../sessions/x.yaml")
        );
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("sessions")).unwrap();
        std::fs::write(t.path().join("sessions/s.yaml"), "").unwrap();
        assert_eq!(
            relative_posix(
                &t.path().join("sessions/s.yaml"),
                &t.path().join("cassettes/new")
            ),
            "../../sessions/s.yaml"
        );
        assert_eq!(relative_posix(t.path(), t.path()), ".");
    }

    #[test]
    fn posix_forms() {
        assert_eq!(
            posix_normalize_abs("/a/./b/../c/").as_deref(),
            Some("/a/c/")
        );
        assert_eq!(posix_normalize_abs("/..").as_deref(), Some("/"));
        assert_eq!(posix_normalize_abs("a/b"), None);
        assert_eq!(forward_slashes(r"a\b/c"), "a/b/c");
        assert!(matches!(forward_slashes("a/b"), Cow::Borrowed(_)));
        assert_eq!(to_posix(Path::new("a/b")), "a/b");
    }

    #[test]
    fn containment_is_lexical() {
        assert!(stays_inside("a/../b") && stays_inside("./a"));
        assert!(!stays_inside("../x") && !stays_inside("/etc") && !stays_inside("a/../../b"));
    }
}
