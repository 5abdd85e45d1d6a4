#!/usr/bin/env bash
# Measures the purge of minimal tombstones (issue 30; not run by CI): ROUNDS rounds (default 4)
# on three nodes a, b, c in a mesh, each round creating PER (default 5,000) items of 5 fields on
# one node and deleting all but KEPT (default 500) of them, 20,000 items in all; trash window 0s,
# away window 1m (the shortest), a collection round every second. Waits until every node has
# purged every tombstone, then starts a fourth node d that joins from a, and prints each replica's
# size (status file_bytes: pages in use, free pages excluded) against d's, which only ever held
# the live items. Usage: scripts/measure-purge.sh [LANSYNC_BINARY] (default: the release build).
set -euo pipefail
source "$(dirname "$0")/lib/release.sh"
lansync_binary "$@"
ROUNDS=${ROUNDS:-4}; PER=${PER:-5000}; KEPT=${KEPT:-500}
W=$(mktemp -d /tmp/lansync-purge-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf $W; echo $W' EXIT
cd $W
$BIN cluster create c.pem >/dev/null
for d in a b c d; do $BIN init --dir $d --cluster c.pem --name $d >/dev/null; done
$BIN cluster set --dir a trash-window 0s >/dev/null
$BIN cluster set --dir a away-after 1m >/dev/null
P=$((20000 + RANDOM % 20000))
$BIN node --dir a --listen 127.0.0.1:$P --no-mdns --no-api --collect-interval 1 2>a.log &
$BIN node --dir b --listen 127.0.0.1:$((P+1)) --no-mdns --no-api --peer 127.0.0.1:$P --collect-interval 1 2>b.log &
$BIN node --dir c --listen 127.0.0.1:$((P+2)) --no-mdns --no-api --peer 127.0.0.1:$P --peer 127.0.0.1:$((P+1)) --collect-interval 1 2>c.log &
js() { $BIN status --dir $1 --json | python3 -c "import json,sys; s=json.load(sys.stdin); c=s.get('collection') or {}; print($2)"; }
wait_all() { # wait_all EXPR VALUE: until EXPR prints VALUE on a, b and c
    for i in $(seq 900); do
        ok=1; for d in a b c; do [ "$(js $d "$1")" = "$2" ] || ok=0; done
        [ $ok = 1 ] && return 0; sleep 0.5
    done; echo "timeout waiting for $1 = $2"; return 1
}
nodes=(a b c); live=0; deleted=0
for r in $(seq 0 $((ROUNDS-1))); do
    n=${nodes[$((r % 3))]}
    python3 - $r $PER > items.jsonl <<'PY'
import sys
r, n = int(sys.argv[1]), int(sys.argv[2])
for i in range(n):
    print('{"id":"r%di%05d","type":"t","fields":{"f1":%d,"f2":"text %d","f3":[1,2,3],"f4":%d.5,"f5":true}}' % (r,i,i,i,i))
PY
    python3 - $r $PER $KEPT > dels.jsonl <<'PY'
import sys
r, n, k = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
for i in range(k, n):
    print('{"id":"r%di%05d","deleted":true,"fields":{}}' % (r,i))
PY
    $BIN import --dir $n < items.jsonl >/dev/null 2>&1
    live=$((live + PER)); wait_all 's["items"]' $live
    $BIN import --dir $n < dels.jsonl >/dev/null 2>&1
    live=$((live - PER + KEPT)); deleted=$((deleted + PER - KEPT))
    echo "round $r on $n: $PER created, $((PER - KEPT)) deleted; a: $(js a '"%d items, %d deleted, file %d bytes" % (s["items"], s["deleted"], c["file_bytes"])')"
done
wait_all 's["deleted"]' $deleted
echo "deletes converged: a $(js a '"file %d bytes, %d collected" % (c["file_bytes"], c["collected_items"])')"
start=$(date +%s)
wait_all 'c["purged_items"]' $deleted
echo "every node purged $deleted tombstones $(( $(date +%s) - start )) s after the deletes converged"
$BIN node --dir d --listen 127.0.0.1:$((P+3)) --no-mdns --no-api --peer 127.0.0.1:$P --collect-interval 1 2>d.log &
for i in $(seq 600); do [ "$(js d 's["items"]')" = "$live" ] && break; sleep 0.5; done
sleep 2
dbytes=$(js d 'c["file_bytes"]')
echo "d (joined afterwards): $(js d '"%d items, %d deleted, %d live field rows, file %d bytes" % (s["items"], s["deleted"], c["live_fields"], c["file_bytes"])')"
for n in a b c; do
    echo "$n: $(js $n '"%d items, %d deleted, %d purged, file %d bytes" % (s["items"], s["deleted"], c["purged_items"], c["file_bytes"])'), $(python3 -c "print('%.3f' % ($(js $n 'c["file_bytes"]') / $dbytes))")x d's"
done
