//! The HTTP side of the scripted model: a `tiny_http` server on 127.0.0.1
//! with a few worker threads, routing Messages API requests to the script.
//!
//! Routes: `POST /v1/messages` (the query string, e.g. `?beta=true`, is
//! ignored) answers the due turn; `POST /v1/messages/count_tokens` and
//! `GET /v1/models[/<id>]` answer without touching the script; a request
//! without tools and without the agent's environment section (a title or
//! summary side call) gets a short fixed text so it never consumes or
//! mismatches a scripted turn. Everything else gets an Anthropic-style JSON
//! error. A `CONNECT` or an absolute-form (proxied)
//! request means the agent tried to leave the machine through the proxy
//! tripwire: it is refused and recorded as an escape.
//!
//! Problems (escapes, broken expectations, running out of turns, requests the
//! API would reject) are answered with an HTTP error the agent surfaces and
//! kept for [`Server::errors`]; the server never hangs a request.
//!
//! Not here: no TLS, no authentication, no state between requests beyond the
//! problem list and the log — turn choice is stateless (see `conversation`).

use std::fs::File;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use serde_json::{Value, json};
use tiny_http::{Header, Method, Request, Response};

use super::conversation::Conversation;
use super::reply::{self, Reply};
use super::route::{self, ConversationId};
use super::script::Script;

/// Worker threads answering requests; agents send one request at a time per
/// conversation, so a few suffice for parallel sub-agents and retries.
const WORKERS: usize = 4;

/// Largest request body read (the agent sends ~100 KB; images can be large).
const MAX_BODY: u64 = 64 * 1024 * 1024;

/// Status for a script problem (expectation failed, out of turns). Claude Code
/// retries 5xx/429/529 and several 4xx (400, 422) with degraded requests;
/// 417 is answered once and shown verbatim as `API Error: 417 <message>`.
pub const SCRIPT_PROBLEM_STATUS: u16 = 417;

/// Text of the reply to a side request (title generation and the like).
pub const SIDE_REPLY_TEXT: &str = "reel scripted session";

/// How reel's judge opens its one user message: a request that offers no
/// tools and opens with this is answered from the script's `judge:` replies.
pub const JUDGE_OPENING: &str = "reel judge: grade each numbered claim";

/// How to serve.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// Port on 127.0.0.1; 0 picks a free one (read it back with [`Server::url`]).
    pub port: u16,
    /// Append one JSON line per request to this file.
    pub log: Option<PathBuf>,
    /// `{{name}}` → value replacements in tool inputs besides `{{cwd}}`
    /// (e.g. `config`, `home`, `run` for a script taken from a recording).
    pub vars: Vec<(String, String)>,
    /// Forward to the live model from a main-conversation turn on
    /// (`rerun --live-model`); `None`: everything is scripted.
    pub upstream: Option<super::Upstream>,
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("listen on 127.0.0.1:{port}: {message}")]
    Bind { port: u16, message: String },
    #[error("open request log `{}`: {source}", path.display())]
    Log {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl From<ServeError> for crate::Error {
    fn from(e: ServeError) -> Self {
        let hint = match &e {
            ServeError::Bind { .. } => "pick another `--port`, or `--port 0` for any free port",
            ServeError::Log { .. } => "check that the `--log` directory exists and is writable",
        };
        crate::Error::usage(e.to_string()).with_hint(hint)
    }
}

/// What kind of problem a request revealed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProblemKind {
    /// A turn's `expect` check failed: the agent did not see what the script assumed.
    ExpectationFailed,
    /// The agent asked for a turn beyond the end of the script.
    OutOfTurns,
    /// A `CONNECT` or proxied request: traffic meant for another host.
    Escape,
    /// A request the scripted model cannot answer (unknown path or method, bad JSON).
    UnexpectedRequest,
    /// An agent turn request that belongs to none of the script's
    /// conversations; it got a neutral text answer.
    UnknownConversation,
}

