#!/usr/bin/env bash
# ONNX export checks (issue 8): exports the tiny random model's talker / predictor decode
# steps (FP32, FP16, v1 layout) and codec windows (ramp 2,4, context 72), dumps our engine's
# reference outputs with dump_ref, and runs tools/onnx/verify.py and sanitize_test.py in ONNX
# Runtime. Needs a virtualenv with onnx + onnxruntime + numpy (tests/onnx/setup_venv.sh creates
# BUILD_DIR/.venv-onnx from PyPI when missing). Exit 0: every check passed (and at least one
# ran); 77: skipped, the venv cannot be created (ctest SKIP_RETURN_CODE; under CI=true that is
# a failure, exit 1); anything else: a failure. Every Python run must exit 0, print no
# traceback and print at least one PASS line, or it counts as a FAIL.
# usage: test_onnx.sh CODECTALK_BIN DUMP_REF_BIN SRC_DIR BUILD_DIR
set -u
CT=${1:?codectalk binary}
DUMP=${2:?dump_ref binary}
SRC=${3:?source dir}
BUILD=${4:?build dir}
VENV="$BUILD/.venv-onnx"
PY="$VENV/bin/python"

bash "$SRC/tests/onnx/setup_venv.sh" "$BUILD"
rc=$?
[ "$rc" -eq 0 ] || exit "$rc"

W=$(mktemp -d "${TMPDIR:-/tmp}/ct_onnx.XXXXXX")
trap 'rm -rf "$W"' EXIT
LOG="$W/log"
: >"$LOG"
fail_setup() { echo "FAIL setup: $*" | tee -a "$LOG"; }
run() { "$@" >>"$W/cmd.log" 2>&1 || fail_setup "$* (see below)"; }
# One Python run: its PASS/FAIL lines go to the log; a non-zero exit without a FAIL line, a
# traceback, or no PASS/FAIL line at all adds a FAIL (a crashed script never passes).
py() {
    local out="$W/py.out" log="${PYLOG:-$LOG}" st
    "$PY" "$@" >"$out" 2>&1
    st=$?
    cat "$out" >>"$log"
    local what="${*//$W\//}"
    if grep -q '^Traceback' "$out"; then
        echo "FAIL python raised an exception (exit $st): $what" >>"$log"
    elif [ "$st" -ne 0 ] && ! grep -q '^FAIL' "$out"; then
        echo "FAIL python exit $st without a FAIL line: $what" >>"$log"
    elif ! grep -qE '^(PASS|FAIL)' "$out"; then
        echo "FAIL python printed no PASS/FAIL line (exit $st): $what" >>"$log"
    fi
}

# The wrapper itself: a script that passes a check and then raises must count as a failure.
: >"$W/selftest.log"
PYLOG="$W/selftest.log" py -c 'print("PASS before the exception"); raise RuntimeError("boom")'
PYLOG="$W/selftest.log" py -c 'pass'
if [ "$(grep -c '^FAIL' "$W/selftest.log")" -eq 2 ]; then
    echo "PASS harness: a traceback after a PASS line and a silent script count as failures" >>"$LOG"
else
    echo "FAIL harness: a traceback or a silent script was not counted as a failure" >>"$LOG"
fi

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
run "$CT" export sanitize "$T.onnx" -o "$E/talker_step_L64_sanitized.onnx"
run cp "$T.json" "$E/talker_step_L64_sanitized.json"
py "$V" check "$E"/*.onnx "$E"/codec/*.onnx
for r in t0 t17 t63; do
    py "$V" step "$T.onnx" "$R/$r" --tol 1e-9
    py "$V" step "${T}_v1.onnx" "$R/$r" --tol 1e-9
    py "$V" step "${T}_fp16.onnx" "$R/$r" --tol 1e-5
done
py "$V" step "$E/talker_step_L64_sanitized.onnx" "$R/t17" --tol 1e-9
for r in p0 p3; do
    py "$V" step "$P.onnx" "$R/$r" --tol 1e-9
    py "$V" step "${P}_fp16.onnx" "$R/$r" --tol 1e-5
done
py "$V" codec "$E/codec/code2wav_c2_ctx72.onnx" "$R/c2" --tol 1e-8
py "$V" codec "$E/codec/code2wav_c4_ctx72.onnx" "$R/c4" --tol 1e-8
py "$V" greedy "$T.onnx" "$P.onnx" "$R/g"
py "$SRC/tools/onnx/sanitize_test.py" "$CT" "$W/san"
grep -E '^(PASS|FAIL)' "$LOG"
np=$(grep -c '^PASS' "$LOG")
nf=$(grep -c '^FAIL' "$LOG")
if [ "$nf" -gt 0 ] || [ "$np" -eq 0 ]; then
    echo "--- command log ---"; tail -40 "$W/cmd.log"
    echo "--- other output ---"; grep -vE '^(PASS|FAIL)' "$LOG" | tail -40
fi
echo "$np passed, $nf failed"
[ "$nf" -eq 0 ] && [ "$np" -gt 0 ]
