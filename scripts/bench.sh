#!/usr/bin/env bash
# The README's benchmark command: on a fresh machine of this kind it installs what is missing
# (Debian packages, Syncthing among them), builds lansync and the runner in release mode, and runs
# every workload of Docs/BENCHMARKS.md. The table is printed and written to
# Benchmarks/results/latest.{md,json}. Not part of CI.
#
#   scripts/bench.sh                 everything (about 10 minutes on 2 cores, after the build)
#   scripts/bench.sh --quick         small sizes, to check the runner itself (about 2 minutes)
#   scripts/bench.sh --only W1,W5    some workloads (W1..W6, syncthing, limits)
#   scripts/bench.sh --help          every option
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/packages.sh
source scripts/lib/release.sh

ensure_packages "${LANSYNC_TEST_PACKAGES[@]}" syncthing curl

echo "==> building lansync (release)"
"${LANSYNC_RELEASE_BUILD[@]}"
echo "==> building the benchmark runner (release)"
swift build -c release --package-path Benchmarks
exec Benchmarks/.build/release/lansync-bench --lansync "$PWD/.build/release/lansync" --repo "$PWD" \
    --out "$PWD/Benchmarks/results" "$@"
