#!/usr/bin/env bash
# CLI behaviour: help texts, make-model + codes + tokenize on a tiny model, clear errors.
set -u
BIN="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"

expect_rc 0 "$BIN" --help;                     has "make-model" "$WORK/out"
for c in synth codes tokenize make-model info probe; do
  expect_rc 0 "$BIN" "$c" --help;              has "usage: codectalk $c" "$WORK/out"
done
# make-model's help names every preset it takes (those its unknown-preset error lists)
expect_rc 0 "$BIN" make-model --help; cp "$WORK/out" "$WORK/mm_help"
expect_rc 1 "$BIN" make-model --preset nope --out "$WORK/nope"
presets=$(sed -n 's/.*valid presets: \(.*\))$/\1/p' "$WORK/err" | tr -d ',')
[ -n "$presets" ] && ok || bad "no preset list in: $(cat "$WORK/err")"
for p in $presets; do has "[ ,]$p\(,\|\$\)" "$WORK/mm_help"; done
has "tiny-base" "$WORK/mm_help"
expect_rc 0 "$BIN" codes --help
for f in --model --text --file --speaker --language --instruct --seed --greedy --max-frames \
         --temperature --top-k --top-p --repetition-penalty --format --output; do
  has "$f" "$WORK/out"
done
expect_rc 2 "$BIN" frobnicate;                 has "unknown command" "$WORK/err"
expect_rc 2 "$BIN" codes --bogus;              has "unknown option '--bogus'" "$WORK/err"
expect_rc 2 "$BIN" codes --max-frames abc;     has "expects an integer" "$WORK/err"

