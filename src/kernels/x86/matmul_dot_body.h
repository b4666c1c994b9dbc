/* The 256-bit integer-dot matmul (the integer-dot mode, ct_mat.xq, INT8/INT4 weights), included
   by the shims that pick its product instruction (CT_DOT_VNNI) and name its entry (CT_DOT_FN):
   matmul_dot_avx2.c (VPMADDUBSW: the avx2 level without VNNI, the avx512 level without
   AVX-512 VNNI), matmul_dot_avxvnni_avx2.c (AVX-VNNI's VEX VPDPBUSD: the avx2 level on Intel
   client cores, Alder Lake and later, N100) and matmul_dot_vnni256_avx512.c (AVX-512 VNNI's
   EVEX VPDPBUSD on 256-bit registers: the avx2 level forced on such CPUs).
   Each call quantizes its tokens' activations per 32-column group to int8 (bit-identical to
   ct_xq_quantize for finite activations) and multiplies them with the weights as unsigned
   bytes without saturation. VPMADDUBSW (unsigned x signed bytes, pairs summed into int16):
   INT4 nibbles q + 8 (0..15) times |x| <= 127 give at most 3810 per pair, corrected by -8 *
   (sum of the group's activation bytes); INT8 enters as |q| against x with q's sign (VPSIGNB),
   at most 2 * 128 * 127 = 32512 per pair. VPDPBUSD sums each 4 products straight into int32:
   INT4 the same operands; INT8 as q + 128 (q ^ 0x80) against x, less 128 * (the sum of the
   group's activation bytes), which saves VPSIGNB. Every 32-column group dot is therefore exact,
   the same integer whichever instruction formed it. A block is 4 rows x up to 4 tokens: per
   group and token the four rows' sums are reduced to one vector [d_r0 .. d_r3] of exact group dots (INT4:
   VPMADDUBSW's three VPHADDW, whose partial sums of up to 16 pairs stay below 2^15, then
   VPMADDWD, or VPDPBUSD's three VPHADDD; INT8: VPMADDWD or VPDPBUSD per row, then three
   VPHADDD), converted, scaled (s_group; INT4 times the weight's group scale) and added to a
   per-token accumulator with the rows in its lanes. Each lane does the scalar reference's
   arithmetic in its order (acc += d * s, or acc += sw * (d * s), over groups in order), so the
   result is the reference's bit for bit, for every shim, and does not depend on the batch or
   the row split. Calls of several tokens run on 8-row panels instead (xq_panels below), which
   compute the same function. */
#if !defined(CT_DOT_VNNI) || !defined(CT_DOT_FN)
#error "define CT_DOT_VNNI (0: VPMADDUBSW, 1: CT_DPBUSD) and CT_DOT_FN before including this file"
#endif
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/cpu.h"
#include "kernels/matrow.h"
#include "kernels/tbuf.h"

#define XQ_TOK 64   /* tokens quantized per pass: a prompt pass of up to 64 positions is one, so its
                       panels are packed once per call and its quantized activations are reused
                       by the calls on the same x (docs/KERNELS.md "The avx2 level's panels") */
#define XQ_PF 512   /* bytes ahead in each row prefetched into L1 (weights from DRAM) */
#define XQ_PF2 CT_PF_L2 /* and into L2 */
#define ALWAYS_INLINE static inline __attribute__((always_inline))

typedef struct {
    int8_t q[XQ_TOK][CT_XQ_MAXC]; /* quantized activations: INT8 natural order; INT4 per pair of
                                     groups (64 columns) [g 0-15 | g+1 0-15] [g 16-31 | g+1 16-31],
                                     the order of a 32-byte load of both groups' nibbles */
    float s[XQ_TOK][CT_XQ_MAXC / CT_Q4_GROUP];    /* group scales */
    float s8[XQ_TOK][CT_XQ_MAXC / 8];             /* INT4: per pair, s_g x 4 then s_g+1 x 4 */
    int32_t c8[XQ_TOK][CT_XQ_MAXC / 8];           /* INT4: per pair, 8 * (sum of the group's
                                                     bytes) x 4, then the next group's x 4;
                                                     INT8 with VPDPBUSD: 128 * the sum, x 4 */
} xq_buf;

