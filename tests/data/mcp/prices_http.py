#!/usr/bin/env python3
"""The price-check example's `prices` MCP server over streamable HTTP (stdlib only).

    prices_http.py PRICES_JSON [--port N] [--sse] [--token T]

Prints `PORT <n>` once listening on 127.0.0.1. `--sse` answers each POST as a
`text/event-stream` (one `data:` event) instead of `application/json`;
`--token T` answers 401 to a request without `Authorization: Bearer T`. A
session id is issued at `initialize` and required on every later request, as
a real server may, so a proxy that drops `Mcp-Session-Id` fails.
"""
import argparse
import json
import sys
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOOLS = [{
    "name": "lookup_price",
    "description": "The current price of a product SKU.",
    "inputSchema": {"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]},
}]
ARGS = None
SESSIONS = set()


def call(name, args):
    if name != "lookup_price":
        return {"isError": True, "content": [{"type": "text", "text": f"unknown tool {name}"}]}
    with open(ARGS.prices, encoding="utf-8") as f:
        prices = json.load(f)
    sku = args.get("sku", "")
    if sku not in prices:
        return {"isError": True, "content": [{"type": "text", "text": f"no such SKU: {sku}"}]}
    p = prices[sku]
    return {"content": [{"type": "text", "text": f"{sku}: {p['price']} {p['currency']}"}]}


def answer(msg):
    method, params = msg.get("method"), msg.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion", "2025-03-26"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "prices-http", "version": "1.0.0"}}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        return call(params.get("name"), params.get("arguments") or {})
    if method == "ping":
        return {}
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, status, body=b"", ctype=None, headers=()):
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.send(405, headers=[("Allow", "POST")])

    def do_DELETE(self):
        SESSIONS.discard(self.headers.get("Mcp-Session-Id"))
        self.send(200)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if ARGS.token and self.headers.get("Authorization") != f"Bearer {ARGS.token}":
            return self.send(401, b"missing or wrong bearer token", "text/plain")
        msg = json.loads(body)
        headers = []
        if msg.get("method") == "initialize":
            session = uuid.uuid4().hex
            SESSIONS.add(session)
            headers.append(("Mcp-Session-Id", session))
        elif self.headers.get("Mcp-Session-Id") not in SESSIONS:
            return self.send(400, b"no such session", "text/plain")
        if "id" not in msg or "method" not in msg:
            return self.send(202)
        result = answer(msg)
        if result is None:
            reply = {"jsonrpc": "2.0", "id": msg["id"],
                     "error": {"code": -32601, "message": f"method not found: {msg.get('method')}"}}
        else:
            reply = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
        if ARGS.sse:
            text = f": reel test server\n\nevent: message\ndata: {json.dumps(reply)}\n\n"
            return self.send(200, text.encode(), "text/event-stream", headers)
        self.send(200, json.dumps(reply).encode(), "application/json", headers)


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("prices")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--sse", action="store_true")
    p.add_argument("--token")
    ARGS = p.parse_args()
    ThreadingHTTPServer.allow_reuse_address = True
    server = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
