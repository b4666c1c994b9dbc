/* Attention over one KV head's cache, with the query heads of that KV head grouped on it
   (grouped-query attention without expanding K/V): a scalar reference and AVX2 / AVX-512 /
   NEON variants, chosen with the matmul level. */
#ifndef CT_ATTN_H
#define CT_ATTN_H

#include <stddef.h>

/* K, V: [n_pos][hd] (rows of this KV head's cache, positions 0..n_pos-1); q: [group][hd] query
   heads; out: [group][hd]; scores: scratch [group][n_pos]. out[g] = softmax(K q[g] / sqrt(hd)) V,
   softmax in f32 with expf. n_pos >= 1. */
typedef void (*ct_attend_head_fn)(const float *K, const float *V, int hd, const float *q, float *out,
                                  int n_pos, int group, float *scores);

void ct_attend_head_scalar(const float *K, const float *V, int hd, const float *q, float *out,
                           int n_pos, int group, float *scores);
#if defined(__x86_64__)
void ct_attend_head_avx2(const float *K, const float *V, int hd, const float *q, float *out,
                         int n_pos, int group, float *scores);
void ct_attend_head_avx512(const float *K, const float *V, int hd, const float *q, float *out,
                           int n_pos, int group, float *scores);
#endif
#if defined(__aarch64__)
void ct_attend_head_neon(const float *K, const float *V, int hd, const float *q, float *out,
                         int n_pos, int group, float *scores);
#endif

#endif
