#!/usr/bin/env bash
# One engine, one audio: for the same text (three sentences, two utterances), seed, voice and
# options, `codectalk synth -o -` (raw s16le), the server's WAV body (minus its 44-byte header),
# its raw PCM stream and its SSE stream (base64 deltas decoded) are byte-identical; a server in
# overlapped placement gives the same bytes again. Then the step stats of that server (run with
# CODECTALK_STEP_STATS_DIR) hold every engine, codec, schedule and hand-off counter and the
# server's own. Loopback only; every wait is bounded.
set -u
BIN="$1"; WORK="$(mktemp -d)"
PY="$(command -v /usr/bin/python3 || command -v python3)"
SRV_PID=""
cleanup() { [ -n "$SRV_PID" ] && kill "$SRV_PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
pass=0; fail=0
ok()  { pass=$((pass+1)); }
bad() { fail=$((fail+1)); echo "FAIL: $*" >&2; }

TEXT="The first sentence of this test is long enough to fill a good part of one utterance on its own, \
and it keeps going for a while with a few more words. A second sentence follows it, so that the engine \
has to decide where the first utterance ends and the next one begins. The third and last sentence lands \
in the next utterance, which starts from the seed plus one."
SEED=11; MNT=12
M="$WORK/tiny"
"$BIN" make-model --preset tiny --seed 1 --out "$M" >/dev/null 2>"$WORK/err" || { cat "$WORK/err"; exit 1; }
VOICE="$("$PY" -c 'import json,sys; print(sorted(json.load(open(sys.argv[1]))["talker_config"]["spk_id"])[0])' \
         "$M/config.json" 2>/dev/null || echo vivian)"

"$BIN" synth -m "$M" -t "$TEXT" -s "$VOICE" --seed $SEED --max-new-tokens $MNT --temperature 0.8 --top-k 40 \
  -q -o - > "$WORK/synth.raw" 2>"$WORK/err"
if [ $? = 0 ] && [ -s "$WORK/synth.raw" ]; then ok; else bad "synth failed: $(head -c 400 "$WORK/err")"; fi
# more audio than one utterance may make (MNT - 1 frames): the text really was split
if [ "$(stat -c %s "$WORK/synth.raw")" -gt $(( (MNT - 1) * 1920 * 2 )) ]; then ok
else bad "synth gave $(stat -c %s "$WORK/synth.raw") bytes: one utterance only"; fi

# Starts `codectalk serve` on a free loopback port (extra flags in "$@"); sets PORT, SRV_PID.
start_server() {
  "$BIN" serve -m "$M" --host 127.0.0.1 --port 0 --max-streams 2 "$@" > /dev/null 2>"$WORK/srv.log" &
  SRV_PID=$!
  PORT=""
  for _ in $(seq 1 600); do  # at most 60 s
    grep -q '^ready' "$WORK/srv.log" 2>/dev/null && break
    kill -0 "$SRV_PID" 2>/dev/null || break
    sleep 0.1
  done
  PORT="$(sed -n 's|.*on http://127\.0\.0\.1:\([0-9]*\) .*|\1|p' "$WORK/srv.log" | head -1)"
  if grep -q '^ready' "$WORK/srv.log" && [ -n "$PORT" ]; then ok; else bad "server did not start: $(cat "$WORK/srv.log")"; fi
}

# Stops the server with SIGTERM and waits (at most 30 s) for it to exit; its status must be 0.
stop_server() {
  kill -TERM "$SRV_PID" 2>/dev/null
  for _ in $(seq 1 300); do kill -0 "$SRV_PID" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$SRV_PID" 2>/dev/null; then bad "server ignored SIGTERM"; kill -KILL "$SRV_PID"; fi
  wait "$SRV_PID"; local rc=$?
  if [ $rc = 0 ]; then ok; else bad "server exit status $rc: $(tail -5 "$WORK/srv.log")"; fi
  SRV_PID=""
}

# POSTs one speech request (extra JSON members in $1) and writes the body to $2.
speech() {
  local body
  body="$("$PY" -c 'import json,sys; d={"input":sys.argv[1],"voice":sys.argv[2],"seed":int(sys.argv[3]),
"max_new_tokens":int(sys.argv[4]),"temperature":0.8,"top_k":40}; d.update(json.loads(sys.argv[5])); print(json.dumps(d))' \
    "$TEXT" "$VOICE" $SEED $MNT "$1")"
  local code
  code="$(curl -sS --max-time 120 -o "$2" -w '%{http_code}' -H 'Content-Type: application/json' \
          --data-binary "$body" "http://127.0.0.1:$PORT/v1/audio/speech" 2>"$WORK/curl.err")"
  if [ "$code" = 200 ]; then ok; else bad "speech $1: HTTP $code $(head -c 300 "$2") $(cat "$WORK/curl.err")"; fi
}

