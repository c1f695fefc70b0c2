//! MCP servers over streamable HTTP (`"type": "http"`): a loopback front
//! (`127.0.0.1`, an ephemeral port) reel runs in the server's place for the
//! length of a run. The agent's config points the server's `url` at the
//! front, which either forwards each request to the real URL
//! ([`Backend::Forward`]: recording, `--mcp-live`) or answers it from the
//! tape ([`Backend::Frozen`]: a rerun's default), and appends every JSON-RPC
//! message that passes to the server's capture file, as the stdio relay does
//! — one traffic shape for both transports. The sandbox lets the agent reach
//! the fronts' ports and no other loopback port.
//!
//! Only the run's agent is served: each front has a per-run secret, the
//! first segment of the one URL the agent's config holds
//! (`http://127.0.0.1:PORT/SECRET/mcp`); any other request (another local
//! user, another path) gets `403` and is neither forwarded nor captured. A
//! forwarding front sends every request to the real server's endpoint URL
//! and nowhere else on that host.
//!
//! Only bodies are captured, never headers: a request's `Authorization` (or
//! any credential header the config gives) is forwarded and written nowhere.
//! A response is `application/json` or an SSE stream (`text/event-stream`),
//! each event's `data:` a message; `Mcp-Session-Id` passes both ways.

use std::io::{BufRead, BufReader, Read, Write};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tiny_http::{Header, Method, Request, Response};
use ureq::http::Uri;

use super::frozen::Responder;
use super::traffic::{Capture, Side};

/// Request headers a proxy never forwards: hop-by-hop ones, the length the
/// client computes again, and `Accept-Encoding` (a compressed stream could
/// not be read for the capture).
const NOT_FORWARDED: [&str; 9] = [
    "host",
    "connection",
    "content-length",
    "transfer-encoding",
    "keep-alive",
    "te",
    "trailer",
    "upgrade",
    "accept-encoding",
];

/// Where a front's answers come from.
pub enum Backend {
    /// The real server.
    Forward(Upstream),
    /// The recording.
    Frozen(Box<Mutex<Responder>>),
}

/// The real server behind a forwarding front.
pub struct Upstream {
    /// `scheme://authority` of the real URL (named in errors).
    origin: String,
    /// The real endpoint URL every request goes to.
    url: String,
    agent: ureq::Agent,
}

impl Upstream {
    /// The real server at `url` (an `http`/`https` URL).
    pub fn new(url: &str) -> Result<Upstream, String> {
        // The errors never quote `url`: expanded, it may hold a credential.
        let uri: Uri = url.parse().map_err(|e| format!("is not a URL: {e}"))?;
        let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
            return Err("is not an absolute http(s) URL".into());
        };
        let config = ureq::Agent::config_builder()
            // The agent judges the status (a 401 starts its OAuth flow, a
            // 404 ends a session), so every answer passes through as is.
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_connect(Some(std::time::Duration::from_secs(30)))
            .build();
        Ok(Upstream {
            origin: format!("{scheme}://{authority}"),
            url: url.to_owned(),
            agent: config.into(),
        })
    }
}

/// A config's `url` with `${VAR}` and `${VAR:-default}` expanded from the
/// environment, as the agent expands it (an unset variable without a
/// default is left as written, so the error names it). Only `record` calls
/// it: the operator's own scenario, run in the operator's environment. A
/// rerun never expands anything (its live targets come from the operator:
/// `--mcp-live NAME=URL`), and the expanded URL never reaches the agent's
/// config or the cassette (the agent is given the front's URL).
pub fn expand_env(url: &str) -> String {
    static VAR: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}").expect("a valid regex")
    });
    VAR.replace_all(url, |c: &regex::Captures<'_>| {
        match (std::env::var(&c[1]), c.get(2)) {
            (Ok(v), _) => v,
            (Err(_), Some(default)) => default.as_str().to_owned(),
            (Err(_), None) => c[0].to_owned(),
        }
    })
    .into_owned()
}

/// A running front; stops when dropped.
pub struct Front {
    http: Arc<tiny_http::Server>,
    port: u16,
    /// The one request path served: `/SECRET/mcp`.
    path: Arc<str>,
}

/// The request path a front serves: a per-front secret (128 bits from the
/// kernel's random source) and `/mcp`.
fn secret_path() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    // getrandom(2) directly: libc is already a dependency, and 16 bytes do
    // not justify a crate.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if n != bytes.len() as isize {
        return Err(std::io::Error::last_os_error());
    }
    Ok(format!("/{}/mcp", hex::encode(bytes)))
}

