#!/usr/bin/env bash
# Voice cloning on the command line (docs/CLONING.md "CLI"): voice info, --voice and
# --x-vector-only on synth and codes, and their refusals (nothing written on failure).
set -u
BIN="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
C="$SRC/fuzz/corpus/voice"

# voice info reads a file without a model
expect_rc 0 "$BIN" voice info "$C/icl_small.voice"
has "ICL" "$WORK/out"; has "transcript: *Hi\." "$WORK/out"; has "0b6-base" "$WORK/out"
has "240000 samples" "$WORK/out"; has "abababab" "$WORK/out"
expect_rc 0 "$BIN" voice info "$C/xvector_only.voice";  has "x-vector only" "$WORK/out"
expect_rc 1 "$BIN" voice info "$C/truncated.voice";     has "corrupt voice file" "$WORK/err"
expect_rc 1 "$BIN" voice info "$C/version2.voice";      has "version 2" "$WORK/err"
expect_rc 1 "$BIN" voice info "$C/pt.voice";            has "not a codectalk voice file" "$WORK/err"
expect_rc 1 "$BIN" voice info "$WORK/missing.voice";    has "cannot open" "$WORK/err"
expect_rc 2 "$BIN" voice info;                          has "needs a voice FILE" "$WORK/err"
expect_rc 2 "$BIN" voice frob;                          has "subcommand" "$WORK/err"

M="$WORK/base"
expect_rc 0 "$BIN" make-model --preset tiny-base --seed 3 --out "$M"
# a voice of another model is refused by info -m, codes and synth, naming both hashes
expect_rc 1 "$BIN" voice info "$C/icl_small.voice" -m "$M"; has "another model" "$WORK/err"; has "abababab" "$WORK/err"
expect_rc 1 "$BIN" codes -m "$M" -t "Hello." --voice "$C/icl_small.voice" -o "$WORK/c.json"
has "another model" "$WORK/err"; [ ! -e "$WORK/c.json" ] && ok || bad "codes left c.json"
expect_rc 1 "$BIN" synth -m "$M" -t "Hello." --voice "$C/xvector_only.voice" -q -o "$WORK/s.wav"
has "another model" "$WORK/err"; [ ! -e "$WORK/s.wav" ] && [ ! -e "$WORK/s.wav.partial" ] && ok || bad "synth left output"
# flags that do not go together
expect_rc 2 "$BIN" codes -m "$M" -t "Hello." --x-vector-only -o "$WORK/c.json";  has "applies to a cloned voice" "$WORK/err"
head -c 256 /dev/zero > "$WORK/x.bin"
expect_rc 2 "$BIN" codes -m "$M" -t "Hello." --voice "$C/icl_small.voice" --xvector "$WORK/x.bin" -o "$WORK/c.json"
has "use one" "$WORK/err"
[ ! -e "$WORK/c.json" ] && ok || bad "codes left c.json"

# ---- voice create from a clip, synth with it, the same voice through the server ----
clip() {  # clip PATH SECONDS RATE CHANNELS: a voiced tone with a little noise, 16-bit WAV
  python3 - "$@" <<'PY'
import math, random, struct, sys, wave
path, sec, rate, ch = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
random.seed(1); f = wave.open(path, "wb"); f.setnchannels(ch); f.setsampwidth(2); f.setframerate(rate)
out = bytearray()
for i in range(int(sec * rate)):
    t = i / rate
    x = 0.3 * math.sin(2 * math.pi * (140 + 40 * math.sin(4.4 * t)) * t) * (0.6 + 0.4 * math.sin(19 * t)) + 0.02 * random.uniform(-1, 1)
    out += struct.pack("<h", int(x * 32767)) * ch
f.writeframes(bytes(out)); f.close()
PY
}
clip "$WORK/ref.wav" 4 24000 1
clip "$WORK/ref44.wav" 2 44100 2
clip "$WORK/short.wav" 0.5 24000 1
printf 'not audio' > "$WORK/junk.wav"
T="This is the reference transcript, read aloud in full."

