#!/usr/bin/env python3
"""A stand-in for the agents' vendor APIs, on loopback, with its own test CA.

Usage: vendor-api.py DIR -- makes DIR/ca.pem (the test CA) and a leaf for
the vendor host names, serves HTTPS on 127.0.0.1, writes the port to
DIR/port and every request (method, host, path, headers, body start) as a
JSON line to DIR/requests.jsonl. It speaks just enough of each API for one
short streamed answer: the Anthropic Messages API (Claude Code, OpenCode),
the OpenAI Responses API over SSE and WebSocket (Codex), the
models.dev catalogue OpenCode fetches, and the Gemini API (Gemini CLI). Every answer says REPLY;
one to a request that mentions agentmux-slow comes SLOW seconds late.
"""
import base64, hashlib, http.server, json, os, socketserver, ssl, struct
import subprocess, sys, threading, time

D = sys.argv[1]
REPLY = "agentmux-fake-vendor-says-hello"
HOSTS = ["api.anthropic.com", "platform.claude.com", "api.openai.com",
         "chatgpt.com",
         "models.opencode.ai", "models.dev", "opencode.ai",
         "generativelanguage.googleapis.com", "registry.npmjs.org",
         "github.com", "api.github.com", "raw.githubusercontent.com",
         "api.githubcopilot.com", "api.individual.githubcopilot.com",
         "telemetry.individual.githubcopilot.com",
         "dashscope.aliyuncs.com", "dashscope-intl.aliyuncs.com",
         "catwalk.charm.sh", "data.charm.land"]
LOCK = threading.Lock()
SLOW = 3


def sh(*args):
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def make_certs():
    ca_key, ca = os.path.join(D, "ca.key"), os.path.join(D, "ca.pem")
    sh("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
       "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj",
       "/CN=agentmux-test-vendor-ca", "-keyout", ca_key, "-out", ca,
       "-addext", "basicConstraints=critical,CA:TRUE",
       "-addext", "keyUsage=critical,keyCertSign")
    key, csr = os.path.join(D, "leaf.key"), os.path.join(D, "leaf.csr")
    pem, ext = os.path.join(D, "leaf.pem"), os.path.join(D, "leaf.ext")
    sh("openssl", "req", "-newkey", "ec", "-pkeyopt",
       "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=" + HOSTS[0],
       "-keyout", key, "-out", csr)
    with open(ext, "w") as f:
        f.write("subjectAltName=" + ",".join("DNS:" + h for h in HOSTS) +
                ",IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    sh("openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key,
       "-CAcreateserial", "-days", "2", "-extfile", ext, "-out", pem)
    return key, pem


def log(entry):
    with LOCK, open(os.path.join(D, "requests.jsonl"), "a") as f:
        f.write(json.dumps(entry) + "\n")


def sse(events):
    out = b""
    for name, data in events:
        if name:
            out += b"event: " + name.encode() + b"\n"
        out += b"data: " + json.dumps(data).encode() + b"\n\n"
    return out


def anthropic_events(model):
    msg = {"id": "msg_agentmux_1", "type": "message", "role": "assistant",
           "model": model, "content": [], "stop_reason": None,
           "stop_sequence": None,
           "usage": {"input_tokens": 10, "output_tokens": 1}}
    return [
        ("message_start", {"type": "message_start", "message": msg}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text",
                                                   "text": ""}}),
        ("ping", {"type": "ping"}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta",
                                           "text": REPLY}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": "end_turn",
                                     "stop_sequence": None},
                           "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"}),
    ]


def anthropic_tool_events(model, command):
    """A reply that asks Claude Code to run COMMAND with its Bash tool."""
    msg = {"id": "msg_agentmux_2", "type": "message", "role": "assistant",
           "model": model, "content": [], "stop_reason": None,
           "stop_sequence": None,
           "usage": {"input_tokens": 10, "output_tokens": 1}}
    return [
        ("message_start", {"type": "message_start", "message": msg}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {
                                     "type": "tool_use",
                                     "id": "toolu_agentmux_1",
                                     "name": "Bash", "input": {}}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "input_json_delta",
                                           "partial_json": json.dumps({
                                               "command": command,
                                               "description": "check"})}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": "tool_use",
                                     "stop_sequence": None},
                           "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"}),
    ]


