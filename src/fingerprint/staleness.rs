//! The staleness verdict shared by `replay` and `verify-cassettes`
//! (docs/spec/fingerprint.md §3.2–3.5): compares a cassette's recorded
//! fingerprint with the live skill tree and the latest platform baseline, and
//! says exactly what changed and which command fixes it.
//!
//! `compute(&cassette, session_override)` returns every finding and note; the
//! gating rules ([`FindingClass::gates_bare_replay`], [`Gate`],
//! [`Staleness::failures`]) live here too, so no caller re-derives which
//! classes fail what. This module never rewrites a cassette (`rehash` does).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::cassette::{Cassette, FingerprintRecord, HASH_FORMAT_EPOCH, HASH_FORMAT_JCS1};

use super::snapshot::agent_skill_name;

/// What cowork-harness's *latest* shipped baseline says — reel has no
/// baseline catalogue of its own, so the values the original's latest
/// baseline (`baselines/desktop-1.34493.1.json` at cowork-harness `e0e54cf`)
/// carries are embedded here, in ONE place. The `baseline` and
/// `prompt-assets` checks compare against them; bump them together when reel
/// adopts a newer platform baseline (and re-record or accept the `baseline`
/// finding on older cassettes).
pub mod latest_baseline {
    /// `appVersion` of the latest baseline (`fingerprint.baseline` of a
    /// cassette recorded against it).
    pub const APP_VERSION: &str = "1.34493.1";
    /// Its file name stem, as a scenario pins it (`baseline: desktop-1.34493.1`).
    pub const NAME: &str = "desktop-1.34493.1";
    /// `promptAssetsHash` of its committed prompt assets (spec §1.10).
    pub const PROMPT_ASSETS_HASH: &str = "491afe2862dc67ea";
    /// Host-loop gate `1143815894` is ON (and `requireFullVmSandbox` unset),
    /// so `fidelity: cowork` resolves to `hostloop`.
    pub const COWORK_RESOLVES_TO: &str = "hostloop";
}

/// Class of a staleness finding (the strings are cowork-harness's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FindingClass {
    Baseline,
    Skill,
    SharedRoot,
    Format,
    UnverifiableBaseline,
    UnverifiableSkill,
    ResolvedTier,
    UnverifiableTier,
    PromptAssets,
    UnverifiablePromptAssets,
    /// The `workspace_fixture` changed since record (cassette v14).
    Fixture,
    /// The recorded fixture signature cannot be checked today.
    UnverifiableFixture,
}

impl FindingClass {
    /// A bare `replay` (no flags) fails only on this class.
    pub fn gates_bare_replay(self) -> bool {
        matches!(
            self,
            FindingClass::UnverifiableSkill | FindingClass::UnverifiableFixture
        )
    }

    /// Classes that `--fail-on-skill-drift` (and `--reassert`) turn into
    /// failures; the fixture is test input the skill reads, so its drift counts.
    pub fn is_skill_drift(self) -> bool {
        matches!(
            self,
            FindingClass::Skill
                | FindingClass::SharedRoot
                | FindingClass::UnverifiableSkill
                | FindingClass::Fixture
                | FindingClass::UnverifiableFixture
        )
    }

    /// Classes an explicit `--session` turns into failures (an override may
    /// never lower the verdict): skill drift plus `format`.
    pub fn gates_explicit_session(self) -> bool {
        self.is_skill_drift() || self == FindingClass::Format
    }

    /// `unverifiable-*`: could not verify (verify-cassettes' `unverifiable[]`).
    pub fn is_unverifiable(self) -> bool {
        matches!(
            self,
            FindingClass::UnverifiableBaseline
                | FindingClass::UnverifiableSkill
                | FindingClass::UnverifiableTier
                | FindingClass::UnverifiablePromptAssets
                | FindingClass::UnverifiableFixture
        )
    }

