/* Codec-decoder primitives: panel packing, the multi-tap accumulate GEMM behind every
 * conv / linear / transposed conv, depthwise conv, SnakeBeta, LayerNorm, GELU (erf). */
#include "codec/conv.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define OB CT_CV_OB
#define RB CT_CV_RB
#define MAX_TAPS 64

int ct_cv_packed_alloc(ct_cv_packed *p, int k, int cin, int cout) {
    memset(p, 0, sizeof *p);
    p->k = k;
    p->cin = cin;
    p->cout = cout;
    p->nb = (cout + OB - 1) / OB;
    size_t n = (size_t)p->nb * (size_t)k * (size_t)cin * OB;
    p->w = calloc(n ? n : 1, sizeof(float));
    return p->w ? 0 : -1;
}

void ct_cv_packed_free(ct_cv_packed *p) {
    if (!p) return;
    free(p->w);
    p->w = NULL;
}

/* Address of W[j][i][o] inside the panels. */
static float *pslot(ct_cv_packed *p, int j, int i, int o) {
    size_t b = (size_t)(o / OB);
    return p->w + ((b * (size_t)p->k + (size_t)j) * (size_t)p->cin + (size_t)i) * OB + (size_t)(o % OB);
}

void ct_cv_pack_conv(ct_cv_packed *p, const float *src) {
    for (int o = 0; o < p->cout; o++)
        for (int i = 0; i < p->cin; i++)
            for (int j = 0; j < p->k; j++)
                *pslot(p, j, i, o) = src[((size_t)o * (size_t)p->cin + (size_t)i) * (size_t)p->k + (size_t)j];
}

void ct_cv_pack_tconv(ct_cv_packed *p, const float *src) {
    for (int i = 0; i < p->cin; i++)
        for (int o = 0; o < p->cout; o++)
            for (int j = 0; j < p->k; j++)
                *pslot(p, j, i, o) = src[((size_t)i * (size_t)p->cout + (size_t)o) * (size_t)p->k + (size_t)j];
}

void ct_cv_pack_linear(ct_cv_packed *p, const float *src) {
    for (int o = 0; o < p->cout; o++)
        for (int i = 0; i < p->cin; i++) *pslot(p, 0, i, o) = src[(size_t)o * (size_t)p->cin + (size_t)i];
}

void ct_cv_gemm_taps(float *Y, size_t ldy, const float *X, size_t ldx, int n,
                     const ct_cv_packed *W, int ntaps, const int *tap, const int *off,
                     const float *bias, int accumulate) {
    const int cin = W->cin, cout = W->cout;
    const ptrdiff_t lx = (ptrdiff_t)ldx;
    for (int b = 0; b < W->nb; b++) {
        const int o0 = b * OB;
        const int ow = cout - o0 < OB ? cout - o0 : OB;
        const float *wb = W->w + (size_t)b * (size_t)W->k * (size_t)cin * OB;
        float bv[OB];
        for (int o = 0; o < OB; o++) bv[o] = (bias && o < ow) ? bias[o0 + o] : 0.0f;
        int r = 0;
        for (; r + RB <= n; r += RB) {
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
            /* Four named row accumulators of OB lanes: gcc keeps each in one vector
             * register (an indexed 2-D array would live in memory). */
            float a0[OB], a1[OB], a2[OB], a3[OB];
            for (int o = 0; o < OB; o++) {
                a0[o] = acc[0][o];
                a1[o] = acc[1][o];
                a2[o] = acc[2][o];
                a3[o] = acc[3][o];
            }
            for (int q = 0; q < ntaps; q++) {
                const float *wq = wb + (size_t)tap[q] * (size_t)cin * OB;
                const float *x0 = X + (ptrdiff_t)(r + off[q]) * lx;
                for (int i = 0; i < cin; i++) {
                    const float *w = wq + (size_t)i * OB;
                    const float x_0 = x0[i], x_1 = x0[lx + i], x_2 = x0[2 * lx + i],
                                x_3 = x0[3 * lx + i];
                    for (int o = 0; o < OB; o++) {
                        a0[o] += x_0 * w[o];
                        a1[o] += x_1 * w[o];
                        a2[o] += x_2 * w[o];
                        a3[o] += x_3 * w[o];
                    }
                }
            }
            for (int o = 0; o < OB; o++) {
                acc[0][o] = a0[o];
                acc[1][o] = a1[o];
                acc[2][o] = a2[o];
                acc[3][o] = a3[o];
            }
            for (int rr = 0; rr < RB; rr++) {
                float *yr = Y + (size_t)(r + rr) * ldy + o0;
                if (ow == OB) {
                    for (int o = 0; o < OB; o++) yr[o] = acc[rr][o];
                } else {
                    for (int o = 0; o < ow; o++) yr[o] = acc[rr][o];
                }
            }
        }
        for (; r < n; r++) {
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

void ct_cv_conv_causal(float *y, const float *x, int n, const ct_cv_packed *W, int dil,
                       const float *bias) {
    int tap[MAX_TAPS], off[MAX_TAPS];
    int k = W->k < MAX_TAPS ? W->k : MAX_TAPS;
    for (int j = 0; j < k; j++) {
        tap[j] = j;
        off[j] = -(W->k - 1 - j) * dil;
    }
    ct_cv_gemm_taps(y, (size_t)W->cout, x, (size_t)W->cin, n, W, k, tap, off, bias, 0);
}

void ct_cv_linear(float *y, const float *x, int n, const ct_cv_packed *W, const float *bias,
                  int accumulate) {
    static const int tap0[1] = {0}, off0[1] = {0};
    ct_cv_gemm_taps(y, (size_t)W->cout, x, (size_t)W->cin, n, W, 1, tap0, off0, bias, accumulate);
}

int ct_cv_tconv_history(int k, int s) { return (k + s - 1) / s - 1; }

void ct_cv_tconv_causal(float *y, const float *x, int n, const ct_cv_packed *W, int s,
                        const float *bias) {
    int tap[MAX_TAPS], off[MAX_TAPS];
    for (int j = 0; j < s; j++) {
        int nt = 0;
        for (int m = 0; j + m * s < W->k && nt < MAX_TAPS; m++) {
            tap[nt] = j + m * s;
            off[nt] = -m;
            nt++;
        }
        ct_cv_gemm_taps(y + (size_t)j * (size_t)W->cout, (size_t)s * (size_t)W->cout, x,
                        (size_t)W->cin, n, W, nt, tap, off, bias, 0);
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

void ct_cv_snake(float *y, const float *x, int n, int c, const float *ealpha,
                 const float *inv_beta) {
    for (int t = 0; t < n; t++) {
        const float *xr = x + (size_t)t * (size_t)c;
        float *yr = y + (size_t)t * (size_t)c;
        for (int i = 0; i < c; i++) {
            float v = xr[i];
            float s = sinf(ealpha[i] * v);
            yr[i] = v + inv_beta[i] * (s * s);
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
