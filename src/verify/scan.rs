//! The privacy scan of one cassette document: which surfaces are scanned
//! with which detectors, the structural host-inventory check, and the allow
//! list (docs/spec/fingerprint.md §5.1).
//!
//! The scan reads the raw JSON document, not the typed cassette: a file that
//! fails shape validation is still scanned as long as `events` is an array of
//! strings (a file too broken to replay is exactly where a leak arrives).
//!
//! Findings carry the matched text masked for the secret and personal-data
//! classes; the unmasked text is only ever held while the allow list is
//! consulted. This module does not load files nor render reports.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::OnceLock;

use base64::Engine;
use rayon::prelude::*;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::js::regex::{EsRegex, compile_es};

use super::detect::{Class, DetectorSet, Hit, Surface, display_sample};

/// One privacy finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// Where in the cassette: `events[3]`, `controlOut[0]`, `artifact <p>`,
    /// `scenario.prompt`, `metadata:scenario.name`, ... (cowork-harness's
    /// locator strings).
    #[serde(rename = "where")]
    pub location: String,
    pub cls: Class,
    /// The detector (`aws-access-key-id`, `email`, `host-inventory`, ...).
    pub kind: &'static str,
    /// The matched text; masked for the `secret` and `personal` classes.
    pub sample: String,
    /// JSON path of the string inside the line or field that holds the
    /// match (`$.message.content[0].text`), when the surface is JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// How many times the same text was found (reel: [`dedup`]); 1 is
    /// not serialised.
    #[serde(skip_serializing_if = "is_one")]
    pub count: usize,
    /// Every distinct location it was found at, in order, when found more
    /// than once.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub locations: Vec<String>,
    /// reel: the skill file that publishes the same text
    /// ([`super::published`]): the skill's own words echoed by the run, not
    /// the recording machine's data, so reported but never failing.
    #[serde(rename = "publishedBy", skip_serializing_if = "Option::is_none")]
    pub published_by: Option<String>,
    /// reel: the session's own MCP server this finding is the name of, or
    /// the money figure it returned ([`super::own_mcp`]): part of the
    /// scenario under test, so reported but never failing.
    #[serde(rename = "ownMcp", skip_serializing_if = "Option::is_none")]
    pub own_mcp: Option<super::own_mcp::OwnMcp>,
}

fn is_one(n: &usize) -> bool {
    *n == 1
}

/// One finding per class, detector and (masked) text: the first keeps its
/// place and gains the count and every location, so a product name the
/// recording repeats eight times is one finding, not eight. Emails and
/// domains compare case-insensitively (`Schema.org` is `schema.org`).
pub fn dedup(findings: Vec<Finding>) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    let mut seen: std::collections::HashMap<(Class, &'static str, String), usize> =
        std::collections::HashMap::new();
    for f in findings {
        let sample = match f.cls {
            Class::Email | Class::Domain => f.sample.to_ascii_lowercase(),
            _ => f.sample.clone(),
        };
        let key = (f.cls, f.kind, sample);
        match seen.get(&key) {
            Some(&i) => {
                let first = &mut out[i];
                if first.locations.is_empty() {
                    first.locations.push(first.location.clone());
                }
                // Two matches in one line are one place (counted twice).
                if !first.locations.contains(&f.location) {
                    first.locations.push(f.location);
                }
                first.count += 1;
            }
            None => {
                seen.insert(key, out.len());
                out.push(f);
            }
        }
    }
    out
}

impl Finding {
    /// A finding of what a cassette holds rather than of a detector's match
    /// (host inventory, a binary or an uncommitted body): no field, found
    /// once, nothing waived yet.
    pub(super) fn structural(
        location: impl Into<String>,
        cls: Class,
        kind: &'static str,
        sample: String,
    ) -> Finding {
        Finding {
            location: location.into(),
            cls,
            kind,
            sample,
            field: None,
            count: 1,
            locations: Vec::new(),
            published_by: None,
            own_mcp: None,
        }
    }

    /// `unscanned` is informational (a body that was never committed), and
    /// so are text the skill itself publishes and what belongs to the
    /// session's own MCP servers.
    pub fn is_real(&self) -> bool {
        self.cls != Class::Unscanned && self.published_by.is_none() && self.own_mcp.is_none()
    }
}

/// Allow patterns: `--allow` (every class) and the class-scoped variants.
/// A finding is suppressed when a pattern for its class (or unscoped)
/// matches the WHOLE unmasked sample, case-insensitively — JavaScript regex
/// syntax, as cowork-harness compiles them (through reel's one bounded
/// ECMAScript entry point, [`crate::js::regex`]).
#[derive(Default, Clone)]
pub struct AllowList {
    entries: Vec<(Option<Class>, EsRegex)>,
}

impl std::fmt::Debug for AllowList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AllowList({} patterns)", self.entries.len())
    }
}

impl AllowList {
    /// Adds a pattern; `Err` carries the regex engine's message.
    pub fn add(&mut self, source: &str, class: Option<Class>) -> Result<(), String> {
        let re = compile_es(&format!("^(?:{source})$"))?;
        self.entries.push((class, re));
        Ok(())
    }

