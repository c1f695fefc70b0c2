//! The edges of a run (issue 38): what reel prints from a hostile cassette
//! or a hostile run's files is inert in every report, and reel's own work
//! after the run is bounded. Checked from outside: the raw bytes of every
//! report, reel's peak memory read from `/proc`, the kept run directory's
//! mode.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{self, CassetteDoc, Fixture, RunExt, claude_bin, reel, repo};

/// Every hostile class at once: a line break starting a forged workflow
/// command, a carriage return, a right-to-left override, an isolate, an
/// OSC 52 clipboard write, a bell, and a legacy `##[` command.
const HOSTILE: &str = "x\n::error title=forged::pwned\r\u{202e}evil\u{2066}\u{1b}]52;c;Zm9v\u{7} \
                       ##[error]legacy";

/// Markdown that would fetch or link something if the job summary rendered
/// it: an external image, an HTML image, a link, a bare URL.
const MARKDOWN: &str = "![x](http://evil.example/p.png) <img src=http://evil.example/i.png> \
                        [y](http://evil.example/) http://evil.example/bare";

/// The file name a hostile run leaves in `outputs/`.
fn hostile_name() -> String {
    format!("outputs/note{HOSTILE}.md")
}

/// Fails unless `bytes` (one report, `what`) is inert: no terminal control
/// (ESC, BEL, CR), no line the Actions runner would read as a forged
/// command; `text` (every report but JSON, which is data: its strings are
/// JSON-escaped, controls as `\u001b`, and otherwise kept) also no bidi
/// override or isolate and no legacy `##[` command.
fn assert_inert(what: &str, bytes: &str, text: bool) {
    for (c, name) in [('\u{1b}', "ESC"), ('\u{7}', "BEL"), ('\r', "CR")] {
        assert!(!bytes.contains(c), "{what}: a raw {name}:\n{bytes}");
    }
    if text {
        for c in ['\u{202e}', '\u{2066}'] {
            assert!(
                !bytes.contains(c),
                "{what}: a raw U+{:04X}:\n{bytes}",
                c as u32
            );
        }
    }
    for line in bytes.lines() {
        let t = line.trim_start();
        assert!(
            !t.starts_with("::error title=forged") && !t.starts_with("::add-mask"),
            "{what}: a forged workflow command: {line:?}"
        );
    }
    assert!(
        !text || !bytes.contains("##[error]legacy"),
        "{what}: a legacy workflow command:\n{bytes}"
    );
}

/// The bash-policy recording with every class planted: in a tool input, a
/// recorded tool result, the scenario's name, an assertion (so replay fails
/// and prints it), and an output file's name and body.
fn hostile_cassette(fx: &Fixture) -> (String, String) {
    let base = repo().join("cassettes/bash-policy.cassette.json");
    let original = "cassettes/original.cassette.json";
    fx.copy_in(&base, original);
    let mut first = true;
    let doc = CassetteDoc::from_file(&base)
        .edit_lines("events", |line| {
            let Some(blocks) = line["message"]["content"].as_array_mut() else {
                return;
            };
            for b in blocks.iter_mut() {
                if b["type"] == "tool_use" && first {
                    b["input"]["command"] = json!(format!("echo {HOSTILE}"));
                    first = false;
                }
                if b["type"] == "tool_result" && b["content"].is_string() {
                    b["content"] = json!(format!("{HOSTILE}\n{MARKDOWN}"));
                }
            }
        })
        .set("scenario.name", json!(format!("bash{HOSTILE}")))
        .edit(|d| {
            let asserts = d["scenario"]["assert"].as_array_mut().unwrap();
            asserts.push(json!({"tool_result_contains": format!("{HOSTILE}{MARKDOWN}!")}));
            d["artifacts"] = json!([{
                "path": hostile_name(),
                "bytes": 3,
                "sha256": "0".repeat(64),
                "body": format!("{HOSTILE}\n{MARKDOWN}\n"),
            }]);
        });
    let path = "cassettes/hostile.cassette.json";
    doc.write(&fx.path(path));
    (path.to_owned(), original.to_owned())
}