expect_rc 0 "$BIN" voice create -m "$M" --ref-audio "$WORK/ref.wav" --ref-text "$T" -o "$WORK/icl.voice"
has "ICL voice" "$WORK/err"
expect_rc 0 "$BIN" voice info "$WORK/icl.voice" -m "$M";  has "ICL" "$WORK/out"; has "matches -m" "$WORK/out"
has "transcript: *$T" "$WORK/out"; has "96000 samples" "$WORK/out"
expect_rc 0 "$BIN" voice create -m "$M" --ref-audio "$WORK/ref44.wav" --x-vector-only -o "$WORK/xv.voice"
has "warning: .*averaged to mono" "$WORK/err"; has "warning: .*resampled from 44100 Hz" "$WORK/err"
expect_rc 0 "$BIN" voice info "$WORK/xv.voice";  has "x-vector only" "$WORK/out"
# the short-transcript warning (2 tokens for 4 s: under 1.5 tokens a second)
expect_rc 0 "$BIN" voice create -m "$M" --ref-audio "$WORK/ref.wav" --ref-text "Hello." -o "$WORK/short_t.voice"
has "warning: the transcript has 2 tokens for 4.0 s" "$WORK/err"
# refusals: nothing written
expect_rc 2 "$BIN" voice create -m "$M" --ref-audio "$WORK/ref.wav" -o "$WORK/no.voice";  has "x-vector-only" "$WORK/err"
expect_rc 2 "$BIN" voice create -m "$M" --ref-audio "$WORK/ref.wav" --ref-text "$T" --x-vector-only -o "$WORK/no.voice"
has "drop one" "$WORK/err"
expect_rc 1 "$BIN" voice create -m "$M" --ref-audio "$WORK/short.wav" --x-vector-only -o "$WORK/no.voice";  has "at least 1 s" "$WORK/err"
expect_rc 1 "$BIN" voice create -m "$M" --ref-audio "$WORK/junk.wav" --x-vector-only -o "$WORK/no.voice";  has "junk.wav" "$WORK/err"
expect_rc 1 "$BIN" voice create -m "$M" --ref-audio "$WORK/ref.wav" --x-vector-only -o "$WORK/nodir/x.voice"
[ ! -e "$WORK/no.voice" ] && [ ! -e "$WORK/no.voice.partial" ] && [ ! -e "$WORK/nodir" ] && ok || bad "a refused voice create wrote a file"
CV="$WORK/cv"
expect_rc 0 "$BIN" make-model --preset tiny --seed 3 --out "$CV"
expect_rc 1 "$BIN" voice create -m "$CV" --ref-audio "$WORK/ref.wav" --x-vector-only -o "$WORK/no.voice";  has "Base" "$WORK/err"

# synth: --voice FILE equals --ref-audio with the same transcript, and --x-vector-only differs from ICL
S=(-t "Hello there, this is a cloned voice." --seed 11 --max-new-tokens 13 -q --format pcm)
expect_rc 0 "$BIN" synth -m "$M" --voice "$WORK/icl.voice" "${S[@]}" -o "$WORK/file_icl.pcm"
expect_rc 0 "$BIN" synth -m "$M" --ref-audio "$WORK/ref.wav" --ref-text "$T" "${S[@]}" -o "$WORK/clip_icl.pcm"
cmp -s "$WORK/file_icl.pcm" "$WORK/clip_icl.pcm" && [ -s "$WORK/file_icl.pcm" ] && ok || bad "synth --voice differs from --ref-audio"
expect_rc 0 "$BIN" synth -m "$M" --voice "$WORK/icl.voice" --x-vector-only "${S[@]}" -o "$WORK/file_xv.pcm"
cmp -s "$WORK/file_icl.pcm" "$WORK/file_xv.pcm" && bad "--x-vector-only gave the ICL audio" || ok
expect_rc 2 "$BIN" synth -m "$M" --ref-audio "$WORK/ref.wav" "${S[@]}" -o "$WORK/no.pcm";  has "x-vector-only" "$WORK/err"
expect_rc 2 "$BIN" synth -m "$M" --ref-text "$T" "${S[@]}" -o "$WORK/no.pcm";  has "give the clip" "$WORK/err"
[ ! -e "$WORK/no.pcm" ] && ok || bad "a refused synth wrote output"

