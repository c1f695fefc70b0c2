//! `artifact_json`: a JSON artifact's value at a dotted path, over one file
//! or, with a glob and `match: each | any`, over every file it matches
//! (cowork-harness v15: test/artifact-json-glob.test.ts), with an optional
//! JSON Schema the value must match (test/artifact-json-schema.test.ts).

use serde_json::{Map, Value};

use super::*;
use crate::assert::json_schema::{self, Mismatch};

/// More glob matches than this is evidence-unavailable, never a partial verdict.
const MAX_GLOB_MATCHES: usize = 200;
/// Path segments below the work root a glob walk reads; a file deeper than
/// this means the walk could not see everything.
const MAX_GLOB_DEPTH: usize = 32;

/// What the loader refuses in an `artifact_json` object (`Refine::ArtifactJson`).
pub(crate) fn artifact_json_problem(m: &Map<String, Value>) -> Option<String> {
    let artifact = m.get("artifact").and_then(Value::as_str).unwrap_or("");
    let glob = crate::assert::glob::is_artifact_glob(artifact);
    match m.get("match").map(|v| v.as_str()) {
        Some(Some("each" | "any")) if glob => {}
        Some(Some("each" | "any")) => {
            return Some(format!(
                "`match` applies only to a glob `artifact` (one with * or ?); \"{artifact}\" is a \
                    literal path, so drop `match`"
            ));
        }
        Some(_) => return Some("`match` must be `each` or `any`".into()),
        None if glob => {
            return Some(format!(
                "a glob `artifact` (\"{artifact}\") needs `match: each` (every matching file) or \
                    `match: any` (at least one)"
            ));
        }
        None => {}
    }
    // A folder glob would match the files under it without saying so
    // (test/artifact-json-glob-review.test.ts, "load").
    if glob && artifact.ends_with('/') {
        return Some(format!(
            "a glob `artifact` names files: \"{artifact}\" ends in `/` — name the JSON files \
                (\"{artifact}*.json\")"
        ));
    }
    let schema = m.get("schema")?;
    if m.get("absent").and_then(Value::as_bool) == Some(true)
        || m.get("exists").and_then(Value::as_bool) == Some(false)
    {
        return Some(
            "`schema` validates a value, so it cannot be combined with `absent: true` or \
                `exists: false`"
                .into(),
        );
    }
    json_schema::schema_problem(schema).map(|p| format!("artifact_json.schema: {p}"))
}

pub(super) fn artifact_json(
    env: &mut Env<'_>,
    key: &'static str,
    v: &Value,
    out: &mut Vec<KeyResult>,
) {
    let Ok(aj) = obj_param(key, v) else {
        out.push(Err(bad_param(key)));
        return;
    };
    // The lane first, in every form (a glob, `authored`, an unsafe path): a
    // remote container's file is not the local one this run left behind
    // (test/artifact-json-remote-lane.test.ts).
    if env.lane_remote() {
        out.push(Err(REMOTE_LANE.into()));
        return;
    }
    let artifact = opt_str(aj, "artifact").unwrap_or("");
    if crate::assert::glob::is_artifact_glob(artifact) {
        out.push(over_glob(env, key, aj, artifact));
    } else {
        one_file(env, key, aj, artifact, out);
    }
}

/// Why `artifact_json` reads nothing on `lane: remote` (`artifact_text`'s
/// reason, in its words).
const REMOTE_LANE: &str = "artifact_json cannot be evaluated on `lane: remote` — a remote \
    container's filesystem is not locally observable, so there is no body to parse. Assert on \
    the agent's own statement of the content (`transcript_matches`), or use `lane: local`";

