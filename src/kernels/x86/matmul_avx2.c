/* AVX2+FMA+F16C matmul rows over BF16/F16/F32/INT8/INT4 weights, f32 activations and
   accumulation: 2 rows x 1 token for n = 1, a register-blocked 2 rows x up to 6 tokens GEMM
   over L2-resident row chunks for n > 1 (the same arithmetic per token), whose first token
   block streams each row from DRAM in one pass where its activations fit L1. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/cpu.h"
#include "kernels/matrow.h"
#include "kernels/ops.h"
#include "kernels/tbuf.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* 8 weights of row p at column k (k + 8 <= cols) as f32; INT8 unscaled, INT4 scaled by the
   row's group scale sc[k/32]. */
ALWAYS_INLINE __m256 load8(const void *p, ct_dtype dt, int k, const float *sc) {
    if (dt == CT_DT_BF16) {
        __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)p + k));
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
    if (dt == CT_DT_F16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + k)));
    if (dt == CT_DT_I8)
        return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)((const int8_t *)p + k))));
    if (dt == CT_DT_U8) {
        int j = k % CT_Q4_GROUP;
        const uint8_t *g = (const uint8_t *)p + (k / CT_Q4_GROUP) * 16 + (j & 15);
        __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)g));
        if (j & 16) v = _mm256_srli_epi32(v, 4);
        v = _mm256_sub_epi32(_mm256_and_si256(v, _mm256_set1_epi32(15)), _mm256_set1_epi32(8));
        return _mm256_mul_ps(_mm256_cvtepi32_ps(v), _mm256_set1_ps(sc[k / CT_Q4_GROUP]));
    }
    return _mm256_loadu_ps((const float *)p + k);
}

static inline float hsum(__m256 v) {
    __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
    lo = _mm_add_ps(lo, hi);
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
    return _mm_cvtss_f32(lo);
}

/* r[j] = hsum(v[j]) for 8 vectors, bit for bit (the same additions in the same order: the
   halves, then lanes k and k + 2, then lanes 0 and 1), through one transposed tree. */
