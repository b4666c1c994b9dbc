/* AVX-512 VNNI matmul for the integer-dot mode (ct_mat.xq, INT8/INT4 weights): each call
   quantizes its tokens' activations per 32-column group to int8 (bit-identical to
   ct_xq_quantize) and VPDPBUSD multiplies them with the weights fed as unsigned bytes (INT8
   q ^ 0x80 = q + 128, INT4 nibbles q + 8); every integer accumulator starts at -offset * (the
   sum of the activation bytes it multiplies), so the offset cancels exactly. A group's lanes
   are summed in integers before any scale is applied, and each (row, token) keeps fixed
   phase accumulators (INT8: even and odd groups; INT4: the four groups of a 128-column
   step) summed in a fixed order, so results do not depend on the batch size, the thread
   count or which of the kernels ran:
   - decode-sized calls: 4 rows x up to 4 tokens per block, the rows' lanes summed by a 4x4
     transpose-add. INT8 steps 64 columns (two groups); INT4 steps 128 columns (four groups)
     per 64-byte load, its low and high nibbles two VPDPBUSD operands whose lane j lies in
     the same group j / 4. INT4 activations are stored in the order the nibbles unpack to:
     per 128 columns, [g0..g3 columns 0-15 | g0..g3 columns 16-31] (a last 64-column step
     holds g0, g1 and zeros), and each step's four group scales spread over 16 lanes. INT8
     calls of 2-4 tokens of up to XQ_RL1 / (4 n) columns transpose the four rows' bytes
     instead, once per step, against activations with each dword repeated over its 128-bit
     block, which leaves the same integer sums without a per-token transpose;
   - prompt-sized calls: 16-row panels packed dword-interleaved per thread, each token's
     activation dwords broadcast, one integer accumulator per (16 rows, token, group);
   - INT8 and INT4 matrices packed at load into the same panels (ct_mat.pan; INT8: the two of
     each 32 rows interleaved per 64-column step, so a pair is one stream): every call of 4 (INT8)
     or 3 (INT4) or more tokens reads those, with no packing per call. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/cpu.h"
#include "kernels/matrow.h"
#include "kernels/tbuf.h"
#include "kernels/x86/simd512.h"

#define VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))
/* The panel functions stay out of line and out of interprocedural cloning, as they were measured
   (docs/KERNELS.md "Integer-dot panels"). */
#if defined(__clang__)
#define XQ_NOIPA __attribute__((noinline))
#else
#define XQ_NOIPA __attribute__((noipa))
#endif
#define XQ_TOK      16  /* tokens quantized per pass */
#define XQ_RCHUNK   256 /* rows per pass when the tokens do not fit one pass */
#define XQ_RBLOCK   64  /* rows that stay in L2 while every 4-token block passes over them */
/* INT8 calls of 2-4 tokens whose repeated activations (4 bytes per column and token) fit
   XQ_RL1 bytes of L1 take the transposed-row block (xq_blk4_i8 with TR; 32 KiB measured slower at
   4 tokens of 2048 columns, docs/BENCH.md) */
#define XQ_RL1   16384
#define XQ_RMAXC (XQ_RL1 / 8) /* widest such call (2 tokens) */
/* Calls of at least XQ_PMIN8 (INT8) / XQ_PMIN4 (INT4) tokens and at most
   XQ_PMAXC columns run on 16-row panels, XQ_PTOK tokens per pass (below that,
   packing costs more than it saves: docs/KERNELS.md "Integer-dot panels"). Decode calls
   (CT_DECODE_TOK_CAP, 4 tokens) stay below. */
#define XQ_PMIN8 8
#define XQ_PMIN4 8
#define XQ_PTOK  64
#define XQ_PMAXC 4096
/* INT4 weight prefetch per row: XQ_PFB bytes ahead into L1 and XQ_PFB2 bytes ahead
   into L2 (best of 0.5-8 KiB x 8-32 KiB on the DRAM-bound talker and predictor,
   docs/BENCH.md); its group scales (a separate stream, a quarter of the weight
   bytes) a quarter as far ahead. INT8 rows: CT_PF_BLK (kernels/matrow.h). */
#ifndef XQ_PFB
#define XQ_PFB 1024
#endif
#define XQ_PFB2 CT_PF_L2

/* Decode-sized calls: XQ_TOK tokens of up to CT_XQ_MAXC columns. */
typedef struct {
    int8_t q[XQ_TOK][CT_XQ_MAXC + 64];             /* quantized activations (INT4: permuted, padded) */
    int32_t corr[XQ_TOK][CT_XQ_MAXC / 4];          /* -offset * sum of each lane's activation bytes */
    float s[XQ_TOK][CT_XQ_MAXC / CT_Q4_GROUP + 4]; /* group scales (INT4: zero past the last group) */
    float s4[XQ_TOK][CT_XQ_MAXC / 8 + 16];         /* INT4: per 128-column step its four group
                                                      scales over 16 lanes (lane j: group j / 4) */
    _Alignas(64) int8_t r[4][4 * XQ_RMAXC];        /* INT8 calls of 2-4 tokens (xq_rep): q with
                                                      each dword repeated over its 128-bit block */
    int32_t c4[4][XQ_RMAXC / 4];                   /* their corr summed per 128-bit block */
} xq_dbuf;

/* Panel calls: XQ_PTOK tokens of up to XQ_PMAXC columns, in the same layouts. */
typedef struct {
    int8_t q[XQ_PTOK][XQ_PMAXC + 64];
    float s[XQ_PTOK][XQ_PMAXC / CT_Q4_GROUP + 4];
    int32_t pc[XQ_PTOK][XQ_PMAXC / CT_Q4_GROUP]; /* -offset * sum of a group's activation bytes */
} xq_pbuf;

/* The two share memory: the reuse key (ct_xq_tls) holds the token count, which
   picks the layout, so a key never matches data of the other layout. */
typedef struct {
    union {
        xq_dbuf d;
        xq_pbuf p;
    };
    int32_t corr[XQ_PMAXC / 4]; /* panel quantization scratch: one token's lanes */
    float s4[XQ_PMAXC / 8 + 16];
} xq_buf;

/* A panel: 16 rows' weights as unsigned bytes, dword-interleaved (w[D] lane i =
   row i's four bytes at activation dword D, in the activation layout), and INT4
   group scales (sc[g] lane i: row i). */
typedef struct {
    _Alignas(64) uint8_t w[XQ_PMAXC / 4 + 16][64];
    _Alignas(64) float sc[XQ_PMAXC / CT_Q4_GROUP][16];
} xq_panel;

/* The reuse key's format of INT4 tokens quantized for ct_mat.pan panels at a token count that
   the other INT4 calls hold in the decode layout (keys otherwise: 0 INT8, 1 INT4); INT8 the same. */
#define XQ_KEY_PAN 2
#define XQ_KEY_PAN8 3
/* Calls of at least XQ_PPMIN4 (INT4) / XQ_PPMIN8 (INT8) tokens read a matrix's panels packed at
   load (ct_mat.pan). Fewer keep the row blocks: from memory the panels read one and two tokens'
   weights slower (INT8: three as well, and 3-stream INT8 decode was slower on them), and the code
   predictor's first pass of each frame has two positions: one stream reading both copies of its
   weights lost L3 hits (docs/KERNELS.md) */
