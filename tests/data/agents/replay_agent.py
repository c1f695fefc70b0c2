#!/usr/bin/env python3
"""Replays a cassette's recorded stdout as a live agent (for the recorder
benchmark): prints every event line, waits for reel's answer after each
control_request, writes the cassette's inlined output artifacts into the work
root, and exits on stdin EOF. Usage: replay_agent.py CASSETTE"""
import base64, json, os, sys

doc = json.load(open(sys.argv[1]))
sys.stdin.readline()  # initialize
sys.stdin.readline()  # user turn
work = os.environ["WORK_ROOT"]
for a in doc.get("artifacts", []):
    if a["path"].startswith("outputs/") and "body" in a:
        path = os.path.join(work, a["path"])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        data = base64.b64decode(a["body"]) if a.get("encoding") == "base64" else a["body"].encode()
        with open(path, "wb") as f:
            f.write(data)
for line in doc["events"]:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
    if '"type":"control_request"' in line:
        sys.stdin.readline()
while sys.stdin.readline():
    pass
