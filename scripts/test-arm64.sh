#!/usr/bin/env bash
# Cross-compiles the matmul kernels (scalar reference + NEON) and tests/unit/test_kernels.c, and
# the codec decoder's batched GEMMs (src/codec/conv.c) with tests/unit/test_codec_batch_gemm.c, and
# the roofline's product probes (src/edge/roofline.c) with tests/unit/test_roofline_probes.c,
# for AArch64 with Debian's gcc-aarch64-linux-gnu and runs the tests under qemu-user.
# Needs: apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
# Usage: scripts/test-arm64.sh [build-dir]   (default build-arm64)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/build-arm64}
cc=${CC_ARM64:-aarch64-linux-gnu-gcc}
qemu=${QEMU_ARM64:-qemu-aarch64}
mkdir -p "$out"
flags=(-std=c11 -O2 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Wshadow -Wstrict-prototypes
       -Wmissing-prototypes -Wvla -Wno-unused-parameter -Werror
       -I"$root/include" -I"$root/src" -I"$root/tests"
       -DCT_SRC_DIR="\"$root\"" -DCT_BIN_DIR="\"$out\"")
srcs=("$root"/src/kernels/*.c "$root"/src/kernels/ref/*.c "$root"/src/kernels/arm/*_neon.c
      "$root"/src/core/pool.c "$root"/src/core/rng.c "$root"/src/core/status.c)
"$cc" "${flags[@]}" -o "$out/test_kernels" "$root/tests/unit/test_kernels.c" "${srcs[@]}" -lpthread -lm
echo "built $out/test_kernels ($("$cc" -dumpmachine))"
"$qemu" -L /usr/aarch64-linux-gnu "$out/test_kernels"
"$cc" "${flags[@]}" -o "$out/test_codec_batch_gemm" "$root/tests/unit/test_codec_batch_gemm.c" \
    "$root/src/codec/conv.c" "${srcs[@]}" -lpthread -lm
echo "built $out/test_codec_batch_gemm"
"$qemu" -L /usr/aarch64-linux-gnu "$out/test_codec_batch_gemm"
"$cc" "${flags[@]}" -o "$out/test_roofline_probes" "$root/tests/unit/test_roofline_probes.c" \
    "$root/src/edge/roofline.c" "${srcs[@]}" -lpthread -lm
echo "built $out/test_roofline_probes"
"$qemu" -L /usr/aarch64-linux-gnu "$out/test_roofline_probes"