    /// The wire string (`skill`, `shared-root`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            FindingClass::Baseline => "baseline",
            FindingClass::Skill => "skill",
            FindingClass::SharedRoot => "shared-root",
            FindingClass::Format => "format",
            FindingClass::UnverifiableBaseline => "unverifiable-baseline",
            FindingClass::UnverifiableSkill => "unverifiable-skill",
            FindingClass::ResolvedTier => "resolved-tier",
            FindingClass::UnverifiableTier => "unverifiable-tier",
            FindingClass::PromptAssets => "prompt-assets",
            FindingClass::UnverifiablePromptAssets => "unverifiable-prompt-assets",
            FindingClass::Fixture => "fixture",
            FindingClass::UnverifiableFixture => "unverifiable-fixture",
        }
    }
}

/// One staleness finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub class: FindingClass,
    /// The full human message (cowork-harness wording), ending with the fix.
    pub message: String,
}

impl Finding {
    /// The exact command that fixes this finding, for a `hint:` line under
    /// it. `message` keeps cowork-harness's wording (ending in `re-record`,
    /// or naming `reel rehash`), so renderers add this hint rather than
    /// rewording the message.
    pub fn hint(&self, cassette: &Cassette) -> Option<String> {
        let scenario = match cassette.scenario_source() {
            Some(src) => cassette.dir().join(src).display().to_string(),
            None => "<scenario.yaml>".to_owned(),
        };
        if self.message.contains("reel rehash") {
            return Some(format!(
                "migrate with `reel rehash {}/`, or re-record with `reel record {scenario}`",
                cassette.dir().display()
            ));
        }
        if self.message.contains("--session <file>") {
            return Some(format!(
                "point at the cassette's session: `reel replay {} --session <session.yaml>`",
                cassette.path.display()
            ));
        }
        self.message
            .trim_end()
            .ends_with("re-record")
            .then(|| format!("re-record with `reel record {scenario}`"))
    }
}

/// Findings plus informational notes (`<kind>: <text>`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Staleness {
    pub findings: Vec<Finding>,
    pub notes: Vec<String>,
}

/// Which replay flags decide what fails (spec §3.5; first matching rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// No flags: only `unverifiable-skill` fails.
    Bare,
    /// `--session <file>` given: skill drift and `format` fail.
    ExplicitSession,
    /// `--fail-on-skill-drift` / `--reassert`: `skill`, `shared-root`, `unverifiable-skill`.
    FailOnSkillDrift,
    /// `--strict`: every finding.
    Strict,
}

impl Staleness {
    /// Failing-assertion messages for `gate` (prefixes as cowork-harness).
    pub fn failures(&self, gate: Gate) -> Vec<String> {
        self.findings
            .iter()
            .filter_map(|f| {
                let (fails, prefix) = match gate {
                    Gate::Strict => (true, "cassette stale (--strict)"),
                    Gate::FailOnSkillDrift => (
                        f.class.is_skill_drift(),
                        "skill-source drift (--fail-on-skill-drift)",
                    ),
                    Gate::ExplicitSession => (
                        f.class.gates_explicit_session(),
                        "skill-source drift under an explicit --session",
                    ),
                    Gate::Bare => (
                        f.class.gates_bare_replay(),
                        "skill staleness could not be verified",
                    ),
                };
                fails.then(|| format!("{prefix}: {}", f.message))
            })
            .collect()
    }

    fn push(&mut self, class: FindingClass, message: impl Into<String>) {
        self.findings.push(Finding {
            class,
            message: message.into(),
        });
    }
}

// ---------------------------------------------------------------------------

fn tier_check(c: &Cassette, out: &mut Staleness) {
    let scenario = c.scenario();
    let authored = scenario
        .get("fidelity")
        .and_then(Value::as_str)
        .unwrap_or("container");
    let eff = c.effective_fidelity();
    if authored != "cowork" {
        if eff.is_none() {
            out.notes.push(format!(
                "resolved-tier: cassette predates effectiveFidelity, but the scenario pins an \
                    explicit tier ('{authored}') — tier statically knowable; nothing \
                    baseline-dependent to verify"
            ));
        }
        return;
    }
    let Some(eff) = eff else {
        out.push(
            FindingClass::UnverifiableTier,
            "fidelity: cowork cassette predates effectiveFidelity — cannot verify tier stability; \
                re-record",
        );
        return;
    };
    let name = scenario
        .get("baseline")
        .and_then(Value::as_str)
        .unwrap_or("latest");
    if name != "latest" && name != latest_baseline::NAME {
        // reel embeds only the latest baseline (see `latest_baseline`).
        out.push(
            FindingClass::UnverifiableTier,
            format!(
                "fidelity: cowork cassette's baseline '{name}' failed to load (reel embeds only \
                    the latest baseline, {}) — cannot verify tier stability (can't verify ⇒ not \
                    green)",
                latest_baseline::NAME
            ),
        );
        return;
    }
    let resolved = latest_baseline::COWORK_RESOLVES_TO;
    if resolved != eff {
        out.push(
            FindingClass::ResolvedTier,
            format!(
                "fidelity: cowork now resolves to '{resolved}' (baseline {}, gate 1143815894) but \
                    the cassette was recorded at '{eff}' — the recording exercises the wrong tier; \
                    re-record",
                latest_baseline::APP_VERSION
            ),
        );
    }
}

