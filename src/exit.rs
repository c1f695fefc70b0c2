//! Exit codes, in one place. They are part of reel's public interface: CI
//! scripts branch on them, so they never change meaning between releases.
//!
//! They follow cowork-harness so a pipeline can swap one tool for the other.
//!
//! The library reports outcomes as an [`ExitStatus`]; only `cli/` turns one
//! into a process exit code ([`ExitStatus::code`]).
//!
//! `ExitStatus` is ordered `Success < Failure < Unverified` (= `COULD_NOT_RUN`)
//! `< Usage`, so the worst outcome of a batch is the maximum. Codes: 0 pass, 1
//! failure, 2 usage or invalid input, 3 could not verify / could not rerun;
//! JSON reports carry the number.

use serde::{Serialize, Serializer};

/// The outcome of a command (or of one file of a batch), ordered by severity:
/// `Success < Failure < Unverified < Usage`, so the worst of several is their
/// maximum ([`ExitStatus::worst`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum ExitStatus {
    /// Everything checked passed (replay green, no finding, migration done).
    #[default]
    Success,
    /// A real result the user must act on: a failing assertion, a blocking
    /// staleness finding, a privacy finding, a refused rehash proof.
    Failure,
    /// Nothing was judged, and the reason is the machine or the recording,
    /// not your input: `verify-cassettes` could not verify some cassette
    /// (unreadable, skill dirs unresolvable), or `rerun` could not rerun one
    /// here (a tier reel does not execute, no agent binary). Also spelled
    /// [`ExitStatus::COULD_NOT_RUN`].
    Unverified,
    /// reel could not do what was asked: bad arguments, an unreadable or
    /// invalid input file, a feature not implemented yet. Nothing was judged.
    Usage,
}

impl ExitStatus {
    /// `rerun`'s name for [`ExitStatus::Unverified`] (the same code, 3).
    pub const COULD_NOT_RUN: ExitStatus = ExitStatus::Unverified;

    /// The documented process exit code.
    pub const fn code(self) -> u8 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Usage => 2,
            ExitStatus::Unverified => 3,
        }
    }

    /// Combines outcomes of a batch: the worst one wins (cowork-harness's
    /// `verify-cassettes` rule ranks "could not verify" above a failure).
    #[must_use]
    pub fn worst(self, other: ExitStatus) -> ExitStatus {
        self.max(other)
    }

    /// `Success` when `ok`, else `Failure`.
    pub fn pass_fail(ok: bool) -> ExitStatus {
        if ok {
            ExitStatus::Success
        } else {
            ExitStatus::Failure
        }
    }

    pub fn is_success(self) -> bool {
        self == ExitStatus::Success
    }
}

/// Text reports name the numeric code (`(exit 1)`).
impl std::fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.code())
    }
}

/// JSON reports carry the numeric code (`verdict.exitCode`).
impl Serialize for ExitStatus {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u8(self.code())
    }
}

/// Everything checked passed.
pub const SUCCESS: u8 = ExitStatus::Success.code();
/// A real result the user must act on.
pub const FAILURE: u8 = ExitStatus::Failure.code();
/// reel could not do what was asked; nothing was judged.
pub const USAGE: u8 = ExitStatus::Usage.code();
/// `verify-cassettes`: some cassette could not be verified at all.
pub const UNVERIFIED: u8 = ExitStatus::Unverified.code();
/// `rerun`: a cassette could not be rerun here (the same number as
/// [`UNVERIFIED`]).
pub const COULD_NOT_RUN: u8 = ExitStatus::COULD_NOT_RUN.code();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worst_is_the_most_severe() {
        use ExitStatus::*;
        assert_eq!(Success.worst(Failure), Failure);
        assert_eq!(Failure.worst(Usage), Usage);
        assert_eq!(Unverified.worst(Failure), Unverified);
        assert_eq!(Failure.worst(Unverified), Unverified);
        assert_eq!(Usage.worst(Unverified), Usage);
        assert_eq!(Success.worst(Success), Success);
    }

    #[test]
    fn codes_are_the_documented_ones() {
        assert_eq!(
            [
                ExitStatus::Success,
                ExitStatus::Failure,
                ExitStatus::Usage,
                ExitStatus::Unverified,
                ExitStatus::COULD_NOT_RUN
            ]
            .map(ExitStatus::code),
            [0, 1, 2, 3, 3]
        );
        assert_eq!(serde_json::to_string(&ExitStatus::Failure).unwrap(), "1");
        assert_eq!(ExitStatus::Unverified.to_string(), "3");
    }
}
