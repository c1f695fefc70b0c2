//! MCP servers of a run: the session's MCP config read, narrowed to
//! `mcp.enabled`, and rewritten for the agent into the run directory. On a
//! rerun every server is frozen by default — its entry runs reel's own
//! [`frozen`] stdio server over a [`tape`] built from the recording — unless
//! it is named live (`--mcp-live`); a live server keeps its command, with
//! relative paths that name files beside the config made absolute (the agent
//! starts in the work root) and their directories readable in the sandbox.
//! A live stdio server runs behind reel's [`relay`], which records its
//! [`traffic`] for the cassette; [`digest`] is the configuration's digest
//! staleness compares. An entry of `"type": "sdk"` is an [`sdk`] server:
//! reel, the host, answers the agent's `mcp_message` requests for it. An
//! entry of `"type": "http"` is reached through reel's loopback [`http`]
//! front, forwarding to the real URL (live) or answering from the tape
//! (frozen). A legacy `"type": "sse"` server is refused unless frozen.
//!
//! Files: `mod` (`prepare` writes `<run>/mcp/config.json`; `run_if_server`
//! dispatches reel's own servers before clap), `traffic` (per-server capture
//! files, paired into the cassette's `reelMcp` key), `relay` (the recording
//! relay, `reel __mcp-relay`, placed in front of a live stdio server's command
//! with absolute paths), `frozen` (`reel __mcp-frozen`: its `Responder` answers
//! one server from the tape, whatever carries the messages), `http` (the
//! loopback front: forwarding to the real URL on `ureq`, SSE answers passed
//! event by event, or answering frozen through a `Responder`), `sdk` (entries
//! reel hosts, through the `agent::SdkMcp` trait: live through the entry's
//! command behind the relay, frozen through a `Responder`), `tape` (the
//! recorded calls, from traffic, else from `tool_use` / `tool_result` pairs,
//! and its `Player`, matching on tool plus `jcs1` arguments) and `digest` (what
//! verify-cassettes' staleness compares). Not here: spawning the agent's
//! servers (the agent starts them; the relay starts the one it stands in for).

pub mod digest;
pub mod frozen;
pub mod http;
pub mod relay;
pub mod sdk;
pub mod tape;
pub mod traffic;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};

pub use tape::Tape;
pub use traffic::Traffic;

/// Runs reel's own MCP servers when this process is one (`reel
/// __mcp-frozen …`, `reel __mcp-relay …`, started by the agent); returns
/// otherwise. Called first thing in `main`, before argument parsing.
pub fn run_if_server() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    match args.get(1) {
        Some(a) if a == frozen::FROZEN_ARG => frozen::frozen_main(&args),
        Some(a) if a == relay::RELAY_ARG => relay::relay_main(&args),
        _ => {}
    }
}

/// How a rerun's MCP servers run (`None` in a [`prepare`] call: all live, as
/// when recording).
#[derive(Debug, Clone, Default)]
pub struct Freeze {
    pub tape: Tape,
    /// Servers run for real (`--mcp-live`).
    pub live: Vec<String>,
    /// The real URL of each live HTTP server, as the operator gave it
    /// (`--mcp-live NAME=URL`): a rerun never takes a target reel itself
    /// connects to from the session's (the pull request's) files.
    pub live_urls: BTreeMap<String, String>,
}

impl Freeze {
    /// A rerun's freeze from its `--mcp-live` values (`NAME` or `NAME=URL`).
    pub fn new(tape: Tape, live: &[String]) -> Freeze {
        let mut freeze = Freeze {
            tape,
            ..Freeze::default()
        };
        for spec in live {
            match spec.split_once('=') {
                Some((name, url)) => {
                    freeze.live.push(name.to_owned());
                    freeze.live_urls.insert(name.to_owned(), url.to_owned());
                }
                None => freeze.live.push(spec.clone()),
            }
        }
        freeze
    }
}

/// The MCP config a run's agent gets, and what the sandbox must allow.
#[derive(Debug, Clone, Default)]
pub struct Prepared {
    /// `<run>/mcp/config.json`.
    pub config: PathBuf,
    /// Read paths a live server needs (its files' directories) and reel's
    /// own binary for a frozen one.
    pub extra_read: Vec<PathBuf>,
    /// Frozen servers, sorted.
    pub frozen: Vec<String>,
    /// Where frozen servers append calls they could not answer.
    pub misses: PathBuf,
    /// Each relayed or frozen server's capture file.
    pub captures: BTreeMap<String, PathBuf>,
    /// The SDK servers reel hosts (left out of the agent's config file).
    pub sdk: BTreeMap<String, sdk::Hosted>,
    /// The HTTP servers' loopback fronts, running while this lives.
    pub http: BTreeMap<String, Arc<http::Front>>,
    /// [`digest::config_digest`] of the session's MCP config (`None`: the
    /// session has none).
    pub config_digest: Option<String>,
    /// [`digest::config_files`] of the same config.
    pub config_files: BTreeMap<String, String>,
}