# server: uploads (multipart and JSON), list, conflicts, speech by name and one-off, delete
if start_serve -m "$M" --voices-dir "$WORK/voices/new" --max-upload-mb 1; then ok; else bad "serve did not start: $(tail -3 "$WORK/srv.log")"; fi
U="http://127.0.0.1:$PORT"
code() { curl -s -o "$WORK/body" -w '%{http_code}' "$@"; }
[ "$(code -F name=amy -F "audio=@$WORK/ref.wav" -F "ref_text=$T" "$U/v1/audio/voices")" = 201 ] && ok || bad "multipart upload: $(cat "$WORK/body")"
has '"mode":"icl"' "$WORK/body"; has '"warnings":\[\]' "$WORK/body"
[ -f "$WORK/voices/new/amy.voice" ] && ok || bad "the upload is not in --voices-dir"
printf '{"name":"bob-2","audio":"data:audio/wav;base64,%s","x_vector_only":true}' "$(base64 -w0 "$WORK/ref44.wav")" > "$WORK/up.json"
[ "$(code -H 'Content-Type: application/json' --data-binary @"$WORK/up.json" "$U/v1/audio/voices")" = 201 ] && ok || bad "JSON upload: $(cat "$WORK/body")"
has '"mode":"x_vector_only"' "$WORK/body"; has 'averaged to mono' "$WORK/body"
[ "$(code -F name=amy -F "audio=@$WORK/ref.wav" -F x_vector_only=true "$U/v1/audio/voices")" = 409 ] && ok || bad "a taken name: $(cat "$WORK/body")"
[ "$(code -F name=../amy -F "audio=@$WORK/ref.wav" -F x_vector_only=true "$U/v1/audio/voices")" = 400 ] && ok || bad "a path as name"
has '"param":"name"' "$WORK/body"
[ "$(code -F name=cara -F "audio=@$WORK/ref.wav" "$U/v1/audio/voices")" = 400 ] && ok || bad "ICL upload without ref_text"
has 'x-vector-only' "$WORK/body"
[ "$(code -F name=cara -F "audio=@$WORK/short.wav" -F x_vector_only=true "$U/v1/audio/voices")" = 400 ] && ok || bad "a 0.5 s upload"
has 'at least 1 s' "$WORK/body"
[ "$(code -F name=cara -F "audio=@$WORK/ref.wav" -F x_vector_only=true -F colour=red "$U/v1/audio/voices")" = 400 ] && ok || bad "an unknown form field"
has "unknown field 'colour'" "$WORK/body"
head -c 1200000 /dev/zero > "$WORK/big.bin"
[ "$(code -F name=big -F "audio=@$WORK/big.bin" "$U/v1/audio/voices")" = 413 ] && ok || bad "an upload over --max-upload-mb"
[ ! -e "$WORK/voices/new/cara.voice" ] && [ ! -e "$WORK/voices/new/big.voice" ] && ok || bad "a refused upload left a file"
[ "$(code "$U/v1/audio/voices")" = 200 ] && ok || bad "GET voices"
python3 - "$WORK/body" <<'PY' && ok || bad "GET /v1/audio/voices: $(cat "$WORK/body")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["voices"] == ["amy", "bob-2"], d
assert [(u["name"], u["mode"], u["usable"]) for u in d["uploaded"]] == [("amy", "icl", True), ("bob-2", "x_vector_only", True)], d
PY
# the uploaded voice and the voice file give the same audio as synth
speech() { curl -s -o "$2" -w '%{http_code}' "$U/v1/audio/speech" -H 'Content-Type: application/json' --data-binary "$1"; }
R='"input":"Hello there, this is a cloned voice.","seed":11,"max_new_tokens":13,"response_format":"pcm"'
[ "$(speech "{$R,\"voice\":\"amy\"}" "$WORK/srv_icl.pcm")" = 200 ] && ok || bad "speech with voice amy: $(cat "$WORK/srv_icl.pcm")"
cmp -s "$WORK/srv_icl.pcm" "$WORK/file_icl.pcm" && ok || bad "server voice amy differs from synth --voice"
[ "$(speech "{$R,\"voice\":\"amy\",\"x_vector_only\":true}" "$WORK/srv_xv.pcm")" = 200 ] && ok || bad "x_vector_only with amy"
cmp -s "$WORK/srv_xv.pcm" "$WORK/file_xv.pcm" && ok || bad "server x_vector_only differs from synth --x-vector-only"
printf '{%s,"voice":"alloy","ref_audio":"%s","ref_text":"%s"}' "$R" "$(base64 -w0 "$WORK/ref.wav")" "$T" > "$WORK/oneoff.json"
[ "$(speech @"$WORK/oneoff.json" "$WORK/srv_oneoff.pcm")" = 200 ] && ok || bad "one-off ref_audio: $(cat "$WORK/srv_oneoff.pcm")"
cmp -s "$WORK/srv_oneoff.pcm" "$WORK/file_icl.pcm" && ok || bad "one-off clone differs from synth --voice"
# the one-off clip has amy's reference codes: its decoder started from the state kept after amy's
[ "$(code "$U/metrics")" = 200 ] && ok || bad "GET /metrics"
has '^codectalk_icl_primes_total 2$' "$WORK/body"; has '^codectalk_icl_prime_reuses_total 1$' "$WORK/body"
[ "$(speech "{$R,\"ref_audio\":\"not base64\"}" "$WORK/body")" = 400 ] && ok || bad "bad base64"
has '"param":"ref_audio"' "$WORK/body"
printf '{%s,"ref_audio":"%s"}' "$R" "$(base64 -w0 "$WORK/ref.wav")" > "$WORK/notext.json"
[ "$(speech @"$WORK/notext.json" "$WORK/body")" = 400 ] && ok || bad "one-off ICL without ref_text"
has 'x-vector-only' "$WORK/body"
[ "$(speech "{$R,\"voice\":\"nobody\"}" "$WORK/body")" = 400 ] && ok || bad "unknown uploaded voice"
has 'unknown_voice' "$WORK/body"
[ "$(code -X DELETE "$U/v1/audio/voices/bob-2")" = 200 ] && ok || bad "DELETE"
[ "$(code -X DELETE "$U/v1/audio/voices/bob-2")" = 404 ] && ok || bad "DELETE twice"
[ "$(code "$U/v1/audio/voices/bob-2")" = 404 ] && ok || bad "GET a deleted voice"
[ "$(code -X PUT "$U/v1/audio/voices/amy")" = 405 ] && ok || bad "PUT a voice"
[ ! -e "$WORK/voices/new/bob-2.voice" ] && ok || bad "DELETE left the file"
kill $SRV; wait $SRV 2>/dev/null

# bench clone: encode times and the TTFA of plain and cloned requests, as a table and JSON
expect_rc 0 "$BIN" bench clone -m "$M" --ref-audio "$WORK/ref.wav" --repeat 1 --frames 3 --json "$WORK/bench.json"
has "speaker encoder" "$WORK/out"; has "speech-tokenizer encoder" "$WORK/out"; has "| ICL, first request of the voice |" "$WORK/out"
has "| ICL, voice used before |" "$WORK/out"
python3 - "$WORK/bench.json" <<'PY' && ok || bad "bench clone JSON: $(cat "$WORK/bench.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ref_frames"] == 50 and abs(d["ref_seconds"] - 4.0) < 1e-6, d
assert d["speaker_encoder_ms"] > 0 and d["speech_encoder_ms"] > 0, d
assert all(d["ttfa_ms"][k] > 0 for k in ("plain", "x_vector_only", "icl", "icl_voice_used_before")), d
p = d["prompt_len"]  # the x-vector adds the speaker slot; ICL (streaming layout) one per reference frame
assert p["x_vector_only"] == p["plain"] + 1 and p["icl"] == p["x_vector_only"] + d["ref_frames"], d
# prompt reuse on the engine's one slot: the ICL request after the x-vector-only one keeps the
# role block and the codec header of the same x-vector (3 + 6) and copies its transcript rows
# from the prompt cache (the voice ran in the warm-up round); every count is below its prompt
k = d["prompt_reused"]
assert 9 < k["icl_voice_used_before"] < p["icl"] and all(0 <= k[n] < p[n] for n in p), d
PY
has "| request | prompt positions | kept | prefill ms (last run) | TTFA ms |" "$WORK/out"
expect_rc 2 "$BIN" bench clone -m "$M";  has "needs -m DIR and --ref-audio" "$WORK/err"
finish test_clone
