//! Line numbers of a YAML document's nodes, by JSON-style path
//! (`assert[3].tool_called`, `answers[0].allow_if`), from `yaml-rust2`'s
//! marked parser events.
//!
//! The scenario loader (serde_yaml_ng) keeps no positions; this index is read
//! beside it only to point a finding at its line. A document it cannot parse
//! gives an empty index (the loader reports the syntax error).
//!
//! The same pass notes every key given twice in one mapping
//! ([`Positions::duplicates`]): the loader keeps the last value and drops
//! the first without a word.

use std::collections::HashMap;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

/// Path → 1-based line of the node (a mapping entry's key, a list item).
#[derive(Debug, Default, Clone)]
pub struct Positions {
    lines: HashMap<String, usize>,
    duplicates: Vec<DuplicateKey>,
}

/// A key given again in the mapping that already has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateKey {
    /// The mapping's path (empty: the top level).
    pub mapping: String,
    pub key: String,
    /// 1-based lines of the first occurrence and of this one.
    pub first_line: usize,
    pub line: usize,
}

impl Positions {
    pub fn of(text: &str) -> Positions {
        let mut b = Builder::default();
        let mut parser = Parser::new_from_str(text);
        if parser.load(&mut b, false).is_err() {
            return Positions::default();
        }
        Positions {
            lines: b.lines,
            duplicates: b.duplicates,
        }
    }

    /// Every key given again in a mapping that already has it, in document
    /// order (a key given three times is two of them).
    pub fn duplicates(&self) -> &[DuplicateKey] {
        &self.duplicates
    }

    /// The line of `path`, else of its nearest recorded ancestor.
    pub fn line(&self, path: &str) -> Option<usize> {
        let mut p = path;
        loop {
            if let Some(l) = self.lines.get(p) {
                return Some(*l);
            }
            let cut = p.rfind(['.', '['])?;
            p = &p[..cut];
        }
    }
}

enum Frame {
    Map {
        path: String,
        key: Option<String>,
        /// Each scalar key seen so far, with its line.
        seen: HashMap<String, usize>,
    },
    Seq {
        path: String,
        index: usize,
    },
}

#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    lines: HashMap<String, usize>,
    duplicates: Vec<DuplicateKey>,
}

fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

impl Builder {
    /// The path of a node starting now (and whether it is a mapping key).
    fn next_path(&mut self, line: usize) -> Option<(String, bool)> {
        match self.stack.last_mut() {
            None => Some((String::new(), false)),
            Some(Frame::Map { key: None, .. }) => None,
            Some(Frame::Map {
                path, key: Some(k), ..
            }) => Some((join(path, k), false)),
            Some(Frame::Seq { path, index }) => {
                let p = format!("{path}[{index}]");
                *index += 1;
                self.lines.entry(p.clone()).or_insert(line);
                Some((p, false))
            }
        }
    }

    /// A value finished: its mapping parent expects a key again.
    fn value_done(&mut self) {
        if let Some(Frame::Map { key, .. }) = self.stack.last_mut() {
            *key = None;
        }
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        let line = mark.line();
        match ev {
            Event::Scalar(value, ..) => {
                if let Some(Frame::Map { path, key, seen }) = self.stack.last_mut()
                    && key.is_none()
                {
                    self.lines.entry(join(path, &value)).or_insert(line);
                    if let Some(&first_line) = seen.get(&value) {
                        self.duplicates.push(DuplicateKey {
                            mapping: path.clone(),
                            key: value.clone(),
                            first_line,
                            line,
                        });
                    } else {
                        seen.insert(value.clone(), line);
                    }
                    *key = Some(value);
                    return;
                }
                let _ = self.next_path(line);
                self.value_done();
            }
            Event::Alias(_) => {
                if let Some(Frame::Map { key: k @ None, .. }) = self.stack.last_mut() {
                    *k = Some("*alias".into());
                    return;
                }
                let _ = self.next_path(line);
                self.value_done();
            }
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                let path = match self.next_path(line) {
                    Some((p, _)) => p,
                    // A complex (non-scalar) key: index its insides nowhere useful.
                    None => "?".into(),
                };
                self.stack.push(match ev {
                    Event::MappingStart(..) => Frame::Map {
                        path,
                        key: None,
                        seen: HashMap::new(),
                    },
                    _ => Frame::Seq { path, index: 0 },
                });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                self.stack.pop();
                self.value_done();
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_items_have_their_lines() {
        let p = Positions::of(
            "# comment\nprompt: |\n  hello\nanswers:\n  - when_tool: \
                Bash\n    allow_if: \"x\"\nassert:\n  - result: success\n  - {tool_called: Write, \
                tool_not_called: Bash}\n",
        );
        assert_eq!(p.line("prompt"), Some(2));
        assert_eq!(p.line("answers"), Some(4));
        assert_eq!(p.line("answers[0]"), Some(5));
        assert_eq!(p.line("answers[0].allow_if"), Some(6));
        assert_eq!(p.line("assert[1].tool_not_called"), Some(9));
        assert_eq!(p.line("assert[0].result"), Some(8));
        // A missing path falls back to its nearest ancestor.
        assert_eq!(p.line("assert[1].nope"), Some(9));
        assert_eq!(p.line("nothing"), None);
    }

    #[test]
    fn a_key_given_twice_in_one_mapping_is_a_duplicate() {
        let p = Positions::of(
            "prompt: a\nanswers:\n  - when_tool: Bash\n    decide: allow\n  - when_tool: \
                Write\n    decide: deny\n    decide: allow\nprompt: b\nassert: [{result: \
                success}, {result: success}]\n",
        );
        let found: Vec<(&str, &str, usize, usize)> = p
            .duplicates()
            .iter()
            .map(|d| (d.mapping.as_str(), d.key.as_str(), d.first_line, d.line))
            .collect();
        // The same key in two list items, or in nested mappings, is not one.
        assert_eq!(
            found,
            [("answers[1]", "decide", 6, 7), ("", "prompt", 1, 8)]
        );
    }

    #[test]
    fn unparsable_text_gives_no_lines() {
        assert_eq!(Positions::of("a: [\n").line("a"), None);
    }
}
