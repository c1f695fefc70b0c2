//! Both engines against each other, a UTF-16 reference and what JavaScript
//! answered.

use super::*;
use crate::js::utf16::units_as_chars;

fn m(p: &str, t: &str) -> bool {
    compile_es(p).unwrap().is_match(t).unwrap()
}

#[test]
fn case_insensitive_and_es_classes() {
    assert!(m("hello", "say HeLLo"));
    assert!(m(r"\d+ items", "3 ITEMS"));
    assert!(!m(r"^\d$", "٣")); // Arabic-Indic digit is not \d in ECMAScript
    assert!(m(r"a\sb", "a\u{00A0}b"));
    assert!(!m("s", "ſ")); // no non-ASCII → ASCII folding without the u flag
    assert!(!m("k", "\u{212A}"));
    assert!(m("[a-c]x", "BX"));
    assert!(m("[^a]", "A1"));
    assert!(!m("^[^a]$", "A"));
    assert!(!m("a.b", "a\nb"));
    assert!(m("a{", "A{"));
    assert!(m("x{2}", "XX"));
    assert!(m(r"\bword\b", "a word."));
}

#[test]
fn lookaround_and_backrefs_use_the_ecmascript_engine() {
    let re = compile_es(r"(a)\1(?=b)").unwrap();
    assert!(!re.is_linear());
    assert!(re.is_match("xAAb").unwrap());
    assert!(!re.is_match("xAAc").unwrap());
    assert!(compile_es("hello").unwrap().is_linear());
}

#[test]
fn without_the_i_flag_letters_keep_their_case() {
    let re = compile_es_with_flags("Acme [a-c]x", "").unwrap();
    assert!(re.is_linear());
    assert!(re.is_match("an Acme bx").unwrap());
    assert!(!re.is_match("an ACME bx").unwrap());
    assert!(!re.is_match("an Acme Bx").unwrap());
    assert_eq!(
        re.find_ranges("Acme ax, Acme cx").unwrap(),
        vec![0..7, 9..16]
    );
    // Flags the translation does not model use the backtracker.
    let ml = compile_es_with_flags("^b$", "m").unwrap();
    assert!(!ml.is_linear());
    assert_eq!(ml.find_ranges("a\nb\nc").unwrap(), vec![2..3]);
}

#[test]
fn bad_regex_is_an_error_not_a_panic() {
    let e = compile_es("(unclosed").unwrap_err();
    assert!(
        e.starts_with("Invalid regular expression: /(unclosed/i:"),
        "{e}"
    );
}

#[test]
fn catastrophic_pattern_is_bounded() {
    // Backreference forces the backtracker; the classic blow-up shape.
    let re = compile_es(r"^(a+)+\1$").unwrap();
    let text = format!("{}!", "a".repeat(40));
    let started = std::time::Instant::now();
    let r = re.is_match(&text);
    assert!(started.elapsed() < BACKTRACK_DEADLINE * 3);
    // Either it finished (engine was clever) or it reported the budget.
    if let Err(e) = r {
        assert!(e.contains("exceeded"), "{e}");
    }
    // The same shape without a backreference is linear and instant.
    let lin = compile_es(r"^(a+)+$").unwrap();
    assert!(lin.is_linear());
    assert!(!lin.is_match(&text).unwrap());
    // Emoji in the haystack keep the linear engine (per-unit stand-ins)…
    let lin = compile_es(r"^([^x]+)+$").unwrap();
    assert!(lin.is_linear());
    let emoji = format!("{}x", "😀".repeat(5_000));
    assert!(!lin.is_match(&emoji).unwrap());
    assert!(lin.find_ranges(&emoji).unwrap().is_empty());
    // …and the per-unit backtracker is under the same deadline.
    let started = std::time::Instant::now();
    let r = re.is_match(&format!("😀{text}"));
    assert!(started.elapsed() < BACKTRACK_DEADLINE * 3);
    if let Err(e) = r {
        assert!(e.contains("exceeded"), "{e}");
    }
}

fn m_flags(p: &str, flags: &str, t: &str) -> bool {
    compile_es_with_flags(p, flags)
        .unwrap()
        .is_match(t)
        .unwrap()
}

/// Both engines (the translation when the pattern has one, and the
/// backtracker) give `expected` for `re.test(t)`.
fn both(p: &str, flags: &str, t: &str, expected: bool) {
    let chosen = compile_es_with_flags(p, flags).unwrap();
    assert_eq!(
        chosen.is_match(t).unwrap(),
        expected,
        "/{p}/{flags} on {t:?}"
    );
    let slow = compile(p, flags, false).unwrap();
    assert!(!slow.is_linear());
    assert_eq!(
        slow.is_match(t).unwrap(),
        expected,
        "backtracker /{p}/{flags} on {t:?}"
    );
}

