#!/usr/bin/env python3
"""A tiny stdio MCP server (stdlib only): `lookup_price` reads prices.json beside this file.

It stands for a real service a skill reaches through MCP (a price list, a ticket tracker):
`reel rerun` freezes it from the recording unless run with `--mcp-live prices`.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = [{
    "name": "lookup_price",
    "description": "The current price of a product SKU.",
    "inputSchema": {"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]},
}]


def call(name, args):
    if name != "lookup_price":
        return {"isError": True, "content": [{"type": "text", "text": f"unknown tool {name}"}]}
    with open(os.path.join(HERE, "prices.json"), encoding="utf-8") as f:
        prices = json.load(f)
    sku = args.get("sku", "")
    if sku not in prices:
        return {"isError": True, "content": [{"type": "text", "text": f"no such SKU: {sku}"}]}
    p = prices[sku]
    return {"content": [{"type": "text", "text": f"{sku}: {p['price']} {p['currency']}"}]}


def main():
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
                      "serverInfo": {"name": "prices", "version": "1.0.0"}}
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call":
            result = call(params.get("name"), params.get("arguments") or {})
        elif method == "ping":
            result = {}
        else:
            reply = {"jsonrpc": "2.0", "id": msg["id"],
                     "error": {"code": -32601, "message": f"method not found: {method}"}}
            print(json.dumps(reply), flush=True)
            continue
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)


if __name__ == "__main__":
    main()
