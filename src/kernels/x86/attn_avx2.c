/* AVX2 attention for one KV head (kernels/attn.h): as the AVX-512 variant with 8-lane FMAs
   and a scalar column tail; the softmax is ct_softmax, as in the reference. */
#include <immintrin.h>
#include <math.h>

#include "kernels/attn.h"
#include "kernels/ops.h"

#define GMAX 8

static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

void ct_attend_head_avx2(const float *K, const float *V, int hd, const float *q, float *out,
                         int n_pos, int group, float *scores) {
    const float scale = 1.0f / sqrtf((float)hd);
    const int h8 = hd / 8 * 8;
    for (int g0 = 0; g0 < group; g0 += GMAX) {
        const int ng = group - g0 < GMAX ? group - g0 : GMAX;
        float *sc[GMAX];
        for (int g = 0; g < ng; g++) sc[g] = scores + (size_t)g * n_pos;
        for (int t = 0; t < n_pos; t++) {
            const float *kt = K + (size_t)t * hd;
            __m256 acc[GMAX];
            for (int g = 0; g < ng; g++) acc[g] = _mm256_setzero_ps();
            for (int i = 0; i < h8; i += 8) {
                const __m256 kv = _mm256_loadu_ps(kt + i);
                for (int g = 0; g < ng; g++)
                    acc[g] = _mm256_fmadd_ps(_mm256_loadu_ps(q + (size_t)(g0 + g) * hd + i), kv, acc[g]);
            }
            for (int g = 0; g < ng; g++) {
                float d = hsum8(acc[g]);
                for (int i = h8; i < hd; i++) d += q[(size_t)(g0 + g) * hd + i] * kt[i];
                sc[g][t] = d * scale;
            }
        }
        for (int g = 0; g < ng; g++) ct_softmax(sc[g], n_pos);
        for (int i = 0; i < h8; i += 8) {
            __m256 o[GMAX];
            for (int g = 0; g < ng; g++) o[g] = _mm256_setzero_ps();
            for (int t = 0; t < n_pos; t++) {
                const __m256 vv = _mm256_loadu_ps(V + (size_t)t * hd + i);
                for (int g = 0; g < ng; g++) o[g] = _mm256_fmadd_ps(_mm256_set1_ps(sc[g][t]), vv, o[g]);
            }
            for (int g = 0; g < ng; g++) _mm256_storeu_ps(out + (size_t)(g0 + g) * hd + i, o[g]);
        }
        for (int i = h8; i < hd; i++)
            for (int g = 0; g < ng; g++) {
                float o = 0.0f;
                for (int t = 0; t < n_pos; t++) o += sc[g][t] * V[(size_t)t * hd + i];
                out[(size_t)(g0 + g) * hd + i] = o;
            }
    }
}
