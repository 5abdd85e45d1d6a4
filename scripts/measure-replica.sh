#!/usr/bin/env bash
# Measures the replica's figures for issue 3 with the release binary (not run by CI; the benchmark
# runner of issue 8 takes these over):
#   - import of 100,000 items (3 fields each)
#   - get, list --type, and the "unseen by V" index query on that 100,000-item replica
#   - 10,000 edits of one item (one transaction each), then get and history on it
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/release.sh
"${LANSYNC_RELEASE_BUILD[@]}" >/dev/null
L="$PWD/.build/release/lansync"
W=$(mktemp -d /tmp/lansync-measure-XXXXXX)
trap 'rm -rf "$W"' EXIT
ms() { echo $(( $(date +%s%N) / 1000000 )); }
timeit() { local s e; s=$(ms); "$@" >/dev/null; e=$(ms); echo $((e - s)); }

$L cluster create "$W/c.pem" >/dev/null
$L init --dir "$W/a" --cluster "$W/c.pem" --name a >/dev/null
python3 - "$W/items.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(100_000):
        f.write(json.dumps({"id": f"item-{i:06d}", "type": "task" if i % 10 == 0 else "note",
                            "fields": {"title": f"title {i}", "n": i, "tags": ["a", f"t{i % 7}"]}}) + "\n")
PY
echo "import 100000 items:            $(timeit $L import --dir "$W/a" "$W/items.jsonl") ms"
echo "get (100k replica):             $(timeit $L get --dir "$W/a" item-054321 --json) ms"
echo "list --type task (10k of 100k): $(timeit $L list --dir "$W/a" --type task --json) ms"
echo "list --json (all 100k):         $(timeit $L list --dir "$W/a" --json) ms"
echo "export (all 100k):              $(timeit $L export --dir "$W/a") ms"
NODE=$(sqlite3 "$W/a/replica.sqlite" "SELECT id FROM node LIMIT 1")
MAX=$(sqlite3 "$W/a/replica.sqlite" "SELECT max(counter) FROM version")
q() { printf '.timer on\nSELECT count(*) FROM (SELECT v.counter, i.item_id, f.name FROM version v JOIN field f ON f.id = v.field JOIN item i ON i.id = f.item WHERE v.node = %s AND v.counter > %s ORDER BY v.counter LIMIT 512);\n' "$NODE" "$1" | sqlite3 "$W/a/replica.sqlite" | sed -n 's/^Run Time: real \([0-9.]*\).*/\1 s/p'; }
echo "unseen-by-V, peer lacks 1 edit: $(q $((MAX - 1)))"
echo "unseen-by-V, peer lacks all:    $(q 0)   (first batch of 512 rows)"
echo "process start-up (--version):   $(timeit $L --version) ms   (included in every CLI figure)"
$L add --dir "$W/a" --id hot n=0 >/dev/null
echo "10000 edits of one item:        $(timeit $L debug edit-loop --dir "$W/a" hot 10000) ms (one transaction each)"
echo "get (after 10k edits):          $(timeit $L get --dir "$W/a" hot --json) ms"
echo "history (1000 kept versions):   $(timeit $L history --dir "$W/a" hot n --json) ms"
echo "replica size:                   $(du -sh "$W/a" | cut -f1)"
