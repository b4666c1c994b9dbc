/* AVX-512 primitives of the shared attention driver (kernels/attn.h): dot products and the
   weighted sum of V in 16-lane FMAs with masked tails, every query head of the pass sharing
   each K/V row load. */
#include <immintrin.h>

#include "kernels/attn.h"

static inline __mmask16 tail_mask(int left) { return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1); }

static void scores512(const float *K, int hd, const float *q, int ng, int n_pos, float scale, float *sc) {
    for (int t = 0; t < n_pos; t++) {
        const float *kt = K + (size_t)t * hd;
        __m512 acc[CT_ATTN_GMAX];
        for (int g = 0; g < ng; g++) acc[g] = _mm512_setzero_ps();
        for (int i = 0; i < hd; i += 16) {
            const __mmask16 m = tail_mask(hd - i);
            const __m512 kv = _mm512_maskz_loadu_ps(m, kt + i);
            for (int g = 0; g < ng; g++)
                acc[g] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + (size_t)g * hd + i), kv, acc[g]);
        }
        for (int g = 0; g < ng; g++) sc[(size_t)g * n_pos + t] = _mm512_reduce_add_ps(acc[g]) * scale;
    }
}

static void wsum512(const float *V, int hd, const float *sc, int ng, int n_pos, float *out) {
    for (int i = 0; i < hd; i += 16) {
        const __mmask16 m = tail_mask(hd - i);
        __m512 o[CT_ATTN_GMAX];
        for (int g = 0; g < ng; g++) o[g] = _mm512_setzero_ps();
        for (int t = 0; t < n_pos; t++) {
            const __m512 vv = _mm512_maskz_loadu_ps(m, V + (size_t)t * hd + i);
            for (int g = 0; g < ng; g++) o[g] = _mm512_fmadd_ps(_mm512_set1_ps(sc[(size_t)g * n_pos + t]), vv, o[g]);
        }
        for (int g = 0; g < ng; g++) _mm512_mask_storeu_ps(out + (size_t)g * hd + i, m, o[g]);
    }
}

void ct_attend_head_avx512(const float *K, const float *V, int hd, const float *q, float *out,
                           int n_pos, int group, float *scores) {
    static const ct_attn_prims p = {scores512, wsum512};
    ct_attend_head_prims(&p, K, V, hd, q, out, n_pos, group, scores);
}
