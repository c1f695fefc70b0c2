//! `reel report`: one self-contained HTML page per view — a recording, a
//! rerun, a diff of two recordings, a version matrix, an eval.
//!
//! Each view is a model built from the existing homes (the cassette's typed
//! views, `diff::Recording` for the manifest, verdicts and metadata, the
//! timeline folds, the rerun JSON envelope) and an askama template under
//! `src/html/templates/`. Templates are checked at compile time and escape
//! every expression: a cassette is hostile, so recorded text only ever
//! reaches the page as text. The page has no external resource of any kind:
//! CSS, SVG charts and images (data URIs) are inline, the small script only
//! collapses and filters, and every fact sits in `<details>` elements that
//! read the same with scripts off. A `Content-Security-Policy` meta tag
//! forbids anything else (no network, no inline event handlers).
//!
//! Sizes stay proportional to what is shown: the conversation is cut to a
//! window of turns ([`Options`]), paged in groups, and every bulky body is
//! clipped with a note ([`Clip`]).
//!
//! Views: `recording` (`RecordingView` over `diff::Outcome` for verdicts and
//! run facts, from replay's own streaming load when given a file) with
//! `conversation` (the turns of a window, sub-agents nested, decisions from
//! `controlOut`, every tool call counted in its shallow pass); `rerun` (from
//! the rerun JSON envelope); `diff` (over `diff::Diff`); `matrix` (its
//! documented input model, `schema/report-matrix.json`); `eval` (the eval
//! directory's `report.json` and `runs.jsonl`, re-checked against the rows).
//! `timeline` draws the SVG timeline; `text` clips and marks masks. Each page
//! has one `Chrome` (CSP by hash, `report.css` and `report.js` inlined). Events
//! are read only through the cassette's views; nothing here judges runs.

pub mod conversation;
pub mod diff;
pub mod eval;
pub mod matrix;
pub mod recording;
pub mod rerun;
mod text;
mod timeline;

pub use rerun::InputError;
pub use text::{Clip, Segment};

/// How much of a recording a page shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// The first turn shown (0-based).
    pub from_turn: usize,
    /// Turns shown at most (the rest is named in a note).
    pub max_turns: usize,
    /// Turns per collapsible page of the turn list.
    pub page_size: usize,
    /// Bytes kept of one recorded body (tool input, result, text, file).
    pub body_cap: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            from_turn: 0,
            max_turns: 500,
            page_size: 50,
            body_cap: 4096,
        }
    }
}

/// A template failed to render (only a formatting error can do that).
pub type RenderError = askama::Error;

/// The page's style and script, shared by every view (kept in files so they
/// read as CSS and JavaScript; the templates include them verbatim).
pub(crate) const STYLE: &str = include_str!("templates/report.css");
pub(crate) const SCRIPT: &str = include_str!("templates/report.js");

/// What every page shares: its title, style sheet, script and the
/// `Content-Security-Policy` that allows exactly those two (by SHA-256) and
/// `data:` images, and nothing else: no request leaves the page, and a
/// recorded `<script>` that escaped escaping still would not run.
pub struct Chrome {
    pub title: String,
    pub version: &'static str,
    pub style: &'static str,
    pub script: &'static str,
    pub csp: String,
}

impl Chrome {
    pub fn new(title: String) -> Chrome {
        Chrome {
            title,
            version: env!("CARGO_PKG_VERSION"),
            style: STYLE,
            script: SCRIPT,
            csp: format!(
                "default-src 'none'; img-src data:; style-src {}; script-src {}; \
                 base-uri 'none'; form-action 'none'",
                csp_hash(STYLE),
                csp_hash(SCRIPT)
            ),
        }
    }
}

fn csp_hash(text: &str) -> String {
    use base64::Engine;
    use sha2::Digest;
    let digest = sha2::Sha256::digest(text.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}