impl Prepared {
    /// The traffic the run's servers exchanged, with the config digest.
    pub fn traffic(&self) -> Traffic {
        let mut traffic = Traffic {
            config_digest: self.config_digest.clone(),
            config_files: self.config_files.clone(),
            ..Traffic::from_captures(&self.captures)
        };
        for (name, server) in &mut traffic.servers {
            if self.sdk.contains_key(name) {
                server.transport = Some(sdk::TRANSPORT.into());
            } else if self.http.contains_key(name) {
                server.transport = Some(HTTP.into());
            }
        }
        traffic
    }

    /// The loopback ports the agent must reach: the HTTP fronts'.
    pub fn loopback_ports(&self) -> Vec<u16> {
        self.http.values().map(|f| f.port()).collect()
    }
}

/// Reads an MCP config's `mcpServers` (a clear error naming the file).
pub fn read_servers(config: &Path) -> Result<Map<String, Value>, String> {
    let text = std::fs::read_to_string(config)
        .map_err(|e| format!("MCP config `{}`: {e}", config.display()))?;
    let doc: Value = serde_json::from_str(&text)
        .map_err(|e| format!("MCP config `{}` is not JSON: {e}", config.display()))?;
    match doc.get("mcpServers") {
        Some(Value::Object(m)) => Ok(m.clone()),
        _ => Err(format!(
            "MCP config `{}` has no `mcpServers` object; write {{\"mcpServers\": {{\"NAME\": \
             {{\"command\": …, \"args\": […]}}}}}}",
            config.display()
        )),
    }
}

/// Checks `mcp.enabled` against the config's servers (at session load).
pub fn check_enabled(config: Option<&Path>, enabled: &[String]) -> Result<(), String> {
    if enabled.is_empty() {
        return Ok(());
    }
    let Some(config) = config else {
        return Err(
            "`mcp.enabled` names servers but `mcp.config` is not set; set `mcp.config` \
                    to the MCP config file that defines them"
                .into(),
        );
    };
    let servers = read_servers(config)?;
    let unknown: Vec<&String> = enabled
        .iter()
        .filter(|n| !servers.contains_key(*n))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(format!(
        "`mcp.enabled` names {} not defined in `{}` (it defines: {}); fix the name or remove it",
        unknown
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", "),
        config.display(),
        servers.keys().cloned().collect::<Vec<_>>().join(", ")
    ))
}

