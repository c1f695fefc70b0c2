//! One recorded turn over the stream-json control protocol (§1.6–§1.9).
//!
//! Three threads around the main loop: a stdout line reader, a stderr
//! collector and a single stdin writer (so a writer blocked on a full pipe can
//! never stall the timeout). The main loop owns every decision; the writer
//! appends a frame to `controlOut` only after the OS accepted it.

use std::cell::RefCell;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::ExitStatus;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Map, Value, json};

use super::process::{ProcessGroup, SpawnError};
use super::{AgentCommand, INIT_REQUEST_ID, KILL_GRACE, MAX_FRAME_BYTES, TASK_HOOK_ID};
use crate::js::coerce::truthy;
use crate::protocol::{self, Block, Line};
use crate::scenario::answers::{DecideError, Decider, PermissionSource, Unanswered};

/// Longest single stdout line kept (longer lines fail the run).
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// Total stdout bytes kept before the run is stopped as a flood.
const MAX_EVENTS_BYTES: usize = 128 * 1024 * 1024;
/// Stderr bytes kept (the tail wins).
const MAX_STDERR_BYTES: usize = 1024 * 1024;
/// After the leader exits, how long a descendant may keep stdout open.
const ORPHAN_PIPE_GRACE: Duration = Duration::from_millis(500);

/// How one turn is driven.
pub struct DriveOptions<'a> {
    /// The user turn, sent verbatim.
    pub prompt: &'a str,
    pub decider: &'a Decider,
    /// Wall-clock budget; on expiry the group is terminated.
    pub timeout: Duration,
    /// The SDK MCP servers the host runs (declared at `initialize`, fed
    /// every `mcp_message` for them); `None`: none.
    pub sdk_mcp: Option<&'a RefCell<dyn SdkMcp + 'a>>,
    /// Told when the turn ends ([`TurnEnded`]); `None`: nobody.
    pub on_turn_end: Option<&'a dyn TurnEnded>,
}

/// Told at each turn boundary: a turn's `result` arrived with no background
/// task left, and the next user message is not sent until this returns
/// (`record` snapshots the workspace here; `rerun --from-turn` restores it).
pub trait TurnEnded {
    /// `index` is the 0-based turn that just ended.
    fn turn_ended(&self, index: usize);
}

/// One user turn of a session (docs/multi-turn.md).
#[derive(Clone, Copy)]
pub struct TurnInput<'a> {
    /// The user message, sent verbatim once the previous turn's `result`
    /// arrived.
    pub prompt: &'a str,
    /// The rules answering this turn's gates (its own, then the scenario's).
    pub decider: &'a Decider,
    /// This turn's budget: on expiry it is interrupted through the control
    /// protocol (`interrupt`), then failed as a timeout.
    pub timeout: Duration,
}

/// How a session of several turns is driven: one agent process, one user
/// message per turn on its stdin, each after the previous turn's `result`.
pub struct SessionOptions<'a> {
    /// In order; at least one.
    pub turns: Vec<TurnInput<'a>>,
    /// The whole session's wall-clock budget; on expiry the group is killed.
    pub timeout: Duration,
    pub sdk_mcp: Option<&'a RefCell<dyn SdkMcp + 'a>>,
    /// Told at each turn boundary ([`TurnEnded`]).
    pub on_turn_end: Option<&'a dyn TurnEnded>,
}

/// Why a user turn could not be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TurnError {
    /// Turns are sequential: a turn is sent only after the previous one's
    /// `result`.
    #[error(
        "turn {next} was sent while turn {running} is still running: turns are sequential, \
         each waits for the previous turn's `result`"
    )]
    Concurrent { running: usize, next: usize },
    /// Every turn of the session was sent.
    #[error("no turn left to send: the session has {count} turn(s)")]
    NoTurnLeft { count: usize },
}

/// Where one turn lies in the run's log (`RunLog::turns`): the index of its
/// user message's first event and of the line after its `result`, and the
/// `controlOut` frames written for it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnMark {
    /// 0-based.
    pub index: usize,
    /// `events[eventStart..eventEnd]` is the turn's slice of the evidence.
    pub event_start: usize,
    /// `None`: the turn never reached its `result`.
    pub event_end: Option<usize>,
    /// `controlOut[frameStart..frameEnd]` are the frames written during it
    /// (its user message first).
    pub frame_start: usize,
    pub frame_end: Option<usize>,
    /// Its budget ran out and reel sent `interrupt`.
    pub interrupted: bool,
    /// The agent had exited after the previous turn: this turn was delivered
    /// to the same session reopened with `--resume <session id>`.
    pub resumed: bool,
}

/// The host's in-process (SDK) MCP servers, as the control loop sees them.
pub trait SdkMcp {
    /// The server names declared in `initialize.sdkMcpServers`.
    fn servers(&self) -> Vec<String>;
    /// The JSON-RPC reply of `server` to `message` (`None`: a notification,
    /// nothing to answer). Called only for a name [`SdkMcp::servers`] lists.
    fn handle(&mut self, server: &str, message: &Value) -> Option<Value>;
}

/// Why a run did not complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorSource {
    /// The agent could not be started.
    Spawn,
    /// The sandbox could not be applied: nothing ran.
    Sandbox,
    /// The wall-clock budget ran out.
    Timeout,
    /// stdout closed without a `result`.
    NoResult,
    /// The agent exited nonzero or by a signal.
    Exit,
    /// The agent broke the protocol (or a frame could not be delivered).
    Protocol,
    /// A question no rule answers under `on_unanswered: fail`: never frozen.
    Unanswered,
    /// A scripted rule failed (bad `choose`, `allow_if` error): fatal.
    Script,
    /// The agent flooded stdout past the cap.
    OutputCap,
}

impl ErrorSource {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorSource::Spawn => "spawn",
            ErrorSource::Sandbox => "sandbox",
            ErrorSource::Timeout => "timeout",
            ErrorSource::NoResult => "no_result",
            ErrorSource::Exit => "exit",
            ErrorSource::Protocol => "protocol",
            ErrorSource::Unanswered => "unanswered",
            ErrorSource::Script => "script",
            ErrorSource::OutputCap => "output_cap",
        }
    }
}

/// How the run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RunEnd {
    /// A `result` arrived and the agent exited cleanly.
    Completed,
    Failed {
        source: ErrorSource,
        message: String,
    },
}

