# Shared helpers for the scripts in scripts/ (sourced, not run).
#
# COURIER_SCRATCH_PATH: build folder for swift build/test (default: SwiftPM's own .build). Use it to keep a
# second build beside another one, e.g. COURIER_SCRATCH_PATH=.build-cli bash scripts/test.sh

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# The --scratch-path arguments for swift, if COURIER_SCRATCH_PATH is set.
scratch_args=()
if [ -n "${COURIER_SCRATCH_PATH:-}" ]; then
    scratch_args=(--scratch-path "$COURIER_SCRATCH_PATH")
fi

log() {
    printf '%s: %s\n' "${script_name:-courier}" "$*"
}

# start_file_server ROOT LOG [PORT [SERVE.PY OPTIONS...]]: serves ROOT on 127.0.0.1 with scripts/lib/serve.py, on
# PORT or a free port (0). Sets server_pid and server_port.
start_file_server() {
    local root="$1" request_log="$2" port="${3:-0}"
    shift 3 2>/dev/null || shift $#
    local port_file
    port_file="$(mktemp "${TMPDIR:-/tmp}/courier-port.XXXXXX")"
    rm -f "$port_file"
    python3 "$repo_root/scripts/lib/serve.py" --root "$root" --port-file "$port_file" --log "$request_log" \
        --port "$port" "$@" &
    server_pid=$!
    local waited=0
    while [ ! -s "$port_file" ]; do
        if ! kill -0 "$server_pid" 2>/dev/null; then
            echo "${script_name:-courier}: the file server did not start" >&2
            return 1
        fi
        if [ "$waited" -ge 100 ]; then
            echo "${script_name:-courier}: the file server did not report its port within 10 s" >&2
            return 1
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
    server_port="$(cat "$port_file")"
    rm -f "$port_file"
}

# stop_file_server: stops the server started by start_file_server, if any.
stop_file_server() {
    if [ -n "${server_pid:-}" ]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=""
    fi
}

# processes_left_behind: the pids of processes still running from an executable under the repository (courierd, the
# test probes, the test runner, `courier`), one a line, this shell and its parents excepted.
processes_left_behind() {
    local proc pid exe
    for proc in /proc/[0-9]*; do
        pid="${proc#/proc/}"
        exe="$(readlink "$proc/exe" 2>/dev/null)" || continue
        case "$exe" in
        "$repo_root"/*) [ "$pid" != "$$" ] && echo "$pid" ;;
        esac
    done
}
