//! Who answers the judge: the Anthropic Messages API with the operator's
//! credential (`ANTHROPIC_API_KEY`; base URL from `REEL_JUDGE_BASE_URL`, else
//! `ANTHROPIC_BASE_URL`, else api.anthropic.com), or reel's scripted model
//! endpoint (`crate::model`, its `judge:` replies), which costs nothing.
//! One request per call, no tools, `stream: false`.

use std::time::Duration;

use serde_json::{Value, json};

/// One answered judge call.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub text: String,
    /// The model that answered (the reply's `model`), else the one asked.
    pub model: String,
    /// What the call cost; `Some(0.0)` for a scripted judge, `None` for a
    /// model whose price reel does not know.
    pub cost_usd: Option<f64>,
}

/// Why a judge call failed (the call, not the grade).
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("judge request to {url}: {message}")]
    Transport { url: String, message: String },
    #[error("judge request to {url}: HTTP {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    #[error("judge reply from {url} is not a Messages response: {message}")]
    Reply { url: String, message: String },
}

/// Something that answers a judge prompt.
pub trait Complete {
    /// One call: `system` is the system prompt, when the question has one.
    fn complete(
        &self,
        model: &str,
        system: Option<&str>,
        prompt: &str,
    ) -> Result<Completion, CallError>;
    /// True for a token-free judge (its calls cost $0, never refused by a budget).
    fn is_scripted(&self) -> bool;
}

/// A Messages API endpoint.
pub struct MessagesClient {
    base_url: String,
    api_key: Option<String>,
    scripted: bool,
    agent: ureq::Agent,
}

/// The default base URL of the live judge.
pub const ANTHROPIC_API: &str = "https://api.anthropic.com";

impl MessagesClient {
    /// The live judge from the environment; `None` without `ANTHROPIC_API_KEY`.
    pub fn live_from_env() -> Option<MessagesClient> {
        let key = std::env::var("ANTHROPIC_API_KEY")
            .ok()
            .filter(|k| !k.is_empty())?;
        let base = ["REEL_JUDGE_BASE_URL", "ANTHROPIC_BASE_URL"]
            .iter()
            .find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty()))
            .unwrap_or_else(|| ANTHROPIC_API.into());
        Some(MessagesClient::new(&base, Some(key), false))
    }

    /// reel's scripted endpoint at `base_url` (no credential is sent).
    pub fn scripted(base_url: &str) -> MessagesClient {
        MessagesClient::new(base_url, None, true)
    }

    fn new(base_url: &str, api_key: Option<String>, scripted: bool) -> MessagesClient {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(300)))
            .build();
        MessagesClient {
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key,
            scripted,
            agent: config.into(),
        }
    }
}

impl Complete for MessagesClient {
    fn complete(
        &self,
        model: &str,
        system: Option<&str>,
        prompt: &str,
    ) -> Result<Completion, CallError> {
        let url = format!("{}/v1/messages", self.base_url);
        let mut body = json!({
            "model": model,
            "max_tokens": 4096,
            "temperature": 1,
            "messages": [{"role": "user", "content": prompt}],
        });
        if let Some(system) = system {
            body["system"] = json!(system);
        }
        let mut request = self
            .agent
            .post(&url)
            .header("content-type", "application/json")
            .header("anthropic-version", "2023-06-01");
        if let Some(key) = &self.api_key {
            request = request.header("x-api-key", key);
        }
        let transport = |e: ureq::Error| CallError::Transport {
            url: url.clone(),
            message: e.to_string(),
        };
        let mut response = request.send(body.to_string()).map_err(transport)?;
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string().map_err(transport)?;
        if status != 200 {
            return Err(CallError::Status {
                url,
                status,
                body: crate::elide::head_tail(&text, 400),
            });
        }
        let reply: Value = serde_json::from_str(&text).map_err(|e| CallError::Reply {
            url: url.clone(),
            message: e.to_string(),
        })?;
        Ok(read_reply(&reply, model, self.scripted))
    }

    fn is_scripted(&self) -> bool {
        self.scripted
    }
}

/// The text, model and cost of a Messages reply.
fn read_reply(reply: &Value, asked: &str, scripted: bool) -> Completion {
    let text = reply["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default();
    let model = reply["model"].as_str().unwrap_or(asked).to_owned();
    let cost_usd = if scripted {
        Some(0.0)
    } else {
        let tokens = |k: &str| reply["usage"][k].as_u64().unwrap_or(0);
        price(&model).map(|(input, output)| {
            let read_in = tokens("input_tokens")
                + tokens("cache_creation_input_tokens")
                + tokens("cache_read_input_tokens");
            (read_in as f64 * input + tokens("output_tokens") as f64 * output) / 1e6
        })
    };
    Completion {
        text,
        model,
        cost_usd,
    }
}

/// USD per million (input, output) tokens by model family, from Anthropic's
/// published list prices; `None` for an unknown model (its cost is then
/// reported unknown and a budget refuses it).
pub fn price(model: &str) -> Option<(f64, f64)> {
    let m = model.to_ascii_lowercase();
    if m.contains("haiku") {
        Some(if m.contains("3-") {
            (0.25, 1.25)
        } else {
            (1.0, 5.0)
        })
    } else if m.contains("sonnet") {
        Some((3.0, 15.0))
    } else if m.contains("opus-4-0") || m.contains("opus-4-1") || m.contains("opus-4-2025") {
        Some((15.0, 75.0))
    } else if m.contains("opus") {
        Some((5.0, 25.0))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_is_read_for_text_model_and_cost() {
        let reply = json!({"model": "claude-sonnet-4-5", "content": [
            {"type": "text", "text": "{\"results\": []}"}],
            "usage": {"input_tokens": 1_000_000, "output_tokens": 0}});
        let c = read_reply(&reply, "x", false);
        assert_eq!(c.text, "{\"results\": []}");
        assert_eq!(c.model, "claude-sonnet-4-5");
        assert_eq!(c.cost_usd, Some(3.0));
        assert_eq!(read_reply(&reply, "x", true).cost_usd, Some(0.0));
        assert_eq!(
            read_reply(&json!({"model": "mystery"}), "x", false).cost_usd,
            None
        );
    }
}