/// Byte equality that takes as long whatever the first difference (the
/// secret cannot be guessed a byte at a time from response times).
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl std::fmt::Debug for Front {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Front(127.0.0.1:{})", self.port)
    }
}

impl Front {
    /// Listens on an ephemeral loopback port and serves each request on a
    /// thread of its own (an SSE stream stays open for the session).
    pub fn start(backend: Backend, capture: Capture) -> std::io::Result<Front> {
        let http = tiny_http::Server::http("127.0.0.1:0").map_err(std::io::Error::other)?;
        let port = http
            .server_addr()
            .to_ip()
            .map(|a| a.port())
            .ok_or_else(|| std::io::Error::other("the front has no IP address"))?;
        let http = Arc::new(http);
        let path: Arc<str> = secret_path()?.into();
        let shared = Arc::new((backend, capture, Arc::clone(&path)));
        let server = Arc::clone(&http);
        std::thread::Builder::new()
            .name(format!("reel-mcp-front-{port}"))
            .spawn(move || {
                for request in server.incoming_requests() {
                    if !same_secret(request.url().as_bytes(), shared.2.as_bytes()) {
                        let _ = request.respond(Response::empty(403));
                        continue;
                    }
                    let shared = Arc::clone(&shared);
                    let _ = std::thread::Builder::new()
                        .spawn(move || handle(request, &shared.0, &shared.1));
                }
            })?;
        Ok(Front { http, port, path })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL the agent is given: the front with its secret path (nothing
    /// of the real URL, which may hold a credential).
    pub fn agent_url(&self) -> String {
        format!("http://127.0.0.1:{}{}", self.port, self.path)
    }
}

impl Drop for Front {
    fn drop(&mut self) {
        self.http.unblock();
    }
}

fn handle(mut request: Request, backend: &Backend, log: &Capture) {
    let mut body = Vec::new();
    if request.as_reader().read_to_end(&mut body).is_err() {
        let _ = request.respond(Response::empty(400));
        return;
    }
    log_body(log, Side::Client, &body);
    let _ = match backend {
        Backend::Forward(up) => forward(request, body, up, log),
        Backend::Frozen(responder) => answer_frozen(request, &body, responder, log),
    };
}

/// Appends a body's JSON-RPC message (or batch of them) to the capture.
fn log_body(log: &Capture, side: Side, body: &[u8]) {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Array(batch)) => {
            for m in batch {
                log.log(side, m.to_string().as_bytes());
            }
        }
        Ok(_) => log.log(side, body),
        Err(_) => {}
    }
}

fn forward(request: Request, body: Vec<u8>, up: &Upstream, log: &Capture) -> std::io::Result<()> {
    let mut out = ureq::http::Request::builder()
        .method(request.method().as_str())
        .uri(up.url.as_str());
    for h in request.headers() {
        let name = h.field.as_str().as_str();
        if !NOT_FORWARDED.iter().any(|n| name.eq_ignore_ascii_case(n)) {
            out = out.header(name, h.value.as_str());
        }
    }
    let answer = out
        .body(body)
        .map_err(|e| e.to_string())
        .and_then(|r| up.agent.run(r).map_err(|e| e.to_string()));
    let answer = match answer {
        Ok(a) => a,
        Err(e) => {
            let text = format!("reel's MCP proxy could not reach {}: {e}", up.origin);
            return request.respond(Response::from_string(text).with_status_code(502));
        }
    };
    let status = answer.status();
    let headers: Vec<(String, String)> = answer
        .headers()
        .iter()
        .filter(|(n, _)| !NOT_FORWARDED.contains(&n.as_str()))
        .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect();
    let is_stream = headers
        .iter()
        .any(|(n, v)| n == "content-type" && v.starts_with("text/event-stream"));
    let reader = answer.into_body().into_reader();
    if is_stream {
        return stream(request, status, &headers, reader, log);
    }
    let mut data = Vec::new();
    BufReader::new(reader).read_to_end(&mut data)?;
    log_body(log, Side::Server, &data);
    let mut response = Response::from_data(data).with_status_code(status.as_u16());
    for (n, v) in &headers {
        if let Ok(h) = Header::from_bytes(n.as_bytes(), v.as_bytes()) {
            response.add_header(h);
        }
    }
    request.respond(response)
}

