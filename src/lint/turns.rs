//! L014–L016: the footguns of a multi-turn scenario (`turns:`,
//! docs/multi-turn.md), each pointed at its line before the loader's own
//! refusal would name it less precisely.

use serde_json::Value;

use super::{Code, Linter};
use crate::scenario::turns::session_only;

impl Linter<'_> {
    /// L014 `prompt:` beside `turns:`; L015 an empty turn (no prompt, or a
    /// blank one); L016 a per-turn assertion key that needs the whole session.
    pub(super) fn turns(&mut self) {
        let Some(items) = self.doc.get("turns").and_then(Value::as_array) else {
            return;
        };
        if self.doc.get("prompt").is_some() {
            self.push(
                Code::PromptAndTurns,
                "prompt",
                "`prompt:` and `turns:` are both given: a scenario is one prompt or a list of \
                    turns, never both"
                    .into(),
                Some("move the prompt into the first turn"),
            );
        }
        if items.is_empty() {
            self.push(
                Code::EmptyTurn,
                "turns",
                "`turns:` is an empty list: nothing would be sent".into(),
                Some("add `- prompt: …` items"),
            );
        }
        for (i, item) in items.iter().enumerate() {
            self.one_turn(i, item);
        }
    }

    fn one_turn(&mut self, i: usize, item: &Value) {
        let blank = item
            .get("prompt")
            .and_then(Value::as_str)
            .is_none_or(|p| p.trim().is_empty());
        if blank {
            self.push(
                Code::EmptyTurn,
                &format!("turns[{i}]"),
                format!("turns[{i}] has no prompt: the turn would send an empty user message"),
                Some("write this turn's user message in `prompt:`, or remove the turn"),
            );
        }
        let asserts = item.get("assert").and_then(Value::as_array);
        for (j, a) in asserts.into_iter().flatten().enumerate() {
            let Some(map) = a.as_object() else { continue };
            for key in map.keys() {
                if let Some(why) = session_only(key) {
                    self.push(
                        Code::SessionKeyInTurn,
                        &format!("turns[{i}].assert[{j}].{key}"),
                        format!("turns[{i}].assert[{j}]: `{key}` is not a per-turn key: {why}"),
                        Some("move it to the top-level `assert:`, which judges the whole session"),
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    fn codes(yaml: &str) -> Vec<(&'static str, Option<usize>)> {
        crate::lint::lint_text(Path::new("/nowhere/s.yaml"), yaml)
            .unwrap()
            .into_iter()
            .map(|f| (f.code, f.line))
            .collect()
    }

    #[test]
    fn each_turn_footgun_has_its_code_and_line() {
        let found = codes(
            "name: s\nfidelity: protocol\nprompt: hi\nturns:\n  - prompt: a\n  - prompt: ''\n  - prompt: c\n    assert:\n      - no_unexpected_files: []\n",
        );
        assert!(found.contains(&("L014", Some(3))), "{found:?}");
        assert!(found.contains(&("L015", Some(6))), "{found:?}");
        assert!(found.contains(&("L016", Some(9))), "{found:?}");
        assert!(codes("name: s\nfidelity: protocol\nturns: []\n").contains(&("L015", Some(3))));
    }

    #[test]
    fn a_clean_multi_turn_scenario_has_no_turn_findings() {
        let found = codes(
            "name: s\nfidelity: protocol\nturns:\n  - prompt: a\n    assert:\n      - transcript_contains: x\n  - prompt: b\nassert:\n  - no_unexpected_files: []\n",
        );
        assert!(
            !found
                .iter()
                .any(|(c, _)| ["L000", "L014", "L015", "L016"].contains(c)),
            "{found:?}"
        );
    }
}