#[test]
fn without_u_an_astral_character_is_two_code_units() {
    for flags in ["", "i"] {
        both("^.$", flags, "😀", false);
        both("^..$", flags, "😀", true);
        both("^.{2}$", flags, "😀", true);
        both(".{2}", flags, "a😀", true);
        both("^.{3}$", flags, "a😀", true);
        both("^[^a]$", flags, "😀", false);
        both("^[^a]{2}$", flags, "😀", true);
        both(r"^\S$", flags, "😀", false);
        both(r"^\S+$", flags, "a😀b", true);
        both(r"^\W\W$", flags, "😀", true);
        both(r"^\D{4}$", flags, "😀😀", true);
        both(r"^\w\b..\b\w$", flags, "a😀b", true);
        both("^.x$", flags, "😀X", false);
        both("^..x$", flags, "😀X", flags == "i");
    }
    // A pattern's astral literal is two units too.
    for flags in ["", "i"] {
        both("^[😀]$", flags, "😀", false);
        both("^[😀]{2}$", flags, "😀", true);
        both("^[😀]+$", flags, "😀😃", false); // 😃 shares 😀's high unit only
        both("^😀{2}$", flags, "😀😀", false); // `{2}` repeats the low unit
        both("^😀+$", flags, "😀", true);
        both("^[^😀]$", flags, "😃", false);
        both(r"^\uD83D\uDE00$", flags, "😀", true);
        both(r"^[\uD83D\uDE00]$", flags, "😀", false);
        both(r"^[\uD83D\uDE00]{2}$", flags, "😀", true);
        both(r"^\uD83D\uDE00{2}$", flags, "😀😀", false);
        both(r"[\uD800-\uDBFF]", flags, "x😀", true);
        both(r"[\uD800-\uDBFF]", flags, "xé", false);
    }
    // Backreferences and lookaround see units as well.
    both(r"^(.)\1$", "", "😀", false);
    both(r"^(.)(.)$", "", "😀", true);
    both(r"(?<=\uD83D)\uDE00", "", "😀", true);
    // An astral range is out of order without `u`, fine with it.
    assert!(compile_es_with_flags("[😀-😂]", "").is_err());
    assert!(m_flags("^[😀-😂]$", "u", "😁"));
}

#[test]
fn with_u_an_astral_character_is_one_code_point() {
    for flags in ["u", "iu"] {
        assert!(m_flags("^.$", flags, "😀"));
        assert!(!m_flags("^..$", flags, "😀"));
        assert!(m_flags("^[^a]$", flags, "😀"));
        assert!(m_flags(r"^\S$", flags, "😀"));
        assert!(m_flags("^[😀]$", flags, "😀"));
        assert!(m_flags("^😀{2}$", flags, "😀😀"));
        assert!(!m_flags(r"^\uD83D$", flags, "😀"));
    }
}

#[test]
fn match_ranges_are_bytes_widened_to_whole_characters() {
    let re = compile_es_with_flags("[^a]", "").unwrap();
    assert!(re.is_linear());
    // Units 1..2, 2..3 (the pair) and 3..4: the pair's halves merge.
    assert_eq!(re.find_ranges("a😀b").unwrap(), vec![1..5, 5..6]);
    let slow = compile("[^a]", "", false).unwrap();
    assert_eq!(slow.find_ranges("a😀b").unwrap(), vec![1..5, 5..6]);
    // A match ending inside the pair takes the whole character.
    let re = compile_es_with_flags(r"a\uD83D", "").unwrap();
    assert_eq!(re.find_ranges("xa😀").unwrap(), vec![1..6]);
    // Whole-unit matches map exactly.
    let re = compile_es_with_flags("b..c", "i").unwrap();
    assert_eq!(re.find_ranges("😀B😀C").unwrap(), vec![4..10]);
    // With `u`, code points.
    let re = compile_es_with_flags(".", "u").unwrap();
    assert_eq!(re.find_ranges("a😀").unwrap(), vec![0..1, 1..5]);
}

#[test]
fn an_empty_match_right_after_a_match_is_reported_as_match_all_does() {
    // `"x".matchAll(/x*/g)`: "x" at 0, then "" at 1.
    for linear in [true, false] {
        let re = compile("x*", "", linear).unwrap();
        assert_eq!(re.is_linear(), linear);
        assert_eq!(re.find_ranges("x").unwrap(), vec![0..1, 1..1]);
        assert_eq!(re.find_ranges("ax").unwrap(), vec![0..0, 1..2, 2..2]);
    }
}

