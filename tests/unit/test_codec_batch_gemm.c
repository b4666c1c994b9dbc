/* The codec decoder's batched GEMMs (codec/conv.h ct_cv_*_batch_ex: several independent inputs
 * through one weight, panel group by panel group): for every kernel variant this CPU runs
 * (x86: scalar, AVX2, AVX-512; AArch64: scalar, through scripts/test-arm64.sh) and thread
 * counts 1 and 2, each input's output is bit-identical (memcmp) to the single call: causal
 * convs, linear (accumulate) and transposed convs over segments with their own history rows
 * and row counts, weights spanning several panel groups and K blocks. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/conv.h"
#include "core/pool.h"
#include "ct_test.h"
#include "kernels/conv.h"
#include "kernels/cpu.h"

#include "test_codec_isas.h"

enum { NSEG = 3 };

/* Batched conv / linear / transposed conv of NSEG segments (own history, own row count) ==
 * the single calls, bit for bit. kind 0 conv (k, dil), 1 linear (accumulate), 2 tconv (k, s). */
static void test_gemm_batch(int kind, int cin, int cout, int k, int dil, const int *n, ct_pool *pool) {
    ct_cv_packed W;
    CHECK(ct_cv_packed_alloc(&W, k, cin, cout) == 0);
    float *src = malloc(sizeof(float) * (size_t)cout * cin * k), *bias = malloc(sizeof(float) * (size_t)cout);
    for (size_t i = 0; i < (size_t)cout * cin * k; i++) src[i] = rndf();
    for (int i = 0; i < cout; i++) bias[i] = rndf();
    if (kind == 2) ct_cv_pack_tconv(&W, src);
    else ct_cv_pack_conv(&W, src);
    const int H = kind == 0 ? (k - 1) * dil : kind == 2 ? ct_cv_tconv_history(k, dil) : 0;
    const int up = kind == 2 ? dil : 1;
    float *x[NSEG], *y[NSEG], *yb[NSEG];
    const float *x0[NSEG];
    for (int g = 0; g < NSEG; g++) {
        size_t nx = (size_t)(H + n[g]) * cin, ny = (size_t)n[g] * up * cout;
        x[g] = malloc(sizeof(float) * nx);
        y[g] = malloc(sizeof(float) * ny);
        yb[g] = malloc(sizeof(float) * ny);
        for (size_t i = 0; i < nx; i++) x[g][i] = rndf();
        for (size_t i = 0; i < ny; i++) y[g][i] = yb[g][i] = rndf(); /* accumulate adds onto these */
        x0[g] = x[g] + (size_t)H * cin;
    }
    for (int v = 0; v < n_isas; v++) {
        ct_cv_exec ex;
        ct_cv_exec_init_isa(&ex, pool, isas[v]);
        for (int g = 0; g < NSEG; g++) {
            if (kind == 0) ct_cv_conv_causal_ex(&ex, y[g], x0[g], n[g], &W, dil, bias);
            else if (kind == 1) ct_cv_linear_ex(&ex, y[g], x0[g], n[g], &W, bias, 1);
            else ct_cv_tconv_causal_ex(&ex, y[g], x0[g], n[g], &W, dil, bias);
        }
        if (kind == 0) ct_cv_conv_causal_batch_ex(&ex, NSEG, yb, x0, n, &W, dil, bias);
        else if (kind == 1) ct_cv_linear_batch_ex(&ex, NSEG, yb, x0, n, &W, bias, 1);
        else ct_cv_tconv_causal_batch_ex(&ex, NSEG, yb, x0, n, &W, dil, bias);
        for (int g = 0; g < NSEG; g++)
            CHECKF(memcmp(y[g], yb[g], sizeof(float) * (size_t)n[g] * up * cout) == 0,
                   "gemm batch kind %d %dx%d k%d %s threads %d: segment %d (%d rows) differs", kind, cin, cout, k,
                   ct_isa_name(isas[v]), ct_pool_threads(pool), g, n[g]);
    }
    for (int g = 0; g < NSEG; g++) free(x[g]), free(y[g]), free(yb[g]);
    free(src), free(bias);
    ct_cv_packed_free(&W);
}

int main(void) {
    find_isas();
    printf("variants:");
    for (int i = 0; i < n_isas; i++) printf(" %s", ct_isa_name(isas[i]));
    printf("\n");
    ct_pool *pool2 = NULL;
    CHECK(ct_pool_create(2, NULL, 0, &pool2) == CT_OK);
    if (!pool2) return ct_test_finish();
    ct_pool *pools[2] = {NULL, pool2};
    for (int t = 0; t < 2; t++) {
        static const int n_a[NSEG] = {1, 13, 4}, n_b[NSEG] = {40, 2, 7}, n_c[NSEG] = {3, 1, 9}, n_d[NSEG] = {150, 40, 90};
        test_gemm_batch(0, 600, 200, 7, 3, n_a, pools[t]); /* 268 KiB per panel: several groups, K blocks */
        test_gemm_batch(0, 24, 40, 3, 1, n_b, pools[t]);
        test_gemm_batch(1, 512, 300, 1, 1, n_b, pools[t]);  /* accumulate */
        test_gemm_batch(1, 96, 1, 1, 1, n_a, pools[t]);     /* one partial panel */
        test_gemm_batch(0, 32, 192, 3, 1, n_d, pools[t]);   /* 3 panel chunks x row parts across segments */
        test_gemm_batch(2, 256, 128, 16, 8, n_c, pools[t]); /* transposed conv: 8 phases */
        test_gemm_batch(2, 64, 64, 2, 2, n_a, pools[t]);
    }
    ct_pool_free(pool2);
    return ct_test_finish();
}
