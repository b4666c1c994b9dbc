/* AVX-512 ELU, SwiGLU and RMSNorm: the shims for vecops_body.h, which holds the code. */
#include <immintrin.h>

typedef __m512 VT;
typedef __mmask16 TM;
typedef __mmask16 CM;
#define VN 16
#define V_FN(name) name##_avx512
#define V_LOAD(p) _mm512_loadu_ps(p)
#define V_STORE(p, v) _mm512_storeu_ps(p, v)
#define V_TMASK(k) ((__mmask16)((1u << (k)) - 1u))
#define V_TLOAD(m, p) _mm512_maskz_loadu_ps(m, p)
#define V_TSTORE(p, m, v) _mm512_mask_storeu_ps(p, m, v)
#define V_SET1(c) _mm512_set1_ps(c)
#define V_ZERO() _mm512_setzero_ps()
#define V_ADD(a, b) _mm512_add_ps(a, b)
#define V_SUB(a, b) _mm512_sub_ps(a, b)
#define V_MUL(a, b) _mm512_mul_ps(a, b)
#define V_DIV(a, b) _mm512_div_ps(a, b)
#define V_MIN(a, b) _mm512_min_ps(a, b)
#define V_MAX(a, b) _mm512_max_ps(a, b)
#define V_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define V_FMS(a, b, c) _mm512_fmsub_ps(a, b, c)
#define V_FNMA(a, b, c) _mm512_fnmadd_ps(a, b, c)
#define V_ROUND(v) _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define V_POW2I(n) \
    _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23))
#define V_GT(a, b) _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ)
#define V_LT(a, b) _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ)
#define V_UNORD(a) _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q)
#define V_MOR(m1, m2) ((CM)((m1) | (m2)))
#define V_BLEND(m, a, b) _mm512_mask_blend_ps(m, a, b) /* b where m, else a */
#define V_HSUM(v) _mm512_reduce_add_ps(v)

#include "kernels/x86/vecops_body.h"