/// The checks of one file, one result per operator.
fn one_file(
    env: &Env<'_>,
    key: &str,
    aj: &Map<String, Value>,
    artifact: &str,
    out: &mut Vec<KeyResult>,
) {
    let path = opt_str(aj, "path");
    if aj.get("authored").and_then(Value::as_bool) == Some(true)
        && let Err(m) = check_authored(env, key, artifact)
    {
        out.push(Err(m));
        return;
    }
    let doc = match json_doc(env, artifact) {
        Ok(doc) => doc,
        Err(m) => {
            out.push(Err(m));
            return;
        }
    };
    let resolved = json::resolve_dot_path(&doc, path);
    if let DotResolve::Unresolved { at } = &resolved {
        out.push(Err(format!(
            "artifact_json: path \"{}\" unresolvable in {artifact} — intermediate \"{at}\" is \
                missing or not an object",
            path.unwrap_or("undefined")
        )));
        return;
    }
    let before = out.len();
    json_presence(aj, &resolved, path, out);
    json_value_checks(aj, &resolved, path, out);
    if let Some(schema) = aj.get("schema") {
        out.push(schema_check(schema, &resolved, path, artifact));
    }
    // No operator given: an existence check.
    let present = matches!(resolved, DotResolve::Value(_));
    let p_root = path.unwrap_or("(root)");
    let any = out.len() > before;
    if !any {
        out.push(if present {
            ok()
        } else {
            Err(format!(
                "artifact_json: \"{p_root}\" is not present (no operator given → existence check)"
            ))
        });
    }
}

/// `schema`: the value at `path` matches; an absent value fails rather than
/// validating nothing.
fn schema_check(
    schema: &Value,
    resolved: &DotResolve,
    path: Option<&str>,
    artifact: &str,
) -> KeyResult {
    let p_root = path.unwrap_or("(root)");
    let DotResolve::Value(value) = resolved else {
        return Err(format!(
            "artifact_json: \"{p_root}\" is not present in {artifact} — the schema needs a value \
                to validate"
        ));
    };
    match json_schema::validate(schema, value) {
        Ok(()) => ok(),
        Err(Mismatch::Problem(p)) => Err(format!("artifact_json.schema: {p}")),
        Err(Mismatch::Errors { shown, more }) => {
            let more = if more > 0 {
                format!(" (+{more} more)")
            } else {
                String::new()
            };
            Err(format!(
                "artifact_json: \"{p_root}\" in {artifact} does not match the schema: {}{more}",
                shown.join("; ")
            ))
        }
    }
}

/// How one matched file fared.
enum FileVerdict {
    Pass,
    Fail(String),
    Unavailable(String),
}

fn judge_file(env: &Env<'_>, key: &str, aj: &Map<String, Value>, file: &str) -> FileVerdict {
    let mut results = Vec::new();
    one_file(env, key, aj, file, &mut results);
    let failures: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    if failures.is_empty() {
        return FileVerdict::Pass;
    }
    let unavailable = "evidence unavailable: ";
    let text = failures
        .iter()
        .map(|m| m.strip_prefix(unavailable).unwrap_or(m))
        .collect::<Vec<_>>()
        .join("; ");
    if failures.iter().any(|m| m.starts_with(unavailable)) {
        FileVerdict::Unavailable(text)
    } else {
        FileVerdict::Fail(text)
    }
}

/// `artifact_json` over every file a glob matches under the user-visible
/// roots (and `uploads/`), the one walk both a live run and a replay read.
fn over_glob(env: &Env<'_>, key: &str, aj: &Map<String, Value>, glob: &str) -> KeyResult {
    let Some(rel_glob) = contained_rel(glob) else {
        return Err(format!(
            "unsafe artifact_json path \"{glob}\" — must stay under the work root (no absolute \
                paths or \"..\")"
        ));
    };
    let each = opt_str(aj, "match") != Some("any");
    let (files, links) = glob_matches(env, &rel_glob)?;
    if files.is_empty() && links.is_empty() {
        return Err(no_match(env, glob, &rel_glob));
    }
    if files.len() > MAX_GLOB_MATCHES {
        return Err(format!(
            "evidence unavailable: artifact_json: {} files match \"{glob}\" — more than the \
                {MAX_GLOB_MATCHES} a glob is evaluated over; narrow the glob",
            files.len()
        ));
    }
    let mut v = GlobVerdicts {
        n: files.len() + links.len(),
        glob_q: format!("\"{glob}\" (match: {})", if each { "each" } else { "any" }),
        ..GlobVerdicts::default()
    };
    // A link on the way to a match hides what is behind it: never a
    // silent skip (test/artifact-json-glob-review.test.ts).
    v.unavailable.extend(links.iter().map(|l| {
        format!(
            "{l}: a symlink at record time on the path to a match — the walk does not follow \
                it, so what it leads to cannot be seen"
        )
    }));
    for file in &files {
        match judge_file(env, key, aj, file) {
            FileVerdict::Pass => v.passed.push(file.clone()),
            FileVerdict::Fail(m) => v.failed.push(format!("{file}: {m}")),
            FileVerdict::Unavailable(m) => v.unavailable.push(format!("{file}: {m}")),
        }
    }
    if each { v.each() } else { v.any() }
}

