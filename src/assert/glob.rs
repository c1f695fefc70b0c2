//! Tool and path globs (cowork-harness `src/glob.ts`): anchored,
//! case-sensitive, over the whole `/`-normalised string. `*` is a run of
//! non-`/` characters, `?` one non-`/` character, `**` as a whole segment any
//! number of segments (a trailing `**` also matches nothing more), everything
//! else literal. Compiled to the linear-time `regex` crate, so no glob can
//! cause a backtracking blow-up.
//!
//! The original compiles a glob to a `RegExp` without the `u` flag, so it
//! counts UTF-16 code units: `?` is one unit, and an astral character (an
//! emoji) takes two (`??` matches `😀`, `?` does not). Both the glob's
//! literals and the path are compared as units
//! (`crate::js::utf16::units_as_chars`).
//!
//! [`Glob`] is the reference: one glob, one regex. [`GlobList`] answers
//! "does any of these globs match" for a long list (a 2,000-pattern
//! `no_unexpected_files` allowlist over a 2,000-file manifest) without
//! trying every pattern on every path: literal patterns sit in a hash set,
//! the rest are indexed by a key every path they match must share (the
//! basename, the extension, or the directory prefix before the first
//! wildcard), and only the few candidates a path's keys select are matched,
//! segment by segment (over the same UTF-16 units), without compiling a
//! regex. Its answers equal
//! [`any_matches`] over the same globs (a property test checks it); patterns
//! longer than [`DIRECT_MAX_BYTES`] are confirmed by the reference.
//! Deliberately not here: brace sets, character classes, negation — the
//! original has none (`[`, `{`, `!` are literal).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use crate::js::utf16::units_as_chars;

/// A compiled glob.
#[derive(Debug, Clone)]
pub struct Glob(Option<regex::Regex>);

impl Glob {
    /// Compiles one glob (`\` is read as `/`).
    pub fn new(glob: &str) -> Glob {
        let normalized = glob.replace('\\', "/");
        let segs: Vec<&str> = normalized.split('/').collect();
        let mut re = String::from("^");
        for (i, seg) in segs.iter().enumerate() {
            let last = i == segs.len() - 1;
            if *seg == "**" {
                re.push_str(if last {
                    "(?:[^/]+(?:/[^/]+)*)?"
                } else {
                    "(?:[^/]+/)*"
                });
                continue;
            }
            for ch in seg.chars() {
                match ch {
                    '*' => re.push_str("[^/]*"),
                    '?' => re.push_str("[^/]"),
                    c => re.push_str(&regex::escape(&units_as_chars(c.encode_utf8(&mut [0; 4])))),
                }
            }
            if !last {
                re.push('/');
            }
        }
        re.push('$');
        // A glob too large for the regex size limit matches nothing.
        Glob(regex::Regex::new(&re).ok())
    }

    /// Whether `path` (with `\` read as `/`) matches.
    pub fn is_match(&self, path: &str) -> bool {
        let Some(re) = &self.0 else { return false };
        let path = units_as_chars(path);
        if path.contains('\\') {
            re.is_match(&path.replace('\\', "/"))
        } else {
            re.is_match(&path)
        }
    }
}

/// True iff `path` matches at least one of `globs` (`[]` matches nothing).
pub fn any_matches(globs: &[Glob], path: &str) -> bool {
    globs.iter().any(|g| g.is_match(path))
}

/// Normalised patterns up to this many bytes are matched directly by
/// [`GlobList`]; longer ones by the reference [`Glob`], whose regex can
/// exceed the `regex` crate's size limit (and then matches nothing — a
/// behaviour the direct matcher would not reproduce). Every pattern this
/// short compiles (see the `direct_patterns_always_compile` test).
pub const DIRECT_MAX_BYTES: usize = 1024;

/// The direct matcher costs O(pattern bytes × path bytes) at worst; above
/// this product (a hostile manifest's megabyte path) [`GlobList`] asks the
/// reference instead, whose regex search is linear in the path. Both give
/// the same answer, so the switch is only about cost.
const DIRECT_MAX_WORK: usize = 1 << 20;

