#!/usr/bin/env bash
# cmake/git_sha.cmake, the generator of meta.git_sha in the benchmarks' JSON, on a scratch
# checkout: the short commit (also after a touch without a change); "-dirty" after an edit of a tracked file; the new commit after a
# commit, with no re-configure; the header left untouched (same mtime) when nothing changed;
# "unknown" outside a checkout.
set -u
SRC_DIR="$1"; WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
pass=0; fail=0
ok()  { pass=$((pass+1)); }
bad() { fail=$((fail+1)); echo "FAIL: $*" >&2; }
gen() { cmake -DSRC="$1" -DOUT="$WORK/sha.h" -P "$SRC_DIR/cmake/git_sha.cmake" || bad "the script failed on $1"; }
want() { grep -qx "#define CT_GIT_SHA \"$1\"" "$WORK/sha.h" && ok || bad "want $1, got: $(tail -n1 "$WORK/sha.h")"; }

R="$WORK/repo"; mkdir -p "$R"
g() { git -C "$R" -c user.name=t -c user.email=t@t -c commit.gpgsign=false "$@" >/dev/null; }
g init -q; echo one > "$R/f"; g add f; g commit -q -m one
gen "$R"; want "$(git -C "$R" rev-parse --short HEAD)"
m0="$(stat -c %Y.%y "$WORK/sha.h")"; sleep 1.1
gen "$R"; [ "$(stat -c %Y.%y "$WORK/sha.h")" = "$m0" ] && ok || bad "rewritten though nothing changed"
touch "$R/f"
gen "$R"; want "$(git -C "$R" rev-parse --short HEAD)"
echo two > "$R/f"
gen "$R"; want "$(git -C "$R" rev-parse --short HEAD)-dirty"
g commit -q -am two
gen "$R"; want "$(git -C "$R" rev-parse --short HEAD)"
mkdir -p "$WORK/plain"
gen "$WORK/plain"; want unknown

echo "test_git_sha: $pass passed, $fail failed"
[ "$fail" = 0 ]
