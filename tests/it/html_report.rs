//! `reel report`: the HTML pages of a recording, a rerun, a diff, a matrix
//! and an eval, opened in a real headless Chromium (support::browser): no
//! console error, no network request, the key facts in the rendered DOM
//! with scripts on and off, a hostile cassette's recorded markup shown
//! inert. Screenshots go to target/report-browser/ (and, with
//! REEL_UPDATE_SCREENSHOTS=1, to docs/img/ for the README). The pages'
//! structure is pinned by insta snapshots of their headings and sections.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::browser::{Browser, Loaded};
use crate::support::{self, CassetteDoc, Fixture, RunExt, reel, repo};

/// Writes the report of `args` into `out` (relative to `cwd`), checking exit 0.
fn report(cwd: &Path, args: &[&str], out: &Path) {
    let run = reel()
        .current_dir(cwd)
        .arg("report")
        .args(args)
        .arg("--out")
        .arg(out)
        .run();
    assert_eq!(run.code, 0, "reel report {args:?}: {}", run.stderr);
}

fn artifacts() -> PathBuf {
    let dir = repo().join("target/report-browser");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Opens `page` with scripts on and off; checks the page is clean and
/// holds `facts` both times; saves a screenshot named `name`.
fn open_clean(b: &mut Browser, page: &Path, name: &str, facts: &[&str]) -> Loaded {
    let off = b.open(page, false).expect("page loads with scripts off");
    let on = b.open(page, true).expect("page loads");
    for (mode, l) in [("scripts off", &off), ("scripts on", &on)] {
        assert!(l.errors.is_empty(), "{name} ({mode}): {:?}", l.errors);
        assert!(
            l.requests.is_empty(),
            "{name} ({mode}): requested {:?}",
            l.requests
        );
        assert!(
            l.dom.contains("</main>"),
            "{name} ({mode}): no <main> in the DOM"
        );
        let text = text_of(b);
        for f in facts {
            assert!(
                text.contains(f),
                "{name} ({mode}): {f:?} missing from the page text"
            );
        }
    }
    let shot = artifacts().join(format!("{name}.png"));
    b.screenshot(&shot, 2400.0).expect("screenshot");
    let in_readme = [
        "recording-delegate-count",
        "rerun",
        "diff",
        "matrix",
        "eval",
    ];
    if std::env::var_os("REEL_UPDATE_SCREENSHOTS").is_some() && in_readme.contains(&name) {
        let img = repo().join("docs/img");
        std::fs::create_dir_all(&img).unwrap();
        std::fs::copy(&shot, img.join(format!("report-{name}.png"))).unwrap();
    }
    on
}

/// The page's text as a reader sees it, closed `<details>` included (the
/// live document's, so it is what the browser parsed, not the file).
fn text_of(b: &mut Browser) -> String {
    b.eval("document.body.textContent")
        .unwrap()
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn browser() -> Result<Browser, String> {
    support::browser::chromium_bin()?;
    Browser::launch()
}

#[test]
fn bundled_recordings_render_clean_in_a_browser() {
    let mut b = support::require!(browser());
    let fx = Fixture::new();
    let cases: [(&str, &[&str]); 4] = [
        (
            "delegate-count",
            &[
                "delegate-count",
                "sub-agent",
                "Count the input lines",
                "subagent_dispatched",
                "outputs/count.txt",
                "hook_callback",
            ],
        ),
        (
            "pick-format",
            &[
                "Which format should the note use?",
                "answers delivered",
                "Markdown (Recommended)",
                "# Note",
            ],
        ),
        (
            "bash-policy",
            &[
                "permission",
                "deny",
                "denied by scenario policy",
                "rm -rf outputs",
            ],
        ),
        ("binary-output", &["binary-output", "sha256"]),
    ];
    for (name, facts) in cases {
        let page = fx.path(&format!("{name}.html"));
        report(
            &repo(),
            &[&format!("cassettes/{name}.cassette.json")],
            &page,
        );
        let loaded = open_clean(&mut b, &page, &format!("recording-{name}"), facts);
        eprintln!("{name}: loaded in {:?}", loaded.load_time);
    }
    // Scripts add the controls; the filter hides non-matching turns.
    let page = fx.path("delegate-count.html");
    b.open(&page, true).unwrap();
    let hidden = b
        .eval(
            "(() => { const i = document.querySelector('#controls input'); i.value = 'Write'; \
             i.dispatchEvent(new Event('input')); \
             return document.querySelectorAll('article.turn.hidden').length; })()",
        )
        .unwrap();
    assert!(hidden.as_u64().unwrap() > 0, "the filter hid no turn");
}

#[test]
fn every_bundled_cassette_renders() {
    let fx = Fixture::new();
    let mut failed = Vec::new();
    for c in support::bundled_cassettes() {
        let out = fx.path("page.html");
        let run = reel().arg("report").arg(&c).arg("--out").arg(&out).run();
        if run.code != 0 || !std::fs::read_to_string(&out).unwrap().contains("</html>") {
            failed.push(format!("{}: {}", c.display(), run.stderr));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}

/// A cassette whose every recorded string carries markup.
fn hostile_cassette(fx: &Fixture) -> PathBuf {
    const EVIL: &str = "<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\">";
    let doc = CassetteDoc::from_file(&repo().join("cassettes/pick-format.cassette.json"))
        .edit_lines("events", |line| {
            if line["type"] == "assistant"
                && let Some(blocks) = line["message"]["content"].as_array_mut()
            {
                for b in blocks {
                    if b["type"] == "text" {
                        b["text"] = json!(format!("{EVIL} said the model"));
                    }
                    if b["type"] == "tool_use" && b["name"] == "Write" {
                        b["input"]["content"] = json!(EVIL);
                    }
                }
            }
        })
        .edit(|doc| {
            doc["scenario"]["name"] = json!(format!("evil {EVIL}"));
            if let Some(a) = doc["artifacts"].as_array_mut() {
                a.push(json!({"path": format!("outputs/{EVIL}.html"), "bytes": 5,
                    "sha256": "0".repeat(64), "body": EVIL}));
            }
        });
    let path = fx.path("hostile.cassette.json");
    doc.write(&path);
    path
}

#[test]
fn a_hostile_cassettes_markup_is_shown_inert() {
    let fx = Fixture::new();
    let cassette = hostile_cassette(&fx);
    let page = fx.path("hostile.html");
    report(fx.root(), &[cassette.to_str().unwrap()], &page);
    let html = std::fs::read_to_string(&page).unwrap();
    // Escaped in the file: the page's one script is its own.
    assert_eq!(
        html.matches("<script>").count(),
        1,
        "a recorded <script> reached the page"
    );
    assert!(
        !html.contains("<img src=x"),
        "a recorded <img> reached the page"
    );
    assert!(
        !html.contains("<script>window"),
        "a recorded <script> reached the page"
    );
    let mut b = support::require!(browser());
    let loaded = open_clean(
        &mut b,
        &page,
        "hostile",
        &["<script>window.__pwned=1</script>", "said the model"],
    );
    assert!(loaded.requests.is_empty());
    assert_eq!(b.eval("typeof window.__pwned").unwrap(), "undefined");
    assert_eq!(
        b.eval("document.querySelectorAll('img[onerror], main script').length")
            .unwrap(),
        0
    );
}

#[test]
fn a_diff_of_two_recordings_renders_view_by_view() {
    let fx = Fixture::new();
    let page = fx.path("diff.html");
    report(
        &repo(),
        &[
            "--diff",
            "cassettes/pick-format.cassette.json",
            "cassettes/write-note.cassette.json",
        ],
        &page,
    );
    let mut b = support::require!(browser());
    open_clean(
        &mut b,
        &page,
        "diff",
        &[
            "differs",
            "tools",
            "answers",
            "files",
            "assertions",
            "AskUserQuestion",
        ],
    );
    let views = b
        .eval("document.querySelectorAll('section.view').length")
        .unwrap();
    assert_eq!(views, 6);
}

#[test]
fn a_matrix_renders_as_a_grid_with_links_and_first_changes() {
    let fx = Fixture::new();
    let page = fx.path("matrix.html");
    report(
        &repo(),
        &[
            "--matrix",
            support::data("report/matrix.json").to_str().unwrap(),
        ],
        &page,
    );
    let mut b = support::require!(browser());
    open_clean(
        &mut b,
        &page,
        "matrix",
        &[
            "Version matrix",
            "2.1.300",
            "pass_diverged",
            "first change",
            "<em>Plain text</em>",
        ],
    );
    let first = b
        .eval("document.querySelectorAll('td.cell.first').length")
        .unwrap();
    assert_eq!(
        first, 2,
        "pick-format changes at 2.1.300, delegate-count at 2.1.332"
    );
    let link = b
        .eval("document.querySelector('td.cell a').getAttribute('href')")
        .unwrap();
    assert_eq!(link, "reruns/csv-stats-2.1.250.html");
}

#[test]
fn an_eval_renders_rates_intervals_and_trials() {
    let fx = Fixture::new();
    let page = fx.path("eval.html");
    report(
        &repo(),
        &["--eval", support::data("report/eval").to_str().unwrap()],
        &page,
    );
    let mut b = support::require!(browser());
    // A real eval directory (tests/it/eval.rs writes it under
    // REEL_UPDATE_EVAL_FIXTURE=1): a skill broken since its last commit.
    open_clean(
        &mut b,
        &page,
        "eval",
        &[
            "regression",
            "primary",
            "not counted",
            "[-1.00, -0.45]",
            "100% (6/6, 6 attempted)",
            "ValueError: boom in report",
            "$0 — scripted",
            "history A: new",
            "<script>alert(1)</script>",
        ],
    );
    let drawn = b
        .eval("document.querySelectorAll('svg line.ci').length")
        .unwrap();
    assert_eq!(drawn, 2, "both rows have an interval");
    let trials = b
        .eval("document.querySelectorAll('tr.trial').length")
        .unwrap();
    assert_eq!(trials, 12, "every trial row is drawn");
}

/// The eval fixture's report with more passes than completed trials.
fn eval_with_bad_counts() -> Value {
    let mut r = support::read_json(&support::data("report/eval/report.json"));
    r["results"]["scenarios"][0]["trials"][0]["passed"] = json!(99);
    r
}

#[test]
fn bad_report_inputs_are_usage_errors_naming_the_field() {
    let fx = Fixture::new();
    let cases = [
        (
            "matrix",
            json!({"versions": ["1"], "cassettes": ["a"], "cells": [{"cassette": "a", "version": "2", "outcome": "pass"}]}),
            "cells[0].version",
        ),
        (
            "matrix",
            json!({"versions": ["1"], "cassettes": ["a"], "cells": [{"cassette": "a", "version": "1", "outcome": "pass", "link": "javascript:alert(1)"}]}),
            "cells[0].link",
        ),
        (
            "eval",
            json!({"tool": "reel", "command": "rerun", "results": {}}),
            "not \"eval\"",
        ),
        (
            "eval",
            json!({"tool": "reel", "command": "eval", "results": {"format": 1}}),
            "unknown field `format`",
        ),
        ("eval", eval_with_bad_counts(), "scenarios[0].trials (A)"),
        (
            "rerun",
            json!({"command": "replay", "results": []}),
            "`command` is \"replay\"",
        ),
    ];
    for (flag, input, want) in cases {
        let file = fx.path("input.json");
        std::fs::write(&file, input.to_string()).unwrap();
        let run = reel()
            .arg("report")
            .arg(format!("--{flag}"))
            .arg(&file)
            .run();
        assert_eq!(run.code, 2, "{flag}: {}", run.stderr);
        assert!(
            run.stderr.contains(want),
            "{flag}: {want:?} not in {}",
            run.stderr
        );
        assert!(
            run.stderr.contains("input.json"),
            "the error names the file: {}",
            run.stderr
        );
    }
    let run = reel().args(["report", "missing.cassette.json"]).run();
    assert_eq!(run.code, 2);
}

/// A big recording's page holds a window of turns, not all of them.
#[test]
fn a_long_recording_is_paged_and_clipped() {
    let fx = Fixture::new();
    let mut events = vec![
        json!({"type": "system", "subtype": "init", "cwd": "/w", "session_id": "s",
        "tools": ["Bash"], "mcp_servers": [], "skills": []})
        .to_string(),
    ];
    for i in 0..1200 {
        events.push(
            json!({"type": "assistant", "message": {"id": format!("msg_{i}"), "role": "assistant",
            "content": [{"type": "tool_use", "id": format!("toolu_{i}"), "name": "Bash",
                "input": {"command": format!("echo {i}")}}]}, "parent_tool_use_id": null})
            .to_string(),
        );
        events.push(json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result",
            "tool_use_id": format!("toolu_{i}"), "content": "x".repeat(20_000), "is_error": false}]},
            "parent_tool_use_id": null}).to_string());
    }
    let doc = CassetteDoc::minimal().set("events", Value::from(events));
    let cassette = fx.path("long.cassette.json");
    doc.write(&cassette);
    let page = fx.path("long.html");
    report(
        fx.root(),
        &[
            cassette.to_str().unwrap(),
            "--max-turns",
            "100",
            "--from-turn",
            "201",
        ],
        &page,
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("Turn 201<"), "the window starts at turn 201");
    assert!(
        html.contains("Turn 300<") && !html.contains("Turn 301<") && !html.contains("Turn 200<")
    );
    assert!(html.contains("This report shows turns 201–300 of 1,200."));
    assert!(
        html.contains("15,904 more bytes not shown (of 20,000)"),
        "bodies are clipped"
    );
    assert!(html.len() < 1_200_000, "the page is {} bytes", html.len());
}

