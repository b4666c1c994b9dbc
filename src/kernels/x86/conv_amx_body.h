/* The codec-decoder multi-tap GEMM (kernels/conv.h, ct_cv_gemm_fn) on AMX tiles, f32-accurate
 * through split bf16 operands: x = xh + xl and w = wh + wl (xh = bf16(x), xl = bf16(x - xh)), and
 * each product as xh*wh + xh*wl + xl*wh (xl*wl, 2^-18 relative, is dropped). Per product the
 * error stays within about 3 * 2^-18 of |x w| (docs/CODEC.md "Kernels").
 *
 * C tiles hold 16 rows (time steps) x 16 output channels (one panel); A tiles 16 rows x 32 input
 * channels of the split X; B tiles the split weights of 32 input channels x 16 channels in pair
 * order. X rows are split once per block of rows into xa, the weights once per block of rows and
 * per K chunk of reduction steps into wb (a thread's buffers, of a fixed size, allocated at its
 * first call); a K chunk's partial sums go through pt in f32, exactly. Every output element takes the same tile operations in
 * the same order (taps, then 32-channel steps, ascending) whatever the row / panel range, so any
 * split between threads or calls gives the same bits.
 *
 * Weights not marked amx (ct_cv_packed.amx: calls of few rows, which would fill a 32-row tile pair
 * with padding) and shapes whose split rows do not fit xa go to CV_AMX_FALLBACK; the choice
 * depends on the weight alone, so every call of a weight takes the same GEMM (but in a thread
 * that cannot allocate its buffers, which takes the fallback too).
 *
 * The includer defines CV_AMX_FN (the function's name), CV_AMX_ATTR (its target attribute),
 * CV_AMX_FALLBACK (the GEMM those calls take) and the tile operations
 * TILE_CFG(cfg), TILE_ZERO(t), TILE_LOAD(t, base, stride), TILE_DP(c, a, b) (TDPBF16PS),
 * TILE_STORE(t, base, stride), TILE_RELEASE(): the AMX instructions (x86/conv_amx_avx512.c) or
 * an emulation (tests/unit/test_codec_kernels.c). */
#ifndef CT_CV_AMX_BODY_ONCE /* the shared part: the body may be built more than once per file */
#define CT_CV_AMX_BODY_ONCE
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/conv.h"
#include "kernels/tbuf.h"
#include "kernels/x86/amx_cfg.h"

#define CVA_ELEMS (1 << 18) /* split X elements per part (hi, lo): 512 KiB each */
#define CVA_MAXR 256        /* rows per block */
#define CVB_STEPS 32        /* 32-channel reduction steps per K chunk: 128 KiB of split weights */


/* A thread's buffers (1.2 MiB), allocated at its first call and freed when it exits: thread-local
   arrays would add their size to every thread of every process that links the library, AMX or not. */
typedef struct {
    _Alignas(64) uint16_t xa[2][CVA_ELEMS];             /* [hi, lo][row][cin2] */
    _Alignas(64) uint16_t wb[2][CVB_STEPS][2][16 * 32]; /* [hi, lo][step][panel][pair][ch][2] */
    _Alignas(64) float pt[2][CVA_MAXR][16];             /* [panel][row][ch] partial sums */
} cv_amx_buf;
static ct_tbuf cv_tbuf = CT_TBUF(sizeof(cv_amx_buf));
static _Thread_local void *cv_tl;

/* bf16 of x, rounded to nearest even (NaN stays NaN). */
static inline uint16_t cv_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7f800000u) == 0x7f800000u) return (uint16_t)((u >> 16) | ((u & 0xffffu) ? 0x40u : 0u));
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline void cv_split(float x, uint16_t *h, uint16_t *l) {
    *h = cv_bf16(x);
    uint32_t u = (uint32_t)*h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    *l = cv_bf16(x - f);
}

/* Split of n contiguous values (the includer may define CV_SPLIT_ROW, same contract). */
static inline void cv_split_row_c(const float *x, int n, uint16_t *h, uint16_t *l) {
    for (int i = 0; i < n; i++) cv_split(x[i], h + i, l + i);
}
/* Split of 16 channels of two weight rows into pair order: h[2 o + e] from (e ? w1 : w0)[o] (the
   includer may define CV_SPLIT_PAIRS, same contract). */
