/* AVX-512 variants of the codec-decoder GEMM (multi-tap, panel-packed weights) and of
 * SnakeBeta (polynomial sine). GEMM: register tiles of NP panels (16 output channels each)
 * x R rows held in zmm accumulators, x broadcast from memory, one FMA per (row, panel,
 * input channel); the reduction (taps x input channels) is cut into K blocks whose weight
 * slab stays in L1 while every row tile of the range passes over it, partial sums going
 * through Y. The per-element operation sequence (init, then FMAs in K order) is the same
 * for every tile shape, K block size and row/panel range, so results do not depend on
 * chunking or threads. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "kernels/conv.h"

#define OB CT_CV_OB
#define AI static inline __attribute__((always_inline))

/* Weight slab of one K block: NP panels x KB channels x 64 bytes <= 32 KiB. */
#define KB_BYTES 32768
/* Weight prefetch distance in reduction steps (64 bytes each) for 1-2 row tiles. */
#ifndef PF_AHEAD
#define PF_AHEAD 32
#endif

typedef struct {
    const ct_cv_gemm_args *a;
    int b;          /* first panel of the group */
    int k0, k1;     /* flattened reduction range (q * cin + i) */
    int first;      /* init from bias / Y */
    int last;       /* final store (else partial sums, identical bits) */
} blk;

AI __mmask16 lane_mask(int cout, int panel) {
    int v = cout - panel * OB;
    return v >= OB ? (__mmask16)0xFFFF : (__mmask16)((1u << v) - 1u);
}

AI void tile(const blk *k, int r, const int NP, const int R) {
    const ct_cv_gemm_args *a = k->a;
    const ct_cv_packed *W = a->W;
    const int cin = W->cin, cout = W->cout;
    __m512 acc[16][4]; /* [R][NP] used; constant indices after unrolling keep them in registers */
    __mmask16 m[4];
#pragma GCC unroll 4
    for (int p = 0; p < NP; p++) m[p] = lane_mask(cout, k->b + p);
    if (k->first) {
#pragma GCC unroll 4
        for (int p = 0; p < NP; p++) {
            __m512 bv = a->bias ? _mm512_maskz_loadu_ps(m[p], a->bias + (size_t)(k->b + p) * OB) : _mm512_setzero_ps();
#pragma GCC unroll 16
            for (int rr = 0; rr < R; rr++) {
                if (a->accumulate) {
                    const float *yr = a->Y + (size_t)(r + rr) * a->ldy + (size_t)(k->b + p) * OB;
                    acc[rr][p] = _mm512_add_ps(_mm512_maskz_loadu_ps(m[p], yr), bv);
                } else {
                    acc[rr][p] = bv;
                }
            }
        }
    } else {
#pragma GCC unroll 4
        for (int p = 0; p < NP; p++)
#pragma GCC unroll 16
            for (int rr = 0; rr < R; rr++)
                acc[rr][p] = _mm512_maskz_loadu_ps(m[p], a->Y + (size_t)(r + rr) * a->ldy + (size_t)(k->b + p) * OB);
    }
    const size_t pstride = (size_t)W->k * (size_t)cin * OB; /* floats between panels */
    const ptrdiff_t lx = (ptrdiff_t)a->ldx;
    int kk = k->k0;
    while (kk < k->k1) {
        const int q = kk / cin, i0 = kk - q * cin;
        int i1 = cin;
        if (q * cin + i1 > k->k1) i1 = k->k1 - q * cin;
        const float *w = W->w + (size_t)(k->b) * pstride + ((size_t)a->tap[q] * (size_t)cin + (size_t)i0) * OB;
        const float *x = a->X + (ptrdiff_t)(r + a->off[q]) * lx + i0;
        const int len = i1 - i0;
        for (int i = 0; i < len; i++) {
            __m512 wv[4];
#pragma GCC unroll 4
            for (int p = 0; p < NP; p++) wv[p] = _mm512_loadu_ps(w + (size_t)p * pstride + (size_t)i * OB);
            if (R <= 2) {
                /* few rows: weight-streaming bound, fetch ahead of the hardware prefetcher */
#pragma GCC unroll 4
                for (int p = 0; p < NP; p++)
                    _mm_prefetch((const char *)(w + (size_t)p * pstride + (size_t)(i + PF_AHEAD) * OB), _MM_HINT_T0);
            }
#pragma GCC unroll 16
            for (int rr = 0; rr < R; rr++) {
                __m512 xb = _mm512_set1_ps(x[(ptrdiff_t)rr * lx + i]);
#pragma GCC unroll 4
                for (int p = 0; p < NP; p++) acc[rr][p] = _mm512_fmadd_ps(xb, wv[p], acc[rr][p]);
            }
        }
        kk += len;
    }
#pragma GCC unroll 4
    for (int p = 0; p < NP; p++)
#pragma GCC unroll 16
        for (int rr = 0; rr < R; rr++)
            _mm512_mask_storeu_ps(a->Y + (size_t)(r + rr) * a->ldy + (size_t)(k->b + p) * OB, m[p], acc[rr][p]);
}

