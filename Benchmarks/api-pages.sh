#!/usr/bin/env bash
# Times pages of items through the local API on a replica of 100,000 items (lansync-bench's
# dataset: ids item-0000000..., fields f0..f9, f3 indexed), for comparing two builds on one
# machine (Docs/BENCHMARKS.md, "A page of items in one read"):
#
#   Benchmarks/api-pages.sh BINARY LABEL [WORKDIR]
#
# The first run makes WORKDIR/replica (default /tmp/lansync-api-pages) with BINARY; every run
# starts a node with BINARY on a copy of it and prints, per figure, the median and the most of
# 20 requests on one connection (the first, which warms the caches, left out), timed by
# api-bench.py (W8's client).
set -euo pipefail
BIN=$(realpath "$1")
LABEL=$2
WORK=${3:-/tmp/lansync-api-pages}
mkdir -p "$WORK"
if [ ! -d "$WORK/replica" ]; then
    python3 "$(dirname "$0")/w1-dataset.py" "$WORK/data.jsonl"
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
    local name=$1 out
    shift
    if ! out=$(python3 "$CLIENT" query "$BASE" "$TOKEN" 21 "$@" 2>&1); then
        printf '%-10s %-28s not answered: %s\n' "$LABEL" "$name" "${out:0:100}"
        return
    fi
    python3 -c '
import json, statistics, sys
r = json.loads(sys.argv[3])
ms, found = r["ms"][1:], r["found"]  # the first request warms the caches
print(f"{sys.argv[1]:10} {sys.argv[2]:28} found {found:4}  median {statistics.median(ms):7.2f} ms  most {max(ms):7.2f} ms")
' "$LABEL" "$name" "$out"
}
timed "f3 = value, indexed" "f3=value 3 of item 0050000 $X"
timed "f3 prefix, indexed" "f3 prefix value 3 of item 00500"
timed "a page of 100, no query" --limit=100
timed "f4 = value, unindexed" "f4=value 4 of item 0050000 $X"
timed "f4 prefix, unindexed" "f4 prefix value 4 of item 00500"
# What the web page asks for (Docs/UI.md): pages of 100 in an order, of a type, with a search.
timed "page, sorted by f3 (indexed)" --limit=100 --sort=f3
timed "page, sorted by -f3" --limit=100 --sort=-f3
timed "page, sorted by f4 (unindexed)" --limit=100 --sort=f4
timed "page of a type, deleted too" --limit=100 --type=bench --deleted=true
timed "search, 1 match" --limit=100 --q=0050000
timed "search, every item" --limit=100 --q=value
timed "search, none, 2 letters" --limit=100 --q=zq
timed "search, 1,000 by f3" --limit=100 --q=" 00500" --sort=f3
timed "search, every item, by f3" --limit=100 --q=value --sort=f3
