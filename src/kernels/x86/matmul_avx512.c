/* AVX-512 matmul rows over BF16/F16/F32 weights with f32 activations and f32 accumulation
   (weights are widened in registers; memory traffic stays at the stored width). */
#include <immintrin.h>
#include <stdint.h>

#include "kernels/cpu.h"

/* 16 weights of row w (dtype) at column k as f32, masked for the tail. */
static inline __m512 load16(const void *w, ct_dtype dt, int k, __mmask16 m) {
    if (dt == CT_DT_BF16) {
        __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)w + k);
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
    if (dt == CT_DT_F16) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)w + k));
    return _mm512_maskz_loadu_ps(m, (const float *)w + k);
}

static inline const void *row_ptr(const ct_mat *w, int r) {
    size_t es = w->dtype == CT_DT_F32 ? 4 : 2;
    return (const char *)w->data + (size_t)r * (size_t)w->cols * es;
}

#ifndef PF
#define PF 256 /* elements ahead to prefetch (measured best of 128..2048) */
#endif

/* 4 rows x 1 token. */
static void rows4_tok1(const ct_mat *w, const float *x, float *out4, int r) {
    const int C = w->cols;
    const void *p0 = row_ptr(w, r), *p1 = row_ptr(w, r + 1), *p2 = row_ptr(w, r + 2),
               *p3 = row_ptr(w, r + 3);
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    __m512 b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    int k = 0;
    const int es = w->dtype == CT_DT_F32 ? 4 : 2;
    for (; k + 32 <= C; k += 32) {
        _mm_prefetch((const char *)p0 + (size_t)(k + PF) * es, _MM_HINT_T0);
        _mm_prefetch((const char *)p1 + (size_t)(k + PF) * es, _MM_HINT_T0);
        _mm_prefetch((const char *)p2 + (size_t)(k + PF) * es, _MM_HINT_T0);
        _mm_prefetch((const char *)p3 + (size_t)(k + PF) * es, _MM_HINT_T0);
        __m512 x0 = _mm512_loadu_ps(x + k), x1 = _mm512_loadu_ps(x + k + 16);
        a0 = _mm512_fmadd_ps(load16(p0, w->dtype, k, 0xffff), x0, a0);
        b0 = _mm512_fmadd_ps(load16(p0, w->dtype, k + 16, 0xffff), x1, b0);
        a1 = _mm512_fmadd_ps(load16(p1, w->dtype, k, 0xffff), x0, a1);
        b1 = _mm512_fmadd_ps(load16(p1, w->dtype, k + 16, 0xffff), x1, b1);
        a2 = _mm512_fmadd_ps(load16(p2, w->dtype, k, 0xffff), x0, a2);
        b2 = _mm512_fmadd_ps(load16(p2, w->dtype, k + 16, 0xffff), x1, b2);
        a3 = _mm512_fmadd_ps(load16(p3, w->dtype, k, 0xffff), x0, a3);
        b3 = _mm512_fmadd_ps(load16(p3, w->dtype, k + 16, 0xffff), x1, b3);
    }
    for (; k < C; k += 16) {
        __mmask16 m = C - k >= 16 ? 0xffff : (__mmask16)((1u << (C - k)) - 1);
        __m512 x0 = _mm512_maskz_loadu_ps(m, x + k);
        a0 = _mm512_fmadd_ps(load16(p0, w->dtype, k, m), x0, a0);
        a1 = _mm512_fmadd_ps(load16(p1, w->dtype, k, m), x0, a1);
        a2 = _mm512_fmadd_ps(load16(p2, w->dtype, k, m), x0, a2);
        a3 = _mm512_fmadd_ps(load16(p3, w->dtype, k, m), x0, a3);
    }
    out4[0] = _mm512_reduce_add_ps(_mm512_add_ps(a0, b0));
    out4[1] = _mm512_reduce_add_ps(_mm512_add_ps(a1, b1));
    out4[2] = _mm512_reduce_add_ps(_mm512_add_ps(a2, b2));
    out4[3] = _mm512_reduce_add_ps(_mm512_add_ps(a3, b3));
}

/* 1 row x up to 4 tokens (nt in 1..4). */
static void row1_tok4(const ct_mat *w, const float *x, int nt, float *out, int r) {
    const int C = w->cols;
    const void *p = row_ptr(w, r);
    const float *x0 = x, *x1 = x + (nt > 1 ? C : 0), *x2 = x + (nt > 2 ? 2 * C : 0),
                *x3 = x + (nt > 3 ? 3 * C : 0);
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int k = 0; k < C; k += 16) {
        __mmask16 m = C - k >= 16 ? 0xffff : (__mmask16)((1u << (C - k)) - 1);
        __m512 wv = load16(p, w->dtype, k, m);
        a0 = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(m, x0 + k), a0);
        a1 = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(m, x1 + k), a1);
        a2 = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(m, x2 + k), a2);
        a3 = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(m, x3 + k), a3);
    }
    out[0] = _mm512_reduce_add_ps(a0);
    out[1] = _mm512_reduce_add_ps(a1);
    out[2] = _mm512_reduce_add_ps(a2);
    out[3] = _mm512_reduce_add_ps(a3);
}

void ct_matmul_rows_avx512(const ct_mat *w, const float *bias, const float *x, float *y, int n,
                           int r0, int r1) {
    const int R = w->rows, C = w->cols;
    if (n == 1) {
        int r = r0;
        float o[4];
        for (; r + 4 <= r1; r += 4) {
            rows4_tok1(w, x, o, r);
            for (int j = 0; j < 4; j++) y[r + j] = o[j] + (bias ? bias[r + j] : 0.0f);
        }
        for (; r < r1; r++) {
            row1_tok4(w, x, 1, o, r);
            y[r] = o[0] + (bias ? bias[r] : 0.0f);
        }
        return;
    }
    for (int r = r0; r < r1; r++) {
        float b = bias ? bias[r] : 0.0f, o[4];
        for (int t = 0; t < n; t += 4) {
            int nt = n - t < 4 ? n - t : 4;
            row1_tok4(w, x + (size_t)t * C, nt, o, r);
            for (int j = 0; j < nt; j++) y[(size_t)(t + j) * R + r] = o[j] + b;
        }
    }
}
