//! JavaScript `String.prototype.localeCompare` as Node runs it: the order
//! cowork-harness gives a session's `folders` before hashing them into
//! `sessionFingerprint` (spec/fingerprint.md §1.11; upstream sorts with
//! `a.from.localeCompare(b.from)`, i.e. ICU collation under Node's default
//! locale). [`locale_compare`] reproduces that comparison, on ICU4X's
//! compiled CLDR collation data.
//!
//! What Node does with no arguments (checked on Node 22.23 and 24.21, both
//! ICU 78.3):
//! `Intl.Collator().resolvedOptions()` is `{locale: "en-US", usage: "sort",
//! sensitivity: "variant", ignorePunctuation: false, collation: "default",
//! numeric: false, caseFirst: "false"}` — the CLDR root collation (`en` adds no
//! tailoring), tertiary strength, non-ignorable punctuation, no numeric
//! ordering, no case-first override. V8 turns ICU's normalization on, so
//! canonically equivalent strings (NFC vs NFD, reordered combining marks) and
//! strings that differ only in completely ignorable characters (soft hyphen,
//! zero-width space, controls) compare EQUAL; ICU4X always normalizes, which
//! matches. There is no code-point tie-break: equal means equal, and the
//! caller's stable sort keeps such folders in session order, as
//! `Array.prototype.sort` does.
//!
//! One difference between the two root collations is bridged here: ICU4C's
//! root sorts Han ideographs by radical and stroke, ICU4X's compiled root data
//! by code point ("implicit" weights). Han only differs at the primary level
//! and sorts as one block after every other script in both, so
//! [`locale_compare`] first compares primary weights of the strings with each
//! ideograph swapped for the one that holds its radical-stroke rank in
//! code-point order (`HanOrder`, table generated from Node; characters that
//! both ICUs weigh as variants of an ideograph — Kangxi radicals, circled
//! ideographs, compatibility ideographs — follow it), then — when those are
//! equal, which means the same ideographs in the same places — the untouched
//! strings at full strength.
//!
//! The committed corpus `tests/data/fingerprint/locale-compare.json` (sorted by
//! real Node) pins all of this. Not covered: code points that Node's Unicode
//! (17) leaves unassigned but ICU4X's newer data (Unicode 18) assigns — Node
//! sorts them by implicit weight, reel by their real one; the order of other
//! Node/ICU versions where CLDR changed in between.
//!
//! This module does not choose WHAT is sorted (that is `fingerprint`'s
//! `session_shape`) and never compares by UTF-16 code units (that is
//! [`crate::fingerprint::utf16_cmp`]).

use std::cmp::Ordering;
use std::sync::LazyLock;

use icu_collator::CollatorBorrowed;
use icu_collator::options::{CollatorOptions, Strength};
use icu_normalizer::DecomposingNormalizerBorrowed;

/// Every Unified_Ideograph in Node's (ICU root) collation order; see the
/// header of the file and tests/data/fingerprint/gen-locale-compare.mjs.
const HAN_RADICAL_STROKE: &str = include_str!("han_radical_stroke.txt");

/// No character below this is Han, a variant of it or has it in its
/// compatibility decomposition (the first is U+2E80 CJK RADICAL REPEAT):
/// strings below it skip the Han pass (and the table is never parsed).
const FIRST_HAN_BEARING: u32 = 0x2E80;

const fn root_options(strength: Strength) -> CollatorOptions {
    let mut options = CollatorOptions::default();
    options.strength = Some(strength);
    options
}

/// Root collation, default options (tertiary, non-ignorable): `localeCompare`
/// with no arguments (`en-US` resolves to the root; `en` adds no tailoring).
static NODE_DEFAULT: CollatorBorrowed<'static> =
    CollatorBorrowed::new_root(root_options(Strength::Tertiary));

/// The same at primary strength, for the Han-remapped first pass.
static PRIMARY: CollatorBorrowed<'static> =
    CollatorBorrowed::new_root(root_options(Strength::Primary));

