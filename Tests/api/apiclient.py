#!/usr/bin/env python3
"""A small client of lansync's local API, used by Tests/IntegrationTests/APITests.swift against
the real binary (standard library only).

  apiclient.py check BASE TOKEN               every endpoint, good and bad input; exit 1 on a failure
  apiclient.py add BASE TOKEN N PREFIX        creates items PREFIX-0 .. PREFIX-(N-1) over HTTP
  apiclient.py follow BASE TOKEN OUT N SECS   follows the feed as Server-Sent Events, reconnecting
                                              with Last-Event-ID, appending each event's data to
                                              OUT, until N events came or SECS passed
  apiclient.py slow BASE TOKEN                slow and stalled clients do not stop the API
  apiclient.py acks BASE TOKEN ITEM SECS      follows the feed with sync=true until a `sync` event
                                              came and ITEM reads SYNCED after it; exit 1 if not
  apiclient.py locked BASE TOKEN REPLICA      reads answer while writes wait for the lock another
                                              process holds on the REPLICA file
  apiclient.py revoked BASE TOKEN READY SECS  follows the feed from now on; writes READY once it
                                              is open (READY.got once a change came), then
                                              prints one JSON line: the change
                                              events read, and whether (and when) the node ended
                                              the stream before SECS passed
  apiclient.py login BASE LINK                trades the code in 'lansync ui''s LINK for a page
                                              session token, and prints it
  apiclient.py logout BASE TOKEN              ends the page session TOKEN (DELETE /v1/session)
"""
import http.client, json, os, socket, sqlite3, sys, threading, time, urllib.parse

def request(base, token, method, path, body=None, headers=None, raw=None):
    u = urllib.parse.urlparse(base)
    # 30 s: a loaded CI machine (every test at once) has taken more than 10 s to answer.
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    h = {} if token is None else {"Authorization": "Bearer " + token}
    h.update(headers or {})
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    if data is not None:
        h.setdefault("Content-Type", "application/json")
    conn.request(method, path, body=data, headers=h)
    r = conn.getresponse()
    text = r.read().decode()
    conn.close()
    try:
        payload = json.loads(text) if text else None
    except ValueError:
        payload = text
    return r.status, r.getheader("Content-Type") or "", payload

failures = 0
def expect(ok, what, detail=""):
    global failures
    print(("ok: " if ok else "FAILED: ") + what + ("" if ok else f" ({detail})"))
    if not ok:
        failures += 1

def problem(status, ctype, payload, code, words):
    return (status == code and ctype.startswith("application/problem+json") and isinstance(payload, dict)
            and payload.get("status") == code and words in payload.get("detail", ""))

