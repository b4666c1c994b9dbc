#!/usr/bin/env bash
# bench model --compete N: the contended table and JSON next to the uncontended figures, the
# competing processes gone when the bench ends (normally, or killed mid-measurement), bad counts
# refused; the stage floors and ratios of bench model, the roofline per working set of bench
# roofline and the codec GEMMs of bench kernels -m. Every wait is bounded.
set -u
BIN="$1"; SRC="$2"
. "$SRC/tests/cli/lib.sh"
M="$WORK/tiny"
"$BIN" make-model --preset tiny --seed 0 --out "$M" >/dev/null 2>"$WORK/err" || { cat "$WORK/err"; exit 1; }

# pid is not a running process (gone, or a zombie not yet reaped by its new parent)
not_running() { local st; st="$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)"; [ -z "$st" ] || [ "$st" = Z ]; }
# waits up to 10 s for every pid in $@ to stop running; kills leftovers so none outlives the test
all_stop() {
  local p i
  for i in $(seq 100); do
    local alive=0; for p in "$@"; do not_running "$p" || alive=1; done
    [ "$alive" = 0 ] && return 0; sleep 0.1
  done
  for p in "$@"; do kill -9 "$p" 2>/dev/null; done; return 1
}

# (15 s alone on a 2-core VM with its 2 busy competitors; a third of that CPU, or less, while
# another test runs beside it: 60 s was not always enough)
CT_RC_TIMEOUT=240 expect_rc 0 "$BIN" bench model -m "$M" --threads 2 --frames 4 --repeat 1 --compete 2 --json "$WORK/b.json"
has "with 2 competing busy process(es), 2 threads" "$WORK/out"
has "| total | .* | .* | [0-9]*% |" "$WORK/out"
PIDS="$(sed -n 's/^compete: 2 busy-loop process(es) started, pids //p' "$WORK/out")"
if [ "$(echo $PIDS | wc -w)" = 2 ]; then ok; else bad "pids line: $(head -c 400 "$WORK/out")"; fi
if all_stop $PIDS; then ok; else bad "competing processes outlived the bench"; fi
python3 - "$WORK/b.json" <<'PY' && ok || bad "compete JSON"
import json, sys
c = json.load(open(sys.argv[1]))["compete"]
assert c["processes"] == 2
assert all(c[k] > 0 for k in ("talker_ms", "predictor_ms", "codec_ms", "total_ms", "throughput_kept"))
assert abs(c["total_ms"] - (c["talker_ms"] + c["predictor_ms"] + c["codec_ms"])) < 1e-9
PY
# every stage's floor on this machine and ms / floor; the frame against the sum of the floors,
# the codec's floor included; the roofline per working set that heads the output
python3 - "$WORK/b.json" "$M/config.json" <<'PY' && ok || bad "bench model floors JSON"
import json, sys
d = json.load(open(sys.argv[1]))
close = lambda a, b: abs(a - b) <= 1e-6 * max(1.0, abs(b))
for st, ms in (("talker", "talker_ms"), ("predictor", "predictor_ms"), ("codec", "codec_ms")):
    assert d[st + "_floor_ms"] > 0, st
    assert close(d[st + "_ratio"], d[ms] / d[st + "_floor_ms"]), st
assert close(d["floor_ms"], d["talker_floor_ms"] + d["predictor_floor_ms"] + d["codec_floor_ms"])
assert close(d["total_ms"], d["talker_ms"] + d["predictor_ms"] + d["codec_ms"])
assert close(d["frame_ratio"], d["total_ms"] / d["floor_ms"])
assert close(d["codec_floor_ms"], d["codec_gflop_per_frame"] / d["roofline"]["fma_gflops_nt"] * 1e3)
r = d["roofline"]
assert r["sizes_bytes"] == sorted(r["sizes_bytes"]) and len(r["sizes_bytes"]) >= 4 and r["sizes_bytes"][-1] == 2 << 30
# the talker's and predictor's floors: the read rate probed at their working sets next to the
# repetition that gave their time (the roofline above only heads the output)
reps = d["repetitions"]
assert len(reps) == 1
for st, b in (("talker", "talker_bytes"), ("predictor", "predictor_bytes")):
    rep = next(e for e in reps if e[st + "_ms"] == d[st + "_ms"])
    assert d[st + "_floor_gbs"] == rep[st + "_floor_gbs"] > 0, st
    assert close(d[st + "_floor_ms"], d[b] / (d[st + "_floor_gbs"] * 1e9) * 1e3), st
