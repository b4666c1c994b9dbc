# Sourced by the tests that need packages from PyPI (ONNX Runtime, the OpenAI SDK, wyoming,
# websockets, the Python package's numpy and pytest): one way to make their venv in the build dir.
# Outside CI one try at PyPI, and an unreachable PyPI (or no python3-venv) is exit 77, which
# ctest reports as skipped; under CI=true three tries (each with pip's own retries) and exit 1.
# The caller sets VENV (the venv's dir), LOGF (pip's log) and WHAT (the test, for messages).

in_ci() { case "${CI:-}" in "" | 0 | false) return 1 ;; *) return 0 ;; esac; }

give_up() {
    if in_ci; then
        echo "FAIL: $* (CI is set: the $WHAT must run)" >&2
        [ -s "$LOGF" ] && tail -20 "$LOGF" >&2
        exit 1
    fi
    echo "SKIP: $*"
    exit 77
}

# pyvenv_ensure IMPORTS PKG...: nothing to do when $VENV's python runs `import IMPORTS`; else
# (re)creates $VENV and pip-installs the packages, then checks the import again. IMPORTS ""
# always makes a fresh venv.
pyvenv_ensure() {
    local imports=$1 try tries=1
    shift
    if [ -n "$imports" ] && "$VENV/bin/python" -c "import $imports" >/dev/null 2>&1; then return 0; fi
    rm -rf "$VENV"
    mkdir -p "$(dirname "$VENV")"
    : >"$LOGF"
    python3 -m venv "$VENV" >>"$LOGF" 2>&1 || give_up "python3 -m venv failed (install python3-venv; see $LOGF)"
    in_ci && tries=3
    for ((try = 1; try <= tries; try++)); do
        echo "pip install $* into $VENV (try $try)" >&2
        if "$VENV/bin/pip" install -q --disable-pip-version-check --timeout 60 --retries 3 "$@" >>"$LOGF" 2>&1 &&
            { [ -z "$imports" ] || "$VENV/bin/python" -c "import $imports" >>"$LOGF" 2>&1; }; then
            return 0
        fi
        [ "$try" -lt "$tries" ] && sleep $((try * 10))
    done
    give_up "cannot install $* from PyPI into $VENV (see $LOGF)"
}