same() {  # same FILE WHAT
  if cmp -s "$WORK/synth.raw" "$1"; then ok
  else bad "$2 differs from synth -o - ($(stat -c %s "$1") vs $(stat -c %s "$WORK/synth.raw") bytes)"; fi
}

sse_pcm() {  # decodes the speech.audio.delta payloads of SSE body $1 into $2; checks the event order
  "$PY" - "$1" "$2" <<'PY'
import base64, json, sys
events = [e for e in open(sys.argv[1], encoding="utf-8").read().split("\n\n") if e.strip()]
pcm = bytearray()
types = []
for e in events:
    assert e.startswith("data: "), e[:80]
    d = json.loads(e[6:])
    types.append(d["type"])
    if d["type"] == "speech.audio.delta":
        assert d["response_format"] == "pcm"
        pcm += base64.b64decode(d["audio"])
assert types and types[-1] == "speech.audio.done" and set(types[:-1]) == {"speech.audio.delta"}, types
open(sys.argv[2], "wb").write(pcm)
PY
}

# 1. the default server (placement auto)
start_server
if [ -n "$PORT" ]; then
  speech '{}' "$WORK/full.wav"
  tail -c +45 "$WORK/full.wav" > "$WORK/full.raw"; same "$WORK/full.raw" "the WAV body"
  if [ "$(head -c 4 "$WORK/full.wav")" = RIFF ]; then ok; else bad "WAV body has no RIFF header"; fi
  speech '{"response_format":"pcm","stream":true,"stream_format":"audio"}' "$WORK/stream.raw"
  same "$WORK/stream.raw" "the raw PCM stream"
  speech '{"response_format":"pcm","stream":true}' "$WORK/sse.txt"
  if sse_pcm "$WORK/sse.txt" "$WORK/sse.raw"; then ok; else bad "SSE stream malformed"; fi
  same "$WORK/sse.raw" "the SSE stream"
  stop_server
fi

# 2. overlapped placement with step stats: the same bytes, and every counter fired
STATS="$WORK/stats"; mkdir -p "$STATS"
CODECTALK_STEP_STATS_DIR="$STATS" start_server --placement overlapped
if [ -n "$PORT" ]; then
  if grep -q 'overlapped placement' "$WORK/srv.log"; then ok; else bad "not overlapped: $(cat "$WORK/srv.log")"; fi
  speech '{"response_format":"pcm","stream":true,"stream_format":"audio"}' "$WORK/ovl.raw"
  same "$WORK/ovl.raw" "the raw PCM stream (overlapped placement)"
  stop_server
  "$BIN" stats merge "$STATS" --json > "$WORK/merged.json" 2>"$WORK/err" || bad "stats merge: $(cat "$WORK/err")"
  "$PY" - "$WORK/merged.json" <<'PY' && ok || bad "step stats incomplete"
import json, sys
roles = json.load(open(sys.argv[1]))["roles"]
seen = {}
for counters in roles.values():
    for name, s in counters.items():
        seen[name] = seen.get(name, 0) + s["count"]
want = ["engine.decide_ms", "engine.prefill_ms", "engine.step_ms", "codec.push_ms", "sched.next_chunk_ms",
        "hop.frame_handoff_ms", "hop.queue_full_wait_ms", "hop.wait_for_frames_ms",
        "serve.dispatch_ms", "serve.admission_wait_ms"]
missing = [n for n in want if seen.get(n, 0) < 1]
if missing:
    print("missing counters:", missing, "seen:", sorted(seen), file=sys.stderr)
    sys.exit(1)
PY
fi

echo "test_identity: $pass passed, $fail failed"
[ "$fail" = 0 ]
