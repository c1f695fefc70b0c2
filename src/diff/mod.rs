//! `reel diff`: what changed between two recordings, view by view.
//!
//! Each side is read into a [`Recording`] ([`digest`]: tool calls, answers,
//! transcript, manifest, assertion verdicts, metadata), masked by a
//! [`Normalizer`] unless `--no-normalize`, and the two are compared per
//! [`View`]. Sequences (tool calls, answers, assertions) are aligned by
//! identity (tool name, prompt, assertion key) with `similar`'s Myers diff,
//! so one inserted call reads as one addition, not a shifted list; aligned
//! items are compared leaf by leaf and each differing JSON path is one
//! [`Change`]. Inlined text bodies and long strings get a unified diff.
//!
//! The transcript view is advisory: a live re-recording always rewords the
//! assistant's prose, so it is reported but never makes two recordings
//! "differ" ([`Diff::identical`]). This module decides nothing about exit
//! codes or printing; `cli::diff` and [`render`] do.
//!
//! Files: `digest` (a cassette's views; assertion verdicts come via `replay`,
//! events are read through `evidence`), `render` (the text). The masker is
//! [`crate::mask`]. `show` reads the same views with raw values.

pub mod digest;
pub mod render;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};
use similar::{Algorithm, DiffTag, TextDiff};

pub use crate::mask::Normalizer;
pub use digest::{Outcome, Recording};

use crate::cassette::{Cassette, LoadError};

/// One view of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum View {
    /// Tool calls in order: inputs and results.
    Tools,
    /// Questions and permission prompts, and what was delivered.
    Answers,
    /// Assistant text (advisory).
    Transcript,
    /// The artifact manifest: added, removed, changed, with text diffs.
    Files,
    /// The `assert:` block and each assertion's verdict.
    Assertions,
    /// Fingerprint, agent version, model, turns, usage, cost.
    Meta,
}

impl View {
    pub const ALL: [View; 6] = [
        View::Tools,
        View::Answers,
        View::Transcript,
        View::Files,
        View::Assertions,
        View::Meta,
    ];

    pub fn name(self) -> &'static str {
        match self {
            View::Tools => "tools",
            View::Answers => "answers",
            View::Transcript => "transcript",
            View::Files => "files",
            View::Assertions => "assertions",
            View::Meta => "meta",
        }
    }

    /// Reported, but never what makes two recordings differ.
    pub fn advisory(self) -> bool {
        self == View::Transcript
    }
}

/// What happened to an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    Added,
    Removed,
    Changed,
}

/// One difference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub kind: ChangeKind,
    /// The item, e.g. `#2 Write`, `outputs/a.md`, `file_exists`.
    pub item: String,
    /// The JSON path inside the item (`input.content`); absent for a whole item.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Value>,
    /// A unified diff of a text value (inlined bodies, multi-line strings).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unified: Option<String>,
    /// The user turn (1-based) of a multi-turn recording the item belongs
    /// to (the old side's, the new side's for an addition); absent for a
    /// one-prompt recording and for what belongs to the whole session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn: Option<usize>,
}

/// One view's comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ViewDiff {
    pub view: View,
    pub advisory: bool,
    pub identical: bool,
    pub changes: Vec<Change>,
}

/// A comparison of two recordings.
#[derive(Debug, Clone, Serialize)]
pub struct Diff {
    pub a: PathBuf,
    pub b: PathBuf,
    pub normalized: bool,
    /// No non-advisory view differs.
    pub identical: bool,
    pub views: Vec<ViewDiff>,
}

impl Diff {
    /// The views that differ (advisory ones included).
    pub fn differing(&self) -> impl Iterator<Item = &ViewDiff> {
        self.views.iter().filter(|v| !v.identical)
    }

    /// One line: `identical` or `differs: tools (1), files (2)`.
    pub fn summary(&self) -> String {
        let parts: Vec<String> = self
            .differing()
            .map(|v| {
                format!(
                    "{} ({}{})",
                    v.view.name(),
                    v.changes.len(),
                    if v.advisory { ", advisory" } else { "" }
                )
            })
            .collect();
        match (self.identical, parts.is_empty()) {
            (true, true) => "identical".into(),
            (true, false) => format!("identical (advisory: {})", parts.join(", ")),
            (false, _) => format!("differs: {}", parts.join(", ")),
        }
    }
}

