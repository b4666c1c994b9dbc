/* Scalar reference codec-decoder kernels (kernels/conv.h): the multi-tap accumulate GEMM and
 * SnakeBeta that the SIMD variants are tested against, and the scalar-only depthwise conv,
 * LayerNorm and GELU (erf). */
#include <math.h>
#include <stdint.h>

#include "kernels/conv.h"

#define OB CT_CV_OB
#define RB CT_CV_RB

void ct_cv_gemm_range_scalar(const ct_cv_gemm_args *ga, int b0, int b1, int r0, int r1) {
    const ct_cv_packed *W = ga->W;
    float *Y = ga->Y;
    const float *X = ga->X, *bias = ga->bias;
    const size_t ldy = ga->ldy;
    const int ntaps = ga->ntaps, accumulate = ga->accumulate;
    const int *tap = ga->tap, *off = ga->off;
    const int cin = W->cin, cout = W->cout;
    const ptrdiff_t lx = (ptrdiff_t)ga->ldx;
    for (int b = b0; b < b1; b++) {
        const int o0 = b * OB;
        const int ow = cout - o0 < OB ? cout - o0 : OB;
        const float *wb = W->w + (size_t)b * (size_t)W->k * (size_t)cin * OB;
        float bv[OB];
        for (int o = 0; o < OB; o++) bv[o] = (bias && o < ow) ? bias[o0 + o] : 0.0f;
        int r = r0;
        for (; r + RB <= r1; r += RB) {
            float acc[RB][OB];
            for (int rr = 0; rr < RB; rr++) {
                float *yr = Y + (size_t)(r + rr) * ldy + o0;
                if (accumulate && ow == OB) {
                    for (int o = 0; o < OB; o++) acc[rr][o] = yr[o] + bv[o];
                } else if (accumulate) {
                    for (int o = 0; o < OB; o++) acc[rr][o] = (o < ow ? yr[o] : 0.0f) + bv[o];
                } else {
                    for (int o = 0; o < OB; o++) acc[rr][o] = bv[o];
                }
            }
            for (int q = 0; q < ntaps; q++) {
                const float *wq = wb + (size_t)tap[q] * (size_t)cin * OB;
                const float *x0 = X + (ptrdiff_t)(r + off[q]) * lx;
                for (int i = 0; i < cin; i++) {
                    const float *w = wq + (size_t)i * OB;
                    const float x_0 = x0[i], x_1 = x0[lx + i], x_2 = x0[2 * lx + i],
                                x_3 = x0[3 * lx + i];
                    for (int o = 0; o < OB; o++) {
                        acc[0][o] += x_0 * w[o];
                        acc[1][o] += x_1 * w[o];
                        acc[2][o] += x_2 * w[o];
                        acc[3][o] += x_3 * w[o];
                    }
                }
            }
            for (int rr = 0; rr < RB; rr++) {
                float *yr = Y + (size_t)(r + rr) * ldy + o0;
                for (int o = 0; o < ow; o++) yr[o] = acc[rr][o];
            }
        }
        for (; r < r1; r++) {
            float acc[OB];
            float *yr = Y + (size_t)r * ldy + o0;
            for (int o = 0; o < OB; o++)
                acc[o] = (accumulate && o < ow ? yr[o] : 0.0f) + bv[o];
            for (int q = 0; q < ntaps; q++) {
                const float *wq = wb + (size_t)tap[q] * (size_t)cin * OB;
                const float *x0 = X + (ptrdiff_t)(r + off[q]) * lx;
                for (int i = 0; i < cin; i++) {
                    const float *w = wq + (size_t)i * OB;
                    const float xv = x0[i];
                    for (int o = 0; o < OB; o++) acc[o] += xv * w[o];
                }
            }
            for (int o = 0; o < ow; o++) yr[o] = acc[o];
        }
    }
}

void ct_cv_snake_rows_scalar(float *y, const float *x, int r0, int r1, int c, const float *ealpha,
                             const float *inv_beta) {
    for (int t = r0; t < r1; t++) {
        const float *xr = x + (size_t)t * (size_t)c;
        float *yr = y + (size_t)t * (size_t)c;
        for (int i = 0; i < c; i++) {
            float v = xr[i];
            float s = sinf(ealpha[i] * v);
            yr[i] = v + inv_beta[i] * (s * s);
        }
    }
}

void ct_cv_dwconv_causal(float *y, const float *x, int n, int c, int k, const float *w,
                         const float *bias) {
    for (int t = 0; t < n; t++) {
        float *yr = y + (size_t)t * (size_t)c;
        int c0 = 0;
        for (; c0 + OB <= c; c0 += OB) {
            float acc[OB];
            for (int o = 0; o < OB; o++) acc[o] = bias ? bias[c0 + o] : 0.0f;
            for (int j = 0; j < k; j++) {
                const float *xr = x + (ptrdiff_t)(t - (k - 1 - j)) * (ptrdiff_t)c + c0;
                const float *wr = w + (size_t)j * (size_t)c + c0;
                for (int o = 0; o < OB; o++) acc[o] += wr[o] * xr[o];
            }
            for (int o = 0; o < OB; o++) yr[c0 + o] = acc[o];
        }
        for (; c0 < c; c0++) {
            float acc = bias ? bias[c0] : 0.0f;
            for (int j = 0; j < k; j++)
                acc += w[(size_t)j * (size_t)c + c0] * x[(ptrdiff_t)(t - (k - 1 - j)) * (ptrdiff_t)c + c0];
            yr[c0] = acc;
        }
    }
}

void ct_cv_layernorm(float *y, const float *x, int n, int c, const float *w, const float *b,
                     float eps) {
    for (int t = 0; t < n; t++) {
        const float *xr = x + (size_t)t * (size_t)c;
        float *yr = y + (size_t)t * (size_t)c;
        double sum = 0.0;
        for (int i = 0; i < c; i++) sum += xr[i];
        double mean = sum / c;
        double var = 0.0;
        for (int i = 0; i < c; i++) {
            double d = xr[i] - mean;
            var += d * d;
        }
        var /= c;
        float inv = (float)(1.0 / sqrt(var + (double)eps));
        float m = (float)mean;
        for (int i = 0; i < c; i++) yr[i] = (xr[i] - m) * inv * w[i] + b[i];
    }
}

void ct_cv_gelu_erf(float *x, size_t count) {
    for (size_t i = 0; i < count; i++) {
        float v = x[i];
        x[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752440f));
    }
}

void ct_cv_elu_scalar(float *y, const float *x, size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; i++) y[i] = x[i] > 0.0f ? x[i] : expm1f(x[i]);
}