impl ProblemKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProblemKind::ExpectationFailed => "expectation_failed",
            ProblemKind::OutOfTurns => "out_of_turns",
            ProblemKind::Escape => "escape",
            ProblemKind::UnexpectedRequest => "unexpected_request",
            ProblemKind::UnknownConversation => "unknown_conversation",
        }
    }
}

/// One problem seen while serving.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub kind: ProblemKind,
    /// The turn index the request asked for, when it was a turn request.
    pub turn: Option<usize>,
    /// The conversation the request was routed to (`main`,
    /// `subagent:<id>`), when it was a turn request of a known one.
    pub conversation: Option<String>,
    pub method: String,
    /// The request target as sent (path and query, or `host:port` for CONNECT).
    pub target: String,
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} ({})",
            self.method,
            self.target,
            self.kind.as_str()
        )?;
        if let Some(c) = self.conversation.as_deref().filter(|c| *c != "main") {
            write!(f, " {c}")?;
        }
        // Turns are counted as a person counts them (1-based); the JSON
        // `turn` fields stay 0-based indices.
        if let Some(turn) = self.turn {
            write!(f, " turn {}", turn + 1)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// A running scripted model. Stops on [`Server::shutdown`] or drop.
pub struct Server {
    shared: Arc<Shared>,
    http: Arc<tiny_http::Server>,
    workers: Vec<JoinHandle<()>>,
    addr: SocketAddr,
}

struct Shared {
    script: Script,
    stopping: AtomicBool,
    seq: AtomicU64,
    /// One past the highest turn index answered.
    turns_answered: AtomicUsize,
    /// Per turn of the main conversation: how many scripted 529s were already sent.
    overloaded_sent: Vec<AtomicU32>,
    router: route::Router,
    vars: Vec<(String, String)>,
    /// Every (conversation, turn) answered with its turn.
    served: Mutex<std::collections::BTreeSet<(ConversationId, usize)>>,
    /// Judge requests answered so far (the next `judge:` reply's index).
    judged: AtomicUsize,
    problems: Mutex<Vec<Problem>>,
    log: Option<Mutex<File>>,
    upstream: Option<super::Upstream>,
    /// Set by the first request answered live: every later one is too.
    live: AtomicBool,
    /// Requests answered by the live model.
    forwarded: AtomicUsize,
}

impl Server {
    /// Binds 127.0.0.1:`opts.port` and starts answering from `script`.
    pub fn start(script: Script, opts: ServeOptions) -> Result<Server, ServeError> {
        let log = match &opts.log {
            Some(path) => Some(Mutex::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|source| ServeError::Log {
                        path: path.clone(),
                        source,
                    })?,
            )),
            None => None,
        };
        let http =
            tiny_http::Server::http(("127.0.0.1", opts.port)).map_err(|e| ServeError::Bind {
                port: opts.port,
                message: e.to_string(),
            })?;
        let addr = http.server_addr().to_ip().ok_or_else(|| ServeError::Bind {
            port: opts.port,
            message: "bound to a non-IP address".into(),
        })?;
        let http = Arc::new(http);
        let overloaded_sent = script.turns.iter().map(|_| AtomicU32::new(0)).collect();
        let shared = Arc::new(Shared {
            script,
            overloaded_sent,
            stopping: AtomicBool::new(false),
            seq: AtomicU64::new(0),
            turns_answered: AtomicUsize::new(0),
            problems: Mutex::new(Vec::new()),
            log,
            router: route::Router::default(),
            vars: opts.vars.clone(),
            served: Mutex::new(Default::default()),
            judged: AtomicUsize::new(0),
            upstream: opts.upstream.clone(),
            live: AtomicBool::new(false),
            forwarded: AtomicUsize::new(0),
        });
        let workers = (0..WORKERS)
            .map(|i| {
                let http = Arc::clone(&http);
                let shared = Arc::clone(&shared);
                std::thread::Builder::new()
                    .name(format!("reel-model-{i}"))
                    .spawn(move || worker(&http, &shared))
            })
            .collect::<std::io::Result<Vec<_>>>()
            .map_err(|e| ServeError::Bind {
                port: opts.port,
                message: format!("start worker threads: {e}"),
            })?;
        Ok(Server {
            shared,
            http,
            workers,
            addr,
        })
    }

    /// Requests the live model answered (`ServeOptions::upstream`).
    pub fn forwarded(&self) -> usize {
        self.shared.forwarded.load(Ordering::SeqCst)
    }

    /// `http://127.0.0.1:<port>`: the agent's `ANTHROPIC_BASE_URL`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Problems seen so far, in arrival order.
    pub fn errors(&self) -> Vec<Problem> {
        self.shared
            .problems
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// One past the highest turn index answered; equals the script's turn
    /// count when the agent used every turn.
    pub fn turns_answered(&self) -> usize {
        self.shared.turns_answered.load(Ordering::SeqCst)
    }

    /// Every (conversation, turn) that was answered with its scripted turn,
    /// in order.
    pub fn served(&self) -> Vec<(ConversationId, usize)> {
        self.shared
            .served
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .copied()
            .collect()
    }

    /// The script being served.
    pub fn script(&self) -> &Script {
        &self.shared.script
    }

    /// Stops accepting, lets in-flight requests finish, joins the workers, and
    /// returns the problems seen.
    pub fn shutdown(mut self) -> Vec<Problem> {
        self.stop();
        self.errors()
    }

    fn stop(&mut self) {
        if self.workers.is_empty() {
            return;
        }
        self.shared.stopping.store(true, Ordering::SeqCst);
        for _ in 0..self.workers.len() {
            self.http.unblock();
        }
        for handle in self.workers.drain(..) {
            let _ = handle.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

fn worker(http: &tiny_http::Server, shared: &Shared) {
    loop {
        match http.recv() {
            Ok(request) => handle(request, shared),
            Err(_) if shared.stopping.load(Ordering::SeqCst) => return,
            Err(_) => continue,
        }
    }
}

/// The outcome of one request, before it is written and logged.
struct Answer {
    status: u16,
    content_type: &'static str,
    body: String,
    /// Extra fields for the log line.
    log: serde_json::Map<String, Value>,
    problem: Option<(ProblemKind, Option<usize>, String)>,
    conversation: Option<String>,
    request_id: String,
}

impl Answer {
    fn json(status: u16, body: &Value) -> Answer {
        Answer {
            status,
            content_type: "application/json",
            body: body.to_string(),
            log: serde_json::Map::new(),
            problem: None,
            conversation: None,
            request_id: String::new(),
        }
    }

    fn error(status: u16, kind: &str, message: String) -> Answer {
        Answer::json(status, &reply::error_json(kind, &message))
    }

    fn problem(mut self, kind: ProblemKind, turn: Option<usize>, message: String) -> Answer {
        self.problem = Some((kind, turn, message));
        self
    }

    fn note(mut self, key: &str, value: Value) -> Answer {
        self.log.insert(key.to_string(), value);
        self
    }
}

fn handle(mut request: Request, shared: &Shared) {
    let seq = shared.seq.fetch_add(1, Ordering::SeqCst);
    let method = request.method().as_str().to_string();
    let target = request.url().to_string();
    let path = target.split('?').next().unwrap_or("").to_string();
    let mut answer = if *request.method() == Method::Connect || !target.starts_with('/') {
        let message = format!(
            "reel scripted model: blocked a network escape ({method} {target}); the agent tried to \
             reach another host through the proxy tripwire"
        );
        refused(403, "permission_error", ProblemKind::Escape, message)
    } else {
        route(&mut request, shared, &path)
    };
    if answer.request_id.is_empty() {
        answer.request_id = format!("req_reel_n{seq}");
    }
    let status = answer.status;
    let mut response = Response::from_string(std::mem::take(&mut answer.body))
        .with_status_code(status)
        .with_header(header("Content-Type", answer.content_type))
        .with_header(header("request-id", &answer.request_id));
    if answer.content_type == "text/event-stream" {
        response.add_header(header("Cache-Control", "no-cache"));
    }
    log_exchange(shared, seq, &method, &target, &path, answer);
    // The client may have gone away (timeout, killed agent); nothing to do then.
    let _ = request.respond(response);
}

/// The answer to a request on the loopback API: messages, token counts and
/// the model list; anything else is an unexpected request.
fn route(request: &mut Request, shared: &Shared, path: &str) -> Answer {
    let verb = request.method().clone();
    let method = verb.as_str();
    let headers: Vec<(String, String)> = request
        .headers()
        .iter()
        .map(|h| (h.field.to_string(), h.value.to_string()))
        .collect();
    let mut body = Vec::new();
    if let Err(e) = request.as_reader().take(MAX_BODY).read_to_end(&mut body) {
        return Answer::error(
            400,
            "invalid_request_error",
            format!("read request body: {e}"),
        );
    }
    match (&verb, path) {
        (Method::Post, "/v1/messages") => messages(&body, &headers, shared),
        (Method::Post, "/v1/messages/count_tokens") => {
            Answer::json(200, &json!({"input_tokens": (body.len() / 4).max(1)}))
                .note("kind", json!("count_tokens"))
        }
        (Method::Get, "/v1/models") => {
            let model = model_entry(shared.script.model.as_deref().unwrap_or("claude-opus-5-5"));
            let id = model["id"].clone();
            Answer::json(
                200,
                &json!({"data": [model], "has_more": false, "first_id": id, "last_id": id}),
            )
            .note("kind", json!("models"))
        }
        (Method::Get, p) if p.starts_with("/v1/models/") => {
            Answer::json(200, &model_entry(&p["/v1/models/".len()..])).note("kind", json!("models"))
        }
        (_, "/v1/messages" | "/v1/messages/count_tokens" | "/v1/models") => refused(
            405,
            "invalid_request_error",
            ProblemKind::UnexpectedRequest,
            format!("reel scripted model: method {method} is not allowed on {path}"),
        ),
        (Method::Post | Method::Get, p)
            if p.starts_with("/v1/messages") || p.starts_with("/v1/models") =>
        {
            refused(
                404,
                "not_found_error",
                ProblemKind::UnexpectedRequest,
                format!("reel scripted model: no route for {method} {path}"),
            )
        }
        _ => refused(
            404,
            "not_found_error",
            ProblemKind::UnexpectedRequest,
            format!(
                "reel scripted model: unknown endpoint {method} {path} (it serves POST \
                    /v1/messages)"
            ),
        ),
    }
}

/// An API error that is also a problem of the run, with the same message.
fn refused(status: u16, error_type: &str, kind: ProblemKind, message: String) -> Answer {
    Answer::error(status, error_type, message.clone()).problem(kind, None, message)
}

/// One line of the exchange log; a problem is also kept for the run's
/// report.
fn log_exchange(shared: &Shared, seq: u64, method: &str, target: &str, path: &str, answer: Answer) {
    let mut line = serde_json::Map::new();
    line.insert("seq".into(), json!(seq));
    line.insert("method".into(), json!(method));
    line.insert("path".into(), json!(path));
    line.insert("status".into(), json!(answer.status));
    line.extend(answer.log);
    if let Some((kind, turn, message)) = answer.problem {
        line.insert("problem".into(), json!(kind.as_str()));
        line.insert("error".into(), json!(message));
        shared
            .problems
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Problem {
                kind,
                turn,
                conversation: answer.conversation,
                method: method.to_owned(),
                target: target.to_owned(),
                message,
            });
    }
    if let Some(log) = &shared.log {
        let mut file = log.lock().unwrap_or_else(PoisonError::into_inner);
        let mut text = Value::Object(line).to_string();
        text.push('\n');
        // The log is a debugging aid; a failed write must not fail the turn.
        let _ = file.write_all(text.as_bytes());
    }
}

fn header(name: &str, value: &str) -> Header {
    // Invariant: names and values here are ASCII without CR/LF.
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("static header is valid")
}

fn model_entry(id: &str) -> Value {
    json!({"type": "model", "id": id, "display_name": id, "created_at": "2025-01-01T00:00:00Z"})
}

/// `POST /v1/messages`.
fn messages(body: &[u8], headers: &[(String, String)], shared: &Shared) -> Answer {
    let conversation = match Conversation::parse(body) {
        Ok(c) => c,
        Err(e) => {
            let message = format!("reel scripted model: {e}");
            return Answer::error(400, "invalid_request_error", message.clone()).problem(
                ProblemKind::UnexpectedRequest,
                None,
                message,
            );
        }
    };
    let script = &shared.script;
    let model = script
        .model
        .clone()
        .unwrap_or_else(|| conversation.model.clone());
    if !conversation.has_tools && conversation.first_user_text.starts_with(JUDGE_OPENING) {
        return request_notes(judge_reply(&conversation, &model, shared), &conversation);
    }
    if conversation.is_side_request() {
        let scripted = script
            .side
            .iter()
            .find(|s| conversation.first_user_text.contains(&s.when_contains));
        let mut answer = match scripted {
            Some(s) => text_reply(&conversation, &model, &s.text),
            None => neutral_reply(&conversation, &model),
        };
        answer.request_id = "req_reel_side".into();
        // The question as asked (another harness's judge prompt): the log
        // lets a test compare it with reel's own.
        let system =
            serde_json::from_slice::<Value>(body).map_or(Value::Null, |mut v| v["system"].take());
        let answer = (answer.note("kind", json!("side")))
            .note("prompt", json!(conversation.first_user_text))
            .note("system", system);
        return request_notes(answer, &conversation);
    }
    let routed = shared.router.route(script, &conversation);
    if goes_live(routed, &conversation, shared)
        && let Some(upstream) = &shared.upstream
    {
        return request_notes(live_reply(upstream, body, headers, shared), &conversation);
    }
    match routed {
        Some(conv_id) => turn(conv_id, &conversation, &model, shared),
        None => unknown_conversation(&conversation, &model, script),
    }
}

/// Whether this request is answered by the live model: once one was, every
/// one is; the first is the main conversation's request for
/// `Upstream::from_main_turn`.
fn goes_live(routed: Option<ConversationId>, c: &Conversation, shared: &Shared) -> bool {
    let Some(upstream) = &shared.upstream else {
        return false;
    };
    if shared.live.load(Ordering::SeqCst) {
        return true;
    }
    let due = routed == Some(ConversationId::Main)
        && route::due_turn(&shared.script, ConversationId::Main, c).0 >= upstream.from_main_turn;
    if due {
        shared.live.store(true, Ordering::SeqCst);
    }
    due
}

/// The live model's answer, passed on as it came (an error status too: the
/// agent retries or reports it as it would against the API); a transport
/// failure is answered 502 and is a problem of the run.
fn live_reply(
    upstream: &super::Upstream,
    body: &[u8],
    headers: &[(String, String)],
    shared: &Shared,
) -> Answer {
    shared.forwarded.fetch_add(1, Ordering::SeqCst);
    match upstream.forward(body, headers) {
        Ok(f) => {
            let mut answer = Answer::json(200, &Value::Null);
            answer.status = f.status;
            answer.body = f.body;
            if f.event_stream {
                answer.content_type = "text/event-stream";
            }
            answer.request_id = f.request_id.unwrap_or_default();
            answer.note("kind", json!("live"))
        }
        Err(e) => {
            let message = format!("reel live model: {e}");
            Answer::error(502, "api_error", message.clone())
                .problem(ProblemKind::UnexpectedRequest, None, message)
                .note("kind", json!("live"))
        }
    }
}

/// The next of the script's `judge:` replies, in order; a judge request past
/// the last one is refused (HTTP 400) and reported, never answered with a
/// made-up grade.
fn judge_reply(conversation: &Conversation, model: &str, shared: &Shared) -> Answer {
    let script = &shared.script;
    let index = shared.judged.fetch_add(1, Ordering::SeqCst);
    let Some(turn) = script.judge.get(index) else {
        let message = format!(
            "reel scripted model: judge request {} but script `{}` has {} `judge:` repl(ies); \
             add one (`judge: [{{blocks: [{{text: '{{\"results\": [...]}}'}}]}}]`)",
            index + 1,
            script.origin.display(),
            script.judge.len(),
        );
        return Answer::error(400, "invalid_request_error", message.clone())
            .note("kind", json!("judge"))
            .problem(ProblemKind::OutOfTurns, Some(index), message);
    };
    let turn_model = turn.model.clone().unwrap_or_else(|| model.to_owned());
    let reply = Reply {
        turn_index: index,
        message_id: turn
            .id
            .clone()
            .unwrap_or_else(|| format!("msg_reel_judge_{index}")),
        turn,
        model: &turn_model,
        cwd: None,
        vars: &shared.vars,
    };
    let mut answer = if conversation.stream {
        sse(reply.to_sse())
    } else {
        Answer::json(200, &reply.to_json())
    };
    answer.request_id = format!("req_reel_judge_{index}");
    answer
        .note("kind", json!("judge"))
        .note("turn", json!(index))
}

/// The notes every answer to a messages request carries.
fn request_notes(a: Answer, conversation: &Conversation) -> Answer {
    a.note("model", json!(conversation.model))
        .note("messages", json!(conversation.message_count))
        .note("stream", json!(conversation.stream))
}

/// A neutral text reply (side requests, and requests no conversation owns).
fn neutral_reply(conversation: &Conversation, model: &str) -> Answer {
    text_reply(conversation, model, SIDE_REPLY_TEXT)
}

/// A one-text reply outside every conversation (a side request).
fn text_reply(conversation: &Conversation, model: &str, text: &str) -> Answer {
    if conversation.stream {
        sse(reply::side_reply_sse(model, text))
    } else {
        Answer::json(200, &reply::side_reply_json(model, text))
    }
}

/// A request that belongs to none of the script's conversations: answered
/// with a neutral text, and reported.
fn unknown_conversation(conversation: &Conversation, model: &str, script: &Script) -> Answer {
    let message = format!(
        "reel scripted model: a request ({} message(s), opening {:?}) belongs to none of the \
         conversations of `{}`; answered with a neutral text",
        conversation.message_count,
        excerpt(&conversation.first_user_text),
        script.origin.display(),
    );
    let mut answer = neutral_reply(conversation, model);
    answer.request_id = "req_reel_unknown".into();
    request_notes(
        answer.note("kind", json!("unknown_conversation")),
        conversation,
    )
    .problem(ProblemKind::UnknownConversation, None, message)
}

/// The next turn of conversation `conv_id`: served, or the problem that
/// stops it (no turn left, a failed expectation, a scripted overload).
fn turn(
    conv_id: ConversationId,
    conversation: &Conversation,
    model: &str,
    shared: &Shared,
) -> Answer {
    let script = &shared.script;
    let label = conv_id.label(script);
    let turns = route::turns(script, conv_id);
    let (index, passed_over) = route::due_turn(script, conv_id, conversation);
    let base = |a: Answer| {
        let mut a = request_notes(a, conversation);
        if !passed_over.is_empty() {
            // Recorded while a background sub-agent ran; this agent ran it inline.
            a = a.note("passed_over", json!(passed_over));
        }
        if conv_id != ConversationId::Main {
            a = a.note("conversation", json!(label));
        }
        a.conversation = Some(label.clone());
        a
    };
    let Some(turn) = turns.get(index) else {
        if route::late_background_report(script, conv_id, conversation) {
            // The recording had this sub-agent's result inline and ended;
            // this agent reports it again after the end: acknowledged.
            let answer = neutral_reply(conversation, model);
            return base(answer.note("kind", json!("background_report")));
        }
        return base(out_of_turns(conv_id, &label, index, turns.len(), script));
    };
    let checks = check_expect(&turn.expect, conversation);
    let checks_log: Vec<Value> = checks
        .iter()
        .map(|c| json!({"check": c.name, "ok": c.ok, "detail": c.detail}))
        .collect();
    if checks.iter().any(|c| !c.ok) {
        return base(expectation_failed(&checks, checks_log, index, script));
    }
    if conv_id == ConversationId::Main
        && let Some(answer) = scripted_overload(turn, index, shared)
    {
        return base(answer);
    }
    let mut answer = base(served_turn(
        conv_id,
        turn,
        index,
        conversation,
        model,
        shared,
    ));
    if !checks_log.is_empty() {
        answer = answer.note("expect", Value::Array(checks_log));
    }
    answer
}

fn out_of_turns(
    conv_id: ConversationId,
    label: &str,
    index: usize,
    available: usize,
    script: &Script,
) -> Answer {
    let whose = if conv_id == ConversationId::Main {
        String::new()
    } else {
        format!(" ({label})")
    };
    let message = format!(
        "reel scripted model: the agent asked for turn {}{whose} but script `{}` has only \
            {available} turn(s); the request already holds {index} assistant message(s). Add a \
            turn, or end the last one with a text-only block so the agent stops.",
        index + 1,
        script.origin.display(),
    );
    turn_problem(ProblemKind::OutOfTurns, index, message)
}

fn expectation_failed(
    checks: &[Check],
    checks_log: Vec<Value>,
    index: usize,
    script: &Script,
) -> Answer {
    let failed: Vec<&str> = checks
        .iter()
        .filter(|c| !c.ok)
        .map(|c| c.detail.as_str())
        .collect();
    let message = format!(
        "reel scripted model: turn {} of script `{}`: expectation failed: {}",
        index + 1,
        script.origin.display(),
        failed.join("; ")
    );
    turn_problem(ProblemKind::ExpectationFailed, index, message)
        .note("expect", Value::Array(checks_log))
}

/// The error answer to a turn the script cannot serve (no turn left, a
/// failed expectation), reported as a script problem of turn `index`.
fn turn_problem(kind: ProblemKind, index: usize, message: String) -> Answer {
    Answer::error(
        SCRIPT_PROBLEM_STATUS,
        "invalid_request_error",
        message.clone(),
    )
    .note("kind", json!("turn"))
    .note("turn", json!(index))
    .problem(kind, Some(index), message)
}

/// A 529 while the main conversation's turn has scripted overloads left.
fn scripted_overload(turn: &super::Turn, index: usize, shared: &Shared) -> Option<Answer> {
    if turn.overloaded == 0 {
        return None;
    }
    let before = shared.overloaded_sent[index]
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            (n < turn.overloaded).then_some(n + 1)
        })
        .ok()?;
    let message = format!(
        "Overloaded (scripted by reel: turn {}, attempt {} of {})",
        index + 1,
        before + 1,
        turn.overloaded
    );
    Some(
        Answer::error(529, "overloaded_error", message)
            .note("kind", json!("turn"))
            .note("turn", json!(index))
            .note("overloaded", json!(before + 1)),
    )
}

