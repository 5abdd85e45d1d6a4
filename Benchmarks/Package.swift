// swift-tools-version: 6.2
import PackageDescription

// The benchmark runner: its own package, so `swift build` and `swift test` at the root (and CI)
// never build it. It drives the release `lansync` binary as a user would; it links none of
// lansync's modules. Run it through `scripts/bench.sh`.
let package = Package(
    name: "LansyncBenchmarks",
    products: [.executable(name: "lansync-bench", targets: ["lansync-bench"])],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2")
    ],
    targets: [
        // The system SQLite, for the "plain SQLite table" limit and for watching replicas commit.
        .systemLibrary(name: "CSQLite3", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .executableTarget(
            name: "lansync-bench",
            dependencies: ["CSQLite3", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: [
                .enableUpcomingFeature("ExistentialAny"),
                .enableUpcomingFeature("MemberImportVisibility"),
            ]
        ),
    ]
)
