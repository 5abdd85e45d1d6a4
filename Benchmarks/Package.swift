// swift-tools-version: 6.2
import PackageDescription

// The benchmarks: their own package, so `swift build` and `swift test` at the root (and CI) never
// build them. Run them through `scripts/bench.sh`.
let package = Package(
    name: "LansyncBenchmarks",
    products: [
        .executable(name: "lansync-bench", targets: ["lansync-bench"]),
        .executable(name: "store-bench", targets: ["store-bench"]),
        .executable(name: "sim-bench", targets: ["sim-bench"]),
        .executable(name: "relay-load", targets: ["relay-load"]),
        .executable(name: "cli-floor", targets: ["cli-floor"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(name: "lansync", path: ".."),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-async-algorithms.git", from: "1.1.4"),
    ],
    targets: [
        // The system SQLite, for the "plain SQLite table" limit and for watching replicas commit.
        .systemLibrary(name: "CSQLite3", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // A minimal SQLite connection shared by both runners.
        .target(
            name: "BenchSQLite",
            dependencies: ["CSQLite3"],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny"), .enableUpcomingFeature("MemberImportVisibility")]
        ),
        // A process's CPU time and memory from /proc, for the runners that start `lansync`.
        .target(
            name: "BenchProcess",
            swiftSettings: [.enableUpcomingFeature("ExistentialAny"), .enableUpcomingFeature("MemberImportVisibility")]
        ),
        // Drives the release `lansync` binary as a user would; it links none of lansync's modules.
        .executableTarget(
            name: "lansync-bench",
            dependencies: [
                "BenchProcess", "BenchSQLite", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: [
                .enableUpcomingFeature("ExistentialAny"),
                .enableUpcomingFeature("MemberImportVisibility"),
            ]
        ),
        // The store alone (LansyncStore, no network): local edits, remote batches, conflicting
        // merges, beside the plain table, so the write path can be tuned without the network.
        .executableTarget(
            name: "store-bench",
            dependencies: [
                "BenchSQLite",
                .product(name: "LansyncCore", package: "lansync"),
                .product(name: "LansyncReplica", package: "lansync"),
                .product(name: "LansyncStore", package: "lansync"),
            ],
            swiftSettings: [
                .enableUpcomingFeature("ExistentialAny"),
                .enableUpcomingFeature("MemberImportVisibility"),
            ]
        ),
        // The simulated cluster (LansyncSimulation) at 50, 200 and 1,000 nodes, and many seeds.
        .executableTarget(
            name: "sim-bench",
            dependencies: [
                .product(name: "LansyncSimulation", package: "lansync"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: [
                .enableUpcomingFeature("ExistentialAny"),
                .enableUpcomingFeature("MemberImportVisibility"),
            ]
        ),
        // The start of a static Swift binary with Foundation and the argument parser, and
        // nothing of lansync's: the floor under the CLI's figures.
        .executableTarget(
            name: "cli-floor",
            dependencies: [.product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: [
                .enableUpcomingFeature("ExistentialAny"),
                .enableUpcomingFeature("MemberImportVisibility"),
            ]
        ),
        // W10: simulated members over real mutual-TLS sessions against the release relay.
        .executableTarget(
            name: "relay-load",
            dependencies: [
                "BenchProcess",
                .product(name: "LansyncCore", package: "lansync"),
                .product(name: "LansyncWire", package: "lansync"),
                .product(name: "LansyncNode", package: "lansync"),
                .product(name: "LansyncTransport", package: "lansync"),
                .product(name: "LansyncIdentity", package: "lansync"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: [
                .enableUpcomingFeature("ExistentialAny"),
                .enableUpcomingFeature("MemberImportVisibility"),
            ]
        ),
    ]
)
