/* Codec-decoder kernels over time-major activations ([T][C], row t = one time step):
 * panel-packed weights, the multi-tap accumulate GEMM behind every causal (dilated) conv,
 * pointwise linear and causal transposed conv (codec/conv.h builds those from it), SnakeBeta,
 * ELU, depthwise causal conv, LayerNorm and exact-erf GELU.
 *
 * The GEMM, SnakeBeta and ELU have per-ISA variants: the scalar reference (ref/conv_ref.c) and
 * AVX2 / AVX-512 (x86/conv_*.c), chosen with the matmul level (kernels/cpu.h:
 * ct_cv_kernels_for, ct_kernel_table.cv_gemm / cv_snake; where AMX is on, the table's GEMM is
 * the AMX one). Within one variant every output
 * element is accumulated in the same order (bias / previous Y first, then taps in the given
 * order, input channels ascending; a K-blocked variant stores and reloads the exact partial
 * sum) whichever row tile, panel group or row / panel range computes it, so a caller that
 * splits the work between threads (by output panels or rows, never a reduction) or into
 * chunks gets the same bits. Variants differ from each other by rounding only (FMA vs
 * mul+add, the polynomial sine).
 *
 * History convention: a causal op reading x[t - h] for h > 0 takes x pointing at row 0 of
 * the new rows; rows -H..-1 before it must hold the previous inputs (zeros at stream
 * start). */
#ifndef CT_KERNELS_CONV_H
#define CT_KERNELS_CONV_H

#include <stddef.h>

#define CT_CV_OB 16 /* output channels per panel (one AVX-512 vector, two AVX2 vectors) */
#define CT_CV_RB 4  /* rows per register tile of the scalar reference */

/* A weight packed into panels of CT_CV_OB output channels.
 * w: [nb][k][cin][CT_CV_OB], nb = ceil(cout / CT_CV_OB), padding columns zero. */
typedef struct {
    float *w;
    int k, cin, cout, nb;
    int amx; /* 1: ct_cv_gemm_range_amx takes its calls (they have many rows); 0: it passes them to
                the FMA GEMM */
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

/* One multi-tap GEMM call: for r < n, o < cout:
 *   Y[r*ldy + o] = (accumulate ? Y[r*ldy + o] : 0) + (bias ? bias[o] : 0)
 *                  + sum_{q < ntaps} sum_i X[(r + off[q])*ldx + i] * W[tap[q]][i][o].
 * off[q] may be negative (history rows). Y must not overlap the X rows read. */
typedef struct {
    float *Y;                /* [n][ldy] output rows */
    size_t ldy;
    const float *X;          /* [n + history][ldx] input rows (row 0 = first new row) */
    size_t ldx;
    int n;                   /* rows */
    const ct_cv_packed *W;
    int ntaps;
    const int *tap, *off;    /* [ntaps] weight tap and row offset per term */
    const float *bias;       /* [cout] or NULL */
    int accumulate;          /* 1: add onto the existing Y */
} ct_cv_gemm_args;

/* Computes output panels [b0, b1) (CT_CV_OB channels each) of rows [r0, r1) of a. */
typedef void (*ct_cv_gemm_fn)(const ct_cv_gemm_args *a, int b0, int b1, int r0, int r1);
/* SnakeBeta on rows [r0, r1) of [.][c] arrays: y = x + inv_beta[ch] * sin(ealpha[ch] * x)^2
 * where ealpha = exp(alpha) and inv_beta = 1 / (exp(beta) + 1e-9) are precomputed per
 * channel. y may equal x. */
typedef void (*ct_cv_snake_fn)(float *y, const float *x, int r0, int r1, int c, const float *ealpha,
                               const float *inv_beta);

/* The variants (contracts of ct_cv_gemm_fn / ct_cv_snake_fn); the x86 ones need the CPU
 * features of their level (check with ct_isa_supported) and are exposed for the tests. */
void ct_cv_gemm_range_scalar(const ct_cv_gemm_args *a, int b0, int b1, int r0, int r1);
void ct_cv_snake_rows_scalar(float *y, const float *x, int r0, int r1, int c, const float *ealpha,
                             const float *inv_beta);
#if defined(__x86_64__)
void ct_cv_gemm_range_avx2(const ct_cv_gemm_args *a, int b0, int b1, int r0, int r1);
void ct_cv_snake_rows_avx2(float *y, const float *x, int r0, int r1, int c, const float *ealpha,
                           const float *inv_beta);
void ct_cv_gemm_range_avx512(const ct_cv_gemm_args *a, int b0, int b1, int r0, int r1);
/* AMX tiles on split bf16 operands (x86/conv_amx_body.h): within about 3 * 2^-18 of |x w| per
   product, for weights marked amx (the others: ct_cv_gemm_range_avx512); needs AMX-BF16 with the
   tile permission granted (ct_amx_available). */
void ct_cv_gemm_range_amx(const ct_cv_gemm_args *a, int b0, int b1, int r0, int r1);
void ct_cv_snake_rows_avx512(float *y, const float *x, int r0, int r1, int c, const float *ealpha,
                             const float *inv_beta);
#endif

/* ELU (alpha 1) on elements [lo, hi): y[i] = x[i] > 0 ? x[i] : expm1(x[i]) (y may equal x; a
 * NaN stays NaN). The scalar reference uses expm1f; the AVX2 / AVX-512 variants a polynomial
 * (expm1 Taylor series of degree 9 on (-0.5, 0], exp(x) - 1 below, exp by Cody-Waite
 * reduction and a degree-7 polynomial), within 2e-7 absolute + 2e-7 relative of the reference
 * (test_codec_kernels). Element-wise in every variant (the tail uses the same vector code
 * under a mask), so any split of the range gives the same bits. */
typedef void (*ct_cv_elu_fn)(float *y, const float *x, size_t lo, size_t hi);
void ct_cv_elu_scalar(float *y, const float *x, size_t lo, size_t hi);
#if defined(__x86_64__)
void ct_cv_elu_avx2(float *y, const float *x, size_t lo, size_t hi);
void ct_cv_elu_avx512(float *y, const float *x, size_t lo, size_t hi);
#endif

/* Depthwise causal conv: y[t][c] = b[c] + sum_j w[j][c] * x[t - (k-1-j)][c]; w is [k][c]
 * (repacked from PyTorch [c][1][k]); x has k-1 history rows. */
void ct_cv_dwconv_causal(float *y, const float *x, int n, int c, int k, const float *w,
                         const float *bias);

/* Per-row LayerNorm over c channels: y = (x - mean) / sqrt(var + eps) * w + b (y may equal x). */
void ct_cv_layernorm(float *y, const float *x, int n, int c, const float *w, const float *b,
                     float eps);

/* In-place exact GELU: x = 0.5 x (1 + erf(x / sqrt 2)), over count elements. */
void ct_cv_gelu_erf(float *x, size_t count);

#endif
