#!/usr/bin/env bash
# Measures collection (issue 30; not run by CI): N items (default 20,000) of 5 fields imported on
# A and synced to B; then all deleted on A and synced; then collected (trash window 0s, a round
# every 2 s). Prints B's replica size (a VACUUM INTO copy, so free pages do not count) and rows at
# each step. Usage: scripts/measure-collection.sh [LANSYNC_BINARY] (default: the release build);
# N=2000 for a quick run, KEEP=1 to keep the directories.
set -euo pipefail
source "$(dirname "$0")/lib/release.sh"
lansync_binary "$@"
command -v sqlite3 >/dev/null || { echo "needs the sqlite3 shell: apt-get install sqlite3" >&2; exit 1; }
N=${N:-20000}; W=$(mktemp -d /tmp/lansync-collect-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf $W; echo $W' EXIT
cd $W
$BIN cluster create c.pem >/dev/null
for d in a b; do $BIN init --dir $d --cluster c.pem --name $d >/dev/null; done
if $BIN cluster set --help >/dev/null 2>&1; then for d in a b; do $BIN cluster set --dir $d trash-window 0s >/dev/null; done; fi
python3 - $N > items.jsonl <<'PY'
import sys
for i in range(int(sys.argv[1])):
    print('{"id":"item%05d","type":"t","fields":{"f1":%d,"f2":"text %d","f3":[1,2,3],"f4":%d.5,"f5":true}}' % (i,i,i,i))
PY
python3 - $N > dels.jsonl <<'PY'
import sys
for i in range(int(sys.argv[1])):
    print('{"id":"item%05d","deleted":true,"fields":{}}' % i)
PY
$BIN import --dir a < items.jsonl >/dev/null 2>&1
P1=$((20000 + RANDOM % 20000)); P2=$((P1+7))
$BIN node --dir a --listen 127.0.0.1:$P1 --no-mdns --no-api --collect-interval 2 2>a.log &
$BIN node --dir b --listen 127.0.0.1:$P2 --no-mdns --no-api --peer 127.0.0.1:$P1 --collect-interval 2 2>b.log &
size() { rm -f v.sqlite; sqlite3 $1/replica.sqlite "VACUUM INTO 'v.sqlite'"; stat -c %s v.sqlite; }
rows() { sqlite3 $1/replica.sqlite "SELECT (SELECT count(*) FROM field)||' field rows, '||(SELECT count(*) FROM version)||' version rows, '||(SELECT count(*) FROM history)||' history rows'"; }
wait_items() { for i in $(seq 600); do n=$($BIN status --dir b --json | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s["items"], s["deleted"])'); [ "$n" = "$1" ] && return 0; sleep 0.5; done; echo "timeout waiting for $1 (have $n)"; }
wait_items "$N 0"; sleep 2
echo "after import+sync: B $(size b) bytes (vacuumed copy), $(rows b)"
$BIN import --dir a < dels.jsonl >/dev/null 2>&1
wait_items "0 $N"
echo "after delete+sync: B $(size b) bytes (vacuumed copy), $(rows b), file $(stat -c %s b/replica.sqlite) bytes"
for i in $(seq 120); do c=$($BIN status --dir b --json | python3 -c 'import json,sys; s=json.load(sys.stdin); print((s.get("collection") or {}).get("collected_items"))'); [ "$c" = "$N" ] && break; sleep 1; done
echo "after collection ($c collected, ${i}s): B $(size b) bytes (vacuumed copy), $(rows b), file $(stat -c %s b/replica.sqlite) bytes"
$BIN status --dir b | grep -E "^replica|^past" || true