static inline void hsum8(const __m256 *v, float *r) {
    __m256 p[4], q[2];
    for (int i = 0; i < 4; i++)
        p[i] = _mm256_add_ps(_mm256_permute2f128_ps(v[2 * i], v[2 * i + 1], 0x20),
                             _mm256_permute2f128_ps(v[2 * i], v[2 * i + 1], 0x31));
    for (int i = 0; i < 2; i++)
        q[i] = _mm256_add_ps(_mm256_shuffle_ps(p[2 * i], p[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm256_shuffle_ps(p[2 * i], p[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    float o[8]; /* lanes 0-3: r0, r2, r4, r6; 4-7: r1, r3, r5, r7 */
    _mm256_storeu_ps(o, _mm256_add_ps(_mm256_shuffle_ps(q[0], q[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                      _mm256_shuffle_ps(q[0], q[1], _MM_SHUFFLE(3, 1, 3, 1))));
    for (int j = 0; j < 4; j++) r[2 * j] = o[j], r[2 * j + 1] = o[4 + j];
}

static inline float wat(const ct_mat *w, const void *p, const float *sc, int k) {
    switch (w->dtype) {
    case CT_DT_BF16: return ct_bf16_to_f32(((const uint16_t *)p)[k]);
    case CT_DT_F16: return ct_f16_to_f32(((const uint16_t *)p)[k]);
    case CT_DT_I8: return (float)((const int8_t *)p)[k];
    case CT_DT_U8: { /* INT4 rows have no tail; kept for completeness */
        int j = k % CT_Q4_GROUP;
        uint8_t b = ((const uint8_t *)p)[(k / CT_Q4_GROUP) * 16 + (j & 15)];
        return sc[k / CT_Q4_GROUP] * (float)((j < 16 ? (b & 15) : (b >> 4)) - 8);
    }
    default: return ((const float *)p)[k];
    }
}

/* 1 row x up to 4 tokens (the n = 1 path uses it with one token for an odd last row). */
static void row_tok4(const ct_mat *w, const float *x, int nt, float *out, int r) {
    /* Per token the same operations as rows2_tok1: even/odd 8-column accumulators over every 16
       columns, a leftover 8 into the even one, a scalar tail, hsum(a + b) + tail. So a token's
       result does not depend on how many tokens share the call (batched == solo decode). */
    const int C = w->cols;
    const void *p = ct_row_ptr(w, r);
    const float *sc = ct_row_sc(w, r);
    const float *xs[4];
    for (int j = 0; j < 4; j++) xs[j] = x + (size_t)(j < nt ? j : 0) * C;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    int k = 0;
    for (; k + 16 <= C; k += 16) {
        __m256 w0 = load8(p, w->dtype, k, sc), w1 = load8(p, w->dtype, k + 8, sc);
        a0 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xs[0] + k), a0);
        b0 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xs[0] + k + 8), b0);
        a1 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xs[1] + k), a1);
        b1 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xs[1] + k + 8), b1);
        a2 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xs[2] + k), a2);
        b2 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xs[2] + k + 8), b2);
        a3 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xs[3] + k), a3);
        b3 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xs[3] + k + 8), b3);
    }
    for (; k + 8 <= C; k += 8) {
        __m256 wv = load8(p, w->dtype, k, sc);
        a0 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(xs[0] + k), a0);
        a1 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(xs[1] + k), a1);
        a2 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(xs[2] + k), a2);
        a3 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(xs[3] + k), a3);
    }
    float t0 = 0, t1 = 0, t2 = 0, t3 = 0;
    for (; k < C; k++) {
        float wv = wat(w, p, sc, k);
        t0 += wv * xs[0][k];
        t1 += wv * xs[1][k];
        t2 += wv * xs[2][k];
        t3 += wv * xs[3][k];
    }
    out[0] = hsum(_mm256_add_ps(a0, b0)) + t0;
    out[1] = hsum(_mm256_add_ps(a1, b1)) + t1;
    out[2] = hsum(_mm256_add_ps(a2, b2)) + t2;
    out[3] = hsum(_mm256_add_ps(a3, b3)) + t3;
}

/* Prefetch of the 64-byte line at off in row p, CT_PF_L1 ahead into L1 and CT_PF_L2 into L2. */
ALWAYS_INLINE void pf_line(const void *p, size_t off) {
    _mm_prefetch((const char *)p + off + CT_PF_L1, _MM_HINT_T0);
    _mm_prefetch((const char *)p + off + CT_PF_L2, _MM_HINT_T1);
}

/* 2 rows x 1 token with two accumulators per row. */
static void rows2_tok1(const ct_mat *w, const float *x, float *out, int r) {
    const int C = w->cols;
    const ct_dtype dt = w->dtype;
    const void *p0 = ct_row_ptr(w, r), *p1 = ct_row_ptr(w, r + 1);
    const float *s0 = ct_row_sc(w, r), *s1 = ct_row_sc(w, r + 1);
    const int e2 = dt == CT_DT_F32 ? 8 : dt == CT_DT_I8 ? 2 : dt == CT_DT_U8 ? 1 : 4; /* bytes per 2 */
    __m256 a0 = _mm256_setzero_ps(), b0 = a0, a1 = a0, b1 = a0;
    int k = 0;
    for (; k + 16 <= C; k += 16) {
        const size_t kb = (size_t)k * e2 / 2;
        if (dt != CT_DT_U8 && (kb & 63) == 0) { /* INT4 unpacks slower than DRAM delivers */
            pf_line(p0, kb);
            pf_line(p1, kb);
        }
        __m256 x0 = _mm256_loadu_ps(x + k), x1 = _mm256_loadu_ps(x + k + 8);
        a0 = _mm256_fmadd_ps(load8(p0, dt, k, s0), x0, a0);
        b0 = _mm256_fmadd_ps(load8(p0, dt, k + 8, s0), x1, b0);
        a1 = _mm256_fmadd_ps(load8(p1, dt, k, s1), x0, a1);
        b1 = _mm256_fmadd_ps(load8(p1, dt, k + 8, s1), x1, b1);
    }
    for (; k + 8 <= C; k += 8) {
        __m256 x0 = _mm256_loadu_ps(x + k);
        a0 = _mm256_fmadd_ps(load8(p0, dt, k, s0), x0, a0);
        a1 = _mm256_fmadd_ps(load8(p1, dt, k, s1), x0, a1);
    }
    float t0 = 0, t1 = 0;
    for (; k < C; k++) {
        t0 += wat(w, p0, s0, k) * x[k];
        t1 += wat(w, p1, s1, k) * x[k];
    }
    out[0] = hsum(_mm256_add_ps(a0, b0)) + t0;
    out[1] = hsum(_mm256_add_ps(a1, b1)) + t1;
}

