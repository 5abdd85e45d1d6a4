#!/bin/sh
# Run by scripts/package.sh --test as PID 1 of its own namespace, chrooted into a clean Debian root:
# installs the package given as $1 with apt, then checks what a user would, one line each, and
# stops at the first failure (exit 1, with why); then, if given, the debug symbols package $2.
# Loopback only; every process ends with this shell.
set -eu
DEB=$1
DBGDEB=${2:-}
fail() { echo "package check: FAIL: $*" >&2; exit 1; }
ok() { echo "    ok: $*"; }

export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8
apt-get update -qq >/tmp/apt.log 2>&1 || { tail -5 /tmp/apt.log >&2; fail "apt-get update"; }
apt-get install -y -qq --no-install-recommends "$DEB" >>/tmp/apt.log 2>&1 || { tail -15 /tmp/apt.log >&2; fail "apt-get install $DEB"; }
ok "apt-get install $(basename "$DEB") (with its dependencies from Debian)"

[ ! -e /opt/swift ] || fail "/opt/swift exists in the clean root"
version=$(lansync --version) || fail "lansync --version"
ok "lansync --version: $version"
if ldd /usr/bin/lansync | grep -q "not found"; then ldd /usr/bin/lansync >&2; fail "a library the binary needs is missing"; fi
ok "every shared library the binary needs is installed (no Swift runtime among them)"

zcat /usr/share/man/man1/lansync.1.gz | grep -q '^\.Sh SUBCOMMANDS\|^\.Sh DESCRIPTION' || fail "the man page has no sections"
zcat /usr/share/man/man1/lansync.1.gz | grep -q 'revert' || fail "the man page does not describe 'revert'"
ok "man page installed (/usr/share/man/man1/lansync.1.gz)"
bash -c '. /usr/share/bash-completion/completions/lansync && complete -p lansync' >/dev/null || fail "the bash completion does not load"
[ -s /usr/share/zsh/vendor-completions/_lansync ] && [ -s /usr/share/fish/vendor_completions.d/lansync.fish ] || fail "zsh or fish completions missing"
ok "bash completion loads; zsh and fish completions installed"
for unit in lansync-node lansync-relay; do
    grep -q '^ExecStart=/usr/bin/lansync ' "/usr/lib/systemd/system/$unit.service" || fail "$unit.service does not run /usr/bin/lansync"
done
ok "systemd units installed (lansync-node, lansync-relay), running /usr/bin/lansync"
getent passwd lansync >/dev/null || fail "no system user lansync"
[ "$(stat -c '%U %a' /var/lib/lansync)" = "lansync 700" ] || fail "/var/lib/lansync is not owned by lansync with mode 700"
ok "system user lansync and /var/lib/lansync (0700)"

# Two nodes on loopback, as the README's one-machine tour runs them, as the lansync user.
W=/var/lib/lansync
as() { su -s /bin/sh lansync -c "$*"; }
as "lansync cluster create $W/cluster.pem" >/dev/null || fail "cluster create"
as "lansync --dir $W/a init --cluster $W/cluster.pem --name a" >/dev/null || fail "init a"
as "lansync --dir $W/b init --cluster $W/cluster.pem --name b" >/dev/null || fail "init b"
as "lansync --dir $W/a node --listen 127.0.0.1:7436 --no-mdns --peer 127.0.0.1:7446 >$W/a.log 2>&1 &"
as "lansync --dir $W/b node --listen 127.0.0.1:7446 --no-mdns --peer 127.0.0.1:7436 >$W/b.log 2>&1 &"
id=$(as "lansync --dir $W/a add --type task title=Packaged") || fail "add on a"
id2=$(as "lansync --dir $W/b add --type task title=Installed") || fail "add on b"
i=0
until as "lansync --dir $W/b get $id" >/dev/null 2>&1 && as "lansync --dir $W/a get $id2" >/dev/null 2>&1; do
    i=$((i + 1))
    if [ "$i" -ge 60 ]; then
        echo "--- node a's log"; cat $W/a.log; echo "--- node b's log"; cat $W/b.log
        fail "the two nodes did not exchange their items within 30 s"
    fi
    sleep 0.5
done
[ "$(as "lansync --dir $W/b get $id --json" | grep -c Packaged)" = 1 ] || fail "b holds the item without its title"
ok "two nodes synced on loopback (each holds the other's item)"

[ -n "$DBGDEB" ] || exit 0
apt-get install -y -qq --no-install-recommends "$DBGDEB" >>/tmp/apt.log 2>&1 || { tail -15 /tmp/apt.log >&2; fail "apt-get install $DBGDEB"; }
debug=$(ls /usr/lib/debug/.build-id/*/*.debug 2>/dev/null | head -1)
[ -n "$debug" ] || fail "no debug file under /usr/lib/debug/.build-id"
# The stripped binary names its debug file (.gnu_debuglink), whose name is the rest of its build id.
grep -qaF "$(basename "$debug")" /usr/bin/lansync || fail "/usr/bin/lansync does not name $debug"
ok "apt-get install $(basename "$DBGDEB"): $debug, the one /usr/bin/lansync names"
