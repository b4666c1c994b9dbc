/* AVX2 + FMA ELU, SwiGLU and RMSNorm: the shims for vecops_body.h, which holds the code. */
#include <immintrin.h>

typedef __m256 VT;
typedef __m256i TM;
typedef __m256 CM;
#define VN 8
#define V_FN(name) name##_avx2
#define V_LOAD(p) _mm256_loadu_ps(p)
#define V_STORE(p, v) _mm256_storeu_ps(p, v)
#define V_TMASK(k) _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define V_TLOAD(m, p) _mm256_maskload_ps(p, m)
#define V_TSTORE(p, m, v) _mm256_maskstore_ps(p, m, v)
#define V_SET1(c) _mm256_set1_ps(c)
#define V_ZERO() _mm256_setzero_ps()
#define V_ADD(a, b) _mm256_add_ps(a, b)
#define V_SUB(a, b) _mm256_sub_ps(a, b)
#define V_MUL(a, b) _mm256_mul_ps(a, b)
#define V_DIV(a, b) _mm256_div_ps(a, b)
#define V_MIN(a, b) _mm256_min_ps(a, b)
#define V_MAX(a, b) _mm256_max_ps(a, b)
#define V_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define V_FMS(a, b, c) _mm256_fmsub_ps(a, b, c)
#define V_FNMA(a, b, c) _mm256_fnmadd_ps(a, b, c)
#define V_ROUND(v) _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define V_POW2I(n) \
    _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23))
#define V_GT(a, b) _mm256_cmp_ps(a, b, _CMP_GT_OQ)
#define V_LT(a, b) _mm256_cmp_ps(a, b, _CMP_LT_OQ)
#define V_UNORD(a) _mm256_cmp_ps(a, a, _CMP_UNORD_Q)
#define V_MOR(m1, m2) _mm256_or_ps(m1, m2)
#define V_BLEND(m, a, b) _mm256_blendv_ps(a, b, m) /* b where m, else a */

/* (lo + hi halves), then pairs, then the last two */
static inline float v_hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)));
}
#define V_HSUM(v) v_hsum8(v)

#include "kernels/x86/vecops_body.h"