    /// Adds every pattern line of an allow-patterns file (trimmed, blank and
    /// `#` lines skipped) as an unscoped allow.
    pub fn add_patterns_text(&mut self, text: &str) -> Result<(), String> {
        for line in text.lines().map(str::trim) {
            if !line.is_empty() && !line.starts_with('#') {
                self.add(line, None)
                    .map_err(|e| format!("invalid regex `{line}`: {e}"))?;
            }
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// True when `sample` of class `class` is allowed. A pattern whose
    /// backtracking match runs out of time allows nothing: the finding stays
    /// visible rather than being waved through.
    pub fn allows(&self, sample: &str, class: Class) -> bool {
        self.entries
            .iter()
            .any(|(c, re)| c.is_none_or(|c| c == class) && re.test(sample))
    }
}

/// Scans `text` on `surface`; pushes allowed-filtered findings.
///
/// A JSON text (`json_line`: a transcript line, a serialised scenario field)
/// is scanned as its string contents read, not as its escaped bytes: `\n`,
/// `\"`, `\/` and `\uXXXX` are decoded first, so a key after a `\n`, an
/// `@` written `\u0040` or a URL written `https:\/\/` meets the detectors
/// in the spelling the scrubber (which works on parsed strings) sees. A
/// string that itself holds escaped JSON (a streamed `partial_json` delta, a
/// tool result that is a JSON document) is decoded once more and the extra
/// hits added. A line without a backslash is scanned in place.
fn scan_text(
    text: &str,
    location: &str,
    surface: Surface,
    allow: &AllowList,
    json_line: bool,
    out: &mut Vec<Finding>,
) {
    if !json_line {
        scan_view(text, None, location, surface, allow, None, out);
        return;
    }
    let mut parsed: Option<Option<Value>> = None;
    let once = decode_json_escapes(text);
    let first = out.len();
    scan_view(
        &once,
        Some(text),
        location,
        surface,
        allow,
        Some(&mut parsed),
        out,
    );
    if let Cow::Owned(once) = &once
        && let Cow::Owned(twice) = decode_json_escapes(once)
    {
        let mut nested = vec![];
        scan_view(
            &twice,
            Some(text),
            location,
            surface,
            allow,
            Some(&mut parsed),
            &mut nested,
        );
        for f in nested {
            if !out[first..]
                .iter()
                .any(|g| g.kind == f.kind && g.sample == f.sample)
            {
                out.push(f);
            }
        }
    }
}

/// Runs the detectors over one view of a text. `line` is the JSON text the
/// view was decoded from (parsed, once, to name the field of a finding).
/// Every detector's findings in a plain text (no JSON decoding, nothing
/// allowed): what [`super::published`] reads a skill file with.
pub(super) fn plain_text_findings(text: &str, location: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    scan_view(
        text,
        None,
        location,
        Surface::Full,
        &AllowList::default(),
        None,
        &mut out,
    );
    out
}

fn scan_view(
    view: &str,
    line: Option<&str>,
    location: &str,
    surface: Surface,
    allow: &AllowList,
    mut parsed: Option<&mut Option<Option<Value>>>,
    out: &mut Vec<Finding>,
) {
    DetectorSet::global().find(view, surface, |hit: Hit| {
        let det = hit.detector();
        let raw = String::from_utf8_lossy(&view.as_bytes()[hit.start..hit.end]);
        if allow.allows(&raw, det.class) {
            return;
        }
        let value = String::from_utf8_lossy(&view.as_bytes()[hit.value_start..hit.value_end]);
        let field = match (line, parsed.as_deref_mut()) {
            (Some(line), Some(cache)) => {
                let doc = cache.get_or_insert_with(|| serde_json::from_str::<Value>(line).ok());
                doc.as_ref().and_then(|v| json_path_of(v, &value))
            }
            _ => None,
        };
        out.push(Finding {
            location: location.to_owned(),
            cls: det.class,
            kind: det.kind,
            sample: display_sample(view, &hit),
            field,
            count: 1,
            locations: Vec::new(),
            published_by: None,
            own_mcp: None,
        });
    });
}

/// `text` with its JSON escapes decoded (`\n` → newline, `\"` → `"`,
/// `\uXXXX` → the character, a surrogate pair → one character, a lone
/// surrogate → U+FFFD); a backslash that starts no escape stays. Borrowed
/// when there is nothing to decode. Structure (the quotes around strings)
/// is left as it is: the result is for reading, not for parsing.
pub fn decode_json_escapes(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let Some(first) = memchr::memchr(b'\\', bytes) else {
        return Cow::Borrowed(text);
    };
    let hex4 = |at: usize| -> Option<u32> {
        let h = text.get(at..at + 4)?;
        if h.bytes().all(|b| b.is_ascii_hexdigit()) {
            u32::from_str_radix(h, 16).ok()
        } else {
            None
        }
    };
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut i = first;
    let mut changed = false;
    while i < bytes.len() {
        let Some(off) = memchr::memchr(b'\\', &bytes[i..]) else {
            break;
        };
        i += off;
        let (decoded, len): (Option<char>, usize) = match bytes.get(i + 1) {
            Some(b'"') => (Some('"'), 2),
            Some(b'\\') => (Some('\\'), 2),
            Some(b'/') => (Some('/'), 2),
            Some(b'n') => (Some('\n'), 2),
            Some(b'r') => (Some('\r'), 2),
            Some(b't') => (Some('\t'), 2),
            Some(b'b') => (Some('\u{8}'), 2),
            Some(b'f') => (Some('\u{c}'), 2),
            Some(b'u') => match hex4(i + 2) {
                Some(hi @ 0xD800..=0xDBFF) => {
                    let lo = (bytes.get(i + 6) == Some(&b'\\') && bytes.get(i + 7) == Some(&b'u'))
                        .then(|| hex4(i + 8))
                        .flatten()
                        .filter(|lo| (0xDC00..=0xDFFF).contains(lo));
                    match lo {
                        Some(lo) => (
                            char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)),
                            12,
                        ),
                        None => (Some('\u{FFFD}'), 6),
                    }
                }
                Some(cp) => (Some(char::from_u32(cp).unwrap_or('\u{FFFD}')), 6),
                None => (None, 1),
            },
            _ => (None, 1),
        };
        if let Some(c) = decoded {
            out.push_str(&text[last..i]);
            out.push(c);
            last = i + len;
            changed = true;
        }
        i += len;
    }
    if !changed {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[last..]);
    Cow::Owned(out)
}

