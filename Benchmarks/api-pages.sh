#!/usr/bin/env bash
# Times pages of items through the local API on a replica of 100,000 items (lansync-bench's
# dataset: ids item-0000000..., fields f0..f9, f3 indexed), for comparing two builds on one
# machine (Docs/BENCHMARKS.md, "A page of items in one read"):
#
#   Benchmarks/api-pages.sh BINARY LABEL [WORKDIR]
#
# The first run makes WORKDIR/replica (default /tmp/lansync-api-pages) with BINARY; every run
# starts a node with BINARY on a copy of it and prints, per figure, the median and the least of
# 20 requests on one connection (the first, which warms the caches, left out), timed by
# api-bench.py (W8's client).
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
BASE="http://127.0.0.1:$((PORT + 1))"
TOKEN=$(cat "$WORK/run/api-token")
CLIENT="$(dirname "$0")/api-bench.py"
X=xxxxxxxxxxxxxxxxxxxxxxxxx
timed() {
    local name=$1
    shift
    python3 "$CLIENT" query "$BASE" "$TOKEN" 21 "$@" | python3 -c '
import json, statistics, sys
r = json.load(sys.stdin)
ms, found = r["ms"][1:], r["found"]  # the first request warms the caches
print(f"{sys.argv[1]:10} {sys.argv[2]:28} found {found:4}  median {statistics.median(ms):7.2f} ms  least {min(ms):7.2f} ms")
' "$LABEL" "$name"
}
timed "f3 = value, indexed" "f3=value 3 of item 0050000 $X"
timed "f3 prefix, indexed" "f3 prefix value 3 of item 00500"
timed "a page of 100, no query" --limit=100
timed "f4 = value, unindexed" "f4=value 4 of item 0050000 $X"
timed "f4 prefix, unindexed" "f4 prefix value 4 of item 00500"
