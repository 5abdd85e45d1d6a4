#!/usr/bin/env bash
# Writes the manual page, lansync.1, from the commands' own definitions (the same text as
# --help), with swift-argument-parser's manual generator. Usage: scripts/manual.sh [OUT]
# (default .build/lansync.1); read it with 'man -l OUT'. scripts/package.sh does the same for the
# Debian package, from the release binary.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.build/lansync.1}
# Debug builds: they leave the release build's flags alone (scripts/lib/release.sh), and the page
# only needs the binary's description of its commands, which is the same in both.
swift build --product lansync 2>&1 | grep -E "error:" && exit 1
swift build --product generate-manual 2>&1 | grep -E "error:" && exit 1
dir=$(mktemp -d /tmp/lansync-man-XXXXXX)
trap 'rm -rf "$dir"' EXIT
.build/debug/generate-manual .build/debug/lansync --authors "lansync developers" --output-directory "$dir" >/dev/null ||
    { echo "scripts/manual.sh: the manual generator failed" >&2; exit 1; }
cp "$dir/lansync.1" "$out"
echo "$out"
