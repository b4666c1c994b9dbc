#!/usr/bin/env bash
# ONNX export checks (issue 8): exports the tiny random model's talker / predictor decode
# steps (FP32, FP16, v1 layout) and codec windows (ramp 2,4, context 72), dumps our engine's
# reference outputs with dump_ref, and runs tools/onnx/verify.py and sanitize_test.py in ONNX
# Runtime. Needs a virtualenv with onnx + onnxruntime + numpy (created at
# BUILD_DIR/.venv-onnx from PyPI when missing); SKIPs with exit 0 when PyPI is unreachable.
# usage: test_onnx.sh CODECTALK_BIN DUMP_REF_BIN SRC_DIR BUILD_DIR
set -u
CT=${1:?codectalk binary}
DUMP=${2:?dump_ref binary}
SRC=${3:?source dir}
BUILD=${4:?build dir}
VENV="$BUILD/.venv-onnx"
PY="$VENV/bin/python"

if ! "$PY" -c 'import onnx, onnxruntime, numpy' >/dev/null 2>&1; then
    if ! python3 -m venv "$VENV" >/dev/null 2>&1; then
        echo "SKIP: python3 -m venv is not available (install python3-venv)"; exit 0
    fi
    if ! "$VENV/bin/pip" install -q --disable-pip-version-check --timeout 30 --retries 1 \
            onnx onnxruntime numpy >"$BUILD/.venv-onnx.log" 2>&1; then
        echo "SKIP: cannot install onnx/onnxruntime/numpy from PyPI (see $BUILD/.venv-onnx.log)"; exit 0
    fi
fi

W=$(mktemp -d "${TMPDIR:-/tmp}/ct_onnx.XXXXXX")
trap 'rm -rf "$W"' EXIT
LOG="$W/log"
: >"$LOG"
fail_setup() { echo "FAIL setup: $*" | tee -a "$LOG"; }
run() { "$@" >>"$W/cmd.log" 2>&1 || fail_setup "$* (see below)"; }

run "$CT" make-model --preset tiny --out "$W/tiny"
E="$W/export"
run "$CT" export step -m "$W/tiny" --component talker --cache-len 64 --dtype fp32 -o "$E"
run "$CT" export step -m "$W/tiny" --component talker --cache-len 64 --dtype fp16 -o "$E"
run "$CT" export step -m "$W/tiny" --component talker --cache-len 64 --layout v1 -o "$E"
run "$CT" export step -m "$W/tiny" --component predictor --cache-len 16 --dtype fp32 -o "$E"
run "$CT" export step -m "$W/tiny" --component predictor --cache-len 16 --dtype fp16 -o "$E"
run "$CT" export codec -m "$W/tiny" --context 72 --ramp 2,4 -o "$E/codec"
# bad options fail before any work
if "$CT" export step -m "$W/tiny" --component talker --cache-len 0 -o "$W/bad" >>"$W/cmd.log" 2>&1 || [ -e "$W/bad" ]; then
    echo "FAIL export rejects --cache-len 0" >>"$LOG"; else echo "PASS export rejects --cache-len 0" >>"$LOG"; fi
if "$CT" export step -m "$W/tiny" --component talker --dtype bf16 -o "$W/bad" >>"$W/cmd.log" 2>&1 || [ -e "$W/bad" ]; then
    echo "FAIL export rejects --dtype bf16" >>"$LOG"; else echo "PASS export rejects --dtype bf16" >>"$LOG"; fi

R="$W/ref"
mkdir -p "$R"/t0 "$R"/t17 "$R"/t63 "$R"/p0 "$R"/p3 "$R"/c2 "$R"/c4 "$R"/g
run "$DUMP" step "$W/tiny" talker 64 0 "$R/t0"
run "$DUMP" step "$W/tiny" talker 64 17 "$R/t17"
run "$DUMP" step "$W/tiny" talker 64 63 "$R/t63"
run "$DUMP" step "$W/tiny" predictor 16 0 "$R/p0"
run "$DUMP" step "$W/tiny" predictor 16 3 "$R/p3"
run "$DUMP" codec "$W/tiny" 72 2 1 "$R/c2"
run "$DUMP" codec "$W/tiny" 72 4 2 "$R/c4"
run "$DUMP" greedy "$W/tiny" 20 "$R/g"

V="$SRC/tools/onnx/verify.py"
T="$E/talker_step_L64"
P="$E/predictor_step_L16"
"$CT" export sanitize "$T.onnx" -o "$E/talker_step_L64_sanitized.onnx" >>"$W/cmd.log" 2>&1 && cp "$T.json" "$E/talker_step_L64_sanitized.json"
{
    "$PY" "$V" check "$E"/*.onnx "$E"/codec/*.onnx
    for r in t0 t17 t63; do
        "$PY" "$V" step "$T.onnx" "$R/$r" --tol 1e-9
        "$PY" "$V" step "${T}_v1.onnx" "$R/$r" --tol 1e-9
        "$PY" "$V" step "${T}_fp16.onnx" "$R/$r" --tol 1e-5
    done
    "$PY" "$V" step "$E/talker_step_L64_sanitized.onnx" "$R/t17" --tol 1e-9
    for r in p0 p3; do
        "$PY" "$V" step "$P.onnx" "$R/$r" --tol 1e-9
        "$PY" "$V" step "${P}_fp16.onnx" "$R/$r" --tol 1e-5
    done
    "$PY" "$V" codec "$E/codec/code2wav_c2_ctx72.onnx" "$R/c2" --tol 1e-8
    "$PY" "$V" codec "$E/codec/code2wav_c4_ctx72.onnx" "$R/c4" --tol 1e-8
    "$PY" "$V" greedy "$T.onnx" "$P.onnx" "$R/g"
    "$PY" "$SRC/tools/onnx/sanitize_test.py" "$CT" "$W/san"
} >>"$LOG" 2>&1
grep -E '^(PASS|FAIL)' "$LOG"
np=$(grep -c '^PASS' "$LOG")
nf=$(grep -c '^FAIL' "$LOG")
if [ "$nf" -gt 0 ] || [ "$np" -eq 0 ]; then
    echo "--- command log ---"; tail -40 "$W/cmd.log"
    echo "--- other output ---"; grep -vE '^(PASS|FAIL)' "$LOG" | tail -40
fi
echo "$np passed, $nf failed"
[ "$nf" -eq 0 ] && [ "$np" -gt 0 ]
