//! The staleness verdict shared by `replay` and `verify-cassettes`
//! (spec/fingerprint.md §3).
//!
//! CONTRACT (used by replay/verify/rehash while this module is being built):
//! `compute(&cassette, session_override)` returns every finding and note; the
//! gating rules (`gates_bare_replay`, `is_skill_drift`) live here too, so no
//! caller re-derives which classes fail what.

use std::path::Path;

use serde::Serialize;

use crate::cassette::Cassette;

/// Class of a staleness finding (the strings are cowork-harness's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FindingClass {
    Baseline,
    Skill,
    SharedRoot,
    Format,
    UnverifiableBaseline,
    UnverifiableSkill,
    ResolvedTier,
    UnverifiableTier,
    PromptAssets,
    UnverifiablePromptAssets,
}

impl FindingClass {
    /// A bare `replay` (no flags) fails only on this class.
    pub fn gates_bare_replay(self) -> bool {
        matches!(self, FindingClass::UnverifiableSkill)
    }

    /// Classes that `--fail-on-skill-drift` (and `--reassert`) turn into failures.
    pub fn is_skill_drift(self) -> bool {
        matches!(
            self,
            FindingClass::Skill | FindingClass::SharedRoot | FindingClass::UnverifiableSkill
        )
    }
}

/// One staleness finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub class: FindingClass,
    /// The full human message (cowork-harness wording), ending with the fix.
    pub message: String,
}

/// Findings plus informational notes (`<kind>: <text>`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Staleness {
    pub findings: Vec<Finding>,
    pub notes: Vec<String>,
}

/// Computes the staleness of `cassette` against the live skill tree. Skill
/// roots come from the cassette's `scenario.session` resolved against the
/// cassette's directory, or from `session_override` (`--session FILE`).
pub fn compute(_cassette: &Cassette, _session_override: Option<&Path>) -> Staleness {
    // Placeholder until the fingerprint module lands: no findings.
    Staleness::default()
}

/// `skill dirs not resolvable <where><detail> — cannot verify skill
/// staleness (can't verify ⇒ not green)` for sources that produced no hash.
pub fn unresolvable_message(
    sources: &super::ResolvedSources,
    session_override: Option<&Path>,
) -> String {
    use super::SourceFailure;
    let place = match session_override {
        Some(p) => format!("from the session given with --session ({})", p.display()),
        None => "from the cassette location".to_owned(),
    };
    let detail = match &sources.failure {
        Some(SourceFailure::NotFound(p)) => {
            let hint = if session_override.is_none() {
                " (if the cassette moved, point at its session with --session <file>)"
            } else {
                ""
            };
            format!(" — no session file at {}{hint}", p.display())
        }
        Some(SourceFailure::Unreadable(p, msg)) => {
            format!(" — the session at {} could not be read or parsed: {msg}", p.display())
        }
        Some(SourceFailure::DeclaredDirsMissing { session, declared, missing }) => format!(
            " — the session at {} declares {declared} skill dir(s) and none exist ({})",
            session.display(),
            missing.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        ),
        Some(SourceFailure::Inline) => " — an inline scenario carries no session file to resolve".to_owned(),
        None => " — the session resolved and its dirs exist, but some could not be READ, so the hash was dropped as unreliable".to_owned(),
    };
    format!(
        "skill dirs not resolvable {place}{detail} — cannot verify skill staleness (can't verify ⇒ not green)"
    )
}
