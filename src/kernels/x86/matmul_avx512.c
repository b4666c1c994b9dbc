/* AVX-512 matmul rows over BF16/F16/F32/INT8/INT4 weights with f32 activations and f32
   accumulation (weights are widened in registers; memory traffic stays at the stored width):
   - n = 1, 2: 4 rows x 1-2 tokens GEMV with software prefetch;
   - n >= 3: register-blocked GEMM, rows walked in 64-row chunks that stay in L2 while every
     token block passes over them: the first block streams the chunk from DRAM 2 rows at a time
     (in K blocks where its activations would not stay in L1), the later ones take 4 rows x up
     to 5 tokens;
   - ct_matmul_rows_avx512bf16: INT8/INT4 matrices in the integer-dot mode go to the VNNI
     kernel (every call); a prompt's calls (ct_mm_prompt) over BF16 weights (and INT8/INT4
     ones outside the integer-dot mode) use AMX tiles (TDPBF16PS) on split activations (hi +
     lo bf16, f32-exact to ~1e-10 NMSE) where the CPU and OS allow them; in the opt-in bf16-activation
     mode, VDPBF16PS (n >= CT_DP_MIN_TOKENS) or single-term AMX on activations rounded to
     bf16. Everything else falls through to the f32 kernels. The f32-weight path never
     reaches bf16 arithmetic. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/cpu.h"
#include "kernels/matrow.h"
#include "kernels/tbuf.h"
#include "kernels/x86/amx_cfg.h"
#include "kernels/x86/simd512.h"


/* 16 weights of row p (dtype) at column k as f32, masked for the tail. INT8 comes back
   unscaled (the row scale is applied to the dot product); INT4 comes back scaled (sc = the
   row's group scales; k is a multiple of 16 and there is no tail). */
ALWAYS_INLINE __m512 load16(const void *p, ct_dtype dt, int k, __mmask16 m, const float *sc) {
    if (dt == CT_DT_BF16) {
        __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)p + k);
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
    if (dt == CT_DT_F16) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)p + k));
    if (dt == CT_DT_I8)
        return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, (const int8_t *)p + k)));
    if (dt == CT_DT_U8) {
        const uint8_t *g = (const uint8_t *)p + (k / CT_Q4_GROUP) * 16;
        __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)g));
        if (k & 16) v = _mm512_srli_epi32(v, 4);
        v = _mm512_sub_epi32(_mm512_and_si512(v, _mm512_set1_epi32(15)), _mm512_set1_epi32(8));
        return _mm512_mul_ps(_mm512_cvtepi32_ps(v), _mm512_set1_ps(sc[k / CT_Q4_GROUP]));
    }
    return _mm512_maskz_loadu_ps(m, (const float *)p + k);
}

static inline int elem_bytes_x2(ct_dtype dt) { /* bytes per 2 elements */
    return dt == CT_DT_F32 ? 8 : dt == CT_DT_I8 ? 2 : dt == CT_DT_U8 ? 1 : 4;
}

/* INT4 group g of a row as f32 q (-8..7): lo = columns 0-15, hi = columns 16-31. */
ALWAYS_INLINE void q4_group(const uint8_t *row, int g, __m512 *lo, __m512 *hi) {
    __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(row + (size_t)g * 16)));
    const __m512i m = _mm512_set1_epi32(15), e = _mm512_set1_epi32(8);
    *lo = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_and_si512(v, m), e));
    *hi = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_srli_epi32(v, 4), e));
}



/* 4 rows (the first nr real, the rest repeat the last) x NT tokens (a constant 1 or 2) in f32
   FMA. Each (row, token) pair has two accumulators, over the even and the odd 16-column chunks
   of every 32 columns (a ragged tail goes to the even one), summed and reduced with
   _mm512_reduce_add_ps: the same operations whatever NT, nr or the caller's token grouping,
   so a token's result never depends on the batch it is in. out[4 * t + i] = row i, token t. */
ALWAYS_INLINE void blk4e(const ct_mat *w, const float *x, int r, int nr, int pf, const int NT,
                         float *out) {
    const int C = w->cols;
    const ct_dtype dt = w->dtype;
    const void *p[4];
    const float *sc[4], *xs[2];
    for (int i = 0; i < 4; i++) {
        p[i] = ct_row_ptr(w, r + (i < nr ? i : nr - 1));
        sc[i] = ct_row_sc(w, r + (i < nr ? i : nr - 1));
    }
    xs[0] = x;
    xs[1] = x + (size_t)(NT > 1 ? 1 : 0) * C;
    __m512 a[8], b[8];
    for (int i = 0; i < 8; i++) a[i] = b[i] = _mm512_setzero_ps();
    const int e2 = elem_bytes_x2(dt);
    int k = 0;
    for (; k + 32 <= C; k += 32) {
        if (pf)
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) CT_PF_BLK(4, p[0], p[i], (size_t)C * e2 / 2, (size_t)k * e2 / 2, i);
        __m512 w0[4], w1[4];
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            w0[i] = load16(p[i], dt, k, 0xffff, sc[i]);
            w1[i] = load16(p[i], dt, k + 16, 0xffff, sc[i]);
        }
#pragma GCC unroll 2
        for (int t = 0; t < NT; t++) {
            __m512 x0 = _mm512_loadu_ps(xs[t] + k), x1 = _mm512_loadu_ps(xs[t] + k + 16);
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) {
                a[4 * t + i] = _mm512_fmadd_ps(w0[i], x0, a[4 * t + i]);
                b[4 * t + i] = _mm512_fmadd_ps(w1[i], x1, b[4 * t + i]);
            }
        }
    }
    for (; k < C; k += 16) {
        __mmask16 m = C - k >= 16 ? 0xffff : (__mmask16)((1u << (C - k)) - 1);
        __m512 wv[4];
        for (int i = 0; i < 4; i++) wv[i] = load16(p[i], dt, k, m, sc[i]);
        for (int t = 0; t < NT; t++) {
            __m512 x0 = _mm512_maskz_loadu_ps(m, xs[t] + k);
            for (int i = 0; i < 4; i++) a[4 * t + i] = _mm512_fmadd_ps(wv[i], x0, a[4 * t + i]);
        }
    }
    for (int t = 0; t < NT; t++)
        for (int i = 0; i < 4; i++) out[4 * t + i] = _mm512_reduce_add_ps(_mm512_add_ps(a[4 * t + i], b[4 * t + i]));
}

/* Prefetch for INT4 group g of a row (weights p, scales sc): its 64-byte line of weights
   (once per 4 groups) and of scales (once per 16). */
ALWAYS_INLINE void pf_q4(const uint8_t *p, const float *sc, int g) {
    if ((g & 3) == 0) {
        _mm_prefetch((const char *)(p + (size_t)g * 16) + CT_PF_L1, _MM_HINT_T0);
        _mm_prefetch((const char *)(p + (size_t)g * 16) + CT_PF_L2, _MM_HINT_T1);
    }
    if ((g & 15) == 0) {
        _mm_prefetch((const char *)(sc + g) + CT_PF_L1 / 4, _MM_HINT_T0);
        _mm_prefetch((const char *)(sc + g) + CT_PF_L2 / 4, _MM_HINT_T1);
    }
}

/* INT4, 4 rows (first nr real) x NT tokens: per group and token sum(q x), times the group
   scale. */
