//! Skill-tree fingerprints and the staleness verdict (docs/spec/fingerprint.md).
//!
//! One walk of the skill roots produces a [`Snapshot`] ([`snapshot::walk`]);
//! every digest (`skillHash` in both formats, `contentSig` v12 and pre-epoch,
//! `fileSigs`, `sharedHash`) is a fold of that snapshot, defined here. Roots
//! come from a session file ([`resolve_sources`]); [`build`] assembles the
//! `fingerprint` object a recording stores; [`staleness`] compares a
//! cassette's recorded fingerprint with the live tree.
//!
//! This module never writes cassettes (that is `record`/`rehash`) and owns no
//! JSON rules (those are [`crate::js::json`]).
//!
//! Files: `fixture` (`workspace_fixture`: the one scan, staged, signed and
//! checked from one walk, its staging copy, and the refusal of presence
//! assertions it alone would pass); `snapshot` (the walk, raw or git via
//! `git2`; a root's tracked set is reused while its index file is unchanged, so
//! a batch reads an index once); `manifest` (plugin-manifest transforms);
//! `ignore` (`.cowork-hashignore`); `staleness` (the verdict, its gating and
//! the latest-baseline constants). Digests covered: `skillHash`, `contentSig`,
//! `fileSigs`, `sharedHash`, `sessionFingerprint` (whose `folders` order is
//! `js::collation`).

pub mod fixture;
pub mod ignore;
pub mod manifest;
pub mod snapshot;
pub mod staleness;

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::cassette::{Cassette, FingerprintRecord, HASH_FORMAT_JCS1};
use crate::js::collation::locale_compare;
use crate::js::json;
use crate::scenario::session::Session;

pub use snapshot::{Entry, EntryKind, ModeRequest, Snapshot, WalkError, WalkOptions, utf16_cmp};

/// `fileSigs` cap: more entries than this ⇒ `fileSigsOmitted: true`.
pub const MANIFEST_MAX_FILES: usize = 2000;

/// The two digest formats (docs/spec/fingerprint.md §0): `Legacy` (v9–v11
/// cassettes) and `Jcs1` (v12, `hashFormat: "jcs1"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HashFormat {
    Legacy,
    Jcs1,
}

impl HashFormat {
    /// The `fingerprint.hashFormat` value (`None` for legacy: the key is absent).
    pub fn wire(self) -> Option<&'static str> {
        match self {
            HashFormat::Legacy => None,
            HashFormat::Jcs1 => Some(HASH_FORMAT_JCS1),
        }
    }
}

/// The live fingerprint of a cassette's skill roots in both formats, derived
/// from ONE walk (so they cannot disagree).
#[derive(Debug, Clone, PartialEq)]
pub struct LiveFingerprints {
    /// What a pre-epoch recording would store (`skillHash` legacy, pre-epoch
    /// `contentSig`); `hashFormat` absent.
    pub legacy: FingerprintRecord,
    /// What a v12 recording stores today (`hashFormat: "jcs1"`).
    pub jcs1: FingerprintRecord,
}

impl LiveFingerprints {
    pub fn get(&self, format: HashFormat) -> &FingerprintRecord {
        match format {
            HashFormat::Legacy => &self.legacy,
            HashFormat::Jcs1 => &self.jcs1,
        }
    }
}

/// Why the skill roots of a cassette could not be resolved or read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct Unresolvable(pub String);

// ---------------------------------------------------------------------------
// Folds of a snapshot (§1.3, §1.5, §1.6, §1.8)

impl EntryKind {
    fn digest(&self, format: HashFormat) -> Option<&str> {
        match self {
            EntryKind::File { digests, .. } => Some(match format {
                HashFormat::Legacy => &digests.legacy,
                HashFormat::Jcs1 => &digests.jcs1,
            }),
            _ => None,
        }
    }
}

