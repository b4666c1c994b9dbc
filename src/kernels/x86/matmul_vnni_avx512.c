/* AVX-512 VNNI matmul for the integer-dot mode (ct_mat.xq, INT8/INT4 weights): each call
   quantizes its tokens' activations per 32-column group to int8 (bit-identical to
   ct_xq_quantize) and VPDPBUSD multiplies them with the weights fed as unsigned bytes (INT8
   q ^ 0x80 = q + 128, INT4 nibbles q + 8); every lane's integer accumulator starts at
   -offset * (the sum of the activation bytes it multiplies), so the offset cancels exactly.
   4 rows x up to 4 tokens per block, fixed reduction trees: results do not depend on the
   batch size or the thread count. INT8 steps 64 columns (two groups) per VPDPBUSD, one f32
   accumulator per (row, token). INT4 steps 128 columns (four groups) per 64-byte load: its
   low and high nibbles are two VPDPBUSD operands whose lane j lies in the same group j / 4,
   so both chain into one integer accumulator; the four lanes of a group are then summed in
   integers for the 4 rows at once, so the scales are applied once per (row, token, group),
   into one f32 accumulator per token. INT4 activations are stored in the order the nibbles
   unpack to: per 128 columns, [g0..g3 columns 0-15 | g0..g3 columns 16-31] (a last 64-column
   step holds g0, g1 and zeros), and each step's four group scales spread over 16 lanes. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/cpu.h"
#include "kernels/matrow.h"
#include "kernels/x86/simd512.h"

#define VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))
#define XQ_TOK 16      /* tokens quantized per pass */
#define XQ_RCHUNK 256  /* rows per pass when the tokens do not fit one pass */
#define XQ_RBLOCK 64   /* rows that stay in L2 while every 4-token block passes over them */
/* Weight prefetch per row: XQ_PFB bytes ahead into L1 and XQ_PFB2 bytes ahead into L2 (best
   of 0.5-8 KiB x 8-32 KiB on the DRAM-bound talker and predictor, docs/BENCH.md); INT4 group
   scales (a separate stream, a quarter of the weight bytes) a quarter as far ahead */
#ifndef XQ_PFB
#define XQ_PFB 1024
#endif
#define XQ_PFB2 CT_PF_L2

typedef struct {
    int8_t q[XQ_TOK][CT_XQ_MAXC + 64];             /* quantized activations (INT4: permuted, padded) */
    int32_t corr[XQ_TOK][CT_XQ_MAXC / 4];          /* -offset * sum of each lane's activation bytes */
    float s[XQ_TOK][CT_XQ_MAXC / CT_Q4_GROUP + 4]; /* group scales (INT4: zero past the last group) */
    float s4[XQ_TOK][CT_XQ_MAXC / 8 + 16];         /* INT4: per 128-column step the step's four group
                                                      scales spread over 16 lanes (lane j: group j / 4) */
} xq_buf;

static _Thread_local xq_buf xb;

/* Quantizes one token x[C] into slot t: q4 selects the INT4 layout and offset 8, else
   natural order and offset 128. */