/* Rows per tile for NP panels: NP * R <= 24 accumulators. */
#define RMAX(NP) ((NP) == 4 ? 6 : (NP) == 3 ? 8 : (NP) == 2 ? 12 : 16)

#define TILE_CASES(NP)                                                                                  \
    switch (R) {                                                                                        \
    case 1: tile(k, r, NP, 1); break;                                                                   \
    case 2: tile(k, r, NP, 2); break;                                                                   \
    case 3: tile(k, r, NP, 3); break;                                                                   \
    case 4: tile(k, r, NP, 4); break;                                                                   \
    case 5: tile(k, r, NP, 5); break;                                                                   \
    case 6: tile(k, r, NP, 6); break;                                                                   \
    case 7: if (RMAX(NP) >= 7) tile(k, r, NP, (RMAX(NP) >= 7 ? 7 : 1)); break;                          \
    case 8: if (RMAX(NP) >= 8) tile(k, r, NP, (RMAX(NP) >= 8 ? 8 : 1)); break;                          \
    case 9: if (RMAX(NP) >= 9) tile(k, r, NP, (RMAX(NP) >= 9 ? 9 : 1)); break;                          \
    case 10: if (RMAX(NP) >= 10) tile(k, r, NP, (RMAX(NP) >= 10 ? 10 : 1)); break;                      \
    case 11: if (RMAX(NP) >= 11) tile(k, r, NP, (RMAX(NP) >= 11 ? 11 : 1)); break;                      \
    case 12: if (RMAX(NP) >= 12) tile(k, r, NP, (RMAX(NP) >= 12 ? 12 : 1)); break;                      \
    case 13: if (RMAX(NP) >= 13) tile(k, r, NP, (RMAX(NP) >= 13 ? 13 : 1)); break;                      \
    case 14: if (RMAX(NP) >= 14) tile(k, r, NP, (RMAX(NP) >= 14 ? 14 : 1)); break;                      \
    case 15: if (RMAX(NP) >= 15) tile(k, r, NP, (RMAX(NP) >= 15 ? 15 : 1)); break;                      \
    default: if (RMAX(NP) >= 16) tile(k, r, NP, (RMAX(NP) >= 16 ? 16 : 1)); break;                      \
    }

static void rows_np4(const blk *k, int r0, int r1) {
    for (int r = r0; r < r1;) {
        int R = r1 - r < RMAX(4) ? r1 - r : RMAX(4);
        TILE_CASES(4)
        r += R;
    }
}
static void rows_np3(const blk *k, int r0, int r1) {
    for (int r = r0; r < r1;) {
        int R = r1 - r < RMAX(3) ? r1 - r : RMAX(3);
        TILE_CASES(3)
        r += R;
    }
}
static void rows_np2(const blk *k, int r0, int r1) {
    for (int r = r0; r < r1;) {
        int R = r1 - r < RMAX(2) ? r1 - r : RMAX(2);
        TILE_CASES(2)
        r += R;
    }
}
static void rows_np1(const blk *k, int r0, int r1) {
    for (int r = r0; r < r1;) {
        int R = r1 - r < RMAX(1) ? r1 - r : RMAX(1);
        TILE_CASES(1)
        r += R;
    }
}

/* Panels per group for `rem` panels left: 4, or 3 when that divides better. */
static int group_panels(int rem) {
    if (rem >= 4 && rem % 4 == 0) return 4;
    if (rem % 3 == 0) return 3;
    if (rem >= 4) return 4;
    return rem;
}

/* Row block so that an X slab (rows x KB floats) stays cache-friendly. */
#define ROW_BLOCK 192