fn fold<'a>(entries: impl Iterator<Item = &'a Entry>, format: HashFormat) -> String {
    let mut h = Sha256::new();
    for e in entries {
        match &e.kind {
            EntryKind::Dir => {
                h.update(b"D:");
                h.update(e.path.as_bytes());
                h.update(b"\0");
            }
            EntryKind::Link { target } => {
                h.update(b"L:");
                h.update(e.path.as_bytes());
                h.update(b"\0");
                h.update(target.as_bytes());
                h.update(b"\0");
            }
            EntryKind::File { .. } => {
                h.update(b"F:");
                h.update(e.path.as_bytes());
                h.update(b"\0");
                h.update(e.kind.digest(format).unwrap_or_default().as_bytes());
            }
        }
    }
    hex::encode(h.finalize())
}

impl Snapshot {
    /// Entries of the hashed view, in walk order.
    pub fn main(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| e.in_main)
    }

    /// `skillHash` under `format`.
    pub fn skill_hash(&self, format: HashFormat) -> String {
        fold(self.main(), format)
    }

    /// `sharedHash` under `format` (`None` unless scope was requested and
    /// every root is a plugin root). Never git-filtered (upstream quirk).
    pub fn shared_hash(&self, format: HashFormat) -> Option<String> {
        self.has_shared
            .then(|| fold(self.entries.iter().filter(|e| e.in_shared), format))
    }

    /// The wire manifest: files and links sorted by path (UTF-16, stable),
    /// with the `format` digest or `lnk:<target>`.
    pub fn file_sigs(&self, format: HashFormat) -> Vec<(String, String)> {
        let mut sigs: Vec<(String, String)> = self
            .main()
            .filter_map(|e| match &e.kind {
                EntryKind::Dir => None,
                EntryKind::Link { target } => Some((e.path.clone(), format!("lnk:{target}"))),
                EntryKind::File { .. } => Some((
                    e.path.clone(),
                    e.kind.digest(format).unwrap_or_default().to_owned(),
                )),
            })
            .collect();
        sigs.sort_by(|a, b| utf16_cmp(&a.0, &b.0));
        sigs
    }

    /// v12 `contentSig` (algo 5: dirs folded, sorted rendered strings, jcs1
    /// digests); `None` for an empty snapshot.
    pub fn content_sig_v12(&self) -> Option<String> {
        let mut rendered: Vec<String> = self
            .main()
            .map(|e| match &e.kind {
                EntryKind::Dir => format!("D:{}\0", e.path),
                EntryKind::Link { target } => format!("L:{}\0lnk:{target}", e.path),
                EntryKind::File { digests, .. } => format!("F:{}\0{}", e.path, digests.jcs1),
            })
            .collect();
        if rendered.is_empty() {
            return None;
        }
        rendered.sort_by(|a, b| utf16_cmp(a, b));
        Some(hex::encode(Sha256::digest(rendered.join("\0").as_bytes())))
    }

    /// The fingerprint record a recording would store under `format`
    /// (`baseline` and `skillSources` are the caller's). `None` digests when
    /// any read error occurred ("can't verify").
    pub fn record(
        &self,
        format: HashFormat,
        baseline: Option<String>,
        skill_sources: Vec<String>,
        scope: &[String],
    ) -> FingerprintRecord {
        let mut fp = FingerprintRecord {
            baseline,
            hash_format: format.wire().map(str::to_owned),
            skill_sources: Some(skill_sources),
            ..FingerprintRecord::default()
        };
        if !self.read_errors.is_empty() {
            return fp;
        }
        fp.skill_hash = Some(self.skill_hash(format));
        fp.content_sig = match format {
            HashFormat::Jcs1 => self.content_sig_v12(),
            HashFormat::Legacy => content_sig_pre_epoch(&self.file_sigs(HashFormat::Legacy)),
        };
        fp.mode = self.git_mode.then(|| "git".to_owned());
        fp.agent_scope = self.agent_scoped.then(|| "skill".to_owned());
        let sigs = self.file_sigs(format);
        if sigs.len() > MANIFEST_MAX_FILES {
            fp.file_sigs_omitted = Some(true);
        } else {
            fp.file_sigs = Some(sigs);
        }
        if !scope.is_empty() {
            let mut s = scope.to_vec();
            s.sort_by(|a, b| utf16_cmp(a, b));
            fp.skill_scope = Some(s);
        }
        fp.shared_hash = self.shared_hash(format);
        fp
    }
}

