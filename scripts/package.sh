#!/usr/bin/env bash
# Builds lansync's Debian packages, .build/package/lansync_VERSION_ARCH.deb and its debug symbols,
# .build/package/lansync-dbgsym_VERSION_ARCH.deb, checks both with lintian (an error or a warning
# fails the script), and (with --test) proves the first on a clean Debian root.
# Docs/OPERATIONS.md, "Install".
#
#   scripts/package.sh                 build the release binary and the packages; print their paths
#   scripts/package.sh --binary PATH   package PATH, a release binary built elsewhere with
#                                      scripts/lib/release.sh's flags, instead of building one (the
#                                      manual generator is still built, in debug, unless
#                                      .build/debug/generate-manual exists)
#   scripts/package.sh --test          then install the package into a clean Debian bookworm root
#                                      made with debootstrap (no Swift toolchain there) and run,
#                                      inside it, `lansync --version`, the man page and completion
#                                      checks, and a two-node sync on loopback; root only (CI runs
#                                      this)
#
# The package holds:
#   /usr/bin/lansync                      the release binary, Swift runtime linked in, stripped
#   /usr/share/man/man1/lansync.1.gz      the manual (argument-parser's generator, from --help's text)
#   bash, zsh and fish completions        in the directories each shell reads
#   /usr/lib/systemd/system/              lansync-node.service and lansync-relay.service (deploy/)
#   /usr/share/doc/lansync/               README, OPERATIONS, RELAY, CLI, SECURITY; changelog.gz (one
#                                         entry, for this version) and copyright (machine-readable)
# Its Depends are dpkg-shlibdeps' (raised where the binary needs a symbol version that no symbol
# names, as GLIBC_ABI_DT_RELR), plus libavahi-client3 (loaded with dlopen) and adduser.
# lansync-dbgsym holds the binary's DWARF, compressed, in /usr/lib/debug/.build-id/xx/yyyy.debug,
# where gdb looks for it by the binary's build id.
# Installing lansync makes the system user `lansync` and /var/lib/lansync (mode 0700); it enables no
# service, because a node needs `lansync init` with the cluster's file first. Removing it leaves the
# data directory; purging it too (`apt-get purge`) still leaves the replica, which is the user's.
#
# Dates: SOURCE_DATE_EPOCH if set (reproducible builds), else the last commit's: the changelog's
# entry, the man page's date and every file's time in the packages.
#
# Safety: the test's root lives under .build/package/root and is deleted at the end; its processes
# run in their own PID and mount namespaces, so they all end with it; its traffic stays on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
source scripts/lib/packages.sh
source scripts/lib/release.sh

TEST=0
PREBUILT=
while [ $# -gt 0 ]; do
    case $1 in
        --test) TEST=1 ;;
        --binary)
            [ $# -ge 2 ] || { echo "package.sh: --binary needs a path" >&2; exit 64; }
            PREBUILT=$2
            shift
            ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) echo "package.sh: unknown option $1 (try --help)" >&2; exit 64 ;;
    esac
    shift
done

ensure_packages libsqlite3-dev libavahi-client-dev binutils dpkg-dev fakeroot lintian
[ "$TEST" = 1 ] && ensure_packages debootstrap

if [ -n "$PREBUILT" ]; then
    [ -f "$PREBUILT" ] && [ -x "$PREBUILT" ] || { echo "package.sh: $PREBUILT is not an executable file" >&2; exit 1; }
    BIN=$(cd "$(dirname "$PREBUILT")" && pwd)/$(basename "$PREBUILT")
    echo "==> packaging $BIN (no release build)"
else
    echo "==> building the release binary (${LANSYNC_RELEASE_BUILD[*]})"
    "${LANSYNC_RELEASE_BUILD[@]}" 2>&1 | grep -E "error:|complete!" || true
    BIN=$ROOT/$LANSYNC_RELEASE_BINARY
    [ -x "$BIN" ] || { echo "package.sh: the release build failed; run '${LANSYNC_RELEASE_BUILD[*]}' to see why" >&2; exit 1; }
fi
# Both ways of asking: ldd (the libraries it would load here) and the binary's own list (what it
# would ask for on a machine without the toolchain, where ldd can only say "not found").
if ldd "$BIN" | grep -q "/opt/swift\|libswiftCore" ||
    readelf -dW "$BIN" | grep -q "NEEDED.*\[lib\(swift\|Foundation\|dispatch\|BlocksRuntime\)"; then
    echo "package.sh: $BIN still needs the Swift runtime at run time; it must be built with --static-swift-stdlib" >&2
    exit 1
