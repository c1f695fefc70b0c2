//! The one way the library tells the user something on the side: warnings
//! from deep inside a run (the fingerprint walk skipping a symlink, a
//! declared skill dir that does not exist), debug listings asked for by an
//! environment variable, timing aids.
//!
//! The library never prints. It hands each message to the process-wide
//! [`Sink`]; the CLI installs [`Stderr`] at start-up, so a message reaches
//! stderr at the moment it happens (ordering with the rest of the output is
//! unchanged, even from parallel replays). A library user installs nothing
//! (messages are dropped) or a [`Collector`] and reads it afterwards.
//!
//! A process-wide sink rather than a handle passed down: the walk that warns
//! runs under `replay`, `verify-cassettes`, `record` and `fingerprint`, often
//! on rayon threads, and threading a handle through every layer would add a
//! parameter to dozens of functions for a side channel.
//!
//! What goes through it today: fingerprint-walk warnings, the
//! `COWORK_HARNESS_DEBUG_SKILLHASH` listings and the `REEL_TIMING` lines.
//! `Stderr` writes each line as it happens; nothing installed, nothing printed.

use std::sync::{Mutex, OnceLock};

/// What a message is, so a sink can route or filter it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Something the user should know; the run goes on.
    Warning,
    /// Output asked for by a debug variable (`COWORK_HARNESS_DEBUG_SKILLHASH`).
    Debug,
    /// `REEL_TIMING=1`: where the time goes (benchmark aid).
    Timing,
}

/// Where messages go. Implementations must be cheap and thread-safe: they are
/// called from parallel walks.
pub trait Sink: Send + Sync {
    /// One message: a complete line, without its newline.
    fn emit(&self, kind: Kind, line: &str);
}

/// Writes every message to stderr as one line, immediately.
#[derive(Debug, Default)]
pub struct Stderr;

impl Sink for Stderr {
    fn emit(&self, _kind: Kind, line: &str) {
        // What the library says names paths and recorded strings: inert.
        eprintln!("{}", crate::terminal_safe::command_line(line));
    }
}

/// Keeps every message in order, for a caller that prints them later (or a
/// test that checks them).
#[derive(Debug, Default)]
pub struct Collector {
    lines: Mutex<Vec<(Kind, String)>>,
}

impl Collector {
    /// Takes the messages collected so far.
    pub fn drain(&self) -> Vec<(Kind, String)> {
        std::mem::take(&mut *self.lines.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Sink for Collector {
    fn emit(&self, kind: Kind, line: &str) {
        self.lines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((kind, line.to_owned()));
    }
}

impl<S: Sink + ?Sized> Sink for &'static S {
    fn emit(&self, kind: Kind, line: &str) {
        (**self).emit(kind, line);
    }
}

static SINK: OnceLock<Box<dyn Sink>> = OnceLock::new();

/// Installs the process-wide sink. The first call wins (a sink is chosen once,
/// at start-up); returns `false` if one was already installed.
pub fn install(sink: impl Sink + 'static) -> bool {
    SINK.set(Box::new(sink)).is_ok()
}

/// Hands one message to the installed sink (dropped when none is).
pub fn emit(kind: Kind, line: impl AsRef<str>) {
    if let Some(sink) = SINK.get() {
        sink.emit(kind, line.as_ref());
    }
}

/// A [`Kind::Warning`].
pub fn warn(line: impl AsRef<str>) {
    emit(Kind::Warning, line);
}

/// A [`Kind::Debug`] line.
pub fn debug(line: impl AsRef<str>) {
    emit(Kind::Debug, line);
}

/// A [`Kind::Timing`] line.
pub fn timing(line: impl AsRef<str>) {
    emit(Kind::Timing, line);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_collector_keeps_messages_in_order() {
        let c = Collector::default();
        c.emit(Kind::Warning, "one");
        c.emit(Kind::Debug, "two");
        assert_eq!(
            c.drain(),
            vec![(Kind::Warning, "one".into()), (Kind::Debug, "two".into())]
        );
        assert!(c.drain().is_empty());
    }

    #[test]
    fn the_installed_sink_receives_messages() {
        static COLLECTOR: OnceLock<Collector> = OnceLock::new();
        let c = COLLECTOR.get_or_init(Collector::default);
        // The only test that installs one; other tests running in parallel
        // may add their own warnings, so look for ours among them.
        assert!(install(c));
        warn("reel: a warning");
        assert!(
            c.drain()
                .contains(&(Kind::Warning, "reel: a warning".into()))
        );
    }
}
