#!/usr/bin/env bash
# The fuzzer of the receive path for a long run (Fuzz/README.md): SECONDS of mutated sessions
# played into a real node in process, on a release build. A crash keeps its session in
# WORK/crashes/ and the run goes on; the figures of every part are printed, and a summary last.
#
#   Fuzz/run-receive-path.sh [SECONDS] [WORK]
#   LANSYNC_FUZZ_BINARY=PATH ...   that lansync-debug, not a build of this checkout
set -uo pipefail
cd "$(dirname "$0")/.."
total=${1:-7200}
work=${2:-/tmp/lansync-fuzz}
mkdir -p "$work/corpus" "$work/crashes"
source scripts/lib/release.sh
if [ -n "${LANSYNC_FUZZ_BINARY:-}" ]; then
    bin=$LANSYNC_FUZZ_BINARY
else
    "${LANSYNC_RELEASE_DEBUG_BUILD[@]}" >/dev/null || { echo "run-receive-path: the build failed" >&2; exit 1; }
    bin=$LANSYNC_RELEASE_DEBUG_BINARY
fi
start=$(date +%s)
crashes=0
runs=0
while :; do
    left=$((total - ($(date +%s) - start)))
    [ "$left" -le 0 ] && break
    runs=$((runs + 1))
    "$bin" fuzz-sessions --seconds "$left" --work "$work" --corpus "$work/corpus" 2>&1 | tee -a "$work/log"
    status=${PIPESTATUS[0]}
    if [ "$status" != 0 ]; then
        crashes=$((crashes + 1))
        cp "$work/current.bin" "$work/crashes/crash-$(date +%s)-$crashes.bin"
        echo "run-receive-path: the fuzzer died (exit $status); its session is in $work/crashes/" | tee -a "$work/log"
    fi
done
echo "run-receive-path: $runs run(s) in $(( $(date +%s) - start )) s, $crashes crash(es); corpus $(ls "$work/corpus" | wc -l) sessions; log in $work/log"
[ "$crashes" = 0 ]
