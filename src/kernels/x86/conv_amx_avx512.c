/* The codec-decoder GEMM on AMX tiles (x86/conv_amx_body.h): AMX-BF16 instructions, the splits
 * into bf16 with VCVTNE2PS2BF16. Used where the avx512bf16 level has AMX (kernels/cpu.c). */
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/conv.h"

#define CV_AMX_ATTR __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,amx-tile,amx-bf16")))
#define CV_AMX_FN ct_cv_gemm_range_amx
#define CV_AMX_FALLBACK ct_cv_gemm_range_avx512
#define TILE_CFG(c) _tile_loadconfig(c)
#define TILE_ZERO(t) _tile_zero(t)
#define TILE_LOAD(t, p, s) _tile_loadd(t, p, s)
#define TILE_DP(c, a, b) _tile_dpbf16ps(c, a, b)
#define TILE_STORE(t, p, s) _tile_stored(t, p, s)
#define TILE_RELEASE() _tile_release()

#include "kernels/x86/conv_amx_vec.h"
#include "kernels/x86/conv_amx_body.h"
