/* AVX2+FMA+F16C matmul rows over BF16/F16/F32/INT8/INT4 weights, f32 activations and
   accumulation: 2 rows x 1 token for n = 1, a register-blocked 2 rows x 4 tokens GEMM over
   L2-resident row chunks for n > 1. */
#include <immintrin.h>
#include <stdint.h>

#include "kernels/cpu.h"
#include "kernels/matrow.h"
#include "kernels/ops.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* 8 weights of row p at column k (k + 8 <= cols) as f32; INT8 unscaled, INT4 scaled by the
   row's group scale sc[k/32]. */
ALWAYS_INLINE __m256 load8(const void *p, ct_dtype dt, int k, const float *sc) {
    if (dt == CT_DT_BF16) {
        __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)p + k));
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
    if (dt == CT_DT_F16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + k)));
    if (dt == CT_DT_I8)
        return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)((const int8_t *)p + k))));
    if (dt == CT_DT_U8) {
        int j = k % CT_Q4_GROUP;
        const uint8_t *g = (const uint8_t *)p + (k / CT_Q4_GROUP) * 16 + (j & 15);
        __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)g));
        if (j & 16) v = _mm256_srli_epi32(v, 4);
        v = _mm256_sub_epi32(_mm256_and_si256(v, _mm256_set1_epi32(15)), _mm256_set1_epi32(8));
        return _mm256_mul_ps(_mm256_cvtepi32_ps(v), _mm256_set1_ps(sc[k / CT_Q4_GROUP]));
    }
    return _mm256_loadu_ps((const float *)p + k);
}

static inline float hsum(__m256 v) {
    __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
    lo = _mm_add_ps(lo, hi);
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
    return _mm_cvtss_f32(lo);
}

static inline float wat(const ct_mat *w, const void *p, const float *sc, int k) {
    switch (w->dtype) {
    case CT_DT_BF16: return ct_bf16_to_f32(((const uint16_t *)p)[k]);
    case CT_DT_F16: return ct_f16_to_f32(((const uint16_t *)p)[k]);
    case CT_DT_I8: return (float)((const int8_t *)p)[k];
    case CT_DT_U8: { /* INT4 rows have no tail; kept for completeness */
        int j = k % CT_Q4_GROUP;
        uint8_t b = ((const uint8_t *)p)[(k / CT_Q4_GROUP) * 16 + (j & 15)];
        return sc[k / CT_Q4_GROUP] * (float)((j < 16 ? (b & 15) : (b >> 4)) - 8);
    }
    default: return ((const float *)p)[k];
    }
}

/* 1 row x up to 4 tokens. */
static void row_tok4(const ct_mat *w, const float *x, int nt, float *out, int r) {
    /* Per token the same operations as rows2_tok1: even/odd 8-column accumulators over every 16
       columns, a leftover 8 into the even one, a scalar tail, hsum(a + b) + tail. So a token's
       result does not depend on how many tokens share the call (batched == solo decode). */
    const int C = w->cols;
    const void *p = ct_row_ptr(w, r);
    const float *sc = ct_row_sc(w, r);
    const float *xs[4];
    for (int j = 0; j < 4; j++) xs[j] = x + (size_t)(j < nt ? j : 0) * C;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    int k = 0;
    for (; k + 16 <= C; k += 16) {
        __m256 w0 = load8(p, w->dtype, k, sc), w1 = load8(p, w->dtype, k + 8, sc);
        a0 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xs[0] + k), a0);
        b0 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xs[0] + k + 8), b0);
        a1 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xs[1] + k), a1);
        b1 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xs[1] + k + 8), b1);
        a2 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xs[2] + k), a2);
        b2 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xs[2] + k + 8), b2);
        a3 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xs[3] + k), a3);
        b3 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xs[3] + k + 8), b3);
    }
    for (; k + 8 <= C; k += 8) {
        __m256 wv = load8(p, w->dtype, k, sc);
        a0 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(xs[0] + k), a0);
        a1 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(xs[1] + k), a1);
        a2 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(xs[2] + k), a2);
        a3 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(xs[3] + k), a3);
    }
    float t0 = 0, t1 = 0, t2 = 0, t3 = 0;
    for (; k < C; k++) {
        float wv = wat(w, p, sc, k);
        t0 += wv * xs[0][k];
        t1 += wv * xs[1][k];
        t2 += wv * xs[2][k];
        t3 += wv * xs[3][k];
    }
    out[0] = hsum(_mm256_add_ps(a0, b0)) + t0;
    out[1] = hsum(_mm256_add_ps(a1, b1)) + t1;
    out[2] = hsum(_mm256_add_ps(a2, b2)) + t2;
    out[3] = hsum(_mm256_add_ps(a3, b3)) + t3;
}