#[test]
fn latin1_escapes_fold_under_i_as_ecmascript_does() {
    // `\xff` is ÿ, whose case pair Ÿ (U+0178) lies outside Latin-1.
    assert!(m(r"\xff", "Ÿ"));
    assert!(m(r"[\xe0-\xff]", "À"));
    assert!(
        !compile_es_with_flags(r"\xff", "")
            .unwrap()
            .is_match("Ÿ")
            .unwrap()
    );
}

#[test]
fn stand_ins_spell_each_unit_once() {
    assert!(matches!(units_as_chars("abé"), Cow::Borrowed("abé")));
    let spelled = units_as_chars("a😀\u{10D83D}");
    let units: Vec<u32> = spelled.chars().map(u32::from).collect();
    // A plane-16 character of the input is itself split into stand-ins.
    assert_eq!(
        units,
        vec![0x61, 0x10_D83D, 0x10_DE00, 0x10_DBF6, 0x10_DC3D]
    );
}

/// What JavaScript (node) answered, recorded by
/// tests/data/astral/gen_es_cases.js.
#[test]
fn agrees_with_javascript_around_astral_characters() {
    #[derive(serde::Deserialize)]
    struct Corpus {
        texts: Vec<String>,
        cases: Vec<Case>,
    }
    #[derive(serde::Deserialize)]
    struct Case {
        pattern: String,
        flags: String,
        #[serde(default)]
        error: bool,
        #[serde(default)]
        results: Vec<(bool, Vec<(usize, usize)>)>,
    }
    let corpus: Corpus =
        serde_json::from_str(include_str!("../../../tests/data/astral/es_cases.json"))
            .expect("corpus is valid JSON");
    let mut checked = 0;
    for case in &corpus.cases {
        let (p, f) = (&case.pattern, &case.flags);
        for linear in [true, false] {
            let re = compile(p, f, linear);
            if case.error {
                assert!(re.is_err(), "/{p}/{f} should not compile");
                continue;
            }
            let re = re.unwrap_or_else(|e| panic!("/{p}/{f}: {e}"));
            for (text, (test, ranges)) in corpus.texts.iter().zip(&case.results) {
                let want: Vec<Range<usize>> = ranges.iter().map(|(s, e)| *s..*e).collect();
                let engine = if re.is_linear() {
                    "linear"
                } else {
                    "backtracker"
                };
                assert_eq!(
                    re.is_match(text).unwrap(),
                    *test,
                    "/{p}/{f}.test({text:?}) ({engine})"
                );
                assert_eq!(
                    re.find_ranges(text).unwrap(),
                    want,
                    "/{p}/{f} ranges in {text:?} ({engine})"
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 5000, "{checked}");
}

mod property {
    use super::*;
    use proptest::prelude::*;

    /// Pattern atoms: (ECMAScript spelling, the same atom as UTF-16 units
    /// for the reference — spelled independently of `pattern_units`).
    const ATOMS: &[(&str, &[u32])] = &[
        (".", &[0x2E]),
        ("a", &[0x61]),
        ("B", &[0x42]),
        (" ", &[0x20]),
        ("[^a]", &[0x5B, 0x5E, 0x61, 0x5D]),
        (r"\S", &[0x5C, 0x53]),
        (r"\s", &[0x5C, 0x73]),
        (r"\W", &[0x5C, 0x57]),
        (r"\w", &[0x5C, 0x77]),
        ("😀", &[0xD83D, 0xDE00]),
        ("[😀]", &[0x5B, 0xD83D, 0xDE00, 0x5D]),
        ("[^😀]", &[0x5B, 0x5E, 0xD83D, 0xDE00, 0x5D]),
        (r"\uD83D", &[0xD83D]),
        (r"\uDE00", &[0xDE00]),
        (r"\b", &[0x5C, 0x62]),
        (
            "(?:a|😀)",
            &[0x28, 0x3F, 0x3A, 0x61, 0x7C, 0xD83D, 0xDE00, 0x29],
        ),
    ];
    const QUANTIFIERS: &[&str] = &["", "", "?", "*", "+", "{2}", "{1,3}"];
    const PIECES: &[&str] = &["a", "A", "b", " ", "😀", "😃", "é", "𝒳", "\n"];

    fn pattern() -> impl Strategy<Value = (String, Vec<u32>)> {
        (
            any::<bool>(),
            prop::collection::vec((0..ATOMS.len(), 0..QUANTIFIERS.len()), 1..5),
            any::<bool>(),
        )
            .prop_map(|(start, atoms, end)| {
                let mut src = String::new();
                let mut units = vec![];
                if start {
                    src.push('^');
                    units.push(0x5E);
                }
                for (a, q) in atoms {
                    let (spelled, atom_units) = ATOMS[a];
                    src.push_str(spelled);
                    units.extend_from_slice(atom_units);
                    let q = if spelled == r"\b" { "" } else { QUANTIFIERS[q] };
                    src.push_str(q);
                    units.extend(q.chars().map(u32::from));
                }
                if end {
                    src.push('$');
                    units.push(0x24);
                }
                (src, units)
            })
    }

    fn text() -> impl Strategy<Value = String> {
        prop::collection::vec(0..PIECES.len(), 0..6)
            .prop_map(|ix| ix.into_iter().map(|i| PIECES[i]).collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        /// The chosen engine, the backtracker and a reference (regress on
        /// the UTF-16 units of pattern and text) agree; the two engines
        /// report the same ranges.
        #[test]
        fn engines_agree_with_a_utf16_reference(
            (src, units) in pattern(),
            text in text(),
            fold in any::<bool>(),
        ) {
            let flags = if fold { "i" } else { "" };
            let reference = regress::Regex::from_unicode(units.into_iter(), flags)
                .expect("generated patterns are valid");
            let haystack: Vec<u16> = text.encode_utf16().collect();
            let want = reference.find_from_ucs2(&haystack, 0).next().is_some();
            let chosen = compile_es_with_flags(&src, flags).expect("valid");
            let slow = compile(&src, flags, false).expect("valid");
            let case = format!("/{src}/{flags} on {text:?}");
            prop_assert_eq!(chosen.is_match(&text).unwrap(), want, "chosen {}", case);
            prop_assert_eq!(slow.is_match(&text).unwrap(), want, "backtracker {}", case);
            let (fast, slow) = (chosen.find_ranges(&text), slow.find_ranges(&text));
            prop_assert_eq!(fast.unwrap(), slow.unwrap(), "ranges {}", case);
        }
    }
}

/// Bad-regex messages and acceptance as V8 (Node 22, the original's
/// engine) reports them, captured from cowork-harness 2.0.0 replays
/// (scripts/parity-assert.py).
#[test]
fn syntax_errors_read_as_v8_reports_them() {
    let cases = [
        ("[", "Unterminated character class"),
        ("(?i)x", "Invalid group"),
        ("\\", "\\ at end of pattern"),
        ("[\\", "\\ at end of pattern"),
        ("(abc", "Unterminated group"),
        ("((a)", "Unterminated group"),
        ("(?:", "Unterminated group"),
        ("a)", "Unmatched ')'"),
        ("*a", "Nothing to repeat"),
        ("a**", "Nothing to repeat"),
        ("a|*", "Nothing to repeat"),
        ("^*", "Nothing to repeat"),
        ("x{2}{3}", "Nothing to repeat"),
        ("a{2,1}", "numbers out of order in {} quantifier"),
        ("(?<1>a)", "Invalid capture group name"),
        ("(?<a", "Invalid capture group name"),
        ("(?", "Invalid group"),
        ("[b-a]", "Range out of order in character class"),
        ("(?i:a)", "Invalid group"),
        ("(?-i:a)", "Invalid group"),
        ("\\b+", "Nothing to repeat"),
    ];
    for (pattern, v8) in cases {
        let Err(e) = compile_es(pattern) else {
            panic!("{pattern:?} compiled; V8 rejects it");
        };
        assert_eq!(
            e,
            format!("Invalid regular expression: /{pattern}/i: {v8}"),
            "{pattern:?}"
        );
    }
    // escaped and in-class look-alikes stay valid
    for ok in [
        "\\(?i", "[(?i]", "\\\\b+", "[\\b]+", "(?:a)", "(?=a)", "(?<n>a)",
    ] {
        assert!(compile_es(ok).is_ok(), "{ok:?}");
    }
}

#[test]
fn escaped_text_matches_itself_literally() {
    for s in ["Which format (a.b)?", r"a\b[c]{2}|^$*+/", "plain"] {
        let re = compile_es(&escape_literal(s)).unwrap();
        let haystack = format!("x{s}y");
        assert_eq!(
            re.find_ranges(&haystack).unwrap(),
            vec![1..1 + s.len()],
            "{s}"
        );
    }
    assert!(!compile_es(&escape_literal("a.c")).unwrap().test("abc"));
}
