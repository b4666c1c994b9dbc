/* Reference kernels used by the transformer stacks: dtype conversion, matvec/matmul over
   BF16/F16/F32/INT8/INT4 weights with f32 accumulation, weight quantization, RMSNorm, RoPE,
   SiLU. Scalar, no fast-math. */
#ifndef CT_OPS_H
#define CT_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"

/* Group size of the INT4 format (columns per scale). */
#define CT_Q4_GROUP 32

/* A row-major weight matrix [rows, cols] in its storage format:
   - CT_DT_BF16 / CT_DT_F16 / CT_DT_F32: data is [rows][cols] of that type, scales NULL;
   - CT_DT_I8 (INT8, per-row scale): data int8 [rows][cols], scales f32 [rows];
     W[r][c] = scales[r] * q[r][c];
   - CT_DT_U8 (INT4, group-wise): cols % CT_Q4_GROUP == 0; data uint8 [rows][cols/2] where
     group g of row r is the 16 bytes at r*cols/2 + g*16 and byte j holds column g*32+j in its
     low nibble and column g*32+16+j in its high nibble, each as q+8 with q in [-8, 7];
     scales f32 [rows][cols/32]; W[r][c] = scales[r][c/32] * q[r][c].
   xq = 1 selects the integer-dot mode for INT8/INT4 weights (cols % 64 == 0, cols <=
   CT_XQ_MAXC) in every call, AMX or not (kernels/cpu.h): every token's
   activations are quantized by ct_xq_quantize and each 32-column group's dot product is exact
   in integers:
     INT8: y = scales[r] * sum_g s_g * sum_{k in g} q[r][k] qx[k]
     INT4: y = sum_g scales[r][g] * s_g * sum_{k in g} q[r][k] qx[k]. */
typedef struct {
    const void *data;
    ct_dtype dtype;
    int rows, cols;
    const float *scales;
    int xq;
    const uint8_t *pan; /* INT8/INT4 in the integer-dot mode: the same weights (INT4: and
                           scales) repacked into 16-row panels for the AVX-512 VNNI kernel
                           (ct_xq_pan_pack), or NULL; every kernel that does not use it reads
                           data and scales */
} ct_mat;

/* Widest row the integer-dot mode takes. */
#define CT_XQ_MAXC 8192
#define CT_XQ_MIN_AMAX 1e-30f

/* Activation quantization of the integer-dot mode, per group of CT_Q4_GROUP columns
   (cols % 32 == 0): amax = max |x|; a group with amax < CT_XQ_MIN_AMAX (so that 127 / amax
   stays finite) gets s = 0 and q = 0, else
   s = amax / 127 and q = round-half-even(x * (127 / amax)), all in f32. q[cols], s[cols/32]. */
void ct_xq_quantize(const float *x, int cols, int8_t *q, float *s);

/* Bytes of weight data (plus scales) that one pass over w reads. */
size_t ct_mat_bytes(const ct_mat *w);

/* Quantizes a [rows, cols] matrix given as src (BF16/F16/F32) to INT8 with per-row absmax
   scales: q[rows*cols], scales[rows]. Round to nearest, ties to even. Returns 0 when out of memory, else 1. */
int ct_quantize_i8(const void *src, ct_dtype dt, int rows, int cols, int8_t *q, float *scales);

/* Quantizes to INT4 (layout above): cols % CT_Q4_GROUP must be 0; q[rows*cols/2],
   scales[rows*cols/32], scale = absmax/7 per group. Returns 0 when out of memory. */
int ct_quantize_q4(const void *src, ct_dtype dt, int rows, int cols, uint8_t *q, float *scales);

float ct_bf16_to_f32(uint16_t h);
uint16_t ct_f32_to_bf16(float f); /* round to nearest even, NaN kept */
float ct_f16_to_f32(uint16_t h);

/* Converts n elements of src (dtype) to f32 dst. */
void ct_convert_to_f32(const void *src, ct_dtype dt, float *dst, size_t n);

/* Row r of W as f32 into dst[cols] (dequantized for INT8/INT4). */
void ct_mat_row(const ct_mat *w, int r, float *dst);

/* y[n][rows] = x[n][cols] . W^T (+ bias[rows] if non-NULL). x and y must not alias. */
void ct_matmul(const ct_mat *w, const float *bias, const float *x, float *y, int n);

/* out[n] = w * (x * (1 / sqrt(sum(x^2) / n + eps))) in f32 (out may equal x), through the
   selected level's variant (ct_kernels()->rmsnorm): the scalar reference sums the squares in
   order (neon uses it), the AVX2 / AVX-512 variants in four vector accumulators (x86/vecops_body.h),
   within 2e-6 relative of it (test_kernels). A fixed order per n: the result depends on
   nothing else. */
void ct_rmsnorm(float *out, const float *x, const float *w, int n, float eps);
typedef void (*ct_rmsnorm_fn)(float *out, const float *x, const float *w, int n, float eps);
void ct_rmsnorm_scalar(float *out, const float *x, const float *w, int n, float eps);
#if defined(__x86_64__)
void ct_rmsnorm_avx2(float *out, const float *x, const float *w, int n, float eps);
void ct_rmsnorm_avx512(float *out, const float *x, const float *w, int n, float eps);
#endif

/* In-place NeoX (rotate-half) RoPE on one head vec[dim] given cos/sin[dim/2]. */
void ct_rope_apply(float *vec, const float *cosv, const float *sinv, int dim);

/* cos/sin tables [dim/2] for one position, matching the reference's f32 arithmetic. */
void ct_rope_angles(int pos, int dim, double theta, float *cosv, float *sinv);

/* y = silu(a) * b = a / (1 + exp(-a)) * b, elementwise over n (y may equal a or b), through
   the selected level's variant (ct_kernels()->swiglu). The scalar reference uses expf; the
   AVX2 / AVX-512 variants a polynomial exp (x86/vecops_body.h) and stay within 1e-6 relative
   + 1e-30 absolute of it (test_kernels). Element-wise in every variant (the tail takes the
   same vector code under a mask), so how a range is split changes nothing. */
void ct_swiglu(float *y, const float *a, const float *b, int n);
typedef void (*ct_swiglu_fn)(float *y, const float *a, const float *b, int n);
void ct_swiglu_scalar(float *y, const float *a, const float *b, int n);
#if defined(__x86_64__)
void ct_swiglu_avx2(float *y, const float *a, const float *b, int n);
void ct_swiglu_avx512(float *y, const float *a, const float *b, int n);
#endif

/* x[n] -= max; exp; normalise. */
void ct_softmax(float *x, int n);

#endif
