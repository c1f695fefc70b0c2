//! Record-time redaction and secret scrubbing (docs/spec/fingerprint.md §6),
//! applied by `record` to a cassette document before it is written.
//!
//! Two layers, in this order:
//! 1. **Secrets, always** — every match of a `secret` detector of the shared
//!    table ([`super::detect`]; the SAME set `verify-cassettes` flags) plus
//!    the values of the credential environment variables (raw, base64,
//!    URI-encoded, JSON-escaped, `Bearer <v>`) become `[REDACTED:<kind>]` /
//!    `[REDACTED]`. No configuration needed, no opt-out.
//! 2. **Policy redaction** — `.cowork-redact.json` patterns (JavaScript
//!    regexes) and key names, tokens `[REDACTED:<label>:<12 hex of
//!    sha256(match)>]` (context-free, so a string redacts identically in the
//!    events and in controlOut).
//!
//! JSON lines are redacted structurally (string leaves and object keys) and
//! re-serialised only when something changed, so an untouched line keeps
//! its bytes. [`scrub_cassette_checked`] refuses a redaction that changes
//! the verdict; the verdict itself comes from the caller (the replay engine
//! is another module), as a closure.
//!
//! This module does not choose where a cassette is written nor quarantine
//! one (that is `record`).

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use base64::Engine;
use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::detect::{DetectorSet, Surface};
use super::scan::decode_json_escapes;
use crate::js::regex::{EsRegex, compile_es_with_flags};

/// Errors of loading a policy or applying it.
#[derive(Debug, thiserror::Error)]
pub enum RedactError {
    #[error("invalid redaction policy `{path}`: {message}")]
    InvalidPolicy { path: PathBuf, message: String },
    #[error(
        "redaction collision: two distinct keys both redacted to \"{key}\" at {location} — \
            refusing to silently merge"
    )]
    Collision { key: String, location: String },
    #[error("redaction pattern `{pattern}` (label `{label}`) could not be applied: {message}")]
    PatternFailed {
        pattern: String,
        label: String,
        message: String,
    },
    #[error(
        "redaction changed assertion failures: {detail} — redaction altered an asserted \
            observable; refusing to write a cassette whose verdict was manufactured by redaction"
    )]
    VerdictChanged { detail: String },
}

impl From<RedactError> for crate::Error {
    fn from(e: RedactError) -> Self {
        let hint = match &e {
            RedactError::InvalidPolicy { .. } => {
                "fix the file: {\"patterns\": \
                    [{\"regex\": \"...\", \"label\": \"...\", \"flags\": \"...\"}], \"keys\": \
                    [\"...\"]}"
            }
            RedactError::Collision { .. } => {
                "make the redaction pattern narrower so distinct keys stay distinct"
            }
            RedactError::PatternFailed { .. } => {
                "simplify the pattern in .cowork-redact.json (or $COWORK_HARNESS_REDACT_PATTERNS) \
                    so it does not backtrack catastrophically"
            }
            RedactError::VerdictChanged { .. } => {
                "record against synthetic inputs, or narrow the redaction policy so it does not \
                    touch asserted values"
            }
        };
        crate::Error::usage(e.to_string()).with_hint(hint)
    }
}

/// The file name looked up by [`RedactionPolicy::load`].
pub const POLICY_FILE: &str = ".cowork-redact.json";

/// Environment variables whose values are always scrubbed.
pub const SECRET_ENV_KEYS: [&str; 4] = [
    "CLAUDE_CODE_OAUTH_TOKEN",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_CUSTOM_HEADERS",
];

/// A redaction policy: patterns, key names and literal secret values.
#[derive(Clone, Default)]
pub struct RedactionPolicy {
    patterns: Vec<(EsRegex, String)>,
    keys: Vec<String>,
    /// Literal needles replaced by `[REDACTED]` (from the environment).
    needles: Vec<String>,
}

impl std::fmt::Debug for RedactionPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "RedactionPolicy({} patterns, keys {:?}, {} secret values)",
            self.patterns.len(),
            self.keys,
            self.needles.len() / 5
        )
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyPattern {
    regex: String,
    label: Option<String>,
    flags: Option<String>,
}

fn compile(src: &str, flags: &str) -> Result<EsRegex, String> {
    // `g` is implied (every occurrence is replaced); `y` has no meaning here.
    let flags: String = flags.chars().filter(|c| !matches!(c, 'g' | 'y')).collect();
    compile_es_with_flags(src, &flags)
}

