//! Drive the turns: the agent through its one turn, or a multi-turn
//! scenario's turns in one session (`crate::agent::drive_session`), with
//! the scenario's answers and the SDK MCP servers reel hosts; then the raw
//! logs written, scrubbed, into the run directory.

use std::path::Path;
use std::time::Duration;

use super::{LivePlan, RecordError};
use crate::agent::{self, AgentCommand, DriveOptions};
use crate::scenario::answers::Decider;

/// Drives the agent through its turn, with the scenario's answers and the
/// SDK MCP servers reel hosts (a live one ends with the turn).
pub(super) fn drive_agent(
    plan: &LivePlan<'_>,
    cmd: &AgentCommand,
    mcp: Option<&crate::mcp::Prepared>,
) -> Result<agent::RunLog, RecordError> {
    let decider = Decider {
        rules: plan.scenario.answers.clone(),
        parity: plan.session.permission_parity,
        unanswered: plan.scenario.on_unanswered,
    };
    let sdk_host = match mcp {
        Some(m) => crate::mcp::sdk::SdkHost::start(m, plan.mcp.map(|f| &f.tape), cmd).map_err(
            |message| RecordError::Setup {
                message,
                hint: None,
            },
        )?,
        None => None,
    }
    .map(std::cell::RefCell::new);
    let relay = plan.hook.map(Relay);
    let on_turn_end = relay.as_ref().map(|r| r as &dyn agent::TurnEnded);
    if plan.scenario.is_multi_turn() {
        return Ok(drive_turns(
            plan,
            cmd,
            &decider,
            sdk_host.as_ref(),
            on_turn_end,
        ));
    }
    Ok(agent::drive(
        cmd,
        &DriveOptions {
            prompt: &plan.scenario.prompt,
            decider: &decider,
            timeout: plan.timeout,
            sdk_mcp: sdk_host
                .as_ref()
                .map(|h| h as &std::cell::RefCell<dyn agent::SdkMcp>),
            on_turn_end,
        },
    ))
}

/// A run hook seen as the session's turn-end listener.
struct Relay<'h>(&'h dyn super::hook::RunHook);

impl agent::TurnEnded for Relay<'_> {
    fn turn_ended(&self, index: usize) {
        self.0.turn_ended(index);
    }
}

/// A multi-turn scenario's session (docs/multi-turn.md): one agent process,
/// each turn's rules before the scenario's, each turn's budget its own
/// `timeout_ms` else the scenario's; the session's budget is their sum.
fn drive_turns(
    plan: &LivePlan<'_>,
    cmd: &AgentCommand,
    scenario_rules: &Decider,
    sdk_host: Option<&std::cell::RefCell<crate::mcp::sdk::SdkHost>>,
    on_turn_end: Option<&dyn agent::TurnEnded>,
) -> agent::RunLog {
    let turns = plan.scenario.session_turns();
    let deciders: Vec<Decider> = turns
        .iter()
        .map(|t| Decider {
            rules: t
                .answers
                .iter()
                .chain(&scenario_rules.rules)
                .cloned()
                .collect(),
            parity: scenario_rules.parity,
            unanswered: scenario_rules.unanswered,
        })
        .collect();
    let inputs: Vec<agent::TurnInput<'_>> = turns
        .iter()
        .zip(&deciders)
        .map(|(t, decider)| agent::TurnInput {
            prompt: &t.prompt,
            decider,
            timeout: t.timeout_ms.map_or(plan.timeout, Duration::from_millis),
        })
        .collect();
    let timeout = inputs.iter().map(|t| t.timeout).sum();
    agent::drive_session(
        cmd,
        &agent::SessionOptions {
            turns: inputs,
            timeout,
            sdk_mcp: sdk_host.map(|h| h as &std::cell::RefCell<dyn agent::SdkMcp>),
            on_turn_end,
        },
    )
}

/// The run's raw logs, secret-scrubbed like the cassette (a kept run
/// directory must not hold what the cassette may not).
pub(super) fn write_logs(run_dir: &Path, log: &agent::RunLog) {
    use serde_json::Value;
    let lines = |l: &[String]| Value::Array(l.iter().cloned().map(Value::String).collect());
    let stderr = String::from_utf8_lossy(&log.stderr).into_owned();
    // stderr rides as one extra (non-JSON, text-scrubbed) events line.
    let mut events = log.events.clone();
    events.push(stderr);
    let mut doc = serde_json::Map::new();
    doc.insert("events".into(), lines(&events));
    doc.insert("controlOut".into(), lines(&log.control_out));
    let mut policy = crate::verify::redact::RedactionPolicy::default();
    policy.add_env_secrets();
    // A scrub error only means a policy problem; the secret layer still ran.
    let _ = crate::verify::redact::scrub_cassette(&mut doc, &policy);
    let text = |key: &str, sep: &str| {
        let mut s = doc
            .get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(sep)
            })
            .unwrap_or_default();
        s.push('\n');
        s
    };
    let mut events: Vec<String> = doc
        .get("events")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let stderr = events.pop().unwrap_or_default();
    let mut ev = events.join("\n");
    ev.push('\n');
    let _ = std::fs::write(run_dir.join("events.jsonl"), ev);
    let _ = std::fs::write(run_dir.join("control-out.jsonl"), text("controlOut", "\n"));
    let _ = std::fs::write(run_dir.join("agent.stderr.log"), stderr);
}
