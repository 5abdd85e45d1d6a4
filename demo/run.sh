#!/usr/bin/env bash
# lansync demo: a relay and three nodes on this machine, syncing, merging and healing, narrated.
#
#   demo/run.sh              run it (installs what is missing, builds the release binary)
#   demo/run.sh --step       pause before each step
#   demo/run.sh --keep       leave the cluster running at the end, and say how to use and stop it
#   demo/run.sh --loopback   force loopback mode (static peers on 127.0.0.1) even as root
#   demo/run.sh --ha         then a last step: two relays share the authority through PostgreSQL
#                            (Debian's postgresql, a server of the demo's own), the one settling
#                            is killed, and the other takes over
#
# As root, with network namespaces available, every node lives in its own namespace with its own
# avahi-daemon (scripts/lab.sh), and they find each other over real mDNS; otherwise they run on
# loopback with static peers. No avahi-daemon is ever started in this machine's own namespace.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

STEP=0 KEEP=0 FORCE_LOOPBACK=0 HA=0
for arg in "$@"; do
    case $arg in
        --step) STEP=1 ;;
        --keep) KEEP=1 ;;
        --loopback) FORCE_LOOPBACK=1 ;;
        --ha) HA=1 ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        *) echo "demo/run.sh: unknown option $arg (try --help)" >&2; exit 2 ;;
    esac
done

bold() { if [ -t 1 ]; then printf '\033[1m%s\033[0m\n' "$*"; else printf '%s\n' "$*"; fi; }
say() { echo; bold "== $*"; }
note() { echo "   $*"; }
pause() { if [ "$STEP" = 1 ] && [ -t 0 ]; then read -r -p "   (press Enter for the next step) " _; fi; }

# --- Set-up: packages and the release binary ---------------------------------------------------
source scripts/lib/packages.sh
source scripts/lib/release.sh
NEED=(libsqlite3-dev libavahi-client-dev)
[ "$(id -u)" = 0 ] && NEED+=(avahi-daemon avahi-utils dbus iproute2 nftables util-linux)
[ "$HA" = 1 ] && NEED+=(postgresql)
ensure_packages "${NEED[@]}"
say "Building the release binary (first time: a few minutes)"
"${LANSYNC_RELEASE_BUILD[@]}" 2>&1 | grep -E "error|Compiling lansync|Build complete" || true
L="$ROOT/.build/release/lansync"
[ -x "$L" ] || { echo "demo: the build failed; run '${LANSYNC_RELEASE_BUILD[*]}' to see why" >&2; exit 1; }

# --- Mode ---------------------------------------------------------------------------------------
export LAB_PREFIX=lsd LAB_DIR=/tmp/lansync-demo-lab
MODE=loopback
WHY="forced with --loopback"
if [ "$FORCE_LOOPBACK" = 0 ]; then
    if WHY=$(scripts/lab.sh check 2>&1); then
        MODE=lab; WHY="running as root with network namespaces and avahi-daemon"
    elif [ "${LANSYNC_REQUIRE_LAB:-0}" = 1 ]; then
        # CI sets LANSYNC_REQUIRE_LAB=1 where the lab can run: falling back would hide a broken lab.
        echo "demo: LANSYNC_REQUIRE_LAB=1, but the mDNS lab cannot run: $WHY" >&2; exit 1
    fi
fi

W=$(mktemp -d /tmp/lansync-demo-XXXXXX)
declare -A PID ADDR HOST
NAMES=(alice bob carol)
if [ "$MODE" = lab ]; then
    say "Building the lab: five hosts in their own network namespaces, each with D-Bus and avahi-daemon"
    scripts/lab.sh up 6 >"$W/lab.log" 2>&1 || { echo "demo: the lab did not come up (see $W/lab.log); try --loopback" >&2; exit 1; }
    HOST=([alice]=1 [bob]=2 [carol]=3 [dave]=4 [relay]=5 [relay2]=6)
    for n in alice bob carol dave relay relay2; do ADDR[$n]="10.77.0.${HOST[$n]}:7420"; done
else
    i=0; for n in relay alice bob carol dave relay2; do ADDR[$n]="127.0.0.1:$((17400 + 10 * i))"; i=$((i + 1)); done
fi
PG_BIN=""

cleanup() {
    local status=$?
    trap - EXIT INT TERM
    if [ "$KEEP" = 1 ] && [ "$status" = 0 ]; then return; fi
    for p in "${PID[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
    [ -n "$PG_BIN" ] && as_postgres "$PG_BIN/pg_ctl" -D "$W/pg/data" -m immediate -w stop >/dev/null 2>&1 || true
    sleep 0.3
    [ "$MODE" = lab ] && scripts/lab.sh down >/dev/null 2>&1 || true
    rm -rf "$W"
    exit "$status"
}
trap cleanup EXIT
trap 'echo; echo "demo: interrupted, cleaning up"; exit 130' INT TERM