assert d["predictor_working_set_bytes"] < d["predictor_bytes"]  # 15 passes over the same weights
# the talker's bytes per step: its weights and the f32 K/V rows at the mean context of its steps (one
# per frame but the last: the one at position p attends to p + 1 positions)
t = json.load(open(sys.argv[2]))["talker_config"]
assert d["talker_context"] == d["prompt_len"] + d["frames"] / 2
assert close(d["talker_kv_bytes"], 2 * t["num_hidden_layers"] * t["num_key_value_heads"] * t["head_dim"] * 4 * d["talker_context"])
assert d["talker_bytes"] == d["talker_working_set_bytes"] > d["talker_kv_bytes"] > 0
assert d["weights_source"] == "stored" and d["weights"] == "bf16/bf16" and d["converted"] == 0 and d["load_ms"] > 0 and d["load_cpu_ms"] > 0
# the prompt: its CPU time and its floor, the talker's matmuls at the rate of the instruction the
# kernels run a BF16 prompt with (the f32 FMA unless AMX or the bf16-activation mode is on)
assert d["prefill_cpu_ms"] > 0 and d["prefill_floor_ms"] > 0
assert close(d["prefill_ratio"], d["prefill_ms"] / d["prefill_floor_ms"])
pr = d["roofline"]["prompt"]
assert d["prefill_floor_op"] == pr["bf16"]["op"] and d["prefill_floor_gflops"] == pr["bf16"]["gflops_nt"] > 0
assert close(d["prefill_floor_ms"], d["prefill_gflop"] / pr["bf16"]["gflops_nt"] * 1e3)
k = d["roofline"]["kernels"]
if "amx" not in k and "bf16 act" not in k:
    assert pr["bf16"]["op"].startswith("FMA (f32, ") and pr["bf16"]["gflops_nt"] == d["roofline"]["fma_gflops_nt"]
# a returning voice: another text started after the prompt keeps the positions they share (role
# block and codec header, 9 with a language and a speaker), as long a prompt, fewer run
assert d["prefill_kept_reused"] == 9 and d["prefill_kept_positions"] == d["prompt_len"], d
assert 0 < d["prefill_kept_ms"]
PY
has "| prefill ([0-9]* positions) | [0-9.]* (best of 3 starts; [0-9]* ms CPU) | .* | talker .* [0-9]* Gop/s | " "$WORK/out"
has "| frame | .* | sum of floors | " "$WORK/out"
has "| prefill, voice kept ([0-9]* of [0-9]* positions run) | [0-9.]* (best of 2 starts) | " "$WORK/out"
has "^talker bytes per step: [0-9.]* MB of weights, [0-9.]* MB of K/V rows at a mean context of [0-9.]* positions$" "$WORK/out"
has "| codec (stream, ramp 2..25) | .* | FMA .* GFLOP/s | " "$WORK/out"
# the codec decoder's table: the ramp, 1-frame pushes and steady 25-frame pushes, each against the FMA peak
for row in "stream, 25-frame pushes (steady)" "stream, ramp 2,4,8,16,25" "stream, 1-frame pushes (exact)"; do
  has "| $row | [0-9.]* | [0-9.]* | [0-9]* | [0-9]*% | " "$WORK/out"; done
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["codec_steady_ms"] > 0 and d["codec_exact_ms"] > 0' "$WORK/b.json" \
  && ok || bad "codec_steady_ms / codec_exact_ms in the JSON"