/// Passes an SSE answer on event by event, capturing each event's message.
/// Written through the raw connection: tiny_http's chunked responses are
/// buffered 8 KiB at a time, which would hold a server's events back until
/// the stream ends; `chunked_transfer` (tiny_http's own encoder) flushes
/// each write instead.
fn stream(
    request: Request,
    status: ureq::http::StatusCode,
    headers: &[(String, String)],
    reader: impl Read,
    log: &Capture,
) -> std::io::Result<()> {
    let mut raw = request.into_writer();
    let reason = status.canonical_reason().unwrap_or("");
    write!(raw, "HTTP/1.1 {} {reason}\r\n", status.as_u16())?;
    for (n, v) in headers {
        write!(raw, "{n}: {v}\r\n")?;
    }
    raw.write_all(b"Transfer-Encoding: chunked\r\n\r\n")?;
    raw.flush()?;
    let mut out = chunked_transfer::Encoder::with_flush_after_write(&mut raw);
    let mut events = SseEvents::default();
    let mut from = BufReader::new(reader);
    let mut line = Vec::new();
    loop {
        line.clear();
        if from.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        if let Some(data) = events.feed(&line) {
            log.log(Side::Server, data.as_bytes());
        }
        out.write_all(&line)?;
    }
    // The encoder writes the last chunk when dropped, and tiny_http's
    // connection buffers it until flushed.
    drop(out);
    raw.flush()
}

/// SSE framing (the WHATWG event-stream format, as much as MCP uses): an
/// event's `data:` lines joined by newlines, dispatched at a blank line.
#[derive(Default)]
struct SseEvents {
    data: Vec<String>,
}

impl SseEvents {
    /// Feeds one line; an event's data when the line ends one.
    fn feed(&mut self, line: &[u8]) -> Option<String> {
        let line = String::from_utf8_lossy(line);
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            let data = self.data.join("\n");
            self.data.clear();
            return (!data.is_empty()).then_some(data);
        }
        if let Some(rest) = line.strip_prefix("data") {
            if let Some(value) = rest.strip_prefix(':') {
                self.data
                    .push(value.strip_prefix(' ').unwrap_or(value).to_owned());
            } else if rest.is_empty() {
                self.data.push(String::new());
            }
        }
        None
    }
}

/// The frozen server over HTTP: a POST's message (or batch) answered by the
/// [`Responder`] as `application/json`, `202 Accepted` for notifications
/// alone; no server-initiated stream (`GET` is 405, as the transport allows).
fn answer_frozen(
    request: Request,
    body: &[u8],
    responder: &Mutex<Responder>,
    log: &Capture,
) -> std::io::Result<()> {
    match request.method() {
        Method::Post => {}
        Method::Delete => return request.respond(Response::empty(200)),
        _ => return request.respond(Response::empty(405)),
    }
    let Ok(message) = serde_json::from_slice::<Value>(body) else {
        let error = json!({"jsonrpc": "2.0", "id": null,
            "error": {"code": -32700, "message": "reel's frozen MCP server: not JSON"}});
        return request.respond(json_response(400, &error));
    };
    let batch = message.is_array();
    let messages = match message {
        Value::Array(items) => items,
        one => vec![one],
    };
    let replies: Vec<Value> = {
        let Ok(mut responder) = responder.lock() else {
            return request.respond(Response::empty(500));
        };
        messages.iter().filter_map(|m| responder.reply(m)).collect()
    };
    for r in &replies {
        log.log(Side::Server, r.to_string().as_bytes());
    }
    match (replies.len(), batch) {
        (0, _) => request.respond(Response::empty(202)),
        (_, true) => request.respond(json_response(200, &Value::Array(replies))),
        (_, false) => request.respond(json_response(200, &replies[0])),
    }
}

