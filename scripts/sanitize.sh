#!/usr/bin/env bash
# Runs the Swift test suite under a sanitizer, in a build folder of its own, then the CLI tests against the
# sanitized `courier` binary:
#   bash scripts/sanitize.sh address   # ASan (with LeakSanitizer), build folder .build-asan
#   bash scripts/sanitize.sh thread    # TSan, build folder .build-tsan
# Extra arguments go to `swift test` (e.g. --filter ResumeTests). ASAN_OPTIONS / TSAN_OPTIONS are passed through.
set -euo pipefail

script_name=sanitize
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$repo_root"

case "${1:-}" in
address) scratch=.build-asan ;;
thread) scratch=.build-tsan ;;
*)
    echo "usage: bash scripts/sanitize.sh address|thread [swift test arguments...]" >&2
    exit 64
    ;;
esac
sanitizer="$1"
shift

# The test-only tools: a private bus, its monitor and gdbus (courierd's desktop notifications), and python3-jeepney
# for the NetworkManager stand-in on it (metered networks).
bash scripts/bootstrap.sh dbus-daemon dbus-bin libglib2.0-bin python3-jeepney

# Leaks of the toolchain's XCTest runner only; every leak in Courier's code still fails the run.
export LSAN_OPTIONS="suppressions=$repo_root/scripts/lsan-suppressions.txt${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

log "swift test --sanitize=$sanitizer --scratch-path $scratch"
status=0
# Serial: the suite under a sanitizer has been measured one test at a time only (the test command runs it in
# parallel without one).
swift test --sanitize="$sanitizer" --scratch-path "$scratch" --no-parallel "$@" || status=$?

log "CLI tests with the $sanitizer-sanitized courier"
swift build --product courier --sanitize="$sanitizer" --scratch-path "$scratch"
cli_status=0
COURIER_BIN="$(swift build --show-bin-path --scratch-path "$scratch")/courier" bash scripts/cli-test.sh || cli_status=$?
if [ "$status" -eq 0 ]; then
    status=$cli_status
fi
exit "$status"