/* 2 rows x 1 token with two accumulators per row. */
static void rows2_tok1(const ct_mat *w, const float *x, float *out, int r) {
    const int C = w->cols;
    const ct_dtype dt = w->dtype;
    const void *p0 = ct_row_ptr(w, r), *p1 = ct_row_ptr(w, r + 1);
    const float *s0 = ct_row_sc(w, r), *s1 = ct_row_sc(w, r + 1);
    __m256 a0 = _mm256_setzero_ps(), b0 = a0, a1 = a0, b1 = a0;
    int k = 0;
    for (; k + 16 <= C; k += 16) {
        __m256 x0 = _mm256_loadu_ps(x + k), x1 = _mm256_loadu_ps(x + k + 8);
        a0 = _mm256_fmadd_ps(load8(p0, dt, k, s0), x0, a0);
        b0 = _mm256_fmadd_ps(load8(p0, dt, k + 8, s0), x1, b0);
        a1 = _mm256_fmadd_ps(load8(p1, dt, k, s1), x0, a1);
        b1 = _mm256_fmadd_ps(load8(p1, dt, k + 8, s1), x1, b1);
    }
    for (; k + 8 <= C; k += 8) {
        __m256 x0 = _mm256_loadu_ps(x + k);
        a0 = _mm256_fmadd_ps(load8(p0, dt, k, s0), x0, a0);
        a1 = _mm256_fmadd_ps(load8(p1, dt, k, s1), x0, a1);
    }
    float t0 = 0, t1 = 0;
    for (; k < C; k++) {
        t0 += wat(w, p0, s0, k) * x[k];
        t1 += wat(w, p1, s1, k) * x[k];
    }
    out[0] = hsum(_mm256_add_ps(a0, b0)) + t0;
    out[1] = hsum(_mm256_add_ps(a1, b1)) + t1;
}

#define RCHUNK 64

void ct_matmul_rows_avx2(const ct_mat *w, const float *bias, const float *x, float *y, int n,
                         int r0, int r1) {
    if (ct_xq_active(w, n)) { /* the integer-dot mode has no AVX2 kernel: the reference computes it */
        ct_matmul_rows_scalar(w, bias, x, y, n, r0, r1);
        return;
    }
    const int R = w->rows, C = w->cols;
    float o[8];
    if (n == 1) {
        int r = r0;
        for (; r + 2 <= r1; r += 2) {
            rows2_tok1(w, x, o, r);
            y[r] = ct_post_scale(w, r) * o[0] + (bias ? bias[r] : 0.0f);
            y[r + 1] = ct_post_scale(w, r + 1) * o[1] + (bias ? bias[r + 1] : 0.0f);
        }
        for (; r < r1; r++) {
            row_tok4(w, x, 1, o, r);
            y[r] = ct_post_scale(w, r) * o[0] + (bias ? bias[r] : 0.0f);
        }
        return;
    }
    for (int rc = r0; rc < r1; rc += RCHUNK) {
        const int rce = rc + RCHUNK < r1 ? rc + RCHUNK : r1;
        for (int t = 0; t < n; t += 4) {
            const int nt = n - t < 4 ? n - t : 4;
            const float *xt = x + (size_t)t * C;
            float *yt = y + (size_t)t * R;
            /* row_tok4 does per token exactly what the one-token path does (batch == solo) */
            for (int r = rc; r < rce; r++) {
                row_tok4(w, xt, nt, o, r);
                for (int j = 0; j < nt; j++)
                    yt[(size_t)j * R + r] = ct_post_scale(w, r) * o[j] + (bias ? bias[r] : 0.0f);
            }
        }
    }
}