/// JSON path of the first string leaf (or key) of `v` containing `needle`
/// (as decoded text, or as it reads once more JSON-escaped: a match inside
/// a string that holds escaped JSON).
fn json_path_of(v: &Value, needle: &str) -> Option<String> {
    let escaped = serde_json::to_string(needle).unwrap_or_default();
    let escaped = escaped
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(needle)
        .to_owned();
    fn walk(v: &Value, n1: &str, n2: &str, path: &mut String) -> bool {
        match v {
            Value::String(s) => s.contains(n1) || s.contains(n2),
            Value::Array(items) => items.iter().enumerate().any(|(i, x)| {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                if walk(x, n1, n2, path) {
                    return true;
                }
                path.truncate(len);
                false
            }),
            Value::Object(map) => map.iter().any(|(k, x)| {
                let len = path.len();
                if k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                    path.push('.');
                    path.push_str(k);
                } else {
                    path.push_str(&format!("[{}]", Value::String(k.clone())));
                }
                if k.contains(n1) || walk(x, n1, n2, path) {
                    return true;
                }
                path.truncate(len);
                false
            }),
            _ => false,
        }
    }
    let mut path = String::from("$");
    walk(v, needle, &escaped, &mut path).then_some(path)
}

/// An agent capability-manifest line (system/init, the command registry
/// `control_response`, MCP `initialize` request/response): catalog prose the
/// noisy classes are not run on. Cheap substring checks gate the JSON parse.
pub fn is_capability_manifest(line: &str) -> bool {
    if !prefilter(
        &MANIFEST_HINT,
        r#""init"|init-1|initialize|"commands"|protocolVersion"#,
        line,
    ) {
        return false;
    }
    let Ok(v) = serde_json::from_str::<Value>(line) else {
        return false;
    };
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let ty = s(&v, "type");
    if ty.as_deref() == Some("system") && s(&v, "subtype").as_deref() == Some("init") {
        return true;
    }
    if ty.as_deref() == Some("control_request") {
        let req = v.get("request");
        if req.and_then(|r| s(r, "subtype")).as_deref() == Some("mcp_message")
            && req
                .and_then(|r| r.get("message"))
                .and_then(|m| s(m, "method"))
                .as_deref()
                == Some("initialize")
        {
            return true;
        }
    }
    if ty.as_deref() == Some("control_response") {
        let Some(r) = v.get("response") else {
            return false;
        };
        if s(r, "request_id").as_deref() == Some("init-1") {
            return true;
        }
        if let Some(body) = r.get("response").and_then(Value::as_object) {
            if body.contains_key("commands") && body.contains_key("agents") {
                return true;
            }
            if let Some(res) = body
                .get("mcp_response")
                .and_then(|m| m.get("result"))
                .and_then(Value::as_object)
                && res.contains_key("protocolVersion")
                && res.contains_key("capabilities")
                && res.contains_key("serverInfo")
            {
                return true;
            }
        }
    }
    false
}

/// SDK-MCP servers the harness itself serves.
const KNOWN_SERVERS: [&str; 4] = ["cowork", "plugins", "skills", "workspace"];
/// The agent's built-in agents.
const KNOWN_AGENTS: [&str; 6] = [
    "claude",
    "claude-code-guide",
    "Explore",
    "general-purpose",
    "Plan",
    "statusline-setup",
];
/// The agent's built-in skills: the 15 cowork-harness knows, plus the ones the
/// Claude Code CLI bundles itself that it does not: two of 2.1.332, and
/// `less-permission-prompts` (2.1.112's name for `fewer-permission-prompts`).
/// They are part of the agent, not of the host it ran on, so listing them
/// reveals nothing about the user.
const KNOWN_SKILLS: [&str; 18] = [
    "plugin-authoring",
    "workflow-authoring",
    "less-permission-prompts",
    "batch",
    "claude-api",
    "code-review",
    "dataviz",
    "debug",
    "deep-research",
    "design-sync",
    "doctor",
    "fewer-permission-prompts",
    "loop",
    "run",
    "run-skill-generator",
    "simplify",
    "update-config",
    "verify",
];

fn name_of(v: &Value) -> Option<&str> {
    v.as_str().or_else(|| v.get("name").and_then(Value::as_str))
}

/// Plugin names declared anywhere in the event stream (`plugins[]`).
fn declared_plugins(events: &[&str]) -> Vec<String> {
    fn visit(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Array(a) => a.iter().for_each(|x| visit(x, out)),
            Value::Object(o) => {
                if let Some(Value::Array(ps)) = o.get("plugins") {
                    for p in ps {
                        if let Some(n) = name_of(p)
                            && !n.is_empty()
                            && !out.iter().any(|x| x == n)
                        {
                            out.push(n.to_owned());
                        }
                    }
                }
                o.values().for_each(|x| visit(x, out));
            }
            _ => {}
        }
    }
    let mut out = vec![];
    for line in events
        .iter()
        .filter(|l| prefilter(&PLUGINS_HINT, r#""plugins""#, l))
    {
        if let Ok(v) = serde_json::from_str::<Value>(line) {
            visit(&v, &mut out);
        }
    }
    out
}

/// Names the cassette itself accounts for, so the host-inventory check does not
/// flag them: plugins declared in the event stream (for `<plugin>:<name>`) and
/// the skills under test.
struct Accounted {
    plugins: Vec<String>,
    /// Skill names whose `SKILL.md` is in `fingerprint.fileSigs`: the skill the
    /// recording was made *for* is not inventory of the host it ran on.
    skills_under_test: Vec<String>,
}

/// `<name>` of every `.../<name>/SKILL.md` in `fingerprint.fileSigs`; a
/// `SKILL.md` at a root's top is named after the root (`skillSources`).
fn skills_under_test(doc: &Map<String, Value>) -> Vec<String> {
    let fingerprint = doc.get("fingerprint");
    let strings = |key: &str| -> Vec<&str> {
        fingerprint
            .and_then(|f| f.get(key))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().or_else(|| v.get(0).and_then(Value::as_str)))
            .collect()
    };
    let basename = |p: &str| {
        p.trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or(p)
            .to_owned()
    };
    let mut names = Vec::new();
    for path in strings("fileSigs") {
        if path == "SKILL.md" {
            names.extend(strings("skillSources").into_iter().map(basename));
        } else if let Some(dir) = path.strip_suffix("/SKILL.md") {
            names.push(basename(dir));
        }
    }
    names.retain(|n| !n.is_empty() && n != "." && n != "..");
    names.sort();
    names.dedup();
    names
}

