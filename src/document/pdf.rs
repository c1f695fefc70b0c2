//! The text inside a PDF, on `lopdf`: its pages' text, its metadata and its
//! form fields, without the dates and document ids that change on every run.
//!
//! Why `lopdf` (default features off; 27 crates, mostly its decryption
//! ciphers and decoders): a PDF's text sits in compressed content streams,
//! object streams and fonts' encodings, so reading it by hand would be a
//! parser of our own for hostile input. `lopdf` is the maintained pure-Rust
//! reader and writer, bounds decompression, and also writes the PDF the
//! scrubber leaves in place of one it cannot clean.
//!
//! Bounded: at most [`MAX_PAGES`] pages; page contents decompressed at most
//! [`super::INFLATE_BUDGET`] bytes in all, a stream counted each time a page
//! uses it (230 pages sharing one 8 MiB stream are 1.8 GB of work, not
//! 8 MiB), each stream decompressed once to learn its size; form fields
//! walked once each (a field listing itself, or an ancestor, as a kid is a
//! cycle, not 2^32 nodes) and at most [`MAX_FIELDS`] of them. Past a bound
//! the PDF is [`Unread::OverBudget`].

use std::collections::{HashMap, HashSet};

use lopdf::content::{Content, Operation};
use lopdf::{Dictionary, Document, LoadOptions, Object, ObjectId, Stream, dictionary};

use super::{INFLATE_BUDGET, Unread};

/// Most pages a PDF may have to be read.
pub const MAX_PAGES: usize = 2_000;

/// Most form fields walked.
pub const MAX_FIELDS: usize = 10_000;

/// Largest size a stream may decompress to (a small body is no bomb).
const INFLATE_CAP: usize = 8 << 20;

/// Info keys that change on every run, never compared.
const VOLATILE_INFO: [&[u8]; 2] = [b"CreationDate", b"ModDate"];

/// Whether `bytes` are a PDF (its header within the first KiB, as readers
/// accept it).
pub fn is_pdf(bytes: &[u8]) -> bool {
    memchr::memmem::find(&bytes[..bytes.len().min(1024)], b"%PDF-").is_some()
}

/// What a PDF holds, each part labelled: `page N`, `info Title`,
/// `field NAME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PdfText {
    pub pages: usize,
    pub parts: Vec<(String, String)>,
}

impl PdfText {
    /// One comparable text: the page count, then each part's lines led by
    /// its label (so a changed line in a diff names its page or field).
    pub fn comparable(&self) -> String {
        let mut s = format!("pages: {}\n", self.pages);
        for (label, text) in &self.parts {
            for line in text.lines().map(str::trim_end).filter(|l| !l.is_empty()) {
                s.push_str(&format!("{label}: {line}\n"));
            }
        }
        s
    }
}

fn load(bytes: &[u8]) -> Result<Document, String> {
    let options = LoadOptions {
        max_decompressed_size: Some(INFLATE_CAP),
        ..LoadOptions::default()
    };
    let doc = Document::load_mem_with_options(bytes, options).map_err(|e| e.to_string())?;
    if doc.is_encrypted() {
        return Err("encrypted".into());
    }
    Ok(doc)
}

/// The pages' text, the metadata (dates left out) and the form fields'
/// values; an error names why the PDF was not read (malformed, or over a
/// budget).
pub fn read(bytes: &[u8]) -> Result<PdfText, Unread> {
    let doc = load(bytes).map_err(Unread::Malformed)?;
    let pages = doc.get_pages();
    if pages.len() > MAX_PAGES {
        return Err(Unread::OverBudget(format!(
            "{} pages, more than {MAX_PAGES}",
            pages.len()
        )));
    }
    content_budget(&doc, &pages)?;
    let mut parts = Vec::new();
    for n in pages.keys() {
        let text = doc
            .extract_text_with_limit(&[*n], INFLATE_CAP)
            .map_err(|e| Unread::Malformed(format!("page {n}: {e}")))?;
        parts.push((format!("page {n}"), text));
    }
    if let Some(info) = doc
        .trailer
        .get(b"Info")
        .ok()
        .and_then(|o| deref(&doc, o).as_dict().ok())
    {
        for (key, value) in info {
            if VOLATILE_INFO.contains(&key.as_slice()) {
                continue;
            }
            if let Some(text) = text_of(deref(&doc, value)) {
                parts.push((format!("info {}", String::from_utf8_lossy(key)), text));
            }
        }
    }
    fields(&doc, &mut parts)?;
    Ok(PdfText {
        pages: pages.len(),
        parts,
    })
}

