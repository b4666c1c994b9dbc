#!/usr/bin/env bash
# bench model --compete N: the contended table and JSON next to the uncontended figures, the
# competing processes gone when the bench ends (normally, or killed mid-measurement), bad counts
# refused. Every wait is bounded.
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

expect_rc 0 "$BIN" bench model -m "$M" --threads 2 --frames 4 --repeat 1 --compete 2 --json "$WORK/b.json"
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
# without --compete: no contended run, no compete key
expect_rc 0 "$BIN" bench model -m "$M" --threads 2 --frames 4 --repeat 1 --no-codec --json "$WORK/n.json"
if grep -q "competing" "$WORK/out"; then bad "contended table without --compete"; else ok; fi
python3 -c 'import json,sys; assert "compete" not in json.load(open(sys.argv[1]))' "$WORK/n.json" && ok \
  || bad "compete key without --compete"

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