/// The structural host-inventory check over one decoded line.
fn host_inventory(
    decoded: &Value,
    location: &str,
    allow: &AllowList,
    accounted: &Accounted,
    out: &mut Vec<Finding>,
) {
    let mut push = |sample: &str, detail: String| {
        if !allow.allows(sample, Class::HostInventory) {
            out.push(Finding::structural(
                format!("{location} {detail}"),
                Class::HostInventory,
                "host-inventory",
                sample.to_owned(),
            ));
        }
    };
    fn visit(v: &Value, accounted: &Accounted, push: &mut dyn FnMut(&str, String)) {
        let o = match v {
            Value::Array(a) => {
                a.iter().for_each(|x| visit(x, accounted, push));
                return;
            }
            Value::Object(o) => o,
            _ => return,
        };
        if let Some(Value::Array(servers)) = o.get("mcp_servers") {
            for s in servers {
                if let Some(n) = s.get("name").and_then(Value::as_str)
                    && !KNOWN_SERVERS.contains(&n)
                {
                    push(n, "mcp_servers[].name".into());
                }
            }
        }
        if let Some(Value::Array(tools)) = o.get("tools") {
            for t in tools.iter().filter_map(Value::as_str) {
                if let Some(rest) = t.strip_prefix("mcp__")
                    && let Some(end) = rest.find("__")
                    && end > 0
                {
                    let server = &rest[..end];
                    if !KNOWN_SERVERS.contains(&server) {
                        push(server, format!("tools[] ({t})"));
                    }
                }
            }
        }
        if let Some(Value::Object(acct)) = o.get("account") {
            for k in ["email", "organization", "subscriptionType"] {
                if acct.contains_key(k) {
                    push(k, format!("account.{k}"));
                }
            }
        }
        agents_and_skills(o, accounted, push);
        o.values().for_each(|x| visit(x, accounted, push));
    }
    visit(decoded, accounted, &mut push);
}

/// The agents and skills an object lists that neither the agent ships nor
/// the cassette accounts for (a declared plugin's `<plugin>:<name>`, a
/// skill under test).
fn agents_and_skills(
    o: &Map<String, Value>,
    accounted: &Accounted,
    push: &mut dyn FnMut(&str, String),
) {
    let agents = o.get("agents").and_then(Value::as_array);
    let skills = o.get("skills").and_then(Value::as_array);
    if agents.is_none() && skills.is_none() {
        return;
    }
    let mut local: Vec<&str> = accounted.plugins.iter().map(String::as_str).collect();
    if let Some(Value::Array(ps)) = o.get("plugins") {
        local.extend(ps.iter().filter_map(name_of));
    }
    let from_declared = |n: &str| {
        n.find(':')
            .is_some_and(|i| i > 0 && local.contains(&&n[..i]))
    };
    for a in agents.into_iter().flatten().filter_map(name_of) {
        if !KNOWN_AGENTS.contains(&a) && !from_declared(a) {
            push(a, "agents[]".into());
        }
    }
    for s in skills.into_iter().flatten().filter_map(name_of) {
        if !KNOWN_SKILLS.contains(&s)
            && !from_declared(s)
            && !accounted.skills_under_test.iter().any(|t| t == s)
        {
            push(s, "skills[]".into());
        }
    }
}

fn might_carry_inventory(line: &str) -> bool {
    prefilter(
        &INVENTORY_HINT,
        r#"mcp_servers|"tools"|"account"|"agents"|"skills""#,
        line,
    )
}

static MANIFEST_HINT: OnceLock<regex::bytes::Regex> = OnceLock::new();
static INVENTORY_HINT: OnceLock<regex::bytes::Regex> = OnceLock::new();
static PLUGINS_HINT: OnceLock<regex::bytes::Regex> = OnceLock::new();

/// A cheap literal test before a JSON parse: one multi-literal search
/// (the regex engine's SIMD prefilter) instead of several `contains`.
fn prefilter(cell: &OnceLock<regex::bytes::Regex>, literals: &str, line: &str) -> bool {
    cell.get_or_init(|| regex::bytes::Regex::new(literals).expect("static literal set"))
        .is_match(line.as_bytes())
}

const HOST_INHERITING: [&str; 3] = ["protocol", "hostloop", "cowork"];
const KNOWN_TIERS: [&str; 5] = ["protocol", "hostloop", "cowork", "container", "microvm"];

/// Secrets the model streamed across fragments ([`super::stream`]): each
/// joined block is scanned as one text, and a finding no line already
/// reported is added, located at the block's first and last fragment. The
/// joined text is almost always in a line too (the `assistant` line that
/// follows a stream holds the whole block), so only what no line showed is
/// new.
fn streamed_blocks(events: &[&str], allow: &AllowList, findings: &mut Vec<Finding>) {
    for block in super::stream::blocks(events) {
        let mut joined = Vec::new();
        let location = block.location();
        scan_text(
            &block.joined(),
            &location,
            Surface::Full,
            allow,
            block.json,
            &mut joined,
        );
        let seen_in_a_line = |f: &Finding| {
            findings.iter().any(|g| {
                g.kind == f.kind && g.sample == f.sample && g.location.starts_with("events[")
            })
        };
        let fresh: Vec<Finding> = joined.into_iter().filter(|f| !seen_in_a_line(f)).collect();
        findings.extend(fresh);
    }
}