#define XQ_PPMIN4 3
#define XQ_PPMIN8 4
#define XQ_PP_PF CT_PF_L2 /* bytes ahead each step of a packed panel prefetches into L2 */

/* A thread's buffers (kernels/tbuf.h: on the heap at its first call; a thread that cannot
   allocate them borrows the spare, one at a time, and its quantized activations are not reused
   across calls then). */
typedef struct {
    xq_buf b;
    xq_panel p, p2;
} xq_scratch;
static _Alignas(64) xq_scratch xq_spare;
static ct_tbuf xq_tb = CT_TBUF_SPARE(sizeof(xq_scratch), &xq_spare);
static _Thread_local void *xq_tl;

/* Quantizes one token x[C] into slot t: q4 selects the INT4 layout and offset
   8, else natural order and offset 128. */
VNNI_TARGET static void xq_quantize_tok(const float *x, int C, int q4, int8_t *q, float *sv, int32_t *corr,
                                        float *s4) {
    const __m512i ones = _mm512_set1_epi8(1);
    const __m512 absm = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
    for (int k = 0; k < C; k += 64) {
        __m128i b[4];
        for (int h = 0; h < 2; h++) { /* group k/32 + h */
            const float *xg = x + k + 32 * h;
            __m512 a0 = _mm512_loadu_ps(xg), a1 = _mm512_loadu_ps(xg + 16);
            float amax =
                _mm512_reduce_max_ps(_mm512_max_ps(_mm512_and_ps(a0, absm), _mm512_and_ps(a1, absm)));
            float inv = 0.0f, s = 0.0f;
            if (amax >= CT_XQ_MIN_AMAX) {
                inv = 127.0f / amax;
                s = amax / 127.0f;
            }
            sv[k / 32 + h] = s;
            const __m512 iv = _mm512_set1_ps(inv);
            b[2 * h] = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(a0, iv)));
            b[2 * h + 1] = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(a1, iv)));
        }
        if (!q4) { /* g0 0-15, g0 16-31, g1 0-15, g1 16-31 */
            for (int i = 0; i < 4; i++) _mm_storeu_si128((__m128i *)(q + k + 16 * i), b[i]);
            __m512i lane =
                _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, _mm512_loadu_si512((const void *)(q + k)));
            _mm512_storeu_si512((void *)(corr + k / 4),
                                _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(lane, 7)));
            continue;
        }
        /* INT4: half j of the 128-column step at K: columns 0-15 of its two groups
       at K + 32 j, columns 16-31 at K + 64 + 32 j */
        const int K = k & ~127, j = (k >> 6) & 1;
        _mm_storeu_si128((__m128i *)(q + K + 32 * j), b[0]);
        _mm_storeu_si128((__m128i *)(q + K + 32 * j + 16), b[2]);
        _mm_storeu_si128((__m128i *)(q + K + 64 + 32 * j), b[1]);
        _mm_storeu_si128((__m128i *)(q + K + 64 + 32 * j + 16), b[3]);
        if (j == 0 && k + 64 == C) { /* a last half step: zeros for the absent groups */
            _mm256_storeu_si256((__m256i *)(q + K + 32), _mm256_setzero_si256());
            _mm256_storeu_si256((__m256i *)(q + K + 96), _mm256_setzero_si256());
            sv[k / 32 + 2] = sv[k / 32 + 3] = 0.0f;
        }
        if (j == 1 || k + 64 == C) {
            const __m512i gi = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
            _mm512_storeu_ps(s4 + K / 8,
                             _mm512_permutexvar_ps(gi, _mm512_castps128_ps512(_mm_loadu_ps(sv + K / 32))));
            __m512i lane =
                _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, _mm512_loadu_si512((const void *)(q + K)));
            lane = _mm512_dpbusd_epi32(lane, ones, _mm512_loadu_si512((const void *)(q + K + 64)));
            _mm512_storeu_si512((void *)(corr + K / 8),
                                _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(lane, 3)));
        }
    }
}

/* An INT8 slot's activations q[C] (C <= XQ_RMAXC) laid out for xq_blk4_i8 with TR: each 64-byte
   vector v of q becomes four, r[4 j + m] = v with dword m of every 128-bit block repeated over
   its block, and c4 holds corr's 128-bit block sums in every lane of the block. */
VNNI_TARGET static void xq_rep(const int8_t *q, const int32_t *corr, int C, int8_t *r, int32_t *c4) {
    for (int j = 0; j < C / 64; j++) {
        const __m512i v = _mm512_loadu_si512((const void *)(q + 64 * j));
        __m512i *o = (__m512i *)(r + 256 * j);
        _mm512_store_si512((void *)o, _mm512_shuffle_epi32(v, (_MM_PERM_ENUM)0x00));
        _mm512_store_si512((void *)(o + 1), _mm512_shuffle_epi32(v, (_MM_PERM_ENUM)0x55));
        _mm512_store_si512((void *)(o + 2), _mm512_shuffle_epi32(v, (_MM_PERM_ENUM)0xaa));
        _mm512_store_si512((void *)(o + 3), _mm512_shuffle_epi32(v, (_MM_PERM_ENUM)0xff));
        __m512i c = _mm512_loadu_si512((const void *)(corr + 16 * j));
        c = _mm512_add_epi32(c, _mm512_shuffle_epi32(c, _MM_PERM_CDAB));
        c = _mm512_add_epi32(c, _mm512_shuffle_epi32(c, _MM_PERM_BADC));
        _mm512_storeu_si512((void *)(c4 + 16 * j), c);
    }
}

/* The four rows' 64-byte vectors v[0..3] transposed per 128-bit block: out[m] lane 4 b + i =
   row i's dword m of block b. */
VNNI_TARGET ALWAYS_INLINE void xq_tr4(const __m512i *v, __m512i *out) {
    const __m512i t0 = _mm512_unpacklo_epi32(v[0], v[1]), t1 = _mm512_unpackhi_epi32(v[0], v[1]);
    const __m512i t2 = _mm512_unpacklo_epi32(v[2], v[3]), t3 = _mm512_unpackhi_epi32(v[2], v[3]);
    out[0] = _mm512_unpacklo_epi64(t0, t2);
    out[1] = _mm512_unpackhi_epi64(t0, t2);
    out[2] = _mm512_unpacklo_epi64(t1, t3);
    out[3] = _mm512_unpackhi_epi64(t1, t3);
}

/* Two consecutive group scales p[0], p[1] spread over the 16 lanes by idx. */
VNNI_TARGET ALWAYS_INLINE __m512 spread2(const float *p, __m512i idx) {
    return _mm512_permutexvar_ps(
        idx, _mm512_castps128_ps512(_mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)p))));
}

/* The four rows' lanes d[0..3] of one token summed per 128-bit block in
   integers (exact): lane 4 b + i = sum of row i's four lanes in block b. */