def tool_results(req):
    """The text of the tool results in the last message of a request."""
    out = []
    msgs = req.get("messages") or [{}]
    content = msgs[-1].get("content") if isinstance(msgs[-1], dict) else None
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            c = block.get("content")
            if isinstance(c, list):
                c = "".join(x.get("text", "") for x in c
                            if isinstance(x, dict))
            out.append(str(c))
    return out


def asked_to_run(req):
    """The command after "agentmux-run:" in the user's prompt, or None."""
    for m in req.get("messages") or []:
        c = m.get("content") if isinstance(m, dict) else None
        texts = [c] if isinstance(c, str) else \
            [b.get("text", "") for b in c or [] if isinstance(b, dict)]
        for t in texts:
            if isinstance(t, str) and "agentmux-run:" in t:
                return t.split("agentmux-run:", 1)[1].split("\n")[0].strip()
    return None


def anthropic_message(model):
    return {"id": "msg_agentmux_1", "type": "message", "role": "assistant",
            "model": model, "content": [{"type": "text", "text": REPLY}],
            "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5}}


def openai_run(req):
    """Codex: the tool call (name, arguments) that runs the command after
    "agentmux-run:" in the user's input, or None (none asked, or it ran)."""
    items = req.get("input") if isinstance(req, dict) else None
    if not isinstance(items, list):
        return None
    cmd = None
    for i in items:
        if not isinstance(i, dict):
            continue
        if i.get("type") in ("function_call_output", "custom_tool_call_output"):
            log({"tool_result": str(i.get("output"))[:200]})
            return None
        if i.get("role") == "user" and isinstance(i.get("content"), list):
            for b in i["content"]:
                t = b.get("text", "") if isinstance(b, dict) else ""
                if isinstance(t, str) and "agentmux-run:" in t:
                    cmd = t.split("agentmux-run:", 1)[1].split("\n")[0].strip()
    if not cmd:
        return None
    names = [t.get("name") for t in req.get("tools") or [] if isinstance(t, dict)]
    log({"codex_tools": names})
    # Outside its sandbox: with approval on-request, Codex asks the user first.
    esc = {"sandbox_permissions": "require_escalated",
           "justification": "agentmux test: run the command asked for"}
    if "shell" in names:
        return "shell", dict(esc, command=["bash", "-lc", cmd])
    if "shell_command" in names:
        return "shell_command", dict(esc, command=cmd)
    if "exec_command" in names:
        return "exec_command", dict(esc, cmd=cmd)
    return None


def openai_events(model, call=None):
    item = {"id": "msg_agentmux_1", "type": "message", "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": REPLY,
                         "annotations": []}]}
    if call:
        item = {"id": "fc_agentmux_1", "type": "function_call",
                "status": "completed", "call_id": "call_agentmux_1",
                "name": call[0], "arguments": json.dumps(call[1])}
    resp = {"id": "resp_agentmux_1", "object": "response",
            "created_at": 1700000000, "model": model, "status": "completed",
            "output": [item],
            "usage": {"input_tokens": 10, "output_tokens": 5,
                      "total_tokens": 15,
                      "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}}}
    start = dict(resp, status="in_progress", output=[], usage=None)
    part = {"type": "output_text", "text": "", "annotations": []}
    if call:
        return [
            ("response.created", {"type": "response.created",
                                  "response": start}),
            ("response.output_item.added", {
                "type": "response.output_item.added", "output_index": 0,
                "item": dict(item, status="in_progress")}),
            ("response.output_item.done", {
                "type": "response.output_item.done", "output_index": 0,
                "item": item}),
            ("response.completed", {"type": "response.completed",
                                    "response": resp}),
        ]
    return [
        ("response.created", {"type": "response.created",
                              "response": start}),
        ("response.output_item.added", {
            "type": "response.output_item.added", "output_index": 0,
            "item": dict(item, status="in_progress", content=[])}),
        ("response.content_part.added", {
            "type": "response.content_part.added", "item_id": item["id"],
            "output_index": 0, "content_index": 0, "part": part}),
        ("response.output_text.delta", {
            "type": "response.output_text.delta", "item_id": item["id"],
            "output_index": 0, "content_index": 0, "delta": REPLY}),
        ("response.output_text.done", {
            "type": "response.output_text.done", "item_id": item["id"],
            "output_index": 0, "content_index": 0, "text": REPLY}),
        ("response.output_item.done", {
            "type": "response.output_item.done", "output_index": 0,
            "item": item}),
        ("response.completed", {"type": "response.completed",
                                "response": resp}),
    ]


def chat_events(model):
    """An OpenAI Chat Completions stream (Qwen Code, Crush, Copilot CLI)."""
    def chunk(delta, finish=None, usage=None):
        c = {"id": "chatcmpl-agentmux-1", "object": "chat.completion.chunk",
             "created": 1700000000, "model": model,
             "choices": [{"index": 0, "delta": delta,
                          "finish_reason": finish}]}
        if usage:
            c["usage"] = usage
        return (None, c)
    return [chunk({"role": "assistant", "content": ""}),
            chunk({"content": REPLY}),
            chunk({}, "stop", {"prompt_tokens": 10, "completion_tokens": 5,
                               "total_tokens": 15})]


def chat_message(model):
    return {"id": "chatcmpl-agentmux-1", "object": "chat.completion",
            "created": 1700000000, "model": model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant",
                                     "content": REPLY}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5,
                      "total_tokens": 15}}