/* ct_xq_quantize for token x[C] into slot t: the group's |x| maximum taken as fmaxf takes it
   (a NaN lane never wins: MAXPS returns its second operand, the running maximum), the same
   127 / amax and amax / 127, VCVTPS2DQ rounding to nearest even as lrintf does. */
static void xq_quantize_tok(xq_buf *X, const float *x, int C, int q4, int t) {
    const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    const __m256i ones8 = _mm256_set1_epi8(1);
    const __m256i ones16 = _mm256_set1_epi16(1);
    int8_t *q = X->q[t];
    for (int g = 0; g < C / CT_Q4_GROUP; g++) {
        const float *xg = x + g * CT_Q4_GROUP;
        __m256 v[4], m = _mm256_setzero_ps();
        for (int i = 0; i < 4; i++) {
            v[i] = _mm256_loadu_ps(xg + 8 * i);
            m = _mm256_max_ps(_mm256_and_ps(v[i], absm), m);
        }
        __m128 h = _mm_max_ps(_mm256_extractf128_ps(m, 1), _mm256_castps256_ps128(m));
        h = _mm_max_ps(_mm_movehl_ps(h, h), h);
        h = _mm_max_ss(_mm_movehdup_ps(h), h);
        const float amax = _mm_cvtss_f32(h);
        __m256i b = _mm256_setzero_si256();
        float sg = 0.0f;
        if (amax >= CT_XQ_MIN_AMAX) {
            const float inv = 127.0f / amax;
            sg = amax / 127.0f;
            const __m256 iv = _mm256_set1_ps(inv);
            __m256i d[4];
            for (int i = 0; i < 4; i++) d[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], iv));
            const __m256i w16a = _mm256_packs_epi32(d[0], d[1]), w16b = _mm256_packs_epi32(d[2], d[3]);
            b = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(w16a, w16b), perm);
        }
        X->s[t][g] = sg;
        if (!q4 && !CT_DOT_VNNI) {
            _mm256_storeu_si256((__m256i *)(q + g * CT_Q4_GROUP), b);
            continue;
        }
        /* the sum of the group's bytes, for the offset correction */
        const __m256i s32 = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, b), ones16);
        __m128i s = _mm_add_epi32(_mm256_castsi256_si128(s32), _mm256_extracti128_si256(s32, 1));
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
        if (!q4) { /* VPDPBUSD's INT8 weights enter as q + 128 */
            _mm256_storeu_si256((__m256i *)(q + g * CT_Q4_GROUP), b);
            _mm_storeu_si128((__m128i *)(X->c8[t] + 4 * g), _mm_slli_epi32(s, 7));
            continue;
        }
        const int P = g & ~1, hf = g & 1; /* pair and half */
        _mm_storeu_si128((__m128i *)(q + P * CT_Q4_GROUP + 16 * hf), _mm256_castsi256_si128(b));
        _mm_storeu_si128((__m128i *)(q + P * CT_Q4_GROUP + 32 + 16 * hf), _mm256_extracti128_si256(b, 1));
        _mm_storeu_si128((__m128i *)(X->c8[t] + 4 * g), _mm_slli_epi32(s, 3));
        _mm_storeu_ps(X->s8[t] + 4 * g, _mm_set1_ps(sg));
    }
}

/* The four rows' per-group int32 vectors a[0..3] (8 lanes each) summed: lane i = row i. */
ALWAYS_INLINE __m128i hsum4_32(const __m256i *a) {
    const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(a[0], a[1]), _mm256_hadd_epi32(a[2], a[3]));
    return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

/* 4 rows from r (first nr real, the rest repeat the last) x NT tokens from slot t0: acc[t]
   lane i = the reference's accumulator of row r + i, token t0 + t. INT8: one group per step. */