VNNI_TARGET static void xq_quantize_tok(const float *x, int C, int q4, int t) {
    int8_t *q = xb.q[t];
    const __m512i ones = _mm512_set1_epi8(1);
    const __m512 absm = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
    for (int k = 0; k < C; k += 64) {
        __m128i b[4];
        for (int h = 0; h < 2; h++) { /* group k/32 + h */
            const float *xg = x + k + 32 * h;
            __m512 a0 = _mm512_loadu_ps(xg), a1 = _mm512_loadu_ps(xg + 16);
            float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_and_ps(a0, absm), _mm512_and_ps(a1, absm)));
            float inv = 0.0f, s = 0.0f;
            if (amax >= CT_XQ_MIN_AMAX) {
                inv = 127.0f / amax;
                s = amax / 127.0f;
            }
            xb.s[t][k / 32 + h] = s;
            const __m512 iv = _mm512_set1_ps(inv);
            b[2 * h] = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(a0, iv)));
            b[2 * h + 1] = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(a1, iv)));
        }
        if (!q4) { /* g0 0-15, g0 16-31, g1 0-15, g1 16-31 */
            for (int i = 0; i < 4; i++) _mm_storeu_si128((__m128i *)(q + k + 16 * i), b[i]);
            __m512i lane = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, _mm512_loadu_si512((const void *)(q + k)));
            _mm512_storeu_si512((void *)(xb.corr[t] + k / 4), _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(lane, 7)));
            continue;
        }
        /* INT4: half j of the 128-column step at K: columns 0-15 of its two groups at K + 32 j,
           columns 16-31 at K + 64 + 32 j */
        const int K = k & ~127, j = (k >> 6) & 1;
        _mm_storeu_si128((__m128i *)(q + K + 32 * j), b[0]);
        _mm_storeu_si128((__m128i *)(q + K + 32 * j + 16), b[2]);
        _mm_storeu_si128((__m128i *)(q + K + 64 + 32 * j), b[1]);
        _mm_storeu_si128((__m128i *)(q + K + 64 + 32 * j + 16), b[3]);
        if (j == 0 && k + 64 == C) { /* a last half step: zeros for the absent groups */
            _mm256_storeu_si256((__m256i *)(q + K + 32), _mm256_setzero_si256());
            _mm256_storeu_si256((__m256i *)(q + K + 96), _mm256_setzero_si256());
            xb.s[t][k / 32 + 2] = xb.s[t][k / 32 + 3] = 0.0f;
        }
        if (j == 1 || k + 64 == C) {
            const __m512i gi = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
            _mm512_storeu_ps(xb.s4[t] + K / 8,
                             _mm512_permutexvar_ps(gi, _mm512_castps128_ps512(_mm_loadu_ps(xb.s[t] + K / 32))));
            __m512i lane = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, _mm512_loadu_si512((const void *)(q + K)));
            lane = _mm512_dpbusd_epi32(lane, ones, _mm512_loadu_si512((const void *)(q + K + 64)));
            _mm512_storeu_si512((void *)(xb.corr[t] + K / 8), _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(lane, 3)));
        }
    }
}

/* Two consecutive group scales p[0], p[1] spread over the 16 lanes by idx. */
VNNI_TARGET ALWAYS_INLINE __m512 spread2(const float *p, __m512i idx) {
    return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(_mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)p))));
}

/* INT8: 4 rows (first nr real, the rest repeat the last) x NT tokens from slots t0.. */
VNNI_TARGET ALWAYS_INLINE __m512 xq_blk4_i8(const ct_mat *w, int r, int nr, int t0, const int NT) {
    const int C = w->cols;
    const uint8_t *p[4];
    for (int i = 0; i < 4; i++) p[i] = ct_row_ptr(w, r + (i < nr ? i : nr - 1));
    const __m512i idx = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1); /* lane -> group */
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    __m512 acc[16];
    for (int i = 0; i < 16; i++) acc[i] = _mm512_setzero_ps();
    for (int k = 0; k < C; k += 64) {
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            _mm_prefetch((const char *)p[i] + k + XQ_PFB, _MM_HINT_T0);
            _mm_prefetch((const char *)p[i] + k + XQ_PFB2, _MM_HINT_T1);
        }
        __m512i wv[4];
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) wv[i] = _mm512_xor_si512(_mm512_loadu_si512((const void *)(p[i] + k)), flip);
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++) {
            const __m512i xv = _mm512_loadu_si512((const void *)(xb.q[t0 + t] + k));
            const __m512i cv = _mm512_loadu_si512((const void *)(xb.corr[t0 + t] + k / 4));
            const __m512 sx = spread2(xb.s[t0 + t] + k / 32, idx);
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++)
                acc[4 * i + t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_dpbusd_epi32(cv, wv[i], xv)), sx, acc[4 * i + t]);
        }
    }
    return ct_reduce16(acc);
}

/* INT4, one 128-column step at k (kb = k / 2 bytes) of the rows p[4] with scales sc[4] for NT
   tokens from slots t0..: full = 0 for a last 64-column half step. A row's four integer lanes
   of a group are summed in integers first (exact, |sum| < 2^15), so each (row, token, group)
   takes one convert, one multiply and one FMA: acc[t] lane 4 g + i is row i, group g of the
   step. */