/// What the decider did during the run (for the verdict gate and authoring).
#[derive(Debug, Clone, Default)]
pub struct DecisionLog {
    /// Tools allowed only by `cowork` parity.
    pub permissive_auto_allows: Vec<String>,
    /// A non-scripted terminal (`first`) answered a gate.
    pub nondeterministic: bool,
    pub warnings: Vec<String>,
    /// Permission prompts no rule answered, denied by `strict` parity: each
    /// names the tool, its input and the ready-to-paste `answers:` rule.
    pub strict_denies: Vec<String>,
}

/// Everything the recorder keeps from one turn.
#[derive(Debug)]
pub struct RunLog {
    /// Non-blank stdout lines verbatim, plus `_emu` markers.
    pub events: Vec<String>,
    /// Frames the agent accepted, in write order.
    pub control_out: Vec<String>,
    pub stderr: Vec<u8>,
    pub timeline: Vec<Value>,
    pub timeline_header: Value,
    /// The `result` message, if one arrived.
    pub result: Option<Value>,
    /// The `system/init` message, if one arrived.
    pub init: Option<Value>,
    pub end: RunEnd,
    pub decisions: DecisionLog,
    pub exit_status: Option<ExitStatus>,
    /// When the last agent process was gone (recorder-overhead benchmark).
    pub finished_at: Instant,
    /// The sandbox layers the agent ran under (`None`: unconfined, or it
    /// never started).
    pub sandbox: Option<crate::sandbox::Layers>,
    /// One mark per user turn sent, in order.
    pub turns: Vec<TurnMark>,
    /// The session id reopened with `--resume` after the agent died between
    /// turns (at most once per session).
    pub resumed_session: Option<String>,
}

impl RunLog {
    /// The last ~2000 chars of stderr, for messages.
    pub fn stderr_tail(&self) -> String {
        let s = String::from_utf8_lossy(&self.stderr);
        let start = s.len().saturating_sub(2000);
        let start = (start..s.len())
            .find(|i| s.is_char_boundary(*i))
            .unwrap_or(s.len());
        s[start..].trim().to_owned()
    }
}

enum Msg {
    Line(String),
    LineTooLong,
    Eof,
    ReadError(String),
    WriteFailed(String),
}

enum WriterCmd {
    Frame(String),
    Close,
}

impl RunLog {
    /// The log of a turn starting now: nothing read yet, completed until
    /// something says otherwise.
    fn starting(started: Instant) -> RunLog {
        RunLog {
            events: Vec::new(),
            control_out: Vec::new(),
            stderr: Vec::new(),
            timeline: Vec::new(),
            timeline_header: json!({
                "v": 1,
                "startedAtWall": iso_utc(SystemTime::now()),
                "startedAtMono": monotonic_ns().to_string(),
            }),
            result: None,
            init: None,
            end: RunEnd::Completed,
            decisions: DecisionLog::default(),
            exit_status: None,
            finished_at: started,
            sandbox: None,
            turns: Vec::new(),
            resumed_session: None,
        }
    }

    /// The log of an agent that could not be started (or confined): the
    /// `spawn_error` marker and the failure.
    fn spawn_failed(mut self, cmd: &AgentCommand, e: SpawnError) -> RunLog {
        let (source, message) = match e {
            SpawnError::Agent(e) if e.starts_with("spawn `") => (ErrorSource::Spawn, e),
            SpawnError::Agent(e) => (
                ErrorSource::Spawn,
                format!("spawn `{}`: {e}", cmd.program.display()),
            ),
            SpawnError::Sandbox(r) => (ErrorSource::Sandbox, r.to_string()),
        };
        self.events
            .push(json!({"_emu": "spawn_error", "message": message}).to_string());
        self.end = RunEnd::Failed { source, message };
        self.finished_at = Instant::now();
        self
    }
}

/// Why the read loop stopped.
#[derive(Default)]
struct Stop {
    /// The agent's stdout closed.
    eof: bool,
    timed_out: bool,
    failure: Option<(ErrorSource, String)>,
}

impl Stop {
    /// Stopped before the agent was done.
    fn early(&self) -> bool {
        self.timed_out || self.failure.is_some()
    }
}

/// Drives one turn of `cmd`: [`drive_session`] with a single turn, whose
/// budget is the run's (on expiry the group is killed).
pub fn drive(cmd: &AgentCommand, opts: &DriveOptions<'_>) -> RunLog {
    let turn = vec![TurnInput {
        prompt: opts.prompt,
        decider: opts.decider,
        timeout: opts.timeout,
    }];
    drive_session(
        cmd,
        &SessionOptions {
            turns: turn,
            timeout: opts.timeout,
            sdk_mcp: opts.sdk_mcp,
            on_turn_end: opts.on_turn_end,
        },
    )
}

/// Drives the turns of one session through one agent process: `initialize`,
/// then each turn's user message once the previous turn's `result` arrived;
/// stdin closes after the last `result`. Never panics on agent behaviour;
/// every exit path leaves no process of the agent's group alive.
pub fn drive_session(cmd: &AgentCommand, opts: &SessionOptions<'_>) -> RunLog {
    let started = Instant::now();
    let mut log = RunLog::starting(started);
    if opts.turns.is_empty() {
        log.end = RunEnd::Failed {
            source: ErrorSource::Protocol,
            message: "a session needs at least one user turn".into(),
        };
        return log;
    }
    let deadline = started + opts.timeout;
    let mut engine = Engine::new(opts, mpsc::channel().0, started);
    let mut current = cmd.clone();
    let mut resumed = false;
    loop {
        let stop = match run_process(&current, &mut engine, &mut log, deadline) {
            Ok(stop) => stop,
            Err(e) => return log.spawn_failed(&current, e),
        };
        if !resumed && let Some(sid) = engine.resumable(&log, &stop) {
            // The agent died between turns: the next turn was never
            // delivered. Reopen the same conversation once and deliver it
            // there — never a fresh context reported as the same session.
            resumed = true;
            current = resume_command(cmd, &sid);
            log.resumed_session = Some(sid);
            if let Some(mark) = log.turns.last_mut() {
                mark.resumed = true;
            }
            continue;
        }
        let mut stop = stop;
        // A multi-turn session must answer every turn (a one-turn run keeps
        // its own rule: a `result` and a clean exit).
        if !stop.early()
            && engine.turns.len() > 1
            && let Some(index) = engine.in_flight
        {
            stop.failure = Some((
                ErrorSource::NoResult,
                format!(
                    "the agent's stdout closed before turn {} of {} had its `result`{}: {}",
                    index + 1,
                    engine.turns.len(),
                    if resumed {
                        " (the session was already resumed once)"
                    } else {
                        ""
                    },
                    log.stderr_tail()
                ),
            ));
        }
        log.end = run_end(&log, stop, opts.timeout);
        return log;
    }
}

