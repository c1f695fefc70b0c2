//! JSON string unescaping, fast and strict: the one unescaper for text
//! reel reads in bulk (a lean cassette's `events` items, the strings of a
//! recorded line's views). Strict means it takes only what `JSON.parse`
//! takes without a question: anything else (a surrogate escape included)
//! is refused, and the caller's slower reference path decides.

use super::block::{BLOCK, plain_prefix};

/// Appends the text of a JSON string's inside (`inner`, the bytes between
/// its quotes) to `out`. `false`, with `out` as it was, when `inner` is not
/// one the lean path takes: not UTF-8, an unescaped `"`, a raw control
/// character, a malformed escape, or a surrogate escape (`\uD800`–`\uDFFF`,
/// paired or lone: the full loader decides those).
///
/// Written here rather than taken from serde_json because it is also the
/// check of each cassette `events` item (the lean scan finds them by line,
/// not by parsing), and because serde_json's string reader grows a fresh
/// buffer for every string it unescapes (a line's reader paid ~7 reallocs
/// per line). A recorded line is JSON inside JSON, with an escaped quote
/// every few bytes, where a `memchr` per escape was slower than stepping a
/// block at a time (`plain_prefix`).
pub fn unescape_into(inner: &[u8], out: &mut String) -> bool {
    let n = inner.len();
    out.reserve(n);
    let start = out.len();
    // SAFETY: (memory) the text never outgrows its escaped form (an escape
    // of 2 or 6 bytes stands for at most 3), so every write at `o ≤ i`
    // stays inside the `n` bytes reserved; `set_len` covers only bytes
    // written. (UTF-8) bytes are written only as checked: ASCII runs,
    // whole characters checked with `from_utf8`, escapes' characters (a
    // block may end inside a character, whose bytes the next step checks
    // and writes again), so `out` is UTF-8 when this returns; on failure it
    // is cut back to `start`.
    unsafe {
        let v = out.as_mut_vec();
        let dst = v.as_mut_ptr().add(start);
        let (mut i, mut o) = (0, 0);
        let complete = loop {
            // A block at a time: copied whole, kept up to its first byte
            // that is not plain.
            if let Some(block) = inner.get(i..i + BLOCK)
                && let Ok(block) = <&[u8; BLOCK]>::try_from(block)
            {
                dst.add(o).cast::<[u8; BLOCK]>().write_unaligned(*block);
                let plain = plain_prefix::<false>(block);
                i += plain;
                o += plain;
                if plain == BLOCK {
                    continue;
                }
            }
            let Some(&b) = inner.get(i) else {
                break true;
            };
            let (write, used): (&[u8], usize) = match b {
                b'"' | 0x00..=0x1f => break false,
                b'\\' => {
                    let c = match inner.get(i + 1) {
                        Some(b'"') => b'"',
                        Some(b'\\') => b'\\',
                        Some(b'/') => b'/',
                        Some(b'b') => 0x08,
                        Some(b'f') => 0x0c,
                        Some(b'n') => b'\n',
                        Some(b'r') => b'\r',
                        Some(b't') => b'\t',
                        Some(b'u') => {
                            // Exactly four hex digits (`from_str_radix` would
                            // take a sign), never a surrogate half.
                            let code = inner.get(i + 2..i + 6).and_then(|hex| {
                                hex.iter().try_fold(0u32, |acc, &h| {
                                    Some(acc * 16 + char::from(h).to_digit(16)?)
                                })
                            });
                            let Some(c) = code.and_then(char::from_u32) else {
                                break false;
                            };
                            let mut utf8 = [0; 4];
                            let encoded = c.encode_utf8(&mut utf8).as_bytes();
                            std::ptr::copy_nonoverlapping(
                                encoded.as_ptr(),
                                dst.add(o),
                                encoded.len(),
                            );
                            i += 6;
                            o += encoded.len();
                            continue;
                        }
                        _ => break false,
                    };
                    dst.add(o).write(c);
                    i += 2;
                    o += 1;
                    continue;
                }
                0x20..=0x7f => (std::slice::from_ref(&inner[i]), 1),
                _ => {
                    // One character, checked (its width from its first byte).
                    let width = match b {
                        0xc2..=0xdf => 2,
                        0xe0..=0xef => 3,
                        0xf0..=0xf4 => 4,
                        _ => break false,
                    };
                    match inner.get(i..i + width) {
                        Some(c) if std::str::from_utf8(c).is_ok() => (c, width),
                        _ => break false,
                    }
                }
            };
            std::ptr::copy_nonoverlapping(write.as_ptr(), dst.add(o), write.len());
            i += used;
            o += used;
        };
        v.set_len(if complete { start + o } else { start });
        complete
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn it_agrees_with_serde_json_and_refuses_what_it_must() {
        let pieces = [
            r#"\""#,
            r#"\\"#,
            r#"\n"#,
            r#"\u00e9"#,
            r#"\u20ac"#,
            "é",
            "€",
            "😀",
            "abcdefgh",
            r#"\/"#,
            r#"\b\f\r\t"#,
            r#"\u0000"#,
        ];
        for lead in 0..17 {
            for a in pieces {
                for b in pieces {
                    let inner = format!("{}{a}{b}{a}tail", "x".repeat(lead));
                    let want: String = serde_json::from_str(&format!("\"{inner}\"")).unwrap();
                    let mut got = String::from("kept");
                    assert!(super::unescape_into(inner.as_bytes(), &mut got), "{inner}");
                    assert_eq!(got, format!("kept{want}"), "{inner}");
                }
            }
        }
        for bad in [
            &b"a\"b"[..],
            b"a\x01b",
            b"\\",
            b"\\x",
            b"\\u12",
            b"\\u+123",
            b"\\ud800",
            b"\\uDC00",
            b"\xff",
            b"\xc3",
            b"a\xe2\x82",
            b"\xed\xa0\x80",
            b"\xc0\xaf",
            b"\xf5\x80\x80\x80",
            b"0123456789abcdef\"",
        ] {
            let mut got = String::from("kept");
            assert!(!super::unescape_into(bad, &mut got), "{bad:?}");
            assert_eq!(got, "kept", "{bad:?}: left as it was");
        }
    }
}