fn str_array(v: Option<&Value>) -> Option<Vec<&str>> {
    let a = v?.as_array()?;
    a.iter().map(Value::as_str).collect()
}

/// Why a document could not be scanned at all.
pub const NO_TRANSCRIPT: &str = "no readable transcript (`events` is not an array of strings)";

/// Scans a cassette document. `Err` only when there is no transcript to
/// scan (`events` missing or not all strings).
pub fn scan_document(doc: &Map<String, Value>, allow: &AllowList) -> Result<Vec<Finding>, String> {
    let events = str_array(doc.get("events")).ok_or_else(|| NO_TRANSCRIPT.to_owned())?;
    let control_out = str_array(doc.get("controlOut")).unwrap_or_default();
    let scenario = doc.get("scenario").and_then(Value::as_object);

    let mut out = transcript_findings(&events, &control_out, allow);
    if inherits_host(doc, scenario) {
        host_inventory_of_lines(doc, &events, &control_out, allow, &mut out);
    }
    if let Some(Value::Array(fpm)) = doc.get("folderPrefixMap") {
        for (i, e) in fpm.iter().enumerate() {
            if let Some(from) = e.get("from").and_then(Value::as_str) {
                scan_full(from, &format!("folderPrefixMap[{i}].from"), allow, &mut out);
            }
        }
    }
    if let Some(Value::Array(artifacts)) = doc.get("artifacts") {
        for a in artifacts {
            scan_artifact(a, allow, &mut out);
        }
    }
    scan_scenario(scenario, allow, &mut out);
    scan_metadata(doc, scenario, allow, &mut out);
    scan_other_scenario_fields(scenario, allow, &mut out);
    rest_of_document(doc, allow, &mut out);
    Ok(out)
}

/// Every detector over `text` as plain text (no JSON decoding).
fn scan_full(text: &str, location: &str, allow: &AllowList, out: &mut Vec<Finding>) {
    scan_text(text, location, Surface::Full, allow, false, out)
}

/// The transcript lines (`events`, then `controlOut`) and the blocks the
/// model streamed across events: the bulk of the work, scanned in parallel,
/// merged in order (so output is stable).
fn transcript_findings(events: &[&str], control_out: &[&str], allow: &AllowList) -> Vec<Finding> {
    let line_findings = |key: &'static str, lines: &[&str]| -> Vec<Finding> {
        lines
            .par_iter()
            .enumerate()
            .with_min_len(256)
            .flat_map_iter(|(i, line)| {
                let mut out = vec![];
                let surface = if is_capability_manifest(line) {
                    Surface::Manifest
                } else {
                    Surface::Full
                };
                scan_text(line, &format!("{key}[{i}]"), surface, allow, true, &mut out);
                out
            })
            .collect()
    };
    let mut findings = line_findings("events", events);
    streamed_blocks(events, allow, &mut findings);
    findings.extend(line_findings("controlOut", control_out));
    findings
}

/// Whether the run inherited the host's configuration (a host-inheriting or
/// unknown tier), the only runs the structural host-inventory check is for.
fn inherits_host(doc: &Map<String, Value>, scenario: Option<&Map<String, Value>>) -> bool {
    fn known(v: Option<&Value>) -> Option<&str> {
        v.and_then(Value::as_str)
            .filter(|t| KNOWN_TIERS.contains(t))
    }
    let tier = known(doc.get("effectiveFidelity"))
        .or_else(|| known(scenario.and_then(|s| s.get("fidelity"))));
    tier.is_none_or(|t| HOST_INHERITING.contains(&t))
}

/// The structural host-inventory check over every transcript line that may
/// carry one.
fn host_inventory_of_lines(
    doc: &Map<String, Value>,
    events: &[&str],
    control_out: &[&str],
    allow: &AllowList,
    out: &mut Vec<Finding>,
) {
    let accounted = Accounted {
        plugins: declared_plugins(events),
        skills_under_test: skills_under_test(doc),
    };
    for (key, lines) in [("events", events), ("controlOut", control_out)] {
        for (i, line) in lines.iter().enumerate() {
            if !might_carry_inventory(line) {
                continue;
            }
            if let Ok(v) = serde_json::from_str::<Value>(line) {
                host_inventory(&v, &format!("{key}[{i}]"), allow, &accounted, out);
            }
        }
    }
}

/// One `artifacts[]` entry: its path, and its body as far as it is in the
/// cassette.
fn scan_artifact(a: &Value, allow: &AllowList, out: &mut Vec<Finding>) {
    let Some(path) = a.get("path").and_then(Value::as_str) else {
        return;
    };
    scan_full(path, &format!("artifact path {path}"), allow, out);
    let loc = format!("artifact {path}");
    match a.get("body").and_then(Value::as_str) {
        Some(body) if a.get("encoding").and_then(Value::as_str) == Some("base64") => {
            scan_base64_body(body, path, &loc, allow, out)
        }
        Some(body) => scan_full(body, &loc, allow, out),
        None => out.extend(body_not_committed(a, &loc)),
    }
}