#define RCHUNK 64

#define G2T_MAX 6 /* most tokens per block of the GEMM below */
/* The first token block over a row chunk (its rows read from DRAM): row r x NT tokens x[NT][xs]
   in one pass over the columns with prefetch, both accumulators of every token live (6 x 2 =
   12), so the weights stream while the FMAs run. Per token row_tok4's operations in its order:
   out[t] is bit for bit gemm2's (and row_tok4's) result. */
#define RS_T(t, A, B)                                                                           \
    if (NT > t) {                                                                               \
        A = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + (size_t)t * xs + k), A);                    \
        B = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + (size_t)t * xs + k + 8), B);                \
    }
#define RS_T8(t, A)                                                                             \
    if (NT > t) A = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + (size_t)t * xs + k), A);
#define RS_XMAX (24 * 1024) /* the block's activations must stay in L1 (else gemm2's K blocks) */
ALWAYS_INLINE void row_stream(const ct_mat *w, const ct_dtype DT, int r, const float *x, int xs, const int NT,
                              float *out) {
    const int C = w->cols;
    const void *p = ct_row_ptr(w, r);
    const float *sc = ct_row_sc(w, r);
    const int e2 = DT == CT_DT_F32 ? 8 : DT == CT_DT_I8 ? 2 : DT == CT_DT_U8 ? 1 : 4; /* bytes per 2 */
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, b0 = a0, b1 = a0, b2 = a0,
           b3 = a0, b4 = a0, b5 = a0;
    int k = 0;
    for (; k + 16 <= C; k += 16) {
        const size_t kb = (size_t)k * e2 / 2;
        if ((kb & 63) == 0) pf_line(p, kb);
        const __m256 w0 = load8(p, DT, k, sc), w1 = load8(p, DT, k + 8, sc);
        RS_T(0, a0, b0)
        RS_T(1, a1, b1)
        RS_T(2, a2, b2)
        RS_T(3, a3, b3)
        RS_T(4, a4, b4)
        RS_T(5, a5, b5)
    }
    for (; k + 8 <= C; k += 8) {
        const __m256 w0 = load8(p, DT, k, sc);
        RS_T8(0, a0)
        RS_T8(1, a1)
        RS_T8(2, a2)
        RS_T8(3, a3)
        RS_T8(4, a4)
        RS_T8(5, a5)
    }
    const __m256 av[G2T_MAX] = {a0, a1, a2, a3, a4, a5}, bv[G2T_MAX] = {b0, b1, b2, b3, b4, b5};
    for (int t = 0; t < NT; t++) {
        const float *xt = x + (size_t)t * xs;
        float tl = 0;
        for (int kk = k; kk < C; kk++) tl += wat(w, p, sc, kk) * xt[kk];
        out[t] = hsum(_mm256_add_ps(av[t], bv[t])) + tl;
    }
}

