//! The translation of an ECMAScript pattern into the linear-time `regex`
//! crate's syntax, for the subset whose meaning is identical in both.

const SPACE_SET: &str = r"\t\n\x0B\x0C\r\x20\xA0\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";
const WORD_SET: &str = "0-9A-Za-z_";
const DIGIT_SET: &str = "0-9";

fn hex(c: char) -> String {
    format!("\\x{{{:X}}}", c as u32)
}

/// One literal character; with `fold`, ECMAScript non-Unicode case folding
/// (ASCII).
fn literal(c: char, fold: bool) -> String {
    if fold && c.is_ascii_alphabetic() {
        format!("[{}{}]", c.to_ascii_lowercase(), c.to_ascii_uppercase())
    } else if c.is_ascii_alphanumeric() {
        c.to_string()
    } else {
        hex(c)
    }
}

/// Class members for a range lo..=hi (ASCII); with `fold`, closed under
/// ASCII case.
fn class_range(lo: char, hi: char, fold: bool) -> String {
    let mut out = format!("{}-{}", hex(lo), hex(hi));
    if !fold {
        return out;
    }
    let (l, h) = (lo as u8, hi as u8);
    let overlap = |a: u8, b: u8| -> Option<(u8, u8)> {
        let s = l.max(a);
        let e = h.min(b);
        (s <= e).then_some((s, e))
    };
    if let Some((s, e)) = overlap(b'a', b'z') {
        out.push_str(&format!(
            "{}-{}",
            hex((s - 32) as char),
            hex((e - 32) as char)
        ));
    }
    if let Some((s, e)) = overlap(b'A', b'Z') {
        out.push_str(&format!(
            "{}-{}",
            hex((s + 32) as char),
            hex((e + 32) as char)
        ));
    }
    out
}

/// A decoded escape: a single character, or a class set (already Rust syntax).
enum Esc {
    Char(char),
    Set(&'static str),
}

/// Decodes the escape after a `\` at `chars[i]`; returns it and the next index.
/// `in_class` switches `\b` to backspace. `None` = outside the safe subset.
fn escape(chars: &[char], i: usize, in_class: bool) -> Option<(Esc, usize)> {
    let c = *chars.get(i)?;
    let hexval = |from: usize, n: usize| -> Option<u32> {
        let s: String = chars.get(from..from + n)?.iter().collect();
        if s.chars().all(|h| h.is_ascii_hexdigit()) {
            u32::from_str_radix(&s, 16).ok()
        } else {
            None
        }
    };
    let ok = |e: Esc| Some((e, i + 1));
    match c {
        'd' => ok(Esc::Set(DIGIT_SET)),
        'w' => ok(Esc::Set(WORD_SET)),
        's' => ok(Esc::Set(SPACE_SET)),
        't' => ok(Esc::Char('\t')),
        'n' => ok(Esc::Char('\n')),
        'r' => ok(Esc::Char('\r')),
        'v' => ok(Esc::Char('\x0B')),
        'f' => ok(Esc::Char('\x0C')),
        'b' if in_class => ok(Esc::Char('\x08')),
        '0' if !chars.get(i + 1).is_some_and(char::is_ascii_digit) => ok(Esc::Char('\0')),
        'x' => {
            let v = hexval(i + 1, 2)?;
            // Latin-1 letters have case pairs under `i` (`/\xff/i` matches
            // `Ÿ`): keep the translation ASCII, fall back.
            if v > 0x7F {
                return None;
            }
            Some((Esc::Char(char::from_u32(v)?), i + 3))
        }
        'u' => {
            let v = hexval(i + 1, 4)?;
            // Surrogates and non-ASCII need UTF-16 / Unicode case rules: fall back.
            if v > 0x7F {
                return None;
            }
            Some((Esc::Char(char::from_u32(v)?), i + 5))
        }
        'c' => {
            let l = *chars.get(i + 1)?;
            if !l.is_ascii_alphabetic() {
                return None;
            }
            Some((Esc::Char(((l as u8) % 32) as char), i + 2))
        }
        c if c.is_ascii() && !c.is_ascii_alphanumeric() && c != '_' => ok(Esc::Char(c)),
        _ => None,
    }
}

/// Translates an ECMAScript pattern to equivalent `regex`-crate syntax, or
/// `None` when it is outside the subset whose semantics are identical.
/// `fold` is the `i` flag.
pub(super) fn translate(pattern: &str, fold: bool) -> Option<String> {
    let chars: Vec<char> = pattern.chars().collect();
    if chars.iter().any(|c| !c.is_ascii()) {
        return None;
    }
    let mut out = String::with_capacity(pattern.len() * 4);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i = match c {
            '\\' => escaped(&chars, i, fold, &mut out)?,
            '.' => {
                out.push_str(r"[^\n\r\x{2028}\x{2029}]");
                i + 1
            }
            '^' | '$' | '|' | ')' | '*' | '+' | '?' => {
                out.push(c);
                i + 1
            }
            '(' => group_open(&chars, i, &mut out)?,
            '{' => brace(&chars, i, &mut out),
            '}' | ']' => {
                out.push_str(&hex(c));
                i + 1
            }
            '[' => class(&chars, i, fold, &mut out)?,
            other => {
                out.push_str(&literal(other, fold));
                i + 1
            }
        };
    }
    Some(out)
}

