//! V8's wording of regex syntax errors (Node 22, the original's engine), so a
//! bad-regex failure reads exactly as the original's does, and the syntax V8
//! refuses that `regress` accepts.

/// Syntax the original's engine (V8 in Node 22) rejects but `regress`
/// accepts: a group modifier `(?i:…)`/`(?-i:…)` (not shipped in Node 22) and a
/// quantified word-boundary assertion (`\b+`). Scans outside classes only.
pub(super) fn v8_only_rejection(pattern: &str) -> Option<&'static str> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    let mut in_class = false;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                let next = chars.get(i + 1).copied();
                if !in_class
                    && matches!(next, Some('b' | 'B'))
                    && matches!(chars.get(i + 2), Some('*' | '+' | '?'))
                {
                    return Some("Nothing to repeat");
                }
                i += 2;
                continue;
            }
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '(' if !in_class
                && chars.get(i + 1) == Some(&'?')
                && chars
                    .get(i + 2)
                    .is_some_and(|c| c.is_ascii_alphabetic() || *c == '-') =>
            {
                return Some("Invalid group");
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The V8 wording of a syntax error `regress` reported as `regress_msg`, so a
/// bad-regex failure message reads exactly as the original's does.
pub(super) fn v8_message(pattern: &str, regress_msg: &str) -> String {
    let v8 = match regress_msg {
        "Unbalanced bracket" => "Unterminated character class",
        "Invalid group modifier" => "Invalid group",
        "Incomplete escape" | "Unterminated escape" => "\\ at end of pattern",
        "Invalid atom character" | "Quantifier not allowed here" | "Invalid braced quantifier" => {
            "Nothing to repeat"
        }
        "Invalid quantifier" => "numbers out of order in {} quantifier",
        "Unbalanced parenthesis" => {
            if unmatched_close_paren(pattern) {
                "Unmatched ')'"
            } else {
                "Unterminated group"
            }
        }
        "Invalid token at named capture group identifier" => {
            if pattern.contains("(?<") {
                "Invalid capture group name"
            } else {
                "Invalid group"
            }
        }
        m if m.starts_with("Range values reversed") => "Range out of order in character class",
        other => other,
    };
    v8.to_string()
}

/// True when a `)` outside a class closes no group (V8: "Unmatched ')'").
fn unmatched_close_paren(pattern: &str) -> bool {
    let mut depth = 0usize;
    let mut in_class = false;
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '(' if !in_class => depth += 1,
            ')' if !in_class => {
                if depth == 0 {
                    return true;
                }
                depth -= 1;
            }
            _ => {}
        }
    }
    false
}
