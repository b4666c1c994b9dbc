/* AVX2 primitives of the shared attention driver (kernels/attn.h): 8-lane FMAs, every query
   head of the pass sharing each K/V row load, columns past the last multiple of 8 in the
   driver's scalar tails. */
#include <immintrin.h>

#include "kernels/attn.h"

static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

static void scores256(const float *K, int hd, const float *q, int ng, int n_pos, float scale, float *sc) {
    const int h8 = hd / 8 * 8;
    for (int t = 0; t < n_pos; t++) {
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

static void wsum256(const float *V, int hd, const float *sc, int ng, int n_pos, float *out) {
    const int h8 = hd / 8 * 8;
    for (int i = 0; i < h8; i += 8) {
        __m256 o[CT_ATTN_GMAX];
        for (int g = 0; g < ng; g++) o[g] = _mm256_setzero_ps();
        for (int t = 0; t < n_pos; t++) {
            const __m256 vv = _mm256_loadu_ps(V + (size_t)t * hd + i);
            for (int g = 0; g < ng; g++) o[g] = _mm256_fmadd_ps(_mm256_set1_ps(sc[(size_t)g * n_pos + t]), vv, o[g]);
        }
        for (int g = 0; g < ng; g++) _mm256_storeu_ps(out + (size_t)g * hd + i, o[g]);
    }
    ct_attn_tail_wsum(V, hd, sc, ng, n_pos, h8, out);
}

void ct_attend_head_avx2(const float *K, const float *V, int hd, const float *q, float *out,
                         int n_pos, int group, float *scores) {
    static const ct_attn_prims p = {scores256, wsum256};
    ct_attend_head_prims(&p, K, V, hd, q, out, n_pos, group, scores);
}