/// Pre-epoch `contentSig` (algo 4, v8–v11; for reading old cassettes): the
/// legacy fileSigs in their wire order, rendered and NUL-joined, not re-sorted.
pub fn content_sig_pre_epoch(legacy_sigs: &[(String, String)]) -> Option<String> {
    if legacy_sigs.is_empty() {
        return None;
    }
    let rendered: Vec<String> = legacy_sigs
        .iter()
        .map(|(p, sha)| {
            if sha.starts_with("lnk:") {
                format!("L:{p}\0{sha}")
            } else {
                format!("F:{p}\0{sha}")
            }
        })
        .collect();
    Some(hex::encode(Sha256::digest(rendered.join("\0").as_bytes())))
}

// ---------------------------------------------------------------------------
// Session resolution (§1.1)

/// The session value meaning "no session file".
pub const INLINE_SESSION: &str = "(inline)";

/// Why a session yielded no hashable roots.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceFailure {
    /// `(inline)` scenario: no session file to resolve.
    Inline,
    /// No session file at this path.
    NotFound(PathBuf),
    /// The session file could not be read or parsed.
    Unreadable(PathBuf, String),
    /// The session declares `declared` roots and none exist.
    DeclaredDirsMissing {
        session: PathBuf,
        declared: usize,
        missing: Vec<PathBuf>,
    },
}

impl std::fmt::Display for SourceFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceFailure::Inline => {
                f.write_str("an inline scenario carries no session file to resolve")
            }
            SourceFailure::NotFound(p) => write!(f, "no session file at {}", p.display()),
            SourceFailure::Unreadable(p, msg) => {
                write!(
                    f,
                    "the session at {} could not be read or parsed: {msg}",
                    p.display()
                )
            }
            SourceFailure::DeclaredDirsMissing {
                session,
                declared,
                missing,
            } => write!(
                f,
                "the session at {} declares {declared} skill dir(s) and none exist ({})",
                session.display(),
                missing
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// Skill sources of a session, resolved.
#[derive(Debug, Clone)]
pub struct ResolvedSources {
    /// The resolved session file (`None` for inline).
    pub session_file: Option<PathBuf>,
    /// Directory paths resolve against (session dir; CWD for inline).
    pub base_dir: PathBuf,
    /// Existing roots, absolute, in session order (duplicates kept).
    pub roots: Vec<PathBuf>,
    /// The session's `staleness.hash_ignore`.
    pub hash_ignore: Vec<String>,
    pub failure: Option<SourceFailure>,
}

fn cwd() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"))
}

/// Resolves the session file: inline stays inline (an override never
/// applies), else `session_override` wins (relative to CWD), else a relative
/// `session` joins `cassette_dir`, else it is used as given.
pub fn resolve_session_path(
    session: &str,
    cassette_dir: Option<&Path>,
    session_override: Option<&Path>,
) -> Option<PathBuf> {
    if session == INLINE_SESSION {
        return None;
    }
    let p = match (session_override, cassette_dir) {
        (Some(o), _) => o.to_path_buf(),
        (None, Some(d)) if Path::new(session).is_relative() => d.join(session),
        _ => PathBuf::from(session),
    };
    Some(crate::paths::resolve(&cwd(), &p))
}

