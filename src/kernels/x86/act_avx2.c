/* AVX2 + FMA element-wise activations: the AVX-512 file's (act_avx512.c) polynomial exp, ELU
 * and SwiGLU on 8 lanes. Every element takes the same vector code (a tail under a mask), so
 * any split of a range gives the same bits. */
#include <immintrin.h>

#include "kernels/conv.h"
#include "kernels/ops.h"

#define AI static inline __attribute__((always_inline))

/* Lanes below v set. */
AI __m256i lane_mask(int v) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(v), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* exp(xc) = p * scale for xc in [-88, 88] (scale = 2^n, 0 for n = -127). */
AI __m256 exp_parts8(__m256 xc, __m256 *scale) {
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), xc);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    *scale = _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
    return p;
}

AI __m256 elu8(__m256 x) {
    const __m256 xc = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-88.0f)), _mm256_setzero_ps());
    __m256 scale;
    const __m256 p = exp_parts8(xc, &scale);
    const __m256 big = _mm256_fmsub_ps(p, scale, _mm256_set1_ps(1.0f));
    __m256 q = _mm256_set1_ps(1.0f / 362880.0f);
    q = _mm256_fmadd_ps(q, xc, _mm256_set1_ps(1.0f / 40320.0f));
    q = _mm256_fmadd_ps(q, xc, _mm256_set1_ps(1.0f / 5040.0f));
    q = _mm256_fmadd_ps(q, xc, _mm256_set1_ps(1.0f / 720.0f));
    q = _mm256_fmadd_ps(q, xc, _mm256_set1_ps(1.0f / 120.0f));
    q = _mm256_fmadd_ps(q, xc, _mm256_set1_ps(1.0f / 24.0f));
    q = _mm256_fmadd_ps(q, xc, _mm256_set1_ps(1.0f / 6.0f));
    q = _mm256_fmadd_ps(q, xc, _mm256_set1_ps(0.5f));
    const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(q, xc), xc, xc);
    __m256 y = _mm256_blendv_ps(big, small, _mm256_cmp_ps(xc, _mm256_set1_ps(-0.5f), _CMP_GT_OQ));
    const __m256 keep = _mm256_or_ps(_mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ),
                                     _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    return _mm256_blendv_ps(y, x, keep);
}

void ct_cv_elu_avx2(float *y, const float *x, size_t lo, size_t hi) {
    size_t i = lo;
    for (; i + 8 <= hi; i += 8) _mm256_storeu_ps(y + i, elu8(_mm256_loadu_ps(x + i)));
    if (i < hi) {
        const __m256i m = lane_mask((int)(hi - i));
        _mm256_maskstore_ps(y + i, m, elu8(_mm256_maskload_ps(x + i, m)));
    }
}

AI __m256 swiglu8(__m256 a, __m256 b) {
    const __m256 xc = _mm256_min_ps(_mm256_max_ps(_mm256_sub_ps(_mm256_setzero_ps(), a), _mm256_set1_ps(-88.0f)),
                                    _mm256_set1_ps(88.0f));
    __m256 scale;
    const __m256 p = exp_parts8(xc, &scale);
    const __m256 den = _mm256_fmadd_ps(p, scale, _mm256_set1_ps(1.0f));
    const __m256 dead = _mm256_cmp_ps(a, _mm256_set1_ps(-88.0f), _CMP_LT_OQ); /* gate 0 below -88 */
    return _mm256_mul_ps(_mm256_andnot_ps(dead, _mm256_div_ps(a, den)), b);
}

void ct_swiglu_avx2(float *y, const float *a, const float *b, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, swiglu8(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    if (i < n) {
        const __m256i m = lane_mask(n - i);
        _mm256_maskstore_ps(y + i, m, swiglu8(_mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m)));
    }
}
