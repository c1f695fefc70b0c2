//! The text inside documents: zip-based files (`.docx`, `.xlsx`, `.pptx`,
//! a packaged skill) read entry by entry, XML entries in a canonical form;
//! PDFs by page, metadata and form field ([`pdf`]).
//! Shared by `rerun` (outputs compared by what they hold) and `verify`
//! (the privacy scan reads inside them instead of calling them binary).
//!
//! A document is hostile input read outside the sandbox, so every read is
//! under a budget ([`ZIP_ENTRIES`], [`INFLATE_BUDGET`] bytes inflated in all,
//! entries whose data overlap refused; a PDF's: `pdf`'s module docs). Past
//! it the document is [`Unread::OverBudget`] — "not compared: over budget"
//! — never a larger allocation: what one document can make reel hold is
//! about its own bytes plus [`INFLATE_BUDGET`] (64 MiB).
//!
//! Zip documents: entries read, XML canonicalised, text entries rewritten (the
//! scrubber's use). PDFs (`document::pdf`, on `lopdf`): page count, page text,
//! metadata without dates, form fields and every other string; strings can be
//! rewritten, and a one-page text PDF can be written. This module decides
//! nothing; `rerun::outputs` and `verify` do.

pub mod pdf;

use std::collections::BTreeMap;
use std::io::Read;

use sha2::{Digest, Sha256};

/// Largest zip entry read whole (bigger ones are named by size only).
const ENTRY_CAP: u64 = 8 << 20;

/// Most entries a zip may have to be read.
pub const ZIP_ENTRIES: usize = 10_000;

/// Most bytes one document may inflate to, in all (zip entries; a PDF's
/// page contents, counted per use).
pub const INFLATE_BUDGET: u64 = 64 << 20;

/// Why a document's text was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unread {
    /// Not a readable document of its kind (compared as bytes instead).
    Malformed(String),
    /// Past a budget: named, never read further.
    OverBudget(String),
}

impl std::fmt::Display for Unread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unread::Malformed(why) => write!(f, "not readable: {why}"),
            Unread::OverBudget(why) => write!(f, "not compared: over budget ({why})"),
        }
    }
}

/// All entries as one text, each line led by its entry's name: what a
/// zip's divergence diffs (so each changed line names its entry) and what
/// the HTML report previews.
pub fn zip_text(entries: &BTreeMap<String, String>) -> String {
    let mut s = String::new();
    for (name, form) in entries {
        for line in form.lines() {
            s.push_str(&format!("{name}: {line}\n"));
        }
    }
    s
}

/// The text of a zip or PDF document ([`zip_text`], `PdfText::comparable`);
/// `Ok(None)` when `bytes` are neither (or not readable as such).
pub fn text(bytes: &[u8]) -> Result<Option<String>, Unread> {
    if is_zip(bytes) {
        match zip_entries_bounded(bytes) {
            Ok(entries) => return Ok(Some(zip_text(&entries))),
            Err(over @ Unread::OverBudget(_)) => return Err(over),
            Err(Unread::Malformed(_)) => {}
        }
    }
    if pdf::is_pdf(bytes) {
        match pdf::read(bytes) {
            Ok(text) => return Ok(Some(text.comparable())),
            Err(over @ Unread::OverBudget(_)) => return Err(over),
            Err(Unread::Malformed(_)) => {}
        }
    }
    Ok(None)
}

/// Whether `bytes` start like a zip archive.
pub fn is_zip(bytes: &[u8]) -> bool {
    bytes.starts_with(b"PK\x03\x04")
}

/// Each entry's comparable form: canonical XML, text, or size and sha256
/// (`None`: not a readable zip, or over budget).
pub fn zip_entries(bytes: &[u8]) -> Option<BTreeMap<String, String>> {
    zip_entries_bounded(bytes).ok()
}