/// `cmd` reopening session `sid` (`--resume <sid>`).
fn resume_command(cmd: &AgentCommand, sid: &str) -> AgentCommand {
    let mut resumed = cmd.clone();
    resumed.args.push("--resume".into());
    resumed.args.push(sid.to_owned());
    resumed
}

/// One agent process of the session: spawned, `initialize` written, then
/// the next turn (or, after a resume, the undelivered one), read until it
/// stops, and torn down; its frames and stderr join the log.
fn run_process(
    cmd: &AgentCommand,
    engine: &mut Engine<'_>,
    log: &mut RunLog,
    deadline: Instant,
) -> Result<Stop, SpawnError> {
    let mut group = ProcessGroup::spawn(cmd)?;
    if log.sandbox.is_none() {
        log.sandbox = group.sandbox.clone();
    }
    let (tx, rx) = mpsc::channel::<Msg>();
    // Invariant: all three pipes were requested as `Stdio::piped()`.
    let stdout = group.child.stdout.take().expect("piped stdout");
    let stderr = group.child.stderr.take().expect("piped stderr");
    let stdin = group.child.stdin.take().expect("piped stdin");
    spawn_reader(stdout, tx.clone());
    let stderr_buf = Arc::new(Mutex::new(Vec::<u8>::new()));
    let stderr_thread = spawn_stderr(stderr, stderr_buf.clone());
    let mirrored = Arc::new(Mutex::new(Vec::<String>::new()));
    let (wtx, writer_thread) = spawn_writer(stdin, mirrored.clone(), tx.clone());
    drop(tx);

    engine.attach(wtx);
    let sdk_servers = engine.sdk_servers.clone();
    engine.send(protocol::initialize_request(
        INIT_REQUEST_ID,
        protocol::pre_tool_use_hook("Task", TASK_HOOK_ID),
        &sdk_servers,
    ));
    let first = match engine.in_flight {
        Some(_) => {
            engine.redeliver();
            Ok(())
        }
        None => engine.begin_next_turn(log),
    };
    let mut stop = match first {
        Ok(()) => read_until_stop(engine, &rx, &mut group, deadline, log),
        Err(e) => Stop {
            failure: Some((ErrorSource::Protocol, e.to_string())),
            ..Stop::default()
        },
    };
    engine.close_stdin();
    if stop.early() {
        // Frames already queued (the error answer to an unsupported
        // request, say) are written before the group is stopped, as a
        // synchronous write would have been: under load the writer thread
        // may not have run yet. Bounded, since a full pipe would block it.
        let flush_until = Instant::now() + Duration::from_millis(500);
        while !writer_thread.is_finished() && Instant::now() < flush_until {
            std::thread::sleep(Duration::from_millis(2));
        }
        group.terminate(KILL_GRACE);
    } else {
        let left = deadline.saturating_duration_since(Instant::now());
        if group.wait_for(left.min(Duration::from_secs(10))).is_none() {
            group.terminate(KILL_GRACE);
        }
    }
    // Stragglers (a descendant still running after the leader exited).
    group.signal(libc::SIGKILL);
    log.exit_status = group
        .try_status()
        .or_else(|| group.wait_for(Duration::from_secs(5)));
    log.finished_at = Instant::now();
    drain_read_lines(engine, &rx, &mut stop, log);
    engine.detach();
    let _ = writer_thread.join();
    let _ = stderr_thread.join();
    log.control_out.append(&mut lock(&mirrored));
    log.stderr.append(&mut lock(&stderr_buf));
    Ok(stop)
}

/// The main loop: every line the agent writes goes to the engine until its
/// stdout closes, the budget runs out, or the run fails.
fn read_until_stop(
    engine: &mut Engine<'_>,
    rx: &Receiver<Msg>,
    group: &mut ProcessGroup,
    deadline: Instant,
    log: &mut RunLog,
) -> Stop {
    let mut leader_exit_seen: Option<Instant> = None;
    let mut stop = Stop::default();
    while !stop.eof && stop.failure.is_none() {
        let now = Instant::now();
        if now >= deadline {
            stop.timed_out = true;
            break;
        }
        if let Some(f) = engine.watch_turn_budget(now, log) {
            stop.failure = Some(f);
            break;
        }
        match rx.recv_timeout((deadline - now).min(Duration::from_millis(50))) {
            Ok(msg) => on_msg(engine, msg, &mut stop, log),
            Err(RecvTimeoutError::Disconnected) => stop.eof = true,
            Err(RecvTimeoutError::Timeout) => {}
        }
        // A leader that exited while a descendant holds stdout open.
        if !stop.eof && group.try_status().is_some() {
            let seen = *leader_exit_seen.get_or_insert_with(Instant::now);
            if seen.elapsed() >= ORPHAN_PIPE_GRACE {
                group.signal(libc::SIGKILL);
            }
        }
    }
    stop
}

/// One message of the reader or writer thread, in the main loop.
fn on_msg(engine: &mut Engine<'_>, msg: Msg, stop: &mut Stop, log: &mut RunLog) {
    match msg {
        Msg::Line(line) => {
            if let Err(f) = engine.on_line(line, log) {
                stop.failure = Some(f);
            }
        }
        Msg::LineTooLong => {
            stop.failure = Some((
                ErrorSource::OutputCap,
                format!("agent wrote a stdout line longer than {MAX_LINE_BYTES} bytes"),
            ))
        }
        Msg::ReadError(e) => {
            stop.failure = Some((ErrorSource::Protocol, format!("read agent stdout: {e}")))
        }
        Msg::WriteFailed(frame) => {
            log.events
                .push(json!({"_emu": "control_undelivered", "frame": frame}).to_string());
            stop.failure = Some((
                ErrorSource::Protocol,
                "the agent closed its stdin before a control frame could be delivered".into(),
            ));
        }
        Msg::Eof => stop.eof = true,
    }
}

/// What the reader already read once the group is dead (bounded), still
/// read into the log unless the run already failed.
fn drain_read_lines(
    engine: &mut Engine<'_>,
    rx: &Receiver<Msg>,
    stop: &mut Stop,
    log: &mut RunLog,
) {
    let drain_until = Instant::now() + Duration::from_millis(500);
    while !stop.eof
        && let Ok(msg) = rx.recv_timeout(drain_until.saturating_duration_since(Instant::now()))
    {
        match msg {
            Msg::Line(line) if !stop.early() => {
                if let Err(f) = engine.on_line(line, log) {
                    stop.failure = Some(f);
                }
            }
            Msg::Eof => break,
            _ => {}
        }
    }
}

