#!/usr/bin/env python3
"""Clients for the proxy tests, talking to the proxy at $PROXY (host:port).

  clients.py get URL [HEADER...]   GET through the proxy (urllib), print status and body
  clients.py gated URL DIR GATE N  read a gated stream, releasing each chunk (see upstream.py)
  clients.py ws URL                WebSocket echo of two messages (ws:// or wss://)
  clients.py raw HEX               send raw bytes, print the status line of the answer
  clients.py stall                 open a connection, send half a head, wait for the close
  clients.py nonreader URL         ask for a big body and never read it (holds until killed)
  clients.py cap N URL [BUSY]      hold N connections (idle, or each waiting on a GET
                                   of BUSY), then GET URL on one more; say how many of
                                   the held ones the proxy closed
  clients.py sni URL NAME [HOST]   CONNECT to URL's host, then TLS for NAME and
                                   Host NAME (or HOST)
  clients.py encode FORM TEXT      print TEXT as b64-K or b64url-K (base64 of K bytes,
                                   TEXT, one more), hex, HEX, or pct (every byte %XX)
  clients.py wsmsg URL TEXT        WebSocket: TEXT in two frames (a text frame and
                                   its continuation, a ping between); print what
                                   comes back until the close
  clients.py early URL             send the TLS hello with the CONNECT, before the 200;
                                   then GET URL, print the answer
  clients.py halfclose URL         send a GET (http://) and shut the sending side, then
                                   print the answer that still comes
  clients.py halfhello URL         CONNECT, then half a TLS record, then hang up
  clients.py flood N URL PROXY2 COUNT
                                   open N connections, half idle, half sending a head
                                   a byte at a time; meanwhile GET URL COUNT times
                                   through $PROXY and through PROXY2; then wait for
                                   the proxy to close the N
"""
import base64, os, socket, ssl, struct, sys, threading, time, urllib.request

PROXY = os.environ.get("PROXY", "127.0.0.1:0")
PHOST, PPORT = PROXY.rsplit(":", 1)
CA = os.environ.get("CA")


def split(url):
    scheme, rest = url.split("://", 1)
    hostport, _, path = rest.partition("/")
    host, _, port = hostport.partition(":")
    port = int(port or (443 if scheme in ("https", "wss") else 80))
    return scheme, host, port, "/" + path


def connect(url, sni=None):
    """A socket to URL's host through the proxy: CONNECT+TLS or plain."""
    scheme, host, port, path = split(url)
    s = socket.create_connection((PHOST, int(PPORT)), timeout=20)
    if scheme in ("https", "wss"):
        s.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" %
                  (host.encode(), port, host.encode(), port))
        head = b""
        while b"\r\n\r\n" not in head:
            d = s.recv(1)
            if not d:
                sys.exit("CONNECT: connection closed")
            head += d
        if b" 200 " not in head.split(b"\r\n")[0]:
            sys.exit("CONNECT refused: " + head.decode(errors="replace"))
        ctx = ssl.create_default_context(cafile=CA)
        s = ctx.wrap_socket(s, server_hostname=sni or host)
        target = path
    else:
        target = "http://" + url.split("://", 1)[1]   # absolute form, even for ws://
    return s, host, port, target.encode()


def proxy_socket(timeout=20):
    return socket.create_connection((PHOST, int(PPORT)), timeout=timeout)


def read_all(s):
    """What S sends until it closes."""
    out = b""
    while True:
        d = s.recv(65536)
        if not d:
            return out
        out += d


def read_head(s):
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = s.recv(4096)
        if not d:
            sys.exit("closed before the head ended: %r" % buf)
        buf += d
    return buf.split(b"\r\n\r\n", 1)


def cmd_get(url, *headers):
    handler = urllib.request.ProxyHandler({"http": "http://" + PROXY,
                                           "https": "http://" + PROXY})
    ctx = ssl.create_default_context(cafile=CA)
    opener = urllib.request.build_opener(handler, urllib.request.HTTPSHandler(context=ctx))
    req = urllib.request.Request(url)
    for h in headers:
        k, _, v = h.partition(":")
        req.add_header(k.strip(), v.strip())
    try:
        with opener.open(req, timeout=20) as r:
            print(r.status)
            sys.stdout.write(r.read().decode(errors="replace"))
    except urllib.error.HTTPError as e:
        print(e.code)
        sys.stdout.write(e.read().decode(errors="replace"))


