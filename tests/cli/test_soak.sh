#!/bin/bash
# A short run of the soak (tools/soak/soak.py; 10 minutes by hand: docs/SERVE.md "Soak"): 4 client
# threads for 20 s in every response mode on a tiny model; fails on an error, an answer that is
# not the same bytes for the same request, or RSS growth over 64 MiB (the third argument: a
# sanitizer build's quarantine keeps freed memory resident, so it passes its own bound).
BIN="$1"; SRC="$2"; RSS_MB="${3:-64}"
. "$SRC/tests/cli/lib.sh"
"$BIN" make-model --preset tiny --seed 8 --out "$WORK/m" >/dev/null 2>&1 || { echo "make-model failed"; exit 1; }
python3 "$SRC/tools/soak/soak.py" "$BIN" "$WORK/m" --streams 4 --seconds 20 --frames 16 --max-rss-mb "$RSS_MB" \
  --json "$WORK/soak.json" \
  > "$WORK/out" 2>&1 && ok || bad "soak: $(cat "$WORK/out")"
python3 - "$WORK/soak.json" <<'PY' && ok || bad "soak.json: $(cat "$WORK/soak.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["requests"] >= 8 and d["errors"] == 0 and d["nondeterministic"] == 0 and all(n > 0 for n in d["by_mode"]), d
assert d["distinct_requests"] == 12, d
PY
# bad arguments are named
python3 "$SRC/tools/soak/soak.py" "$BIN" "$WORK/m" --streams 0 > "$WORK/out" 2>&1; [ $? = 2 ] && ok || bad "--streams 0"
finish test_soak