/// A base64 body: scanned as text when it decodes to UTF-8, entry by entry
/// when it is a zip, part by part when it is a PDF, else a `binary` finding.
fn scan_base64_body(body: &str, path: &str, loc: &str, allow: &AllowList, out: &mut Vec<Finding>) {
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(body.as_bytes())
        .ok();
    let entries = decoded
        .as_deref()
        .filter(|b| crate::document::is_zip(b))
        .and_then(crate::document::zip_entries);
    let pdf = decoded
        .as_deref()
        .filter(|b| entries.is_none() && std::str::from_utf8(b).is_err())
        .and_then(crate::document::pdf::scan_parts);
    match decoded.as_deref().map(std::str::from_utf8) {
        Some(Ok(text)) => scan_full(text, loc, allow, out),
        // reel's departure: an Office document or other zip is scanned
        // entry by entry, not called binary.
        _ if entries.is_some() => {
            for (entry, text) in entries.iter().flatten() {
                scan_full(text, &format!("{loc} → {entry}"), allow, out);
            }
        }
        // reel's departure: a PDF's text is scanned by page, metadata, form
        // field and every other string.
        _ if pdf.is_some() => {
            for (part, text) in pdf.into_iter().flatten() {
                scan_full(&text, &format!("{loc} → {part}"), allow, out);
            }
        }
        _ if allow.allows(path, Class::Binary) => {}
        _ => out.push(Finding::structural(
            loc,
            Class::Binary,
            "binary",
            format!(
                "(committed binary body — not text-scannable; review and clear with --allow \
                    {path} (a pattern matched on this path); note --allow-patterns-file is a \
                    FILE of patterns, not this path)"
            ),
        )),
    }
}

/// The `unscanned` finding of an artifact whose body the recording left
/// out, saying why. reel's departure: an input or read-only file's body is
/// never committed by design, so there is nothing of it in the cassette to
/// leak or to scan.
fn body_not_committed(a: &Value, loc: &str) -> Option<Finding> {
    let truncated = a.get("truncated").and_then(Value::as_bool) == Some(true);
    let reason = a.get("truncationReason").and_then(Value::as_str);
    if !truncated || matches!(reason, Some("input" | "readonly")) {
        return None;
    }
    let bytes = a.get("bytes").and_then(Value::as_u64).unwrap_or(0);
    let sample = match reason {
        Some("size") => format!(
            "(body not committed: {bytes} bytes is over the recording's inline cap, so only its \
                hash is in the cassette and nothing of it was scanned)"
        ),
        Some("unreadable") => "(body not committed: the file could not be read when the run \
            was recorded; only its path is in the cassette)"
            .into(),
        _ => "(body not committed; only its hash is in the cassette)".into(),
    };
    Some(Finding::structural(
        loc,
        Class::Unscanned,
        "unscanned",
        sample,
    ))
}

/// The frozen scenario's prompt, answers and assertions, as cowork-harness
/// scans them.
fn scan_scenario(scenario: Option<&Map<String, Value>>, allow: &AllowList, out: &mut Vec<Finding>) {
    let field = |k: &str| scenario.and_then(|s| s.get(k));
    let as_json =
        |k: &str| serde_json::to_string(field(k).unwrap_or(&Value::Null)).unwrap_or_default();
    let prompt = field("prompt").and_then(Value::as_str).unwrap_or("");
    scan_full(prompt, "scenario.prompt", allow, out);
    for key in ["answers", "assert"] {
        let location = format!("scenario.{key}");
        scan_text(&as_json(key), &location, Surface::Full, allow, true, out);
    }
}

/// reel: the remaining scenario fields cowork-harness leaves unscanned (e.g.
/// `expect_denied`, custom keys) get the full net too.
fn scan_other_scenario_fields(
    scenario: Option<&Map<String, Value>>,
    allow: &AllowList,
    out: &mut Vec<Finding>,
) {
    let scanned_elsewhere = ["prompt", "answers", "assert", "name", "session"];
    for (k, v) in scenario.into_iter().flatten() {
        if scanned_elsewhere.contains(&k.as_str()) {
            continue;
        }
        let text = match v {
            Value::String(s) => s.clone(),
            other => serde_json::to_string(other).unwrap_or_default(),
        };
        let location = format!("scenario.{k}");
        scan_text(&text, &location, Surface::Full, allow, !v.is_string(), out);
    }
}

