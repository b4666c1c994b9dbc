#!/usr/bin/env bash
# Purpose: regenerate the voice-cloning parity references in tests/data/clone_parity/ from the
# OFFICIAL qwen-tts 0.1.1 package (x-vector-only and ICL generate_voice_clone on a small random
# Base model). Reuses the pinned venv <repo>/.venv-parity that tools/parity/make_parity.sh
# creates (run that first if it is missing). Run by hand; CI never runs this.
# Usage: bash tools/parity/make_clone_parity.sh
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${VENV:-$REPO/.venv-parity}"
WORK="${PARITY_WORK:-/tmp/parity-work}"
if [ ! -x "$VENV/bin/python" ]; then
    echo "no $VENV: run tools/parity/make_parity.sh first (it creates the pinned venv)" >&2
    exit 1
fi
mkdir -p "$WORK"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
export TOKENIZERS_PARALLELISM=false
export HF_HUB_OFFLINE=1
export TRANSFORMERS_OFFLINE=1
"$VENV/bin/python" "$REPO/tools/parity/make_clone_parity.py" \
    --repo "$REPO" --work "$WORK" --out "$REPO/tests/data/clone_parity" "$@"
