#!/usr/bin/env bash
# The installed library as an embedder sees it: `make install PREFIX=<tmp>` (the Makefile
# target, which runs `cmake --install`) from an already built tree, then examples/synth_min.c
# compiled with nothing but `pkg-config --cflags --libs codectalk` (shared) and
# `pkg-config --static --libs codectalk` (-static), both run on a tiny random model made by the
# installed `codectalk make-model`, both writing the same audio.
# usage: test_install.sh SRC_DIR BUILD_DIR C_COMPILER
set -euo pipefail
src=$1 build=$2 cc=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ct_install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

prefix=$tmp/prefix
# -o build: the tree is built already; run only the install recipe
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -C "$src" -o build install BUILD="$build" PREFIX="$prefix" >"$tmp/install.log" \
    || { cat "$tmp/install.log" >&2; fail "make install"; }

pc=$(find "$prefix" -name codectalk.pc)
[ -n "$pc" ] || fail "no codectalk.pc under $prefix"
export PKG_CONFIG_PATH=$(dirname "$pc")
version=$(sed -n 's/^#define CT_VERSION_STRING "\([^"]*\)".*/\1/p' "$src/include/codectalk.h")
[ "$(pkg-config --modversion codectalk)" = "$version" ] || fail "codectalk.pc version is not $version"
libdir=$(pkg-config --variable=libdir codectalk)
incdir=$(pkg-config --variable=includedir codectalk)
for f in "$libdir/libcodectalk.a" "$libdir/libcodectalk.so" "$libdir/libcodectalk.so.${version%%.*}" \
         "$libdir/libcodectalk.so.$version" "$incdir/codectalk.h" "$incdir/codectalk_status.h" \
         "$prefix/bin/codectalk"; do
    [ -e "$f" ] || fail "not installed: $f"
done
[ "$(find "$incdir" -name '*.h' | wc -l)" -eq 2 ] || fail "headers other than the two public ones installed"

# what an embedder links: no server, YAML or OpenSSL
static_libs=$(pkg-config --static --libs codectalk)
echo "pkg-config --static --libs codectalk: $static_libs"
case "$static_libs" in *microhttpd*|*yaml*|*crypto*) fail "static link pulls a tools dependency";; esac

flags=(-std=c11 -Wall -Wextra -Werror)
# shellcheck disable=SC2046  # pkg-config output is a list of flags
"$cc" "${flags[@]}" "$src/examples/synth_min.c" $(pkg-config --cflags --libs codectalk) \
    -o "$tmp/synth_shared"
# shellcheck disable=SC2046
"$cc" "${flags[@]}" -static $(pkg-config --cflags codectalk) "$src/examples/synth_min.c" \
    $(pkg-config --static --libs codectalk) -o "$tmp/synth_static"
readelf -d "$tmp/synth_shared" | grep -q "NEEDED.*\[libcodectalk\.so\.${version%%.*}\]" \
    || fail "synth_shared does not load libcodectalk.so.${version%%.*}"
! readelf -d "$tmp/synth_shared" | grep -Eq "NEEDED.*lib(microhttpd|yaml|crypto)" \
    || fail "synth_shared loads a tools dependency"
! readelf -d "$tmp/synth_static" | grep -q NEEDED || fail "synth_static is not static"

"$prefix/bin/codectalk" make-model --preset tiny --seed 1 --out "$tmp/model" >/dev/null
text="Hello from an embedded engine."
LD_LIBRARY_PATH=$libdir "$tmp/synth_shared" "$tmp/model" "$text" "$tmp/shared.wav" | tee "$tmp/shared.out"
"$tmp/synth_static" "$tmp/model" "$text" "$tmp/static.wav" | tee "$tmp/static.out"

n=$(awk '{print $1}' "$tmp/shared.out")
[ "$n" -gt 0 ] 2>/dev/null || fail "no samples: $(cat "$tmp/shared.out")"
grep -q " at 24000 Hz (codectalk $version)" "$tmp/shared.out" || fail "unexpected output"
[ "$(head -c 4 "$tmp/shared.wav")" = RIFF ] || fail "shared.wav is not a WAV file"
[ "$(stat -c %s "$tmp/shared.wav")" -eq $((44 + 2 * n)) ] || fail "shared.wav does not hold $n samples"
cmp -s "$tmp/shared.out" "$tmp/static.out" || fail "static and shared builds report different audio"
cmp "$tmp/shared.wav" "$tmp/static.wav" || fail "static and shared builds wrote different audio"
echo "installed into $prefix; synth_min (shared and static) wrote $n samples"
