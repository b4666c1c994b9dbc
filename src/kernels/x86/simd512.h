/* AVX-512 helpers shared by the matmul variants and the attention scores: the fixed 16-way
   reduction of a 4 rows x 4 tokens block of accumulators and its store with the row scale and
   bias. Include only from files compiled with AVX-512 F/DQ enabled. */
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
