#!/usr/bin/env bash
# The speech server under the official `openai` Python SDK (tests/openai/check_openai.py): a venv
# in the build dir with openai and av (FFmpeg bindings, to decode what the server sends) from
# PyPI, a server on a tiny random model on loopback, every format, speed, alias and streaming
# mode; then a tiny Base model's server with uploaded and one-off cloned voices. Outside CI an unreachable PyPI (or no python3-venv) is exit 77 (skipped); under CI=true a
# failure. usage: test_openai.sh CODECTALK_BIN SRC_DIR BUILD_DIR
set -u
BIN=${1:?codectalk program}
SRC=${2:?source dir}
BUILD=${3:?build dir}
VENV="$BUILD/.venv-openai"
LOGF="$BUILD/.venv-openai.log"
WHAT="OpenAI SDK test"
# shellcheck source=../lib/pyvenv.sh
. "$SRC/tests/lib/pyvenv.sh"
pyvenv_ensure "openai, av" openai av
WORK="$(mktemp -d)"
SRV=""
trap '[ -n "$SRV" ] && kill $SRV 2>/dev/null; rm -rf "$WORK"' EXIT
export XDG_CACHE_HOME="$BUILD/test-cache"
"$BIN" make-model --preset tiny --seed 6 --out "$WORK/m" >/dev/null 2>&1 || { echo "FAIL: make-model"; exit 1; }
"$BIN" serve -m "$WORK/m" --host 127.0.0.1 --port 0 --max-streams 2 >/dev/null 2>"$WORK/srv.log" &
SRV=$!
PORT=""
for _ in $(seq 1 600); do
    PORT="$(sed -n 's|.*on http://127\.0\.0\.1:\([0-9]*\) .*|\1|p' "$WORK/srv.log" | head -1)"
    { [ -n "$PORT" ] && grep -q '^ready' "$WORK/srv.log"; } && break
    kill -0 $SRV 2>/dev/null || { echo "FAIL: server: $(cat "$WORK/srv.log")"; exit 1; }
    sleep 0.1
done
[ -n "$PORT" ] || { echo "FAIL: server did not start: $(cat "$WORK/srv.log")"; exit 1; }
PYTHONDONTWRITEBYTECODE=1 timeout 600 "$VENV/bin/python" "$SRC/tests/openai/check_openai.py" \
    "http://127.0.0.1:$PORT/v1" "$WORK/stream.wav" || exit 1
# cloned voices (docs/CLONING.md "Server API") on a Base model with a voices directory
kill $SRV; wait $SRV 2>/dev/null
"$BIN" make-model --preset tiny-base --seed 6 --out "$WORK/b" >/dev/null 2>&1 || { echo "FAIL: make-model tiny-base"; exit 1; }
"$VENV/bin/python" - "$WORK/clip.wav" <<'PY' || { echo "FAIL: writing the clip"; exit 1; }
import math, random, struct, sys, wave
random.seed(1); f = wave.open(sys.argv[1], "wb"); f.setnchannels(1); f.setsampwidth(2); f.setframerate(24000)
f.writeframes(b"".join(struct.pack("<h", int(32767 * (0.3 * math.sin(2 * math.pi * (140 + 40 * math.sin(4.4 * i / 24000)) * i / 24000)
                                                        + 0.02 * random.uniform(-1, 1)))) for i in range(72000)))
f.close()
PY
: >"$WORK/srv.log"
"$BIN" serve -m "$WORK/b" --host 127.0.0.1 --port 0 --voices-dir "$WORK/voices" >/dev/null 2>"$WORK/srv.log" &
SRV=$!
PORT=""
for _ in $(seq 1 600); do
    PORT="$(sed -n 's|.*on http://127\.0\.0\.1:\([0-9]*\) .*|\1|p' "$WORK/srv.log" | head -1)"
    { [ -n "$PORT" ] && grep -q '^ready' "$WORK/srv.log"; } && break
    kill -0 $SRV 2>/dev/null || { echo "FAIL: server: $(cat "$WORK/srv.log")"; exit 1; }
    sleep 0.1
done
[ -n "$PORT" ] || { echo "FAIL: the Base server did not start: $(cat "$WORK/srv.log")"; exit 1; }
PYTHONDONTWRITEBYTECODE=1 timeout 600 "$VENV/bin/python" "$SRC/tests/openai/check_openai_clone.py" \
    "http://127.0.0.1:$PORT/v1" "$WORK/clip.wav"