/// Many globs compiled once into one "does any match" matcher.
///
/// `is_match(path)` equals `any_matches(&globs.map(Glob::new), path)`. Why
/// the index is sound — every key and pre-check is a necessary condition for
/// a match, so a pattern they rule out cannot match (normalised strings; `L`
/// a last segment without `*`/`?`; `T` the text after the last segment's
/// last wildcard; `P` the text before the pattern's first wildcard):
/// - no `*`/`?` at all: the regex is the escaped pattern, so a match is
///   string equality (`exact`);
/// - `P` is emitted literally first, so the path starts with `P` and with
///   its directory part (up to `P`'s last `/`), one of the path's own
///   `/`-ending prefixes (or empty);
/// - last segment `L` and a wildcard elsewhere: the regex ends with `/L` or
///   starts with `(?:[^/]+/)*L`, so the path's basename is `L`;
/// - last segment with a wildcard (not `**`): the regex ends with `T`, so the
///   path ends with `T`, and if `T` has a `.` the basename's extension (after
///   its last `.`) is `T`'s.
///
/// Each pattern sits in one bucket: basename, else a non-empty directory
/// prefix, else extension, else the empty directory prefix. A path probes
/// its basename, its extension and each of its directory prefixes, then
/// checks each candidate's `P` and `T` before matching segment-wise (or,
/// past [`DIRECT_MAX_BYTES`] / `DIRECT_MAX_WORK`, by the reference regex).
#[derive(Debug, Default)]
pub struct GlobList {
    exact: HashSet<String>,
    by_basename: HashMap<String, Vec<usize>>,
    by_extension: HashMap<String, Vec<usize>>,
    by_dir_prefix: HashMap<String, Vec<usize>>,
    /// The distinct key lengths of `by_dir_prefix`, ascending: a path is
    /// probed only at those lengths (probing every `/` of a megabyte path
    /// would hash O(n²) bytes).
    dir_prefix_lengths: Vec<usize>,
    patterns: Vec<IndexedGlob>,
}

/// A non-literal pattern of a [`GlobList`].
#[derive(Debug)]
struct IndexedGlob {
    /// The pattern as given, `\` read as `/` (for the reference).
    source: String,
    /// Byte length of the pattern in UTF-16 units (the direct matcher's).
    units_len: usize,
    /// `P`: every match starts with it.
    prefix: String,
    /// `T` (or `L`; empty after a last `**`): every match ends with it.
    suffix: String,
    /// `/`-separated segments for the direct matcher; `None` over
    /// [`DIRECT_MAX_BYTES`].
    segments: Option<Vec<Segment>>,
    /// Whether a segment is `**` (else segments pair up one to one).
    deep: bool,
    /// The reference, compiled on first use (long patterns, long paths).
    reference: OnceLock<Glob>,
}

impl IndexedGlob {
    /// Whether the pattern matches `path` (in UTF-16 units, normalised;
    /// `segs` its segments); `given` is the path as given, for the reference.
    fn is_match<'p>(&self, given: &str, path: &'p str, segs: &mut Option<Vec<&'p str>>) -> bool {
        match &self.segments {
            Some(pattern) if self.units_len.saturating_mul(path.len()) <= DIRECT_MAX_WORK => {
                let segs = segs.get_or_insert_with(|| path.split('/').collect());
                if self.deep {
                    segments_match(pattern, segs)
                } else {
                    pattern.len() == segs.len()
                        && pattern
                            .iter()
                            .zip(segs.iter())
                            .all(|(p, s)| segment_matches(p, s))
                }
            }
            _ => self
                .reference
                .get_or_init(|| Glob::new(&self.source))
                .is_match(given),
        }
    }
}

/// One segment of a directly matched pattern.
#[derive(Debug)]
enum Segment {
    /// A whole-segment `**`.
    Deep,
    /// No wildcard: string equality.
    Literal(String),
    /// `*` (any run of characters) and `?` (one character) within a segment.
    Wild(Vec<char>),
}

impl GlobList {
    /// Compiles `globs` (`\` is read as `/`, as in [`Glob::new`]).
    pub fn new<S: AsRef<str>>(globs: &[S]) -> GlobList {
        let mut list = GlobList::default();
        for glob in globs {
            let given = glob.as_ref().replace('\\', "/");
            let units = units_as_chars(&given);
            list.add(&given, &units);
        }
        list.dir_prefix_lengths = list.by_dir_prefix.keys().map(String::len).collect();
        list.dir_prefix_lengths.sort_unstable();
        list.dir_prefix_lengths.dedup();
        list
    }

