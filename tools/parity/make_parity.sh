#!/usr/bin/env bash
# Purpose: regenerate the golden parity references in tests/data/parity/ from the
# OFFICIAL Qwen3-TTS Python package (qwen-tts 0.1.1, which pins transformers 4.57.3).
# Creates (once) a virtual environment at <repo>/.venv-parity, installs qwen-tts with
# its pinned dependencies from PyPI (torch comes from PyPI too; only the CPU is used),
# then runs tools/parity/make_parity.py. Idempotent: re-running reuses the venv and
# rewrites the same outputs (the generation is seeded and deterministic on CPU).
# Run by hand; CI never runs this. Usage: bash tools/parity/make_parity.sh
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="$REPO/.venv-parity"
WORK="${PARITY_WORK:-/tmp/parity-work}"
PY="${PYTHON:-python3}"

mkdir -p "$WORK"

if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
fi

# Install only when the pinned package set is not already present.
if ! "$VENV/bin/python" - <<'EOF' 2>/dev/null
import importlib.metadata as m
assert m.version("qwen-tts") == "0.1.1"
assert m.version("transformers") == "4.57.3"
import torch, safetensors, tokenizers  # noqa: F401
EOF
then
    "$VENV/bin/python" -m pip install --upgrade pip
    # qwen-tts 0.1.1 pins transformers==4.57.3 and accelerate==1.12.0; torch arrives
    # through torchaudio. safetensors/tokenizers arrive through transformers.
    "$VENV/bin/python" -m pip install "qwen-tts==0.1.1" "transformers==4.57.3" safetensors tokenizers
fi

# Keep the run single-process and deterministic.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
export TOKENIZERS_PARALLELISM=false
export HF_HUB_OFFLINE=1
export TRANSFORMERS_OFFLINE=1

"$VENV/bin/python" "$REPO/tools/parity/make_parity.py" \
    --repo "$REPO" --work "$WORK" --out "$REPO/tests/data/parity" "$@"
