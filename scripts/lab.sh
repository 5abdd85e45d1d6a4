#!/usr/bin/env bash
# An isolated mDNS lab for lansync's tests and demo: N "hosts", each a Linux network namespace with
# its own D-Bus system bus and avahi-daemon, joined by a bridge in a hub namespace. Nothing runs in,
# or touches, the machine's own network namespace: the avahi-daemons live only inside the lab.
#
#   scripts/lab.sh up N            create hosts 1..N (10.77.0.I/24 on interface vI)
#   scripts/lab.sh exec I CMD...   run CMD in host I, with that host's D-Bus
#   scripts/lab.sh avahi-stop I    stop host I's avahi-daemon     (to test a daemon that goes away)
#   scripts/lab.sh avahi-start I   start it again
#   scripts/lab.sh cut I | heal I  drop / restore host I's traffic on the bridge (nftables)
#   scripts/lab.sh block I PORT   drop TCP to host I's PORT on the bridge (a firewall); unblock I
#   scripts/lab.sh loss I PERCENT  drop PERCENT% of host I's frames on the bridge, at random, in
#                                  each direction (0 removes it; a frame between two lossy hosts
#                                  meets both rules)
#   scripts/lab.sh down            stop everything and delete the namespaces (safe to repeat)
#   scripts/lab.sh check           exit 0 if a lab can run here (root, netns, avahi-daemon)
#
# LAB_PREFIX (default lsl) names the namespaces and LAB_DIR (default /tmp/lansync-lab-$LAB_PREFIX)
# holds each host's sockets, configs and logs, so several labs can coexist.
set -euo pipefail
P=${LAB_PREFIX:-lsl}
LAB=${LAB_DIR:-/tmp/lansync-lab-$P}

check() {
    [ "$(id -u)" = 0 ] || { echo "the mDNS lab needs root (network namespaces)"; return 1; }
    command -v avahi-daemon >/dev/null || { echo "avahi-daemon is not installed (apt-get install avahi-daemon)"; return 1; }
    command -v dbus-daemon >/dev/null || { echo "dbus-daemon is not installed (apt-get install dbus)"; return 1; }
    ip netns add "$P-probe" 2>/dev/null || { echo "cannot create network namespaces here"; return 1; }
    ip netns del "$P-probe"
}

start_avahi() {
    local i=$1 D=$LAB/n$1
    rm -f "$D/run-avahi/pid"
    # 'ip netns exec' gives the command a private mount namespace: the bind mount over
    # /run/avahi-daemon (where avahi-daemon keeps its pid file and socket) is the host's own.
    ip netns exec "$P-n$i" env DBUS_SYSTEM_BUS_ADDRESS="unix:path=$D/dbus.sock" sh -c \
        'mount --bind "$0/run-avahi" /run/avahi-daemon && exec avahi-daemon -f "$0/avahi.conf" --no-chroot --no-rlimits --no-drop-root' \
        "$D" >>"$D/avahi.log" 2>&1 </dev/null &
    echo $! >"$D/avahi.pid"
    for _ in $(seq 1 100); do
        DBUS_SYSTEM_BUS_ADDRESS="unix:path=$D/dbus.sock" dbus-send --system --print-reply --dest=org.freedesktop.Avahi \
            / org.freedesktop.Avahi.Server.GetState 2>/dev/null | grep -q 'int32 2' && return 0
        sleep 0.1
    done
    echo "host $i: avahi-daemon did not start, see $D/avahi.log" >&2
    return 1
}

stop_avahi() {
    local D=$LAB/n$1
    [ -s "$D/avahi.pid" ] && kill "$(cat "$D/avahi.pid")" 2>/dev/null || true
    rm -f "$D/avahi.pid"
    sleep 0.2
}

up() {
    local n=$1
    down >/dev/null 2>&1 || true
    mkdir -p "$LAB" /run/avahi-daemon
    ip netns add "$P-hub"
    ip -n "$P-hub" link set lo up
    ip -n "$P-hub" link add br0 type bridge mcast_snooping 0 stp_state 0 forward_delay 0
    ip -n "$P-hub" link set br0 up
    for i in $(seq 1 "$n"); do
        local D=$LAB/n$i
        mkdir -p "$D/run-avahi"
        rm -f "$D/dbus.sock"
        ip netns add "$P-n$i"
        ip link add "v$i" netns "$P-n$i" type veth peer name "p$i" netns "$P-hub"
        ip -n "$P-hub" link set "p$i" master br0 up
        ip -n "$P-n$i" link set lo up
        ip -n "$P-n$i" addr add "10.77.0.$i/24" dev "v$i"
        ip -n "$P-n$i" link set "v$i" up
        cat >"$D/avahi.conf" <<CONF
[server]
host-name=lab$i
use-ipv4=yes
use-ipv6=no
allow-interfaces=v$i
ratelimit-interval-usec=1000000
ratelimit-burst=1000
[wide-area]
enable-wide-area=no
[publish]
publish-hinfo=no
publish-workstation=no
publish-aaaa-on-ipv4=no
CONF
        # Daemons keep no descriptor of ours: a caller reading our output sees its end.
        dbus-daemon --system --address="unix:path=$D/dbus.sock" --nopidfile --fork --print-pid=3 3>"$D/dbus.pid" \
            >"$D/dbus.log" 2>&1 </dev/null
        start_avahi "$i" &
    done
    wait
}

