#!/usr/bin/env bash
# Runs the Autobahn|Testsuite fuzzing server against Courier's WebSocket client and summarises its verdicts.
#
# 1. Makes (once) a Python 2.7 virtualenv with autobahntestsuite 25.10.1 and the old dependencies it runs on, under
#    ${TMPDIR:-/tmp}/autobahn-venv (Python 2.7 from pyenv's 2.7.18, or a python2.7 on PATH).
# 2. Starts `wstest -m fuzzingserver` on ws://127.0.0.1:9001 with every case but 12.* and 13.* (permessage-deflate,
#    which Courier does not negotiate), its reports in a temporary folder.
# 3. Builds Examples' AutobahnClient in release mode and runs it: it echoes every case and asks for the reports.
# 4. Reads the server's index.json and prints the count of each behavior (OK, NON-STRICT, INFORMATIONAL,
#    UNIMPLEMENTED, FAILED) overall and per category (1.* … 10.*), then every case whose behavior or close behavior
#    is not OK (INFORMATIONAL close behavior aside) with what the server expected and observed.
#
# Takes about 30 seconds once the venv and the release build exist (the 301 cases run in under 30 s); making the venv
# adds about 30 s and a clean release build about 2 minutes. The client gives up on one case after
# AUTOBAHN_CASE_TIMEOUT (60) seconds. Exit status: non-zero if any case FAILED (its behavior or its close behavior)
# or has no verdict. The server is stopped on exit; AUTOBAHN_KEEP=1 keeps the reports folder (else it is removed).
set -euo pipefail

script_name=autobahn
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$repo_root"

tmp_root="${TMPDIR:-/tmp}"
venv="$tmp_root/autobahn-venv"
port=9001
agent=Courier
case_timeout="${AUTOBAHN_CASE_TIMEOUT:-60}"

work="$(mktemp -d "$tmp_root/courier-autobahn.XXXXXX")"
outdir="$work/reports"
server_pid=""

cleanup() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    if [ "${AUTOBAHN_KEEP:-0}" = 1 ]; then
        log "reports kept in $outdir"
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT

# --- 1. The virtualenv -------------------------------------------------------------------------------------------

