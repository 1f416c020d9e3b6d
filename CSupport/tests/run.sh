#!/usr/bin/env bash
# The engine's C checks in one command (about 50 s on two cores, the build included):
#   bash CSupport/tests/run.sh
# Builds with make (tests/bin/), starts smoke_server.py on a free loopback port, then runs:
#   symbols          only courier_engine.h's functions are exported (nm -D of the sources linked as a shared object)
#   smoke            every engine feature, every result checked; plain, under ASan+UBSan, under TSan
#   trace            COURIER_ENGINE_TRACE=1 traces the transfer state changes
#   torture          every engine allocation of a representative workload made to fail in turn, under ASan with
#                    LeakSanitizer after every run; once with one allocation failing, once with it and every later one
# Every part runs; the exit status is non-zero if any failed. CC picks the compiler (default cc).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
started=$SECONDS
status=0
work="$(mktemp -d "${TMPDIR:-/tmp}/courier-ctests.XXXXXX")"
server_pid=""

cleanup() {
    if [ -n "$server_pid" ]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

log() { printf '\n== %s\n' "$*"; }

# run NAME COMMAND...: runs a check, records its failure and goes on.
run() {
    local name="$1"
    shift
    log "$name"
    local begun=$SECONDS
    if "$@"; then
        echo "-- $name: passed ($((SECONDS - begun)) s)"
    else
        echo "-- $name: FAILED (exit status $?)" >&2
        status=1
    fi
}

log "make"
if ! make -j2 all >"$work/make.log" 2>&1; then
    cat "$work/make.log" >&2
    echo "run.sh: the build failed" >&2
    exit 1
fi
grep -E "warning|error" "$work/make.log" || true

# Only the API is exported: the engine's sources, compiled and linked as a shared object, export exactly the
# functions courier_engine.h declares, and nghttp2_submit_rst_stream (nghttp2_closed_stream_reset.c: it stands in
# front of libnghttp2's); every other global symbol is cr__* and hidden.
check_symbols() {
    local cc="${CC:-cc}" objects=() source
    mkdir -p "$work/objects"
    for source in ../src/*.c; do
        "$cc" -std=gnu11 -O1 -fPIC -DDEBUG=1 -I../include -c "$source" \
            -o "$work/objects/$(basename "$source" .c).o" || return 1
        objects+=("$work/objects/$(basename "$source" .c).o")
    done
    "$cc" -shared -o "$work/libengine.so" "${objects[@]}" -lcurl -luv -lpthread || return 1
    { grep -oE '\bcr_[a-z_]+\(' ../include/courier_engine.h | tr -d '(';
      echo nghttp2_submit_rst_stream; } | sort -u >"$work/api.txt"
    nm -D --defined-only "$work/libengine.so" | awk '{print $3}' | grep '^cr\|^nghttp2' | sort -u >"$work/exported.txt"
    nm -g --defined-only "${objects[@]}" | awk 'NF == 3 {print $3}' | grep -v '^cr__' | sort -u >"$work/global.txt"
    if ! diff -u "$work/api.txt" "$work/exported.txt"; then
        echo "exported symbols differ from courier_engine.h's functions (- API, + exported)" >&2
        return 1
    fi
    if ! diff -u "$work/api.txt" "$work/global.txt"; then
        echo "global symbols other than cr__* differ from courier_engine.h's functions" >&2
        return 1
    fi
    echo "exported: $(tr '\n' ' ' <"$work/exported.txt")"
    echo "hidden: $(nm -g --defined-only "${objects[@]}" | awk 'NF == 3 {print $3}' | grep -c '^cr__') cr__* symbols"
}

trace_check() {
    COURIER_ENGINE_TRACE=1 bin/smoke "$base" 2 >/dev/null 2>"$work/trace.log" || return 1
    local transition
    for transition in "QUEUED -> ACTIVE" "ACTIVE -> DONE" "ACTIVE -> FINISHING" "FINISHING -> DONE" \
        "ACTIVE -> DECIDING" "DECIDING -> DONE" "(submitted) -> QUEUED"; do
        if ! grep -qF -- "$transition at " "$work/trace.log"; then
            echo "no \"$transition\" in the trace" >&2
            return 1
        fi
    done
    echo "$(wc -l <"$work/trace.log") trace lines, e.g. $(grep -m1 -F 'ACTIVE -> DECIDING' "$work/trace.log")"
}

log "smoke_server.py on a free port"
port_file="$work/port"
python3 smoke_server.py --port-file "$port_file" &
server_pid=$!
for _ in $(seq 100); do
    [ -s "$port_file" ] && break
    if ! kill -0 "$server_pid" 2>/dev/null; then
        echo "run.sh: the server did not start" >&2
        exit 1
    fi
    sleep 0.1
done
if [ ! -s "$port_file" ]; then
    echo "run.sh: the server did not report its port within 10 s" >&2
    exit 1
fi
base="http://127.0.0.1:$(cat "$port_file")"
echo "$base"

export ASAN_OPTIONS="detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export TSAN_OPTIONS="halt_on_error=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}"

run "symbols" check_symbols
run "smoke" bin/smoke "$base" 1000
run "trace" trace_check
run "smoke, ASan+UBSan" bin/smoke-asan "$base" 1000
run "smoke, TSan" bin/smoke-tsan "$base" 300
run "torture, ASan: allocation i fails" bin/torture-asan "$base"
run "torture, ASan: allocation i and every later one fail" bin/torture-asan "$base" --persistent

echo
if [ "$status" -eq 0 ]; then
    echo "run.sh: all passed in $((SECONDS - started)) s"
else
    echo "run.sh: FAILED ($((SECONDS - started)) s)" >&2
fi
exit "$status"
