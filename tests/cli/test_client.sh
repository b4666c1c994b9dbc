#!/usr/bin/env bash
# `codectalk client` against `codectalk serve` on loopback (docs/CODES_WIRE.md): the client's
# native decode of the codes stream equals the server's own WAV (and raw PCM) for the same
# request byte for byte, over a text of two utterances; --timeline has one line per decoded
# chunk; the bytes on the wire per audio second for codes vs PCM are printed. Refusals leave no
# output file: another model's codec (codec id mismatch), a server error (unknown voice), and a
# served stream that is truncated, reordered or holds a code out of range (a fake server replays
# altered bodies), a server that stops sending (--timeout), SIGTERM while it stalls (exit 143, no
# partial file); the fake server also shows every
# request flag (and --api-key) reaching the request, the same as the Python client builds; the
# Python client's wire decoder gives the C decoder's verdicts; usage errors exit 2 (onnx names
# the Python client, a removed generation flag is an unknown option). Every wait is bounded.
# usage: test_client.sh CODECTALK SRC_DIR
set -u
BIN="$1"; SRC="$2"
. "$SRC/tests/cli/lib.sh"
PY="$(command -v /usr/bin/python3 || command -v python3)"
SRV_PID=""; FAKE_PID=""
trap '[ -n "$SRV_PID" ] && kill "$SRV_PID" 2>/dev/null; [ -n "$FAKE_PID" ] && kill "$FAKE_PID" 2>/dev/null; rm -rf "$WORK"' EXIT

TEXT="The first sentence of this client test is long enough to fill a good part of one utterance, \
and it keeps going for a while with a few more words so that the split is certain. A second sentence \
follows it, so that the engine has to decide where the first utterance ends and the next one begins. \
The third and last sentence lands in the next utterance, which starts from the seed plus one."
SEED=5; MNT=10
M="$WORK/tiny"; M2="$WORK/tiny2"
"$BIN" make-model --preset tiny --seed 1 --out "$M" >/dev/null 2>"$WORK/err" || { cat "$WORK/err"; exit 1; }
"$BIN" make-model --preset tiny --seed 2 --out "$M2" >/dev/null 2>"$WORK/err" || { cat "$WORK/err"; exit 1; }
VOICE="$("$PY" -c 'import json,sys; print(sorted(json.load(open(sys.argv[1]))["talker_config"]["spk_id"])[0])' "$M/config.json")"

"$BIN" serve -m "$M" --host 127.0.0.1 --port 0 > /dev/null 2>"$WORK/srv.log" &
SRV_PID=$!
for _ in $(seq 1 600); do  # at most 60 s
  grep -q '^ready' "$WORK/srv.log" 2>/dev/null && break
  kill -0 "$SRV_PID" 2>/dev/null || break
  sleep 0.1
done
PORT="$(sed -n 's|.*on http://127\.0\.0\.1:\([0-9]*\) .*|\1|p' "$WORK/srv.log" | head -1)"
if grep -q '^ready' "$WORK/srv.log" && [ -n "$PORT" ]; then ok; else bad "server did not start: $(cat "$WORK/srv.log")"; finish; exit 1; fi
URL="http://127.0.0.1:$PORT"

# POSTs one speech request (extra JSON members in $1) and writes the body to $2.
speech() {
  local body code
  body="$("$PY" -c 'import json,sys; d={"input":sys.argv[1],"voice":sys.argv[2],"seed":int(sys.argv[3]),
"max_new_tokens":int(sys.argv[4]),"temperature":0.8,"top_k":40}; d.update(json.loads(sys.argv[5])); print(json.dumps(d))' \
    "$TEXT" "$VOICE" $SEED $MNT "$1")"
  code="$(curl -sS --max-time 120 -o "$2" -w '%{http_code}' -H 'Content-Type: application/json' \
          --data-binary "$body" "$URL/v1/audio/speech" 2>"$WORK/curl.err")"
  if [ "$code" = 200 ]; then ok; else bad "speech $1: HTTP $code $(head -c 300 "$2") $(cat "$WORK/curl.err")"; fi
}
speech '{"response_format":"wav"}' "$WORK/server.wav"
speech '{"response_format":"pcm"}' "$WORK/server.pcm"
speech '{"response_format":"codes"}' "$WORK/codes.bin"
# two utterances: more audio than one utterance may make (MNT - 1 frames)
if [ "$(stat -c %s "$WORK/server.pcm")" -gt $(( (MNT - 1) * 1920 * 2 )) ]; then ok
else bad "the server gave $(stat -c %s "$WORK/server.pcm") bytes: one utterance only"; fi