/// Resolves the skill roots a session declares (§1.1 steps 1–4).
pub fn resolve_sources(
    session: &str,
    cassette_dir: Option<&Path>,
    session_override: Option<&Path>,
) -> ResolvedSources {
    let Some(file) = resolve_session_path(session, cassette_dir, session_override) else {
        return ResolvedSources {
            session_file: None,
            base_dir: cwd(),
            roots: Vec::new(),
            hash_ignore: Vec::new(),
            failure: Some(SourceFailure::Inline),
        };
    };
    let base_dir = file.parent().map_or_else(cwd, Path::to_path_buf);
    let mut out = ResolvedSources {
        session_file: Some(file.clone()),
        base_dir: base_dir.clone(),
        roots: Vec::new(),
        hash_ignore: Vec::new(),
        failure: None,
    };
    if !file.is_file() {
        out.failure = Some(SourceFailure::NotFound(file));
        return out;
    }
    let parsed = match Session::load(&file) {
        Ok(s) => s,
        Err(e) => {
            out.failure = Some(SourceFailure::Unreadable(file, e.to_string()));
            return out;
        }
    };
    out.hash_ignore = parsed.staleness.hash_ignore.clone();
    let declared = parsed.skill_sources();
    let mut missing = Vec::new();
    for d in &declared {
        if d.starts_with('~') && !d.starts_with("~/") && *d != "~" {
            out.failure = Some(SourceFailure::Unreadable(
                file.clone(),
                format!("`{d}`: ~user paths are not supported"),
            ));
            out.roots.clear();
            return out;
        }
        // Absolute paths are kept verbatim; `~`/`~/x` pass through literally
        // (upstream expands them only at launch, so they fail this check).
        let p = if Path::new(d).is_absolute() || d.starts_with('~') {
            PathBuf::from(d)
        } else {
            crate::paths::resolve(&base_dir, Path::new(d))
        };
        if p.exists() {
            out.roots.push(p);
        } else {
            crate::messages::warn(format!(
                "reel: skill source dir declared in session does not exist: {} — skipping from \
                    fingerprint",
                p.display()
            ));
            missing.push(p);
        }
    }
    if !declared.is_empty() && out.roots.is_empty() {
        out.failure = Some(SourceFailure::DeclaredDirsMissing {
            session: file,
            declared: declared.len(),
            missing,
        });
    }
    out
}