/// How to compare.
#[derive(Debug, Clone)]
pub struct DiffOptions {
    /// Mask run paths, ids, UUIDs, timestamps and durations (default on).
    pub normalize: bool,
    /// The views to compare (all when empty).
    pub views: Vec<View>,
    /// The project's masks (`reel.toml` `[masks]`), applied after the
    /// built-in ones when `normalize` is set.
    pub masks: Vec<crate::project::Mask>,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            normalize: true,
            views: Vec::new(),
            masks: Vec::new(),
        }
    }
}

/// Loads both cassettes and compares them.
pub fn diff_files(a: &Path, b: &Path, opts: &DiffOptions) -> Result<Diff, LoadError> {
    let (ca, cb) = rayon::join(|| Cassette::load(a), || Cassette::load(b));
    Ok(diff_cassettes(&ca?, &cb?, opts))
}

/// Compares two loaded cassettes.
pub fn diff_cassettes(a: &Cassette, b: &Cassette, opts: &DiffOptions) -> Diff {
    let (ra, rb) = rayon::join(
        || Recording::read_masked(a, opts.normalize, &opts.masks),
        || Recording::read_masked(b, opts.normalize, &opts.masks),
    );
    diff_recordings(&ra, &rb, opts)
}

/// Compares two recordings already read.
pub fn diff_recordings(a: &Recording, b: &Recording, opts: &DiffOptions) -> Diff {
    let views: Vec<View> = if opts.views.is_empty() {
        View::ALL.to_vec()
    } else {
        View::ALL
            .into_iter()
            .filter(|v| opts.views.contains(v))
            .collect()
    };
    let views: Vec<ViewDiff> = views
        .into_iter()
        .map(|view| {
            let changes = match view {
                View::Tools => tools(a, b),
                View::Answers => answers(a, b),
                View::Transcript => transcript(a, b),
                View::Files => files(a, b),
                View::Assertions => assertions(a, b),
                View::Meta => meta(a, b),
            };
            ViewDiff {
                view,
                advisory: view.advisory(),
                identical: changes.is_empty(),
                changes,
            }
        })
        .collect();
    Diff {
        a: a.path.clone(),
        b: b.path.clone(),
        normalized: opts.normalize,
        identical: views.iter().all(|v| v.identical || v.advisory),
        views,
    }
}

/// How a sequence view names and aligns its items.
struct Seq<'a, T> {
    /// Identity for alignment (tool name, prompt, assertion key).
    key: &'a dyn Fn(&T) -> String,
    /// What a change names (`#2 Write`); `i` is the item's 0-based index.
    label: &'a dyn Fn(usize, &T) -> String,
    /// Fields the label already shows, left out of the compared value.
    shown: &'a [&'a str],
    /// The user turn an item belongs to (a multi-turn recording).
    turn: &'a dyn Fn(&T) -> Option<usize>,
}

fn to_value<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

impl<T: PartialEq + Serialize> Seq<'_, T> {
    fn value(&self, item: &T) -> Value {
        let mut v = to_value(item);
        if let Value::Object(m) = &mut v {
            for k in self.shown {
                m.shift_remove(*k);
            }
        }
        v
    }

    /// Aligns two sequences by key and compares the aligned items; equal
    /// items are skipped before anything is serialised (a 50,000-call run
    /// with one changed input costs one comparison per call).
    fn diff(&self, a: &[T], b: &[T]) -> Vec<Change> {
        let mut out = Vec::new();
        if a == b {
            return out;
        }
        let ka: Vec<String> = a.iter().map(|x| (self.key)(x)).collect();
        let kb: Vec<String> = b.iter().map(|x| (self.key)(x)).collect();
        let ops = if ka == kb {
            vec![similar::DiffOp::Equal {
                old_index: 0,
                new_index: 0,
                len: ka.len(),
            }]
        } else {
            similar::capture_diff_slices(Algorithm::Myers, &ka, &kb)
        };
        for op in ops {
            let (tag, ra, rb) = op.as_tag_tuple();
            match tag {
                DiffTag::Equal => {
                    for (x, y) in ra.zip(rb) {
                        if a[x] != b[y] {
                            let label = (self.label)(x, &a[x]);
                            let from = out.len();
                            leaves(&label, "", &self.value(&a[x]), &self.value(&b[y]), &mut out);
                            let turn = (self.turn)(&a[x]);
                            out[from..].iter_mut().for_each(|c| c.turn = turn);
                        }
                    }
                }
                DiffTag::Delete | DiffTag::Insert | DiffTag::Replace => {
                    for x in ra {
                        let mut c = whole(
                            ChangeKind::Removed,
                            (self.label)(x, &a[x]),
                            self.value(&a[x]),
                        );
                        c.turn = (self.turn)(&a[x]);
                        out.push(c);
                    }
                    for y in rb {
                        let mut c =
                            whole(ChangeKind::Added, (self.label)(y, &b[y]), self.value(&b[y]));
                        c.turn = (self.turn)(&b[y]);
                        out.push(c);
                    }
                }
            }
        }
        out
    }
}

