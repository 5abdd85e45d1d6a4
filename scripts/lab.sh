#!/usr/bin/env bash
# An isolated mDNS lab for lansync's tests and demo: N "hosts", each a Linux network namespace with
# its own D-Bus system bus and avahi-daemon, joined by a bridge in a hub namespace. Nothing runs in,
# or touches, the machine's own network namespace: the avahi-daemons live only inside the lab.
#
#   scripts/lab.sh up N [SPEC]     create hosts 1..N, each by default on bridge a with IPv4 only
#                                  (10.77.0.I/24 on interface vI). SPEC, a comma-separated list
#                                  (one entry per host, in order; missing or empty entries are
#                                  "a4"), chooses each host's networks: letters of bridges,
#                                    a  bridge a: interface vI, 10.77.0.I/24 and fd77::I/64
#                                    b  bridge b: interface wI, 10.78.0.I/24 and fd78::I/64
#                                    d  bridge b through an interface named dockerI (a container
#                                       bridge, which nodes ignore by default)
#                                  and of families on them,
#                                    4  IPv4          6  IPv6 (unique-local and link-local)
#                                    l  IPv6 link-local only
#                                  e.g. "a46,a6,ab4,b4,-": "-" is a host on no bridge (see p2p).
#                                  Each host's avahi-daemon speaks the families it has.
#   scripts/lab.sh p2p I J         a point-to-point link between hosts I and J (interfaces ttJ in
#                                  I and ttI in J, 10.79.0.I and 10.79.0.J), which mDNS does not
#                                  cross (a VPN): I routes between it and bridge a, so J reaches
#                                  bridge a's hosts through I and they reach J
#   scripts/lab.sh exec I CMD...   run CMD in host I, with that host's D-Bus
#   scripts/lab.sh avahi-stop I    stop host I's avahi-daemon     (to test a daemon that goes away)
#   scripts/lab.sh avahi-start I   start it again
#   scripts/lab.sh cut I | heal I  drop / restore host I's traffic on the bridge (nftables)
#   scripts/lab.sh block I PORT [4|6]  drop TCP to host I's PORT on bridge a (a firewall), in both
#                                  families or only IPv4 or IPv6; unblock I
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

# host_spec I SPEC: host I's entry in SPEC ("a4" when absent or empty).
host_spec() {
    local i=$1 spec=$2 entry
    entry=$(echo "$spec" | cut -d, -f"$i" -s)
    [ -z "$spec" ] || [ "$i" -gt 1 ] || [[ $spec == *,* ]] || entry=$spec
    echo "${entry:-a4}"
}

# add_link I BRIDGE FAMILIES: host I's interface on bridge a (vI) or b (wI).
add_link() {
    local i=$1 bridge=$2 fams=$3 dev port br net
    case $bridge in
        a) dev=v$i port=p$i br=br0 net=77 ;;
        b) dev=w$i port=q$i br=br1 net=78 ;;
        d) dev=docker$i port=q$i br=br1 net=78 ;;
    esac
    ip link add "$dev" netns "$P-n$i" type veth peer name "$port" netns "$P-hub"
    ip -n "$P-hub" link set "$port" master "$br" up
    if [[ $fams == *4* ]]; then ip -n "$P-n$i" addr add "10.$net.0.$i/24" dev "$dev"; fi
    if [[ $fams == *6* || $fams == *l* ]]; then
        # No duplicate address detection: an address is usable (and published) at once.
        ip netns exec "$P-n$i" sysctl -qw "net.ipv6.conf.$dev.accept_dad=0"
        if [[ $fams == *6* ]]; then ip -n "$P-n$i" addr add "fd$net::$i/64" dev "$dev" nodad; fi
    else
        ip netns exec "$P-n$i" sysctl -qw "net.ipv6.conf.$dev.disable_ipv6=1"
    fi
    ip -n "$P-n$i" link set "$dev" up
    echo "$dev"
}

