//! Cassette assembly (docs/spec/record.md §5): the v12 document in cowork-harness's
//! key order, built in memory so the live verdict judges exactly the bytes
//! that will be written.
//!
//! Deviations, on purpose: `generator` is omitted (the v12 schema pins it to
//! `"cowork-harness"`; spec §6.4) and `environment.harnessVersion` names reel;
//! `fingerprint.baseline`/`promptAssetsHash` are those of the one platform
//! baseline reel knows (cowork-harness's latest, `latest_baseline`), since
//! reel renders no Cowork prompt template at the protocol tier;
//! `fingerprint.labelProvenance` is not produced.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::collect::PreRun;
use super::stage::Staged;
use crate::agent::RunLog;
use crate::cassette::{Cassette, HASH_FORMAT_EPOCH, HASH_FORMAT_JCS1, ManifestEntry, schema_url};
use crate::fingerprint::staleness::latest_baseline;
use crate::paths;
use crate::scenario::session_keys::Folder;
use crate::scenario::{INLINE_SESSION, Scenario};

/// Everything a cassette is made of.
pub struct Parts<'a> {
    pub scenario: &'a Scenario,
    pub cassette_path: &'a Path,
    pub log: &'a RunLog,
    pub artifacts: &'a [ManifestEntry],
    pub pre_run: &'a PreRun,
    pub staged: &'a Staged,
    pub folders: &'a [Folder],
    /// The sandbox layers the run ran under (`None`: not recorded).
    pub sandbox: Option<&'a crate::sandbox::Layers>,
    /// The staged `workspace_fixture` (its signature joins the fingerprint).
    pub fixture: Option<&'a crate::fingerprint::fixture::ScannedFixture>,
    /// The run's v16 `onFailure: block` hook inventory (`hook_inventory`;
    /// `None`: not taken).
    pub hook_failure_blocks: Option<&'a Value>,
}

/// `reel/<version>`: the recorder identity in `environment.harnessVersion`.
pub fn harness_version() -> String {
    format!("reel/{}", env!("CARGO_PKG_VERSION"))
}

/// Builds the cassette (path = where it will be written). The caller scrubs
/// it and runs it through the cassette loader (`Cassette::from_doc`), so reel
/// never writes what it would refuse to read.
pub fn assemble(p: &Parts<'_>) -> Cassette {
    // The platform baseline a scenario pins (`latest` or `desktop-<ver>`) is
    // one reel knows only as cowork-harness's latest; the agent binary's own
    // version stays visible in the recorded system/init line.
    let baseline = Some(latest_baseline::APP_VERSION.to_owned());
    let mut fingerprint = Map::new();
    fingerprint.insert("baseline".into(), json!(latest_baseline::APP_VERSION));
    fingerprint.insert("hashFormat".into(), json!(HASH_FORMAT_JCS1));
    fingerprint.insert(
        "promptAssetsHash".into(),
        json!(latest_baseline::PROMPT_ASSETS_HASH),
    );
    let draft = Cassette::unchecked(
        p.cassette_path.to_owned(),
        document(p, Value::Object(fingerprint.clone())),
        HASH_FORMAT_EPOCH,
    );
    // (`version` is set from the stamp below.)
    // The skill fingerprint of the session's skill roots, as resolved from
    // the cassette's own `scenario.session` (what staleness will recompute).
    let mut fingerprint = match crate::fingerprint::live_for_cassette(&draft, None) {
        Ok(live) => {
            let mut rec = live.jcs1;
            rec.baseline = baseline;
            rec.hash_format = Some(HASH_FORMAT_JCS1.into());
            rec.prompt_assets_hash = Some(latest_baseline::PROMPT_ASSETS_HASH.into());
            serde_json::to_value(rec).unwrap_or(Value::Object(fingerprint))
        }
        Err(_) => Value::Object(fingerprint),
    };
    // The signature of the scan staging verified byte for byte, after every
    // other member (the original spreads it onto the finished fingerprint).
    if let (Some(scan), Value::Object(fp)) = (p.fixture, &mut fingerprint) {
        fp.insert("workspaceFixtureSig".into(), json!(scan.sig));
        fp.insert("workspaceFixtureFileSigs".into(), json!(scan.file_sigs));
    }
    let mut cassette = draft;
    cassette.doc = document(p, fingerprint);
    cassette.version = cassette
        .doc
        .get("cassetteVersion")
        .and_then(Value::as_u64)
        .unwrap_or(HASH_FORMAT_EPOCH);
    cassette
}

/// Stamps the lowest format a reader needs for this recording (a plain
/// scenario: v12, which cowork-harness 2.0.0 replays), and returns it.
fn stamp(doc: &mut Map<String, Value>) -> u64 {
    let empty = Map::new();
    let scenario = doc
        .get("scenario")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let version = crate::assert::stamp::required_version(scenario, doc);
    doc.insert("$schema".into(), json!(schema_url(version)));
    doc.insert("cassetteVersion".into(), json!(version));
    version
}