/// Writes the agent's MCP config (and the frozen servers' tape) into
/// `<run_dir>/mcp/`. `None` when the run has no MCP server at all.
pub fn prepare(
    config: Option<&Path>,
    enabled: &[String],
    freeze: Option<&Freeze>,
    run_dir: &Path,
) -> Result<Option<Prepared>, String> {
    let mut servers = run_servers(config, enabled, freeze)?;
    if servers.is_empty() {
        return Ok(None);
    }
    let dir = run_dir.join("mcp");
    let traffic_dir = dir.join("traffic");
    std::fs::create_dir_all(&traffic_dir)
        .map_err(|e| format!("create `{}`: {e}", traffic_dir.display()))?;
    let mut prepared = Prepared {
        config: dir.join("config.json"),
        misses: dir.join("misses.jsonl"),
        config_digest: config
            .map(|c| digest::config_digest(c, enabled))
            .transpose()?,
        config_files: config
            .map(|c| digest::config_files(c, enabled))
            .transpose()?
            .unwrap_or_default(),
        ..Prepared::default()
    };
    let base = config.and_then(Path::parent).unwrap_or(Path::new("."));
    let base = std::path::absolute(base).unwrap_or_else(|_| base.to_owned());
    let exe = std::env::current_exe().map_err(|e| format!("locate reel: {e}"))?;
    let tape_path = dir.join("tape.json");
    for (i, (name, entry)) in servers.iter_mut().enumerate() {
        let capture = traffic_dir.join(format!("{i}.jsonl"));
        let frozen = freeze.is_some_and(|f| !f.live.contains(name));
        if frozen {
            prepared.frozen.push(name.clone());
        } else {
            absolutise(entry, &base, &mut prepared.extra_read);
        }
        let transport = entry.get("type").and_then(Value::as_str).unwrap_or("stdio");
        if sdk::is_sdk(entry) {
            let hosted = match frozen {
                true => sdk::Hosted::Frozen,
                false => sdk::Hosted::Live(entry.clone()),
            };
            prepared.sdk.insert(name.clone(), hosted);
        } else if transport == HTTP {
            let target = http_target(name, entry, freeze, frozen)?;
            let front = http_front(name, entry, target, &prepared.misses, &capture)?;
            prepared.http.insert(name.clone(), Arc::new(front));
            prepared.captures.insert(name.clone(), capture);
            continue;
        } else if frozen {
            *entry = json!({"type": "stdio", "command": exe, "args": [
                frozen::FROZEN_ARG, tape_path, name, prepared.misses, capture]});
        } else if transport == "sse" {
            return Err(legacy_sse(name, config));
        } else if !relay_entry(entry, &exe, &capture) {
            continue; // no command: nothing to record
        }
        prepared.captures.insert(name.clone(), capture);
        if !prepared.extra_read.contains(&exe) {
            prepared.extra_read.push(exe.clone());
        }
    }
    servers.retain(|name, _| !prepared.sdk.contains_key(name));
    prepared.frozen.sort();
    if let Some(f) = freeze {
        let text = serde_json::to_string(&f.tape).map_err(|e| e.to_string())?;
        crate::atomic::write_atomic(&tape_path, text.as_bytes())
            .map_err(|e| format!("write `{}`: {e}", tape_path.display()))?;
    }
    let text =
        serde_json::to_string_pretty(&json!({"mcpServers": servers})).map_err(|e| e.to_string())?;
    // 0600: the entries keep their servers' headers (a bearer token).
    crate::atomic::write_atomic_private(&prepared.config, text.as_bytes())
        .map_err(|e| format!("write `{}`: {e}", prepared.config.display()))?;
    Ok(Some(prepared))
}

/// The `type` of a streamable HTTP server's entry (and of its traffic).
pub const HTTP: &str = "http";

/// Where an HTTP server's front gets its answers.
enum HttpTarget<'a> {
    Frozen(&'a Tape),
    /// The real URL, expanded (record) or the operator's (rerun).
    Live(String),
}

/// The target of an HTTP server: frozen; recording, the entry's `url` with
/// `${VAR}` expanded (the operator's own scenario and environment); on a
/// rerun, only the URL the operator gave with `--mcp-live NAME=URL` — the
/// entry's `url` is the pull request's, and reel itself would connect to it
/// from outside the sandbox.
fn http_target<'a>(
    name: &str,
    entry: &Value,
    freeze: Option<&'a Freeze>,
    frozen: bool,
) -> Result<HttpTarget<'a>, String> {
    match freeze {
        Some(f) if frozen => Ok(HttpTarget::Frozen(&f.tape)),
        Some(f) => f.live_urls.get(name).map(|u| HttpTarget::Live(u.clone())).ok_or_else(|| {
            format!(
                "--mcp-live `{name}`: an HTTP MCP server is reached by reel itself, outside the \
                 sandbox, so a rerun takes its URL from you, never from the session's files; \
                 give it: --mcp-live {name}=https://HOST/PATH"
            )
        }),
        None => {
            let url = entry.get("url").and_then(Value::as_str).unwrap_or_default();
            Ok(HttpTarget::Live(http::expand_env(url)))
        }
    }
}

/// Starts the loopback front of an HTTP server and points its entry at it:
/// answering from the tape (frozen; the entry keeps no headers, since nothing
/// real is reached) or forwarding to the real URL (live). The agent's entry
/// gets the front's secret URL and nothing of the real one.
fn http_front(
    name: &str,
    entry: &mut Value,
    target: HttpTarget<'_>,
    misses: &Path,
    capture: &Path,
) -> Result<http::Front, String> {
    let frozen = matches!(target, HttpTarget::Frozen(_));
    let backend = match target {
        HttpTarget::Frozen(tape) => http::Backend::Frozen(Box::new(Mutex::new(
            frozen::Responder::new(name, tape, misses),
        ))),
        HttpTarget::Live(real) => {
            http::Backend::Forward(http::Upstream::new(&real).map_err(|e| {
                let written = entry.get("url").and_then(Value::as_str).unwrap_or_default();
                format!(
                    "MCP server `{name}`: its `url` ({}) {e}; give the server's full http(s) URL",
                    crate::terminal_safe::inline(written)
                )
            })?)
        }
    };
    let log = traffic::Capture::open(capture)
        .map_err(|e| format!("open `{}`: {e}", capture.display()))?;
    let front = http::Front::start(backend, log)
        .map_err(|e| format!("MCP server `{name}`: start reel's loopback front: {e}"))?;
    let local = front.agent_url();
    match frozen {
        true => *entry = json!({"type": HTTP, "url": local}),
        false => entry["url"] = json!(local),
    }
    Ok(front)
}

