# Shared by scripts/test.sh and demo/run.sh: installs missing Debian packages without ever
# starting a service on the host (a policy-rc.d forbids it while apt runs).

# What building and testing need beyond the Swift toolchain (prometheus for promtool, which checks
# a live node's /metrics in ObservabilityTests; policy-rc.d below keeps its server from starting).
LANSYNC_TEST_PACKAGES=(libsqlite3-dev sqlite3 libavahi-client-dev avahi-daemon avahi-utils dbus iproute2 nftables util-linux faketime openssl postgresql prometheus)
# The browser the web page's tests drive (through Playwright, with its executable_path).
LANSYNC_BROWSER_PACKAGES=(chromium)

ensure_packages() {
    local missing=()
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "lansync: missing Debian packages: ${missing[*]}" >&2
        echo "lansync: run: sudo apt-get install --no-install-recommends ${missing[*]}" >&2
        exit 1
    fi
    echo "==> installing ${missing[*]}"
    local policy=/usr/sbin/policy-rc.d created=0
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
    [ "$created" = 1 ] && rm -f "$policy"
    return 0
}
