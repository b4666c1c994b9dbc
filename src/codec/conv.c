/* Codec-decoder primitives: panel packing, the scalar reference multi-tap accumulate GEMM
 * behind every conv / linear / transposed conv, variant dispatch and pool partitioning,
 * depthwise conv, SnakeBeta, LayerNorm, GELU (erf). */
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

/* ---------------------------------------------------------------------------------------
 * Dispatch and threading */

int ct_cv_exec_init_isa(ct_cv_exec *ex, ct_pool *pool, ct_isa isa) {
    ex->pool = pool;
    ex->gemm = ct_cv_gemm_range_scalar;
    ex->snake = ct_cv_snake_rows_scalar;
    ex->isa = CT_ISA_SCALAR;
    switch (isa) {
    case CT_ISA_SCALAR: return 0;
#if defined(__x86_64__)
    case CT_ISA_AVX2:
        ex->gemm = ct_cv_gemm_range_avx2;
        ex->snake = ct_cv_snake_rows_avx2;
        ex->isa = isa;
        return 0;
    case CT_ISA_AVX512:
    case CT_ISA_AVX512BF16:
        ex->gemm = ct_cv_gemm_range_avx512;
        ex->snake = ct_cv_snake_rows_avx512;
        ex->isa = isa;
        return 0;
#endif
    default: return -1;
    }
}

void ct_cv_exec_init(ct_cv_exec *ex, ct_pool *pool) {
    if (ct_cv_exec_init_isa(ex, pool, ct_kernels()->isa) != 0) ct_cv_exec_init_isa(ex, pool, CT_ISA_SCALAR);
}

#define MAX_PHASES 16
/* Multiply-adds below which a GEMM runs on the calling thread only. */
#define PAR_MIN_MACS (1 << 17)

typedef struct {
    const ct_cv_exec *ex;
    const ct_cv_gemm_args *ph; /* [nph] phases (same W, n) */
    int nph;
    int by_panels;
} gemm_job;

static void gemm_job_run(void *ctx, int ith, int nth) {
    const gemm_job *j = ctx;
    const int nb = j->ph[0].W->nb, n = j->ph[0].n;
    int lo, hi;
    if (j->by_panels) ct_pool_split(nb, ith, nth, 1, &lo, &hi);
    else ct_pool_split(n, ith, nth, 8, &lo, &hi);
    if (lo >= hi) return;
    for (int p = 0; p < j->nph; p++) {
        if (j->by_panels) j->ex->gemm(&j->ph[p], lo, hi, 0, n);
        else j->ex->gemm(&j->ph[p], 0, nb, lo, hi);
    }
}

static void gemm_run(const ct_cv_exec *ex, const ct_cv_gemm_args *ph, int nph) {
    const ct_cv_packed *W = ph[0].W;
    const int n = ph[0].n, nth = ct_pool_threads(ex->pool);
    if (n <= 0 || W->nb <= 0) return;
    double macs = 0;
    for (int p = 0; p < nph; p++) macs += (double)n * ph[p].ntaps * W->cin * W->cout;
    if (nth <= 1 || macs < PAR_MIN_MACS) {
        for (int p = 0; p < nph; p++) ex->gemm(&ph[p], 0, W->nb, 0, n);
        return;
    }
    /* Panels when there are enough of them (each thread then streams only its share of the
     * weights); rows otherwise. Either way every element is computed as on one thread. */
    gemm_job j = {ex, ph, nph, W->nb >= 4 * nth || n < 8 * nth};
    ct_pool_run(ex->pool, gemm_job_run, &j);
}

static ct_cv_exec default_exec(void) {
    ct_cv_exec ex;
    ct_cv_exec_init(&ex, NULL);
    return ex;
}

void ct_cv_gemm_taps_ex(const ct_cv_exec *ex, float *Y, size_t ldy, const float *X, size_t ldx, int n,
                        const ct_cv_packed *W, int ntaps, const int *tap, const int *off,
                        const float *bias, int accumulate) {
    ct_cv_gemm_args a = {Y, ldy, X, ldx, n, W, ntaps, tap, off, bias, accumulate};
    gemm_run(ex, &a, 1);
}

void ct_cv_gemm_taps(float *Y, size_t ldy, const float *X, size_t ldx, int n,
                     const ct_cv_packed *W, int ntaps, const int *tap, const int *off,
                     const float *bias, int accumulate) {
    ct_cv_exec ex = default_exec();
    ct_cv_gemm_taps_ex(&ex, Y, ldy, X, ldx, n, W, ntaps, tap, off, bias, accumulate);
}

