#!/usr/bin/env bash
# Runs the whole comparison and prints the table (Benchmarks/README.md explains the figures).
#   bash Benchmarks/run.sh                 # every workload, every client, 3 runs each (about 8 minutes after the build)
#   bash Benchmarks/run.sh --workloads W4 --peers courier,courier-bg   # background session against in-process
#   bash Benchmarks/run.sh --runs 5 --workloads W1,W3
#   bash Benchmarks/run.sh --scale 0.05    # a quick check that every client and workload works
# Installs what it needs (the engine's packages, nginx and the curl command line), builds the harness in release
# mode, and passes its arguments to courier-bench (see `courier-bench --help`).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

bash "$here/../scripts/bootstrap.sh" nginx curl
for product in bench-launch bench-courier bench-courier-ht bench-courier-bg bench-urlsession bench-ahc bench-floor courier-bench; do
    swift build -c release --package-path "$here" --product "$product"
done
# courierd, for the background-session client (bench-courier-bg, W4): an executable of the root package, which
# this package cannot depend on as a product. A COURIERD already set is used as it is.
# Not built when --peers leaves courier-bg out (the test command's quick check does, to save a release build).
peers="courier-bg"
previous=""
for argument in "$@"; do
    if [ "$previous" = "--peers" ]; then
        peers="$argument"
    fi
    case "$argument" in --peers=*) peers="${argument#--peers=}" ;; esac
    previous="$argument"
done
if [ -z "${COURIERD:-}" ] && [[ ",$peers," == *",courier-bg,"* ]]; then
    swift build -c release --package-path "$here/.." --product courierd
    COURIERD="$(swift build -c release --package-path "$here/.." --show-bin-path)/courierd"
    export COURIERD
fi
bin="$(swift build -c release --package-path "$here" --show-bin-path)"
exec "$bin/courier-bench" --clients "$bin" "$@"
