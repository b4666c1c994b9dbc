/* The 256-bit integer-dot matmul with AVX-512 VNNI's EVEX-encoded VPDPBUSD on ymm registers
   (compiled with -mavx512vl -mavx512vnni): the avx2 level on CPUs with AVX-512 VNNI, and the
   same code as the AVX-VNNI shim on a CPU that can run it. The shim for matmul_dot_body.h. */
#include <immintrin.h>
#define CT_DOT_VNNI 1
#define CT_DPBUSD(acc, u8, s8) _mm256_dpbusd_epi32(acc, u8, s8)
#define CT_DOT_FN ct_matmul_rows_dot_vnni256
#include "kernels/x86/matmul_dot_body.h"
