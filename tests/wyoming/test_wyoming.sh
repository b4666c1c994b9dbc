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
WHAT="Wyoming test"
# shellcheck source=../lib/pyvenv.sh
. "$SRC/tests/lib/pyvenv.sh"
pyvenv_ensure "wyoming" 'wyoming>=1.7'
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
# --voices-dir on a Base model: a saved voice is listed in info and speaks as `synth --voice`
"$BIN" wyoming -m "$WORK/m" --voices-dir "$WORK/voices" >/dev/null 2>"$WORK/err"
{ [ $? = 1 ] && grep -q "need a Base model" "$WORK/err"; } || { echo "FAIL: --voices-dir on CustomVoice: $(cat "$WORK/err")"; rc=1; }
"$BIN" make-model --preset tiny-base --seed 3 --out "$WORK/base" >/dev/null 2>&1 || { echo "FAIL: make-model tiny-base"; exit 1; }
python3 - "$WORK/ref.wav" <<'PY'
import math, random, struct, sys, wave
random.seed(1); f = wave.open(sys.argv[1], "wb"); f.setnchannels(1); f.setsampwidth(2); f.setframerate(24000)
out = bytearray()
for i in range(3 * 24000):
    t = i / 24000
    x = 0.3 * math.sin(2 * math.pi * (140 + 40 * math.sin(4.4 * t)) * t) + 0.02 * random.uniform(-1, 1)
    out += struct.pack("<h", int(x * 32767))
f.writeframes(bytes(out)); f.close()
PY
mkdir -p "$WORK/voices"
"$BIN" voice create -m "$WORK/base" --ref-audio "$WORK/ref.wav" --x-vector-only -o "$WORK/voices/amy.voice" >/dev/null 2>"$WORK/err" \
    || { echo "FAIL: voice create: $(cat "$WORK/err")"; exit 1; }
"$BIN" synth -m "$WORK/base" -t "A saved voice." --voice "$WORK/voices/amy.voice" --seed 5 -q -o "$WORK/amy.pcm" 2>"$WORK/err" \
    || { echo "FAIL: synth --voice: $(cat "$WORK/err")"; exit 1; }
"$BIN" wyoming -m "$WORK/base" --uri tcp://127.0.0.1:0 --voices-dir "$WORK/voices" --seed 5 >/dev/null 2>"$WORK/b.log" &
SRV=$!
for _ in $(seq 1 600); do grep -q '^ready' "$WORK/b.log" && break; sleep 0.1; done
PORT="$(sed -n 's|.* on tcp://127\.0\.0\.1:\([0-9]*\) .*|\1|p' "$WORK/b.log" | head -1)"
PYTHONDONTWRITEBYTECODE=1 timeout 120 "$VENV/bin/python" - "$PORT" "$WORK/amy.pcm" <<'PY' || rc=1
import asyncio, sys
from wyoming.audio import AudioChunk, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe, Info
from wyoming.tts import Synthesize, SynthesizeVoice
async def main():
    async with AsyncTcpClient("127.0.0.1", int(sys.argv[1])) as c:
        await c.write_event(Describe().event())
        names = [v.name for v in Info.from_event(await c.read_event()).tts[0].voices]
        await c.write_event(Synthesize(text="A saved voice.", voice=SynthesizeVoice(name="amy")).event())
        pcm = b""
        while True:
            ev = await asyncio.wait_for(c.read_event(), 60)
            if ev is None or AudioStop.is_type(ev.type):
                break
            if AudioChunk.is_type(ev.type):
                pcm += ev.payload
    ref = open(sys.argv[2], "rb").read()
    ok = names == ["default", "amy"] and len(pcm) > 0 and pcm == ref
    print(("ok   " if ok else "FAIL ") + f"--voices-dir: voices {names}; 'amy' equals synth --voice ({len(pcm)} vs {len(ref)} bytes)")
    sys.exit(0 if ok else 1)
asyncio.run(main())
PY
kill -TERM $SRV
wait $SRV
SRV=""
[ $rc = 0 ] && echo "test_wyoming: all passed"
exit $rc