ALWAYS_INLINE void xq_blk4_i8(const xq_buf *X, const ct_mat *w, int r, int nr, int t0, const int NT, __m128 *acc) {
    const int G = w->cols / CT_Q4_GROUP;
    const int8_t *p[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) p[i] = (const int8_t *)ct_row_ptr(w, r + (i < nr ? i : nr - 1));
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++) acc[t] = _mm_setzero_ps();
    const __m256i ones16 = _mm256_set1_epi16(1), flip = _mm256_set1_epi8((char)0x80);
    (void)ones16; /* VPMADDUBSW only */
    (void)flip;   /* VPDPBUSD only */
    for (int g = 0; g < G; g++) {
        if ((g & 1) == 0) {
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) CT_PF_BLK(4, p[0], p[i], w->cols, (size_t)g * 32, i);
        }
#if CT_DOT_VNNI
        __m256i wu[4]; /* q + 128 */
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++)
            wu[i] = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(p[i] + g * CT_Q4_GROUP)), flip);
#else
        __m256i wv[4], wa[4]; /* q, |q| */
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            wv[i] = _mm256_loadu_si256((const __m256i *)(p[i] + g * CT_Q4_GROUP));
            wa[i] = _mm256_abs_epi8(wv[i]);
        }
#endif
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) {
            const __m256i x = _mm256_loadu_si256((const __m256i *)(X->q[t0 + t] + g * CT_Q4_GROUP));
            __m256i a[4];
#if CT_DOT_VNNI /* sum (q + 128) x, less 128 sum x */
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) a[i] = CT_DPBUSD(_mm256_setzero_si256(), wu[i], x);
            const __m128i d =
                _mm_sub_epi32(hsum4_32(a), _mm_loadu_si128((const __m128i *)(X->c8[t0 + t] + 4 * g)));
#else
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++)
                a[i] = _mm256_madd_epi16(_mm256_maddubs_epi16(wa[i], _mm256_sign_epi8(x, wv[i])), ones16);
            const __m128i d = hsum4_32(a);
#endif
            acc[t] = _mm_add_ps(acc[t], _mm_mul_ps(_mm_cvtepi32_ps(d), _mm_set1_ps(X->s[t0 + t][g])));
        }
    }
}

/* INT4: two groups per step (one 32-byte load per row: its low nibbles are columns 0-15 of
   both groups, its high nibbles columns 16-31, against the pair's activations in that order).
   A row's low- and high-nibble pair sums are added in int16 (4 products, |.| <= 7620), the
   four rows reduced by three VPHADDW and one VPMADDWD to [d_g r0..r3 | d_g+1 r0..r3], and
   group g is added to the accumulators before group g + 1, as the reference does. */
ALWAYS_INLINE void xq_blk4_q4(const xq_buf *X, const ct_mat *w, int r, int nr, int t0, const int NT, __m128 *acc) {
    const int G = w->cols / CT_Q4_GROUP;
    const uint8_t *p[4];
    const float *sc[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        p[i] = (const uint8_t *)ct_row_ptr(w, r + (i < nr ? i : nr - 1));
        sc[i] = ct_row_sc(w, r + (i < nr ? i : nr - 1));
    }
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++) acc[t] = _mm_setzero_ps();
    const __m256i nib = _mm256_set1_epi8(0x0f);
    const __m256i ones16 = _mm256_set1_epi16(1);
    (void)ones16;
    __m128 swq[4] = {_mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps(), _mm_setzero_ps()};
    for (int g = 0; g < G; g += 2) {
        if ((g & 3) == 0) {
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) {
                _mm_prefetch((const char *)p[i] + g * 16 + XQ_PF, _MM_HINT_T0);
                _mm_prefetch((const char *)p[i] + g * 16 + XQ_PF2, _MM_HINT_T1);
                if ((g & 15) == 0) { /* the group scales, a stream of a quarter the bytes */
                    _mm_prefetch((const char *)(sc[i] + g) + XQ_PF / 4, _MM_HINT_T0);
                    _mm_prefetch((const char *)(sc[i] + g) + XQ_PF2 / 4, _MM_HINT_T1);
                }
            }
            if (g + 4 <= G) { /* the next four groups' scales, rows in lanes: swq[j] = group g + j */
#pragma GCC unroll 4
                for (int i = 0; i < 4; i++) swq[i] = _mm_loadu_ps(sc[i] + g);
                _MM_TRANSPOSE4_PS(swq[0], swq[1], swq[2], swq[3]);
            } else { /* two groups left */
#pragma GCC unroll 2
                for (int j = 0; j < 2; j++) swq[j] = _mm_setr_ps(sc[0][g + j], sc[1][g + j], sc[2][g + j], sc[3][g + j]);
            }
        }
        const __m256 sw = _mm256_set_m128(swq[(g & 3) + 1], swq[g & 3]);
        __m256i lo[4], hi[4];
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)(p[i] + g * 16));
            lo[i] = _mm256_and_si256(v, nib);
            hi[i] = _mm256_and_si256(_mm256_srli_epi16(v, 4), nib);
        }
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) {
            const int8_t *xq = X->q[t0 + t] + g * CT_Q4_GROUP;
            const __m256i xl = _mm256_loadu_si256((const __m256i *)xq),
                          xh = _mm256_loadu_si256((const __m256i *)(xq + 32));
            __m256i pr[4];
#if CT_DOT_VNNI /* lanes 0-3 group g, 4-7 group g + 1, in int32 */
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) pr[i] = CT_DPBUSD(CT_DPBUSD(_mm256_setzero_si256(), lo[i], xl), hi[i], xh);
            __m256i d = _mm256_hadd_epi32(_mm256_hadd_epi32(pr[0], pr[1]), _mm256_hadd_epi32(pr[2], pr[3]));