/// [`zip_entries`], saying why not: at most [`ZIP_ENTRIES`] entries, no two
/// whose data overlap (one stream inflated under many names), and at most
/// [`INFLATE_BUDGET`] bytes inflated in all, counted as read (an entry's
/// declared size may lie).
pub fn zip_entries_bounded(bytes: &[u8]) -> Result<BTreeMap<String, String>, Unread> {
    let malformed = |e: zip::result::ZipError| Unread::Malformed(e.to_string());
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(malformed)?;
    if archive.len() > ZIP_ENTRIES {
        return Err(Unread::OverBudget(format!(
            "{} entries, more than {ZIP_ENTRIES}",
            archive.len()
        )));
    }
    overlapping_entries(&mut archive)?;
    let mut out = BTreeMap::new();
    let mut inflated: u64 = 0;
    for i in 0..archive.len() {
        let entry = archive.by_index(i).map_err(malformed)?;
        if entry.is_dir() {
            continue;
        }
        let name = entry.name().to_owned();
        let form = if entry.size() > ENTRY_CAP {
            format!("({} bytes, not read: over {ENTRY_CAP} bytes)", entry.size())
        } else {
            let left = INFLATE_BUDGET - inflated;
            let mut data = Vec::new();
            entry
                .take(left.min(ENTRY_CAP) + 1)
                .read_to_end(&mut data)
                .map_err(|e| Unread::Malformed(format!("entry `{name}`: {e}")))?;
            inflated += data.len() as u64;
            if inflated > INFLATE_BUDGET || data.len() as u64 > ENTRY_CAP {
                return Err(Unread::OverBudget(format!(
                    "inflates past {INFLATE_BUDGET} bytes at entry `{name}`"
                )));
            }
            entry_form(&name, &data)
        };
        out.insert(name, form);
    }
    Ok(out)
}

/// Refuses a zip two of whose entries share bytes (a local header and its
/// data, by the central directory's offsets): no real archive does, and a
/// bomb inflates one stream under each name.
fn overlapping_entries<R: Read + std::io::Seek>(
    archive: &mut zip::ZipArchive<R>,
) -> Result<(), Unread> {
    let mut spans = Vec::with_capacity(archive.len());
    for i in 0..archive.len() {
        let e = archive
            .by_index_raw(i)
            .map_err(|e| Unread::Malformed(e.to_string()))?;
        let end = e.data_start().saturating_add(e.compressed_size());
        spans.push((e.header_start(), end));
    }
    spans.sort_unstable();
    if spans.windows(2).any(|w| w[1].0 < w[0].1) {
        return Err(Unread::OverBudget("entries overlap one another".into()));
    }
    Ok(())
}

fn entry_form(name: &str, data: &[u8]) -> String {
    match std::str::from_utf8(data) {
        Ok(text) if !text.contains('\0') => {
            let xmlish = name.ends_with(".xml")
                || name.ends_with(".rels")
                || text.trim_start().starts_with("<?xml");
            match xmlish.then(|| canonical_xml(text)).flatten() {
                Some(c) => c,
                None => text.to_owned(),
            }
        }
        _ => format!(
            "({} bytes, sha256 {})",
            data.len(),
            hex::encode(Sha256::digest(data))
        ),
    }
}

/// One event per line: tags with sorted attributes, text unescaped and
/// trimmed, whitespace-only text, comments and the declaration dropped.
/// `None` when the text is not well-formed XML.
pub fn canonical_xml(text: &str) -> Option<String> {
    use quick_xml::events::{BytesStart, Event};
    let tag = |e: &BytesStart<'_>, close: &str| -> Option<String> {
        let mut attrs: Vec<(String, String)> = e
            .attributes()
            .map(|a| {
                let a = a.ok()?;
                let v = a.unescape_value().ok()?.into_owned();
                Some((String::from_utf8_lossy(a.key.as_ref()).into_owned(), v))
            })
            .collect::<Option<_>>()?;
        attrs.sort();
        let mut s = format!("<{}", String::from_utf8_lossy(e.name().as_ref()));
        for (k, v) in attrs {
            // Raw, not escaped: what a person (and the privacy scan) reads.
            s.push_str(&format!(" {k}=\"{v}\""));
        }
        s.push_str(close);
        Some(s)
    };
    let mut reader = quick_xml::Reader::from_str(text);
    let mut lines = Vec::new();
    // Text arrives in pieces around entity references: joined, then trimmed.
    let mut pending = String::new();
    let flush = |pending: &mut String, lines: &mut Vec<String>| {
        if !pending.trim().is_empty() {
            lines.push(pending.trim().to_owned());
        }
        pending.clear();
    };
    loop {
        let event = reader.read_event().ok()?;
        if !matches!(event, Event::Text(_) | Event::GeneralRef(_)) {
            flush(&mut pending, &mut lines);
        }
        match event {
            Event::Start(e) => lines.push(tag(&e, ">")?),
            Event::Empty(e) => lines.push(tag(&e, "/>")?),
            Event::End(e) => {
                lines.push(format!("</{}>", String::from_utf8_lossy(e.name().as_ref())))
            }
            Event::Text(t) => pending.push_str(&t.decode().ok()?),
            Event::GeneralRef(r) => pending.push_str(&entity(&String::from_utf8_lossy(&r))),
            Event::CData(c) => lines.push(String::from_utf8_lossy(&c).into_owned()),
            Event::Eof => break,
            _ => {}
        }
    }
    Some(lines.join("\n"))
}