/* ---- prefill GEMM (n > 1) ------------------------------------------------------------ */
/* row_tok4's function bit for bit, with each weight vector applied to up to G2T tokens and two
   rows at once: per (row, token) the even 8-column chunks of every 16 (and a leftover 8) go to
   one accumulator, the odd ones to another, summed here in two passes over the columns (which
   changes no operation: each accumulator sees the same FMAs in the same order), then the scalar
   tail and hsum(a + b) + tail as row_tok4. So a token's result is its one-token result
   whatever n, and the thread count changes nothing (test_kernels checks it bit for bit). */
#define G2T G2T_MAX    /* most tokens per block (2 rows x 6 tokens = 12 accumulators) */
#define G2X_FLOATS (64 * (3072 + 16)) /* g2x: 64 tokens of 3072 columns, 772 KiB per thread */
/* g2x: the activations, rows C + 16 floats apart (a thread's buffer, kernels/tbuf.h) */
static ct_tbuf g2x_tb = CT_TBUF(sizeof(float) * G2X_FLOATS);
static _Thread_local void *g2x_tl;

#define G2_KB 512   /* columns per K block: a 6-token block's activations (12 KiB) stay in L1 */
#define G2_PF_PAIRS 4 /* the first token block (rows from DRAM): row pairs ahead prefetched into L2 */
#define G2_RCHUNK 32 /* rows per chunk: their accumulators between K blocks take 12 KiB (stack) */

#define G2_T(t, A0, A1)                                                                         \
    if (NT > t) {                                                                               \
        __m256 xv = _mm256_loadu_ps(x + (size_t)t * xs + k);                                    \
        CT_IN_REG(xv);                                                                          \
        A0 = _mm256_fmadd_ps(w0, xv, A0);                                                       \
        A1 = _mm256_fmadd_ps(w1, xv, A1);                                                       \
    }
/* One column pass over rows p0, p1 (dtype DT, a constant; INT4 scales s0, s1) and NT tokens
   x[NT][xs]: the 8-column chunks k = k0, k0 + 16, ... below k1 into the accumulators acc[2t + i]
   (started at zero when fresh, else loaded). Named variables: GCC keeps an array of them in
   memory. */
ALWAYS_INLINE void gemm2_pass(const void *p0, const void *p1, const float *s0, const float *s1,
                              const ct_dtype DT, const float *x, int xs, int k0, int k1, int fresh,
                              const int NT, const char *const *pn, float *acc) {
    const int eb = DT == CT_DT_F32 ? 4 : DT == CT_DT_I8 ? 1 : DT == CT_DT_U8 ? 0 : 2;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0,
           a8 = a0, a9 = a0, a10 = a0, a11 = a0;
    if (!fresh) {
        a0 = _mm256_loadu_ps(acc), a1 = _mm256_loadu_ps(acc + 8);
        if (NT > 1) a2 = _mm256_loadu_ps(acc + 16), a3 = _mm256_loadu_ps(acc + 24);
        if (NT > 2) a4 = _mm256_loadu_ps(acc + 32), a5 = _mm256_loadu_ps(acc + 40);
        if (NT > 3) a6 = _mm256_loadu_ps(acc + 48), a7 = _mm256_loadu_ps(acc + 56);
        if (NT > 4) a8 = _mm256_loadu_ps(acc + 64), a9 = _mm256_loadu_ps(acc + 72);
        if (NT > 5) a10 = _mm256_loadu_ps(acc + 80), a11 = _mm256_loadu_ps(acc + 88);
    }
    for (int k = k0; k < k1; k += 16) {
        if (pn && ((k * eb) & 63) == 0) /* the next pairs' lines of this K block */
            for (int b = 0; b < 16 * eb; b += 64) {
                _mm_prefetch(pn[0] + (size_t)k * eb + b, _MM_HINT_T0);
                _mm_prefetch(pn[1] + (size_t)k * eb + b, _MM_HINT_T0);
                _mm_prefetch(pn[2] + (size_t)k * eb + b, _MM_HINT_T1);
                _mm_prefetch(pn[3] + (size_t)k * eb + b, _MM_HINT_T1);
            }
        __m256 w0 = load8(p0, DT, k, s0), w1 = load8(p1, DT, k, s1);
        G2_T(0, a0, a1)
        G2_T(1, a2, a3)
        G2_T(2, a4, a5)
        G2_T(3, a6, a7)
        G2_T(4, a8, a9)
        G2_T(5, a10, a11)
    }
    const __m256 r[2 * G2T] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11};
    for (int j = 0; j < 2 * NT; j++) _mm256_storeu_ps(acc + 8 * j, r[j]);
}

