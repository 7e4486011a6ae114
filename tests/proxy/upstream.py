#!/usr/bin/env python3
"""A local upstream for the proxy tests: HTTPS and HTTP on loopback, its own CA.

Usage: upstream.py DIR  -- makes DIR/ca.pem (the test CA), DIR/bad-ca.pem
(a CA nobody trusts), serves HTTPS (cert from the test CA), HTTP, and HTTPS
with a cert from the untrusted CA; writes "https http badtls" ports to
DIR/ports and every request line to DIR/seen.log.
"""
import base64, hashlib, http.server, json, os, socket, socketserver, ssl
import struct, subprocess, sys, threading, time

D = sys.argv[1]


def sh(*args):
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def make_ca(name):
    key, pem = os.path.join(D, name + ".key"), os.path.join(D, name + ".pem")
    sh("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
       "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj",
       "/CN=agentmux-test-" + name, "-keyout", key, "-out", pem,
       "-addext", "basicConstraints=critical,CA:TRUE",
       "-addext", "keyUsage=critical,keyCertSign")
    return key, pem


def make_leaf(name, ca_key, ca_pem):
    key, csr = os.path.join(D, name + ".key"), os.path.join(D, name + ".csr")
    pem, ext = os.path.join(D, name + ".pem"), os.path.join(D, name + ".ext")
    sh("openssl", "req", "-newkey", "ec", "-pkeyopt",
       "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=localhost",
       "-keyout", key, "-out", csr)
    with open(ext, "w") as f:
        f.write("subjectAltName=DNS:localhost,DNS:web.test,DNS:api.test,IP:127.0.0.1,IP:::1\n")
    sh("openssl", "x509", "-req", "-in", csr, "-CA", ca_pem, "-CAkey", ca_key,
       "-CAcreateserial", "-days", "2", "-extfile", ext, "-out", pem)
    return key, pem


def log(line):
    with open(os.path.join(D, "seen.log"), "a") as f:
        f.write(line + "\n")


