#!/usr/bin/env bash
# Installs the system packages Courier builds against, only when they are missing:
#   libuv1-dev libcurl4-openssl-dev pkg-config   (the C engine in CSupport/)
#   libsqlite3-dev                               (courierd's journal, through GRDB: Sources/CourierDaemon)
#   zlib1g-dev libbrotli-dev libzstd-dev         (the test server's content encoders, Tests/CTestCompression)
#   gcc make                                     (the engine's C checks: CSupport/tests/run.sh)
#   python3  (only when there is no python3 on PATH: the demo and the CLI tests serve files with it)
#   and any package named as an argument (Benchmarks/run.sh asks for nginx, curl and openssl; the test and sanitizer scripts
#   for dbus-daemon, dbus-bin, libglib2.0-bin and python3-jeepney: a private bus, dbus-monitor, gdbus and a
#   NetworkManager stand-in for the desktop notification and metered network tests).
# Idempotent: does nothing (and needs no network) when everything is there. Runs apt-get as root, or through
# sudo when not root and sudo is available. Debian 12 (bookworm) or a derivative.
set -euo pipefail

packages=(libuv1-dev libcurl4-openssl-dev pkg-config libsqlite3-dev zlib1g-dev libbrotli-dev libzstd-dev gcc make "$@")

missing=()
for package in "${packages[@]}"; do
    if ! dpkg -s "$package" >/dev/null 2>&1; then
        missing+=("$package")
    fi
done
if ! command -v python3 >/dev/null 2>&1; then
    missing+=(python3)
fi

if [ "${#missing[@]}" -eq 0 ]; then
    echo "bootstrap: system packages present (${packages[*]}, python3)"
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "bootstrap: missing ${missing[*]}, and apt-get is not available; install them by hand" >&2
    exit 1
fi

as_root=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        as_root=(sudo)
    else
        echo "bootstrap: missing ${missing[*]}; run this script as root (or install sudo)" >&2
        exit 1
    fi
fi

echo "bootstrap: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -q
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "bootstrap: done"
