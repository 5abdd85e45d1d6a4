#!/usr/bin/env bash
# The README's test command: on a fresh machine of this kind it installs what is missing (Debian
# packages), builds, and runs every test. CI (.ci/run) calls exactly this.
#
#   scripts/test.sh                     all tests
#   LANSYNC_PROPERTY_CASES=20000 scripts/test.sh    many more random histories
#   LANSYNC_WARNINGS_AS_ERRORS=1 scripts/test.sh    a warning in our code fails the build (CI);
#                                       dependencies' warnings do not
#   LANSYNC_REQUIRE_LAB=1 scripts/test.sh           the mDNS lab tests fail, not skip, where the lab
#                                       cannot run (CI sets it as root with network namespaces)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/packages.sh

ensure_packages "${LANSYNC_TEST_PACKAGES[@]}"

# From PyPI, in a virtualenv of its own under .build: schemathesis, which fuzzes the local API
# against its OpenAPI document (APITests.theAPIKeepsToItsOpenAPIDocument), and Playwright, which
# drives Debian's chromium through the web page (UITests.aRealBrowserUsesThePage; it never
# downloads a browser of its own). Without them those tests are skipped and say why; CI must
# have them.
ensure_packages "${LANSYNC_BROWSER_PACKAGES[@]}"
venv=.build/venv
if [ ! -x "$venv/bin/schemathesis" ] || ! "$venv/bin/python" -c 'import playwright.sync_api' 2>/dev/null; then
    echo "==> installing schemathesis and playwright from PyPI into $venv"
    python3 -c 'import ensurepip, venv' 2>/dev/null || ensure_packages python3-venv
    if ! { python3 -m venv "$venv" \
        && "$venv/bin/pip" install -q --disable-pip-version-check "schemathesis==4.*" "playwright==1.*"; }; then
        if [ "${CI:-}" = true ]; then
            echo "lansync: cannot install schemathesis and playwright from PyPI, which CI needs" >&2
            exit 1
        fi
        echo "==> schemathesis or playwright could not be installed: their tests will be skipped"
    fi
fi

# LANSYNC_WARNINGS_AS_ERRORS=1 reaches Package.swift, which then treats our targets' warnings as
# errors (and only ours).
echo "==> building (debug) with tests${LANSYNC_WARNINGS_AS_ERRORS:+ (warnings as errors)}"
swift build --build-tests
echo "==> running tests"
# Each PostgreSQL test stops its own server (TemporaryPostgres); a test process that crashed
# cannot, so whatever server of theirs is left goes here.
leftover_postgres() {
    pkill -QUIT -f "postgres -D /tmp/lansync-pg-" 2>/dev/null && sleep 1
    rm -rf /tmp/lansync-pg-* 2>/dev/null || true
}
trap leftover_postgres EXIT
swift test --skip-build