ALWAYS_INLINE __m512 q4_blk4(const ct_mat *w, const float *x, int r, int nr, const int NT) {
    const int C = w->cols, ng = C / CT_Q4_GROUP;
    const uint8_t *p[4];
    const float *sc[4];
    for (int i = 0; i < 4; i++) {
        p[i] = ct_row_ptr(w, r + (i < nr ? i : nr - 1));
        sc[i] = ct_row_sc(w, r + (i < nr ? i : nr - 1));
    }
    __m512 acc[16];
    for (int i = 0; i < 16; i++) acc[i] = _mm512_setzero_ps();
    for (int g = 0; g < ng; g++) {
        for (int i = 0; i < 4; i++) {
            pf_q4(p[i], sc[i], g);
            __m512 lo, hi, sv = _mm512_set1_ps(sc[i][g]);
            q4_group(p[i], g, &lo, &hi);
            for (int t = 0; t < NT; t++) {
                const float *xt = x + (size_t)t * C + g * 32;
                __m512 v = _mm512_fmadd_ps(lo, _mm512_loadu_ps(xt), _mm512_mul_ps(hi, _mm512_loadu_ps(xt + 16)));
                acc[4 * i + t] = _mm512_fmadd_ps(v, sv, acc[4 * i + t]);
            }
        }
    }
    return ct_reduce16(acc);
}

#define RCHUNK 64 /* rows per L2-resident chunk (multiple of 4) */

/* ---- prefill GEMM (n >= GEMM_MIN_TOKENS) ---------------------------------------------- */
/* The same function as blk4e / q4_blk4, bit for bit, with each weight vector applied to up to
   GT tokens (blk4e: 2, q4_blk4: 4). The even and odd 16-column chunks of blk4e's two
   accumulators per (row, token) are summed in two passes over the columns (even chunks and the
   ragged tail, then odd chunks), which halves the live accumulators and changes no operation:
   each accumulator sees the same FMAs in the same order, and the final reduce_add(a + b), row
   scale and bias are blk4e's. So a token's result is its one-token result whatever n, and
   prefill_chunk_tokens and the thread count change nothing (test_kernels checks it bit for
   bit in every format). */
#define GT 5               /* most tokens per block (4 rows x 5 tokens = 20 accumulators) */
#define GEMM_MIN_TOKENS 3  /* below: blk4e (the one- and two-token blocks, with prefetch) */
/* The streaming pass keeps each x vector in a register for both rows (one load, not one per
   FMA: the in-cache 4-token GEMV went from 157-173 to 190-208 GFLOP/s on Zen 4), so a pass's
   activations must stay in L1: above KB_MIN_BYTES of them (NT x C floats) it goes in K blocks
   of at most KB_X_BYTES, over groups of KB_ROWS rows. (4 tokens of 2048 columns fill Zen 4's
   32 KiB L1 with activations alone: 184-191 GFLOP/s in cache, 197-203 in K blocks; 3072 columns
   with the loads folded, 162-169 against 199-204.) */
#define KB_MIN_BYTES 24576
#define KB_X_BYTES 16384
#define KB_ROWS 16
#define GX_FLOATS (64 * (3072 + 16)) /* gx: 64 tokens of 3072 columns, 772 KiB per thread */
/* gx: the activations, rows C + 16 floats apart (a thread's buffer, kernels/tbuf.h) */
static ct_tbuf gx_tb = CT_TBUF(sizeof(float) * GX_FLOATS);
static _Thread_local void *gx_tl;

/* One column pass of gemm4 over 4 rows p[4] (dtype DT, a constant) and NT tokens x[NT][xs]:
   chunks k0, k0 + 32, ... below C32, then (tail) the ragged tail, into accumulators started at
   zero and stored to acc[4 * t + i]; pf: the next rows, prefetched into L1 (the rows come from
   L2: the chunk's first token block, gemm2_stream, read them from DRAM). The
   accumulators are named variables, not an array: GCC keeps an array of 20 vectors in memory. */
#define G4_T(t, A0, A1, A2, A3)                                                                 \
    if (NT > t) {                                                                               \
        __m512 xv = _mm512_maskz_loadu_ps(m, x + (size_t)t * xs + k);                           \
        A0 = _mm512_fmadd_ps(w0, xv, A0);                                                       \
        A1 = _mm512_fmadd_ps(w1, xv, A1);                                                       \
        A2 = _mm512_fmadd_ps(w2, xv, A2);                                                       \
        A3 = _mm512_fmadd_ps(w3, xv, A3);                                                       \
    }
#define G4_STEP                                                                                 \
    {                                                                                           \
        __m512 w0 = load16(p[0], DT, k, m, NULL), w1 = load16(p[1], DT, k, m, NULL);            \
        __m512 w2 = load16(p[2], DT, k, m, NULL), w3 = load16(p[3], DT, k, m, NULL);            \
        G4_T(0, a0, a1, a2, a3)                                                                 \
        G4_T(1, a4, a5, a6, a7)                                                                 \
        G4_T(2, a8, a9, a10, a11)                                                               \
        G4_T(3, a12, a13, a14, a15)                                                             \
        G4_T(4, a16, a17, a18, a19)                                                             \
    }
ALWAYS_INLINE void gemm4_pass(const void *const *p, const ct_dtype DT, const float *x, int C, int xs,
                              int k0, int tail, const int NT, const char *const *pf, float *acc) {
    const int C32 = C & ~31, eb = DT == CT_DT_F32 ? 4 : DT == CT_DT_I8 ? 1 : 2;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0,
           a8 = a0, a9 = a0, a10 = a0, a11 = a0, a12 = a0, a13 = a0, a14 = a0, a15 = a0, a16 = a0,
           a17 = a0, a18 = a0, a19 = a0;
    for (int k = k0; k < C32; k += 32) {
        const __mmask16 m = 0xffff;
        if (pf) /* the next 4-row block's weights into L1 while this one computes */
            for (int i = 0; i < 4; i++)
                for (int b = 0; b < 32 * eb; b += 64) _mm_prefetch(pf[i] + (size_t)k * eb + b, _MM_HINT_T0);
        G4_STEP
    }
    for (int k = C32; tail && k < C; k += 16) {
        const __mmask16 m = C - k >= 16 ? 0xffff : (__mmask16)((1u << (C - k)) - 1);
        G4_STEP
    }
    const __m512 r[4 * GT] = {a0, a1, a2,  a3,  a4,  a5,  a6,  a7,  a8,  a9,
                              a10, a11, a12, a13, a14, a15, a16, a17, a18, a19};
    for (int j = 0; j < 4 * NT; j++) _mm512_storeu_ps(acc + 16 * j, r[j]);
}

/* 4 rows p[4] of dtype DT (a constant) x NT tokens x[NT][xs]: out[4 * t + i]. */
ALWAYS_INLINE void gemm4(const void *const *p, const ct_dtype DT, const float *x, int C, int xs,
                         const int NT, const char *const *pf, float *out) {
    float ea[4 * GT * 16], oa[4 * GT * 16];
    gemm4_pass(p, DT, x, C, xs, 0, 1, NT, pf, ea);   /* even chunks and the tail */
    gemm4_pass(p, DT, x, C, xs, 16, 0, NT, NULL, oa); /* odd chunks */
    int j = 0;
    if (NT >= 4) { /* tokens 0-3 through the shared tree: each sum in _mm512_reduce_add_ps's order */
        __m512 v[16];
        for (int t = 0; t < 4; t++)
            for (int i = 0; i < 4; i++)
                v[4 * i + t] = _mm512_add_ps(_mm512_loadu_ps(ea + 16 * (4 * t + i)), _mm512_loadu_ps(oa + 16 * (4 * t + i)));
        _mm512_storeu_ps(out, ct_reduce16(v));
        j = 16;
    }
    for (; j < 4 * NT; j++)
        out[j] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_loadu_ps(ea + 16 * j), _mm512_loadu_ps(oa + 16 * j)));
}