/// How the run ended: the budget, a failure, the agent's exit status, a
/// missing `result`, else completed.
fn run_end(log: &RunLog, stop: Stop, timeout: Duration) -> RunEnd {
    if stop.timed_out {
        return RunEnd::Failed {
            source: ErrorSource::Timeout,
            message: format!(
                "the agent ran past the {} ms budget and was killed",
                timeout.as_millis()
            ),
        };
    }
    if let Some((source, message)) = stop.failure {
        return RunEnd::Failed { source, message };
    }
    if let Some(status) = log.exit_status.filter(|s| !s.success()) {
        return RunEnd::Failed {
            source: ErrorSource::Exit,
            message: format!("the agent exited with {status}: {}", log.stderr_tail()),
        };
    }
    if log.result.is_none() {
        return RunEnd::Failed {
            source: ErrorSource::NoResult,
            message: format!(
                "the agent's stdout closed without a `result` message: {}",
                log.stderr_tail()
            ),
        };
    }
    RunEnd::Completed
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock only means a helper thread panicked; the data is plain.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

struct Engine<'a> {
    /// The rules of the turn in flight.
    decider: &'a Decider,
    turns: Vec<TurnInput<'a>>,
    /// The index of the next turn to send.
    next_turn: usize,
    /// The turn whose `result` has not arrived yet.
    in_flight: Option<usize>,
    turn_started: Instant,
    /// When `interrupt` was sent for the turn in flight.
    interrupted_at: Option<Instant>,
    /// Frames queued for the agent so far (turn boundaries in `controlOut`).
    frames_sent: usize,
    writer: Sender<WriterCmd>,
    started: Instant,
    seq: u64,
    ordinal: u64,
    scope: String,
    answered: std::collections::HashSet<String>,
    stdin_closed: bool,
    events_bytes: usize,
    /// Background tasks the agent reported running (an asynchronous
    /// sub-agent): while any runs, a `result` is not the end of the run.
    background_tasks: usize,
    sdk_mcp: Option<&'a RefCell<dyn SdkMcp + 'a>>,
    sdk_servers: Vec<String>,
    on_turn_end: Option<&'a dyn TurnEnded>,
}

type Fatal = (ErrorSource, String);

impl<'a> Engine<'a> {
    /// The engine of a turn starting now, writing through `writer`.
    fn new(opts: &SessionOptions<'a>, writer: Sender<WriterCmd>, started: Instant) -> Engine<'a> {
        Engine {
            decider: opts.turns[0].decider,
            turns: opts.turns.clone(),
            next_turn: 0,
            in_flight: None,
            turn_started: started,
            interrupted_at: None,
            frames_sent: 0,
            writer,
            started,
            seq: 0,
            ordinal: 0,
            scope: "(root)".into(),
            answered: Default::default(),
            stdin_closed: false,
            events_bytes: 0,
            background_tasks: 0,
            sdk_mcp: opts.sdk_mcp,
            sdk_servers: opts
                .sdk_mcp
                .map(|h| h.borrow().servers())
                .unwrap_or_default(),
            on_turn_end: opts.on_turn_end,
        }
    }
}

impl Engine<'_> {
    fn send(&mut self, frame: Value) -> Option<Fatal> {
        let line = frame.to_string();
        if line.len() > MAX_FRAME_BYTES {
            return Some((
                ErrorSource::Protocol,
                format!(
                    "a control frame of {} bytes exceeds the {MAX_FRAME_BYTES}-byte cap",
                    line.len()
                ),
            ));
        }
        if self.stdin_closed {
            return None;
        }
        let _ = self.writer.send(WriterCmd::Frame(line));
        self.frames_sent += 1;
        None
    }

    fn close_stdin(&mut self) {
        if !self.stdin_closed {
            self.stdin_closed = true;
            let _ = self.writer.send(WriterCmd::Close);
        }
    }

    fn stamp(&mut self, log: &mut RunLog, line: u64, kind: &str, extra: Map<String, Value>) {
        let mut entry = Map::new();
        entry.insert("seq".into(), json!(self.seq));
        entry.insert(
            "ts".into(),
            json!(self.started.elapsed().as_millis() as u64),
        );
        entry.insert("line".into(), json!(line));
        entry.insert("type".into(), json!(kind));
        entry.extend(extra);
        log.timeline.push(Value::Object(entry));
        self.seq += 1;
    }

    fn on_line(&mut self, raw: String, log: &mut RunLog) -> Result<(), Fatal> {
        let line = raw.strip_suffix('\r').unwrap_or(&raw);
        if line.trim().is_empty() {
            return Ok(());
        }
        self.events_bytes += line.len();
        if self.events_bytes > MAX_EVENTS_BYTES {
            return Err((
                ErrorSource::OutputCap,
                format!("the agent wrote more than {MAX_EVENTS_BYTES} bytes to stdout"),
            ));
        }
        log.events.push(line.to_owned());
        let ordinal = self.ordinal;
        self.ordinal += 1;
        let Ok(whole) = serde_json::from_str::<Value>(line) else {
            return Ok(()); // a raw (non-JSON) line: recorded, ignored
        };
        match Line::of(&whole) {
            Line::System { subtype, body } if subtype == protocol::subtype::INIT => {
                if let Some(key) = protocol::init_non_array_field(body) {
                    return Err((
                        ErrorSource::Protocol,
                        format!("system/init `{key}` is not an array"),
                    ));
                }
                log.init = Some(Value::Object(body.clone()));
            }
            Line::System { subtype, body }
                if subtype == protocol::subtype::BACKGROUND_TASKS_CHANGED =>
            {
                self.background_tasks = protocol::background_task_count(body);
            }
            Line::Assistant(message) => self.on_assistant(&message, ordinal, log)?,
            Line::User(message) => {
                for block in message.blocks() {
                    if let Block::ToolResult {
                        tool_use_id,
                        is_error,
                        ..
                    } = block
                    {
                        let mut e = Map::new();
                        if let Some(id) = tool_use_id {
                            e.insert("toolUseId".into(), json!(id));
                        }
                        e.insert("isError".into(), json!(is_error));
                        self.stamp(log, ordinal, "tool_result", e);
                    }
                }
            }
            Line::Result(body) => {
                let mut e = Map::new();
                e.insert("isError".into(), json!(protocol::result_is_error(body)));
                self.stamp(log, ordinal, "result", e);
                log.result = Some(Value::Object(body.clone()));
                // The agent exits on stdin EOF after the last turn. A
                // sub-agent still running in the background will be reported
                // to the agent in a turn of its own, whose prompts must still
                // be answerable: a turn ends at the result with none left.
                if self.background_tasks == 0 {
                    return self.end_turn(log);
                }
            }
            Line::ControlRequest {
                request_id,
                subtype,
                request,
            } => return self.on_request(request_id, subtype, request, ordinal, log),
            _ => {}
        }
        Ok(())
    }