/* K block [kb, ke) (multiples of 16, ke <= C16) of rows r, r1 (r1 = r for a one-row block) x NT
   tokens into the pair's accumulators acc[2] (fresh at kb = 0); at ke = C16 also the leftover
   8 columns, the scalar tail and the sums: out[2 * t + i]. far: the first token block over
   these rows (read from DRAM), whose even pass prefetches the K block of the rows ahead. */
ALWAYS_INLINE void gemm2(const ct_mat *w, const ct_dtype DT, int r, int r1, const float *x, int xs,
                         int kb, int ke, const int NT, int far, float (*acc)[2 * G2T * 8], float *out) {
    const int C = w->cols, C16 = C & ~15;
    const void *p0 = ct_row_ptr(w, r), *p1 = ct_row_ptr(w, r1);
    const float *s0 = ct_row_sc(w, r), *s1 = ct_row_sc(w, r1);
    const char *pn[4]; /* far: the next pair's rows (into L1) and those G2_PF_PAIRS pairs on (into L2) */
    for (int i = 0; far && i < 4; i++) {
        const int rn = r + (i < 2 ? 2 : 2 * G2_PF_PAIRS) + (i & 1);
        pn[i] = (const char *)ct_row_ptr(w, rn < w->rows ? rn : w->rows - 1);
    }
    gemm2_pass(p0, p1, s0, s1, DT, x, xs, kb, ke, kb == 0, NT, far ? pn : NULL, acc[0]); /* even chunks */
    gemm2_pass(p0, p1, s0, s1, DT, x, xs, kb + 8, ke, kb == 0, NT, NULL, acc[1]);         /* odd chunks */
    if (ke < C16) return;
    if (C16 + 8 <= C) gemm2_pass(p0, p1, s0, s1, DT, x, xs, C16, C16 + 1, C16 == 0, NT, NULL, acc[0]);
    const int kt = C16 + ((C & 15) >= 8 ? 8 : 0);
    float hs[2 * G2T];
    int j0 = 0;
    if (NT >= 4) { /* tokens 0-3: one tree for their 8 sums */
        __m256 v[8];
        for (int j = 0; j < 8; j++)
            v[j] = _mm256_add_ps(_mm256_loadu_ps(acc[0] + 8 * j), _mm256_loadu_ps(acc[1] + 8 * j));
        hsum8(v, hs);
        j0 = 8;
    }
    for (int j = j0; j < 2 * NT; j++)
        hs[j] = hsum(_mm256_add_ps(_mm256_loadu_ps(acc[0] + 8 * j), _mm256_loadu_ps(acc[1] + 8 * j)));
    for (int t = 0; t < NT; t++)
        for (int i = 0; i < 2; i++) {
            const void *p = i ? p1 : p0;
            const float *sc = i ? s1 : s0, *xt = x + (size_t)t * xs;
            float tl = 0;
            for (int k = kt; k < C; k++) tl += wat(w, p, sc, k) * xt[k];
            out[2 * t + i] = hs[2 * t + i] + tl;
        }
}

/* Rows [r0, r1) x n tokens through gemm2 (dtype DT) in chunks of G2_RCHUNK rows, each chunk
   token block by token block and K block by K block (the block's activations, copied rows
   C + 16 floats apart so that the tokens do not share L1 sets, stay in L1), 2-row blocks
   inside; token blocks as even as possible (37 in blocks of at most 6: 6,6,5,5,5,5,5). */
