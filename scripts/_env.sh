# Sourced by scripts/run and scripts/test: make sure .venv exists and holds this checkout.
# usage: ensure_venv "" | ensure_venv "[dev]"
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"

ensure_venv() {
    local extras="$1"
    local python="${PYTHON:-python3}"
    if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        echo "Nahida needs Python 3.11 or newer (set PYTHON=/path/to/python3.11)." >&2
        exit 2
    fi
    if [ ! -x "$VENV/bin/python" ]; then
        echo "Creating .venv (first run) ..." >&2
        "$python" -m venv "$VENV"
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
