#!/usr/bin/env bash
# Times pages of items through the local API on a replica of 100,000 items (lansync-bench's
# dataset: ids item-0000000..., fields f0..f9, f3 indexed), for comparing two builds on one
# machine (Docs/BENCHMARKS.md, "A page of items in one read"):
#
#   Benchmarks/api-pages.sh BINARY LABEL [WORKDIR]
#
# The first run makes WORKDIR/replica (default /tmp/lansync-api-pages) with BINARY; every run
# starts a node with BINARY on a copy of it and prints, per figure, the median and the least of
# 20 requests on one connection (the first, which warms the caches, left out).
set -euo pipefail
BIN=$(realpath "$1")
LABEL=$2
WORK=${3:-/tmp/lansync-api-pages}
mkdir -p "$WORK"
if [ ! -d "$WORK/replica" ]; then
    python3 - "$WORK/data.jsonl" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    for i in range(100000):
        fields = ",".join('"f%d":"value %d of item %07d %s"' % (k, k, i, "x" * (26 - len(str(k)))) for k in range(10))
        f.write('{"id":"item-%07d","type":"bench","fields":{%s}}\n' % (i, fields))
PY
    "$BIN" cluster create "$WORK/cluster.pem" >/dev/null
    "$BIN" init --dir "$WORK/replica" --cluster "$WORK/cluster.pem" --name pages >/dev/null
    "$BIN" import --dir "$WORK/replica" "$WORK/data.jsonl" >/dev/null
    "$BIN" index --dir "$WORK/replica" f3 >/dev/null
fi
rm -rf "$WORK/run"
cp -a "$WORK/replica" "$WORK/run"
rm -f "$WORK/run/control.sock"
PORT=$((40000 + RANDOM % 20000))
"$BIN" node --dir "$WORK/run" --listen "127.0.0.1:$PORT" --no-mdns --api "127.0.0.1:$((PORT + 1))" 2>"$WORK/node.log" &
NODE=$!
trap 'kill $NODE 2>/dev/null; wait $NODE 2>/dev/null' EXIT
for _ in $(seq 1 200); do grep -q "local API on" "$WORK/node.log" && break; sleep 0.1; done
python3 - "$((PORT + 1))" "$(cat "$WORK/run/api-token")" "$LABEL" <<'PY'
import http.client, json, statistics, sys, time, urllib.parse
port, token, label = int(sys.argv[1]), sys.argv[2], sys.argv[3]
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
def timed(name, params, n=21):
    path = "/v1/items?" + urllib.parse.urlencode(params)
    ms = []
    for _ in range(n):
        start = time.monotonic()
        conn.request("GET", path, headers={"Authorization": "Bearer " + token})
        r = conn.getresponse()
        body = r.read()
        ms.append((time.monotonic() - start) * 1000)
        if r.status != 200:
            raise SystemExit(f"{name}: {r.status} {body[:200]!r}")
    ms = ms[1:]
    found = len(json.loads(body)["items"])
    print(f"{label:10} {name:28} found {found:4}  median {statistics.median(ms):7.2f} ms  least {min(ms):7.2f} ms")
mid = 50000
timed("f3 = value, indexed", [("where", "f3=value 3 of item %07d %s" % (mid, "x" * 25)), ("limit", "1000")])
timed("f3 prefix, indexed", [("where", "f3 prefix value 3 of item %05d" % (mid // 100)), ("limit", "1000")])
timed("a page of 100, no query", [("limit", "100")])
timed("f4 = value, unindexed", [("where", "f4=value 4 of item %07d %s" % (mid, "x" * 25)), ("limit", "1000")])
timed("f4 prefix, unindexed", [("where", "f4 prefix value 4 of item %05d" % (mid // 100)), ("limit", "1000")])
PY
