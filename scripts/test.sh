#!/usr/bin/env bash
# The test command: install what is missing, build everything with the tests, run the Swift test suite
# (unit, integration, fault-injection, process and stress tests, one test at a time with
# `swift test --no-parallel`), then the command-line tests of the built `courier` binary (scripts/cli-test.sh).
#
# Both parts always run; the exit status is non-zero if either failed.
# COURIER_SCRATCH_PATH picks another build folder (see scripts/lib/common.sh).
set -euo pipefail

script_name=test
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$repo_root"

bash scripts/bootstrap.sh

log "swift build --build-tests"
swift build --build-tests "${scratch_args[@]}"

status=0
# One test at a time: Foundation's Process.run (findMaximumOpenFromProcSelfFD) reads past its buffer when
# the process has over ~1,300 descriptors open, and crashes. The stress and many-connection tests hold that
# many while, in a parallel run, other tests start curl or the lifecycle probe. Serial, the suite takes ~45 s.
log "swift test --no-parallel"
swift test --skip-build --no-parallel "${scratch_args[@]}" || status=$?
if [ "$status" -ne 0 ]; then
    log "swift test failed (exit status $status)" >&2
fi

cli_status=0
bash scripts/cli-test.sh || cli_status=$?
if [ "$cli_status" -ne 0 ]; then
    log "CLI tests failed (exit status $cli_status)" >&2
    status=$cli_status
fi
exit "$status"
