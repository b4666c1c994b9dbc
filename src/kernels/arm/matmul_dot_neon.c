/* NEON matmul for the integer-dot mode (ct_mat.xq, INT8/INT4 weights): SDOT at the
   neon-dotprod level, SMULL/SMLAL2 with SADALP at plain neon. Each call quantizes its tokens'
   activations per 32-column group to int8 (bit-identical to ct_xq_quantize) and multiplies
   them with the weights as signed bytes (INT8 as stored; INT4 nibbles q + 8, with the group
   dot corrected by -8 * (sum of the group's activation bytes)), so every 32-column group dot
   is exact: SDOT sums 4 products per int32 lane; SMULL/SMLAL2 sum 2 per int16 lane (at most
   2 * 128 * 127 = 32512; INT4's low- and high-nibble halves, at most 3810 each, are added in
   int16 too) and SADDLP/SADALP widen pairs into int32. A block is 4 rows x up to 4 tokens:
   per group and token the four rows' lanes are reduced by a pairwise-add tree to one vector
   [d_r0 .. d_r3] of exact group dots, which is converted, scaled (s_group, times the INT4
   group scale) and added to a per-token accumulator with the rows in its lanes. Each lane
   therefore does the scalar reference's arithmetic in its order (acc += d * s, or
   acc += sw * (d * s), over groups in order): the result is the reference's bit for bit and
   does not depend on the batch size or the row split. */
#include <arm_neon.h>
#include <stdint.h>
#include <string.h>

#include "kernels/cpu.h"
#include "kernels/matrow.h"
#include "kernels/tbuf.h"

/* GCC declares vdotq_s32 for armv8.2-a+dotprod and inlines it into functions of that target;
   clang (before target-guarded intrinsics) declares it only under -march, so with clang SDOT
   is inline assembly, which the integrated assembler takes in a target("dotprod") function. */
#if defined(__clang__)
#define SDOT_TARGET __attribute__((target("dotprod")))
#else
#define SDOT_TARGET __attribute__((target("arch=armv8.2-a+dotprod")))
#endif
#define SDOT_INLINE SDOT_TARGET static inline __attribute__((always_inline))
#define ALWAYS_INLINE static inline __attribute__((always_inline))

#define XQ_TOK 16 /* tokens quantized per pass (a prompt pass takes several) */

typedef struct {
    int8_t q[XQ_TOK][CT_XQ_MAXC];              /* quantized activations, natural order */
    float s[XQ_TOK][CT_XQ_MAXC / CT_Q4_GROUP]; /* group scales */
    int32_t c8[XQ_TOK][CT_XQ_MAXC / CT_Q4_GROUP]; /* 8 * sum of each group's bytes (INT4 offset) */
} xq_buf;

/* A thread's buffer (kernels/tbuf.h: on the heap at its first call; a thread that cannot
   allocate it borrows the spare, one at a time, and its quantized activations are not reused
   across calls then). */
static _Alignas(64) xq_buf xq_spare;
static ct_tbuf xq_tb = CT_TBUF_SPARE(sizeof(xq_buf), &xq_spare);
static _Thread_local void *xq_tl;

SDOT_INLINE int32x4_t sdot(int32x4_t acc, int8x16_t a, int8x16_t b) {
#if defined(__clang__) && !defined(__ARM_FEATURE_DOTPROD)
    __asm__("sdot %0.4s, %1.16b, %2.16b" : "+w"(acc) : "w"(a), "w"(b)); /* assembled for the target */
    return acc;
#else
    return vdotq_s32(acc, a, b);
#endif
}

/* ct_xq_quantize for token x[C] into slot t (FMAXNM ignores NaN as fmaxf does; FCVTNS rounds to
   nearest even as lrintf does in the default rounding mode). */
