//! A real headless Chromium, driven over the DevTools protocol on a pipe
//! (`--remote-debugging-pipe`: commands in on fd 3, replies and events out
//! on fd 4, each message NUL-terminated JSON).
//!
//! Written by hand, not with a CDP crate: the tests need eight commands
//! and three event kinds, and the crates that wrap the protocol generate
//! bindings for all of it (a long compile on every clean build) and speak
//! it over a websocket on a TCP port; a pipe needs no port and no extra
//! dependency.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Where Debian's `chromium` package puts the browser, or `REEL_CHROMIUM`.
pub fn chromium_bin() -> Result<PathBuf, String> {
    if let Some(bin) = std::env::var_os("REEL_CHROMIUM") {
        return Ok(PathBuf::from(bin));
    }
    for candidate in ["/usr/bin/chromium", "/usr/bin/chromium-browser"] {
        if Path::new(candidate).is_file() {
            return Ok(candidate.into());
        }
    }
    Err(
        "Chromium is missing (scripts/test.sh installs Debian's `chromium`; \
         or set REEL_CHROMIUM)"
            .into(),
    )
}

/// What a page did while it loaded.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Console errors, uncaught exceptions and browser log errors (CSP
    /// violations among them).
    pub errors: Vec<String>,
    /// URLs requested other than the page itself and `data:` images.
    pub requests: Vec<String>,
    /// `document.documentElement.outerHTML` after load.
    pub dom: String,
    /// Navigation start to the load event.
    pub load_time: Duration,
}

pub struct Browser {
    child: Child,
    to: std::io::PipeWriter,
    from: Receiver<Value>,
    next_id: u64,
    session: String,
    events: VecDeque<Value>,
    _profile: tempfile::TempDir,
}