CL=(client --url "$URL" --decoder-backend native -m "$M" -t "$TEXT" -s "$VOICE" --seed $SEED
    --max-new-tokens $MNT --temperature 0.8 --top-k 40)

# 1. native decode = the server's own audio, byte for byte (WAV and raw s16le)
expect_rc 0 "$BIN" "${CL[@]}" -o "$WORK/client.wav" --timeline "$WORK/tl.jsonl"
cp "$WORK/err" "$WORK/client.log"
# the samples byte for byte (the server streams its WAV: its header carries the streaming sizes)
if [ "$(stat -c %s "$WORK/client.wav")" = "$(stat -c %s "$WORK/server.wav")" ] && \
   cmp -s <(tail -c +45 "$WORK/client.wav") <(tail -c +45 "$WORK/server.wav"); then ok
else bad "client.wav differs from the server's WAV ($(stat -c %s "$WORK/client.wav" 2>/dev/null) vs $(stat -c %s "$WORK/server.wav") bytes)"; fi
[ ! -e "$WORK/client.wav.partial" ] && ok || bad "client.wav.partial left behind"
has "time to first audio" "$WORK/client.log"
has "ms per chunk" "$WORK/client.log"
timeout 60 "$BIN" "${CL[@]}" -q -o - > "$WORK/client.pcm" 2>"$WORK/err"
if [ $? = 0 ] && cmp -s "$WORK/client.pcm" "$WORK/server.pcm"; then ok; else bad "client -o - differs from the server's PCM: $(head -c 300 "$WORK/err")"; fi
# write errors as synth: a full device is named (exit 1), a reader that goes away is not an error
expect_rc 1 "$BIN" "${CL[@]}" -o /dev/full
has "no space left on device" "$WORK/err"
timeout 60 "$BIN" "${CL[@]}" -q -o - 2>"$WORK/err" | head -c 100 > /dev/null
if [ "${PIPESTATUS[0]}" = 0 ] && [ ! -s "$WORK/err" ]; then ok; else bad "client -o - | head: rc ${PIPESTATUS[0]} $(cat "$WORK/err")"; fi
# --float: a float32 WAV of the same samples (format 3, 32 bits, twice the data)
expect_rc 0 "$BIN" "${CL[@]}" -q --float -o "$WORK/client_f.wav"
"$PY" - "$WORK/client_f.wav" "$WORK/server.pcm" <<'PY' >"$WORK/f.out" 2>&1
import struct, sys
b = open(sys.argv[1], "rb").read()
fmt, bits = struct.unpack_from("<H", b, 20)[0], struct.unpack_from("<H", b, 34)[0]
n = (len(b) - 44) // 4
pcm = open(sys.argv[2], "rb").read()
print("float ok" if fmt == 3 and bits == 32 and n * 2 == len(pcm) else "float bad: fmt %d bits %d n %d" % (fmt, bits, n))
PY
has "float ok" "$WORK/f.out"
# the timeline: one JSON line per decoded chunk, as many as the summary counts, every frame once
"$PY" - "$WORK/tl.jsonl" "$WORK/client.log" "$(stat -c %s "$WORK/server.pcm")" <<'PY' >"$WORK/tl.out" 2>&1
import json, re, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
log = open(sys.argv[2]).read()
chunks = int(re.search(r"native decode: (\d+) chunks", log).group(1))
frames = sum(r["frames"] for r in rows)
ok = rows and len(rows) == chunks and frames * 1920 * 2 == int(sys.argv[3]) and \
     all(r["decode_ms"] >= 0 and r["t_ms"] > 0 for r in rows) and \
     all(a["t_ms"] <= b["t_ms"] for a, b in zip(rows, rows[1:]))
