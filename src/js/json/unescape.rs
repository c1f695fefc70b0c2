//! JSON string unescaping, fast and strict: the one unescaper for text
//! reel reads in bulk (a lean cassette's `events` items, the strings of a
//! recorded line's views). Strict means it takes only what `JSON.parse`
//! takes without a question: anything else (a surrogate escape included)
//! is refused, and the caller's slower reference path decides.

/// Bytes [`unescape_into`] looks at in one step.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
const BLOCK: usize = 16;
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
const BLOCK: usize = 8;

/// How many bytes `block` starts with that a JSON string holds as they are:
/// ASCII other than `"`, `\` and control characters.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
fn plain_prefix(block: &[u8; BLOCK]) -> usize {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_cmplt_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    // SAFETY: SSE2 is part of every x86_64 target (the cfg checks that it
    // is enabled), and the load reads exactly `block`.
    let special = unsafe {
        let x = _mm_loadu_si128(block.as_ptr().cast());
        let quote = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\\' as i8));
        // A signed compare: bytes from 0x80 up are negative, so this flags
        // them (non-ASCII, checked a character at a time) with the controls.
        let control_or_high = _mm_cmplt_epi8(x, _mm_set1_epi8(0x20));
        _mm_movemask_epi8(_mm_or_si128(
            _mm_or_si128(quote, backslash),
            control_or_high,
        ))
    };
    (special as u32).trailing_zeros().min(16) as usize
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
fn plain_prefix(block: &[u8; BLOCK]) -> usize {
    plain_prefix_swar(block)
}

/// [`plain_prefix`] of 8 bytes in a `u64` (where SSE2 is not there).
#[cfg(any(test, not(all(target_arch = "x86_64", target_feature = "sse2"))))]
fn plain_prefix_swar(block: &[u8; 8]) -> usize {
    const LANES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = LANES << 7;
    // Each term flags the lanes holding its byte, and maybe lanes above
    // such a lane (a borrow), never a lowest one: the lowest flag is true.
    let equal = |x: u64, b: u8| {
        let y = x ^ (LANES * u64::from(b));
        y.wrapping_sub(LANES) & !y & HIGH
    };
    let x = u64::from_le_bytes(*block);
    let flags =
        equal(x, b'"') | equal(x, b'\\') | (x.wrapping_sub(LANES * 0x20) & !x & HIGH) | (x & HIGH);
    (flags.trailing_zeros() / 8) as usize
}

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
                let plain = plain_prefix(block);
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
    /// Both block steps agree with the byte-by-byte rule on every byte at
    /// every lane, over every background.
    #[test]
    fn the_block_steps_find_the_first_byte_that_is_not_plain() {
        let plain = |b: u8| (0x20..0x80).contains(&b) && b != b'"' && b != b'\\';
        for background in [b'a', b' ', b'~', b'!', b'#', b'[', b']'] {
            for lane in 0..super::BLOCK {
                for b in 0..=255u8 {
                    let mut block = [background; super::BLOCK];
                    block[lane] = b;
                    // A later special byte must not hide this one.
                    if lane + 1 < super::BLOCK {
                        block[super::BLOCK - 1] = b'"';
                    }
                    let want = block
                        .iter()
                        .position(|&x| !plain(x))
                        .unwrap_or(super::BLOCK);
                    assert_eq!(super::plain_prefix(&block), want, "{block:?}");
                    let mut low = [0u8; 8];
                    low.copy_from_slice(&block[..8]);
                    let want = low.iter().position(|&x| !plain(x)).unwrap_or(8);
                    assert_eq!(super::plain_prefix_swar(&low), want, "{low:?}");
                }
            }
        }
    }

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
