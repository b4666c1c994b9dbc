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
finish test_clone