# Shows a command as a reader would type it (quoted where needed), then runs it.
run() {
    local line="lansync" a
    for a in "$@"; do
        a=${a//$W/\$DEMO}
        if [[ $a =~ [^A-Za-z0-9_./:=+\$-] ]]; then line+=" '$a'"; else line+=" $a"; fi
    done
    echo "   \$ $line"
    "$L" "$@"
}

start() { # NAME [node|relay] [extra options]
    local n=$1 role=$2; shift 2
    local args=("$role" --dir "$W/$n" --listen "${ADDR[$n]}")
    if [ "$MODE" = lab ]; then
        scripts/lab.sh exec "${HOST[$n]}" "$L" "${args[@]}" "$@" >"$W/$n.log" 2>&1 &
    else
        [ "$role" = node ] && args+=(--no-mdns)
        "$L" "${args[@]}" "$@" >"$W/$n.log" 2>&1 &
    fi
    PID[$n]=$!
    for _ in $(seq 1 100); do grep -q "listening on" "$W/$n.log" 2>/dev/null && return; sleep 0.05; done
    echo "demo: $n did not start, see $W/$n.log" >&2; exit 1
}

stop() { local n=$1; kill "${PID[$n]}" 2>/dev/null || true; wait "${PID[$n]}" 2>/dev/null || true; PID[$n]=""; }

peers_of() { # loopback mode: static peers among the three nodes (never the late one)
    local n=$1 out=()
    [ "$MODE" = lab ] && return
    for m in "${NAMES[@]}"; do [ "$m" != "$n" ] && out+=(--peer "${ADDR[$m]}"); done
    echo "${out[@]}"
}

# PostgreSQL refuses to run as root: its programs run as nobody then.
as_postgres() { if [ "$(id -u)" = 0 ]; then (cd / && runuser -u nobody -- "$@"); else "$@"; fi; }

digest() { "$L" status --dir "$W/$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["digest"])'; }

converge() { # NAMES...: wait until their digests agree
    for _ in $(seq 1 300); do
        local first="" same=1
        for n in "$@"; do d=$(digest "$n"); [ -z "$first" ] && first=$d; [ "$d" != "$first" ] && same=0; done
        [ "$same" = 1 ] && { note "converged: ${*} all show digest $first"; return 0; }
        sleep 0.1
    done
    echo "demo: $* did not converge" >&2; return 1
}

# --- The story ----------------------------------------------------------------------------------
bold "lansync demo: a relay and three nodes (alice, bob, carol) on this machine"
note "mode: $MODE ($WHY)"
note "data directories live under \$DEMO = $W"
pause

say "1. A cluster secret, and a replica on each machine (init works offline)"
run cluster create "$W/cluster.pem"
for n in alice bob carol relay; do run init --dir "$W/$n" --cluster "$W/cluster.pem" --name "$n" >/dev/null; note "initialised $n"; done
pause

say "2. Alice writes a task; the three nodes meet once and share it"
run add --dir "$W/alice" --id climb --type task title="Climb Fontainebleau" 'tags=["climbing"]'
for n in "${NAMES[@]}"; do start "$n" node $(peers_of "$n"); done
[ "$MODE" = lab ] && note "no --peer given: the nodes find each other over mDNS"
converge alice bob carol
for n in "${NAMES[@]}"; do stop "$n"; done
pause

say "3. Apart, everyone edits offline: different fields, and the same list"
run set --dir "$W/alice" climb location=Fontainebleau tags+=reading
run set --dir "$W/bob" climb due=2026-12-01 tags+=karaoke
run add --dir "$W/carol" --id groceries --type note text="bread, cheese"
pause

say "4. They come back: disjoint fields merge, list additions are unioned"
for n in carol alice bob; do start "$n" node $(peers_of "$n"); done
converge alice bob carol
run get --dir "$W/carol" climb
pause

say "5. A true conflict: alice and bob retitle the task while apart"
for n in alice bob; do stop "$n"; done
run set --dir "$W/alice" climb title="Climb at dawn"
sleep 0.05
run set --dir "$W/bob" climb title="Climb at dusk"
for n in alice bob; do start "$n" node $(peers_of "$n"); done
converge alice bob carol
note "both values are kept; every node shows the same one and lists the conflict:"
run conflicts --dir "$W/carol"
pause

say "6. The relay joins: it is the cluster's authority and settles the conflict"
start relay relay --settle latest
for n in "${NAMES[@]}"; do stop "$n"; start "$n" node $(peers_of "$n") --relay "${ADDR[relay]}" --relay-interval 2; done
converge alice bob carol relay
run conflicts --dir "$W/alice"
note "the losing title stays in history:"
run history --dir "$W/alice" climb title
pause

say "7. A partition: carol is cut off; both sides keep editing, then it heals"
if [ "$MODE" = lab ]; then
    echo "   \$ scripts/lab.sh cut 3      (nftables drops carol's traffic on the lab bridge)"
    scripts/lab.sh cut 3
else
    note "(loopback mode: carol's node is stopped to cut her off)"
    stop carol
fi
run set --dir "$W/alice" climb gear=rope
run set --dir "$W/carol" groceries text="bread, cheese, apples"
sleep 1
if [ "$MODE" = lab ]; then
    echo "   \$ scripts/lab.sh heal 3"
    scripts/lab.sh heal 3
else
    start carol node $(peers_of carol) --relay "${ADDR[relay]}" --relay-interval 2
fi
converge alice bob carol relay
pause

say "8. Dave joins late and knows only the relay: he catches up through it alone"
run init --dir "$W/dave" --cluster "$W/cluster.pem" --name dave >/dev/null
if [ "$MODE" = lab ]; then
    scripts/lab.sh exec "${HOST[dave]}" "$L" node --dir "$W/dave" --listen "${ADDR[dave]}" --no-mdns --no-gossip --relay "${ADDR[relay]}" >"$W/dave.log" 2>&1 &
    PID[dave]=$!
else
    start dave node --no-gossip --relay "${ADDR[relay]}"
fi
converge alice bob carol relay dave
pause

say "9. Every replica, side by side"
fail=0
first=""
for n in alice bob carol dave relay; do
    d=$(digest "$n"); printf '   %-6s digest %s\n' "$n" "$d"
    [ -z "$first" ] && first=$d
    [ "$d" != "$first" ] && fail=1
done
echo
run list --dir "$W/dave"
if [ "$fail" = 1 ]; then echo "demo: the digests differ" >&2; exit 1; fi
bold "All five replicas are identical."

if [ "$HA" = 1 ]; then
    pause
    say "10. Two relays, one authority: they share it through PostgreSQL, and one takes over when the other dies"
    PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
    mkdir -p "$W/pg"
    # The server runs as nobody (as root): it must get through \$DEMO to its own directory.
    if [ "$(id -u)" = 0 ]; then chmod 711 "$W"; chown nobody:nogroup "$W/pg"; fi
    as_postgres "$PG_BIN/initdb" -D "$W/pg/data" -U lansync -A trust --no-sync >"$W/pg.log" 2>&1
    # A Unix socket only: every lab namespace shares the file system, so every relay reaches it.
    as_postgres "$PG_BIN/pg_ctl" -D "$W/pg/data" -l "$W/pg/server.log" -o "-k $W/pg -c listen_addresses=''" -w start >>"$W/pg.log" 2>&1
    DB="postgres://lansync@:5432/postgres?host=$W/pg"
    note "a PostgreSQL server of the demo's own (initdb in \$DEMO/pg), reached at $DB"
    run init --dir "$W/relay2" --cluster "$W/cluster.pem" --name relay2 >/dev/null
    stop relay
    start relay relay --settle first-seen --authority "$DB" --lease 3 --peer "${ADDR[relay2]}"
    start relay2 relay --settle first-seen --authority "$DB" --lease 3 --peer "${ADDR[relay]}"
    sleep 1.5
    grep -h "holds the lease" "$W/relay.log" "$W/relay2.log" | sed 's/^/   relay log: /'
    for n in alice bob; do stop "$n"; start "$n" node $(peers_of "$n") --relay "${ADDR[relay]}" --relay "${ADDR[relay2]}" --relay-interval 2; done
    converge alice bob relay relay2
    note "the relay that settles is killed (SIGKILL), and alice and bob retitle the task while apart:"
    kill -9 "${PID[relay]}"; wait "${PID[relay]}" 2>/dev/null || true; PID[relay]=""
    stop bob
    run set --dir "$W/alice" climb title="Climb on Saturday"
    run set --dir "$W/bob" climb title="Climb on Sunday"
    start bob node $(peers_of bob) --relay "${ADDR[relay]}" --relay "${ADDR[relay2]}" --relay-interval 2
    converge alice bob relay2
    for _ in $(seq 1 100); do grep -q "holds the lease (epoch 2" "$W/relay2.log" && break; sleep 0.1; done
    grep -h "holds the lease (epoch 2" "$W/relay2.log" | sed 's/^/   relay2 log: /'
    for _ in $(seq 1 100); do [ "$("$L" conflicts --dir "$W/alice" --json)" = "[]" ] && break; sleep 0.1; done
    converge alice bob relay2
    run conflicts --dir "$W/alice"
    run status --dir "$W/bob" | grep -E "^relay" || true
    note "the settlements, once each, as PostgreSQL recorded them:"
    as_postgres psql "$DB" -c "SELECT field, epoch, holder FROM lansync_settlement ORDER BY settled_at" | sed 's/^/   /'
    [ "$("$L" conflicts --dir "$W/bob" --json)" = "[]" ] || { echo "demo: the conflict was not settled after the failover" >&2; exit 1; }
    bold "The second relay took over: the conflict is settled, the same everywhere."
fi

if [ "$KEEP" = 1 ]; then
    echo
    bold "The cluster is still running (--keep)."
    note "try:   $L status --dir $W/alice"
    note "       $L add --dir $W/bob title=hello   and then   $L list --dir $W/alice"
    note "stop:  kill ${PID[*]}; $( [ "$MODE" = lab ] && echo "LAB_PREFIX=lsd LAB_DIR=/tmp/lansync-demo-lab scripts/lab.sh down; ")rm -rf $W"
fi