    /// Indexes one pattern: `given` (`\` read as `/`) and `pattern`, the
    /// same in UTF-16 units, which every key and segment is made of.
    fn add(&mut self, given: &str, pattern: &str) {
        let first_wild = pattern.find(['*', '?']);
        let direct = pattern.len() <= DIRECT_MAX_BYTES;
        if first_wild.is_none() && direct {
            self.exact.insert(pattern.to_owned());
            return;
        }
        let prefix = &pattern[..first_wild.unwrap_or(pattern.len())];
        let dir = prefix.rfind('/').map_or("", |i| &prefix[..=i]);
        let last = pattern.rsplit('/').next().unwrap_or(pattern);
        let suffix = match last.rfind(['*', '?']) {
            Some(i) => &last[i + 1..],
            None => last,
        };
        let extension = suffix.rfind('.').map(|dot| &suffix[dot + 1..]);
        let (map, key) = if last != "**" && !last.contains(['*', '?']) {
            (&mut self.by_basename, last)
        } else if let (true, Some(ext)) = (dir.is_empty(), extension) {
            (&mut self.by_extension, ext)
        } else {
            (&mut self.by_dir_prefix, dir)
        };
        map.entry(key.to_owned())
            .or_default()
            .push(self.patterns.len());
        let segments = direct.then(|| {
            pattern
                .split('/')
                .map(|seg| {
                    if seg == "**" {
                        Segment::Deep
                    } else if seg.contains(['*', '?']) {
                        Segment::Wild(seg.chars().collect())
                    } else {
                        Segment::Literal(seg.to_owned())
                    }
                })
                .collect::<Vec<_>>()
        });
        self.patterns.push(IndexedGlob {
            source: given.to_owned(),
            units_len: pattern.len(),
            prefix: prefix.to_owned(),
            suffix: suffix.to_owned(),
            deep: pattern.split('/').any(|seg| seg == "**"),
            segments,
            reference: OnceLock::new(),
        });
    }

    /// Whether any glob matches `path` (with `\` read as `/`).
    pub fn is_match(&self, path: &str) -> bool {
        let given = path;
        let units = units_as_chars(given);
        let path: Cow<'_, str> = if units.contains('\\') {
            Cow::Owned(units.replace('\\', "/"))
        } else {
            Cow::Borrowed(units.as_ref())
        };
        let path = path.as_ref();
        if self.exact.contains(path) {
            return true;
        }
        if self.patterns.is_empty() {
            return false;
        }
        let basename = path.rsplit('/').next().unwrap_or(path);
        let extension = basename.rfind('.').map(|dot| &basename[dot + 1..]);
        // A directory key is empty or ends with `/` (ASCII, so `len` is a
        // char boundary when the byte before it is `/`).
        let dir_prefixes = self.dir_prefix_lengths.iter().filter_map(|&len| {
            let is_dir = len == 0 || path.as_bytes().get(len - 1) == Some(&b'/');
            is_dir.then(|| &path[..len])
        });
        let candidates = self
            .by_basename
            .get(basename)
            .into_iter()
            .chain(extension.and_then(|e| self.by_extension.get(e)))
            .chain(dir_prefixes.filter_map(|d| self.by_dir_prefix.get(d)))
            .flatten()
            .map(|&idx| &self.patterns[idx])
            .filter(|g| path.starts_with(&g.prefix) && path.ends_with(&g.suffix));
        let mut segments: Option<Vec<&str>> = None;
        candidates
            .into_iter()
            .any(|glob| glob.is_match(given, path, &mut segments))
    }
}