    /// Timeline stamps for an assistant line's tool calls and thinking.
    fn on_assistant(
        &mut self,
        message: &protocol::Message<'_>,
        ordinal: u64,
        log: &mut RunLog,
    ) -> Result<(), Fatal> {
        let parent = message.parent_tool_use_id;
        for block in message.blocks() {
            match block {
                Block::Other(v) if !v.is_object() => {
                    return Err((
                        ErrorSource::Protocol,
                        "assistant content block is not an object".into(),
                    ));
                }
                Block::ToolUse { id, name, input } => {
                    if name == protocol::SKILL_TOOL && parent.is_none() {
                        self.scope = protocol::skill_of(input).unwrap_or("(unknown)").to_owned();
                    }
                    let mut e = Map::new();
                    if let Some(id) = id {
                        e.insert("toolUseId".into(), json!(id));
                    }
                    e.insert("name".into(), json!(name));
                    if let Some(p) = parent {
                        e.insert("parentToolUseId".into(), json!(p));
                    }
                    if let Some(m) = message.model {
                        e.insert("model".into(), json!(m));
                    }
                    e.insert("skillScope".into(), json!(self.scope));
                    self.stamp(log, ordinal, "tool_use", e);
                    let (dispatch, subagent_type) = protocol::dispatch_of(name, input);
                    if dispatch {
                        let mut d = Map::new();
                        if let Some(id) = id {
                            d.insert("toolUseId".into(), json!(id));
                        }
                        if let Some(p) = parent {
                            d.insert("parentToolUseId".into(), json!(p));
                        }
                        if let Some(t) = subagent_type {
                            d.insert("dispatchAgentType".into(), json!(t));
                        }
                        d.insert("skillScope".into(), json!(self.scope));
                        self.stamp(log, ordinal, "subagent_dispatch", d);
                    }
                }
                Block::Thinking { .. } => self.stamp(log, ordinal, "thinking", Map::new()),
                _ => {}
            }
        }
        Ok(())
    }

    fn on_request(
        &mut self,
        request_id: Option<&str>,
        subtype: &str,
        request: Option<&Map<String, Value>>,
        ordinal: u64,
        log: &mut RunLog,
    ) -> Result<(), Fatal> {
        let id = match request_id {
            Some(id) if !id.is_empty() => id.to_owned(),
            _ => {
                return Err((
                    ErrorSource::Protocol,
                    "a control_request has no request_id".into(),
                ));
            }
        };
        if !self.answered.insert(id.clone()) {
            log.decisions.warnings.push(format!(
                "control_request {id} was sent again; answering it again"
            ));
        }
        let empty = Map::new();
        let body = match protocol::Request::of(subtype, request.unwrap_or(&empty)) {
            protocol::Request::CanUseTool { tool_name, input }
                if tool_name == protocol::ASK_USER_QUESTION =>
            {
                self.stamp(log, ordinal, "decision", kind_map("question"));
                self.answer_questions(input, log)?
            }
            protocol::Request::CanUseTool { tool_name, input } => {
                self.stamp(log, ordinal, "decision", kind_map("permission"));
                self.answer_permission(tool_name, input, log)?
            }
            protocol::Request::HookCallback {
                callback_id,
                run_in_background,
            } => {
                // Background sub-agents are refused (the hook reel registers
                // at `initialize` fires on every `Task` call).
                if callback_id == Some(TASK_HOOK_ID) && truthy(run_in_background) {
                    protocol::hook_block("Background agents disabled")
                } else {
                    protocol::hook_continue()
                }
            }
            protocol::Request::McpMessage {
                server,
                message,
                rpc_id,
            } => self.mcp_message(server, message, rpc_id),
            request @ (protocol::Request::UserDialog | protocol::Request::Elicitation) => {
                let dialog = matches!(request, protocol::Request::UserDialog);
                let kind = if dialog { "dialog" } else { "elicit" };
                self.stamp(log, ordinal, "decision", kind_map(kind));
                self.answer_dialog(dialog, subtype, log)?
            }
            protocol::Request::Unsupported(other) => return Err(self.refuse(&id, other)),
        };
        match self.send(protocol::control_success(&id, body)) {
            Some(f) => Err(f),
            None => Ok(()),
        }
    }

    /// The answers to an `AskUserQuestion`, from the scripted rules.
    fn answer_questions(&self, input: Value, log: &mut RunLog) -> Result<Value, Fatal> {
        let questions = protocol::questions_of(&input);
        let answer = self
            .decider
            .decide_question(&questions)
            .map_err(decide_fatal)?;
        log.decisions.warnings.extend(answer.warnings);
        log.decisions.nondeterministic |= answer.nondeterministic;
        let updated = protocol::answered_questions(&input, questions, answer.answers);
        Ok(protocol::permission_allow(updated))
    }

    /// Allow or deny a tool, from the scripted rules and the parity mode
    /// (noting a strict deny and a permissive auto-allow).
    fn answer_permission(
        &self,
        tool_name: &str,
        input: Value,
        log: &mut RunLog,
    ) -> Result<Value, Fatal> {
        let p = self
            .decider
            .decide_permission(tool_name, &input)
            .map_err(decide_fatal)?;
        if p.source == PermissionSource::StrictDeny {
            log.decisions.strict_denies.push(
                crate::scenario::answers::unanswered_permission_message(tool_name, &input),
            );
        }
        if p.source == PermissionSource::PermissiveAutoAllow {
            log.decisions
                .permissive_auto_allows
                .push(tool_name.to_owned());
        }
        Ok(if p.allow {
            protocol::permission_allow(input)
        } else {
            protocol::permission_deny(p.message.as_deref().unwrap_or_default())
        })
    }

