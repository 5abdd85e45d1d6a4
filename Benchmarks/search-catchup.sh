#!/usr/bin/env bash
# How a running node writes the search texts after the fact (Docs/STORAGE.md, "item_search"):
# imports lansync-bench's W1 dataset (100,000 items of ten 40-character fields) with BINARY,
# starts a node on it, and reports how long the node takes to write every item's text once
# quiet, its peak RSS meanwhile, and the replica file before and after.
#
#   Benchmarks/search-catchup.sh BINARY [WORKDIR]
set -euo pipefail
BIN=$(realpath "$1")
WORK=${2:-/tmp/lansync-search-catchup}
rm -rf "$WORK"
mkdir -p "$WORK"
python3 "$(dirname "$0")/w1-dataset.py" "$WORK/data.jsonl"
"$BIN" cluster create "$WORK/cluster.pem" >/dev/null
"$BIN" init --dir "$WORK/replica" --cluster "$WORK/cluster.pem" --name catchup >/dev/null
DB="$WORK/replica/replica.sqlite"
start=$(date +%s.%N)
"$BIN" import --dir "$WORK/replica" "$WORK/data.jsonl" >/dev/null
end=$(date +%s.%N)
sqlite3 "$DB" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
backlog() { sqlite3 "$DB" "SELECT (SELECT max(seq) FROM field) - coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'search_seq'), 0)"; }
printf 'import: %.1f s; file %s MB; search texts behind by %s changes\n' "$(python3 -c "print($end - $start)")" \
    "$(($(stat -c %s "$DB") / 1000000))" "$(backlog)"
PORT=$((40000 + RANDOM % 20000))
"$BIN" node --dir "$WORK/replica" --listen "127.0.0.1:$PORT" --no-mdns 2>"$WORK/node.log" &
NODE=$!
trap 'kill $NODE 2>/dev/null; wait $NODE 2>/dev/null' EXIT
start=$(date +%s.%N)
peak=0
while :; do
    rss=$(awk '/VmRSS/ {print $2}' "/proc/$NODE/status")
    [ "$rss" -gt "$peak" ] && peak=$rss
    [ "$(backlog)" -le 0 ] && break
    sleep 0.2
done
end=$(date +%s.%N)
sqlite3 "$DB" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
printf 'node: every text written %.1f s after it started; peak RSS %s MB; file %s MB\n' \
    "$(python3 -c "print($end - $start)")" "$((peak / 1024))" "$(($(stat -c %s "$DB") / 1000000))"