/// Each matched file's verdict, sorted by kind, for the glob's message.
#[derive(Default)]
struct GlobVerdicts {
    /// Matched files and links.
    n: usize,
    /// `"GLOB" (match: each|any)`.
    glob_q: String,
    passed: Vec<String>,
    failed: Vec<String>,
    unavailable: Vec<String>,
}

impl GlobVerdicts {
    /// `match: each` (the default): every file must pass.
    fn each(&self) -> KeyResult {
        let (n, glob_q) = (self.n, &self.glob_q);
        let passed_list = if self.passed.is_empty() {
            String::new()
        } else {
            format!(" (passed: {})", self.passed.join(", "))
        };
        if !self.failed.is_empty() {
            return Err(format!(
                "artifact_json: {} of {n} file(s) matching {glob_q} failed — {}{passed_list}{}",
                self.failed.len(),
                self.failed.join("; "),
                self.also_unavailable()
            ));
        }
        if !self.unavailable.is_empty() {
            return Err(format!(
                "evidence unavailable: artifact_json: {} of {n} file(s) matching {glob_q} cannot \
                    be evaluated — {}{passed_list}",
                self.unavailable.len(),
                self.unavailable.join("; ")
            ));
        }
        ok_ev(format!(
            "artifact_json: all {n} file(s) matching {glob_q} passed"
        ))
    }

    /// `match: any`: one passing file is enough.
    fn any(&self) -> KeyResult {
        let (n, glob_q) = (self.n, &self.glob_q);
        if let Some(first) = self.passed.first() {
            return ok_ev(format!(
                "artifact_json: {first} passed ({} of {n} file(s) matching {glob_q}){}",
                self.passed.len(),
                self.also_unavailable()
            ));
        }
        if !self.unavailable.is_empty() {
            let failed_list = if self.failed.is_empty() {
                String::new()
            } else {
                format!(" (failed: {})", self.failed.join("; "))
            };
            return Err(format!(
                "evidence unavailable: artifact_json: no file matching {glob_q} passed, and {} of \
                    {n} cannot be evaluated — {}{failed_list}",
                self.unavailable.len(),
                self.unavailable.join("; ")
            ));
        }
        Err(format!(
            "artifact_json: none of the {n} file(s) matching {glob_q} passed — {}",
            self.failed.join("; ")
        ))
    }

    fn also_unavailable(&self) -> String {
        if self.unavailable.is_empty() {
            return String::new();
        }
        format!(
            " (and {} unavailable: {})",
            self.unavailable.len(),
            self.unavailable.join("; ")
        )
    }
}

/// The files under the user-visible roots and `uploads/` the glob matches,
/// in walk order, and the recorded links in a folder position on the way to
/// a match (the walk does not follow them); a walk that could not see
/// everything is an error.
fn glob_matches(env: &Env<'_>, rel_glob: &str) -> Result<(Vec<String>, Vec<String>), String> {
    let mut roots = env.prefixes().to_vec();
    if !roots.iter().any(|r| r == "uploads") {
        roots.push("uploads".into());
    }
    let walked = env.tree().walk(&roots);
    let literal_dir = literal_prefix(rel_glob);
    if let Some(deep) = walked
        .iter()
        .find(|p| p.split('/').count() > MAX_GLOB_DEPTH && p.starts_with(literal_dir.as_str()))
    {
        return Err(format!(
            "evidence unavailable: artifact_json: the walk for \"{rel_glob}\" stops at \
                {MAX_GLOB_DEPTH} folders deep, and {deep} is deeper — it could not see every \
                file the glob may match"
        ));
    }
    let g = Glob::new(rel_glob);
    let tree = env.tree();
    let (files, rest): (Vec<String>, Vec<String>) = walked.into_iter().partition(|p| g.is_match(p));
    let links = rest
        .into_iter()
        .filter(|p| tree.is_link(p) && could_lead_to_match(rel_glob, p))
        .collect();
    Ok((files, links))
}