    /// A user dialog (cancelled) or an elicitation (declined): never
    /// scripted, so fatal under `on_unanswered: fail`.
    fn answer_dialog(&self, dialog: bool, subtype: &str, log: &mut RunLog) -> Result<Value, Fatal> {
        if self.decider.unanswered == Unanswered::Fail {
            return Err((
                ErrorSource::Unanswered,
                format!("unscripted {subtype} (on_unanswered=fail): scripted rules never cover it"),
            ));
        }
        log.decisions.nondeterministic = true;
        Ok(if dialog {
            protocol::dialog_cancelled()
        } else {
            protocol::elicitation_declined()
        })
    }

    /// Answers an unsupported request with an error frame, and fails the
    /// run on it.
    fn refuse(&mut self, id: &str, subtype: &str) -> Fatal {
        let frame = protocol::control_error(
            id,
            &format!("unsupported control_request subtype {subtype:?}"),
        );
        if let Some(f) = self.send(frame) {
            return f;
        }
        (
            ErrorSource::Protocol,
            format!("the agent sent an unsupported control_request subtype {subtype:?}"),
        )
    }
}

impl<'a> Engine<'a> {
    /// Writes through `writer` from now on (a new agent process).
    fn attach(&mut self, writer: Sender<WriterCmd>) {
        self.writer = writer;
        self.stdin_closed = false;
    }

    /// Drops the writer, so the process's writer thread ends.
    fn detach(&mut self) {
        self.writer = mpsc::channel().0;
    }
}

impl Engine<'_> {
    /// Sends the turn in flight's user message again, to a resumed session
    /// (the first copy never reached a live agent).
    fn redeliver(&mut self) {
        if let Some(turn) = self.in_flight.and_then(|i| self.turns.get(i).copied()) {
            self.turn_started = Instant::now();
            let _ = self.send(protocol::user_text(turn.prompt));
        }
    }

    /// The session id to resume when the agent's output ended (it exited, or
    /// refused a frame) while a later turn's user message had produced
    /// nothing yet; `None` otherwise (a first turn has no session to reopen).
    fn resumable(&self, log: &RunLog, stop: &Stop) -> Option<String> {
        let index = self.in_flight.filter(|i| *i > 0)?;
        let mark = log.turns.last().filter(|m| m.index == index)?;
        let died = stop.eof
            || matches!(&stop.failure, Some((ErrorSource::Protocol, m)) if m.contains("closed its stdin"));
        // Nothing of the turn arrived: at most the marker of its user
        // message refused by a stdin already closed (a socket refuses at
        // once where a pipe buffer took it, so both orders happen).
        let nothing_yet = log.events[mark.event_start.min(log.events.len())..]
            .iter()
            .all(|e| e.starts_with(r#"{"_emu":"control_undelivered""#));
        if !died || stop.timed_out || !nothing_yet {
            return None;
        }
        let init = log.init.as_ref()?;
        init.get("session_id")?.as_str().map(str::to_owned)
    }
}

/// How long an interrupted turn has to write its `result`.
const INTERRUPT_GRACE: Duration = Duration::from_secs(5);

impl Engine<'_> {
    /// Sends the next turn's user message. Refused while a turn is in
    /// flight ([`TurnError::Concurrent`]): turns are sequential.
    fn begin_next_turn(&mut self, log: &mut RunLog) -> Result<(), TurnError> {
        if let Some(running) = self.in_flight {
            return Err(TurnError::Concurrent {
                running,
                next: self.next_turn,
            });
        }
        let Some(turn) = self.turns.get(self.next_turn).copied() else {
            return Err(TurnError::NoTurnLeft {
                count: self.turns.len(),
            });
        };
        self.decider = turn.decider;
        log.turns.push(TurnMark {
            index: self.next_turn,
            event_start: log.events.len(),
            event_end: None,
            frame_start: self.frames_sent,
            frame_end: None,
            interrupted: false,
            resumed: false,
        });
        self.in_flight = Some(self.next_turn);
        self.next_turn += 1;
        self.turn_started = Instant::now();
        self.interrupted_at = None;
        let _ = self.send(protocol::user_text(turn.prompt));
        Ok(())
    }

    /// The `result` of the turn in flight: its mark closed, then the next
    /// turn sent, or stdin closed after the last. An interrupted turn ends
    /// the session as a timeout.
    fn end_turn(&mut self, log: &mut RunLog) -> Result<(), Fatal> {
        let Some(index) = self.in_flight.take() else {
            self.close_stdin();
            return Ok(());
        };
        if let Some(mark) = log.turns.last_mut() {
            mark.event_end = Some(log.events.len());
            mark.frame_end = Some(self.frames_sent);
        }
        if self.interrupted_at.is_some() {
            return Err((
                ErrorSource::Timeout,
                format!(
                    "turn {} ran past its {} ms budget and was interrupted",
                    index + 1,
                    self.turns[index].timeout.as_millis()
                ),
            ));
        }
        if let Some(hook) = self.on_turn_end {
            hook.turn_ended(index);
        }
        if self.next_turn < self.turns.len() {
            return self
                .begin_next_turn(log)
                .map_err(|e| (ErrorSource::Protocol, e.to_string()));
        }
        self.close_stdin();
        Ok(())
    }

    /// A multi-turn session's per-turn budget: past it, `interrupt` is sent
    /// once; a turn that still has no `result` [`INTERRUPT_GRACE`] later
    /// fails the session. A one-turn run has only the session's budget.
    fn watch_turn_budget(&mut self, now: Instant, log: &mut RunLog) -> Option<Fatal> {
        let index = self.in_flight.filter(|_| self.turns.len() > 1)?;
        let budget = self.turns[index].timeout;
        match self.interrupted_at {
            None if now >= self.turn_started + budget => {
                self.interrupted_at = Some(now);
                if let Some(mark) = log.turns.last_mut() {
                    mark.interrupted = true;
                }
                let id = format!("interrupt-{}", index + 1);
                self.send(protocol::interrupt_request(&id))
            }
            Some(at) if now >= at + INTERRUPT_GRACE => Some((
                ErrorSource::Timeout,
                format!(
                    "turn {} ran past its {} ms budget; after `interrupt` no `result` came \
                     within {} s",
                    index + 1,
                    budget.as_millis(),
                    INTERRUPT_GRACE.as_secs()
                ),
            )),
            _ => None,
        }
    }
}

