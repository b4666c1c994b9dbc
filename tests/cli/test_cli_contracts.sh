#!/usr/bin/env bash
# CLI contracts (issue 19): special output paths are written in place (never replaced), write
# errors are reported, a closed pipe stops quietly, SIGINT/SIGTERM leave no partial file, bad
# generation flags are usage errors, non-regular model files are refused without blocking,
# and every command's --help exits 0 and lists every flag its parser accepts.
set -u
BIN="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
is_wav() { python3 -c "import sys,wave; w=wave.open(sys.argv[1]); assert w.getnframes()>0" "$1" 2>/dev/null; }
ROOT=0; [ "$(id -u)" = 0 ] && ROOT=1

# ---- every command's --help exits 0 and names every flag its parser accepts ----------------
if python3 "$SRC/tests/cli/check_help.py" "$BIN" "$SRC" >"$WORK/help.log" 2>&1; then ok
else bad "help walk"; cat "$WORK/help.log" >&2; fi
for c in "export step" "export codec" "export sanitize" "onnx-sanitize" "bench"; do
  expect_rc 0 "$BIN" $c --help
done
expect_rc 0 "$BIN" bench --help
for b in model roofline kernels stream threads emulate serve summarize; do has "^  $b " "$WORK/out"; done

M="$WORK/m"
"$BIN" make-model --preset tiny --seed 4 --out "$M" >/dev/null 2>&1 || { echo "make-model failed"; exit 1; }
expect_rc 1 "$BIN" make-model --preset tiny --seed 4 --out "$M";  has "\-\-force" "$WORK/err"
S=(synth -m "$M" -t "Hello there." -s vivian --max-frames 4 -q)

# ---- generation flags out of range: exit 2 naming the flag (the server's ranges) -----------
for bad_flag in "--temperature -1" "--temperature nan" "--temperature inf" "--temperature 11" \
    "--top-k -3" "--max-frames 0" "--max-frames -1" "--max-new-tokens 0" "--max-new-tokens -5" \
    "--top-p 0" "--top-p 1.5" "--repetition-penalty 0" "--repetition-penalty -1" \
    "--sub-temperature 0" "--sub-temperature -1" "--sub-top-k -1" "--sub-top-p 2" "--min-new-tokens -1" \
    "--threads -2"; do
  set -- $bad_flag
  for cmd in synth codes; do
    expect_rc 2 "$BIN" $cmd -m "$M" -t "Hi." -s vivian -o "$WORK/x.out" $bad_flag; has "$1" "$WORK/err"
  done
done
expect_rc 0 "$BIN" codes -m "$M" -t "Hi." -s vivian --max-frames 3 --temperature 0 -o "$WORK/g0.json"  # 0 = greedy
expect_rc 0 "$BIN" codes -m "$M" -t "Hi." -s vivian --max-frames 3 --greedy -o "$WORK/g1.json"
if cmp -s "$WORK/g0.json" "$WORK/g1.json"; then ok; else bad "--temperature 0 is not greedy"; fi
expect_rc 0 "$BIN" codes -m "$M" -t "Hi." -s vivian --max-frames 2 --top-k 0 --top-p 1 --repetition-penalty 1 --max-new-tokens 1 -o "$WORK/e.json"

# ---- the benchmarks' counts: out of range is exit 2 naming the flag, never a silent default ----
for args in "stream --max-frames 0" "stream --max-frames -3" "stream --threads -1" "stream --codec-threads 0" \
    "stream --context -1" "stream --concurrency 300" "threads --max-frames -1" "emulate --max-frames 0" \
    "emulate --repeat 0" "model --frames 1" "model --compete -1"; do
  set -- $args
  out=(-o "$WORK/bench"); [ "$1" = model ] && out=()   # bench model writes no result directory
  expect_rc 2 "$BIN" bench $args -m "$M" "${out[@]}"; has "$2" "$WORK/err"
done

# ---- codes and quantize write FILE.partial and rename it: nothing half-written stays -------
expect_rc 0 "$BIN" codes -m "$M" -t "Hi." -s vivian --max-frames 2 -o "$WORK/c.json"
[ -s "$WORK/c.json" ] && [ ! -e "$WORK/c.json.partial" ] && ok || bad "codes -o: partial file left"
expect_rc 0 "$BIN" quantize -m "$M" --weights int8 -o "$WORK/q.safetensors"
[ -s "$WORK/q.safetensors" ] && [ ! -e "$WORK/q.safetensors.partial" ] && ok || bad "quantize -o: partial file left"
expect_rc 1 "$BIN" quantize -m "$M" --weights int8 -o /dev/full; has "no space left on device" "$WORK/err"
[ -c /dev/full ] && ok || bad "quantize replaced /dev/full"