ALWAYS_INLINE void gemm2_rows(const ct_mat *w, const ct_dtype DT, const float *bias, const float *x,
                              float *y, int n, int r0, int r1) {
    const int R = w->rows, C = w->cols, C16 = C & ~15;
    const int nb = (n + G2T - 1) / G2T, xs = C + 16;
    /* (without the buffer, the activations are read where they are: the same results) */
    float *const g2x = ct_tbuf_get(&g2x_tb, &g2x_tl);
    _Alignas(64) float g2acc[G2_RCHUNK / 2][2][2 * G2T * 8]; /* [row pair][even/odd][2t+i] */
    const int all = g2x && (size_t)n * xs <= G2X_FLOATS, blk = g2x && !all && (size_t)G2T * xs <= G2X_FLOATS;
    /* a pool job's row chunks of one x copy it once per thread (ct_xq_tls, kernels/cpu.h) */
    ct_xq_reuse *const key = &ct_xq_tls;
    if (all && (!key->on || key->x != x || key->n != n || key->cols != C || key->q4 != CT_XQ_KEY_G2X)) {
        for (int t = 0; t < n; t++) memcpy(g2x + (size_t)t * xs, x + (size_t)t * C, (size_t)C * sizeof(float));
        if (key->on) *key = (ct_xq_reuse){1, x, n, C, CT_XQ_KEY_G2X};
    } else if (blk && key->q4 == CT_XQ_KEY_G2X) {
        key->x = NULL; /* the blocks below overwrite the buffer */
    }
    for (int rc = r0; rc < r1; rc += G2_RCHUNK) {
        const int rce = rc + G2_RCHUNK < r1 ? rc + G2_RCHUNK : r1;
        for (int b = 0, t = 0; b < nb; b++) {
            const int nt = n / nb + (b < n % nb);
            const float *xt = all ? g2x + (size_t)t * xs : x + (size_t)t * C;
            float *yt = y + (size_t)t * R;
            t += nt;
            if (blk) {
                for (int tt = 0; tt < nt; tt++) memcpy(g2x + (size_t)tt * xs, xt + (size_t)tt * C, (size_t)C * sizeof(float));
                xt = g2x;
            }
            const int xst = all || blk ? xs : C;
            if (b == 0 && (size_t)nt * (size_t)C * sizeof(float) <= RS_XMAX) { /* rows from DRAM */
                for (int r = rc; r < rce; r++) {
                    float o[G2T];
                    switch (nt) {
                    case 1: row_stream(w, DT, r, xt, xst, 1, o); break;
                    case 2: row_stream(w, DT, r, xt, xst, 2, o); break;
                    case 3: row_stream(w, DT, r, xt, xst, 3, o); break;
                    case 4: row_stream(w, DT, r, xt, xst, 4, o); break;
                    case 5: row_stream(w, DT, r, xt, xst, 5, o); break;
                    default: row_stream(w, DT, r, xt, xst, 6, o); break;
                    }
                    for (int tt = 0; tt < nt; tt++)
                        yt[(size_t)tt * R + r] = ct_post_scale(w, r) * o[tt] + (bias ? bias[r] : 0.0f);
                }
                continue;
            }
            for (int kb = 0; kb == 0 || kb < C16; kb += G2_KB) {
                const int ke = kb + G2_KB < C16 ? kb + G2_KB : C16;
                for (int r = rc; r < rce; r += 2) {
                    const int nr = rce - r < 2 ? rce - r : 2;
                    float (*acc)[2 * G2T * 8] = g2acc[(r - rc) / 2];
                    float o[2 * G2T];
                    switch (nt) {
                    case 1: gemm2(w, DT, r, r + nr - 1, xt, xst, kb, ke, 1, b == 0, acc, o); break;
                    case 2: gemm2(w, DT, r, r + nr - 1, xt, xst, kb, ke, 2, b == 0, acc, o); break;
                    case 3: gemm2(w, DT, r, r + nr - 1, xt, xst, kb, ke, 3, b == 0, acc, o); break;
                    case 4: gemm2(w, DT, r, r + nr - 1, xt, xst, kb, ke, 4, b == 0, acc, o); break;
                    case 5: gemm2(w, DT, r, r + nr - 1, xt, xst, kb, ke, 5, b == 0, acc, o); break;
                    default: gemm2(w, DT, r, r + nr - 1, xt, xst, kb, ke, 6, b == 0, acc, o); break;
                    }
                    if (ke < C16) continue;
                    for (int tt = 0; tt < nt; tt++)
                        for (int i = 0; i < nr; i++)
                            yt[(size_t)tt * R + r + i] = ct_post_scale(w, r + i) * o[2 * tt + i] + (bias ? bias[r + i] : 0.0f);
                }
            }
        }
    }
}

