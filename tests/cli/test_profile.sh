#!/bin/bash
# The deploy profile as the engine's contract at the CLI (docs/EDGE.md): auto by default, the
# cost model's choice from the cached machine rates, --profile none, keys that change what runs,
# explicit flags over the profile whatever their value, calibration read back and a stale one
# ignored, and the thread sweep over every placement.
BIN="$1"; SRC="$2"
. "$SRC/tests/cli/lib.sh"
M="$WORK/m"
"$BIN" make-model --preset tiny --seed 4 --out "$M" >/dev/null 2>&1 || { echo "make-model failed"; exit 1; }
export XDG_CACHE_HOME="$WORK/cache" # this test writes its own machine rates and calibrations
T="Hello there. How are you? Fine thanks."

# auto by default, with the machine's rates cached per fingerprint after the first run
expect_rc 0 "$BIN" synth -m "$M" -t "$T" -s vivian --max-frames 3 -o "$WORK/a.wav"
has "^profile auto: weights bf16/bf16" "$WORK/err"; has "weights bf16/bf16, 1 prefill pass" "$WORK/err"
ls "$XDG_CACHE_HOME"/codectalk/roofline/*.json >/dev/null 2>&1 && ok || bad "no machine rates cached"
expect_rc 0 "$BIN" profile --auto -m "$M" --explain
has "^# | bf16/bf16 | " "$WORK/out"; has "cost model: machine cache " "$WORK/out"
# each format's prompt at the rate of the instruction its matmuls run with (bench roofline's table)
has "prompts bf16 .* [0-9]*, int8 .* [0-9]*, int4 .* [0-9]* Gop/s ([0-9]* threads)" "$WORK/out"
FP=$(sed -n 's/.*fingerprint \([0-9a-f]\{16\}\).*/\1/p' "$WORK/out" | head -1)
[ -n "$FP" ] && ok || bad "no fingerprint in the --explain header"
NT=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['n_threads'])" "$XDG_CACHE_HOME/codectalk/roofline/$FP.json")
# a machine with almost no memory bandwidth: no format is real time, the fastest (int4) runs
python3 - "$XDG_CACHE_HOME/codectalk/roofline/$FP.json" "$NT" <<'PY' && ok || bad "write slow rates"
import json, sys
d = json.load(open(sys.argv[1]))  # kept: schema, kernels and the prompt rates
assert d["n_threads"] == int(sys.argv[2]) and len(d["prompt"]) == 3
d.update({"fma_gflops_1t": 50.0, "fma_gflops_nt": 100.0, "read": [{"bytes": 536870912, "gbs_1t": 0.001, "gbs_nt": 0.001}]})
json.dump(d, open(sys.argv[1], "w"))
PY
expect_rc 0 "$BIN" synth -m "$M" -t "Hi." -s vivian --max-frames 2 -o "$WORK/b.wav"
has "no weight format reaches RTF 0.85" "$WORK/err"; has "weights int4/int4, 1 prefill" "$WORK/err"
# an explicit flag beats the profile, and the profile line says so
expect_rc 0 "$BIN" synth -m "$M" -t "Hi." -s vivian --max-frames 2 --weights bf16 --threads 1 -o "$WORK/b.wav"
has "weights bf16/bf16, 1 prefill" "$WORK/err"; has "^profile auto: .*; flags over it: --weights bf16, --threads 1$" "$WORK/err"
expect_rc 0 "$BIN" bench stream -m "$M" --max-frames 2 --repeat 1 --warmup 0 --weights int8 --threads 1 -o "$WORK/bw"
has "^profile auto: .*; flags over it: --weights int8, --threads 1$" "$WORK/out"
# --profile none: the plain defaults
expect_rc 0 "$BIN" synth -m "$M" -t "Hi." -s vivian --max-frames 2 --profile none -o "$WORK/n.wav"
has "^profile none: weights bf16/bf16, placement auto" "$WORK/err"; has "weights bf16/bf16" "$WORK/err"
rm -f "$XDG_CACHE_HOME"/codectalk/roofline/*.json

# keys that change what runs (a user profile: builtin + the file)
P="$WORK/p.yaml"
printf 'talker:\n  weights: int8\n  prefill_chunk_tokens: 4\npredictor:\n  weights: int4\nstreaming:\n  utterance_bytes: 16\n' > "$P"
expect_rc 0 "$BIN" synth -m "$M" -t "$T" -s vivian --max-frames 3 --profile "$P" -o "$WORK/c.wav"
has "weights int8/int4" "$WORK/err"; has " 3 utterance(s)" "$WORK/err"
grep -q " [0-9]* prefill pass(es)" "$WORK/err" && ! grep -q " 3 prefill pass(es)" "$WORK/err" && ok || bad "prefill passes: $(cat "$WORK/err")"
# utterances 2 and 3 keep the voice's prompt positions of the one before (prompt reuse: the role
# block and the codec header, 8 without a language)
has " prefill pass(es), 16 of [0-9]* prompt positions kept" "$WORK/err"
# talker.weight_panels: named in the profile line; the weight panels' memory in synth's summary where
# the level packs them (avx512bf16 always has AVX-512 VNNI), never at avx2
printf 'talker:\n  weights: int4\n  weight_panels: true\npredictor:\n  weights: int4\n' > "$WORK/p4.yaml"
expect_rc 0 "$BIN" synth -m "$M" -t "$T" -s vivian --max-frames 3 --profile "$WORK/p4.yaml" -o "$WORK/c4.wav"
has "weights int4/int4 with weight panels" "$WORK/err"
if grep -Eq "kernels avx512bf16(\+amx)?," <("$BIN" bench model -m "$M" --threads 1 --frames 2 --repeat 1 --no-codec 2>/dev/null); then
  has "MiB of weight panels)" "$WORK/err"
fi
CODECTALK_ISA=avx2 expect_rc 0 "$BIN" synth -m "$M" -t "$T" -s vivian --max-frames 3 --profile "$WORK/p4.yaml" -o "$WORK/c4.wav"
if grep -q "weight panels)" "$WORK/err"; then bad "weight panels at avx2: $(cat "$WORK/err")"; else ok; fi
expect_rc 0 "$BIN" synth -m "$M" -t "$T" -s vivian --max-frames 3 --profile "$P" -o "$WORK/c.wav"
if grep -q "weight panels" "$WORK/err"; then bad "weight panels without the key"; else ok; fi
# a flag given at its default value still beats the profile
expect_rc 0 "$BIN" synth -m "$M" -t "$T" -s vivian --max-frames 3 --profile "$P" --utterance-bytes 300 -o "$WORK/c.wav"
has " 1 utterance(s)" "$WORK/err"
printf 'engine:\n  request_deadline_ms: 1\n' > "$P"
expect_rc 1 "$BIN" synth -m "$M" -t "$T" -s vivian --profile "$P" -o "$WORK/d.wav"
has "deadline_ms 1 passed" "$WORK/err"
[ ! -e "$WORK/d.wav" ] && ok || bad "a timed-out synth left a WAV"
printf 'engine:\n  turbo: true\n' > "$P"
expect_rc 1 "$BIN" synth -m "$M" -t "Hi." -s vivian --profile "$P" -o "$WORK/d.wav"
has "p.yaml:2:.*engine.turbo" "$WORK/err"

# the server runs by the profile too: its deadline ends a request with 504
printf 'engine:\n  request_deadline_ms: 1\n' > "$P"
start_serve -m "$M" --host 127.0.0.1 --profile "$P" --queue 3 --context 512 && ok || bad "serve: $(cat "$WORK/srv.log")"
has "^profile .*p.yaml: weights bf16/bf16.*; flags over it: --context 512, --queue 3$" "$WORK/srv.log"
# codes are collected whole: the deadline is a 504 with the engine's message
code="$(curl -sS --max-time 60 -o "$WORK/resp" -w '%{http_code}' -H 'Content-Type: application/json' \
        --data-binary '{"input":"Hello there.","voice":"vivian","response_format":"codes"}' \
        "http://127.0.0.1:$PORT/v1/audio/speech")"
[ "$code" = 504 ] && ok || bad "deadline over HTTP: $code $(head -c 300 "$WORK/resp" | tr -d '\0')"
has "deadline_ms 1 passed" "$WORK/resp"
# audio streams: a 504 when the deadline passes before the headers, else a body cut short (curl
# exit 18), never a complete answer
curl -sS --max-time 60 -o "$WORK/resp" -w '%{http_code}' -H 'Content-Type: application/json' \
  --data-binary '{"input":"Hello there.","voice":"vivian"}' "http://127.0.0.1:$PORT/v1/audio/speech" \
  > "$WORK/code" 2>/dev/null
rc=$?
{ [ "$(cat "$WORK/code")" = 504 ] || [ $rc = 18 ]; } && ok || bad "audio past its deadline: HTTP $(cat "$WORK/code"), curl $rc"
kill -TERM $SRV; wait $SRV

# calibration: measured, cached per formats, preferred by the next auto profile
expect_rc 0 "$BIN" calibrate -m "$M" --frames 8
has "| bf16/bf16 | serial " "$WORK/out"; has "cached: " "$WORK/out"
CAL=$(ls "$XDG_CACHE_HOME"/codectalk/calibration/*-bf16-bf16.json 2>/dev/null | head -1)
[ -n "$CAL" ] && ok || bad "no calibration file"
expect_rc 0 "$BIN" profile --auto -m "$M" --explain
has "| bf16/bf16 measured | " "$WORK/out"; has "# calibration [0-9a-f]* | " "$WORK/out"
# the calibration names the kernels it measured with; a run forced to another level ignores it
python3 -c 'import json,sys; k=json.load(open(sys.argv[1]))["kernels"]; assert k and not k.startswith("scalar"), k' "$CAL" \
  && ok || bad "calibration kernels: $(cat "$CAL")"
CODECTALK_ISA=scalar expect_rc 0 "$BIN" profile --auto -m "$M" --explain
has "was measured with kernels '.*', this run uses 'scalar, none'" "$WORK/err"; has "| predicted <- chosen |" "$WORK/out"
sed -i 's/"engine_version": "[^"]*"/"engine_version": "0.0.0-old"/' "$CAL"
expect_rc 0 "$BIN" profile --auto -m "$M" --explain
has "measured by engine 0.0.0-old" "$WORK/err"; has "| predicted <- chosen |" "$WORK/out"
expect_rc 2 "$BIN" calibrate -m "$M" --formats int2/int8
has "is not one of" "$WORK/err"

# bench threads: every placement and split, one oversubscribed thread included
printf 'Hello.\n' > "$WORK/p1.txt"
expect_rc 0 "$BIN" bench threads -m "$M" --prompts "$WORK/p1.txt" --warmup 0 --max-frames 2 -o "$WORK/bt"
python3 - "$WORK/bt/threads_sweep.json" <<'PY' && ok || bad "threads_sweep.json"
import json, os, sys
d = json.load(open(sys.argv[1]))
n = d["usable_cpus"]
rows = [(r["placement"], r["talker_threads"], r["codec_threads"]) for r in d["sweep"]]
want = [("serial", t, 0) for t in range(1, n + 2)]
want += [("overlapped", t, c) for t in range(1, n + 1) for c in range(1, n + 2 - t)]
assert rows == want, (rows, want)
assert any(r["oversubscribed"] for r in d["sweep"]) and all("frame_budget" in r for r in d["sweep"])
PY
# bench stream --concurrency: one stream and a queue of one: the third request is refused, the
# queued one waits for the first (stalls are reported per request; on a loaded test machine
# they are not asserted)
printf 'engine:\n  max_streams: 1\n  queue_depth: 1\n' > "$P"
expect_rc 0 "$BIN" bench stream -m "$M" --profile "$P" --concurrency 3 --max-frames 6 -o "$WORK/bc"
python3 - "$WORK/bc/concurrency_3.json" <<'PY' && ok || bad "concurrency_3.json: $(cat "$WORK/out")"
import json, sys
d = json.load(open(sys.argv[1]))
out = [r["outcome"] for r in d["requests"]]
assert d["max_streams"] == 1 and d["queue"] == 1, d
assert out.count("refused") == 1 and out[2] == "refused", out
ok = [r for r in d["requests"] if r["outcome"] != "refused"]
assert len(ok) == 2 and all(r["frames"] == 6 and r["stalls"] >= 0 and r["ttfa_ms"] > 0 for r in ok), ok
assert ok[1]["queue_ms"] >= ok[0]["queue_ms"], ok
assert d["frames_total"] == 12 and d["wall_s"] > 0, d
assert abs(d["frames_per_s"] - d["frames_total"] / d["wall_s"]) < 1e-6 * d["frames_per_s"], d
assert all(r["prefill_ms"] > 0 and 0 <= r["prompt_reused"] < r["prompt_len"] for r in ok), ok
assert d["prompt"]["shared"] == 0 and d["prompt"]["reused"] >= sum(r["prompt_reused"] for r in ok), d
PY
has "^aggregate: 12 frames in " "$WORK/out"
# two slots, no throttle: the second request starts while the first runs and copies the prompt
# positions it shares with it from the busy slot (prompt reuse across slots)
printf 'engine:\n  max_streams: 2\n  throttle_margin_ms: -1\n' > "$P"
expect_rc 0 "$BIN" bench stream -m "$M" --profile "$P" --concurrency 2 --max-frames 6 -o "$WORK/bc"
python3 - "$WORK/bc/concurrency_2.json" <<'PY' && ok || bad "concurrency_2.json: $(cat "$WORK/out")"
import json, sys
d = json.load(open(sys.argv[1]))
r = d["requests"]
assert [x["outcome"] for x in r] == ["admitted", "admitted"], r
assert 0 < r[1]["prompt_reused"] < r[1]["prompt_len"] and d["prompt"]["shared"] >= r[1]["prompt_reused"], d
assert all(0 < x["max_gap_ms"] < 1000 * d["wall_s"] for x in r), r
PY
has "prompt positions: [0-9]* of [0-9]* kept ([1-9][0-9]* copied from another slot, [0-9]* from the prompt cache)" "$WORK/out"
expect_rc 2 "$BIN" bench stream -m "$M" --concurrency 300 -o "$WORK/bc"
# voices in turn on one slot (-s A,B,C), 8 requests: vivian cold, ryan keeps the 7 positions the
# speakers share, then each request keeps those 7 and copies its voice's other 2 rows from the
# prompt cache: 0 + 7 + 6 x 9 kept, 6 x 2 from the cache; with the cache off 0 + 7 x 7
expect_rc 0 "$BIN" bench stream -m "$M" --max-frames 2 --repeat 2 --warmup 0 -l english -s vivian,ryan -o "$WORK/bv"
has "^prompt positions (warm-ups included): 61 of [0-9]* kept (0 copied from another slot, 12 from the prompt cache)$" "$WORK/out"
printf 'engine:\n  prompt_cache_bytes: 0\n' > "$P"
expect_rc 0 "$BIN" bench stream -m "$M" --profile "$P" --max-frames 2 --repeat 2 --warmup 0 -l english -s vivian,ryan -o "$WORK/bv"
has "^prompt positions (warm-ups included): 49 of [0-9]* kept (0 copied from another slot, 0 from the prompt cache)$" "$WORK/out"
expect_rc 2 "$BIN" bench stream -m "$M" -s ",," -o "$WORK/bv"; has "names no speaker" "$WORK/err"
# the probe reports what the hardware is and what the engine derives from it
expect_rc 0 "$BIN" probe --root "$SRC/tests/data/probe/container_cgroup2"
has "cgroup quota 1.50 CPUs, memory limit 2.00 GiB" "$WORK/out"
expect_rc 0 "$BIN" probe --root "$SRC/tests/data/probe/x86_nvidia_host"
has "^class: *cuda_discrete (engine class x86_cpu" "$WORK/out"

# bench emulate: the child runs the emulated class's auto profile exactly as synth applies it
# (arm64 rules: adaptive chunks, min 3 frames, margin 160 ms), and the table shows what it ran
expect_rc 0 "$BIN" bench emulate -m "$M" --case arm64_cpu_logic --max-frames 2 -o "$WORK/emu"
has "| arm64_cpu_logic | .* | arm64_cpu | bf16/bf16 | .* | adaptive;min=3;margin=160 | " "$WORK/out"
finish test_profile