VNNI_TARGET ALWAYS_INLINE void xq_q4_step(const uint8_t *const *p, const float *const *sc, int k, int t0,
                                          const int NT, const int full, __m512 *acc) {
    /* lane 4 g + i <- lane 4 i + g: the rows' scales, loaded row after row, transposed */
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
        const int8_t *xq = xb.q[t0 + t] + k;
        const __m512i xl = _mm512_loadu_si512((const void *)xq), xh = _mm512_loadu_si512((const void *)(xq + 64));
        const __m512i cv = _mm512_loadu_si512((const void *)(xb.corr[t0 + t] + k / 8));
        __m512i d[4];
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) d[i] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(cv, lo[i], xl), hi[i], xh);
        /* per 128-bit block (one group): [sum d0, sum d1, sum d2, sum d3] */
        const __m512i s01 = _mm512_add_epi32(_mm512_unpacklo_epi32(d[0], d[1]), _mm512_unpackhi_epi32(d[0], d[1]));
        const __m512i s23 = _mm512_add_epi32(_mm512_unpacklo_epi32(d[2], d[3]), _mm512_unpackhi_epi32(d[2], d[3]));
        const __m512i g = _mm512_add_epi32(_mm512_unpacklo_epi64(s01, s23), _mm512_unpackhi_epi64(s01, s23));
        acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(g), _mm512_loadu_ps(xb.s4[t0 + t] + k / 8)), sw, acc[t]);
    }
}

/* INT4: as xq_blk4_i8, 128 columns per step (a last 64-column half step apart); the four
   groups of each token's accumulator are summed at the end (lane 4 t + i: row i, token t). */
VNNI_TARGET ALWAYS_INLINE __m512 xq_blk4_q4(const ct_mat *w, int r, int nr, int t0, const int NT) {
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
        xq_q4_step(p, sc, k, t0, NT, 1, acc);
    }
    if (Cf < C) xq_q4_step(p, sc, Cf, t0, NT, 0, acc);
    const __m512 s0 = _mm512_add_ps(_mm512_shuffle_f32x4(acc[0], acc[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                    _mm512_shuffle_f32x4(acc[0], acc[1], _MM_SHUFFLE(3, 2, 3, 2)));
    const __m512 s1 = _mm512_add_ps(_mm512_shuffle_f32x4(acc[2], acc[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                    _mm512_shuffle_f32x4(acc[2], acc[3], _MM_SHUFFLE(3, 2, 3, 2)));
    return _mm512_add_ps(_mm512_shuffle_f32x4(s0, s1, _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(s0, s1, _MM_SHUFFLE(3, 1, 3, 1)));
}

VNNI_TARGET static void xq_rows(const ct_mat *w, const float *bias, float *y, int t0, int nt, int r0,
                                int r1) {
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
                    case 1: red = xq_blk4_q4(w, r, nr, t, 1); break;
                    case 2: red = xq_blk4_q4(w, r, nr, t, 2); break;
                    case 3: red = xq_blk4_q4(w, r, nr, t, 3); break;
                    default: red = xq_blk4_q4(w, r, nr, t, 4); break;
                    }
                } else {
                    switch (n4) {
                    case 1: red = xq_blk4_i8(w, r, nr, t, 1); break;
                    case 2: red = xq_blk4_i8(w, r, nr, t, 2); break;
                    case 3: red = xq_blk4_i8(w, r, nr, t, 3); break;
                    default: red = xq_blk4_i8(w, r, nr, t, 4); break;
                    }
                }
                ct_store_block(w, bias, red, yt, R, r, nr, n4);
            }
        }
    }
}

VNNI_TARGET void ct_matmul_rows_vnni(const ct_mat *w, const float *bias, const float *x, float *y,
                                     int n, int r0, int r1) {
    const int C = w->cols, q4 = w->dtype == CT_DT_U8;
    /* one quantization per call when the tokens fit one pass; otherwise passes of XQ_RCHUNK
       rows, each re-quantizing its token blocks (rows still start at multiples of 4 from r0) */
    const int rstep = n <= XQ_TOK ? r1 - r0 : XQ_RCHUNK;
    for (int rc = r0; rc < r1; rc += rstep) {
        const int rce = r1 - rc < rstep ? r1 : rc + rstep;
        for (int t0 = 0; t0 < n; t0 += XQ_TOK) {
            const int nt = n - t0 < XQ_TOK ? n - t0 : XQ_TOK;
            ct_xq_reuse *k = &ct_xq_tls;
            if (n > XQ_TOK || !k->on || k->x != x || k->n != n || k->cols != C || k->q4 != q4) {
                for (int t = 0; t < nt; t++) xq_quantize_tok(x + (size_t)(t0 + t) * C, C, q4, t);
                if (k->on) *k = (ct_xq_reuse){1, n <= XQ_TOK ? x : NULL, n, C, q4};
            }
            xq_rows(w, bias, y, t0, nt, rc, rce);
        }
    }
}
