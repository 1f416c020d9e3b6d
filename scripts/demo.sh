#!/usr/bin/env bash
# The main job: install what is missing, build the `courier` tool in release mode, generate files, serve them
# on 127.0.0.1, download them all with `courier get --parallel 8` (live progress on a terminal, then a summary
# with the throughput), check every byte against the originals with sha256sum, and stop the server.
#
# Exit status: non-zero if the build, any download, or any checksum fails.
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

log "building courier (release)"
swift build -c release --product courier "${scratch_args[@]}"
courier="$(swift build -c release --show-bin-path "${scratch_args[@]}")/courier"

work="$(mktemp -d "${TMPDIR:-/tmp}/courier-demo.XXXXXX")"
server_pid=""
cleanup() {
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
