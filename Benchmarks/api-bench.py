#!/usr/bin/env python3
"""The client side of lansync-bench's W8 (the local API), standard library only.

  follow BASE TOKEN OUT             one Server-Sent Events client of /v1/changes: writes
                                    "MONOTONIC SEQ FIELD VALUE" per event to OUT (CLOCK_MONOTONIC,
                                    the runner's clock), after a line "ready"
  subscribers BASE TOKEN N EDITS PID  N clients of the feed at once; EDITS edits over HTTP, each to
                                    a field of its own; prints JSON: events lost or repeated per
                                    client, the node's resident memory sampled meanwhile
  query BASE TOKEN REPEAT [--NAME=VALUE...] COND...
                                    times GET /v1/items?where=COND...&NAME=VALUE... (limit 1000
                                    unless given; sort, q, type, deleted likewise) REPEAT times on
                                    one connection; prints JSON: the times (ms) and the items found
"""
import http.client, json, socket, sys, threading, time, urllib.parse


def connect(base):
    u = urllib.parse.urlparse(base)
    return u.hostname, u.port


def stream(base, token, on_event, ready):
    """Follows the feed from now on; calls on_event(t, entry) for each change."""
    host, port = connect(base)
    sock = socket.create_connection((host, port))
    sock.sendall(
        (
            f"GET /v1/changes HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
            "Accept: text/event-stream\r\n\r\n"
        ).encode()
    )
    lines = sock.makefile("rb")
    status = lines.readline()
    if b" 200 " not in status:
        raise SystemExit(f"the feed answered {status!r}")
    chunked = False
    while True:
        header = lines.readline()
        if header in (b"\r\n", b"\n", b""):
            break
        if header.lower().startswith(b"transfer-encoding:") and b"chunked" in header.lower():
            chunked = True
    signalled = False
    buffer = b""
    while True:
        if chunked:
            size_line = lines.readline()
            if not size_line:
                return
            size = int(size_line.strip() or b"0", 16)
            if size == 0:
                return
            chunk = lines.read(size)
            lines.readline()
        else:
            chunk = lines.read1(65536)
            if not chunk:
                return
        buffer += chunk
        while b"\n\n" in buffer:
            event, buffer = buffer.split(b"\n\n", 1)
            t = time.monotonic()
            if not signalled:
                signalled = True
                ready()
            for line in event.split(b"\n"):
                if line.startswith(b"data: "):
                    on_event(t, json.loads(line[6:]))


def follow(base, token, out):
    f = open(out, "a", buffering=1)

    def on_event(t, entry):
        f.write(f"{t:.6f} {entry['seq']} {entry['id']}.{entry['field']} {json.dumps(entry['value'])}\n")

    stream(base, token, on_event, lambda: f.write("ready\n"))


def rss_kb(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def subscribers(base, token, n, edits, pid):
    counts = [dict() for _ in range(n)]
    ready = threading.Semaphore(0)
    lock = threading.Lock()

    def client(i):
        def on_event(t, entry):
            if entry["field"] == "api_bench":
                key = entry["id"]
                with lock:
                    counts[i][key] = counts[i].get(key, 0) + 1

        stream(base, token, on_event, ready.release)

    rss_before = rss_kb(pid, "VmRSS")
    for i in range(n):
        threading.Thread(target=client, args=(i,), daemon=True).start()
    host, port = connect(base)
    # Each stream sends its first bytes (a retry line) at once: all are connected after that.
    for _ in range(n):
        if not ready.acquire(timeout=30):
            raise SystemExit("not every feed client connected within 30 s")
    peak = rss_kb(pid, "VmRSS")
    conn = http.client.HTTPConnection(host, port, timeout=30)
    started = time.monotonic()
    for e in range(edits):
        body = json.dumps({"type": "bench", "fields": {"api_bench": e}})
        conn.request("POST", "/v1/items", body=body, headers={"Authorization": "Bearer " + token,
                                                              "Content-Type": "application/json"})
        r = conn.getresponse()
        r.read()
        if r.status != 201:
            raise SystemExit(f"edit {e}: {r.status}")
        if e % 10 == 0:
            peak = max(peak, rss_kb(pid, "VmRSS"))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        peak = max(peak, rss_kb(pid, "VmRSS"))
        with lock:
            if all(len(c) == edits for c in counts):
                break
        time.sleep(0.05)
    seconds = time.monotonic() - started
    with lock:
        lost = sum(edits - len(c) for c in counts)
        repeated = sum(v - 1 for c in counts for v in c.values() if v > 1)
    print(json.dumps({
        "subscribers": n, "edits": edits, "lost": lost, "repeated": repeated,
        "rss_before_mb": rss_before / 1024, "rss_peak_mb": peak / 1024,
        "hwm_mb": rss_kb(pid, "VmHWM") / 1024, "seconds": seconds,
    }))


def query(base, token, repeat, conditions):
    host, port = connect(base)
    conn = http.client.HTTPConnection(host, port, timeout=60)
    params = {"limit": "1000"}
    while conditions and conditions[0].startswith("--"):
        name, _, value = conditions[0][2:].partition("=")
        params[name] = value
        conditions = conditions[1:]
    path = "/v1/items?" + urllib.parse.urlencode([("where", c) for c in conditions] + list(params.items()))
    times, found = [], None
    for _ in range(repeat):
        t = time.monotonic()
        conn.request("GET", path, headers={"Authorization": "Bearer " + token})
        r = conn.getresponse()
        body = r.read()
        times.append((time.monotonic() - t) * 1000)
        if r.status != 200:
            raise SystemExit(f"query {conditions}: {r.status} {body[:200]!r}")
        found = len(json.loads(body)["items"])
    print(json.dumps({"ms": times, "found": found}))


if __name__ == "__main__":
    mode, base, token = sys.argv[1:4]
    if mode == "follow":
        follow(base, token, sys.argv[4])
    elif mode == "subscribers":
        subscribers(base, token, int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
    elif mode == "query":
        query(base, token, int(sys.argv[4]), sys.argv[5:])
    else:
        raise SystemExit(__doc__)