fn whole(kind: ChangeKind, item: String, value: Value) -> Change {
    let (before, after) = match kind {
        ChangeKind::Removed => (Some(value), None),
        _ => (None, Some(value)),
    };
    Change {
        kind,
        item,
        path: None,
        before,
        after,
        unified: None,
        turn: None,
    }
}

fn join_path(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_owned()
    } else {
        format!("{at}.{key}")
    }
}

/// Every JSON path where `a` and `b` differ, one change each.
fn leaves(label: &str, at: &str, a: &Value, b: &Value, out: &mut Vec<Change>) {
    if a == b {
        return;
    }
    match (a, b) {
        (Value::Object(ma), Value::Object(mb)) => {
            for (k, va) in ma {
                match mb.get(k) {
                    Some(vb) => leaves(label, &join_path(at, k), va, vb, out),
                    None => out.push(field(label, &join_path(at, k), Some(va), None)),
                }
            }
            for (k, vb) in mb {
                if !ma.contains_key(k) {
                    out.push(field(label, &join_path(at, k), None, Some(vb)));
                }
            }
        }
        (Value::Array(xa), Value::Array(xb)) if xa.len() == xb.len() => {
            for (i, (va, vb)) in xa.iter().zip(xb).enumerate() {
                leaves(label, &format!("{at}[{i}]"), va, vb, out);
            }
        }
        _ => out.push(field(label, at, Some(a), Some(b))),
    }
}

fn field(label: &str, path: &str, before: Option<&Value>, after: Option<&Value>) -> Change {
    let kind = match (before, after) {
        (None, Some(_)) => ChangeKind::Added,
        (Some(_), None) => ChangeKind::Removed,
        _ => ChangeKind::Changed,
    };
    let unified = match (before, after) {
        (Some(Value::String(x)), Some(Value::String(y)))
            if x.contains('\n') || y.contains('\n') =>
        {
            Some(unified(x, y, path, path))
        }
        _ => None,
    };
    Change {
        kind,
        item: label.to_owned(),
        path: (!path.is_empty()).then(|| path.to_owned()),
        before: before.cloned(),
        after: after.cloned(),
        unified,
        turn: None,
    }
}

/// A unified diff of two texts (3 lines of context).
pub fn unified(a: &str, b: &str, name_a: &str, name_b: &str) -> String {
    TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .diff_lines(a, b)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{name_a}"), &format!("b/{name_b}"))
        .to_string()
}

fn tools(a: &Recording, b: &Recording) -> Vec<Change> {
    Seq {
        key: &|t: &digest::ToolCall| t.name.clone(),
        label: &|i, t: &digest::ToolCall| format!("#{} {}", i + 1, t.name),
        shown: &["name"],
        turn: &|t: &digest::ToolCall| t.turn,
    }
    .diff(&a.tools, &b.tools)
}

fn answers(a: &Recording, b: &Recording) -> Vec<Change> {
    Seq {
        key: &|x: &digest::Answer| format!("{} {}", x.kind, x.name),
        label: &|i, x: &digest::Answer| format!("#{} {} {}", i + 1, x.kind, x.name),
        shown: &["kind", "name"],
        turn: &|_| None,
    }
    .diff(&a.answers, &b.answers)
}

