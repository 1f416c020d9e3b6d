// swift-tools-version:6.0
import Foundation
import PackageDescription

// Courier: URLSession-style sessions over a libcurl + libuv transfer core (CSupport).
// System packages: libuv1-dev and libcurl4-openssl-dev; zlib1g-dev (among Swift's own requirements on Linux) for the
// engine's gzip and deflate decoding (br and zstd are loaded at run time from the libraries libcurl links);
// libsqlite3-dev for courierd's journal; for the test server's encoders libbrotli-dev and libzstd-dev (all installed
// by scripts/bootstrap.sh).

let strictSwift: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Courier",
    products: [
        .library(name: "Courier", targets: ["Courier"]),
        // A swift-openapi-runtime transport on Courier; a package that does not use it does not build it.
        .library(name: "CourierOpenAPI", targets: ["CourierOpenAPI"]),
        .executable(name: "courier", targets: ["courier"]),
        // The background transfer service. A package that depends on Courier builds it with
        // `swift build --product courierd`: it lands beside the app, where a background session looks for it.
        .executable(name: "courierd", targets: ["courierd"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
    ],
    targets: [
        // libcurl and libuv, found through pkg-config; a missing one gets SwiftPM's hint to install the package.
        .systemLibrary(name: "CLibCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CLibUV", pkgConfig: "libuv", providers: [.apt(["libuv1-dev"])]),
        // The C transfer engine: owns every libcurl and libuv object. Swift sees only courier_engine.h.
        // No unsafe flags (SwiftPM refuses them in a package required by version): the test command compiles these
        // sources once more with -Wall -Wextra -Werror (scripts/test.sh).
        .target(
            name: "CSupport",
            dependencies: ["CLibCurl", "CLibUV"],
            path: "CSupport",
            exclude: ["tests"],
            sources: ["src"],
            publicHeadersPath: "include",
            linkerSettings: [.linkedLibrary("pthread"), .linkedLibrary("z"), .linkedLibrary("dl")]
        ),
        // posix_spawn's close-every-descriptor-from action (glibc declares it only under _GNU_SOURCE): a process
        // courierd or an app starts inherits standard input, output and error only (ProcessSpawner.swift).
        .target(name: "CSpawn"),
        // The package's lock (pthread-based, so ThreadSanitizer sees it; see LockedValue.swift).
        .target(name: "CourierConcurrency", swiftSettings: strictSwift),
        // What crosses between an app and courierd: the framed messages of docs/ipc.md and the values they carry (the
        // request, the response head, the error), the socket, courierd's paths, the app's connection (which starts
        // courierd when none answers) and the device token. Below both the lifecycle (fetch and push registration)
        // and the sessions (background tasks).
        .target(
            name: "CourierIPC",
            dependencies: ["CSpawn", "CourierConcurrency"],
            swiftSettings: strictSwift
        ),
        // Application lifecycle: states, background tasks with budgets, expiration, watchdog; its link to courierd for
        // background fetch and remote notifications.
        .target(
            name: "CourierLifecycle",
            dependencies: [
                "CourierConcurrency",
                "CourierIPC",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSwift
        ),
        // The background transfer service's own parts (courierd): the journal (SQLite through GRDB; the system's
        // libsqlite3-dev). Not part of the Courier product: a library user builds none of it.
        .target(
            name: "CourierDaemon",
            dependencies: [
                "Courier",
                "CourierConcurrency",
                "CourierIPC",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift
        ),
        // The public library: sessions, tasks, delegates; re-exports the lifecycle. swift-http-types for the
        // `HTTPRequest` / `HTTPResponse` overloads (Session+HTTPTypes.swift); swift-metrics and
        // swift-distributed-tracing for the figures and spans of every task (Observability/).
        .target(
            name: "Courier",
            dependencies: [
                "CSupport",
                "CourierConcurrency",
                "CourierIPC",
                "CourierLifecycle",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: strictSwift
        ),
        // `CourierTransport`: swift-openapi-runtime's `ClientTransport` on a Courier session.
        .target(
            name: "CourierOpenAPI",
            dependencies: [
                "Courier",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            ],
            swiftSettings: strictSwift
        ),
        // The command-line tool. Its folder is not `Sources/courier`: beside `Sources/Courier`, a case-insensitive file
        // system (macOS's default) would merge the two.
        .executableTarget(
            name: "courier",
            dependencies: [
                "Courier",
                "CourierConcurrency",
                "CourierIPC",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/CourierCLI",
            swiftSettings: strictSwift
        ),
        // The per-user background transfer service (docs/ipc.md).
        .executableTarget(
            name: "courierd",
            dependencies: [
                "CourierDaemon",
                "CourierIPC",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSwift
        ),
        // A small program driven by real signals in the lifecycle process tests.
        .executableTarget(
            name: "LifecycleProbe",
            dependencies: ["CourierLifecycle"],
            path: "Tests/Fixtures/LifecycleProbe",
            swiftSettings: strictSwift
        ),
        // An app with a background session, killed and relaunched by courierd in the daemon's end-to-end test.
        .executableTarget(
            name: "BackgroundProbe",
            dependencies: ["Courier", "CourierLifecycle"],
            path: "Tests/Fixtures/BackgroundProbe",
            swiftSettings: strictSwift
        ),
        // A client with a waitsForConnectivity session, run inside a network namespace whose link the connectivity test
        // takes down and up.
        .executableTarget(
            name: "ConnectivityProbe",
            dependencies: ["Courier"],
            path: "Tests/Fixtures/ConnectivityProbe",
            swiftSettings: strictSwift
        ),
        // An app registered for background fetch and pushes, woken, resumed and launched by courierd in the fetch and
        // push end-to-end tests.
        .executableTarget(
            name: "PushProbe",
            dependencies: ["Courier"],
            path: "Tests/Fixtures/PushProbe",
            swiftSettings: strictSwift
        ),
        // The test server's content encoders (gzip, deflate, br, zstd) over the system's libraries.
        .target(
            name: "CTestCompression",
            path: "Tests/CTestCompression",
            linkerSettings: [.linkedLibrary("z"), .linkedLibrary("brotlienc"), .linkedLibrary("zstd")]
        ),
        // The real loopback test server (HTTP/1.1, HTTP/2, TLS with a CA made at test time, faults).
        .target(
            name: "CourierTestSupport",
            dependencies: [
                "CourierConcurrency",
                "CTestCompression",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Tests/CourierTestSupport",
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "CourierTestSupportTests",
            dependencies: ["CourierTestSupport"],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "CourierEngineTests",
            dependencies: ["CSupport", "CourierConcurrency", "CourierTestSupport"],
            swiftSettings: strictSwift
        ),
        // Everything Courier reads from outside, as fuzz targets: replayed by CourierDaemonTests over the committed
        // inputs (Tests/Fuzz), run by libFuzzer through `courier-fuzzer` (below; scripts/fuzz.sh).
        .target(
            name: "CourierFuzzing",
            dependencies: ["Courier", "CourierDaemon", "CourierIPC"],
            path: "Tests/CourierFuzzing",
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "CourierDaemonTests",
            dependencies: [
                "Courier", "CourierDaemon", "CourierFuzzing", "CourierIPC", "CourierTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            exclude: ["Corpus"],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "CourierMachineTests",
            dependencies: ["Courier", "CourierIPC"],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "CourierTests",
            dependencies: [
                "Courier", "CourierConcurrency", "CourierIPC", "CourierTestSupport",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                "CourierOpenAPI",
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: strictSwift
        ),
        .testTarget(
            name: "CourierLifecycleTests",
            dependencies: [
                "CourierConcurrency",
                "CourierLifecycle",
                "CourierTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSwift
        ),
    ]
)

// libFuzzer's driver for the fuzz targets, declared only for scripts/fuzz.sh (COURIER_FUZZ=1), which builds it with
// `-sanitize=fuzzer,address`: libFuzzer brings `main`, so an ordinary build could not link it.
if ProcessInfo.processInfo.environment["COURIER_FUZZ"] != nil {
    package.targets.append(
        .executableTarget(
            name: "courier-fuzzer",
            dependencies: ["CourierFuzzing"],
            path: "Tests/CourierFuzzer",
            swiftSettings: strictSwift + [.unsafeFlags(["-parse-as-library"])]
        )
    )
}
