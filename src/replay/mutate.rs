//! `replay --mutate`: mutation coverage of the assertions (docs/spec/replay.md §6).
//!
//! A green replay says the assertions passed; it cannot say whether they
//! would have failed had the output been wrong. This pass answers that for
//! recorded JSON deliverables: it perturbs one leaf value of one inlined
//! `.json` artifact at a time (number `+1`, string → `"__MUTATED__"`,
//! boolean flipped), re-evaluates the same assertions on the same evidence,
//! and reports the perturbations that no previously-passing assertion caught
//! — those fields are unguarded.
//!
//! Bounded by construction: at most `caps.per_file` perturbations per file
//! (applied first) and `caps.total` overall, each costing one evaluation; the
//! rest of the work is one linear parse/walk per candidate artifact. Order is
//! the manifest's, keys in `Object.keys` order, so the sample is
//! deterministic. `--mutate-include/-exclude` filter the artifacts (with the
//! crate's path globs, [`crate::assert::glob`]) before planning, so the caps
//! bind on what survived.
//!
//! The assertion evaluator reads artifact content from the manifest (see
//! `crate::assert::tree`: the materialised tree is a pure function of it), so
//! a perturbation is applied to both: the body of an evaluation copy of the
//! manifest, and — through [`Materialised::rewrite`], never outside the
//! private temp dir — the materialised file. Both are restored after each
//! perturbation.
//!
//! This module never changes the verdict, the exit code or the assertion
//! list: it returns a [`MutationReport`] (the run result's `mutation`) and
//! the `::warning::`/`::notice::` lines to print. It does not evaluate keys
//! itself (`crate::assert::check`) and has no JSON serializer of its own
//! (`crate::js::json` emulates `JSON.parse`/`JSON.stringify`, as the original
//! re-serialises a perturbed file with `JSON.stringify(doc, null, 2)`).

use serde::Serialize;
use serde_json::{Map, Value};

use super::materialise::Materialised;
use crate::assert::glob::{Glob, any_matches};
use crate::assert::{self, Context};
use crate::cassette::{BodyEncoding, Cassette, ManifestEntry, TruncationReason};
use crate::evidence::RunRecord;
use crate::js::json::{self, JsValue};

/// `--mutate-max-per-file` default.
pub const DEFAULT_MAX_PER_FILE: usize = 10;
/// `--mutate-max-total` default.
pub const DEFAULT_MAX_TOTAL: usize = 50;

/// What a perturbed string becomes: a token recorded output does not
/// contain, so a content check trips on it more surely than on `""`.
const STRING_SENTINEL: &str = "__MUTATED__";

/// Longest rendering (in chars) of one label part — file, leaf path, value
/// before / after — so a hostile cassette's megabyte string cannot turn the
/// report into megabytes.
const LABEL_PART_MAX_CHARS: usize = 200;

/// The sampling caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Caps {
    #[serde(rename = "perFile")]
    pub per_file: usize,
    pub total: usize,
}

impl Default for Caps {
    fn default() -> Self {
        Caps {
            per_file: DEFAULT_MAX_PER_FILE,
            total: DEFAULT_MAX_TOTAL,
        }
    }
}

/// `--mutate` and its scoping flags.
#[derive(Debug, Clone, Default)]
pub struct MutateOptions {
    /// `--mutate-include` globs (none ⇒ every artifact).
    pub include: Vec<String>,
    /// `--mutate-exclude` globs (exclude wins over include).
    pub exclude: Vec<String>,
    pub caps: Caps,
}

/// Which cap bound the sample (`total` wins when both did: once it is
/// reached, raising the per-file cap alone yields nothing more).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum TruncatedBy {
    #[serde(rename = "per-file")]
    PerFile,
    #[serde(rename = "total")]
    Total,
}

/// The run result's `mutation` object.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MutationReport {
    /// Perturbations evaluated (after the caps).
    pub sampled: usize,
    /// Perturbable leaves across the scoped artifacts, before the caps.
    pub eligible: usize,
    pub truncated_by: Option<TruncatedBy>,
    pub caps: Caps,
    /// Labels of the perturbations no previously-passing assertion caught.
    pub uncaught: Vec<String>,
}

/// What the pass produced: the report and the lines to print (in order).
#[derive(Debug, Clone)]
pub struct MutationPass {
    pub report: MutationReport,
    pub notices: Vec<String>,
}

