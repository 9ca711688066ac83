# Sourced by bin/holon, bin/test and bin/check: make sure .venv is ready.
# Fast path in the shell (no Python start-up): the stamp matches pyproject.toml.
holon_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
holon_venv="$holon_root/.venv"

holon_pick_python() {
    if [ -n "${HOLON_PYTHON:-}" ]; then echo "$HOLON_PYTHON"; return; fi
    for py in python3 python3.13 python3.12 python3.11; do
        if command -v "$py" >/dev/null 2>&1 &&
           "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
            echo "$py"; return
        fi
    done
    echo "holon: Python >= 3.11 is needed (set HOLON_PYTHON)" >&2
    exit 3
}

holon_ensure_env() {  # $1: runtime | dev
    local want="$1" stamp digest level
    if [ -x "$holon_venv/bin/python" ] && [ -f "$holon_venv/.holon-stamp" ]; then
        read -r digest level < "$holon_venv/.holon-stamp" || true
        if [ "$digest" = "$(sha256sum "$holon_root/pyproject.toml" | cut -d' ' -f1)" ] &&
           { [ "$want" = runtime ] || [ "$level" = dev ]; }; then
            return 0
        fi
    fi
    "$(holon_pick_python)" "$holon_root/bin/_bootstrap.py" "$holon_root" "$want" || exit $?
}
