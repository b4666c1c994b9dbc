/* AVX-512 attention for one KV head (kernels/attn.h): the dot products and the weighted sum
   of V in 16-lane FMAs (masked tails), every query head of the group sharing each K/V row
   load; the softmax is ct_softmax, as in the reference. */
#include <immintrin.h>
#include <math.h>

#include "kernels/attn.h"
#include "kernels/ops.h"

#define GMAX 8 /* query heads per KV head handled in one pass */

void ct_attend_head_avx512(const float *K, const float *V, int hd, const float *q, float *out,
                           int n_pos, int group, float *scores) {
    const float scale = 1.0f / sqrtf((float)hd);
    for (int g0 = 0; g0 < group; g0 += GMAX) {
        const int ng = group - g0 < GMAX ? group - g0 : GMAX;
        float *sc[GMAX];
        for (int g = 0; g < ng; g++) sc[g] = scores + (size_t)g * n_pos;
        /* scores of all ng heads, one K row at a time */
        for (int t = 0; t < n_pos; t++) {
            const float *kt = K + (size_t)t * hd;
            __m512 acc[GMAX];
            for (int g = 0; g < ng; g++) acc[g] = _mm512_setzero_ps();
            for (int i = 0; i < hd; i += 16) {
                const __mmask16 m = hd - i >= 16 ? 0xffff : (__mmask16)((1u << (hd - i)) - 1);
                const __m512 kv = _mm512_maskz_loadu_ps(m, kt + i);
                for (int g = 0; g < ng; g++)
                    acc[g] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + (size_t)(g0 + g) * hd + i), kv, acc[g]);
            }
            for (int g = 0; g < ng; g++) sc[g][t] = _mm512_reduce_add_ps(acc[g]) * scale;
        }
        for (int g = 0; g < ng; g++) ct_softmax(sc[g], n_pos);
        /* weighted sums, one V row at a time, 16 columns per register */
        for (int i = 0; i < hd; i += 16) {
            const __mmask16 m = hd - i >= 16 ? 0xffff : (__mmask16)((1u << (hd - i)) - 1);
            __m512 o[GMAX];
            for (int g = 0; g < ng; g++) o[g] = _mm512_setzero_ps();
            for (int t = 0; t < n_pos; t++) {
                const __m512 vv = _mm512_maskz_loadu_ps(m, V + (size_t)t * hd + i);
                for (int g = 0; g < ng; g++) o[g] = _mm512_fmadd_ps(_mm512_set1_ps(sc[g][t]), vv, o[g]);
            }
            for (int g = 0; g < ng; g++) _mm512_mask_storeu_ps(out + (size_t)(g0 + g) * hd + i, m, o[g]);
        }
    }
}
