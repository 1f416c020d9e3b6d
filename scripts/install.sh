#!/usr/bin/env bash
# Installs the command-line tool: builds `courier` and `courierd` (release; one `swift build` per product, since
# SwiftPM builds only the last of several --product options) and places, under PREFIX (default ~/.local):
#
#   bin/courier, bin/courierd
#   share/man/man1/courier.1                              (from the same declarations as --help: lib/manpage.py)
#   share/bash-completion/completions/courier             (bash-completion loads it on first use)
#   share/zsh/site-functions/_courier                     (on zsh's $fpath where PREFIX is /usr/local or /usr)
#   share/fish/vendor_completions.d/courier.fish
#
# then says what to run next: `courier daemon install` makes courierd a user service started at login.
#
#   bash scripts/install.sh [--prefix DIR] [--debug]
#
# --debug installs the debug build instead (quicker to build; the test command checks the install with it). The
# system packages are installed first when missing (scripts/bootstrap.sh). Nothing outside PREFIX is touched.
set -euo pipefail

script_name=install
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$repo_root"

prefix="$HOME/.local"
configuration=release
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix)
            [ $# -ge 2 ] || { echo "install: --prefix takes a directory" >&2; exit 64; }
            prefix="$2"
            shift 2
            ;;
        --prefix=*)
            prefix="${1#--prefix=}"
            shift
            ;;
        --debug)
            configuration=debug
            shift
            ;;
        -h | --help)
            sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "install: unknown argument '$1' (usage: bash scripts/install.sh [--prefix DIR] [--debug])" >&2
            exit 64
            ;;
    esac
done
case "$prefix" in
    /*) ;;
    *) prefix="$PWD/$prefix" ;;
esac

bash scripts/bootstrap.sh

log "building courier and courierd ($configuration)"
swift build -c "$configuration" --product courier "${scratch_args[@]}"
swift build -c "$configuration" --product courierd "${scratch_args[@]}"
built="$(swift build -c "$configuration" --show-bin-path "${scratch_args[@]}")"

mkdir -p "$prefix/bin" "$prefix/share/man/man1" "$prefix/share/bash-completion/completions" \
    "$prefix/share/zsh/site-functions" "$prefix/share/fish/vendor_completions.d"
for tool in courier courierd; do
    # Through a new name and a rename: a running courierd keeps its own binary.
    install -m 0755 "$built/$tool" "$prefix/bin/.$tool.new"
    mv -f "$prefix/bin/.$tool.new" "$prefix/bin/$tool"
done

"$prefix/bin/courier" --generate-completion-script bash >"$prefix/share/bash-completion/completions/courier"
"$prefix/bin/courier" --generate-completion-script zsh >"$prefix/share/zsh/site-functions/_courier"
"$prefix/bin/courier" --generate-completion-script fish >"$prefix/share/fish/vendor_completions.d/courier.fish"

# The man page, from the same declarations as --help.
"$prefix/bin/courier" --experimental-dump-help \
    | python3 scripts/lib/manpage.py "$("$prefix/bin/courier" --version)" >"$prefix/share/man/man1/courier.1"

log "installed $prefix/bin/courier and $prefix/bin/courierd ($("$prefix/bin/courier" --version)), the man page and"
log "  the bash, zsh and fish completions under $prefix/share"
case ":$PATH:" in
    *":$prefix/bin:"*) ;;
    *) log "$prefix/bin is not on PATH: add it (for bash: echo 'export PATH=\"$prefix/bin:\$PATH\"' >>~/.bashrc)" ;;
esac
log "next: \`courier daemon install\` makes courierd a user service that starts at login (see \`man courier\`)"
