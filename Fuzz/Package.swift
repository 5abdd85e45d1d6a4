// swift-tools-version: 6.2
// libFuzzer targets for lansync's decoders. A separate package, so CI never builds it.
// Build and run: see README.md.
import PackageDescription

let package = Package(
    name: "LansyncFuzz",
    dependencies: [.package(name: "lansync", path: "..")],
    targets: [
        .executableTarget(
            name: "FuzzMessageDecoder",
            dependencies: [
                .product(name: "LansyncWire", package: "lansync"),
                .product(name: "LansyncCore", package: "lansync"),
            ],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        )
    ]
)
