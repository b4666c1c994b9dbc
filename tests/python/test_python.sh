#!/usr/bin/env bash
# The Python package (python/, README.md "Python"): a fresh venv in the build dir, numpy and
# pytest from PyPI, then `pip install python/` (scikit-build-core builds libcodectalk.so with
# CMake from this tree) and pytest python/tests against the installed package with the built
# codectalk program. Outside CI one try at PyPI, and an unreachable PyPI (or no python3-venv) is
# exit 77 (skipped); under CI=true three tries and a failure. A failing pip install of the
# package itself or a failing test is always a failure.
# usage: test_python.sh CODECTALK_BIN SRC_DIR BUILD_DIR
set -u
BIN=${1:?codectalk program}
SRC=${2:?source dir}
BUILD=${3:?build dir}
VENV="$BUILD/.venv-python"
LOGF="$BUILD/.venv-python.log"

WHAT="Python tests"
# shellcheck source=../lib/pyvenv.sh
. "$SRC/tests/lib/pyvenv.sh"
pyvenv_ensure "" numpy pytest # always a fresh venv: the package is installed into it below

echo "pip install $SRC/python into $VENV" >&2
if ! "$VENV/bin/pip" install --disable-pip-version-check --timeout 60 --retries 3 "$SRC/python" >>"$LOGF" 2>&1; then
    tail -40 "$LOGF" >&2
    echo "FAIL: pip install $SRC/python (log: $LOGF)" >&2
    exit 1
fi
# from the build dir, so that `import codectalk` finds the installed package, not python/ of
# the source tree; no bytecode or pytest cache written into the source tree
cd "$BUILD" || exit 1
PYTHONDONTWRITEBYTECODE=1 CODECTALK_BIN="$BIN" \
    "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$SRC/python/tests"
