#!/usr/bin/env bash
# `codectalk wyoming` under the `wyoming` package from PyPI (Home Assistant's protocol library,
# a client we did not write; tests/wyoming/check_wyoming.py): a venv in the build dir, a server on
# a tiny random model on loopback; describe, synthesize and the streaming synthesize-start /
# -chunk / -stop, the PCM compared with `codectalk synth` for the same text, voice and seed; bad
# input (unknown events, lying payload lengths, too many connections, a full engine). Outside CI
# an unreachable PyPI (or no python3-venv) is exit 77 (skipped); under CI=true a failure.
# usage: test_wyoming.sh CODECTALK_BIN SRC_DIR BUILD_DIR
set -u
BIN=${1:?codectalk program}
SRC=${2:?source dir}
BUILD=${3:?build dir}
VENV="$BUILD/.venv-wyoming"
LOGF="$BUILD/.venv-wyoming.log"
in_ci() { case "${CI:-}" in "" | 0 | false) return 1 ;; *) return 0 ;; esac; }
give_up() {
    if in_ci; then
        echo "FAIL: $* (CI is set: the Wyoming test must run)" >&2
        [ -s "$LOGF" ] && tail -20 "$LOGF" >&2
        exit 1
    fi
    echo "SKIP: $*"
    exit 77
}
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import wyoming" 2>/dev/null; then
    rm -rf "$VENV"
    : >"$LOGF"
    python3 -m venv "$VENV" >>"$LOGF" 2>&1 || give_up "python3 -m venv failed (see $LOGF)"
    tries=1
    in_ci && tries=3
    ok=0
    for ((try = 1; try <= tries; try++)); do
        if "$VENV/bin/pip" install -q --disable-pip-version-check --timeout 60 --retries 3 'wyoming>=1.7' >>"$LOGF" 2>&1; then
            ok=1
            break
        fi
        [ "$try" -lt "$tries" ] && sleep $((try * 10))
    done
    [ $ok = 1 ] || give_up "cannot install wyoming from PyPI into $VENV (see $LOGF)"
fi
WORK="$(mktemp -d)"
SRV=""
trap '[ -n "$SRV" ] && kill $SRV 2>/dev/null; rm -rf "$WORK"' EXIT
export XDG_CACHE_HOME="$BUILD/test-cache"
"$BIN" make-model --preset tiny --seed 6 --out "$WORK/m" >/dev/null 2>&1 || { echo "FAIL: make-model"; exit 1; }
# usage errors name what is wrong
for bad in "unix:///tmp/x.sock" "tcp://127.0.0.1" "tcp://127.0.0.1:99999"; do
    "$BIN" wyoming -m "$WORK/m" --uri "$bad" >/dev/null 2>"$WORK/err"
    rc=$?
    { [ $rc = 2 ] && grep -q "tcp://HOST:PORT" "$WORK/err"; } || { echo "FAIL: --uri $bad: rc $rc: $(cat "$WORK/err")"; exit 1; }
done
for bad in "--max-connections 0" "--timeout 0" "--max-input-chars 0"; do
    # shellcheck disable=SC2086
    "$BIN" wyoming -m "$WORK/m" $bad >/dev/null 2>"$WORK/err"
    rc=$?
    { [ $rc = 2 ] && grep -q -- "${bad% *}" "$WORK/err"; } || { echo "FAIL: $bad: rc $rc: $(cat "$WORK/err")"; exit 1; }
done
# one stream slot, no queue: a second request at once is refused (the full-engine check)
"$BIN" wyoming -m "$WORK/m" --uri tcp://127.0.0.1:0 --max-streams 1 --queue 0 --seed 11 --timeout 2 \
    --max-connections 6 >/dev/null 2>"$WORK/srv.log" &
SRV=$!
PORT=""
for _ in $(seq 1 600); do
    PORT="$(sed -n 's|.* on tcp://127\.0\.0\.1:\([0-9]*\) .*|\1|p' "$WORK/srv.log" | head -1)"
    { [ -n "$PORT" ] && grep -q '^ready' "$WORK/srv.log"; } && break
    kill -0 $SRV 2>/dev/null || { echo "FAIL: server: $(cat "$WORK/srv.log")"; exit 1; }
    sleep 0.1
done
grep -q '^ready' "$WORK/srv.log" || { echo "FAIL: server did not start: $(cat "$WORK/srv.log")"; exit 1; }
PYTHONDONTWRITEBYTECODE=1 timeout 600 "$VENV/bin/python" "$SRC/tests/wyoming/check_wyoming.py" \
    "$BIN" "$WORK/m" "$PORT" 11 "$WORK"
rc=$?
kill -TERM $SRV
wait $SRV
src=$?
SRV=""
[ $src = 0 ] || { echo "FAIL: server exit $src after SIGTERM"; rc=1; }
[ $rc = 0 ] || { echo "--- server log"; tail -40 "$WORK/srv.log"; }
# --quiet: no log lines (an ignored event is logged without it, checked above)
"$BIN" wyoming -m "$WORK/m" --uri tcp://127.0.0.1:0 -q >/dev/null 2>"$WORK/q.log" &
SRV=$!
for _ in $(seq 1 600); do grep -q '^ready' "$WORK/q.log" && break; sleep 0.1; done
PORT="$(sed -n 's|.* on tcp://127\.0\.0\.1:\([0-9]*\) .*|\1|p' "$WORK/q.log" | head -1)"
pong=""
if [ -n "$PORT" ] && exec 3<>"/dev/tcp/127.0.0.1/$PORT"; then
    printf '{"type": "frobnicate"}\n{"type": "ping"}\n' >&3
    read -r -t 10 pong <&3
    exec 3<&-
fi
sleep 0.2
kill -TERM $SRV
wait $SRV
SRV=""
case "$pong" in *'"type":"pong"'*) ;; *) echo "FAIL: -q server: no pong ($pong)"; rc=1 ;; esac
grep -q "ignoring" "$WORK/q.log" && { echo "FAIL: -q still logs: $(cat "$WORK/q.log")"; rc=1; }
[ $rc = 0 ] && echo "test_wyoming: all passed"
exit $rc