VNNI_TARGET ALWAYS_INLINE __m512i xq_tadd4(const __m512i *d) {
    const __m512i s01 =
        _mm512_add_epi32(_mm512_unpacklo_epi32(d[0], d[1]), _mm512_unpackhi_epi32(d[0], d[1]));
    const __m512i s23 =
        _mm512_add_epi32(_mm512_unpacklo_epi32(d[2], d[3]), _mm512_unpackhi_epi32(d[2], d[3]));
    return _mm512_add_epi32(_mm512_unpacklo_epi64(s01, s23), _mm512_unpackhi_epi64(s01, s23));
}

/* The four phase accumulators of each token (acc[t] lane 4 b + i: row i, phase
   b) summed as (b0 + b2) + (b1 + b3): lane 4 t + i of the result is row i,
   token t. */
VNNI_TARGET ALWAYS_INLINE __m512 xq_fold4(const __m512 *acc) {
    const __m512 s0 = _mm512_add_ps(_mm512_shuffle_f32x4(acc[0], acc[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                    _mm512_shuffle_f32x4(acc[0], acc[1], _MM_SHUFFLE(3, 2, 3, 2)));
    const __m512 s1 = _mm512_add_ps(_mm512_shuffle_f32x4(acc[2], acc[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                    _mm512_shuffle_f32x4(acc[2], acc[3], _MM_SHUFFLE(3, 2, 3, 2)));
    return _mm512_add_ps(_mm512_shuffle_f32x4(s0, s1, _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(s0, s1, _MM_SHUFFLE(3, 1, 3, 1)));
}

/* The even- and odd-group accumulators of each token (acc[t] lane 4 b + i: row
   i; blocks 0 and 1 both even, 2 and 3 both odd) summed as b0 + b2: lane 4 t +
   i of the result is row i, token t. */
VNNI_TARGET ALWAYS_INLINE __m512 xq_fold2(const __m512 *acc) {
    const __m512 e = _mm512_shuffle_f32x4(_mm512_shuffle_f32x4(acc[0], acc[1], _MM_SHUFFLE(0, 0, 0, 0)),
                                          _mm512_shuffle_f32x4(acc[2], acc[3], _MM_SHUFFLE(0, 0, 0, 0)),
                                          _MM_SHUFFLE(2, 0, 2, 0));
    const __m512 o = _mm512_shuffle_f32x4(_mm512_shuffle_f32x4(acc[0], acc[1], _MM_SHUFFLE(2, 2, 2, 2)),
                                          _mm512_shuffle_f32x4(acc[2], acc[3], _MM_SHUFFLE(2, 2, 2, 2)),
                                          _MM_SHUFFLE(2, 0, 2, 0));
    return _mm512_add_ps(e, o);
}

/* INT8: 4 rows (first nr real, the rest repeat the last) x NT tokens from slots
   t0..: per 64-column step each row's two group sums are formed in integers
   (xq_tadd4, then the quarters of a group added) and accumulated as acc[t] lane
   4 b + i += q * s_group (blocks 0 and 1 the even group, 2 and 3 the odd one:
   one convert and one FMA per token and step).
   TR (2-4 tokens): the four rows' bytes transposed per 128-bit block (xq_tr4, once per step)
   instead of each token's integer lanes (xq_tadd4, once per token): VPDPBUSD against the
   repeated activations (xq_rep) leaves row i's sum over block b in lane 4 b + i, from the
   block's correction, the integers xq_tadd4 forms; the same scaling and accumulation follow,
   so the result is bit for bit the same. */
VNNI_TARGET ALWAYS_INLINE __m512 xq_blk4_i8(const xq_dbuf *D, const ct_mat *w, int r, int nr, int t0, const int NT,
                                           const int TR) {
    const int C = w->cols;
    const uint8_t *p[4];
    for (int i = 0; i < 4; i++) p[i] = ct_row_ptr(w, r + (i < nr ? i : nr - 1));
    const __m512i idx = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1); /* lane -> group */
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    __m512 acc[4];
    for (int i = 0; i < 4; i++) acc[i] = _mm512_setzero_ps();
    for (int k = 0; k < C; k += 64) {
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            CT_PF_BLK(4, p[0], p[i], C, k, i);
        }
        __m512i wv[4], wt[4];
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++)
            wv[i] = _mm512_xor_si512(_mm512_loadu_si512((const void *)(p[i] + k)), flip);
        if (TR) xq_tr4(wv, wt);
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) {
            __m512i g; /* blocks: quarters 0-3 (groups 0, 0, 1, 1) */
            if (TR) {
                const __m512i *xr = (const __m512i *)(D->r[t0 + t] + 4 * k);
                g = _mm512_loadu_si512((const void *)(D->c4[t0 + t] + k / 4));
#pragma GCC unroll 4
                for (int j = 0; j < 4; j++) g = _mm512_dpbusd_epi32(g, wt[j], _mm512_load_si512((const void *)(xr + j)));
            } else {
                const __m512i xv = _mm512_loadu_si512((const void *)(D->q[t0 + t] + k));
                const __m512i cv = _mm512_loadu_si512((const void *)(D->corr[t0 + t] + k / 4));
                __m512i d[4];
#pragma GCC unroll 4
                for (int i = 0; i < 4; i++) d[i] = _mm512_dpbusd_epi32(cv, wv[i], xv);
                g = xq_tadd4(d);
            }
            acc[t] = _mm512_fmadd_ps(
                _mm512_cvtepi32_ps(_mm512_add_epi32(g, _mm512_shuffle_i32x4(g, g, _MM_SHUFFLE(2, 3, 0, 1)))),
                spread2(D->s[t0 + t] + k / 32, idx), acc[t]);
        }
    }
    return xq_fold2(acc);
}

/* INT4, one 128-column step at k (kb = k / 2 bytes) of the rows p[4] with
   scales sc[4] for NT tokens from slots t0..: full = 0 for a last 64-column
   half step. A row's four integer lanes of a group are summed in integers first
   (exact, |sum| < 2^15), so each (row, token, group) takes one convert, one
   multiply and one FMA: acc[t] lane 4 g + i is row i, group g of the step. */
VNNI_TARGET ALWAYS_INLINE void xq_q4_step(const xq_dbuf *D, const uint8_t *const *p, const float *const *sc, int k, int t0,
                                          const int NT, const int full, __m512 *acc) {
    /* lane 4 g + i <- lane 4 i + g: the rows' scales, loaded row after row,
   * transposed */
    const __m512i tr = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const __m512i nib = _mm512_set1_epi8(0x0f);
    const __mmask8 m = full ? 0xf : 0x3;
    const int kb = k / 2;
    __m512i lo[4], hi[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        const __m512i v = full ? _mm512_loadu_si512((const void *)(p[i] + kb))
                               : _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)(p[i] + kb)));
        lo[i] = _mm512_and_si512(v, nib);
        hi[i] = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
    }
    __m512 sw = _mm512_castps128_ps512(_mm_maskz_loadu_ps(m, sc[0] + k / 32));
    sw = _mm512_insertf32x4(sw, _mm_maskz_loadu_ps(m, sc[1] + k / 32), 1);
    sw = _mm512_insertf32x4(sw, _mm_maskz_loadu_ps(m, sc[2] + k / 32), 2);
    sw = _mm512_insertf32x4(sw, _mm_maskz_loadu_ps(m, sc[3] + k / 32), 3);
    sw = _mm512_permutexvar_ps(tr, sw);
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++) {
        const int8_t *xq = D->q[t0 + t] + k;
        const __m512i xl = _mm512_loadu_si512((const void *)xq),
                      xh = _mm512_loadu_si512((const void *)(xq + 64));
        const __m512i cv = _mm512_loadu_si512((const void *)(D->corr[t0 + t] + k / 8));
        __m512i d[4];
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) d[i] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(cv, lo[i], xl), hi[i], xh);
        /* per 128-bit block (one group): [sum d0, sum d1, sum d2, sum d3] */
        const __m512i g = xq_tadd4(d);
        acc[t] = _mm512_fmadd_ps(
            _mm512_mul_ps(_mm512_cvtepi32_ps(g), _mm512_loadu_ps(D->s4[t0 + t] + k / 8)), sw, acc[t]);
    }
}

