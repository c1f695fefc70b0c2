#!/usr/bin/env python3
"""Generates reel's hostile-cassette corpus (tests/data/hostile/*.cassette.json).

Each case is a cassette an attacker or a broken tool could hand to `reel replay` / `verify-cassettes`.
reel must answer each with a clear error (exit 2) or a documented failing verdict (exit 1) within seconds:
never a panic, never a hang, never a write outside its temp dir. `cases.json` records what each case probes
and the exit codes accepted. Run `python3 generate.py` to rebuild; the files are committed so they can also
seed fuzzers. The giant-line case is generated at test time (too big to commit).
"""
import base64, hashlib, json, os

HERE = os.path.dirname(os.path.abspath(__file__))
CANARY = "/tmp/reel-hostile-canary"  # tests assert nothing is ever created here

def sha(b): return hashlib.sha256(b).hexdigest()

def base(**over):
    c = {
        "$schema": "https://raw.githubusercontent.com/yaniv-golan/cowork-harness/main/schema/cassette.v12.json",
        "generator": "cowork-harness",
        "cassetteVersion": 12,
        "scenario": {"name": "hostile", "baseline": "latest", "session": "(inline)", "fidelity": "protocol",
                     "execution": "local", "lane": "local", "prompt": "p", "answers": [], "expect_denied": [],
                     "assert": [{"result": "success"}], "skills": [], "requires_capabilities": []},
        "events": [
            json.dumps({"type": "system", "subtype": "init", "tools": ["Write"], "skills": [], "mcp_servers": []}),
            json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": "done"}]}}),
            json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "done",
                        "num_turns": 1, "total_cost_usd": 0.01, "usage": {"input_tokens": 1, "output_tokens": 1}}),
        ],
        "controlOut": [json.dumps({"type": "control_request", "request_id": "init-1",
                                   "request": {"subtype": "initialize"}})],
        "effectiveFidelity": "protocol",
        "artifacts": [],
        "userVisibleRoots": ["outputs"],
        "preRunPaths": [], "preRunOrigin": "local-walk", "preRunHashes": {},
        "fingerprint": {"baseline": "1.34493.1", "hashFormat": "jcs1", "promptAssetsHash": "491afe2862dc67ea"},
    }
    c.update(over)
    return c

def art(path, body=b"x", **kw):
    e = {"path": path, "bytes": len(body), "sha256": sha(body), "body": body.decode("utf-8", "replace")}
    e.update(kw)
    return e

def with_assert(items, **over):
    c = base(**over)
    c["scenario"] = dict(c["scenario"], **{"assert": items})
    return c

def with_artifacts(arts, items=None):
    c = base(artifacts=arts)
    c["scenario"] = dict(c["scenario"], **{"assert": items or [{"file_exists": "outputs/a.txt"}]})
    return c

def deep(n):
    s = "[" * n + "]" * n
    return s

cases = {}
def add(name, probe, content, rc=(1, 2)):
    cases[name] = {"probe": probe, "rc": list(rc)}
    path = os.path.join(HERE, name + ".cassette.json")
    data = content if isinstance(content, (bytes, str)) else json.dumps(content, indent=2)
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(path, mode) as f: f.write(data)

# --- artifact paths that try to leave the temp dir -------------------------------------------------
add("path-traversal", "artifact path with ..", with_artifacts([art("../../" + CANARY.lstrip("/") + "-1")]))
add("path-absolute", "absolute artifact path", with_artifacts([art(CANARY + "-2")]))
add("path-drive-letter", "Windows drive letter", with_artifacts([art("C:\\reel-canary.txt")]))
add("path-drive-relative", "Windows drive-relative path", with_artifacts([art("C:reel-canary.txt")]))
add("path-unc", "UNC prefix", with_artifacts([art("\\\\server\\share\\reel-canary.txt")]))
add("path-backslash-traversal", "backslash traversal", with_artifacts([art("outputs\\..\\..\\reel-canary.txt")]))
add("path-nul", "NUL byte in a path", with_artifacts([art("outputs/a\u0000b.txt")]))
add("path-empty", "empty artifact path", with_artifacts([art("")]))
add("path-dot-dot-inner", "inner ./.. segments", with_artifacts([art("outputs/./../../reel-canary.txt")]))
add("path-through-symlink", "a file entry under a symlink entry",
    with_artifacts([{"path": "outputs/link", "bytes": 0, "sha256": "", "linkKind": "symlink"},
                    art("outputs/link/escaped.txt")]))
add("link-hardlink", "hardlink entry is never materialised as a link",
    with_artifacts([{"path": "outputs/a.txt", "bytes": 0, "sha256": "", "linkKind": "hardlink"}]))
add("path-duplicate", "same path twice with different bodies",
    with_artifacts([art("outputs/a.txt", b"one"), art("outputs/a.txt", b"two")]))
add("path-very-long", "a 10,000-character path", with_artifacts([art("outputs/" + "a" * 10000)]))
# --- bodies ---------------------------------------------------------------------------------------
bad = art("outputs/a.txt", b"real"); bad["body"] = "tampered"
add("body-sha-mismatch", "inlined body does not match its sha256", with_artifacts([bad]))
b64 = {"path": "outputs/a.txt", "bytes": 3, "sha256": sha(b"abc"), "body": "!!!not base64!!!", "encoding": "base64"}
add("body-bad-base64", "invalid base64 body", with_artifacts([b64]))
add("body-bytes-negative", "negative byte count", with_artifacts([dict(art("outputs/a.txt"), bytes=-5)]))
add("artifacts-not-array", "artifacts is an object", base(artifacts={"path": "x"}))
# --- document shape -------------------------------------------------------------------------------
add("truncated", "file cut mid-way", json.dumps(base(), indent=2)[:700])
add("empty-file", "zero bytes", "")
add("null-document", "the document is null", "null")
add("array-document", "the document is an array", "[]")
add("invalid-utf8", "invalid UTF-8 bytes", json.dumps(base(), indent=2).encode().replace(b'"p"', b'"\xff\xfe"'))
add("deep-nesting-document", "10,000-deep nesting in the document",
    json.dumps(base(), indent=2)[:-1] + ',\n  "x": ' + deep(10000) + "\n}")
