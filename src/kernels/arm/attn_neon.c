/* NEON primitives of the shared attention driver (kernels/attn.h): 4-lane FMAs, columns past
   the last multiple of 4 in the driver's scalar tails. Scores take several positions per pass
   (positions x query heads <= 4 dot products, reduced together with pairwise adds in
   vaddvq_f32's order); the weighted sum keeps up to 24 vectors of a V row x heads in
   accumulators per position. Both sum in the same order as one position and one 4-column
   block at a time. */
#include <arm_neon.h>

#include "kernels/attn.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* Scores of positions t .. t + 4 / NG - 1 for NG heads: lane s of the pairwise tree is
   accumulator s = p NG + g, summed as (x0 + x1) + (x2 + x3) like vaddvq_f32. */
ALWAYS_INLINE void scores_blk(const float *K, int hd, const float *q, int n_pos, int t, float scale, float *sc,
                              const int NG) {
    const int P = 4 / NG, h4 = hd / 4 * 4;
    float32x4_t acc[4];
    for (int s = 0; s < 4; s++) acc[s] = vdupq_n_f32(0.0f);
    for (int i = 0; i < h4; i += 4)
        for (int p = 0; p < P; p++) {
            const float32x4_t kv = vld1q_f32(K + (size_t)(t + p) * hd + i);
            for (int g = 0; g < NG; g++) acc[p * NG + g] = vfmaq_f32(acc[p * NG + g], vld1q_f32(q + (size_t)g * hd + i), kv);
        }
    float r[4];
    vst1q_f32(r, vpaddq_f32(vpaddq_f32(acc[0], acc[1]), vpaddq_f32(acc[2], acc[3])));
    for (int p = 0; p < P; p++)
        for (int g = 0; g < NG; g++)
            sc[(size_t)g * n_pos + t + p] =
                ct_attn_tail_dot(q + (size_t)g * hd, K + (size_t)(t + p) * hd, h4, hd, r[p * NG + g]) * scale;
}

CT_ATTN_SCORES_RUN(4)

static void scores128(const float *K, int hd, const float *q, int ng, int n_pos, float scale, float *sc) {
    const int h4 = hd / 4 * 4;
    int t = 0;
    CT_ATTN_BY_NG(ng, scores_run, K, hd, q, n_pos, scale, sc, &t)
    for (; t < n_pos; t++) { /* the last positions (or more than 2 heads) one at a time */
        ct_attn_prefetch(K, hd, t, 1, n_pos);
        const float *kt = K + (size_t)t * hd;
        float32x4_t acc[CT_ATTN_GMAX];
        for (int g = 0; g < ng; g++) acc[g] = vdupq_n_f32(0.0f);
        for (int i = 0; i < h4; i += 4) {
            const float32x4_t kv = vld1q_f32(kt + i);
            for (int g = 0; g < ng; g++) acc[g] = vfmaq_f32(acc[g], vld1q_f32(q + (size_t)g * hd + i), kv);
        }
        for (int g = 0; g < ng; g++)
            sc[(size_t)g * n_pos + t] = ct_attn_tail_dot(q + (size_t)g * hd, kt, h4, hd, vaddvq_f32(acc[g])) * scale;
    }
}

/* Columns [i0, i0 + 4 nb) of out (nb <= NB) for NG heads: per position one load per 4
   columns and NG FMAs into nb x NG accumulators. */
ALWAYS_INLINE void wsum_blk(const float *V, int hd, const float *sc, int n_pos, float *out, int i0, int nb,
                            const int NG, const int NB) {
    float32x4_t o[24];
    for (int s = 0; s < NB * NG; s++) o[s] = vdupq_n_f32(0.0f);
    for (int t = 0; t < n_pos; t++) {
        if (i0 == 0) ct_attn_prefetch(V, hd, t, 1, n_pos);
        for (int b = 0; b < NB; b++) {
            if (b >= nb) break;
            const float32x4_t vv = vld1q_f32(V + (size_t)t * hd + i0 + 4 * b);
            for (int g = 0; g < NG; g++) o[b * NG + g] = vfmaq_n_f32(o[b * NG + g], vv, sc[(size_t)g * n_pos + t]);
        }
    }
    for (int b = 0; b < nb; b++)
        for (int g = 0; g < NG; g++) vst1q_f32(out + (size_t)g * hd + i0 + 4 * b, o[b * NG + g]);
}

/* The weighted sum: min(16, 24 / NG) blocks of 4 columns per pass. */
CT_ATTN_WSUM_PASSES(wsum128, 4, 24, 16, wsum_blk)

void ct_attend_head_neon(const float *K, const float *V, int hd, const float *q, float *out,
                         int n_pos, int group, float *scores) {
    static const ct_attn_prims p = {scores128, wsum128};
    ct_attend_head_prims(&p, K, V, hd, q, out, n_pos, group, scores);
}