expect_rc 0 "$BIN" bench model -m "$M" --threads 2 --frames 4 --repeat 1 --no-codec --json "$WORK/n.json"
if grep -q "competing" "$WORK/out"; then bad "contended table without --compete"; else ok; fi
if grep -q "batched decode" "$WORK/out"; then bad "batched table without --streams"; else ok; fi
# --streams N: batched decode (ct_batch_step) of 1, 2, 4 streams, each step making every stream's frame;
# --repeat rounds interleave the stream counts: best ms per B, and the per-round ratio's range
expect_rc 0 "$BIN" bench model -m "$M" --threads 2 --frames 4 --repeat 1 --no-codec --streams 5 --json "$WORK/s.json"
has "| batched decode (talker + predictor), 2 threads | ms per step | aggregate frames/s | vs 1 stream | vs 1 stream per round, 1 round | talker ms per step (x 1 stream) | predictor ms per step (x 1 stream) |" "$WORK/out"
has "| 1 stream | .* | 1.00x | 1.00-1.00x |" "$WORK/out"; has "| 4 streams | " "$WORK/out"
if grep -q "| 8 streams |" "$WORK/out"; then bad "8 streams past --streams 5"; else ok; fi
python3 - "$WORK/s.json" <<'PY' && ok || bad "batched decode JSON"
import json, sys
b = json.load(open(sys.argv[1]))["batched_decode"]
assert [e["streams"] for e in b] == [1, 2, 4]
for e in b:
    assert e["ms_per_step"] > 0 and abs(e["frames_per_s"] - e["streams"] * 1e3 / e["ms_per_step"]) < 1e-6 * e["frames_per_s"]
    assert abs(e["vs_1_stream"] - e["frames_per_s"] / b[0]["frames_per_s"]) < 1e-9
    # one round: its ratio is the ratio of the bests
    assert abs(e["vs_1_stream_round_min"] - e["vs_1_stream"]) < 1e-9 and abs(e["vs_1_stream_round_max"] - e["vs_1_stream"]) < 1e-9
    # the stages of the same steps: timed inside them, together most of each step
    t, p = e["talker_ms_per_step"], e["predictor_ms_per_step"]
    assert t > 0 and p > 0 and 0.5 * e["ms_per_step"] <= t + p <= e["ms_per_step"] * (1 + 1e-9), e
