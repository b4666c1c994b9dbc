/* AVX-512 element-wise activations built on one polynomial exp: the speech encoder's ELU and
 * the transformer MLPs' SwiGLU gate. exp(x) = p(r) * 2^n with n = round(x / ln 2), r = x - n
 * ln 2 by Cody-Waite (two constants) and p the degree-7 Taylor polynomial (error below
 * 6e-9 relative on |r| <= ln 2 / 2). Every element takes the same vector code (a tail under
 * a mask), so any split of a range gives the same bits. */
#include <immintrin.h>

#include "kernels/conv.h"
#include "kernels/ops.h"

#define AI static inline __attribute__((always_inline))

/* exp(xc) = p * scale for xc in [-88, 88] (scale = 2^n, 0 for n = -127). */
AI __m512 exp_parts16(__m512 xc, __m512 *scale) {
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), xc);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    *scale = _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
    return p;
}

/* ELU (kernels/conv.h): x > 0 ? x : expm1(x), expm1 by a degree-9 Taylor series on (-0.5, 0]
 * and exp(x) - 1 below. */
AI __m512 elu16(__m512 x) {
    const __m512 xc = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-88.0f)), _mm512_setzero_ps());
    __m512 scale;
    const __m512 p = exp_parts16(xc, &scale);
    const __m512 big = _mm512_fmsub_ps(p, scale, _mm512_set1_ps(1.0f));
    /* expm1 series for xc > -0.5 */
    __m512 q = _mm512_set1_ps(1.0f / 362880.0f);
    q = _mm512_fmadd_ps(q, xc, _mm512_set1_ps(1.0f / 40320.0f));
    q = _mm512_fmadd_ps(q, xc, _mm512_set1_ps(1.0f / 5040.0f));
    q = _mm512_fmadd_ps(q, xc, _mm512_set1_ps(1.0f / 720.0f));
    q = _mm512_fmadd_ps(q, xc, _mm512_set1_ps(1.0f / 120.0f));
    q = _mm512_fmadd_ps(q, xc, _mm512_set1_ps(1.0f / 24.0f));
    q = _mm512_fmadd_ps(q, xc, _mm512_set1_ps(1.0f / 6.0f));
    q = _mm512_fmadd_ps(q, xc, _mm512_set1_ps(0.5f));
    const __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(q, xc), xc, xc);
    __m512 y = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(xc, _mm512_set1_ps(-0.5f), _CMP_GT_OQ), big, small);
    /* x > 0 or NaN: x itself */
    const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ) |
                           _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    return _mm512_mask_blend_ps(keep, y, x);
}

void ct_cv_elu_avx512(float *y, const float *x, size_t lo, size_t hi) {
    size_t i = lo;
    for (; i + 16 <= hi; i += 16) _mm512_storeu_ps(y + i, elu16(_mm512_loadu_ps(x + i)));
    if (i < hi) {
        const __mmask16 m = (__mmask16)((1u << (hi - i)) - 1u);
        _mm512_mask_storeu_ps(y + i, m, elu16(_mm512_maskz_loadu_ps(m, x + i)));
    }
}

/* SwiGLU (kernels/ops.h): a / (1 + exp(-a)) * b, exp(-a) with -a clamped to [-88, 88]; below
 * a = -88 the gate is 0 (|silu(a)| < 6e-37 there); a NaN stays NaN through the numerator. */
AI __m512 swiglu16(__m512 a, __m512 b) {
    const __m512 xc = _mm512_min_ps(_mm512_max_ps(_mm512_sub_ps(_mm512_setzero_ps(), a), _mm512_set1_ps(-88.0f)),
                                    _mm512_set1_ps(88.0f));
    __m512 scale;
    const __m512 p = exp_parts16(xc, &scale);
    const __m512 den = _mm512_fmadd_ps(p, scale, _mm512_set1_ps(1.0f));
    const __mmask16 live = _mm512_cmp_ps_mask(a, _mm512_set1_ps(-88.0f), _CMP_NLT_UQ);
    return _mm512_mul_ps(_mm512_maskz_div_ps(live, a, den), b);
}

void ct_swiglu_avx512(float *y, const float *a, const float *b, int n) {
    int i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, swiglu16(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)));
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
        _mm512_mask_storeu_ps(y + i, m, swiglu16(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i)));
    }
}
