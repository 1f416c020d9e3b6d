#!/usr/bin/env bash
# Command-line tests: run the built `courier` binary against files served on 127.0.0.1 by scripts/lib/serve.py
# and check exit statuses, messages and bytes. Ends with the line `cli: N passed, M failed`; exit status 1 if
# any check failed.
#
# COURIER_BIN: the binary to test (default: build the debug `courier` product, in COURIER_SCRATCH_PATH if set).
set -uo pipefail

script_name=cli-test
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$repo_root"

courier="${COURIER_BIN:-}"
if [ -z "$courier" ]; then
    swift build --product courier "${scratch_args[@]}" || exit 1
    courier="$(swift build --show-bin-path "${scratch_args[@]}")/courier"
fi
if [ ! -x "$courier" ]; then
    echo "cli-test: no courier binary at $courier" >&2
    exit 1
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/courier-cli-test.XXXXXX")"
server_pid=""
cleanup() {
    stop_file_server
    rm -rf "$work"
}
trap cleanup EXIT

passed=0
failed=0
pass() {
    passed=$((passed + 1))
    echo "ok   - $1"
}
fail() {
    failed=$((failed + 1))
    echo "FAIL - $1"
    shift
    for detail in "$@"; do
        echo "       $detail"
    done
}

# run NAME ARGS...: runs courier with ARGS; sets rc, and leaves stdout/stderr in $work/NAME.out / .err.
run() {
    local name="$1"
    shift
    rc=0
    "$courier" "$@" >"$work/$name.out" 2>"$work/$name.err" </dev/null || rc=$?
}

show() {
    echo "exit status $rc; stdout: $(head -c 600 "$work/$1.out"); stderr: $(head -c 600 "$work/$1.err")"
}

files="$work/files"
mkdir -p "$files"
head -c 1048576 /dev/urandom >"$files/one.bin"
head -c 3000001 /dev/urandom >"$files/two.bin"
head -c 8388608 /dev/urandom >"$files/slow.bin"
head -c 4096 /dev/urandom >"$files/.hidden"
: >"$files/empty.bin"

start_file_server "$files" "$work/requests.log" || exit 1
base="http://127.0.0.1:$server_port"
echo "cli-test: $courier against $base"

# --- help and usage -----------------------------------------------------------------------------------------
run help get --help
if [ "$rc" -eq 0 ] && grep -q -- "--parallel" "$work/help.out" && grep -q -- "--continue" "$work/help.out"; then
    pass "courier get --help describes the options"
else
    fail "courier get --help describes the options" "$(show help)"
fi

run badparallel get --parallel 0 "$base/one.bin"
if [ "$rc" -ne 0 ] && grep -q -- "--parallel" "$work/badparallel.err"; then
    pass "--parallel 0 is refused with a message"
else
    fail "--parallel 0 is refused with a message" "$(show badparallel)"
fi

# --- a successful get -----------------------------------------------------------------------------------------
out="$work/out-ok"
run ok get -o "$out" --parallel 2 "$base/one.bin" "$base/two.bin" "$base/empty.bin"
if [ "$rc" -eq 0 ] && cmp -s "$files/one.bin" "$out/one.bin" && cmp -s "$files/two.bin" "$out/two.bin" \
    && cmp -s "$files/empty.bin" "$out/empty.bin" && grep -q "^summary: 3/3 files" "$work/ok.out"; then
    pass "get saves every URL byte for byte, exit 0, with a summary"
else
    fail "get saves every URL byte for byte, exit 0, with a summary" "$(show ok)"
fi
if [ "$(find "$out" -mindepth 1 | wc -l)" -eq 3 ]; then
    pass "get leaves nothing but the files behind"
else
    fail "get leaves nothing but the files behind" "$(ls -la "$out")"
fi

# An existing file is never overwritten: the second copy gets a -1 suffix.
run again get -o "$out" "$base/one.bin"
if [ "$rc" -eq 0 ] && cmp -s "$files/one.bin" "$out/one-1.bin" && cmp -s "$files/one.bin" "$out/one.bin"; then
    pass "an existing file is kept and the new one saved as one-1.bin"
else
    fail "an existing file is kept and the new one saved as one-1.bin" "$(show again)" "$(ls "$out")"
fi

# --force replaces it.
echo "stale" >"$out/two.bin"
run force get --force -o "$out" "$base/two.bin"
if [ "$rc" -eq 0 ] && cmp -s "$files/two.bin" "$out/two.bin" && [ ! -e "$out/two-1.bin" ]; then
    pass "--force replaces an existing file"
else
    fail "--force replaces an existing file" "$(show force)" "$(ls "$out")"
fi

# A leading dot is dropped from the name.
run hidden get -o "$work/out-hidden" "$base/.hidden"
if [ "$rc" -eq 0 ] && cmp -s "$files/.hidden" "$work/out-hidden/hidden" && [ ! -e "$work/out-hidden/.hidden" ]; then
    pass "a hidden name (.hidden) is saved as 'hidden'"