down() {
    for D in "$LAB"/n*; do
        [ -d "$D" ] || continue
        for f in avahi.pid dbus.pid; do
            [ -s "$D/$f" ] && kill "$(cat "$D/$f")" 2>/dev/null || true
            rm -f "$D/$f"
        done
    done
    # Whatever still serves this lab's buses (a pid file lost by an interrupted run) goes too.
    pkill -9 -f "unix:path=$LAB/n" 2>/dev/null || true
    sleep 0.3
    for ns in $(ip netns list 2>/dev/null | awk -v p="^$P-" '$1 ~ p {print $1}'); do
        ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
        ip netns del "$ns" 2>/dev/null || true
    done
}

nft_rule() { # cut|heal I: nftables on the bridge drops host I's frames in both directions
    local action=$1 i=$2
    ip netns exec "$P-hub" nft add table bridge lab 2>/dev/null || true
    ip netns exec "$P-hub" nft add chain bridge lab forward '{ type filter hook forward priority 0; }' 2>/dev/null || true
    if [ "$action" = cut ]; then
        ip netns exec "$P-hub" nft add rule bridge lab forward iifname "p$i" drop comment "\"cut-$i\""
        ip netns exec "$P-hub" nft add rule bridge lab forward oifname "p$i" drop comment "\"cut-$i\""
    else
        for h in $(ip netns exec "$P-hub" nft -a list chain bridge lab forward | awk "/cut-$i/ {print \$NF}"); do
            ip netns exec "$P-hub" nft delete rule bridge lab forward handle "$h"
        done
    fi
}

nft_loss() { # loss I PERCENT: nftables on the bridge drops a random PERCENT% of host I's frames
    local i=$1 pct=$2
    [[ $pct =~ ^[0-9]+$ ]] && [ "$pct" -le 100 ] || { echo "lab.sh: loss PERCENT must be 0..100" >&2; return 2; }
    ip netns exec "$P-hub" nft add table bridge lab 2>/dev/null || true
    ip netns exec "$P-hub" nft add chain bridge lab forward '{ type filter hook forward priority 0; }' 2>/dev/null || true
    for h in $(ip netns exec "$P-hub" nft -a list chain bridge lab forward | awk -v c="\"loss-$i\"" 'index($0, c) {print $NF}'); do
        ip netns exec "$P-hub" nft delete rule bridge lab forward handle "$h"
    done
    [ "$pct" = 0 ] && return 0
    ip netns exec "$P-hub" nft add rule bridge lab forward iifname "p$i" numgen random mod 100 lt "$pct" drop comment "\"loss-$i\""
    ip netns exec "$P-hub" nft add rule bridge lab forward oifname "p$i" numgen random mod 100 lt "$pct" drop comment "\"loss-$i\""
}

nft_block() { # block|unblock I [PORT]: nftables on the bridge drops TCP to host I's PORT (a firewall)
    local action=$1 i=$2 port=${3:-}
    ip netns exec "$P-hub" nft add table bridge lab 2>/dev/null || true
    ip netns exec "$P-hub" nft add chain bridge lab forward '{ type filter hook forward priority 0; }' 2>/dev/null || true
    if [ "$action" = block ]; then
        [[ $port =~ ^[0-9]+$ ]] || { echo "lab.sh: usage: block I PORT" >&2; return 2; }
        ip netns exec "$P-hub" nft add rule bridge lab forward oifname "p$i" ether type ip tcp dport "$port" drop comment "\"block-$i\""
    else
        for h in $(ip netns exec "$P-hub" nft -a list chain bridge lab forward | awk -v c="\"block-$i\"" 'index($0, c) {print $NF}'); do
            ip netns exec "$P-hub" nft delete rule bridge lab forward handle "$h"
        done
    fi
}

case ${1:-} in
    up) up "${2:-3}" ;;
    down) down ;;
    # nsenter (unlike 'ip netns exec', which forks here) replaces itself with the command, so a
    # signal sent to this process reaches the command itself.
    exec) shift; i=$1; shift; exec nsenter --net="/run/netns/$P-n$i" env DBUS_SYSTEM_BUS_ADDRESS="unix:path=$LAB/n$i/dbus.sock" "$@" ;;
    avahi-stop) stop_avahi "$2" ;;
    avahi-start) start_avahi "$2" ;;
    cut|heal) nft_rule "$1" "$2" ;;
    loss) nft_loss "$2" "${3:?usage: $0 loss I PERCENT}" ;;
    block|unblock) nft_block "$1" "$2" "${3:-}" ;;
    check) check ;;
    *) echo "usage: $0 up N | exec I CMD... | avahi-stop I | avahi-start I | cut I | heal I | loss I PERCENT | block I PORT | unblock I | down | check" >&2; exit 2 ;;
esac