impl Engine<'_> {
    /// The answer to an `mcp_message`: from the host's SDK server of that
    /// name, else "no handler" (a notification gets `{}`).
    fn mcp_message(
        &self,
        server: Option<&str>,
        message: Option<&Value>,
        rpc_id: Option<&Value>,
    ) -> Value {
        if let (Some(host), Some(server), Some(message)) = (self.sdk_mcp, server, message)
            && self.sdk_servers.iter().any(|s| s == server)
        {
            return protocol::mcp_response(host.borrow_mut().handle(server, message));
        }
        match rpc_id {
            Some(rpc_id) => protocol::mcp_no_handler(rpc_id),
            None => Value::Object(Map::new()),
        }
    }
}

fn kind_map(kind: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("kind".into(), json!(kind));
    m
}

fn decide_fatal(e: DecideError) -> Fatal {
    match e {
        DecideError::Unanswered(m) => (ErrorSource::Unanswered, m),
        DecideError::Script(m) => (ErrorSource::Script, m),
    }
}

fn spawn_reader(stdout: impl Read + Send + 'static, tx: Sender<Msg>) {
    std::thread::spawn(move || {
        let mut reader = BufReader::with_capacity(64 * 1024, stdout);
        let mut buf: Vec<u8> = Vec::new();
        let mut skipping = false;
        loop {
            let chunk = match reader.fill_buf() {
                Ok([]) => {
                    if !buf.is_empty() && !skipping {
                        let _ = tx.send(Msg::Line(String::from_utf8_lossy(&buf).into_owned()));
                    }
                    let _ = tx.send(Msg::Eof);
                    return;
                }
                Ok(c) => c,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let _ = tx.send(Msg::ReadError(e.to_string()));
                    let _ = tx.send(Msg::Eof);
                    return;
                }
            };
            let (used, newline) = match chunk.iter().position(|b| *b == b'\n') {
                Some(i) => (i + 1, true),
                None => (chunk.len(), false),
            };
            if !skipping {
                buf.extend_from_slice(&chunk[..if newline { used - 1 } else { used }]);
            }
            reader.consume(used);
            if !skipping && buf.len() > MAX_LINE_BYTES {
                let _ = tx.send(Msg::LineTooLong);
                buf.clear();
                skipping = true;
            }
            if newline {
                if !skipping {
                    let line = String::from_utf8_lossy(&buf).into_owned();
                    if tx.send(Msg::Line(line)).is_err() {
                        return;
                    }
                }
                buf.clear();
                skipping = false;
            }
        }
    });
}

fn spawn_stderr(
    mut stderr: impl Read + Send + 'static,
    out: Arc<Mutex<Vec<u8>>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut chunk = [0u8; 8192];
        loop {
            match stderr.read(&mut chunk) {
                Ok(0) => return,
                Ok(n) => {
                    let mut buf = lock(&out);
                    buf.extend_from_slice(&chunk[..n]);
                    if buf.len() > MAX_STDERR_BYTES {
                        let cut = buf.len() - MAX_STDERR_BYTES;
                        buf.drain(..cut);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    })
}

fn spawn_writer(
    mut stdin: std::process::ChildStdin,
    mirrored: Arc<Mutex<Vec<String>>>,
    tx: Sender<Msg>,
) -> (Sender<WriterCmd>, std::thread::JoinHandle<()>) {
    let (wtx, wrx): (Sender<WriterCmd>, Receiver<WriterCmd>) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        for cmd in wrx {
            match cmd {
                WriterCmd::Frame(line) => {
                    let mut bytes = line.clone().into_bytes();
                    bytes.push(b'\n');
                    match stdin.write_all(&bytes).and_then(|_| stdin.flush()) {
                        Ok(()) => lock(&mirrored).push(line),
                        Err(_) => {
                            let _ = tx.send(Msg::WriteFailed(line));
                            return;
                        }
                    }
                }
                WriterCmd::Close => return,
            }
        }
    });
    (wtx, handle)
}