else
    fail "a hidden name (.hidden) is saved as 'hidden'" "$(show hidden)" "$(ls -A "$work/out-hidden" 2>&1)"
fi

# --- failures -------------------------------------------------------------------------------------------------
run notfound get -o "$work/out-404" "$base/missing.bin"
if [ "$rc" -ne 0 ] && grep -q "$base/missing.bin" "$work/notfound.err" && grep -q "404" "$work/notfound.err" \
    && [ ! -e "$work/out-404/missing.bin" ]; then
    pass "a 404 fails (exit $rc) with a message naming the URL, and saves nothing"
else
    fail "a 404 fails with a message naming the URL, and saves nothing" "$(show notfound)"
fi

run mixed get -o "$work/out-mixed" "$base/one.bin" "$base/nope.bin"
if [ "$rc" -eq 1 ] && cmp -s "$files/one.bin" "$work/out-mixed/one.bin" && grep -q "$base/nope.bin" "$work/mixed.err" \
    && ! grep -q "$base/one.bin" "$work/mixed.err"; then
    pass "one failure among good URLs: the good ones are saved, exit 1"
else
    fail "one failure among good URLs: the good ones are saved, exit 1" "$(show mixed)"
fi

run scheme get -o "$work/out-scheme" "ftp://127.0.0.1:$server_port/one.bin"
if [ "$rc" -ne 0 ] && grep -q "ftp://127.0.0.1:$server_port/one.bin" "$work/scheme.err" \
    && grep -qi "unsupported" "$work/scheme.err"; then
    pass "an unsupported scheme fails (exit $rc) with a clear message"
else
    fail "an unsupported scheme fails with a clear message" "$(show scheme)"
fi

# --- --continue after SIGINT ----------------------------------------------------------------------------------
# slow.bin (8 MiB) at 512 KiB/s; interrupt after about a second, then continue at full speed (the test server
# only slows down whole-file responses).
out="$work/out-continue"
slow_url="$base/slow.bin?rate=524288"
# Start with the default SIGINT action: a background job of a non-interactive shell inherits it ignored.
python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
    "$courier" get -o "$out" "$slow_url" >"$work/interrupt.out" 2>"$work/interrupt.err" </dev/null &
courier_pid=$!
sleep 1.5
kill -INT "$courier_pid" 2>/dev/null
rc=0
wait "$courier_pid" || rc=$?
part_size="$(stat -c %s "$out/slow.bin.part" 2>/dev/null || echo 0)"
if [ "$rc" -eq 130 ] && [ -s "$out/slow.bin.part.resume" ] && [ "$part_size" -gt 0 ] && [ "$part_size" -lt 8388608 ] \
    && [ ! -e "$out/slow.bin" ]; then
    pass "SIGINT stops the download (exit 130) and keeps slow.bin.part ($part_size bytes) + slow.bin.part.resume"
else
    fail "SIGINT stops the download (exit 130) and keeps slow.bin.part + slow.bin.part.resume" \
        "$(show interrupt)" "$(ls -la "$out" 2>&1)"
fi
if python3 - "$out/slow.bin.part.resume" <<'PY'; then
import json, sys
data = json.load(open(sys.argv[1]))
sys.exit(0 if data.get("file") == "slow.bin.part" and str(data.get("format", "")).startswith("courier-resume/") else 1)
PY
    pass "the kept resume data is Courier resume data naming slow.bin.part"
else
    fail "the kept resume data is Courier resume data naming slow.bin.part" "$(cat "$out/slow.bin.part.resume" 2>&1)"
fi

run continue get --continue -o "$out" "$slow_url"
if [ "$rc" -eq 0 ] && cmp -s "$files/slow.bin" "$out/slow.bin" \
    && [ "$(sha256sum <"$files/slow.bin")" = "$(sha256sum <"$out/slow.bin")" ]; then
    pass "--continue completes the file (sha256 identical)"
else
    fail "--continue completes the file (sha256 identical)" "$(show continue)"
fi
if grep -q "range=bytes=$part_size-" "$work/requests.log" && grep -q "resuming slow.bin at" "$work/continue.out"; then
    pass "--continue asked only for the missing bytes (Range: bytes=$part_size-)"
else
    fail "--continue asked only for the missing bytes (Range: bytes=$part_size-)" \
        "$(grep slow.bin "$work/requests.log")" "$(show continue)"
fi
if [ ! -e "$out/slow.bin.part" ] && [ ! -e "$out/slow.bin.part.resume" ] \
    && [ "$(find "$out" -mindepth 1 | wc -l)" -eq 1 ]; then
    pass "after --continue only slow.bin is left"
else
    fail "after --continue only slow.bin is left" "$(ls -la "$out")"
fi

echo "cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
