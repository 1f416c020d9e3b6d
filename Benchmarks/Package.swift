// swift-tools-version:6.1
import PackageDescription

// Courier's benchmarks: figures, not tests. Its own package, so that the library's users never resolve the peers
// (AsyncHTTPClient) or the benchmark framework.
//
// - courier-bench: the side-by-side comparison against nginx on loopback (see README.md).
// - bench-courier, bench-courier-ht, bench-courier-bg, bench-urlsession, bench-ahc, bench-floor: one workload with one Swift client,
//   spawned by courier-bench through bench-launch, which reports that process's own wall time, CPU time and peak
//   RSS. bench-courier-bg runs a background session and needs courierd, which the root package builds.
// - CourierMicro: microbenchmarks of the hot paths (package-benchmark), with allocation thresholds.

// SwiftPM names a path dependency after its folder; the repository may be cloned under any name.
let courierPackage = Context.packageDirectory.split(separator: "/").dropLast().last.map(String.init) ?? "Courier"

let strictSwift: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "CourierBenchmarks",
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
    ],
    targets: [
        // What both executables agree on: the workloads, the peers, the fixture names, the client's report line.
        .target(name: "BenchmarkSupport", swiftSettings: strictSwift),
        .executableTarget(
            name: "courier-bench",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSwift
        ),
        // What every client executable shares: the workload driver and the `run` command's options.
        .target(
            name: "BenchClientKit",
            dependencies: ["BenchmarkSupport", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strictSwift
        ),
        // The client over a URLSession-shaped session, shared by Courier's and FoundationNetworking's executables.
        .target(name: "SessionClientKit", dependencies: ["BenchClientKit"], swiftSettings: strictSwift),
        // One executable per Swift client, so that each run's peak RSS holds only that client's libraries.
        // Courier's session configuration for a run, shared by its two clients.
        .target(
            name: "CourierClientKit",
            dependencies: ["BenchClientKit", .product(name: "Courier", package: courierPackage)],
            swiftSettings: strictSwift
        ),
        .executableTarget(
            name: "bench-courier",
            dependencies: [
                "BenchClientKit", "SessionClientKit", "CourierClientKit",
                .product(name: "Courier", package: courierPackage),
            ],
            swiftSettings: strictSwift
        ),
        // The same session through Courier's swift-http-types API (HTTPRequest in, HTTPResponse out).
        .executableTarget(
            name: "bench-courier-ht",
            dependencies: [
                "BenchClientKit", "CourierClientKit",
                .product(name: "Courier", package: courierPackage),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: strictSwift
        ),
        // A background session: the transfers run in courierd (the root package's daemon, started by the client).
        .executableTarget(
            name: "bench-courier-bg",
            dependencies: ["BenchClientKit", .product(name: "Courier", package: courierPackage)],
            swiftSettings: strictSwift
        ),
        .executableTarget(
            name: "bench-urlsession",
            dependencies: ["BenchClientKit", "SessionClientKit"],
            swiftSettings: strictSwift
        ),
        .executableTarget(
            name: "bench-ahc",
            dependencies: [
                "BenchClientKit",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strictSwift
        ),
        // The engine's C sources (a link to ../CSupport), compiled once more for bench-floor alone: the library
        // keeps its engine internal.
        .target(
            name: "CourierEngineC",
            exclude: ["tests"],
            sources: ["src"],
            publicHeadersPath: "include",
            linkerSettings: [
                .linkedLibrary("curl"), .linkedLibrary("uv"), .linkedLibrary("pthread"), .linkedLibrary("z"),
                .linkedLibrary("dl"),
            ]
        ),
        // The floor: the engine with the least Swift an async, URLSession-shaped API needs above it.
        .executableTarget(
            name: "bench-floor",
            dependencies: ["BenchClientKit", "CourierEngineC"],
            swiftSettings: strictSwift
        ),
        // Runs one client and reports its own costs (C: its small resident set is the floor of every peak RSS).
        .executableTarget(name: "bench-launch"),
        // The C reference client: libcurl's multi interface on one libuv loop (curl's docs/examples/multi-uv.c).
        .executableTarget(
            name: "bench-c",
            linkerSettings: [.linkedLibrary("curl"), .linkedLibrary("uv")]
        ),
        .executableTarget(
            name: "CourierMicro",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "Courier", package: courierPackage),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/CourierMicro",
            swiftSettings: strictSwift,
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