def copilot_user():
    """GitHub's /copilot_internal/user for a user with Copilot."""
    return {"login": "agentmux-test", "access_type_sku": "free_limited_copilot",
            "analytics_tracking_id": "0", "chat_enabled": True,
            "copilot_plan": "individual", "copilotignore_enabled": False,
            "restricted_telemetry": True, "is_mcp_enabled": False,
            "organization_login_list": [], "organization_list": [],
            "endpoints": {
                "api": "https://api.individual.githubcopilot.com",
                "proxy": "https://proxy.individual.githubcopilot.com",
                "telemetry": "https://telemetry.individual.githubcopilot.com",
                "origin-tracker": "https://origin-tracker.individual"
                                  ".githubcopilot.com"}}


def copilot_models():
    """The Copilot API's model list: one chat model."""
    return {"object": "list", "data": [{
        "id": "test-model", "name": "test-model", "object": "model",
        "vendor": "agentmux", "version": "test-model", "preview": False,
        "model_picker_enabled": True, "is_chat_default": True,
        "capabilities": {"type": "chat", "family": "test-model",
                         "tokenizer": "o200k_base",
                         "limits": {"max_context_window_tokens": 128000,
                                    "max_output_tokens": 8192,
                                    "max_prompt_tokens": 100000},
                         "supports": {"streaming": True,
                                      "tool_calls": True}},
        "supported_endpoints": ["/chat/completions"],
        "policy": {"state": "enabled", "terms": ""},
        "billing": {"is_premium": False, "multiplier": 0}}]}


def from_schema(schema):
    """A value that fits a JSON schema (Gemini CLI's routers ask for JSON)."""
    t = str(schema.get("type", "STRING")).upper()
    if t == "OBJECT":
        return {k: from_schema(v)
                for k, v in (schema.get("properties") or {}).items()}
    if t == "ARRAY":
        return []
    if t in ("INTEGER", "NUMBER"):
        return 10
    if t == "BOOLEAN":
        return False
    if schema.get("enum"):
        return schema["enum"][0]
    return "agentmux"