/// `bytes` (a zip) with each UTF-8 entry's text passed through `edit`;
/// `None` when it is not a readable zip or `edit` changed nothing. Entry
/// names, order and compression are kept (the scrubber's rewrite).
pub fn rewrite_zip_text(
    bytes: &[u8],
    mut edit: impl FnMut(&str, &str) -> String,
) -> Option<Vec<u8>> {
    use std::io::Write;
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).ok()?;
    // The reading budget of `zip_entries_bounded` (a bomb is not rewritten).
    if archive.len() > ZIP_ENTRIES || overlapping_entries(&mut archive).is_err() {
        return None;
    }
    let mut inflated: u64 = 0;
    let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let mut changed = false;
    for i in 0..archive.len() {
        let entry = archive.by_index(i).ok()?;
        let name = entry.name().to_owned();
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(entry.compression())
            .last_modified_time(entry.last_modified().unwrap_or_default());
        if entry.is_dir() {
            out.add_directory(name, opts).ok()?;
            continue;
        }
        let mut data = Vec::new();
        entry
            .take(INFLATE_BUDGET - inflated + 1)
            .read_to_end(&mut data)
            .ok()?;
        inflated += data.len() as u64;
        if inflated > INFLATE_BUDGET {
            return None;
        }
        if let Ok(text) = std::str::from_utf8(&data) {
            let edited = edit(&name, text);
            if edited != text {
                changed = true;
                data = edited.into_bytes();
            }
        }
        out.start_file(name, opts).ok()?;
        out.write_all(&data).ok()?;
    }
    let bytes = out.finish().ok()?.into_inner();
    changed.then_some(bytes)
}

/// The text an entity reference stands for (the five predefined ones and
/// character references; any other is kept as written).
fn entity(name: &str) -> String {
    let ch = match name {
        "lt" => Some('<'),
        "gt" => Some('>'),
        "amp" => Some('&'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        _ => name
            .strip_prefix("#x")
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .or_else(|| name.strip_prefix('#').and_then(|d| d.parse().ok()))
            .and_then(char::from_u32),
    };
    ch.map_or_else(|| format!("&{name};"), String::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_is_one_event_per_line_with_sorted_attributes() {
        let c = canonical_xml(
            "<?xml version=\"1.0\"?>\n<a z=\"1\" b=\"&amp;\">\n  <t>x &lt; y</t><e/></a>",
        )
        .unwrap();
        assert_eq!(c, "<a b=\"&\" z=\"1\">\n<t>\nx < y\n</t>\n<e/>\n</a>");
        assert_eq!(canonical_xml("<a><b></a>"), None);
    }

    /// A zip whose 150 central-directory entries all point at one deflated
    /// stream (a 1 MiB run of zeros): refused as overlapping before any
    /// entry is inflated; the archive it was made from reads.
    #[test]
    fn a_zip_with_overlapping_entries_is_over_budget() {
        use std::io::Write as _;
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        w.start_file("a", opts).unwrap();
        w.write_all(&vec![0u8; 1 << 20]).unwrap();
        let one = w.finish().unwrap().into_inner();
        assert_eq!(zip_entries_bounded(&one).unwrap().len(), 1);
        let cd = memchr::memmem::find(&one, b"PK\x01\x02").unwrap();
        let mut bomb = one[..cd].to_vec();
        let cd_start = bomb.len() as u32;
        for i in 0..150u16 {
            let mut entry = one[cd..cd + 46].to_vec();
            entry[28..30].copy_from_slice(&2u16.to_le_bytes()); // name length
            entry[30..34].fill(0); // extra and comment lengths
            bomb.extend_from_slice(&entry);
            bomb.extend_from_slice(format!("{:02x}", i % 256).as_bytes());
        }
        let cd_size = bomb.len() as u32 - cd_start;
        bomb.extend_from_slice(b"PK\x05\x06\0\0\0\0");
        bomb.extend_from_slice(&150u16.to_le_bytes());
        bomb.extend_from_slice(&150u16.to_le_bytes());
        bomb.extend_from_slice(&cd_size.to_le_bytes());
        bomb.extend_from_slice(&cd_start.to_le_bytes());
        bomb.extend_from_slice(&0u16.to_le_bytes());
        assert!(bomb.len() < 16 << 10, "{} bytes", bomb.len());
        match zip_entries_bounded(&bomb) {
            Err(Unread::OverBudget(why)) => assert!(why.contains("overlap"), "{why}"),
            other => panic!("not refused: {other:?}"),
        }
        assert!(rewrite_zip_text(&bomb, |_, t| t.to_owned()).is_none());
    }
}