static inline void cv_split_pairs_c(const float *w0, const float *w1, uint16_t *h, uint16_t *l) {
    for (int o = 0; o < 16; o++) {
        cv_split(w0[o], h + 2 * o, l + 2 * o);
        cv_split(w1[o], h + 2 * o + 1, l + 2 * o + 1);
    }
}
/* A C tile row's n <= 16 channels into y: y[o] = ((acc ? y[o] : 0) + (b ? b[o] : 0)) + t[o] (the
   includer may define CV_STORE_ROW, same contract and bits). */
static inline void cv_store_row_c(float *y, const float *t, const float *b, int n, int acc) {
    for (int o = 0; o < n; o++) {
        const float base = (acc ? y[o] : 0.0f) + (b ? b[o] : 0.0f);
        y[o] = base + t[o];
    }
}
#endif /* CT_CV_AMX_BODY_ONCE */

#ifdef CV_SPLIT_ROW
#define CV_SPLIT_ROW_USE CV_SPLIT_ROW
#define CV_SPLIT_PAIRS_USE CV_SPLIT_PAIRS
#define CV_STORE_ROW_USE CV_STORE_ROW
#else
#define CV_SPLIT_ROW_USE cv_split_row_c
#define CV_SPLIT_PAIRS_USE cv_split_pairs_c
#define CV_STORE_ROW_USE cv_store_row_c
#endif

