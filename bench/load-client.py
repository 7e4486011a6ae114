#!/usr/bin/env python3
"""Load through an HTTP proxy: N client threads for S seconds, each on keep-alive
connections, alternating plain http:// requests and https:// requests inside a
CONNECT tunnel (TLS to the proxy's interception, trusting CA), reconnecting every
RECONNECT requests. Prints one JSON object: requests, errors (with the first
few reasons), requests per second, latency percentiles.

Usage: load-client.py PROXY_HOST:PORT CA HTTP_URL HTTPS_URL CLIENTS SECONDS [RECONNECT]
"""
import http.client, json, ssl, sys, threading, time

proxy, ca, http_url, https_url = sys.argv[1:5]
clients, seconds = int(sys.argv[5]), float(sys.argv[6])
reconnect = int(sys.argv[7]) if len(sys.argv) > 7 else 50
phost, pport = proxy.rsplit(":", 1)
_, _, rest = https_url.partition("://")
thost, _, tpath = rest.partition("/")
thost, _, tport = thost.partition(":")
ctx = ssl.create_default_context(cafile=ca)

lock = threading.Lock()
stats = {"requests": 0, "errors": 0, "reasons": {}, "lat": []}


def note(ok, reason, lat):
    with lock:
        stats["requests"] += 1
        if ok:
            stats["lat"].append(lat)
        else:
            stats["errors"] += 1
            stats["reasons"][reason] = stats["reasons"].get(reason, 0) + 1


def plain():
    return http.client.HTTPConnection(phost, int(pport), timeout=30)


def tunnel():
    c = http.client.HTTPSConnection(phost, int(pport), timeout=30, context=ctx)
    c.set_tunnel(thost, int(tport or 443))
    return c


def worker(i, deadline):
    kinds = [(plain, http_url), (tunnel, "/" + tpath)]
    conns = [None, None]
    n = 0
    while time.time() < deadline:
        k = n % 2
        make, target = kinds[k]
        if conns[k] is None or n % reconnect < 2:
            if conns[k] is not None:
                conns[k].close()
            conns[k] = make()
        t0 = time.time()
        try:
            conns[k].request("GET", target + ("&" if "?" in target else "?") +
                             "c=%d&n=%d" % (i, n))
            r = conns[k].getresponse()
            body = r.read()
            ok = r.status == 200 and len(body) > 0
            note(ok, "status %d" % r.status, time.time() - t0)
        except Exception as ex:  # a broken connection is an error to count
            note(False, "%s: %s" % (type(ex).__name__, ex), 0)
            conns[k].close()
            conns[k] = None
        n += 1
    for c in conns:
        if c is not None:
            c.close()


deadline = time.time() + seconds
threads = [threading.Thread(target=worker, args=(i, deadline))
           for i in range(clients)]
t0 = time.time()
for t in threads:
    t.start()
for t in threads:
    t.join()
elapsed = time.time() - t0
lat = sorted(stats["lat"])


def pct(p):
    return round(lat[min(len(lat) - 1, int(p * len(lat)))] * 1000, 1) if lat else None


print(json.dumps({
    "clients": clients, "seconds": round(elapsed, 1),
    "requests": stats["requests"], "errors": stats["errors"],
    "reasons": dict(list(stats["reasons"].items())[:5]),
    "rps": round(stats["requests"] / elapsed, 1),
    "p50_ms": pct(0.5), "p99_ms": pct(0.99)}))
