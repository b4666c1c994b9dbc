#!/usr/bin/env bash
# Purpose: regenerate tests/data/spk_parity/ (speaker encoder at widths >= 64, mel, x-vectors,
# one 44.1 kHz resample case) from the OFFICIAL qwen-tts 0.1.1 code. Uses the parity venv that
# tools/parity/make_parity.sh creates (VENV=... to point elsewhere). Run by hand; CI never runs
# it. Usage: bash tools/parity/make_spk_parity.sh
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${VENV:-$REPO/.venv-parity}"
WORK="${PARITY_WORK:-/tmp/spk-parity-work}"
if [ ! -x "$VENV/bin/python" ]; then
    echo "no parity venv at $VENV: run tools/parity/make_parity.sh once (it creates it)" >&2
    exit 1
fi
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
"$VENV/bin/python" "$REPO/tools/parity/make_spk_parity.py" --out "$REPO/tests/data/spk_parity" \
    --work "$WORK" "$@"