/// Whether `pattern` matches the path split into `path` segments — the
/// reference regex read segment-wise. That regex is a run of units
/// "segment + `/`" (a `Literal`/`Wild` segment: one path segment; a non-last
/// `**`, `(?:[^/]+/)*`: zero or more non-empty ones) closed by a last piece
/// without a trailing `/` (a `Literal`/`Wild` segment: the final path
/// segment; a last `**`, `(?:[^/]+(?:/[^/]+)*)?`: either nothing — the
/// remainder is one empty segment — or one or more non-empty segments).
/// Dynamic programming over (pattern segment, units consumed): O(pattern
/// bytes × path bytes) at worst, no backtracking.
fn segments_match(pattern: &[Segment], path: &[&str]) -> bool {
    let Some((last, units)) = pattern.split_last() else {
        return false; // `split` always yields a segment, so never empty
    };
    let m = path.len();
    if m == 0 {
        return false; // `split` always yields a segment
    }
    // reach[j]: the units so far consume exactly `path[..j]` and its `/`s
    // (j < m: the last piece needs a segment left).
    let mut reach = vec![false; m];
    let mut next = vec![false; m];
    reach[0] = true;
    for seg in units {
        next.fill(false);
        for j in 0..m {
            next[j] = match seg {
                Segment::Deep => reach[j] || (j > 0 && next[j - 1] && !path[j - 1].is_empty()),
                _ => j > 0 && reach[j - 1] && segment_matches(seg, path[j - 1]),
            };
        }
        std::mem::swap(&mut reach, &mut next);
        if !reach.contains(&true) {
            return false;
        }
    }
    match last {
        Segment::Deep => {
            // path[j..] is all non-empty exactly for j >= nonempty_from.
            let nonempty_from = path.iter().rposition(|s| s.is_empty()).map_or(0, |i| i + 1);
            (0..m).any(|j| reach[j] && (j >= nonempty_from || (j == m - 1 && path[j].is_empty())))
        }
        seg => reach[m - 1] && segment_matches(seg, path[m - 1]),
    }
}

/// One non-`**` pattern segment against one path segment.
fn segment_matches(seg: &Segment, text: &str) -> bool {
    match seg {
        Segment::Deep => false, // whole-segment `**` is handled by the caller
        Segment::Literal(lit) => lit == text,
        Segment::Wild(chars) => wild_match(chars, text),
    }
}

/// `*`/`?` wildcard match of one segment (no `/` on either side): the
/// classic greedy scan that, on a mismatch, lets the last `*` absorb one
/// more character — O(pattern × text) at worst. `?` is one character (a
/// Unicode scalar, as the regex's `[^/]`), so the text is walked by char.
fn wild_match(pattern: &[char], text: &str) -> bool {
    let (mut p, mut t) = (0, 0); // pattern index, text byte offset
    // (pattern index after the last `*`, text offset that `*` resumes from)
    let mut star: Option<(usize, usize)> = None;
    while let Some(c) = text[t..].chars().next() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p + 1, t));
                p += 1;
            }
            Some(&pc) if pc == '?' || pc == c => {
                p += 1;
                t += c.len_utf8();
            }
            _ => {
                let Some((after_star, from)) = star else {
                    return false;
                };
                // The `*` absorbs the character at `from` (there is one: `from <= t`).
                let absorbed = text[from..].chars().next().map_or(1, char::len_utf8);
                star = Some((after_star, from + absorbed));
                p = after_star;
                t = from + absorbed;
            }
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

/// One-shot match of a single glob.
pub fn matches(glob: &str, path: &str) -> bool {
    Glob::new(glob).is_match(path)
}

/// The schema's regex-metacharacter ban for tool globs
/// (`/\.\*|\.\+|[|()[\]+^${}]|\\[dwsb]/`).
pub fn looks_like_regex(glob: &str) -> bool {
    glob.contains(".*")
        || glob.contains(".+")
        || glob.chars().any(|c| "|()[]+^${}".contains(c))
        || ["\\d", "\\w", "\\s", "\\b"]
            .iter()
            .any(|p| glob.contains(p))
}

