//! Files: the artifacts manifest, deliverables and the pre-run baseline.

use serde_json::{Map, Value, json};

use super::*;

mod json_artifact;
use crate::assert::tree::Authorship;
use json_artifact::artifact_json;
pub(crate) use json_artifact::artifact_json_problem;

const ARTIFACT_JSON: &[Field] = &[
    req("artifact", Param::NonEmpty),
    opt("path", Param::NonEmpty),
    opt("equals", ANY),
    opt("in", ANY),
    opt("gt", ANY),
    opt("exists", Param::Bool),
    opt("absent", Param::Bool),
    opt("is_null", Param::Bool),
    opt("authored", Param::Bool),
    opt("match", Param::Str),
    opt("schema", ANY),
];

/// The object form of `file_exists` / `user_visible_artifact` (v14).
const AUTHORED_PATH: &[Field] = &[req("path", Param::NonEmpty), req("authored", Param::Bool)];

const ARTIFACT_TEXT: &[Field] = &[
    req("artifact", Param::NonEmpty),
    opt("contains", Param::NonEmptyStrList),
    opt("not_contains", Param::NonEmptyStrList),
    opt("matches", Param::NonEmpty),
    opt("not_matches", Param::NonEmpty),
    opt("authored", Param::Bool),
];

pub(super) const KEYS: &[Key] = &[
    Key {
        name: name::FILE_EXISTS,
        bucket: Bucket::NeedsManifest,
        param: Param::OneOf(&[Param::NonEmpty, Param::Object(AUTHORED_PATH, Refine::None)]),
        description: "this work-root-relative file exists after the run ({path, authored: true}: \
            and this run created or rewrote it)",
        example: Some(|| Value::from("outputs/report.md")),
        ranks: Ranks {
            listed: 57,
            check: 9,
            schema: 8,
            strip: Some(57),
        },
        eval: Eval::One(file_exists),
        opposite: Some("file_absent"),
        ..Key::DEFAULTS
    },
    Key {
        name: "user_visible_artifact",
        bucket: Bucket::NeedsManifest,
        param: Param::OneOf(&[Param::Str, Param::Object(AUTHORED_PATH, Refine::None)]),
        description: "this file exists under a user-visible root (outputs/ or a folder; \
            {path, authored: true}: and this run created or rewrote it)",
        example: Some(|| Value::from("outputs/report.md")),
        ranks: Ranks {
            listed: 58,
            check: 11,
            schema: 9,
            strip: Some(59),
        },
        eval: Eval::One(user_visible_artifact),
        ..Key::DEFAULTS
    },
    Key {
        name: "artifact_json",
        bucket: Bucket::NeedsManifest,
        param: Param::Object(ARTIFACT_JSON, Refine::ArtifactJson),
        description: "a JSON artifact's value at a dotted path passes these checks (schema: a \
            JSON Schema 2020-12 it matches; a glob `artifact` needs match: each | any)",
        example: Some(
            || json!({"artifact": "outputs/report.json", "path": "total", "gt": 0, "schema": {"type": "number"}}),
        ),
        ranks: Ranks {
            listed: 59,
            check: 68,
            schema: 75,
            strip: Some(60),
        },
        eval: Eval::Many(artifact_json),
        ..Key::DEFAULTS
    },
    Key {
        name: "artifact_text",
        bucket: Bucket::NeedsManifest,
        param: Param::Object(ARTIFACT_TEXT, Refine::None),
        description: "a text artifact contains / matches these",
        example: Some(|| json!({"artifact": "outputs/report.md", "contains": ["Summary"]})),
        ranks: Ranks {
            listed: 60,
            check: 67,
            schema: 53,
            strip: Some(58),
        },
        eval: Eval::Many(artifact_text),
        ..Key::DEFAULTS
    },
    Key {
        name: name::NO_UNEXPECTED_FILES,
        bucket: Bucket::NeedsManifest,
        param: Param::GlobList,
        description: "every file the run created under a user-visible root matches a glob",
        example: Some(|| json!(["outputs/*.md"])),
        ranks: Ranks {
            listed: 63,
            check: 49,
            schema: 51,
            strip: Some(63),
        },
        eval: Eval::One(no_unexpected_files),
        baseline: Some("preRunPaths"),
        ..Key::DEFAULTS
    },
    Key {
        name: name::INPUT_UNMODIFIED,
        bucket: Bucket::NeedsManifest,
        param: Param::GlobOrList,
        description: "every pre-existing file matching these globs keeps its hash",
        example: Some(|| Value::from("uploads/**")),
        ranks: Ranks {
            listed: 64,
            check: 50,
            schema: 54,
            strip: Some(64),
        },
        eval: Eval::One(input_unmodified),
        baseline: Some("preRunHashes"),
        ..Key::DEFAULTS
    },
    Key {
        name: "file_absent",
        bucket: Bucket::LiveOnly,
        param: Param::NonEmpty,
        description: "this file does not exist after the run (needs an exhaustive live walk)",
        example: Some(|| Value::from("outputs/debug.log")),
        ranks: Ranks {
            listed: 65,
            check: 10,
            schema: 52,
            strip: None,
        },
        eval: Eval::Live(file_absent),
        ..Key::DEFAULTS
    },
    Key {
        name: "no_scratchpad_leak",
        bucket: Bucket::Always,
        param: Param::True,
        description: "no presented file leaked from the scratchpad (container)",
        ranks: Ranks {
            listed: 38,
            check: 35,
            schema: 46,
            strip: Some(35),
        },
        eval: Eval::One(no_scratchpad_leak),
        ..Key::DEFAULTS
    },
    Key {
        name: "present_files_called",
        bucket: Bucket::Always,
        param: Param::True,
        description: "the agent presented at least one file",
        ranks: Ranks {
            listed: 39,
            check: 36,
            schema: 47,
            strip: Some(36),
        },
        eval: Eval::One(present_files_called),
        ..Key::DEFAULTS
    },
    Key {
        name: "no_delete_in_outputs",
        bucket: Bucket::LiveOnly,
        param: Param::True,
        description: "no command deleted files in outputs/",
        ranks: Ranks {
            listed: 68,
            check: 47,
            schema: 50,
            strip: None,
        },
        eval: Eval::Live(no_delete_in),
        ..Key::DEFAULTS
    },
    Key {
        name: "no_delete_in_mounts",
        bucket: Bucket::LiveOnly,
        param: Param::True,
        description: "no command deleted files in a connected folder",
        ranks: Ranks {
            listed: 69,
            check: 48,
            schema: 68,
            strip: None,
        },
        eval: Eval::Live(no_delete_in),
        ..Key::DEFAULTS
    },
    Key {
        name: "no_lost_write_back",
        bucket: Bucket::LiveOnly,
        param: Param::True,
        description: "no authored file was lost on write-back",
        ranks: Ranks {
            listed: 75,
            check: 12,
            schema: 56,
            strip: None,
        },
        eval: Eval::Live(outcome::needs_live_telemetry),
        ..Key::DEFAULTS
    },
];

