//! The judge's prompt: one template, rendered with the numbered rubric and the
//! judged document, and its hash (`judgePromptHash`), which is part of every
//! frozen verdict's key: editing the template makes every frozen verdict stale.

use sha2::{Digest, Sha256};

use crate::model::JUDGE_OPENING;

/// The template. `{rubric}`, `{last}` and `{document}` are filled by
/// [`render`]; the opening line is what the scripted model routes on.
const TEMPLATE: &str = "\
{opening} against the document below.
Decide for each claim whether the document satisfies it (pass: true) or not (pass: false), and say why
in one sentence. Grade every claim by its index; do not add, drop, merge or reorder claims. Do not infer
that something is absent from a part marked as cut.

## Rubric
{rubric}

## Document
{document}

## Output
Reply with JSON only, no code fences and no prose, one result per rubric index 0..{last}:
{\"results\": [{\"index\": 0, \"pass\": true, \"rationale\": \"...\"}]}";

/// The text sent to the judge for `rubric` over `document`.
pub fn render(rubric: &[String], document: &str) -> String {
    let numbered: Vec<String> = rubric
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{i}. {c}"))
        .collect();
    TEMPLATE
        .replace("{opening}", JUDGE_OPENING)
        .replace("{last}", &rubric.len().saturating_sub(1).to_string())
        .replace("{rubric}", &numbered.join("\n"))
        // Last, so a document that spells a placeholder is left as written.
        .replace("{document}", document)
}

/// `sha256:<hex>` of the template text: what `judgePromptHash` records.
pub fn prompt_hash() -> String {
    hash_template(TEMPLATE)
}

pub(crate) fn hash_template(template: &str) -> String {
    format!(
        "sha256:{}",
        hex::encode(Sha256::digest(template.as_bytes()))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendering_numbers_the_claims_and_opens_with_the_routing_line() {
        let p = render(&["names the total".into(), "is polite".into()], "TOTAL 3");
        assert!(p.starts_with(JUDGE_OPENING));
        assert!(p.contains("0. names the total\n1. is polite"));
        assert!(p.contains("indices 0..1") || p.contains("index 0..1"));
        assert!(p.contains("## Document\nTOTAL 3\n"));
    }

    #[test]
    fn the_hash_is_of_the_template_and_changes_with_it() {
        assert!(prompt_hash().starts_with("sha256:"));
        assert_ne!(prompt_hash(), hash_template("another template"));
    }
}