/// The escape at `chars[i]` (a backslash); returns the index after it.
fn escaped(chars: &[char], i: usize, fold: bool, out: &mut String) -> Option<usize> {
    match *chars.get(i + 1)? {
        'D' => out.push_str("[^0-9]"),
        'W' => out.push_str(&format!("[^{WORD_SET}]")),
        'S' => out.push_str(&format!("[^{SPACE_SET}]")),
        'b' => out.push_str(r"(?-u:\b)"),
        'B' => out.push_str(r"(?-u:\B)"),
        _ => {
            let (e, next) = escape(chars, i + 1, false)?;
            match e {
                Esc::Char(ch) => out.push_str(&literal(ch, fold)),
                Esc::Set(s) => out.push_str(&format!("[{s}]")),
            }
            return Some(next);
        }
    }
    Some(i + 2)
}

/// A group opening: plain, non-capturing or named; lookarounds are outside
/// the subset.
fn group_open(chars: &[char], i: usize, out: &mut String) -> Option<usize> {
    if chars.get(i + 1) != Some(&'?') {
        out.push('(');
        return Some(i + 1);
    }
    match chars.get(i + 2) {
        Some(':') => {
            out.push_str("(?:");
            Some(i + 3)
        }
        Some('<')
            if chars
                .get(i + 3)
                .is_some_and(|c| c.is_ascii_alphabetic() || *c == '_' || *c == '$') =>
        {
            let close = chars[i + 3..].iter().position(|c| *c == '>')? + i + 3;
            let name: String = chars[i + 3..close].iter().collect();
            if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return None;
            }
            out.push_str(&format!("(?P<{name}>"));
            Some(close + 1)
        }
        _ => None, // lookaround
    }
}

/// `{n}`, `{n,}`, `{n,m}` is a quantifier; anything else is a literal `{`
/// (Annex B).
fn brace(chars: &[char], i: usize, out: &mut String) -> usize {
    let mut j = i + 1;
    let start = j;
    while chars.get(j).is_some_and(char::is_ascii_digit) {
        j += 1;
    }
    let mut valid = j > start;
    if valid && chars.get(j) == Some(&',') {
        j += 1;
        while chars.get(j).is_some_and(char::is_ascii_digit) {
            j += 1;
        }
    }
    valid = valid && chars.get(j) == Some(&'}');
    if valid {
        out.extend(&chars[i..=j]);
        j + 1
    } else {
        out.push_str(&hex('{'));
        i + 1
    }
}

/// A character class from its `[`; returns the index after its `]`.
fn class(chars: &[char], i: usize, fold: bool, out: &mut String) -> Option<usize> {
    let mut j = i + 1;
    let negated = chars.get(j) == Some(&'^');
    if negated {
        j += 1;
    }
    let mut members = String::new();
    let mut any = false;
    loop {
        let ch = *chars.get(j)?;
        if ch == ']' {
            j += 1;
            break;
        }
        // One atom: a char, or a class escape.
        let (atom, next) = class_atom(chars, j)?;
        j = next;
        let is_range = chars.get(j) == Some(&'-') && chars.get(j + 1).is_some_and(|c| *c != ']');
        match (atom, is_range) {
            (Esc::Char(lo), true) => {
                let (hi_atom, after) = class_atom(chars, j + 1)?;
                match hi_atom {
                    Esc::Char(hi) if hi < lo => return None,
                    Esc::Char(hi) => members.push_str(&class_range(lo, hi, fold)),
                    // `[a-\d]`: Annex B reads `-` literally.
                    Esc::Set(s) => {
                        members.push_str(&class_range(lo, lo, fold));
                        members.push_str(&hex('-'));
                        members.push_str(s);
                    }
                }
                j = after;
            }
            (Esc::Char(ch), false) => members.push_str(&class_range(ch, ch, fold)),
            (Esc::Set(s), _) => members.push_str(s),
        }
        any = true;
    }
    if !any {
        return None; // `[]` / `[^]`
    }
    out.push_str(if negated { "[^" } else { "[" });
    out.push_str(&members);
    out.push(']');
    Some(j)
}

fn class_atom(chars: &[char], j: usize) -> Option<(Esc, usize)> {
    let ch = *chars.get(j)?;
    if ch == '\\' {
        match chars.get(j + 1)? {
            // Negated class escapes inside a class need set subtraction: fall back.
            'D' | 'W' | 'S' => None,
            _ => escape(chars, j + 1, true),
        }
    } else {
        Some((Esc::Char(ch), j + 1))
    }
}
