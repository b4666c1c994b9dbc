/* AVX2+FMA+F16C matmul rows over BF16/F16/F32 weights, f32 activations and accumulation. */
#include <immintrin.h>
#include <stdint.h>

#include "kernels/cpu.h"
#include "kernels/ops.h"

static inline __m256 load8(const void *w, ct_dtype dt, int k) {
    if (dt == CT_DT_BF16) {
        __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)w + k));
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
    if (dt == CT_DT_F16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)w + k)));
    return _mm256_loadu_ps((const float *)w + k);
}

static inline float hsum(__m256 v) {
    __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
    lo = _mm_add_ps(lo, hi);
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
    return _mm_cvtss_f32(lo);
}

static inline float wat(const void *w, ct_dtype dt, int k) {
    if (dt == CT_DT_BF16) return ct_bf16_to_f32(((const uint16_t *)w)[k]);
    if (dt == CT_DT_F16) return ct_f16_to_f32(((const uint16_t *)w)[k]);
    return ((const float *)w)[k];
}

static inline const void *row_ptr(const ct_mat *w, int r) {
    size_t es = w->dtype == CT_DT_F32 ? 4 : 2;
    return (const char *)w->data + (size_t)r * (size_t)w->cols * es;
}

/* 1 row x up to 4 tokens. */
static void row_tok4(const ct_mat *w, const float *x, int nt, float *out, int r) {
    const int C = w->cols;
    const void *p = row_ptr(w, r);
    const float *xs[4];
    for (int j = 0; j < 4; j++) xs[j] = x + (size_t)(j < nt ? j : 0) * C;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int k = 0;
    for (; k + 8 <= C; k += 8) {
        __m256 wv = load8(p, w->dtype, k);
        a0 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(xs[0] + k), a0);
        a1 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(xs[1] + k), a1);
        a2 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(xs[2] + k), a2);
        a3 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(xs[3] + k), a3);
    }
    float t0 = 0, t1 = 0, t2 = 0, t3 = 0;
    for (; k < C; k++) {
        float wv = wat(p, w->dtype, k);
        t0 += wv * xs[0][k];
        t1 += wv * xs[1][k];
        t2 += wv * xs[2][k];
        t3 += wv * xs[3][k];
    }
    out[0] = hsum(a0) + t0;
    out[1] = hsum(a1) + t1;
    out[2] = hsum(a2) + t2;
    out[3] = hsum(a3) + t3;
}

/* 2 rows x 1 token with two accumulators per row. */
static void rows2_tok1(const ct_mat *w, const float *x, float *out, int r) {
    const int C = w->cols;
    const void *p0 = row_ptr(w, r), *p1 = row_ptr(w, r + 1);
    __m256 a0 = _mm256_setzero_ps(), b0 = a0, a1 = a0, b1 = a0;
    int k = 0;
    for (; k + 16 <= C; k += 16) {
        __m256 x0 = _mm256_loadu_ps(x + k), x1 = _mm256_loadu_ps(x + k + 8);
        a0 = _mm256_fmadd_ps(load8(p0, w->dtype, k), x0, a0);
        b0 = _mm256_fmadd_ps(load8(p0, w->dtype, k + 8), x1, b0);
        a1 = _mm256_fmadd_ps(load8(p1, w->dtype, k), x0, a1);
        b1 = _mm256_fmadd_ps(load8(p1, w->dtype, k + 8), x1, b1);
    }
    for (; k + 8 <= C; k += 8) {
        __m256 x0 = _mm256_loadu_ps(x + k);
        a0 = _mm256_fmadd_ps(load8(p0, w->dtype, k), x0, a0);
        a1 = _mm256_fmadd_ps(load8(p1, w->dtype, k), x0, a1);
    }
    float t0 = 0, t1 = 0;
    for (; k < C; k++) {
        t0 += wat(p0, w->dtype, k) * x[k];
        t1 += wat(p1, w->dtype, k) * x[k];
    }
    out[0] = hsum(_mm256_add_ps(a0, b0)) + t0;
    out[1] = hsum(_mm256_add_ps(a1, b1)) + t1;
}

void ct_matmul_rows_avx2(const ct_mat *w, const float *bias, const float *x, float *y, int n,
                         int r0, int r1) {
    const int R = w->rows, C = w->cols;
    float o[4];
    if (n == 1) {
        int r = r0;
        for (; r + 2 <= r1; r += 2) {
            rows2_tok1(w, x, o, r);
            y[r] = o[0] + (bias ? bias[r] : 0.0f);
            y[r + 1] = o[1] + (bias ? bias[r + 1] : 0.0f);
        }
        for (; r < r1; r++) {
            row_tok4(w, x, 1, o, r);
            y[r] = o[0] + (bias ? bias[r] : 0.0f);
        }
        return;
    }
    for (int r = r0; r < r1; r++) {
        float b = bias ? bias[r] : 0.0f;
        for (int t = 0; t < n; t += 4) {
            int nt = n - t < 4 ? n - t : 4;
            row_tok4(w, x + (size_t)t * C, nt, o, r);
            for (int j = 0; j < nt; j++) y[(size_t)(t + j) * R + r] = o[j] + b;
        }
    }
}