impl Browser {
    pub fn launch() -> Result<Browser, String> {
        let bin = chromium_bin()?;
        let profile = tempfile::tempdir().map_err(|e| e.to_string())?;
        let (cmd_read, cmd_write) = std::io::pipe().map_err(|e| e.to_string())?;
        let (out_read, out_write) = std::io::pipe().map_err(|e| e.to_string())?;
        let (r, w) = (cmd_read.as_raw_fd(), out_write.as_raw_fd());
        let mut command = Command::new(&bin);
        command
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-default-apps",
                "--disable-extensions",
                "--no-first-run",
                "--no-default-browser-check",
                "--hide-scrollbars",
                "--remote-debugging-pipe",
                "--window-size=1280,900",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(if std::env::var_os("REEL_CHROMIUM_LOG").is_some() {
                Stdio::inherit()
            } else {
                Stdio::null()
            });
        // SAFETY: only async-signal-safe calls (fcntl, dup2) between fork
        // and exec. Both ends first move above 4 (one may sit on 3 or 4
        // already), then land on 3 and 4, which dup2 leaves open across exec.
        unsafe {
            command.pre_exec(move || {
                let high_r = libc::fcntl(r, libc::F_DUPFD, 10);
                let high_w = libc::fcntl(w, libc::F_DUPFD, 10);
                if high_r < 0
                    || high_w < 0
                    || libc::dup2(high_r, 3) < 0
                    || libc::dup2(high_w, 4) < 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        drop((cmd_read, out_write));
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(out_read);
            let mut buf = Vec::new();
            while reader.read_until(0, &mut buf).is_ok_and(|n| n > 0) {
                buf.pop_if(|b| *b == 0);
                if let Ok(v) = serde_json::from_slice::<Value>(&buf)
                    && tx.send(v).is_err()
                {
                    break;
                }
                buf.clear();
            }
        });
        let mut b = Browser {
            child,
            to: cmd_write,
            from: rx,
            next_id: 0,
            session: String::new(),
            events: VecDeque::new(),
            _profile: profile,
        };
        let target = b.call("Target.createTarget", json!({"url": "about:blank"}))?;
        let target_id = target["targetId"].as_str().unwrap_or_default().to_owned();
        let attached = b.call(
            "Target.attachToTarget",
            json!({"targetId": target_id, "flatten": true}),
        )?;
        b.session = attached["sessionId"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        for domain in ["Page", "Runtime", "Log", "Network"] {
            b.call(&format!("{domain}.enable"), json!({}))?;
        }
        Ok(b)
    }

    /// Sends one command (to the page's session once attached) and waits
    /// for its reply, keeping the events that arrive meanwhile.
    pub fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            msg["sessionId"] = json!(self.session);
        }
        let mut bytes = serde_json::to_vec(&msg).expect("JSON");
        bytes.push(0);
        self.to
            .write_all(&bytes)
            .map_err(|e| format!("{method}: {e}"))?;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self
                .from
                .recv_timeout(left)
                .map_err(|e| format!("{method}: no reply ({e})"))?;
            if v["id"].as_u64() == Some(id) {
                if let Some(err) = v.get("error") {
                    return Err(format!("{method}: {err}"));
                }
                return Ok(v["result"].clone());
            }
            self.events.push_back(v);
        }
    }

    /// Waits for an event named `method`.
    fn wait_for(&mut self, method: &str) -> Result<(), String> {
        if let Some(i) = self.events.iter().position(|e| e["method"] == method) {
            self.events.remove(i);
            return Ok(());
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self
                .from
                .recv_timeout(left)
                .map_err(|e| format!("waiting for {method}: {e}"))?;
            if v["method"] == method {
                return Ok(());
            }
            self.events.push_back(v);
        }
    }

    /// Opens `file` (scripts on or off) and reports what the page did.
    pub fn open(&mut self, file: &Path, scripts: bool) -> Result<Loaded, String> {
        self.events.clear();
        self.call(
            "Emulation.setScriptExecutionDisabled",
            json!({"value": !scripts}),
        )?;
        let url = format!(
            "file://{}",
            file.canonicalize().map_err(|e| e.to_string())?.display()
        );
        let started = Instant::now();
        self.call("Page.navigate", json!({"url": url}))?;
        self.wait_for("Page.loadEventFired")?;
        let load_time = started.elapsed();
        let dom = self.eval("document.documentElement.outerHTML")?;
        // Events already queued (console output of the load) are read here.
        let _ = self.call("Runtime.evaluate", json!({"expression": "0"}));
        let mut loaded = Loaded {
            dom: dom.as_str().unwrap_or_default().to_owned(),
            load_time,
            ..Loaded::default()
        };
        while let Ok(v) = self.from.try_recv() {
            self.events.push_back(v);
        }
        for e in self.events.drain(..) {
            let p = &e["params"];
            match e["method"].as_str().unwrap_or("") {
                "Runtime.consoleAPICalled" if p["type"] == "error" => {
                    loaded.errors.push(format!("console.error: {}", p["args"]))
                }
                "Runtime.exceptionThrown" => loaded
                    .errors
                    .push(format!("exception: {}", p["exceptionDetails"])),
                "Log.entryAdded" if p["entry"]["level"] == "error" => {
                    loaded.errors.push(format!("log: {}", p["entry"]["text"]))
                }
                "Network.requestWillBeSent" => {
                    let u = p["request"]["url"].as_str().unwrap_or_default();
                    if u != url && !u.starts_with("data:") {
                        loaded.requests.push(u.to_owned());
                    }
                }
                _ => {}
            }
        }
        Ok(loaded)
    }

    /// Evaluates `expression` in the page and returns its value.
    pub fn eval(&mut self, expression: &str) -> Result<Value, String> {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
        )?;
        if let Some(ex) = r.get("exceptionDetails") {
            return Err(format!("{expression}: {ex}"));
        }
        Ok(r["result"]["value"].clone())
    }

    /// A PNG of the page's top `height` CSS pixels (the whole page when shorter).
    pub fn screenshot(&mut self, to: &Path, height: f64) -> Result<(), String> {
        use base64::Engine;
        let full = self
            .eval("document.documentElement.scrollHeight")?
            .as_f64()
            .unwrap_or(900.0);
        let shot = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true,
                   "clip": {"x": 0, "y": 0, "width": 1280, "height": full.min(height), "scale": 1}}),
        )?;
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap_or_default())
            .map_err(|e| e.to_string())?;
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        }
        std::fs::write(to, png).map_err(|e| e.to_string())
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.call("Browser.close", json!({}));
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
