/* NEON primitives of the shared attention driver (kernels/attn.h): 4-lane FMAs, every query
   head of the pass sharing each K/V row load, columns past the last multiple of 4 in the
   driver's scalar tails. */
#include <arm_neon.h>

#include "kernels/attn.h"

static void scores128(const float *K, int hd, const float *q, int ng, int n_pos, float scale, float *sc) {
    const int h4 = hd / 4 * 4;
    for (int t = 0; t < n_pos; t++) {
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

static void wsum128(const float *V, int hd, const float *sc, int ng, int n_pos, float *out) {
    const int h4 = hd / 4 * 4;
    for (int i = 0; i < h4; i += 4) {
        float32x4_t o[CT_ATTN_GMAX];
        for (int g = 0; g < ng; g++) o[g] = vdupq_n_f32(0.0f);
        for (int t = 0; t < n_pos; t++) {
            const float32x4_t vv = vld1q_f32(V + (size_t)t * hd + i);
            for (int g = 0; g < ng; g++) o[g] = vfmaq_n_f32(o[g], vv, sc[(size_t)g * n_pos + t]);
        }
        for (int g = 0; g < ng; g++) vst1q_f32(out + (size_t)g * hd + i, o[g]);
    }
    ct_attn_tail_wsum(V, hd, sc, ng, n_pos, h4, out);
}

void ct_attend_head_neon(const float *K, const float *V, int hd, const float *q, float *out,
                         int n_pos, int group, float *scores) {
    static const ct_attn_prims p = {scores128, wsum128};
    ct_attend_head_prims(&p, K, V, hd, q, out, n_pos, group, scores);
}