/// Checks that the pages' content streams decompress to at most
/// [`INFLATE_BUDGET`] bytes in all, a stream counted per page using it;
/// each stream is decompressed once (at most [`INFLATE_CAP`]) to learn its
/// size, and dropped.
fn content_budget(
    doc: &Document,
    pages: &std::collections::BTreeMap<u32, ObjectId>,
) -> Result<(), Unread> {
    let mut sizes: HashMap<ObjectId, u64> = HashMap::new();
    let mut total: u64 = 0;
    for (n, page) in pages {
        for id in doc.get_page_contents(*page) {
            let size = *sizes.entry(id).or_insert_with(|| {
                match doc.get_object(id).and_then(Object::as_stream) {
                    Ok(s) => s
                        .decompressed_content_with_limit(INFLATE_CAP)
                        .map_or(s.content.len(), |d| d.len()) as u64,
                    Err(_) => 0,
                }
            });
            total += size;
            if total > INFLATE_BUDGET {
                return Err(Unread::OverBudget(format!(
                    "page contents decompress past {INFLATE_BUDGET} bytes by page {n}"
                )));
            }
        }
    }
    Ok(())
}

/// Every string the privacy scan should read beyond [`read`]'s parts:
/// strings anywhere in the document's objects (annotations, bookmarks,
/// metadata) and XMP metadata streams.
pub fn other_strings(bytes: &[u8]) -> Result<Vec<String>, String> {
    let doc = load(bytes)?;
    let mut out = Vec::new();
    for object in doc.objects.values() {
        strings_in(object, &mut out);
        if let Object::Stream(s) = object
            && is_xmp(s)
            && let Ok(data) = s.decompressed_content_with_limit(INFLATE_CAP)
        {
            out.push(String::from_utf8_lossy(&data).into_owned());
        }
    }
    Ok(out)
}

/// Everything the privacy scan reads in a PDF, labelled (`page 2`,
/// `info Author`, `field name`, `strings`); `None` when `bytes` are no PDF
/// reel can read. The scanner and the scrubber's check share it.
pub fn scan_parts(bytes: &[u8]) -> Option<Vec<(String, String)>> {
    if !is_pdf(bytes) {
        return None;
    }
    let mut parts = read(bytes).ok()?.parts;
    parts.push(("strings".into(), other_strings(bytes).ok()?.join("\n")));
    Some(parts)
}

/// `bytes` with every string passed through `edit(label, text)`: string
/// objects, the strings page content shows, XMP metadata. `None` when it is
/// not a readable PDF or `edit` changed nothing (the scrubber's rewrite).
/// The caller checks what is left: text a font spells in its own codes
/// cannot be edited here.
pub fn rewrite_text(bytes: &[u8], mut edit: impl FnMut(&str, &str) -> String) -> Option<Vec<u8>> {
    let mut doc = load(bytes).ok()?;
    let mut changed = false;
    for object in doc.objects.values_mut() {
        changed |= edit_strings(object, &mut |t| edit("strings", t));
        if let Object::Stream(s) = object
            && is_xmp(s)
            && let Ok(data) = s.decompressed_content_with_limit(INFLATE_CAP)
        {
            let text = String::from_utf8_lossy(&data).into_owned();
            let edited = edit("metadata", &text);
            if edited != text {
                s.set_plain_content(edited.into_bytes());
                changed = true;
            }
        }
    }
    for (n, id) in doc.get_pages() {
        let Ok(data) = doc.get_page_content_with_limit(id, INFLATE_CAP) else {
            continue;
        };
        let Ok(mut content) = Content::decode(&data) else {
            continue;
        };
        let label = format!("page {n}");
        let mut page_changed = false;
        for op in &mut content.operations {
            page_changed |= edit_shown(op, &mut |t| edit(&label, t));
        }
        if page_changed {
            let encoded = content.encode().ok()?;
            doc.change_page_content(id, encoded).ok()?;
            changed = true;
        }
    }
    if !changed {
        return None;
    }
    let mut out = Vec::new();
    doc.save_to(&mut out).ok()?;
    Some(out)
}

/// A PDF of one page per item of `pages`, in Helvetica (what the scrubber
/// leaves in place of a PDF it could not clean; also what tests build).
pub fn text_pdf(pages: &[&str]) -> Vec<u8> {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font = doc.add_object(dictionary! {
        "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
        "Encoding" => "WinAnsiEncoding",
    });
    let resources = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font } });
    let mut kids = Vec::new();
    for text in pages {
        let mut ops = vec![
            Operation::new("BT", vec![]),
            Operation::new("Tf", vec!["F1".into(), 11.into()]),
            Operation::new("TL", vec![14.into()]),
            Operation::new("Td", vec![50.into(), 780.into()]),
        ];
        for line in text.lines() {
            // WinAnsi spells Latin-1 with its own byte; anything else is `?`.
            let codes: Vec<u8> = line
                .chars()
                .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?'))
                .collect();
            ops.push(Operation::new("Tj", vec![Object::string_literal(codes)]));
            ops.push(Operation::new("T*", vec![]));
        }
        ops.push(Operation::new("ET", vec![]));
        let data = Content { operations: ops }.encode().unwrap_or_default();
        let contents = doc.add_object(Stream::new(dictionary! {}, data));
        kids.push(Object::Reference(doc.add_object(dictionary! {
            "Type" => "Page", "Parent" => pages_id, "Contents" => contents,
            "Resources" => resources, "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
        })));
    }
    let count = kids.len() as i64;
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => kids, "Count" => count }),
    );
    let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog);
    let mut out = Vec::new();
    // Writing to a Vec fails only on a malformed document, which this is not.
    let _ = doc.save_to(&mut out);
    out
}

