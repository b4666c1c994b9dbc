/* NEON attention for one KV head (kernels/attn.h): dot products and the weighted sum of V in
   4-lane FMAs with a scalar column tail, the query heads of the group sharing each K/V row
   load; the softmax is ct_softmax, as in the reference. */
#include <arm_neon.h>
#include <math.h>

#include "kernels/attn.h"
#include "kernels/ops.h"

#define GMAX 8

void ct_attend_head_neon(const float *K, const float *V, int hd, const float *q, float *out,
                         int n_pos, int group, float *scores) {
    const float scale = 1.0f / sqrtf((float)hd);
    const int h4 = hd / 4 * 4;
    for (int g0 = 0; g0 < group; g0 += GMAX) {
        const int ng = group - g0 < GMAX ? group - g0 : GMAX;
        float *sc[GMAX];
        for (int g = 0; g < ng; g++) sc[g] = scores + (size_t)g * n_pos;
        for (int t = 0; t < n_pos; t++) {
            const float *kt = K + (size_t)t * hd;
            float32x4_t acc[GMAX];
            for (int g = 0; g < ng; g++) acc[g] = vdupq_n_f32(0.0f);
            for (int i = 0; i < h4; i += 4) {
                const float32x4_t kv = vld1q_f32(kt + i);
                for (int g = 0; g < ng; g++) acc[g] = vfmaq_f32(acc[g], vld1q_f32(q + (size_t)(g0 + g) * hd + i), kv);
            }
            for (int g = 0; g < ng; g++) {
                float d = vaddvq_f32(acc[g]);
                for (int i = h4; i < hd; i++) d += q[(size_t)(g0 + g) * hd + i] * kt[i];
                sc[g][t] = d * scale;
            }
        }
        for (int g = 0; g < ng; g++) ct_softmax(sc[g], n_pos);
        for (int i = 0; i < h4; i += 4) {
            float32x4_t o[GMAX];
            for (int g = 0; g < ng; g++) o[g] = vdupq_n_f32(0.0f);
            for (int t = 0; t < n_pos; t++) {
                const float32x4_t vv = vld1q_f32(V + (size_t)t * hd + i);
                for (int g = 0; g < ng; g++) o[g] = vfmaq_n_f32(o[g], vv, sc[g][t]);
            }
            for (int g = 0; g < ng; g++) vst1q_f32(out + (size_t)(g0 + g) * hd + i, o[g]);
        }
        for (int i = h4; i < hd; i++)
            for (int g = 0; g < ng; g++) {
                float o = 0.0f;
                for (int t = 0; t < n_pos; t++) o += sc[g][t] * V[(size_t)t * hd + i];
                out[(size_t)(g0 + g) * hd + i] = o;
            }
    }
}
