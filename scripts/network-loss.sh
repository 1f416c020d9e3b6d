#!/usr/bin/env bash
# A network that goes away, at full scale: courierd inside a network namespace of the test's own, its downloads broken
# part-way by the link going down and the route vanishing for 30 s (the test command uses 3 s), and by a proxy that
# delays, throttles, stalls and resets (Tests/CourierDaemonTests/NetworkLossTests.swift); then the in-process engine
# on the same breaks (NetworkFaultTests, ConnectivityTests). Needs root and iproute2.
#
#   bash scripts/network-loss.sh                                   # 30 s outages
#   COURIER_NETWORK_OUTAGE=120 bash scripts/network-loss.sh        # longer
#
# The result is the line `network loss: N scenarios, F files verified, outage S s, B bytes re-fetched through the
# proxy`, after one line per scenario. Exit status: swift test's.
# COURIER_SCRATCH_PATH picks another build folder (see scripts/lib/common.sh).
set -euo pipefail

script_name=network-loss
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$repo_root"

export COURIER_NETWORK_OUTAGE="${COURIER_NETWORK_OUTAGE:-30}"

log "swift build --build-tests"
swift build --build-tests "${scratch_args[@]}"

log "swift test --filter 'NetworkLossTests|NetworkFaultTests|ConnectivityTests' (outages of $COURIER_NETWORK_OUTAGE s)"
swift test --skip-build --filter 'NetworkLossTests|NetworkFaultTests|ConnectivityTests' "${scratch_args[@]}"
