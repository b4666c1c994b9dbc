/* Reference attention for one KV head: the query heads grouped on it attend over cache
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