impl RedactionPolicy {
    /// Parses one `.cowork-redact.json` text (`origin` names it in errors).
    /// Unknown top-level keys are ignored, as upstream does.
    pub fn add_json(&mut self, text: &str, origin: &Path) -> Result<(), RedactError> {
        let bad = |message: String| RedactError::InvalidPolicy {
            path: origin.to_path_buf(),
            message,
        };
        let v: Value = serde_json::from_str(text).map_err(|e| bad(format!("not JSON: {e}")))?;
        let obj = v
            .as_object()
            .ok_or_else(|| bad("expected a JSON object".into()))?;
        if let Some(p) = obj.get("patterns") {
            let pats: Vec<PolicyPattern> = serde_json::from_value(p.clone()).map_err(|e| {
                bad(format!(
                    "patterns: {e} (each entry is {{regex, label?, flags?}})"
                ))
            })?;
            for (i, p) in pats.into_iter().enumerate() {
                let re = compile(&p.regex, p.flags.as_deref().unwrap_or("g"))
                    .map_err(|e| bad(format!("patterns[{i}].regex `{}`: {e}", p.regex)))?;
                self.patterns
                    .push((re, p.label.unwrap_or_else(|| "redacted".into())));
            }
        }
        if let Some(k) = obj.get("keys") {
            let keys: Vec<String> = serde_json::from_value(k.clone())
                .map_err(|e| bad(format!("keys: {e} (expected an array of strings)")))?;
            self.keys.extend(keys);
        }
        Ok(())
    }

    /// Adds a pattern (JavaScript regex source) with a label.
    pub fn add_pattern(&mut self, source: &str, label: &str) -> Result<(), String> {
        self.patterns.push((compile(source, "")?, label.to_owned()));
        Ok(())
    }

    /// Adds a key name whose value is redacted wholesale.
    pub fn add_key(&mut self, key: &str) {
        self.keys.push(key.to_owned());
    }

    /// Adds a literal secret value (its five encodings become needles).
    pub fn add_secret_value(&mut self, v: &str) {
        if v.is_empty() {
            return;
        }
        self.needles.push(v.to_owned());
        self.needles
            .push(base64::engine::general_purpose::STANDARD.encode(v));
        self.needles.push(uri_encode(v));
        let json = serde_json::to_string(v).unwrap_or_default();
        self.needles
            .push(json[1..json.len().saturating_sub(1)].to_owned());
        self.needles.push(format!("Bearer {v}"));
        // Longest first, so `Bearer <v>` goes whole before `<v>` alone.
        self.needles.sort_by_key(|n| std::cmp::Reverse(n.len()));
        self.needles.dedup();
    }

    /// The full record-time policy: `.cowork-redact.json` in each of
    /// `search_dirs` (each distinct file once, in order), then the
    /// `COWORK_HARNESS_REDACT_PATTERNS`/`_KEYS` and secret environment
    /// variables (`COWORK_HARNESS_SCRUB_KEYS`, `COWORK_HARNESS_SCRUB_VALUES`).
    pub fn load(search_dirs: &[&Path]) -> Result<Self, RedactError> {
        let mut policy = RedactionPolicy::default();
        let mut seen: Vec<PathBuf> = vec![];
        for dir in search_dirs {
            let f = dir.join(POLICY_FILE);
            let canon = std::fs::canonicalize(&f).unwrap_or_else(|_| f.clone());
            if seen.contains(&canon) || !f.is_file() {
                continue;
            }
            seen.push(canon);
            let text = std::fs::read_to_string(&f).map_err(|e| RedactError::InvalidPolicy {
                path: f.clone(),
                message: e.to_string(),
            })?;
            policy.add_json(&text, &f)?;
        }
        let env_list = |k: &str| -> Vec<String> {
            std::env::var(k)
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        };
        for src in env_list("COWORK_HARNESS_REDACT_PATTERNS") {
            policy
                .add_pattern(&src, "redacted")
                .map_err(|message| RedactError::InvalidPolicy {
                    path: PathBuf::from("$COWORK_HARNESS_REDACT_PATTERNS"),
                    message: format!("`{src}`: {message}"),
                })?;
        }
        for k in env_list("COWORK_HARNESS_REDACT_KEYS") {
            policy.add_key(&k);
        }
        policy.add_env_secrets();
        Ok(policy)
    }

    /// Adds the values of the credential environment variables.
    pub fn add_env_secrets(&mut self) {
        let extra: Vec<String> = std::env::var("COWORK_HARNESS_SCRUB_KEYS")
            .unwrap_or_default()
            .split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect();
        for k in SECRET_ENV_KEYS.iter().map(|s| s.to_string()).chain(extra) {
            if let Ok(v) = std::env::var(&k) {
                self.add_secret_value(&v);
            }
        }
        for v in std::env::var("COWORK_HARNESS_SCRUB_VALUES")
            .unwrap_or_default()
            .split(',')
        {
            self.add_secret_value(v.trim());
        }
    }
}

fn uri_encode(v: &str) -> String {
    let mut out = String::new();
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn sha_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The redaction token of a matched span.
pub fn token(label: &str, matched: &str) -> String {
    format!("[REDACTED:{label}:{}]", &sha_hex(matched.as_bytes())[..12])
}

/// One scrubbed secret (never its value).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScrubbedSecret {
    pub location: String,
    pub kind: String,
}

/// What a scrub changed.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ScrubReport {
    /// Secrets removed (always-on layer).
    pub secrets: Vec<ScrubbedSecret>,
    /// Policy redactions applied (count of replaced spans and keyed values).
    pub redactions: usize,
    /// Locations whose content changed.
    pub changed: Vec<String>,
    /// Artifact paths whose body changed (sha256 recomputed) or whose
    /// pre-run hash was nulled.
    pub artifacts_rewritten: Vec<String>,
}

