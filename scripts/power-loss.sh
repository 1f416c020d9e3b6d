#!/usr/bin/env bash
# Power loss at every durable step, at full scale: courierd's workload recorded through Tests/Interposers/courier_io.c,
# then courierd started on what a power cut leaves at every point of the trace (every distinct state, the tasks run to
# their end on each) and on what a process kill leaves at every point (Tests/CourierDaemonTests/PowerLossTests.swift;
# docs/reliability.md). The test command runs the same test with every 25th kill state and every third power-cut state
# run to the end.
#
#   bash scripts/power-loss.sh                                   # every point (about 5 minutes)
#   COURIER_POWER_LOSS_VERBOSE=1 bash scripts/power-loss.sh      # also print the recorded calls and markers
#
# The result is the line `power loss: N calls recorded, P distinct power-cut states explored (covering all N points),
# K process-kill states (every 1), V violations`. Exit status: swift test's.
# COURIER_SCRATCH_PATH picks another build folder (see scripts/lib/common.sh).
set -euo pipefail

script_name=power-loss
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$repo_root"

export COURIER_POWER_LOSS_KILL_STRIDE="${COURIER_POWER_LOSS_KILL_STRIDE:-1}"
export COURIER_POWER_LOSS_FINISH_STRIDE="${COURIER_POWER_LOSS_FINISH_STRIDE:-1}"

log "swift build --build-tests"
swift build --build-tests "${scratch_args[@]}"

log "swift test --filter PowerLoss (kill states every $COURIER_POWER_LOSS_KILL_STRIDE, power-cut states run to the end every $COURIER_POWER_LOSS_FINISH_STRIDE)"
swift test --skip-build --filter PowerLoss "${scratch_args[@]}"