M="$WORK/tiny"
expect_rc 0 "$BIN" make-model --preset tiny --seed 4 --out "$M"
expect_rc 1 "$BIN" make-model --preset tiny --seed 4 --out "$M";  has "not empty\|non-empty" "$WORK/err"
expect_rc 1 "$BIN" make-model --preset huge --out "$WORK/x";      has "0.6b-customvoice" "$WORK/err"
expect_rc 0 "$BIN" info -m "$M";               has "custom_voice" "$WORK/out"
has "(talker bf16, code predictor bf16)" "$WORK/out"
has "weight file: $M/model.safetensors (stored)" "$WORK/out"; has "weight panels: none" "$WORK/out"
# the weight cache: the first load in a format converts and writes it, the next mmaps it; the
# frames are the same either way, and a cache that cannot be written is a warning, not an error
WC="$WORK/wc"
XDG_CACHE_HOME="$WC" expect_rc 0 "$BIN" info -m "$M" --weights int8
has "weight file: $M/model.safetensors (converted)" "$WORK/out"; has "converted at load: [1-9]" "$WORK/out"
has "weight cache: $WC/codectalk/weights/.*-int8-int8-.*safetensors" "$WORK/out"
XDG_CACHE_HOME="$WC" expect_rc 0 "$BIN" info -m "$M" --weights int8
has "weight file: $WC/codectalk/weights/.*(cache)" "$WORK/out"; has "converted at load: 0 matrices" "$WORK/out"
XDG_CACHE_HOME="$WC" expect_rc 0 "$BIN" codes -m "$M" -t "Hello there." -s vivian --max-frames 6 --weights int8 -o "$WORK/wc1.json"
: > "$WORK/wc-file"
XDG_CACHE_HOME="$WORK/wc-file" expect_rc 0 "$BIN" codes -m "$M" -t "Hello there." -s vivian --max-frames 6 --weights int8 -o "$WORK/wc2.json"
has "warning: weight cache .* not written" "$WORK/err"
if cmp -s "$WORK/wc1.json" "$WORK/wc2.json"; then ok; else bad "codes from the weight cache differ from converting at load"; fi
# weight panels stored in the weight file where the kernels have them (avx512bf16: AVX-512 VNNI):
# quantize --weight-panels stores them, a load with the panels maps them and gives the frames
# of packing them and of none; a file whose panels are of another layout packs them (and says
# why); the weight cache written by a load with the panels stores them too; a level without
# panels cannot store them
PQ="$WORK/pq"; mkdir -p "$PQ"
for f in "$M"/*; do [ "$(basename "$f")" = model.safetensors ] || ln -s "$f" "$PQ/"; done
printf 'talker:\n  weight_panels: true\n' > "$WORK/pan.yaml"
if "$BIN" info -m "$M" --weights int8 --weight-panels 2>/dev/null | grep -q "weight panels: [0-9.]* MiB"; then
  expect_rc 0 "$BIN" quantize -m "$M" --weights int8 --weight-panels -o "$PQ/model.safetensors"
  has "MiB of weight panels (layout " "$WORK/out"
  expect_rc 0 "$BIN" info -m "$PQ" --weight-panels; has "weight panels: [0-9.]* MiB, mapped from the weight file" "$WORK/out"
  expect_rc 0 "$BIN" info -m "$PQ"; has "weight panels: none" "$WORK/out"
  expect_rc 0 "$BIN" codes -m "$PQ" -t "Hello there, how are you today?" -s vivian --max-frames 6 --seed 3 --profile "$WORK/pan.yaml" -o "$WORK/pq1.json"
  expect_rc 0 "$BIN" codes -m "$PQ" -t "Hello there, how are you today?" -s vivian --max-frames 6 --seed 3 -o "$WORK/pq2.json"
  XDG_CACHE_HOME="$WORK/wcp" expect_rc 0 "$BIN" codes -m "$M" -t "Hello there, how are you today?" -s vivian --max-frames 6 --seed 3 --weights int8 --profile "$WORK/pan.yaml" -o "$WORK/pq3.json"
  if cmp -s "$WORK/pq1.json" "$WORK/pq2.json" && cmp -s "$WORK/pq1.json" "$WORK/pq3.json"; then ok; else bad "frames with mapped, packed and no weight panels differ"; fi
  XDG_CACHE_HOME="$WORK/wcp" expect_rc 0 "$BIN" info -m "$M" --weights int8 --weight-panels
  has "weight file: $WORK/wcp/codectalk/weights/.*(cache)" "$WORK/out"; has "weight panels: [0-9.]* MiB, mapped from the weight file" "$WORK/out"
  # a cache written without panels: the first load with them packs them and rewrites it, the next maps them
  XDG_CACHE_HOME="$WC" expect_rc 0 "$BIN" info -m "$M" --weights int8 --weight-panels
  has "weight file: $WC/codectalk/weights/.*(cache)" "$WORK/out"; has "weight panels: [0-9.]* MiB, repacked at load" "$WORK/out"
  XDG_CACHE_HOME="$WC" expect_rc 0 "$BIN" info -m "$M" --weights int8 --weight-panels
  has "weight panels: [0-9.]* MiB, mapped from the weight file" "$WORK/out"
  XDG_CACHE_HOME="$WC" expect_rc 0 "$BIN" codes -m "$M" -t "Hello there." -s vivian --max-frames 6 --weights int8 --profile "$WORK/pan.yaml" -o "$WORK/wc3.json"
  if cmp -s "$WORK/wc1.json" "$WORK/wc3.json"; then ok; else bad "codes from a cache rewritten with panels differ"; fi
  sed 's/avx512-vnni-1/avx512-vnni-0/' "$PQ/model.safetensors" > "$WORK/pq-other.safetensors" && mv "$WORK/pq-other.safetensors" "$PQ/model.safetensors"
  expect_rc 0 "$BIN" info -m "$PQ" --weight-panels; has "weight panels: [0-9.]* MiB, repacked at load" "$WORK/out"
  has "note: the weight file's panels (layout 'avx512-vnni-0') are not this CPU's kernels' ('avx512-vnni-1'): packed at load" "$WORK/out"
  expect_rc 0 "$BIN" codes -m "$PQ" -t "Hello there, how are you today?" -s vivian --max-frames 6 --seed 3 --profile "$WORK/pan.yaml" -o "$WORK/pq4.json"
  if cmp -s "$WORK/pq1.json" "$WORK/pq4.json"; then ok; else bad "frames with panels packed beside a file's other layout differ"; fi
fi
CODECTALK_ISA=avx2 expect_rc 1 "$BIN" quantize -m "$M" --weights int8 --weight-panels -o "$WORK/pq-avx2.safetensors"
has "error: --weight-panels: this CPU's kernels (avx2.*) have no weight panels" "$WORK/err"
[ ! -e "$WORK/pq-avx2.safetensors" ] && ok || bad "quantize --weight-panels at avx2 wrote a file"

expect_rc 0 "$BIN" tokenize -m "$M" --text "Hello world"
if [ "$(cat "$WORK/out")" = "[9707, 1879]" ]; then ok; else bad "tokenize: $(cat "$WORK/out")"; fi
printf 'Hello world' > "$WORK/t.txt"
expect_rc 0 "$BIN" tokenize -m "$M" -f "$WORK/t.txt"
if [ "$(cat "$WORK/out")" = "[9707, 1879]" ]; then ok; else bad "tokenize -f: $(cat "$WORK/out")"; fi
expect_rc 1 "$BIN" tokenize -m "$M" --text $'bad \xff byte';  has "UTF-8" "$WORK/err"

expect_rc 0 "$BIN" codes -m "$M" -t "Hello there." -s vivian -l english --max-frames 10 --seed 3 -o "$WORK/a.json"
has '"n_frames": 10' "$WORK/a.json"
expect_rc 0 "$BIN" codes -m "$M" -t "Hello there." -s vivian -l english --max-frames 10 --seed 3 -o "$WORK/b.json"
if cmp -s "$WORK/a.json" "$WORK/b.json"; then ok; else bad "same seed gave different frames"; fi
echo "Hello there." | "$BIN" codes -m "$M" -s vivian -l english --max-frames 10 --seed 3 -q > "$WORK/c.json" 2>"$WORK/err"
if cmp -s "$WORK/a.json" "$WORK/c.json"; then ok; else bad "stdin text differs from --text"; fi
expect_rc 0 "$BIN" codes -m "$M" -t "Hello there." -s vivian --max-frames 7 --format bin -o "$WORK/a.bin"
if [ "$(stat -c %s "$WORK/a.bin")" = $((7*16*4)) ]; then ok; else bad "binary size"; fi
# codes runs a codes-only stream on the engine: no speech_tokenizer/ needed, the same frames
mkdir -p "$WORK/notok" && cp "$M"/*.json "$M"/*.safetensors "$M"/*.txt "$WORK/notok/" 2>/dev/null
expect_rc 0 "$BIN" codes -m "$WORK/notok" -t "Hello there." -s vivian -l english --max-frames 10 --seed 3 -o "$WORK/d.json"
if cmp -s "$WORK/a.json" "$WORK/d.json"; then ok; else bad "codes without a codec differ"; fi
expect_rc 1 "$BIN" synth -m "$WORK/notok" -t "Hello there." -s vivian -o "$WORK/x.wav"; has "speech_tokenizer" "$WORK/err"

# synth: valid WAV with frames x 1920 samples; raw s16le on stdout; float WAV
expect_rc 0 "$BIN" synth -m "$M" -t "One sentence. And another one!" -s vivian --max-frames 6 --seed 2 -o "$WORK/a.wav"
has "time to first audio" "$WORK/err"
python3 - "$WORK/a.wav" <<'PY' && ok || bad "synth wav invalid"
import sys, wave
w = wave.open(sys.argv[1]); n = w.getnframes()
assert w.getnchannels() == 1 and w.getframerate() == 24000 and w.getsampwidth() == 2
assert n > 0 and n % 1920 == 0 and n <= 2 * 6 * 1920, n
PY
"$BIN" synth -m "$M" -t "One sentence. And another one!" -s vivian --max-frames 6 --seed 2 -o - -q > "$WORK/a.raw" 2>"$WORK/err"
if [ "$(stat -c %s "$WORK/a.raw")" = "$(( $(stat -c %s "$WORK/a.wav") - 44 ))" ] && \
   cmp -s "$WORK/a.raw" <(tail -c +45 "$WORK/a.wav"); then ok; else bad "raw stdout differs from the WAV data"; fi
expect_rc 0 "$BIN" synth -m "$M" -t "Float please." -s vivian --max-frames 3 --float -o "$WORK/f.wav"
python3 -c "import sys;b=open(sys.argv[1],'rb').read();assert b[20:22]==b'\x03\x00' and len(b)==44+3*1920*4" "$WORK/f.wav" && ok || bad "float wav"
expect_rc 2 "$BIN" synth -m "$M" -t "No output." -s vivian
# a failed synth leaves no WAV (not even a partial one) behind
expect_rc 1 "$BIN" synth -m "$M" -t "Hi" -s nobody -o "$WORK/gone.wav"
if [ ! -e "$WORK/gone.wav" ] && [ ! -e "$WORK/gone.wav.partial" ]; then ok; else bad "partial WAV left behind"; fi
expect_rc 0 "$BIN" synth -m "$M" -t "With the auto profile." -s vivian --profile auto --max-frames 4 -o "$WORK/p.wav"
has "profile auto" "$WORK/err"
expect_rc 0 "$BIN" codes -m "$M" -t "Profile." -s vivian --profile auto --max-frames 2 -o "$WORK/p.json"
expect_rc 1 "$BIN" synth -m "$M" -t "Hi" -s vivian --profile /nonexistent.yaml -o "$WORK/x.wav"
# placement: serial and overlapped write the same audio (WAV and raw stdout); a bad mode is a
# usage error; --scheduling is gone
for sm in overlapped serial auto; do
  expect_rc 0 "$BIN" synth -m "$M" -t "One sentence. And another one!" -s vivian --max-frames 6 --seed 2 \
    --schedule ramp:2,4,8,16,25 --placement $sm -o "$WORK/s_$sm.wav"
  if [ $sm = auto ]; then has "serial placement, \|overlapped placement, " "$WORK/err"; else has "$sm placement, " "$WORK/err"; fi
  "$BIN" synth -m "$M" -t "Hello there. How are you? Fine thanks." -s vivian --max-frames 5 --seed 3 \
    --utterance-bytes 16 --placement $sm -o - -q > "$WORK/r_$sm.raw" 2>"$WORK/err" || bad "synth -o - --placement $sm"
done
if cmp -s "$WORK/s_overlapped.wav" "$WORK/s_serial.wav" && cmp -s "$WORK/s_overlapped.wav" "$WORK/s_auto.wav"; then ok
else bad "serial and overlapped placement wrote different audio"; fi
if [ -s "$WORK/r_serial.raw" ] && cmp -s "$WORK/r_overlapped.raw" "$WORK/r_serial.raw" && \
   cmp -s "$WORK/r_overlapped.raw" "$WORK/r_auto.raw"; then ok; else bad "synth -o -: placements differ"; fi
expect_rc 2 "$BIN" synth -m "$M" -t "Hi" -s vivian --placement fastest -o "$WORK/x.wav"
has "placement 'fastest': expected overlapped, serial or auto" "$WORK/err"
expect_rc 2 "$BIN" synth -m "$M" -t "Hi" -s vivian --scheduling serial -o "$WORK/x.wav"
has "unknown option '--scheduling'" "$WORK/err"
"$BIN" synth --help > "$WORK/out" 2>&1; has "\-\-placement" "$WORK/out"; has "\-\-left-context" "$WORK/out"
# long text: the engine splits it into utterances (seed + k each), played back to back
expect_rc 0 "$BIN" synth -m "$M" -t "Hello there. How are you? Fine thanks." -s vivian --max-frames 5 --seed 3 \
  --utterance-bytes 16 -o "$WORK/u3.wav"
has " 3 utterance(s), last stop: max_frames (" "$WORK/err"
if [ "$(stat -c %s "$WORK/u3.wav")" = $((44 + 3*5*1920*2)) ] && cmp -s "$WORK/r_auto.raw" <(tail -c +45 "$WORK/u3.wav"); then ok
else bad "three utterances: $(stat -c %s "$WORK/u3.wav") bytes"; fi
expect_rc 0 "$BIN" synth -m "$M" -t "Hello there. How are you? Fine thanks." -s vivian --max-frames 5 --seed 3 \
  --utterance-bytes 0 -o "$WORK/u1.wav"
has " 1 utterance(s)" "$WORK/err"
expect_rc 2 "$BIN" synth -m "$M" -t "Hi" -s vivian --utterance-bytes 8 -o "$WORK/x.wav";  has "utterance-bytes" "$WORK/err"
# pauses (docs/TEXT.md): exactly 200 ms (4800 samples) of zeros between the sentences, the audio around them unchanged
expect_rc 0 "$BIN" synth -m "$M" -t "Hello there. How are you? Fine thanks." -s vivian --max-frames 5 --seed 3 \
  --sentence-pause-ms 200 -o "$WORK/p3.wav"
has " 3 utterance(s)" "$WORK/err"
U=$((5*1920*2)); Z=$((4800*2))
{ tail -c +45 "$WORK/u3.wav" | head -c $U; head -c $Z /dev/zero; tail -c +$((45+U)) "$WORK/u3.wav" | head -c $U
  head -c $Z /dev/zero; tail -c +$((45+2*U)) "$WORK/u3.wav"; } > "$WORK/p3.want"
if cmp -s "$WORK/p3.want" <(tail -c +45 "$WORK/p3.wav"); then ok; else bad "sentence pauses: $(stat -c %s "$WORK/p3.wav") bytes"; fi
expect_rc 2 "$BIN" synth -m "$M" -t "Hi" -s vivian --paragraph-pause-ms 10001 -o "$WORK/x.wav"
has "paragraph-pause-ms 10001 is outside" "$WORK/err"
expect_rc 2 "$BIN" serve -m "$M" --sentence-pause-ms -1; has "sentence-pause-ms -1 is outside" "$WORK/err"
# --normalize (docs/TEXT.md): the audio of the normalised text; off by default: the text as written
expect_rc 0 "$BIN" synth -m "$M" -t "It is 5 km, Dr. Lee." -s vivian --max-frames 3 --seed 4 --normalize -o "$WORK/n1.wav"
expect_rc 0 "$BIN" synth -m "$M" -t "It is five kilometers, Doctor Lee." -s vivian --max-frames 3 --seed 4 -o "$WORK/n2.wav"
expect_rc 0 "$BIN" synth -m "$M" -t "It is 5 km, Dr. Lee." -s vivian --max-frames 3 --seed 4 -o "$WORK/n3.wav"
if cmp -s "$WORK/n1.wav" "$WORK/n2.wav" && ! cmp -s "$WORK/n1.wav" "$WORK/n3.wav"; then ok; else bad "synth --normalize"; fi
expect_rc 0 "$BIN" synth -m "$M" -t "Windowed." -s vivian --max-frames 4 --windowed --left-context 8 -o "$WORK/w.wav"
# compressed outputs: the extension (or --format) picks the encoder; the magic bytes say which
for x in mp3 opus aac flac; do
  expect_rc 0 "$BIN" synth -m "$M" -t "Encoded." -s vivian --max-frames 6 -o "$WORK/e.$x"
done
python3 - "$WORK" <<'PY' && ok || bad "compressed outputs"
import sys
w = sys.argv[1]
m = {x: open(f"{w}/e.{x}", "rb").read() for x in ("mp3", "opus", "aac", "flac")}
assert m["mp3"][:3] == b"ID3" and m["opus"][:4] == b"OggS" and b"OpusHead" in m["opus"][:64]
assert m["aac"][0] == 0xFF and (m["aac"][1] & 0xF0) == 0xF0 and m["flac"][:4] == b"fLaC"
assert all(len(v) > 200 for v in m.values()), {k: len(v) for k, v in m.items()}
PY
"$BIN" synth -m "$M" -t "To a pipe." -s vivian --max-frames 6 --format flac -o - -q > "$WORK/p.flac" 2>"$WORK/err" && \
  [ "$(head -c 4 "$WORK/p.flac")" = "fLaC" ] && ok || bad "--format flac -o -"
expect_rc 2 "$BIN" synth -m "$M" -t "Hi" -s vivian --format ogg -o "$WORK/x.ogg"; has "expected wav, pcm, mp3" "$WORK/err"
expect_rc 2 "$BIN" synth -m "$M" -t "Hi" -s vivian --float -o "$WORK/x.mp3"; has "float" "$WORK/err"
expect_rc 1 "$BIN" synth -m "$M" -t "Hi" -s vivian --max-frames 4 --format mp3 -o /dev/full; has "no space left" "$WORK/err"
# --speed: the time-stretch (libsonic) changes the length, not the pitch; 1 leaves the audio as is
for sp in 1 2 0.5; do
  expect_rc 0 "$BIN" synth -m "$M" -t "Speed." -s vivian --max-frames 10 --seed 5 --speed $sp -o "$WORK/sp$sp.wav"
done
expect_rc 0 "$BIN" synth -m "$M" -t "Speed." -s vivian --max-frames 10 --seed 5 -o "$WORK/sp_none.wav"
cmp -s "$WORK/sp1.wav" "$WORK/sp_none.wav" && ok || bad "--speed 1 changed the audio"
python3 - "$WORK" <<'PY' && ok || bad "--speed lengths"
import sys, wave
w = sys.argv[1]
n = {s: wave.open(f"{w}/sp{s}.wav").getnframes() for s in ("1", "2", "0.5")}
assert n["1"] == 10 * 1920 and abs(n["2"] - n["1"] / 2) <= 960 and abs(n["0.5"] - 2 * n["1"]) <= 960, n
PY
expect_rc 2 "$BIN" synth -m "$M" -t "Hi" -s vivian --speed 5 -o "$WORK/x.wav"; has "outside \[0.25, 4.0\]" "$WORK/err"
# bench stream: both placements side by side, the comparison JSON and the frame budget split
printf 'Hello there.\n' > "$WORK/p1.txt"
expect_rc 0 "$BIN" bench stream -m "$M" --prompts "$WORK/p1.txt" --warmup 0 --max-frames 4 --placement both \
  --threads 1 --codec-threads 1 -o "$WORK/bench"
has "| overlapped (overlapped) | 1+1 |" "$WORK/out"; has "| serial (serial) | 1 |" "$WORK/out"; has "frame budget" "$WORK/out"
python3 - "$WORK/bench/placement_compare.json" <<'PY' && ok || bad "placement_compare.json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["kind"] == "placement_compare"
rows = d["sweep"]
assert [r["placement"] for r in rows] == ["overlapped", "serial"], rows
for r in rows:
    fb = r["frame_budget"]
    assert fb["frames"] == 4 and fb["talker_ms"] >= 0 and fb["decoder_ms"] > 0, fb
    assert set(fb["share_of_80ms"]) == {"talker", "predictor", "decoder", "other", "wall"}
    assert r["ttfa_ms"]["p95"] >= r["ttfa_ms"]["p50"] > 0
    res = json.load(open(r["result"]))
    assert res["frame_budget"]["placement"] == r["placement"] and res["meta"]["bench_args"]["placement"] == r["placement"]
    assert res["meta"]["bench_args"]["placement_requested"] == r["requested"]
    req = res["requests"][0]
    assert len(req["chunks"]) > 0 and req["ttfa_ms"] > 0 and req["t_final_ms"] >= req["chunks"][-1]["t_ms"], req
PY
# --text-cps: the prompt arrives as incremental text, 4 characters every 200 ms: "Hello" is taken once
# " th" has come, so the first audio cannot be earlier than the second piece
expect_rc 0 "$BIN" bench stream -m "$M" --prompts "$WORK/p1.txt" --warmup 0 --max-frames 4 --text-cps 20 \
  --threads 1 -o "$WORK/bench-cps"
python3 - "$WORK/bench-cps" <<'PY' && ok || bad "bench stream --text-cps"
import glob, json, sys
docs = [json.load(open(f)) for f in glob.glob(sys.argv[1] + "/**/*.json", recursive=True)]
d = [x for x in docs if "requests" in x][0]
assert d["meta"]["bench_args"]["text_cps"] == 20, d["meta"]["bench_args"]
r = d["requests"][0]
assert r["ttfa_ms"] >= 190 and len(r["chunks"]) > 0, r["ttfa_ms"]
PY
expect_rc 2 "$BIN" bench stream -m "$M" --text-cps -1 -o "$WORK/bench";  has "text-cps" "$WORK/err"
expect_rc 2 "$BIN" bench stream -m "$M" --placement serial:x -o "$WORK/bench";  has "THREADS" "$WORK/err"
expect_rc 2 "$BIN" bench stream -m "$M" --placement sideways -o "$WORK/bench";  has "unknown mode 'sideways'" "$WORK/err"
expect_rc 2 "$BIN" bench threads -m "$M" --placement serial -o "$WORK/bench";   has "unknown option '--placement'" "$WORK/err"
# calibrate: measured requests on the engine (not cached: --dry-run; docs/EDGE.md 3)
expect_rc 0 "$BIN" calibrate -m "$M" --frames 8 --dry-run --cache-dir "$WORK/cal"
has "| bf16/bf16 | serial " "$WORK/out"; has "not written (dry run)" "$WORK/out"
[ ! -e "$WORK/cal/calibration" ] && ok || bad "calibrate --dry-run wrote the cache"
# serve: a host name binds (localhost), --cors answers preflights and marks every answer
start_serve -m "$M" --host localhost --cors https://app.example --profile none && ok || \
  bad "serve --host localhost: $(cat "$WORK/srv.log")"