fn transcript(a: &Recording, b: &Recording) -> Vec<Change> {
    if a.transcript == b.transcript {
        return Vec::new();
    }
    vec![Change {
        kind: ChangeKind::Changed,
        item: "transcript".into(),
        path: None,
        before: Some(Value::String(a.transcript.clone())),
        after: Some(Value::String(b.transcript.clone())),
        unified: Some(unified(
            &with_newline(&a.transcript),
            &with_newline(&b.transcript),
            "transcript",
            "transcript",
        )),
        turn: None,
    }]
}

fn with_newline(s: &str) -> String {
    if s.is_empty() || s.ends_with('\n') {
        s.to_owned()
    } else {
        format!("{s}\n")
    }
}

fn files(a: &Recording, b: &Recording) -> Vec<Change> {
    let index = |r: &Recording| -> Map<String, Value> {
        r.files
            .iter()
            .map(|f| (f.path.clone(), to_value(f)))
            .collect()
    };
    let (ia, ib) = (index(a), index(b));
    let mut out = Vec::new();
    let mut paths: Vec<&String> = ia
        .keys()
        .chain(ib.keys().filter(|k| !ia.contains_key(*k)))
        .collect();
    paths.sort();
    for path in paths {
        let (fa, fb) = (
            a.files.iter().find(|f| &f.path == path),
            b.files.iter().find(|f| &f.path == path),
        );
        match (fa, fb) {
            (Some(_), None) => out.push(Change {
                kind: ChangeKind::Removed,
                item: path.clone(),
                path: None,
                before: ia.get(path).cloned(),
                after: None,
                unified: None,
                turn: None,
            }),
            (None, Some(_)) => out.push(Change {
                kind: ChangeKind::Added,
                item: path.clone(),
                path: None,
                before: None,
                after: ib.get(path).cloned(),
                unified: None,
                turn: None,
            }),
            (Some(x), Some(y)) => {
                let mut vx = ia[path].clone();
                let mut vy = ib[path].clone();
                // With both bodies inlined the (masked) text decides: a body
                // naming the run directory hashes differently per recording.
                if x.text.is_some() && y.text.is_some() {
                    for v in [&mut vx, &mut vy] {
                        if let Value::Object(m) = v {
                            m.shift_remove("sha256");
                            m.shift_remove("bytes");
                        }
                    }
                }
                let (tx, ty) = (strip_key(&mut vx, "text"), strip_key(&mut vy, "text"));
                leaves(path, "", &vx, &vy, &mut out);
                if let Some(note) = body_not_kept(x, y) {
                    out.push(note);
                }
                match (tx, ty) {
                    (Some(Value::String(tx)), Some(Value::String(ty))) if tx != ty => {
                        out.push(Change {
                            kind: ChangeKind::Changed,
                            item: path.clone(),
                            path: Some("body".into()),
                            before: Some(Value::String(tx.clone())),
                            after: Some(Value::String(ty.clone())),
                            unified: Some(unified(&tx, &ty, path, path)),
                            turn: None,
                        });
                    }
                    (x, y) if x != y => out.push(field(path, "body", x.as_ref(), y.as_ref())),
                    _ => {}
                }
            }
            (None, None) => {}
        }
    }
    out
}

/// A file whose content changed while neither cassette holds its body:
/// the reason there is no text to show (an upload is never inlined, by
/// design), rather than a bare hash change read as the whole story.
fn body_not_kept(x: &digest::FileEntry, y: &digest::FileEntry) -> Option<Change> {
    if x.text.is_some() || y.text.is_some() || x.sha256 == y.sha256 || x.encoding.is_some() {
        return None;
    }
    let why = y
        .truncated
        .as_deref()
        .or(x.truncated.as_deref())
        .and_then(crate::cassette::TruncationReason::parse)?
        .why_not_kept();
    Some(Change {
        kind: ChangeKind::Changed,
        item: x.path.clone(),
        path: Some("body".into()),
        before: None,
        after: None,
        unified: Some(format!(
            "(content changed; no body to compare in either cassette — {why})"
        )),
        turn: None,
    })
}

fn strip_key(v: &mut Value, key: &str) -> Option<Value> {
    match v {
        Value::Object(m) => m.shift_remove(key),
        _ => None,
    }
}