def cmd_gated(url, d, gate, n):
    s, host, port, target = connect(url + ("&" if "?" in url else "?") + "gate=" + gate)
    s.sendall(b"GET %s HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n\r\n" %
              (target, host.encode(), port))
    head, buf = read_head(s)
    got = 0
    while got < int(n):
        # Chunked framing: size line, data, CRLF.
        while b"\r\n" not in buf:
            buf += s.recv(4096)
        size, buf = buf.split(b"\r\n", 1)
        size = int(size, 16)
        while len(buf) < size + 2:
            buf += s.recv(4096)
        sys.stdout.write(buf[:size].decode())
        sys.stdout.flush()
        buf = buf[size + 2:]
        open(os.path.join(d, "gate-%s-%d" % (gate, got)), "w").close()
        got += 1
    print("received %d" % got)


def cmd_ws(url):
    s, host, port, target = connect(url)
    key = base64.b64encode(os.urandom(16))
    s.sendall(b"GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\n"
              b"Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
              b"Sec-WebSocket-Version: 13\r\n\r\n" % (target, host.encode(), port, key))
    head, buf = read_head(s)
    print(head.split(b"\r\n")[0].decode())
    for msg in (b"hello", b"world" * 100):
        mask = os.urandom(4)
        ln = bytes([0x80 | len(msg)]) if len(msg) < 126 else bytes([0x80 | 126]) + struct.pack(">H", len(msg))
        s.sendall(bytes([0x81]) + ln + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(msg)))
        while len(buf) < 4:
            buf += s.recv(65536)
        n, off = buf[1] & 0x7F, 2
        if n == 126:
            n, off = struct.unpack(">H", buf[2:4])[0], 4
        while len(buf) < off + n:
            buf += s.recv(65536)
        print("echo %d %s" % (n, buf[off:off + 5].decode()))
        buf = buf[off + n:]
    s.sendall(bytes([0x88, 0x80]) + b"\0\0\0\0")


def cmd_raw(hexdata):
    s = socket.create_connection((PHOST, int(PPORT)), timeout=20)
    s.sendall(bytes.fromhex(hexdata))
    out = b""
    while True:
        try:
            d = s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            break
        if not d:
            break
        out += d
    print(out.split(b"\r\n")[0].decode(errors="replace"))
    print(out.split(b"\r\n\r\n", 1)[-1].decode(errors="replace"))


def cmd_stall():
    s = socket.create_connection((PHOST, int(PPORT)), timeout=60)
    s.sendall(b"GET http://127.0.0.1/ HTTP/1.1\r\nHost: 127.")
    t = time.time()
    try:
        d = s.recv(100)
    except ConnectionResetError:
        d = b""
    print("closed after head timeout" if not d else "answered %r" % d[:20])


def cmd_nonreader(url):
    s, host, port, target = connect(url)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(b"GET %s HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (target, host.encode(), port))
    print("waiting", flush=True)
    time.sleep(60)


def cmd_sni(url, name, host=None):
    s, _, port, target = connect(url, sni=name)
    s.sendall(b"GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" %
              (target, (host or name).encode()))
    print(read_all(s).decode(errors="replace"))


def ws_send(s, op, msg):
    mask = os.urandom(4)
    ln = bytes([0x80 | len(msg)]) if len(msg) < 126 else bytes([0x80 | 126]) + struct.pack(">H", len(msg))
    s.sendall(bytes([op]) + ln + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(msg)))


def cmd_wsmsg(url, text):
    s, host, port, target = connect(url)
    key = base64.b64encode(os.urandom(16))
    s.sendall(b"GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\n"
              b"Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
              b"Sec-WebSocket-Extensions: permessage-deflate\r\n"
              b"Sec-WebSocket-Version: 13\r\n\r\n" % (target, host.encode(), port, key))
    head, buf = read_head(s)
    print(head.split(b"\r\n")[0].decode())
    half = len(text) // 2
    ws_send(s, 0x01, b"message: " + text[:half].encode())
    ws_send(s, 0x89, b"ping")
    ws_send(s, 0x80, text[half:].encode())
    ws_send(s, 0x88, b"")
    try:
        while b"\x88\x00" not in buf:     # the server's close
            d = s.recv(65536)
            if not d:
                break
            buf += d
    except (ConnectionResetError, socket.timeout):
        pass
    print("got %d bytes back, then the close" % len(buf))
    print(buf.decode(errors="replace"))


def cmd_encode(form, text):
    t = text.encode()
    if form.startswith("b64"):
        k = int(form.rsplit("-", 1)[1])
        enc = base64.b64encode(b"xyz"[:k] + t + b"!")
        if form.startswith("b64url"):
            enc = enc.translate(bytes.maketrans(b"+/", b"-_"))
        print(enc.decode())
    elif form in ("hex", "HEX"):
        print(t.hex() if form == "hex" else t.hex().upper())
    elif form == "pct":
        print("".join("%%%02X" % b for b in t))
    else:
        sys.exit("encode: unknown form " + form)