print("timeline ok" if ok else "timeline bad: %d rows, %d chunks, %d frames" % (len(rows), chunks, frames))
PY
has "timeline ok" "$WORK/tl.out"

# bytes per audio second on the wire: codes vs PCM (the note in docs/CODES_WIRE.md)
"$PY" - "$WORK/codes.bin" "$WORK/server.pcm" <<'PY'
import os, sys
c, p = os.path.getsize(sys.argv[1]), os.path.getsize(sys.argv[2])
sec = p / 2 / 24000
print("wire: %.2f s of audio; codes %d B (%.0f B/s, %.2f kbit/s), pcm %d B (%.0f B/s); ratio %.1fx"
      % (sec, c, c / sec, c * 8 / sec / 1000, p, p / sec, p / c))
PY

# 2. refusals leave no output file
expect_rc 1 "$BIN" client --url "$URL" -m "$M2" -t "$TEXT" -s "$VOICE" --seed $SEED --max-new-tokens $MNT -o "$WORK/x.wav"
has "is not the codec of -m" "$WORK/err"
[ ! -e "$WORK/x.wav" ] && [ ! -e "$WORK/x.wav.partial" ] && ok || bad "a refused stream left a file"
expect_rc 1 "$BIN" client --url "$URL" -m "$M" -t "$TEXT" -s nobody -o "$WORK/x.wav"
has "answered 400: unknown voice 'nobody'" "$WORK/err"
[ ! -e "$WORK/x.wav" ] && ok || bad "a 400 left a file"
expect_rc 1 "$BIN" client --url "http://127.0.0.1:1" -m "$M" -t "$TEXT" -o "$WORK/x.wav"
has "connect" "$WORK/err"

# 3. altered streams from a fake server: a clear error, no output file
"$PY" - "$WORK/codes.bin" "$WORK" <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read()
recs, o = [], 0
while o < len(b):
    n = struct.unpack_from("<I", b, o)[0]; recs.append(b[o:o + 4 + n]); o += 4 + n
hdr, frames, end = recs[0], recs[1:-1], recs[-1]
w = lambda name, data: open("%s/%s" % (sys.argv[2], name), "wb").write(data)
w("truncated.bin", b[:-5])
w("reordered.bin", hdr + frames[1] + frames[0] + b"".join(frames[2:]) + end)
bad = bytearray(frames[2]); bad[10 + 2 * 3:12 + 2 * 3] = struct.pack("<H", 4000)
w("range.bin", hdr + frames[0] + frames[1] + bytes(bad) + b"".join(frames[3:]) + end)
v2 = bytearray(hdr); v2[4] = 2
w("version.bin", bytes(v2) + b"".join(frames) + end)
PY
FAKE_PORT_FILE="$WORK/fake.port"
"$PY" - "$WORK" "$FAKE_PORT_FILE" <<'PY' 2>"$WORK/fake.log" &
import http.server, json, sys, time
d = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        req = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        json.dump({"body": json.loads(req), "auth": self.headers.get("Authorization")}, open(d + "/req.json", "w"))
        case = open(d + "/case").read().strip()
        body = open("%s/%s.bin" % (d, "codes" if case == "stall" else case), "rb").read()
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.codectalk.codes")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if case == "stall":  # the header record, then nothing for 5 s
            self.wfile.write(body[:60]); self.wfile.flush(); time.sleep(5)
        self.wfile.write(body)
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[2], "w").write(str(s.server_address[1]))
s.timeout = 60
for _ in range(12): s.handle_request()
PY
FAKE_PID=$!
for _ in $(seq 1 100); do [ -s "$FAKE_PORT_FILE" ] && break; sleep 0.1; done
FP="$(cat "$FAKE_PORT_FILE" 2>/dev/null)"
# the fake server answers with the body named in $WORK/case and keeps the request in req.json
fake() {  # fake CASE EXPECTED-MESSAGE
  echo "$1" > "$WORK/case"
  expect_rc 1 "$BIN" "${CL[@]}" --url "http://127.0.0.1:$FP" "${@:3}" -o "$WORK/f.wav"
  has "$2" "$WORK/err"
  [ ! -e "$WORK/f.wav" ] && [ ! -e "$WORK/f.wav.partial" ] && ok || bad "$1: a refused stream left a file"
}
fake truncated "truncated: it ends inside the record"
fake reordered "frame 1 at byte .* out of order (expected frame 0)"
fake range "code 4000 outside \[0, 2048)"
fake version "wire version 2; this reader knows version 1"
# --timeout: a server that stops sending is given up after that long, with no output file
t0=$(date +%s)
fake stall "the server sent nothing for 1000 ms (timeout)" --timeout 1
if [ $(( $(date +%s) - t0 )) -le 4 ]; then ok; else bad "--timeout 1 waited $(( $(date +%s) - t0 )) s"; fi
# SIGTERM while the stream stalls: the partial file is removed and the client dies of the signal
echo stall > "$WORK/case"
"$BIN" "${CL[@]}" --url "http://127.0.0.1:$FP" --timeout 30 -o "$WORK/sig.wav" 2>"$WORK/sig.err" &
CPID=$!
for _ in $(seq 1 50); do [ -e "$WORK/sig.wav.partial" ] && break; sleep 0.1; done
sleep 0.5
kill -TERM "$CPID"; wait "$CPID"; rc=$?
if [ "$rc" = 143 ] && [ ! -e "$WORK/sig.wav.partial" ] && [ ! -e "$WORK/sig.wav" ]; then ok
else bad "SIGTERM: rc $rc, files: $(ls "$WORK" | grep sig.wav) $(cat "$WORK/sig.err")"; fi
has "interrupted: no output written" "$WORK/sig.err"
# every request flag reaches the request body (the fake server keeps it), --api-key its header
echo codes > "$WORK/case"
printf '  %s\n' "$TEXT" > "$WORK/text.txt"
FL=(client --url "http://127.0.0.1:$FP" -m "$M" -f "$WORK/text.txt" -s "$VOICE" -l english -i calm --seed 9
    --temperature 0.7 --top-k 30 --top-p 0.9 --repetition-penalty 1.1 --max-new-tokens 7 --api-key k3y -q)