fn json_response(status: u16, body: &Value) -> Response<std::io::Cursor<Vec<u8>>> {
    let content_type =
        Header::from_bytes(&b"Content-Type"[..], &b"application/json"[..]).expect("a valid header");
    Response::from_data(body.to_string().into_bytes())
        .with_status_code(status)
        .with_header(content_type)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_join_data_lines_and_skip_comments_and_other_fields() {
        let mut events = SseEvents::default();
        let text = ": keep-alive\n\nevent: message\nid: 7\ndata: {\"a\":\ndata:1}\r\n\r\ndata\n\n";
        let got: Vec<String> = text
            .split_inclusive('\n')
            .filter_map(|l| events.feed(l.as_bytes()))
            .collect();
        assert_eq!(got, ["{\"a\":\n1}"]);
    }

    #[test]
    fn the_agent_gets_the_front_with_the_real_path() {
        let dir = tempfile::tempdir().unwrap();
        let capture = Capture::open(&dir.path().join("c.jsonl")).unwrap();
        let up = Upstream::new("https://tickets.example:8443/v1/mcp?key=s3cret").unwrap();
        assert_eq!(up.origin, "https://tickets.example:8443");
        let front = Front::start(Backend::Forward(up), capture).unwrap();
        let url = front.agent_url();
        let prefix = format!("http://127.0.0.1:{}/", front.port());
        let secret = url
            .strip_prefix(&prefix)
            .unwrap()
            .strip_suffix("/mcp")
            .unwrap();
        assert_eq!(secret.len(), 32, "{url}");
        assert!(!url.contains("s3cret") && !url.contains("v1"), "{url}");
        assert!(Upstream::new("/relative").is_err());
    }

    /// Only the run's agent is served: a request without the front's secret
    /// path (another local user, a guessed path) is 403, and is neither
    /// forwarded nor captured.
    #[test]
    fn a_request_without_the_secret_is_refused_and_not_forwarded() {
        let upstream = tiny_http::Server::http("127.0.0.1:0").unwrap();
        let port = upstream.server_addr().to_ip().unwrap().port();
        let dir = tempfile::tempdir().unwrap();
        let capture_path = dir.path().join("c.jsonl");
        let capture = Capture::open(&capture_path).unwrap();
        let up = Upstream::new(&format!("http://127.0.0.1:{port}/mcp")).unwrap();
        let front = Front::start(Backend::Forward(up), capture).unwrap();
        let base = format!("http://127.0.0.1:{}", front.port());
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .new_agent();
        let good = front.agent_url();
        let wrong_secret = format!("{base}/{}/mcp", "0".repeat(32));
        let longer = format!("{good}/x");
        for url in [
            format!("{base}/mcp"),
            format!("{base}/"),
            wrong_secret,
            longer,
        ] {
            let answer = agent
                .post(&url)
                .send(r#"{"jsonrpc":"2.0","id":1}"#)
                .unwrap();
            assert_eq!(answer.status().as_u16(), 403, "{url}");
        }
        let got = upstream
            .recv_timeout(std::time::Duration::from_millis(200))
            .unwrap();
        assert!(got.is_none(), "a refused request reached the server");
        assert_eq!(std::fs::read_to_string(&capture_path).unwrap(), "");
    }

    /// An upstream answering one POST with an SSE stream, forwarded by a
    /// front: the client reads the stream as sent, the capture holds the
    /// event's message and the request.
    #[test]
    fn an_sse_answer_passes_event_by_event_and_is_captured() {
        let upstream = tiny_http::Server::http("127.0.0.1:0").unwrap();
        let port = upstream.server_addr().to_ip().unwrap().port();
        let sse = ": hi\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";
        std::thread::spawn(move || {
            let request = upstream.recv().unwrap();
            let ct = Header::from_bytes(&b"Content-Type"[..], &b"text/event-stream"[..]).unwrap();
            let sid = Header::from_bytes(&b"Mcp-Session-Id"[..], &b"s-1"[..]).unwrap();
            let response = Response::from_string(sse).with_header(ct).with_header(sid);
            request.respond(response).unwrap();
        });
        let dir = tempfile::tempdir().unwrap();
        let capture_path = dir.path().join("c.jsonl");
        let capture = Capture::open(&capture_path).unwrap();
        let up = Upstream::new(&format!("http://127.0.0.1:{port}/mcp")).unwrap();
        let front = Front::start(Backend::Forward(up), capture).unwrap();
        let answer = ureq::post(front.agent_url())
            .header("Content-Type", "application/json")
            .send(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
            .unwrap();
        assert_eq!(answer.headers()["mcp-session-id"], "s-1");
        let body = answer.into_body().read_to_string().unwrap();
        assert_eq!(body, sse);
        let captured = std::fs::read_to_string(&capture_path).unwrap();
        let lines: Vec<&str> = captured.lines().collect();
        assert_eq!(lines.len(), 2, "{captured}");
        assert!(lines[1].contains(r#""from":"server""#), "{captured}");
    }

    #[test]
    fn a_recording_url_expands_variables_with_defaults() {
        let home = std::env::var("HOME").unwrap_or_default();
        assert_eq!(expand_env("x${HOME}y"), format!("x{home}y"));
        assert_eq!(
            expand_env("http://${REEL_NO_SUCH_VAR:-h:1}/mcp"),
            "http://h:1/mcp"
        );
        assert_eq!(expand_env("${REEL_NO_SUCH_VAR}"), "${REEL_NO_SUCH_VAR}");
    }
}