def watched(*parts):
    """True if one of the lines of DIR/watch, or of the files $UPSTREAM_WATCH
    lists (separated by ':'), is in PARTS: what a test must never see arrive,
    e.g. a secret's placeholder."""
    words = []
    for path in [os.path.join(D, "watch")] + os.environ.get("UPSTREAM_WATCH", "").split(":"):
        try:
            with open(path, "rb") as f:
                words += [w for w in f.read().split(b"\n") if w]
        except OSError:
            pass
    blob = b"".join(parts)
    return any(w in blob for w in words)


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Head and body go in separate writes: without this, keep-alive requests wait on delayed ACKs.
    disable_nagle_algorithm = True

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

    def send(self, code, data, ctype="text/plain", extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def query(self):
        q = {}
        if "?" in self.path:
            for kv in self.path.split("?", 1)[1].split("&"):
                k, _, v = kv.partition("=")
                q[k] = v
        return q

    def stream(self, ctype, chunks, delay, gate=None):
        """Sends CHUNKS one by one. With GATE, the next one waits until the
        client has created DIR/gate-GATE-I for the one before: a proxy that
        held chunks back would stall this (logged as "gate timeout")."""
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for i, c in enumerate(chunks):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(c), c))
            self.wfile.flush()
            if gate is None:
                time.sleep(delay)
                continue
            f = os.path.join(D, "gate-%s-%d" % (gate, i))
            for _ in range(200):
                if os.path.exists(f):
                    break
                time.sleep(0.05)
            else:
                log("gate timeout %s %d" % (gate, i))
        self.wfile.write(b"0\r\n\r\n")

    def websocket(self):
        key = self.headers.get("Sec-WebSocket-Key", "")
        acc = base64.b64encode(hashlib.sha1(
            (key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", acc.decode())
        self.end_headers()
        self.wfile.flush()
        got = b""
        while True:
            h = self.rfile.read(2)
            if len(h) < 2:
                return
            op, n = h[0] & 0x0F, h[1] & 0x7F
            if n == 126:
                n = struct.unpack(">H", self.rfile.read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self.rfile.read(8))[0]
            mask = self.rfile.read(4) if h[1] & 0x80 else b"\0\0\0\0"
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(n)))
            if op in (0, 1, 2):     # a message's pieces, pings aside
                got += data
            if watched(got):
                log("saw-watch %s" % self.path)
            if op == 8:
                self.wfile.write(b"\x88\x00")
                self.close_connection = True
                return
            hdr = bytes([0x80 | op])
            hdr += bytes([len(data)]) if len(data) < 126 else b"\x7e" + struct.pack(">H", len(data))
            self.wfile.write(hdr + data)
            self.wfile.flush()

    def handle_any(self):
        path = self.path.split("?", 1)[0]
        data = self.body()
        log("%s %s key=%s auth=%s host=%s len=%d" % (
            self.command, self.path, self.headers.get("X-Api-Key"),
            self.headers.get("Authorization"), self.headers.get("Host"),
            len(data)))
        if watched(self.requestline.encode(), str(self.headers).encode(), data):
            log("saw-watch %s" % self.path)
        q = self.query()
        if path.startswith("/git/"):
            # Static files of DIR/git: a dumb-HTTP git repository.
            root = os.path.realpath(os.path.join(D, "git"))
            f = os.path.realpath(os.path.join(D, path.lstrip("/")))
            if not f.startswith(root + "/") or not os.path.isfile(f):
                return self.send(404, b"not found\n")
            with open(f, "rb") as fh:
                return self.send(200, fh.read(), "application/octet-stream")
        if path == "/ws" and self.headers.get("Upgrade", "").lower() == "websocket":
            return self.websocket()
        if path == "/chunked":
            n, d = int(q.get("n", 3)), float(q.get("delay", 0.2))
            return self.stream("text/plain", [b"chunk %d\n" % i for i in range(n)], d, q.get("gate"))
        if path == "/sse":
            n, d = int(q.get("n", 3)), float(q.get("delay", 0.2))
            return self.stream("text/event-stream", [b"data: event %d\n\n" % i for i in range(n)], d, q.get("gate"))
        if path == "/big":
            n = int(q.get("size", 1 << 20))
            return self.send(200, b"x" * n, "application/octet-stream")
        if path == "/slow":
            time.sleep(float(q.get("delay", 1)))
            return self.send(200, b"slow\n")
        if path.startswith("/status/"):
            code = int(path.split("/")[2])
            if code in (204, 304):
                self.send_response(code)
                self.end_headers()
                return
            return self.send(code, b"status %d\n" % code)
        if path == "/cut":
            # Promises SIZE bytes, sends a tenth of them, and hangs up.
            n = int(q.get("size", 100000))
            self.close_connection = True
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                             b"Content-Length: %d\r\n\r\n" % n + b"x" * (n // 10))
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if path == "/close":
            self.close_connection = True
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil close\n")
            self.wfile.flush()
            return
        if path == "/cookie":
            return self.send(200, b"ok\n", extra=[("Set-Cookie", "session=s3cr3t")])
        out = json.dumps({"method": self.command, "path": self.path,
                          "headers": dict(self.headers.items()),
                          "len": len(data),
                          "body": data[:200].decode("utf-8", "replace")}).encode()
        self.send(200, out + b"\n", "application/json")

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = handle_any


class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def serve(ctx):
    s = S(("127.0.0.1", 0), H)
    if ctx is not None:
        s.socket = ctx.wrap_socket(s.socket, server_side=True)
    threading.Thread(target=s.serve_forever, daemon=True).start()
    return s.server_address[1]


def tls(key, pem):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pem, key)
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


ca_key, ca_pem = make_ca("ca")
bad_key, bad_pem = make_ca("bad-ca")
srv = make_leaf("srv", ca_key, ca_pem)
bad = make_leaf("badsrv", bad_key, bad_pem)
ports = (serve(tls(*srv)), serve(None), serve(tls(*bad)))
with open(os.path.join(D, "ports.tmp"), "w") as f:
    f.write("%d %d %d\n" % ports)
os.rename(os.path.join(D, "ports.tmp"), os.path.join(D, "ports"))
# Stay until the parent goes away (a pipe on stdin closes), or for a bounded time.
import stat
if stat.S_ISFIFO(os.fstat(0).st_mode):
    sys.stdin.read()
else:
    time.sleep(int(os.environ.get("UPSTREAM_LIFETIME", "600")))