/// Live only: the post-run manifest is an exhaustive walk of the run's
/// captured roots, so absence there is evidence.
fn file_absent(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let view = env.ctx.manifest();
    let p = str_param(key, v)?;
    let Some(rel) = contained_rel(p) else {
        return Err(format!(
            "unsafe file_absent path \"{p}\" — must stay under the work root (no absolute paths \
                or \"..\")"
        ));
    };
    if !visible(&view.user_visible_roots, &rel) {
        return Err(format!(
            "evidence unavailable: file_absent: \"{p}\" is outside the run's captured roots ({})",
            view.user_visible_roots.join(", ")
        ));
    }
    if view.tree.exists(&rel) {
        Err(format!("file unexpectedly present: {p}"))
    } else {
        ok_ev(format!("file_absent: \"{p}\" absent after the run"))
    }
}

/// Live only (`no_delete_in_outputs`, `no_delete_in_mounts`): the pre-run
/// baseline says what was there before the run.
fn no_delete_in(env: &mut Env<'_>, key: &'static str, _v: &Value) -> KeyResult {
    let view = env.ctx.manifest();
    let Some(pre) = &view.pre_run_paths else {
        return Err(format!(
            "evidence unavailable: {key} needs the pre-run baseline (preRunPaths)"
        ));
    };
    let mounts: Vec<String> = if key == "no_delete_in_outputs" {
        vec!["outputs".to_owned()]
    } else {
        let folders = env.ctx.cassette.folder_prefix_map().unwrap_or_default();
        folders.into_iter().map(|f| f.mount).collect()
    };
    let mut gone: Vec<&String> = pre
        .iter()
        .filter(|p| visible(&mounts, p) && !view.tree.exists(p))
        .collect();
    gone.sort();
    if gone.is_empty() {
        ok()
    } else {
        let names: Vec<&str> = gone.iter().map(|s| s.as_str()).collect();
        Err(format!(
            "{key}: {} file(s) present before the run are gone: {}",
            gone.len(),
            names.join(", ")
        ))
    }
}