/// Node's `path.relative(from, to)` for absolute, normalised paths, with `/`.
pub fn relative_path(from: &Path, to: &Path) -> String {
    let f: Vec<_> = from.components().collect();
    let t: Vec<_> = to.components().collect();
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".to_owned(); f.len() - common];
    parts.extend(
        t[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

// ---------------------------------------------------------------------------
// Assembling the live fingerprint (§1.12)

/// The live state of a session's skill sources: how they resolved, the
/// snapshot (when there were roots) and the records in both formats.
#[derive(Debug, Clone)]
pub struct Live {
    pub sources: ResolvedSources,
    pub snapshot: Option<Snapshot>,
    pub records: LiveFingerprints,
}

impl Live {
    /// True when the jcs1 record carries a `skillHash` (roots resolved and
    /// every file read).
    pub fn is_hashed(&self) -> bool {
        self.records.jcs1.skill_hash.is_some()
    }
}

/// Computes the live fingerprint of a session's skill sources: resolve, walk
/// once, fold both formats. `baseline` is carried into the records.
pub fn build(
    session: &str,
    cassette_dir: Option<&Path>,
    session_override: Option<&Path>,
    scope: &[String],
    baseline: Option<String>,
    mode: ModeRequest,
) -> Result<Live, WalkError> {
    let sources = resolve_sources(session, cassette_dir, session_override);
    if sources.roots.is_empty() {
        let rec = |f: HashFormat| FingerprintRecord {
            baseline: baseline.clone(),
            hash_format: f.wire().map(str::to_owned),
            ..FingerprintRecord::default()
        };
        return Ok(Live {
            records: LiveFingerprints {
                legacy: rec(HashFormat::Legacy),
                jcs1: rec(HashFormat::Jcs1),
            },
            sources,
            snapshot: None,
        });
    }
    let mut opts = WalkOptions::from_env(scope.to_vec(), sources.hash_ignore.clone());
    opts.mode = mode;
    let snap = snapshot::walk(&sources.roots, &opts)?;
    let skill_sources: Vec<String> = snap
        .roots
        .iter()
        .map(|r| relative_path(&sources.base_dir, r))
        .collect();
    let records = LiveFingerprints {
        legacy: snap.record(
            HashFormat::Legacy,
            baseline.clone(),
            skill_sources.clone(),
            scope,
        ),
        jcs1: snap.record(HashFormat::Jcs1, baseline, skill_sources, scope),
    };
    Ok(Live {
        sources,
        snapshot: Some(snap),
        records,
    })
}

/// `scenario.session` of a cassette (`(inline)` when absent).
pub fn cassette_session(cassette: &Cassette) -> &str {
    cassette
        .scenario()
        .get("session")
        .and_then(serde_json::Value::as_str)
        .unwrap_or(INLINE_SESSION)
}

/// `scenario.skills` of a cassette.
pub fn cassette_scope(cassette: &Cassette) -> Vec<String> {
    cassette
        .scenario()
        .get("skills")
        .and_then(serde_json::Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The live state of a cassette's skill sources (session resolved against
/// the cassette's directory, or `session_override`), recorded baseline
/// carried over.
pub fn live_for_cassette_detailed(
    cassette: &Cassette,
    session_override: Option<&Path>,
) -> Result<Live, WalkError> {
    let baseline = cassette.fingerprint().and_then(|f| f.baseline);
    build(
        cassette_session(cassette),
        Some(cassette.dir()),
        session_override,
        &cassette_scope(cassette),
        baseline,
        ModeRequest::Auto,
    )
}

/// Recomputes the fingerprint of the cassette's skill roots (session resolved
/// against the cassette dir, or `session_override`), with the recorded
/// `baseline` carried over. `Err` when no digest could be computed; its text
/// is the staleness wording (`skill dirs not resolvable …`).
pub fn live_for_cassette(
    cassette: &Cassette,
    session_override: Option<&Path>,
) -> Result<LiveFingerprints, Unresolvable> {
    let live = live_for_cassette_detailed(cassette, session_override)
        .map_err(|e| Unresolvable(e.to_string()))?;
    if live.is_hashed() {
        Ok(live.records)
    } else {
        Err(Unresolvable(staleness::unresolvable_message(
            &live.sources,
            session_override,
        )))
    }
}

// ---------------------------------------------------------------------------
// sessionFingerprint (§1.11)

fn sorted(v: &[String]) -> Vec<String> {
    let mut v = v.to_vec();
    v.sort_by(|a, b| utf16_cmp(a, b));
    v
}

/// Which members of the session shape a fingerprint covers. `projects` joined
/// the shape after cowork-harness 2.0.0; a recording made before that hashes
/// the shape without it, which `verify-cassettes` needs to tell "predates the
/// coverage" from "the session changed".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShapeCoverage {
    /// Today's shape: `projects` when the session declares any.
    Current,
    /// The 2.0.0 shape: `projects` never hashed.
    BeforeProjects,
}

/// The session shape `sessionFingerprint` hashes (keys in upstream order).
///
/// Eight members at most, as the original's guard of its own docs pins them
/// (test/check-fingerprint-field-claims.test.ts extracts `agent_env`,
/// `egress`, `folders`, `mcp`, `plugins`, `projects`, `skills`, `web_fetch`
/// from src/run/cassette.ts; `agent_env` and `projects` only when set). The
/// session's `model` and `answer_channel` are not members (its docs: "the
/// model is in neither"), and `agent_env` hashes the env overrides of
/// `agentEnvOverrides` in src/session.ts (three knobs; `artifacts_root` is
/// turned into `COWORK_ARTIFACTS_ROOT` by a separate function per tier).
pub fn session_shape(s: &Session) -> serde_json::Value {
    session_shape_covering(s, ShapeCoverage::Current)
}

/// [`session_shape`] under a given [`ShapeCoverage`].
pub fn session_shape_covering(s: &Session, coverage: ShapeCoverage) -> serde_json::Value {
    use serde_json::{Map, Value, json};
    let mut folders: Vec<(String, &str)> = s
        .folders
        .iter()
        .map(|f| (f.from.clone(), f.mode.as_str()))
        .collect();
    // Stable: folders that collate equal keep session order, as upstream's
    // `Array.prototype.sort`.
    folders.sort_by(|a, b| locale_compare(&a.0, &b.0));
    let mut shape = Map::new();
    shape.insert(
        "folders".into(),
        Value::Array(
            folders
                .into_iter()
                .map(|(from, mode)| json!({"from": from, "mode": mode}))
                .collect(),
        ),
    );
    shape.insert("plugins".into(), plugins_shape(&s.plugins));
    shape.insert("skills".into(), json!({"local": sorted(&s.skills.local)}));
    let mut mcp = Map::new();
    mcp.insert(
        "config".into(),
        s.mcp.config.clone().map_or(Value::Null, Value::String),
    );
    mcp.insert("enabled".into(), json!(sorted(&s.mcp.enabled)));
    shape.insert("mcp".into(), Value::Object(mcp));
    let mut egress = Map::new();
    egress.insert("extra_allow".into(), json!(sorted(&s.egress.extra_allow)));
    egress.insert("unrestricted".into(), json!(s.egress.unrestricted));
    shape.insert("egress".into(), Value::Object(egress));
    shape.insert(
        "web_fetch".into(),
        json!({"approved_domains": sorted(&s.web_fetch.approved_domains)}),
    );
    if let Some(env) = agent_env_shape(&s.agent_env) {
        shape.insert("agent_env".into(), env);
    }
    // Connected projects join only when declared, so a session without any
    // hashes exactly as under 2.0.0; sorted by `uuid` (`localeCompare`), the
    // mount name, so declaration order is not shape.
    if coverage == ShapeCoverage::Current && !s.projects.is_empty() {
        let mut projects: Vec<_> = s.projects.iter().collect();
        projects.sort_by(|a, b| locale_compare(&a.uuid, &b.uuid));
        let projects = projects
            .into_iter()
            .map(|p| json!({"uuid": p.uuid, "from": p.from}))
            .collect();
        shape.insert("projects".into(), Value::Array(projects));
    }
    Value::Object(shape)
}

/// The `plugins` part of the shape, every list sorted.
fn plugins_shape(s: &crate::scenario::session::Plugins) -> serde_json::Value {
    use serde_json::{Map, Value, json};
    let mut plugins = Map::new();
    plugins.insert(
        "config_dir".into(),
        s.config_dir.clone().map_or(Value::Null, Value::String),
    );
    plugins.insert("marketplaces".into(), json!(sorted(&s.marketplaces)));
    plugins.insert(
        "local_marketplaces".into(),
        json!(sorted(&s.local_marketplaces)),
    );
    plugins.insert("enabled".into(), json!(sorted(&s.enabled)));
    plugins.insert("local_plugins".into(), json!(sorted(&s.local_plugins)));
    plugins.insert("remote_plugins".into(), json!(sorted(&s.remote_plugins)));
    Value::Object(plugins)
}

/// The `agent_env` knobs the session sets, by the variable each becomes;
/// `None` when it sets none.
fn agent_env_shape(s: &crate::scenario::session::AgentEnv) -> Option<serde_json::Value> {
    use serde_json::{Map, Value, json};
    let mut env = Map::new();
    if let Some(m) = &s.subagent_model {
        env.insert("CLAUDE_CODE_SUBAGENT_MODEL".into(), json!(m));
    }
    if let Some(t) = s.tool_search {
        env.insert("ENABLE_TOOL_SEARCH".into(), json!(t.as_str()));
    }
    if s.disable_experimental_betas == Some(true) {
        env.insert("CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS".into(), json!("1"));
    }
    (!env.is_empty()).then_some(Value::Object(env))
}

/// `sessionFingerprint` of a parsed session: sha256 of `JSON.stringify` of
/// [`session_shape`].
pub fn session_fingerprint_of(s: &Session) -> String {
    session_fingerprint_covering(s, ShapeCoverage::Current)
}

/// [`session_fingerprint_of`] under a given [`ShapeCoverage`].
pub fn session_fingerprint_covering(s: &Session, coverage: ShapeCoverage) -> String {
    hex::encode(Sha256::digest(
        json::legacy_serde(&session_shape_covering(s, coverage)).as_bytes(),
    ))
}

/// `sessionFingerprint` of a session YAML file (docs/spec/record.md §5), `None`
/// for `(inline)`, a missing file or an invalid session.
pub fn session_fingerprint(session_file: &Path) -> Option<String> {
    if session_file.as_os_str() == INLINE_SESSION {
        return None;
    }
    Session::load(session_file)
        .ok()
        .map(|s| session_fingerprint_of(&s))
}

/// `sessionFingerprint` recomputed for a cassette: its `scenario.session`
/// resolved against the cassette's directory (or `session_override`);
/// `None` when that session is inline, missing or invalid (verify-cassettes
/// then notes "could not resolve the current session file").
pub fn session_fingerprint_for_cassette(
    cassette: &Cassette,
    session_override: Option<&Path>,
) -> Option<String> {
    let file = resolve_session_path(
        cassette_session(cassette),
        Some(cassette.dir()),
        session_override,
    )?;
    session_fingerprint(&file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_fingerprint_anchors() {
        let raw = include_str!("../../tests/data/golden/expected.json");
        let doc: serde_json::Value = serde_json::from_str(raw).unwrap();
        let anchor = &doc["upstreamAnchor"]["sessionFingerprint"];
        let empty = Session::parse("", Path::new("x.yaml")).unwrap();
        assert_eq!(
            json::legacy_serde(&session_shape(&empty)),
            anchor["minimalSessionShapeJson"].as_str().unwrap()
        );
        assert_eq!(
            session_fingerprint_of(&empty),
            anchor["minimalExpected"].as_str().unwrap()
        );
        let default = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/compat/examples/sessions/default.yaml");
        let s = Session::load(&default).unwrap();
        assert_eq!(
            json::legacy_serde(&session_shape(&s)),
            anchor["shapeJson"].as_str().unwrap()
        );
        assert_eq!(
            session_fingerprint(&default).as_deref(),
            anchor["expected"].as_str()
        );
        assert_eq!(session_fingerprint(Path::new("(inline)")), None);
    }

    /// Multi-folder order as upstream's `localeCompare` sort gives it (digest
    /// computed with Node 22 from the same folders): case, accents, Han in
    /// radical-stroke order, and canonically equivalent spellings (NFD
    /// `résumé` listed first) kept in session order.
    #[test]
    fn session_fingerprint_orders_folders_like_node() {
        let yaml = r#"
folders:
  - { from: skills/zeta, mode: r }
  - { from: Skills/alpha, mode: rw }
  - { from: "re\u0301sume\u0301", mode: rwd }
  - { from: "r\u00e9sum\u00e9", mode: r }
  - { from: "\u65e5\u672c", mode: rw }
  - { from: "\u4e2d\u6587", mode: rw }
  - { from: "\U00020000", mode: r }
  - { from: _x, mode: rw }
  - { from: ./a, mode: rw }
  - { from: skills/Zeta, mode: rw }
"#;
        let s = Session::parse(yaml, Path::new("s.yaml")).unwrap();
        let shape = session_shape(&s);
        let order: Vec<&str> = shape["folders"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["from"].as_str().unwrap())
            .collect();
        assert_eq!(
            order,
            [
                "_x",
                "./a",
                "re\u{301}sume\u{301}",
                "r\u{e9}sum\u{e9}",
                "Skills/alpha",
                "skills/zeta",
                "skills/Zeta",
                "\u{20000}",
                "\u{4e2d}\u{6587}",
                "\u{65e5}\u{672c}",
            ]
        );
        assert_eq!(
            session_fingerprint_of(&s),
            "061d8d46df4afab6fb5afa2a3d26e119201b47a57ae60ec6743cbea209d1aba2"
        );
    }

    #[test]
    fn relative_paths_like_node() {
        assert_eq!(relative_path(Path::new("/a/b"), Path::new("/a/b")), "");
        assert_eq!(
            relative_path(Path::new("/a/sessions"), Path::new("/a/skills/x")),
            "../skills/x"
        );
        assert_eq!(relative_path(Path::new("/a"), Path::new("/a/x/y")), "x/y");
    }
}