static void xq_quantize_tok(xq_buf *X, const float *x, int C, int t) {
    int8_t *q = X->q[t];
    for (int g = 0; g < C / CT_Q4_GROUP; g++) {
        const float *xg = x + g * CT_Q4_GROUP;
        float32x4_t v[8];
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++) v[i] = vld1q_f32(xg + 4 * i);
        float32x4_t m0 = vmaxnmq_f32(vabsq_f32(v[0]), vabsq_f32(v[1]));
        float32x4_t m1 = vmaxnmq_f32(vabsq_f32(v[2]), vabsq_f32(v[3]));
        float32x4_t m2 = vmaxnmq_f32(vabsq_f32(v[4]), vabsq_f32(v[5]));
        float32x4_t m3 = vmaxnmq_f32(vabsq_f32(v[6]), vabsq_f32(v[7]));
        const float amax = vmaxnmvq_f32(vmaxnmq_f32(vmaxnmq_f32(m0, m1), vmaxnmq_f32(m2, m3)));
        if (!(amax >= CT_XQ_MIN_AMAX)) {
            X->s[t][g] = 0.0f;
            X->c8[t][g] = 0;
            memset(q + g * CT_Q4_GROUP, 0, CT_Q4_GROUP);
            continue;
        }
        const float inv = 127.0f / amax;
        X->s[t][g] = amax / 127.0f;
        int32x4_t iv[8];
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++) iv[i] = vcvtnq_s32_f32(vmulq_n_f32(v[i], inv));
        int16x8_t h0 = vmovn_high_s32(vmovn_s32(iv[0]), iv[1]), h1 = vmovn_high_s32(vmovn_s32(iv[2]), iv[3]);
        int16x8_t h2 = vmovn_high_s32(vmovn_s32(iv[4]), iv[5]), h3 = vmovn_high_s32(vmovn_s32(iv[6]), iv[7]);
        int8x16_t b0 = vmovn_high_s16(vmovn_s16(h0), h1), b1 = vmovn_high_s16(vmovn_s16(h2), h3);
        vst1q_s8(q + g * CT_Q4_GROUP, b0);
        vst1q_s8(q + g * CT_Q4_GROUP + 16, b1);
        X->c8[t][g] = 8 * ((int32_t)vaddlvq_s8(b0) + (int32_t)vaddlvq_s8(b1));
    }
}

/* 4 rows from r (first nr real, the rest repeat the last) x NT tokens from slot t0: acc[t]
   lane i = the reference's accumulator of row r + i, token t0 + t. SD: SDOT, else SMULL. The
   two are separate functions (xq_blk4_sdot is compiled for the dot-product target, which a
   plain neon CPU must never run). */
#define XQ_BLK4_BODY(SD)                                                                        \
    const int G = w->cols / CT_Q4_GROUP;                                                        \
    const int8_t *p[4];                                                                         \
    const float *sc[4];                                                                         \
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {                                       \
        p[i] = (const int8_t *)ct_row_ptr(w, r + (i < nr ? i : nr - 1));                        \
        sc[i] = ct_row_sc(w, r + (i < nr ? i : nr - 1));                                        \
    }                                                                                           \
    _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) acc[t] = vdupq_n_f32(0.0f);            \
    const uint8x16_t nib = vdupq_n_u8(0x0f);                                                    \
    for (int g = 0; g < G; g++) {                                                               \
        int8x16_t wl[4], wh[4];                                                                 \
        float32x4_t sw = vdupq_n_f32(0.0f);                                                     \
        _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {                                   \
            if (Q4) { /* byte j: column j in the low nibble, 16 + j in the high one */          \
                const uint8x16_t v = vld1q_u8((const uint8_t *)p[i] + g * 16);                  \
                wl[i] = vreinterpretq_s8_u8(vandq_u8(v, nib));                                  \
                wh[i] = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));                                  \
            } else {                                                                            \
                wl[i] = vld1q_s8(p[i] + g * CT_Q4_GROUP);                                       \
                wh[i] = vld1q_s8(p[i] + g * CT_Q4_GROUP + 16);                                  \
            }                                                                                   \
        }                                                                                       \
        if (Q4) {                                                                               \
            sw = vsetq_lane_f32(sc[0][g], sw, 0);                                               \
            sw = vsetq_lane_f32(sc[1][g], sw, 1);                                               \
            sw = vsetq_lane_f32(sc[2][g], sw, 2);                                               \
            sw = vsetq_lane_f32(sc[3][g], sw, 3);                                               \
        }                                                                                       \
        _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {                                  \
            const int8_t *xq = X->q[t0 + t] + g * CT_Q4_GROUP;                                  \
            const int8x16_t x0 = vld1q_s8(xq), x1 = vld1q_s8(xq + 16);                          \
            int32x4_t a[4];                                                                     \
            _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) a[i] = SD(wl[i], wh[i], x0, x1); \
            int32x4_t d = vpaddq_s32(vpaddq_s32(a[0], a[1]), vpaddq_s32(a[2], a[3]));           \
            if (Q4) d = vsubq_s32(d, vdupq_n_s32(X->c8[t0 + t][g]));                            \
            float32x4_t f = vmulq_n_f32(vcvtq_f32_s32(d), X->s[t0 + t][g]);                     \
            if (Q4) f = vmulq_f32(sw, f);                                                       \
            acc[t] = vaddq_f32(acc[t], f);                                                      \
        }                                                                                       \
    }