static HAN: LazyLock<HanOrder> = LazyLock::new(|| HanOrder::parse(HAN_RADICAL_STROKE));

const NFKD: DecomposingNormalizerBorrowed<'static> = DecomposingNormalizerBorrowed::new_nfkd();

/// JavaScript `a.localeCompare(b)` under Node's default (`en-US`) collator.
/// `Equal` for canonically equivalent strings; sort with a STABLE sort so
/// equal items keep their input order, as upstream's `Array.prototype.sort`.
pub fn locale_compare(a: &str, b: &str) -> Ordering {
    let (va, vb) = (primary_view(a), primary_view(b));
    if va.is_none() && vb.is_none() {
        return NODE_DEFAULT.compare(a, b);
    }
    let pa = va.as_deref().unwrap_or(a);
    let pb = vb.as_deref().unwrap_or(b);
    PRIMARY
        .compare(pa, pb)
        .then_with(|| NODE_DEFAULT.compare(a, b))
}

/// `s` as [`HanOrder::primary_view`] rewrites it; `None` when there is
/// nothing to rewrite.
fn primary_view(s: &str) -> Option<String> {
    if s.chars().all(|c| (c as u32) < FIRST_HAN_BEARING) {
        return None;
    }
    HAN.primary_view(s)
}

/// Han ideographs in radical-stroke order, as a permutation of the same set
/// in the order ICU4X's root gives them (core block before the extensions, by
/// code point within each).
struct HanOrder {
    /// `(first code point, length, rank of the first)`, sorted by code point.
    by_code_point: Vec<(u32, u32, u32)>,
    /// `(first rank, first code point, length)`, sorted by rank: the set in
    /// ICU4X's implicit order.
    by_implicit_rank: Vec<(u32, u32, u32)>,
    /// `(variant, ideograph)`, sorted: characters both ICUs weigh as a
    /// tertiary variant of one ideograph though no decomposition says so
    /// (U+2E80 CJK RADICAL REPEAT = U+4E36).
    variants: Vec<(u32, u32)>,
}

impl HanOrder {
    fn parse(table: &str) -> HanOrder {
        // The table is a compiled-in constant checked by the tests below.
        let hex = |f: Option<&str>| {
            f.and_then(|f| u32::from_str_radix(f, 16).ok())
                .expect("han_radical_stroke.txt: hex code point")
        };
        let mut by_code_point = Vec::new();
        let mut variants = Vec::new();
        let mut rank = 0u32;
        for line in table.lines().filter(|l| !l.starts_with('#')) {
            if let Some(variant) = line.strip_prefix('=') {
                let mut fields = variant.split(' ');
                variants.push((hex(fields.next()), hex(fields.next())));
                continue;
            }
            let mut fields = line.split(' ');
            let start = hex(fields.next());
            let len = fields
                .next()
                .map_or(Some(1), |f| f.parse().ok())
                .expect("han_radical_stroke.txt: LENGTH");
            by_code_point.push((start, len, rank));
            rank += len;
        }
        by_code_point.sort_unstable();
        variants.sort_unstable();
        let mut implicit: Vec<(u32, u32)> = by_code_point.iter().map(|r| (r.0, r.1)).collect();
        implicit.sort_unstable_by_key(|&(start, _)| (!is_core_han(start), start));
        let mut next = 0u32;
        let by_implicit_rank = implicit
            .into_iter()
            .map(|(start, len)| {
                let first = next;
                next += len;
                (first, start, len)
            })
            .collect();
        HanOrder {
            by_code_point,
            by_implicit_rank,
            variants,
        }
    }

    /// Radical-stroke rank of an ideograph; `None` for anything else.
    fn rank(&self, c: char) -> Option<u32> {
        let cp = c as u32;
        let i = self
            .by_code_point
            .partition_point(|r| r.0 <= cp)
            .checked_sub(1)?;
        let (start, len, first) = self.by_code_point[i];
        (cp < start + len).then(|| first + (cp - start))
    }