/// The cassette document in cowork-harness's key order, stamped with the
/// version it needs.
fn document(p: &Parts<'_>, fingerprint: Value) -> Map<String, Value> {
    let cassette_dir = crate::scenario::dir_of(p.cassette_path);
    let scenario = frozen_scenario(p.scenario, cassette_dir);
    let mut doc = Map::new();
    // Stamped once the document is whole (`stamp`), in these positions.
    doc.insert("$schema".into(), Value::Null);
    doc.insert("cassetteVersion".into(), Value::Null);
    doc.insert("scenario".into(), Value::Object(scenario));
    doc.insert("events".into(), json!(p.log.events));
    doc.insert("controlOut".into(), json!(p.log.control_out));
    doc.insert("effectiveFidelity".into(), json!("protocol"));
    doc.insert(
        "artifacts".into(),
        serde_json::to_value(p.artifacts).unwrap_or(Value::Array(vec![])),
    );
    doc.insert(
        "userVisibleRoots".into(),
        json!(p.staged.user_visible_roots),
    );
    doc.insert("preRunPaths".into(), json!(p.pre_run.paths));
    doc.insert(
        "preRunOrigin".into(),
        serde_json::to_value(p.pre_run.origin).unwrap_or(json!("local-walk")),
    );
    doc.insert(
        "preRunHashes".into(),
        Value::Object(p.pre_run.hashes.clone()),
    );
    doc.insert(
        "scenarioSource".into(),
        json!(paths::relative_posix(&p.scenario.path, cassette_dir)),
    );
    doc.insert("fingerprint".into(), fingerprint);
    if p.log.decisions.nondeterministic {
        doc.insert("authoring".into(), json!({"nonDeterministic": true}));
    }
    doc.insert("timeline".into(), json!(p.log.timeline));
    doc.insert("timelineHeader".into(), p.log.timeline_header.clone());
    if let Some(fp) = p
        .scenario
        .session_path
        .as_deref()
        .and_then(crate::fingerprint::session_fingerprint)
    {
        doc.insert("sessionFingerprint".into(), json!(fp));
    }
    if let Some(map) = folder_prefix_map(p) {
        doc.insert("folderPrefixMap".into(), map);
    }
    doc.insert("environment".into(), environment(p));
    // Frozen as taken, an empty one too; only a non-empty one stamps v16.
    if let Some(blocks) = p.hook_failure_blocks {
        doc.insert("hookFailureBlocks".into(), blocks.clone());
    }
    if p.scenario.is_multi_turn() {
        // Last, so a replay finds it in the file's tail (docs/multi-turn.md).
        doc.insert(crate::replay::turns::REEL_TURNS.into(), reel_turns(p.log));
    }
    stamp(&mut doc);
    doc
}

/// A multi-turn recording's turn marks: the agent's session id (from its
/// `system/init`), the `maxTurns` applied to the session (`null`: none —
/// reel passes no limit), the session reopened with `--resume` after the
/// agent died between turns (`null`: none), and each turn's event and
/// `controlOut` range (`resumed` on the turn delivered to it).
fn reel_turns(log: &RunLog) -> Value {
    let session_id = log
        .init
        .as_ref()
        .and_then(|i| i.get("session_id"))
        .cloned()
        .unwrap_or(Value::Null);
    json!({
        "sessionId": session_id,
        "maxTurns": null,
        "resumedSession": log.resumed_session,
        "turns": log.turns,
    })
}

/// The scenario as the cassette freezes it: its session and fixture paths
/// relative to the cassette, which is where replay and staleness resolve
/// them.
fn frozen_scenario(scenario: &Scenario, cassette_dir: &Path) -> Map<String, Value> {
    let mut frozen = scenario.frozen.clone();
    let session = match &scenario.session_path {
        Some(session) => json!(paths::relative_posix(session, cassette_dir)),
        None => json!(INLINE_SESSION),
    };
    frozen.insert("session".into(), session);
    if let Some(Ok(fixture)) = scenario.workspace_fixture_dir() {
        frozen.insert(
            "workspace_fixture".into(),
            json!(paths::relative_posix(&fixture, cassette_dir)),
        );
    }
    frozen
}

/// The record-time connected-folder host path → mount name correspondence
/// (when every folder got a mount).
fn folder_prefix_map(p: &Parts<'_>) -> Option<Value> {
    let mounts: Vec<&String> = p
        .staged
        .user_visible_roots
        .iter()
        .filter(|r| *r != "outputs")
        .collect();
    (mounts.len() == p.folders.len()).then(|| {
        p.folders
            .iter()
            .zip(mounts)
            .map(|(f, m)| {
                let from = std::fs::canonicalize(&f.from).unwrap_or_else(|_| f.from.clone());
                json!({"from": from.display().to_string(), "mount": m})
            })
            .collect()
    })
}

fn environment(p: &Parts<'_>) -> Value {
    let mut environment =
        json!({"location": "local", "tier": "protocol", "harnessVersion": harness_version()});
    // The layers the run was confined by (reel's; cowork-harness keeps
    // unknown fields of a loose object and never reads this one).
    if let Some(layers) = p.sandbox {
        environment["sandbox"] = json!(layers);
    }
    environment
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_walk_up_from_the_cassette_dir() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("sessions")).unwrap();
        std::fs::write(t.path().join("sessions/s.yaml"), "").unwrap();
        assert_eq!(
            paths::relative_posix(
                &t.path().join("sessions/s.yaml"),
                &t.path().join("cassettes/new")
            ),
            "../../sessions/s.yaml"
        );
    }
}