PY
# (on a quantize output: the header and the JSON name the formats loaded, not the --weights default)
Q="$WORK/q8"; mkdir -p "$Q"
for f in "$M"/*; do [ "$(basename "$f")" = model.safetensors ] || ln -s "$f" "$Q/"; done
expect_rc 0 "$BIN" quantize -m "$M" --weights int8 -o "$Q/model.safetensors"
expect_rc 0 "$BIN" bench model -m "$Q" --threads 2 --frames 4 --repeat 3 --no-codec --streams 2 --json "$WORK/s3.json"
has "| vs 1 stream per round, 3 rounds |" "$WORK/out"; has "| 1 stream | .* | 1.00x | 1.00-1.00x |" "$WORK/out"
# three repetitions: each stage's ratio, and its range over the repetitions (each against its own probe)
python3 - "$WORK/s3.json" "$WORK/out" <<'PY' && ok || bad "bench model ratios per repetition"
import json, re, sys
d = json.load(open(sys.argv[1])); out = open(sys.argv[2]).read()
reps = d["repetitions"]
assert len(reps) == 3
for st, name, b in (("talker", "talker", "talker_bytes"), ("predictor", "code predictor", "predictor_bytes")):
    best = min(reps, key=lambda e: e[st + "_ms"])
    assert d[st + "_ms"] == best[st + "_ms"] and d[st + "_floor_gbs"] == best[st + "_floor_gbs"], st
    ratios = [e[st + "_ms"] / (d[b] / (e[st + "_floor_gbs"] * 1e9) * 1e3) for e in reps]
    m = re.search(r"\| %s \|.*\| read ([0-9.]+) GB/s next to it \| ([0-9.]+) \(([0-9.]+)-([0-9.]+)\) \|" % name, out)
    assert m, st
    assert abs(float(m.group(1)) - d[st + "_floor_gbs"]) < 0.051, st
    assert abs(float(m.group(2)) - d[st + "_ratio"]) < 0.0051, st
    assert abs(float(m.group(3)) - min(ratios)) < 0.0051 and abs(float(m.group(4)) - max(ratios)) < 0.0051, st
PY
has "^model .*, weights int8/int8, 2 threads, .*quantized: " "$WORK/out"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["weights"] == "int8/int8"' "$WORK/s3.json" \
  && ok || bad "bench model JSON weights of a quantize output"
python3 - "$WORK/s3.json" <<'PY' && ok || bad "batched decode rounds JSON"
import json, sys
b = json.load(open(sys.argv[1]))["batched_decode"]
assert [e["streams"] for e in b] == [1, 2]
assert b[0]["vs_1_stream_round_min"] == b[0]["vs_1_stream_round_max"] == 1.0
assert 0 < b[1]["vs_1_stream_round_min"] <= b[1]["vs_1_stream_round_max"]
PY
# --weight-panels: the INT8 and INT4 matrices also packed into panels where the level has them (avx512bf16
# always has AVX-512 VNNI; avx2 has none), their bytes in the header and the JSON; none without it
expect_rc 0 "$BIN" bench model -m "$M" --weights int4 --weight-panels --threads 2 --frames 4 --repeat 1 --no-codec --streams 2 --json "$WORK/p.json"
if grep -Eq "kernels avx512bf16(\+amx)?," "$WORK/out"; then
  if grep -q " 0.0 MiB of weight panels" "$WORK/out"; then bad "no weight panels at avx512bf16"; else ok; fi
fi
python3 - "$WORK/p.json" "$(grep -Ec 'kernels avx512bf16(\+amx)?,' "$WORK/out")" <<'PY' && ok || bad "bench model JSON packed_bytes"
import json, sys
d = json.load(open(sys.argv[1]))
assert (d["packed_bytes"] > 0) == (sys.argv[2] == "1"), d["packed_bytes"]
PY
expect_rc 0 "$BIN" bench model -m "$M" --weights int8 --weight-panels --threads 2 --frames 4 --repeat 1 --no-codec
if grep -Eq "kernels avx512bf16(\+amx)?," "$WORK/out"; then
  if grep -q " 0.0 MiB of weight panels" "$WORK/out"; then bad "no INT8 weight panels at avx512bf16"; else ok; fi
fi
CODECTALK_ISA=avx2 expect_rc 0 "$BIN" bench model -m "$M" --weights int4 --weight-panels --threads 2 --frames 4 --repeat 1 --no-codec
has " 0.0 MiB of weight panels)" "$WORK/out"
expect_rc 0 "$BIN" bench model -m "$M" --weights int4 --threads 2 --frames 4 --repeat 1 --no-codec
has " 0.0 MiB of weight panels)" "$WORK/out"
expect_rc 2 "$BIN" bench model -m "$M" --streams 33; has "streams must be in \[0, 32\]" "$WORK/err"
python3 -c 'import json,sys; assert "compete" not in json.load(open(sys.argv[1]))' "$WORK/n.json" && ok \
  || bad "compete key without --compete"
# without the codec the frame's floor is the talker's and the predictor's
python3 - "$WORK/n.json" <<'PY' && ok || bad "bench model floors JSON without the codec"
import json, sys
d = json.load(open(sys.argv[1]))
assert "codec_floor_ms" not in d
assert abs(d["floor_ms"] - d["talker_floor_ms"] - d["predictor_floor_ms"]) < 1e-9
assert abs(d["frame_ratio"] - (d["talker_ms"] + d["predictor_ms"]) / d["floor_ms"]) < 1e-9
PY
# bench kernels -m: the codec decoder's GEMMs (every upsampling stage and decoder block) after the matmuls
expect_rc 0 "$BIN" bench kernels --threads 1 --ms 1 -m "$M"
# which INT8/INT4 path the rows time: f32 activations, or the integer-dot mode (every call, or below AMX's
# threshold) with its product instruction
has "INT8/INT4 with \(f32 activations\|int8 activations (integer-dot mode with [A-Z].*, every call)\|int8 activations (integer-dot mode with [A-Z].*) below [0-9]* tokens\)$" "$WORK/out"
# every matmul case timed with its weights from memory and in cache: positive figures in 8 columns
has "| format | rows x cols | tokens | us/call | GB/s (weights) | GFLOP/s | us/call, in cache | GFLOP/s, in cache |" "$WORK/out"
python3 - "$WORK/out" <<'PY' && ok || bad "bench kernels matmul rows"
import sys
lines = open(sys.argv[1]).read().splitlines()
rows = [l.split("|")[1:-1] for l in lines if l.split("|")[1:2] in ([" bf16 "], [" f32 "], [" int8 "], [" int4 "])]
assert len(rows) == 4 * 3 * 6, len(rows)
# the panels packed at load, where the level has them (its header names VPDPBUSD on AVX-512): 4-40 tokens
pan = [l.split("|")[1:-1] for l in lines if l.split("|")[1:2] in ([" int8 panels "], [" int4 panels "])]
import re
vnni512 = re.search(r"integer-dot mode with VPDPBUSD \(AVX-512 VNNI\)[,)]", "\n".join(lines)) is not None
assert len(pan) == (2 * 3 * 4 if vnni512 else 0), len(pan)
assert [int(r[2]) for r in pan[:4]] == ([4, 8, 16, 40] if vnni512 else []), pan[:4]
for r in rows + pan:
    assert len(r) == 8, r
    assert all(float(v) > 0 for v in r[2:]), r
PY
has "codec decoder GEMMs of $M, a steady 25-frame push" "$WORK/out"
# the GEMM the kernel table runs: on AMX tiles where the kernels' id names AMX (with the level's
# FMA GEMM timed beside it, and their ratio), else FMA alone
if grep -q "^kernels avx512bf16+amx, " "$WORK/out"; then
  has "GEMM on AMX tiles (split bf16);" "$WORK/out"; has "| % of FMA peak | ms/call, FMA GEMM | vs FMA |" "$WORK/out"
  has "| all of the above | .* | [0-9.]* | [0-9.]*x |$" "$WORK/out"
else
  has ", GEMM FMA; F32 FMA peak" "$WORK/out"
  if grep -q "ms/call, FMA GEMM" "$WORK/out"; then bad "an FMA column without AMX"; else ok; fi
fi
for g in "pre_conv" "transformer q" "upsample 0 tconv" "upsample 1 pwconv1" "decoder.0 conv" "block 0 tconv" \
         "block 3 residual conv" "all of the above"; do has "| $g | " "$WORK/out"; done
# ... and the decode batched across streams (solo and batched PCM compared inside: a mismatch exits 1)
has "codec decoder batched across streams ($M), 1 threads" "$WORK/out"
for row in "1 | 1" "1 | 4" "4 | 2" "25 | 4"; do has "| $row | " "$WORK/out"; done
# a forced avx2 level names its own integer-dot instruction: AVX-VNNI, AVX-512 VNNI on 256 bits, or VPMADDUBSW
if grep -qw avx2 /proc/cpuinfo; then
    CODECTALK_ISA=avx2 expect_rc 0 "$BIN" bench kernels --threads 1 --ms 1
    if grep -qw avx_vnni /proc/cpuinfo; then want="VPDPBUSD (AVX-VNNI)"
    elif grep -qw avx512_vnni /proc/cpuinfo && grep -qw avx512vl /proc/cpuinfo; then want="VPDPBUSD (AVX-512 VNNI, 256-bit)"
    else want="VPMADDUBSW"; fi
    has "kernels avx2, 1 threads; INT8/INT4 with int8 activations (integer-dot mode with $want, every call)" "$WORK/out"
    # CODECTALK_VNNI=0: the avx2 and avx512 levels as on CPUs without VNNI; avx512bf16 keeps VNNI
    CODECTALK_ISA=avx2 CODECTALK_VNNI=0 expect_rc 0 "$BIN" bench kernels --threads 1 --ms 1
    has "kernels avx2, 1 threads; INT8/INT4 with int8 activations (integer-dot mode with VPMADDUBSW, every call)" "$WORK/out"
    if grep -qw avx512_vnni /proc/cpuinfo && grep -qw avx512f /proc/cpuinfo && grep -qw avx512bw /proc/cpuinfo &&
        grep -qw avx512vl /proc/cpuinfo && grep -qw avx512dq /proc/cpuinfo; then
        CODECTALK_ISA=avx512 CODECTALK_VNNI=0 expect_rc 0 "$BIN" bench kernels --threads 1 --ms 1
        has "kernels avx512, 1 threads; INT8/INT4 with int8 activations (integer-dot mode with VPMADDUBSW, every call)" "$WORK/out"
        CODECTALK_ISA=avx512 expect_rc 0 "$BIN" bench kernels --threads 1 --ms 1
        has "kernels avx512, 1 threads; INT8/INT4 with int8 activations (integer-dot mode with VPDPBUSD (AVX-512 VNNI), every call)" "$WORK/out"
    fi
    if grep -qw avx512_bf16 /proc/cpuinfo; then
        CODECTALK_ISA=avx512bf16 CODECTALK_VNNI=0 expect_rc 0 "$BIN" bench kernels --threads 1 --ms 1
        has "(integer-dot mode with VPDPBUSD (AVX-512 VNNI), every call)" "$WORK/out"
    fi
fi
expect_rc 2 "$BIN" bench kernels --ms 0; has "ms must be in" "$WORK/err"
# an INT8 talker's prompt: its floor at the integer dot's rate where the kernels run the integer-dot
# mode (the dot instruction the kernels name), else at the FMA's
CT_RC_TIMEOUT=240 expect_rc 0 "$BIN" bench model -m "$M" --weights int8 --threads 2 --frames 2 --repeat 1 --no-codec --json "$WORK/b8.json"
python3 - "$WORK/b8.json" <<'PY' && ok || bad "bench model int8 prompt floor"
import json, sys
d = json.load(open(sys.argv[1]))
r = d["roofline"]
k = r["kernels"]
assert d["weights"] == "int8/int8" and d["prefill_floor_op"] == r["prompt"]["int8"]["op"], (d["prefill_floor_op"], k)
assert abs(d["prefill_floor_ms"] - d["prefill_gflop"] / r["prompt"]["int8"]["gflops_nt"] * 1e3) < 1e-6 * d["prefill_floor_ms"]
dot = k.split(", ")[1]  # the kernels' integer-dot instruction, "none" at scalar
if "f32 act" in k or dot == "none":
    assert d["prefill_floor_op"] == r["prompt"]["bf16"]["op"]
else:
    assert d["prefill_floor_op"].split(" (")[0] == dot.split(" (")[0], (d["prefill_floor_op"], dot)
PY
# bench roofline: read GB/s per working set (8 MiB .. --mib) and the FMA peak, as JSON too
expect_rc 0 "$BIN" bench roofline --threads 2 --mib 64 --json "$WORK/r.json"
has "| 8 MiB | " "$WORK/out"; has "| 64 MiB | " "$WORK/out"; has "peak F32 FMA" "$WORK/out"
has "^| int8 weights | [^|]* | [0-9.]* | [0-9.]* |$" "$WORK/out"
python3 - "$WORK/r.json" <<'PY' && ok || bad "bench roofline JSON"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["sizes_bytes"] == [8 << 20, 16 << 20, 32 << 20, 64 << 20]
assert all(g > 0 for g in r["read_gbs_1t"] + r["read_gbs_nt"]) and r["fma_gflops_nt"] > 0 and r["threads"] == 2
assert sorted(r["prompt"]) == ["bf16", "int4", "int8"] and r["kernels"]
assert all(p["op"] and 0 < p["gflops_1t"] <= p["gflops_nt"] for p in r["prompt"].values())
assert r["prompt"]["int8"]["op"] == r["prompt"]["int4"]["op"]
PY

# the bench killed while its competitors run: they die with it
"$BIN" bench model -m "$M" --threads 2 --frames 1500 --repeat 1 --compete 1 >"$WORK/k.out" 2>&1 &
BPID=$!
for i in $(seq 1200); do grep -q "^compete:" "$WORK/k.out" && break; sleep 0.1; done
PIDS="$(sed -n 's/^compete: 1 busy-loop process(es) started, pids //p' "$WORK/k.out")"
kill -TERM $BPID 2>/dev/null; wait $BPID 2>/dev/null
if [ -n "$PIDS" ]; then ok; else bad "no compete line: $(head -c 400 "$WORK/k.out")"; fi
if [ -n "$PIDS" ] && all_stop $PIDS; then ok; else bad "competing processes outlived the killed bench"; fi

expect_rc 2 "$BIN" bench model -m "$M" --compete -1; has "compete must be in \[0, 64\]" "$WORK/err"
expect_rc 2 "$BIN" bench model -m "$M" --compete 65; has "compete must be in \[0, 64\]" "$WORK/err"
finish test_bench_compete