fn deref<'a>(doc: &'a Document, o: &'a Object) -> &'a Object {
    match o {
        Object::Reference(id) => doc.get_object(*id).unwrap_or(o),
        _ => o,
    }
}

/// A text string's text (PDFDocEncoding, UTF-16BE or UTF-8 by its BOM).
fn text_of(o: &Object) -> Option<String> {
    match o {
        Object::String(..) => lopdf::decode_text_string(o).ok(),
        Object::Name(n) => Some(String::from_utf8_lossy(n).into_owned()),
        _ => None,
    }
}

/// AcroForm fields (`/T` name, `/V` value), nested `/Kids` named
/// `parent.child`, as a form filler writes them; each field object visited
/// once, at most [`MAX_FIELDS`] of them.
fn fields(doc: &Document, parts: &mut Vec<(String, String)>) -> Result<(), Unread> {
    let form = doc
        .catalog()
        .ok()
        .and_then(|c| c.get(b"AcroForm").ok())
        .and_then(|f| deref(doc, f).as_dict().ok());
    let mut walk = FieldWalk {
        doc,
        seen: HashSet::new(),
        visited: 0,
        parts,
    };
    if let Some(Ok(Object::Array(list))) = form.map(|f| f.get(b"Fields").map(|l| deref(doc, l))) {
        for field in list {
            walk.field(field, "", 0)?;
        }
    }
    Ok(())
}

struct FieldWalk<'a, 'p> {
    doc: &'a Document,
    /// Field objects already walked (by reference): a cycle ends here.
    seen: HashSet<ObjectId>,
    visited: usize,
    parts: &'p mut Vec<(String, String)>,
}

impl FieldWalk<'_, '_> {
    fn field(&mut self, o: &Object, prefix: &str, depth: u8) -> Result<(), Unread> {
        if let Object::Reference(id) = o
            && !self.seen.insert(*id)
        {
            return Ok(());
        }
        self.visited += 1;
        if self.visited > MAX_FIELDS {
            return Err(Unread::OverBudget(format!(
                "more than {MAX_FIELDS} form fields"
            )));
        }
        let doc = self.doc;
        let Ok(field) = deref(doc, o).as_dict() else {
            return Ok(());
        };
        let own = field.get(b"T").ok().and_then(text_of);
        let name = match (prefix, own) {
            (p, Some(t)) if !p.is_empty() => format!("{p}.{t}"),
            (_, Some(t)) => t,
            (p, None) => p.to_owned(),
        };
        if let Some(v) = field
            .get(b"V")
            .ok()
            .map(|v| deref(doc, v))
            .and_then(text_of)
        {
            self.parts.push((format!("field {name}"), v));
        }
        if depth < 32
            && let Ok(Object::Array(kids)) = field.get(b"Kids").map(|k| deref(doc, k))
        {
            for kid in kids {
                self.field(kid, &name, depth + 1)?;
            }
        }
        Ok(())
    }
}

fn is_xmp(s: &Stream) -> bool {
    s.dict.get(b"Type").and_then(Object::as_name).ok() == Some(b"Metadata".as_slice())
}

fn strings_in(o: &Object, out: &mut Vec<String>) {
    match o {
        Object::String(..) => out.extend(text_of(o)),
        Object::Array(items) => items.iter().for_each(|i| strings_in(i, out)),
        Object::Dictionary(d) => dict_strings(d, out),
        Object::Stream(s) => dict_strings(&s.dict, out),
        _ => {}
    }
}

fn dict_strings(d: &Dictionary, out: &mut Vec<String>) {
    for (_, v) in d {
        strings_in(v, out);
    }
}

/// Every text string in `o` through `edit`; whether one changed.
fn edit_strings(o: &mut Object, edit: &mut dyn FnMut(&str) -> String) -> bool {
    match o {
        Object::String(..) => {
            let Some(text) = text_of(o) else {
                return false;
            };
            let edited = edit(&text);
            let changed = edited != text;
            if changed {
                *o = lopdf::text_string(&edited);
            }
            changed
        }
        Object::Array(items) => items
            .iter_mut()
            .fold(false, |c, i| edit_strings(i, edit) | c),
        Object::Dictionary(d) => d
            .iter_mut()
            .fold(false, |c, (_, v)| edit_strings(v, edit) | c),
        Object::Stream(s) => s
            .dict
            .iter_mut()
            .fold(false, |c, (_, v)| edit_strings(v, edit) | c),
        _ => false,
    }
}

