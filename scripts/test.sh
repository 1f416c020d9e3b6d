#!/usr/bin/env bash
# The test command: install what is missing, check the engine's C sources (warnings; CSupport/tests/run.sh: symbols,
# smoke under the sanitizers, allocation-failure torture), build everything with the tests, run the Swift test suite
# (unit, integration, fault-injection, process and stress tests, in parallel, as plain `swift test` runs them), the
# session tests again over the serialised backend and over HTTPS with HTTP/2, then the command-line
# tests of the built `courier` binary (scripts/cli-test.sh),
# then the install step on a clean prefix (scripts/install.sh), then the README's dependency lines and a scratch
# package that requires Courier by version, builds the examples and runs the Quick start (scripts/dependent-check.sh),
# the API reference (scripts/docs.sh), then each fuzz target for 30 s (scripts/fuzz.sh),
# then the microbenchmarks' allocation thresholds (Benchmarks/Thresholds: a hot path that allocates more than
# committed fails; allocation counts, not times, so a loaded machine does not change them), then the comparison
# harness once at 2 % scale (Benchmarks/run.sh: Courier's clients, the floor, URLSession and curl against nginx,
# every transfer checked; its figures are not looked at).
#
# All parts always run; the exit status is non-zero if any failed.
# COURIER_SCRATCH_PATH picks another build folder (see scripts/lib/common.sh).
set -euo pipefail

script_name=test
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$repo_root"

# The test-only tools: a private bus, its monitor and gdbus (courierd's desktop notifications), and python3-jeepney
# for the NetworkManager stand-in on it (metered networks).
bash scripts/bootstrap.sh dbus-daemon dbus-bin libglib2.0-bin python3-jeepney openssl curl

# Nothing the tests run may reach the user's courierd or its files: the runtime and state directories of the whole
# run (tests, CLI tests, the dependent package) are private ones, removed at the end. The tests' own harness also
# points every app it starts at directories of its own.
private_home="$(mktemp -d "${TMPDIR:-/tmp}/courier-test-home.XXXXXX")"
export XDG_RUNTIME_DIR="$private_home/run" XDG_STATE_HOME="$private_home/state"
mkdir -m 0700 -p "$XDG_RUNTIME_DIR" "$XDG_STATE_HOME"
trap 'rm -rf "$private_home"' EXIT

# fail MESSAGE: a part failed. Said now and again at the end, where a log cut to its last lines still shows it.
failures="$private_home/failures"
fail() {
    log "$*" >&2
    printf '%s\n' "$*" >>"$failures"
}

# part NAME: a part of the run starts (and the one before it ends); the time each took is listed at the end.
timings="$private_home/timings"
part_name="" part_started=$SECONDS
part() {
    if [ -n "$part_name" ]; then
        printf '%6d s  %s\n' $((SECONDS - part_started)) "$part_name" >>"$timings"
    fi
    part_name="$*" part_started=$SECONDS
    [ -z "$part_name" ] || log "$part_name"
}

# swift_tests NAME [ARGUMENTS...]: `swift test --skip-build ARGUMENTS`, its failing tests' lines kept for the end.
swift_tests() {
    local name="$1" output="$private_home/swift-test.log" result=0
    shift
    swift test --skip-build "${scratch_args[@]}" "$@" 2>&1 | tee "$output" || result=$?
    if [ "$result" -ne 0 ]; then
        fail "$name failed (exit status $result)"
        grep -a -E '✘|error: |Fatal error|signal code' "$output" | head -40 | sed 's/^/    /' >>"$failures" || true
    fi
    return "$result"
}