/* The first token block over a row chunk (its rows read from DRAM): 2 rows p[2] of dtype DT
   x NT tokens in one pass over columns [k0, k1) (k0 a multiple of 32; the ragged tail where k1
   = C), both accumulators of every (row, token) live (2 x 5 x 2 = 20), so the weights stream
   while the FMAs of all chunks run. Each accumulator sees gemm4's (and blk4e's) FMAs in the
   same order and the final sum is the same expression: out[2 * t + i] is bit for bit gemm4's
   row i, token t. KB (a constant): 0, one pass over all columns, prefetching the rows in the
   one-token GEMV's block order; 1, one K block of several: the accumulators start from ain
   (NULL: zero) and go to aout (NULL: summed into out), and each step prefetches its own byte
   count (64 x eb) of the next row group in address order from address pf while below pfe,
   and asks again for the lines 4 KiB behind (the requests are not all served: from DRAM
   31-33 against 27-30 GB/s at 4 tokens x 3072 columns, 2 threads). Addresses as integers:
   the last step's lines may pass pfe. */
#define G2_T(t, E0, E1, O0, O1)                                                                 \
    if (NT > t) {                                                                               \
        __m512 x0 = _mm512_loadu_ps(x + (size_t)t * xs + k);                                    \
        __m512 x1 = _mm512_loadu_ps(x + (size_t)t * xs + k + 16);                               \
        CT_IN_REG(x0);                                                                          \
        CT_IN_REG(x1);                                                                          \
        E0 = _mm512_fmadd_ps(w0e, x0, E0);                                                      \
        E1 = _mm512_fmadd_ps(w1e, x0, E1);                                                      \
        O0 = _mm512_fmadd_ps(w0o, x1, O0);                                                      \
        O1 = _mm512_fmadd_ps(w1o, x1, O1);                                                      \
    }
#define G2_TAIL(t, E0, E1)                                                                      \
    if (NT > t) {                                                                               \
        const __m512 x0 = _mm512_maskz_loadu_ps(m, x + (size_t)t * xs + k);                    \
        E0 = _mm512_fmadd_ps(w0e, x0, E0);                                                      \
        E1 = _mm512_fmadd_ps(w1e, x0, E1);                                                      \
    }
ALWAYS_INLINE void gemm2_stream(const void *const *p, const ct_dtype DT, const float *x, int C, int xs,
                                const int NT, const int KB, int k0, int k1,
                                const float *ain, float *aout, uintptr_t pf, uintptr_t pfe, float *out) {
    const int C32 = C & ~31, eb = DT == CT_DT_F32 ? 4 : DT == CT_DT_I8 ? 1 : 2;
    const int kend = KB && k1 < C32 ? k1 : C32;
    __m512 e0 = _mm512_setzero_ps(), e1 = e0, e2 = e0, e3 = e0, e4 = e0, e5 = e0, e6 = e0, e7 = e0,
           e8 = e0, e9 = e0, o0 = e0, o1 = e0, o2 = e0, o3 = e0, o4 = e0, o5 = e0, o6 = e0, o7 = e0,
           o8 = e0, o9 = e0;
    if (KB && ain) {
#define G2_LD(j, E, O)                                                                          \
    if (2 * NT > j) {                                                                           \
        E = _mm512_loadu_ps(ain + 16 * j);                                                      \
        O = _mm512_loadu_ps(ain + 16 * (2 * GT + j));                                           \
    }
        G2_LD(0, e0, o0) G2_LD(1, e1, o1) G2_LD(2, e2, o2) G2_LD(3, e3, o3) G2_LD(4, e4, o4)
        G2_LD(5, e5, o5) G2_LD(6, e6, o6) G2_LD(7, e7, o7) G2_LD(8, e8, o8) G2_LD(9, e9, o9)
#undef G2_LD
    }
    for (int k = KB ? k0 : 0; k < kend; k += 32) {
        if (KB) { /* the next row group, in address order */
            /* (two registers: with three, GCC kept address registers in vector ones, 202 -> 173
               GFLOP/s in cache) */
            if (pf < pfe)
                for (int b = 0; b < 64 * eb; b += 64) {
                    _mm_prefetch((const char *)(pf + b), _MM_HINT_T1);
                    _mm_prefetch((const char *)(pf + b - 4096), _MM_HINT_T1);
                }
            pf += 64 * eb;
        } else if (eb == 2) { /* 16-bit rows: the one-token GEMV's block order (kernels/matrow.h) */
            for (int i = 0; i < 2; i++) CT_PF_BLK(2, p[0], p[i], (size_t)C * 2, (size_t)k * 2, i);
        } else if (((k * eb) & 63) == 0) { /* into L2 only: an L1 stream measured no better */
            for (int i = 0; i < 2; i++)
                for (int b = 0; b < 32 * eb; b += 64)
                    _mm_prefetch((const char *)p[i] + (size_t)k * eb + b + CT_PF_L2, _MM_HINT_T1);
        }
        const __m512 w0e = load16(p[0], DT, k, 0xffff, NULL), w0o = load16(p[0], DT, k + 16, 0xffff, NULL);
        const __m512 w1e = load16(p[1], DT, k, 0xffff, NULL), w1o = load16(p[1], DT, k + 16, 0xffff, NULL);
        G2_T(0, e0, e1, o0, o1)
        G2_T(1, e2, e3, o2, o3)
        G2_T(2, e4, e5, o4, o5)
        G2_T(3, e6, e7, o6, o7)
        G2_T(4, e8, e9, o8, o9)
    }
    for (int k = C32; (!KB || k1 == C) && k < C; k += 16) {
        const __mmask16 m = C - k >= 16 ? 0xffff : (__mmask16)((1u << (C - k)) - 1);
        const __m512 w0e = load16(p[0], DT, k, m, NULL), w1e = load16(p[1], DT, k, m, NULL);
        G2_TAIL(0, e0, e1)
        G2_TAIL(1, e2, e3)
        G2_TAIL(2, e4, e5)
        G2_TAIL(3, e6, e7)
        G2_TAIL(4, e8, e9)
    }
    const __m512 ev[2 * GT] = {e0, e1, e2, e3, e4, e5, e6, e7, e8, e9};
    const __m512 ov[2 * GT] = {o0, o1, o2, o3, o4, o5, o6, o7, o8, o9};
    if (KB && aout) {
        for (int j = 0; j < 2 * NT; j++) {
            _mm512_storeu_ps(aout + 16 * j, ev[j]);
            _mm512_storeu_ps(aout + 16 * (2 * GT + j), ov[j]);
        }
        return;
    }
    for (int j = 0; j < 2 * NT; j++) out[j] = _mm512_reduce_add_ps(_mm512_add_ps(ev[j], ov[j]));
}

/* Rows [rc, rce) x NT tokens xt[NT][xs] (the chunk's first token block) through gemm2_stream
   into yt[NT][R]. KB (a constant): 0, one pass over all columns per 2 rows; 1, groups of
   KB_ROWS rows, each in K blocks of kblk columns (every K block over the group's rows before
   the next: a block's activations stay in L1 beside the streaming rows), the next group (the
   rows after it, past rce: a pool thread's next row chunk is mostly this one's successor)
   prefetched in address order over the group's steps. */
