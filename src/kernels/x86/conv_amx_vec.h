/* The AMX codec GEMM's (x86/conv_amx_body.h) vector helpers: its bf16 splits with VCVTNE2PS2BF16
 * (hi = bf16(x), lo = bf16(x - hi), rounded to nearest even as the body's scalar cv_split: normal
 * numbers give the same bits) and its tile-row store in one masked vector. tests/unit/
 * test_codec_kernels.c checks both against the scalar ones bit for bit where the CPU has AVX-512
 * BF16. Included before the body, which defines cv_split. */
#ifndef CT_KERNELS_X86_CONV_AMX_VEC_H
#define CT_KERNELS_X86_CONV_AMX_VEC_H

#include <immintrin.h>
#include <stdint.h>

#define CV_SPLIT_ROW cv_split_row_bf16
#define CV_SPLIT_PAIRS cv_split_pairs_bf16
#define CV_STORE_ROW cv_store_row_avx512

#define CV_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))

/* hi and lo of 32 values: h the bf16 pair vector of (a, b), lo that of the remainders */
CV_BF16 static inline __m512i cv_lo32(__m512 a, __m512 b, __m512i h) {
    const __m512 ha = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(h)), 16));
    const __m512 hb = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(h, 1)), 16));
    return (__m512i)_mm512_cvtne2ps_pbh(_mm512_sub_ps(b, hb), _mm512_sub_ps(a, ha));
}

static inline void cv_split(float x, uint16_t *h, uint16_t *l);

CV_BF16 static void cv_split_row_bf16(const float *x, int n, uint16_t *h, uint16_t *l) {
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        const __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16);
        const __m512i hv = (__m512i)_mm512_cvtne2ps_pbh(b, a);
        _mm512_storeu_si512((void *)(h + i), hv);
        _mm512_storeu_si512((void *)(l + i), cv_lo32(a, b, hv));
    }
    for (; i < n; i++) cv_split(x[i], h + i, l + i);
}

CV_BF16 static void cv_split_pairs_bf16(const float *w0, const float *w1, uint16_t *h, uint16_t *l) {
    /* [w0 0..15 | w1 0..15] as bf16, then interleaved: element 2 o + e from w_e[o] */
    const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22,
                                         6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512 a = _mm512_loadu_ps(w0), b = _mm512_loadu_ps(w1);
    const __m512i hv = (__m512i)_mm512_cvtne2ps_pbh(b, a);
    _mm512_storeu_si512((void *)h, _mm512_permutexvar_epi16(idx, hv));
    _mm512_storeu_si512((void *)l, _mm512_permutexvar_epi16(idx, cv_lo32(a, b, hv)));
}

/* The body's cv_store_row_c in one masked vector: the same two additions per channel. */
CV_BF16 static void cv_store_row_avx512(float *y, const float *t, const float *b, int n, int acc) {
    const __mmask16 m = (__mmask16)((1u << n) - 1u);
    const __m512 yv = acc ? _mm512_maskz_loadu_ps(m, y) : _mm512_setzero_ps();
    const __m512 bv = b ? _mm512_maskz_loadu_ps(m, b) : _mm512_setzero_ps();
    _mm512_mask_storeu_ps(y, m, _mm512_add_ps(_mm512_add_ps(yv, bv), _mm512_loadu_ps(t)));
}

#endif
