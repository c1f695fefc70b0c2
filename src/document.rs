//! The text inside documents: zip-based files (`.docx`, `.xlsx`, `.pptx`,
//! a packaged skill) read entry by entry, XML entries in a canonical form;
//! PDFs by page, metadata and form field ([`pdf`]).
//! Shared by `rerun` (outputs compared by what they hold) and `verify`
//! (the privacy scan reads inside them instead of calling them binary).

pub mod pdf;

use std::collections::BTreeMap;
use std::io::Read;

use sha2::{Digest, Sha256};

/// Largest zip entry read whole (bigger ones are named by size only).
const ENTRY_CAP: u64 = 8 << 20;

/// Whether `bytes` start like a zip archive.
pub fn is_zip(bytes: &[u8]) -> bool {
    bytes.starts_with(b"PK\x03\x04")
}

/// Each entry's comparable form: canonical XML, text, or size and sha256.
pub fn zip_entries(bytes: &[u8]) -> Option<BTreeMap<String, String>> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).ok()?;
    let mut out = BTreeMap::new();
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).ok()?;
        if entry.is_dir() {
            continue;
        }
        let name = entry.name().to_owned();
        let form = if entry.size() > ENTRY_CAP {
            format!("({} bytes, not read: over {ENTRY_CAP} bytes)", entry.size())
        } else {
            let mut data = Vec::new();
            entry.read_to_end(&mut data).ok()?;
            entry_form(&name, &data)
        };
        out.insert(name, form);
    }
    Some(out)
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
    let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let mut changed = false;
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).ok()?;
        let name = entry.name().to_owned();
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(entry.compression())
            .last_modified_time(entry.last_modified().unwrap_or_default());
        if entry.is_dir() {
            out.add_directory(name, opts).ok()?;
            continue;
        }
        let mut data = Vec::new();
        entry.read_to_end(&mut data).ok()?;
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
}
