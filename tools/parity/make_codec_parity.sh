#!/usr/bin/env bash
# Purpose: regenerate the codec-decoder parity references in tests/data/codec_parity/ from the
# OFFICIAL qwen-tts 0.1.1 code, reusing the venv that tools/parity/make_parity.sh creates
# (<repo>/.venv-parity; run that script first if it is missing). Needs a built codectalk CLI
# (CODECTALK=path, default <repo>/build-cpar/codectalk) for the make-model checkpoints.
# Run by hand; CI never runs this. Usage: bash tools/parity/make_codec_parity.sh [--only small,tiny,full06]
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="$REPO/.venv-parity"
[ -x "$VENV/bin/python" ] || { echo "missing $VENV: run tools/parity/make_parity.sh first" >&2; exit 1; }
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
"$VENV/bin/python" "$REPO/tools/parity/make_codec_parity.py" --repo "$REPO" \
    --work "${PARITY_WORK:-/tmp/codec-parity-work}" --out "$REPO/tests/data/codec_parity" \
    --cli "${CODECTALK:-$REPO/build-cpar/codectalk}" "$@"