#else
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++)
                pr[i] = _mm256_add_epi16(_mm256_maddubs_epi16(lo[i], xl), _mm256_maddubs_epi16(hi[i], xh));
            __m256i d = _mm256_madd_epi16(
                _mm256_hadd_epi16(_mm256_hadd_epi16(pr[0], pr[1]), _mm256_hadd_epi16(pr[2], pr[3])), ones16);
#endif
            d = _mm256_sub_epi32(d, _mm256_loadu_si256((const __m256i *)(X->c8[t0 + t] + 4 * g)));
            const __m256 f =
                _mm256_mul_ps(sw, _mm256_mul_ps(_mm256_cvtepi32_ps(d), _mm256_loadu_ps(X->s8[t0 + t] + 4 * g)));
            acc[t] = _mm_add_ps(_mm_add_ps(acc[t], _mm256_castps256_ps128(f)), _mm256_extractf128_ps(f, 1));
        }
    }
}

/* Rows r..r+nr-1 of one token's output yt from the lanes o: the INT8 row scale times the
   accumulator, plus the bias (the reference's last step). */
ALWAYS_INLINE void xq_store(const ct_mat *w, const float *bias, float *yt, int r, int nr, const float *o) {
    for (int i = 0; i < nr; i++) yt[r + i] = ct_post_scale(w, r + i) * o[i] + (bias ? bias[r + i] : 0.0f);
}

/* Calls of XQ_PMIN8 (INT8) / XQ_PMIN4 (INT4) tokens or more (below that the row blocks are
   faster: docs/KERNELS.md "The avx2 level's panels"): 8-row panels packed per call, one row per
   lane, so each instruction multiplies 8 rows by one broadcast activation dword and leaves each
   row's partial dot in its lane, with no reduction across lanes. Per (8 rows, token, group):
   VPDPBUSD 8 of them (in two chains) and the offset correction; VPMADDUBSW INT4 8 of them
   (nibbles, pairs summed in int16: 8 x 3810 < 2^15) and one VPMADDWD, INT8 8 x (VPSIGNB,
   VPMADDUBSW of |q|, VPMADDWD, add); then a conversion, the scale multiply(s) and an add. Each
   lane adds its groups in order as the reference does, so the result is the row blocks' (and
   the reference's) bit for bit. */
#define XQ_PMIN8 (CT_DOT_VNNI ? 4 : 8)
#define XQ_PMIN4 8
typedef struct {
    _Alignas(32) uint8_t w[CT_XQ_MAXC / 4][32];         /* dword D (INT8: columns 4D..4D+3, q
                                                            + 128 for VPDPBUSD, else q; INT4: group
                                                            D / 8, dwords 0-3 the low nibbles, 4-7
                                                            the high ones, as q + 8): lane i = row
                                                            i's 4 bytes */
    _Alignas(32) float sc[CT_XQ_MAXC / CT_Q4_GROUP][8]; /* INT4 group scales: lane i = row i */
} xq_panel;