# The engine's C sources with every warning an error. Package.swift carries no warning flags: SwiftPM refuses
# unsafe flags in a package that another requires by version (scripts/dependent-check.sh).
part "C warnings (clang -Wall -Wextra -Werror)"
clang -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Werror -fsyntax-only -ICSupport/include CSupport/src/*.c

status=0
# The engine alone, in C (about 50 s): exported symbols, the smoke check plain and under ASan+UBSan and TSan, the
# state trace, and every engine allocation of a workload made to fail in turn under ASan (docs/engine.md).
part "engine C checks (CSupport/tests/run.sh)"
c_status=0
bash CSupport/tests/run.sh || c_status=$?
if [ "$c_status" -ne 0 ]; then
    fail "engine C checks failed (exit status $c_status)"
    status=$c_status
fi

part "swift build --build-tests"
swift build --build-tests "${scratch_args[@]}"

# In parallel, as every Swift developer runs it (about 30 s here; serial took about 100 s). Suites whose tests block
# their thread while they wait run off the cooperative pool (`.blockingWaits`,
# Tests/CourierTestSupport/BlockingWaits.swift), so that they cannot starve the others. At most four tests per core at
# once (swift-testing's width): unbounded, every test starts at once, and on a two-core machine a few hundred sessions,
# servers and daemons (700 threads) left a test's own task unscheduled for tens of seconds, so tests that act
# mid-transfer failed one by one in CI runs. Measured on two cores, the whole suite: unbounded 148-165 s, four
# per core 151 s, three per core 174 s.
width="${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-$((4 * $(nproc)))}"
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH="$width"
part "swift test"
swift_tests "swift test" || status=$?

# The test that counts the whole process's threads and descriptors, in a process of its own (other suites running at
# once move both by tens).
part "swift test --filter noLeaks, alone"
COURIER_TEST_PROCESS_CENSUS=1 swift_tests "the process census" --filter noLeaks || status=$?
# The stress tests' memory bounds (the process's RSS) likewise, one test at a time in a process of their own.
part "swift test --filter StressTests, alone"
COURIER_TEST_PROCESS_CENSUS=1 swift_tests "the stress tests' memory" --filter StressTests || status=$?

# The session and task tests once more, written once and run against another backend: every spec, decision and event
# crosses the backend seam through its encoding, as it will to courierd (docs/task-machine.md; about 15 s).
part "swift test --filter CourierTests, serialised backend"
COURIER_TRANSFER_BACKEND=serialised swift_tests "the session tests over the serialised backend" --filter CourierTests \
    || status=$?

# The session and task tests once more over HTTPS with HTTP/2: every test server a test starts plain serves TLS with
# ALPN h2 instead, signed by one test CA the sessions trust (TestProtocol, docs/test-server.md; about 40 s).
part "swift test --filter CourierTests, HTTP/2"
COURIER_TEST_PROTOCOL=h2 swift_tests "the session tests over HTTP/2" --filter CourierTests || status=$?

part "command-line tests (scripts/cli-test.sh)"
cli_status=0
bash scripts/cli-test.sh || cli_status=$?
if [ "$cli_status" -ne 0 ]; then
    fail "CLI tests failed (exit status $cli_status)"
    status=$cli_status
fi

# The install step on a clean prefix (the debug build the tests used, so no second build): both binaries, the man
# page and the three shells' completions, and the installed courier runs.
part "scripts/install.sh on a clean prefix"
install_status=0
install_prefix="$(mktemp -d "${TMPDIR:-/tmp}/courier-prefix.XXXXXX")"
bash scripts/install.sh --debug --prefix "$install_prefix" >"$install_prefix.log" 2>&1 || install_status=$?
for file in bin/courier bin/courierd share/man/man1/courier.1 share/bash-completion/completions/courier \
    share/zsh/site-functions/_courier share/fish/vendor_completions.d/courier.fish; do
    [ -s "$install_prefix/$file" ] || { echo "missing: $file" >>"$install_prefix.log"; install_status=1; }
done
installed="$install_prefix/bin"
completion="$install_prefix/share/bash-completion/completions/courier"
if [ "$install_status" -eq 0 ] && { [ "$("$installed/courier" --version)" != "$("$installed/courierd" --version)" ] \
    || ! grep -q "^.SH COURIER DAEMON INSTALL" "$install_prefix/share/man/man1/courier.1" \
    || ! bash -c "source '$completion' && complete -p courier" >/dev/null; }; then
    install_status=1
fi
if [ "$install_status" -ne 0 ]; then
    fail "the install step failed:"
    cat "$install_prefix.log" >&2
    status=1
fi
rm -rf "$install_prefix" "$install_prefix.log"

# A scratch package that requires Courier by the README's dependency lines (a tagless clone by branch; a tagged one
# by version) builds, builds no test-only module, runs the Quick start, and downloads with it (about 80 s).
part "dependent package (scripts/dependent-check.sh)"
dependent_status=0
bash scripts/dependent-check.sh || dependent_status=$?
if [ "$dependent_status" -ne 0 ]; then
    fail "dependent-package check failed (exit status $dependent_status)"
    status=$dependent_status
fi

# The API reference (DocC, warnings as errors).
part "API reference (scripts/docs.sh)"
docs_status=0
bash scripts/docs.sh || docs_status=$?
if [ "$docs_status" -ne 0 ]; then
    fail "the API reference failed to build (exit status $docs_status)"
    status=$docs_status
fi

# Coverage-guided fuzzing of everything Courier reads from outside, 30 s per target, two at a time (about 3 minutes
# with the fuzzer's build; scripts/fuzz.sh, docs/reliability.md). An input that crashes lands in Tests/Fuzz/Crashes.
part "fuzzing (scripts/fuzz.sh)"
fuzz_status=0
bash scripts/fuzz.sh 30 | tee "$private_home/fuzz.out" || fuzz_status=${PIPESTATUS[0]}
if [ "$fuzz_status" -ne 0 ]; then
    fail "fuzzing found a crash (exit status $fuzz_status; see Tests/Fuzz/Crashes)"
    grep '^fuzz: FAILED' "$private_home/fuzz.out" | while IFS= read -r line; do fail "  $line"; done
    status=$fuzz_status
fi

# package-benchmark reads Thresholds/ relative to the working directory. Its plugin builds the microbenchmarks in
# release mode in Benchmarks/.build (about 3.5 minutes from a clean clone). It fails when a count is more than 5 %
# over its threshold ("WORSE"), and also when more than 5 % under ("BETTER"): then commit the lower thresholds
# (Benchmarks/README.md).
part "microbenchmark allocation thresholds"
alloc_status=0
(cd Benchmarks && swift package --disable-sandbox benchmark thresholds check --metric mallocCountTotal) \
    || alloc_status=$?
if [ "$alloc_status" -ne 0 ]; then
    fail "allocation thresholds failed (exit status $alloc_status; see Benchmarks/README.md)"
    status=$alloc_status
fi

# The one-command comparison, end to end: installs nginx and curl, builds the harness and the Swift clients it runs
# in release mode, and fails when any client's transfer fails its check.
part "comparison harness at 2 % scale"
harness_status=0
# Left out here, run by `bash Benchmarks/run.sh`: courier-bg (W4 through courierd: a release build of courierd and
# GRDB), AsyncHTTPClient (a release build of NIO and BoringSSL: 404 s of a 27-minute clean-clone run that had
# other builds beside it, 2026-11-24; without it the run took 16 minutes) and W3 (one 1 GiB download per client at any scale, and its fixture written first; W4 checks
# downloads to disk). W7 holds its 200 transfers (at this scale) open about 20 s per client whatever the scale:
# Courier's two APIs and the floor, about a minute. The CI limit is 20 minutes from a clean clone.
bash Benchmarks/run.sh --scale 0.02 --runs 1 --disk-runs 1 --skip-queued --workloads W1,W2,W2-300,W4,W5,W7 \
    --peers courier,courier-ht,urlsession,curl,floor || harness_status=$?
if [ "$harness_status" -ne 0 ]; then
    fail "comparison harness failed (exit status $harness_status; see Benchmarks/README.md)"
    status=$harness_status
fi

# A client that hangs is killed at its run's deadline and fails the run, never waited on: the real clients, but
# bench-courier replaced by one that sleeps.
part "comparison harness: a hung client is killed at its deadline"
bench_bin="$(swift build -c release --package-path Benchmarks --show-bin-path)"
hung="$(mktemp -d)"
for client in "$bench_bin"/bench-*; do
    ln -s "$client" "$hung/"
done
rm "$hung/bench-courier"
printf '#!/bin/sh\nexec sleep 600\n' >"$hung/bench-courier"
chmod +x "$hung/bench-courier"
started=$SECONDS
hung_status=0
timeout 120 "$bench_bin/courier-bench" --clients "$hung" --peers courier --workloads W1 --scale 0.02 --runs 1 \
    --skip-queued --run-deadline 3 >"$hung/out.txt" 2>&1 || hung_status=$?
if [ "$hung_status" -ne 1 ] || ! grep -q "did not finish within 3" "$hung/out.txt" || [ $((SECONDS - started)) -gt 60 ]; then
    fail "the hung client was not killed at its deadline (exit status $hung_status after $((SECONDS - started)) s):"
    cat "$hung/out.txt" >&2
    status=1
fi
rm -rf "$hung"

# The test command leaves nothing running: a courierd, probe app or test runner still alive now was left behind by a
# test (they are killed, and the run fails).
left="$(processes_left_behind)"
if [ -n "$left" ]; then
    fail "processes left running by the tests:"
    for pid in $left; do
        fail "  $pid $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
        kill -KILL "$pid" 2>/dev/null || true
    done
    status=1
fi
part ""
log "time per part:"
cat "$timings"
if [ -s "$failures" ]; then
    log "what failed:" >&2
    sed 's/^/  /' "$failures" >&2
fi
exit "$status"
