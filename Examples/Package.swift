// swift-tools-version:6.0
import PackageDescription

// Two complete apps of Courier's background model, to run and to copy (the repository README, "Background
// transfers"). They use Courier as a user's package does, through the `Courier` product; here it is this repository
// (`..`), where a package of your own names it by URL and version.
let package = Package(
    name: "CourierExamples",
    dependencies: [
        .package(name: "Courier", path: "..")
    ],
    targets: [
        .executableTarget(
            name: "BackgroundDownloader",
            dependencies: [.product(name: "Courier", package: "Courier")]
        ),
        .executableTarget(
            name: "PushDownloader",
            dependencies: [.product(name: "Courier", package: "Courier")]
        ),
        // objc.io's iOS 7 sample, ported by renaming types only; Swift 5 mode, as the iOS code it stands for.
        .executableTarget(
            name: "ObjcIOSample",
            dependencies: [.product(name: "Courier", package: "Courier")],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        // Courier's WebSocket client under the Autobahn|Testsuite fuzzing server (scripts/autobahn.sh).
        .executableTarget(
            name: "AutobahnClient",
            dependencies: [.product(name: "Courier", package: "Courier")]
        ),
    ]
)
