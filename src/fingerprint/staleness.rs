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