/// The 50,000-event recording of the report bench (25,000 tool calls, each
/// with its result) renders with the default window, opens clean in the
/// browser, scrolls, and counts every call, not only the shown ones. Its
/// load time is written to target/report-browser/load-times.txt for
/// docs/benchmarks.md (a number to record, not a timed assertion).
#[test]
fn a_50k_event_recording_opens_and_scrolls_in_a_browser() {
    let mut b = support::require!(browser());
    let fx = Fixture::new();
    let mut events = vec![
        json!({"type": "system", "subtype": "init", "cwd": "/w", "session_id": "s",
        "tools": ["Bash"], "mcp_servers": [], "skills": []})
        .to_string(),
    ];
    for i in 0..25_000 {
        events.push(
            json!({"type": "assistant", "message": {"id": format!("msg_{i}"), "role": "assistant",
            "content": [{"type": "text", "text": format!("step {i}")},
                {"type": "tool_use", "id": format!("toolu_{i}"), "name": "Bash",
                "input": {"command": format!("echo {i}")}}]}, "parent_tool_use_id": null})
            .to_string(),
        );
        events.push(
            json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result",
            "tool_use_id": format!("toolu_{i}"), "content": format!("{i}\n{}", "y".repeat(900)),
            "is_error": false}]}, "parent_tool_use_id": null})
            .to_string(),
        );
    }
    let cassette = fx.path("big.cassette.json");
    CassetteDoc::minimal()
        .set("events", Value::from(events))
        .write(&cassette);
    let page = fx.path("big.html");
    report(fx.root(), &[cassette.to_str().unwrap()], &page);
    let loaded = open_clean(
        &mut b,
        &page,
        "recording-50k-events",
        &[
            "25,000",
            "This report shows turns 1–500 of 25,000.",
            "echo 499",
        ],
    );
    let scrolled = b
        .eval(
            "(() => { window.scrollTo(0, document.documentElement.scrollHeight);              return [window.scrollY, document.documentElement.scrollHeight]; })()",
        )
        .unwrap();
    let (y, height) = (scrolled[0].as_f64().unwrap(), scrolled[1].as_f64().unwrap());
    assert!(
        y > 0.0 && height > y,
        "the page scrolled to {y} of {height}"
    );
    let bytes = std::fs::metadata(&page).unwrap().len();
    let line = format!(
        "50,000-event recording page ({bytes} bytes): load event after {} ms\n",
        loaded.load_time.as_millis()
    );
    eprint!("{line}");
    std::fs::write(artifacts().join("load-times.txt"), line).unwrap();
}