up() {
    local n=$1 spec=${2:-}
    down >/dev/null 2>&1 || true
    rm -rf "${LAB:?}"/n*
    mkdir -p "$LAB" /run/avahi-daemon
    ip netns add "$P-hub"
    # The hub only forwards frames: it has no addresses of its own in either family.
    ip netns exec "$P-hub" sysctl -qw net.ipv6.conf.default.disable_ipv6=1 net.ipv6.conf.all.disable_ipv6=1
    ip -n "$P-hub" link set lo up
    for br in br0 br1; do
        ip -n "$P-hub" link add "$br" type bridge mcast_snooping 0 stp_state 0 forward_delay 0
        ip -n "$P-hub" link set "$br" up
    done
    for i in $(seq 1 "$n"); do
        local D=$LAB/n$i hs fams devs=()
        hs=$(host_spec "$i" "$spec")
        [[ $hs =~ ^(-|a?[bd]?[46l]+)$ && $hs =~ ^[^46l] ]] || { echo "lab.sh: host $i: bad spec '$hs' (bridges a, b or d, then families 4/6/l, or -)" >&2; return 2; }
        fams=${hs//[abd-]/}
        # A host on no bridge still runs avahi-daemon (IPv4, on no interface): it advertises to no one.
        [ "$hs" = - ] && fams=4
        mkdir -p "$D/run-avahi"
        rm -f "$D/dbus.sock"
        ip netns add "$P-n$i"
        ip netns exec "$P-n$i" sysctl -qw net.ipv6.conf.default.accept_dad=0
        ip -n "$P-n$i" link set lo up
        [[ $hs == *a* ]] && devs+=("$(add_link "$i" a "$fams")")
        [[ $hs == *b* ]] && devs+=("$(add_link "$i" b "$fams")")
        [[ $hs == *d* ]] && devs+=("$(add_link "$i" d "$fams")")
        local allow
        allow=$(IFS=,; echo "${devs[*]:-none0}")
        echo "$hs" >"$D/spec"
        cat >"$D/avahi.conf" <<CONF
[server]
host-name=lab$i
use-ipv4=$([[ $fams == *4* ]] && echo yes || echo no)
use-ipv6=$([[ $fams == *6* || $fams == *l* ]] && echo yes || echo no)
allow-interfaces=$allow
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

p2p() { # p2p I J: a routed point-to-point link between hosts I and J that mDNS does not cross
    local i=$1 j=$2
    ip link add "tt$j" netns "$P-n$i" type veth peer name "tt$i" netns "$P-n$j"
    ip -n "$P-n$i" addr add "10.79.0.$i/32" peer "10.79.0.$j/32" dev "tt$j"
    ip -n "$P-n$j" addr add "10.79.0.$j/32" peer "10.79.0.$i/32" dev "tt$i"
    ip -n "$P-n$i" link set "tt$j" up
    ip -n "$P-n$j" link set "tt$i" up
    ip netns exec "$P-n$i" sysctl -qw net.ipv4.ip_forward=1
    ip -n "$P-n$j" route add 10.77.0.0/24 via "10.79.0.$i"
    for D in "$LAB"/n*; do
        local k=${D##*/n}
        [ "$k" != "$i" ] && [ "$k" != "$j" ] && grep -q a "$D/spec" 2>/dev/null || continue
        ip -n "$P-n$k" route add "10.79.0.$j/32" via "10.77.0.$i"
    done
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
        ip netns exec "$P-hub" nft add rule bridge lab forward iifname "{ p$i, q$i }" drop comment "\"cut-$i\""
        ip netns exec "$P-hub" nft add rule bridge lab forward oifname "{ p$i, q$i }" drop comment "\"cut-$i\""
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

nft_block() { # block|unblock I [PORT [4|6]]: nftables on the bridge drops TCP to host I's PORT (a firewall)
    local action=$1 i=$2 port=${3:-} family=${4:-}
    ip netns exec "$P-hub" nft add table bridge lab 2>/dev/null || true
    ip netns exec "$P-hub" nft add chain bridge lab forward '{ type filter hook forward priority 0; }' 2>/dev/null || true
    if [ "$action" = block ]; then
        [[ $port =~ ^[0-9]+$ ]] || { echo "lab.sh: usage: block I PORT" >&2; return 2; }
        [ "$family" = 6 ] || ip netns exec "$P-hub" nft add rule bridge lab forward oifname "p$i" ether type ip tcp dport "$port" drop comment "\"block-$i\""
        [ "$family" = 4 ] || ip netns exec "$P-hub" nft add rule bridge lab forward oifname "p$i" ether type ip6 tcp dport "$port" drop comment "\"block-$i\""
    else
        for h in $(ip netns exec "$P-hub" nft -a list chain bridge lab forward | awk -v c="\"block-$i\"" 'index($0, c) {print $NF}'); do
            ip netns exec "$P-hub" nft delete rule bridge lab forward handle "$h"
        done
    fi
}

case ${1:-} in
    up) up "${2:-3}" "${3:-}" ;;
    p2p) p2p "${2:?usage: $0 p2p I J}" "${3:?usage: $0 p2p I J}" ;;
    down) down ;;
    # nsenter (unlike 'ip netns exec', which forks here) replaces itself with the command, so a
    # signal sent to this process reaches the command itself.
    exec) shift; i=$1; shift; exec nsenter --net="/run/netns/$P-n$i" env DBUS_SYSTEM_BUS_ADDRESS="unix:path=$LAB/n$i/dbus.sock" "$@" ;;
    avahi-stop) stop_avahi "$2" ;;
    avahi-start) start_avahi "$2" ;;
    cut|heal) nft_rule "$1" "$2" ;;
    loss) nft_loss "$2" "${3:?usage: $0 loss I PERCENT}" ;;
    block|unblock) nft_block "$1" "$2" "${3:-}" "${4:-}" ;;
    check) check ;;
    *) echo "usage: $0 up N [SPEC] | p2p I J | exec I CMD... | avahi-stop I | avahi-start I | cut I | heal I | loss I PERCENT | block I PORT [4|6] | unblock I | down | check" >&2; exit 2 ;;
esac
