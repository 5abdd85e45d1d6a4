#!/usr/bin/env bash
# Measures issue 4's figures with the release binary on loopback (not run by CI; the benchmark
# runner of issue 8 takes these over):
#   - initial sync of ITEMS items x 10 fields (~50 bytes each) to an empty node: time, wire bytes
#     (TLS included) against payload bytes, peak memory of each node
#   - wire bytes for one edit into that replica
#   - wire bytes of idle anti-entropy rounds
set -euo pipefail
cd "$(dirname "$0")/.."
ITEMS=${ITEMS:-100000}
swift build -c release --product lansync >/dev/null
L="$PWD/.build/release/lansync"
W=$(mktemp -d /tmp/lansync-sync-XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$W"' EXIT
ms() { echo $(( $(date +%s%N) / 1000000 )); }
vv() { sqlite3 "$1/replica.sqlite" "SELECT group_concat(node_id || ':' || counter) FROM (SELECT node_id, counter FROM node WHERE counter > 0 ORDER BY node_id)"; }
peer_field() { # DIR FIELD: a number from the first peer in status --json
  $L status --dir "$1" --json | python3 -c "import json,sys; p=json.load(sys.stdin)['peers']; print(p[0]['$2'] if p else 0)"; }
hwm() { awk '/VmHWM/ {print $2}' "/proc/$1/status"; }

$L cluster create "$W/c.pem" >/dev/null
$L init --dir "$W/a" --cluster "$W/c.pem" --name a >/dev/null
$L init --dir "$W/b" --cluster "$W/c.pem" --name b >/dev/null
PAYLOAD=$(python3 - "$W/items.jsonl" "$ITEMS" <<'PY'
import json, sys
n = int(sys.argv[2]); total = 0
with open(sys.argv[1], "w") as f:
    for i in range(n):
        fields = {f"f{k}": f"value {k} of item {i:07d} " + "x" * (26 - len(str(k))) for k in range(10)}
        total += sum(len(k) + len(v) for k, v in fields.items())
        f.write(json.dumps({"id": f"item-{i:07d}", "type": "bench", "fields": fields}) + "\n")
print(total)
PY
)
s=$(ms); $L import --dir "$W/a" "$W/items.jsonl" 2>/dev/null; e=$(ms)
echo "import $ITEMS items x 10 fields: $((e - s)) ms; payload (names + values) $PAYLOAD bytes"

$L node --dir "$W/a" --listen 127.0.0.1:27001 --anti-entropy 2 2>"$W/a.log" & PIDS+=($!); PA=$!
sleep 1
s=$(ms)
$L node --dir "$W/b" --listen 127.0.0.1:27002 --peer 127.0.0.1:27001 --anti-entropy 2 2>"$W/b.log" & PIDS+=($!); PB=$!
until [ "$(vv "$W/a")" = "$(vv "$W/b")" ]; do sleep 0.05; done
e=$(ms)
SENT=$(peer_field "$W/a" sent_bytes); RECV=$(peer_field "$W/a" received_bytes)
echo "initial sync to an empty node: $((e - s)) ms (from starting the empty node), $((ITEMS * 10 * 1000 / (e - s))) field values/s"
echo "  wire bytes A->B $SENT, B->A $RECV; (A->B)/payload = $(python3 -c "print(round($SENT/$PAYLOAD, 3))")"
echo "  peak RSS: A $(hwm $PA) KiB, B $(hwm $PB) KiB"
echo "  digests: A $($L status --dir "$W/a" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["digest"])')  B $($L status --dir "$W/b" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["digest"])')"

sleep 3
S0=$(peer_field "$W/a" sent_bytes); R0=$(peer_field "$W/a" received_bytes)
$L set --dir "$W/a" item-0050000 f3="one edited value"
until [ "$(vv "$W/a")" = "$(vv "$W/b")" ]; do sleep 0.01; done
sleep 0.5
S1=$(peer_field "$W/a" sent_bytes); R1=$(peer_field "$W/a" received_bytes)
echo "one edit: A->B $((S1 - S0)) bytes, B->A $((R1 - R0)) bytes (both include any anti-entropy round in the window)"

S0=$(peer_field "$W/a" sent_bytes); R0=$(peer_field "$W/a" received_bytes)
sleep 10
S1=$(peer_field "$W/a" sent_bytes); R1=$(peer_field "$W/a" received_bytes)
echo "idle, 10 s with a 2 s anti-entropy interval (about 5 rounds each way): A->B $((S1 - S0)) bytes, B->A $((R1 - R0)) bytes"