CV_AMX_ATTR void CV_AMX_FN(const ct_cv_gemm_args *a, int b0, int b1, int r0, int r1) {
    const ct_cv_packed *W = a->W;
    const int cin = W->cin, cout = W->cout, K = W->k, nib = (cin + 31) / 32, cin2 = nib * 32;
    const int S = a->ntaps * nib;
    if (r0 >= r1 || b0 >= b1 || S <= 0 || !W->amx) {
        if (r0 < r1 && b0 < b1) CV_AMX_FALLBACK(a, b0, b1, r0, r1);
        return;
    }
    int omin = 0, omax = 0;
    for (int q = 0; q < a->ntaps; q++) {
        if (a->off[q] < omin) omin = a->off[q];
        if (a->off[q] > omax) omax = a->off[q];
    }
    /* rows per block: a multiple of 32 whose split rows (with the taps' span) fit xa */
    int RB = (CVA_ELEMS / cin2 - (omax - omin)) / 32 * 32;
    if (RB > CVA_MAXR) RB = CVA_MAXR;
    cv_amx_buf *B = RB >= 32 ? ct_tbuf_get(&cv_tbuf, &cv_tl) : NULL;
    if (!B) {
        CV_AMX_FALLBACK(a, b0, b1, r0, r1);
        return;
    }
    ct_amx_cfg cfg;
    ct_amx_cfg_full(&cfg);
    TILE_CFG(&cfg);
    float ct[4][256];
    const size_t xs = (size_t)cin2 * 2; /* split X row stride in bytes */
    for (int R0 = r0; R0 < r1; R0 += RB) {
        const int nr = r1 - R0 < RB ? r1 - R0 : RB, nrp = (nr + 31) / 32 * 32, nx = nrp + omax - omin;
        /* X rows R0 + omin + j; rows past the last one a valid output reads are zeros */
        for (int j = 0; j < nx; j++) {
            const int src = R0 + omin + j;
            uint16_t *h = B->xa[0] + (size_t)j * cin2, *l = B->xa[1] + (size_t)j * cin2;
            if (src > r1 - 1 + omax) {
                memset(h, 0, sizeof(uint16_t) * (size_t)cin2);
                memset(l, 0, sizeof(uint16_t) * (size_t)cin2);
                continue;
            }
            const float *x = a->X + (ptrdiff_t)src * (ptrdiff_t)a->ldx;
            CV_SPLIT_ROW_USE(x, cin, h, l);
            for (int i = cin; i < cin2; i++) h[i] = l[i] = 0;
        }
        for (int pb = b0; pb < b1; pb += 2) {
            const int two = pb + 1 < b1;
            for (int s0 = 0; s0 < S; s0 += CVB_STEPS) {
                const int s1 = s0 + CVB_STEPS < S ? s0 + CVB_STEPS : S;
                for (int s = s0; s < s1; s++) { /* the K chunk's weights, split, in pair order */
                    const int q = s / nib, i0 = (s % nib) * 32;
                    for (int j = 0; j < 1 + two; j++) {
                        const float *w = W->w + ((size_t)(pb + j) * (size_t)K + (size_t)a->tap[q]) * (size_t)cin * CT_CV_OB;
                        uint16_t *h = B->wb[0][s - s0][j], *l = B->wb[1][s - s0][j];
                        static const float zero[16];
                        for (int p = 0; p < 16; p++) {
                            const int i = i0 + 2 * p;
                            CV_SPLIT_PAIRS_USE(i < cin ? w + (size_t)i * CT_CV_OB : zero,
                                           i + 1 < cin ? w + (size_t)(i + 1) * CT_CV_OB : zero, h + p * 32, l + p * 32);
                        }
                    }
                }
                for (int rb = 0; rb < nrp; rb += 32) {
                    /* tiles 0 / 1: rows rb / rb + 16 of panel pb; 2 / 3: the same of panel pb + 1 */
                    if (s0 == 0) {
                        TILE_ZERO(0);
                        TILE_ZERO(1);
                        TILE_ZERO(2);
                        TILE_ZERO(3);
                    } else {
                        TILE_LOAD(0, B->pt[0][rb], 64);
                        TILE_LOAD(1, B->pt[0][rb + 16], 64);
                        TILE_LOAD(2, B->pt[1][rb], 64);
                        TILE_LOAD(3, B->pt[1][rb + 16], 64);
                    }
                    for (int s = s0; s < s1; s++) {
                        const int q = s / nib, i0 = (s % nib) * 32;
                        const size_t xo = (size_t)(rb + a->off[q] - omin) * (size_t)cin2 + (size_t)i0;
                        /* xh * wh, xh * wl, xl * wh */
#define CV_PASS(xp, wp, loadx)                                                                      \
    do {                                                                                            \
        if (loadx) {                                                                                \
            TILE_LOAD(4, B->xa[xp] + xo, xs);                                                       \
            TILE_LOAD(5, B->xa[xp] + xo + (size_t)16 * cin2, xs);                                   \
        }                                                                                           \
        TILE_LOAD(6, B->wb[wp][s - s0][0], 64);                                                     \
        TILE_DP(0, 4, 6);                                                                           \
        TILE_DP(1, 5, 6);                                                                           \
        if (two) {                                                                                  \
            TILE_LOAD(7, B->wb[wp][s - s0][1], 64);                                                 \
            TILE_DP(2, 4, 7);                                                                       \
            TILE_DP(3, 5, 7);                                                                       \
        }                                                                                           \
    } while (0)
                        CV_PASS(0, 0, 1);
                        CV_PASS(0, 1, 0);
                        CV_PASS(1, 0, 1);
#undef CV_PASS
                    }
                    if (s1 < S) {
                        TILE_STORE(0, B->pt[0][rb], 64);
                        TILE_STORE(1, B->pt[0][rb + 16], 64);
                        TILE_STORE(2, B->pt[1][rb], 64);
                        TILE_STORE(3, B->pt[1][rb + 16], 64);
                        continue;
                    }
                    TILE_STORE(0, ct[0], 64);
                    TILE_STORE(1, ct[1], 64);
                    TILE_STORE(2, ct[2], 64);
                    TILE_STORE(3, ct[3], 64);
                    for (int j = 0; j < 1 + two; j++) {
                        const int c0 = (pb + j) * CT_CV_OB, nc = cout - c0 < 16 ? cout - c0 : 16;
                        for (int h = 0; h < 2; h++)
                            for (int i = 0; i < 16; i++) {
                                const int r = R0 + rb + 16 * h + i;
                                if (r >= r1) break;
                                CV_STORE_ROW_USE(a->Y + (size_t)r * a->ldy + c0, ct[2 * j + h] + i * 16,
                                                 a->bias ? a->bias + c0 : NULL, nc, a->accumulate);
                            }
                    }
                }
            }
        }
    }
    TILE_RELEASE();
}
#undef CV_SPLIT_ROW_USE
#undef CV_SPLIT_PAIRS_USE
#undef CV_STORE_ROW_USE