def tls_pump(s, tls, inc, out, step):
    """Runs STEP (a TLS call) over socket S until it needs no more reads."""
    while True:
        try:
            r = step()
            data = out.read()
            if data:
                s.sendall(data)
            return r
        except ssl.SSLWantReadError:
            data = out.read()
            if data:
                s.sendall(data)
            d = s.recv(65536)
            if not d:
                return None
            inc.write(d)


def cmd_early(url):
    scheme, host, port, path = split(url)
    s = proxy_socket()
    ctx = ssl.create_default_context(cafile=CA)
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(inc, out, server_hostname=host)
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    # The hello reaches the proxy in the same write as the CONNECT head.
    s.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" %
              (host.encode(), port, host.encode(), port) + out.read())
    head, rest = read_head(s)
    if b" 200 " not in head.split(b"\r\n")[0]:
        sys.exit("CONNECT refused: " + head.decode(errors="replace"))
    inc.write(rest)
    tls_pump(s, tls, inc, out, tls.do_handshake)
    tls.write(b"GET %s HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n\r\n" %
              (path.encode(), host.encode(), port))
    s.sendall(out.read())
    answer = b""
    while True:
        try:
            d = tls_pump(s, tls, inc, out, lambda: tls.read(65536))
        except ssl.SSLZeroReturnError:
            break
        if not d:
            break
        answer += d
    print(answer.decode(errors="replace"))


def cmd_halfclose(url):
    scheme, host, port, path = split(url)
    s = proxy_socket()
    s.sendall(b"GET %s HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (url.encode(), host.encode(), port))
    s.shutdown(socket.SHUT_WR)
    print(read_all(s).decode(errors="replace"))


def cmd_halfhello(url):
    scheme, host, port, path = split(url)
    s = proxy_socket()
    s.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" %
              (host.encode(), port, host.encode(), port))
    head, rest = read_head(s)
    print(head.split(b"\r\n")[0].decode(errors="replace"))
    s.sendall(b"\x16\x03\x01\x02\x00\x01")
    s.close()


def cmd_cap(n, url, busy=None):
    held = [socket.create_connection((PHOST, int(PPORT)), timeout=20)
            for _ in range(int(n))]
    for h in held:
        if busy is not None:
            h.sendall(b"GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (
                busy.encode(), busy.split("/")[2].encode()))
    time.sleep(0.3)
    s = socket.create_connection((PHOST, int(PPORT)), timeout=20)
    s.sendall(b"GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" %
              (url.encode(), url.split("/")[2].encode()))
    out = b""
    while True:
        try:
            d = s.recv(4096)
        except ConnectionResetError:
            break
        if not d:
            break
        out += d
    print(out.split(b"\r\n")[0].decode(errors="replace"))
    closed = 0
    for h in held:
        h.setblocking(False)
        try:
            closed += h.recv(1) == b""
        except (BlockingIOError, ConnectionResetError):
            pass
        h.close()
    print("closed %d of the held connections" % closed)


def plain_get(proxy, url):
    host, port = proxy.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=20)
    s.sendall(b"GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" %
              (url.encode(), url.split("/")[2].encode()))
    out = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        out += d
    s.close()
    return out.split(b"\r\n")[0]


def cmd_flood(n, url, proxy2, count):
    n, count = int(n), int(count)
    flood = []
    for i in range(n):
        s = socket.create_connection((PHOST, int(PPORT)), timeout=20)
        if i % 2:
            s.sendall(b"GET %s HTTP/1.1\r\n" % url.encode())
        flood.append(s)
    stop = threading.Event()

    def trickle():
        while not stop.wait(0.3):
            for i in range(1, n, 2):
                try:
                    flood[i].send(b"X")
                except OSError:
                    pass
    t = threading.Thread(target=trickle, daemon=True)
    t.start()
    t0 = time.time()
    for name, proxy in (("A", PROXY), ("B", proxy2)):
        ok = sum(plain_get(proxy, url).startswith(b"HTTP/1.1 200")
                 for _ in range(count))
        print("%s ok %d/%d" % (name, ok, count))
    print("served in %.1f s" % (time.time() - t0))
    closed = set()
    deadline = time.time() + 20
    while len(closed) < n and time.time() < deadline:
        for i, s in enumerate(flood):
            if i in closed:
                continue
            s.setblocking(False)
            try:
                if s.recv(4096) == b"":
                    closed.add(i)
            except BlockingIOError:
                pass
            except OSError:
                closed.add(i)
        time.sleep(0.1)
    stop.set()
    print("closed %d of %d flood connections after %.1f s" % (
        len(closed), n, time.time() - t0))


if __name__ == "__main__":
    globals()["cmd_" + sys.argv[1]](*sys.argv[2:])
