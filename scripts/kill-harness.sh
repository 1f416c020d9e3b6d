#!/usr/bin/env bash
# The kill harness at full scale: courierd SIGKILLed at random instants (a pause of 50-600 ms after each restart)
# during 1,000 background downloads (small, large and trickled, some through a server that cuts the body), restarted,
# the session reopened, 200 times; then every task must have completed exactly once without error, every file must
# be what the test server serves, and every journaled event must have been delivered
# (Tests/CourierDaemonTests/KillHarnessTests.swift). The test command runs the same test at 40 transfers and 8 kills.
#
#   bash scripts/kill-harness.sh                      # 1,000 transfers, 200 kills (several minutes)
#   COURIER_KILL_HARNESS_TRANSFERS=500 COURIER_KILL_HARNESS_KILLS=100 bash scripts/kill-harness.sh
#   COURIER_KILL_HARNESS_SEED=1234 bash scripts/kill-harness.sh       # replay a plan (sizes, cuts, pauses)
#   COURIER_KILL_HARNESS_VERBOSE=1 bash scripts/kill-harness.sh       # also print each task's HTTP exchanges
#
# The result is the line `kill harness: T transfers, K kills, L lost, C corrupt, D duplicate completions, median
# re-fetched per kill X bytes`, then a `kill harness detail:` line (bytes re-fetched are measured on the wire by a
# counting proxy in front of the test server). courierd's log goes to standard error. Exit status: swift test's.
# COURIER_SCRATCH_PATH picks another build folder (see scripts/lib/common.sh).
set -euo pipefail

script_name=kill-harness
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$repo_root"

export COURIER_KILL_HARNESS_TRANSFERS="${COURIER_KILL_HARNESS_TRANSFERS:-1000}"
export COURIER_KILL_HARNESS_KILLS="${COURIER_KILL_HARNESS_KILLS:-200}"

log "swift build --build-tests"
swift build --build-tests "${scratch_args[@]}"

log "swift test --filter KillHarness ($COURIER_KILL_HARNESS_TRANSFERS transfers, $COURIER_KILL_HARNESS_KILLS kills)"
swift test --skip-build --filter KillHarness "${scratch_args[@]}"