/* A thread's buffers (kernels/tbuf.h: on the heap at its first call; a thread that cannot
   allocate them borrows the spare, one at a time, and its quantized activations are not reused
   across calls then). */
typedef struct {
    xq_buf b;
    xq_panel p;
} xq_scratch;
static _Alignas(64) xq_scratch xq_spare;
static ct_tbuf xq_tb = CT_TBUF_SPARE(sizeof(xq_scratch), &xq_spare);
static _Thread_local void *xq_tl;

/* The panel functions stay out of line and out of interprocedural cloning, as they were measured
   (docs/KERNELS.md "Integer-dot panels"). */
#if defined(__clang__)
#define XQ_NOIPA __attribute__((noinline))
#else
#define XQ_NOIPA __attribute__((noipa))
#endif

/* 8 x 8 dword transpose: in v[i] = row i's 8 dwords, out v[m] lane i = row i's dword m. */
ALWAYS_INLINE void xq_tr8(__m256i *v) {
    __m256i t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_epi32(v[i], v[i + 1]);
        t[i + 1] = _mm256_unpackhi_epi32(v[i], v[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) { /* u[i + m] 128-bit half h: rows i/4*4.. of dword m + 4 h */
        u[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);
        u[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);
        u[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);
        u[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int m = 0; m < 4; m++) {
        v[m] = _mm256_permute2x128_si256(u[m], u[4 + m], 0x20);
        v[4 + m] = _mm256_permute2x128_si256(u[m], u[4 + m], 0x31);
    }
}

/* Packs rows r..r+7 of w (first nr real, the rest repeat the last) into P. */
ALWAYS_INLINE void xq_pack8(xq_panel *P, const ct_mat *w, int r, int nr) {
    const int G = w->cols / CT_Q4_GROUP, q4 = w->dtype == CT_DT_U8;
    const uint8_t *p[8];
    for (int i = 0; i < 8; i++) p[i] = (const uint8_t *)ct_row_ptr(w, r + (i < nr ? i : nr - 1));
    __m256i v[8];
    if (!q4) {
        const __m256i flip = _mm256_set1_epi8(CT_DOT_VNNI ? (char)0x80 : 0); /* VPDPBUSD: q + 128 */
        for (int g = 0; g < G; g++) {
            for (int i = 0; i < 8; i++) {
                _mm_prefetch((const char *)p[i] + g * 32 + XQ_PF, _MM_HINT_T0);
                _mm_prefetch((const char *)p[i] + g * 32 + XQ_PF2, _MM_HINT_T1);
                v[i] = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(p[i] + g * 32)), flip);
            }
            xq_tr8(v);
            for (int m = 0; m < 8; m++) _mm256_store_si256((__m256i *)P->w[8 * g + m], v[m]);
        }
        return;
    }
    const __m256i nib = _mm256_set1_epi8(0x0f);
    for (int g = 0; g < G; g += 2) { /* 32 bytes of a row: group g, then g + 1 */
        for (int i = 0; i < 8; i++) {
            _mm_prefetch((const char *)p[i] + g * 16 + XQ_PF, _MM_HINT_T0);
            _mm_prefetch((const char *)p[i] + g * 16 + XQ_PF2, _MM_HINT_T1);
            v[i] = _mm256_loadu_si256((const __m256i *)(p[i] + g * 16));
        }
        xq_tr8(v); /* v[m]: group g + m / 4, dword m % 4 */
        for (int m = 0; m < 8; m++) {
            uint8_t(*d)[32] = P->w + 8 * (g + m / 4) + m % 4;
            _mm256_store_si256((__m256i *)d[0], _mm256_and_si256(v[m], nib));
            _mm256_store_si256((__m256i *)d[4], _mm256_and_si256(_mm256_srli_epi16(v[m], 4), nib));
        }
    }
    for (int i = 0; i < 8; i++) {
        const float *sc = ct_row_sc(w, r + (i < nr ? i : nr - 1));
        for (int g = 0; g < G; g++) P->sc[g][i] = sc[g];
    }
}