void ct_cv_gemm_range_avx512(const ct_cv_gemm_args *a, int b0, int b1, int r0, int r1) {
    if (r0 >= r1 || b0 >= b1) return;
    const int K = a->ntaps * a->W->cin;
    for (int b = b0; b < b1;) {
        const int np = group_panels(b1 - b);
        int kb = KB_BYTES / (np * OB * (int)sizeof(float));
        if (K == 0) {
            /* bias / accumulate only */
            blk k = {a, b, 0, 0, 1, 1};
            if (np == 4) rows_np4(&k, r0, r1);
            else if (np == 3) rows_np3(&k, r0, r1);
            else if (np == 2) rows_np2(&k, r0, r1);
            else rows_np1(&k, r0, r1);
        }
        for (int rb = r0; rb < r1; rb += ROW_BLOCK) {
            const int re = rb + ROW_BLOCK < r1 ? rb + ROW_BLOCK : r1;
            for (int k0 = 0; k0 < K; k0 += kb) {
                const int k1 = k0 + kb < K ? k0 + kb : K;
                blk k = {a, b, k0, k1, k0 == 0, k1 == K};
                if (np == 4) rows_np4(&k, rb, re);
                else if (np == 3) rows_np3(&k, rb, re);
                else if (np == 2) rows_np2(&k, rb, re);
                else rows_np1(&k, rb, re);
            }
        }
        b += np;
    }
}

/* ---------------------------------------------------------------------------------------
 * SnakeBeta: y = x + ib * sin(ea * x)^2. sin^2 is even and pi-periodic, so only the
 * reduction r = z - k*pi (k = nearest integer to z/pi, three-part Cody-Waite pi) and an odd
 * Taylor polynomial of degree 13 on [-pi/2, pi/2] (truncation < 7e-10) are needed; lanes
 * with |z| > 8192 (or non-finite) take libm sinf. */

AI __m512 sin2_ps(__m512 z) {
    const __m512 inv_pi = _mm512_set1_ps(0.318309886183790671538f);
    const __m512 p1 = _mm512_set1_ps(3.140625f), p2 = _mm512_set1_ps(9.67502593994140625e-4f),
                 p3 = _mm512_set1_ps(1.509957990978376432e-7f);
    __m512 kq = _mm512_roundscale_ps(_mm512_mul_ps(z, inv_pi), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(kq, p1, z);
    r = _mm512_fnmadd_ps(kq, p2, r);
    r = _mm512_fnmadd_ps(kq, p3, r);
    __m512 r2 = _mm512_mul_ps(r, r);
    __m512 p = _mm512_set1_ps(1.6059043836821614599e-10f);           /* 1/13! */
    p = _mm512_fmadd_ps(p, r2, _mm512_set1_ps(-2.5052108385441718775e-8f)); /* -1/11! */
    p = _mm512_fmadd_ps(p, r2, _mm512_set1_ps(2.7557319223985890653e-6f));  /* 1/9! */
    p = _mm512_fmadd_ps(p, r2, _mm512_set1_ps(-1.9841269841269841270e-4f)); /* -1/7! */
    p = _mm512_fmadd_ps(p, r2, _mm512_set1_ps(8.3333333333333333333e-3f));  /* 1/5! */
    p = _mm512_fmadd_ps(p, r2, _mm512_set1_ps(-1.6666666666666666667e-1f)); /* -1/3! */
    __m512 s = _mm512_fmadd_ps(_mm512_mul_ps(p, r2), r, r);
    return _mm512_mul_ps(s, s);
}

void ct_cv_snake_rows_avx512(float *y, const float *x, int r0, int r1, int c, const float *ealpha,
                             const float *inv_beta) {
    const __m512 big = _mm512_set1_ps(8192.0f);
    for (int t = r0; t < r1; t++) {
        const float *xr = x + (size_t)t * (size_t)c;
        float *yr = y + (size_t)t * (size_t)c;
        for (int i = 0; i < c; i += 16) {
            __mmask16 m = c - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (c - i)) - 1u);
            __m512 v = _mm512_maskz_loadu_ps(m, xr + i);
            __m512 z = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, ealpha + i), v);
            __m512 s2 = sin2_ps(z);
            /* |z| <= 8192 is false for NaN too */
            __mmask16 ok = _mm512_cmp_ps_mask(_mm512_abs_ps(z), big, _CMP_LE_OQ);
            if ((ok & m) != m) {
                float zs[16], ss[16];
                _mm512_storeu_ps(zs, z);
                _mm512_storeu_ps(ss, s2);
                for (int l = 0; l < 16; l++)
                    if (!((ok >> l) & 1)) {
                        float sv = sinf(zs[l]);
                        ss[l] = sv * sv;
                    }
                s2 = _mm512_loadu_ps(ss);
            }
            __m512 out = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, inv_beta + i), s2, v);
            _mm512_mask_storeu_ps(yr + i, m, out);
        }
    }
}