    /// The ideograph whose implicit (code-point) weight has this rank.
    fn implicit_at(&self, rank: u32) -> char {
        let i = self.by_implicit_rank.partition_point(|r| r.0 <= rank) - 1;
        let (first, start, _) = self.by_implicit_rank[i];
        // Ranks and code points both come from the table's own runs.
        char::from_u32(start + (rank - first)).expect("table code points are scalar values")
    }

    /// The stand-in for an ideograph or a [`Self::variants`] entry.
    fn stand_in(&self, c: char) -> Option<char> {
        let ideograph = match self.variants.binary_search_by_key(&(c as u32), |v| v.0) {
            Ok(i) => char::from_u32(self.variants[i].1)?,
            Err(_) => c,
        };
        self.rank(ideograph).map(|r| self.implicit_at(r))
    }

    /// `s` with every ideograph (or variant of one) replaced by its stand-in
    /// and every character whose compatibility decomposition holds one
    /// (U+2F00 KANGXI RADICAL ONE, U+3280 CIRCLED IDEOGRAPH ONE, compatibility
    /// ideographs …) replaced by that decomposition, stand-ins applied: read
    /// with ICU4X's root, it has the primary weights `s` has in ICU4C's root.
    /// `None` when nothing changed.
    fn primary_view(&self, s: &str) -> Option<String> {
        let mut out = String::with_capacity(s.len());
        let mut changed = false;
        for c in s.chars() {
            if let Some(stand_in) = self.stand_in(c) {
                changed |= stand_in != c;
                out.push(stand_in);
                continue;
            }
            if (c as u32) >= FIRST_HAN_BEARING {
                let mut buf = [0u8; 4];
                let decomposed = NFKD.normalize(c.encode_utf8(&mut buf));
                if decomposed.chars().any(|d| self.rank(d).is_some()) {
                    out.extend(decomposed.chars().map(|d| self.stand_in(d).unwrap_or(d)));
                    changed = true;
                    continue;
                }
            }
            out.push(c);
        }
        changed.then_some(out)
    }
}