// ---------------------------------------------------------------------------
// Planning (pure).

/// One artifact offered to the planner.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    /// The caller's handle on the artifact (its manifest index).
    pub artifact: usize,
    pub path: &'a str,
    /// The inlined UTF-8 body.
    pub body: &'a str,
}

/// One step from a document's root towards a leaf.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Index(usize),
    Key(Vec<u16>),
}

/// One planned perturbation of one leaf.
#[derive(Debug, Clone, PartialEq)]
pub struct Perturbation {
    /// Dotted leaf path (`rows.0.currency`; `""` for a scalar document).
    pub path: String,
    steps: Vec<Step>,
    pub after: JsValue,
    /// `<file>  <path>: <before> → <after>`, values as `JSON.stringify`.
    pub label: String,
}

/// One `.json` artifact the planner parsed.
#[derive(Debug, Clone)]
pub struct PlannedFile {
    pub artifact: usize,
    pub path: String,
    /// Perturbable leaves in the document, before the caps.
    pub eligible: usize,
    pub perturbations: Vec<Perturbation>,
    /// The parsed document; kept only when a perturbation was planned (so
    /// at most `caps.total` documents are held).
    doc: Option<JsValue>,
}

/// The capped sample.
#[derive(Debug, Clone)]
pub struct Plan {
    pub files: Vec<PlannedFile>,
    pub caps: Caps,
}

/// Plans perturbations over `candidates`, in their order: each `*.json`
/// (case-insensitive) body that parses as JSON is walked leaf by leaf
/// (objects in `Object.keys` order, arrays by index); a leaf is perturbable
/// unless it is `null` or a non-finite number, and a key containing `.` is
/// skipped with its subtree (the dotted label would be ambiguous). Other
/// bodies are skipped silently.
pub fn plan(candidates: &[Candidate<'_>], caps: Caps) -> Plan {
    let mut files = Vec::new();
    let mut total = 0usize;
    for c in candidates {
        if !c.path.to_ascii_lowercase().ends_with(".json") {
            continue;
        }
        let Ok(doc) = json::parse_str(c.body) else {
            continue;
        };
        let mut eligible = 0usize;
        let mut perturbations = Vec::new();
        walk_leaves(&doc, &mut Vec::new(), &mut |steps, value| {
            let Some(after) = perturb(value) else {
                return;
            };
            eligible += 1;
            if perturbations.len() >= caps.per_file || total >= caps.total {
                return;
            }
            total += 1;
            let path = dotted(steps);
            let label = format!(
                "{}  {}: {} → {}",
                label_part(c.path),
                label_part(&path),
                label_part(&json::legacy(value)),
                label_part(&json::legacy(&after)),
            );
            perturbations.push(Perturbation {
                path,
                steps: steps.to_vec(),
                after,
                label,
            });
        });
        let keep = !perturbations.is_empty();
        files.push(PlannedFile {
            artifact: c.artifact,
            path: c.path.to_owned(),
            eligible,
            perturbations,
            doc: keep.then_some(doc),
        });
    }
    Plan { files, caps }
}

impl Plan {
    /// Perturbations in the sample.
    pub fn sampled(&self) -> usize {
        self.files.iter().map(|f| f.perturbations.len()).sum()
    }

    /// Perturbable leaves before the caps.
    pub fn eligible(&self) -> usize {
        self.files.iter().map(|f| f.eligible).sum()
    }

    /// Files that hit the per-file cap with leaves left over.
    pub fn files_at_per_file_cap(&self) -> usize {
        self.files
            .iter()
            .filter(|f| {
                let taken = f.perturbations.len();
                taken > 0 && taken >= self.caps.per_file && f.eligible > taken
            })
            .count()
    }

    /// Which cap bound the sample, if any.
    pub fn truncated_by(&self) -> Option<TruncatedBy> {
        let sampled = self.sampled();
        if sampled >= self.caps.total && self.eligible() > sampled {
            Some(TruncatedBy::Total)
        } else if self.files_at_per_file_cap() > 0 {
            Some(TruncatedBy::PerFile)
        } else {
            None
        }
    }
}

/// Calls `visit` on every leaf (non-container value) of `v`.
fn walk_leaves(v: &JsValue, steps: &mut Vec<Step>, visit: &mut impl FnMut(&[Step], &JsValue)) {
    match v {
        JsValue::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                steps.push(Step::Index(i));
                walk_leaves(item, steps, visit);
                steps.pop();
            }
        }
        JsValue::Object(o) => {
            for (key, value) in o.property_order() {
                if key.contains(&u16::from(b'.')) {
                    continue;
                }
                steps.push(Step::Key(key.clone()));
                walk_leaves(value, steps, visit);
                steps.pop();
            }
        }
        leaf => visit(steps, leaf),
    }
}

