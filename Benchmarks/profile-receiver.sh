#!/usr/bin/env bash
# The receiving node of W1 or W3 under `perf record` (Docs/BENCHMARKS.md, "The file and the write
# path"), with BINARY on loopback, no mDNS and no API:
#   W1  A imports lansync-bench's W1 dataset (100,000 items of ten fields); B starts empty and
#       dials A; done when B holds every item.
#   W3  A and B hold the same 10,000 items; apart, each sets f0 of every item to its own value;
#       A's node starts, then B's; done when both show 10,000 conflicts.
# Prints the time until done (perf's overhead included when PERF_DATA is given) and, with
# PERF_DATA, where B's samples fall. Needs sqlite3, python3 and (for a profile) perf.
#
#   Benchmarks/profile-receiver.sh W1|W3 BINARY [PERF_DATA]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
WORKLOAD=$1
BIN=$(realpath "$2")
PERF_DATA=${3:-}
WORK=/tmp/lansync-profile-$WORKLOAD
rm -rf "$WORK"
mkdir -p "$WORK/rt"
export LANSYNC_RUNTIME_DIR=$WORK/rt
cd "$WORK"
"$BIN" cluster create c.pem >/dev/null
"$BIN" init --dir a --cluster c.pem --name a >/dev/null
"$BIN" init --dir b --cluster c.pem --name b >/dev/null
PORT=$((40000 + RANDOM % 20000))
node() { # DIR PORT [PEER_PORT]
    exec "$BIN" node --dir "$1" --listen "127.0.0.1:$2" ${3:+--peer "127.0.0.1:$3"} --no-mdns --no-api 2>>"$1.log"
}
count() { sqlite3 "file:$1/replica.sqlite?mode=ro" "$2" 2>/dev/null || echo 0; }

if [ "$WORKLOAD" = W3 ]; then
    python3 - <<'EOF'
import json
with open('items.jsonl', 'w') as f:
    for i in range(10000):
        f.write(json.dumps({'id': 'item-%07d' % i, 'type': 'bench',
                            'fields': {'f%d' % k: 'value %d of %d' % (k, i) for k in range(10)}}) + '\n')
for side in 'AB':
    with open('edits-%s.jsonl' % side, 'w') as f:
        for i in range(10000):
            f.write(json.dumps({'id': 'item-%07d' % i, 'fields': {'f0': 'edit by %s of %d' % (side, i)}}) + '\n')
EOF
    "$BIN" import --dir a items.jsonl >/dev/null
    node a "$PORT" & NA=$!
    node b $((PORT + 2)) "$PORT" & NB=$!
    until [ "$(count b 'SELECT count(*) FROM item')" = 10000 ]; do sleep 0.2; done
    sleep 2
    kill $NA $NB; wait $NA $NB 2>/dev/null || true
    "$BIN" import --dir a edits-A.jsonl >/dev/null
    "$BIN" import --dir b edits-B.jsonl >/dev/null
    done_yet() {
        [ "$(count a 'SELECT count(*) FROM field WHERE conflict = 1')" = 10000 ] &&
            [ "$(count b 'SELECT count(*) FROM field WHERE conflict = 1')" = 10000 ]
    }
else
    python3 "$HERE/w1-dataset.py" data.jsonl
    "$BIN" import --dir a data.jsonl >/dev/null
    done_yet() { [ "$(count b 'SELECT count(*) FROM item')" = 100000 ]; }
fi

node a "$PORT" & NA=$!
sleep 0.5
start=$(date +%s.%N)
if [ -n "$PERF_DATA" ]; then
    perf record -F 2999 -g -o "$PERF_DATA" -- "$BIN" node --dir b --listen "127.0.0.1:$((PORT + 2))" \
        --peer "127.0.0.1:$PORT" --no-mdns --no-api 2>>b.log &
else
    node b $((PORT + 2)) "$PORT" &
fi
NB=$!
until done_yet; do sleep 0.02; done
end=$(date +%s.%N)
printf '%s: done %.2f s after starting B%s\n' "$WORKLOAD" "$(python3 -c "print($end - $start)")" \
    "${PERF_DATA:+ (under perf)}"
sleep 0.5
kill -INT $NB; wait $NB 2>/dev/null || true
kill $NA; wait $NA 2>/dev/null || true
if [ -n "$PERF_DATA" ]; then
    perf report -i "$PERF_DATA" --no-children --sort dso,sym --stdio -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -30
fi
