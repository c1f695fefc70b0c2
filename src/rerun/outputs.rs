//! Output files compared by what they are: the recorded manifest
//! (`artifacts`) against the fresh run's.
//!
//! - a file `reel.toml` declares `presence`-volatile: only whether it exists;
//! - text (UTF-8, no NUL), JSON included: compared masked, shown as a
//!   unified diff of the text as written (`divergence::unified_shown`);
//! - zip-based files (`.docx`, `.xlsx`, `.pptx`, a packaged skill): entry
//!   names and entry contents, ignoring entry timestamps and order; XML
//!   entries are canonicalised first (one tag or text per line, attributes
//!   sorted), so a changed paragraph shows as that paragraph;
//! - PDFs: page count and extracted text (pages, metadata, form fields),
//!   ignoring creation/modification dates and document ids;
//! - anything else by size and sha256.
//!
//! Where the cassette kept no body (over the inline cap), the recorded bytes
//! come from the recording's final snapshot and the fresh ones from the
//! fresh run's work root ([`Bodies`], `rerun::bodies`), each checked against
//! its manifest sha256; without a snapshot the divergence says there is no
//! body instead of showing a hash as if it were a diff.

use std::collections::BTreeMap;

use base64::Engine;
use serde_json::Value;

use super::divergence::{Divergence, Kind, Masks, unified_shown};
use crate::cassette::{BodyEncoding, ManifestEntry};
use crate::document::{Unread, pdf, zip_entries_bounded, zip_text};
use crate::mask::Roots;
use crate::project::{ProjectConfig, Volatile};

/// Where the bytes of a file the manifest did not inline come from (each
/// answer is checked against the manifest's sha256 before it is used).
pub struct Bodies<'a> {
    /// The recorded file (the recording's snapshot).
    pub recorded: &'a dyn Fn(&str) -> Option<Vec<u8>>,
    /// The fresh run's file (its work root).
    pub fresh: &'a dyn Fn(&str) -> Option<Vec<u8>>,
}

impl Bodies<'_> {
    /// No source beside the manifests.
    pub fn none() -> Bodies<'static> {
        Bodies {
            recorded: &|_| None,
            fresh: &|_| None,
        }
    }
}

/// Compares two manifests: files added, removed, changed.
pub fn compare_files(
    recorded: Option<&Value>,
    fresh: Option<&Value>,
    project: &ProjectConfig,
    masks: &Masks,
) -> Vec<Divergence> {
    compare_files_with(recorded, fresh, project, masks, &Bodies::none())
}

/// [`compare_files`], reading bodies the manifests did not inline from
/// `bodies`.
pub fn compare_files_with(
    recorded: Option<&Value>,
    fresh: Option<&Value>,
    project: &ProjectConfig,
    masks: &Masks,
    bodies: &Bodies<'_>,
) -> Vec<Divergence> {
    let (a, b) = (index(recorded), index(fresh));
    let mut out = Vec::new();
    for (path, r) in &a {
        match b.get(path) {
            None => out.push(file(path, describe(r), "(removed)".into(), Vec::new())),
            Some(n) => {
                if let Some(d) = compare_one(path, (r, n), project, masks, bodies) {
                    out.push(d);
                }
            }
        }
    }
    for (path, n) in &b {
        if !a.contains_key(path) {
            out.push(file(path, "(absent)".into(), describe(n), Vec::new()));
        }
    }
    out
}

fn index(v: Option<&Value>) -> BTreeMap<String, ManifestEntry> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|e| serde_json::from_value::<ManifestEntry>(e.clone()).ok())
        .map(|e| (e.path.clone(), e))
        .collect()
}

fn file(path: &str, recorded: String, now: String, diff: Vec<String>) -> Divergence {
    Divergence {
        conversation: "-".into(),
        turn: None,
        tool: Some(path.to_owned()),
        kind: Kind::File,
        recorded,
        now,
        diff,
        user_turn: None,
    }
}