def gemini_chunk(model, req=None):
    gc = (req or {}).get("generationConfig") or {}
    text = REPLY
    if gc.get("responseMimeType") == "application/json":
        text = json.dumps(from_schema(gc.get("responseJsonSchema") or
                                      gc.get("responseSchema") or {}))
    return {"candidates": [{"content": {"parts": [{"text": text}],
                                        "role": "model"},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10,
                              "candidatesTokenCount": 5,
                              "totalTokenCount": 15},
            "modelVersion": model}


def models_dev():
    """The models.dev catalogue, cut down to one model per provider."""
    def model(mid):
        return {"id": mid, "name": mid, "attachment": False,
                "reasoning": False, "temperature": True, "tool_call": True,
                "release_date": "2025-01-01", "last_updated": "2025-01-01",
                "modalities": {"input": ["text"], "output": ["text"]},
                "open_weights": False,
                "cost": {"input": 0, "output": 0},
                "limit": {"context": 200000, "output": 8192}}
    return {
        "anthropic": {"id": "anthropic", "name": "Anthropic",
                      "env": ["ANTHROPIC_API_KEY"],
                      "npm": "@ai-sdk/anthropic",
                      "doc": "https://docs.anthropic.com",
                      "models": {"claude-sonnet-4-5":
                                 model("claude-sonnet-4-5")}},
        "openai": {"id": "openai", "name": "OpenAI",
                   "env": ["OPENAI_API_KEY"], "npm": "@ai-sdk/openai",
                   "doc": "https://platform.openai.com",
                   "models": {"gpt-5": model("gpt-5")}},
    }


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                n = int(self.rfile.readline().split(b";")[0], 16)
                if n == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(n)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def send(self, code, data, ctype="application/json"):
        if not isinstance(data, bytes):
            data = json.dumps(data).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def stream(self, data):
        """An SSE answer in chunks, the way the vendors send it."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for block in data.split(b"\n\n"):
            if block:
                block += b"\n\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(block), block))
                self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def record(self, body):
        host = (self.headers.get("Host") or "").split(":")[0]
        log({"method": self.command, "host": host, "path": self.path,
             "headers": {k.lower(): v for k, v in self.headers.items()},
             "body": body[:4096].decode("utf-8", "replace")})
        return host

    def handle_one(self):
        body = self.body() if self.command in ("POST", "PUT", "PATCH") else b""
        host = self.record(body)
        # "agentmux-slow" in a request: a turn that takes a while, so a test
        # sees the session working while it is in flight.
        # (A line of its own: the request's line keeps only its body's start.)
        if b"agentmux-slow" in body:
            log({"slow": self.path})
            time.sleep(SLOW)
        path = self.path.split("?")[0]
        try:
            req = json.loads(body) if body else {}
        except ValueError:
            req = {}
        model = req.get("model", "test-model") if isinstance(req, dict) \
            else "test-model"
        # Claude Code's first-start connectivity check: both must say 200.
        if (host, path) in (("api.anthropic.com", "/api/hello"),
                            ("platform.claude.com", "/v1/oauth/hello")):
            return self.send(200, {"message": "hello"})
        # GitHub Copilot CLI: who the token's user is, where the API is.
        if host == "api.github.com" and path == "/copilot_internal/user":
            return self.send(200, copilot_user())
        if host.endswith("githubcopilot.com") and path == "/models":
            return self.send(200, copilot_models())
        if host == "api.anthropic.com" and path == "/v1/messages":
            results = tool_results(req)
            if results:
                log({"tool_result": results})
            # "agentmux-run: COMMAND" in the prompt: run it with Bash.
            cmd = asked_to_run(req)
            if cmd and not results and req.get("tools"):
                return self.stream(sse(anthropic_tool_events(model, cmd)))
            if req.get("stream"):
                return self.stream(sse(anthropic_events(model)))
            return self.send(200, anthropic_message(model))
        if host == "api.anthropic.com" and \
                path == "/v1/messages/count_tokens":
            return self.send(200, {"input_tokens": 10})
        if host == "generativelanguage.googleapis.com" and ":" in path:
            gmodel = path.rsplit("/", 1)[-1].split(":")[0]
            if path.endswith(":streamGenerateContent"):
                return self.stream(sse([(None, gemini_chunk(gmodel, req))]))
            if path.endswith(":generateContent"):
                return self.send(200, gemini_chunk(gmodel, req))
            if path.endswith(":countTokens"):
                return self.send(200, {"totalTokens": 10})
        if path.endswith("/chat/completions") and self.command == "POST":
            if req.get("stream"):
                return self.stream(sse([e for e in chat_events(model)]) +
                                   b"data: [DONE]\n\n")
            return self.send(200, chat_message(model))
        if path.endswith("/responses") and self.command == "POST":
            if self.headers.get("Upgrade", "").lower() == "websocket":
                return self.send(400, {"error": "use GET for a websocket"})
            return self.stream(sse(openai_events(model, openai_run(req))))
        if path.endswith("/responses") and \
                self.headers.get("Upgrade", "").lower() == "websocket":
            return self.websocket(model)
        if path in ("/api.json", "/models.json") or \
                (host in ("models.dev", "models.opencode.ai") and
                 path == "/"):
            return self.send(200, models_dev())
        if path.endswith("/models"):
            return self.send(200, {"object": "list", "data": [
                {"id": "test-model", "object": "model", "type": "model",
                 "display_name": "test-model",
                 "created_at": "2025-01-01T00:00:00Z"}]})
        return self.send(404, {"type": "error", "error": {
            "type": "not_found_error", "message": "agentmux test: " +
            self.command + " " + path + " is not part of the stand-in"}})

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = handle_one

    # ---- a minimal WebSocket for Codex's Responses API ----

    def ws_recv(self):
        head = self.rfile.read(2)
        if len(head) < 2:
            return None, None
        op, n = head[0] & 0x0F, head[1] & 0x7F
        if n == 126:
            n = struct.unpack(">H", self.rfile.read(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", self.rfile.read(8))[0]
        mask = self.rfile.read(4) if head[1] & 0x80 else b"\0\0\0\0"
        data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(n)))
        return op, data

    def ws_send(self, data, op=1):
        n = len(data)
        if n < 126:
            head = struct.pack(">BB", 0x80 | op, n)
        elif n < 65536:
            head = struct.pack(">BBH", 0x80 | op, 126, n)
        else:
            head = struct.pack(">BBQ", 0x80 | op, 127, n)
        self.wfile.write(head + data)
        self.wfile.flush()

    def websocket(self, model):
        key = self.headers.get("Sec-WebSocket-Key", "")
        acc = base64.b64encode(hashlib.sha1(
            (key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", acc.decode())
        self.end_headers()
        self.wfile.flush()
        while True:
            op, data = self.ws_recv()
            if op is None or op == 8:
                return
            if op == 9:
                self.ws_send(data, 10)
                continue
            if op != 1:
                continue
            log({"method": "WS", "host": "websocket", "path": self.path,
                 "headers": {}, "body": data[:4096].decode("utf-8",
                                                            "replace")})
            try:
                req = json.loads(data)
                m = req.get("model", model)
            except (ValueError, AttributeError):
                req, m = {}, model
            for _, ev in openai_events(m, openai_run(req)):
                self.ws_send(json.dumps(ev).encode())


class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    key, pem = make_certs()
    srv = S(("127.0.0.1", 0), H)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pem, key)
    ctx.set_alpn_protocols(["http/1.1"])
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    with open(os.path.join(D, "port.tmp"), "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(os.path.join(D, "port.tmp"), os.path.join(D, "port"))
    srv.serve_forever()


main()