find_python2() {
    local candidate
    for candidate in "$HOME/.pyenv/versions/2.7.18/bin/python" "$(command -v python2.7 || true)"; do
        if [ -n "$candidate" ] && [ -x "$candidate" ] &&
            "$candidate" -c 'import sys; assert sys.version_info[:2] == (2, 7)' 2>/dev/null; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

if [ ! -x "$venv/bin/wstest" ]; then
    python2="$(find_python2)" || {
        log "no Python 2.7 found (pyenv install 2.7.18, or a python2.7 on PATH)"
        exit 2
    }
    log "making $venv with $python2"
    if ! "$python2" -m virtualenv --version >/dev/null 2>&1; then
        "$python2" -m pip install --quiet --user 'virtualenv<20.22'
    fi
    rm -rf "$venv"
    "$python2" -m virtualenv --quiet "$venv"
    # The versions pip picks for Python 2.7, pinned: the last ones that install and run there.
    "$venv/bin/pip" install --quiet --disable-pip-version-check \
        autobahntestsuite==25.10.1 autobahn==0.10.9 Twisted==19.10.0 txaio==2.1.0 \
        klein==17.10.0 Werkzeug==1.0.1 Jinja2==2.11.3 MarkupSafe==1.1.1 \
        cryptography==3.3.2 pyOpenSSL==19.1.0 service-identity==18.1.0 cffi==1.15.1 pycparser==2.21 \
        pyasn1==0.5.1 pyasn1-modules==0.3.0 attrs==21.4.0 Automat==22.10.0 hyperlink==21.0.0 idna==2.10 \
        incremental==16.10.1 constantly==15.1.0 zope.interface==4.6.0 PyHamcrest==1.10.1 six==1.16.0 \
        unittest2==1.1.0 wsaccel==0.6.6 ujson==2.0.3 2>&1 | grep -v DEPRECATION || true
    [ -x "$venv/bin/wstest" ] || {
        log "autobahntestsuite did not install in $venv"
        exit 2
    }
fi

# --- 2. The fuzzing server ---------------------------------------------------------------------------------------

if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    log "something already listens on 127.0.0.1:$port; stop it first"
    exit 2
fi

mkdir -p "$outdir"
cat >"$work/fuzzingserver.json" <<EOF
{
    "url": "ws://127.0.0.1:$port",
    "outdir": "$outdir",
    "cases": ["*"],
    "exclude-cases": ["12.*", "13.*"],
    "exclude-agent-cases": {}
}
EOF

log "starting the fuzzing server on 127.0.0.1:$port (log: $work/fuzzingserver.log)"
(cd "$work" && exec "$venv/bin/wstest" -m fuzzingserver -s "$work/fuzzingserver.json") >"$work/fuzzingserver.log" 2>&1 &
server_pid=$!

# --- 3. The client -----------------------------------------------------------------------------------------------

log "building AutobahnClient (release)"
swift build --package-path Examples --product AutobahnClient -c release
client="$(swift build --package-path Examples --product AutobahnClient -c release --show-bin-path)/AutobahnClient"

for _ in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        break
    fi
    if ! kill -0 "$server_pid" 2>/dev/null; then
        log "the fuzzing server exited:"
        cat "$work/fuzzingserver.log"
        exit 2
    fi
    sleep 0.2
done

log "running the cases"
started=$SECONDS
client_status=0
"$client" "ws://127.0.0.1:$port" --agent "$agent" --timeout "$case_timeout" || client_status=$?
log "client finished in $((SECONDS - started)) s (status $client_status)"

# --- 4. The summary ----------------------------------------------------------------------------------------------

if [ ! -f "$outdir/index.json" ]; then
    log "no $outdir/index.json: the server wrote no report"
    exit 1
fi

python3 - "$outdir" "$agent" "$work/fuzzingserver.json" <<'PYTHON'
import json
import os
import re
import sys

outdir, agent, config_path = sys.argv[1:4]
with open(os.path.join(outdir, "index.json")) as f:
    index = json.load(f).get(agent, {})

BEHAVIORS = ["OK", "NON-STRICT", "INFORMATIONAL", "UNIMPLEMENTED", "FAILED"]


def key(case_id):
    return tuple(int(part) for part in case_id.split("."))


def plain(text):
    """A report's HTML text as one plain line."""
    text = re.sub(r"<[^>]+>", "", text or "")
    return re.sub(r"\s+", " ", text).strip()


cases = sorted(index, key=key)
categories = sorted({c.split(".")[0] for c in cases}, key=int)
counts = {cat: {b: 0 for b in BEHAVIORS} for cat in categories}
for case_id in cases:
    behavior = index[case_id].get("behavior")
    counts[case_id.split(".")[0]].setdefault(behavior, 0)
    counts[case_id.split(".")[0]][behavior] += 1

columns = BEHAVIORS + sorted({b for c in counts.values() for b in c} - set(BEHAVIORS))
print()
print("%-8s %6s " % ("category", "cases") + " ".join("%13s" % b for b in columns))
total = {b: 0 for b in columns}
for cat in categories:
    row = counts[cat]
    for b in columns:
        total[b] += row.get(b, 0)
    print("%-8s %6d " % (cat + ".*", sum(row.values())) + " ".join("%13d" % row.get(b, 0) for b in columns))
print("%-8s %6d " % ("all", len(cases)) + " ".join("%13d" % total[b] for b in columns))

failed = False
not_ok = [
    c for c in cases
    if index[c].get("behavior") != "OK" or index[c].get("behaviorClose") not in ("OK", "INFORMATIONAL")
]
if not_ok:
    print()
    print("Cases not OK (behavior / close behavior):")
for case_id in not_ok:
    entry = index[case_id]
    if "FAILED" in (entry.get("behavior"), entry.get("behaviorClose")):
        failed = True
    report = {}
    path = os.path.join(outdir, entry.get("reportfile", ""))
    if os.path.isfile(path):
        with open(path) as f:
            report = json.load(f)
    print("  %s  %s / %s  (remote close code %s, %s ms)" % (
        case_id, entry.get("behavior"), entry.get("behaviorClose"), entry.get("remoteCloseCode"),
        entry.get("duration")))
    if report.get("description"):
        print("      description: %s" % plain(report["description"]))
    if report.get("expectation"):
        print("      expectation: %s" % plain(report["expectation"]))
    if report.get("result"):
        print("      result:      %s" % plain(report["result"]))
    if report.get("resultClose"):
        print("      close:       %s" % plain(report["resultClose"]))

# Cases the server was to run but has no verdict for (the client stopped early, or never reached them).
with open(os.path.join(outdir, "..", "fuzzingserver.log")) as f:
    log = f.read()
match = re.search(r"Cases = (\[.*\])", log)
if match:
    expected = set(re.findall(r"'([0-9.]+)'", match.group(1)))
    missing = sorted(expected - set(cases), key=key)
    if missing:
        failed = True
        print()
        print("No verdict for %d case(s): %s" % (len(missing), ", ".join(missing)))

print()
print("FAILED" if failed else "no case FAILED")
sys.exit(1 if failed else 0)
PYTHON