/// `12 bytes, sha256 ab…` (and why there is no body, when there is none).
fn describe(e: &ManifestEntry) -> String {
    let mut s = format!("{} bytes, sha256 {}", e.bytes, e.sha256);
    if e.body.is_none() && e.link_kind.is_none() {
        s.push_str(" (no body in the cassette: over the inline cap, so only its hash is compared)");
    }
    s
}

fn compare_one(
    path: &str,
    (r, n): (&ManifestEntry, &ManifestEntry),
    project: &ProjectConfig,
    masks: &Masks,
    bodies: &Bodies<'_>,
) -> Option<Divergence> {
    let volatile = project.volatile(path);
    if volatile == Some(Volatile::Presence) || r.sha256 == n.sha256 {
        return None;
    }
    let rb = body(r).or_else(|| elsewhere(r, bodies.recorded));
    let nb = body(n).or_else(|| elsewhere(n, bodies.fresh));
    let sides = (described(r, rb.is_some()), described(n, nb.is_some()));
    let changed = |diff| Some(file(path, sides.0.clone(), sides.1.clone(), diff));
    let (Some(rb), Some(nb)) = (rb, nb) else {
        return changed(Vec::new());
    };
    // Compared masked, shown as written.
    let (shown_r, shown_n) = match (view(&rb), view(&nb)) {
        (View::OverBudget(why), _) | (_, View::OverBudget(why)) => return changed(vec![why]),
        (View::Text(a), View::Text(b)) | (View::Pdf(a), View::Pdf(b)) => (a, b),
        (View::Zip(a), View::Zip(b)) => (zip_text(&a), zip_text(&b)),
        _ => return changed(Vec::new()),
    };
    let roots = Roots::default();
    let (rv, nv) = (masks.apply(&shown_r, &roots), masks.apply(&shown_n, &roots));
    if rv == nv {
        return None;
    }
    changed(unified_shown((&rv, &nv), (&shown_r, &shown_n)))
}

/// The bytes of a file its manifest entry did not inline, from `source`,
/// only when they hash to the entry's sha256.
fn elsewhere(e: &ManifestEntry, source: &dyn Fn(&str) -> Option<Vec<u8>>) -> Option<Vec<u8>> {
    use sha2::{Digest, Sha256};
    if e.link_kind.is_some() {
        return None;
    }
    let bytes = source(&e.path)?;
    (hex::encode(Sha256::digest(&bytes)) == e.sha256).then_some(bytes)
}

/// [`describe`], saying where a body not in the cassette came from.
fn described(e: &ManifestEntry, have_bytes: bool) -> String {
    if e.body.is_none() && e.link_kind.is_none() && have_bytes {
        format!(
            "{} bytes, sha256 {} (compared by content: not in the cassette, read from its \
             snapshot or the run's work root)",
            e.bytes, e.sha256
        )
    } else {
        describe(e)
    }
}

/// The file's bytes from its inlined body.
fn body(e: &ManifestEntry) -> Option<Vec<u8>> {
    let text = e.body.as_deref()?;
    match e.encoding {
        Some(BodyEncoding::Base64) => base64::engine::general_purpose::STANDARD.decode(text).ok(),
        _ => Some(text.as_bytes().to_vec()),
    }
}

enum View {
    Text(String),
    /// Entry name → its comparable form, sorted by name.
    Zip(BTreeMap<String, String>),
    /// The PDF's comparable text (`pdf::PdfText::comparable`).
    Pdf(String),
    Binary,
    /// A document past its reading budget (a bomb): `not compared: over
    /// budget (…)`, its bytes compared by hash alone.
    OverBudget(String),
}

