//! Claude Code releases as a managed resource: a per-user cache holding one
//! npm install per release ([`cache`]), the registry's release list
//! ([`registry`]), the selectors that pick from it ([`version`]) and the
//! atomic install ([`install`]). A matrix or a bisect asks for releases by
//! selector and gets back programs to run.
//!
//! Each release is a normal npm tree, `<cache>/<version>/node_modules/
//! @anthropic-ai/claude-code/…`, so the agent runs from its own installation
//! directory (what the sandbox allows) with nothing shared between releases.
//! Two layouts exist: up to 2.1.112 a JavaScript `cli.js` (run by the `node`
//! on PATH through its `#!/usr/bin/env node` line), from 2.1.113 a native
//! binary hard-linked from a per-platform optional package.
//!
//! Not here: running a rerun (`rerun`), the matrix and bisect (`matrix`),
//! printing (`cli::agents`).
//!
//! Details: the cache is `REEL_AGENTS_DIR`, else under XDG. The release list
//! comes through `npm`, cached 10 minutes, and is asked again when stale, when
//! a release named by number is missing from it, or on `--refresh`; the offline
//! fallback names its age. Selectors: `latest`, `last:N`, `X.Y.Z`, `A..B`. The
//! install goes to a temp dir, is checked, then renamed. Nothing here runs
//! anything but `npm` and the agent's `--version`.

pub mod cache;
pub mod install;
pub mod registry;
pub mod version;

pub use cache::{Cache, Installed, Layout};
pub use version::{Selector, SelectorError, VersionList};

/// The npm package every release comes from.
pub const PACKAGE: &str = "@anthropic-ai/claude-code";

/// Why a release cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum AgentsError {
    /// A selector or argument that names nothing (exit 2).
    #[error("{message}")]
    Invalid { message: String, hint: String },
    /// The machine cannot provide the release (exit 3): offline, no npm, no
    /// node for a `cli.js` release, a broken download.
    #[error("{message}")]
    Unavailable { message: String, hint: String },
}

impl AgentsError {
    pub fn invalid(message: impl Into<String>, hint: impl Into<String>) -> AgentsError {
        AgentsError::Invalid {
            message: message.into(),
            hint: hint.into(),
        }
    }

    pub fn unavailable(message: impl Into<String>, hint: impl Into<String>) -> AgentsError {
        AgentsError::Unavailable {
            message: message.into(),
            hint: hint.into(),
        }
    }

    pub fn hint(&self) -> &str {
        match self {
            AgentsError::Invalid { hint, .. } | AgentsError::Unavailable { hint, .. } => hint,
        }
    }
}

impl From<AgentsError> for crate::Error {
    fn from(e: AgentsError) -> crate::Error {
        let hint = e.hint().to_owned();
        let kind = match e {
            AgentsError::Invalid { .. } => crate::error::ErrorKind::Usage,
            AgentsError::Unavailable { .. } => crate::error::ErrorKind::Unverified,
        };
        crate::Error {
            kind,
            message: e.to_string(),
            hint: Some(hint),
        }
    }
}

/// Resolves `selectors` to releases, ascending. Exact numbers already in the
/// cache need no registry (unless `refresh`); anything else reads the release
/// list, asked afresh when the cached one is stale, lacks a number named, or
/// `refresh` is set ([`registry::versions_with`]).
///
/// A selector naming no published release is [`AgentsError::Invalid`]
/// (exit 2: the input names nothing); the message names the selector and the
/// caller says which argument it came from.
pub fn resolve(
    cache: &Cache,
    selectors: &[Selector],
    refresh: bool,
) -> Result<Vec<semver::Version>, AgentsError> {
    let installed = cache.installed();
    let local = |v: &semver::Version| installed.iter().any(|i| &i.version == v);
    if !refresh && selectors.iter().all(|s| s.exact().is_some_and(local)) {
        let exact = selectors.iter().filter_map(Selector::exact).cloned();
        return Ok(VersionList::new(exact).as_slice().to_vec());
    }
    let named: Vec<semver::Version> = selectors
        .iter()
        .filter_map(Selector::exact)
        .cloned()
        .collect();
    let list = registry::versions_with(
        cache,
        registry::ListPolicy {
            refresh,
            must_hold: &named,
        },
    )?;
    version::resolve_all(selectors, &list).map_err(|e| {
        AgentsError::invalid(
            e.to_string(),
            format!(
                "name published releases (`reel agents list --available`; newest: {}), `latest`, \
                 `last:N` or a range `A..B`",
                list.latest().map_or("?".into(), ToString::to_string)
            ),
        )
    })
}

/// The installed release `version`, installed first when missing
/// (`progress` hears what takes time).
pub fn ensure(
    cache: &Cache,
    version: &semver::Version,
    progress: &dyn Fn(&str),
) -> Result<Installed, AgentsError> {
    match cache.get(version) {
        Some(found) => found.runnable(),
        None => install::install(cache, version, progress)?.runnable(),
    }
}