fn discovery_surface_note(c: &Cassette, out: &mut Staleness) {
    let mut tools: Option<Vec<String>> = None;
    for line in c.event_lines() {
        // Only an init line matters: skip the rest unparsed. Its subtype
        // spells `init` unless written with `\u` escapes.
        if !line.stored().contains("init") && !line.stored().contains("\\u") {
            continue;
        }
        let line = line.text();
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if v.get("type").and_then(Value::as_str) != Some("system")
            || v.get("subtype").and_then(Value::as_str) != Some("init")
        {
            continue;
        }
        tools = v.get("tools").and_then(Value::as_array).map(|a| {
            a.iter()
                .filter_map(|t| t.as_str().map(str::to_owned))
                .collect()
        });
        break;
    }
    let Some(tools) = tools.filter(|t| !t.is_empty()) else {
        return;
    };
    if tools
        .iter()
        .any(|t| t.starts_with("mcp__skills__") || t.starts_with("mcp__plugins__"))
    {
        return;
    }
    let authored = c.scenario().get("fidelity").and_then(Value::as_str);
    let env_tier = c
        .doc
        .get("environment")
        .and_then(|e| e.get("tier"))
        .and_then(Value::as_str);
    let tier = env_tier
        .or(c.effective_fidelity())
        .or(authored.filter(|a| *a != "cowork"));
    let Some(tier) = tier.filter(|t| *t == "container" || *t == "hostloop") else {
        return;
    };
    out.notes.push(format!(
        "discovery-surface: recorded before the skills/plugins SDK-MCP discovery servers existed \
            at this tier ({tier}, added in 1.10.0) — its {}-tool init inventory declares no \
            mcp__skills__*/mcp__plugins__*. Re-record if this scenario asserts on those tools; \
            harmless otherwise.",
        tools.len()
    ));
}

/// Paths that occur more than once in a fileSigs list, sorted.
fn duplicate_paths(sigs: Option<&Vec<(String, String)>>) -> Vec<String> {
    let Some(sigs) = sigs else { return Vec::new() };
    let mut seen = HashSet::new();
    let mut dupes: Vec<String> = Vec::new();
    for (p, _) in sigs {
        if !seen.insert(p.as_str()) && !dupes.contains(p) {
            dupes.push(p.clone());
        }
    }
    dupes.sort_by(|a, b| super::utf16_cmp(a, b));
    dupes
}

/// The exact per-path difference of two fileSigs lists (§3.3).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileSigDiff {
    pub changed: Vec<String>,
    pub added: Vec<String>,
    pub removed: Vec<String>,
}

/// Maps keyed by path (duplicates collapse to the last entry, keeping the
/// first position); `added`/`changed` in live order, `removed` in recorded order.
pub fn diff_file_sigs(recorded: &[(String, String)], live: &[(String, String)]) -> FileSigDiff {
    fn collapse(list: &[(String, String)]) -> (Vec<&str>, HashMap<&str, &str>) {
        let mut order = Vec::new();
        let mut map = HashMap::new();
        for (p, h) in list {
            if map.insert(p.as_str(), h.as_str()).is_none() {
                order.push(p.as_str());
            }
        }
        (order, map)
    }
    let (rec_order, rec) = collapse(recorded);
    let (live_order, liv) = collapse(live);
    let mut d = FileSigDiff::default();
    for p in &live_order {
        match rec.get(p) {
            None => d.added.push((*p).to_owned()),
            Some(h) if *h != liv[p] => d.changed.push((*p).to_owned()),
            _ => {}
        }
    }
    for p in rec_order {
        if !liv.contains_key(p) {
            d.removed.push(p.to_owned());
        }
    }
    d
}