/// The fingerprint's skill paths and the recording's metadata: visible
/// roots, the scenario's name and session, its source, the agent image.
fn scan_metadata(
    doc: &Map<String, Value>,
    scenario: Option<&Map<String, Value>>,
    allow: &AllowList,
    out: &mut Vec<Finding>,
) {
    if let Some(fp) = doc.get("fingerprint") {
        for s in str_array(fp.get("skillSources")).unwrap_or_default() {
            scan_full(s, "fingerprint.skillSources", allow, out);
        }
        if let Some(Value::Array(sigs)) = fp.get("fileSigs") {
            for p in sigs.iter().filter_map(|e| e.get(0).and_then(Value::as_str)) {
                scan_full(p, "fingerprint.fileSigs", allow, out);
            }
        }
    }
    let roots = str_array(doc.get("userVisibleRoots")).unwrap_or_default();
    for (i, r) in roots.iter().enumerate() {
        scan_full(r, &format!("metadata:userVisibleRoots[{i}]"), allow, out);
    }
    let sc_str = |k: &str| {
        scenario
            .and_then(|s| s.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    scan_full(sc_str("name"), "metadata:scenario.name", allow, out);
    scan_full(sc_str("session"), "metadata:scenario.session", allow, out);
    if let Some(src) = doc.get("scenarioSource").and_then(Value::as_str) {
        scan_full(src, "metadata:scenarioSource", allow, out);
    }
    if let Some(r) = doc
        .get("environment")
        .and_then(|e| e.get("agentImage"))
        .and_then(|i| i.get("ref"))
        .and_then(Value::as_str)
    {
        scan_full(r, "metadata:environment.agentImage.ref", allow, out);
    }
}

/// Top-level fields scanned by [`scan_document`] itself (or, `$schema`, the
/// format's published URL).
const SCANNED_FIELDS: [&str; 6] = [
    "$schema",
    "events",
    "controlOut",
    "scenario",
    "userVisibleRoots",
    "scenarioSource",
];

/// Strings inside the partly scanned fields that [`scan_document`] already
/// scanned under a cowork-harness locator.
fn scanned_leaf(path: &str) -> bool {
    let tail = |prefix: &str, suffix: &str| {
        path.strip_prefix(prefix)
            .and_then(|r| r.strip_suffix(suffix))
            .is_some_and(|idx| idx.starts_with('[') && !idx[1..].contains(['[', '.']))
    };
    tail("artifacts", "].path")
        || tail("artifacts", "].body")
        || tail("folderPrefixMap", "].from")
        || tail("fingerprint.skillSources", "]")
        || tail("fingerprint.fileSigs", "][0]")
        || path == "environment.agentImage.ref"
}

/// Every string (and object key) of the document outside the fields
/// cowork-harness scans — `timeline`, `preRunPaths`, `preRunHashes`,
/// `environment`, `folderPrefixMap[].to`, fields a future version adds —
/// gets the full net, located by its JSON path (`timeline[3].name`), so no
/// part of a cassette is a blind spot.
fn rest_of_document(doc: &Map<String, Value>, allow: &AllowList, out: &mut Vec<Finding>) {
    fn walk(v: &Value, path: &mut String, allow: &AllowList, out: &mut Vec<Finding>) {
        match v {
            Value::String(s) if !scanned_leaf(path) => {
                scan_text(s, path, Surface::Full, allow, false, out);
            }
            Value::Array(items) => {
                for (i, x) in items.iter().enumerate() {
                    let len = path.len();
                    let _ = write!(path, "[{i}]");
                    walk(x, path, allow, out);
                    path.truncate(len);
                }
            }
            Value::Object(map) => {
                for (k, x) in map {
                    let len = path.len();
                    // The key's locator is its object's: a key that is a
                    // secret must not be printed in the clear as a locator.
                    scan_text(
                        k,
                        &format!("{path} (key)"),
                        Surface::Full,
                        allow,
                        false,
                        out,
                    );
                    if k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                        let _ = write!(path, ".{k}");
                    } else {
                        let _ = write!(path, "[{}]", Value::String(k.clone()));
                    }
                    walk(x, path, allow, out);
                    path.truncate(len);
                }
            }
            _ => {}
        }
    }
    for (k, v) in doc {
        if SCANNED_FIELDS.contains(&k.as_str()) {
            continue;
        }
        let mut path = k.clone();
        walk(v, &mut path, allow, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn a_domain_spelled_in_two_cases_is_one_finding() {
        let line =
            r#"{"text":"see Schema.org, schema.org and SCHEMA.ORG; /home/Ann/x /home/ann/x"}"#;
        let f = dedup(
            scan_document(
                &doc(json!({"events":[line], "effectiveFidelity":"container"})),
                &AllowList::default(),
            )
            .unwrap(),
        );
        let domains: Vec<_> = f.iter().filter(|x| x.cls == Class::Domain).collect();
        assert_eq!(domains.len(), 1, "{f:?}");
        assert_eq!(
            (domains[0].sample.as_str(), domains[0].count),
            ("Schema.org", 3)
        );
        // Three matches in one line: one location, listed once.
        assert_eq!(domains[0].locations.len(), 1, "{:?}", domains[0].locations);
        // Paths are case-sensitive: two findings.
        assert_eq!(
            f.iter().filter(|x| x.cls == Class::Path).count(),
            2,
            "{f:?}"
        );
    }

    #[test]
    fn json_escapes_are_decoded_for_the_detectors() {
        assert!(matches!(
            decode_json_escapes("plain"),
            Cow::Borrowed("plain")
        ));
        assert!(matches!(decode_json_escapes(r"a\qb"), Cow::Borrowed(_)));
        assert_eq!(
            decode_json_escapes(r#"x\n\"y\/z\u0040\ud83d\ude00\udc00\\"#),
            "x\n\"y/z@\u{1F600}\u{FFFD}\\"
        );
        assert_eq!(decode_json_escapes(r"\u12"), r"\u12");
        // A key after `\n` (which defeats `\b` in the escaped bytes), an
        // `@` written `\u0040`, a URL written `https:\/\/`.
        let line = r#"{"text":"one\nhf_abcdefghijklmnopqrstuvwxyz0123456789AB\nmail jane\u0040acme-corp.com, https:\/\/u:S3cretPw9@git.acme-corp.com"}"#;
        let f = scan_document(
            &doc(json!({"events":[line], "effectiveFidelity":"container"})),
            &AllowList::default(),
        )
        .unwrap();
        let kinds: Vec<_> = f.iter().map(|f| f.kind).collect();
        for k in ["huggingface-token", "email", "url-credentials"] {
            assert!(kinds.contains(&k), "{k} missing from {kinds:?}");
        }
        assert!(
            f.iter().all(|f| f.field.as_deref() == Some("$.text")),
            "{f:?}"
        );
    }

    /// Stream lines of one content block, its text cut into `fragments`.
    fn streamed(kind: &str, fragments: &[&str]) -> Vec<String> {
        let (delta_type, field) = match kind {
            "text" => ("text_delta", "text"),
            _ => ("input_json_delta", "partial_json"),
        };
        let ev = |event: Value| {
            json!({"type": "stream_event", "event": event, "parent_tool_use_id": null}).to_string()
        };
        let mut lines = vec![ev(json!({"type": "content_block_start", "index": 1}))];
        for f in fragments {
            lines.push(ev(json!({
                "type": "content_block_delta", "index": 1,
                "delta": {"type": delta_type, field: f},
            })));
        }
        lines.push(ev(json!({"type": "content_block_stop", "index": 1})));
        lines
    }

    fn scan_lines(lines: &[String]) -> Vec<Finding> {
        let events: Vec<Value> = lines.iter().map(|l| json!(l)).collect();
        scan_document(
            &doc(json!({"events": events, "effectiveFidelity": "container"})),
            &AllowList::default(),
        )
        .unwrap()
    }

    #[test]
    fn a_secret_split_across_streamed_fragments_is_found_in_the_joined_block() {
        // A GitHub token and an email, each cut across fragments of a text
        // block; an AWS key cut across `partial_json` fragments of a tool input.
        let text = streamed(
            "text",
            &[
                "token ghp_abcdefghij",
                "klmnopqrstuvwxyz",
                "0123456789 and jane.do",
                "e@acme-corp.com",
            ],
        );
        let input = streamed("json", &[r#"{"content":"AKIAQWER"#, r#"TYUIOPASDFGH"}"#]);
        let f = scan_lines(&[text, input].concat());
        let found: Vec<_> = f.iter().map(|f| (f.kind, f.location.as_str())).collect();
        // Lines 1–4 are the text block's fragments, 7–8 the tool input's.
        for (kind, at) in [
            ("github-token", "events[1..=4] (streamed fragments joined)"),
            ("email", "events[1..=4] (streamed fragments joined)"),
            (
                "aws-access-key-id",
                "events[7..=8] (streamed fragments joined)",
            ),
        ] {
            assert!(
                found.contains(&(kind, at)),
                "{kind} at {at} missing from {found:?}"
            );
        }
        let aws = f.iter().find(|x| x.kind == "aws-access-key-id").unwrap();
        assert_eq!(
            aws.field.as_deref(),
            Some("$.content"),
            "the joined input is JSON"
        );
        assert!(f.iter().all(|x| !x.sample.contains("QWERTYUIOP")), "{f:?}");
    }

    #[test]
    fn a_secret_whole_in_one_fragment_is_reported_once_and_clean_fragments_raise_nothing() {
        let f = scan_lines(&streamed("text", &["key AKIAQWERTYUIOPASDFGH ok", " more"]));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].location, "events[1]");
        // Near misses stay near misses when joined: a short hex id, prose.
        let f = scan_lines(&streamed(
            "text",
            &["build 4f3a", "9c1 passed; see the ", "report"],
        ));
        assert!(f.is_empty(), "{f:?}");
    }

    #[test]
    fn no_events_is_unscannable() {
        assert!(scan_document(&doc(json!({"scenario": {}})), &AllowList::default()).is_err());
    }

    #[test]
    fn finds_secret_in_event_with_field_path_and_mask() {
        let line = json!({"type":"assistant","message":{"content":[{"type":"text","text":"key \
            AKIAQWERTYUIOPASDFGH ok"}]}})
        .to_string();
        let f = scan_document(
            &doc(json!({"events":[line], "effectiveFidelity":"container"})),
            &AllowList::default(),
        )
        .unwrap();
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].kind, "aws-access-key-id");
        assert_eq!(f[0].location, "events[0]");
        assert_eq!(f[0].field.as_deref(), Some("$.message.content[0].text"));
        assert!(!f[0].sample.contains("QWERTYUIOP"), "{}", f[0].sample);
    }

    #[test]
    fn allow_is_whole_token_and_class_scoped() {
        let mut allow = AllowList::default();
        allow.add(r"acme\.com", Some(Class::Domain)).unwrap();
        let f = scan_document(
            &doc(json!({"events":["mail bob@acme.com at \
                acme.com"], "effectiveFidelity":"container"})),
            &allow,
        )
        .unwrap();
        let classes: Vec<_> = f.iter().map(|f| f.cls).collect();
        // the domain allow never clears the email finding
        assert_eq!(classes, vec![Class::Email], "{f:?}");
        assert_eq!(f[0].sample, "bob@acme.com");
    }

    #[test]
    fn skills_under_test_are_not_host_inventory() {
        let doc: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "fingerprint": {
                "skillSources": ["../skills/note-style"],
                "fileSigs": [["SKILL.md", "00"], ["plugins/p/skills/pdf/SKILL.md", "11"], ["README.md", "22"]]
            }
        }))
        .unwrap();
        assert_eq!(skills_under_test(&doc), vec!["note-style", "pdf"]);
        let init = serde_json::json!({"type": "system", "subtype": "init", "skills": ["pdf", "note-style", "payroll-export"]});
        let accounted = Accounted {
            plugins: vec![],
            skills_under_test: skills_under_test(&doc),
        };
        let mut out = vec![];
        host_inventory(
            &init,
            "events[0]",
            &AllowList::default(),
            &accounted,
            &mut out,
        );
        let flagged: Vec<_> = out.iter().map(|f| f.sample.as_str()).collect();
        assert_eq!(flagged, vec!["payroll-export"]);
    }

    #[test]
    fn host_inventory_flags_foreign_servers_only_on_host_tiers() {
        let line = json!({"type":"system","subtype":"init","mcp_servers":[{"name":"cowork"},{"name":"acme-crm"}],"agents":["Plan","acme:helper"],"plugins":[{"name":"acme"}]}).to_string();
        let f = scan_document(
            &doc(json!({"events":[line.clone()], "effectiveFidelity":"hostloop"})),
            &AllowList::default(),
        )
        .unwrap();
        let inv: Vec<_> = f.iter().filter(|f| f.cls == Class::HostInventory).collect();
        assert_eq!(inv.len(), 1, "{f:?}");
        assert_eq!(inv[0].sample, "acme-crm");
        let f = scan_document(
            &doc(json!({"events":[line], "effectiveFidelity":"container"})),
            &AllowList::default(),
        )
        .unwrap();
        assert!(f.iter().all(|f| f.cls != Class::HostInventory));
    }
}