def check(base, token):
    # Auth: no token, a wrong one.
    s, c, p = request(base, None, "GET", "/v1/items")
    expect(problem(s, c, p, 401, "bearer token"), "no token: 401 problem", f"{s} {p}")
    s, c, p = request(base, "0" * 64, "GET", "/v1/status")
    expect(s == 401, "a wrong token: 401", f"{s}")
    # Create (an export line), get, list.
    s, c, p = request(base, token, "POST", "/v1/items", {"id": "api-1", "type": "task", "fields": {"title": "Climb", "tags": ["outdoor"]}})
    expect(s == 201 and p["id"] == "api-1" and p["fields"]["title"] == "Climb", "create: 201 with the item", f"{s} {p}")
    s, c, p = request(base, token, "POST", "/v1/items", {"type": "note", "fields": {"n": 1}})
    expect(s == 201 and len(p["id"]) > 8 and p["type"] == "note", "create without an id: a new one", f"{s} {p}")
    s, c, p = request(base, token, "POST", "/v1/items", {"id": "api-1", "type": "task"})
    expect(problem(s, c, p, 409, "api-1"), "create an existing id: 409", f"{s} {p}")
    s, c, p = request(base, token, "GET", "/v1/items/api-1")
    expect(s == 200 and p["fields"]["tags"] == ["outdoor"] and p["deleted"] is False, "get", f"{s} {p}")
    for i in range(5):
        request(base, token, "POST", "/v1/items", {"id": f"page-{i}", "type": "page"})
    s, c, p = request(base, token, "GET", "/v1/items?type=page&limit=2")
    first = [i["id"] for i in p["items"]]
    s2, c2, p2 = request(base, token, "GET", "/v1/items?type=page&limit=2&after=" + p["next"])
    s3, c3, p3 = request(base, token, "GET", "/v1/items?type=page&limit=2&after=" + p2["next"])
    pages = first + [i["id"] for i in p2["items"]] + [i["id"] for i in p3["items"]]
    expect(pages == [f"page-{i}" for i in range(5)] and p3["next"] is None, "list: cursor pages, stable and whole", f"{pages} {p3}")
    # Patch: the CLI's assignments, and the object form.
    s, c, p = request(base, token, "PATCH", "/v1/items/api-1", ["title=Climb together", "tags+=indoor", "n=3"])
    expect(s == 200 and p["fields"]["title"] == "Climb together" and p["fields"]["n"] == 3
           and sorted(p["fields"]["tags"]) == ["indoor", "outdoor"], "patch with assignments", f"{s} {p}")
    s, c, p = request(base, token, "PATCH", "/v1/items/api-1", {"set": {"done": True}, "remove": {"tags": "outdoor"}})
    expect(s == 200 and p["fields"]["done"] is True and p["fields"]["tags"] == ["indoor"], "patch with set/add/remove", f"{s} {p}")
    s, c, p = request(base, token, "PATCH", "/v1/items/api-", ["n=4"])
    expect(s == 404 and "no item with id api-" in p["detail"], "an id prefix is not the item (the API takes whole ids)", f"{s} {p}")
    s, c, p = request(base, token, "PATCH", "/v1/items/api-1", {"set": {}})
    expect(s == 200 and p["fields"]["done"] is True, "a patch that assigns nothing changes nothing", f"{s} {p}")
    s, c, p = request(base, token, "GET", "/v1/items/api-1?fields=title")
    expect(s == 400 and "unknown query parameter 'fields'" in p["detail"], "an unknown query parameter is refused", f"{s} {p}")
    deep = 7
    for _ in range(17):
        deep = [deep]
    s, c, p = request(base, token, "PATCH", "/v1/items/api-1", {"set": {"deep": deep}})
    expect(s == 422 and "nests lists 17 deep" in p["detail"], "a value nested too deep: 422", f"{s} {p}")
    s, c, p = request(base, token, "PUT", "/v1/items/api-1", {"set": {}})
    expect(s == 405 and "GET, PATCH, DELETE" in p["detail"], "a method the endpoint does not take: 405", f"{s} {p}")
    # Bad input: a clear problem, and nothing changed.
    before = request(base, token, "GET", "/v1/items/api-1")[2]
    for what, body, code, words in [
        ("malformed JSON", b"{not json", 400, "not JSON"),
        ("an unknown patch key", json.dumps({"replace": {}}).encode(), 400, "unknown key"),
        ("an object value", json.dumps({"set": {"x": {"a": 1}}}).encode(), 422, "object"),
        ("a bad assignment", json.dumps(["no equals sign"]).encode(), 400, "not an assignment"),
        ("a reserved field", json.dumps(["_type=x"]).encode(), 400, "reserved"),
        ("an integer past 64 bits", b'{"set": {"n": 100000000000000000000}}', 422, "integer out of range"),
        # Within the OpenAPI document (which cannot see inside an assignment's value, and counts
        # a name's characters, not its bytes) but not keepable: 422, not 400.
        ("an assignment holding an object", json.dumps(["x={\"a\": 1}"]).encode(), 422, "object"),
        ("a name of 100 characters and 200 bytes", json.dumps({"set": {"\u00e9" * 100: 1}}).encode(), 422, "bytes"),
    ]:
        s, c, p = request(base, token, "PATCH", "/v1/items/api-1", raw=body)
        expect(problem(s, c, p, code, words), f"{what}: {code} problem", f"{s} {p}")
    s, c, p = request(base, token, "POST", "/v1/items", raw=json.dumps({"type": "t", "colour": 1}).encode())
    expect(problem(s, c, p, 400, "unknown key"), "create with an unknown key: 400", f"{s} {p}")
    s, c, p = request(base, token, "POST", "/v1/items", raw=b'{"type": "t", "fields": {"n": -100000000000000000000}}')
    expect(problem(s, c, p, 422, "integer out of range"), "create with an integer past 64 bits: 422", f"{s} {p}")
    s, c, p = request(base, token, "POST", "/v1/items", {"type": "\u00e9" * 40, "fields": {}})
    expect(problem(s, c, p, 422, "invalid type"), "create with a type of 40 characters and 80 bytes: 422", f"{s} {p}")
    s, c, p = request(base, token, "POST", "/v1/items", {"type": "t", "id": "big", "fields": {"n": 1e20}})
    expect(s == 201 and p["fields"]["n"] == 1e20, "a double written 1e20 is taken", f"{s} {p}")
    s, c, p = request(base, token, "POST", "/v1/items", raw=b"x" * (5 << 20))
    expect(problem(s, c, p, 413, "bytes"), "an oversized body: 413", f"{s} {str(p)[:200]}")
    expect(request(base, token, "GET", "/v1/items/api-1")[2] == before, "bad input changed nothing")
    s, c, p = request(base, token, "GET", "/v1/items/nope")
    expect(problem(s, c, p, 404, "nope"), "an unknown item: 404", f"{s} {p}")
    s, c, p = request(base, token, "GET", "/v1/nothing-here")
    expect(problem(s, c, p, 404, "no such endpoint"), "an unknown endpoint: 404 problem", f"{s} {p}")
    s, c, p = request(base, token, "POST", "/v1/items/api-1/resolve", {"field": "title", "value": "x"})
    expect(problem(s, c, p, 409, "title"), "resolve without a conflict: 409", f"{s} {p}")
    # Delete, restore, history, conflicts, status, peers.
    s, c, p = request(base, token, "DELETE", "/v1/items/api-1")
    expect(s == 200 and p["deleted"] is True, "delete", f"{s} {p}")
    s, c, p = request(base, token, "GET", "/v1/items?type=task")
    expect(s == 200 and p["items"] == [], "a deleted item leaves the list", f"{p}")
    s, c, p = request(base, token, "POST", "/v1/items/api-1/restore")
    expect(s == 200 and p["deleted"] is False and p["fields"]["title"] == "Climb together", "restore", f"{s} {p}")
    s, c, p = request(base, token, "GET", "/v1/items/api-1/history?field=title")
    expect(s == 200 and [e["write"].get("set") for e in p][:2] == ["Climb together", "Climb"], "history", f"{s} {p}")
    s, c, p = request(base, token, "GET", "/v1/conflicts")
    expect(s == 200 and p == [], "conflicts", f"{s} {p}")
    s, c, p = request(base, token, "GET", "/v1/status")
    expect(s == 200 and p["running"] is True and p["api"] and p["items"] >= 7, "status", f"{s} {p}")
    s, c, p = request(base, token, "GET", "/v1/peers")
    expect(s == 200 and isinstance(p, list), "peers", f"{s} {p}")
    # Queries: where (repeatable), sort, and opaque cursors for the next page.
    for i in range(9):
        request(base, token, "POST", "/v1/items", {"id": f"q-{i}", "type": "job", "fields": {"owner": ["ana", "bo", "cy"][i % 3], "n": i}})
    q = "/v1/items?type=job&where=" + urllib.parse.quote("owner!=cy") + "&where=" + urllib.parse.quote("n>=1") + "&sort=-n&limit=2"
    got, after = [], None
    for _ in range(10):
        s, c, p = request(base, token, "GET", q + ("" if after is None else "&after=" + urllib.parse.quote(p["next"])))
        if s != 200:
            break
        got += [i["id"] for i in p["items"]]
        if p["next"] is None:
            break
        after = p["next"]
    expect(got == ["q-7", "q-6", "q-4", "q-3", "q-1"], "where, sort and cursor pages", f"{s} {got} {p}")
    # A search (q): every word, any case; pages with a sort; the summary's counts.
    s, c, p = request(base, token, "GET", "/v1/items?" + urllib.parse.urlencode([("q", "JOB  ANA"), ("sort", "-n"), ("limit", "2")]))
    got = [i["id"] for i in p.get("items", [])] if s == 200 else []
    if s == 200 and p["next"]:
        s, c, p = request(base, token, "GET", "/v1/items?" + urllib.parse.urlencode([("q", "JOB  ANA"), ("sort", "-n"), ("limit", "2"), ("after", p["next"])]))
        got += [i["id"] for i in p.get("items", [])] if s == 200 else []
    expect(got == ["q-6", "q-3", "q-0"], "q: every word in any case, sorted, in pages", f"{s} {got} {p}")
    s, c, p = request(base, token, "GET", "/v1/items?q=" + "x" * 257)
    expect(problem(s, c, p, 400, "256"), "a search over 256 characters: 400", f"{s} {p}")
    s, c, p = request(base, token, "GET", "/v1/summary")
    jobs = [t for t in p.get("types", []) if t["type"] == "job"] if s == 200 else []
    expect(s == 200 and jobs == [{"type": "job", "items": 9, "deleted": 0}] and p["items"] >= 9, "summary: counts by type", f"{s} {p}")
    # As forms and urlencode write it: + for a space, %2B for a plus.
    s, c, p = request(base, token, "GET", "/v1/items?" + urllib.parse.urlencode([("where", "owner prefix a"), ("type", "job")]))
    expect(s == 200 and sorted(i["id"] for i in p["items"]) == ["q-0", "q-3", "q-6"], "a condition with + for spaces", f"{s} {p}")
    s, c, p = request(base, token, "GET", "/v1/items?where=n%ZZ")
    expect(problem(s, c, p, 400, "bad escape"), "a bad escape in the query string: 400", f"{s} {p}")
    s, c, p = request(base, token, "GET", "/v1/items?where=n")
    expect(problem(s, c, p, 400, "not a condition"), "a bad condition: 400", f"{s} {p}")
    s, c, p = request(base, token, "GET", "/v1/items?sort=n&after=zzz")
    expect(problem(s, c, p, 400, "cursor"), "a bad cursor: 400", f"{s} {p}")
    # A query string's bad input is a 400 even where a body's would be a 422.
    s, c, p = request(base, token, "GET", "/v1/items?" + urllib.parse.urlencode([("where", 'x={"a":1}')]))
    expect(problem(s, c, p, 400, "object"), "a condition on an object: 400", f"{s} {p}")
    # A type or name the OpenAPI document allows (it counts characters) but too long in bytes for
    # any item to have: an empty answer, not an error.
    s, c, p = request(base, token, "GET", "/v1/items?" + urllib.parse.urlencode([("type", "\u00e9" * 40)]))
    expect(s == 200 and p["items"] == [], "a type of 40 characters and 80 bytes matches nothing", f"{s} {p}")
    s, c, p = request(base, token, "GET", "/v1/changes?" + urllib.parse.urlencode([("since", "0"), ("field", "\u00e9" * 100)]))
    expect(s == 200 and p["changes"] == [], "a field of 100 characters and 200 bytes matches nothing", f"{s} {p}")
    s, c, p = request(base, token, "GET", "/v1/changes?" + urllib.parse.urlencode([("type", "a" * 65)]))
    expect(problem(s, c, p, 400, "invalid type"), "a type of 65 characters: 400", f"{s} {p}")
    # The feed, as JSON pages.
    s, c, p = request(base, token, "GET", "/v1/changes?since=0&item=api-1&field=title")
    expect(s == 200 and [e["value"] for e in p["changes"]] == ["Climb together"], "changes, filtered: the field once, at its latest", f"{s} {p}")
    s, c, p = request(base, token, "GET", "/v1/changes?since=abc")
    expect(problem(s, c, p, 400, "sequence number"), "changes with a bad since: 400", f"{s} {p}")
    return 1 if failures else 0