impl ScrubReport {
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty() && self.redactions == 0
    }
}

struct Scrubber<'a> {
    policy: &'a RedactionPolicy,
    report: ScrubReport,
    /// The first policy pattern that could not be evaluated; the scrub fails
    /// with it (a cassette is never written half-redacted).
    failure: Option<RedactError>,
}

impl Scrubber<'_> {
    /// Secrets then policy patterns over one string.
    fn text(&mut self, s: &str, location: &str) -> String {
        let mut out = s.to_owned();
        // 1. literal environment secrets
        for n in &self.policy.needles {
            if out.contains(n.as_str()) {
                out = out.replace(n.as_str(), "[REDACTED]");
                self.report.secrets.push(ScrubbedSecret {
                    location: location.to_owned(),
                    kind: "environment-secret".into(),
                });
            }
        }
        // 2. detector secrets (the shared table)
        out = self.detector_secrets(out, location);
        // 3. policy patterns
        for (re, label) in &self.policy.patterns {
            let ranges: Vec<_> = match re.find_ranges(&out) {
                Ok(found) => found.into_iter().filter(|r| !r.is_empty()).collect(),
                Err(message) => {
                    self.failure.get_or_insert(RedactError::PatternFailed {
                        pattern: re.source().to_owned(),
                        label: label.clone(),
                        message,
                    });
                    continue;
                }
            };
            if ranges.is_empty() {
                continue;
            }
            let mut rebuilt = String::with_capacity(out.len());
            let mut last = 0;
            for r in ranges {
                rebuilt.push_str(&out[last..r.start]);
                rebuilt.push_str(&token(label, &out[r.clone()]));
                last = r.end;
                self.report.redactions += 1;
            }
            rebuilt.push_str(&out[last..]);
            out = rebuilt;
        }
        if out != s {
            self.report.changed.push(location.to_owned());
        }
        out
    }

    /// A document body (zip or PDF) scrubbed inside; `None` when it is
    /// neither or nothing changed.
    fn document(&mut self, bytes: &[u8], loc: &str) -> Option<Vec<u8>> {
        if crate::document::is_zip(bytes) {
            self.zip(bytes, loc)
        } else if crate::document::pdf::is_pdf(bytes) {
            self.pdf(bytes, loc)
        } else {
            None
        }
    }

    fn zip(&mut self, bytes: &[u8], loc: &str) -> Option<Vec<u8>> {
        crate::document::rewrite_zip_text(bytes, |entry, text| {
            let at = format!("{loc} → {entry}");
            let r = self.text(text, &at);
            // The scan reads XML unescaped: a secret spelled with entities
            // (`&quot;`) survives a raw scrub, so the whole entry goes.
            match crate::document::canonical_xml(&r) {
                Some(c) if self.text(&c, &at) != c => {
                    "[REDACTED: this entry held a secret]".to_owned()
                }
                _ => r,
            }
        })
    }

    /// A PDF's strings scrubbed, then what the scan reads checked again:
    /// text a font spells in its own codes, or a secret split across shown
    /// strings, cannot be cut out, and then the whole PDF is replaced by a
    /// one-page PDF saying so (the verdict check still guards the result).
    fn pdf(&mut self, bytes: &[u8], loc: &str) -> Option<Vec<u8>> {
        use crate::document::pdf;
        let rewritten = pdf::rewrite_text(bytes, |part, text| {
            self.text(text, &format!("{loc} → {part}"))
        });
        let now = rewritten.as_deref().unwrap_or(bytes);
        let left = pdf::scan_parts(now).is_some_and(|parts| {
            parts
                .iter()
                .any(|(part, text)| self.text(text, &format!("{loc} → {part}")) != *text)
        });
        if left {
            return Some(pdf::text_pdf(&[
                "[REDACTED: this PDF held a secret reel could not cut out of its text]",
            ]));
        }
        rewritten
    }

    /// Replaces the value of every secret the shared table finds in `out`.
    /// A string that holds escaped JSON (a streamed `partial_json` delta, a
    /// printed config) is also read decoded, as the scanner reads it
    /// ([`decode_json_escapes`]); a secret found only there is replaced in
    /// its escaped spelling.
    fn detector_secrets(&mut self, mut out: String, location: &str) -> String {
        let mut spans: Vec<(usize, usize, &'static str)> = vec![];
        DetectorSet::global().find(&out, Surface::SecretsOnly, |h| {
            spans.push((h.value_start, h.value_end, h.detector().kind));
        });
        if !spans.is_empty() {
            spans.sort();
            let mut rebuilt = String::with_capacity(out.len());
            let mut last = 0;
            for (a, b, kind) in spans {
                if a < last || !out.is_char_boundary(a) || !out.is_char_boundary(b) {
                    continue; // overlapping spans: the first already covers it
                }
                rebuilt.push_str(&out[last..a]);
                rebuilt.push_str(&format!("[REDACTED:{kind}]"));
                last = b;
                self.report.secrets.push(ScrubbedSecret {
                    location: location.to_owned(),
                    kind: kind.to_owned(),
                });
            }
            rebuilt.push_str(&out[last..]);
            out = rebuilt;
        }
        if let Cow::Owned(decoded) = decode_json_escapes(&out) {
            let mut nested: Vec<(String, &'static str)> = vec![];
            DetectorSet::global().find(&decoded, Surface::SecretsOnly, |h| {
                nested.push((
                    decoded[h.value_start..h.value_end].to_owned(),
                    h.detector().kind,
                ));
            });
            for (value, kind) in nested {
                let escaped = serde_json::to_string(&value).unwrap_or_default();
                let escaped = escaped
                    .get(1..escaped.len().saturating_sub(1))
                    .unwrap_or("");
                if !escaped.is_empty() && out.contains(escaped) {
                    out = out.replace(escaped, &format!("[REDACTED:{kind}]"));
                    self.report.secrets.push(ScrubbedSecret {
                        location: location.to_owned(),
                        kind: kind.to_owned(),
                    });
                }
            }
        }
        out
    }

    /// Secrets split across streamed fragments ([`super::stream`]): the
    /// shared table over each joined block (read decoded too, for
    /// `partial_json`), and every fragment a secret's value overlaps loses
    /// that part, the one it starts in taking the `[REDACTED:kind]` marker.
    /// Runs after each line's own scrub, so only what no fragment held on
    /// its own is left to find.
    fn streamed_blocks(&mut self, events: &mut [Value]) {
        let lines: Vec<&str> = events.iter().map(|v| v.as_str().unwrap_or("")).collect();
        let mut rewrites: Vec<(usize, String)> = Vec::new();
        for block in super::stream::blocks(&lines) {
            let joined = block.joined();
            let mut spans: Vec<(usize, usize, &'static str)> = vec![];
            DetectorSet::global().find(&joined, Surface::SecretsOnly, |h| {
                spans.push((h.value_start, h.value_end, h.detector().kind));
            });
            if let (true, Cow::Owned(decoded)) = (block.json, decode_json_escapes(&joined)) {
                DetectorSet::global().find(&decoded, Surface::SecretsOnly, |h| {
                    let value = &decoded[h.value_start..h.value_end];
                    let escaped = serde_json::to_string(value).unwrap_or_default();
                    let escaped = escaped
                        .get(1..escaped.len().saturating_sub(1))
                        .unwrap_or("");
                    if !escaped.is_empty() {
                        for (at, _) in joined.match_indices(escaped) {
                            spans.push((at, at + escaped.len(), h.detector().kind));
                        }
                    }
                });
            }
            if spans.is_empty() {
                continue;
            }
            spans.sort();
            let mut kept: Vec<(usize, usize, &'static str)> = vec![];
            for s in spans {
                if kept.last().is_none_or(|k| s.0 >= k.1) {
                    kept.push(s);
                }
            }
            let mut start = 0;
            for (index, fragment) in &block.fragments {
                let end = start + fragment.len();
                let mut out = String::with_capacity(fragment.len());
                let mut at = start;
                for &(a, b, kind) in kept.iter().filter(|s| s.0 < end && s.1 > start) {
                    let (a_in, b_in) = (a.max(start), b.min(end));
                    out.push_str(&joined[at..a_in]);
                    if a >= start {
                        out.push_str(&format!("[REDACTED:{kind}]"));
                    }
                    at = b_in;
                }
                out.push_str(&joined[at..end]);
                if out != *fragment
                    && let Some(line) = super::stream::with_fragment(lines[*index], &out)
                {
                    rewrites.push((*index, line));
                }
                start = end;
            }
            let location = block.location();
            for &(_, _, kind) in &kept {
                self.report.secrets.push(ScrubbedSecret {
                    location: location.clone(),
                    kind: kind.to_owned(),
                });
            }
        }
        for (index, line) in rewrites {
            self.report.changed.push(format!("events[{index}]"));
            events[index] = Value::String(line);
        }
    }

    /// Secrets only (no policy) in every string leaf and key of `v`: the
    /// fields the scanner reads by JSON path (`timeline`, unknown fields),
    /// whose values a policy pattern was never written for.
    fn secrets_in_value(&mut self, v: &mut Value, location: &str) {
        match v {
            Value::String(s) => {
                let scrubbed = self.detector_secrets(s.clone(), location);
                if scrubbed != *s {
                    self.report.changed.push(location.to_owned());
                    *s = scrubbed;
                }
            }
            Value::Array(a) => a
                .iter_mut()
                .for_each(|x| self.secrets_in_value(x, location)),
            Value::Object(o) => {
                let old = std::mem::take(o);
                for (k, mut x) in old {
                    let nk = self.detector_secrets(k.clone(), location);
                    self.secrets_in_value(&mut x, location);
                    o.insert(nk, x);
                }
            }
            _ => {}
        }
    }

    /// Structural redaction of a JSON value: string leaves and keys.
    fn value(&mut self, v: &Value, location: &str) -> Result<Value, RedactError> {
        Ok(match v {
            Value::String(s) => Value::String(self.text(s, location)),
            Value::Array(a) => Value::Array(
                a.iter()
                    .map(|x| self.value(x, location))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(o) => {
                let mut out = Map::new();
                for (k, x) in o {
                    let rk = self.text(k, location);
                    let rv = if self.policy.keys.iter().any(|n| n == k) {
                        self.report.redactions += 1;
                        let basis = match x {
                            Value::String(s) => s.clone(),
                            other => serde_json::to_string(other).unwrap_or_default(),
                        };
                        Value::String(token("key", &basis))
                    } else {
                        self.value(x, location)?
                    };
                    if out.contains_key(&rk) {
                        return Err(RedactError::Collision {
                            key: rk,
                            location: location.to_owned(),
                        });
                    }
                    out.insert(rk, rv);
                }
                Value::Object(out)
            }
            other => other.clone(),
        })
    }

    /// A JSONL protocol line: structural when it parses, else text. An
    /// unchanged line keeps its exact bytes.
    fn line(&mut self, line: &str, location: &str) -> Result<String, RedactError> {
        if line.trim().is_empty() {
            return Ok(line.to_owned());
        }
        match serde_json::from_str::<Value>(line) {
            Ok(v) => {
                let r = self.value(&v, location)?;
                Ok(if r == v {
                    line.to_owned()
                } else {
                    serde_json::to_string(&r).unwrap_or_default()
                })
            }
            Err(_) => Ok(self.text(line, location)),
        }
    }
}

fn map_str_array(
    doc: &mut Map<String, Value>,
    key: &str,
    mut f: impl FnMut(&str, usize) -> Result<String, RedactError>,
) -> Result<(), RedactError> {
    if let Some(Value::Array(items)) = doc.get_mut(key) {
        for (i, item) in items.iter_mut().enumerate() {
            if let Value::String(s) = item {
                *s = f(s, i)?;
            }
        }
    }
    Ok(())
}

/// Scrubs secrets and applies `policy` to a cassette document in place.
/// Secrets are scrubbed even with an empty policy.
pub fn scrub_cassette(
    doc: &mut Map<String, Value>,
    policy: &RedactionPolicy,
) -> Result<ScrubReport, RedactError> {
    let mut sc = Scrubber {
        policy,
        report: ScrubReport::default(),
        failure: None,
    };
    sc.transcript(doc)?;
    for key in ["userVisibleRoots", "preRunPaths"] {
        map_str_array(doc, key, |s, i| Ok(sc.text(s, &format!("{key}[{i}]"))))?;
    }
    sc.scenario(doc)?;
    if let Some(Value::Array(fpm)) = doc.get_mut("folderPrefixMap") {
        for (i, e) in fpm.iter_mut().enumerate() {
            if let Some(Value::String(from)) = e.get_mut("from") {
                *from = sc.text(from, &format!("folderPrefixMap[{i}].from"));
            }
        }
    }
    if let Some(Value::Array(arts)) = doc.get_mut("artifacts") {
        for a in arts.iter_mut().filter_map(Value::as_object_mut) {
            sc.artifact(a);
        }
    }
    sc.pre_run_hashes(doc);
    sc.fingerprint_paths(doc);
    if let Some(Value::String(r)) = doc
        .get_mut("environment")
        .and_then(|e| e.get_mut("agentImage"))
        .and_then(|i| i.get_mut("ref"))
    {
        *r = sc.text(r, "environment.agentImage.ref");
    }
    sc.unhandled_fields(doc);
    match sc.failure {
        Some(e) => Err(e),
        None => Ok(sc.report),
    }
}

/// The parts of a cassette [`scrub_cassette`] scrubs, each by what it holds.
impl Scrubber<'_> {
    /// `events` and `controlOut`: host inventory first (every line), then
    /// each line structurally, then secrets split across streamed fragments.
    fn transcript(&mut self, doc: &mut Map<String, Value>) -> Result<(), RedactError> {
        for key in ["events", "controlOut"] {
            map_str_array(doc, key, |l, _| {
                Ok(super::inventory::scrub_line(l).unwrap_or_else(|| l.to_owned()))
            })?;
        }
        map_str_array(doc, "events", |l, i| self.line(l, &format!("events[{i}]")))?;
        if let Some(Value::Array(events)) = doc.get_mut("events") {
            self.streamed_blocks(events);
        }
        map_str_array(doc, "controlOut", |l, i| {
            self.line(l, &format!("controlOut[{i}]"))
        })
    }

    /// The frozen scenario but its identity fields, and reel's recorded MCP
    /// traffic (every string in it, as a scenario field).
    fn scenario(&mut self, doc: &mut Map<String, Value>) -> Result<(), RedactError> {
        if let Some(Value::Object(scenario)) = doc.get_mut("scenario") {
            for (k, v) in scenario.iter_mut() {
                // Identity fields stay (a renamed session path would not
                // resolve); they are scanned by verify-cassettes instead.
                if matches!(k.as_str(), "name" | "session" | "fidelity" | "baseline") {
                    continue;
                }
                *v = self.value(v, &format!("scenario.{k}"))?;
            }
        }
        if let Some(traffic) = doc.get_mut(crate::mcp::traffic::CASSETTE_KEY) {
            *traffic = self.value(traffic, crate::mcp::traffic::CASSETTE_KEY)?;
        }
        Ok(())
    }

    /// One artifact: its body (rehashed when rewritten) and its path.
    fn artifact(&mut self, obj: &mut Map<String, Value>) {
        let Some(path) = obj.get("path").and_then(Value::as_str).map(str::to_owned) else {
            return;
        };
        let new_path = self.text(&path, &format!("artifact path {path}"));
        let base64 = obj.get("encoding").and_then(Value::as_str) == Some("base64");
        if let Some(Value::String(body)) = obj.get("body") {
            let loc = format!("artifact {path}");
            let new_body = if base64 {
                self.base64_body(body, &loc)
            } else if !body.starts_with("[REDACTED") {
                let r = self.text(body, &loc);
                (r != *body).then(|| (r.clone(), r.into_bytes()))
            } else {
                None
            };
            if let Some((stored, raw)) = new_body {
                obj.insert("body".into(), Value::String(stored));
                obj.insert("sha256".into(), Value::String(sha_hex(&raw)));
                self.report.artifacts_rewritten.push(path.clone());
            }
        }
        if new_path != path {
            obj.insert("path".into(), Value::String(new_path));
        }
    }

    /// A base64 body rewritten: `(stored, raw bytes)`, or `None` when
    /// nothing in it changed.
    fn base64_body(&mut self, body: &str, loc: &str) -> Option<(String, Vec<u8>)> {
        let engine = &base64::engine::general_purpose::STANDARD;
        let decoded = engine.decode(body.as_bytes()).ok();
        match decoded.as_deref().map(std::str::from_utf8) {
            Some(Ok(text)) => {
                let r = self.text(text, loc);
                (r != text).then(|| (engine.encode(&r), r.into_bytes()))
            }
            // A zip-based document or a PDF: scrubbed inside, as the scan
            // reads it.
            _ => decoded
                .as_deref()
                .and_then(|b| self.document(b, loc))
                .map(|r| (engine.encode(&r), r)),
        }
    }

    /// `preRunHashes`: a key (a path) that changes loses its hash.
    fn pre_run_hashes(&mut self, doc: &mut Map<String, Value>) {
        let Some(Value::Object(hashes)) = doc.get_mut("preRunHashes") else {
            return;
        };
        let old = std::mem::take(hashes);
        for (k, v) in old {
            let nk = self.text(&k, "preRunHashes");
            if nk != k {
                self.report.artifacts_rewritten.push(k.clone());
                hashes.insert(nk, Value::Null);
            } else {
                hashes.insert(k, v);
            }
        }
    }

    /// The skill paths the fingerprint records (`skillSources`, `fileSigs`).
    fn fingerprint_paths(&mut self, doc: &mut Map<String, Value>) {
        let Some(Value::Object(fp)) = doc.get_mut("fingerprint") else {
            return;
        };
        if let Some(Value::Array(srcs)) = fp.get_mut("skillSources") {
            for s in srcs.iter_mut() {
                if let Value::String(x) = s {
                    *x = self.text(x, "fingerprint.skillSources");
                }
            }
        }
        if let Some(Value::Array(sigs)) = fp.get_mut("fileSigs") {
            for e in sigs.iter_mut() {
                if let Some(Value::String(p)) = e.get_mut(0) {
                    *p = self.text(p, "fingerprint.fileSigs");
                }
            }
        }
    }

    /// The rest of the document the scanner reads (`timeline`, fields a
    /// later version adds): secrets only. Identity and digest fields stay —
    /// `scenarioSource` must still resolve, a digest is not a secret.
    fn unhandled_fields(&mut self, doc: &mut Map<String, Value>) {
        const HANDLED: [&str; 17] = [
            "$schema",
            "cassetteVersion",
            "scenario",
            "events",
            "controlOut",
            "effectiveFidelity",
            "artifacts",
            "userVisibleRoots",
            "preRunPaths",
            "preRunOrigin",
            "preRunHashes",
            "scenarioSource",
            "fingerprint",
            "sessionFingerprint",
            "folderPrefixMap",
            "environment",
            "hashFormat",
        ];
        for (k, v) in doc.iter_mut() {
            if !HANDLED.contains(&k.as_str()) {
                self.secrets_in_value(v, k);
            }
        }
    }
}

/// The observable verdict of a cassette, as the replay engine computes it:
/// supplied by the caller of [`scrub_cassette_checked`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdict {
    /// Overall pass.
    pub pass: bool,
    /// `<first assertion key>:<pass>` per assertion (any order).
    pub outcomes: Vec<String>,
    /// Messages of the failing assertions (any order).
    pub failing_messages: Vec<String>,
}

fn strip_tokens(s: &str) -> String {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re =
        RE.get_or_init(|| regex::Regex::new(r"\[REDACTED(?::[^\]]+)?\]").expect("static regex"));
    re.replace_all(s, "").into_owned()
}

/// Number of `computer://` links in model-visible text (assistant text
/// blocks and the `result` string).
fn computer_links(doc: &Map<String, Value>) -> usize {
    let mut n = 0;
    for line in doc
        .get("events")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !line.contains("computer://") {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        match v.get("type").and_then(Value::as_str) {
            Some("assistant") => {
                for block in v
                    .pointer("/message/content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if block.get("type").and_then(Value::as_str) == Some("text") {
                        n += block
                            .get("text")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .matches("computer://")
                            .count();
                    }
                }
            }
            Some("result") => {
                n += v
                    .get("result")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .matches("computer://")
                    .count()
            }
            _ => {}
        }
    }
    n
}

fn bodies_inconsistent(doc: &Map<String, Value>) -> Vec<String> {
    let mut bad = vec![];
    for a in doc
        .get("artifacts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (Some(body), Some(sha)) = (
            a.get("body").and_then(Value::as_str),
            a.get("sha256").and_then(Value::as_str),
        ) else {
            continue;
        };
        if sha.is_empty() || a.get("truncated").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        let raw = if a.get("encoding").and_then(Value::as_str) == Some("base64") {
            base64::engine::general_purpose::STANDARD
                .decode(body.as_bytes())
                .unwrap_or_default()
        } else {
            body.as_bytes().to_vec()
        };
        if sha_hex(&raw) != sha {
            bad.push(
                a.get("path")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_owned(),
            );
        }
    }
    bad
}

