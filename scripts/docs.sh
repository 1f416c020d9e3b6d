#!/usr/bin/env bash
# The API reference, as users get it:
#   - the DocC catalog (Sources/Courier/Courier.docc: the articles) over the symbol graphs of the public modules
#     (Courier, and CourierLifecycle and CourierIPC, which `import Courier` brings), built with the toolchain's `docc`
#     with every warning an error (a broken symbol link, an unknown article) into
#     $build/docs/Courier.doccarchive, ready for static hosting (serve that folder, open /documentation/courier);
# The examples (Examples/) are built by scripts/dependent-check.sh, as targets of a package that requires Courier by
# version, as a user who copies them builds them.
# No package plugin is involved: swift-docc-plugin would become a dependency every user of the package resolves.
set -euo pipefail

script_name=docs
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$repo_root"

log "symbol graphs of the public modules"
graphs_written="$(swift package "${scratch_args[@]}" dump-symbol-graph --minimum-access-level public 2>&1 \
    | sed -n 's/^Files written to //p')"
if [ ! -d "$graphs_written" ]; then
    echo "docs: swift package dump-symbol-graph wrote no symbol graphs" >&2
    exit 1
fi
graphs="$(mktemp -d "${TMPDIR:-/tmp}/courier-symbols.XXXXXX")"
trap 'rm -rf "$graphs"' EXIT
for module in Courier CourierLifecycle CourierIPC; do
    cp "$graphs_written/$module.symbols.json" "$graphs/"
    cp "$graphs_written/$module"@*.symbols.json "$graphs/" 2>/dev/null || true
done

build="$(cd "$(swift build "${scratch_args[@]}" --show-bin-path)/.." && pwd)"
archive="$build/docs/Courier.doccarchive"
mkdir -p "$build/docs"
log "docc convert, warnings as errors -> $archive"
rm -rf "$archive"
docc convert Sources/Courier/Courier.docc \
    --additional-symbol-graph-dir "$graphs" \
    --fallback-display-name Courier \
    --fallback-bundle-identifier org.courier.Courier \
    --warnings-as-errors \
    --transform-for-static-hosting \
    --output-path "$archive"

log "ok: API reference built without a warning"
