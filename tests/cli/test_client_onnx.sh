#!/usr/bin/env bash
# The codes stream decoded with the exported codec programs (docs/CODES_WIRE.md): against
# `codectalk serve` on loopback, the Python client (python/codectalk/client.py, ONNX Runtime)
# and `codectalk client --decoder-backend windowed` (our windowed decoder, the same ramp and
# windows; the ramp restarts at the second utterance) decode the same request of two utterances
# to audio within NMSE 1e-8 (float WAVs); the
# manifest is a contract for both: another codec's manifest, a changed program (hash), a missing
# program, a ramp size without a program, an inconsistent window, another manifest version, and
# for ONNX Runtime a manifest that lies about the programs' shapes are refused with a message
# and no output file. Needs the ONNX Runtime venv (tests/onnx/setup_venv.sh): exit 77 (skipped)
# when it cannot be created, a failure under CI=true.
# usage: test_client_onnx.sh CODECTALK SRC_DIR BUILD_DIR
set -u
BIN="$1"; SRC="$2"; BUILD="$3"
bash "$SRC/tests/onnx/setup_venv.sh" "$BUILD" >/dev/null
rc=$?
[ "$rc" -eq 0 ] || exit "$rc"
VPY="$BUILD/.venv-onnx/bin/python"
CLIENT="$SRC/python/codectalk/client.py"
. "$SRC/tests/cli/lib.sh"
PY="$(command -v /usr/bin/python3 || command -v python3)"
SRV_PID=""
trap '[ -n "$SRV_PID" ] && kill "$SRV_PID" 2>/dev/null; rm -rf "$WORK"' EXIT

TEXT="The first sentence of this client test is long enough to fill a good part of one utterance, \
and it keeps going for a while with a few more words so that the split is certain. A second sentence \
follows it, so that the engine has to decide where the first utterance ends and the next one begins. \
The third and last sentence lands in the next utterance, which starts from the seed plus one."
M="$WORK/tiny"; M2="$WORK/tiny2"; EX="$WORK/ex"
for d in "$M:1" "$M2:2"; do
  "$BIN" make-model --preset tiny --seed "${d#*:}" --out "${d%:*}" >/dev/null 2>"$WORK/err" || { cat "$WORK/err"; exit 1; }
done
"$BIN" export codec -m "$M" --context 72 --ramp 2,4,8 -o "$EX" >/dev/null 2>"$WORK/err" || { cat "$WORK/err"; exit 1; }
"$BIN" export codec -m "$M2" --context 72 --ramp 2,4,8 -o "$WORK/ex2" >/dev/null 2>"$WORK/err" || { cat "$WORK/err"; exit 1; }
VOICE="$("$PY" -c 'import json,sys; print(sorted(json.load(open(sys.argv[1]))["talker_config"]["spk_id"])[0])' "$M/config.json")"

"$BIN" serve -m "$M" --host 127.0.0.1 --port 0 > /dev/null 2>"$WORK/srv.log" &
SRV_PID=$!
for _ in $(seq 1 600); do
  grep -q '^ready' "$WORK/srv.log" 2>/dev/null && break
  kill -0 "$SRV_PID" 2>/dev/null || break
  sleep 0.1
done
PORT="$(sed -n 's|.*on http://127\.0\.0\.1:\([0-9]*\) .*|\1|p' "$WORK/srv.log" | head -1)"
if grep -q '^ready' "$WORK/srv.log" && [ -n "$PORT" ]; then ok; else bad "server did not start: $(cat "$WORK/srv.log")"; finish; exit 1; fi
URL="http://127.0.0.1:$PORT"
REQ=(-t "$TEXT" -s "$VOICE" --seed 5 --max-new-tokens 12 --temperature 0.8 --top-k 40)
WIN=(client --url "$URL" --decoder-backend windowed -m "$M" "${REQ[@]}")
ONNX=("$VPY" "$CLIENT" --url "$URL" "${REQ[@]}")