/// The scripted reply of `turn`, counted as served.
fn served_turn(
    conv_id: ConversationId,
    turn: &super::Turn,
    index: usize,
    conversation: &Conversation,
    model: &str,
    shared: &Shared,
) -> Answer {
    let turn_model = turn.model.clone().unwrap_or_else(|| model.to_owned());
    let reply = Reply {
        turn_index: index,
        message_id: turn.id.clone().unwrap_or_else(|| reply::message_id(index)),
        turn,
        model: &turn_model,
        cwd: conversation.cwd.as_deref(),
        vars: &shared.vars,
    };
    let mut answer = if conversation.stream {
        sse(reply.to_sse())
    } else {
        Answer::json(200, &reply.to_json())
    };
    answer.request_id = format!("req_reel_{index}");
    if conv_id == ConversationId::Main {
        shared.turns_answered.fetch_max(index + 1, Ordering::SeqCst);
    }
    shared
        .served
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert((conv_id, index));
    answer
        .note("kind", json!("turn"))
        .note("turn", json!(index))
}

fn sse(body: String) -> Answer {
    Answer {
        status: 200,
        content_type: "text/event-stream",
        body,
        log: serde_json::Map::new(),
        problem: None,
        conversation: None,
        request_id: String::new(),
    }
}

struct Check {
    name: &'static str,
    ok: bool,
    detail: String,
}

