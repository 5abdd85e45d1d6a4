#!/usr/bin/env bash
# Builds lansync's Debian package, .build/package/lansync_VERSION_ARCH.deb, and (with --test) proves
# it on a clean Debian root. Docs/OPERATIONS.md, "Install".
#
#   scripts/package.sh           build the package and print its path
#   scripts/package.sh --test    then install it into a clean Debian bookworm root made with
#                                debootstrap (no Swift toolchain there) and run, inside it,
#                                `lansync --version`, the man page and completion checks, and a
#                                two-node sync on loopback; root only (CI runs this)
#
# The package holds:
#   /usr/bin/lansync                      the release binary, Swift runtime linked in, stripped
#   /usr/share/man/man1/lansync.1.gz      the manual (argument-parser's generator, from --help's text)
#   bash, zsh and fish completions        in the directories each shell reads
#   /usr/lib/systemd/system/              lansync-node.service and lansync-relay.service (deploy/)
#   /usr/share/doc/lansync/               README, OPERATIONS, RELAY, CLI, SECURITY
# Installing it makes the system user `lansync` and /var/lib/lansync (mode 0700); it enables no
# service, because a node needs `lansync init` with the cluster's file first. Removing it leaves the
# data directory; purging it too (`apt-get purge`) still leaves the replica, which is the user's.
#
# Safety: the test's root lives under .build/package/root and is deleted at the end; its processes
# run in their own PID and mount namespaces, so they all end with it; its traffic stays on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
source scripts/lib/packages.sh
source scripts/lib/release.sh

TEST=0
case ${1:-} in
    "") ;;
    --test) TEST=1 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "package.sh: unknown option $1 (try --help)" >&2; exit 64 ;;
esac

ensure_packages libsqlite3-dev libavahi-client-dev binutils dpkg-dev fakeroot
[ "$TEST" = 1 ] && ensure_packages debootstrap

echo "==> building the release binary (${LANSYNC_RELEASE_BUILD[*]})"
"${LANSYNC_RELEASE_BUILD[@]}" 2>&1 | grep -E "error:|complete!" || true
BIN=$ROOT/$LANSYNC_RELEASE_BINARY
[ -x "$BIN" ] || { echo "package.sh: the release build failed; run '${LANSYNC_RELEASE_BUILD[*]}' to see why" >&2; exit 1; }
if ldd "$BIN" | grep -q "/opt/swift\|libswiftCore"; then
    echo "package.sh: $BIN still needs the Swift runtime at run time; it must be built with --static-swift-stdlib" >&2
    exit 1
fi
VERSION=$("$BIN" --version)
ARCH=$(dpkg --print-architecture)
OUT=$ROOT/.build/package
DEB=$OUT/lansync_${VERSION}_${ARCH}.deb

echo "==> building the manual page"
swift build --product generate-manual 2>&1 | grep -E "error:" || true
MAN=$(mktemp -d /tmp/lansync-man-XXXXXX)
STAGE=$OUT/stage
trap 'rm -rf "$MAN"' EXIT
# SOURCE_DATE_EPOCH (reproducible builds) fixes the page's date; otherwise it is today's.
date_opt=()
[ -n "${SOURCE_DATE_EPOCH:-}" ] && date_opt=(--date "$(date -u -d "@$SOURCE_DATE_EPOCH" +%F)")
.build/debug/generate-manual "$BIN" --authors "lansync developers" "${date_opt[@]}" --output-directory "$MAN" >/dev/null

echo "==> staging $STAGE"
rm -rf "$STAGE"
install -d "$STAGE/DEBIAN" "$STAGE/usr/bin" "$STAGE/usr/share/man/man1" "$STAGE/usr/lib/systemd/system" \
    "$STAGE/usr/share/bash-completion/completions" "$STAGE/usr/share/zsh/vendor-completions" \
    "$STAGE/usr/share/fish/vendor_completions.d" "$STAGE/usr/share/doc/lansync"
strip --strip-all -o "$STAGE/usr/bin/lansync" "$BIN"
chmod 0755 "$STAGE/usr/bin/lansync"
gzip -9n <"$MAN/lansync.1" >"$STAGE/usr/share/man/man1/lansync.1.gz"
"$BIN" --generate-completion-script bash >"$STAGE/usr/share/bash-completion/completions/lansync"
"$BIN" --generate-completion-script zsh >"$STAGE/usr/share/zsh/vendor-completions/_lansync"
"$BIN" --generate-completion-script fish >"$STAGE/usr/share/fish/vendor_completions.d/lansync.fish"
for unit in lansync-node.service lansync-relay.service; do
    # deploy/ is written for a binary installed by hand in /usr/local; the package's is in /usr.
    sed -e 's|/usr/local/bin/lansync|/usr/bin/lansync|g' -e 's|/usr/local/share/doc|/usr/share/doc|g' \
        "deploy/$unit" >"$STAGE/usr/lib/systemd/system/$unit"
done
cp README.md "$STAGE/usr/share/doc/lansync/"
cp Docs/OPERATIONS.md Docs/RELAY.md Docs/CLI.md Docs/SECURITY.md "$STAGE/usr/share/doc/lansync/"
cat >"$STAGE/usr/share/doc/lansync/copyright" <<'EOF'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: lansync
Comment: No licence has been chosen yet; all rights are reserved by the lansync developers.
 The binary links the Swift runtime and Foundation (Apache-2.0 with Runtime Library Exception),
 SwiftNIO, swift-nio-ssl with BoringSSL, swift-crypto, swift-certificates, swift-asn1, GRDB.swift,
 swift-argument-parser, swift-collections, swift-atomics and swift-system, each under its own
 licence (Apache-2.0, MIT, or OpenSSL/ISC for BoringSSL).