/* One row's 32-column group against the token's activations x0, x1: lanes summing to the
   exact group dot. */
SDOT_INLINE int32x4_t grp_sdot(int8x16_t wl, int8x16_t wh, int8x16_t x0, int8x16_t x1) {
    return sdot(sdot(vdupq_n_s32(0), wl, x0), wh, x1);
}
#define GRP_SMULL(Q4)                                                                           \
    ALWAYS_INLINE int32x4_t grp_smull##Q4(int8x16_t wl, int8x16_t wh, int8x16_t x0, int8x16_t x1) { \
        const int16x8_t l = vmlal_high_s8(vmull_s8(vget_low_s8(wl), vget_low_s8(x0)), wl, x0);  \
        const int16x8_t h = vmlal_high_s8(vmull_s8(vget_low_s8(wh), vget_low_s8(x1)), wh, x1);  \
        return Q4 ? vpaddlq_s16(vaddq_s16(l, h)) : vpadalq_s16(vpaddlq_s16(l), h);              \
    }
GRP_SMULL(0)
GRP_SMULL(1)

SDOT_INLINE void xq_blk4_sdot(const xq_buf *X, const ct_mat *w, int r, int nr, int t0, const int NT, const int Q4,
                              float32x4_t *acc) {
    XQ_BLK4_BODY(grp_sdot)
}
ALWAYS_INLINE void xq_blk4_smull(const xq_buf *X, const ct_mat *w, int r, int nr, int t0, const int NT, const int Q4,
                                 float32x4_t *acc) {
    if (Q4) {
        XQ_BLK4_BODY(grp_smull1)
    } else {
        XQ_BLK4_BODY(grp_smull0)
    }
}

