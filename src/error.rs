//! The top-level error: what went wrong, which exit code it maps to, and a
//! `hint:` telling the user what to do about it.
//!
//! Modules keep their own `thiserror` enums and convert into this type at the
//! command boundary (`impl From<ModuleError> for reel::Error` lives beside the
//! module's enum, so this file never needs to know every module).

use std::fmt;

use crate::exit::ExitStatus;

/// What kind of failure this is; decides the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Bad arguments or a bad input file (exit 2).
    Usage,
    /// A command or option that is not built yet (exit 2, never a fake success).
    NotImplemented,
    /// Could not verify (exit 3, `verify-cassettes`).
    Unverified,
    /// Judged and failed (exit 1), e.g. `rehash` refusing a proof.
    Failure,
}

#[derive(Debug)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    pub hint: Option<String>,
}

impl Error {
    pub fn usage(message: impl Into<String>) -> Self {
        Error {
            kind: ErrorKind::Usage,
            message: message.into(),
            hint: None,
        }
    }

    pub fn failure(message: impl Into<String>) -> Self {
        Error {
            kind: ErrorKind::Failure,
            message: message.into(),
            hint: None,
        }
    }

    pub fn not_implemented(what: &str) -> Self {
        Error {
            kind: ErrorKind::NotImplemented,
            message: format!("`{what}` is not yet implemented in this build of reel"),
            hint: Some("see the open issues; no result was produced".into()),
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// The outcome this error stands for.
    pub fn status(&self) -> ExitStatus {
        match self.kind {
            ErrorKind::Usage | ErrorKind::NotImplemented => ExitStatus::Usage,
            ErrorKind::Unverified => ExitStatus::Unverified,
            ErrorKind::Failure => ExitStatus::Failure,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::usage(e.to_string())
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
