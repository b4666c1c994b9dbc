#!/usr/bin/env bash
# Creates BUILD_DIR/.venv-onnx with onnx + onnxruntime + numpy from PyPI for tests/onnx/test_onnx.sh
# (nothing to do when it already imports them). Under CI three tries, each with pip's own
# retries; elsewhere one.
# Exit: 0 ready; 77 cannot be created (no python3-venv, PyPI unreachable) outside CI, where
# test_onnx is then reported as skipped; 1 the same under CI=true, where it is a failure.
# usage: setup_venv.sh BUILD_DIR
set -u
BUILD=${1:?build dir}
VENV="$BUILD/.venv-onnx"
PY="$VENV/bin/python"
LOGF="$BUILD/.venv-onnx.log"
PKGS=(onnx onnxruntime numpy)

in_ci() { case "${CI:-}" in "" | 0 | false) return 1 ;; *) return 0 ;; esac; }
give_up() {
    if in_ci; then
        echo "FAIL: $* (CI is set: the ONNX tests must run)" >&2
        [ -s "$LOGF" ] && tail -20 "$LOGF" >&2
        exit 1
    fi
    echo "SKIP: $*"
    exit 77
}

"$PY" -c 'import onnx, onnxruntime, numpy' >/dev/null 2>&1 && exit 0
mkdir -p "$BUILD"
: >"$LOGF"
python3 -m venv "$VENV" >>"$LOGF" 2>&1 || give_up "python3 -m venv failed (install python3-venv; see $LOGF)"
tries=1
in_ci && tries=3
for ((try = 1; try <= tries; try++)); do
    echo "setup_venv: pip install ${PKGS[*]} into $VENV (try $try)" >&2
    if "$VENV/bin/pip" install -q --disable-pip-version-check --timeout 60 --retries 3 "${PKGS[@]}" >>"$LOGF" 2>&1 &&
        "$PY" -c 'import onnx, onnxruntime, numpy' >>"$LOGF" 2>&1; then
        exit 0
    fi
    [ "$try" -lt "$tries" ] && sleep $((try * 10))
done
give_up "cannot install ${PKGS[*]} from PyPI into $VENV (see $LOGF)"
