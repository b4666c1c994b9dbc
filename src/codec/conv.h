/* Codec-decoder primitives over time-major activations ([T][C], row t = one time step):
 * panel-packed weights, a multi-tap accumulate GEMM that serves causal (dilated) conv,
 * pointwise linear and causal transposed conv, depthwise causal conv, SnakeBeta,
 * LayerNorm and exact-erf GELU. Inner loops have fixed trip counts (CT_CV_OB columns,
 * CT_CV_RB rows) so gcc -O2 vectorises them without fast-math; every output element is
 * accumulated in the same order (taps ascending, input channels ascending) whichever
 * row tile or code path computes it, so chunked and one-shot runs agree bit for bit.
 *
 * History convention: a causal op reading x[t - h] for h > 0 takes x pointing at row 0 of
 * the new rows; rows -H..-1 before it must hold the previous inputs (zeros at stream
 * start). */
#ifndef CT_CODEC_CONV_H
#define CT_CODEC_CONV_H

#include <stddef.h>

#define CT_CV_OB 4 /* output channels per panel (one SSE vector) */
#define CT_CV_RB 4 /* rows per register tile */

/* A weight packed into panels of CT_CV_OB output channels.
 * w: [nb][k][cin][CT_CV_OB], nb = ceil(cout / CT_CV_OB), padding columns zero. */
typedef struct {
    float *w;
    int k, cin, cout, nb;
} ct_cv_packed;

/* Allocates p->w for (k, cin, cout), zero-filled. Returns 0 on success, -1 on NOMEM. */
int ct_cv_packed_alloc(ct_cv_packed *p, int k, int cin, int cout);
void ct_cv_packed_free(ct_cv_packed *p);
/* Fills from a PyTorch Conv1d weight src[cout][cin][k]. */
void ct_cv_pack_conv(ct_cv_packed *p, const float *src);
/* Fills from a PyTorch ConvTranspose1d weight src[cin][cout][k]. */
void ct_cv_pack_tconv(ct_cv_packed *p, const float *src);
/* Fills from a Linear weight src[cout][cin] (k must be 1). */
void ct_cv_pack_linear(ct_cv_packed *p, const float *src);

/* Multi-tap GEMM: for r < n, o < cout:
 *   Y[r*ldy + o] = (accumulate ? Y[r*ldy + o] : 0) + (bias ? bias[o] : 0)
 *                  + sum_{q < ntaps} sum_i X[(r + off[q])*ldx + i] * W[tap[q]][i][o].
 * off[q] may be negative (history rows). Y must not overlap the X rows read. */
void ct_cv_gemm_taps(float *Y, size_t ldy, const float *X, size_t ldx, int n,
                     const ct_cv_packed *W, int ntaps, const int *tap, const int *off,
                     const float *bias, int accumulate);

/* Causal conv, stride 1: y[t] = b + sum_j W[j] . x[t - (k-1-j)*dil]; x has (k-1)*dil history
 * rows; x rows are cin wide, y rows cout wide. */
void ct_cv_conv_causal(float *y, const float *x, int n, const ct_cv_packed *W, int dil,
                       const float *bias);

/* Pointwise linear: y[t] = (accumulate ? y[t] : 0) + b + W . x[t] (W packed with k = 1). */
void ct_cv_linear(float *y, const float *x, int n, const ct_cv_packed *W, const float *bias,
                  int accumulate);

/* Rows of history a causal transposed conv with kernel k and stride s needs:
 * ceil(k / s) - 1. */
int ct_cv_tconv_history(int k, int s);

/* Causal transposed conv (ConvTranspose1d then drop the last k - s outputs), computed as
 * out[t*s + j] = b + sum_{m : j + m*s < k} W[j + m*s] . x[t - m] for j < s: n input rows
 * (with ct_cv_tconv_history rows of history) -> n*s output rows. Requires k >= s. */
void ct_cv_tconv_causal(float *y, const float *x, int n, const ct_cv_packed *W, int s,
                        const float *bias);

/* Depthwise causal conv: y[t][c] = b[c] + sum_j w[j][c] * x[t - (k-1-j)][c]; w is [k][c]
 * (repacked from PyTorch [c][1][k]); x has k-1 history rows. */
void ct_cv_dwconv_causal(float *y, const float *x, int n, int c, int k, const float *w,
                         const float *bias);

/* SnakeBeta: y = x + inv_beta[c] * sin(ealpha[c] * x)^2 where ealpha = exp(alpha) and
 * inv_beta = 1 / (exp(beta) + 1e-9) are precomputed per channel. y may equal x. */
void ct_cv_snake(float *y, const float *x, int n, int c, const float *ealpha,
                 const float *inv_beta);

/* Per-row LayerNorm over c channels: y = (x - mean) / sqrt(var + eps) * w + b (y may equal x). */
void ct_cv_layernorm(float *y, const float *x, int n, int c, const float *w, const float *b,
                     float eps);

/* In-place exact GELU: x = 0.5 x (1 + erf(x / sqrt 2)), over count elements. */
void ct_cv_gelu_erf(float *x, size_t count);

#endif