fn link_unavailable(p: &str) -> String {
    format!(
        "evidence unavailable: \"{p}\" was a symlink/hardlink at record time — replay can't \
            confirm it resolves to real in-root content; re-record or assert on the deliverable"
    )
}

/// The path of a string or `{path, authored}` parameter, after the
/// `authored: true` check (cowork-harness v14: decided from `preRunHashes`
/// against the manifest's post-run sha256; `authored: false` adds nothing).
fn authored_path<'v>(env: &Env<'_>, key: &str, v: &'v Value) -> Result<&'v str, String> {
    let Some(o) = v.as_object() else {
        return str_param(key, v);
    };
    let p = opt_str(o, "path").ok_or_else(|| bad_param(key))?;
    if o.get("authored").and_then(Value::as_bool) == Some(true) {
        check_authored(env, key, p)?;
    }
    Ok(p)
}

/// `authored: true`: this run created or rewrote `p`. An untouched pre-run
/// file fails; no pre-run hash manifest (or a scrubbed entry) cannot tell.
pub(super) fn check_authored(env: &Env<'_>, key: &str, p: &str) -> Result<(), String> {
    let rel = contained_rel(p).unwrap_or_else(|| p.to_owned());
    match env.ctx.manifest().authorship(&rel) {
        Authorship::Written => Ok(()),
        Authorship::NoBaseline => Err(format!(
            "evidence unavailable: {key}: `authored: true` needs the cassette's pre-run hash \
                manifest (preRunHashes), which this recording lacks — re-record"
        )),
        Authorship::Scrubbed => Err(format!(
            "evidence unavailable: {key}: \"{p}\"'s pre-run hash was scrubbed at record time — \
                cannot tell whether this run rewrote it"
        )),
        Authorship::Untouched => Err(format!(
            "{key}: \"{p}\" is untouched — it existed before the run with the same content, so \
                this run did not author it (`authored: false` accepts an inherited file)"
        )),
    }
}

fn file_exists(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let p = authored_path(env, key, v)?;
    let Some(rel) = contained_rel(p) else {
        return Err(format!(
            "unsafe file_exists path \"{p}\" — must stay under the work root (no absolute paths \
                or \"..\")"
        ));
    };
    let tree = env.tree();
    if tree.is_link(&rel) {
        return Err(link_unavailable(p));
    }
    if tree.truncation(&rel).is_some() {
        return ok();
    }
    if tree.exists(&rel) {
        ok_ev(format!("file_exists: \"{p}\" present under {}", env.root()))
    } else {
        Err(format!("file not found: {p} (under {})", env.root()))
    }
}

fn visible(prefixes: &[String], rel: &str) -> bool {
    prefixes
        .iter()
        .any(|pre| rel == pre || rel.starts_with(&format!("{pre}/")))
}

fn user_visible_artifact(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let p = authored_path(env, key, v)?;
    let Some(rel) = contained_rel(p) else {
        return Err(format!(
            "unsafe user_visible_artifact path \"{p}\" — must stay under the work root (no \
                absolute paths or \"..\")"
        ));
    };
    if env.lane_remote() {
        return Err(
            "user_visible_artifact asserts LOCATION, which delivers nothing on `lane: \
            remote` — a remote container has no auto-delivering outputs dir and is reclaimed at \
            session end. Tool-level delivery is NOT YET ASSERTABLE on this lane (no remote \
            delivery tool is modeled). Either assert the written path plus the agent's own \
            statement of it (`file_exists` + `transcript_matches`), or use `lane: local` if this \
            scenario models the desktop lane"
                .into(),
        );
    }
    let tree = env.tree();
    if tree.is_link(&rel) {
        return Err(link_unavailable(p));
    }
    let prefixes = env.prefixes();
    if !visible(prefixes, &rel) {
        return Err(format!(
            "\"{p}\" is not under a user-visible prefix ({}) — invisible to the user in Cowork",
            prefixes.join(", ")
        ));
    }
    if tree.truncation(&rel).is_some() || tree.exists(&rel) {
        ok()
    } else {
        Err(format!("user-visible artifact not found: {p}"))
    }
}

