/* The 256-bit integer-dot matmul with AVX-VNNI's VEX-encoded VPDPBUSD (Intel client cores from
   Alder Lake, N100; compiled with -mavxvnni): the shim for matmul_dot_body.h. */
#include <immintrin.h>
#define CT_DOT_VNNI 1
#define CT_DPBUSD(acc, u8, s8) _mm256_dpbusd_avx_epi32(acc, u8, s8)
#define CT_DOT_FN ct_matmul_rows_dot_avxvnni
#include "kernels/x86/matmul_dot_body.h"