ALWAYS_INLINE void stream_rows(const ct_mat *w, const ct_dtype DT, const float *bias, const float *xt,
                               int xst, float *yt, int rc, int rce, const int NT, const int KB, int kblk) {
    const int R = w->rows, C = w->cols;
    const int eb = DT == CT_DT_F32 ? 4 : DT == CT_DT_I8 ? 1 : 2, C32 = C & ~31;
    const size_t rb = (size_t)C * eb;
    for (int g = rc; g < rce; g += KB ? KB_ROWS : rce - rc) {
        const int ge = KB && g + KB_ROWS < rce ? g + KB_ROWS : rce;
        /* 2 rows x 2 x GT x 16 accumulators per row pair (ev then ov), carried between K blocks */
        float acc[KB_ROWS / 2][4 * GT * 16];
        /* the next group's bytes over this group's steps (as many when both groups are whole) */
        uintptr_t pf = KB && ge < R ? (uintptr_t)ct_row_ptr(w, ge) : 0;
        const uintptr_t pfe = pf ? pf + (size_t)(ge + KB_ROWS < R ? KB_ROWS : R - ge) * rb : 0;
        for (int k0 = 0; k0 < C; k0 += KB ? kblk : C) {
            const int k1 = KB && k0 + kblk < C ? k0 + kblk : C;
            for (int r = g; r < ge; r += 2) {
                const int nr = ge - r < 2 ? ge - r : 2;
                const void *p2[2] = {ct_row_ptr(w, r), ct_row_ptr(w, r + nr - 1)};
                float o[2 * GT];
                if (KB) {
                    float *a = acc[(r - g) / 2];
                    gemm2_stream(p2, DT, xt, C, xst, NT, 1, k0, k1, k0 ? a : NULL, k1 < C ? a : NULL,
                                 pf, pfe, o);
                    pf += (size_t)((k1 < C32 ? k1 : C32) - k0) / 32 * 64 * eb; /* its steps' bytes */
                    if (k1 < C) continue;
                } else {
                    gemm2_stream(p2, DT, xt, C, xst, NT, 0, 0, C, NULL, NULL, 0, 0, o);
                }
                for (int tt = 0; tt < NT; tt++)
                    for (int i = 0; i < nr; i++)
                        yt[(size_t)tt * R + r + i] = ct_post_scale(w, r + i) * o[2 * tt + i] + (bias ? bias[r + i] : 0.0f);
            }
        }
    }
}

/* A chunk's first token block (nt tokens) in K blocks (stream_rows) ... */
ALWAYS_INLINE void stream_block_kb(const ct_mat *w, const ct_dtype DT, const float *bias, const float *xt,
                                   int xst, float *yt, int rc, int rce, int nt) {
    const int C = w->cols;
    /* K blocks of at most KB_X_BYTES of activations, even, in 32-column steps */
    const int nkb = (int)(((size_t)nt * C * sizeof(float) + KB_X_BYTES - 1) / KB_X_BYTES);
    const int kblk = ((C + nkb - 1) / nkb + 31) & ~31;
    switch (nt) {
    case 1: stream_rows(w, DT, bias, xt, xst, yt, rc, rce, 1, 1, kblk); break;
    case 2: stream_rows(w, DT, bias, xt, xst, yt, rc, rce, 2, 1, kblk); break;
    case 3: stream_rows(w, DT, bias, xt, xst, yt, rc, rce, 3, 1, kblk); break;
    case 4: stream_rows(w, DT, bias, xt, xst, yt, rc, rce, 4, 1, kblk); break;
    default: stream_rows(w, DT, bias, xt, xst, yt, rc, rce, 5, 1, kblk); break;
    }
}
/* ... out of line per format: inlined into gemm_rows, these variants changed GCC's register
   allocation of the later blocks' gemm4 (40 tokens of 1024 x 3072 BF16: 1250 -> 1590 us). */
#define STREAM_KB_FN(name, DTC)                                                                      \
    static __attribute__((noinline)) void name(const ct_mat *w, const float *bias, const float *xt, \
                                               int xst, float *yt, int rc, int rce, int nt) {        \
        stream_block_kb(w, DTC, bias, xt, xst, yt, rc, rce, nt);                                    \
    }
STREAM_KB_FN(stream_kb_bf16, CT_DT_BF16)
STREAM_KB_FN(stream_kb_f16, CT_DT_F16)
STREAM_KB_FN(stream_kb_f32, CT_DT_F32)
STREAM_KB_FN(stream_kb_i8, CT_DT_I8)

/* INT4, 4 rows x NT tokens: q4_blk4's arithmetic (per group and token lo.x0 + hi.x1 times the
   group scale into one accumulator, the shared reduction tree), with every token's activations
   of a group loaded once per group rather than once per row; far (the first token block over
   these rows, read from DRAM): the rows' lines CT_PF_L2 bytes ahead into L2. out as
   ct_reduce16: lane 4t + i. */
ALWAYS_INLINE __m512 gemm4_q4(const uint8_t *const *p, const float *const *sc, const float *x,
                              int C, int xs, const int NT, int far) {
    const int ng = C / CT_Q4_GROUP;
    __m512 acc[16];
    for (int i = 0; i < 16; i++) acc[i] = _mm512_setzero_ps();
    for (int g = 0; g < ng; g++) {
        __m512 x0[4], x1[4];
        for (int t = 0; t < NT; t++) {
            x0[t] = _mm512_loadu_ps(x + (size_t)t * xs + g * 32);
            x1[t] = _mm512_loadu_ps(x + (size_t)t * xs + g * 32 + 16);
        }
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            if (far) pf_q4(p[i], sc[i], g);
            __m512 lo, hi, sv = _mm512_set1_ps(sc[i][g]);
            q4_group(p[i], g, &lo, &hi);
            for (int t = 0; t < NT; t++) {
                __m512 v = _mm512_fmadd_ps(lo, x0[t], _mm512_mul_ps(hi, x1[t]));
                acc[4 * i + t] = _mm512_fmadd_ps(v, sv, acc[4 * i + t]);
            }
        }
    }
    return ct_reduce16(acc);
}

/* Rows [r0, r1) x n tokens through gemm4 / gemm4_q4 (dtype DT) in 64-row chunks (weights
   L2-resident), each chunk token block by token block (the block's activations stay in L1):
   the first block reads the chunk from DRAM 2 rows at a time (stream_rows; INT4 gemm4_q4 with
   far prefetch), the later ones find it in L2 and take 4-row blocks, the next 4
   rows prefetched into L1; token blocks as even as possible
   (37 in blocks of at most 5: 5,5,5,5,5,4,4,4). */