/* INT4: as xq_blk4_i8, 128 columns per step (a last 64-column half step apart);
   the four groups of each token's accumulator are summed at the end (lane 4 t +
   i: row i, token t). */
VNNI_TARGET ALWAYS_INLINE __m512 xq_blk4_q4(const xq_dbuf *D, const ct_mat *w, int r, int nr, int t0, const int NT) {
    const int C = w->cols, Cf = C & ~127;
    const uint8_t *p[4];
    const float *sc[4];
    for (int i = 0; i < 4; i++) {
        p[i] = ct_row_ptr(w, r + (i < nr ? i : nr - 1));
        sc[i] = ct_row_sc(w, r + (i < nr ? i : nr - 1));
    }
    __m512 acc[4];
    for (int i = 0; i < 4; i++) acc[i] = _mm512_setzero_ps();
    for (int k = 0; k < Cf; k += 128) {
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            _mm_prefetch((const char *)p[i] + k / 2 + XQ_PFB, _MM_HINT_T0);
            _mm_prefetch((const char *)p[i] + k / 2 + XQ_PFB2, _MM_HINT_T1);
            if ((k & 511) == 0) { /* the group scales, a separate stream: once per 64 bytes */
                _mm_prefetch((const char *)(sc[i] + k / 32) + XQ_PFB / 4, _MM_HINT_T0);
                _mm_prefetch((const char *)(sc[i] + k / 32) + XQ_PFB2 / 4, _MM_HINT_T1);
            }
        }
        xq_q4_step(D, p, sc, k, t0, NT, 1, acc);
    }
    if (Cf < C) xq_q4_step(D, p, sc, Cf, t0, NT, 0, acc);
    return xq_fold4(acc);
}

/* Packs rows r..r+15 (first nr real, the rest repeat the last) into P. INT8: 64 columns per transpose, bytes q ^ 0x80. INT4: per 128 columns
   the low nibbles (activation dwords 0-15 of the step) and the high ones
   (16-31); a last 64-column half step fills dwords 0-7, 16-23. */
VNNI_TARGET static void xq_pack(xq_panel *P, const ct_mat *w, int r, int nr, int q4) {
    const int C = w->cols;
    const uint8_t *p[16];
    for (int i = 0; i < 16; i++) p[i] = ct_row_ptr(w, r + (i < nr ? i : nr - 1));
    __m512i a[16];
    if (!q4) {
        const __m512i flip = _mm512_set1_epi8((char)0x80);
        for (int k = 0; k < C; k += 64) {
            for (int i = 0; i < 16; i++)
                a[i] = _mm512_xor_si512(_mm512_loadu_si512((const void *)(p[i] + k)), flip);
            ct_tr16x16(a);
            for (int d = 0; d < 16; d++) _mm512_store_si512((void *)P->w[k / 4 + d], a[d]);
        }
        return;
    }
    const __m512i nib = _mm512_set1_epi8(0x0f);
    for (int k = 0; k < C; k += 128) {
        const int full = C - k >= 128;
        __m512i h[16];
        for (int i = 0; i < 16; i++) {
            const __m512i v =
                full ? _mm512_loadu_si512((const void *)(p[i] + k / 2))
                     : _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)(p[i] + k / 2)));
            a[i] = _mm512_and_si512(v, nib);
            h[i] = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
        }
        ct_tr16x16(a);
        ct_tr16x16(h);
        for (int d = 0; d < 16; d++) {
            _mm512_store_si512((void *)P->w[k / 4 + d], a[d]);
            _mm512_store_si512((void *)P->w[k / 4 + 16 + d], h[d]);
        }
    }
    /* the group scales, 16 groups of the 16 rows at a time transposed */
    const int G = C / CT_Q4_GROUP;
    const float *sr[16];
    for (int i = 0; i < 16; i++) sr[i] = ct_row_sc(w, r + (i < nr ? i : nr - 1));
    int g = 0;
    for (; g + 16 <= G; g += 16) {
        for (int i = 0; i < 16; i++) a[i] = _mm512_loadu_si512((const void *)(sr[i] + g));
        ct_tr16x16(a);
        for (int d = 0; d < 16; d++) _mm512_store_si512((void *)P->sc[g + d], a[d]);
    }
    for (; g < G; g++)
        for (int i = 0; i < 16; i++) P->sc[g][i] = sr[i][g];
}

static inline int32_t xq_ld32(const int8_t *q) {
    int32_t v;
    memcpy(&v, q, 4);
    return v;
}

/* INT4, group g of the 128-column step at k of the packed panel w (the step's
   dwords) for NT tokens from slot t0: the group's integer sums (low-nibble
   dwords 4 g.., high 16 + 4 g..) and acc[t][g] += (q * s) * s_w. Token t's data
   lie at a fixed stride from slot t0's. */
VNNI_TARGET ALWAYS_INLINE void xq_pan_q4g(const xq_pbuf *B, const uint8_t (*w)[64], const float *sw, int t0,
                                          int k, const int g, const int NT, __m512 (*acc)[4]) {
    __m512i ia[4], ib[4]; /* the low and high nibbles' sums: two chains per token (integer sums,
                             so the same total in any order) */
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++) ia[t] = _mm512_set1_epi32(B->pc[t0 + t][k / 32 + g]), ib[t] = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int m = 0; m < 4; m++) {
        const __m512i wl = _mm512_load_si512((const void *)w[4 * g + m]);
        const __m512i wh = _mm512_load_si512((const void *)w[16 + 4 * g + m]);
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) {
            const int8_t *xq = B->q[t0 + t] + k + 16 * g + 4 * m;
            ia[t] = _mm512_dpbusd_epi32(ia[t], wl, _mm512_set1_epi32(xq_ld32(xq)));
            ib[t] = _mm512_dpbusd_epi32(ib[t], wh, _mm512_set1_epi32(xq_ld32(xq + 64)));
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++) ia[t] = _mm512_add_epi32(ia[t], ib[t]);
    const __m512 swv = _mm512_load_ps(sw + 16 * g);
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++)
        acc[t][g] = _mm512_fmadd_ps(
            _mm512_mul_ps(_mm512_cvtepi32_ps(ia[t]), _mm512_set1_ps(B->s[t0 + t][k / 32 + g])), swv,
            acc[t][g]);
}