/// Replay (text, `--verbose`, JSON, JUnit, annotations, the job summary),
/// `show`, `diff` and `verify-cassettes` over the planted cassette: every
/// report's raw bytes are inert.
#[test]
fn hostile_strings_are_inert_in_every_report() {
    let fx = Fixture::new();
    let (hostile, original) = hostile_cassette(&fx);
    let summary = fx.path("summary.md");
    let junit = fx.path("junit.xml");
    let gh = |args: &[&str]| {
        reel()
            .current_dir(fx.root())
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_STEP_SUMMARY", &summary)
            .args(args)
            .run()
    };
    let junit_arg = junit.display().to_string();
    let replay = gh(&["replay", &hostile, "--junit", &junit_arg]);
    assert_eq!(replay.code, 1, "{}", replay.stderr);
    assert!(replay.stderr.contains("::error file="), "{}", replay.stderr);
    assert_inert("replay (status, annotations)", &replay.stderr, true);
    let verbose = gh(&["replay", &hostile, "--verbose"]);
    assert_inert("replay --verbose", &verbose.stderr, true);
    let json = gh(&["replay", &hostile, "--output-format", "json"]);
    let _: Value = serde_json::from_str(&json.stdout).expect("JSON on stdout");
    assert_inert("replay JSON", &json.stdout, false);
    assert_inert("replay JSON (stderr)", &json.stderr, true);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_inert("replay JUnit", &xml, true);

    let verify = gh(&["verify-cassettes", &hostile]);
    assert_inert(
        "verify-cassettes",
        &format!("{}{}", verify.stdout, verify.stderr),
        true,
    );

    let text = std::fs::read_to_string(&summary).unwrap();
    assert_inert("job summary", &text, true);
    for link in ["http://evil", "<img", "!["] {
        assert!(!text.contains(link), "job summary: {link}:\n{text}");
    }

    let show = reel().current_dir(fx.root()).args(["show", &hostile]).run();
    assert_eq!(show.code, 0, "{}", show.stderr);
    assert!(show.stdout.contains("\\x1b]52"), "{}", show.stdout);
    assert_inert("show", &show.stdout, true);
    let diff = reel()
        .current_dir(fx.root())
        .args(["diff", &original, &hostile])
        .run();
    assert_inert("diff", &format!("{}{}", diff.stdout, diff.stderr), true);
}

