#!/usr/bin/env bash
# Runs the whole comparison and prints the table (Benchmarks/README.md explains the figures).
#   bash Benchmarks/run.sh                 # every workload, every client, 3 runs each (about 20 minutes after the build)
#   bash Benchmarks/run.sh --workloads W4 --peers courier,courier-bg   # background session against in-process
#   bash Benchmarks/run.sh --runs 5 --workloads W1,W3
#   bash Benchmarks/run.sh --scale 0.05    # a quick check that every client and workload works
# Installs what it needs (the engine's packages, nginx and the curl command line), builds the harness in release
# mode, and passes its arguments to courier-bench (see `courier-bench --help`).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

bash "$here/../scripts/bootstrap.sh" nginx curl openssl
# The clients --peers selects (all of them without it): each is a release build, and AsyncHTTPClient's alone (NIO,
# NIOSSL's BoringSSL) takes longer than the rest together on a clean checkout.
peers="courier,courier-ht,courier-bg,urlsession,ahc,curl,floor,c"
previous=""
for argument in "$@"; do
    if [ "$previous" = "--peers" ]; then
        peers="$argument"
    fi
    case "$argument" in --peers=*) peers="${argument#--peers=}" ;; esac
    previous="$argument"
done
products="bench-launch courier-bench"
for peer in ${peers//,/ }; do
    case "$peer" in
        courier) products="$products bench-courier" ;;
        courier-ht) products="$products bench-courier-ht" ;;
        courier-bg) products="$products bench-courier-bg" ;;
        urlsession) products="$products bench-urlsession" ;;
        ahc) products="$products bench-ahc" ;;
        floor) products="$products bench-floor" ;;
        c) products="$products bench-c" ;;
    esac
done
for product in $products; do
    swift build -c release --package-path "$here" --product "$product"
done
# courierd, for the background-session client (bench-courier-bg, W4): an executable of the root package, which
# this package cannot depend on as a product. A COURIERD already set is used as it is.
if [ -z "${COURIERD:-}" ] && [[ ",$peers," == *",courier-bg,"* ]]; then
    swift build -c release --package-path "$here/.." --product courierd
    COURIERD="$(swift build -c release --package-path "$here/.." --show-bin-path)/courierd"
    export COURIERD
fi
bin="$(swift build -c release --package-path "$here" --show-bin-path)"
exec "$bin/courier-bench" --clients "$bin" "$@"
