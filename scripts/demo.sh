#!/usr/bin/env bash
# The main job: install what is missing, build `courier` and `courierd` in release mode, generate files, serve them
# on 127.0.0.1, then:
#
# 1. download them all in-process with `courier get --parallel 8` (live progress on a terminal, then a summary with
#    the throughput) and check every byte against the originals with sha256sum;
# 2. hand them to courierd with `courier get --background` (the command returns at once), SIGKILL courierd mid-way,
#    start it again, watch the transfers resume (`courier tasks --watch`), and once the batch has ended (courierd
#    launched `courier` in the background to save the files) check every byte again.
#
# courierd runs on private directories under the demo's temporary folder (never the user's), and is stopped at the
# end. Exit status: non-zero if the build, any download, or any checksum fails.
#
# Knobs (environment): DEMO_LARGE_COUNT (5) files of DEMO_LARGE_MIB (64) MiB, DEMO_SMALL_COUNT (200) files of
# DEMO_SMALL_KIB (256) KiB, DEMO_PARALLEL (8), DEMO_KEEP=1 keeps the temporary folder, COURIER_SCRATCH_PATH
# (see scripts/lib/common.sh).
set -euo pipefail

script_name=demo
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$repo_root"

large_count="${DEMO_LARGE_COUNT:-5}"
large_mib="${DEMO_LARGE_MIB:-64}"
small_count="${DEMO_SMALL_COUNT:-200}"
small_kib="${DEMO_SMALL_KIB:-256}"
parallel="${DEMO_PARALLEL:-8}"

bash scripts/bootstrap.sh

log "building courier and courierd (release)"
swift build -c release --product courier "${scratch_args[@]}"
swift build -c release --product courierd "${scratch_args[@]}"
courier="$(swift build -c release --show-bin-path "${scratch_args[@]}")/courier"

work="$(mktemp -d "${TMPDIR:-/tmp}/courier-demo.XXXXXX")"
server_pid=""
cleanup() {
    if [ -n "${XDG_RUNTIME_DIR:-}" ] && [ "${XDG_RUNTIME_DIR#"$work"}" != "$XDG_RUNTIME_DIR" ]; then
        "$courier" daemon stop >/dev/null 2>&1 || true
    fi
    stop_file_server
    if [ "${DEMO_KEEP:-0}" = 1 ]; then
        log "kept $work"
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

files="$work/files"
out="$work/downloads"
mkdir -p "$files"
log "generating $large_count x $large_mib MiB and $small_count x $small_kib KiB of random data in $files"
for i in $(seq 1 "$large_count"); do
    head -c "$((large_mib * 1024 * 1024))" /dev/urandom >"$files/large-$i.bin"
done
for i in $(seq -w 1 "$small_count"); do
    head -c "$((small_kib * 1024))" /dev/urandom >"$files/small-$i.bin"
done
(cd "$files" && sha256sum -- *.bin) >"$work/expected.sha256"

start_file_server "$files" "$work/requests.log"
log "serving $files on http://127.0.0.1:$server_port/ (pid $server_pid)"

urls=()
for path in "$files"/*.bin; do
    urls+=("http://127.0.0.1:$server_port/$(basename "$path")")
done

log "courier get --parallel $parallel -P $out (${#urls[@]} URLs)"
status=0
"$courier" get --parallel "$parallel" -P "$out" "${urls[@]}" || status=$?
if [ "$status" -ne 0 ]; then
    log "courier get failed with exit status $status" >&2
    exit "$status"
fi

log "verifying sha256 of ${#urls[@]} files"
if ! (cd "$out" && sha256sum --quiet --strict -c "$work/expected.sha256"); then
    log "MISMATCH: downloaded files differ from the originals" >&2
    exit 1
fi
extra="$(cd "$out" && find . -mindepth 1 ! -name '*.bin' | head -5)"
if [ -n "$extra" ]; then
    log "unexpected files left in the download folder: $extra" >&2
    exit 1
fi
log "OK: ${#urls[@]} files downloaded and verified"

# --- 2. The background half: transfers that outlive their app, and courierd's own death ---------------------------
# A courierd of the demo's own, never the user's.
export XDG_RUNTIME_DIR="$work/xdg-run" XDG_STATE_HOME="$work/xdg-state"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
background_out="$work/background-downloads"
# The large files are served at about 20 MB/s each (a first request only; a resumed one comes at full speed), so
# that courierd is still at work when it is killed.
background_urls=()
for url in "${urls[@]}"; do
    case "$url" in
    */large-*) background_urls+=("$url?rate=20000000") ;;
    *) background_urls+=("$url") ;;
    esac
done
log "part 2: handing the same ${#background_urls[@]} files to courierd: courier get --background -P $background_out"
"$courier" get --background -P "$background_out" "${background_urls[@]}" >"$work/handed.out"
log "courier returned at once: $(tail -1 "$work/handed.out" | cut -d';' -f1); courierd downloads them without it"
sleep 1
courierd_pid="$(sed -n 's/.*"pid" : \([0-9]*\).*/\1/p' <("$courier" daemon status --json))"
"$courier" tasks courier.transfers | awk 'NR == 1 || /running/' | head -8
log "SIGKILL courierd (pid $courierd_pid) in the middle of the batch: no chance to save anything"
kill -9 "$courierd_pid"
while kill -0 "$courierd_pid" 2>/dev/null; do sleep 0.05; done
log "courierd is gone and nothing transfers; starting it again (courier daemon start): it reads its journal and"
log "resumes each interrupted download from the bytes on disk (Range requests)"
"$courier" daemon start >/dev/null
"$courier" tasks --watch courier.transfers
log "every transfer has ended; waiting for courier, launched by courierd in the background, to save the files"
for _ in $(seq 1 1200); do
    [ "$(find "$background_out" -maxdepth 1 -name '*.bin' 2>/dev/null | wc -l)" -ge "${#urls[@]}" ] && break
    sleep 0.1
done
"$courier" logs courier --lines 4 | sed 's/^/  log: /'
resumed="$(grep -c 'range=bytes=[1-9]' "$work/requests.log" || true)"
log "courierd resumed $resumed downloads with Range after its restart; verifying sha256 of ${#urls[@]} files"
if ! (cd "$background_out" && sha256sum --quiet --strict -c "$work/expected.sha256"); then
    log "MISMATCH: files courierd downloaded differ from the originals" >&2
    exit 1
fi
"$courier" daemon stop >/dev/null
log "OK: ${#urls[@]} files handed to courierd, which was SIGKILLed mid-way and started again, all verified"