ALWAYS_INLINE void gemm_rows(const ct_mat *w, const ct_dtype DT, const float *bias, const float *x,
                             float *y, int n, int r0, int r1) {
    const int R = w->rows, C = w->cols;
    /* tokens per block: 4 up to 1024 columns, 5 above (measured best on Zen 4: 90-100 GFLOP/s
       of a 111 GFLOP/s FMA peak per core) */
    const int tmax = DT == CT_DT_U8 ? 4 : C <= 1024 ? 4 : GT;
    const int nb = (n + tmax - 1) / tmax, xs = C + 16;
    /* the activations copied rows C + 16 floats apart (64 bytes apart modulo 4 KiB: no L1 set
       conflicts between the tokens of a block): all n at once when they fit, else per block */
    /* (without the buffer, the activations are read where they are: the same results) */
    float *const gx = ct_tbuf_get(&gx_tb, &gx_tl);
    const int all = gx && (size_t)n * xs <= GX_FLOATS, blk = gx && !all && (size_t)tmax * xs <= GX_FLOATS;
    /* a pool job's row chunks of one x copy it once per thread (ct_xq_tls, kernels/cpu.h) */
    ct_xq_reuse *const key = &ct_xq_tls;
    if (all && (!key->on || key->x != x || key->n != n || key->cols != C || key->q4 != CT_XQ_KEY_GX)) {
        for (int t = 0; t < n; t++) memcpy(gx + (size_t)t * xs, x + (size_t)t * C, (size_t)C * sizeof(float));
        if (key->on) *key = (ct_xq_reuse){1, x, n, C, CT_XQ_KEY_GX};
    } else if (blk && key->q4 == CT_XQ_KEY_GX) {
        key->x = NULL; /* the blocks below overwrite the buffer */
    }
    for (int rc = r0; rc < r1; rc += RCHUNK) {
        const int rce = rc + RCHUNK < r1 ? rc + RCHUNK : r1;
        for (int b = 0, t = 0; b < nb; b++) {
            const int nt = n / nb + (b < n % nb);
            const float *xt = all ? gx + (size_t)t * xs : x + (size_t)t * C;
            float *yt = y + (size_t)t * R;
            t += nt;
            if (blk) {
                for (int tt = 0; tt < nt; tt++) memcpy(gx + (size_t)tt * xs, xt + (size_t)tt * C, (size_t)C * sizeof(float));
                xt = gx;
            }
            const int xst = all || blk ? xs : C;
            if (DT != CT_DT_U8 && b == 0) { /* rows from DRAM: streaming passes over 2 rows */
                if ((size_t)nt * C * sizeof(float) > KB_MIN_BYTES) {
                    if (DT == CT_DT_BF16) stream_kb_bf16(w, bias, xt, xst, yt, rc, rce, nt);
                    if (DT == CT_DT_F16) stream_kb_f16(w, bias, xt, xst, yt, rc, rce, nt);
                    if (DT == CT_DT_F32) stream_kb_f32(w, bias, xt, xst, yt, rc, rce, nt);
                    if (DT == CT_DT_I8) stream_kb_i8(w, bias, xt, xst, yt, rc, rce, nt);
                    continue;
                }
                switch (nt) {
                case 1: stream_rows(w, DT, bias, xt, xst, yt, rc, rce, 1, 0, 0); break;
                case 2: stream_rows(w, DT, bias, xt, xst, yt, rc, rce, 2, 0, 0); break;
                case 3: stream_rows(w, DT, bias, xt, xst, yt, rc, rce, 3, 0, 0); break;
                case 4: stream_rows(w, DT, bias, xt, xst, yt, rc, rce, 4, 0, 0); break;
                default: stream_rows(w, DT, bias, xt, xst, yt, rc, rce, 5, 0, 0); break;
                }
                continue;
            }
            for (int r = rc; r < rce; r += 4) {
                const int nr = rce - r < 4 ? rce - r : 4;
                const void *p[4];
                const float *sc[4];
                const char *pn[4], *const *pf = r + 4 < rce ? pn : NULL;
                for (int i = 0; i < 4; i++) {
                    p[i] = ct_row_ptr(w, r + (i < nr ? i : nr - 1));
                    sc[i] = ct_row_sc(w, r + (i < nr ? i : nr - 1));
                    pn[i] = (const char *)ct_row_ptr(w, r + 4 + i < rce ? r + 4 + i : rce - 1);
                }
                if (DT == CT_DT_U8) {
                    __m512 red;
                    const uint8_t *const *pq = (const uint8_t *const *)p;
                    switch (nt) {
                    case 1: red = gemm4_q4(pq, sc, xt, C, xst, 1, b == 0); break;
                    case 2: red = gemm4_q4(pq, sc, xt, C, xst, 2, b == 0); break;
                    case 3: red = gemm4_q4(pq, sc, xt, C, xst, 3, b == 0); break;
                    default: red = gemm4_q4(pq, sc, xt, C, xst, 4, b == 0); break;
                    }
                    ct_store_block(w, bias, red, yt, R, r, nr, nt);
                    continue;
                }
                float o[4 * GT];
                switch (nt) {
                case 1: gemm4(p, DT, xt, C, xst, 1, pf, o); break;
                case 2: gemm4(p, DT, xt, C, xst, 2, pf, o); break;
                case 3: gemm4(p, DT, xt, C, xst, 3, pf, o); break;
                case 4: gemm4(p, DT, xt, C, xst, 4, pf, o); break;
                default: gemm4(p, DT, xt, C, xst, 5, pf, o); break;
                }
                for (int tt = 0; tt < nt; tt++)
                    for (int i = 0; i < nr; i++)
                        yt[(size_t)tt * R + r + i] = ct_post_scale(w, r + i) * o[4 * tt + i] + (bias ? bias[r + i] : 0.0f);
            }
        }
    }
}

static void gemm_bf16(const ct_mat *w, const float *b, const float *x, float *y, int n, int r0, int r1) {
    gemm_rows(w, CT_DT_BF16, b, x, y, n, r0, r1);
}
static void gemm_f16(const ct_mat *w, const float *b, const float *x, float *y, int n, int r0, int r1) {
    gemm_rows(w, CT_DT_F16, b, x, y, n, r0, r1);
}
static void gemm_f32w(const ct_mat *w, const float *b, const float *x, float *y, int n, int r0, int r1) {
    gemm_rows(w, CT_DT_F32, b, x, y, n, r0, r1);
}
static void gemm_i8(const ct_mat *w, const float *b, const float *x, float *y, int n, int r0, int r1) {
    gemm_rows(w, CT_DT_I8, b, x, y, n, r0, r1);
}
static void gemm_q4(const ct_mat *w, const float *b, const float *x, float *y, int n, int r0, int r1) {
    gemm_rows(w, CT_DT_U8, b, x, y, n, r0, r1);
}

static void gemm_f32(const ct_mat *w, const float *bias, const float *x, float *y, int n, int r0,
                     int r1) {
    const int R = w->rows, C = w->cols;
    for (int rc = r0; rc < r1; rc += RCHUNK) {
        const int rce = rc + RCHUNK < r1 ? rc + RCHUNK : r1;
        if (w->dtype == CT_DT_U8) {
            for (int t = 0; t < n; t += 4) {
                const int nt = n - t < 4 ? n - t : 4;
                const float *xt = x + (size_t)t * C;
                float *yt = y + (size_t)t * R;
                for (int r = rc; r < rce; r += 4) {
                    const int nr = rce - r < 4 ? rce - r : 4;
                    __m512 red;
                    switch (nt) {
                    case 1: red = q4_blk4(w, xt, r, nr, 1); break;
                    case 2: red = q4_blk4(w, xt, r, nr, 2); break;
                    case 3: red = q4_blk4(w, xt, r, nr, 3); break;
                    default: red = q4_blk4(w, xt, r, nr, 4); break;
                    }
                    ct_store_block(w, bias, red, yt, R, r, nr, nt);
                }
            }
            continue;
        }
        for (int t = 0; t < n; t += 2) {
            const int nt = n - t < 2 ? n - t : 2;
            const float *xt = x + (size_t)t * C;
            float *yt = y + (size_t)t * R;
            for (int r = rc; r < rce; r += 4) {
                const int nr = rce - r < 4 ? rce - r : 4;
                float o[8];
                if (nt == 1) blk4e(w, xt, r, nr, t == 0, 1, o);
                else blk4e(w, xt, r, nr, t == 0, 2, o);
                for (int tt = 0; tt < nt; tt++)
                    for (int i = 0; i < nr; i++)
                        yt[(size_t)tt * R + r + i] = ct_post_scale(w, r + i) * o[4 * tt + i] + (bias ? bias[r + i] : 0.0f);
            }
        }
    }
}

/* f32 activations: blk4e / q4_blk4 for n < GEMM_MIN_TOKENS, the prefill GEMM above (the same
   arithmetic) from there. */
static void f32_rows(const ct_mat *w, const float *bias, const float *x, float *y, int n, int r0,
                     int r1) {
    if (n < GEMM_MIN_TOKENS) {
        gemm_f32(w, bias, x, y, n, r0, r1);
        return;
    }
    switch (w->dtype) {
    case CT_DT_BF16: gemm_bf16(w, bias, x, y, n, r0, r1); break;
    case CT_DT_F16: gemm_f16(w, bias, x, y, n, r0, r1); break;
    case CT_DT_I8: gemm_i8(w, bias, x, y, n, r0, r1); break;
    case CT_DT_U8: gemm_q4(w, bias, x, y, n, r0, r1); break;
    default: gemm_f32w(w, bias, x, y, n, r0, r1); break;
    }
}