/// Longest excerpt of what the agent saw quoted in a failure message.
const EXCERPT: usize = 300;

fn excerpt(text: &str) -> String {
    if text.len() <= EXCERPT {
        return format!("{text:?}");
    }
    let mut end = EXCERPT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{:?}...", &text[..end])
}

fn check_expect(expect: &super::script::Expect, c: &Conversation) -> Vec<Check> {
    let mut checks = Vec::new();
    if let Some(want) = &expect.last_tool_result_contains {
        let (ok, detail) = match &c.last_tool_result {
            Some((text, _)) if text.contains(want.as_str()) => (true, format!("found {want:?}")),
            Some((text, _)) => (
                false,
                format!(
                    "the last tool_result should contain {want:?} but is {}",
                    excerpt(text)
                ),
            ),
            None => (
                false,
                format!(
                    "the last tool_result should contain {want:?} but the request has no \
                        tool_result"
                ),
            ),
        };
        checks.push(Check {
            name: "last_tool_result_contains",
            ok,
            detail,
        });
    }
    if let Some(want) = expect.last_tool_result_is_error {
        let (ok, detail) = match &c.last_tool_result {
            Some((text, is_error)) if *is_error == want => (true, format!("is_error is {want}")),
            Some((text, is_error)) => (
                false,
                format!(
                    "the last tool_result should have is_error {want} but has {is_error}: {}",
                    excerpt(text)
                ),
            ),
            None => (false, "the request has no tool_result".to_string()),
        };
        checks.push(Check {
            name: "last_tool_result_is_error",
            ok,
            detail,
        });
    }
    if let Some(want) = &expect.last_user_text_contains {
        let text = &c.user_text_since_assistant;
        let ok = text.contains(want.as_str());
        let detail = if ok {
            format!("found {want:?}")
        } else {
            format!(
                "the user text since the last assistant message should contain {want:?} but is {}",
                excerpt(text)
            )
        };
        checks.push(Check {
            name: "last_user_text_contains",
            ok,
            detail,
        });
    }
    if let Some(want) = &expect.history_contains {
        let ok = c.history_text.contains(want.as_str());
        let detail = if ok {
            format!("found {want:?} in the earlier conversation")
        } else {
            format!(
                "the conversation before the last assistant message should contain {want:?} \
                 (an earlier turn's text or tool result) but is {}",
                excerpt(&c.history_text)
            )
        };
        checks.push(Check {
            name: "history_contains",
            ok,
            detail,
        });
    }
    checks
}

#[cfg(test)]
mod tests {
    #[test]
    fn server_can_move_between_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<super::Server>();
        send_sync::<super::Problem>();
    }
}