/// The perturbed value of a leaf; `None` when it is not perturbable.
fn perturb(v: &JsValue) -> Option<JsValue> {
    match v {
        JsValue::Number(n) if n.is_finite() => Some(JsValue::Number(n + 1.0)),
        JsValue::String(s) => {
            let sentinel: Vec<u16> = STRING_SENTINEL.encode_utf16().collect();
            // Already the sentinel: perturb to something else, or the
            // "perturbation" would be a no-op.
            let after = if *s == sentinel {
                format!("{STRING_SENTINEL}_2")
            } else {
                STRING_SENTINEL.to_owned()
            };
            Some(JsValue::String(after.encode_utf16().collect()))
        }
        JsValue::Bool(b) => Some(JsValue::Bool(!b)),
        _ => None,
    }
}

fn dotted(steps: &[Step]) -> String {
    steps
        .iter()
        .map(|s| match s {
            Step::Index(i) => i.to_string(),
            Step::Key(k) => String::from_utf16_lossy(k),
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// One label part on one line, clipped to [`LABEL_PART_MAX_CHARS`].
fn label_part(s: &str) -> String {
    let mut out = String::new();
    for (n, c) in s.chars().enumerate() {
        if n == LABEL_PART_MAX_CHARS {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// The leaf `steps` leads to, mutably.
fn leaf_mut<'a>(doc: &'a mut JsValue, steps: &[Step]) -> Option<&'a mut JsValue> {
    steps.iter().try_fold(doc, |cur, step| match (cur, step) {
        (JsValue::Array(items), Step::Index(i)) => items.get_mut(*i),
        (JsValue::Object(o), Step::Key(k)) => o.get_mut(k),
        _ => None,
    })
}

/// The file text with `p` applied: `JSON.stringify(doc, null, 2)` of the
/// document with the one leaf replaced (`doc` is left as it was).
fn render_perturbed(doc: &mut JsValue, p: &Perturbation) -> Option<String> {
    let leaf = leaf_mut(doc, &p.steps)?;
    let before = std::mem::replace(leaf, p.after.clone());
    let text = json::legacy_indented(doc, "  ");
    // The same steps resolved a moment ago; the document was not reshaped.
    if let Some(leaf) = leaf_mut(doc, &p.steps) {
        *leaf = before;
    }
    Some(text)
}

// ---------------------------------------------------------------------------
// The pass.

/// What the pass evaluates against — the same evidence the replay used.
pub struct Inputs<'a> {
    pub cassette: &'a Cassette,
    /// `cassette.artifacts()` (empty when absent).
    pub artifacts: &'a [ManifestEntry],
    /// The assertions as evaluated (after bucket stripping), in order.
    pub items: &'a [Map<String, Value>],
    pub run: &'a RunRecord,
    /// The materialised manifest, when a manifest key was active.
    pub materialised: Option<&'a Materialised>,
}

/// Runs the mutation pass. Never fails: a file that cannot be rewritten is
/// reported and evaluated from the manifest alone.
pub fn run(inputs: &Inputs<'_>, opts: &MutateOptions) -> MutationPass {
    let Selection { inlined, scoped } = select(inputs.artifacts, opts);
    // A base64 body is not UTF-8 text, so never a JSON document.
    let candidates: Vec<Candidate<'_>> = scoped
        .iter()
        .filter(|(_, e)| e.encoding != Some(BodyEncoding::Base64))
        .filter_map(|(i, e)| {
            Some(Candidate {
                artifact: *i,
                path: &e.path,
                body: e.body.as_deref()?,
            })
        })
        .collect();
    let mut plan = plan(&candidates, opts.caps);
    let sampled = plan.sampled();
    let mut notices = Vec::new();
    let uncaught = if sampled == 0 {
        Vec::new()
    } else {
        evaluate_plan(inputs, &mut plan, &mut notices)
    };

    let scope = match plan.truncated_by() {
        None => String::new(),
        Some(by) => format!(
            " (sampled {sampled} of {} eligible value(s); {})",
            plan.eligible(),
            match by {
                TruncatedBy::PerFile => format!(
                    "per-file cap {} reached on {} file(s)",
                    opts.caps.per_file,
                    plan.files_at_per_file_cap()
                ),
                TruncatedBy::Total => format!("total cap {} reached", opts.caps.total),
            }
        ),
    };
    if sampled == 0 {
        notices.push(if scoped.is_empty() && !inlined.is_empty() {
            format!(
                "::notice:: [mutate] --mutate-include/--mutate-exclude filtered out all {} inlined \
                    JSON artifact(s) — nothing left to perturb",
                inlined.len()
            )
        } else {
            let scoped_paths: Vec<&str> = scoped.iter().map(|(_, e)| e.path.as_str()).collect();
            format!(
                "::notice:: [mutate] {}",
                explain_no_mutations(inputs.artifacts, &scoped_paths)
            )
        });
    } else if !uncaught.is_empty() {
        notices.push(format!(
            "::warning:: [mutate] {}/{sampled} sampled perturbation(s) CAUGHT BY NOTHING — these \
                fields are unguarded{scope}:",
            uncaught.len()
        ));
        notices.extend(uncaught.iter().map(|u| format!("    {u}")));
    } else {
        notices.push(format!(
            "::notice:: [mutate] all {sampled} sampled perturbation(s) were caught — assertions \
                cover every perturbed field{scope}"
        ));
    }
    MutationPass {
        report: MutationReport {
            sampled,
            eligible: plan.eligible(),
            truncated_by: plan.truncated_by(),
            caps: opts.caps,
            uncaught,
        },
        notices,
    }
}

/// The manifest entries a pass looks at, as `(manifest index, entry)`.
struct Selection<'a> {
    /// Entries whose body the cassette carries in full.
    inlined: Vec<(usize, &'a ManifestEntry)>,
    /// `inlined` kept by `--mutate-include` (none ⇒ all) and not dropped by
    /// `--mutate-exclude` (exclude wins).
    scoped: Vec<(usize, &'a ManifestEntry)>,
}

fn select<'a>(artifacts: &'a [ManifestEntry], opts: &MutateOptions) -> Selection<'a> {
    let include: Vec<Glob> = opts.include.iter().map(|g| Glob::new(g)).collect();
    let exclude: Vec<Glob> = opts.exclude.iter().map(|g| Glob::new(g)).collect();
    let inlined: Vec<(usize, &ManifestEntry)> = artifacts
        .iter()
        .enumerate()
        .filter(|(_, e)| e.body.is_some() && e.truncated != Some(true))
        .collect();
    let scoped = inlined
        .iter()
        .copied()
        .filter(|(_, e)| {
            (include.is_empty() || any_matches(&include, &e.path))
                && !any_matches(&exclude, &e.path)
        })
        .collect();
    Selection { inlined, scoped }
}

/// Applies each planned perturbation in turn, re-evaluates, restores, and
/// returns the labels nothing caught.
fn evaluate_plan(inputs: &Inputs<'_>, plan: &mut Plan, notices: &mut Vec<String>) -> Vec<String> {
    let mut view = evaluation_view(inputs.cassette);
    let work_root = inputs.materialised.map(Materialised::root);
    let passed_before: Vec<bool> = {
        let ctx = Context::new(&view, inputs.run, work_root);
        inputs
            .items
            .iter()
            .map(|item| assert::check(item, &ctx).pass)
            .collect()
    };
    let mut uncaught = Vec::new();
    for file in &mut plan.files {
        let Some(doc) = file.doc.as_mut() else {
            continue;
        };
        let original = inputs
            .artifacts
            .get(file.artifact)
            .and_then(|e| e.body.clone())
            .unwrap_or_default();
        for p in &file.perturbations {
            let Some(text) = render_perturbed(doc, p) else {
                continue; // planned from this very document: always resolves
            };
            let Some(saved) = set_body(&mut view.doc, file.artifact, Value::String(text.clone()))
            else {
                continue; // the manifest entry has no body slot: nothing was perturbed
            };
            let rewrote = rewrite_materialised(inputs.materialised, &file.path, &text, notices);
            let ctx = Context::new(&view, inputs.run, work_root);
            // Caught = an assertion that passed on the recorded value fails
            // now; an already-red assertion cannot mask the gap.
            let caught = inputs
                .items
                .iter()
                .zip(&passed_before)
                .any(|(item, &passed)| passed && !assert::check(item, &ctx).pass);
            if !caught {
                uncaught.push(p.label.clone());
            }
            set_body(&mut view.doc, file.artifact, saved);
            if rewrote {
                restore_materialised(inputs.materialised, &file.path, &original, notices);
            }
        }
    }
    uncaught
}

/// The evaluation copy: everything the evaluator reads from a cassette.
/// The raw event / controlOut lines are left out — the evaluator reads the
/// re-driven `RunRecord` for those — so a large recording is not copied.
/// Its own baseline makes "caught" compare like with like.
fn evaluation_view(cassette: &Cassette) -> Cassette {
    Cassette::unchecked(
        cassette.path.clone(),
        cassette
            .doc
            .iter()
            .filter(|(k, _)| *k != "events" && *k != "controlOut")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        cassette.version,
    )
}

/// Writes the perturbed `text` over the materialised file at `path`, if the
/// outputs were materialised; false (with a notice) when it could not.
fn rewrite_materialised(
    materialised: Option<&Materialised>,
    path: &str,
    text: &str,
    notices: &mut Vec<String>,
) -> bool {
    let Some(m) = materialised else {
        return false;
    };
    match m.rewrite(path, text.as_bytes()) {
        Ok(()) => true,
        Err(e) => {
            notices.push(format!(
                "::warning:: [mutate] {}: could not perturb the materialised file \
                    ({e}) — evaluated from the manifest only",
                label_part(path)
            ));
            false
        }
    }
}

/// Puts the recorded body back over a file [`rewrite_materialised`] perturbed.
fn restore_materialised(
    materialised: Option<&Materialised>,
    path: &str,
    original: &str,
    notices: &mut Vec<String>,
) {
    if let Some(m) = materialised
        && let Err(e) = m.rewrite(path, original.as_bytes())
    {
        notices.push(format!(
            "::warning:: [mutate] {}: could not restore the materialised file ({e})",
            label_part(path)
        ));
    }
}

/// Replaces `artifacts[index].body` in `doc`, returning the previous value.
fn set_body(doc: &mut Map<String, Value>, index: usize, body: Value) -> Option<Value> {
    let slot = doc
        .get_mut("artifacts")?
        .as_array_mut()?
        .get_mut(index)?
        .as_object_mut()?
        .get_mut("body")?;
    Some(std::mem::replace(slot, body))
}

/// Why the plan came out empty, from the manifest itself (`--mutate` exits
/// 0 either way, so an unexplained "nothing to perturb" reads as broken).
/// `scoped` are the paths of the inlined artifacts the globs kept.
pub fn explain_no_mutations(artifacts: &[ManifestEntry], scoped: &[&str]) -> String {
    let is_json = |p: &str| p.to_ascii_lowercase().ends_with(".json");
    let json_all: Vec<&ManifestEntry> = artifacts.iter().filter(|a| is_json(&a.path)).collect();
    let inlined_json = scoped.iter().filter(|p| is_json(p)).count();
    let head = "no perturbable values";
    if json_all.is_empty() {
        return format!(
            "{head} — this cassette records {} artifact(s), none of them .json. Mutation coverage \
                perturbs recorded JSON values, so it needs a scenario whose skill writes a JSON \
                deliverable (e.g. outputs/report.json) and an assertion over it.",
            artifacts.len()
        );
    }
    if inlined_json == 0 {
        let mut reasons: Vec<&str> = Vec::new();
        for a in &json_all {
            let r = match a.truncation_reason {
                Some(TruncationReason::Size) => "size",
                Some(TruncationReason::Readonly) => "readonly",
                Some(TruncationReason::Input) => "input",
                Some(TruncationReason::Unreadable) => "unreadable",
                Some(TruncationReason::Fixture) => "fixture",
                None => "unknown",
            };
            if !reasons.contains(&r) {
                reasons.push(r);
            }
        }
        let detail: Vec<String> = reasons
            .iter()
            .map(|r| {
                let remedy = match *r {
                    "size" => "over the body cap — re-record with a larger --max-artifact-bytes",
                    "readonly" => "under a read-only mount, which is never inlined",
                    "input" => "an upload, which is deliberately never inlined",
                    "unreadable" => "unreadable at record time",
                    "fixture" => "an untouched binary workspace_fixture file, recorded hash-only",
                    _ => "body absent for an unrecorded reason",
                };
                format!("{r} ({remedy})")
            })
            .collect();
        return format!(
            "{head} — {} .json artifact(s) present but none carries an inlined body: {}.",
            json_all.len(),
            detail.join(", ")
        );
    }
    format!(
        "{head} — {inlined_json} inlined .json artifact(s) parsed, but none contains a perturbable \
            leaf (an empty document, or only null values)."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand<'a>(artifact: usize, path: &'a str, body: &'a str) -> Candidate<'a> {
        Candidate {
            artifact,
            path,
            body,
        }
    }

    fn labels(p: &Plan) -> Vec<String> {
        p.files
            .iter()
            .flat_map(|f| f.perturbations.iter().map(|m| m.label.clone()))
            .collect()
    }

    const MIXED: &str = r#"{"b":{"x":[1.50,null,"s"]},"1":true,"a.b":5,"n":null,"__MUTATED__":"__MUTATED__","big":1e400}"#;

    #[test]
    fn labels_order_and_caps_match_the_original() {
        // Expected values are cowork-harness's planMutationsWithStats /
        // summarizeMutationPlan run on the same input (caps 3 / 4).
        let c = [
            cand(0, "outputs/m.json", MIXED),
            cand(1, "outputs/r.JSON", "42"),
            cand(2, "outputs/t.md", r#"{"a":1}"#),
            cand(3, "outputs/bad.json", "{oops"),
        ];
        let p = plan(
            &c,
            Caps {
                per_file: 3,
                total: 4,
            },
        );
        assert_eq!(
            labels(&p),
            [
                "outputs/m.json  1: true → false",
                "outputs/m.json  b.x.0: 1.5 → 2.5",
                "outputs/m.json  b.x.2: \"s\" → \"__MUTATED__\"",
                "outputs/r.JSON  : 42 → 43",
            ]
        );
        assert_eq!(p.sampled(), 4);
        assert_eq!(p.eligible(), 5);
        assert_eq!(p.files_at_per_file_cap(), 1);
        assert_eq!(p.truncated_by(), Some(TruncatedBy::Total));
        // Non-.json and unparseable bodies are not planned at all.
        let paths: Vec<&str> = p.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["outputs/m.json", "outputs/r.JSON"]);
    }

    #[test]
    fn the_sentinel_is_perturbed_to_something_else() {
        let p = plan(&[cand(0, "a.json", MIXED)], Caps::default());
        let l = labels(&p);
        assert_eq!(l.len(), 4, "{l:?}");
        assert_eq!(
            l[3],
            "a.json  __MUTATED__: \"__MUTATED__\" → \"__MUTATED___2\""
        );
        assert_eq!(p.truncated_by(), None);
    }

    #[test]
    fn per_file_cap_applies_first() {
        let body = r#"{"a":1,"b":2,"c":3}"#;
        let c = [cand(0, "x.json", body), cand(1, "y.json", body)];
        let p = plan(
            &c,
            Caps {
                per_file: 2,
                total: 50,
            },
        );
        assert_eq!(p.sampled(), 4);
        assert_eq!(p.eligible(), 6);
        assert_eq!(p.files_at_per_file_cap(), 2);
        assert_eq!(p.truncated_by(), Some(TruncatedBy::PerFile));
        // Caps a file reaches exactly (no leaf left over) are not truncation.
        let p = plan(
            &c,
            Caps {
                per_file: 3,
                total: 6,
            },
        );
        assert_eq!((p.sampled(), p.truncated_by()), (6, None));
    }

    #[test]
    fn documents_without_perturbable_leaves_are_counted_but_not_kept() {
        let c = [
            cand(0, "e.json", "{}"),
            cand(1, "n.json", "null"),
            cand(2, "z.json", r#"{"a":[null,{}],"k.dot":1}"#),
        ];
        let p = plan(&c, Caps::default());
        assert_eq!((p.sampled(), p.eligible()), (0, 0));
        assert_eq!(p.files.len(), 3);
        assert!(p.files.iter().all(|f| f.doc.is_none()));
    }

    #[test]
    fn applying_a_perturbation_reserialises_like_json_stringify_and_leaves_the_doc_intact() {
        let mut p = plan(&[cand(0, "m.json", MIXED)], Caps::default());
        let f = &mut p.files[0];
        let doc = f.doc.as_mut().unwrap();
        let before = doc.clone();
        // Node: JSON.stringify(applied, null, 2) from the original's applyMutation.
        assert_eq!(
            render_perturbed(doc, &f.perturbations[0]).unwrap(),
            "{\n  \"1\": false,\n  \"b\": {\n    \"x\": \
                [\n      1.5,\n      null,\n      \"s\"\n    ]\n  },\n  \"a.b\": 5,\n  \"n\": \
                null,\n  \"__MUTATED__\": \"__MUTATED__\",\n  \"big\": null\n}"
        );
        assert_eq!(*doc, before);
        let mut root = plan(&[cand(0, "r.json", "\"x\"")], Caps::default());
        let f = &mut root.files[0];
        assert_eq!(
            render_perturbed(f.doc.as_mut().unwrap(), &f.perturbations[0]).unwrap(),
            "\"__MUTATED__\""
        );
    }

    #[test]
    fn hostile_values_give_bounded_one_line_labels() {
        let long = "y".repeat(100_000);
        let body = format!(r#"{{"k\nk":"{long}"}}"#);
        let p = plan(&[cand(0, "a\u{1b}b.json", &body)], Caps::default());
        let l = &labels(&p)[0];
        assert!(!l.contains('\n') && !l.contains('\u{1b}'), "{l}");
        assert!(l.starts_with("a\\u{1b}b.json  k\\nk: \"yyy"), "{l}");
        assert!(l.chars().count() < 4 * LABEL_PART_MAX_CHARS + 20, "{l}");
    }

    #[test]
    fn thousands_of_artifacts_stay_within_the_caps() {
        let bodies: Vec<String> = (0..5000)
            .map(|i| format!(r#"{{"v":{i},"w":true}}"#))
            .collect();
        let paths: Vec<String> = (0..5000).map(|i| format!("outputs/{i}.json")).collect();
        let c: Vec<Candidate<'_>> = (0..5000).map(|i| cand(i, &paths[i], &bodies[i])).collect();
        let p = plan(&c, Caps::default());
        assert_eq!(p.sampled(), DEFAULT_MAX_TOTAL);
        assert_eq!(p.eligible(), 10_000);
        assert_eq!(p.truncated_by(), Some(TruncatedBy::Total));
        assert_eq!(p.files.iter().filter(|f| f.doc.is_some()).count(), 25);
    }

    fn entry(path: &str, body: Option<&str>, reason: Option<TruncationReason>) -> ManifestEntry {
        ManifestEntry {
            path: path.into(),
            bytes: 0,
            sha256: String::new(),
            body: body.map(str::to_owned),
            encoding: None,
            truncated: reason.map(|_| true),
            truncation_reason: reason,
            link_kind: None,
        }
    }

    #[test]
    fn include_and_exclude_scope_inlined_artifacts_before_planning() {
        let manifest = [
            entry("outputs/report.json", Some("{}"), None),
            entry("outputs/handoff/state.json", Some("{}"), None),
            entry("outputs/handoff/deep/x.json", Some("{}"), None),
            entry("outputs/big.json", None, Some(TruncationReason::Size)),
            entry("Outputs/case.json", Some("{}"), None),
        ];
        let paths = |opts: &MutateOptions| -> (Vec<usize>, Vec<&str>) {
            let s = select(&manifest, opts);
            (
                s.inlined.iter().map(|(i, _)| *i).collect(),
                s.scoped.iter().map(|(_, e)| e.path.as_str()).collect(),
            )
        };
        let (inlined, all) = paths(&MutateOptions::default());
        assert_eq!(inlined, [0, 1, 2, 4], "truncated entries are never inlined");
        assert_eq!(all.len(), 4);
        let excl = MutateOptions {
            exclude: vec!["outputs/handoff/**".into()],
            ..Default::default()
        };
        assert_eq!(paths(&excl).1, ["outputs/report.json", "Outputs/case.json"]);
        let incl = MutateOptions {
            include: vec!["outputs/*".into()],
            ..Default::default()
        };
        // `*` stays within a segment; matching is case-sensitive.
        assert_eq!(paths(&incl).1, ["outputs/report.json"]);
        let both = MutateOptions {
            include: vec!["outputs/**".into()],
            exclude: vec!["**/deep/**".into(), "outputs/report.json".into()],
            ..Default::default()
        };
        assert_eq!(paths(&both).1, ["outputs/handoff/state.json"]);
    }

    #[test]
    fn empty_plans_are_explained_from_the_manifest() {
        let md = [entry("outputs/a.md", Some("x"), None)];
        assert!(explain_no_mutations(&md, &["outputs/a.md"]).starts_with(
            "no perturbable values — this cassette records 1 artifact(s), none of them .json."
        ));
        let bodyless = [
            entry("outputs/a.json", None, Some(TruncationReason::Size)),
            entry("uploads/b.json", None, Some(TruncationReason::Input)),
            entry("outputs/c.json", None, Some(TruncationReason::Size)),
        ];
        assert_eq!(
            explain_no_mutations(&bodyless, &[]),
            "no perturbable values — 3 .json artifact(s) present but none carries an inlined body: \
                size (over the body cap — re-record with a larger --max-artifact-bytes), input (an \
                upload, which is deliberately never inlined)."
        );
        let empty = [entry("outputs/e.json", Some("{}"), None)];
        assert_eq!(
            explain_no_mutations(&empty, &["outputs/e.json"]),
            "no perturbable values — 1 inlined .json artifact(s) parsed, but none contains a \
                perturbable leaf (an empty document, or only null values)."
        );
    }
}

#[cfg(test)]
mod pass_tests {
    use super::*;
    use crate::replay::materialise;
    use sha2::{Digest, Sha256};

    const METRICS: &str = r#"{"total": 42, "tags": ["a"]}"#;

    /// `cassettes/write-note` with a JSON deliverable added to its manifest.
    fn cassette() -> Cassette {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/cassettes/write-note.cassette.json"
        );
        let text = std::fs::read_to_string(path).expect("committed cassette");
        let mut doc: Map<String, Value> = serde_json::from_str(&text).expect("cassette JSON");
        let artifacts = doc["artifacts"].as_array_mut().expect("artifacts");
        artifacts.push(serde_json::json!({
            "path": "outputs/metrics.json",
            "bytes": METRICS.len(),
            "sha256": hex::encode(Sha256::digest(METRICS.as_bytes())),
            "body": METRICS,
        }));
        Cassette::from_doc(path, doc).expect("valid cassette")
    }

    #[test]
    fn the_pass_evaluates_each_perturbation_and_restores_the_tree() {
        let c = cassette();
        let artifacts = c.artifacts().unwrap();
        let m = materialise::materialise_on_disk(&artifacts).unwrap();
        let run = RunRecord::from_cassette(&c);
        let items: Vec<Map<String, Value>> = [
            serde_json::json!({"result": "success"}),
            serde_json::json!({"artifact_json": {"artifact": "outputs/metrics.json", "path": "total", "equals": 42}}),
        ]
        .into_iter()
        .map(|v| v.as_object().cloned().unwrap())
        .collect();
        let inputs = Inputs {
            cassette: &c,
            artifacts: &artifacts,
            items: &items,
            run: &run,
            materialised: Some(&m),
        };
        let pass = run_pass(&inputs);
        assert_eq!(
            pass.report.uncaught,
            ["outputs/metrics.json  tags.0: \"a\" → \"__MUTATED__\""]
        );
        assert_eq!((pass.report.sampled, pass.report.eligible), (2, 2));
        assert_eq!(
            std::fs::read_to_string(m.root().join("outputs/metrics.json")).unwrap(),
            METRICS,
            "the materialised file is restored byte for byte"
        );
        assert_eq!(
            pass.notices[0],
            "::warning:: [mutate] 1/2 sampled perturbation(s) CAUGHT BY NOTHING — these fields are \
                unguarded:"
        );
        // Without a materialised tree (no manifest key active) the manifest
        // is still perturbed: nothing reads it, so nothing is caught.
        let items = &items[..1];
        let inputs = Inputs {
            items,
            materialised: None,
            ..inputs
        };
        assert_eq!(run_pass(&inputs).report.uncaught.len(), 2);
    }

    fn run_pass(inputs: &Inputs<'_>) -> MutationPass {
        run(inputs, &MutateOptions::default())
    }
}