def add(base, token, n, prefix):
    for i in range(int(n)):
        s, c, p = request(base, token, "POST", "/v1/items", {"id": f"{prefix}-{i}", "type": "feed", "fields": {"i": i}})
        if s != 201:
            print(f"FAILED: create {prefix}-{i}: {s} {p}")
            return 1
    print(f"ok: created {n} items over HTTP")
    return 0

def follow(base, token, out, n, secs):
    """Server-Sent Events by hand: an event ends at a blank line; 'id:' is its sequence number."""
    u = urllib.parse.urlparse(base)
    last, got, reconnects = None, 0, -1
    end = time.time() + float(secs)
    with open(out, "a") as sink:
        while got < int(n) and time.time() < end:
            reconnects += 1
            try:
                conn = http.client.HTTPConnection(u.hostname, u.port, timeout=5)
                h = {"Authorization": "Bearer " + token, "Accept": "text/event-stream"}
                path = "/v1/changes?type=feed"
                if last is not None:
                    h["Last-Event-ID"] = last
                else:
                    path += "&since=0"
                conn.request("GET", path, headers=h)
                r = conn.getresponse()
                if r.status != 200:
                    time.sleep(0.2)
                    continue
                event_id, data = None, None
                while got < int(n) and time.time() < end:
                    line = r.readline()
                    if not line:
                        break
                    line = line.decode().rstrip("\n")
                    if line.startswith("id: "):
                        event_id = line[4:]
                    elif line.startswith("data: "):
                        data = line[6:]
                    elif line == "" and data is not None:
                        sink.write(data + "\n")
                        sink.flush()
                        last, got, data = event_id, got + 1, None
            except OSError:
                time.sleep(0.2)
    print(f"ok: followed {got} events, {reconnects} reconnects")
    return 0 if got >= int(n) else 1

