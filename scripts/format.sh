#!/usr/bin/env bash
# Formats every Swift file of the repository with the toolchain's swift-format and the rules in
# .swift-format (SwiftNIO's, 120 columns, 4 spaces). Compiles nothing.
#
#   scripts/format.sh            rewrite the files in place
#   scripts/format.sh --check    change nothing; list the files that need formatting and fail (CI)
set -euo pipefail
cd "$(dirname "$0")/.."

# Every folder and manifest that holds Swift.
paths=(Sources Tests Benchmarks/Sources Fuzz/Sources Package.swift Benchmarks/Package.swift Fuzz/Package.swift)
config=(--configuration .swift-format)

case "${1:-}" in
"")
    swift format format "${config[@]}" --recursive --parallel --in-place "${paths[@]}"
    ;;
--check)
    out=$(mktemp)
    trap 'rm -f "$out"' EXIT
    if swift format lint "${config[@]}" --recursive --parallel --strict --no-color-diagnostics "${paths[@]}" 2>"$out"; then
        exit 0
    fi
    # Findings read "path:line:column: error: [Rule] message".
    files=$(sed -nE 's/^([^:]+\.swift):[0-9]+:[0-9]+: (error|warning): .*/\1/p' "$out" | sort | uniq -c)
    if [ -z "$files" ]; then
        cat "$out" >&2 # swift-format itself failed (bad configuration, unparsable file)
        exit 2
    fi
    echo "format: these files need formatting (findings per file):" >&2
    echo "$files" >&2
    echo "format: run scripts/format.sh" >&2
    exit 1
    ;;
*)
    echo "usage: scripts/format.sh [--check]" >&2
    exit 2
    ;;
esac