expect_rc 0 "$BIN" "${FL[@]}" --streaming-text -o "$WORK/fl.wav"
[ ! -s "$WORK/err" ] && ok || bad "-q printed: $(cat "$WORK/err")"
cp "$WORK/req.json" "$WORK/req1.json"
expect_rc 0 "$BIN" "${FL[@]}" --greedy --non-streaming-text -o "$WORK/fl.wav"
"$PY" - "$WORK/req1.json" "$WORK/req.json" "$TEXT" "$VOICE" <<'PY' >"$WORK/req.out" 2>&1
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
want = {"input": sys.argv[3], "voice": sys.argv[4], "language": "english", "instructions": "calm", "seed": 9,
        "top_k": 30, "max_new_tokens": 7, "response_format": "codes", "stream": True, "stream_format": "audio",
        "non_streaming_mode": False}
near = {"temperature": 0.7, "top_p": 0.9, "repetition_penalty": 1.1}
x = a["body"]
bad = [k for k, v in want.items() if x.get(k) != v] + [k for k, v in near.items() if abs(x.get(k, -9) - v) > 1e-6]
bad += [k for k in x if k not in want and k not in near]
if a["auth"] != "Bearer k3y": bad.append("auth")
y = b["body"]
if y.get("temperature") != 0 or y.get("non_streaming_mode") is not True: bad.append("greedy/non-streaming")
print("request ok" if not bad else "request bad: %s in %s / %s" % (bad, x, y))
PY
has "request ok" "$WORK/req.out"
# the Python client builds the same request from the same flags
"$PY" - "$SRC/python" "$WORK/req1.json" "$VOICE" <<'PY' >"$WORK/pyreq.out" 2>&1
import json, sys
sys.path.insert(0, sys.argv[1])
from codectalk import client
want = json.load(open(sys.argv[2]))
a = client.parser().parse_args(["--url", "http://x:1", "--manifest", "m", "-t", want["body"]["input"], "-s", sys.argv[3],
    "-l", "english", "-i", "calm", "--seed", "9", "--temperature", "0.7", "--top-k", "30", "--top-p", "0.9",
    "--repetition-penalty", "1.1", "--max-new-tokens", "7", "--api-key", "k3y", "-o", "x.wav"])