static int vnni_on; /* set by ct_matmul_vnni_enable */

int ct_matmul_vnni_enable(int on) {
    vnni_on = on;
    return vnni_on;
}

void ct_matmul_rows_avx512(const ct_mat *w, const float *bias, const float *x, float *y, int n,
                           int r0, int r1) {
    if (ct_xq_active(w)) { /* integer-dot mode: VPDPBUSD where the CPU has AVX-512 VNNI (it
                                 lacks BF16: Cascade Lake, Ice Lake, Tiger Lake), else VPMADDUBSW */
        if (vnni_on) ct_matmul_rows_vnni(w, bias, x, y, n, r0, r1);
        else ct_matmul_rows_dot_avx2(w, bias, x, y, n, r0, r1);
        return;
    }
    /* A token's arithmetic (the same accumulators per row and token, the same reduction tree)
       never depends on how many tokens share the call, so a stream decoded in a batch gets
       bit-for-bit its solo result, and a prompt its result for any pass size. */
    f32_rows(w, bias, x, y, n, r0, r1);
}

/* ---- AVX-512 BF16 (VDPBF16PS) ------------------------------------------------------- */

#define DP_MAXC 8192 /* widest row the bf16 activation buffer holds */
#define DP_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))

#define DP_T 6 /* most tokens per block (4 rows x 6 tokens = 24 accumulators) */
#define DP_XELEMS (64 * (3072 + 32)) /* dp_xb: 64 tokens of 3072 columns, 388 KiB per thread */
/* dp_xb: bf16 activations, zero-padded rows (a thread's buffer, kernels/tbuf.h) */
static ct_tbuf dp_tb = CT_TBUF(sizeof(uint16_t) * DP_XELEMS);
static _Thread_local void *dp_tl;

/* Rounds nt tokens of x[.][C] to bf16 into d, rows xs apart, zero-padded to cp (C rounded up to
   32) columns. */
DP_TARGET static void dp_convert(const float *x, int C, int cp, int xs, int nt, uint16_t *d0) {
    for (int t = 0; t < nt; t++) {
        const float *xt = x + (size_t)t * C;
        uint16_t *d = d0 + (size_t)t * xs;
        for (int k = 0; k < cp; k += 32) {
            __mmask16 m0 = C - k >= 16 ? 0xffff : C - k <= 0 ? 0 : (__mmask16)((1u << (C - k)) - 1);
            __mmask16 m1 = C - k - 16 >= 16 ? 0xffff
                           : C - k - 16 <= 0 ? 0
                                             : (__mmask16)((1u << (C - k - 16)) - 1);
            __m512bh v = _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(m1, xt + k + 16),
                                             _mm512_maskz_loadu_ps(m0, xt + k));
            _mm512_storeu_si512((void *)(d + k), (__m512i)v);
        }
    }
}

/* 4 rows p[4] x NT tokens xb[NT][xs] (bf16, zero-padded) with VDPBF16PS: per (row, token) one
   accumulator over the 32-column chunks (the last one masked), reduced by ct_reduce16 as
   lane 4 * t + i of red[0] (tokens 0-3) and lane 4 * (t - 4) + i of red[1] (tokens 4-5). The
   reduction tree is the same for every slot, so a token's result does not depend on its place
   in the block. Named accumulators: GCC keeps an array of them in memory. */
#define DP_T1(t, A0, A1, A2, A3)                                                                \
    if (NT > t) {                                                                               \
        __m512bh xv = (__m512bh)_mm512_loadu_si512((const void *)(xb + (size_t)t * xs + k));    \
        A0 = _mm512_dpbf16_ps(A0, w0, xv);                                                      \
        A1 = _mm512_dpbf16_ps(A1, w1, xv);                                                      \
        A2 = _mm512_dpbf16_ps(A2, w2, xv);                                                      \
        A3 = _mm512_dpbf16_ps(A3, w3, xv);                                                      \
    }
DP_TARGET ALWAYS_INLINE void dp_gemm4(const uint16_t *const *p, const char *const *pf, int C,
                                      const uint16_t *xb, int xs, const int NT, __m512 *red) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0,
           a8 = a0, a9 = a0, a10 = a0, a11 = a0, a12 = a0, a13 = a0, a14 = a0, a15 = a0, a16 = a0,
           a17 = a0, a18 = a0, a19 = a0, a20 = a0, a21 = a0, a22 = a0, a23 = a0;
    for (int k = 0; k < C; k += 32) {
        const __mmask32 m = C - k >= 32 ? 0xffffffffu : (__mmask32)((1u << (C - k)) - 1);
        if (pf) /* the next 4-row block's weights into L1 while this one computes */
            for (int i = 0; i < 4; i++) _mm_prefetch(pf[i] + (size_t)k * 2, _MM_HINT_T0);
        const __m512bh w0 = (__m512bh)_mm512_maskz_loadu_epi16(m, p[0] + k),
                       w1 = (__m512bh)_mm512_maskz_loadu_epi16(m, p[1] + k),
                       w2 = (__m512bh)_mm512_maskz_loadu_epi16(m, p[2] + k),
                       w3 = (__m512bh)_mm512_maskz_loadu_epi16(m, p[3] + k);
        DP_T1(0, a0, a4, a8, a12)
        DP_T1(1, a1, a5, a9, a13)
        DP_T1(2, a2, a6, a10, a14)
        DP_T1(3, a3, a7, a11, a15)
        DP_T1(4, a16, a18, a20, a22)
        DP_T1(5, a17, a19, a21, a23)
    }
    const __m512 lo[16] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15};
    red[0] = ct_reduce16(lo);
    if (NT > 4) {
        const __m512 z = _mm512_setzero_ps();
        const __m512 hi[16] = {a16, a17, z, z, a18, a19, z, z, a20, a21, z, z, a22, a23, z, z};
        red[1] = ct_reduce16(hi);
    } else {
        red[1] = _mm512_setzero_ps();
    }
}
#undef DP_T1

/* BF16 weights, bf16-rounded activations: rows in 64-row chunks (weights L2-resident), each
   chunk token block by token block (at most 6 tokens, as even as possible), 4-row blocks
   inside with the next 4 rows prefetched. The activations are converted once per call when
   they fit dp_xb, else per block, rows cp + 32 elements apart (no L1 set conflicts). */
