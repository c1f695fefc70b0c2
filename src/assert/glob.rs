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
//! ([`crate::assert::regex::units_as_chars`]).

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
                    c => re.push_str(&regex::escape(&crate::assert::regex::units_as_chars(
                        c.encode_utf8(&mut [0; 4]),
                    ))),
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
        let path = crate::assert::regex::units_as_chars(path);
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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn pathological_globs_stay_fast() {
        // A backtracking matcher is exponential here; the regex crate is linear.
        let g = Glob::new(&"*a".repeat(30));
        assert!(g.is_match(&"a".repeat(5000)));
        assert!(!g.is_match(&format!("{}b", "a".repeat(29))));
    }
}