/// UCA's "core Han" implicit group: Unified_Ideograph in the CJK Unified
/// Ideographs or CJK Compatibility Ideographs blocks; sorts before the other
/// (extension) ideographs.
fn is_core_han(cp: u32) -> bool {
    (0x4E00..=0x9FFF).contains(&cp) || (0xF900..=0xFAFF).contains(&cp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Ordering::*;

    #[test]
    fn tertiary_root_order() {
        assert_eq!(locale_compare("a", "B"), Less);
        assert_eq!(locale_compare("a", "A"), Less, "lowercase first");
        assert_eq!(locale_compare("../data", "./x"), Less);
        assert_eq!(locale_compare("a_b", "a1"), Less, "punctuation < digits");
        assert_eq!(locale_compare("skills10", "skills2"), Less, "no numeric");
        assert_eq!(locale_compare("résumé", "resume"), Greater);
        assert_eq!(
            locale_compare("résumé", "resumf"),
            Less,
            "accent is secondary"
        );
        assert_eq!(locale_compare("x", "x"), Equal);
    }

    #[test]
    fn canonically_equivalent_and_ignorable_are_equal() {
        assert_eq!(locale_compare("e\u{301}", "\u{e9}"), Equal);
        assert_eq!(locale_compare("a\u{323}\u{302}", "a\u{302}\u{323}"), Equal);
        assert_eq!(locale_compare("\u{1100}\u{1161}", "\u{ac00}"), Equal);
        assert_eq!(locale_compare("a\u{ad}b", "ab"), Equal);
        assert_eq!(locale_compare("a\u{200b}b", "ab"), Equal);
        assert_eq!(locale_compare("\u{f900}", "\u{8c48}"), Equal);
    }

    #[test]
    fn han_sorts_by_radical_and_stroke() {
        // 一 (radical 1, 0 strokes) < 𠀀 (U+20000, radical 1, 1 stroke) <
        // 三 (radical 1, 2 strokes) < 㐀 (U+3400, radical 1, 4 strokes) <
        // 中 (radical 2): code-point order would put 𠀀 and 㐀 last.
        let mut v = ["中", "㐀", "三", "𠀀", "一"];
        v.sort_by(|a, b| locale_compare(a, b));
        assert_eq!(v, ["一", "𠀀", "三", "㐀", "中"]);
        // ⼀ (KANGXI RADICAL ONE) is a tertiary variant of 一.
        assert_eq!(locale_compare("\u{2f00}", "一"), Greater);
        assert_eq!(locale_compare("\u{2f00}", "丁"), Less);
        assert_eq!(locale_compare("a", "一"), Less, "Han after Latin");
    }

    /// The table is a permutation of distinct ideographs, and its stand-ins
    /// really ascend under ICU4X's root collation: stand-in order = rank.
    #[test]
    fn han_table_is_a_permutation_in_icu4x_order() {
        let han = &*HAN;
        let total: u32 = han.by_code_point.iter().map(|r| r.1).sum();
        assert!(total > 100_000, "table too small: {total}");
        for w in han.by_code_point.windows(2) {
            assert!(
                w[0].0 + w[0].1 <= w[1].0,
                "overlapping runs at {:x}",
                w[1].0
            );
        }
        // The fast path's premise: nothing below FIRST_HAN_BEARING is Han, a
        // variant or decomposes to Han.
        assert!(han.by_code_point.iter().all(|r| r.0 >= FIRST_HAN_BEARING));
        assert!(han.variants.iter().all(|v| v.0 >= FIRST_HAN_BEARING));
        for c in (0..FIRST_HAN_BEARING).filter_map(char::from_u32) {
            let mut buf = [0u8; 4];
            let decomposed = NFKD.normalize(c.encode_utf8(&mut buf));
            assert!(decomposed.chars().all(|d| han.rank(d).is_none()), "{c:?}");
        }
        for &(variant, ideograph) in &han.variants {
            let [v, i] = [variant, ideograph].map(|c| char::from_u32(c).unwrap().to_string());
            assert_eq!(
                PRIMARY.compare(&v, &i),
                Equal,
                "{variant:x} is not a variant of {ideograph:x}"
            );
            assert!(han.rank(char::from_u32(ideograph).unwrap()).is_some());
        }
        let mut prev = han.implicit_at(0).to_string();
        for rank in 1..total {
            let next = han.implicit_at(rank).to_string();
            assert_eq!(
                PRIMARY.compare(&prev, &next),
                Less,
                "rank {rank}: {prev} !< {next}"
            );
            prev = next;
        }
    }

    /// The committed corpus, sorted by real Node (see
    /// `tests/data/fingerprint/gen-locale-compare.mjs`): reel's stable sort
    /// with [`locale_compare`] must give the same order, from the input order
    /// and from its reverse (the latter catches wrong ties).
    #[test]
    fn matches_node_locale_compare_corpus() {
        let raw = include_str!("../../tests/data/fingerprint/locale-compare.json");
        let doc: serde_json::Value = serde_json::from_str(raw).unwrap();
        let strings = |key: &str| -> Vec<String> {
            doc[key]
                .as_array()
                .unwrap_or_else(|| panic!("locale-compare.json: `{key}` is not an array"))
                .iter()
                .map(|v| v.as_str().unwrap().to_owned())
                .collect()
        };
        let input = strings("input");
        assert!(input.len() > 700, "corpus too small: {}", input.len());
        let mut reversed = input.clone();
        reversed.reverse();
        for (from, expected_key) in [(input, "sorted"), (reversed, "sortedFromReversed")] {
            let expected = strings(expected_key);
            let mut got = from;
            got.sort_by(|a, b| locale_compare(a, b));
            let first_diff = got.iter().zip(&expected).position(|(g, e)| g != e);
            assert!(
                first_diff.is_none() && got.len() == expected.len(),
                "{expected_key}: first difference at index {first_diff:?}: got {:?}, Node {:?}",
                first_diff.map(|i| &got[i.saturating_sub(2)..(i + 3).min(got.len())]),
                first_diff.map(|i| &expected[i.saturating_sub(2)..(i + 3).min(expected.len())]),
            );
        }
    }
}
