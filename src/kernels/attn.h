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
/* The SIMD variants share one driver (ref/attn_ref.c) and supply two primitives over ng <=
   CT_ATTN_GMAX query heads: scores sc[g][t] = scale * q[g] . K[t], and out[g] = sum_t
   sc[g][t] V[t]. The driver takes the heads in passes of CT_ATTN_GMAX and applies ct_softmax
   to each head's scores in between; ct_attn_tail_* do columns [c0, hd) in scalar code. */
#define CT_ATTN_GMAX 8
typedef struct {
    void (*scores)(const float *K, int hd, const float *q, int ng, int n_pos, float scale, float *sc);
    void (*wsum)(const float *V, int hd, const float *sc, int ng, int n_pos, float *out);
} ct_attn_prims;

void ct_attend_head_prims(const ct_attn_prims *p, const float *K, const float *V, int hd, const float *q,
                          float *out, int n_pos, int group, float *scores);
/* Runs F(args..., NG) with NG the constant equal to ng (1..CT_ATTN_GMAX): the variants'
   always-inline block functions get the head count, and so their accumulator count, as a
   compile-time constant. */
#define CT_ATTN_BY_NG(ng, F, ...)                                                                   \
    switch (ng) {                                                                                   \
    case 1: F(__VA_ARGS__, 1); break;                                                               \
    case 2: F(__VA_ARGS__, 2); break;                                                               \
    case 3: F(__VA_ARGS__, 3); break;                                                               \
    case 4: F(__VA_ARGS__, 4); break;                                                               \
    case 5: F(__VA_ARGS__, 5); break;                                                               \
    case 6: F(__VA_ARGS__, 6); break;                                                               \
    case 7: F(__VA_ARGS__, 7); break;                                                               \
    default: F(__VA_ARGS__, 8); break;                                                              \
    }

/* A head's cache read from memory is one short stream per head that the hardware prefetcher
   hardly ramps up on (12 GB/s on one thread of the EPYC VM): the primitives call this for the
   rows [t, t + np) of X (K in the scores, V in the first column pass of the weighted sum)
   they are about to read, which prefetches the lines CT_ATTN_PF_BYTES ahead into L1. Rows
   of X under CT_ATTN_PF_MIN bytes in all are left alone: up to 64 positions of 128 floats
   gained nothing from memory and cost 12-14% in cache (docs/BENCH.md "Issue 15, eighth
   sitting"). Prefetches change no result. */
#define CT_ATTN_PF_BYTES 4096
#define CT_ATTN_PF_MIN (48 * 1024)
static inline void ct_attn_prefetch(const float *X, int hd, int t, int np, int n_pos) {
    const size_t rb = (size_t)hd * sizeof(float), end = (size_t)n_pos * rb;
    if (end < CT_ATTN_PF_MIN) return;
    for (size_t o = (size_t)t * rb + CT_ATTN_PF_BYTES, e = o + (size_t)np * rb; o < e && o < end; o += 64)
        __builtin_prefetch((const char *)X + o, 0, 3);
}

/* Defines scores_run(K, hd, q, n_pos, scale, sc, t, NG) for a variant whose vectors hold L
   floats: the scores of positions [*t, ...) through its scores_blk in blocks of L / NG
   positions (none where that is under 2: those heads go through the variant's one-position
   loop), each block's K rows prefetched by ct_attn_prefetch; *t: the first position left. */
#define CT_ATTN_SCORES_RUN(L)                                                                       \
    static inline __attribute__((always_inline)) void scores_run(const float *K, int hd, const float *q, \
                                                                 int n_pos, float scale, float *sc, int *t, \
                                                                 const int NG) {                    \
        if ((L) / NG < 2) return;                                                                   \
        for (; *t + (L) / NG <= n_pos; *t += (L) / NG) {                                            \
            ct_attn_prefetch(K, hd, *t, (L) / NG, n_pos);                                           \
            scores_blk(K, hd, q, n_pos, *t, scale, sc, NG);                                         \
        }                                                                                           \
    }

/* Defines the weighted-sum primitive NAME of a variant whose vectors hold W floats: the
   columns below the last multiple of W in passes of min(M, A / NG) blocks of W (A: its
   accumulator budget) through BLK(V, hd, sc, n_pos, out, i0, blocks, NG, NB), NG a
   compile-time constant by CT_ATTN_BY_NG, then the columns past them in scalar code. */
#define CT_ATTN_WSUM_PASSES(NAME, W, A, M, BLK)                                                     \
    static inline __attribute__((always_inline)) void NAME##_run(const float *V, int hd, const float *sc, \
                                                                 int n_pos, float *out, const int NG) { \
        const int hw = hd / (W) * (W), NB = (A) / NG < (M) ? (A) / NG : (M);                         \
        for (int i0 = 0; i0 < hw; i0 += (W) * NB)                                                   \
            BLK(V, hd, sc, n_pos, out, i0, (hw - i0) / (W) < NB ? (hw - i0) / (W) : NB, NG, NB);    \
    }                                                                                               \
    static void NAME(const float *V, int hd, const float *sc, int ng, int n_pos, float *out) {      \
        CT_ATTN_BY_NG(ng, NAME##_run, V, hd, sc, n_pos, out)                                        \
        ct_attn_tail_wsum(V, hd, sc, ng, n_pos, hd / (W) * (W), out);                               \
    }

/* q[g] . K[t] over columns [c0, hd), added to d. */
float ct_attn_tail_dot(const float *qg, const float *kt, int c0, int hd, float d);
/* out[g][c] = sum_t sc[g][t] V[t][c] for columns [c0, hd). */
void ct_attn_tail_wsum(const float *V, int hd, const float *sc, int ng, int n_pos, int c0, float *out);

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