# ---- text input: NUL bytes and directories ------------------------------------------------
printf 'Hello\0world' > "$WORK/nul.txt"
expect_rc 1 "$BIN" tokenize -m "$M" -f "$WORK/nul.txt";  has "NUL" "$WORK/err"
printf 'Hello\0world' | "$BIN" tokenize -m "$M" >"$WORK/out" 2>"$WORK/err"
if [ $? = 1 ]; then ok; else bad "NUL on stdin accepted: $(cat "$WORK/out")"; fi; has "NUL" "$WORK/err"
printf 'Hello\0world' | "$BIN" synth -m "$M" -s vivian --max-frames 4 -q -o "$WORK/nul.wav" >/dev/null 2>"$WORK/err"
if [ $? = 1 ] && [ ! -e "$WORK/nul.wav" ]; then ok; else bad "synth: NUL on stdin accepted"; fi; has "NUL" "$WORK/err"
mkdir -p "$WORK/adir"
expect_rc 1 "$BIN" tokenize -m "$M" -f "$WORK/adir";     has "is a directory" "$WORK/err"
expect_rc 1 "$BIN" "${S[@]}" -o "$WORK/adir";            has "is a directory" "$WORK/err"
if [ -d "$WORK/adir" ] && [ -z "$(ls -A "$WORK/adir")" ]; then ok; else bad "-o DIR touched the directory"; fi
expect_rc 1 "$BIN" codes -m "$M" -t "Hi." -s vivian --max-frames 2 -o "$WORK/adir"; has "directory" "$WORK/err"