static void gemm2_bf16(const ct_mat *w, const float *b, const float *x, float *y, int n, int r0, int r1) {
    gemm2_rows(w, CT_DT_BF16, b, x, y, n, r0, r1);
}
static void gemm2_f16(const ct_mat *w, const float *b, const float *x, float *y, int n, int r0, int r1) {
    gemm2_rows(w, CT_DT_F16, b, x, y, n, r0, r1);
}
static void gemm2_f32(const ct_mat *w, const float *b, const float *x, float *y, int n, int r0, int r1) {
    gemm2_rows(w, CT_DT_F32, b, x, y, n, r0, r1);
}
static void gemm2_i8(const ct_mat *w, const float *b, const float *x, float *y, int n, int r0, int r1) {
    gemm2_rows(w, CT_DT_I8, b, x, y, n, r0, r1);
}
static void gemm2_q4(const ct_mat *w, const float *b, const float *x, float *y, int n, int r0, int r1) {
    gemm2_rows(w, CT_DT_U8, b, x, y, n, r0, r1);
}

static ct_matmul_rows_fn dot_rows = ct_matmul_rows_dot_avx2; /* set by ct_matmul_avx2_dot_select */
static int dot_kind = CT_VNNI_NONE;

int ct_matmul_avx2_dot_select(int kind) {
    dot_kind = kind == CT_VNNI_AVX || kind == CT_VNNI_256 ? kind : CT_VNNI_NONE;
    dot_rows = dot_kind == CT_VNNI_AVX   ? ct_matmul_rows_dot_avxvnni
               : dot_kind == CT_VNNI_256 ? ct_matmul_rows_dot_vnni256
                                         : ct_matmul_rows_dot_avx2;
    return dot_kind;
}

void ct_matmul_rows_avx2(const ct_mat *w, const float *bias, const float *x, float *y, int n,
                         int r0, int r1) {
    if (ct_xq_active(w)) { /* the integer-dot mode: VPMADDUBSW or a 256-bit VPDPBUSD
                                 (x86/matmul_dot_body.h) */
        dot_rows(w, bias, x, y, n, r0, r1);
        return;
    }
    float o[8];
    if (n == 1) {
        int r = r0;
        for (; r + 2 <= r1; r += 2) {
            rows2_tok1(w, x, o, r);
            y[r] = ct_post_scale(w, r) * o[0] + (bias ? bias[r] : 0.0f);
            y[r + 1] = ct_post_scale(w, r + 1) * o[1] + (bias ? bias[r + 1] : 0.0f);
        }
        for (; r < r1; r++) {
            row_tok4(w, x, 1, o, r);
            y[r] = ct_post_scale(w, r) * o[0] + (bias ? bias[r] : 0.0f);
        }
        return;
    }
    switch (w->dtype) { /* n > 1: the prefill GEMM (the same arithmetic per token) */
    case CT_DT_BF16: gemm2_bf16(w, bias, x, y, n, r0, r1); break;
    case CT_DT_F16: gemm2_f16(w, bias, x, y, n, r0, r1); break;
    case CT_DT_I8: gemm2_i8(w, bias, x, y, n, r0, r1); break;
    case CT_DT_U8: gemm2_q4(w, bias, x, y, n, r0, r1); break;
    default: gemm2_f32(w, bias, x, y, n, r0, r1); break;
    }
}