/* INT4: the packed panel P x NT tokens from slot t0 of B: out[t] lane i = row
   i, folded as the 4-row blocks fold (xq_fold4), so each lane is bit for bit
   the xq_blk4_q4 result: per group g of a 128-column step acc[t][g] += (q *
   s_group) * s_weight (a half step adds +0 to the absent groups' accumulators,
   as the block does). */
VNNI_TARGET ALWAYS_INLINE void xq_pan_q4(const xq_pbuf *B, const xq_panel *P, int C, int t0, const int NT,
                                         ct_pf_spread *pf, __m512 *out) {
    __m512 acc[4][4];
    for (int t = 0; t < NT; t++)
        for (int b = 0; b < 4; b++) acc[t][b] = _mm512_setzero_ps();
    const uint8_t(*w)[64] = P->w;
    const int Cf = C & ~127;
    int k = 0;
    for (; k < Cf; k += 128, w += 32) {
        ct_pf_spread_step(pf);
        xq_pan_q4g(B, w, P->sc[k / 32], t0, k, 0, NT, acc);
        xq_pan_q4g(B, w, P->sc[k / 32], t0, k, 1, NT, acc);
        xq_pan_q4g(B, w, P->sc[k / 32], t0, k, 2, NT, acc);
        xq_pan_q4g(B, w, P->sc[k / 32], t0, k, 3, NT, acc);
    }
    if (Cf < C) {
        xq_pan_q4g(B, w, P->sc[k / 32], t0, k, 0, NT, acc);
        xq_pan_q4g(B, w, P->sc[k / 32], t0, k, 1, NT, acc);
        for (int t = 0; t < NT; t++) {
            acc[t][2] = _mm512_add_ps(acc[t][2], _mm512_setzero_ps());
            acc[t][3] = _mm512_add_ps(acc[t][3], _mm512_setzero_ps());
        }
    }
    for (int t = 0; t < NT; t++)
        out[t] = _mm512_add_ps(_mm512_add_ps(acc[t][0], acc[t][2]), _mm512_add_ps(acc[t][1], acc[t][3]));
}

/* INT8: the packed panels w0, w1 (NP of them) x NT tokens from slot t0 of B: out[p][t] lane
   i = panel p's row i, bit for bit the xq_blk4_i8 result (xq_fold2): per group one integer sum
   (8 dwords) and acc[t][g & 1] += q * s_group; out = even + odd. Each activation broadcast serves
   NP panels. PP: panels packed at load, WS vectors per 64-column step (32: a pair interleaved),
   each step's lines prefetched ahead; else xq_pack's per-call panels (16). */
VNNI_TARGET ALWAYS_INLINE void xq_pan_i8(const xq_pbuf *B, const uint8_t (*w0)[64], const uint8_t (*w1)[64],
                                         int C, int t0, const int NT, const int NP, const int PP, int WS,
                                         ct_pf_spread *pf, __m512 (*out)[4]) {
    __m512 acc[2][4][2];
    for (int p = 0; p < NP; p++)
        for (int t = 0; t < NT; t++) acc[p][t][0] = acc[p][t][1] = _mm512_setzero_ps();
    for (int k = 0; k < C; k += 64, w0 += WS, w1 += WS) {
        if (pf) ct_pf_spread_step(pf);
        if (PP) { /* packed at load: every line of the step into L2 twice, 2 XQ_PP_PF and XQ_PP_PF
                     bytes ahead (once was measured slower from memory: docs/KERNELS.md) */
#pragma GCC unroll 32
            for (int l = 0; l < WS; l++) {
                _mm_prefetch((const char *)w0[l] + 2 * XQ_PP_PF, _MM_HINT_T1);
                _mm_prefetch((const char *)w0[l] + XQ_PP_PF, _MM_HINT_T1);
            }
        }
#pragma GCC unroll 2
        for (int b = 0; b < 2; b++) {
            __m512i ia[2][4];
#pragma GCC unroll 4
            for (int t = 0; t < NT; t++) {
                ia[0][t] = _mm512_set1_epi32(B->pc[t0 + t][k / 32 + b]);
                if (NP > 1) ia[1][t] = ia[0][t];
            }
#pragma GCC unroll 8
            for (int m = 0; m < 8; m++) {
                const __m512i wa = _mm512_load_si512((const void *)w0[8 * b + m]);
                const __m512i wb = NP > 1 ? _mm512_load_si512((const void *)w1[8 * b + m]) : wa;
#pragma GCC unroll 4
                for (int t = 0; t < NT; t++) {
                    const __m512i xv = _mm512_set1_epi32(xq_ld32(B->q[t0 + t] + k + 32 * b + 4 * m));
                    ia[0][t] = _mm512_dpbusd_epi32(ia[0][t], wa, xv);
                    if (NP > 1) ia[1][t] = _mm512_dpbusd_epi32(ia[1][t], wb, xv);
                }
            }
#pragma GCC unroll 4
            for (int t = 0; t < NT; t++) {
                const __m512 sv = _mm512_set1_ps(B->s[t0 + t][k / 32 + b]);
                acc[0][t][b] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[0][t]), sv, acc[0][t][b]);
                if (NP > 1) acc[1][t][b] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[1][t]), sv, acc[1][t][b]);
            }
        }
    }
    for (int p = 0; p < NP; p++)
        for (int t = 0; t < NT; t++) out[p][t] = _mm512_add_ps(acc[p][t][0], acc[p][t][1]);
}

/* Stores np panels' results out[p][t] (lane i: row r + 16 p + i, token t < n4) for rows r..r+nr
   with ct_store_block's arithmetic (y = scale * out + bias, bias 0 where none), 16 rows at a time. */
VNNI_TARGET static void xq_store_pan(const ct_mat *w, const float *bias, __m512 (*out)[4], int np, int n4,
                                     float *y, int R, int r, int nr) {
    for (int p = 0; p < np && 16 * p < nr; p++) {
        const int r0 = r + 16 * p, m = nr - 16 * p < 16 ? nr - 16 * p : 16;
        const __mmask16 k = (__mmask16)((1u << m) - 1);
        const __m512 sc = w->dtype == CT_DT_I8 ? _mm512_maskz_loadu_ps(k, w->scales + r0) : _mm512_set1_ps(1.0f);
        const __m512 b = bias ? _mm512_maskz_loadu_ps(k, bias + r0) : _mm512_setzero_ps();
        for (int t = 0; t < n4; t++)
            _mm512_mask_storeu_ps(y + (size_t)t * R + r0, k, _mm512_add_ps(_mm512_mul_ps(sc, out[p][t]), b));
    }
}

/* Rows r0..r1 x tokens t0..t0+nt on 16-row panels, stored as the 4-row blocks
 * store. */