void ct_cv_conv_causal_ex(const ct_cv_exec *ex, float *y, const float *x, int n, const ct_cv_packed *W,
                          int dil, const float *bias) {
    int tap[MAX_TAPS], off[MAX_TAPS];
    int k = W->k < MAX_TAPS ? W->k : MAX_TAPS;
    for (int j = 0; j < k; j++) {
        tap[j] = j;
        off[j] = -(W->k - 1 - j) * dil;
    }
    ct_cv_gemm_taps_ex(ex, y, (size_t)W->cout, x, (size_t)W->cin, n, W, k, tap, off, bias, 0);
}

void ct_cv_conv_causal(float *y, const float *x, int n, const ct_cv_packed *W, int dil,
                       const float *bias) {
    ct_cv_exec ex = default_exec();
    ct_cv_conv_causal_ex(&ex, y, x, n, W, dil, bias);
}

void ct_cv_linear_ex(const ct_cv_exec *ex, float *y, const float *x, int n, const ct_cv_packed *W,
                     const float *bias, int accumulate) {
    static const int tap0[1] = {0}, off0[1] = {0};
    ct_cv_gemm_taps_ex(ex, y, (size_t)W->cout, x, (size_t)W->cin, n, W, 1, tap0, off0, bias, accumulate);
}

void ct_cv_linear(float *y, const float *x, int n, const ct_cv_packed *W, const float *bias,
                  int accumulate) {
    ct_cv_exec ex = default_exec();
    ct_cv_linear_ex(&ex, y, x, n, W, bias, accumulate);
}

int ct_cv_tconv_history(int k, int s) { return (k + s - 1) / s - 1; }

void ct_cv_tconv_causal_ex(const ct_cv_exec *ex, float *y, const float *x, int n, const ct_cv_packed *W,
                           int s, const float *bias) {
    int tap[MAX_PHASES][MAX_TAPS], off[MAX_PHASES][MAX_TAPS];
    ct_cv_gemm_args ph[MAX_PHASES];
    int nph = 0;
    for (int j0 = 0; j0 < s; j0 += MAX_PHASES) {
        nph = 0;
        for (int j = j0; j < s && nph < MAX_PHASES; j++, nph++) {
            int nt = 0;
            for (int m = 0; j + m * s < W->k && nt < MAX_TAPS; m++) {
                tap[nph][nt] = j + m * s;
                off[nph][nt] = -m;
                nt++;
            }
            ph[nph] = (ct_cv_gemm_args){y + (size_t)j * (size_t)W->cout, (size_t)s * (size_t)W->cout, x,
                                        (size_t)W->cin, n, W, nt, tap[nph], off[nph], bias, 0};
        }
        gemm_run(ex, ph, nph);
    }
}

void ct_cv_tconv_causal(float *y, const float *x, int n, const ct_cv_packed *W, int s,
                        const float *bias) {
    ct_cv_exec ex = default_exec();
    ct_cv_tconv_causal_ex(&ex, y, x, n, W, s, bias);
}

typedef struct {
    const ct_cv_exec *ex;
    float *y;
    const float *x;
    int n, c;
    const float *ea, *ib;
} snake_job;

static void snake_job_run(void *ctx, int ith, int nth) {
    const snake_job *j = ctx;
    int lo, hi;
    ct_pool_split(j->n, ith, nth, 1, &lo, &hi);
    if (lo < hi) j->ex->snake(j->y, j->x, lo, hi, j->c, j->ea, j->ib);
}

void ct_cv_snake_ex(const ct_cv_exec *ex, float *y, const float *x, int n, int c, const float *ealpha,
                    const float *inv_beta) {
    snake_job j = {ex, y, x, n, c, ealpha, inv_beta};
    if (ct_pool_threads(ex->pool) <= 1 || (size_t)n * (size_t)c < 16384) ex->snake(y, x, 0, n, c, ealpha, inv_beta);
    else ct_pool_run(ex->pool, snake_job_run, &j);
}

void ct_cv_snake(float *y, const float *x, int n, int c, const float *ealpha,
                 const float *inv_beta) {
    ct_cv_exec ex = default_exec();
    ct_cv_snake_ex(&ex, y, x, n, c, ealpha, inv_beta);
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