fi
BUILD_ID=$(readelf -nW "$BIN" | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p' | head -1)
[ ${#BUILD_ID} -ge 4 ] || { echo "package.sh: $BIN has no GNU build id note; its debug symbols could not be found by it" >&2; exit 1; }
readelf -SW "$BIN" | grep -q ' \.debug_info ' ||
    { echo "package.sh: $BIN has no debug information (stripped?): the -dbgsym package would be empty" >&2; exit 1; }
VERSION=$("$BIN" --version)
case $VERSION in
    *-*|"") echo "package.sh: '$VERSION' is not a native Debian version (no '-' allowed)" >&2; exit 1 ;;
esac
ARCH=$(dpkg --print-architecture)
OUT=$ROOT/.build/package
DEB=$OUT/lansync_${VERSION}_${ARCH}.deb
DBGDEB=$OUT/lansync-dbgsym_${VERSION}_${ARCH}.deb
# There is no project domain, so no address that reaches anyone. `.invalid` is reserved (RFC 2606,
# RFC 6761) for names that must never resolve: it says so rather than pretending, and lintian's
# bogus-mail-host accepts it (it asks for a well-formed domain name of two labels or more;
# `localhost` is one). The place to reach the developers is the project's issue tracker.
MAINTAINER="lansync developers <lansync@lansync.invalid>"

if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
    EPOCH=$SOURCE_DATE_EPOCH
elif EPOCH=$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null) && [ -n "$EPOCH" ]; then
    :
else
    EPOCH=$(date +%s)
fi
export SOURCE_DATE_EPOCH=$EPOCH   # dpkg-deb dates the archives' members with it

echo "==> building the manual page"
if [ -z "$PREBUILT" ] || [ ! -x .build/debug/generate-manual ]; then
    swift build --product generate-manual 2>&1 | grep -E "error:" || true
fi
MAN=$(mktemp -d /tmp/lansync-man-XXXXXX)
STAGE=$OUT/stage
trap 'rm -rf "$MAN" "$STAGE"' EXIT
.build/debug/generate-manual "$BIN" --authors "lansync developers" --date "$(date -u -d "@$EPOCH" +%F)" \
    --output-directory "$MAN" >/dev/null

# The layout dpkg-shlibdeps expects: debian/control, and each package's tree in debian/PACKAGE.
PKG=$STAGE/debian/lansync
DBG=$STAGE/debian/lansync-dbgsym
echo "==> staging $PKG and $DBG"
rm -rf "$STAGE"
install -d "$PKG/DEBIAN" "$PKG/usr/bin" "$PKG/usr/share/man/man1" "$PKG/usr/lib/systemd/system" \
    "$PKG/usr/share/bash-completion/completions" "$PKG/usr/share/zsh/vendor-completions" \
    "$PKG/usr/share/fish/vendor_completions.d" "$PKG/usr/share/doc/lansync" \
    "$DBG/DEBIAN" "$DBG/usr/lib/debug/.build-id/${BUILD_ID:0:2}" "$DBG/usr/share/doc"
# The binary without its symbols and DWARF (and the toolchains' .comment); the DWARF, compressed,
# goes to the -dbgsym package under the build id, and the binary names that file too (debuglink),
# as debhelper's dh_strip does.
DEBUG_FILE=usr/lib/debug/.build-id/${BUILD_ID:0:2}/${BUILD_ID:2}.debug
objcopy --only-keep-debug --compress-debug-sections "$BIN" "$DBG/$DEBUG_FILE"
chmod 0644 "$DBG/$DEBUG_FILE"
strip --strip-all --remove-section=.comment -o "$PKG/usr/bin/lansync" "$BIN"
objcopy --add-gnu-debuglink="$DBG/$DEBUG_FILE" "$PKG/usr/bin/lansync"
chmod 0755 "$PKG/usr/bin/lansync"
ln -s lansync "$DBG/usr/share/doc/lansync-dbgsym"
gzip -9n <"$MAN/lansync.1" >"$PKG/usr/share/man/man1/lansync.1.gz"
# Completion files are sourced, not run: no #! line (lintian's bash-completion-with-hashbang).
"$BIN" --generate-completion-script bash | sed '1{/^#!/d}' >"$PKG/usr/share/bash-completion/completions/lansync"
"$BIN" --generate-completion-script zsh >"$PKG/usr/share/zsh/vendor-completions/_lansync"
"$BIN" --generate-completion-script fish >"$PKG/usr/share/fish/vendor_completions.d/lansync.fish"
for unit in lansync-node.service lansync-relay.service; do
    # deploy/ is written for a binary installed by hand in /usr/local; the package's is in /usr.
    sed -e 's|/usr/local/bin/lansync|/usr/bin/lansync|g' -e 's|/usr/local/share/doc|/usr/share/doc|g' \
        "deploy/$unit" >"$PKG/usr/lib/systemd/system/$unit"
done
cp README.md "$PKG/usr/share/doc/lansync/"
cp Docs/OPERATIONS.md Docs/RELAY.md Docs/CLI.md Docs/SECURITY.md "$PKG/usr/share/doc/lansync/"

# The changelog of a native package (its version has no Debian revision): changelog.gz, one entry
# for the version packaged, dated like everything else.
commit=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || true)
{
    echo "lansync ($VERSION) UNRELEASED; urgency=medium"
    echo
    echo "  * lansync $VERSION."
    if [ -z "$commit" ]; then
        echo "  * Packaged by scripts/package.sh outside a git checkout."
    else
        echo "  * Packaged by scripts/package.sh from commit $commit."
        [ -z "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ] ||
            echo "    The working tree had uncommitted changes."
    fi
    echo
    echo " -- $MAINTAINER  $(LC_ALL=C date -u -R -d "@$EPOCH")"
} | gzip -9n >"$PKG/usr/share/doc/lansync/changelog.gz"

# Machine-readable (DEP-5). No licence has been chosen, so lansync's own code is all rights
# reserved: DEP-5 lets a file name a licence of its own ("all-rights-reserved") and state it.
first_year=$(git -C "$ROOT" log --reverse --format=%cd --date=format:%Y 2>/dev/null | head -1 || true)
year=$(date -u -d "@$EPOCH" +%Y)
years=${first_year:-$year}
[ "$years" = "$year" ] || years="$years-$year"
cat >"$PKG/usr/share/doc/lansync/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: lansync
Upstream-Contact: $MAINTAINER
Comment: /usr/bin/lansync also holds, linked in statically, the Swift runtime and
 standard library, Foundation and Dispatch (Apache-2.0 with the Swift Runtime
 Library Exception), ICU's code and data through swift-foundation-icu (the
 Unicode licence), BoringSSL through swift-crypto and swift-nio-ssl (OpenSSL,
 ISC and MIT terms), GRDB.swift and PostgresNIO (MIT), and swift-argument-parser,
 swift-asn1, swift-async-algorithms, swift-atomics, swift-certificates,
 swift-collections, swift-crypto, swift-distributed-tracing, swift-http-types,
 swift-log, swift-metrics, swift-nio, swift-nio-extras, swift-nio-ssl,
 swift-nio-transport-services, swift-prometheus, swift-service-context,
 swift-service-lifecycle, swift-system and Hummingbird (Apache-2.0, whose text
 is in /usr/share/common-licenses/Apache-2.0), each copyright its authors.

