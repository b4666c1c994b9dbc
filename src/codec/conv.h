/* Codec-decoder convolutions over time-major activations ([T][C], row t = one time step),
 * built on the kernels of kernels/conv.h (panel-packed weights, the multi-tap accumulate
 * GEMM, SnakeBeta, ELU, depthwise conv, LayerNorm, GELU): causal (dilated) conv, pointwise linear
 * and causal transposed conv as GEMM calls, run through a ct_cv_exec that carries the kernel
 * variants and an optional thread pool.
 *
 * Threads split output panels or rows, never a reduction, and each variant accumulates every
 * output element in one fixed order (kernels/conv.h), so chunked and one-shot runs agree bit
 * for bit and results do not depend on the thread count. History convention as in
 * kernels/conv.h: x points at row 0 of the new rows, the rows before it hold the previous
 * inputs (zeros at stream start). */
#ifndef CT_CODEC_CONV_H
#define CT_CODEC_CONV_H

#include <stddef.h>

#include "core/pool.h"
#include "kernels/conv.h"
#include "kernels/cpu.h"

/* Execution context: kernel variants + optional pool (NULL = the calling thread only). */
typedef struct {
    ct_pool *pool;
    ct_cv_gemm_fn gemm;
    ct_cv_snake_fn snake;
    ct_cv_elu_fn elu;
    ct_isa isa;              /* the level the variants were taken for */
} ct_cv_exec;

/* Fills ex for ISA level isa (ct_cv_kernels_for). Returns 0, or -1 when this build has no
 * variant for isa (ex then holds the scalar reference and isa CT_ISA_SCALAR). */
int ct_cv_exec_init_isa(ct_cv_exec *ex, ct_pool *pool, ct_isa isa);
/* Fills ex from the process-wide kernel table, ct_kernels(). */
void ct_cv_exec_init(ct_cv_exec *ex, ct_pool *pool);

/* Multi-tap GEMM (formula at ct_cv_gemm_args in kernels/conv.h; dispatched variant, calling
 * thread only). */
void ct_cv_gemm_taps(float *Y, size_t ldy, const float *X, size_t ldx, int n,
                     const ct_cv_packed *W, int ntaps, const int *tap, const int *off,
                     const float *bias, int accumulate);
/* The same through an execution context (threads split panels or rows; no allocation). */
void ct_cv_gemm_taps_ex(const ct_cv_exec *ex, float *Y, size_t ldy, const float *X, size_t ldx, int n,
                        const ct_cv_packed *W, int ntaps, const int *tap, const int *off,
                        const float *bias, int accumulate);

/* Causal conv, stride 1: y[t] = b + sum_j W[j] . x[t - (k-1-j)*dil]; x has (k-1)*dil history
 * rows; x rows are cin wide, y rows cout wide. */
void ct_cv_conv_causal(float *y, const float *x, int n, const ct_cv_packed *W, int dil,
                       const float *bias);
/* The same through an execution context. */
void ct_cv_conv_causal_ex(const ct_cv_exec *ex, float *y, const float *x, int n, const ct_cv_packed *W,
                          int dil, const float *bias);

/* Pointwise linear: y[t] = (accumulate ? y[t] : 0) + b + W . x[t] (W packed with k = 1). */
void ct_cv_linear(float *y, const float *x, int n, const ct_cv_packed *W, const float *bias,
                  int accumulate);
/* The same through an execution context. */
void ct_cv_linear_ex(const ct_cv_exec *ex, float *y, const float *x, int n, const ct_cv_packed *W,
                     const float *bias, int accumulate);

/* Rows of history a causal transposed conv with kernel k and stride s needs:
 * ceil(k / s) - 1. */
int ct_cv_tconv_history(int k, int s);

/* Causal transposed conv (ConvTranspose1d then drop the last k - s outputs), computed as
 * out[t*s + j] = b + sum_{m : j + m*s < k} W[j + m*s] . x[t - m] for j < s: n input rows
 * (with ct_cv_tconv_history rows of history) -> n*s output rows. Requires k >= s. */
void ct_cv_tconv_causal(float *y, const float *x, int n, const ct_cv_packed *W, int s,
                        const float *bias);
/* The same, all s output phases in one pool run. */
void ct_cv_tconv_causal_ex(const ct_cv_exec *ex, float *y, const float *x, int n, const ct_cv_packed *W,
                           int s, const float *bias);

/* Batched forms of the three ops above: ns independent inputs through the same W (input i:
 * y[i], x[i] with its own history rows before it, n[i] rows). A pass over W computes each
 * panel group for every input before the next group (the weights are read from memory once
 * per group, not once per input); every output element is the one the single call gives,
 * bit for bit (the kernels' per-element order does not depend on rows or panel ranges). Any
 * ns >= 1 (taken CT_CV_MAX_BATCH at a time); the single calls are ns = 1. */
#define CT_CV_MAX_BATCH 16
void ct_cv_conv_causal_batch_ex(const ct_cv_exec *ex, int ns, float *const *y, const float *const *x,
                                const int *n, const ct_cv_packed *W, int dil, const float *bias);
void ct_cv_linear_batch_ex(const ct_cv_exec *ex, int ns, float *const *y, const float *const *x, const int *n,
                           const ct_cv_packed *W, const float *bias, int accumulate);
void ct_cv_tconv_causal_batch_ex(const ct_cv_exec *ex, int ns, float *const *y, const float *const *x,
                                 const int *n, const ct_cv_packed *W, int s, const float *bias);

/* SnakeBeta over n rows (ct_cv_snake_fn in kernels/conv.h), dispatched variant. */
void ct_cv_snake(float *y, const float *x, int n, int c, const float *ealpha,
                 const float *inv_beta);
/* The same through an execution context (threads split rows). */
void ct_cv_snake_ex(const ct_cv_exec *ex, float *y, const float *x, int n, int c, const float *ealpha,
                    const float *inv_beta);

/* ELU over count elements (ct_cv_elu_fn in kernels/conv.h) through an execution context
 * (threads split blocks of elements; the same bits on any split). y may equal x. */
void ct_cv_elu_ex(const ct_cv_exec *ex, float *y, const float *x, size_t count);

#endif