def slow(base, token):
    """Slow and stalled clients hold connections while others use the API: half a request head,
    half a body, and feed clients that never read a replica's worth of events."""
    u = urllib.parse.urlparse(base)
    held = []
    for i in range(40):
        sock = socket.create_connection((u.hostname, u.port))
        sock.sendall(b"GET /v1/status HTTP/1.1\r\nHost: x\r\n")
        held.append(sock)
    for i in range(10):
        sock = socket.create_connection((u.hostname, u.port))
        body = json.dumps({"id": f"stalled-{i}", "type": "slow", "fields": {"n": i}}).encode()
        sock.sendall(
            f"POST /v1/items HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n".encode()
            + f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body[: len(body) // 2]
        )
        held.append(sock)
    for i in range(3):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect((u.hostname, u.port))
        sock.sendall(
            f"GET /v1/changes?since=0 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n".encode()
            + b"Accept: text/event-stream\r\n\r\n"
        )
        held.append(sock)
    time.sleep(0.5)
    s, c, p = request(base, token, "GET", "/v1/status")
    expect(s == 200, "the API answers while 53 slow clients hold connections", f"{s}")
    # A follower that reads, from now on, while items are made.
    out = f"/tmp/lansync-slow-{os.getpid()}.jsonl"
    start = request(base, token, "GET", "/v1/changes?limit=1&since=0")[2]
    latest = request(base, token, "GET", f"/v1/changes?since={start['last']}")[2]["last"]
    reader = threading.Thread(target=lambda: follow_from(base, token, out, latest, 300))
    reader.start()
    time.sleep(0.3)
    created = 0
    for i in range(300):
        s, c, p = request(base, token, "POST", "/v1/items", {"id": f"fast-{i}", "type": "slow", "fields": {"n": i}})
        created += s == 201
    expect(created == 300, "300 items made over HTTP meanwhile", f"{created}")
    # The reader stops once it has them all, or after 30 s without an event.
    reader.join(300)
    got = [json.loads(l) for l in open(out)] if os.path.exists(out) else []
    ids = [e["id"] for e in got if e["field"] == "n"]
    expect(sorted(ids) == sorted(f"fast-{i}" for i in range(300)) and len(ids) == 300,
           "a reading feed client got every one, once, beside three that never read", f"{len(ids)}")
    for sock in held:
        sock.close()
    time.sleep(0.3)
    s, c, p = request(base, token, "GET", "/v1/items/stalled-0")
    expect(s == 404, "a body that never finished made nothing", f"{s} {p}")
    s, c, p = request(base, token, "GET", "/v1/status")
    expect(s == 200, "the API answers after they go", f"{s}")
    return 0 if failures == 0 else 1

def follow_from(base, token, out, since, n):
    """Reads the feed (type slow) after `since` until n events of field n came, or nothing came
    for 30 s (a bound on silence, not on the whole: on a loaded machine the 300 creates alone
    took longer than a fixed 30 s, and the reader stopped half way through a feed that was
    still flowing)."""
    u = urllib.parse.urlparse(base)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    conn.request("GET", f"/v1/changes?type=slow&since={since}",
                 headers={"Authorization": "Bearer " + token, "Accept": "text/event-stream"})
    r = conn.getresponse()
    got = 0
    with open(out, "w") as sink:
        while got < n:
            try:
                line = r.readline()
            except OSError:
                break
            if not line:
                break
            line = line.decode().rstrip("\n")
            if line.startswith("data: "):
                sink.write(line[6:] + "\n")
                got += json.loads(line[6:])["field"] == "n"
    conn.close()

def acks(base, token, item, secs, ready):
    """The feed with sync=true: `sync` events (no id, data {}) come when peers' acknowledgements
    are recorded; after one, the item edited here is read again until it is SYNCED. The file
    `ready` is written once the first change event is read: the feed is followed from then on,
    so the peer may start (one that syncs before, on a loaded machine, leaves no event to see)."""
    u = urllib.parse.urlparse(base)
    end = time.time() + float(secs)
    syncs, changes, state = 0, 0, None
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=float(secs))
    conn.request("GET", "/v1/changes?sync=true&since=0",
                 headers={"Authorization": "Bearer " + token, "Accept": "text/event-stream"})
    r = conn.getresponse()
    if r.status != 200:
        print(f"FAILED: the feed answered {r.status}")
        return 1
    event, event_id = "message", None
    while time.time() < end and state != "SYNCED":
        line = r.readline()
        if not line:
            break
        line = line.decode().rstrip("\n")
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("id: "):
            event_id = line[4:]
        elif line == "":
            if event == "sync":
                syncs += 1
                if event_id is not None:
                    print("FAILED: a sync event carried an id")
                    return 1
                status, _, payload = request(base, token, "GET", "/v1/items/" + urllib.parse.quote(item))
                state = (payload.get("sync") or {}).get("state") if status == 200 else None
            elif event == "change":
                changes += 1
                if changes == 1:
                    open(ready, "w").close()
            event, event_id = "message", None
    conn.close()
    print(f"{'ok' if state == 'SYNCED' else 'FAILED'}: {changes} change events, {syncs} sync events, {item} {state}")
    return 0 if state == "SYNCED" else 1

