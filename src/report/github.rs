//! GitHub Actions workflow commands for failing cassettes:
//! `::error file=<cassette>,title=<scenario>::<message>`, one per
//! `verdict.failures[]` entry (or per load error). Emitted only when
//! `GITHUB_ACTIONS=true`, on stderr (Actions reads workflow commands from both
//! streams; stdout stays data-only).

use crate::replay::ReplayResult;

/// True when running under GitHub Actions.
pub fn enabled() -> bool {
    std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true")
}

/// Escapes a workflow-command message.
fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a workflow-command property value.
fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// The annotation lines for one result (empty when it passed).
pub fn annotations(r: &ReplayResult) -> Vec<String> {
    let file = escape_property(&r.file.display().to_string());
    if let Some(err) = &r.error {
        return vec![format!(
            "::error file={file},title=reel replay::{}",
            escape_data(err)
        )];
    }
    let title = escape_property(&format!("reel replay: {}", r.scenario()));
    r.verdict
        .failures
        .iter()
        .map(|f| {
            let what = f
                .assertion
                .as_deref()
                .map(|k| format!("{k}: "))
                .unwrap_or_default();
            format!(
                "::error file={file},title={title}::{}",
                escape_data(&format!("[{}] {what}{}", f.kind, f.message))
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_and_properties_are_escaped() {
        assert_eq!(escape_data("a%b\nc\r"), "a%25b%0Ac%0D");
        assert_eq!(escape_property("x:y,z"), "x%3Ay%2Cz");
    }
}
