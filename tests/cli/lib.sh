# Shared prelude of the CLI test scripts: a work directory removed on exit, pass/fail counters,
# expect_rc (exit code of a command, bounded to 60 s; stdout/stderr in $WORK/out and $WORK/err),
# has (a case-insensitive pattern in a file), start_serve (a server on a free port: SRV, PORT;
# its stderr in $WORK/srv.log) and finish (the "N passed, N failed" line).
# Source it after setting BIN (and SRC where used). The deploy profile's caches (machine rates,
# calibrations) go to one directory in the build tree shared by the CLI tests, never the user's.
WORK="$(mktemp -d)"
export XDG_CACHE_HOME="$PWD/test-cache"
trap 'rm -rf "$WORK"' EXIT
pass=0; fail=0
ok()   { pass=$((pass+1)); }
bad()  { fail=$((fail+1)); echo "FAIL: $*" >&2; }
# expect_rc RC CMD...: CMD's exit status is RC, within 60 s (CT_RC_TIMEOUT=S set on the call: S s)
expect_rc() { local want=$1; shift; timeout "${CT_RC_TIMEOUT:-60}" "$@" >"$WORK/out" 2>"$WORK/err"; local rc=$?
  if [ "$rc" = "$want" ]; then ok; else bad "rc $rc (want $want): $*"; head -c 600 "$WORK/err" >&2; fi; }
has() { if grep -qi -e "$1" "$2"; then ok; else bad "'$1' not in $2: $(head -c 400 "$2")"; fi; }
finish() { echo "${1:+$1: }$pass passed, $fail failed"; [ "$fail" = 0 ]; }
start_serve() { "$BIN" serve --port 0 "$@" > /dev/null 2>"$WORK/srv.log" & SRV=$!; PORT=""
  local _; for _ in $(seq 1 600); do  # at most 60 s
    PORT="$(sed -n 's|.*on http://[^:]*:\([0-9]*\) .*|\1|p' "$WORK/srv.log" | head -1)"
    { [ -n "$PORT" ] && grep -q '^ready' "$WORK/srv.log"; } && return 0
    kill -0 $SRV 2>/dev/null || break; sleep 0.1
  done; PORT=""; return 1; }
