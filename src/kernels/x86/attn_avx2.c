/* AVX2 primitives of the shared attention driver (kernels/attn.h): 8-lane FMAs, columns past
   the last multiple of 8 in the driver's scalar tails. Scores take several positions per pass
   (positions x query heads <= 8 dot products, reduced together in hsum8's order); the
   weighted sum keeps up to 12 vectors of a V row x heads in accumulators per position. Both
   sum in the same order as one position and one 8-column block at a time. */
#include <immintrin.h>

#include "kernels/attn.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

/* Eight horizontal sums at once in hsum8's order ((x_j + x_j+4), then + 2, + 1 lanes apart):
   lane 4 b + m of the result is the sum of a[2 m + b]. */
ALWAYS_INLINE __m256 reduce8(const __m256 *a) {
    __m256 c[4], d[2];
    for (int k = 0; k < 4; k++)
        c[k] = _mm256_add_ps(_mm256_permute2f128_ps(a[2 * k], a[2 * k + 1], 0x20),
                             _mm256_permute2f128_ps(a[2 * k], a[2 * k + 1], 0x31));
    for (int k = 0; k < 2; k++)
        d[k] = _mm256_add_ps(
            _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(c[2 * k]), _mm256_castps_pd(c[2 * k + 1]))),
            _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(c[2 * k]), _mm256_castps_pd(c[2 * k + 1]))));
    return _mm256_add_ps(_mm256_shuffle_ps(d[0], d[1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm256_shuffle_ps(d[0], d[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

/* Scores of positions t .. t + 8 / NG - 1 for NG heads. */
ALWAYS_INLINE void scores_blk(const float *K, int hd, const float *q, int n_pos, int t, float scale, float *sc,
                              const int NG) {
    const int P = 8 / NG, h8 = hd / 8 * 8;
    __m256 acc[8];
    for (int s = 0; s < 8; s++) acc[s] = _mm256_setzero_ps();
    for (int i = 0; i < h8; i += 8)
        for (int p = 0; p < P; p++) {
            const __m256 kv = _mm256_loadu_ps(K + (size_t)(t + p) * hd + i);
            for (int g = 0; g < NG; g++)
                acc[p * NG + g] = _mm256_fmadd_ps(_mm256_loadu_ps(q + (size_t)g * hd + i), kv, acc[p * NG + g]);
        }
    float r[8];
    _mm256_storeu_ps(r, reduce8(acc));
    for (int p = 0; p < P; p++)
        for (int g = 0; g < NG; g++) {
            const int s = p * NG + g; /* accumulator s sits in lane 4 (s % 2) + s / 2 */
            sc[(size_t)g * n_pos + t + p] =
                ct_attn_tail_dot(q + (size_t)g * hd, K + (size_t)(t + p) * hd, h8, hd, r[4 * (s % 2) + s / 2]) * scale;
        }
}

CT_ATTN_SCORES_RUN(8)

static void scores256(const float *K, int hd, const float *q, int ng, int n_pos, float scale, float *sc) {
    const int h8 = hd / 8 * 8;
    int t = 0;
    CT_ATTN_BY_NG(ng, scores_run, K, hd, q, n_pos, scale, sc, &t)
    for (; t < n_pos; t++) { /* the last positions (or more than 4 heads) one at a time */
        ct_attn_prefetch(K, hd, t, 1, n_pos);
        const float *kt = K + (size_t)t * hd;
        __m256 acc[CT_ATTN_GMAX];
        for (int g = 0; g < ng; g++) acc[g] = _mm256_setzero_ps();
        for (int i = 0; i < h8; i += 8) {
            const __m256 kv = _mm256_loadu_ps(kt + i);
            for (int g = 0; g < ng; g++) acc[g] = _mm256_fmadd_ps(_mm256_loadu_ps(q + (size_t)g * hd + i), kv, acc[g]);
        }
        for (int g = 0; g < ng; g++)
            sc[(size_t)g * n_pos + t] = ct_attn_tail_dot(q + (size_t)g * hd, kt, h8, hd, hsum8(acc[g])) * scale;
    }
}

/* Columns [i0, i0 + 8 nb) of out (nb <= NB) for NG heads: per position one load per 8
   columns and NG FMAs into nb x NG accumulators. */
ALWAYS_INLINE void wsum_blk(const float *V, int hd, const float *sc, int n_pos, float *out, int i0, int nb,
                            const int NG, const int NB) {
    __m256 o[12];
    for (int s = 0; s < NB * NG; s++) o[s] = _mm256_setzero_ps();
    for (int t = 0; t < n_pos; t++) {
        if (i0 == 0) ct_attn_prefetch(V, hd, t, 1, n_pos);
        __m256 w[8];
        for (int g = 0; g < NG; g++) w[g] = _mm256_broadcast_ss(sc + (size_t)g * n_pos + t);
        for (int b = 0; b < NB; b++) {
            if (b >= nb) break;
            const __m256 vv = _mm256_loadu_ps(V + (size_t)t * hd + i0 + 8 * b);
            for (int g = 0; g < NG; g++) o[b * NG + g] = _mm256_fmadd_ps(w[g], vv, o[b * NG + g]);
        }
    }
    for (int b = 0; b < nb; b++)
        for (int g = 0; g < NG; g++) _mm256_storeu_ps(out + (size_t)g * hd + i0 + 8 * b, o[b * NG + g]);
}

/* The weighted sum: min(8, 12 / NG) blocks of 8 columns per pass. */
CT_ATTN_WSUM_PASSES(wsum256, 8, 12, 8, wsum_blk)

void ct_attend_head_avx2(const float *K, const float *V, int hd, const float *q, float *out,
                         int n_pos, int group, float *scores) {
    static const ct_attn_prims p = {scores256, wsum256};
    ct_attend_head_prims(&p, K, V, hd, q, out, n_pos, group, scores);
}