add("events-not-array", "events is a string", base(events="nope"))
add("events-non-strings", "events holds numbers", base(events=[1, 2, 3]))
add("scenario-missing", "no scenario", {k: v for k, v in base().items() if k != "scenario"})
add("version-string", "cassetteVersion as a string", base(cassetteVersion="12"))
add("version-object", "cassetteVersion as an object", base(cassetteVersion={"v": 12}))
add("version-negative", "cassetteVersion negative", base(cassetteVersion=-1))
add("version-float", "cassetteVersion fractional", base(cassetteVersion=12.5))
add("version-huge", "cassetteVersion 1e30", json.dumps(base(), indent=2).replace('"cassetteVersion": 12', '"cassetteVersion": 1e30'))
add("version-future", "cassetteVersion 99 (tolerated load, failing verdict)", base(cassetteVersion=99), rc=(1,))
add("number-out-of-range-unknown-field", "1e999 in a field reel does not read: tolerated like JSON.parse (Infinity)",
    json.dumps(base(), indent=2).replace('"promptAssetsHash"', '"x": 1e999, "promptAssetsHash"'), rc=(0,))
c = with_assert([{"max_cost_usd": 1}])
c["events"][2] = c["events"][2].replace('"total_cost_usd": 0.01', '"total_cost_usd": 1e999')
add("number-out-of-range-cost", "1e999 as the recorded cost fails max_cost_usd", c, rc=(1,))
add("duplicate-keys", "duplicate top-level keys", json.dumps(base(), indent=2)[:-1] + ',\n  "cassetteVersion": 8\n}')
add("lone-surrogate", "lone surrogate escapes in strings", json.dumps(base(), indent=2).replace('"p"', '"\\ud800\\udfff\\ud800"'))
# --- event stream ---------------------------------------------------------------------------------
c = base(); c["events"] = c["events"] + ["[" * 10000 + "]" * 10000]
add("event-deep-nesting", "10,000-deep JSON inside one event line", c)
c = base(); c["events"] = c["events"][:2]
add("events-never-end", "no result event", c, rc=(1,))
c = base(); c["events"] = ["{\"type\":\"assistant\"", "garbage \u0000 line", "{}"]
add("events-garbage", "malformed event lines", c, rc=(1,))
c = base(); c["controlOut"] = c["controlOut"] * 2
add("controlout-duplicate-id", "duplicate request ids in controlOut", c, rc=(0, 1))
c = with_assert([{"question_asked": "anything"}])
c["controlOut"].append(json.dumps({"type": "control_response", "response": {"subtype": "success",
    "request_id": "never-asked", "response": {"behavior": "allow", "updatedInput": {"answers": {"q": "a"}}}}}))
add("controlout-answer-unasked", "an answer to a question never asked", c, rc=(1,))
# --- hostile patterns -----------------------------------------------------------------------------
c = with_assert([{"transcript_matches": "^(a+)+$"}])
c["events"][1] = json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": "a" * 5000 + "!"}]}})
add("regex-catastrophic", "exponential-backtracking regex over a long transcript", c, rc=(1, 2))
c = with_assert([{"transcript_matches": "(x+x+)+y"}])
c["events"][1] = json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": "x" * 5000}]}})
add("regex-catastrophic-nested", "nested quantifiers", c, rc=(1, 2))
c = with_assert([{"transcript_matches": "(?<=(a+)+)b"}])
c["events"][1] = json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": "a" * 5000}]}})
add("regex-lookbehind-blowup", "backtracking lookbehind", c, rc=(1, 2))
add("regex-invalid", "invalid regex", with_assert([{"transcript_matches": "(unclosed"}]), rc=(1,))
add("glob-catastrophic", "glob built to backtrack",
    with_assert([{"tool_called": "*a*a*a*a*a*a*a*a*a*a*a*a*b"}]), rc=(1, 2))
add("path-glob-catastrophic", "path glob built to backtrack",
    with_artifacts([art("outputs/" + "a/" * 200 + "b")], [{"no_unexpected_files": ["**/**/**/**/**/**/**/**/**/x"]}]), rc=(1, 2))
# --- special files named by the cassette ----------------------------------------------------------
c = base(); c["scenario"] = dict(c["scenario"], session="/dev/zero")
add("session-dev-zero", "session names /dev/zero", c, rc=(0, 1, 2))
add("scenario-source-dev-zero", "scenarioSource names /dev/zero", base(scenarioSource="/dev/zero"), rc=(0, 1, 2))
add("scenario-source-traversal", "scenarioSource escapes upward", base(scenarioSource="../../../../../../etc/passwd"), rc=(0, 1, 2))
c = base(fingerprint={"baseline": "1.34493.1", "hashFormat": "jcs1", "skillHash": "0" * 64,
                      "skillSources": ["/dev/zero"], "fileSigs": [["../../etc/passwd", "0" * 64]]})
c["scenario"] = dict(c["scenario"], session="/dev/zero")
add("fingerprint-hostile", "fingerprint pointing at special files", c, rc=(1, 2))

with open(os.path.join(HERE, "cases.json"), "w") as f:
    json.dump(cases, f, indent=2, sort_keys=True)
print(f"{len(cases)} cases")