/// Whether a folder at `dir` lies on the way to something `rel_glob` can
/// match: each of its segments matches the glob's segment at that depth,
/// or the glob reaches a `**` first.
fn could_lead_to_match(rel_glob: &str, dir: &str) -> bool {
    let globs: Vec<&str> = rel_glob.split('/').collect();
    let segs: Vec<&str> = dir.split('/').collect();
    if segs.len() >= globs.len() {
        return false;
    }
    for (g, seg) in globs.iter().zip(&segs) {
        if *g == "**" {
            return true;
        }
        if !Glob::new(g).is_match(seg) {
            return false;
        }
    }
    true
}

/// The folders of a glob before its first wildcard segment (`outputs/runs/`
/// of `outputs/runs/*/s.json`), with its trailing `/`, or empty.
fn literal_prefix(rel_glob: &str) -> String {
    let mut out = String::new();
    let segs: Vec<&str> = rel_glob.split('/').collect();
    for seg in &segs[..segs.len().saturating_sub(1)] {
        if seg.contains(['*', '?']) {
            break;
        }
        out.push_str(seg);
        out.push('/');
    }
    out
}

/// Zero matches: the glob, and what its nearest existing folder holds.
fn no_match(env: &Env<'_>, glob: &str, rel_glob: &str) -> String {
    let tree = env.tree();
    let mut dir = literal_prefix(rel_glob);
    while !dir.is_empty() && !tree.exists(dir.trim_end_matches('/')) {
        let trimmed = dir.trim_end_matches('/');
        dir = trimmed
            .rfind('/')
            .map_or(String::new(), |i| trimmed[..=i].to_owned());
    }
    let mut held: Vec<String> = Vec::new();
    for p in tree.walk(&[dir.trim_end_matches('/').to_owned()]) {
        let Some(rest) = p.strip_prefix(dir.as_str()) else {
            continue;
        };
        let child = match rest.split_once('/') {
            Some((folder, _)) => format!("{folder}/"),
            None => rest.to_owned(),
        };
        if !held.contains(&child) {
            held.push(child);
        }
    }
    let shown = if held.is_empty() {
        "nothing".to_owned()
    } else if held.len() > 12 {
        format!("{}, …(+{})", held[..12].join(", "), held.len() - 12)
    } else {
        held.join(", ")
    };
    let at = if dir.is_empty() {
        "the work root".to_owned()
    } else {
        dir
    };
    format!(
        "artifact_json: no file matches \"{glob}\" under the user-visible roots ({}); {at} \
            holds: {shown}",
        env.prefixes().join(", ")
    )
}

/// The JSON document `artifact_json` reads, or why there is none to read.
pub(super) fn json_doc(env: &Env<'_>, artifact: &str) -> Result<Value, String> {
    let Some(rel) = contained_rel(artifact) else {
        return Err(format!(
            "unsafe artifact_json path \"{artifact}\" — must stay under the work root (no absolute \
                paths or \"..\")"
        ));
    };
    let tree = env.tree();
    if tree.is_link(&rel) {
        return Err(format!(
            "evidence unavailable: \"{artifact}\" was a symlink/hardlink at record time — its \
                content is not in the cassette (replay materializes a 0-byte placeholder); \
                re-record or assert on the deliverable"
        ));
    }
    if !tree.exists(&rel) {
        return Err(format!(
            "artifact_json: file not found: {artifact} (under {})",
            env.root()
        ));
    }
    if let Some(reason) = tree.truncation(&rel) {
        let cause = json_truncation_cause(reason);
        return Err(format!(
            "evidence unavailable: artifact_json target \"{artifact}\" was captured body-less \
                {cause} — content is not in the cassette, so it cannot be evaluated on replay"
        ));
    }
    let Some(bytes) = tree.bytes(&rel) else {
        return Err(format!(
            "artifact_json: {artifact} could not be read/parsed as JSON: EISDIR: illegal operation \
                on a directory, read"
        ));
    };
    if bytes.len() > TEN_MIB {
        return Err(format!(
            "artifact_json: file too large to parse as JSON ({} bytes, limit 10 MiB)",
            bytes.len()
        ));
    }
    json::parse_document(&bytes)
        .map_err(|why| format!("artifact_json: {artifact} could not be read/parsed as JSON: {why}"))
}