# ---- info validates the codec too ---------------------------------------------------------
mkdir -p "$WORK/nocodec" && cp "$M"/*.json "$M"/*.txt "$M"/*.safetensors "$WORK/nocodec/"
expect_rc 1 "$BIN" info -m "$WORK/nocodec";  has "speech_tokenizer" "$WORK/err"
cp -r "$M" "$WORK/badcodec" && printf 'garbage!' > "$WORK/badcodec/speech_tokenizer/model.safetensors"
expect_rc 1 "$BIN" info -m "$WORK/badcodec"; has "speech_tokenizer" "$WORK/err"
expect_rc 0 "$BIN" info -m "$M";             has "codec: speech_tokenizer" "$WORK/out"

# ---- a FIFO in place of a model file is refused, never waited on ---------------------------
for f in model.safetensors speech_tokenizer/model.safetensors config.json generation_config.json \
         vocab.json merges.txt tokenizer_config.json speech_tokenizer/config.json; do
  rm -rf "$WORK/fifo" && cp -r "$M" "$WORK/fifo" && rm "$WORK/fifo/$f" && mkfifo "$WORK/fifo/$f"
  expect_rc 1 "$BIN" info -m "$WORK/fifo";   has "not a regular file" "$WORK/err"
done
expect_rc 1 "$BIN" synth -m "$WORK/fifo" -t "Hi." -s vivian -o "$WORK/x.wav"; has "not a regular file" "$WORK/err"
# ... and so are the other files a command reads whole: a deploy profile, a voice file
mkfifo "$WORK/fifo_in"
expect_rc 1 "$BIN" synth -m "$M" -t "Hi." -s vivian --profile "$WORK/fifo_in" -o "$WORK/x.wav"
has "not a regular file (a FIFO)" "$WORK/err"
expect_rc 1 "$BIN" voice info "$WORK/fifo_in"; has "not a regular file (a FIFO)" "$WORK/err"

# ---- -o: special files are written in place, regular files by rename ----------------------
# (through symlinks in WORK, so that a regression cannot replace a device node; the direct
#  /dev paths run only when not root, where a regression fails instead of replacing them)
ln -s /dev/null "$WORK/null"; ln -s /dev/full "$WORK/full"; ln -s /dev/stdout "$WORK/stdout"
expect_rc 0 "$BIN" "${S[@]}" -o "$WORK/null"
if [ -L "$WORK/null" ] && [ -c /dev/null ]; then ok; else bad "-o symlink to /dev/null was replaced"; fi
expect_rc 1 "$BIN" "${S[@]}" -o "$WORK/full";  has "no space" "$WORK/err"
if [ -L "$WORK/full" ] && [ ! -e "$WORK/full.partial" ]; then ok; else bad "-o symlink to /dev/full was replaced"; fi
"$BIN" "${S[@]}" -o "$WORK/stdout" > "$WORK/via_stdout.wav" 2>"$WORK/err"
if [ $? = 0 ] && [ -L "$WORK/stdout" ] && is_wav "$WORK/via_stdout.wav"; then ok; else bad "-o symlink to /dev/stdout"; fi
"$BIN" "${S[@]}" -o "$WORK/stdout" 2>"$WORK/err" | cat > "$WORK/via_pipe.wav"
if [ "${PIPESTATUS[0]}" = 0 ] && [ -s "$WORK/via_pipe.wav" ]; then ok; else bad "-o /dev/stdout into a pipe"; fi
if [ $ROOT = 0 ]; then
  expect_rc 0 "$BIN" "${S[@]}" -o /dev/null
  expect_rc 1 "$BIN" "${S[@]}" -o /dev/full;  has "no space" "$WORK/err"
  "$BIN" "${S[@]}" -o /dev/stdout 2>"$WORK/err" | cat > "$WORK/dev_stdout.wav"
  if [ "${PIPESTATUS[0]}" = 0 ] && [ -s "$WORK/dev_stdout.wav" ]; then ok; else bad "-o /dev/stdout"; fi
fi
[ -c /dev/null ] && [ -c /dev/full ] && ok || bad "a device node is gone"
# a FIFO stays a FIFO; its reader gets the WAV
mkfifo "$WORK/pipe"
timeout 60 cat "$WORK/pipe" > "$WORK/from_fifo.wav" & reader=$!  # (a replaced FIFO gets no writer)
expect_rc 0 "$BIN" "${S[@]}" -o "$WORK/pipe"
wait $reader
if [ -p "$WORK/pipe" ] && is_wav "$WORK/from_fifo.wav"; then ok; else bad "-o FIFO was replaced or not written"; fi
# a symlink to a regular file: written through to its target, the link stays
expect_rc 0 "$BIN" "${S[@]}" -o "$WORK/target.wav"
ln -s target.wav "$WORK/link.wav"
expect_rc 0 "$BIN" "${S[@]}" --seed 7 --float -o "$WORK/link.wav"
if [ -L "$WORK/link.wav" ] && python3 -c "import sys;b=open(sys.argv[1],'rb').read();assert b[20:22]==b'\x03\x00'" "$WORK/target.wav"
then ok; else bad "-o symlink: link replaced or target not written"; fi
# a regular file is still replaced atomically (no partial left)
expect_rc 0 "$BIN" "${S[@]}" -o "$WORK/target.wav"
if [ -f "$WORK/target.wav" ] && [ ! -L "$WORK/target.wav" ] && [ ! -e "$WORK/target.wav.partial" ]; then ok; else bad "regular -o"; fi

# ---- other commands' stdout: a full device is an error ------------------------------------
"$BIN" tokenize -m "$M" -t "Hello world" > /dev/full 2>"$WORK/err"
if [ $? != 0 ]; then ok; else bad "tokenize > /dev/full exits 0"; fi; has "no space" "$WORK/err"
"$BIN" info -m "$M" > /dev/full 2>"$WORK/err"
if [ $? != 0 ]; then ok; else bad "info > /dev/full exits 0"; fi; has "no space" "$WORK/err"
"$BIN" codes -m "$M" -t "Hi." -s vivian --max-frames 2 -q > /dev/full 2>"$WORK/err"
if [ $? != 0 ]; then ok; else bad "codes > /dev/full exits 0"; fi; has "no space" "$WORK/err"

# ---- a reader that goes away: synth -o - | head stops quietly, exit 0 ----------------------
LONG="One sentence here. And another one follows it. And a third."
"$BIN" synth -m "$M" -t "$LONG" -s vivian --min-new-tokens 60 --max-frames 60 -q -o - 2>"$WORK/err" | head -c 100 > "$WORK/head.raw"
st=("${PIPESTATUS[@]}")
if [ "${st[0]}" = 0 ] && [ "$(stat -c %s "$WORK/head.raw")" = 100 ] && [ ! -s "$WORK/err" ]; then ok
else bad "synth -o - | head: rc ${st[0]}, stderr: $(head -c 300 "$WORK/err")"; fi
"$BIN" codes -m "$M" -t "$LONG" -s vivian --min-new-tokens 60 --max-frames 60 -q 2>"$WORK/err" | head -c 10 >/dev/null
st=("${PIPESTATUS[@]}")
if [ "${st[0]}" = 0 ] && [ ! -s "$WORK/err" ]; then ok; else bad "codes | head: rc ${st[0]}: $(head -c 300 "$WORK/err")"; fi

# ---- SIGTERM / SIGINT during synth: no out.wav.partial left, dies of the signal ------------
LONGER="$(printf 'Hello there, this is a long text. %.0s' {1..20})"
python3 - "$BIN" "$M" "$LONGER" "$WORK" <<'PY' && ok || bad "signal during synth"
import os, signal, subprocess, sys, time
b, m, text, work = sys.argv[1:]
for sig in (signal.SIGTERM, signal.SIGINT):
    out = os.path.join(work, "sig.wav")
    p = subprocess.Popen([b, "synth", "-m", m, "-t", text, "-s", "vivian", "--min-new-tokens", "100000",
                          "-q", "-o", out], stderr=subprocess.PIPE)
    t0 = time.time()
    while not (os.path.exists(out + ".partial") and os.path.getsize(out + ".partial") > 44):
        assert p.poll() is None and time.time() - t0 < 60, "synth ended before the signal"
        time.sleep(0.02)
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == -sig, (sig, p.returncode, err)
    assert not os.path.exists(out + ".partial") and not os.path.exists(out), "partial left behind"
    assert b"interrupted" in err, err
PY

finish test_cli_contracts
