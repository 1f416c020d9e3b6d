#!/usr/bin/env bash
# Coverage-guided fuzzing of everything Courier reads from outside (Tests/CourierFuzzing/FuzzTarget.swift;
# docs/reliability.md): libFuzzer through Swift's `-sanitize=fuzzer,address`, one run per target, two at a time.
#
#   bash scripts/fuzz.sh                       # every target for 30 s (the test command)
#   bash scripts/fuzz.sh 3600                  # every target for an hour
#   bash scripts/fuzz.sh 600 ipc-frames        # one target
#   COURIER_FUZZ_KEEP=1 bash scripts/fuzz.sh 3600   # also merge what reached new coverage into Tests/Fuzz/Corpus
#
# Each run starts from the committed corpus (Tests/Fuzz/Corpus/TARGET), the target's seeds and the inputs that once
# crashed (Tests/Fuzz/Crashes/TARGET). An input that crashes is copied to Tests/Fuzz/Crashes/TARGET (commit it with
# its fix: the test suite replays it) and fails the run. Prints one line per target:
# `fuzz: TARGET: N executions in S s (R/s), coverage C edges, F features, corpus K, crashes X`.
# The fuzzer build goes to .build/fuzz (COURIER_SCRATCH_PATH: <path>-fuzz).
set -euo pipefail

script_name=fuzz
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$repo_root"

seconds="${1:-30}"
shift || true
targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
    targets=(ipc-frames push-payload push-request resume-data content-disposition response-head journal-record
        engine-response)
fi
scratch="${COURIER_SCRATCH_PATH:+$COURIER_SCRATCH_PATH-fuzz}"
scratch="${scratch:-$repo_root/.build/fuzz}"

log "building courier-fuzzer (-sanitize=fuzzer,address) in $scratch"
export COURIER_FUZZ=1
# The engine's C sources too (-Xcc): coverage for the engine-response target, and ASan on what it does.
swift build --scratch-path "$scratch" --product courier-fuzzer -Xswiftc -sanitize=fuzzer,address \
    -Xcc -fsanitize=fuzzer-no-link,address
fuzzer="$(swift build --scratch-path "$scratch" --show-bin-path)/courier-fuzzer"

work="$(mktemp -d "${TMPDIR:-/tmp}/courier-fuzz.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# fuzz_one TARGET: one libFuzzer run; its summary line in $work/TARGET.summary, its status in $work/TARGET.status.
fuzz_one() {
    local target="$1" dir="$work/$1"
    mkdir -p "$dir/corpus" "$dir/seeds" "$dir/crashes"
    cp Tests/Fuzz/Corpus/"$target"/* "$dir/corpus/" 2>/dev/null || true
    cp Tests/Fuzz/Crashes/"$target"/* "$dir/seeds/" 2>/dev/null || true
    if [ "$target" = ipc-frames ]; then
        cp Tests/CourierDaemonTests/Corpus/*.bin "$dir/seeds/"
    fi
    # Leaks are LeakSanitizer's in the suite (scripts/sanitize.sh address); here the Swift runtime's caches would
    # count as leaks of the first input.
    export ASAN_OPTIONS=detect_leaks=0
    COURIER_FUZZ_TARGET="$target" COURIER_FUZZ_WRITE_SEEDS="$dir/seeds" "$fuzzer" >/dev/null 2>&1 || true
    local status=0
    COURIER_FUZZ_TARGET="$target" "$fuzzer" -max_total_time="$seconds" \
        -print_final_stats=1 -timeout=10 -rss_limit_mb=3072 -artifact_prefix="$dir/crashes/" \
        "$dir/corpus" "$dir/seeds" >"$dir/log" 2>&1 || status=$?
    local executions coverage features corpus crashes
    executions="$(grep -o 'stat::number_of_executed_units: [0-9]*' "$dir/log" | tail -1 | grep -o '[0-9]*$' || echo 0)"
    coverage="$(grep -o 'cov: [0-9]*' "$dir/log" | tail -1 | grep -o '[0-9]*$' || echo 0)"
    features="$(grep -o 'ft: [0-9]*' "$dir/log" | tail -1 | grep -o '[0-9]*$' || echo 0)"
    corpus="$(find "$dir/corpus" -type f | wc -l)"
    crashes="$(find "$dir/crashes" -type f | wc -l)"
    if [ "$crashes" -gt 0 ]; then
        mkdir -p "Tests/Fuzz/Crashes/$target"
        cp "$dir"/crashes/* "Tests/Fuzz/Crashes/$target/"
        status=1
    fi
    if [ "${COURIER_FUZZ_KEEP:-}" = 1 ] && [ "$status" -eq 0 ]; then
        mkdir -p "Tests/Fuzz/Corpus/$target"
        COURIER_FUZZ_TARGET="$target" "$fuzzer" -merge=1 \
            "Tests/Fuzz/Corpus/$target" "$dir/corpus" >>"$dir/log" 2>&1 || true
    fi
    echo "fuzz: $target: $executions executions in $seconds s ($((executions / seconds))/s), coverage $coverage" \
        "edges, $features features, corpus $corpus, crashes $crashes" >"$dir/summary"
    echo "$status" >"$dir/status"
}

# Two at a time: the machine's cores.
running=0
for target in "${targets[@]}"; do
    fuzz_one "$target" &
    running=$((running + 1))
    if [ "$running" -ge 2 ]; then
        wait -n || true
        running=$((running - 1))
    fi
done
wait || true

status=0
for target in "${targets[@]}"; do
    cat "$work/$target/summary"
    if [ "$(cat "$work/$target/status")" != 0 ]; then
        status=1
        # The verdict (the sanitizer's or libFuzzer's "ERROR:" and "SUMMARY:" lines, a Swift trap's message, the first
        # frames in Courier's code) on one line and the input in base64 on another: scripts/test.sh repeats both
        # under "what failed:" at its end, so an output kept only in part still says what crashed, where, and on what.
        log "$target failed: see the input in Tests/Fuzz/Crashes/$target; libFuzzer said:" >&2
        tail -40 "$work/$target/log" >&2
        verdict="$(grep -E '(^==[0-9]+== ?ERROR|^SUMMARY|Fatal error|Precondition failed)' "$work/$target/log" |
            head -3 | tr '\n' ' ')"
        frames="$(grep -E '^ *#[0-9]+ .* in .*(Courier|cr_|cr__)' "$work/$target/log" | head -4 |
            sed -E 's/^ *(#[0-9]+) 0x[0-9a-f]+ in /\1 /' | cut -c1-160 | tr '\n' ' ')"
        echo "fuzz: FAILED $target: ${verdict:-libFuzzer exited with an error} ${frames}"
        for input in "$work/$target"/crashes/*; do
            [ -f "$input" ] || continue
            echo "fuzz: FAILED $target: input $(basename "$input") (base64): $(head -c 3000 "$input" | base64 -w0)"
        done
    fi
done
exit "$status"