def locked(base, token, replica):
    """Another process (this one) holds the replica's write lock, as a large `lansync import`
    does for a minute; four edits over HTTP wait for it meanwhile. Reads must answer anyway: WAL
    lets them go on beside a writer, and waiting writes must not hold the threads reads run on."""
    holder = sqlite3.connect(replica, timeout=30, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    results = {}
    def edit(i):
        results[i] = request(base, token, "POST", "/v1/items", {"id": f"waiting-{i}", "type": "locked", "fields": {"n": i}})[0]
    writers = [threading.Thread(target=edit, args=(i,)) for i in range(4)]
    for w in writers:
        w.start()
    # Time for the edits to reach the node and wait on its lock; less would let a pool that
    # serves reads and writes together pass by chance, never fail one that keeps them apart.
    time.sleep(1.5)
    read = {}
    def reads():
        read["items"] = request(base, token, "GET", "/v1/items?limit=5")[0]
        read["status"] = request(base, token, "GET", "/v1/status")[0]
    reader = threading.Thread(target=reads)
    reader.start()
    # Held until the reads answer, or for 20 s at most (the node's busy timeout is 30 s).
    reader.join(20)
    answered = dict(read)
    waiting = sum(1 for i in range(4) if i not in results)
    holder.execute("COMMIT")
    holder.close()
    expect(answered == {"items": 200, "status": 200},
           "a list and the status answer while another process holds the write lock", f"{answered}")
    expect(waiting == 4, "the four edits were still waiting for the lock when the reads answered", f"{waiting} waiting")
    for w in writers:
        w.join(30)
    reader.join(30)
    expect(sorted(results.values()) == [201] * 4, "the four edits are made once the lock is free", f"{results}")
    return 0 if failures == 0 else 1

def revoked(base, token, ready, secs):
    """Opens the event stream with TOKEN and reads it until the node ends it or SECS pass. Each
    change event's item id is recorded with the time it came; so is the end. The test revokes the
    token meanwhile and checks that the stream ended and carried nothing written after."""
    u = urllib.parse.urlparse(base)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    conn.request("GET", "/v1/changes", headers={"Authorization": "Bearer " + token, "Accept": "text/event-stream"})
    r = conn.getresponse()
    if r.status != 200:
        print(json.dumps({"error": f"the feed answered {r.status}"}))
        return 1
    r.readline()  # "retry: 1000": the stream is open
    r.readline()
    open(ready, "w").close()
    changes, ended = [], []

    def read():
        # Blocking reads on a thread of their own: SECS bound the wait from outside (a stream
        # that never ends still sends a comment every 15 s, and a timed-out socket is spent).
        data = None
        try:
            while True:
                line = r.readline()
                if not line:
                    ended.append(time.time())
                    return
                line = line.decode().rstrip("\n")
                if line.startswith("data: "):
                    data = json.loads(line[6:])
                elif line == "" and data is not None:
                    changes.append({"id": data.get("id"), "at": time.time()})
                    data = None
                    if len(changes) == 1:
                        open(ready + ".got", "w").close()
        except OSError:
            ended.append(time.time())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(float(secs))
    print(json.dumps({"changes": list(changes), "ended": ended[0] if ended else None}))
    return 0

def login(base, link):
    code = link.split("#login=", 1)[1]
    status, _, payload = request(base, None, "POST", "/v1/login", body={"code": code})
    if status != 200:
        print(f"FAILED: login answered {status}: {payload}")
        return 1
    print(payload["token"])
    return 0

def logout(base, token):
    status, _, payload = request(base, token, "DELETE", "/v1/session")
    print(status)
    return 0 if status in (200, 204) else 1

if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    sys.exit({"check": check, "add": add, "follow": follow, "slow": slow, "acks": acks, "locked": locked,
              "revoked": revoked, "login": login, "logout": logout}[cmd](*args))