EOF

cat >"$STAGE/DEBIAN/control" <<EOF
Package: lansync
Version: $VERSION
Architecture: $ARCH
Maintainer: lansync developers <lansync@localhost>
Installed-Size: $(du -sk --exclude=DEBIAN "$STAGE" | cut -f1)
Depends: libc6 (>= 2.34), libstdc++6, libgcc-s1, libsqlite3-0, libavahi-client3, libavahi-common3, adduser
Recommends: avahi-daemon
Section: net
Priority: optional
Description: peer-to-peer sync of shared records across the machines of a LAN
 Every machine keeps a full replica of the cluster's items (records with named
 fields) in a local SQLite file, edits them offline, finds its peers over mDNS
 (Avahi) and exchanges only what the other side lacks over mutually
 authenticated TLS. Concurrent edits merge field by field; true conflicts stay
 visible until settled. A relay can carry changes between machines that never
 meet.
EOF
cat >"$STAGE/DEBIAN/postinst" <<'EOF'
#!/bin/sh
# Makes the system user the units run as, and its data directory; starts nothing (a node needs
# `lansync init --dir /var/lib/lansync --cluster FILE` first: Docs/OPERATIONS.md).
set -e
if [ "$1" = configure ]; then
    if ! getent passwd lansync >/dev/null; then
        adduser --system --group --home /var/lib/lansync --no-create-home --quiet lansync
    fi
    install -d -m 0700 -o lansync -g lansync /var/lib/lansync
fi
exit 0
EOF
chmod 0755 "$STAGE/DEBIAN/postinst"
mkdir -p "$OUT"
rm -f "$OUT"/lansync_*.deb
fakeroot dpkg-deb --build -Zxz "$STAGE" "$DEB" >/dev/null
rm -rf "$STAGE"
echo "$DEB ($(du -h "$DEB" | cut -f1))"

[ "$TEST" = 1 ] || exit 0

# --- The test on a clean Debian root -------------------------------------------------------------
[ "$(id -u)" = 0 ] || { echo "package.sh: --test makes a Debian root with debootstrap and chroots into it: run it as root" >&2; exit 1; }
DROOT=$OUT/root
SEED=$OUT/bookworm-minbase.tar   # a pristine root, kept between local runs (CI starts without it)
cleanup() {
    rm -rf "$MAN"
    if [ -d "$DROOT" ]; then
        # Nothing should be mounted there (the mounts live in the test's own namespace); make sure.
        grep -q " $DROOT/" /proc/mounts && awk -v r="$DROOT/" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r | xargs -r umount -l
        rm -rf "$DROOT"
    fi
}
trap cleanup EXIT
rm -rf "$DROOT"
mkdir -p "$DROOT"
if [ -f "$SEED" ]; then
    echo "==> a clean Debian root from $SEED"
    tar -C "$DROOT" -xf "$SEED"
else
    echo "==> a clean Debian root (debootstrap --variant=minbase bookworm; a few minutes the first time)"
    start=$(date +%s)
    # In a mount namespace of its own: debootstrap mounts /proc and /sys inside the root while it
    # works, and a run killed half way (a cancelled CI job) left them mounted on the host, where
    # the next clean-up's 'rm -rf' of the root walked into /proc. Now they end with the namespace.
    if ! unshare --mount --propagation private \
        debootstrap --variant=minbase bookworm "$DROOT" http://deb.debian.org/debian >"$OUT/debootstrap.log" 2>&1; then
        tail -5 "$OUT/debootstrap.log" >&2
        echo "package.sh: debootstrap failed (log: $OUT/debootstrap.log); is deb.debian.org reachable?" >&2
        exit 1
    fi
    echo "    took $(( $(date +%s) - start )) s"
    tar -C "$DROOT" -cf "$SEED" .
fi
[ ! -e "$DROOT/opt/swift" ] && ! ls "$DROOT"/usr/lib/swift* >/dev/null 2>&1 ||
    { echo "package.sh: the clean root has a Swift runtime in it; it would prove nothing" >&2; exit 1; }
cp /etc/resolv.conf "$DROOT/etc/resolv.conf"
# apt in the root must not start services (there is no init there, and none of ours should run).
printf '#!/bin/sh\nexit 101\n' >"$DROOT/usr/sbin/policy-rc.d"
chmod 0755 "$DROOT/usr/sbin/policy-rc.d"
cp "$DEB" "$DROOT/tmp/"
cp scripts/lib/package-check.sh "$DROOT/tmp/package-check.sh"

echo "==> installing $(basename "$DEB") with apt (its dependencies from Debian) and checking it"
# A new PID namespace: when the check's shell ends, every process it started ends with it. A new
# mount namespace: /proc and /dev mounted for the root vanish with it.
unshare --pid --fork --mount --propagation private /bin/sh -c '
    set -e
    mount -t proc proc "$1/proc"
    mount --rbind /dev "$1/dev"
    exec chroot "$1" /bin/sh /tmp/package-check.sh "/tmp/$2"
' package-test "$DROOT" "$(basename "$DEB")"
echo "==> the package installs and runs on a clean Debian root"