/// `<n> changed (a, b, c, +k more); <n> added (…); <n> removed (…)`, or
/// `None` for an empty diff.
pub fn summarize(d: &FileSigDiff) -> Option<String> {
    let sample = |a: &[String]| {
        let head = a.iter().take(3).cloned().collect::<Vec<_>>().join(", ");
        if a.len() > 3 {
            format!("{head}, +{} more", a.len() - 3)
        } else {
            head
        }
    };
    let mut parts = Vec::new();
    for (list, word) in [
        (&d.changed, "changed"),
        (&d.added, "added"),
        (&d.removed, "removed"),
    ] {
        if !list.is_empty() {
            parts.push(format!("{} {word} ({})", list.len(), sample(list)));
        }
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

fn partition(
    d: &FileSigDiff,
    scope: &HashSet<&str>,
    scope_agents: bool,
) -> (FileSigDiff, FileSigDiff) {
    let private = |p: &str| -> bool {
        let parts: Vec<&str> = p.split('/').collect();
        if parts[0] == "skills" && parts.len() >= 2 {
            return scope.contains(parts[1]);
        }
        scope_agents && agent_skill_name(p, false).is_some_and(|n| scope.contains(n))
    };
    let mut shared = FileSigDiff::default();
    let mut skill = FileSigDiff::default();
    for (src, pick) in [(&d.changed, 0usize), (&d.added, 1), (&d.removed, 2)] {
        for p in src {
            let bucket = if private(p) { &mut skill } else { &mut shared };
            [&mut bucket.changed, &mut bucket.added, &mut bucket.removed][pick].push(p.clone());
        }
    }
    (shared, skill)
}

fn dup_message(dup: &[String]) -> String {
    let head = dup.iter().take(3).cloned().collect::<Vec<_>>().join(", ");
    let more = if dup.len() > 3 {
        format!(", +{} more", dup.len() - 3)
    } else {
        String::new()
    };
    format!(
        "ambiguous duplicate manifest path(s) across mounts ({head}{more}) — drift attribution is \
            unavailable for them; the hash difference is still real"
    )
}

/// §3.4: with `COWORK_HARNESS_DEBUG_SKILLHASH=1`, list the live entries on
/// stderr. Deliberate deviation: the original also prints a once-per-process
/// hint naming that variable on every mismatch; reel does not (the finding
/// already names the changed files, and `reel fingerprint --files` lists the
/// whole set), which keeps replay's stderr identical to the original's
/// minus that hint.
fn debug_dump(rec: &FingerprintRecord, live: &FingerprintRecord) {
    if !std::env::var("COWORK_HARNESS_DEBUG_SKILLHASH").is_ok_and(|v| v == "1") {
        return;
    }
    for (p, sha) in live.file_sigs.iter().flatten() {
        let junk = if super::snapshot::is_os_junk(p) {
            "  (OS junk!)"
        } else {
            ""
        };
        crate::messages::debug(format!("  {}  {p:?}{junk}", &sha[..12.min(sha.len())]));
    }
    let short = |h: &Option<String>| {
        h.as_deref()
            .map(|h| h[..12.min(h.len())].to_owned())
            .unwrap_or_default()
    };
    crate::messages::debug(format!(
        "reel: skill-hash: recorded {} vs live {}; contentSig {}",
        short(&rec.skill_hash),
        short(&live.skill_hash),
        if rec.content_sig == live.content_sig {
            "MATCHES"
        } else {
            "DIFFERS"
        }
    ));
}

fn skill_drift(rec: &FingerprintRecord, live: &FingerprintRecord, out: &mut Staleness) {
    debug_dump(rec, live);
    let mut dup = duplicate_paths(rec.file_sigs.as_ref());
    for p in duplicate_paths(live.file_sigs.as_ref()) {
        if !dup.contains(&p) {
            dup.push(p);
        }
    }
    if let (Some(_), Some(_)) = (&rec.shared_hash, &live.shared_hash) {
        scoped_drift(rec, live, &dup, out);
        return;
    }
    if !dup.is_empty() {
        out.push(FindingClass::Skill, dup_message(&dup));
    }
    let summary = match (&rec.file_sigs, &live.file_sigs) {
        (Some(r), Some(l)) => summarize(&diff_file_sigs(r, l)),
        _ => None,
    };
    match summary {
        Some(s) => out.push(
            FindingClass::Skill,
            format!("skill files changed since record — {s} — re-record"),
        ),
        None => out.push(
            FindingClass::Skill,
            "local skill/plugin dir contents changed since record — re-record",
        ),
    }
}

/// Drift of a scoped hash (a shared root beside the scoped skills): each
/// change is told apart as the skills' own or the shared root's.
fn scoped_drift(
    rec: &FingerprintRecord,
    live: &FingerprintRecord,
    dup: &[String],
    out: &mut Staleness,
) {
    let scope: Vec<String> = rec.skill_scope.clone().unwrap_or_default();
    let label = if scope.is_empty() {
        "skill".to_owned()
    } else {
        scope
            .iter()
            .map(|s| format!("skills/{s}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !dup.is_empty() {
        let all_private = dup
            .iter()
            .all(|p| scope.iter().any(|s| p.starts_with(&format!("skills/{s}/"))));
        let class = if all_private {
            FindingClass::Skill
        } else {
            FindingClass::SharedRoot
        };
        out.push(class, dup_message(dup));
    }
    let shared_moved = rec.shared_hash != live.shared_hash;
    let shared_changed =
        || format!("shared root changed since record (scope: {label}) — re-record");
    let (Some(r), Some(l)) = (&rec.file_sigs, &live.file_sigs) else {
        if shared_moved {
            out.push(FindingClass::SharedRoot, shared_changed());
            out.push(
                FindingClass::Skill,
                format!(
                    "{label} may also have changed since record (no per-file manifest to \
                    isolate) — re-record"
                ),
            );
        } else {
            out.push(
                FindingClass::Skill,
                format!("{label} changed since record — re-record"),
            );
        }
        return;
    };
    let scope_set: HashSet<&str> = scope.iter().map(String::as_str).collect();
    let scope_agents = live.agent_scope.as_deref() == Some("skill");
    let (shared, skill) = partition(&diff_file_sigs(r, l), &scope_set, scope_agents);
    let shared_summary = summarize(&shared);
    let skill_summary = summarize(&skill);
    if let Some(s) = &shared_summary {
        out.push(
            FindingClass::SharedRoot,
            format!("shared root changed since record (scope: {label}) [{s}] — re-record"),
        );
    }
    if let Some(s) = &skill_summary {
        out.push(
            FindingClass::Skill,
            format!("{label} changed since record [{s}] — re-record"),
        );
    }
    if shared_summary.is_none() && skill_summary.is_none() {
        if shared_moved {
            out.push(FindingClass::SharedRoot, shared_changed());
        }
        out.push(
            FindingClass::Skill,
            format!("{label} changed since record — re-record"),
        );
    }
}

/// Gate-option label drift (`labelProvenance`, §1.12): vanished labels and
/// reorders in the skill prose, checked in the resolved roots.
fn label_provenance(stamp: &Value, dirs: &[std::path::PathBuf], out: &mut Staleness) {
    let Some(items) = stamp.as_array() else {
        return;
    };
    if dirs.is_empty() {
        return;
    }
    for item in items {
        let (Some(file), Some(labels)) = (
            item.get("file").and_then(Value::as_str),
            item.get("labels").and_then(Value::as_array),
        ) else {
            continue;
        };
        let labels: Vec<&str> = labels.iter().filter_map(Value::as_str).collect();
        // `file` is untrusted: a path escaping the root is never read.
        if Path::new(file)
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            continue;
        }
        let Some(text) = dirs.iter().find_map(|d| std::fs::read(d.join(file)).ok()) else {
            continue;
        };
        let text = String::from_utf8_lossy(&text);
        let missing: Vec<&str> = labels
            .iter()
            .copied()
            .filter(|l| !text.contains(l))
            .collect();
        if !missing.is_empty() {
            let quoted = missing
                .iter()
                .map(|m| format!("\"{m}\""))
                .collect::<Vec<_>>()
                .join(", ");
            out.push(
                FindingClass::Skill,
                format!("gate option label(s) no longer in {file}: {quoted} — re-record"),
            );
            continue;
        }
        let mut now: Vec<(usize, &str)> = labels
            .iter()
            .map(|l| (text.find(l).unwrap_or(0), *l))
            .collect();
        now.sort_by_key(|(at, _)| *at);
        let now: Vec<&str> = now.into_iter().map(|(_, l)| l).collect();
        if now != labels {
            out.push(
                FindingClass::Skill,
                format!(
                    "gate option labels reordered in {file}: recorded [{}], now [{}] — re-record",
                    labels.join(", "),
                    now.join(", ")
                ),
            );
        }
    }
}

/// Computes the staleness of `cassette` against the live skill tree. Skill
/// roots come from the cassette's `scenario.session` resolved against the
/// cassette's directory, or from `session_override` (`--session FILE`).
pub fn compute(cassette: &Cassette, session_override: Option<&Path>) -> Staleness {
    let mut out = Staleness::default();
    tier_check(cassette, &mut out);
    discovery_surface_note(cassette, &mut out);
    fixture_check(cassette, &mut out);
    let Some(fp) = cassette.fingerprint() else {
        return out;
    };
    let live_baseline = latest_baseline::APP_VERSION;
    if fp.baseline.as_deref() != Some(live_baseline) {
        out.push(
            FindingClass::Baseline,
            format!(
                "baseline moved {} → {live_baseline} since record — re-record",
                fp.baseline.as_deref().unwrap_or("undefined")
            ),
        );
    }
    match &fp.prompt_assets_hash {
        None => out.notes.push(
            "prompt-assets: cassette predates prompt-asset fingerprinting — a prompt-asset edit \
                since record would be invisible; re-record to adopt the guard"
                .into(),
        ),
        Some(h)
            if fp.baseline.as_deref() == Some(live_baseline)
                && h != latest_baseline::PROMPT_ASSETS_HASH =>
        {
            out.push(
                FindingClass::PromptAssets,
                "the baseline's committed prompt assets changed since this cassette was recorded \
                    (same appVersion) — the recorded model saw a different rendered prompt; \
                    re-record",
            )
        }
        Some(_) => {}
    }
    let mut dirs = Vec::new();
    if fp.skill_hash.as_deref().is_some_and(|h| !h.is_empty()) {
        match super::live_for_cassette_detailed(cassette, session_override) {
            Err(e) => out.push(
                FindingClass::UnverifiableSkill,
                format!(
                    "skill dirs could not be hashed: {e} — cannot verify skill staleness \
                    (can't verify ⇒ not green)"
                ),
            ),
            Ok(live) => {
                dirs = live.sources.roots.clone();
                skill_checks(cassette, &fp, &live, session_override, &mut out);
            }
        }
    } else if fp.label_provenance.is_some() {
        dirs = super::resolve_sources(
            super::cassette_session(cassette),
            Some(cassette.dir()),
            session_override,
        )
        .roots;
    }
    if let Some(stamp) = &fp.label_provenance {
        label_provenance(stamp, &dirs, &mut out);
    }
    let n = fp.skill_sources.as_ref().map_or(0, Vec::len);
    if n >= 2 {
        out.notes.push(format!(
            "multi-root: cassette records {n} skill roots — skillHash cannot distinguish a file \
                MOVED between roots, and root fold order follows absolute paths — a rename can \
                read as drift. See docs/cassette.md."
        ));
    }
    out
}

/// The `workspace_fixture` signature (cassette v14): the fixture is resolved
/// against the cassette's directory, scanned as a recording would, and
/// compared with `fingerprint.workspaceFixtureSig`. A signature that cannot
/// be checked (none recorded, the directory gone, a scan refusal) is
/// `unverifiable-fixture`, never a silent skip.
fn fixture_check(c: &Cassette, out: &mut Staleness) {
    let Some(label) = c
        .scenario()
        .get("workspace_fixture")
        .and_then(Value::as_str)
    else {
        return;
    };
    let fp = c.fingerprint().unwrap_or_default();
    let Some(recorded) = fp.workspace_fixture_sig.as_deref() else {
        out.push(
            FindingClass::UnverifiableFixture,
            format!(
                "workspace_fixture {label}: the cassette records no fixture signature — cannot \
                 verify that the test input is unchanged (can't verify ⇒ not green); re-record"
            ),
        );
        return;
    };
    // Resolved as `path.resolve` does, lexically: the cassette's directory
    // may not exist yet (the live verdict judges a cassette before it is
    // written), and `cassettes/../fixtures` must not need it to.
    let dir = crate::paths::lexical(&c.dir().join(label));
    let live = match super::fixture::scan(&dir, label) {
        Ok(live) => live,
        Err(e) => {
            out.push(
                FindingClass::UnverifiableFixture,
                format!("{e} — cannot verify the fixture signature (can't verify ⇒ not green)"),
            );
            return;
        }
    };
    if live.sig == recorded {
        return;
    }
    let recorded_sigs = fp.workspace_fixture_file_sigs.unwrap_or_default();
    let detail = summarize(&diff_file_sigs(&recorded_sigs, &live.file_sigs))
        .map_or_else(String::new, |d| format!(" ({d})"));
    out.push(
        FindingClass::Fixture,
        format!(
            "workspace_fixture {label} changed since record{detail} — the run started from \
             different files; re-record"
        ),
    );
}

fn skill_checks(
    cassette: &Cassette,
    fp: &FingerprintRecord,
    live: &super::Live,
    session_override: Option<&Path>,
    out: &mut Staleness,
) {
    if !live.is_hashed() {
        out.push(
            FindingClass::UnverifiableSkill,
            unresolvable_message(&live.sources, session_override),
        );
        return;
    }
    if cassette.version < HASH_FORMAT_EPOCH {
        let dir = cassette.dir().display().to_string();
        out.push(
            FindingClass::UnverifiableSkill,
            format!(
                "recorded under hash format v{} (now v{HASH_FORMAT_EPOCH}) — digests are not \
                    comparable across the change. Run `reel rehash {dir}/` to migrate, or `reel \
                    rehash {} --session <session>` if the cassette has moved, or re-record",
                cassette.version,
                cassette.path.display()
            ),
        );
        return;
    }
    if let Some(other) = fp.hash_format.as_deref().filter(|f| *f != HASH_FORMAT_JCS1) {
        // Only reachable for a future cassette (the loader enforces jcs1 on
        // v12): an unknown format cannot be compared (spec §7.5).
        out.push(
            FindingClass::UnverifiableSkill,
            format!(
                "recorded under an unrecognized hash format '{other}' — this build cannot \
                verify it; re-record"
            ),
        );
        return;
    }
    let rec = fp;
    let cur = &live.records.jcs1;
    let rec_mode = rec.mode.as_deref().unwrap_or("raw");
    let live_mode = cur.mode.as_deref().unwrap_or("raw");
    let rec_agent = rec.agent_scope.as_deref().unwrap_or("off");
    let live_agent = cur.agent_scope.as_deref().unwrap_or("off");
    if rec_mode != live_mode {
        out.push(
            FindingClass::Format,
            format!(
                "recorded in '{rec_mode}' file-set mode, verifying in '{live_mode}' \
                (COWORK_HARNESS_GITSET) — re-record under the same mode"
            ),
        );
    } else if rec_agent != live_agent {
        out.push(
            FindingClass::Format,
            format!(
                "recorded with agent-scope '{rec_agent}', verifying with '{live_agent}' \
                (COWORK_HARNESS_AGENT_SCOPE) — re-record under the same setting"
            ),
        );
    } else if cur.skill_hash != rec.skill_hash {
        skill_drift(rec, cur, out);
    }
}

/// `skill dirs not resolvable <where><detail> — cannot verify skill
/// staleness (can't verify ⇒ not green)` for sources that produced no hash.
pub fn unresolvable_message(
    sources: &super::ResolvedSources,
    session_override: Option<&Path>,
) -> String {
    use super::SourceFailure;
    let place = match session_override {
        Some(p) => format!("from the session given with --session ({})", p.display()),
        None => "from the cassette location".to_owned(),
    };
    let detail = match &sources.failure {
        Some(SourceFailure::NotFound(p)) => {
            let hint = if session_override.is_none() {
                " (if the cassette moved, point at its session with --session <file>)"
            } else {
                ""
            };
            format!(" — no session file at {}{hint}", p.display())
        }
        Some(SourceFailure::Unreadable(p, msg)) => {
            format!(
                " — the session at {} could not be read or parsed: {msg}",
                p.display()
            )
        }
        Some(SourceFailure::DeclaredDirsMissing {
            session,
            declared,
            missing,
        }) => format!(
            " — the session at {} declares {declared} skill dir(s) and none exist ({})",
            session.display(),
            missing
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Some(SourceFailure::Inline) => " — an inline scenario carries no session file to \
            resolve"
            .to_owned(),
        None => " — the session resolved and its dirs exist, but some could not be READ, so the \
            hash was dropped as unreliable"
            .to_owned(),
    };
    format!(
        "skill dirs not resolvable {place}{detail} — cannot verify skill staleness (can't verify ⇒ \
            not green)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sigs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(p, h)| ((*p).to_owned(), (*h).to_owned()))
            .collect()
    }

    #[test]
    fn diff_orders_and_collapses_duplicates() {
        let rec = sigs(&[
            ("a", "1"),
            ("b", "2"),
            ("dup", "x"),
            ("dup", "y"),
            ("gone", "3"),
        ]);
        let live = sigs(&[
            ("new2", "9"),
            ("b", "2"),
            ("a", "changed"),
            ("dup", "y"),
            ("new1", "8"),
        ]);
        let d = diff_file_sigs(&rec, &live);
        assert_eq!(d.added, ["new2", "new1"]);
        assert_eq!(d.changed, ["a"]);
        assert_eq!(d.removed, ["gone"]);
        assert_eq!(
            summarize(&d).unwrap(),
            "1 changed (a); 2 added (new2, new1); 1 removed (gone)"
        );
        assert_eq!(summarize(&FileSigDiff::default()), None);
        let many = FileSigDiff {
            changed: (0..5).map(|i| format!("f{i}")).collect(),
            ..FileSigDiff::default()
        };
        assert_eq!(summarize(&many).unwrap(), "5 changed (f0, f1, f2, +2 more)");
        assert_eq!(duplicate_paths(Some(&rec)), ["dup"]);
    }

    #[test]
    fn partition_follows_the_hash_boundary() {
        let d = FileSigDiff {
            changed: vec![
                "skills/alpha/SKILL.md".into(),
                "skills/beta/x".into(),
                "README.md".into(),
            ],
            added: vec!["agents/alpha.md".into()],
            removed: vec!["agents/helper.md".into()],
        };
        let scope: HashSet<&str> = ["alpha"].into_iter().collect();
        let (shared, skill) = partition(&d, &scope, false);
        assert_eq!(skill.changed, ["skills/alpha/SKILL.md"]);
        assert_eq!(shared.changed, ["skills/beta/x", "README.md"]);
        assert_eq!(shared.added, ["agents/alpha.md"]);
        let (shared, skill) = partition(&d, &scope, true);
        assert_eq!(skill.added, ["agents/alpha.md"]);
        assert_eq!(shared.removed, ["agents/helper.md"]);
    }

    #[test]
    fn gates() {
        let s = Staleness {
            findings: vec![
                Finding {
                    class: FindingClass::Format,
                    message: "m1".into(),
                },
                Finding {
                    class: FindingClass::Skill,
                    message: "m2".into(),
                },
                Finding {
                    class: FindingClass::Baseline,
                    message: "m3".into(),
                },
            ],
            notes: vec![],
        };
        assert!(s.failures(Gate::Bare).is_empty());
        assert_eq!(
            s.failures(Gate::FailOnSkillDrift),
            ["skill-source drift (--fail-on-skill-drift): m2"]
        );
        assert_eq!(
            s.failures(Gate::ExplicitSession),
            [
                "skill-source drift under an explicit --session: m1",
                "skill-source drift under an explicit --session: m2"
            ]
        );
        assert_eq!(s.failures(Gate::Strict).len(), 3);
        assert_eq!(
            serde_json::to_string(&FindingClass::UnverifiablePromptAssets).unwrap(),
            "\"unverifiable-prompt-assets\""
        );
    }
}