fn view(bytes: &[u8]) -> View {
    if crate::document::is_zip(bytes) {
        match zip_entries_bounded(bytes) {
            Ok(entries) => return View::Zip(entries),
            Err(over @ Unread::OverBudget(_)) => return View::OverBudget(over.to_string()),
            Err(Unread::Malformed(_)) => {}
        }
    }
    if pdf::is_pdf(bytes) {
        match pdf::read(bytes) {
            Ok(text) => return View::Pdf(text.comparable()),
            Err(over @ Unread::OverBudget(_)) => return View::OverBudget(over.to_string()),
            Err(Unread::Malformed(_)) => {}
        }
    }
    match std::str::from_utf8(bytes) {
        Ok(s) if !s.contains('\0') => View::Text(s.to_owned()),
        _ => View::Binary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use sha2::{Digest, Sha256};
    use std::io::Write;

    fn zip(entries: &[(&str, &str)], mtime: (u16, u8)) -> Vec<u8> {
        let mut buf = std::io::Cursor::new(Vec::new());
        {
            let mut w = zip::ZipWriter::new(&mut buf);
            let when = zip::DateTime::from_date_and_time(mtime.0, 1, mtime.1, 10, 0, 0).unwrap();
            let opts = zip::write::SimpleFileOptions::default().last_modified_time(when);
            for (name, text) in entries {
                w.start_file(*name, opts).unwrap();
                w.write_all(text.as_bytes()).unwrap();
            }
            w.finish().unwrap();
        }
        buf.into_inner()
    }

    fn manifest(path: &str, bytes: &[u8]) -> Value {
        json!([{
            "path": path,
            "bytes": bytes.len(),
            "sha256": hex::encode(Sha256::digest(bytes)),
            "body": base64::engine::general_purpose::STANDARD.encode(bytes),
            "encoding": "base64",
        }])
    }

    const DOC: &str = "<?xml version=\"1.0\"?><w:document xmlns:w=\"urn:w\" b=\"2\" a=\"1\">\
        <w:p><w:t>Total: 245</w:t></w:p></w:document>";

    #[test]
    fn a_zip_with_new_timestamps_and_order_is_the_same_output() {
        let a = zip(
            &[("word/document.xml", DOC), ("docProps/app.xml", "<a/>")],
            (2024, 1),
        );
        let b = zip(
            &[("docProps/app.xml", "<a/>"), ("word/document.xml", DOC)],
            (2025, 9),
        );
        assert_ne!(a, b);
        let (ra, rb) = (
            manifest("outputs/r.docx", &a),
            manifest("outputs/r.docx", &b),
        );
        let d = compare_files(
            Some(&ra),
            Some(&rb),
            &ProjectConfig::default(),
            &Masks::default(),
        );
        assert_eq!(d, vec![]);
    }

    #[test]
    fn a_changed_paragraph_shows_as_text_not_a_hash() {
        let a = zip(&[("word/document.xml", DOC)], (2024, 1));
        let b = zip(
            &[("word/document.xml", &DOC.replace("245", "246"))],
            (2024, 1),
        );
        let (ra, rb) = (
            manifest("outputs/r.docx", &a),
            manifest("outputs/r.docx", &b),
        );
        let d = compare_files(
            Some(&ra),
            Some(&rb),
            &ProjectConfig::default(),
            &Masks::default(),
        );
        assert_eq!(d.len(), 1);
        let changed: Vec<&String> = d[0].diff.iter().filter(|l| !l.starts_with("  ")).collect();
        assert_eq!(
            changed,
            [
                "- word/document.xml: Total: 245",
                "+ word/document.xml: Total: 246"
            ],
            "{:?}",
            d[0].diff
        );
    }

    #[test]
    fn text_is_masked_and_presence_volatile_files_only_need_to_exist() {
        let (a, b) = (
            "id: 3fa9c2d1\nat 2025-01-02T03:04:05Z\n",
            "id: 77aa01bc\nat 2026-02-03T00:00:00Z\n",
        );
        let m = |t: &str| {
            json!([{"path": "outputs/t.txt", "bytes": t.len(),
            "sha256": hex::encode(Sha256::digest(t)), "body": t, "encoding": "utf8"}])
        };
        let none = ProjectConfig::default();
        assert_eq!(
            compare_files(Some(&m(a)), Some(&m(b)), &none, &Masks::default()),
            vec![]
        );
        let c = "id: 3fa9c2d1\nat 2025-01-02T03:04:05Z\nextra\n";
        let d = compare_files(Some(&m(a)), Some(&m(c)), &none, &Masks::default());
        assert_eq!(d.len(), 1);
        assert!(d[0].diff.contains(&"+ extra".to_owned()), "{:?}", d[0].diff);
        let dir = tempfile::tempdir().unwrap();
        let toml = dir.path().join("reel.toml");
        std::fs::write(&toml, "[volatile]\n\"outputs/*.txt\" = \"presence\"\n").unwrap();
        let project = ProjectConfig::load(&toml).unwrap();
        assert_eq!(
            compare_files(Some(&m(a)), Some(&m(c)), &project, &Masks::default()),
            vec![]
        );
    }

    #[test]
    fn a_pdf_is_compared_by_its_text_not_its_dates_or_id() {
        use lopdf::dictionary;
        let stamp = |text: &str, when: &str, id: &str| {
            let mut doc = lopdf::Document::load_mem(&pdf::text_pdf(&[text])).unwrap();
            let info = doc.add_object(dictionary! {
                "CreationDate" => lopdf::Object::string_literal(when),
                "ModDate" => lopdf::Object::string_literal(when),
            });
            doc.trailer.set("Info", info);
            let id = lopdf::Object::string_literal(id);
            doc.trailer.set("ID", vec![id.clone(), id]);
            let mut out = Vec::new();
            doc.save_to(&mut out).unwrap();
            manifest("outputs/form.pdf", &out)
        };
        let a = stamp("Name: Ada\nTotal: 245", "D:20250101", "aaaa");
        let b = stamp("Name: Ada\nTotal: 245", "D:20260202", "bbbb");
        let none = ProjectConfig::default();
        assert_eq!(
            compare_files(Some(&a), Some(&b), &none, &Masks::default()),
            vec![]
        );
        let c = stamp("Name: Ada\nTotal: 246", "D:20260202", "bbbb");
        let d = compare_files(Some(&a), Some(&c), &none, &Masks::default());
        assert_eq!(d.len(), 1);
        let changed: Vec<&String> = d[0].diff.iter().filter(|l| !l.starts_with("  ")).collect();
        assert_eq!(
            changed,
            ["- page 1: Total: 245", "+ page 1: Total: 246"],
            "{:?}",
            d[0].diff
        );
    }

    #[test]
    fn a_file_without_a_body_says_so() {
        let e = |sha: &str| {
            json!([{"path": "outputs/big.pdf", "bytes": 9_000_000, "sha256": sha,
            "truncated": true, "truncationReason": "size"}])
        };
        let d = compare_files(
            Some(&e("aa")),
            Some(&e("bb")),
            &ProjectConfig::default(),
            &Masks::default(),
        );
        assert_eq!(d.len(), 1);
        assert!(d[0].now.contains("no body in the cassette"), "{}", d[0].now);
        assert!(d[0].diff.is_empty());
    }

    /// A PDF past its reading budget (pages sharing one large stream) is
    /// not compared by its text: the divergence says so, never a larger
    /// allocation.
    #[test]
    fn a_document_over_its_budget_is_not_compared_and_says_so() {
        use lopdf::{Object, Stream, dictionary};
        let bomb = |n: i64| {
            let mut doc = lopdf::Document::with_version("1.5");
            let pages_id = doc.new_object_id();
            let content = b"BT (x) Tj ET\n".repeat(24_000);
            let stream = doc.add_object(Stream::new(dictionary! {}, content));
            let kids: Vec<Object> = (0..n)
                .map(|_| {
                    let page =
                        dictionary! {"Type" => "Page", "Parent" => pages_id, "Contents" => stream};
                    doc.add_object(page).into()
                })
                .collect();
            let pages = dictionary! { "Type" => "Pages", "Kids" => kids, "Count" => n };
            doc.objects.insert(pages_id, Object::Dictionary(pages));
            let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
            doc.trailer.set("Root", catalog);
            let mut out = Vec::new();
            doc.save_to(&mut out).unwrap();
            manifest("outputs/bomb.pdf", &out)
        };
        let none = ProjectConfig::default();
        let d = compare_files(Some(&bomb(230)), Some(&bomb(231)), &none, &Masks::default());
        assert_eq!(d.len(), 1);
        assert!(
            d[0].diff[0].starts_with("not compared: over budget (page contents decompress past"),
            "{:?}",
            d[0].diff
        );
    }
}