fn origin_unavailable(env: &Env<'_>, tail: &str) -> Option<String> {
    let origin = env.ctx.cassette.pre_run_origin()?;
    let (name, why) = match origin {
        PreRunOrigin::LocalWalk => return None,
        PreRunOrigin::RemoteUnavailable => (
            "remote-unavailable",
            "a cloud run's filesystem is not locally observable",
        ),
        PreRunOrigin::LocalUnreadable => (
            "local-unreadable",
            "a connected-folder source was unreadable, so the baseline is incomplete",
        ),
    };
    Some(format!(
        "evidence unavailable: pre-run manifest origin is {name} ({why}) — {tail}"
    ))
}

fn no_unexpected_files(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let globs = str_list(Some(v)).ok_or_else(|| bad_param(key))?;
    if let Some(m) = origin_unavailable(env, "cannot compute created files") {
        return Err(m);
    }
    let view = env.ctx.manifest();
    let Some(pre) = &view.pre_run_paths else {
        return Err(
            "evidence unavailable: no pre-run manifest for this run/cassette (a --resume \
            run, or a run/cassette predating 0.24) — cannot compute created files; re-run without \
            --resume, or re-record"
                .into(),
        );
    };
    let allow = GlobList::new(&globs);
    let stray: Vec<&str> = view
        .user_visible_files
        .iter()
        .filter(|p| !pre.contains(*p) && !allow.is_match(p))
        .map(String::as_str)
        .collect();
    if stray.is_empty() {
        ok()
    } else {
        let allow = globs.join(", ");
        Err(format!(
            "unexpected file(s) created outside the allowlist: {} (allow: {})",
            stray.join(", "),
            if allow.is_empty() { "(none)" } else { &allow }
        ))
    }
}

fn input_unmodified(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let globs: Vec<String> = match v {
        Value::String(s) => vec![s.clone()],
        other => str_list(Some(other)).ok_or_else(|| bad_param(key))?,
    };
    if let Some(m) = origin_unavailable(env, "cannot compare content") {
        return Err(m);
    }
    let view = env.ctx.manifest();
    let Some(pre_hashes) = &view.pre_run_hashes else {
        return Err(
            "evidence unavailable: no pre-run hash manifest for this run/cassette (a \
            --resume run, or a run/cassette predating the fingerprinted manifest) — cannot compare \
            content; re-run without --resume, or re-record"
                .into(),
        );
    };
    let allow = GlobList::new(&globs);
    let matched: Vec<&(String, Option<String>)> = pre_hashes
        .iter()
        .filter(|(p, _)| allow.is_match(p))
        .collect();
    if matched.is_empty() {
        return Err(format!(
            "input_unmodified matched no pre-run path(s): glob(s) {} matched nothing in the \
                pre-run manifest — nothing to verify; check the mount name/glob (a typo or renamed \
                mount reads as a vacuous pass otherwise)",
            globs.join(", ")
        ));
    }
    // Replay: the manifest's sha256 is the authoritative post-run hash
    // (never re-hash the placeholder tree); an absent or "" sha ⇒ removed.
    let (mut modified, mut removed, mut uncheckable) = (Vec::new(), Vec::new(), Vec::new());
    for (p, pre) in matched {
        let Some(pre) = pre else {
            uncheckable.push(p.as_str());
            continue;
        };
        match view.post_hash(p) {
            None => removed.push(p.as_str()),
            Some(h) if h != pre => modified.push(p.as_str()),
            Some(_) => {}
        }
    }
    let first5 = |v: &[&str]| v.iter().take(5).copied().collect::<Vec<_>>().join(", ");
    if !uncheckable.is_empty() {
        // The original uses the size-cap wording for scrubbed (null) pre-hashes too (spec §8.8).
        return Err(format!(
            "evidence unavailable: pre-run hash missing (over size cap) for: {} — raise \
                COWORK_HARNESS_PRERUN_HASH_CAP or narrow the glob",
            first5(&uncheckable)
        ));
    }
    if modified.is_empty() && removed.is_empty() {
        return ok();
    }
    let mut parts = Vec::new();
    if !modified.is_empty() {
        parts.push(format!("modified in place: {}", first5(&modified)));
    }
    if !removed.is_empty() {
        parts.push(format!("removed: {}", first5(&removed)));
    }
    Err(format!(
        "pre-existing file(s) changed — {}",
        parts.join("; ")
    ))
}