/// The strings a text-showing operator shows (`Tj`, `TJ`, `'`, `"`), read
/// as single-byte codes (what a simple font's WinAnsi or Standard encoding
/// spells ASCII with), through `edit`.
fn edit_shown(op: &mut Operation, edit: &mut dyn FnMut(&str) -> String) -> bool {
    if !matches!(op.operator.as_str(), "Tj" | "TJ" | "'" | "\"") {
        return false;
    }
    let mut changed = false;
    let mut one = |o: &mut Object| {
        if let Object::String(bytes, _) = o {
            let text: String = bytes.iter().map(|&b| char::from(b)).collect();
            let edited = edit(&text);
            if edited != text {
                *bytes = edited
                    .chars()
                    .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?'))
                    .collect();
                changed = true;
            }
        }
    };
    for operand in &mut op.operands {
        match operand {
            Object::Array(items) => items.iter_mut().for_each(&mut one),
            o => one(o),
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_info_and_fields_are_read_dates_are_not() {
        let bytes = text_pdf(&["Invoice 7\nTotal: 245", "Thanks"]);
        let mut doc = Document::load_mem(&bytes).unwrap();
        let info = doc.add_object(dictionary! {
            "Title" => Object::string_literal("Q3 report"),
            "CreationDate" => Object::string_literal("D:20250101000000Z"),
        });
        doc.trailer.set("Info", info);
        let field = doc.add_object(dictionary! {
            "T" => Object::string_literal("name"), "V" => lopdf::text_string("Zoë"),
        });
        let form = doc.add_object(dictionary! { "Fields" => vec![field.into()] });
        doc.catalog_mut().unwrap().set("AcroForm", form);
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        assert!(is_pdf(&out));
        let text = read(&out).unwrap();
        assert_eq!(
            text.comparable(),
            "pages: 2\npage 1: Invoice 7\npage 1: Total: 245\npage 2: Thanks\n\
             info Title: Q3 report\nfield name: Zoë\n"
        );
    }

    #[test]
    fn rewrite_edits_shown_text_and_strings() {
        let bytes = text_pdf(&["key AKIAEXAMPLE here"]);
        let out = rewrite_text(&bytes, |_, t| t.replace("AKIAEXAMPLE", "[REDACTED]")).unwrap();
        assert_eq!(read(&out).unwrap().parts[0].1.trim(), "key [REDACTED] here");
        assert_eq!(rewrite_text(&bytes, |_, t| t.to_owned()), None);
        assert!(read(b"%PDF-1.4 not really").is_err());
    }

    /// A form field listing itself as its own kid, twice: walked once (a
    /// cycle), not 2^32 times.
    #[test]
    fn a_self_referential_form_field_is_a_cycle_not_a_bomb() {
        let mut doc = Document::load_mem(&text_pdf(&["x"])).unwrap();
        let id = doc.new_object_id();
        let field = dictionary! {
            "T" => Object::string_literal("f"), "V" => Object::string_literal("v"),
            "Kids" => vec![Object::Reference(id), Object::Reference(id)],
        };
        doc.objects.insert(id, Object::Dictionary(field));
        let form = doc.add_object(dictionary! { "Fields" => vec![id.into()] });
        doc.catalog_mut().unwrap().set("AcroForm", form);
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        assert!(out.len() < 2048, "{} bytes", out.len());
        let text = read(&out).unwrap();
        assert_eq!(
            text.parts.last().unwrap(),
            &("field f".to_owned(), "v".to_owned())
        );
    }

    /// 230 pages sharing one stream: counted per use, over the budget after
    /// a few dozen pages, and read no further.
    #[test]
    fn pages_sharing_one_stream_count_per_use_and_stop_at_the_budget() {
        let mut doc = Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let content = b"BT /F1 9 Tf (x) Tj ET\n".repeat(16_000);
        let stream = doc.add_object(Stream::new(dictionary! {}, content));
        let kids: Vec<Object> = (0..230)
            .map(|_| {
                doc.add_object(dictionary! {
                    "Type" => "Page", "Parent" => pages_id, "Contents" => stream,
                })
                .into()
            })
            .collect();
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => kids, "Count" => 230 }),
        );
        let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
        doc.trailer.set("Root", catalog);
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        match read(&out) {
            Err(Unread::OverBudget(why)) => assert!(why.contains("by page"), "{why}"),
            other => panic!("not refused: {:?}", other.map(|t| t.pages)),
        }
    }
}