DP_TARGET static void gemm_dp(const ct_mat *w, const float *bias, const float *x, float *y, int n,
                              int r0, int r1) {
    const int R = w->rows, C = w->cols, cp = (C + 31) & ~31, xs = cp + 32;
    const int nb = (n + DP_T - 1) / DP_T, all = (size_t)n * xs <= DP_XELEMS;
    uint16_t *const dp_xb = dp_tl; /* the caller got it (ct_matmul_rows_avx512bf16) */
    /* a pool job's row chunks of one x convert it once per thread (ct_xq_tls, kernels/cpu.h) */
    ct_xq_reuse *key = &ct_xq_tls;
    if (all && (!key->on || key->x != x || key->n != n || key->cols != C || key->q4 != CT_XQ_KEY_DP)) {
        dp_convert(x, C, cp, xs, n, dp_xb);
        if (key->on) *key = (ct_xq_reuse){1, x, n, C, CT_XQ_KEY_DP};
    } else if (!all && key->q4 == CT_XQ_KEY_DP) {
        key->x = NULL; /* the passes below overwrite the buffer */
    }
    for (int rc = r0; rc < r1; rc += RCHUNK) {
        const int rce = rc + RCHUNK < r1 ? rc + RCHUNK : r1;
        for (int b = 0, t = 0; b < nb; b++) {
            const int nt = n / nb + (b < n % nb);
            const uint16_t *xb = dp_xb + (all ? (size_t)t * xs : 0);
            if (!all) dp_convert(x + (size_t)t * C, C, cp, xs, nt, dp_xb);
            float *yt = y + (size_t)t * R;
            t += nt;
            for (int r = rc; r < rce; r += 4) {
                const int nr = rce - r < 4 ? rce - r : 4;
                const uint16_t *p[4];
                const char *pn[4], *const *pf = r + 4 < rce ? pn : NULL;
                for (int i = 0; i < 4; i++) {
                    p[i] = (const uint16_t *)w->data + (size_t)(r + (i < nr ? i : nr - 1)) * C;
                    pn[i] = (const char *)((const uint16_t *)w->data + (size_t)(r + 4 + i < rce ? r + 4 + i : rce - 1) * C);
                }
                __m512 red[2];
                switch (nt) {
                case 1: dp_gemm4(p, pf, C, xb, xs, 1, red); break;
                case 2: dp_gemm4(p, pf, C, xb, xs, 2, red); break;
                case 3: dp_gemm4(p, pf, C, xb, xs, 3, red); break;
                case 4: dp_gemm4(p, pf, C, xb, xs, 4, red); break;
                case 5: dp_gemm4(p, pf, C, xb, xs, 5, red); break;
                default: dp_gemm4(p, pf, C, xb, xs, 6, red); break;
                }
                ct_store_block(w, bias, red[0], yt, R, r, nr, nt < 4 ? nt : 4);
                if (nt > 4) ct_store_block(w, bias, red[1], yt + (size_t)4 * R, R, r, nr, nt - 4);
            }
        }
    }
}


/* ---- AMX-BF16 (TDPBF16PS) ----------------------------------------------------------- */
/* A prompt's calls (ct_mm_prompt) over BF16 weights, cols % 32 == 0. The activations are split once per
   pass into x = hi + lo with hi = bf16(x) and lo = bf16(x - hi) and packed as AMX B tiles
   ([k/2][16 tokens][2]); weight rows are A tiles loaded straight from the matrix, and each
   C tile accumulates A.hi + A.lo. bf16 x bf16 products are exact in f32, so the only error
   beyond f32 accumulation order is |x - hi - lo| <= 2^-17 |x|: the result matches the f32
   kernels to about 1e-10 NMSE. With the bf16-activation mode on, only hi is used (half
   the tile work, activations rounded to bf16). Rows are handled in 16-row blocks from r0
   (the caller splits rows at multiples of CT_ROW_ALIGN = 16); the rows of a last partial
   block use the f32 kernel (or VDPBF16PS in bf16-activation mode). INT8 and INT4 weights
   are dequantized 16 rows at a time into bf16 tiles: INT8 exactly (q, row scale applied at
   the store), INT4 as bf16(scale * q) (2^-9 relative, far below the INT4 step). */

#define AMX_TARGET                                                                              \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,amx-tile,amx-bf16")))
#define AMX_PAIRS (64 * 3072 / 2) /* bf16 pairs per packed buffer: 64 tokens of 3072 columns */

#define AMX_WMAXC 6144 /* widest INT8/INT4 row dequantized to bf16 for the tiles */
/* A thread's buffers of the tiles (kernels/tbuf.h) */
typedef struct {
    _Alignas(64) uint32_t hi[AMX_PAIRS], lo[AMX_PAIRS]; /* the activations' bf16 pairs, B-tile order */
    _Alignas(64) uint16_t w[16 * AMX_WMAXC];            /* 16 dequantized rows */
} amx_buf;
static ct_tbuf amx_tb = CT_TBUF(sizeof(amx_buf));
static _Thread_local void *amx_tl;

/* Rows [r, r + nr) of an INT8 (q exactly, row scale applied at the store) or INT4
   (bf16(scale * q)) matrix as bf16 into amx_w. */
AMX_TARGET static void amx_dequant(const ct_mat *w, int r, int nr, uint16_t *amx_w) {
    const int C = w->cols;
    for (int i = 0; i < nr; i++) {
        const uint8_t *p = ct_row_ptr(w, r + i);
        uint16_t *d = amx_w + (size_t)i * C;
        if (w->dtype == CT_DT_I8) {
            for (int k = 0; k < C; k += 32) {
                __m512i q = _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)(p + k)));
                __m512 a = _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm512_castsi512_si256(q)));
                __m512 b = _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm512_extracti64x4_epi64(q, 1)));
                _mm512_storeu_si512((void *)(d + k), (__m512i)_mm512_cvtne2ps_pbh(b, a));
            }
        } else {
            const float *sc = ct_row_sc(w, r + i);
            for (int g = 0; g < C / CT_Q4_GROUP; g++) {
                __m512 lo, hi, s = _mm512_set1_ps(sc[g]);
                q4_group(p, g, &lo, &hi);
                lo = _mm512_mul_ps(lo, s);
                hi = _mm512_mul_ps(hi, s);
                _mm512_storeu_si512((void *)(d + g * 32), (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
            }
        }
    }
}

static int amx_on;    /* set by ct_matmul_amx_enable */
static int bf16act_on; /* set by ct_matmul_bf16act_enable */


/* Packs tokens [0, nt) of x[.][C] as bf16 pairs (hi and, when lo_too, lo) into B-tile order
   ([16-token block][C/2 pairs][16 tokens]), 16 tokens x 32 columns at a time through a
   register transpose; the token columns of a last partial block are zeros. */
AMX_TARGET static void amx_pack(const float *x, int C, int nt, int lo_too, uint32_t *amx_hi, uint32_t *amx_lo) {
    const int P = C / 2;
    for (int t0 = 0; t0 < nt; t0 += 16) {
        const int m = nt - t0 < 16 ? nt - t0 : 16;
        uint32_t *const oh = amx_hi + (size_t)(t0 / 16) * P * 16, *const ol = amx_lo + (size_t)(t0 / 16) * P * 16;
        for (int k = 0; k < C; k += 32) {
            __m512i h[16], l[16];
            for (int t = 0; t < 16; t++) {
                h[t] = l[t] = _mm512_setzero_si512();
                if (t >= m) continue;
                const float *xs = x + (size_t)(t0 + t) * C + k;
                const __m512 a = _mm512_loadu_ps(xs), b = _mm512_loadu_ps(xs + 16);
                h[t] = (__m512i)_mm512_cvtne2ps_pbh(b, a); /* dword j: columns k + 2j, k + 2j + 1 */
                if (lo_too) {
                    /* hi back to f32: the low 256 bits of h are bf16(a), the high bf16(b) */
                    const __m512 ha = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(h[t])), 16));
                    const __m512 hb = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(h[t], 1)), 16));
                    l[t] = (__m512i)_mm512_cvtne2ps_pbh(_mm512_sub_ps(b, hb), _mm512_sub_ps(a, ha));
                }
            }
            ct_tr16x16(h);
            for (int j = 0; j < 16; j++) _mm512_store_si512((void *)(oh + (size_t)(k / 2 + j) * 16), h[j]);
            if (lo_too) {
                ct_tr16x16(l);
                for (int j = 0; j < 16; j++) _mm512_store_si512((void *)(ol + (size_t)(k / 2 + j) * 16), l[j]);
            }
        }
    }
}

/* y[t][r + i] = (scale) * tile[i][t] + bias[r + i] for 16 rows i and tokens t < nt: the 16 x 16
   tile transposed in registers, one 16-row store per token. */
