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
LOGF="$BUILD/.venv-onnx.log"
WHAT="ONNX tests"
# shellcheck source=../lib/pyvenv.sh
. "$(dirname "$0")/../lib/pyvenv.sh"
pyvenv_ensure "onnx, onnxruntime, numpy" onnx onnxruntime numpy
