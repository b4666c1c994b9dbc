/* AVX-512 helpers shared by the matmul variants and the attention scores: the fixed 16-way
   reduction of a 4 rows x 4 tokens block of accumulators and its store with the row scale and
   bias, and a 16 x 16 dword transpose. Include only from files compiled with AVX-512 F/DQ enabled. */
#ifndef CT_SIMD512_H
#define CT_SIMD512_H

#include <immintrin.h>

#include "kernels/matrow.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* Horizontal sums of v[0..15] (v[4*row + tok]) by a fixed shuffle tree, each in the order of
   _mm512_reduce_add_ps (lanes j + 8, then + 4, + 2, + 1 apart); returns a vector whose element
   4*tok + row is sum(v[4*row + tok]), i.e. 128-bit lane tok holds rows 0..3. */
ALWAYS_INLINE __m512 ct_reduce16(const __m512 *v) {
    __m512 s[8], u[4], q[2];
    for (int i = 0; i < 8; i++)
        s[i] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    for (int i = 0; i < 4; i++)
        u[i] = _mm512_add_ps(_mm512_shuffle_f32x4(s[2 * i], s[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_f32x4(s[2 * i], s[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    for (int i = 0; i < 2; i++)
        q[i] = _mm512_add_ps(_mm512_shuffle_ps(u[2 * i], u[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(u[2 * i], u[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    return _mm512_add_ps(_mm512_shuffle_ps(q[0], q[1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_ps(q[0], q[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

/* 16 x 16 dword transpose: in a[r] = row r's 16 dwords, out a[j] = dword j of
 * rows 0..15. */
ALWAYS_INLINE void ct_tr16x16(__m512i *a) {
    __m512i t[16], u[16];
    for (int r = 0; r < 16; r += 2) {
        t[r] = _mm512_unpacklo_epi32(a[r], a[r + 1]);
        t[r + 1] = _mm512_unpackhi_epi32(a[r], a[r + 1]);
    }
    for (int q = 0; q < 16; q += 4) { /* u[q + c] block B: rows q..q+3 of dword 4 B + c */
        u[q] = _mm512_unpacklo_epi64(t[q], t[q + 2]);
        u[q + 1] = _mm512_unpackhi_epi64(t[q], t[q + 2]);
        u[q + 2] = _mm512_unpacklo_epi64(t[q + 1], t[q + 3]);
        u[q + 3] = _mm512_unpackhi_epi64(t[q + 1], t[q + 3]);
    }
    for (int c = 0; c < 4; c++) {
        const __m512i x0 = _mm512_shuffle_i32x4(u[c], u[4 + c], _MM_SHUFFLE(1, 0, 1, 0));
        const __m512i x1 = _mm512_shuffle_i32x4(u[c], u[4 + c], _MM_SHUFFLE(3, 2, 3, 2));
        const __m512i x2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], _MM_SHUFFLE(1, 0, 1, 0));
        const __m512i x3 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], _MM_SHUFFLE(3, 2, 3, 2));
        a[c] = _mm512_shuffle_i32x4(x0, x2, _MM_SHUFFLE(2, 0, 2, 0));
        a[4 + c] = _mm512_shuffle_i32x4(x0, x2, _MM_SHUFFLE(3, 1, 3, 1));
        a[8 + c] = _mm512_shuffle_i32x4(x1, x3, _MM_SHUFFLE(2, 0, 2, 0));
        a[12 + c] = _mm512_shuffle_i32x4(x1, x3, _MM_SHUFFLE(3, 1, 3, 1));
    }
}

/* Writes the reduced 4x4 block (lane tok = rows r..r+3) to y for the first nr rows and nt
   tokens. */
static inline void ct_store_block(const ct_mat *w, const float *bias, __m512 red, float *y, int R,
                               int r, int nr, int nt) {
    float o[16];
    _mm512_storeu_ps(o, red);
    float sc[4], b[4];
    for (int i = 0; i < nr; i++) {
        sc[i] = ct_post_scale(w, r + i);
        b[i] = bias ? bias[r + i] : 0.0f;
    }
    for (int t = 0; t < nt; t++)
        for (int i = 0; i < nr; i++) {
            const float v = sc[i] * o[4 * t + i]; /* two roundings, as xq_store_pan (no contraction) */
            y[(size_t)t * R + r + i] = v + b[i];
        }
}

#endif
