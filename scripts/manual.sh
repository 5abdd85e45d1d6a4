#!/usr/bin/env bash
# Writes the manual page, lansync.1, from the commands' own definitions (the same text as
# --help), with swift-argument-parser's manual generator. Usage: scripts/manual.sh [OUT]
# (default .build/lansync.1); read it with 'man -l OUT'.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.build/lansync.1}
# The generator builds the package in release mode, then asks the binary for its commands.
swift package generate-manual --authors "lansync developers" >/dev/null 2>&1 || { echo "scripts/manual.sh: the manual generator failed (run: swift package generate-manual)" >&2; exit 1; }
cp .build/plugins/GenerateManual/outputs/lansync/lansync.1 "$out"
echo "$out"