/// [`scrub_cassette`], refusing (and leaving `doc` untouched) when the
/// redaction would change the verdict that `verdict` computes, break an
/// artifact's sha256, or change the number of `computer://` links.
pub fn scrub_cassette_checked(
    doc: &mut Map<String, Value>,
    policy: &RedactionPolicy,
    verdict: impl Fn(&Map<String, Value>) -> Verdict,
) -> Result<ScrubReport, RedactError> {
    let mut redacted = doc.clone();
    let report = scrub_cassette(&mut redacted, policy)?;
    if report.is_empty() {
        return Ok(report);
    }
    let before = verdict(doc);
    let after = verdict(&redacted);
    let failed = |v: &Verdict| -> Vec<String> {
        let mut f: Vec<String> = v
            .outcomes
            .iter()
            .filter_map(|o| o.strip_suffix(":false").map(str::to_owned))
            .collect();
        f.sort();
        f
    };
    let sorted = |mut x: Vec<String>| {
        x.sort();
        x
    };
    let detail = if before.pass != after.pass {
        Some(format!(
            "pre-redaction pass={} → redacted pass={}; failing assertions: [{}] → [{}]",
            before.pass,
            after.pass,
            failed(&before).join(", "),
            failed(&after).join(", ")
        ))
    } else if sorted(before.outcomes.clone()) != sorted(after.outcomes.clone()) {
        Some(format!(
            "assertion failures changed: [{}] → [{}]",
            failed(&before).join(", "),
            failed(&after).join(", ")
        ))
    } else if sorted(
        before
            .failing_messages
            .iter()
            .map(|m| strip_tokens(m))
            .collect(),
    ) != sorted(
        after
            .failing_messages
            .iter()
            .map(|m| strip_tokens(m))
            .collect(),
    ) {
        Some("failing assertion messages changed unexpectedly after redaction".into())
    } else if let bad @ [_, ..] = bodies_inconsistent(&redacted).as_slice() {
        Some(format!(
            "redacted artifact body sha256 no longer matches its bytes (replay would reject as \
                corrupt): {}",
            bad.join(", ")
        ))
    } else {
        let (b, a) = (computer_links(doc), computer_links(&redacted));
        (b != a).then(|| {
            format!(
                "redaction destroyed computer:// link structure: {b} link(s) pre-redaction → \
                {a} after"
            )
        })
    };
    if let Some(detail) = detail {
        return Err(RedactError::VerdictChanged { detail });
    }
    *doc = redacted;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn a_secret_split_across_streamed_fragments_is_cut_out_of_each() {
        let ev = |frag: &str| {
            json!({"type": "stream_event", "parent_tool_use_id": null, "event": {
                "type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": frag}}})
            .to_string()
        };
        let lines = [
            ev("token ghp_abcdefghij"),
            ev("klmnopqrstuvwxyz"),
            ev("0123456789 ok"),
        ];
        let mut d = doc(json!({"events": lines}));
        let report = scrub_cassette(&mut d, &RedactionPolicy::default()).unwrap();
        let texts: Vec<String> = d["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                let v: Value = serde_json::from_str(l.as_str().unwrap()).unwrap();
                v["event"]["delta"]["text"].as_str().unwrap().to_owned()
            })
            .collect();
        assert_eq!(texts, ["token [REDACTED:github-token]", "", " ok"]);
        assert_eq!(report.changed, ["events[0]", "events[1]", "events[2]"]);
        assert_eq!(report.secrets.len(), 1);
        assert_eq!(
            report.secrets[0].location,
            "events[0..=2] (streamed fragments joined)"
        );
    }

    #[test]
    fn secrets_are_scrubbed_without_a_policy_and_untouched_lines_keep_bytes() {
        let secret_line = json!({"type":"assistant","message":{"content":[{"type":"text","text":"use ghp_abcdefghijklmnopqrstuvwxyz0123456789"}]}}).to_string();
        let plain = r#"{"type":"user",  "x":1}"#.to_owned();
        let mut d = doc(
            json!({"events":[secret_line, plain.clone()], "scenario":{"prompt":"p","session":"s"}}),
        );
        let r = scrub_cassette(&mut d, &RedactionPolicy::default()).unwrap();
        assert_eq!(r.secrets.len(), 1);
        assert_eq!(r.secrets[0].kind, "github-token");
        let out = d["events"][0].as_str().unwrap();
        assert!(
            out.contains("[REDACTED:github-token]") && !out.contains("ghp_abc"),
            "{out}"
        );
        assert_eq!(d["events"][1].as_str().unwrap(), plain);
    }

    #[test]
    fn policy_tokens_are_context_free_and_keys_are_redacted_whole() {
        let mut p = RedactionPolicy::default();
        p.add_json(
            r#"{"patterns":[{"regex":"Acme Corp","label":"org"}],"keys":["ssn"]}"#,
            Path::new("x"),
        )
        .unwrap();
        let mut d = doc(json!({
            "events":[json!({"q":"Acme Corp?","ssn":"123"}).to_string()],
            "controlOut":[json!({"answers":{"Acme Corp?":"yes"}}).to_string()],
            "scenario":{"prompt":"about Acme Corp","session":"s"}
        }));
        scrub_cassette(&mut d, &p).unwrap();
        let t = token("org", "Acme Corp");
        assert!(d["events"][0].as_str().unwrap().contains(&t));
        assert!(d["controlOut"][0].as_str().unwrap().contains(&t));
        assert!(
            d["events"][0]
                .as_str()
                .unwrap()
                .contains(&token("key", "123"))
        );
        assert_eq!(d["scenario"]["prompt"], json!(format!("about {t}")));
    }

    #[test]
    fn policy_patterns_keep_javascript_flag_semantics() {
        let mut p = RedactionPolicy::default();
        p.add_json(
            r#"{"patterns":[{"regex":"Acme","label":"org"},{"regex":"^beta$","label":"b","flags":"gim"}]}"#,
            Path::new("x"),
        )
        .unwrap();
        let mut d =
            doc(json!({"events":[], "scenario":{"prompt":"Acme ACME\nBETA\nbetas","session":"s"}}));
        scrub_cassette(&mut d, &p).unwrap();
        assert_eq!(
            d["scenario"]["prompt"],
            json!(format!(
                "{} ACME\n{}\nbetas",
                token("org", "Acme"),
                token("b", "BETA")
            ))
        );
    }

    #[test]
    fn literal_secret_values_go_in_every_encoding() {
        let mut p = RedactionPolicy::default();
        p.add_secret_value("tok/en+1");
        let b64 = base64::engine::general_purpose::STANDARD.encode("tok/en+1");
        let line = format!("a tok/en+1 b {b64} c tok%2Fen%2B1 d Bearer tok/en+1");
        let mut d = doc(json!({"events":[line], "scenario":{"prompt":"p","session":"s"}}));
        let r = scrub_cassette(&mut d, &p).unwrap();
        assert_eq!(
            d["events"][0],
            json!("a [REDACTED] b [REDACTED] c [REDACTED] d [REDACTED]")
        );
        assert!(r.secrets.iter().all(|s| s.kind == "environment-secret"));
    }

    #[test]
    fn invalid_policy_names_the_file_and_field() {
        let e = RedactionPolicy::default()
            .add_json(
                r#"{"patterns":[{"regex":"("}]}"#,
                Path::new("/p/.cowork-redact.json"),
            )
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/p/.cowork-redact.json") && e.contains("patterns[0].regex"),
            "{e}"
        );
    }

    #[test]
    fn verdict_change_is_refused_and_doc_untouched() {
        let mut p = RedactionPolicy::default();
        p.add_pattern("action items", "x").unwrap();
        let mut d = doc(json!({"events":["{\"type\":\"result\",\"result\":\"action \
                items\"}"], "scenario":{"prompt":"p","session":"s"}}));
        let before = d.clone();
        let verdict = |m: &Map<String, Value>| {
            let pass = m["events"][0].as_str().unwrap().contains("action items");
            Verdict {
                pass,
                outcomes: vec![format!("transcript_contains:{pass}")],
                failing_messages: vec![],
            }
        };
        let e = scrub_cassette_checked(&mut d, &p, verdict)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("pre-redaction pass=true → redacted pass=false")
                && e.contains("transcript_contains"),
            "{e}"
        );
        assert_eq!(d, before);
    }

    #[test]
    fn base64_bodies_are_scrubbed_and_rehashed() {
        let body = base64::engine::general_purpose::STANDARD.encode("key=AKIAQWERTYUIOPASDFGH\n");
        let mut d = doc(json!({"events":[], "scenario":{"prompt":"p","session":"s"},
            "artifacts":[{"path":"outputs/a.txt","bytes":5,"sha256":"00","body":body,"encoding":"base64"}]}));
        let r = scrub_cassette_checked(&mut d, &RedactionPolicy::default(), |_| Verdict::default())
            .unwrap();
        assert_eq!(r.artifacts_rewritten, vec!["outputs/a.txt"]);
        assert!(bodies_inconsistent(&d).is_empty());
    }
}