fn json_truncation_cause(reason: Option<TruncationReason>) -> &'static str {
    match reason {
        Some(TruncationReason::Input) => {
            "(an uploaded input — its content is captured hash-only, never inlined; assert \
                artifact_json on a deliverable instead)"
        }
        Some(TruncationReason::Readonly) => {
            "(read-only connected-folder input — its content is never captured; assert \
                artifact_json on a deliverable instead)"
        }
        Some(TruncationReason::Size) => {
            "(larger than the artifact-body cap — raise --max-artifact-bytes to capture it)"
        }
        Some(TruncationReason::Fixture) => {
            "(an untouched binary workspace_fixture file — recorded hash-only; assert \
                artifact_json on what the step writes)"
        }
        _ => {
            "(a read-only connected-folder input, or an artifact larger than the body cap — if an \
                input, assert on a deliverable; if a large deliverable, raise --max-artifact-bytes)"
        }
    }
}

/// `exists`, `absent` and `is_null`: one result each operator given.
fn json_presence(
    aj: &Map<String, Value>,
    resolved: &DotResolve,
    path: Option<&str>,
    out: &mut Vec<KeyResult>,
) {
    let present = matches!(resolved, DotResolve::Value(_));
    let val = match resolved {
        DotResolve::Value(v) => Some(v),
        _ => None,
    };
    let p_root = path.unwrap_or("(root)");
    let p_raw = path.unwrap_or("undefined");
    if let Some(want) = aj.get("exists").and_then(Value::as_bool) {
        out.push(if present == want {
            ok()
        } else {
            Err(format!(
                "artifact_json: \"{p_root}\" exists={present}, expected {want}"
            ))
        });
    }
    if let Some(want) = aj.get("absent").and_then(Value::as_bool) {
        let absent = matches!(resolved, DotResolve::Absent);
        out.push(if absent == want {
            ok()
        } else {
            Err(format!(
                "artifact_json: \"{p_raw}\" absent={absent}, expected {want}"
            ))
        });
    }
    if let Some(want) = aj.get("is_null").and_then(Value::as_bool) {
        out.push(match val {
            None => Err(format!(
                "artifact_json: \"{p_root}\" is_null: path is absent — cannot determine null-ness \
                    (use absent: true to assert absence)"
            )),
            Some(v) => {
                let is_null = v.is_null();
                if is_null == want {
                    ok()
                } else {
                    Err(format!(
                        "artifact_json: \"{p_root}\" \
                    is_null={is_null}, expected {want}"
                    ))
                }
            }
        });
    }
}

/// `equals`, `gt` and `in`: one result each operator given.
fn json_value_checks(
    aj: &Map<String, Value>,
    resolved: &DotResolve,
    path: Option<&str>,
    out: &mut Vec<KeyResult>,
) {
    let val = match resolved {
        DotResolve::Value(v) => Some(v),
        _ => None,
    };
    let p_raw = path.unwrap_or("undefined");
    if let Some(want) = aj.get("equals") {
        out.push(if val.is_some_and(|v| json::deep_eq(v, want)) {
            ok()
        } else {
            Err(format!(
                "artifact_json: \"{p_raw}\" = {}, expected {}",
                json::stringify(val),
                json::stringify(Some(want))
            ))
        });
    }
    if let Some(gt) = aj.get("gt") {
        let good = match (val.and_then(Value::as_f64), gt.as_f64()) {
            (Some(x), Some(n)) => val.is_some_and(Value::is_number) && x > n,
            _ => false,
        };
        out.push(if good {
            ok()
        } else {
            Err(format!(
                "artifact_json: \"{p_raw}\" = {}, expected > {}",
                json::stringify(val),
                num(gt)
            ))
        });
    }
    if let Some(set) = aj.get("in") {
        let good = match (val, set.as_array()) {
            (Some(v), Some(items)) => items.iter().any(|x| json::deep_eq(v, x)),
            _ => false,
        };
        out.push(if good {
            ok()
        } else {
            Err(format!(
                "artifact_json: \"{p_raw}\" = {}, expected one of {}",
                json::stringify(val),
                json::stringify(Some(set))
            ))
        });
    }
}
