//! Skill-tree fingerprints and the staleness verdict (spec/fingerprint.md).
//!
//! One walk of the skill roots produces a snapshot; every digest (`skillHash`
//! in both formats, `contentSig`, `fileSigs`, `sharedHash`) derives from that
//! snapshot. [`staleness`] compares a cassette's recorded fingerprint with the
//! live tree.

pub mod staleness;

use std::path::Path;

use crate::cassette::{Cassette, FingerprintRecord};

/// The two digest formats (spec/fingerprint.md §0): `Legacy` (v9–v11
/// cassettes) and `Jcs1` (v12, `hashFormat: "jcs1"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HashFormat {
    Legacy,
    Jcs1,
}

/// The live fingerprint of a cassette's skill roots in both formats, derived
/// from ONE walk (so they cannot disagree).
#[derive(Debug, Clone, PartialEq)]
pub struct LiveFingerprints {
    /// What a pre-epoch recording would store (`skillHash` legacy, pre-epoch
    /// `contentSig`); `hashFormat` absent.
    pub legacy: FingerprintRecord,
    /// What a v12 recording stores today (`hashFormat: "jcs1"`).
    pub jcs1: FingerprintRecord,
}

/// Why the skill roots of a cassette could not be resolved or read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct Unresolvable(pub String);

/// CONTRACT (fingerprint helper implements): recomputes the fingerprint of the
/// cassette's skill roots (session resolved against the cassette dir, or
/// `session_override`), with the recorded `baseline` carried over.
pub fn live_for_cassette(
    _cassette: &Cassette,
    _session_override: Option<&Path>,
) -> Result<LiveFingerprints, Unresolvable> {
    Err(Unresolvable("fingerprint module not built yet".into()))
}

/// CONTRACT (fingerprint helper implements): `sessionFingerprint` of a
/// session YAML file (spec/record.md §5), `None` for `(inline)`/unreadable.
pub fn session_fingerprint(_session_file: &Path) -> Option<String> {
    None
}