static inline int32_t xq_ld32(const int8_t *q) {
    int32_t v;
    memcpy(&v, q, 4);
    return v;
}

/* The packed panel x NT tokens from slot t0: acc[t] lane i = the reference's accumulator of
   row i. Activation dword m of group g: INT8 natural order; INT4 the pair layout of B->q (the
   low-nibble dwords 0-3 at 16 hf + 4 m of the pair, the high ones 32 bytes later). */
ALWAYS_INLINE void xq_pan8(const xq_buf *B, const xq_panel *P, int G, const int q4, int t0, const int NT,
                           __m256 *acc) {
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++) acc[t] = _mm256_setzero_ps();
    for (int g = 0; g < G; g++) {
        const int xo = q4 ? (g & ~1) * CT_Q4_GROUP + 16 * (g & 1) : g * CT_Q4_GROUP;
        __m256i a[4][2];
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) a[t][0] = a[t][1] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int m = 0; m < 8; m++) {
            const __m256i wv = _mm256_load_si256((const __m256i *)P->w[8 * g + m]);
            const int o = xo + (q4 && m >= 4 ? 32 + 4 * (m - 4) : 4 * m);
#if CT_DOT_VNNI
#pragma GCC unroll 4
            for (int t = 0; t < NT; t++)
                a[t][m & 1] = CT_DPBUSD(a[t][m & 1], wv, _mm256_set1_epi32(xq_ld32(B->q[t0 + t] + o)));
#else
            if (q4) { /* nibbles x activations, pairs summed in int16: 8 dwords stay below 2^15 */
#pragma GCC unroll 4
                for (int t = 0; t < NT; t++)
                    a[t][0] = _mm256_add_epi16(
                        a[t][0], _mm256_maddubs_epi16(wv, _mm256_set1_epi32(xq_ld32(B->q[t0 + t] + o))));
            } else { /* |q| x (x with q's sign), pairs widened to int32 */
                const __m256i wa = _mm256_abs_epi8(wv);
#pragma GCC unroll 4
                for (int t = 0; t < NT; t++) {
                    const __m256i xs = _mm256_sign_epi8(_mm256_set1_epi32(xq_ld32(B->q[t0 + t] + o)), wv);
                    a[t][0] = _mm256_add_epi32(a[t][0],
                                               _mm256_madd_epi16(_mm256_maddubs_epi16(wa, xs), _mm256_set1_epi16(1)));
                }
            }
#endif
        }
        const __m256 sw = q4 ? _mm256_load_ps(P->sc[g]) : _mm256_setzero_ps();
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) {
#if CT_DOT_VNNI /* the offset correction: INT8 128, INT4 8 x the group's activation sum */
            const __m256i d = _mm256_sub_epi32(_mm256_add_epi32(a[t][0], a[t][1]),
                                               _mm256_set1_epi32(B->c8[t0 + t][4 * g]));
#else
            const __m256i d = q4 ? _mm256_sub_epi32(_mm256_madd_epi16(a[t][0], _mm256_set1_epi16(1)),
                                                    _mm256_set1_epi32(B->c8[t0 + t][4 * g]))
                                 : a[t][0];
#endif
            __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(d), _mm256_set1_ps(B->s[t0 + t][g]));
            if (q4) f = _mm256_mul_ps(sw, f);
            acc[t] = _mm256_add_ps(acc[t], f);
        }
    }
}