# 1. ONNX Runtime = our windowed decoder within NMSE 1e-8, over two utterances
expect_rc 0 "$BIN" "${WIN[@]}" --manifest "$EX" --float -o "$WORK/win.wav"
sed -n 's/^/  C windowed: /p' "$WORK/err"
timeout 300 "${ONNX[@]}" --manifest "$EX" --float -o "$WORK/onnx.wav" --timeline "$WORK/onnx.tl" 2>"$WORK/err"
if [ $? = 0 ]; then ok; else bad "python onnx client: $(cat "$WORK/err")"; fi
sed -n 's/^/  ONNX Runtime: /p' "$WORK/err"
"$VPY" - "$WORK/win.wav" "$WORK/onnx.wav" "$WORK/onnx.tl" <<'PY' >"$WORK/nmse" 2>&1
import json, sys
import numpy as np
a, b = (open(p, "rb").read() for p in sys.argv[1:3])
x, y = np.frombuffer(a[44:], "<f4"), np.frombuffer(b[44:], "<f4")
nmse = float(((x.astype(np.float64) - y) ** 2).sum() / max((x.astype(np.float64) ** 2).sum(), 1e-30))
rows = [json.loads(l) for l in open(sys.argv[3])]
ramp = [r["frames"] for r in rows]
ok = a[:44] == b[:44] and len(x) == len(y) and len(x) > 12 * 1920 and nmse <= 1e-8 and ramp[:2] == [2, 4] and ramp.count(2) >= 2
print("%s nmse %.3g over %d samples, chunks %s" % ("match" if ok else "MISMATCH", nmse, len(x), ramp))
PY
has "^match" "$WORK/nmse"
cat "$WORK/nmse"
# raw s16le on stdout: the same length
timeout 300 "${ONNX[@]}" --manifest "$EX" -o - > "$WORK/onnx.raw" 2>"$WORK/err"
if [ $? = 0 ] && [ "$(stat -c %s "$WORK/onnx.raw")" = $(( ($(stat -c %s "$WORK/onnx.wav") - 44) / 2 )) ]; then ok
else bad "onnx -o -: $(stat -c %s "$WORK/onnx.raw") bytes: $(cat "$WORK/err")"; fi

# 2. the manifest as a contract: refused with a message, no output file
mk() {  # mk NAME PYTHON-EDIT: a copy of the export with its manifest (m) or files edited
  rm -rf "$WORK/$1"; cp -r "$EX" "$WORK/$1"
  "$PY" - "$WORK/$1" "$2" <<'PY'
import json, os, sys
d = sys.argv[1]
m = json.load(open(os.path.join(d, "manifest.json")))
exec(sys.argv[2])
json.dump(m, open(os.path.join(d, "manifest.json"), "w"), indent=2)
PY
}
refuse() {  # refuse DIR MESSAGE [c]: the Python client (and with c the C windowed client) refuse DIR
  expect_rc 1 timeout 300 "${ONNX[@]}" --manifest "$1" -o "$WORK/r.wav"
  has "$2" "$WORK/err"
  [ ! -e "$WORK/r.wav" ] && [ ! -e "$WORK/r.wav.partial" ] && ok || bad "python: a refused manifest left a file"
  if [ "${3:-}" = c ]; then
    expect_rc 1 "$BIN" "${WIN[@]}" --manifest "$1" -o "$WORK/r.wav"
    has "${4:-$2}" "$WORK/err"
    [ ! -e "$WORK/r.wav" ] && [ ! -e "$WORK/r.wav.partial" ] && ok || bad "C: a refused manifest left a file"
  fi
}
refuse "$WORK/ex2" "the manifest is for codec" c "is for another codec"
mk changed 'open(os.path.join(d, "code2wav_c4_ctx72.onnx"), "ab").write(b"\0")'
refuse "$WORK/changed" "code2wav_c4_ctx72.onnx' has SHA-256 .* the manifest says" c
mk missing 'os.remove(os.path.join(d, "code2wav_c8_ctx72.onnx"))'
refuse "$WORK/missing" "code2wav_c8_ctx72.onnx' is missing" c "cannot open"
mk noprog 'm["ramp"] = [2, 4, 8, 16]'
refuse "$WORK/noprog" "chunk size 16 has no program" c
mk window 'm["programs"]["4"]["window_frames"] = 75'
refuse "$WORK/window" "window_frames 75 / out_samples 7680; context 72 + chunk 4" c
mk version 'm["manifest_version"] = 2'
refuse "$WORK/version" "version 2; this client reads version 1" c "version 2; this codectalk reads version 1"
mk unversioned 'del m["manifest_version"]'
refuse "$WORK/unversioned" "no manifest_version" c
# consistent but untrue: context 70 with every window and shape to match; the programs take 72
mk shapes '
m["context_frames"] = 70
for p in m["programs"].values():
    p["window_frames"] -= 2; p["input"]["shape"][2] -= 2'
refuse "$WORK/shapes" "has inputs .*74.* the manifest says .*72"

# 3. usage: the C client points to this client for onnx; the Python client needs a manifest
expect_rc 2 "$BIN" client --url "$URL" --decoder-backend onnx --manifest "$EX" "${REQ[@]}" -o "$WORK/x.wav"
has "python/codectalk/client.py" "$WORK/err"
expect_rc 2 "$BIN" "${WIN[@]}" -o "$WORK/x.wav"
has "needs --manifest" "$WORK/err"
expect_rc 2 "$VPY" "$CLIENT" --url "$URL" -t hi -o "$WORK/x.wav"
[ ! -e "$WORK/x.wav" ] && ok || bad "a usage error left a file"
finish test_client_onnx