/// Nanoseconds of CLOCK_MONOTONIC (the timeline header's `startedAtMono`).
fn monotonic_ns() -> u128 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    ts.tv_sec as u128 * 1_000_000_000 + ts.tv_nsec as u128
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` (JavaScript's `toISOString`).
pub fn iso_utc(t: SystemTime) -> String {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::answers::Unanswered;

    fn decider() -> Decider {
        Decider {
            rules: Vec::new(),
            parity: Default::default(),
            unanswered: Unanswered::Fail,
        }
    }

    fn two_turns(d: &Decider, budget: Duration) -> SessionOptions<'_> {
        let turn = |prompt| TurnInput {
            prompt,
            decider: d,
            timeout: budget,
        };
        SessionOptions {
            turns: vec![turn("one"), turn("two")],
            timeout: Duration::from_secs(30),
            sdk_mcp: None,
            on_turn_end: None,
        }
    }

    const RESULT: &str = r#"{"type":"result","subtype":"success","is_error":false}"#;

    fn frames(rx: &Receiver<WriterCmd>) -> Vec<String> {
        rx.try_iter()
            .map(|c| match c {
                WriterCmd::Frame(f) => f,
                WriterCmd::Close => "<close>".into(),
            })
            .collect()
    }

    #[test]
    fn a_second_turn_while_one_runs_is_refused_and_sent_after_its_result() {
        let d = decider();
        let opts = two_turns(&d, Duration::from_secs(5));
        let (wtx, wrx) = mpsc::channel();
        let mut engine = Engine::new(&opts, wtx, Instant::now());
        let mut log = RunLog::starting(Instant::now());
        engine.begin_next_turn(&mut log).unwrap();
        let refused = engine.begin_next_turn(&mut log).unwrap_err();
        assert_eq!(
            refused,
            TurnError::Concurrent {
                running: 0,
                next: 1
            }
        );
        assert!(
            refused.to_string().contains("turns are sequential"),
            "{refused}"
        );
        let sent = frames(&wrx);
        assert_eq!(sent.len(), 1);
        assert!(sent[0].contains(r#""text":"one""#), "{sent:?}");

        engine
            .on_line(
                r#"{"type":"assistant","message":{"content":[]}}"#.into(),
                &mut log,
            )
            .unwrap();
        engine.on_line(RESULT.into(), &mut log).unwrap();
        let sent = frames(&wrx);
        assert_eq!(sent.len(), 1, "turn 2 follows turn 1's result: {sent:?}");
        assert!(sent[0].contains(r#""text":"two""#), "{sent:?}");
        engine.on_line(RESULT.into(), &mut log).unwrap();
        assert_eq!(
            frames(&wrx),
            ["<close>"],
            "stdin closes after the last result"
        );
        assert_eq!(
            engine.begin_next_turn(&mut log),
            Err(TurnError::NoTurnLeft { count: 2 })
        );
        let bounds: Vec<_> = log
            .turns
            .iter()
            .map(|m| {
                (
                    m.index,
                    m.event_start,
                    m.event_end,
                    m.frame_start,
                    m.frame_end,
                )
            })
            .collect();
        assert_eq!(
            bounds,
            [(0, 0, Some(2), 0, Some(1)), (1, 2, Some(3), 1, Some(2))]
        );
    }

    #[test]
    fn a_turn_past_its_budget_is_interrupted_then_failed_as_a_timeout() {
        let d = decider();
        let opts = two_turns(&d, Duration::from_millis(10));
        let (wtx, wrx) = mpsc::channel();
        let start = Instant::now();
        let mut engine = Engine::new(&opts, wtx, start);
        let mut log = RunLog::starting(start);
        engine.begin_next_turn(&mut log).unwrap();
        let _ = frames(&wrx);
        let later = engine.turn_started + Duration::from_millis(11);
        assert_eq!(engine.watch_turn_budget(later, &mut log), None);
        let sent = frames(&wrx);
        assert_eq!(
            sent,
            [
                r#"{"type":"control_request","request_id":"interrupt-1","request":{"subtype":"interrupt"}}"#
            ]
        );
        assert!(log.turns[0].interrupted);
        // Its result ends the session as a timeout, naming the turn.
        let (source, message) = engine.on_line(RESULT.into(), &mut log).unwrap_err();
        assert_eq!(source, ErrorSource::Timeout);
        assert_eq!(
            message,
            "turn 1 ran past its 10 ms budget and was interrupted"
        );
        // No result within the grace: a timeout too.
        let mut engine = Engine::new(&opts, mpsc::channel().0, start);
        let mut log = RunLog::starting(start);
        engine.begin_next_turn(&mut log).unwrap();
        let t = engine.turn_started + Duration::from_millis(11);
        assert_eq!(engine.watch_turn_budget(t, &mut log), None);
        let (source, _) = engine
            .watch_turn_budget(t + INTERRUPT_GRACE, &mut log)
            .unwrap();
        assert_eq!(source, ErrorSource::Timeout);
    }

    /// A stand-in agent that dies after its first turn unless it was
    /// started with `--resume`: the next turn reopens the session once and
    /// is delivered there once.
    #[test]
    fn an_agent_dead_between_turns_is_resumed_once_and_the_turn_delivered_once() {
        let script = r#"n=0
while IFS= read -r line; do
  case "$line" in
    *'"type":"user"'*)
      n=$((n+1))
      printf '{"type":"system","subtype":"init","session_id":"s1","tools":[]}\n{"type":"result","subtype":"success","is_error":false,"result":"pid %s args %s got %s"}\n' "$$" "$*" "$n"
      [ "$1" = "--resume" ] || exit 0 ;;
  esac
done"#;
        let cmd = AgentCommand {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into(), "sh".into()],
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            cwd: std::env::temp_dir(),
            sandbox: None,
        };
        let d = decider();
        let log = drive_session(&cmd, &two_turns(&d, Duration::from_secs(20)));
        assert_eq!(log.end, RunEnd::Completed, "{}", log.stderr_tail());
        assert_eq!(log.resumed_session.as_deref(), Some("s1"));
        let results: Vec<Value> = log
            .events
            .iter()
            .filter(|e| e.contains(r#""type":"result""#))
            .map(|e| serde_json::from_str::<Value>(e).unwrap()["result"].clone())
            .collect();
        assert_eq!(results.len(), 2, "{:?}", log.events);
        let (first, second) = (results[0].as_str().unwrap(), results[1].as_str().unwrap());
        assert!(first.ends_with("args  got 1"), "{first}");
        assert!(
            second.ends_with("args --resume s1 got 1"),
            "delivered once: {second}"
        );
        assert_ne!(
            first.split(' ').nth(1),
            second.split(' ').nth(1),
            "a second process"
        );
        assert!(!log.turns[0].resumed && log.turns[1].resumed);
        assert_eq!(log.turns[1].event_start, log.turns[0].event_end.unwrap());
        // Never resumed twice: the resumed agent's death ends the session.
        let script_dies = r#"IFS= read -r line; IFS= read -r line; printf '{"type":"system","subtype":"init","session_id":"s1","tools":[]}\n{"type":"result","subtype":"success","is_error":false}\n'"#;
        let cmd = AgentCommand {
            args: vec!["-c".into(), script_dies.into()],
            ..cmd
        };
        let mut three = two_turns(&d, Duration::from_secs(20));
        three.turns.push(three.turns[1]);
        let log = drive_session(&cmd, &three);
        assert!(matches!(log.end, RunEnd::Failed { .. }), "{:?}", log.end);
        assert_eq!(log.turns.iter().filter(|m| m.resumed).count(), 1);
    }

    /// A stand-in agent (a shell loop, no sandbox): a `result` carrying its
    /// pid for each user message it reads, exit at stdin EOF.
    #[test]
    fn a_session_of_two_turns_is_one_process_with_a_result_per_turn() {
        let script = r#"while IFS= read -r line; do
  case "$line" in
    *'"type":"user"'*) printf '{"type":"system","subtype":"init","session_id":"s1","tools":[]}
{"type":"result","subtype":"success","is_error":false,"result":"pid %s"}
' "$$" ;;
  esac
done"#;
        let dir = std::env::temp_dir();
        let cmd = AgentCommand {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            cwd: dir,
            sandbox: None,
        };
        let d = decider();
        let log = drive_session(&cmd, &two_turns(&d, Duration::from_secs(20)));
        assert_eq!(log.end, RunEnd::Completed, "{}", log.stderr_tail());
        let results: Vec<&String> = log
            .events
            .iter()
            .filter(|e| e.contains(r#""type":"result""#))
            .collect();
        assert_eq!(results.len(), 2, "{:?}", log.events);
        assert_eq!(results[0], results[1], "both turns answered by one process");
        let users = log
            .control_out
            .iter()
            .filter(|f| f.contains(r#""type":"user""#))
            .count();
        assert_eq!(users, 2);
        assert_eq!(log.turns.len(), 2);
        assert_eq!(log.turns[1].event_start, log.turns[0].event_end.unwrap());
    }

    #[test]
    fn iso_utc_matches_javascript() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_787_311_551_184);
        assert_eq!(iso_utc(t), "2026-08-21T11:25:51.184Z");
    }
}