Files: *
Copyright: $years lansync developers
License: all-rights-reserved
 No licence has been chosen for lansync yet: its developers reserve all
 rights to lansync's own code. The libraries linked into /usr/bin/lansync
 keep their own licences (the Comment above).
EOF

DESCRIPTION='peer-to-peer sync of shared records across the machines of a LAN
 Every machine keeps a full replica of the cluster'"'"'s items (records with named
 fields) in a local SQLite file, edits them offline, finds its peers over mDNS
 (Avahi) and exchanges only what the other side lacks over mutually
 authenticated TLS. Concurrent edits merge field by field; true conflicts stay
 visible until settled. A relay can carry changes between machines that never
 meet.'

# Depends: what the binary's libraries need (dpkg-shlibdeps, from their symbols files), then
# libavahi-client3 (loaded with dlopen when discovery starts, so no tool can see it) and adduser
# (postinst).
printf 'Source: lansync\n\nPackage: lansync\nArchitecture: any\n\nPackage: lansync-dbgsym\nArchitecture: any\n' \
    >"$STAGE/debian/control"
# (-eFILE, attached: dpkg-shlibdeps reads `-e FILE` as an empty -e, then FILE on its own.)
shlibs=$(cd "$STAGE" && dpkg-shlibdeps -O -edebian/lansync/usr/bin/lansync | sed -n 's/^shlibs:Depends=//p')
[ -n "$shlibs" ] || { echo "package.sh: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
# dpkg-shlibdeps only weighs the symbols a binary imports. A version the binary requires with no
# symbol bound to it escapes it: GLIBC_ABI_DT_RELR, which lld adds for packed relative relocations
# (Package.swift) and which only glibc 2.36 provides; dpkg-shlibdeps 1.21 says libc6 (>= 2.35), and
# apt would install the package where the loader refuses it. So every version node the binary
# needs (readelf -V) is looked up as NODE@NODE in the symbols file of each package it depends on,
# and a higher minimum there raises that package's.
raise_floors() {
    local nodes deps dep pkg floor symbols node min out=()
    nodes=$(readelf -VW "$1" | sed -n 's/.*Name: \([^ ]*\).*/\1/p' | sort -u)
    IFS=, read -ra deps <<<"$2"
    for dep in "${deps[@]}"; do
        read -r dep <<<"$dep"   # without the blanks around it
        pkg=${dep%% *}
        floor=$(sed -n 's/^[^ ]* (>= \(.*\))$/\1/p' <<<"$dep")
        symbols=$(ls /var/lib/dpkg/info/"$pkg:$ARCH".symbols /var/lib/dpkg/info/"$pkg".symbols 2>/dev/null | head -1 || true)
        if [[ $dep == *"|"* ]] || [ -z "$symbols" ] || { [ "$dep" != "$pkg" ] && [ -z "$floor" ]; }; then
            out+=("$dep")
            continue
        fi
        for node in $nodes; do
            min=$(awk -v s="$node@$node" '$1 == s { print $2; exit }' "$symbols")
            if [ -n "$min" ] && [ "$min" != 0 ] && { [ -z "$floor" ] || dpkg --compare-versions "$min" gt "$floor"; }; then
                floor=$min
            fi
        done
        out+=("$pkg${floor:+ (>= $floor)}")
    done
    (IFS=,; echo "${out[*]}" | sed 's/,/, /g')
}
DEPENDS="$(raise_floors "$BIN" "$shlibs"), libavahi-client3, libavahi-common3, adduser"
echo "    Depends: $DEPENDS"

cat >"$PKG/DEBIAN/postinst" <<'EOF'
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
chmod 0755 "$PKG/DEBIAN/postinst"

# The control files, once every other file is in place: md5sums over them, then the sizes.
finish() {   # finish TREE (the control file comes on stdin)
    (cd "$1" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z |
        xargs -0r md5sum) >"$1/DEBIAN/md5sums"
    chmod 0644 "$1/DEBIAN/md5sums"
    cat >"$1/DEBIAN/control"
    find "$1" -newermt "@$EPOCH" -print0 | xargs -0r touch -h -d "@$EPOCH"
}
finish "$PKG" <<EOF
Package: lansync
Version: $VERSION
Architecture: $ARCH
Maintainer: $MAINTAINER
Installed-Size: $(du -sk --exclude=DEBIAN "$PKG" | cut -f1)
Depends: $DEPENDS
Recommends: avahi-daemon
Section: net
Priority: optional
Description: $DESCRIPTION
EOF
finish "$DBG" <<EOF
Package: lansync-dbgsym
Source: lansync
Version: $VERSION
Auto-Built-Package: debug-symbols
Architecture: $ARCH
Maintainer: $MAINTAINER
Installed-Size: $(du -sk --exclude=DEBIAN "$DBG" | cut -f1)
Depends: lansync (= $VERSION)
Section: debug
Priority: optional
Description: debug symbols for lansync
Build-Ids: $BUILD_ID
EOF

mkdir -p "$OUT"
rm -f "$OUT"/lansync_*.deb "$OUT"/lansync-dbgsym_*.deb
fakeroot dpkg-deb --build -Zxz "$PKG" "$DEB" >/dev/null
fakeroot dpkg-deb --build -Zxz "$DBG" "$DBGDEB" >/dev/null
echo "$DEB ($(du -h "$DEB" | cut -f1))"
echo "$DBGDEB ($(du -h "$DBGDEB" | cut -f1))"

# Every tag is shown, informational and pedantic ones too; an error or a warning fails the build.
# The informational tags that remain, and why, are in Docs/OPERATIONS.md, "Install".
echo "==> lintian"
lintian --display-info --pedantic --display-experimental --fail-on error,warning "$DEB" "$DBGDEB" ||
    { echo "package.sh: lintian reports an error or a warning (above)" >&2; exit 1; }
rm -rf "$STAGE"

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
cp "$DEB" "$DBGDEB" "$DROOT/tmp/"
cp scripts/lib/package-check.sh "$DROOT/tmp/package-check.sh"

echo "==> installing $(basename "$DEB") with apt (its dependencies from Debian) and checking it, then $(basename "$DBGDEB")"
# A new PID namespace: when the check's shell ends, every process it started ends with it. A new
# mount namespace: /proc and /dev mounted for the root vanish with it.
unshare --pid --fork --mount --propagation private /bin/sh -c '
    set -e
    mount -t proc proc "$1/proc"
    mount --rbind /dev "$1/dev"
    exec chroot "$1" /bin/sh /tmp/package-check.sh "/tmp/$2" "/tmp/$3"
' package-test "$DROOT" "$(basename "$DEB")" "$(basename "$DBGDEB")"
echo "==> the package installs and runs on a clean Debian root"
