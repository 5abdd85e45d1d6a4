#!/usr/bin/env bash
# The README's test command: on a fresh machine of this kind it installs what is missing (Debian
# packages), builds, and runs every test. CI (.ci/run) calls exactly this.
#
#   scripts/test.sh                     all tests
#   LANSYNC_PROPERTY_CASES=20000 scripts/test.sh    many more random histories
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/packages.sh

ensure_packages "${LANSYNC_TEST_PACKAGES[@]}"

echo "==> building (debug) with tests"
swift build --build-tests
echo "==> running tests"
swift test --skip-build