/* B, P and P2: the thread's buffers. */
VNNI_TARGET XQ_NOIPA static void xq_panels(const xq_pbuf *B, xq_panel *P, xq_panel *P2,
                                                            const ct_mat *w, const float *bias, float *y,
                                                            int t0, int nt, int r0, int r1) {
    const int R = w->rows, C = w->cols, q4 = w->dtype == CT_DT_U8, PR = q4 ? 16 : 32;
    for (int r = r0; r < r1; r += PR) {
        const int nr = r1 - r < PR ? r1 - r : PR, two = nr > 16;
        const int rn = r + PR, nn = r1 - rn < PR ? (r1 > rn ? r1 - rn : 0) : PR;
        xq_pack(P, w, r, nr < 16 ? nr : 16, q4);
        if (two) xq_pack(P2, w, r + 16, nr - 16, q4);
        /* the next panel's rows (contiguous), spread over this panel's steps */
        ct_pf_spread pf = {NULL, NULL, 0, 0, 0, 0};
        if (nn) {
            pf.p = (const char *)ct_row_ptr(w, rn);
            pf.n = (size_t)((const char *)ct_row_ptr(w, rn + 1) - pf.p) * (size_t)nn;
            if (q4) pf.p2 = (const char *)ct_row_sc(w, rn), pf.n2 = sizeof(float) * (size_t)(C / CT_Q4_GROUP) * (size_t)nn;
            const size_t steps = (size_t)((nt + 3) / 4) * (size_t)(q4 ? (C + 127) / 128 : C / 64);
            pf.per_step = ct_pf_spread_per(pf.n + pf.n2, steps);
        }
        for (int t = 0; t < nt; t += 4) {
            const int n4 = nt - t < 4 ? nt - t : 4;
            __m512 out[2][4];
            if (q4) {
                switch (n4) {
                case 1: xq_pan_q4(B, P, C, t, 1, &pf, out[0]); break;
                case 2: xq_pan_q4(B, P, C, t, 2, &pf, out[0]); break;
                case 3: xq_pan_q4(B, P, C, t, 3, &pf, out[0]); break;
                default: xq_pan_q4(B, P, C, t, 4, &pf, out[0]); break;
                }
            } else if (two) {
                switch (n4) {
                case 1: xq_pan_i8(B, P->w, P2->w, C, t, 1, 2, 0, 16, &pf, out); break;
                case 2: xq_pan_i8(B, P->w, P2->w, C, t, 2, 2, 0, 16, &pf, out); break;
                case 3: xq_pan_i8(B, P->w, P2->w, C, t, 3, 2, 0, 16, &pf, out); break;
                default: xq_pan_i8(B, P->w, P2->w, C, t, 4, 2, 0, 16, &pf, out); break;
                }
            } else {
                switch (n4) {
                case 1: xq_pan_i8(B, P->w, P->w, C, t, 1, 1, 0, 16, &pf, out); break;
                case 2: xq_pan_i8(B, P->w, P->w, C, t, 2, 1, 0, 16, &pf, out); break;
                case 3: xq_pan_i8(B, P->w, P->w, C, t, 3, 1, 0, 16, &pf, out); break;
                default: xq_pan_i8(B, P->w, P->w, C, t, 4, 1, 0, 16, &pf, out); break;
                }
            }
            xq_store_pan(w, bias, out, 1 + two, n4, y + (size_t)(t0 + t) * R, R, r, nr);
        }
    }
}

/* ---- Weight panels packed at load (ct_mat.pan) --------------------------------------- */
/* INT4: panel p holds rows 16 p .. 16 p + 15 (past the last row: the last row again), one
   128-column step after the other: 16 vectors whose lane i is row i's packed dword d of the step
   (bytes 16 g + 4 m: the low nibbles are columns 4 m.. of group g, the high ones 16 + 4 m..),
   then the step's four group scales as 4 vectors (lane i: row i); a last 64-column half step has
   8 and 2. The same bytes as the row layout, read as one stream per 16 rows.
   INT8: xq_pack's panels (per 64-column step 16 vectors, lane i = row i's dword d, bytes q ^
   0x80), the two panels of each 32 rows interleaved step by step (32 vectors per step; a last
   32 rows of 16 or fewer hold one panel, 16 per step): one stream per 32 rows. The row scales
   stay in the row layout (ct_store_block applies them). */
/* bytes per 16 rows: INT4 16 x C / 2 + 16 x C / 32 x 4; INT8 16 x C */
static size_t pan_bytes(int q4, int C) { return (size_t)(q4 ? 10 : 16) * (size_t)C; }

size_t ct_xq_pan_bytes(ct_dtype dt, int rows, int cols) {
    if ((dt != CT_DT_U8 && dt != CT_DT_I8) || rows < 1 || cols < 64 || cols % 64 || cols > XQ_PMAXC) return 0;
    return (size_t)((rows + 15) / 16) * pan_bytes(dt == CT_DT_U8, cols);
}

VNNI_TARGET void ct_xq_pan_pack(const ct_mat *w, uint8_t *dst) {
    const int R = w->rows, C = w->cols;
    if (w->dtype == CT_DT_I8) { /* xq_pack's INT8 panels, the two of each 32 rows interleaved per step */
        const __m512i flip = _mm512_set1_epi8((char)0x80);
        for (int r = 0; r < R; r += 32) {
            const int np = R - r > 16 ? 2 : 1;
            for (int k = 0; k < C; k += 64)
                for (int h = 0; h < np; h++, dst += 1024) {
                    __m512i a[16];
                    for (int i = 0; i < 16; i++) {
                        const int ri = r + 16 * h + i < R ? r + 16 * h + i : R - 1;
                        a[i] = _mm512_xor_si512(
                            _mm512_loadu_si512((const void *)((const uint8_t *)ct_row_ptr(w, ri) + k)), flip);
                    }
                    ct_tr16x16(a);
                    for (int d = 0; d < 16; d++) _mm512_store_si512((void *)(dst + 64 * d), a[d]);
                }
        }
        return;
    }
    for (int r = 0; r < R; r += 16, dst += pan_bytes(1, C)) {
        const uint8_t *p[16];
        const float *sc[16];
        for (int i = 0; i < 16; i++) {
            p[i] = ct_row_ptr(w, r + i < R ? r + i : R - 1);
            sc[i] = ct_row_sc(w, r + i < R ? r + i : R - 1);
        }
        __m512i *v = (__m512i *)dst;
        for (int k = 0; k < C; k += 128) {
            const int full = C - k >= 128, ng = full ? 4 : 2;
            __m512i a[16];
            for (int i = 0; i < 16; i++)
                a[i] = full ? _mm512_loadu_si512((const void *)(p[i] + k / 2))
                            : _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)(p[i] + k / 2)));
            ct_tr16x16(a);
            for (int d = 0; d < 4 * ng; d++) _mm512_store_si512((void *)v++, a[d]);
            for (int g = 0; g < ng; g++, v++) {
                float s[16];
                for (int i = 0; i < 16; i++) s[i] = sc[i][k / 32 + g];
                _mm512_store_si512((void *)v, _mm512_castps_si512(_mm512_loadu_ps(s)));
            }
        }
    }
}

/* Group g of a step (weight vectors v, scale vectors sv) for NT tokens from slot t0 of B: the
   low nibbles of vector 4 g + m against activation dword 4 g + m of the step, the high ones
   against 16 + 4 g + m, and acc[t][g] += (q * s_group) * s_w: xq_pan_q4g's arithmetic. */
VNNI_TARGET ALWAYS_INLINE void xq_pp_q4g(const xq_pbuf *B, const __m512i *v, const __m512i *sv, int t0,
                                         int k, const int g, const int NT, __m512 (*acc)[4]) {
    const __m512i nib = _mm512_set1_epi8(0x0f);
    __m512i ia[4], ib[4]; /* low and high nibbles' integer sums (any split of them is exact) */
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++) {
        ia[t] = _mm512_set1_epi32(B->pc[t0 + t][k / 32 + g]);
        ib[t] = _mm512_setzero_si512();
    }
