//! Skill-tree fingerprints and the staleness verdict (spec/fingerprint.md).
//!
//! One walk of the skill roots produces a snapshot; every digest (`skillHash`
//! in both formats, `contentSig`, `fileSigs`, `sharedHash`) derives from that
//! snapshot. [`staleness`] compares a cassette's recorded fingerprint with the
//! live tree.

pub mod staleness;
