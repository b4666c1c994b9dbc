/* Scalar reference implementations of the kernels in kernels/ops.h. */
#include <math.h>
#include <string.h>

#include "kernels/cpu.h"
#include "kernels/matrow.h"
#include "kernels/ops.h"

float ct_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t ct_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float ct_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t u;
    if (exp == 0) {
        if (man == 0) {
            u = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 0x400u));
            u = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        u = sign | 0x7f800000u | (man << 13);
    } else {
        u = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

void ct_convert_to_f32(const void *src, ct_dtype dt, float *dst, size_t n) {
    if (dt == CT_DT_F32) {
        memcpy(dst, src, n * sizeof(float));
    } else if (dt == CT_DT_BF16) {
        const uint16_t *s = src;
        for (size_t i = 0; i < n; i++) dst[i] = ct_bf16_to_f32(s[i]);
    } else if (dt == CT_DT_F16) {
        const uint16_t *s = src;
        for (size_t i = 0; i < n; i++) dst[i] = ct_f16_to_f32(s[i]);
    } else {
        memset(dst, 0, n * sizeof(float));
    }
}

/* Bytes per element of the plain float formats (kept local so the kernels need no I/O code). */
static size_t elem_size(ct_dtype dt) { return dt == CT_DT_F32 ? 4 : 2; }

size_t ct_mat_bytes(const ct_mat *w) {
    size_t n = (size_t)w->rows * (size_t)w->cols;
    if (w->dtype == CT_DT_I8) return n + (size_t)w->rows * sizeof(float);
    if (w->dtype == CT_DT_U8) return n / 2 + n / CT_Q4_GROUP * sizeof(float);
    return n * elem_size(w->dtype);
}

/* Column c of INT4 row data p (layout in ops.h) as q in [-8, 7]. */
static inline int q4_at(const uint8_t *p, int c) {
    int g = c / CT_Q4_GROUP, j = c % CT_Q4_GROUP;
    uint8_t b = p[g * 16 + (j & 15)];
    return (j < 16 ? (b & 15) : (b >> 4)) - 8;
}

void ct_mat_row(const ct_mat *w, int r, float *dst) {
    const int C = w->cols;
    if (w->dtype == CT_DT_I8) {
        const int8_t *q = (const int8_t *)w->data + (size_t)r * C;
        for (int i = 0; i < C; i++) dst[i] = w->scales[r] * (float)q[i];
        return;
    }
    if (w->dtype == CT_DT_U8) {
        const uint8_t *q = (const uint8_t *)w->data + (size_t)r * (C / 2);
        const float *sc = w->scales + (size_t)r * (C / CT_Q4_GROUP);
        for (int i = 0; i < C; i++) dst[i] = sc[i / CT_Q4_GROUP] * (float)q4_at(q, i);
        return;
    }
    size_t es = elem_size(w->dtype);
    ct_convert_to_f32((const char *)w->data + (size_t)r * (size_t)w->cols * es, w->dtype, dst,
                      (size_t)w->cols);
}

/* Dot of one weight row with x, 8 independent partial sums, combined in a fixed order. */
static float dot_bf16(const uint16_t *w, const float *x, int n) {
    float acc[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += ct_bf16_to_f32(w[i + j]) * x[i + j];
    for (; i < n; i++) acc[i & 7] += ct_bf16_to_f32(w[i]) * x[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

static float dot_f32(const float *w, const float *x, int n) {
    float acc[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += w[i + j] * x[i + j];
    for (; i < n; i++) acc[i & 7] += w[i] * x[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

static float dot_f16(const uint16_t *w, const float *x, int n) {
    float acc[8] = {0};
    for (int i = 0; i < n; i++) acc[i & 7] += ct_f16_to_f32(w[i]) * x[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

static float dot_i8(const int8_t *w, const float *x, int n) {
    float acc[8] = {0};
    for (int i = 0; i < n; i++) acc[i & 7] += (float)w[i] * x[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* INT4 row: per group a plain sum of q*x, scaled and summed over groups in order. */
static float dot_q4(const uint8_t *w, const float *sc, const float *x, int n) {
    float acc = 0.0f;
    for (int g = 0; g < n / CT_Q4_GROUP; g++) {
        float s = 0.0f;
        for (int j = 0; j < CT_Q4_GROUP; j++)
            s += (float)q4_at(w, g * CT_Q4_GROUP + j) * x[g * CT_Q4_GROUP + j];
        acc += sc[g] * s;
    }
    return acc;
}

void ct_xq_quantize(const float *x, int cols, int8_t *q, float *s) {
    for (int g = 0; g < cols / CT_Q4_GROUP; g++) {
        const float *xg = x + g * CT_Q4_GROUP;
        float amax = 0.0f;
        for (int j = 0; j < CT_Q4_GROUP; j++) amax = fmaxf(amax, fabsf(xg[j]));
        if (!(amax >= CT_XQ_MIN_AMAX)) {
            s[g] = 0.0f;
            memset(q + g * CT_Q4_GROUP, 0, CT_Q4_GROUP);
            continue;
        }
        const float inv = 127.0f / amax;
        s[g] = amax / 127.0f;
        for (int j = 0; j < CT_Q4_GROUP; j++) q[g * CT_Q4_GROUP + j] = (int8_t)lrintf(xg[j] * inv);
    }
}

/* Integer-dot mode (ops.h): exact group dots, scaled and summed over groups in order. */
static void matmul_xq_scalar(const ct_mat *w, const float *bias, const float *x, float *y, int n,
                             int r0, int r1) {
    int8_t qx[CT_XQ_MAXC]; /* one token's quantized activations: 9 KiB of stack */
    float sx[CT_XQ_MAXC / CT_Q4_GROUP];
    const int R = w->rows, C = w->cols, G = C / CT_Q4_GROUP;
    for (int t = 0; t < n; t++) {
        ct_xq_quantize(x + (size_t)t * C, C, qx, sx);
        for (int r = r0; r < r1; r++) {
            float acc = 0.0f;
            for (int g = 0; g < G; g++) {
                int32_t d = 0;
                if (w->dtype == CT_DT_I8) {
                    const int8_t *q = (const int8_t *)w->data + (size_t)r * C + g * CT_Q4_GROUP;
                    for (int j = 0; j < CT_Q4_GROUP; j++) d += (int32_t)q[j] * qx[g * CT_Q4_GROUP + j];
                    acc += (float)d * sx[g];
                } else {
                    const uint8_t *q = (const uint8_t *)w->data + (size_t)r * (C / 2);
                    for (int j = 0; j < CT_Q4_GROUP; j++)
                        d += q4_at(q, g * CT_Q4_GROUP + j) * qx[g * CT_Q4_GROUP + j];
                    acc += w->scales[(size_t)r * G + g] * ((float)d * sx[g]);
                }
            }
            y[(size_t)t * R + r] = ct_post_scale(w, r) * acc + (bias ? bias[r] : 0.0f);
        }
    }
}

void ct_matmul_rows_scalar(const ct_mat *w, const float *bias, const float *x, float *y, int n,
                           int r0, int r1) {
    const int R = w->rows, C = w->cols;
    if (ct_xq_active(w)) {
        matmul_xq_scalar(w, bias, x, y, n, r0, r1);
        return;
    }
    for (int r = r0; r < r1; r++) {
        float b = bias ? bias[r] : 0.0f;
        if (w->dtype == CT_DT_I8) {
            const int8_t *row = (const int8_t *)w->data + (size_t)r * (size_t)C;
            for (int t = 0; t < n; t++)
                y[(size_t)t * R + r] = w->scales[r] * dot_i8(row, x + (size_t)t * C, C) + b;
        } else if (w->dtype == CT_DT_U8) {
            const uint8_t *row = (const uint8_t *)w->data + (size_t)r * (size_t)(C / 2);
            const float *sc = w->scales + (size_t)r * (size_t)(C / CT_Q4_GROUP);
            for (int t = 0; t < n; t++) y[(size_t)t * R + r] = dot_q4(row, sc, x + (size_t)t * C, C) + b;
        } else if (w->dtype == CT_DT_BF16) {
            const uint16_t *row = (const uint16_t *)w->data + (size_t)r * (size_t)C;
            for (int t = 0; t < n; t++) y[(size_t)t * R + r] = dot_bf16(row, x + (size_t)t * C, C) + b;
        } else if (w->dtype == CT_DT_F32) {
            const float *row = (const float *)w->data + (size_t)r * (size_t)C;
            for (int t = 0; t < n; t++) y[(size_t)t * R + r] = dot_f32(row, x + (size_t)t * C, C) + b;
        } else {
            const uint16_t *row = (const uint16_t *)w->data + (size_t)r * (size_t)C;
            for (int t = 0; t < n; t++) y[(size_t)t * R + r] = dot_f16(row, x + (size_t)t * C, C) + b;
        }
    }
}

void ct_matmul(const ct_mat *w, const float *bias, const float *x, float *y, int n) {
    ct_kernels()->matmul_rows(w, bias, x, y, n, 0, w->rows);
}

void ct_rmsnorm(float *out, const float *x, const float *w, int n, float eps) {
    ct_kernels()->rmsnorm(out, x, w, n, eps);
}

void ct_rmsnorm_scalar(float *out, const float *x, const float *w, int n, float eps) {
    float ss = 0.0f;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    float inv = 1.0f / sqrtf(ss / (float)n + eps);
    for (int i = 0; i < n; i++) out[i] = w[i] * (x[i] * inv);
}

void ct_rope_angles(int pos, int dim, double theta, float *cosv, float *sinv) {
    int half = dim / 2;
    for (int i = 0; i < half; i++) {
        float expo = (float)(2 * i) / (float)dim;
        float inv = 1.0f / powf((float)theta, expo);
        float ang = (float)pos * inv;
        cosv[i] = cosf(ang);
        sinv[i] = sinf(ang);
    }
}

void ct_rope_apply(float *v, const float *cosv, const float *sinv, int dim) {
    int half = dim / 2;
    for (int i = 0; i < half; i++) {
        float a = v[i], b = v[i + half];
        v[i] = a * cosv[i] - b * sinv[i];
        v[i + half] = b * cosv[i] + a * sinv[i];
    }
}

void ct_swiglu(float *y, const float *a, const float *b, int n) { ct_kernels()->swiglu(y, a, b, n); }

void ct_swiglu_scalar(float *y, const float *a, const float *b, int n) {
    for (int i = 0; i < n; i++) {
        float s = a[i] / (1.0f + expf(-a[i]));
        y[i] = s * b[i];
    }
}

void ct_softmax(float *x, int n) {
    float m = -INFINITY;
    for (int i = 0; i < n; i++)
        if (x[i] > m) m = x[i];
    float s = 0.0f;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - m);
        s += x[i];
    }
    float inv = 1.0f / s;
    for (int i = 0; i < n; i++) x[i] *= inv;
}
