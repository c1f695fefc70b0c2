//! Writing an import: a file whose bytes are already what it would get is
//! left alone (so re-importing an unchanged case changes nothing, mtimes
//! included); every other file goes through the one atomic writer.

use std::path::{Path, PathBuf};

use super::Problem;

#[derive(Debug, Default)]
pub struct Written {
    pub written: Vec<PathBuf>,
    pub unchanged: Vec<PathBuf>,
}

/// Writes `files` (path, text), creating parent directories.
pub fn all(files: &[(PathBuf, String)]) -> Result<Written, Problem> {
    let mut w = Written::default();
    for (path, text) in files {
        if std::fs::read(path).is_ok_and(|b| b == text.as_bytes()) {
            w.unchanged.push(path.clone());
            continue;
        }
        one(path, text)?;
        w.written.push(path.clone());
    }
    Ok(w)
}

fn one(path: &Path, text: &str) -> Result<(), Problem> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Problem::io(dir, "create the directory", e))?;
    }
    crate::atomic::write_atomic(path, text.as_bytes()).map_err(|e| Problem::io(path, "write", e))
}