/* Rows [r0, r1) x tokens [t0, t0 + nt) in 4 x 4 blocks of BLK (xq_blk4_sdot or _smull). */
#define XQ_ROWS_BODY(BLK)                                                                       \
    const int R = w->rows, q4 = w->dtype == CT_DT_U8;                                           \
    for (int r = r0; r < r1; r += 4) {                                                          \
        const int nr = r1 - r < 4 ? r1 - r : 4;                                                 \
        float sc[4], b[4];                                                                      \
        for (int i = 0; i < nr; i++) {                                                          \
            sc[i] = ct_post_scale(w, r + i);                                                    \
            b[i] = bias ? bias[r + i] : 0.0f;                                                   \
        }                                                                                       \
        for (int t = 0; t < nt; t += 4) {                                                       \
            const int n4 = nt - t < 4 ? nt - t : 4;                                             \
            float32x4_t acc[4];                                                                 \
            switch (n4 + 4 * q4) {                                                              \
            case 1: BLK(X, w, r, nr, t, 1, 0, acc); break;                                         \
            case 2: BLK(X, w, r, nr, t, 2, 0, acc); break;                                         \
            case 3: BLK(X, w, r, nr, t, 3, 0, acc); break;                                         \
            case 4: BLK(X, w, r, nr, t, 4, 0, acc); break;                                         \
            case 5: BLK(X, w, r, nr, t, 1, 1, acc); break;                                         \
            case 6: BLK(X, w, r, nr, t, 2, 1, acc); break;                                         \
            case 7: BLK(X, w, r, nr, t, 3, 1, acc); break;                                         \
            default: BLK(X, w, r, nr, t, 4, 1, acc); break;                                        \
            }                                                                                   \
            for (int j = 0; j < n4; j++) {                                                      \
                float o[4];                                                                     \
                vst1q_f32(o, acc[j]);                                                           \
                float *yt = y + (size_t)(t0 + t + j) * R;                                       \
                for (int i = 0; i < nr; i++) yt[r + i] = sc[i] * o[i] + b[i];                   \
            }                                                                                   \
        }                                                                                       \
    }

SDOT_TARGET static void xq_rows_sdot(const xq_buf *X, const ct_mat *w, const float *bias, float *y, int t0, int nt,
                                     int r0, int r1) {
    XQ_ROWS_BODY(xq_blk4_sdot)
}
static void xq_rows_smull(const xq_buf *X, const ct_mat *w, const float *bias, float *y, int t0, int nt, int r0,
                          int r1) {
    XQ_ROWS_BODY(xq_blk4_smull)
}

/* Quantizes the tokens (once per call when they fit one pass, or per the caller's reuse scope)
   and runs the rows: sd selects SDOT. */
static void matmul_dot(const ct_mat *w, const float *bias, const float *x, float *y, int n, int r0,
                       int r1, int sd) {
    const int C = w->cols;
    int borrowed;
    xq_buf *X = ct_tbuf_take(&xq_tb, &xq_tl, &borrowed);
    ct_xq_reuse *k = &ct_xq_tls; /* one layout for both formats: the key ignores it */
    for (int t0 = 0; t0 < n; t0 += XQ_TOK) {
        const int nt = n - t0 < XQ_TOK ? n - t0 : XQ_TOK;
        if (n > XQ_TOK || !k->on || k->x != x || k->n != n || k->cols != C) {
            for (int t = 0; t < nt; t++) xq_quantize_tok(X, x + (size_t)(t0 + t) * C, C, t);
            if (k->on) *k = (ct_xq_reuse){1, n <= XQ_TOK ? x : NULL, n, C, 0};
        }
        if (sd) xq_rows_sdot(X, w, bias, y, t0, nt, r0, r1);
        else xq_rows_smull(X, w, bias, y, t0, nt, r0, r1);
    }
    if (borrowed) k->x = NULL; /* the spare's contents do not outlive the call */
    ct_tbuf_put(&xq_tb, borrowed);
}

void ct_matmul_rows_sdot(const ct_mat *w, const float *bias, const float *x, float *y, int n, int r0,
                         int r1) {
    matmul_dot(w, bias, x, y, n, r0, r1, 1);
}

void ct_matmul_rows_smull(const ct_mat *w, const float *bias, const float *x, float *y, int n, int r0,
                          int r1) {
    matmul_dot(w, bias, x, y, n, r0, r1, 0);
}

void ct_matmul_rows_neon_dotprod(const ct_mat *w, const float *bias, const float *x, float *y, int n,
                                 int r0, int r1) {
    if (ct_xq_active(w)) ct_matmul_rows_sdot(w, bias, x, y, n, r0, r1);
    else ct_matmul_rows_neon(w, bias, x, y, n, r0, r1);
}