/// Whether an `artifact_json.artifact` is a glob: it holds `*` or `?` (`[`
/// is literal here, as in [`Glob`], so detection and matching agree on a
/// path like `a[1].json`).
pub fn is_artifact_glob(path: &str) -> bool {
    path.contains(['*', '?'])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn glob_semantics() {
        assert!(matches("Write", "Write"));
        assert!(!matches("Write", "write"));
        assert!(!matches("Write", "WriteX"));
        assert!(matches("mcp__workspace__*", "mcp__workspace__bash"));
        assert!(matches("Rea?", "Read"));
        assert!(matches("outputs/**", "outputs/a.md"));
        assert!(matches("outputs/**", "outputs/a/b.md"));
        assert!(matches("**/x.md", "x.md"));
        assert!(matches("**/x.md", "a/b/x.md"));
        assert!(!matches("outputs/*", "outputs/a/b.md"));
        assert!(matches("a**b", "axxb"));
        assert!(!matches("a**b", "a/b"));
        assert!(matches("a.md", "a.md"));
        assert!(!matches("a.md", "aXmd"));
        assert!(matches("outputs\\*.md", "outputs/r.md"));
    }

    #[test]
    fn question_mark_is_one_utf16_unit_as_in_the_original() {
        // The original's RegExp has no `u` flag: an emoji is two units.
        assert!(!matches("?", "😀"));
        assert!(matches("??", "😀"));
        assert!(matches("a/??.md", "a/😀.md"));
        assert!(!matches("a/?.md", "a/😀.md"));
        assert!(matches("*.md", "😀😃.md"));
        assert!(matches("?*?", "😀"));
        assert!(matches("😀/**", "😀/x/y"));
        assert!(matches("x?😀", "xé😀"));
        assert!(!matches("😀", "😃"));
        assert!(!matches("?😀", "😃😀"));
        assert!(matches("??😀", "😃😀"));
        // Plane-16 characters (reel's unit stand-ins) are ordinary pairs.
        assert!(!matches("😀", "\u{10D83D}\u{10DE00}"));
        assert!(matches("????", "\u{10D83D}\u{10DE00}"));
        assert!(matches("\u{10D83D}", "\u{10D83D}"));
    }

    #[test]
    fn regex_looking_globs_are_flagged() {
        for g in [
            "mcp__.*",
            "Bash|Read",
            "[ab]",
            "a+",
            "\\d",
            "x{1}",
            "^a",
            "a$",
        ] {
            assert!(looks_like_regex(g), "{g}");
        }
        for g in ["mcp__*", "Rea?", "Write", "a.b"] {
            assert!(!looks_like_regex(g), "{g}");
        }
    }

    /// `GlobList` against the reference on one glob list and path.
    fn agrees(globs: &[String], path: &str) -> Result<(), String> {
        let reference: Vec<Glob> = globs.iter().map(|g| Glob::new(g)).collect();
        let want = any_matches(&reference, path);
        let got = GlobList::new(globs).is_match(path);
        if got == want {
            Ok(())
        } else {
            Err(format!(
                "globs {globs:?} on {path:?}: reference {want}, GlobList {got}"
            ))
        }
    }

    #[test]
    fn glob_list_matches_like_the_reference() {
        let paths = [
            "",
            "/",
            "a",
            "a/",
            "/a",
            "a//b",
            "a/b",
            "a/b/",
            "a/b/c",
            "x.md",
            "a/x.md",
            "a/b/x.md",
            "outputs/r.md",
            "outputs\\r.md",
            "outputs/a/b.md",
            ".md",
            "a.",
            "a.b.c",
            "é/ü.md",
            "a*b",
            "a?b",
            "[ab]",
            "{a,b}",
            "a\nb",
            "a.md\n",
            "😀",
            "a/😀.md",
            "😀😃.md",
            "😃😀",
            "\u{10D83D}\u{10DE00}",
            "\u{10D83D}",
            "x/😀/y",
        ];
        let globs = [
            "",
            "**",
            "**/",
            "/**",
            "*",
            "?",
            "a",
            "a/",
            "a/**",
            "a/**/",
            "**/x.md",
            "a/**/x.md",
            "a/**/**/x.md",
            "**/**",
            "a/*",
            "a/*/",
            "*/",
            "*.md",
            "a/*.md",
            "**/*.md",
            "*.",
            "?.md",
            "a//b",
            "a//*",
            "outputs\\*.md",
            "outputs/**",
            "a**b",
            "a*b",
            "a?b",
            "[ab]",
            "{a,b}",
            "é/?.md",
            "*.b.c",
            "a.*",
            "a/b/**",
            "**/b/**",
            "**/b",
            "*/*/*",
            "x.md",
            "??",
            "a/??.md",
            "a/?.md",
            "?*?",
            "😀/**",
            "??😀",
            "?😀",
            "😀",
            "????",
            "\u{10D83D}",
            "*😀",
            "**/😀",
            "*/😀/*",
        ];
        for path in paths {
            for glob in globs {
                agrees(&[glob.to_owned()], path).unwrap();
            }
            let all: Vec<String> = globs.iter().map(|g| (*g).to_owned()).collect();
            agrees(&all, path).unwrap();
            agrees(&[], path).unwrap();
        }
    }

    #[test]
    fn long_patterns_are_confirmed_by_the_reference() {
        let long = format!("{}*", "a".repeat(DIRECT_MAX_BYTES));
        let literal = "b".repeat(DIRECT_MAX_BYTES + 1);
        let list = GlobList::new(&[long.as_str(), literal.as_str()]);
        assert!(list.is_match(&format!("{}zz", "a".repeat(DIRECT_MAX_BYTES))));
        assert!(list.is_match(&literal));
        assert!(!list.is_match(&"a".repeat(DIRECT_MAX_BYTES - 1)));
        assert!(list.patterns[0].segments.is_none());
    }

    #[test]
    fn long_paths_are_confirmed_by_the_reference() {
        // Past the work budget the reference answers; it must agree.
        let deep = format!("{}x.md", "a/".repeat(DIRECT_MAX_WORK / 8));
        let globs: Vec<String> = ["**/a/**/x.md", "a/**/*.md", "a/*/x.md", "**/b/**", "a/**"]
            .map(str::to_owned)
            .to_vec();
        assert!(globs[0].len() * deep.len() > DIRECT_MAX_WORK);
        for g in &globs {
            agrees(std::slice::from_ref(g), &deep).unwrap();
        }
        let list = GlobList::new(&globs);
        assert!(list.is_match(&deep));
        assert!(list.patterns[0].reference.get().is_some());
    }

    #[test]
    fn direct_patterns_always_compile() {
        // The direct matcher stands in for the reference only where the
        // reference's regex exists: the costliest shapes at the size bound.
        let n = DIRECT_MAX_BYTES;
        for pattern in [
            "?".repeat(n),
            "*".repeat(n),
            "?*".repeat(n / 2),
            "**/".repeat(n / 3),
            "é".repeat(n / 2),
            "\u{10FFFF}?".repeat(n / 9),
            "😀".repeat(n / 8),
            "*/".repeat(n / 2),
        ] {
            assert!(units_as_chars(&pattern).len() <= n);
            assert!(Glob::new(&pattern).0.is_some(), "{pattern:.40}…");
        }
    }

    /// Pieces random patterns and paths are made of: the wildcards, the
    /// separators, literal characters the original treats literally, and a
    /// multi-byte character (`?` is one character, not one byte).
    fn pattern_strategy() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop::sample::select(vec![
                "a",
                "b",
                ".",
                "/",
                "*",
                "?",
                "**",
                "/**/",
                "\\",
                "é",
                "md",
                "[",
                "{",
                "😀",
                "\u{10D83D}",
            ]),
            0..8,
        )
        .prop_map(|parts| parts.concat())
    }

    fn path_strategy() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop::sample::select(vec![
                "a",
                "b",
                ".",
                "/",
                "\\",
                "é",
                "md",
                "*",
                "?",
                "[",
                "😀",
                "😃",
                "\u{10D83D}",
            ]),
            0..10,
        )
        .prop_map(|parts| parts.concat())
    }

    /// A path built from `pattern` by filling its wildcards, so a good share
    /// of the generated cases are matches.
    fn instance(pattern: &str, fills: &[&str]) -> String {
        let mut fill = fills.iter().cycle();
        let mut out = String::new();
        let mut chars = pattern.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '*' => {
                    if chars.peek() == Some(&'*') {
                        chars.next();
                    }
                    out.push_str(fill.next().copied().unwrap_or(""));
                }
                '?' => out.push('x'),
                c => out.push(c),
            }
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn glob_list_agrees_with_the_reference(
            globs in prop::collection::vec(pattern_strategy(), 0..6),
            path in path_strategy(),
        ) {
            prop_assert_eq!(agrees(&globs, &path), Ok(()));
        }

        #[test]
        fn glob_list_agrees_on_instances(
            pattern in pattern_strategy(),
            fills in prop::collection::vec(
                prop::sample::select(vec!["", "a", "b/c", "/", "é.md", "a//b", "😀", "x😀"]),
                1..4,
            ),
        ) {
            let path = instance(&pattern, &fills);
            prop_assert_eq!(agrees(std::slice::from_ref(&pattern), &path), Ok(()));
            let with_others = vec!["**/zz".to_owned(), pattern, "*.q".to_owned()];
            prop_assert_eq!(agrees(&with_others, &path), Ok(()));
        }
    }

    #[test]
    fn pathological_globs_stay_fast() {
        // A backtracking matcher is exponential here; the regex crate is linear.
        let g = Glob::new(&"*a".repeat(30));
        assert!(g.is_match(&"a".repeat(5000)));
        assert!(!g.is_match(&format!("{}b", "a".repeat(29))));
    }
}
