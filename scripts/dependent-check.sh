#!/usr/bin/env bash
# Proves that Courier can be required by version, as a user's package requires it:
#   - clones this repository's committed HEAD into a temporary folder and tags it 1.0.0;
#   - makes a scratch package that depends on it by file:// URL and `from: "1.0.0"` and uses the Courier product;
#   - builds it (SwiftPM refuses a package required by version whose targets use unsafe flags), checks that none
#     of the test-only dependencies (NIO, TLS, certificates) nor courierd's parts (GRDB, CourierDaemon) was built,
#     and runs it: a real download from a local server, compared byte for byte.
# Exit status 0 when all of that holds. Only committed work is checked (the clone has no uncommitted changes).
set -euo pipefail

script_name=dependent-check
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$repo_root"

work="$(mktemp -d "${TMPDIR:-/tmp}/courier-dependent.XXXXXX")"
server_pid=""
cleanup() {
    stop_file_server
    rm -rf "$work"
}
trap cleanup EXIT

git clone -q "$repo_root" "$work/Courier"
git -C "$work/Courier" tag 1.0.0

mkdir -p "$work/Dependent/Sources/Dependent" "$work/files"
cat >"$work/Dependent/Package.swift" <<MANIFEST
// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Dependent",
    dependencies: [.package(url: "file://$work/Courier", from: "1.0.0")],
    targets: [
        .executableTarget(name: "Dependent", dependencies: [.product(name: "Courier", package: "Courier")])
    ]
)
MANIFEST
cat >"$work/Dependent/Sources/Dependent/main.swift" <<'SOURCE'
import Courier
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// Downloads the URL given as the first argument into the path given as the second.
let source = URL(string: CommandLine.arguments[1])!
let destination = URL(fileURLWithPath: CommandLine.arguments[2])
let session = Session(configuration: .ephemeral)
let (file, response) = try await session.download(for: URLRequest(url: source))
guard let status = (response as? HTTPURLResponse)?.statusCode, status == 200 else {
    fatalError("unexpected response \(response)")
}
try FileManager.default.moveItem(at: file, to: destination)
session.finishTasksAndInvalidate()
SOURCE

log "swift build of a package that requires Courier 1.0.0 by URL"
swift build --package-path "$work/Dependent"
built="$(swift build --package-path "$work/Dependent" --show-bin-path)"
for module in NIOCore NIOSSL NIOHTTP2 X509 Crypto CourierTestSupport GRDB CourierDaemon; do
    if [ -e "$built/$module.build" ] || [ -e "$built/Modules/$module.swiftmodule" ]; then
        echo "dependent-check: $module (test-only, or courierd's) was built for a user of the Courier product" >&2
        exit 1
    fi
done

head -c 3000000 /dev/urandom >"$work/files/payload.bin"
start_file_server "$work/files" "$work/requests.log" || exit 1
"$built/Dependent" "http://127.0.0.1:$server_port/payload.bin" "$work/received.bin"
if ! cmp -s "$work/files/payload.bin" "$work/received.bin"; then
    echo "dependent-check: the downloaded file differs from the served one" >&2
    exit 1
fi
log "ok: built as a versioned dependency, no test-only or courierd module built, a 3 MB download intact"