AMX_TARGET static void amx_store(const ct_mat *w, const float *tile, const float *bias, float *y,
                                 int R, int r, int nt) {
    __m512i v[16];
    for (int i = 0; i < 16; i++) v[i] = _mm512_loadu_si512((const void *)(tile + i * 16));
    ct_tr16x16(v);
    const __m512 b = bias ? _mm512_loadu_ps(bias + r) : _mm512_setzero_ps();
    for (int t = 0; t < nt; t++) {
        __m512 o = _mm512_castsi512_ps(v[t]);
        if (w->dtype == CT_DT_I8) o = _mm512_mul_ps(_mm512_loadu_ps(w->scales + r), o);
        _mm512_storeu_ps(y + (size_t)t * R + r, _mm512_add_ps(o, b));
    }
}

/* Rows [r0, r1) (multiples of 16 from r0) x nb <= 4 16-token blocks of the packed activations in
   one pass over the weights: per 16-row block one weight tile a step (tile 4: the BF16 rows, or
   INT8 / INT4 rows dequantized into B->w) serves every block's accumulator (tiles 0-3), each
   taking hi then lo (the blocks' hi and lo go through tiles 5-7 in turn), so every element gets
   the same tile operations in the same order whatever the token count. A 2 x 2 blocking of 32
   rows by two token blocks read each weight tile twice for three or four blocks (the BF16
   prompt of 37 positions took 18% longer, of 20 positions 6-9%: docs/BENCH.md "Issue 15,
   twentieth sitting"). */
AMX_TARGET static void amx_rows(const ct_mat *w, const float *bias, amx_buf *B, float *yt, int nt, int split,
                                int r0, int r1) {
    const int R = w->rows, C = w->cols, nb = (nt + 15) / 16, bf = w->dtype == CT_DT_BF16;
    const size_t ws = (size_t)C * 2, bo1 = (size_t)(C / 2) * 16, bo2 = 2 * bo1, bo3 = 3 * bo1;
    const uint32_t *const hi = B->hi, *const lo = B->lo;
    float tile[4][256];
    for (int r = r0; r < r1; r += 16) {
        const uint16_t *a = (const uint16_t *)w->data + (size_t)r * C;
        if (!bf) { /* INT8 / INT4: dequantize the 16 rows */
            amx_dequant(w, r, 16, B->w);
            a = B->w;
        }
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        for (int k = 0; k < C; k += 32) {
            if (bf) /* the next 16-row block, same columns */
                for (int i = 0; i < 16; i++) _mm_prefetch((const char *)(a + (size_t)(16 + i) * C + k), _MM_HINT_T0);
            const size_t kb = (size_t)(k / 2) * 16;
            _tile_loadd(4, a + k, ws);
            _tile_loadd(5, hi + kb, 64);
            _tile_dpbf16ps(0, 4, 5);
            if (split) {
                _tile_loadd(6, lo + kb, 64);
                _tile_dpbf16ps(0, 4, 6);
            }
            if (nb > 1) {
                _tile_loadd(7, hi + bo1 + kb, 64);
                _tile_dpbf16ps(1, 4, 7);
                if (split) {
                    _tile_loadd(5, lo + bo1 + kb, 64);
                    _tile_dpbf16ps(1, 4, 5);
                }
            }
            if (nb > 2) {
                _tile_loadd(6, hi + bo2 + kb, 64);
                _tile_dpbf16ps(2, 4, 6);
                if (split) {
                    _tile_loadd(7, lo + bo2 + kb, 64);
                    _tile_dpbf16ps(2, 4, 7);
                }
            }
            if (nb > 3) {
                _tile_loadd(5, hi + bo3 + kb, 64);
                _tile_dpbf16ps(3, 4, 5);
                if (split) {
                    _tile_loadd(6, lo + bo3 + kb, 64);
                    _tile_dpbf16ps(3, 4, 6);
                }
            }
        }
        _tile_stored(0, tile[0], 64);
        _tile_stored(1, tile[1], 64);
        _tile_stored(2, tile[2], 64);
        _tile_stored(3, tile[3], 64);
        for (int b = 0; b < nb; b++)
            amx_store(w, tile[b], bias, yt + (size_t)b * 16 * R, R, r, nt - 16 * b < 16 ? nt - 16 * b : 16);
    }
}

AMX_TARGET static void gemm_amx(const ct_mat *w, const float *bias, const float *x, float *y,
                                int n, int r0, int r1) {
    const int R = w->rows, C = w->cols, P = C / 2, split = !bf16act_on || w->dtype != CT_DT_BF16;
    amx_buf *const B = amx_tl; /* the caller got it (ct_matmul_rows_avx512bf16) */
    const int tp = (AMX_PAIRS / P) / 16 * 16 < 64 ? (AMX_PAIRS / P) / 16 * 16 : 64; /* tokens/pass */
    ct_amx_cfg cfg;
    ct_amx_cfg_full(&cfg);
    _tile_loadconfig(&cfg);
    const int rfull = r0 + (r1 - r0) / 16 * 16;
    for (int t0 = 0; t0 < n; t0 += tp) {
        const int nt = n - t0 < tp ? n - t0 : tp;
        const float *xt = x + (size_t)t0 * C;
        float *yt = y + (size_t)t0 * R;
        /* a pool job's row chunks of one x pack it once per thread (ct_xq_tls, kernels/cpu.h) */
        ct_xq_reuse *key = &ct_xq_tls;
        const int kid = CT_XQ_KEY_AMX + split;
        if (n > tp || !key->on || key->x != x || key->n != n || key->cols != C || key->q4 != kid) {
            amx_pack(xt, C, nt, split, B->hi, B->lo);
            if (key->on) *key = (ct_xq_reuse){1, x, n, C, kid}; /* n > tp: never matched */
        }
        amx_rows(w, bias, B, yt, nt, split, r0, rfull);
    }
    _tile_release();
    if (rfull < r1) {
        if (bf16act_on && w->dtype == CT_DT_BF16 && ct_tbuf_get(&dp_tb, &dp_tl)) gemm_dp(w, bias, x, y, n, rfull, r1);
        else f32_rows(w, bias, x, y, n, rfull, r1);
    }
}

int ct_matmul_amx_enable(int on) {
    amx_on = on;
    return amx_on;
}

int ct_matmul_bf16act_enable(int on) {
    bf16act_on = on;
    return bf16act_on;
}

void ct_matmul_rows_avx512bf16(const ct_mat *w, const float *bias, const float *x, float *y, int n,
                               int r0, int r1) {
    const int q = w->dtype == CT_DT_I8 || w->dtype == CT_DT_U8;
    if (ct_xq_active(w)) {
        ct_matmul_rows_vnni(w, bias, x, y, n, r0, r1);
        return;
    }
    /* the tiles take a prompt's calls (ct_mm_prompt), every pass size alike: decode-sized BF16
       calls read memory faster through the f32 kernels (30 against 23 GB/s for one token on
       the Sapphire Rapids VM, docs/BENCH.md "Issue 15, nineteenth sitting"), and xq INT8/INT4
       matrices took the integer-dot mode above, twice as fast as dequantized tiles at 16-40
       tokens there. A thread that cannot get the tiles' or the bf16 activations' buffer takes
       the next path. */
    if ((w->dtype == CT_DT_BF16 || (q && w->cols <= AMX_WMAXC)) && amx_on && ct_mm_prompt &&
        w->cols % 32 == 0 && w->cols / 2 * 16 <= AMX_PAIRS && ct_tbuf_get(&amx_tb, &amx_tl))
        gemm_amx(w, bias, x, y, n, r0, r1);
    else if (w->dtype == CT_DT_BF16 && bf16act_on && n >= CT_DP_MIN_TOKENS && w->cols <= DP_MAXC &&
             ct_tbuf_get(&dp_tb, &dp_tl))
        gemm_dp(w, bias, x, y, n, r0, r1);
    else
        ct_matmul_rows_avx512(w, bias, x, y, n, r0, r1);
}
