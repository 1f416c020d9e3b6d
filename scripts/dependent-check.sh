#!/usr/bin/env bash
# Proves that Courier can be required as the README says, as a user's package requires it:
#   - clones this repository's committed HEAD into a temporary folder, with no tag (as a clone comes), and resolves
#     a package whose dependencies are the README's, word for word but for the clone's URL (a branch requirement);
#   - tags the clone 0.2.0 as the README says to, and makes a scratch package that depends on it by file:// URL and
#     `from: "0.2.0"` and uses the Courier product;
#   - builds the README's Quick start as it is written (a target of the package) and runs it against a local server
#     (its port in place of 8080): it must save big.iso whole and end;
#   - builds it (SwiftPM refuses a package required by version whose targets use unsafe flags), checks that none
#     of the test-only dependencies (NIO, TLS, certificates) nor courierd's parts (GRDB, CourierDaemon) was built,
#     and runs it: a real download from a local server, compared byte for byte;
#   - builds every app of Examples/ (BackgroundDownloader, PushDownloader, ObjcIOSample, AutobahnClient) as targets
#     of the package, with Examples/Package.swift's settings, as a user who copies them builds them (the test command
#     builds them here only: a build of the Examples package would build Courier once more);
#   - the background case, with Examples/BackgroundDownloader: builds courierd from the dependency (`swift build
#     --product courierd`), starts a background download from the app and SIGKILLs the app; courierd finishes the
#     download and relaunches the app (its executable, without the arguments that started the download), which
#     saves the file and suspends itself; then starts the app by hand while that instance is suspended: it gets the
#     session (courierd reclaims the suspended one) and downloads through it. courierd runs on private directories
#     and is stopped at the end.
# Exit status 0 when all of that holds. Only committed work is checked (the clone has no uncommitted changes).
set -euo pipefail

script_name=dependent-check
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$repo_root"

work="$(mktemp -d "${TMPDIR:-/tmp}/courier-dependent.XXXXXX")"
server_pid=""
courierd_pattern=""
cleanup() {
    stop_file_server
    if [ -n "$courierd_pattern" ]; then
        pkill -TERM -f "$courierd_pattern" 2>/dev/null || true
        pkill -KILL -f "$work/Dependent/.build/.*/BackgroundDownloader" 2>/dev/null || true
        # courierd writes its journal and removes its socket as it stops: gone before its folders go.
        for _ in $(seq 1 100); do
            pgrep -f "$courierd_pattern" >/dev/null || break
            sleep 0.1
        done
        pkill -KILL -f "$courierd_pattern" 2>/dev/null || true
    fi
    rm -rf "$work" 2>/dev/null || { sleep 1 && rm -rf "$work"; } || true
}
trap cleanup EXIT

git clone -q "$repo_root" "$work/Courier"
# The README requires the branch main; the clone's checkout is that branch whatever this one's is called.
git -C "$work/Courier" checkout -q -B main