#pragma GCC unroll 4
    for (int m = 0; m < 4; m++) {
        const __m512i pv = _mm512_load_si512((const void *)(v + 4 * g + m));
        const __m512i wl = _mm512_and_si512(pv, nib), wh = _mm512_and_si512(_mm512_srli_epi16(pv, 4), nib);
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) {
            const int8_t *xq = B->q[t0 + t] + k + 16 * g + 4 * m;
            ia[t] = _mm512_dpbusd_epi32(ia[t], wl, _mm512_set1_epi32(xq_ld32(xq)));
            ib[t] = _mm512_dpbusd_epi32(ib[t], wh, _mm512_set1_epi32(xq_ld32(xq + 64)));
        }
    }
    const __m512 swv = _mm512_castsi512_ps(_mm512_load_si512((const void *)(sv + g)));
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++)
        acc[t][g] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(ia[t], ib[t])),
                                                  _mm512_set1_ps(B->s[t0 + t][k / 32 + g])),
                                    swv, acc[t][g]);
}

/* Packed panel pp (C columns) x NT tokens from slot t0 of B: out[t] lane i = row i, bit for bit
   xq_pan_q4's (and so xq_blk4_q4's) result. Every line of a step is prefetched XQ_PP_PF bytes
   ahead into L2 (with the scales interleaved per step the prefetch covers the whole stream). */
VNNI_TARGET ALWAYS_INLINE void xq_pp_q4(const xq_pbuf *B, const uint8_t *pp, int C, int t0, const int NT,
                                        __m512 *out) {
    __m512 acc[4][4];
    for (int t = 0; t < NT; t++)
        for (int b = 0; b < 4; b++) acc[t][b] = _mm512_setzero_ps();
    const __m512i *v = (const __m512i *)pp;
    const int Cf = C & ~127;
    int k = 0;
    for (; k < Cf; k += 128, v += 20) {
#pragma GCC unroll 20
        for (int l = 0; l < 20; l++) _mm_prefetch((const char *)(v + l) + XQ_PP_PF, _MM_HINT_T1);
        xq_pp_q4g(B, v, v + 16, t0, k, 0, NT, acc);
        xq_pp_q4g(B, v, v + 16, t0, k, 1, NT, acc);
        xq_pp_q4g(B, v, v + 16, t0, k, 2, NT, acc);
        xq_pp_q4g(B, v, v + 16, t0, k, 3, NT, acc);
    }
    if (Cf < C) { /* a half step adds +0 to the absent groups, as the row blocks do */
        xq_pp_q4g(B, v, v + 8, t0, k, 0, NT, acc);
        xq_pp_q4g(B, v, v + 8, t0, k, 1, NT, acc);
        for (int t = 0; t < NT; t++) {
            acc[t][2] = _mm512_add_ps(acc[t][2], _mm512_setzero_ps());
            acc[t][3] = _mm512_add_ps(acc[t][3], _mm512_setzero_ps());
        }
    }
    for (int t = 0; t < NT; t++)
        out[t] = _mm512_add_ps(_mm512_add_ps(acc[t][0], acc[t][2]), _mm512_add_ps(acc[t][1], acc[t][3]));
}

/* Rows r0..r1 (r0 a multiple of 16) x tokens t0..t0+nt of an INT8 matrix with w->pan: where a
   call holds both panels of 32 rows, each activation broadcast serves the two, as in xq_panels. */
VNNI_TARGET XQ_NOIPA static void xq_pp_rows_i8(const xq_pbuf *B, const ct_mat *w, const float *bias,
                                               float *y, int t0, int nt, int r0, int r1) {
    const int R = w->rows, C = w->cols;
    for (int r = r0; r < r1;) {
        const int h = (r / 16) & 1, ws = R - (r & ~31) > 16 ? 32 : 16; /* the last 32 rows may hold one */
        const int two = !h && ws == 32 && r1 - r > 16, nr = r1 - r < 16 * (1 + two) ? r1 - r : 16 * (1 + two);
        const uint8_t(*p0)[64] = (const uint8_t(*)[64])(w->pan + (size_t)(r / 32) * 2 * pan_bytes(0, C)) + 16 * h;
        for (int t = 0; t < nt; t += 4) {
            const int n4 = nt - t < 4 ? nt - t : 4;
            __m512 out[2][4];
            if (two) {
                switch (n4) {
                case 1: xq_pan_i8(B, p0, p0 + 16, C, t, 1, 2, 1, 32, NULL, out); break;
                case 2: xq_pan_i8(B, p0, p0 + 16, C, t, 2, 2, 1, 32, NULL, out); break;
                case 3: xq_pan_i8(B, p0, p0 + 16, C, t, 3, 2, 1, 32, NULL, out); break;
                default: xq_pan_i8(B, p0, p0 + 16, C, t, 4, 2, 1, 32, NULL, out); break;
                }
            } else {
                switch (n4) {
                case 1: xq_pan_i8(B, p0, p0, C, t, 1, 1, 1, ws, NULL, out); break;
                case 2: xq_pan_i8(B, p0, p0, C, t, 2, 1, 1, ws, NULL, out); break;
                case 3: xq_pan_i8(B, p0, p0, C, t, 3, 1, 1, ws, NULL, out); break;
                default: xq_pan_i8(B, p0, p0, C, t, 4, 1, 1, ws, NULL, out); break;
                }
            }
            xq_store_pan(w, bias, out, 1 + two, n4, y + (size_t)(t0 + t) * R, R, r, nr);
        }
        r += nr;
    }
}

/* Rows r0..r1 (r0 a multiple of 16) x tokens t0..t0+nt of an INT4 matrix with w->pan. */
VNNI_TARGET XQ_NOIPA static void xq_pp_rows(const xq_pbuf *B, const ct_mat *w, const float *bias, float *y,
                                            int t0, int nt, int r0, int r1) {
    const int R = w->rows, C = w->cols;
    for (int r = r0; r < r1; r += 16) {
        const int nr = r1 - r < 16 ? r1 - r : 16;
        const uint8_t *pp = w->pan + (size_t)(r / 16) * pan_bytes(1, C);
        for (int t = 0; t < nt; t += 4) {
            const int n4 = nt - t < 4 ? nt - t : 4;
            __m512 out[1][4];
            switch (n4) {
            case 1: xq_pp_q4(B, pp, C, t, 1, out[0]); break;
            case 2: xq_pp_q4(B, pp, C, t, 2, out[0]); break;
            case 3: xq_pp_q4(B, pp, C, t, 3, out[0]); break;
            default: xq_pp_q4(B, pp, C, t, 4, out[0]); break;
            }
            xq_store_pan(w, bias, out, 1, n4, y + (size_t)(t0 + t) * R, R, r, nr);
        }
    }
}

