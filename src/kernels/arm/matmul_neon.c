/* NEON (AArch64 Advanced SIMD) matmul rows over BF16/F16/F32/INT8/INT4 weights with f32
   activations and f32 accumulation: each row is processed against up to 4 tokens at a time
   with two 4-lane accumulators per token, so a row's arithmetic never depends on how rows
   were split between threads. */
#include <arm_neon.h>
#include <stdint.h>

#include "kernels/cpu.h"
#include "kernels/matrow.h"

/* 8 weights of row p at column k (k + 8 <= cols) as two f32x4; INT8 unscaled, INT4 scaled by
   its group scale sc[k/32]. */
static inline void load8(const void *p, ct_dtype dt, int k, const float *sc, float32x4_t *a,
                         float32x4_t *b) {
    if (dt == CT_DT_BF16) {
        uint16x8_t h = vld1q_u16((const uint16_t *)p + k);
        *a = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16));
        *b = vreinterpretq_f32_u32(vshll_n_u16(vget_high_u16(h), 16));
    } else if (dt == CT_DT_F16) {
        float16x8_t h = vreinterpretq_f16_u16(vld1q_u16((const uint16_t *)p + k));
        *a = vcvt_f32_f16(vget_low_f16(h));
        *b = vcvt_high_f32_f16(h);
    } else if (dt == CT_DT_I8) {
        int16x8_t q = vmovl_s8(vld1_s8((const int8_t *)p + k));
        *a = vcvtq_f32_s32(vmovl_s16(vget_low_s16(q)));
        *b = vcvtq_f32_s32(vmovl_high_s16(q));
    } else if (dt == CT_DT_U8) {
        int j = k % CT_Q4_GROUP;
        uint8x8_t v = vld1_u8((const uint8_t *)p + (k / CT_Q4_GROUP) * 16 + (j & 15));
        v = j & 16 ? vshr_n_u8(v, 4) : vand_u8(v, vdup_n_u8(15));
        int16x8_t q = vsubq_s16(vreinterpretq_s16_u16(vmovl_u8(v)), vdupq_n_s16(8));
        float32x4_t s = vdupq_n_f32(sc[k / CT_Q4_GROUP]);
        *a = vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(q))), s);
        *b = vmulq_f32(vcvtq_f32_s32(vmovl_high_s16(q)), s);
    } else {
        *a = vld1q_f32((const float *)p + k);
        *b = vld1q_f32((const float *)p + k + 4);
    }
}

static inline float wat(const ct_mat *w, const void *p, int k) {
    switch (w->dtype) {
    case CT_DT_BF16: return ct_bf16_to_f32(((const uint16_t *)p)[k]);
    case CT_DT_F16: return ct_f16_to_f32(((const uint16_t *)p)[k]);
    case CT_DT_I8: return (float)((const int8_t *)p)[k];
    default: return ((const float *)p)[k]; /* INT4 rows are whole groups: no tail */
    }
}

/* Row r against nt (1..4) tokens of x: out[t]. */
static void row_tok4(const ct_mat *w, const float *x, int nt, float *out, int r) {
    const int C = w->cols;
    const void *p = ct_row_ptr(w, r);
    const float *sc = w->dtype == CT_DT_U8 ? w->scales + (size_t)r * (size_t)(C / CT_Q4_GROUP) : NULL;
    float32x4_t a[4], b[4];
    for (int t = 0; t < 4; t++) a[t] = b[t] = vdupq_n_f32(0.0f);
    int k = 0;
    for (; k + 8 <= C; k += 8) {
        float32x4_t w0, w1;
        load8(p, w->dtype, k, sc, &w0, &w1);
        for (int t = 0; t < nt; t++) {
            const float *xt = x + (size_t)t * C + k;
            a[t] = vfmaq_f32(a[t], w0, vld1q_f32(xt));
            b[t] = vfmaq_f32(b[t], w1, vld1q_f32(xt + 4));
        }
    }
    for (int t = 0; t < nt; t++) {
        float tail = 0.0f;
        for (int kk = k; kk < C; kk++) tail += wat(w, p, kk) * x[(size_t)t * C + kk];
        out[t] = vaddvq_f32(vaddq_f32(a[t], b[t])) + tail;
    }
}

void ct_matmul_rows_neon(const ct_mat *w, const float *bias, const float *x, float *y, int n,
                         int r0, int r1) {
    if (ct_xq_active(w)) { /* integer-dot mode without SDOT (plain neon): SMULL
                                 (arm/matmul_dot_neon.c); neon-dotprod routes it to SDOT */
        ct_matmul_rows_smull(w, bias, x, y, n, r0, r1);
        return;
    }
    const int R = w->rows, C = w->cols;
    float o[4];
    for (int r = r0; r < r1; r++) {
        const float s = w->dtype == CT_DT_I8 ? w->scales[r] : 1.0f, b = bias ? bias[r] : 0.0f;
        for (int t = 0; t < n; t += 4) {
            const int nt = n - t < 4 ? n - t : 4;
            row_tok4(w, x + (size_t)t * C, nt, o, r);
            for (int j = 0; j < nt; j++) y[(size_t)(t + j) * R + r] = s * o[j] + b;
        }
    }
}
