#!/usr/bin/env bash
# The streaming-text WebSocket endpoint (serve --ws-port) under the `websockets` client from
# PyPI (tests/ws/check_ws.py): a venv in the build dir, a server on a tiny random model on
# loopback with two stream slots and no queue. Outside CI an unreachable PyPI (or no
# python3-venv) is exit 77 (skipped); under CI=true a failure.
# usage: test_ws.sh CODECTALK_BIN SRC_DIR BUILD_DIR
set -u
BIN=${1:?codectalk program}
SRC=${2:?source dir}
BUILD=${3:?build dir}
VENV="$BUILD/.venv-ws"
LOGF="$BUILD/.venv-ws.log"
WHAT="WebSocket test"
# shellcheck source=../lib/pyvenv.sh
. "$SRC/tests/lib/pyvenv.sh"
pyvenv_ensure "websockets" websockets
WORK="$(mktemp -d)"
SRV=""
trap '[ -n "$SRV" ] && kill $SRV 2>/dev/null; rm -rf "$WORK"' EXIT
export XDG_CACHE_HOME="$BUILD/test-cache"
"$BIN" make-model --preset tiny --seed 6 --out "$WORK/m" >/dev/null 2>&1 || { echo "FAIL: make-model"; exit 1; }
"$BIN" serve -m "$WORK/m" --host 127.0.0.1 --port 0 --ws-port 0 --max-streams 2 --queue 0 >/dev/null \
    2>"$WORK/srv.log" &
SRV=$!
PORT="" WSPORT=""
for _ in $(seq 1 600); do
    PORT="$(sed -n 's|.*on http://127\.0\.0\.1:\([0-9]*\) .*|\1|p' "$WORK/srv.log" | head -1)"
    WSPORT="$(sed -n 's|.*on ws://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$WORK/srv.log" | head -1)"
    { [ -n "$PORT" ] && grep -q '^ready' "$WORK/srv.log"; } && break
    kill -0 $SRV 2>/dev/null || { echo "FAIL: server: $(cat "$WORK/srv.log")"; exit 1; }
    sleep 0.1
done
[ -n "$PORT" ] && [ -n "$WSPORT" ] || { echo "FAIL: server did not start: $(cat "$WORK/srv.log")"; exit 1; }
PYTHONDONTWRITEBYTECODE=1 timeout 600 "$VENV/bin/python" "$SRC/tests/ws/check_ws.py" "$PORT" "$WSPORT" || exit 1
