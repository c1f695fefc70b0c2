//! The recorder's minimal secret scrub (spec/record.md §3.5): values of the
//! credential env vars (and `COWORK_HARNESS_SCRUB_KEYS` / `_VALUES`, plus any
//! env var whose name looks like a credential) are replaced by `[REDACTED]`
//! in every captured line and artifact body, in their raw, base64,
//! URI-encoded, JSON-escaped and `Bearer` forms.
//!
//! This is the recording-time guard only; the committed-cassette privacy scan
//! and content redaction belong to `crate::verify`.

use base64::Engine as _;
use sha2::{Digest, Sha256};

use crate::cassette::ManifestEntry;

const NAMED: &[&str] = &[
    "CLAUDE_CODE_OAUTH_TOKEN",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_CUSTOM_HEADERS",
];

/// Placeholder written instead of a secret.
pub const REDACTED: &str = "[REDACTED]";

/// The secret needles to remove, longest first.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    needles: Vec<String>,
    raw: Vec<String>,
}

fn looks_like_credential_name(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    [
        "TOKEN",
        "SECRET",
        "API_KEY",
        "APIKEY",
        "PASSWORD",
        "PASSWD",
        "PRIVATE_KEY",
        "ACCESS_KEY",
    ]
    .iter()
    .any(|k| n.contains(k))
}

impl Secrets {
    /// Collects secrets from an environment.
    pub fn from_env(env: impl IntoIterator<Item = (String, String)>) -> Secrets {
        let env: Vec<(String, String)> = env.into_iter().collect();
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let mut raw: Vec<String> = Vec::new();
        for (k, v) in &env {
            let named = NAMED.contains(&k.as_str());
            if (named && v.len() >= 4) || (looks_like_credential_name(k) && v.len() >= 8) {
                raw.push(v.clone());
            }
        }
        if let Some(keys) = get("COWORK_HARNESS_SCRUB_KEYS") {
            for k in keys.split(',').map(str::trim).filter(|k| !k.is_empty()) {
                if let Some(v) = get(k).filter(|v| !v.is_empty()) {
                    raw.push(v);
                }
            }
        }
        if let Some(values) = get("COWORK_HARNESS_SCRUB_VALUES") {
            raw.extend(
                values
                    .split(',')
                    .map(str::trim)
                    .filter(|v| !v.is_empty())
                    .map(String::from),
            );
        }
        raw.sort();
        raw.dedup();
        let mut needles = Vec::new();
        for v in &raw {
            needles.push(format!("Bearer {v}"));
            needles.push(v.clone());
            needles.push(base64::engine::general_purpose::STANDARD.encode(v));
            needles.push(uri_encode(v));
            let json = serde_json::to_string(v).unwrap_or_default();
            needles.push(json.trim_matches('"').to_owned());
        }
        needles.retain(|n| !n.is_empty());
        needles.sort_by_key(|n| std::cmp::Reverse(n.len()));
        needles.dedup();
        Secrets { needles, raw }
    }

    pub fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }

    /// `text` with every needle replaced; `None` when nothing matched.
    pub fn scrub(&self, text: &str) -> Option<String> {
        if !self.needles.iter().any(|n| text.contains(n.as_str())) {
            return None;
        }
        let mut out = text.to_owned();
        for n in &self.needles {
            out = out.replace(n.as_str(), REDACTED);
        }
        Some(out)
    }

    /// Scrubs lines in place.
    pub fn scrub_lines(&self, lines: &mut [String]) {
        for l in lines {
            if let Some(s) = self.scrub(l) {
                *l = s;
            }
        }
    }

    /// Scrubs an artifact body (§3.5 field scrub); returns true when changed
    /// (sha256 recomputed over the new text, `encoding` dropped).
    pub fn scrub_entry(&self, entry: &mut ManifestEntry) -> bool {
        let Some(body) = &entry.body else {
            return false;
        };
        let replaced = if let Some(s) = self.scrub(body) {
            Some(s)
        } else if body.len() >= 20
            && body
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+/=\r\n".contains(&b))
            && base64::engine::general_purpose::STANDARD
                .decode(body.replace(['\r', '\n'], ""))
                .ok()
                .is_some_and(|d| {
                    let text = String::from_utf8_lossy(&d);
                    self.raw.iter().any(|r| text.contains(r.as_str()))
                })
        {
            Some("[REDACTED:base64]".to_owned())
        } else {
            None
        };
        let Some(new) = replaced else { return false };
        entry.sha256 = hex::encode(Sha256::digest(new.as_bytes()));
        entry.bytes = new.len() as u64;
        entry.body = Some(new);
        entry.encoding = None;
        true
    }
}

fn uri_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrubs_every_form_of_a_canary() {
        let canary = "sk-ant-canary-0123456789abcdef";
        let s = Secrets::from_env([
            ("ANTHROPIC_API_KEY".to_owned(), canary.to_owned()),
            ("PATH".to_owned(), "/usr/bin".to_owned()),
        ]);
        let b64 = base64::engine::general_purpose::STANDARD.encode(canary);
        let text = format!("a {canary} b Bearer {canary} c {b64}");
        let out = s.scrub(&text).unwrap();
        assert!(!out.contains(canary) && !out.contains(&b64), "{out}");
        assert!(s.scrub("/usr/bin").is_none());
    }
}
