#!/usr/bin/env bash
# The upgrade test with two binaries (issue 64, Tests/IntegrationTests/UpgradeTests.swift): a
# cluster of an older lansync upgraded in place to this checkout, with signed writes then required.
# Builds the older lansync from a revision of this repository (default: d376c57, the last of
# protocol 1.13) once, into .build-older/REV, then builds this checkout and runs the test.
#
#   scripts/upgrade-test.sh            against d376c57
#   scripts/upgrade-test.sh REV        against another revision (before protocol 1.14)
#
# A revision's build takes minutes on two cores, so the README's test command does not run this;
# run it before a release that changes the protocol, and after changing what an upgrade meets.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/packages.sh
ensure_packages "${LANSYNC_TEST_PACKAGES[@]}"

rev="$(git rev-parse --short "${1:-d376c57}")"
older=".build-older/$rev"
binary="$older/.build/debug/lansync"
if [ ! -x "$binary" ]; then
    echo "==> building lansync at $rev into $older (once)"
    rm -rf "$older"
    mkdir -p "$older"
    git archive "$rev" | tar -x -C "$older"
    (cd "$older" && swift build --product lansync)
fi
echo "==> building this checkout (debug) with tests"
swift build --build-tests
echo "==> the upgrade test, from $rev"
LANSYNC_OLDER_BIN="$PWD/$binary" swift test --skip-build --filter UpgradeTests