/// Why a live legacy SSE server is refused, and the fixes.
fn legacy_sse(name: &str, config: Option<&Path>) -> String {
    format!(
        "MCP server `{name}` in `{}` uses the legacy SSE transport (\"type\": \"sse\"), which \
         reel cannot record or run in its sandbox; point it at the server's streamable HTTP \
         endpoint (\"type\": \"http\", often the same URL ending in /mcp), or leave it out of \
         the run with the session's `mcp.enabled` (a rerun freezes it from the recorded \
         tool_use/tool_result pairs)",
        config.map_or_else(|| "the MCP config".into(), |c| c.display().to_string())
    )
}

/// The servers a run gets: the config's, narrowed to `mcp.enabled`, plus (on
/// a rerun) every server the recording holds; `--mcp-live` names checked.
fn run_servers(
    config: Option<&Path>,
    enabled: &[String],
    freeze: Option<&Freeze>,
) -> Result<Map<String, Value>, String> {
    let mut servers = match config {
        Some(c) => read_servers(c)?,
        None => Map::new(),
    };
    if !enabled.is_empty() {
        servers.retain(|name, _| enabled.contains(name));
    }
    let Some(f) = freeze else {
        return Ok(servers);
    };
    for (name, recorded) in &f.tape.servers {
        let entry = match recorded.sdk {
            true => json!({"type": sdk::TRANSPORT}),
            false => json!({}),
        };
        servers.entry(name.clone()).or_insert(entry);
    }
    if let Some(unknown) = f.live.iter().find(|n| !servers.contains_key(*n)) {
        return Err(format!(
            "--mcp-live `{unknown}`: the session has no MCP server of that name (it has: {})",
            servers.keys().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    Ok(servers)
}

/// Puts reel's recording [`relay`] in a stdio server's place (`false`: not a
/// stdio server — an HTTP/SSE one, or no command).
fn relay_entry(entry: &mut Value, exe: &Path, capture: &Path) -> bool {
    let Some(obj) = entry.as_object_mut() else {
        return false;
    };
    let stdio = obj.get("type").is_none_or(|t| t == "stdio") && !obj.contains_key("url");
    let Some(command) = obj
        .get("command")
        .filter(|c| stdio && c.is_string())
        .cloned()
    else {
        return false;
    };
    let mut args = vec![
        json!(relay::RELAY_ARG),
        json!(capture),
        json!("--"),
        command,
    ];
    if let Some(Value::Array(rest)) = obj.get("args") {
        args.extend(rest.iter().cloned());
    }
    obj.insert("command".into(), json!(exe));
    obj.insert("args".into(), Value::Array(args));
    true
}

/// A live server's `command` and `args` that name existing files relative to
/// the config's directory become absolute; their directories become readable.
fn absolutise(entry: &mut Value, base: &Path, reads: &mut Vec<PathBuf>) {
    let mut fix = |v: &mut Value| {
        let Some(s) = v.as_str() else { return };
        let p = Path::new(s);
        let full = if p.is_absolute() {
            p.to_owned()
        } else {
            base.join(p)
        };
        if !(s.contains('/') && full.is_file()) {
            return;
        }
        // The real path: the sandbox binds back only real paths under a
        // hidden `/tmp`, so a `sessions/../skills` detour would not resolve.
        let full = std::fs::canonicalize(&full).unwrap_or(full);
        if let Some(dir) = full.parent()
            && !reads.iter().any(|r| r == dir)
        {
            reads.push(dir.to_owned());
        }
        *v = Value::String(full.display().to_string());
    };
    if let Some(c) = entry.get_mut("command") {
        fix(c);
    }
    if let Some(Value::Array(args)) = entry.get_mut("args") {
        args.iter_mut().for_each(&mut fix);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a rerun an HTTP server is frozen behind a loopback front that
    /// answers from the tape (its credential headers dropped), an SDK one is
    /// left to the host; recording, the HTTP server's front forwards to the
    /// real URL and the agent's entry keeps its headers; a legacy SSE server
    /// is refused when live.
    #[test]
    fn http_servers_get_a_loopback_front_and_sse_ones_are_refused_live() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("mcp.json");
        let servers = json!({"mcpServers": {
            "tickets": {"type": "http", "url": "https://tickets.example/v1/mcp",
                "headers": {"Authorization": "Bearer t0ken"}},
            "calc": {"type": "sdk", "command": "python3", "args": ["calc.py"]},
        }});
        std::fs::write(&config, servers.to_string()).unwrap();
        let written = |p: &Prepared| -> Value {
            serde_json::from_str(&std::fs::read_to_string(&p.config).unwrap()).unwrap()
        };
        let freeze = Freeze::default();
        let prepared = prepare(Some(&config), &[], Some(&freeze), dir.path())
            .unwrap()
            .unwrap();
        assert_eq!(prepared.frozen, ["calc", "tickets"]);
        assert_eq!(prepared.sdk["calc"], sdk::Hosted::Frozen);
        let mode = std::fs::metadata(&prepared.config).unwrap();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
            0o600
        );
        let port = prepared.http["tickets"].port();
        assert_eq!(prepared.loopback_ports(), [port]);
        let tickets = &written(&prepared)["mcpServers"]["tickets"];
        let local = prepared.http["tickets"].agent_url();
        assert!(local.starts_with(&format!("http://127.0.0.1:{port}/")) && local.ends_with("/mcp"));
        assert_eq!(tickets, &json!({"type": "http", "url": local}));
        assert!(written(&prepared)["mcpServers"].get("calc").is_none());

        let prepared = prepare(Some(&config), &[], None, dir.path())
            .unwrap()
            .unwrap();
        assert!(matches!(prepared.sdk["calc"], sdk::Hosted::Live(_)));
        assert!(prepared.captures.contains_key("tickets"));
        let tickets = &written(&prepared)["mcpServers"]["tickets"];
        assert_eq!(tickets["headers"]["Authorization"], "Bearer t0ken");
        assert!(
            tickets["url"]
                .as_str()
                .unwrap()
                .starts_with("http://127.0.0.1:")
        );

        let sse = json!({"mcpServers": {"feed": {"type": "sse", "url": "https://f.example/sse"}}});
        std::fs::write(&config, sse.to_string()).unwrap();
        let err = prepare(Some(&config), &[], None, dir.path()).unwrap_err();
        assert!(
            err.contains("MCP server `feed`") && err.contains("\"type\": \"http\""),
            "{err}"
        );
        let frozen = prepare(Some(&config), &[], Some(&freeze), dir.path())
            .unwrap()
            .unwrap();
        assert_eq!(frozen.frozen, ["feed"]);
    }

    /// A rerun takes a live HTTP server's target only from the operator
    /// (`--mcp-live NAME=URL`), never from the session's `url`; recording
    /// expands `${VAR}` in it, and the agent's config holds the front's
    /// secret URL, never the expanded one.
    #[test]
    fn a_live_http_target_comes_from_the_operator_and_never_reaches_the_agent() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("mcp.json");
        let servers = json!({"mcpServers": {
            "tickets": {"type": "http", "url": "https://tickets.example/mcp?key=${HOME}"}}});
        std::fs::write(&config, servers.to_string()).unwrap();
        let home = std::env::var("HOME").unwrap_or_default();
        let written = |p: &Prepared| std::fs::read_to_string(&p.config).unwrap();

        let freeze = Freeze::new(Tape::default(), &["tickets".to_owned()]);
        let err = prepare(Some(&config), &[], Some(&freeze), dir.path()).unwrap_err();
        assert!(err.contains("--mcp-live tickets=https://"), "{err}");

        let given = ["tickets=http://127.0.0.1:9/mcp".to_owned()];
        let freeze = Freeze::new(Tape::default(), &given);
        assert_eq!(freeze.live, ["tickets"]);
        let prepared = prepare(Some(&config), &[], Some(&freeze), dir.path())
            .unwrap()
            .unwrap();
        assert!(prepared.frozen.is_empty());
        let url = prepared.http["tickets"].agent_url();
        assert!(written(&prepared).contains(&url));

        let recorded = prepare(Some(&config), &[], None, dir.path())
            .unwrap()
            .unwrap();
        let text = written(&recorded);
        assert!(!home.is_empty() && !text.contains(&home), "{text}");
        assert!(!text.contains("tickets.example"), "{text}");
    }
}
