# Shared by every script that needs the release binary (chaos, demo, bench, package): one set of
# build flags, because SwiftPM rebuilds every module when they change. --static-swift-stdlib links
# the Swift runtime and Foundation into the binary, so it runs on a machine without a Swift
# toolchain; it still needs Debian's libsqlite3-0, and libavahi-client3 for discovery (loaded when
# a node starts; Docs/OPERATIONS.md).
LANSYNC_RELEASE_BUILD=(swift build -c release --product lansync --static-swift-stdlib)
LANSYNC_RELEASE_BINARY=.build/release/lansync
# The test tools (never shipped), with the same flags, for the chaos suite's member scenario.
LANSYNC_RELEASE_DEBUG_BUILD=(swift build -c release --product lansync-debug --static-swift-stdlib)
LANSYNC_RELEASE_DEBUG_BINARY=.build/release/lansync-debug

# The binary a measuring script runs: its first argument if given, else the release build of this
# checkout (built first). Sets BIN to an absolute path.
lansync_binary() {
    if [ $# -ge 1 ]; then
        BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
    else
        local repo
        repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
        (cd "$repo" && "${LANSYNC_RELEASE_BUILD[@]}" >/dev/null)
        BIN="$repo/$LANSYNC_RELEASE_BINARY"
    fi
}