curl -s -i -X OPTIONS -H 'Origin: https://app.example' -H 'Access-Control-Request-Method: POST' \
  "http://127.0.0.1:$PORT/v1/audio/speech" > "$WORK/out" 2>&1
has "^HTTP/1.1 204" "$WORK/out"; has "^Access-Control-Allow-Origin: https://app.example" "$WORK/out"
has "^Access-Control-Allow-Headers: Authorization, Content-Type" "$WORK/out"
curl -s -i "http://127.0.0.1:$PORT/v1/models" > "$WORK/out" 2>&1
has "^HTTP/1.1 200" "$WORK/out"; has "^Access-Control-Allow-Origin: https://app.example" "$WORK/out"
curl -s -o "$WORK/a.pcm" -H 'Content-Type: application/json' \
  -d '{"input":"Logged.","voice":"vivian","max_new_tokens":5,"response_format":"pcm","stream_format":"audio"}' \
  "http://127.0.0.1:$PORT/v1/audio/speech"
curl -s -o /dev/null "http://127.0.0.1:$PORT/nowhere"
kill -TERM $SRV; wait $SRV
# the access log: one line per request, audio facts for speech
has "^OPTIONS /v1/audio/speech 204 0b [0-9]*ms$" "$WORK/srv.log"
has "^GET /v1/models 200 [0-9]*b [0-9]*ms$" "$WORK/srv.log"
has "^POST /v1/audio/speech 200 $(stat -c %s "$WORK/a.pcm")b audio 0.32s ttfa [0-9]*ms rtf [0-9.]* [0-9]*ms$" "$WORK/srv.log"
has "^GET /nowhere 404 " "$WORK/srv.log"
expect_rc 1 "$BIN" serve -m "$M" --host no-such-host.invalid --port 0 --profile none
has "not an IPv4 address or a name" "$WORK/err"
for c in serve export quantize stats; do
  "$BIN" $c --help > "$WORK/out" 2>&1; has "usage" "$WORK/out"
done
expect_rc 1 "$BIN" synth -m "$M" -t "Hi" -s nobody -o "$WORK/x.wav";  has "valid speakers" "$WORK/err"

expect_rc 1 "$BIN" codes -m "$M" -t "Hi" -s nobody;        has "valid speakers" "$WORK/err"
expect_rc 1 "$BIN" codes -m "$M" -t "Hi" -s ryan -l xx;    has "valid languages" "$WORK/err"
expect_rc 1 "$BIN" codes -m "$M" -t "" -s ryan;            has "empty" "$WORK/err"
expect_rc 1 "$BIN" codes -m "$WORK/none" -t "Hi" -s ryan;  has "config.json" "$WORK/err"
expect_rc 1 "$BIN" codes -t "Hi";                          has "model DIR is required" "$WORK/err"
head -c 100 "$M/model.safetensors" > "$WORK/trunc" && cp "$WORK/trunc" "$M/model.safetensors"
expect_rc 1 "$BIN" codes -m "$M" -t "Hi" -s ryan;          has "model.safetensors" "$WORK/err"

finish