/* rep: INT8 slots also hold xq_rep's layout (2-4 tokens run xq_blk4_i8 with TR) */
VNNI_TARGET static void xq_rows(const xq_dbuf *D, const ct_mat *w, const float *bias, float *y, int t0, int nt, int r0,
                                int r1, int rep) {
    D = __builtin_assume_aligned(D, 64);
    const int R = w->rows, q4 = w->dtype == CT_DT_U8;
    for (int rb = r0; rb < r1; rb += XQ_RBLOCK) {
        const int rbe = rb + XQ_RBLOCK < r1 ? rb + XQ_RBLOCK : r1;
        for (int t = 0; t < nt; t += 4) {
            const int n4 = nt - t < 4 ? nt - t : 4;
            float *yt = y + (size_t)(t0 + t) * R;
            for (int r = rb; r < rbe; r += 4) {
                const int nr = rbe - r < 4 ? rbe - r : 4;
                __m512 red;
                if (q4) {
                    switch (n4) {
                    case 1: red = xq_blk4_q4(D, w, r, nr, t, 1); break;
                    case 2: red = xq_blk4_q4(D, w, r, nr, t, 2); break;
                    case 3: red = xq_blk4_q4(D, w, r, nr, t, 3); break;
                    default: red = xq_blk4_q4(D, w, r, nr, t, 4); break;
                    }
                } else if (rep && n4 > 1) {
                    switch (n4) {
                    case 2: red = xq_blk4_i8(D, w, r, nr, t, 2, 1); break;
                    case 3: red = xq_blk4_i8(D, w, r, nr, t, 3, 1); break;
                    default: red = xq_blk4_i8(D, w, r, nr, t, 4, 1); break;
                    }
                } else {
                    switch (n4) {
                    case 1: red = xq_blk4_i8(D, w, r, nr, t, 1, 0); break;
                    case 2: red = xq_blk4_i8(D, w, r, nr, t, 2, 0); break;
                    case 3: red = xq_blk4_i8(D, w, r, nr, t, 3, 0); break;
                    default: red = xq_blk4_i8(D, w, r, nr, t, 4, 0); break;
                    }
                }
                ct_store_block(w, bias, red, yt, R, r, nr, n4);
            }
        }
    }
}

/* Quantizes token x[C] (C <= XQ_PMAXC) into slot t of X->p, with its per-group corrections. */
VNNI_TARGET XQ_NOIPA static void xq_quant_pan(xq_buf *X, const float *x, int C, int q4, int t) {
    xq_quantize_tok(x, C, q4, X->p.q[t], X->p.s[t], X->corr, X->s4);
    for (int g = 0; g < C / 32; g++) { /* INT8: 8 lanes per group, INT4: 4 */
        const int32_t *c = X->corr + (q4 ? 4 : 8) * g;
        int32_t v = c[0] + c[1] + c[2] + c[3];
        if (!q4) v += c[4] + c[5] + c[6] + c[7];
        X->p.pc[t][g] = v;
    }
}

/* ct_matmul_rows_vnni on the buffers S. */
VNNI_TARGET static void xq_call(xq_scratch *S, const ct_mat *w, const float *bias, const float *x,
                                         float *y, int n, int r0, int r1) {
    const int C = w->cols, q4 = w->dtype == CT_DT_U8;
    xq_buf *const X = &S->b;
    ct_xq_reuse *k = &ct_xq_tls;
    if (w->pan && n >= (q4 ? XQ_PPMIN4 : XQ_PPMIN8)) { /* panels packed at load (C <= XQ_PMAXC) */
        const int key = q4 ? XQ_KEY_PAN : XQ_KEY_PAN8;
        for (int t0 = 0; t0 < n; t0 += XQ_PTOK) {
            const int nt = n - t0 < XQ_PTOK ? n - t0 : XQ_PTOK;
            if (n > XQ_PTOK || !k->on || k->x != x || k->n != n || k->cols != C || k->q4 != key) {
                for (int t = 0; t < nt; t++) xq_quant_pan(X, x + (size_t)(t0 + t) * C, C, q4, t);
                if (k->on) *k = (ct_xq_reuse){1, n <= XQ_PTOK ? x : NULL, n, C, key};
            }
            if (q4)
                xq_pp_rows(&X->p, w, bias, y, t0, nt, r0, r1);
            else
                xq_pp_rows_i8(&X->p, w, bias, y, t0, nt, r0, r1);
        }
        return;
    }
    if (n >= (q4 ? XQ_PMIN4 : XQ_PMIN8) && C <= XQ_PMAXC) { /* panels, XQ_PTOK tokens per pass */
        for (int t0 = 0; t0 < n; t0 += XQ_PTOK) {
            const int nt = n - t0 < XQ_PTOK ? n - t0 : XQ_PTOK;
            if (n > XQ_PTOK || !k->on || k->x != x || k->n != n || k->cols != C || k->q4 != q4) {
                for (int t = 0; t < nt; t++) xq_quant_pan(X, x + (size_t)(t0 + t) * C, C, q4, t);
                if (k->on) *k = (ct_xq_reuse){1, n <= XQ_PTOK ? x : NULL, n, C, q4};
            }
            xq_panels(&X->p, &S->p, &S->p2, w, bias, y, t0, nt, r0, r1);
        }
        return;
    }
    /* one quantization per call when the tokens fit one pass; otherwise passes of
     XQ_RCHUNK rows, each re-quantizing its token blocks (rows still start at
     multiples of 4 from r0) */
    const int rstep = n <= XQ_TOK ? r1 - r0 : XQ_RCHUNK;
    /* INT8 calls of 2-4 tokens narrow enough for XQ_RL1 take xq_blk4_i8 with TR (n and C are part of
       the reuse key, so a reused quantization always has its xq_rep layout) */
    const int rep = !q4 && n >= 2 && n <= 4 && 4 * C * n <= XQ_RL1;
    for (int rc = r0; rc < r1; rc += rstep) {
        const int rce = r1 - rc < rstep ? r1 : rc + rstep;
        for (int t0 = 0; t0 < n; t0 += XQ_TOK) {
            const int nt = n - t0 < XQ_TOK ? n - t0 : XQ_TOK;
            if (n > XQ_TOK || !k->on || k->x != x || k->n != n || k->cols != C || k->q4 != q4) {
                for (int t = 0; t < nt; t++) {
                    xq_quantize_tok(x + (size_t)(t0 + t) * C, C, q4, X->d.q[t], X->d.s[t], X->d.corr[t],
                                    X->d.s4[t]);
                    if (rep) xq_rep(X->d.q[t], X->d.corr[t], C, X->d.r[t], X->d.c4[t]);
                }
                if (k->on) *k = (ct_xq_reuse){1, n <= XQ_TOK ? x : NULL, n, C, q4};
            }
            xq_rows(&X->d, w, bias, y, t0, nt, rc, rce, rep);
        }
    }
}

VNNI_TARGET void ct_matmul_rows_vnni(const ct_mat *w, const float *bias, const float *x, float *y, int n,
                                     int r0, int r1) {
    int borrowed;
    xq_scratch *S = ct_tbuf_take(&xq_tb, &xq_tl, &borrowed);
    xq_call(S, w, bias, x, y, n, r0, r1);
    if (borrowed) ct_xq_tls.x = NULL; /* the spare's contents do not outlive the call */
    ct_tbuf_put(&xq_tb, borrowed);
}