#[test]
fn page_structure_snapshots() {
    let fx = Fixture::new();
    let outline = |args: &[&str]| {
        let page = fx.path("p.html");
        report(&repo(), args, &page);
        outline(&std::fs::read_to_string(&page).unwrap())
    };
    insta::assert_snapshot!(
        "recording_outline",
        outline(&["cassettes/delegate-count.cassette.json"])
    );
    insta::assert_snapshot!(
        "matrix_outline",
        outline(&["--matrix", "tests/data/report/matrix.json"])
    );
    insta::assert_snapshot!(
        "eval_outline",
        outline(&["--eval", "tests/data/report/eval"])
    );
    insta::assert_snapshot!(
        "diff_outline",
        outline(&[
            "--diff",
            "cassettes/pick-format.cassette.json",
            "cassettes/write-note.cassette.json"
        ])
    );
}

/// Headings, section ids, summaries and table headers: the page's skeleton.
fn outline(html: &str) -> String {
    let re = regex::Regex::new(
        r#"(?s)<(h[1-4]|summary|th)[^>]*>(.*?)</(?:h[1-4]|summary|th)>|<section[^>]* id="([^"]+)""#,
    )
    .unwrap();
    let tags = regex::Regex::new(r"<[^>]+>").unwrap();
    re.captures_iter(html)
        .map(|c| match c.get(3) {
            Some(id) => format!("section #{}", id.as_str()),
            None => {
                let text = tags.replace_all(&c[2], "");
                format!(
                    "{}: {}",
                    &c[1],
                    text.split_whitespace().collect::<Vec<_>>().join(" ")
                )
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A real rerun whose skill changed: the rerun page shows the divergence
/// side by side with its masked values marked.
#[test]
fn a_rerun_with_a_divergence_renders_side_by_side() {
    support::require!(support::claude_bin());
    let mut b = support::require!(browser());
    let s = crate::rerun::scratch();
    s.edit("skills/csv-stats/scripts/stats.sh", |t| {
        t.replace("rows += 1", "rows += 2")
    });
    s.commit(".", "break the skill");
    let (_, env, _) = crate::rerun::rerun_at(s.root(), "cassettes/csv-stats.cassette.json", &[]);
    let json = s.path("rerun.json");
    std::fs::write(&json, env.to_string()).unwrap();
    let page = s.path("rerun.html");
    report(s.root(), &["--rerun", "rerun.json"], &page);
    open_clean(
        &mut b,
        &page,
        "rerun",
        &[
            "Divergences (",
            "recorded",
            "now",
            "tool result",
            "\"rows\": 6",
            "csv-stats",
        ],
    );
    let sides = b
        .eval("document.querySelectorAll('.diverged .side').length")
        .unwrap();
    assert!(sides.as_u64().unwrap() >= 1);
}

#[test]
fn the_report_fixtures_match_their_published_schemas() {
    support::assert_schema(
        "report-matrix.json",
        &support::read_json(&support::data("report/matrix.json")),
    );
    support::assert_schema(
        "eval-report.json",
        &support::read_json(&support::data("report/eval/report.json")),
    );
}

#[test]
fn report_help() {
    let run = reel().args(["report", "--help"]).run();
    assert_eq!(run.code, 0);
    insta::assert_snapshot!("report_help", run.stdout);
}

/// The rerun page shows evidence as it was (issue 39): a traceback's
/// `<module>` and a number beside a duration-like name are the text's own,
/// not masked values; a note carried as a GitHub annotation line shows
/// its text, not `::notice::`; `reel report` says where it wrote.
#[test]
fn a_rerun_page_shows_the_evidence_as_it_was() {
    support::require!(support::claude_bin());
    let s = crate::rerun::scratch();
    s.write(
        "skills/csv-stats/scripts/stats.sh",
        "#!/bin/sh\nprintf 'Traceback (most recent call last):\\n  File \"stats.py\", line 3, \
         in <module>\\n    self.elapsed = 1000 / self.count\\nZeroDivisionError\\n' >&2\nexit 1\n",
    );
    s.commit(".", "break the skill");
    let (code, mut env, _) =
        crate::rerun::rerun_at(s.root(), "cassettes/csv-stats.cassette.json", &[]);
    assert_eq!(code, 1, "{env}");
    env["results"][0]["rerun"]["notes"]
        .as_array_mut()
        .unwrap()
        .push("::notice:: [replay] a note for the page".into());
    std::fs::write(s.path("rerun.json"), env.to_string()).unwrap();
    let run = reel()
        .current_dir(s.root())
        .args(["report", "--rerun", "rerun.json", "--out", "rerun.html"])
        .run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr.lines().next().unwrap_or(""), {
        let bytes = std::fs::metadata(s.path("rerun.html")).unwrap().len();
        format!("wrote rerun.html ({bytes} bytes)")
    });
    // askama escapes `<`, `>` and `"` as numeric references.
    let page = s
        .read("rerun.html")
        .replace("&#60;", "<")
        .replace("&#62;", ">")
        .replace("&#34;", "\"");
    assert!(
        page.contains("line 3, in <module>\n"),
        "the traceback is shown: {page}"
    );
    assert!(
        !page.contains("\"masked: a volatile value\"><module>"),
        "{page}"
    );
    assert!(page.contains("self.elapsed = 1000 / self.count"));
    assert!(!page.contains("<duration>"), "no mask placeholder is shown");
    assert!(page.contains("a note for the page"));
    assert!(!page.contains("::notice::"));
}

/// The recording page (issue 39): run paths as the rerun page spells them
/// (`{{cwd}}`), a written file's content as its lines (not one escaped JSON
/// string), each tool input once (not again under its permission), and the
/// evidence of each passing assertion.
#[test]
fn a_recording_page_shows_inputs_once_as_text_with_run_placeholders() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("run.html");
    report(&repo(), &["cassettes/weekly-report.cassette.json"], &out);
    let page = std::fs::read_to_string(&out)
        .unwrap()
        .replace("&#60;", "<")
        .replace("&#62;", ">")
        .replace("&#34;", "\"");
    assert!(
        page.contains(
            "file_path: {{cwd}}/outputs/report.md\ncontent: |\n  # Weekly report: Platform\n"
        ),
        "{page}"
    );
    assert!(!page.contains("/work/outputs/"), "a raw run path: {page}");
    assert!(
        !page.contains("\\n## Done"),
        "an escaped JSON string: {page}"
    );
    assert!(!page.contains(">tool input</summary>"), "{page}");
    assert!(
        page.contains(
            "<td class=\"text\">artifact_text: outputs/report.md satisfied every matcher</td>"
        ),
        "{page}"
    );
}
