//! The live model behind the scripted one (`reel rerun --from-turn N
//! --live-model`, docs/snapshots.md): from a given main-conversation turn on,
//! the server stops answering from its script and forwards each Messages
//! request to the real API with the operator's credential, answering the
//! agent with what came back. The agent's process keeps one
//! `ANTHROPIC_BASE_URL` for the whole session, so the switch has to happen
//! here, on the loopback endpoint, not in the agent's environment.
//!
//! The response is read whole and handed back as one body (an SSE stream is
//! still a valid stream when delivered at once, as the scripted replies are).

use std::time::Duration;

/// The default base URL of the live model.
pub const ANTHROPIC_API: &str = "https://api.anthropic.com";

/// Where and as whom to forward, and from which main-conversation turn.
#[derive(Clone)]
pub struct Upstream {
    /// Without a trailing slash, e.g. `https://api.anthropic.com`.
    pub base_url: String,
    /// The credential header: `x-api-key` or `authorization`.
    pub auth: (String, String),
    /// The 0-based index of the first main-conversation turn answered live;
    /// from that request on, every conversation is forwarded.
    pub from_main_turn: usize,
}

// By hand: the credential must never reach a log or an error message.
impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("base_url", &self.base_url)
            .field("auth", &(self.auth.0.as_str(), "<redacted>"))
            .field("from_main_turn", &self.from_main_turn)
            .finish()
    }
}

/// Why no live model could be set up.
#[derive(Debug, thiserror::Error)]
#[error("no credential for the live model: ANTHROPIC_API_KEY and ANTHROPIC_AUTH_TOKEN are unset")]
pub struct NoCredential;

/// A forwarded request's answer.
pub struct Forwarded {
    pub status: u16,
    pub event_stream: bool,
    pub body: String,
    pub request_id: Option<String>,
}

impl Upstream {
    /// The live model of the environment: `ANTHROPIC_API_KEY` (sent as
    /// `x-api-key`), else `ANTHROPIC_AUTH_TOKEN` (a bearer token), at
    /// `ANTHROPIC_BASE_URL` or the public API.
    pub fn from_env(from_main_turn: usize) -> Result<Upstream, NoCredential> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let auth = match (var("ANTHROPIC_API_KEY"), var("ANTHROPIC_AUTH_TOKEN")) {
            (Some(key), _) => ("x-api-key".to_owned(), key),
            (None, Some(token)) => ("authorization".to_owned(), format!("Bearer {token}")),
            (None, None) => return Err(NoCredential),
        };
        let base_url = var("ANTHROPIC_BASE_URL").unwrap_or_else(|| ANTHROPIC_API.to_owned());
        Ok(Upstream {
            base_url: base_url.trim_end_matches('/').to_owned(),
            auth,
            from_main_turn,
        })
    }

    /// Sends `body` to `POST {base}/v1/messages` with the agent's
    /// `anthropic-*` headers and this credential (the agent's own dummy key
    /// is never forwarded).
    pub fn forward(&self, body: &[u8], headers: &[(String, String)]) -> Result<Forwarded, String> {
        let url = format!("{}/v1/messages", self.base_url);
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(600)))
            .build()
            .into();
        let mut request = agent
            .post(&url)
            .header("content-type", "application/json")
            .header(self.auth.0.as_str(), self.auth.1.as_str());
        let mut has_version = false;
        for (name, value) in headers {
            let lower = name.to_ascii_lowercase();
            if lower.starts_with("anthropic-") {
                has_version |= lower == "anthropic-version";
                request = request.header(lower.as_str(), value.as_str());
            }
        }
        if !has_version {
            request = request.header("anthropic-version", "2023-06-01");
        }
        let mut response = request.send(body).map_err(|e| format!("POST {url}: {e}"))?;
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let event_stream =
            header("content-type").is_some_and(|t| t.starts_with("text/event-stream"));
        let request_id = header("request-id");
        let body = response
            .body_mut()
            .with_config()
            .limit(256 * 1024 * 1024)
            .read_to_string()
            .map_err(|e| format!("read the answer of POST {url}: {e}"))?;
        Ok(Forwarded {
            status,
            event_stream,
            body,
            request_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_credential() {
        let up = Upstream {
            base_url: ANTHROPIC_API.into(),
            auth: ("x-api-key".into(), "sk-ant-secret-value".into()),
            from_main_turn: 3,
        };
        let shown = format!("{up:?}");
        assert!(!shown.contains("sk-ant-secret-value"), "{shown}");
        assert!(
            shown.contains("<redacted>") && shown.contains("from_main_turn: 3"),
            "{shown}"
        );
    }
}
