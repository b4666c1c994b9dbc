/* Composite graph helpers shared by the step and codec exporters: RMSNorm, rotate-half
   RoPE, linear layers from ct_mat weights, reshape/transpose shortcuts. Every helper appends
   nodes to g and returns the name of its result tensor. */
#ifndef CT_EXPORT_GRAPH_OPS_H
#define CT_EXPORT_GRAPH_OPS_H

#include "export/onnx_graph.h"
#include "kernels/ops.h"

/* y = w * (x / sqrt(mean(x^2 over the last axis) + eps)), in the order of kernels/ops.h ct_rmsnorm.
   In an FP16 graph the normalisation runs in FP32 (Cast in and out); w is [n] f32. */
const char *ct_xg_rmsnorm(ct_og *g, const char *x, const char *wname, const float *w, int n, float eps);
/* Rotate-half RoPE on the last axis (dim D): x*cos + concat(-x2, x1)*sin. */
const char *ct_xg_rope(ct_og *g, const char *x, const char *cosn, const char *sinn, const char *out);
/* W^T as an initializer [cols, rows] in the graph's float type, from any ct_mat format. */
const char *ct_xg_weight_t(ct_og *g, const char *name, const ct_mat *w);
/* x @ W^T (+ bias[rows] when non-NULL). */
const char *ct_xg_linear(ct_og *g, const char *x, const char *name, const ct_mat *w, const float *bias);
/* Reshape to dims[n]. */
const char *ct_xg_reshape(ct_og *g, const char *x, int n, const int64_t *dims, const char *out);
/* Transpose with perm[n]. */
const char *ct_xg_transpose(ct_og *g, const char *x, int n, const int64_t *perm, const char *out);
/* Cast to an ONNX element type. */
const char *ct_xg_cast(ct_og *g, const char *x, int to);

#endif
