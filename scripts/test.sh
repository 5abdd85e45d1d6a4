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

# LANSYNC_WARNINGS_AS_ERRORS=1 reaches Package.swift, which then treats our targets' warnings as
# errors (and only ours).
echo "==> building (debug) with tests${LANSYNC_WARNINGS_AS_ERRORS:+ (warnings as errors)}"
swift build --build-tests
echo "==> running tests"
swift test --skip-build