/* Rows r0..r1 x tokens t0..t0+nt of B on 8-row panels packed into P, stored as xq_rows stores. */
XQ_NOIPA static void xq_panels(const xq_buf *B, xq_panel *P, const ct_mat *w, const float *bias, float *y, int t0,
                               int nt, int r0, int r1) {
    const int R = w->rows, G = w->cols / CT_Q4_GROUP, q4 = w->dtype == CT_DT_U8;
    for (int r = r0; r < r1; r += 8) {
        const int nr = r1 - r < 8 ? r1 - r : 8;
        xq_pack8(P, w, r, nr);
        for (int t = 0; t < nt; t += 4) {
            const int n4 = nt - t < 4 ? nt - t : 4;
            __m256 acc[4];
            switch (n4 + 4 * q4) {
            case 1: xq_pan8(B, P, G, 0, t, 1, acc); break;
            case 2: xq_pan8(B, P, G, 0, t, 2, acc); break;
            case 3: xq_pan8(B, P, G, 0, t, 3, acc); break;
            case 4: xq_pan8(B, P, G, 0, t, 4, acc); break;
            case 5: xq_pan8(B, P, G, 1, t, 1, acc); break;
            case 6: xq_pan8(B, P, G, 1, t, 2, acc); break;
            case 7: xq_pan8(B, P, G, 1, t, 3, acc); break;
            default: xq_pan8(B, P, G, 1, t, 4, acc); break;
            }
            for (int j = 0; j < n4; j++) {
                float o[8];
                _mm256_storeu_ps(o, acc[j]);
                xq_store(w, bias, y + (size_t)(t0 + t + j) * R, r, nr, o);
            }
        }
    }
}

static void xq_rows(const xq_buf *X, const ct_mat *w, const float *bias, float *y, int t0, int nt, int r0, int r1) {
    X = __builtin_assume_aligned(X, 64);
    const int R = w->rows, q4 = w->dtype == CT_DT_U8;
    for (int r = r0; r < r1; r += 4) {
        const int nr = r1 - r < 4 ? r1 - r : 4;
        for (int t = 0; t < nt; t += 4) {
            const int n4 = nt - t < 4 ? nt - t : 4;
            __m128 acc[4];
            if (q4) {
                switch (n4) {
                case 1: xq_blk4_q4(X, w, r, nr, t, 1, acc); break;
                case 2: xq_blk4_q4(X, w, r, nr, t, 2, acc); break;
                case 3: xq_blk4_q4(X, w, r, nr, t, 3, acc); break;
                default: xq_blk4_q4(X, w, r, nr, t, 4, acc); break;
                }
            } else {
                switch (n4) {
                case 1: xq_blk4_i8(X, w, r, nr, t, 1, acc); break;
                case 2: xq_blk4_i8(X, w, r, nr, t, 2, acc); break;
                case 3: xq_blk4_i8(X, w, r, nr, t, 3, acc); break;
                default: xq_blk4_i8(X, w, r, nr, t, 4, acc); break;
                }
            }
            for (int j = 0; j < n4; j++) {
                float o[4];
                _mm_storeu_ps(o, acc[j]);
                xq_store(w, bias, y + (size_t)(t0 + t + j) * R, r, nr, o);
            }
        }
    }
}

void CT_DOT_FN(const ct_mat *w, const float *bias, const float *x, float *y, int n, int r0, int r1) {
    const int C = w->cols, q4 = w->dtype == CT_DT_U8;
    int borrowed;
    xq_scratch *S = ct_tbuf_take(&xq_tb, &xq_tl, &borrowed);
    ct_xq_reuse *k = &ct_xq_tls; /* the format is part of the key: it picks the layout */
    for (int t0 = 0; t0 < n; t0 += XQ_TOK) {
        const int nt = n - t0 < XQ_TOK ? n - t0 : XQ_TOK;
        if (n > XQ_TOK || !k->on || k->x != x || k->n != n || k->cols != C || k->q4 != q4) {
            for (int t = 0; t < nt; t++) xq_quantize_tok(&S->b, x + (size_t)(t0 + t) * C, C, q4, t);
            if (k->on) *k = (ct_xq_reuse){1, n <= XQ_TOK ? x : NULL, n, C, q4};
        }
        if (n >= (q4 ? XQ_PMIN4 : XQ_PMIN8)) {
            xq_panels(&S->b, &S->p, w, bias, y, t0, nt, r0, r1);
            continue;
        }
        xq_rows(&S->b, w, bias, y, t0, nt, r0, r1);
    }
    if (borrowed) k->x = NULL; /* the spare's contents do not outlive the call */
    ct_tbuf_put(&xq_tb, borrowed);
}