pub(crate) const TEN_MIB: usize = 10 * 1024 * 1024;

fn artifact_text(env: &mut Env<'_>, key: &'static str, v: &Value, out: &mut Vec<KeyResult>) {
    let Ok(at) = obj_param(key, v) else {
        out.push(Err(bad_param(key)));
        return;
    };
    let artifact = opt_str(at, "artifact").unwrap_or("");
    let lists = ["contains", "not_contains"].map(|k| str_list(at.get(k)));
    let regexes = ["matches", "not_matches"].map(|k| opt_str(at, k));
    if lists.iter().all(Option::is_none) && regexes.iter().all(Option::is_none) {
        out.push(Err(
            "artifact_text: set at least one of contains / not_contains / matches / not_matches"
                .into(),
        ));
        return;
    }
    if at.get("authored").and_then(Value::as_bool) == Some(true)
        && let Err(m) = check_authored(env, key, artifact)
    {
        out.push(Err(m));
        return;
    }
    match text_body(env, at, artifact) {
        Ok(body) => text_matchers(key, at, artifact, &body, out),
        Err(m) => out.push(Err(m)),
    }
}

/// The body `artifact_text` scans, or why there is none to scan.
fn text_body(env: &Env<'_>, at: &Map<String, Value>, artifact: &str) -> Result<String, String> {
    let not_contains = str_list(at.get("not_contains"));
    let not_matches = opt_str(at, "not_matches");
    if env.lane_remote() {
        return Err(
            "artifact_text cannot be evaluated on `lane: remote` — a remote container's \
            filesystem is not locally observable, so there is no body to scan. Assert on the \
            agent's own statement of the content (`transcript_matches`), or use `lane: \
            local`"
                .into(),
        );
    }
    let Some(rel) = contained_rel(artifact) else {
        return Err(format!(
            "unsafe artifact_text path \"{artifact}\" — must stay under the work root (no absolute \
                paths or \"..\")"
        ));
    };
    let tree = env.tree();
    if tree.is_link(&rel) {
        return Err(format!(
            "evidence unavailable: \"{artifact}\" was a symlink/hardlink at record time — its \
                content is not in the cassette; re-record or assert on the deliverable"
        ));
    }
    if !tree.exists(&rel) {
        return Err(format!(
            "artifact_text: file not found: {artifact} (under {})",
            env.root()
        ));
    }
    if let Some(reason) = tree.truncation(&rel) {
        let cause = text_truncation_cause(reason);
        return Err(format!(
            "evidence unavailable: artifact_text target \"{artifact}\" was captured body-less \
                {cause} — content is not available to match against"
        ));
    }
    let Some(bytes) = tree.bytes(&rel) else {
        // A directory: reading it fails like EISDIR.
        return Err(format!(
            "artifact_text: {artifact} could not be read: EISDIR: illegal operation on a \
                directory, read"
        ));
    };
    if bytes.len() > TEN_MIB {
        return Err(format!(
            "artifact_text: file too large to scan ({} bytes, limit 10 MiB)",
            bytes.len()
        ));
    }
    let negative = not_contains.is_some() || not_matches.is_some();
    let body = match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => {
            if negative {
                return Err(format!(
                    "evidence unavailable: \"{artifact}\" is not lossless UTF-8 (binary or invalid \
                        encoding) — a negative text assertion over it would pass without reading \
                        the real bytes"
                ));
            }
            String::from_utf8_lossy(e.as_bytes()).into_owned()
        }
    };
    Ok(body)
}

fn text_truncation_cause(reason: Option<TruncationReason>) -> &'static str {
    match reason {
        Some(TruncationReason::Input) => "(an uploaded input — captured hash-only, never inlined)",
        Some(TruncationReason::Readonly) => {
            "(read-only connected-folder input — its content is never captured)"
        }
        Some(TruncationReason::Size) => {
            "(larger than the artifact-body cap — raise --max-artifact-bytes to capture it)"
        }
        _ => "(a read-only input, or an artifact larger than the body cap)",
    }
}

