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
    swift build --product courierd "${scratch_args[@]}" || exit 1
    courier="$(swift build --show-bin-path "${scratch_args[@]}")/courier"
fi
if [ ! -x "$courier" ]; then
    echo "cli-test: no courier binary at $courier" >&2
    exit 1
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/courier-cli-test.XXXXXX")"
server_pid=""
tls_server_pid=""
cleanup() {
    stop_file_server
    if [ -n "$tls_server_pid" ]; then
        kill "$tls_server_pid" 2>/dev/null
        wait "$tls_server_pid" 2>/dev/null
    fi
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

# interrupt SIGNAL NAME ARGS...: runs courier ARGS (output in NAME.out and NAME.err) with SIGNAL at its default
# disposition (a background job of a non-interactive shell inherits SIGINT ignored, and a run under nohup SIGHUP; courier
# keeps a signal ignored that its parent ignored), sends it SIGNAL 1.5 s later, and sets rc to its exit status.
interrupt() {
    local signal="$1" name="$2" pid
    shift 2
    python3 -c 'import os, signal, sys; signal.signal(getattr(signal, sys.argv[1]), signal.SIG_DFL)
os.execv(sys.argv[2], sys.argv[2:])' "SIG$signal" "$courier" "$@" >"$work/$name.out" 2>"$work/$name.err" </dev/null &
    pid=$!
    sleep 1.5
    kill "-$signal" "$pid" 2>/dev/null
    rc=0
    wait "$pid" || rc=$?
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
run ok get -P "$out" --parallel 2 "$base/one.bin" "$base/two.bin" "$base/empty.bin"
if [ "$rc" -eq 0 ] && cmp -s "$files/one.bin" "$out/one.bin" && cmp -s "$files/two.bin" "$out/two.bin" \
    && cmp -s "$files/empty.bin" "$out/empty.bin" \
    && grep -q "^summary: 3/3 files, [0-9]* bytes (.* [KMG]iB) in .*, [0-9.]* [KMG]iB/s$" "$work/ok.out"; then
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
run again get -P "$out" "$base/one.bin"
if [ "$rc" -eq 0 ] && cmp -s "$files/one.bin" "$out/one-1.bin" && cmp -s "$files/one.bin" "$out/one.bin"; then
    pass "an existing file is kept and the new one saved as one-1.bin"
else
    fail "an existing file is kept and the new one saved as one-1.bin" "$(show again)" "$(ls "$out")"
fi

# --force replaces it.
echo "stale" >"$out/two.bin"
run force get --force -P "$out" "$base/two.bin"
if [ "$rc" -eq 0 ] && cmp -s "$files/two.bin" "$out/two.bin" && [ ! -e "$out/two-1.bin" ]; then
    pass "--force replaces an existing file"
else
    fail "--force replaces an existing file" "$(show force)" "$(ls "$out")"
fi

# A leading dot is dropped from the name.
run hidden get -P "$work/out-hidden" "$base/.hidden"
if [ "$rc" -eq 0 ] && cmp -s "$files/.hidden" "$work/out-hidden/hidden" && [ ! -e "$work/out-hidden/.hidden" ]; then
    pass "a hidden name (.hidden) is saved as 'hidden'"
else
    fail "a hidden name (.hidden) is saved as 'hidden'" "$(show hidden)" "$(ls -A "$work/out-hidden" 2>&1)"
fi

# `courier URL` is `courier get URL`.
run bare -P "$work/out-bare" "$base/one.bin"
if [ "$rc" -eq 0 ] && cmp -s "$files/one.bin" "$work/out-bare/one.bin"; then
    pass "courier URL downloads as courier get URL"
else
    fail "courier URL downloads as courier get URL" "$(show bare)"
fi

# --- failures -------------------------------------------------------------------------------------------------
run notfound get -P "$work/out-404" "$base/missing.bin"
if [ "$rc" -ne 0 ] && grep -q "$base/missing.bin" "$work/notfound.err" && grep -q "404" "$work/notfound.err" \
    && [ ! -e "$work/out-404/missing.bin" ]; then
    pass "a 404 fails (exit $rc) with a message naming the URL, and saves nothing"
else
    fail "a 404 fails with a message naming the URL, and saves nothing" "$(show notfound)"
fi

run mixed get -P "$work/out-mixed" "$base/one.bin" "$base/nope.bin"
if [ "$rc" -eq 1 ] && cmp -s "$files/one.bin" "$work/out-mixed/one.bin" && grep -q "$base/nope.bin" "$work/mixed.err" \
    && ! grep -q "$base/one.bin" "$work/mixed.err"; then
    pass "one failure among good URLs: the good ones are saved, exit 1"
else
    fail "one failure among good URLs: the good ones are saved, exit 1" "$(show mixed)"
fi

run scheme get -P "$work/out-scheme" "ftp://127.0.0.1:$server_port/one.bin"
if [ "$rc" -ne 0 ] && grep -q "ftp://127.0.0.1:$server_port/one.bin" "$work/scheme.err" \
    && grep -qi "unsupported" "$work/scheme.err"; then
    pass "an unsupported scheme fails (exit $rc) with a clear message"
else
    fail "an unsupported scheme fails with a clear message" "$(show scheme)"
fi

# Any status >= 400 fails, whatever the body; nothing is saved for it.
run unauthorized get -P "$work/out-401" "$base/status/401"
if [ "$rc" -eq 1 ] && grep -q "^error: $base/status/401: HTTP 401 Unauthorized" "$work/unauthorized.err" \
    && [ "$(find "$work/out-401" -mindepth 1 | wc -l)" -eq 0 ]; then
    pass "a 401 with an empty body fails (exit 1) with an error line, and saves nothing"
else
    fail "a 401 with an empty body fails (exit 1) with an error line, and saves nothing" "$(show unauthorized)" \
        "$(ls -A "$work/out-401" 2>&1)"
fi

run notfoundbody get -P "$work/out-404-body" "$base/status/404?body=1"
if [ "$rc" -eq 1 ] && grep -q "^error: $base/status/404?body=1: HTTP 404 Not Found" "$work/notfoundbody.err" \
    && [ "$(find "$work/out-404-body" -mindepth 1 | wc -l)" -eq 0 ]; then
    pass "a 404 with a body fails (exit 1) with an error line, and saves nothing"
else
    fail "a 404 with a body fails (exit 1) with an error line, and saves nothing" "$(show notfoundbody)" \
        "$(ls -A "$work/out-404-body" 2>&1)"
fi

# --- redirects ----------------------------------------------------------------------------------------------
# Three 302s with Content-Length: 0 and relative Locations, then the file.
run redirects get -P "$work/out-redirect" "$base/redirect-empty/3/one.bin"
if [ "$rc" -eq 0 ] && cmp -s "$files/one.bin" "$work/out-redirect/one.bin" \
    && [ "$(find "$work/out-redirect" -mindepth 1 | wc -l)" -eq 1 ]; then
    pass "a chain of 3 empty-bodied relative 302s ends with the file's bytes saved"
else
    fail "a chain of 3 empty-bodied relative 302s ends with the file's bytes saved" "$(show redirects)" \
        "$(ls -la "$work/out-redirect" 2>&1)" "$(grep redirect-empty "$work/requests.log" | tail -4)"
fi

# --- Content-Disposition --------------------------------------------------------------------------------------
out="$work/out-cd"
cd_report="$base/one.bin?cd=attachment%3B%20filename%3D%22report.txt%22"
run cd get -P "$out" "$cd_report"
if [ "$rc" -eq 0 ] && cmp -s "$files/one.bin" "$out/report.txt" && [ ! -e "$out/one.bin" ] \
    && grep -q "^saved report.txt" "$work/cd.out"; then
    pass "Content-Disposition: attachment; filename=\"report.txt\" names the file"
else
    fail "Content-Disposition: attachment; filename=\"report.txt\" names the file" "$(show cd)" "$(ls -A "$out" 2>&1)"
fi

run cdagain get -P "$out" "$cd_report"
if [ "$rc" -eq 0 ] && cmp -s "$files/one.bin" "$out/report-1.txt" && cmp -s "$files/one.bin" "$out/report.txt"; then
    pass "a Content-Disposition name never replaces an existing file (report-1.txt)"
else
    fail "a Content-Disposition name never replaces an existing file (report-1.txt)" "$(show cdagain)" \
        "$(ls -A "$out" 2>&1)"
fi

# filename="../../x": made safe like a URL name, saved inside the output directory.
out="$work/cd-hostile/deep/out"
run cdhostile get -P "$out" "$base/one.bin?cd=attachment%3B%20filename%3D%22..%2F..%2Fx%22"
if [ "$rc" -eq 0 ] && cmp -s "$files/one.bin" "$out/_.._x" && [ "$(find "$out" -mindepth 1 | wc -l)" -eq 1 ] \
    && [ ! -e "$work/cd-hostile/x" ] && [ ! -e "$work/cd-hostile/deep/x" ]; then
    pass "a hostile Content-Disposition name (../../x) is saved as _.._x inside the output directory"
else
    fail "a hostile Content-Disposition name (../../x) is saved as _.._x inside the output directory" \
        "$(show cdhostile)" "$(find "$work/cd-hostile" 2>&1)"
fi

# filename*= (RFC 5987) wins over filename=.
out="$work/out-cd-utf8"
run cdutf8 get -P "$out" \
    "$base/one.bin?cd=attachment%3B%20filename%3D%22naive.txt%22%3B%20filename*%3DUTF-8''na%25C3%25AFve.txt"
if [ "$rc" -eq 0 ] && cmp -s "$files/one.bin" "$out/naïve.txt" && [ "$(find "$out" -mindepth 1 | wc -l)" -eq 1 ]; then
    pass "Content-Disposition filename*=UTF-8''na%C3%AFve.txt wins over filename= (naïve.txt)"
else
    fail "Content-Disposition filename*=UTF-8''na%C3%AFve.txt wins over filename= (naïve.txt)" "$(show cdutf8)" \
        "$(ls -A "$out" 2>&1)"
fi

run cdoff get --no-content-disposition -P "$work/out-cd-off" "$cd_report"
if [ "$rc" -eq 0 ] && cmp -s "$files/one.bin" "$work/out-cd-off/one.bin" && [ ! -e "$work/out-cd-off/report.txt" ]; then
    pass "--no-content-disposition keeps the URL's name"
else
    fail "--no-content-disposition keeps the URL's name" "$(show cdoff)" "$(ls -A "$work/out-cd-off" 2>&1)"
fi

# --- --continue after SIGINT ----------------------------------------------------------------------------------
# slow.bin (8 MiB) at 512 KiB/s; interrupt after about a second, then continue at full speed (the test server
# only slows down whole-file responses).
out="$work/out-continue"
slow_url="$base/slow.bin?rate=524288"
interrupt INT interrupt get -P "$out" "$slow_url"
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

run continue get --continue -P "$out" "$slow_url"
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

# --- a failing disk: EIO and ENOSPC at the download's writes (Tests/Interposers/courier_io.c, preloaded) ---------
interposer="$work/courier_io.so"
compiler="$(command -v clang || command -v cc)"
if "$compiler" -std=gnu11 -O1 -shared -fPIC -o "$interposer" Tests/Interposers/courier_io.c -ldl -lpthread \
    2>"$work/interposer.err"; then
    # run_failing NAME FAULT ARGS...: runs courier with FAULT injected on the files under $out.
    run_failing() {
        local name="$1" fault="$2"
        shift 2
        rc=0
        COURIER_IO_ROOT="$out" COURIER_IO_FAULT="$fault" LD_PRELOAD="$interposer" "$courier" "$@" \
            >"$work/$name.out" 2>"$work/$name.err" </dev/null || rc=$?
    }
    out="$work/out-eio"
    mkdir -p "$out"
    run_failing eio "write:EIO:3:1:" get -P "$out" "$base/two.bin"
    if [ "$rc" -eq 1 ] && grep -q "cannotWriteToFile: Input/output error" "$work/eio.err" && [ ! -e "$out/two.bin" ]; then
        pass "EIO at a write: exit 1, cannotWriteToFile, no two.bin"
    else
        fail "EIO at a write: exit 1, cannotWriteToFile, no two.bin" "$(show eio)" "$(ls -la "$out")"
    fi
    out="$work/out-enospc"
    mkdir -p "$out"
    run_failing enospc "write:ENOSPC:3:1:" get -P "$out" "$base/two.bin"
    kept="$(stat -c %s "$out/two.bin.part" 2>/dev/null || echo 0)"
    if [ "$rc" -eq 1 ] && grep -q "insufficientSpace: No space left on device" "$work/enospc.err" \
        && [ ! -e "$out/two.bin" ] && [ "$kept" -gt 0 ] && [ -s "$out/two.bin.part.resume" ]; then
        pass "ENOSPC at a write: exit 1, insufficientSpace, two.bin.part ($kept bytes) kept, no two.bin"
    else
        fail "ENOSPC at a write: exit 1, insufficientSpace, two.bin.part kept, no two.bin" "$(show enospc)" \
            "$(ls -la "$out")"
    fi
    run enospc-continue get --continue -P "$out" "$base/two.bin"
    if [ "$rc" -eq 0 ] && cmp -s "$files/two.bin" "$out/two.bin" && grep -q "range=bytes=$kept-" "$work/requests.log"; then
        pass "once there is room, --continue completes two.bin from byte $kept"
    else
        fail "once there is room, --continue completes two.bin from byte $kept" "$(show enospc-continue)"
    fi
else
    fail "the failing-disk interposer builds" "$(cat "$work/interposer.err")"
fi

# --- curl's and wget's habits: -o FILE, -O, -i LIST, --retry ------------------------------------------------
mkdir -p "$work/named"
run ofile get -o "$work/named/one-copy.bin" "$base/one.bin"
run ofile-again get -o "$work/named/one-copy.bin" "$base/two.bin"
if [ "$rc" -eq 0 ] && cmp -s "$files/two.bin" "$work/named/one-copy.bin" \
    && [ "$(ls "$work/named")" = "one-copy.bin" ]; then
    pass "-o FILE saves the URL as FILE exactly, and replaces it the next time (as curl -o)"
else
    fail "-o FILE saves the URL as FILE exactly, and replaces it the next time (as curl -o)" "$(show ofile-again)" \
        "$(ls -la "$work/named" 2>&1)"
fi

run coffset get -C 100 -P "$work/out-c" "$base/one.bin"
if [ "$rc" -eq 64 ] && grep -q -- '-C takes only "-"' "$work/coffset.err"; then
    pass "-C takes curl's \"-\" only"
else
    fail "-C takes curl's \"-\" only" "$(show coffset)"
fi

run otwo get -o "$work/named/x.bin" "$base/one.bin" "$base/two.bin"
if [ "$rc" -eq 64 ] && grep -q -- "-P DIR" "$work/otwo.err" && [ ! -e "$work/named/x.bin" ]; then
    pass "-o FILE with two URLs is a bad argument that points to -P DIR"
else
    fail "-o FILE with two URLs is a bad argument that points to -P DIR" "$(show otwo)"
fi

printf '# two files\n%s\n\n   %s  \n' "$base/one.bin" "$base/two.bin" >"$work/list.txt"
run list get -O -i "$work/list.txt" -P "$work/out-list"
if [ "$rc" -eq 0 ] && cmp -s "$files/one.bin" "$work/out-list/one.bin" && cmp -s "$files/two.bin" "$work/out-list/two.bin"
then
    pass "-i FILE downloads every URL listed (comments and blank lines skipped); -O is accepted"
else
    fail "-i FILE downloads every URL listed (comments and blank lines skipped); -O is accepted" "$(show list)"
fi

run retry get --retry 2 -P "$work/out-retry" "$base/flaky/2/one.bin"
if [ "$rc" -eq 0 ] && cmp -s "$files/one.bin" "$work/out-retry/one.bin" \
    && [ "$(grep -c "HTTP 503 Service Unavailable; trying again in 1.0* s" "$work/retry.err")" -eq 2 ]; then
    pass "--retry 2 tries a 503 again twice (after the server's Retry-After) and saves the file"
else
    fail "--retry 2 tries a 503 again twice (after the server's Retry-After) and saves the file" "$(show retry)"
fi

run retry-out get --retry 1 -P "$work/out-retry" "$base/flaky/3/two.bin"
if [ "$rc" -eq 1 ] && [ "$(grep -c "trying again" "$work/retry-out.err")" -eq 1 ] \
    && grep -q "error: .*flaky/3/two.bin: HTTP 503" "$work/retry-out.err" && [ ! -e "$work/out-retry/two.bin" ]; then
    pass "--retry 1: one more try, then the 503 fails the URL"
else
    fail "--retry 1: one more try, then the 503 fails the URL" "$(show retry-out)"
fi

# --checksum: the file's digest is checked as it is written; another one fails the URL and saves nothing.
sum="$(sha256sum "$files/one.bin" | cut -d' ' -f1)"
run checksum get --checksum "sha-256=$sum" -P "$work/out-sum" "$base/one.bin"
if [ "$rc" -eq 0 ] && cmp -s "$files/one.bin" "$work/out-sum/one.bin"; then
    pass "--checksum sha-256=HEX: a file with that digest is saved"
else
    fail "--checksum sha-256=HEX: a file with that digest is saved" "$(show checksum)"
fi
wrong="$(sha512sum "$files/two.bin" | cut -d' ' -f1)"
run badsum get --checksum "sha-512=$wrong" -P "$work/out-badsum" "$base/one.bin"
if [ "$rc" -eq 1 ] && grep -q "sha-512 is" "$work/badsum.err" && [ ! -e "$work/out-badsum/one.bin" ] \
    && [ -z "$(ls -A "$work/out-badsum" 2>/dev/null)" ]; then
    pass "--checksum with another digest: the URL fails, nothing is saved (no partial file either)"
else
    fail "--checksum with another digest: the URL fails, nothing is saved (no partial file either)" "$(show badsum)"
fi
run sumargs get --checksum "sha-256=12" "$base/one.bin"
if [ "$rc" -eq 64 ] && grep -q "checksum takes" "$work/sumargs.err"; then
    pass "--checksum with a malformed digest is a bad argument"
else
    fail "--checksum with a malformed digest is a bad argument" "$(show sumargs)"
fi

# --limit-rate: all the downloads together; 1 MiB + 3 MB at 1M (1 MiB/s) take about 3.9 s.
start_ns=$(date +%s%N)
run limit get --limit-rate 1M -P "$work/out-limit" "$base/one.bin" "$base/two.bin"
elapsed_ms=$(( ($(date +%s%N) - start_ns) / 1000000 ))
if [ "$rc" -eq 0 ] && cmp -s "$files/two.bin" "$work/out-limit/two.bin" && [ "$elapsed_ms" -ge 3500 ]; then
    pass "--limit-rate 1M: 4 MB take about 3.9 s ($elapsed_ms ms), both files saved"
else
    fail "--limit-rate 1M: 4 MB take about 3.9 s ($elapsed_ms ms), both files saved" "$(show limit)"
fi

# -s N: a large file over N ranged connections, assembled in place.
head -c 5242880 /dev/urandom >"$files/big.bin"
run segments get -s 4 -P "$work/out-segments" "$base/big.bin"
ranged=$(grep "big.bin" "$work/requests.log" | grep -c "range=bytes=[0-9]*-[0-9]")
if [ "$rc" -eq 0 ] && cmp -s "$files/big.bin" "$work/out-segments/big.bin" && [ "$ranged" -eq 3 ]; then
    pass "-s 4: a 5 MiB file over four connections (three ranged), byte for byte"
else
    fail "-s 4: a 5 MiB file over four connections (three ranged), byte for byte" \
        "$(show segments)" "$(grep big.bin "$work/requests.log")"
fi

# The environment's proxy, as curl reads it: the file server serves a request in absolute form as its path, and
# origin.invalid is reachable only through it (never resolved).
rc=0
http_proxy="$base" "$courier" get -P "$work/out-proxy" "http://origin.invalid/one.bin" \
    >"$work/proxy.out" 2>"$work/proxy.err" </dev/null || rc=$?
if [ "$rc" -eq 0 ] && cmp -s "$files/one.bin" "$work/out-proxy/one.bin" \
    && grep -q '"GET http://origin.invalid/one.bin HTTP/1.1"' "$work/requests.log"; then
    pass "http_proxy in the environment: the request goes through the proxy, in absolute form"
else
    fail "http_proxy in the environment: the request goes through the proxy, in absolute form" "$(show proxy)"
fi

# --- requests and TLS, in curl's spelling: -H, -u, --resolve, -k, --cacert, --pinnedpubkey ---------------------
run headers get -q -o "$work/headers.bin" -H "X-Courier-Test: sent-by-H" -u "ann:secret" "$base/one.bin"
if [ "$rc" -eq 0 ] && grep -q "x-courier-test=sent-by-H" "$work/requests.log" \
    && grep -q "authorization=Basic $(printf 'ann:secret' | base64)" "$work/requests.log"; then
    pass "-H adds a header field and -u sends Basic credentials"
else
    fail "-H adds a header field and -u sends Basic credentials" "$(show headers)" "$(tail -3 "$work/requests.log")"
fi
run resolve get -q -o "$work/resolved.bin" --resolve "files.courier.invalid:$server_port:127.0.0.1" \
    "http://files.courier.invalid:$server_port/one.bin"
if [ "$rc" -eq 0 ] && cmp -s "$files/one.bin" "$work/resolved.bin"; then
    pass "--resolve connects a name that DNS does not know to the address given"
else
    fail "--resolve connects a name that DNS does not know to the address given" "$(show resolve)"
fi
run bad-pin-syntax get --pinnedpubkey "md5//abc" "$base/one.bin"
if [ "$rc" -eq 64 ] && grep -q "pinnedpubkey" "$work/bad-pin-syntax.err"; then
    pass "a malformed --pinnedpubkey is a usage error"
else
    fail "a malformed --pinnedpubkey is a usage error" "$(show bad-pin-syntax)"
fi

run jar get -q -o "$work/jar.bin" --cookie-jar "$work/jar.txt" "$base/one.bin?setcookie=flavour%3Doat"
if [ "$rc" -eq 0 ] && grep -q "# Netscape HTTP Cookie File" "$work/jar.txt" \
    && grep -qP "\tflavour\toat$" "$work/jar.txt"; then
    pass "--cookie-jar writes the run's cookies as a Netscape cookie file"
else
    fail "--cookie-jar writes the run's cookies as a Netscape cookie file" "$(show jar)" "$(cat "$work/jar.txt" 2>&1)"
fi
run cookie-file get -q -o "$work/cookie-file.bin" --cookie "$work/jar.txt" "$base/two.bin"
run cookie-data get -q -o "$work/cookie-data.bin" --cookie "a=1; b=2" "$base/empty.bin"
if grep -q '"GET /two.bin HTTP/1.1".*cookie=flavour=oat' "$work/requests.log" \
    && grep -q '"GET /empty.bin HTTP/1.1".*cookie=a=1; b=2' "$work/requests.log"; then
    pass "--cookie sends a cookie file's cookies, or the data given"
else
    fail "--cookie sends a cookie file's cookies, or the data given" "$(show cookie-file)" "$(show cookie-data)" \
        "$(tail -3 "$work/requests.log")"
fi
printf 'machine 127.0.0.1\n  login ann\n  password "s3 cret"\n' >"$work/netrc"
run netrc get -q -o "$work/netrc.bin" --netrc-file "$work/netrc" "$base/auth/ann/s3%20cret/one.bin"
run no-netrc get -q -o "$work/no-netrc.bin" "$base/auth/ann/s3%20cret/one.bin"
if [ "$rc" -eq 1 ] && grep -q "401" "$work/no-netrc.err" && cmp -s "$files/one.bin" "$work/netrc.bin"; then
    pass "--netrc-file answers the server's challenge; without it, 401"
else
    fail "--netrc-file answers the server's challenge; without it, 401" "$(show netrc)" "$(show no-netrc)"
fi

tls="$work/tls"
mkdir -p "$tls"
if openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=127.0.0.1" \
    -addext "subjectAltName=IP:127.0.0.1" -keyout "$tls/key.pem" -out "$tls/cert.pem" >/dev/null 2>&1; then
    plain_pid="$server_pid"
    plain_port="$server_port"
    start_file_server "$files" "$work/tls-requests.log" 0 --tls-cert "$tls/cert.pem" --tls-key "$tls/key.pem" || exit 1
    tls_server_pid="$server_pid"
    secure="https://127.0.0.1:$server_port"
    server_pid="$plain_pid"
    server_port="$plain_port"
    pin="sha256//$(openssl x509 -in "$tls/cert.pem" -pubkey -noout | openssl pkey -pubin -outform der \
        | openssl dgst -sha256 -binary | base64)"

    run untrusted get -q -o "$work/untrusted.bin" "$secure/one.bin"
    if [ "$rc" -eq 1 ] && grep -qi "certificate" "$work/untrusted.err" && [ ! -e "$work/untrusted.bin" ] \
        && ! grep -q "one.bin" "$work/tls-requests.log"; then
        pass "a self-signed server is refused, before any request"
    else
        fail "a self-signed server is refused, before any request" "$(show untrusted)"
    fi
    run insecure get -q -o "$work/insecure.bin" -k "$secure/one.bin"
    if [ "$rc" -eq 0 ] && cmp -s "$files/one.bin" "$work/insecure.bin" && grep -q "insecure" "$work/insecure.err"; then
        pass "-k accepts it, and says so even with -q"
    else
        fail "-k accepts it, and says so even with -q" "$(show insecure)"
    fi
    run cacert get -q -o "$work/cacert.bin" --cacert "$tls/cert.pem" --pinnedpubkey "$pin" "$secure/one.bin"
    if [ "$rc" -eq 0 ] && cmp -s "$files/one.bin" "$work/cacert.bin"; then
        pass "--cacert trusts it, with its key pinned"
    else
        fail "--cacert trusts it, with its key pinned" "$(show cacert)"
    fi
    requests_before=$(grep -c "one.bin" "$work/tls-requests.log")
    run wrong-pin get -q -o "$work/wrong-pin.bin" --cacert "$tls/cert.pem" \
        --pinnedpubkey "sha256//$(head -c 32 /dev/zero | base64)" "$secure/one.bin"
    if [ "$rc" -eq 1 ] && grep -q "pinned" "$work/wrong-pin.err" \
        && [ "$(grep -c "one.bin" "$work/tls-requests.log")" -eq "$requests_before" ]; then
        pass "a key that is not the pinned one is refused, before any request"
    else
        fail "a key that is not the pinned one is refused, before any request" "$(show wrong-pin)"
    fi
    run insecure-background get --background -k "$secure/one.bin"
    if [ "$rc" -eq 64 ] && grep -q "insecure" "$work/insecure-background.err"; then
        pass "--background refuses -k (courierd verifies every server)"
    else
        fail "--background refuses -k (courierd verifies every server)" "$(show insecure-background)"
    fi
else
    fail "openssl makes the TLS tests' certificate" "openssl req failed"
fi

# --- SIGHUP (the terminal closed) ----------------------------------------------------------------------------
out="$work/out-hangup"
interrupt HUP hangup get -P "$out" "$slow_url"
part_size="$(stat -c %s "$out/slow.bin.part" 2>/dev/null || echo 0)"
if [ "$rc" -eq 130 ] && [ -s "$out/slow.bin.part.resume" ] && [ "$part_size" -gt 0 ] \
    && [ -z "$(find "$out" -name '.courier-tmp-*')" ]; then
    pass "SIGHUP keeps slow.bin.part ($part_size bytes) and its resume data, and leaves no temporary folder"
else
    fail "SIGHUP keeps slow.bin.part and its resume data, and leaves no temporary folder" \
        "$(show hangup)" "$(ls -la "$out" 2>&1)"
fi
run hangup-continue get -C - -P "$out" "$slow_url"
if [ "$rc" -eq 0 ] && cmp -s "$files/slow.bin" "$out/slow.bin" && grep -q "resuming slow.bin at" "$work/hangup-continue.out"; then
    pass "-C - (curl's --continue) after SIGHUP resumes and completes the file"
else
    fail "-C - (curl's --continue) after SIGHUP resumes and completes the file" "$(show hangup-continue)"
fi

# --- curl's promises: what is kept on an interrupt, output directories, error text --------------------------------
# A server without validators or ranges (as python3 -m http.server serves): an interrupted download cannot be resumed,
# so nothing is kept, and the run says why instead of promising a --continue.
out="$work/out-plain"
interrupt INT plain get -P "$out" "$base/slow.bin?rate=524288&plain=1"
if [ "$rc" -eq 130 ] && grep -q "^slow.bin: nothing kept: the server does not say it serves byte ranges" "$work/plain.out" \
    && [ -z "$(ls -A "$out")" ] && ! grep -qi "keeping partial" "$work/plain.out" "$work/plain.err"; then
    pass "an interrupted download that cannot be resumed keeps nothing, and says why"
else
    fail "an interrupted download that cannot be resumed keeps nothing, and says why" "$(show plain)" "$(ls -A "$out")"
fi

# --on-complete: a command per download that ends, with its outcome in arguments and environment.
run hook get -P "$work/out-hook" --on-complete 'echo "$COURIER_RESULT|$1|$2|$COURIER_HTTP_STATUS|$COURIER_ERROR"' \
    "$base/one.bin" "$base/status/404"
if [ "$rc" -eq 1 ] && grep -qx "saved|$work/out-hook/one.bin|$base/one.bin|200|" "$work/hook.out" \
    && grep -qx "failed||$base/status/404|404|HTTP 404 Not Found" "$work/hook.out"; then
    pass "--on-complete runs the command for each download that ends: saved (the file) or failed (why)"
else
    fail "--on-complete runs the command for each download that ends: saved (the file) or failed (why)" "$(show hook)"
fi

run missing-dir get -o "$work/no/such/dir/one.bin" "$base/one.bin"
if [ "$rc" -eq 1 ] && grep -q "^error: cannot save to .*: $work/no/such/dir does not exist (--create-dirs creates it)" \
    "$work/missing-dir.err" && [ ! -e "$work/no" ]; then
    pass "-o into a missing directory fails (exit 1), as curl does, and creates nothing"
else
    fail "-o into a missing directory fails (exit 1), as curl does, and creates nothing" "$(show missing-dir)"
fi
run create-dirs get --create-dirs -o "$work/made/dir/one.bin" "$base/one.bin"
if [ "$rc" -eq 0 ] && cmp -s "$files/one.bin" "$work/made/dir/one.bin"; then
    pass "--create-dirs -o creates the missing directories"
else
    fail "--create-dirs -o creates the missing directories" "$(show create-dirs)"
fi
touch "$work/a-file"
run under-file get -P "$work/a-file/sub" "$base/one.bin"
if [ "$rc" -eq 1 ] && grep -q "^error: cannot create directory $work/a-file/sub: Not a directory" "$work/under-file.err" \
    && ! grep -q "Domain" "$work/under-file.err"; then
    pass "-P under a file: the system's reason (Not a directory), never a Foundation domain and number"
else
    fail "-P under a file: the system's reason (Not a directory), never a Foundation domain and number" \
        "$(show under-file)"
fi
run bad-option get --no-such-option "$base/one.bin"
if [ "$rc" -eq 64 ] && grep -q "^error: " "$work/bad-option.err" && ! grep -q "^Error:" "$work/bad-option.err"; then
    pass "a bad argument: exit 64, written 'error:' as every other error line"
else
    fail "a bad argument: exit 64, written 'error:' as every other error line" "$(show bad-option)"
fi

# --- put --------------------------------------------------------------------------------------------------------
# Uploads land under the served directory ($files), at the request's path.
run puthelp put --help
if [ "$rc" -eq 0 ] && grep -q -- "--method" "$work/puthelp.out" && grep -q -- "--header" "$work/puthelp.out"; then
    pass "courier put --help describes the options"
else
    fail "courier put --help describes the options" "$(show puthelp)"
fi

run putone put "$files/two.bin" "$base/uploads/one/"
if [ "$rc" -eq 0 ] && cmp -s "$files/two.bin" "$files/uploads/one/two.bin" \
    && grep -q "^summary: 1/1 files, 3000001 bytes" "$work/putone.out"; then
    pass "put of one file to a URL ending in / stores it under its name, byte for byte, exit 0"
else
    fail "put of one file to a URL ending in / stores it under its name, byte for byte, exit 0" "$(show putone)"
fi

run putexact put "$files/one.bin" "$base/uploads/exact.data"
if [ "$rc" -eq 0 ] && cmp -s "$files/one.bin" "$files/uploads/exact.data" \
    && grep -q '"PUT /uploads/exact.data HTTP/1.1" length=1048576' "$work/requests.log"; then
    pass "put of one file to a URL not ending in / sends it to that URL exactly (PUT)"
else
    fail "put of one file to a URL not ending in / sends it to that URL exactly (PUT)" "$(show putexact)"
fi

sources="$work/sources"
mkdir -p "$sources"
printf 'a file with a space\n' >"$sources/a b.txt"
run putmany put --parallel 2 "$files/one.bin" "$files/two.bin" "$files/empty.bin" "$sources/a b.txt" \
    "$base/uploads/many/"
if [ "$rc" -eq 0 ] && cmp -s "$files/one.bin" "$files/uploads/many/one.bin" \
    && cmp -s "$files/two.bin" "$files/uploads/many/two.bin" \
    && cmp -s "$files/empty.bin" "$files/uploads/many/empty.bin" \
    && cmp -s "$sources/a b.txt" "$files/uploads/many/a b.txt" \
    && grep -q "PUT /uploads/many/a%20b.txt " "$work/requests.log" \
    && grep -q "^summary: 4/4 files" "$work/putmany.out"; then
    pass "put of several files to a URL ending in / stores each under its (percent-encoded) name"
else
    fail "put of several files to a URL ending in / stores each under its (percent-encoded) name" "$(show putmany)" \
        "$(ls -A "$files/uploads/many" 2>&1)"
fi

run putpost put -X POST -H "Content-Type: text/plain" "$sources/a b.txt" "$base/uploads/posted.txt"
if [ "$rc" -eq 0 ] && cmp -s "$sources/a b.txt" "$files/uploads/posted.txt" \
    && grep -q '"POST /uploads/posted.txt HTTP/1.1" length=20 content-type=text/plain' "$work/requests.log"; then
    pass "put -X POST -H 'Content-Type: text/plain' sends a POST with the header"
else
    fail "put -X POST -H 'Content-Type: text/plain' sends a POST with the header" "$(show putpost)" \
        "$(grep posted "$work/requests.log")"
fi

run putmissing put "$work/no-such-file.bin" "$files/one.bin" "$base/uploads/missing/"
if [ "$rc" -eq 1 ] && grep -q "^error: $work/no-such-file.bin: " "$work/putmissing.err" \
    && cmp -s "$files/one.bin" "$files/uploads/missing/one.bin" \
    && grep -q "^summary: 1/2 files" "$work/putmissing.out"; then
    pass "put of a missing file: an error line, exit 1, the other file still uploaded"
else
    fail "put of a missing file: an error line, exit 1, the other file still uploaded" "$(show putmissing)"
fi

run putdir put "$sources" "$base/uploads/dir/"
if [ "$rc" -eq 1 ] && grep -q "^error: $sources: is a directory" "$work/putdir.err"; then
    pass "put of a directory fails (exit 1) with an error line"
else
    fail "put of a directory fails (exit 1) with an error line" "$(show putdir)"
fi

run putforbidden put "$files/one.bin" "$base/status/403?body=1"
if [ "$rc" -eq 1 ] \
    && grep -q "^error: $files/one.bin -> $base/status/403?body=1: HTTP 403 Forbidden" "$work/putforbidden.err"; then
    pass "put to a URL answering 403 fails (exit 1): error: FILE -> URL: HTTP 403 Forbidden"
else
    fail "put to a URL answering 403 fails (exit 1): error: FILE -> URL: HTTP 403 Forbidden" "$(show putforbidden)"
fi

requests_before="$(wc -l <"$work/requests.log")"
bad_ok=1
for bad in "ftp://127.0.0.1:$server_port/uploads/" "http://[::1/x" "not a url" "http:///uploads/"; do
    run putbad put "$files/one.bin" "$bad"
    if [ "$rc" -ne 64 ] || ! grep -qF "error: '$bad'" "$work/putbad.err"; then
        bad_ok=0
        fail "put to a bad URL ($bad) is a usage error (exit 64)" "$(show putbad)"
    fi
done
run putbad put "$files/one.bin" "$files/two.bin" "$base/uploads/not-a-directory"
if [ "$rc" -ne 64 ]; then
    bad_ok=0
    fail "put of several files to a URL not ending in / is a usage error (exit 64)" "$(show putbad)"
fi
run putbad put -H $'X-Test: a\r\nX-Injected: b' "$files/one.bin" "$base/uploads/header.bin"
if [ "$rc" -ne 64 ]; then
    bad_ok=0
    fail "put -H with CR/LF is a usage error (exit 64)" "$(show putbad)"
fi
if [ "$bad_ok" -eq 1 ] && [ "$(wc -l <"$work/requests.log")" -eq "$requests_before" ]; then
    pass "put with a bad URL, several files to a non-/ URL or a CR/LF header: exit 64, nothing sent"
elif [ "$bad_ok" -eq 1 ]; then
    fail "put with bad arguments sent nothing" "$(tail -n +"$((requests_before + 1))" "$work/requests.log")"
fi

# SIGINT cancels the uploads (the server reads the body at 512 KiB/s).
interrupt INT putint put "$files/slow.bin" "$base/uploads/slow/?rate=524288"
if [ "$rc" -eq 130 ] && grep -q "interrupted" "$work/putint.err" \
    && ! cmp -s "$files/slow.bin" "$files/uploads/slow/slow.bin"; then
    pass "SIGINT cancels a put (exit 130)"
else
    fail "SIGINT cancels a put (exit 130)" "$(show putint)"
fi

# The background-service commands, against a courierd on private directories (started beside the courier binary).
courierd="$(dirname "$courier")/courierd"
if [ -x "$courierd" ]; then
    export XDG_RUNTIME_DIR="$work/xdg-run" XDG_STATE_HOME="$work/xdg-state" HOOK_LOG="$work/bg-hook.log"
    mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
    run status-down daemon status
    if [ "$rc" -eq 3 ] && grep -q "not running .*start it with \`courier daemon start\`" "$work/status-down.out"; then
        pass "courier daemon status: not running (exit 3), and what to run"
    else
        fail "courier daemon status: not running (exit 3), and what to run" "$(show status-down)"
    fi
    "$courierd" 2>"$work/courierd.log" &
    courierd_pid=$!
    for _ in $(seq 1 100); do
        [ -S "$XDG_RUNTIME_DIR/courier/courierd.sock" ] && break
        sleep 0.05
    done
    run status-up daemon status --json
    if [ "$rc" -eq 0 ] && grep -q '"running" : true' "$work/status-up.out" \
        && grep -q "\"pid\" : $courierd_pid" "$work/status-up.out" \
        && grep -q "\"stateDirectory\" : \"$XDG_STATE_HOME/courier\"" "$work/status-up.out"; then
        pass "courier daemon status --json: running, with the answering courierd's pid and directories"
    else
        fail "courier daemon status --json: running, with the answering courierd's pid and directories" \
            "$(show status-up)"
    fi
    run status-text daemon status
    if [ "$rc" -eq 0 ] && grep -q "is running, pid $courierd_pid" "$work/status-text.out" \
        && grep -q "binary: *$(readlink -f "$courierd")" "$work/status-text.out" \
        && grep -q "^  0 sessions, 0 active tasks, 0 pending events$" "$work/status-text.out"; then
        pass "courier daemon status: version, pid, binary, counts"
    else
        fail "courier daemon status: version, pid, binary, counts" "$(show status-text)"
    fi
    run version --version
    if [ "$rc" -eq 0 ] && [ "$(cat "$work/version.out")" = "$("$courierd" --version)" ]; then
        pass "courier --version and courierd --version: one version"
    else
        fail "courier --version and courierd --version: one version" "$(show version)"
    fi
    run sessions sessions
    if [ "$rc" -eq 0 ] && grep -q "^SESSION  APP" "$work/sessions.out"; then
        pass "courier sessions: a table"
    else
        fail "courier sessions: a table" "$(show sessions)"
    fi
    run cancel-unknown cancel com.example.none 7
    if [ "$rc" -eq 1 ] && grep -q "no background session com.example.none" "$work/cancel-unknown.err"; then
        pass "courier cancel: an unknown session is a clear error"
    else
        fail "courier cancel: an unknown session is a clear error" "$(show cancel-unknown)"
    fi

    # courier get --background: handed to courierd, which goes on after the command exits and after its own SIGKILL;
    # courierd launches courier in the background to save the files where they were asked for.
    run bg get --background -P "$work/out-bg" --on-complete 'echo "$COURIER_RESULT $1" >>"$HOOK_LOG"' \
        "$base/one.bin" "$base/slow.bin?rate=1500000"
    if [ "$rc" -eq 0 ] && [ "$(grep -c "^task [0-9]*: " "$work/bg.out")" -eq 2 ] && grep -q "handed 2 downloads" "$work/bg.out"
    then
        pass "courier get --background hands the downloads to courierd and returns with their task numbers"
    else
        fail "courier get --background hands the downloads to courierd and returns with their task numbers" "$(show bg)"
    fi
    sleep 1.5
    kill -9 "$courierd_pid"
    wait "$courierd_pid" 2>/dev/null
    "$courierd" 2>>"$work/courierd.log" &
    courierd_pid=$!
    for _ in $(seq 1 300); do
        [ -f "$work/out-bg/slow.bin" ] && [ -f "$work/out-bg/one.bin" ] && break
        sleep 0.1
    done
    sleep 0.5
    "$courier" logs courier >"$work/bg-log.out" 2>&1
    if cmp -s "$files/one.bin" "$work/out-bg/one.bin" && cmp -s "$files/slow.bin" "$work/out-bg/slow.bin" \
        && grep -q "saved $work/out-bg/slow.bin" "$work/bg-log.out"; then
        pass "courier get --background survives courierd's SIGKILL: both files land where asked, byte for byte"
    else
        fail "courier get --background survives courierd's SIGKILL: both files land where asked, byte for byte" \
            "$(ls -la "$work/out-bg" 2>&1)" "$(tail -20 "$work/bg-log.out")"
    fi
    for _ in $(seq 1 100); do
        [ "$(wc -l <"$HOOK_LOG" 2>/dev/null || echo 0)" -ge 2 ] && break
        sleep 0.1
    done
    if grep -qx "saved $work/out-bg/one.bin" "$HOOK_LOG" && grep -qx "saved $work/out-bg/slow.bin" "$HOOK_LOG"; then
        pass "--on-complete with --background: the courier courierd launched runs the hook for each saved file"
    else
        fail "--on-complete with --background: the courier courierd launched runs the hook for each saved file" \
            "$(cat "$HOOK_LOG" 2>&1)" "$(tail -20 "$work/bg-log.out")"
    fi
    # Within 30 s: a sanitized build (scripts/sanitize.sh) is slow to wind down.
    for _ in $(seq 1 300); do
        pgrep -f "^$courier\$" >/dev/null || break
        sleep 0.1
    done
    # The log again: the one read above may be from before the launched courier said it was exiting.
    "$courier" logs courier >"$work/bg-log-end.out" 2>&1
    if ! pgrep -f "^$courier\$" >/dev/null && grep -q "no background transfer left; exiting" "$work/bg-log-end.out"; then
        pass "the courier courierd launched exits once no background transfer is left"
    else
        fail "the courier courierd launched exits once no background transfer is left" "$(pgrep -af courier)" \
            "$(tail -20 "$work/bg-log-end.out")"
    fi
    run bg-all tasks courier.transfers --all
    run bg-live tasks courier.transfers
    if [ "$(grep -c "^courier.transfers  [0-9]*  *completed .*$work/out-bg/" "$work/bg-all.out")" -eq 2 ] \
        && grep -q "completed  8.0 MiB / 8.0 MiB .*$work/out-bg/slow.bin" "$work/bg-all.out" \
        && ! grep -q "^courier.transfers" "$work/bg-live.out"; then
        pass "courier tasks --all keeps the ended tasks with how they ended; without it they are gone"
    else
        fail "courier tasks --all keeps the ended tasks with how they ended; without it they are gone" \
            "$(show bg-all)" "$(show bg-live)"
    fi
    # --watch in a pseudo-terminal (script(1)): progress bars redrawn in place, until nothing runs or waits.
    if command -v script >/dev/null; then
        run bg-watched get --background -P "$work/out-bg-watch" "$base/slow.bin?rate=3000000"
        timeout 60 script -qefc "$courier tasks --watch courier.transfers" "$work/watch.typescript" \
            >"$work/watch.out" 2>&1 </dev/null
        watch_rc=$?
        if [ "$watch_rc" -eq 0 ] && grep -q "running  *\[=*  *\] *[0-9]*%" "$work/watch.out" \
            && grep -q $'\e\[[0-9]*F' "$work/watch.out" && grep -q "no task is running or waiting" "$work/watch.out"
        then
            pass "courier tasks --watch on a terminal: live progress bars, redrawn in place, until nothing is left"
        else
            fail "courier tasks --watch on a terminal: live progress bars, redrawn in place, until nothing is left" \
                "exit $watch_rc" "$(tail -c 800 "$work/watch.out")"
        fi
    fi
    # --watch --json: a line of JSON per task each time it changed, the last one its end.
    # 3 MB at 1 MB/s: still running when the watch starts, even under a sanitizer.
    run bg-json get --background -P "$work/out-bg-json" "$base/two.bin?rate=1000000"
    timeout 60 "$courier" tasks --watch --json courier.transfers >"$work/watch-json.out" 2>"$work/watch-json.err" \
        </dev/null
    watch_rc=$?
    if [ "$watch_rc" -eq 0 ] && python3 - "$work/watch-json.out" <<'PY'; then
import json, sys
lines = [json.loads(line) for line in open(sys.argv[1])]
by_task = {}
for line in lines:
    by_task.setdefault(line["task"]["identifier"], []).append(line["task"])
followed = [seen for seen in by_task.values()
            if len(seen) >= 2 and seen[0]["state"] != 3 and seen[-1]["state"] == 3
            and seen[-1]["countOfBytesReceived"] == 3000001 and seen[-1].get("statusCode") == 200]
sys.exit(0 if followed and all(line["session"] == "courier.transfers" for line in lines) else 1)
PY
        pass "courier tasks --watch --json: a JSON line per change, the last one the task's end"
    else
        fail "courier tasks --watch --json: a JSON line per change, the last one the task's end" "exit $watch_rc" \
            "$(tail -c 1200 "$work/watch-json.out")" "$(cat "$work/watch-json.err")"
    fi
    run bg-put put --background "$files/two.bin" "$base/uploads-bg/"
    for _ in $(seq 1 200); do
        grep -q "uploaded .*two.bin -> $base/uploads-bg/two.bin" <("$courier" logs courier 2>&1) && break
        sleep 0.1
    done
    if [ "$rc" -eq 0 ] && grep -q "^task [0-9]*: .*two.bin -> $base/uploads-bg/two.bin" "$work/bg-put.out" \
        && cmp -s "$files/two.bin" "$files/uploads-bg/two.bin"; then
        pass "courier put --background: courierd uploads the file, and the relaunched courier logs it"
    else
        fail "courier put --background: courierd uploads the file, and the relaunched courier logs it" "$(show bg-put)" \
            "$("$courier" logs courier --lines 10 2>&1)"
    fi
    # --wait: the command stays, saves what courierd finished, and an HTTP error fails it as in-process.
    run bg-wait get --background --wait -P "$work/out-bg-wait" "$base/one.bin" "$base/status/404"
    rc_wait=$rc
    run bg-wait-all tasks courier.transfers --all
    rc_all=$rc
    # The events the first command heard were acknowledged before it exited: the next one does not hear them again.
    run bg-wait-again get --background --wait -P "$work/out-bg-wait" "$base/two.bin"
    if [ "$rc_wait" -eq 1 ] && [ "$rc_all" -eq 0 ] && grep -q "^error: $base/status/404: HTTP 404" "$work/bg-wait.out" \
        && cmp -s "$files/one.bin" "$work/out-bg-wait/one.bin" && [ ! -e "$work/out-bg-wait/404" ] \
        && grep -q "failed: HTTP 404 .*$work/out-bg-wait/404" "$work/bg-wait-all.out" \
        && [ "$rc" -eq 0 ] && cmp -s "$files/two.bin" "$work/out-bg-wait/two.bin" \
        && ! grep -q "404\|one.bin" "$work/bg-wait-again.out" "$work/bg-wait-again.err"; then
        pass "get --background --wait: saves the good file, exits 1 for the 404 (tasks: failed: HTTP 404), told once"
    else
        fail "get --background --wait: saves the good file, exits 1 for the 404 (tasks: failed: HTTP 404), told once" \
            "$(show bg-wait)" "$(show bg-wait-all)" "$(show bg-wait-again)"
    fi
    run status-one daemon status
    if grep -q "^  1 session, 0 active tasks, " "$work/status-one.out"; then
        pass "courier daemon status counts in the singular when there is one (1 session)"
    else
        fail "courier daemon status counts in the singular when there is one (1 session)" "$(show status-one)"
    fi
    # Another program drives courierd on the socket protocol alone (docs/ipc.md): the Python client of Examples/.
    client="$repo_root/Examples/python/courier_client.py"
    py_rc=0
    timeout 60 python3 "$client" download "$base/two.bin" "$work/py-two.bin" >"$work/py.out" 2>"$work/py.err" \
        || py_rc=$?
    py_missing_rc=0
    timeout 60 python3 "$client" download "$base/status/404" "$work/py-404.bin" >"$work/py-404.out" \
        2>"$work/py-404.err" || py_missing_rc=$?
    timeout 30 python3 "$client" tasks com.example.python --all >"$work/py-tasks.out" 2>&1
    if [ "$py_rc" -eq 0 ] && cmp -s "$files/two.bin" "$work/py-two.bin" && grep -q "^saved $work/py-two.bin" "$work/py.out" \
        && [ "$py_missing_rc" -eq 1 ] && grep -q "HTTP 404" "$work/py-404.err" && [ ! -e "$work/py-404.bin" ] \
        && [ "$(grep -c '"session": "com.example.python"' "$work/py-tasks.out")" -eq 2 ] \
        && grep -q '"statusCode": 404' "$work/py-tasks.out"; then
        pass "a Python client on the socket protocol alone: a download saved, a 404 failed, both listed"
    else
        fail "a Python client on the socket protocol alone: a download saved, a 404 failed, both listed" \
            "$(cat "$work/py.out" "$work/py.err" "$work/py-404.out" "$work/py-404.err")" "$(head -c 600 "$work/py-tasks.out")"
    fi
    run bg-refused get --background --force -P "$work/out-bg" "$base/one.bin"
    if [ "$rc" -eq 64 ] && grep -q -- "--background does not take --force" "$work/bg-refused.err"; then
        pass "--background refuses the options courierd decides itself"
    else
        fail "--background refuses the options courierd decides itself" "$(show bg-refused)"
    fi

    run stop daemon stop
    rc_stop=$rc
    wait "$courierd_pid"
    courierd_rc=$?
    if [ "$rc_stop" -eq 0 ] && [ "$courierd_rc" -eq 0 ] && [ ! -e "$XDG_RUNTIME_DIR/courier/courierd.sock" ]; then
        pass "courier daemon stop: courierd exits 0 and removes its socket"
    else
        fail "courier daemon stop: courierd exits 0 and removes its socket" "$(show stop)" "courierd exit $courierd_rc"
    fi

    # A command that needs courierd starts it when none answers (queued transfers go on from then), and says so.
    COURIERD="$courierd" run autostart tasks
    if [ "$rc" -eq 0 ] && grep -q "courierd was not running: started it" "$work/autostart.err" \
        && [ -S "$XDG_RUNTIME_DIR/courier/courierd.sock" ]; then
        pass "courier tasks with no courierd running starts one, and says so"
    else
        fail "courier tasks with no courierd running starts one, and says so" "$(show autostart)"
    fi
    run stop-autostarted daemon stop
    for _ in $(seq 1 100); do
        [ -S "$XDG_RUNTIME_DIR/courier/courierd.sock" ] || break
        sleep 0.05
    done

    # courier daemon install under a private HOME: the binary placed, the units written and enabled for login (where
    # systemd is installed: `systemctl --user enable` needs no running manager), and, no user manager answering here,
    # courierd started directly; uninstall undoes it.
    export HOME="$work/home"
    mkdir -p "$HOME"
    COURIERD="$courierd" run install daemon install
    installed="$HOME/.local/bin/courierd"
    units="$HOME/.config/systemd/user"
    run status-installed daemon status --json
    if [ -x "$installed" ] && grep -q "\"executable\" : \"$installed\"" "$work/status-installed.out"; then
        pass "courier daemon install: courierd placed in ~/.local/bin and the installed one runs"
    else
        fail "courier daemon install: courierd placed in ~/.local/bin and the installed one runs" \
            "$(show install)" "$(show status-installed)"
    fi
    if command -v systemctl >/dev/null; then
        if [ "$(readlink -f "$units/default.target.wants/courierd.service")" = "$units/courierd.service" ] \
            && [ "$(readlink -f "$units/sockets.target.wants/courierd.socket")" = "$units/courierd.socket" ] \
            && grep -q "^ExecStart=$installed$" "$units/courierd.service"; then
            pass "courier daemon install: courierd.service enabled at login and courierd.socket enabled"
        else
            fail "courier daemon install: courierd.service enabled at login and courierd.socket enabled" \
                "$(show install)" "$(find "$units" 2>&1)"
        fi
    fi
    run uninstall daemon uninstall
    run status-uninstalled daemon status
    if [ "$rc" -eq 3 ] && [ ! -e "$installed" ] && [ -z "$(find "$units" -name 'courierd*' 2>/dev/null)" ]; then
        pass "courier daemon uninstall: courierd stopped, its binary and units removed"
    else
        fail "courier daemon uninstall: courierd stopped, its binary and units removed" "$(show uninstall)" \
            "$(show status-uninstalled)" "$(find "$units" 2>&1)"
    fi

    # Socket activation: systemd-socket-activate holds the socket and starts courierd at the first connection.
    if command -v systemd-socket-activate >/dev/null; then
        mkdir -p "$XDG_RUNTIME_DIR/courier" && chmod 700 "$XDG_RUNTIME_DIR/courier"
        systemd-socket-activate -l "$XDG_RUNTIME_DIR/courier/courierd.sock" "$courierd" \
            >/dev/null 2>"$work/activated.log" &
        activator_pid=$!
        for _ in $(seq 1 100); do
            [ -S "$XDG_RUNTIME_DIR/courier/courierd.sock" ] && break
            sleep 0.05
        done
        run status-activated daemon status
        run stop-activated daemon stop
        wait "$activator_pid" 2>/dev/null
        if grep -q "is running" "$work/status-activated.out" \
            && grep -q "activation=socket passed by systemd" "$work/activated.log" \
            && [ -S "$XDG_RUNTIME_DIR/courier/courierd.sock" ]; then
            pass "socket activation: courierd serves on the passed socket and leaves its file to systemd"
        else
            fail "socket activation: courierd serves on the passed socket and leaves its file to systemd" \
                "$(show status-activated)" "$(cat "$work/activated.log")"
        fi
    fi
    unset XDG_RUNTIME_DIR XDG_STATE_HOME
else
    fail "courierd beside courier" "no courierd at $courierd (build it with swift build --product courierd)"
fi

echo "cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
