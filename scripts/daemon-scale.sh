#!/usr/bin/env bash
# courierd at scale, by hand: 100,000 tasks journaled in one background session (enqueue rate, courierd's resident
# memory and journal, `courier tasks`, restart to serving), then 100,000 downloads of 1 KiB through courierd with its
# memory, write-ahead log and journal sampled every 10 s (Tests/CourierDaemonTests/DaemonScaleTests.swift;
# docs/reliability.md). The test command runs 2,000 of each, sampled four times a second. About 15 minutes here.
#
#   bash scripts/daemon-scale.sh
#   COURIER_SCALE_TASKS=20000 COURIER_SCALE_TRANSFERS=20000 COURIER_SCALE_SAMPLE=5 bash scripts/daemon-scale.sh
#
# Prints `daemon scale:` lines with the figures and one `daemon scale sample:` line per sample. Exit status: swift
# test's. COURIER_SCRATCH_PATH picks another build folder (see scripts/lib/common.sh).
set -euo pipefail

script_name=daemon-scale
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$repo_root"

export COURIER_SCALE_TASKS="${COURIER_SCALE_TASKS:-100000}"
export COURIER_SCALE_TRANSFERS="${COURIER_SCALE_TRANSFERS:-100000}"
export COURIER_SCALE_SAMPLE="${COURIER_SCALE_SAMPLE:-10}"

log "swift build --build-tests"
swift build --build-tests "${scratch_args[@]}"

log "swift test --filter DaemonScale ($COURIER_SCALE_TASKS tasks, $COURIER_SCALE_TRANSFERS transfers)"
swift test --skip-build --filter DaemonScale "${scratch_args[@]}"
