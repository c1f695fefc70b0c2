//! The offline environment for running the real Claude Code CLI against the
//! scripted model: the one home of this recipe, shared by reel's recorder and
//! its tests.
//!
//! Start the agent from an EMPTY environment (`Command::env_clear()`), then
//! set exactly these variables. They point the agent at the loopback model,
//! switch off every non-essential request (telemetry, auto-update, error
//! reporting, MCP registry), and set a proxy tripwire: anything that still
//! tries to reach another host goes through the model server as a `CONNECT`
//! or proxied request and is recorded as a [`super::ProblemKind::Escape`].
//!
//! This does not start processes or choose CLI flags; see `crate::agent`.

use std::ffi::OsString;
use std::path::Path;

/// Variables for an agent talking to the scripted model at `url`
/// (`http://127.0.0.1:<port>`), with a fresh `home` and `config_dir` (both
/// should be new, empty directories; the agent writes its state under
/// `config_dir`).
pub fn offline_env(url: &str, home: &Path, config_dir: &Path) -> Vec<(&'static str, OsString)> {
    vec![
        ("PATH", "/usr/bin:/bin".into()),
        ("HOME", home.as_os_str().to_owned()),
        ("CLAUDE_CONFIG_DIR", config_dir.as_os_str().to_owned()),
        ("ANTHROPIC_BASE_URL", url.into()),
        // Any non-empty key; the scripted model never checks it.
        ("ANTHROPIC_API_KEY", "dummy".into()),
        // The one that matters: without it the CLI contacts api.anthropic.com.
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
        ("DISABLE_TELEMETRY", "1".into()),
        ("DISABLE_AUTOUPDATER", "1".into()),
        ("DISABLE_ERROR_REPORTING", "1".into()),
        // Tripwire: direct loopback traffic bypasses the proxy, anything else
        // reaches the model server as an escape.
        ("HTTPS_PROXY", url.into()),
        ("HTTP_PROXY", url.into()),
        ("NO_PROXY", "127.0.0.1,localhost".into()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_everything_at_the_model() {
        let env = offline_env("http://127.0.0.1:9", Path::new("/h"), Path::new("/c"));
        let get = |k: &str| env.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone());
        assert_eq!(get("ANTHROPIC_BASE_URL"), Some("http://127.0.0.1:9".into()));
        assert_eq!(get("HTTPS_PROXY"), get("ANTHROPIC_BASE_URL"));
        assert_eq!(
            get("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"),
            Some("1".into())
        );
        assert_eq!(get("CLAUDE_CONFIG_DIR"), Some("/c".into()));
    }
}
