//! Judging at record time: once the cassette is assembled and scrubbed, its
//! `semantic_matches` are judged and frozen into it, so the live verdict and
//! every later replay read the same verdict. The judge is the one the run
//! has: a model script's `judge:` replies (token-free), else, for a run
//! against the real API, the Messages API with `ANTHROPIC_API_KEY`. With
//! neither, nothing is judged and each judged assertion `needs regrade`.

use super::client::{Complete, MessagesClient};
use super::regrade::{Selection, regrade};
use super::{Budget, DEFAULT_VOTES, KEY};
use crate::cassette::Cassette;
use crate::model::{Script, ServeOptions, Server};

/// Judges and freezes `cassette`'s judged assertions; returns the warnings
/// to show (what could not be judged and why).
pub fn judge_recorded(cassette: &mut Cassette, script: Option<&Script>) -> Vec<String> {
    let judged = (cassette.scenario().get("assert").and_then(|a| a.as_array()))
        .is_some_and(|items| items.iter().any(|i| i.get(KEY).is_some()));
    if !judged {
        return Vec::new();
    }
    let (client, server): (Box<dyn Complete>, Option<Server>) = match script {
        // `side:` answers a baseline_transcript's question (no JUDGE_OPENING).
        Some(s) if !s.judge.is_empty() || !s.side.is_empty() => {
            match Server::start(s.clone(), ServeOptions::default()) {
                Ok(server) => (
                    Box::new(MessagesClient::scripted(&server.url())),
                    Some(server),
                ),
                Err(e) => return vec![format!("judge: start the scripted judge: {e}")],
            }
        }
        // A recording's replies carry no judge: a rerun carries the
        // recorded verdicts over instead (`freeze::carry_over`, through
        // `LivePlan::carried_verdicts`).
        Some(s) if s.origin.to_string_lossy().ends_with(".cassette.json") => return Vec::new(),
        Some(_) => {
            return vec![
                "judge: the model script has no `judge:` replies, so semantic_matches was not \
                 judged (it needs regrade: `reel regrade --judge-script FILE`)"
                    .into(),
            ];
        }
        None => match MessagesClient::live_from_env() {
            Some(c) => (Box::new(c), None),
            None => {
                return vec![
                    "judge: no ANTHROPIC_API_KEY, so semantic_matches was not judged (it needs \
                     regrade: `reel regrade`)"
                        .into(),
                ];
            }
        },
    };
    let selection = Selection {
        all: true,
        assertions: Vec::new(),
    };
    let mut budget = Budget::default();
    let warnings = match regrade(cassette, &*client, &selection, DEFAULT_VOTES, &mut budget) {
        Ok(rows) => (rows.iter())
            .filter(|r| r.action == "refused")
            .map(|r| {
                format!(
                    "judge: assertion {} not judged: {}",
                    r.assertion,
                    r.reasons.join("; ")
                )
            })
            .collect(),
        Err((_, e)) => vec![format!("judge: {e}")],
    };
    drop(server);
    warnings
}
