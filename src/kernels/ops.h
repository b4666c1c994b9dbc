/* Reference kernels used by the transformer stacks: dtype conversion, matvec/matmul over
   BF16/F16/F32 weights with f32 accumulation, RMSNorm, RoPE, SiLU. Scalar, no fast-math. */
#ifndef CT_OPS_H
#define CT_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "io/safetensors.h"

/* A row-major weight matrix [rows, cols] in its storage dtype (BF16, F16 or F32). */
typedef struct {
    const void *data;
    ct_dtype dtype;
    int rows, cols;
} ct_mat;

float ct_bf16_to_f32(uint16_t h);
uint16_t ct_f32_to_bf16(float f); /* round to nearest even, NaN kept */
float ct_f16_to_f32(uint16_t h);

/* Converts n elements of src (dtype) to f32 dst. */
void ct_convert_to_f32(const void *src, ct_dtype dt, float *dst, size_t n);

/* Row r of W as f32 into dst[cols]. */
void ct_mat_row(const ct_mat *w, int r, float *dst);

/* y[n][rows] = x[n][cols] . W^T (+ bias[rows] if non-NULL). x and y must not alias. */
void ct_matmul(const ct_mat *w, const float *bias, const float *x, float *y, int n);

/* out[n] = x / rms(x) * w, computed in f32 (out may equal x). */
void ct_rmsnorm(float *out, const float *x, const float *w, int n, float eps);

/* In-place NeoX (rotate-half) RoPE on one head vec[dim] given cos/sin[dim/2]. */
void ct_rope_apply(float *vec, const float *cosv, const float *sinv, int dim);

/* cos/sin tables [dim/2] for one position, matching the reference's f32 arithmetic. */
void ct_rope_angles(int pos, int dim, double theta, float *cosv, float *sinv);

/* y = silu(a) * b, elementwise over n. */
void ct_swiglu(float *y, const float *a, const float *b, int n);

/* x[n] -= max; exp; normalise. */
void ct_softmax(float *x, int n);

#endif