fn assertions(a: &Recording, b: &Recording) -> Vec<Change> {
    // A turn's assertion (`source: turn N`) aligns only within its turn.
    let turn = |x: &digest::AssertionVerdict| {
        (x.source.as_deref()?.strip_prefix("turn ")?)
            .parse::<usize>()
            .ok()
    };
    let label = |x: &digest::AssertionVerdict| {
        x.assertion
            .as_object()
            .and_then(|m| m.keys().next().cloned())
            .or_else(|| x.source.clone())
            .unwrap_or_else(|| "(empty)".into())
    };
    let key = |x: &digest::AssertionVerdict| match turn(x) {
        Some(t) => format!("turn {t}: {}", label(x)),
        None => label(x),
    };
    let mut out = Seq {
        key: &key,
        label: &|_, x: &digest::AssertionVerdict| label(x),
        shown: &[],
        turn: &turn,
    }
    .diff(&a.assertions, &b.assertions);
    if a.verdict_pass != b.verdict_pass {
        out.push(Change {
            kind: ChangeKind::Changed,
            item: "verdict".into(),
            path: Some("pass".into()),
            before: Some(Value::Bool(a.verdict_pass)),
            after: Some(Value::Bool(b.verdict_pass)),
            unified: None,
            turn: None,
        });
    }
    out
}

fn meta(a: &Recording, b: &Recording) -> Vec<Change> {
    let mut out = Vec::new();
    for (k, va) in &a.meta {
        match b.meta.get(k) {
            Some(vb) if k == "fingerprint" => fingerprint(va, vb, &mut out),
            Some(vb) => leaves(k, "", va, vb, &mut out),
            None => out.push(field(k, "", Some(va), None)),
        }
    }
    for (k, vb) in &b.meta {
        if !a.meta.contains_key(k) {
            out.push(field(k, "", None, Some(vb)));
        }
    }
    out
}

/// The fingerprint's changes, `fileSigs` by file name
/// (`fileSigs[scripts/run.sh]`), not by position: its `[path, sig]` pairs
/// are keyed by path, so an added file is one addition, not a shift of
/// every later index. A name can occur more than once (two skill roots each
/// with a `SKILL.md`): the n-th occurrence pairs with the n-th
/// (`fileSigs[SKILL.md#2]`), so identical recordings stay identical.
fn fingerprint(a: &Value, b: &Value, out: &mut Vec<Change>) {
    let (Some(sa), Some(sb)) = (file_sigs(a), file_sigs(b)) else {
        return leaves("fingerprint", "", a, b, out);
    };
    let without = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.as_object_mut() {
            m.shift_remove("fileSigs");
        }
        v
    };
    leaves("fingerprint", "", &without(a), &without(b), out);
    for (key, va) in &sa {
        match sb.iter().find(|(k, _)| k == key) {
            Some((_, vb)) if vb == va => {}
            Some((_, vb)) => out.push(field("fingerprint", &key.label(), Some(va), Some(vb))),
            None => out.push(field("fingerprint", &key.label(), Some(va), None)),
        }
    }
    for (key, vb) in &sb {
        if !sa.iter().any(|(k, _)| k == key) {
            out.push(field("fingerprint", &key.label(), None, Some(vb)));
        }
    }
}

/// One `fileSigs` entry's identity: its path and which occurrence of that
/// path it is (0 for the first).
#[derive(PartialEq)]
struct SigKey {
    path: String,
    nth: usize,
}

impl SigKey {
    fn label(&self) -> String {
        match self.nth {
            0 => format!("fileSigs[{}]", self.path),
            n => format!("fileSigs[{}#{}]", self.path, n + 1),
        }
    }
}

/// A fingerprint's `fileSigs` pairs keyed by [`SigKey`]; `None` when the
/// member is missing or not `[path, sig]` pairs.
fn file_sigs(v: &Value) -> Option<Vec<(SigKey, Value)>> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    v.get("fileSigs")?
        .as_array()?
        .iter()
        .map(|pair| match pair.as_array()?.as_slice() {
            [Value::String(path), sig] => {
                let n = seen.entry(path.clone()).or_default();
                let key = SigKey {
                    path: path.clone(),
                    nth: *n,
                };
                *n += 1;
                Some((key, sig.clone()))
            }
            _ => None,
        })
        .collect()
}
