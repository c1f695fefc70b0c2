//! Text the skill itself publishes: a finding whose text is also in the
//! skill tree the cassette's session names is the skill's own words echoed by
//! the run (a product name, a support address, a documentation domain), not
//! the recording machine's data (reel's departure from cowork-harness).
//!
//! The skill tree is the one the fingerprint walks
//! ([`crate::fingerprint::live_for_cassette_detailed`]: the same session
//! resolution, `.cowork-hashignore`, and in git mode only tracked files), and
//! a text counts as published when the SAME detector finds the SAME text in
//! one of its files, so a sub-string never waives a longer match.
//!
//! Only classes whose presence in published prose says nothing about the
//! recording machine are waived ([`Class::can_be_published`]); a secret, a
//! personal number or a host detail found in a skill file is a leak of the
//! skill tree itself and stays a failing finding.

use std::collections::HashMap;

use super::detect::Class;
use super::scan::{Finding, plain_text_findings};
use crate::cassette::Cassette;
use crate::fingerprint::{self, EntryKind};

/// A skill file larger than this is not read for published text (a skill's
/// prose and scripts are far smaller; a bundled data file says nothing).
const MAX_FILE_BYTES: u64 = 1 << 20;
/// At most this many files are read (a tree this large is not a skill).
const MAX_FILES: usize = 5_000;

impl Class {
    /// Whether a finding of this class may be waived as text the skill
    /// publishes: identity-like text (emails, domains, money figures, home
    /// paths) that a skill's documentation legitimately names. Never a
    /// secret, personal data, a host detail, an inventory, or a body that
    /// was not scanned.
    pub fn can_be_published(self) -> bool {
        matches!(
            self,
            Class::Email | Class::Domain | Class::Currency | Class::Path
        )
    }
}

/// Marks each finding whose text the cassette's skill tree publishes
/// ([`Finding::published_by`]). Reads the skill tree only when some finding
/// could be waived; a tree that cannot be resolved waives nothing.
pub fn mark(findings: &mut [Finding], cassette: &Cassette, session: Option<&std::path::Path>) {
    if !findings
        .iter()
        .any(|f| f.is_real() && f.cls.can_be_published())
    {
        return;
    }
    let published = published_texts(cassette, session);
    for f in findings.iter_mut().filter(|f| f.cls.can_be_published()) {
        if let Some(file) = published.get(&key(f.cls, f.kind, &f.sample)) {
            f.published_by = Some(file.clone());
        }
    }
}

/// Emails and domains compare case-insensitively (as they resolve); paths
/// and figures exactly.
fn key(cls: Class, kind: &str, sample: &str) -> (Class, String, String) {
    let text = match cls {
        Class::Email | Class::Domain => sample.to_ascii_lowercase(),
        _ => sample.to_owned(),
    };
    (cls, kind.to_owned(), text)
}

/// Every waivable finding of the skill tree's text files, each with the
/// first file (relative to the session's directory) that holds it.
fn published_texts(
    cassette: &Cassette,
    session: Option<&std::path::Path>,
) -> HashMap<(Class, String, String), String> {
    let mut out = HashMap::new();
    let Ok(live) = fingerprint::live_for_cassette_detailed(cassette, session) else {
        return out;
    };
    let Some(snapshot) = live.snapshot else {
        return out;
    };
    let files = snapshot
        .entries
        .iter()
        .filter(|e| matches!(e.kind, EntryKind::File { .. }))
        .take(MAX_FILES);
    for entry in files {
        let Some(root) = snapshot.roots.get(entry.root) else {
            continue;
        };
        let path = root.join(&entry.path);
        let small = std::fs::metadata(&path).is_ok_and(|m| m.len() <= MAX_FILE_BYTES);
        let Some(text) = small
            .then(|| std::fs::read(&path).ok())
            .flatten()
            .and_then(|b| String::from_utf8(b).ok())
        else {
            continue;
        };
        let shown = fingerprint::relative_path(&live.sources.base_dir, &path);
        for f in plain_text_findings(&text, &shown) {
            if f.cls.can_be_published() {
                out.entry(key(f.cls, f.kind, &f.sample))
                    .or_insert_with(|| shown.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::detect::ALL_CLASSES;

    /// Every class is decided on purpose: a new class is not waivable until
    /// someone adds it here.
    #[test]
    fn only_identity_like_classes_can_be_published() {
        let waivable: Vec<&str> = ALL_CLASSES
            .iter()
            .filter(|c| c.can_be_published())
            .map(|c| c.as_str())
            .collect();
        assert_eq!(waivable, ["email", "currency", "domain", "path"]);
    }

    #[test]
    fn a_skill_file_is_read_with_every_detector() {
        let text = "Mail help@acmewidgets.io; token ghp_Q7xQ7xQ7xQ7xQ7xQ7xQ7xQ7xQ7xQ7xQ7xQ7xQ7xQ7x";
        let found: Vec<Class> = plain_text_findings(text, "SKILL.md")
            .iter()
            .map(|f| f.cls)
            .collect();
        assert!(found.contains(&Class::Email), "{found:?}");
        assert!(found.contains(&Class::Secret), "{found:?}");
        // Only the email (and its domain) could ever be waived.
        assert!(!Class::Secret.can_be_published());
    }
}