# The README's dependencies as written, on the tagless clone: they must resolve.
log "the README's dependency lines on a clone without tags"
mkdir -p "$work/AsWritten/Sources/AsWritten"
readme_dependencies="$(awk '/^## Add Courier to your package/ { armed = 1 } armed && /^```swift$/ { inside = 1; next }
    inside && /^```$/ { exit } inside { print }' "$repo_root/README.md")"
if ! grep -q 'branch: "main"' <<<"$readme_dependencies"; then
    echo "dependent-check: the README's dependency lines were not found (or no longer require the branch)" >&2
    exit 1
fi
{
    echo '// swift-tools-version:6.0'
    echo 'import PackageDescription'
    echo 'let package = Package('
    echo '    name: "AsWritten",'
    sed "s|file:///home/you/src/Courier|file://$work/Courier|" <<<"$readme_dependencies"
    echo ')'
} >"$work/AsWritten/Package.swift"
sed -i 's/name: "App"/name: "AsWritten"/' "$work/AsWritten/Package.swift"
echo 'import Courier' >"$work/AsWritten/Sources/AsWritten/main.swift"
swift package --package-path "$work/AsWritten" resolve

# Then as the README says to require a version: tag the clone.
git -C "$work/Courier" tag 0.2.0

mkdir -p "$work/Dependent/Sources/Dependent" "$work/files"
cp -R "$repo_root"/Examples/Sources/* "$work/Dependent/Sources/"
# The apps copied are the Examples package's targets, all of them, and the manifest below names each.
examples="$(swift package --package-path "$repo_root/Examples" dump-package \
    | python3 -c 'import json, sys; print(" ".join(sorted(t["name"] for t in json.load(sys.stdin)["targets"])))')"
if [ "$examples" != "$(cd "$repo_root/Examples/Sources" && echo *)" ]; then
    echo "dependent-check: Examples/Package.swift's targets ($examples) are not Examples/Sources' folders" >&2
    exit 1
fi
cat >"$work/Dependent/Package.swift" <<MANIFEST
// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Dependent",
    dependencies: [
        .package(url: "file://$work/Courier", from: "0.2.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
    ],
    targets: [
        .executableTarget(name: "Dependent", dependencies: [.product(name: "Courier", package: "Courier")]),
        .executableTarget(name: "BackgroundDownloader", dependencies: [.product(name: "Courier", package: "Courier")]),
        .executableTarget(name: "PushDownloader", dependencies: [.product(name: "Courier", package: "Courier")]),
        .executableTarget(
            name: "ObjcIOSample",
            dependencies: [.product(name: "Courier", package: "Courier")],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .executableTarget(name: "AutobahnClient", dependencies: [.product(name: "Courier", package: "Courier")]),
        .executableTarget(
            name: "QuickStart",
            dependencies: [
                .product(name: "Courier", package: "Courier"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
    ]
)
MANIFEST
for example in $examples; do
    if ! grep -q "name: \"$example\"" "$work/Dependent/Package.swift"; then
        echo "dependent-check: the example $example is not a target of the dependent package (add it here)" >&2
        exit 1
    fi
done
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

# The README's Quick start, as it is written: built here, run below.
mkdir -p "$work/Dependent/Sources/QuickStart"
awk '/^## Quick start/ { armed = 1 } armed && /^```swift$/ { inside = 1; next } inside && /^```$/ { exit }
    inside { print }' "$repo_root/README.md" >"$work/Dependent/Sources/QuickStart/main.swift"
if ! grep -q "Session(configuration" "$work/Dependent/Sources/QuickStart/main.swift"; then
    echo "dependent-check: the README's Quick start was not found" >&2
    exit 1
fi

log "swift build of a package that requires Courier 0.2.0 by URL"
swift build --package-path "$work/Dependent"
built="$(swift build --package-path "$work/Dependent" --show-bin-path)"
for module in NIOCore NIOSSL NIOHTTP2 X509 Crypto CourierTestSupport GRDB CourierDaemon CourierOpenAPI OpenAPIRuntime; do
    # SwiftPM makes a folder for every target in the graph (courierd's too, now a product): an object file or a
    # module file is what building it leaves.
    if [ -n "$(find "$built/$module.build" -name '*.o' 2>/dev/null | head -n 1)" ] \
        || [ -e "$built/Modules/$module.swiftmodule" ] || [ -e "$built/$module.swiftmodule" ]; then
        echo "dependent-check: $module (test-only, courierd's or the OpenAPI transport's) was built for a user of the Courier product" >&2
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

# The Quick start, run as a user runs it (its server's port in place of 8080): it saves big.iso and ends.
log "the README's Quick start, run"
head -c 5000000 /dev/urandom >"$work/files/big.iso"
head -c 1000000 /dev/urandom >"$work/files/a.bin"
printf 'hello\n' >"$work/files/hello.txt"
sed -i "s|127.0.0.1:8080|127.0.0.1:$server_port|g" "$work/Dependent/Sources/QuickStart/main.swift"
swift build --package-path "$work/Dependent" --product QuickStart
mkdir -p "$work/quickstart"
quick_status=0
(cd "$work/quickstart" && timeout 60 "$built/QuickStart" >"$work/quickstart.log" 2>&1) || quick_status=$?
if [ "$quick_status" -ne 0 ] || ! cmp -s "$work/files/big.iso" "$work/quickstart/big.iso" \
    || ! grep -q "^saved .*big.iso" "$work/quickstart.log"; then
    echo "dependent-check: the Quick start did not save big.iso whole and end (exit $quick_status):" >&2
    tail -n 20 "$work/quickstart.log" >&2
    exit 1
fi
log "ok: the Quick start saved big.iso ($(grep -c ' bytes$' "$work/quickstart.log") progress lines) and ended"

# --- The background case -----------------------------------------------------------------------------------------
log "swift build --product courierd, in the dependent"
swift build --package-path "$work/Dependent" --product courierd
if [ ! -x "$built/courierd" ]; then
    echo "dependent-check: no courierd beside the dependent's app after swift build --product courierd" >&2
    exit 1
fi
export XDG_RUNTIME_DIR="$work/xdg-run" XDG_STATE_HOME="$work/xdg-state"
out="$work/out"
mkdir -p "$XDG_RUNTIME_DIR" "$out" && chmod 700 "$XDG_RUNTIME_DIR"
courierd_pattern="$built/courierd --runtime-directory $XDG_RUNTIME_DIR/courier"
app_log="$XDG_STATE_HOME/courier/logs/BackgroundDownloader.log"
head -c 3000000 /dev/urandom >"$work/files/episode.bin"
head -c 100000 /dev/urandom >"$work/files/small.bin"

log "a background download from Examples/BackgroundDownloader, which is SIGKILLed a moment later"
"$built/BackgroundDownloader" "http://127.0.0.1:$server_port/episode.bin?rate=1000000" --into "$out" \
    >"$work/app.log" 2>&1 &
app_pid=$!
for _ in $(seq 1 300); do
    grep -q "^task [0-9]*: " "$work/app.log" && break
    sleep 0.1
done
sleep 0.5
kill -KILL "$app_pid" 2>/dev/null || true
wait "$app_pid" 2>/dev/null || true
if ! grep -q "^task [0-9]*: " "$work/app.log"; then
    echo "dependent-check: the app did not start its background download: $(cat "$work/app.log")" >&2
    exit 1
fi

log "courierd finishes it and relaunches the app, which saves the file"
for _ in $(seq 1 600); do
    grep -q "^saved $out/episode.bin" "$app_log" 2>/dev/null && break
    sleep 0.1
done
if ! cmp -s "$work/files/episode.bin" "$out/episode.bin"; then
    echo "dependent-check: the relaunched app did not save the file whole: $(cat "$app_log" 2>&1)" >&2
    ls -la "$out" >&2
    exit 1
fi
relaunched="$(sed -n 's/^relaunched for .* (pid \([0-9]*\))$/\1/p' "$app_log" | tail -1)"
stopped=""
for _ in $(seq 1 200); do
    if [ -n "$relaunched" ] && [ "$(awk '{print $3}' "/proc/$relaunched/stat" 2>/dev/null)" = "T" ]; then
        stopped=yes
        break
    fi
    sleep 0.1
done
if [ -z "$stopped" ]; then
    echo "dependent-check: the relaunched app ($relaunched) did not suspend itself after its events" >&2
    exit 1
fi

log "the user starts the app while the relaunched one is suspended: it gets the session"
check_status=0
timeout 60 "$built/BackgroundDownloader" "http://127.0.0.1:$server_port/small.bin" --into "$out" \
    >"$work/check.log" 2>&1 || check_status=$?
if [ "$check_status" -ne 0 ] || ! cmp -s "$work/files/small.bin" "$out/small.bin"; then
    echo "dependent-check: the second instance did not get the session (exit $check_status): $(cat "$work/check.log")" >&2
    exit 1
fi
if [ -e "/proc/$relaunched" ] && [ "$(awk '{print $3}' "/proc/$relaunched/stat" 2>/dev/null)" != "Z" ]; then
    echo "dependent-check: the suspended instance $relaunched was not reclaimed" >&2
    exit 1
fi
pkill -TERM -f "$courierd_pattern" 2>/dev/null || true
log "ok: courierd built from the dependency; a download outlived its app's SIGKILL, reached the relaunched app, and a new instance took the session from the suspended one"

