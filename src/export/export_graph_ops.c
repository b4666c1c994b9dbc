/* Composite graph helpers (see export_graph_ops.h). */
#include "export/export_graph_ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *ct_xg_cast(ct_og *g, const char *x, int to) {
    ct_og_attr a = ct_og_ai("to", to);
    return ct_og_opa(g, "Cast", NULL, x, NULL, &a, 1);
}

const char *ct_xg_rmsnorm(ct_og *g, const char *x, const char *wname, const float *w, int n, float eps) {
    const int f16 = g->float_elem == CT_ONNX_FLOAT16;
    int64_t one = 1, dn = n, ax = -1;
    const char *xs = f16 ? ct_xg_cast(g, x, CT_ONNX_FLOAT) : x;
    const char *sq = ct_og_op(g, "Mul", NULL, xs, xs, NULL);
    ct_og_attr kd = ct_og_ai("keepdims", 1);
    const char *ins[2] = {sq, ct_og_ints(g, 1, &ax)};
    const char *outs[1] = {NULL};
    const char *ms = ct_og_node(g, "ReduceMean", ins, 2, outs, 1, &kd, 1);
    const char *epsn = ct_og_f32_exact(g, NULL, 1, &one, &eps);
    const char *r = ct_og_op(g, "Sqrt", NULL, ct_og_op(g, "Add", NULL, ms, epsn, NULL), NULL, NULL);
    const char *inv = ct_og_op(g, "Reciprocal", NULL, r, NULL, NULL);
    const char *y = ct_og_op(g, "Mul", NULL, xs, inv, NULL);
    const char *wn = ct_og_f32_exact(g, wname, 1, &dn, w);
    y = ct_og_op(g, "Mul", NULL, wn, y, NULL);
    return f16 ? ct_xg_cast(g, y, CT_ONNX_FLOAT16) : y;
}

const char *ct_xg_rope(ct_og *g, const char *x, const char *cosn, const char *sinn, const char *out) {
    ct_og_attr a[2] = {ct_og_ai("axis", -1), ct_og_ai("num_outputs", 2)};
    const char *ins[1] = {x};
    const char *halves[2] = {NULL, NULL};
    ct_og_node(g, "Split", ins, 1, halves, 2, a, 2);
    const char *neg = ct_og_op(g, "Neg", NULL, halves[1], NULL, NULL);
    const char *cins[2] = {neg, halves[0]};
    const char *couts[1] = {NULL};
    const char *rot = ct_og_node(g, "Concat", cins, 2, couts, 1, a, 1);
    const char *p1 = ct_og_op(g, "Mul", NULL, x, cosn, NULL);
    const char *p2 = ct_og_op(g, "Mul", NULL, rot, sinn, NULL);
    return ct_og_op(g, "Add", out, p1, p2, NULL);
}

const char *ct_xg_weight_t(ct_og *g, const char *name, const ct_mat *w) {
    const size_t R = (size_t)w->rows, C = (size_t)w->cols;
    float *row = malloc(C * sizeof(float));
    const int f16 = g->float_elem == CT_ONNX_FLOAT16;
    void *dst = malloc(R * C * (f16 ? 2 : 4));
    if (!row || !dst) {
        free(row);
        free(dst);
        g->oom = 1;
        return "";
    }
    for (size_t r = 0; r < R; r++) {
        ct_mat_row(w, (int)r, row);
        if (f16)
            for (size_t c = 0; c < C; c++) ((uint16_t *)dst)[c * R + r] = ct_og_f16(row[c]);
        else
            for (size_t c = 0; c < C; c++) ((float *)dst)[c * R + r] = row[c];
    }
    free(row);
    int64_t dims[2] = {(int64_t)C, (int64_t)R};
    return ct_og_take(g, name, g->float_elem, 2, dims, dst, R * C * (f16 ? 2 : 4));
}

const char *ct_xg_linear(ct_og *g, const char *x, const char *name, const ct_mat *w, const float *bias) {
    const char *y = ct_og_op(g, "MatMul", NULL, x, ct_xg_weight_t(g, name, w), NULL);
    if (!bias) return y;
    int64_t d = w->rows;
    char bn[160];
    snprintf(bn, sizeof bn, "%s.bias", name ? name : "linear");
    return ct_og_op(g, "Add", NULL, y, ct_og_f32(g, name ? bn : NULL, 1, &d, bias), NULL);
}

const char *ct_xg_reshape(ct_og *g, const char *x, int n, const int64_t *dims, const char *out) {
    return ct_og_op(g, "Reshape", out, x, ct_og_ints(g, n, dims), NULL);
}

const char *ct_xg_transpose(ct_og *g, const char *x, int n, const int64_t *perm, const char *out) {
    ct_og_attr a = ct_og_aints("perm", perm, n);
    return ct_og_opa(g, "Transpose", out, x, NULL, &a, 1);
}