/// The peak resident memory of a running process (`VmHWM`, bytes), polled
/// until it exits; the last value read.
fn peak_rss_of(pid: u32, until: impl Fn() -> bool) -> u64 {
    let mut peak = 0;
    while !until() {
        if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status"))
            && let Some(kb) = status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            peak = peak.max(kb * 1024);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    peak
}

/// reel's bound on its own memory over a hostile run's files.
const RSS_BOUND: u64 = 512 << 20;

/// A run leaves a 3 GiB sparse file, a 1,400-level directory and an output
/// file named with a line break and a forged command: reel never reads the
/// sparse file (its peak memory stays under [`RSS_BOUND`]), stops the walk at
/// its depth budget and says so, prints the name inert, and keeps the run
/// directory private (0700).
#[test]
fn a_rerun_s_post_run_work_is_bounded_and_its_names_inert() {
    support::require!(claude_bin());
    let bin = claude_bin().unwrap();
    let fx = crate::rerun::scratch();
    let deep = "d=outputs/deep; for i in $(seq 1400); do d=$d/d; done; mkdir -p $d";
    let name = hostile_name().replace('\n', "\\n").replace('\r', "\\r");
    let name = name
        .replace('\u{1b}', "\\033")
        .replace('\u{7}', "\\007")
        .replace('\u{202e}', "\\342\\200\\256")
        .replace('\u{2066}', "\\342\\201\\246");
    let command = format!(
        "mkdir -p outputs && truncate -s 3G outputs/huge.bin; {deep}; \
         touch \"$(printf '{name}')\""
    );
    let base = repo().join("cassettes/bash-policy.cassette.json");
    let mut turn = 0;
    let doc = CassetteDoc::from_file(&base)
        .edit_lines("events", |line| {
            let Some(blocks) = line["message"]["content"].as_array_mut() else {
                return;
            };
            for b in blocks.iter_mut().filter(|b| b["type"] == "tool_use") {
                b["input"]["command"] = json!(if turn == 0 { command.as_str() } else { "true" });
                turn += 1;
            }
        })
        .set(
            "scenario.answers",
            json!([{"when_tool": "Bash", "allow_if": "true", "else": "deny"}]),
        );
    doc.write(&fx.path("cassettes/edges.cassette.json"));
    let runs = tempfile::tempdir().unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_reel"))
        .current_dir(fx.root())
        .env("REEL_CLAUDE_BIN", &bin)
        .env("REEL_RUNS_DIR", runs.path())
        .env("GITHUB_ACTIONS", "true")
        .env_remove("GITHUB_STEP_SUMMARY")
        .args(["rerun", "cassettes/edges.cassette.json", "--keep-run-dir"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let child = std::sync::Arc::new(std::sync::Mutex::new(Some(child)));
    let waiter = {
        let child = std::sync::Arc::clone(&child);
        std::thread::spawn(move || {
            let c = child.lock().unwrap().take().unwrap();
            c.wait_with_output().unwrap()
        })
    };
    let peak = peak_rss_of(pid, || waiter.is_finished());
    let out = waiter.join().unwrap();
    eprintln!("reel peak RSS over the hostile run: {} MiB", peak >> 20);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        peak < RSS_BOUND,
        "reel's peak RSS {peak} bytes is over {RSS_BOUND}\n{stderr}"
    );
    assert_inert("rerun", &format!("{stdout}{stderr}"), true);
    assert!(
        stderr.contains("output changed: outputs/notex\\n::error title=forged::pwned\\r\\u{202e}"),
        "the hostile file name is not shown escaped on one line:\n{stderr}"
    );

    let kept = kept_run(runs.path());
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&kept).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o700, "{}", kept.display());
    let outputs = outputs_of(&kept);
    let huge = outputs.join("huge.bin");
    // A file-size limit on the agent may refuse the sparse file: then it was
    // contained before reel could be asked to read it.
    if std::fs::metadata(&huge).is_ok_and(|m| m.len() == 3 << 30) {
        assert!(
            stderr.contains("not read (over budget"),
            "no over-budget notice for the sparse file:\n{stderr}"
        );
    }
    assert!(
        outputs.join("deep/d/d/d").is_dir(),
        "the deep directory was not made:\n{stderr}"
    );
    assert!(
        stderr.contains("deeper than 128 levels not walked (over budget)"),
        "no depth notice:\n{stderr}"
    );
}

/// The run's `outputs/` directory, wherever under the run directory the
/// work root is.
fn outputs_of(run: &Path) -> std::path::PathBuf {
    let mut dirs = vec![(run.to_path_buf(), 0)];
    while let Some((dir, depth)) = dirs.pop() {
        let out = dir.join("outputs");
        if out.join("huge.bin").symlink_metadata().is_ok() || out.join("deep").is_dir() {
            return out;
        }
        if depth < 4 {
            for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    dirs.push((e.path(), depth + 1));
                }
            }
        }
    }
    panic!("no outputs/ with the run's files under {}", run.display());
}

/// The one kept run directory under a runs root (`<root>/<slug>/local_*`).
fn kept_run(root: &Path) -> std::path::PathBuf {
    let mut found = Vec::new();
    for slug in std::fs::read_dir(root).unwrap() {
        for run in std::fs::read_dir(slug.unwrap().path()).unwrap() {
            found.push(run.unwrap().path());
        }
    }
    assert_eq!(found.len(), 1, "{found:?}");
    found.remove(0)
}
