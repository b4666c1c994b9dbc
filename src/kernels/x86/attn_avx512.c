/* AVX-512 primitives of the shared attention driver (kernels/attn.h): 16-lane FMAs with masked
   tails. Scores take several positions per pass (positions x query heads <= 16 independent
   dot products reduced together by ct_reduce16, whose tree adds the lanes in the order of
   _mm512_reduce_add_ps); the weighted sum keeps a whole row of V (up to 16 vectors x heads) in accumulators
   per position. Both sum in the same order as one position and one 16-column block at a
   time would, so the results do not depend on the blocking. */
#include <immintrin.h>

#include "kernels/attn.h"
#include "kernels/x86/simd512.h"

static inline __mmask16 tail_mask(int left) { return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1); }

/* Scores of positions t .. t + 16 / NG - 1 for NG heads. */
ALWAYS_INLINE void scores_blk(const float *K, int hd, const float *q, int n_pos, int t, float scale, float *sc,
                              const int NG) {
    const int P = 16 / NG;
    __m512 acc[16];
    for (int s = 0; s < 16; s++) acc[s] = _mm512_setzero_ps();
    for (int i = 0; i < hd; i += 16) {
        const __mmask16 m = tail_mask(hd - i);
        for (int p = 0; p < P; p++) {
            const __m512 kv = _mm512_maskz_loadu_ps(m, K + (size_t)(t + p) * hd + i);
            for (int g = 0; g < NG; g++)
                acc[p * NG + g] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + (size_t)g * hd + i), kv, acc[p * NG + g]);
        }
    }
    float r[16];
    _mm512_storeu_ps(r, _mm512_mul_ps(ct_reduce16(acc), _mm512_set1_ps(scale)));
    for (int p = 0; p < P; p++)
        for (int g = 0; g < NG; g++) {
            const int s = p * NG + g; /* accumulator s sits in lane 4 (s % 4) + s / 4 */
            sc[(size_t)g * n_pos + t + p] = r[4 * (s % 4) + s / 4];
        }
}

CT_ATTN_SCORES_RUN(16)

static void scores512(const float *K, int hd, const float *q, int ng, int n_pos, float scale, float *sc) {
    int t = 0;
    CT_ATTN_BY_NG(ng, scores_run, K, hd, q, n_pos, scale, sc, &t)
    for (; t < n_pos; t++) { /* the last positions one at a time */
        ct_attn_prefetch(K, hd, t, 1, n_pos);
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

/* Columns [i0, i0 + 16 NB) (clipped to hd) of out for NG heads: per position one load per
   16 columns and NG FMAs into NB x NG accumulators. */
ALWAYS_INLINE void wsum_blk(const float *V, int hd, const float *sc, int n_pos, float *out, int i0, const int NG,
                            const int NB) {
    __m512 o[16];
    __mmask16 m[8];
    for (int b = 0; b < NB; b++) m[b] = i0 + 16 * b < hd ? tail_mask(hd - i0 - 16 * b) : 0;
    for (int s = 0; s < NB * NG; s++) o[s] = _mm512_setzero_ps();
    for (int t = 0; t < n_pos; t++) {
        if (i0 == 0) ct_attn_prefetch(V, hd, t, 1, n_pos);
        __m512 w[8];
        for (int g = 0; g < NG; g++) w[g] = _mm512_set1_ps(sc[(size_t)g * n_pos + t]);
        for (int b = 0; b < NB; b++) {
            const __m512 vv = _mm512_maskz_loadu_ps(m[b], V + (size_t)t * hd + i0 + 16 * b);
            for (int g = 0; g < NG; g++) o[b * NG + g] = _mm512_fmadd_ps(w[g], vv, o[b * NG + g]);
        }
    }
    for (int b = 0; b < NB; b++)
        for (int g = 0; g < NG; g++) _mm512_mask_storeu_ps(out + (size_t)g * hd + i0 + 16 * b, m[b], o[b * NG + g]);
}

/* All columns for NG heads, min(8, 16 / NG) blocks of 16 per pass (blocks past hd masked
   off). */
ALWAYS_INLINE void wsum_run(const float *V, int hd, const float *sc, int n_pos, float *out, const int NG) {
    const int NB = 16 / NG < 8 ? 16 / NG : 8;
    for (int i0 = 0; i0 < hd; i0 += 16 * NB) wsum_blk(V, hd, sc, n_pos, out, i0, NG, NB);
}

static void wsum512(const float *V, int hd, const float *sc, int ng, int n_pos, float *out) {
    CT_ATTN_BY_NG(ng, wsum_run, V, hd, sc, n_pos, out)
}

void ct_attend_head_avx512(const float *K, const float *V, int hd, const float *q, float *out,
                           int n_pos, int group, float *scores) {
    static const ct_attn_prims p = {scores512, wsum512};
    ct_attend_head_prims(&p, K, V, hd, q, out, n_pos, group, scores);
}
