// swift-tools-version: 6.2
import PackageDescription

/// Strictness shared by every target: Swift 6 language mode (the tools-version default) plus the
/// upcoming features that keep module boundaries honest.
let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "lansync",
    products: [
        .executable(name: "lansync", targets: ["lansync"]),
        .library(name: "LansyncCore", targets: ["LansyncCore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
    ],
    targets: [
        // Pure: values, dots, version vectors, clocks, registers, list sets, items, deltas, merge.
        // No Foundation, no I/O: everything time- or randomness-dependent is passed in.
        .target(name: "LansyncCore", swiftSettings: strict),
        .executableTarget(
            name: "lansync",
            dependencies: [
                "LansyncCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "LansyncCoreTests",
            dependencies: [
                "LansyncCore",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            swiftSettings: strict
        ),
    ]
)
