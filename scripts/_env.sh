# Sourced by scripts/run and scripts/test: make sure .venv exists and holds this checkout.
# usage: ensure_venv "" | ensure_venv "[dev]"
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"

# The interpreter .venv is made with: $PYTHON when set; else the system's own python3 when it is
# 3.11 or newer and can make a venv (a distribution's build is compiled with optimisations that
# a default source build lacks, and the bot spends less CPU a message on it); else the first
# python3 on PATH.
make_venv() {
    local candidates=(/usr/bin/python3 python3)
    if [ -n "${PYTHON:-}" ]; then
        candidates=("$PYTHON")
    fi
    local check='import sys; print(sys.version.split()[0]); sys.exit(sys.version_info < (3, 11))'
    local python version
    for python in "${candidates[@]}"; do
        if version="$("$python" -c "$check" 2>/dev/null)" && "$python" -m venv "$VENV" 2>/dev/null
        then
            echo "Created .venv with $python (Python $version)" >&2
            return 0
        fi
        rm -rf "$VENV"
    done
    echo "Nahida needs Python 3.11 or newer with venv (set PYTHON=/path/to/python3.11)." >&2
    exit 2
}

ensure_venv() {
    local extras="$1"
    if [ ! -x "$VENV/bin/python" ]; then
        echo "Creating .venv (first run) ..." >&2
        make_venv
    fi
    local stamp="$VENV/.nahida-installed$extras"
    local want
    want="$(cat "$ROOT/pyproject.toml" | sha256sum | cut -c1-16)"
    # the dev install holds everything the plain one needs: ./scripts/run after ./scripts/test
    # must not reinstall
    if [ -z "$extras" ] && [ -f "$VENV/.nahida-installed[dev]" ] \
        && [ "$(cat "$VENV/.nahida-installed[dev]")" = "$want" ]; then
        return 0
    fi
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
        echo "Installing nahida$extras into .venv ..." >&2
        "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip >&2
        "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "$ROOT$extras" >&2
        echo "$want" > "$stamp"
    fi
}
