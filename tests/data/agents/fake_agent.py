#!/usr/bin/env python3
"""A tiny stream-json agent for reel's recorder tests. One behaviour per MODE:

  good           init, asks to Write outputs/out.txt, writes it if allowed, result, exits on stdin EOF
  ask            asks a multi-select AskUserQuestion, puts the answer in the result text
  hook           sends a hook_callback for a background Task and reports the reply
  unknown        sends a control_request with an unsupported subtype
  crash          prints two lines, then dies with exit code 3 mid-stream
  garbage        prints non-JSON noise around a valid run
  no_result      exits 0 without ever sending a result
  never_result   keeps running without a result (needs the timeout)
  flood          floods stdout forever
  forker         starts a background child that keeps stdout open, then completes normally
  secret         echoes the env var REEL_TEST_SECRET_NAME's value into events and an output file

Every process it starts appends its pid to $REEL_TEST_PIDFILE (when set).
"""
import json, os, subprocess, sys, time

MODE = sys.argv[1] if len(sys.argv) > 1 else "good"
PIDFILE = os.environ.get("REEL_TEST_PIDFILE")
if PIDFILE:
    with open(PIDFILE, "a") as f:
        f.write(f"{os.getpid()}\n")

def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()

def read():
    line = sys.stdin.readline()
    if not line:
        return None
    return json.loads(line)

def wait_response(req_id):
    while True:
        msg = read()
        if msg is None:
            sys.exit(0)
        if msg.get("type") == "control_response" and msg["response"].get("request_id") == req_id:
            return msg["response"]

def result(text, is_error=False):
    out({"type": "result", "subtype": "success", "is_error": is_error, "result": text,
         "num_turns": 1, "total_cost_usd": 0, "usage": {"input_tokens": 1, "output_tokens": 1}})

def assistant_text(text):
    out({"type": "assistant", "message": {"role": "assistant", "model": "fake",
         "content": [{"type": "text", "text": text}]}, "parent_tool_use_id": None})

def drain_until_eof():
    while read() is not None:
        pass

init = read()       # initialize
user = read()       # the user turn
out({"type": "control_response", "response": {"subtype": "success", "request_id": init["request_id"], "response": {}}})
out({"type": "system", "subtype": "init", "cwd": os.getcwd(), "tools": ["Write"], "skills": [], "mcp_servers": []})

if MODE == "good":
    path = os.path.join(os.environ["OUTPUTS_DIR"], "out.txt")
    out({"type": "assistant", "message": {"role": "assistant", "model": "fake", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "Write", "input": {"file_path": path, "content": "hi"}}]},
        "parent_tool_use_id": None})
    out({"type": "control_request", "request_id": "r-1", "request": {"subtype": "can_use_tool",
         "tool_name": "Write", "input": {"file_path": path, "content": "hi"}, "tool_use_id": "toolu_1"}})
    resp = wait_response("r-1")
    allowed = resp["response"]["behavior"] == "allow"
    if allowed:
        with open(path, "w") as f:
            f.write("hi")
    out({"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok" if allowed else "denied", "is_error": not allowed}]}})
    assistant_text("wrote it" if allowed else "was denied")
    result("wrote it" if allowed else "was denied")
    drain_until_eof()
elif MODE == "ask":
    q = {"questions": [{"question": "Which features?", "header": "Features", "multiSelect": True,
          "options": [{"label": "Auth"}, {"label": "Billing"}, {"label": "Audit"}]}]}
    out({"type": "control_request", "request_id": "q-1", "request": {"subtype": "can_use_tool",
         "tool_name": "AskUserQuestion", "input": q, "tool_use_id": "toolu_q"}})
    resp = wait_response("q-1")
    answer = resp["response"]["updatedInput"]["answers"]["Which features?"]
    assistant_text(f"Enabled: {answer}.")
    result(f"Enabled: {answer}.")
    drain_until_eof()
elif MODE == "hook":
    out({"type": "control_request", "request_id": "h-1", "request": {"subtype": "hook_callback",
         "callback_id": "cowork-task-bg-block", "input": {"tool_name": "Task", "tool_input": {"run_in_background": True}}}})
    resp = wait_response("h-1")
    assistant_text("hook said " + json.dumps(resp["response"]))
    result("hook said " + resp["response"].get("decision", "allow"))
    drain_until_eof()
elif MODE == "unknown":
    out({"type": "control_request", "request_id": "x-1", "request": {"subtype": "teleport"}})
    resp = wait_response("x-1")
    result("got " + resp["subtype"])
    drain_until_eof()
elif MODE == "crash":
    assistant_text("about to crash")
    sys.stdout.write('{"type":"assistant","mess')
    sys.stdout.flush()
    os._exit(3)
elif MODE == "garbage":
    sys.stdout.write("this is not json\n\n   \n{broken\n\x00\xff binary-ish\n")
    sys.stdout.flush()
    assistant_text("fine anyway")
    result("fine anyway")
    drain_until_eof()
elif MODE == "no_result":
    assistant_text("bye without a result")
    sys.exit(0)
elif MODE == "never_result":
    assistant_text("thinking forever")
    while True:
        time.sleep(1)
elif MODE == "flood":
    line = json.dumps({"type": "system", "subtype": "status", "pad": "x" * 4000}) + "\n"
    while True:
        sys.stdout.write(line)
elif MODE == "forker":
    child = subprocess.Popen(["sleep", "300"])  # inherits stdout: keeps the pipe open
    if PIDFILE:
        with open(PIDFILE, "a") as f:
            f.write(f"{child.pid}\n")
    assistant_text("forked a child")
    result("forked a child")
    drain_until_eof()
    os._exit(0)  # leave the child running
elif MODE == "secret":
    value = os.environ.get(os.environ.get("REEL_TEST_SECRET_NAME", "ANTHROPIC_API_KEY"), "")
    with open(os.path.join(os.environ["OUTPUTS_DIR"], "leak.txt"), "w") as f:
        f.write(f"token={value}\n")
    assistant_text(f"the key is {value}")
    result(f"the key is {value}")
    drain_until_eof()
