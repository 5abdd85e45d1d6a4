// swift-tools-version: 6.2
import PackageDescription

/// Strictness shared by every target: Swift 6 language mode (the tools-version default) plus the
/// upcoming features that keep module boundaries honest. With LANSYNC_WARNINGS_AS_ERRORS=1 (CI
/// sets it) a warning in our code fails the build; dependencies' warnings are not ours to fail on.
let strict: [SwiftSetting] =
    [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("MemberImportVisibility"),
        .enableUpcomingFeature("InternalImportsByDefault"),
    ] + (Context.environment["LANSYNC_WARNINGS_AS_ERRORS"] == "1" ? [.treatAllWarnings(as: .error)] : [])

let package = Package(
    name: "lansync",
    products: [
        .executable(name: "lansync", targets: ["lansync"]),
        .library(name: "LansyncCore", targets: ["LansyncCore"]),
        .library(name: "LansyncWire", targets: ["LansyncWire"]),
        // For the store microbenchmark in Benchmarks/.
        .library(name: "LansyncReplica", targets: ["LansyncReplica"]),
        .library(name: "LansyncStore", targets: ["LansyncStore"]),
        // For the relay's load generator in Benchmarks/ (relay-load: simulated members over real TLS).
        .library(name: "LansyncNode", targets: ["LansyncNode"]),
        .library(name: "LansyncTransport", targets: ["LansyncTransport"]),
        .library(name: "LansyncIdentity", targets: ["LansyncIdentity"]),
        // For the long simulation runs in Benchmarks/ (sim-bench).
        .library(name: "LansyncSimulation", targets: ["LansyncSimulation"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/swiftlang/swift-subprocess.git", from: "1.0.2"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-async-algorithms.git", from: "1.1.4"),
        // The local API's HTTP server; its optional traits (swift-configuration) are not needed.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: []),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        // The node's counters (swift-metrics, which Hummingbird brings anyway) and their
        // Prometheus form at /metrics.
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // The node's services (the node, the API beside it) and their graceful shutdown on
        // SIGTERM; Hummingbird brings it anyway.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        // The relays' shared authority in PostgreSQL (a lease and a ledger of settlements).
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
    ],
    targets: [
        // Pure: values, dots, version vectors, clocks, registers, list sets, items, deltas, merge.
        // No Foundation, no I/O: everything time- or randomness-dependent is passed in.
        .target(name: "LansyncCore", swiftSettings: strict),
        // Pure: JSON text (parser and writer) and the JSON forms of values and writes. Outside the
        // merge core, which keeps no text formats.
        .target(name: "LansyncJSON", dependencies: ["LansyncCore"], swiftSettings: strict),
        // Pure: protocol messages, frames and their binary encoding; a total decoder. No NIO.
        .target(name: "LansyncWire", dependencies: ["LansyncCore"], swiftSettings: strict),
        // The seam between the replica's logic and where it is kept: the storage protocol and
        // every type it speaks in, the delta reading, the peer overrule, the collection rules,
        // the read model, store errors and the replica's files. No database in it.
        .target(
            name: "LansyncReplica",
            // Crypto for SHA-256 alone: the digests of signed writes (SignedRun.swift).
            dependencies: ["LansyncCore", "LansyncJSON", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict
        ),
        // The replica in one SQLite file: schema, migrations, the version index, history.
        .target(
            name: "LansyncStore",
            dependencies: [
                "LansyncCore", "LansyncJSON", "LansyncReplica", .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API, for the few statements bound without GRDB's arguments (BoundStatement.swift).
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ],
            swiftSettings: strict
        ),
        // The cluster authority and node certificates; node ids derive from public keys.
        .target(
            name: "LansyncIdentity",
            dependencies: [
                "LansyncCore",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: strict
        ),
        // TCP and mutual TLS 1.3 over SwiftNIO: identity, framing, listener, dialer, limits.
        .target(
            name: "LansyncTransport",
            dependencies: [
                "LansyncCore", "LansyncWire", "LansyncIdentity",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: strict
        ),
        // libavahi-client's headers (Debian: libavahi-client-dev); the libraries are loaded with
        // dlopen when discovery starts, so commands that never discover do not load them.
        // Fortified libc calls where the compiler knows a buffer's size (Debian's hardening);
        // release only, since _FORTIFY_SOURCE needs the optimiser.
        .target(
            name: "CAvahi",
            cSettings: [.define("_FORTIFY_SOURCE", to: "2", .when(configuration: .release))],
            linkerSettings: [.linkedLibrary("dl")]
        ),
        // Finding peers: the Discovery interface and its Avahi (mDNS/DNS-SD) implementation.
        .target(name: "LansyncDiscovery", dependencies: ["LansyncCore", "CAvahi"], swiftSettings: strict),
        // Where several relays share the authority (a lease with a fencing epoch and the ledger
        // of settlements) and, being built, a relay's replica: PostgreSQL (postgres-nio).
        .target(
            name: "LansyncPostgres",
            dependencies: [
                "LansyncCore", "LansyncJSON", "LansyncReplica",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // The sync engine: the session state machine (pure), its runner, peers, the node.
        .target(
            name: "LansyncNode",
            dependencies: [
                "LansyncCore", "LansyncJSON", "LansyncWire", "LansyncReplica", "LansyncTransport", "LansyncIdentity",
                "LansyncDiscovery",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        // The host: a machine's data directory (its lock, identity and copies), local edits and
        // imports, running the node, and the JSON forms of what read commands print. Shared by
        // every front end (the CLI, the local API).
        .target(
            name: "LansyncHost",
            dependencies: [
                "LansyncCore", "LansyncJSON", "LansyncReplica", "LansyncStore", "LansyncIdentity", "LansyncTransport",
                "LansyncNode", "LansyncWire", "LansyncDiscovery", "LansyncPostgres",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // The local HTTP API, change feed, web page and metrics a running node serves (Hummingbird).
        .target(
            name: "LansyncAPI",
            dependencies: [
                "LansyncHost", "LansyncJSON",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            // Embedded in OpenAPIDocument.swift by scripts/openapi.sh, and the web page's files in
            // UIAssets.swift by scripts/ui.sh.
            exclude: ["openapi.json", "UI"],
            swiftSettings: strict
        ),
        // Test support, never shipped: tools the integration tests and the chaos suite run to
        // play a misbehaving member and to stress the store. They may reach below the host.
        .executableTarget(
            name: "lansync-debug",
            dependencies: [
                "LansyncCore", "LansyncReplica", "LansyncStore", "LansyncIdentity", "LansyncTransport", "LansyncNode",
                "LansyncWire",
                "LansyncHost", "LansyncFuzzing",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            path: "Tests/Tools/lansync-debug",
            swiftSettings: strict
        ),
        // The CLI: argument parsing and rendering only. It reaches the replica, the node and the
        // cluster through the host alone (scripts/check-imports.sh).
        .executableTarget(
            name: "lansync",
            dependencies: [
                "LansyncHost", "LansyncAPI",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict,
            linkerSettings: [
                // lld packs relative relocations, and binds every symbol at start (`-z now`: full
                // RELRO, Debian's hardening; no measurable cost at a command's start, as it
                // resolves few); `--no-export-dynamic` undoes the toolchain's
                // `-export-dynamic` for static executables (static-stdlib-args.lnk), which put
                // 52,000 of lansync's own symbols in the dynamic table: nothing looks them up, and
                // every start paid for them (Docs/BENCHMARKS.md, "A command's start").
                .unsafeFlags(
                    [
                        "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
                        "-Xlinker", "-z", "-Xlinker", "now", "-Xlinker", "--no-export-dynamic",
                    ],
                    .when(platforms: [.linux], configuration: .release)
                )
            ]
        ),
        // Seeded randomness, edge values and small helpers shared by the test targets.
        .target(
            name: "LansyncTestSupport",
            dependencies: ["LansyncCore"],
            path: "Tests/LansyncTestSupport",
            swiftSettings: strict
        ),
        // The compute lane: threads of their own for tests that compute or block for long, off
        // Swift's cooperative pool (a trait, so test targets only: it imports Testing).
        .target(
            name: "LansyncTestLane",
            path: "Tests/LansyncTestLane",
            swiftSettings: strict
        ),
        // The fuzzer of the receive path (issue 62, Fuzz/README.md): recorded sessions of a real
        // member, mutated and played into a real node in process. A short run is a test
        // (ReceivePathFuzzTests); `lansync-debug fuzz-sessions` runs it for hours.
        .target(
            name: "LansyncFuzzing",
            dependencies: [
                "LansyncCore", "LansyncWire", "LansyncReplica", "LansyncStore", "LansyncIdentity", "LansyncTransport",
                "LansyncNode",
                "LansyncTestSupport",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            path: "Tests/LansyncFuzzing",
            swiftSettings: strict
        ),
        .testTarget(
            name: "LansyncCoreTests",
            dependencies: [
                "LansyncCore", "LansyncJSON", "LansyncTestSupport", "LansyncTestLane",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LansyncWireTests",
            dependencies: ["LansyncCore", "LansyncWire", "LansyncTestSupport"],
            exclude: ["Regressions"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LansyncIdentityTests",
            dependencies: [
                "LansyncCore", "LansyncIdentity", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            swiftSettings: strict
        ),
        // The transport's channel handlers, driven through an EmbeddedChannel (no sockets).
        .testTarget(
            name: "LansyncTransportTests",
            dependencies: [
                "LansyncCore", "LansyncWire", "LansyncTransport", "LansyncTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        // A cluster of session machines and peer views over a simulated network, in one process
        // and deterministic from its seed (issue 33): short runs in its tests, long ones in the
        // benchmarks.
        .target(
            name: "LansyncSimulation",
            dependencies: ["LansyncCore", "LansyncNode", "LansyncWire", "LansyncTestSupport"],
            path: "Tests/LansyncSimulation",
            swiftSettings: strict
        ),
        .testTarget(
            name: "LansyncSimulationTests",
            dependencies: ["LansyncCore", "LansyncNode", "LansyncSimulation", "LansyncTestSupport", "LansyncTestLane"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LansyncNodeTests",
            dependencies: [
                "LansyncCore", "LansyncWire", "LansyncNode", "LansyncReplica", "LansyncStore", "LansyncTransport",
                "LansyncTestSupport",
                "LansyncFuzzing", "LansyncIdentity",
                // The nudge socket's test serves it on an event loop of its own.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        // The shared authority against a real PostgreSQL server each test starts (TemporaryPostgres).
        .testTarget(
            name: "LansyncPostgresTests",
            dependencies: [
                "LansyncCore", "LansyncPostgres", "LansyncReplica", "LansyncStore", "LansyncTestSupport",
                "LansyncTestLane",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LansyncStoreTests",
            // GRDB: the damage tests break a file's rows on purpose.
            dependencies: [
                "LansyncCore", "LansyncJSON", "LansyncReplica", "LansyncStore", "LansyncTestSupport",
                "LansyncTestLane",
                .product(name: "GRDB", package: "GRDB.swift"),
                // The shared store suites run against the PostgreSQL replica too (StorageKind).
                "LansyncPostgres",
                .product(name: "Logging", package: "swift-log"),
                // A member's key, signing writes (SignedRunTests).
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LansyncHostTests",
            dependencies: [
                "LansyncCore", "LansyncDiscovery", "LansyncHost", "LansyncJSON", "LansyncNode", "LansyncReplica",
                "LansyncStore",
                "LansyncTransport", "LansyncTestSupport", .product(name: "NIOCore", package: "swift-nio"),
            ],
            // Replica files of earlier releases, for the migration tests (read through #filePath).
            exclude: ["Fixtures"],
            swiftSettings: strict
        ),
        // The local API's routes in process, against a real replica (no socket, no node process).
        .testTarget(
            name: "LansyncAPITests",
            dependencies: [
                "LansyncAPI", "LansyncHost", "LansyncJSON", "LansyncNode", "LansyncTestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "LansyncCore", "LansyncJSON", "LansyncNode", "LansyncReplica", "LansyncStore", "LansyncTestSupport",
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: strict
        ),
    ]
)
