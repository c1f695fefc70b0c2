//! A JSON string's bytes a block at a time: how many bytes a block starts
//! with that pass through as they are. The one block step of the string
//! reader ([`super::unescape_into`]) and writer ([`super::quote`]), which
//! differ only in what a byte from 0x80 up is (checked UTF-8 when reading,
//! copied when writing valid text).

/// Bytes [`plain_prefix`] looks at in one step.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub(super) const BLOCK: usize = 16;
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
pub(super) const BLOCK: usize = 8;

/// How many bytes `block` starts with that a JSON string holds as they are:
/// anything but `"`, `\` and control characters, and with `HIGH_IS_PLAIN`
/// false not bytes from 0x80 up either.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub(super) fn plain_prefix<const HIGH_IS_PLAIN: bool>(block: &[u8; BLOCK]) -> usize {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_cmplt_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8,
        _mm_or_si128, _mm_set1_epi8,
    };
    // SAFETY: SSE2 is part of every x86_64 target (the cfg checks that it
    // is enabled), and the load reads exactly `block`.
    let special = unsafe {
        let x = _mm_loadu_si128(block.as_ptr().cast());
        let quote = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\\' as i8));
        let control = if HIGH_IS_PLAIN {
            // Unsigned `x <= 0x1f`: its minimum with 0x1f is itself.
            _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x1f)), x)
        } else {
            // A signed compare: bytes from 0x80 up are negative, so this
            // flags them with the controls.
            _mm_cmplt_epi8(x, _mm_set1_epi8(0x20))
        };
        _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control))
    };
    (special as u32).trailing_zeros().min(16) as usize
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
pub(super) fn plain_prefix<const HIGH_IS_PLAIN: bool>(block: &[u8; BLOCK]) -> usize {
    plain_prefix_swar::<HIGH_IS_PLAIN>(block)
}

/// Where the run of bytes a JSON string holds as they are (from 0x80 up
/// included) that starts at `at` ends, found a block at a time; short of
/// a whole block, it stops at `at`, and its caller steps byte by byte.
/// The string readers' ([`super::Cursor`], [`super::NestedCursor`]) step.
pub(super) fn past_plain(bytes: &[u8], mut at: usize) -> usize {
    while let Some(block) = bytes.get(at..at + BLOCK)
        && let Ok(block) = <&[u8; BLOCK]>::try_from(block)
    {
        let plain = plain_prefix::<true>(block);
        at += plain;
        if plain < BLOCK {
            break;
        }
    }
    at
}

/// [`plain_prefix`] of 8 bytes in a `u64` (where SSE2 is not there).
#[cfg(any(test, not(all(target_arch = "x86_64", target_feature = "sse2"))))]
fn plain_prefix_swar<const HIGH_IS_PLAIN: bool>(block: &[u8; 8]) -> usize {
    const LANES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = LANES << 7;
    // Each term flags the lanes holding its byte, and maybe lanes above
    // such a lane (a borrow), never a lowest one: the lowest flag is true.
    let equal = |x: u64, b: u8| {
        let y = x ^ (LANES * u64::from(b));
        y.wrapping_sub(LANES) & !y & HIGH
    };
    let x = u64::from_le_bytes(*block);
    let high = if HIGH_IS_PLAIN { 0 } else { x & HIGH };
    let flags =
        equal(x, b'"') | equal(x, b'\\') | (x.wrapping_sub(LANES * 0x20) & !x & HIGH) | high;
    (flags.trailing_zeros() / 8) as usize
}

#[cfg(test)]
mod tests {
    /// Both block steps, both ways, agree with the byte-by-byte rule on
    /// every byte at every lane, over every background.
    #[test]
    fn the_block_steps_find_the_first_byte_that_is_not_plain() {
        fn check<const HIGH_IS_PLAIN: bool>() {
            let plain = |b: u8| {
                (0x20..0x80).contains(&b) && b != b'"' && b != b'\\' || (HIGH_IS_PLAIN && b >= 0x80)
            };
            for background in [b'a', b' ', b'~', b'!', b'#', b'[', b']', 0x80, 0xff, 0xe9] {
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
                        assert_eq!(
                            super::plain_prefix::<HIGH_IS_PLAIN>(&block),
                            want,
                            "{block:?}"
                        );
                        let mut low = [0u8; 8];
                        low.copy_from_slice(&block[..8]);
                        let want = low.iter().position(|&x| !plain(x)).unwrap_or(8);
                        assert_eq!(
                            super::plain_prefix_swar::<HIGH_IS_PLAIN>(&low),
                            want,
                            "{low:?}"
                        );
                    }
                }
            }
        }
        check::<false>();
        check::<true>();
    }
}
