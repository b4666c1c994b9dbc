/* Reference attention for one KV head, and the driver the SIMD variants share: the query heads grouped on it attend over cache
   positions 0..n_pos-1 (scaled dot products, softmax in f32, weighted sum of V). */
#include <math.h>
#include <string.h>

#include "kernels/attn.h"
#include "kernels/ops.h"

void ct_attend_head_scalar(const float *K, const float *V, int hd, const float *q, float *out,
                           int n_pos, int group, float *scores) {
    const float scale = 1.0f / sqrtf((float)hd);
    for (int g = 0; g < group; g++) {
        const float *qh = q + (size_t)g * hd;
        float *oh = out + (size_t)g * hd;
        for (int t = 0; t < n_pos; t++) {
            const float *kt = K + (size_t)t * hd;
            float d = 0.0f;
            for (int i = 0; i < hd; i++) d += qh[i] * kt[i];
            scores[t] = d * scale;
        }
        ct_softmax(scores, n_pos);
        memset(oh, 0, (size_t)hd * sizeof(float));
        for (int t = 0; t < n_pos; t++) {
            const float *vt = V + (size_t)t * hd;
            const float p = scores[t];
            for (int i = 0; i < hd; i++) oh[i] += p * vt[i];
        }
    }
}

void ct_attend_head_prims(const ct_attn_prims *p, const float *K, const float *V, int hd, const float *q,
                          float *out, int n_pos, int group, float *scores) {
    const float scale = 1.0f / sqrtf((float)hd);
    for (int g0 = 0; g0 < group; g0 += CT_ATTN_GMAX) {
        const int ng = group - g0 < CT_ATTN_GMAX ? group - g0 : CT_ATTN_GMAX;
        p->scores(K, hd, q + (size_t)g0 * hd, ng, n_pos, scale, scores);
        for (int g = 0; g < ng; g++) ct_softmax(scores + (size_t)g * n_pos, n_pos);
        p->wsum(V, hd, scores, ng, n_pos, out + (size_t)g0 * hd);
    }
}

float ct_attn_tail_dot(const float *qg, const float *kt, int c0, int hd, float d) {
    for (int i = c0; i < hd; i++) d += qg[i] * kt[i];
    return d;
}

void ct_attn_tail_wsum(const float *V, int hd, const float *sc, int ng, int n_pos, int c0, float *out) {
    for (int i = c0; i < hd; i++)
        for (int g = 0; g < ng; g++) {
            float o = 0.0f;
            for (int t = 0; t < n_pos; t++) o += sc[(size_t)g * n_pos + t] * V[(size_t)t * hd + i];
            out[(size_t)g * hd + i] = o;
        }
}