/// Each matcher of `artifact_text` fails on its own; a pass cites the file.
fn text_matchers(
    key: &str,
    at: &Map<String, Value>,
    artifact: &str,
    body: &str,
    out: &mut Vec<KeyResult>,
) {
    let contains = str_list(at.get("contains"));
    let not_contains = str_list(at.get("not_contains"));
    let matches = opt_str(at, "matches");
    let not_matches = opt_str(at, "not_matches");
    let quote = |s: &str| json::stringify(Some(&Value::String(s.to_owned())));
    let missing: Vec<String> = contains
        .unwrap_or_default()
        .iter()
        .filter(|n| !body.contains(n.as_str()))
        .map(|n| quote(n))
        .collect();
    let present: Vec<String> = not_contains
        .unwrap_or_default()
        .iter()
        .filter(|n| body.contains(n.as_str()))
        .map(|n| quote(n))
        .collect();
    let before = out.len();
    if !missing.is_empty() {
        out.push(Err(format!(
            "artifact_text: {artifact} does not contain {}",
            missing.join(", ")
        )));
    }
    if !present.is_empty() {
        out.push(Err(format!(
            "artifact_text: {artifact} unexpectedly contains {}",
            present.join(", ")
        )));
    }
    for (pat, want) in [(matches, true), (not_matches, false)] {
        let Some(pat) = pat else { continue };
        match compile_es(pat) {
            Err(e) => out.push(Err(format!("artifact_text: bad regex \"{pat}\": {e}"))),
            Ok(re) => match re.is_match(body) {
                Err(e) => out.push(Err(format!("artifact_text: regex \"{pat}\": {e}"))),
                Ok(got) if got != want => out.push(Err(if want {
                    format!("artifact_text: {artifact} did not match /{pat}/i")
                } else {
                    format!("artifact_text: {artifact} unexpectedly matched /{pat}/i")
                })),
                Ok(_) => {}
            },
        }
    }
    let earlier_artifact_text_failure = out[..before]
        .iter()
        .any(|r| matches!(r, Err(m) if m.starts_with(key)));
    if out.len() == before && !earlier_artifact_text_failure {
        out.push(ok_ev(format!(
            "artifact_text: {artifact} satisfied every matcher"
        )));
    }
}

fn no_scratchpad_leak(env: &mut Env<'_>, _key: &'static str, _v: &Value) -> KeyResult {
    if env.lane_remote() {
        return Err(
            "no_scratchpad_leak: present_files is not served on `lane: remote` (a local MCP \
            server cannot reach a remote Cowork session), so there is no promotion to leak — \
            cannot verify. Without this gate the check would pass VACUOUSLY on an empty \
            presentedFiles list"
                .into(),
        );
    }
    if env.tier() != Some("container") {
        return Err(format!(
            "no_scratchpad_leak: promotion/leak semantics apply only at the container tier (this \
                run: {}) — hostloop's present_files never promotes (production's host-loop branch \
                passes a validated path through without copying, so there is no scratch→outputs \
                copy to leak) — cannot verify; use fidelity: container for present_files-based \
                delivery",
            env.tier().unwrap_or("unknown")
        ));
    }
    let bad = env.run.evidence_errors.present_files_malformed;
    if bad > 0 {
        return Err(format!(
            "no_scratchpad_leak: {bad} malformed/unclassifiable present_files call(s) — leak \
                evidence is incomplete, cannot verify (e.g. malformed input, or no cwd to classify \
                scratchpad membership)"
        ));
    }
    match env.run.presented_files.iter().find(|p| p.leaked) {
        Some(l) => Err(format!(
            "no_scratchpad_leak: \"{}\" was presented but never left the scratchpad",
            l.from
        )),
        None => ok(),
    }
}

fn present_files_called(env: &mut Env<'_>, _key: &'static str, _v: &Value) -> KeyResult {
    if env.lane_remote() {
        return Err(
            "present_files_called: present_files is not served on `lane: remote` — a local \
            MCP server cannot reach a remote Cowork session, which delivers via the agent-native \
            SendUserFile instead (not modeled; see docs/fidelity-gaps.md) — cannot verify"
                .into(),
        );
    }
    if !matches!(env.tier(), Some("container") | Some("hostloop")) {
        return Err(format!(
            "present_files_called: present_files is served only on the container/hostloop tiers \
                (this run: {}) — cannot verify; use fidelity: container or hostloop for \
                present_files-based delivery",
            env.tier().unwrap_or("unknown")
        ));
    }
    if env.run.presented_files.is_empty() {
        Err(
            "present_files_called: no file was delivered via present_files (the tool was never \
            called)"
                .into(),
        )
    } else {
        ok()
    }
}