body, hdrs = client.request(a)
w = dict(want["body"]); w.pop("non_streaming_mode")
same = body.keys() == w.keys() and all(abs(body[k] - w[k]) < 1e-6 if isinstance(w[k], float) else body[k] == w[k] for k in w)
print("pyrequest ok" if same and hdrs.get("Authorization") == want["auth"] else "pyrequest bad: %s %s vs %s" % (body, hdrs, want))
PY
has "pyrequest ok" "$WORK/pyreq.out"

# 3b. the Python client's decoder (python/codectalk/client.py) on the fuzz corpus and on the
# altered bodies: the same verdicts as the C decoder
"$PY" - "$SRC/python" "$SRC/fuzz/corpus/codes_wire" "$WORK" <<'PY' >"$WORK/pywire" 2>&1
import os, sys
sys.path.insert(0, sys.argv[1])
from codectalk.client import CodesReader, Refused
def run(path):
    seen = []
    r = CodesReader(lambda h: seen.append("h"), lambda i, c: seen.append(i), lambda u: seen.append("u%d" % u))
    try:
        data = open(path, "rb").read()
        for k in range(0, len(data), 7):
            r.feed(data[k:k + 7])
        r.finish()
        return "ok %d" % sum(1 for x in seen if isinstance(x, int))
    except Refused as e:
        return str(e)
want = {
    "valid.bin": "ok 4", "empty_stream.bin": "ok 0", "truncated.bin": "truncated: it ends inside the record",
    "no_end.bin": "no end record after 4 frames", "reordered.bin": "frame 1 at byte",
    "out_of_range.bin": "code 2048 outside [0, 2048)", "version2.bin": "wire version 2; this reader knows version 1",
    "error_record.bin": "failed at the server: utterance 1: out of memory", "huge_length.bin": "declares",
    "bad_frame_rate.bin": "inconsistent", "after_end.bin": "after the end record", "two_headers.bin": "a second header",
}
corpus = sys.argv[2]
for f, w in sorted(want.items()):
    got = run(os.path.join(corpus, f))
    print(("pyok " if w in got else "PYBAD ") + f + ": " + got)
for f, w in (("truncated.bin", "truncated: it ends inside"), ("reordered.bin", "out of order (expected frame 0)"),
             ("range.bin", "code 4000 outside [0, 2048)"), ("version.bin", "wire version 2")):
    got = run(os.path.join(sys.argv[3], f))
    print(("pyok " if w in got else "PYBAD ") + f + ": " + got)
print("codes files in the corpus: %d" % len(os.listdir(corpus)))
PY
if [ "$(grep -c '^pyok' "$WORK/pywire")" = 16 ] && ! grep -q PYBAD "$WORK/pywire"; then ok; else bad "python decoder: $(cat "$WORK/pywire")"; fi

# 4. usage errors (exit 2)
expect_rc 2 "$BIN" client --url "$URL" --decoder-backend onnx --manifest "$WORK" -t hi -o "$WORK/x.wav"
has "python/codectalk/client.py" "$WORK/err"
expect_rc 2 "$BIN" client --url "$URL" --decoder-backend tflite -m "$M" -t hi -o "$WORK/x.wav"
has "native, windowed or onnx" "$WORK/err"
expect_rc 2 "$BIN" "${CL[@]}" --float -o -
has "float writes a WAV file" "$WORK/err"
expect_rc 2 "$BIN" client -m "$M" -t hi -o "$WORK/x.wav"
has "--url" "$WORK/err"
expect_rc 2 "$BIN" client --url "$URL" -t hi -o "$WORK/x.wav"
has "-m DIR is required" "$WORK/err"
expect_rc 2 "$BIN" client --url "$URL" -m "$M" -t hi --xvector /dev/null -o "$WORK/x.wav"
has "unknown option" "$WORK/err"
expect_rc 2 "$BIN" client --url "ftp:/x" -m "$M" -t hi -o "$WORK/x.wav"
expect_rc 2 "$BIN" client --url "$URL" -m "$M" -t hi --timeout 0 -o "$WORK/x.wav"
[ ! -e "$WORK/x.wav" ] && ok || bad "a usage error left a file"
finish test_client
