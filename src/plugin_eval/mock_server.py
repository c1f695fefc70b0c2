#!/usr/bin/env python3
"""A stand-in stdio MCP server (stdlib only) written by `reel import plugin-eval`.

It answers each tool with the fixed text of the plugin eval's mocks/<server>/<tool>.md,
read from the JSON file named as its argument. `reel record` captures what it serves;
`reel rerun` then serves that recording frozen.
"""
import json
import os
import sys


def main():
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), sys.argv[1]), encoding="utf-8") as f:
        spec = json.load(f)
    tools = spec["tools"]
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if "id" not in msg:
            continue
        method, params = msg.get("method"), msg.get("params") or {}
        if method == "initialize":
            result = {"protocolVersion": params.get("protocolVersion", "2024-11-05"),
                      "capabilities": {"tools": {}},
                      "serverInfo": {"name": spec["server"], "version": "1.0.0"}}
        elif method == "tools/list":
            result = {"tools": [{k: t[k] for k in ("name", "description", "inputSchema")} for t in tools.values()]}
        elif method == "tools/call":
            tool = tools.get(params.get("name"))
            if tool is None:
                result = {"isError": True, "content": [{"type": "text", "text": "unknown tool"}]}
            else:
                answer = tool["answer"]
                result = {"content": [{"type": "text", "text": answer["text"]}]}
                if answer["isError"]:
                    result["isError"] = True
        elif method == "ping":
            result = {}
        else:
            reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "method not found"}}
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
            continue
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
