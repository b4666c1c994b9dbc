/* Every matmul variant this CPU runs matches the scalar reference (f32 accumulation in a
   different order: NMSE <= 1e-10 and |err| <= 1e-5 * (sum |w x|) per output), for BF16, F16
   and F32 weights over edge shapes; the pool's row split gives bit-identical results for any
   thread count; a forced ISA the CPU lacks is an error. */
#include <math.h>
#include <string.h>

#include "core/pool.h"
#include "core/rng.h"
#include "ct_test.h"
#include "kernels/cpu.h"

static float urand(ct_rng *r) { return (float)(ct_rng_uniform(r) * 2.0 - 1.0); }

static uint16_t f32_to_f16(float f) { /* tests only: round-to-nearest via double */
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000u;
    float a = fabsf(f);
    if (a < 6.1e-5f) return (uint16_t)(sign | (uint16_t)lrintf(a / 5.9604645e-8f));
    int e;
    float m = frexpf(a, &e); /* a = m * 2^e, m in [0.5,1) */
    int exp = e + 14;
    uint32_t man = (uint32_t)lrintf((m * 2.0f - 1.0f) * 1024.0f);
    if (man == 1024) {
        man = 0;
        exp++;
    }
    return (uint16_t)(sign | ((uint32_t)exp << 10) | man);
}

typedef struct {
    ct_matmul_rows_fn fn;
    const ct_mat *w;
    const float *b, *x;
    float *y;
    int n;
} mm_job;

static void run_mm(void *ctx, int ith, int nth) {
    mm_job *j = ctx;
    int lo, hi;
    ct_pool_split(j->w->rows, ith, nth, 4, &lo, &hi);
    j->fn(j->w, j->b, j->x, j->y, j->n, lo, hi);
}

int main(void) {
    ct_cpu_features f;
    ct_cpu_detect(&f);
    ct_rng rng;
    ct_rng_init(&rng, 7, 0);
    const int cols[] = {1, 7, 8, 15, 16, 17, 31, 32, 33, 100, 128, 1024};
    const int rows[] = {1, 3, 4, 5, 9};
    const int toks[] = {1, 2, 4, 5, 7};
    float *x = malloc(sizeof(float) * 7 * 1024), *bias = malloc(sizeof(float) * 9);
    float *wf = malloc(sizeof(float) * 9 * 1024), *y0 = malloc(sizeof(float) * 7 * 9),
          *y1 = malloc(sizeof(float) * 7 * 9), *mag = malloc(sizeof(float) * 7 * 9);
    uint16_t *wh = malloc(2 * 9 * 1024);
    int variants = 0;
    for (int isa = 1; isa < CT_ISA_COUNT; isa++) {
        ct_matmul_rows_fn fn = ct_matmul_rows_for((ct_isa)isa);
        if (!fn || !ct_isa_supported((ct_isa)isa, &f)) continue;
        variants++;
        double worst = 0;
        int bad = 0;
        for (int dt = 0; dt < 3; dt++) {
            ct_dtype dtype = dt == 0 ? CT_DT_BF16 : dt == 1 ? CT_DT_F16 : CT_DT_F32;
            for (size_t ci = 0; ci < sizeof cols / sizeof *cols; ci++)
                for (size_t ri = 0; ri < sizeof rows / sizeof *rows; ri++)
                    for (size_t ti = 0; ti < sizeof toks / sizeof *toks; ti++) {
                        int C = cols[ci], R = rows[ri], n = toks[ti];
                        for (int i = 0; i < R * C; i++) {
                            float v = urand(&rng) * (i % 97 == 0 ? 100.0f : 1.0f);
                            if (i % 31 == 0) v = 0.0f;
                            if (dtype == CT_DT_BF16) {
                                wh[i] = ct_f32_to_bf16(v);
                                wf[i] = ct_bf16_to_f32(wh[i]);
                            } else if (dtype == CT_DT_F16) {
                                wh[i] = f32_to_f16(v);
                                wf[i] = ct_f16_to_f32(wh[i]);
                            } else {
                                wf[i] = v;
                            }
                        }
                        for (int i = 0; i < n * C; i++) x[i] = urand(&rng);
                        for (int i = 0; i < R; i++) bias[i] = urand(&rng);
                        ct_mat w = {dtype == CT_DT_F32 ? (const void *)wf : (const void *)wh, dtype, R, C};
                        const float *bp = (ci + ti) % 2 ? bias : NULL;
                        ct_matmul_rows_scalar(&w, bp, x, y0, n, 0, R);
                        fn(&w, bp, x, y1, n, 0, R);
                        for (int t = 0; t < n; t++)
                            for (int r = 0; r < R; r++) {
                                double m = bp ? fabs(bp[r]) : 0;
                                for (int k = 0; k < C; k++) m += fabs((double)wf[r * C + k] * x[t * C + k]);
                                mag[t * R + r] = (float)m;
                            }
                        double e = ct_nmse(y1, y0, (size_t)(n * R));
                        if (e > worst) worst = e;
                        for (int i = 0; i < n * R; i++)
                            if (fabsf(y1[i] - y0[i]) > 1e-5f * mag[i] + 1e-30f) bad++;
                    }
        }
        printf("%s: worst NMSE vs scalar %.2e, %d outputs over the abs bound\n",
               ct_isa_name((ct_isa)isa), worst, bad);
        CHECK(worst <= 1e-10);
        CHECK(bad == 0);

        /* thread-count invariance on a realistic shape */
        const int R = 301, C = 1024, n = 3;
        float *W = malloc(sizeof(float) * R * C), *X = malloc(sizeof(float) * n * C);
        float *Y1 = malloc(sizeof(float) * n * R), *Y3 = malloc(sizeof(float) * n * R);
        uint16_t *WB = malloc(2 * (size_t)R * C);
        for (int i = 0; i < R * C; i++) WB[i] = ct_f32_to_bf16(urand(&rng));
        for (int i = 0; i < n * C; i++) X[i] = urand(&rng);
        ct_mat w = {WB, CT_DT_BF16, R, C};
        (void)W;
        for (int nt = 1; nt <= 3; nt++) {
            ct_pool *p = NULL;
            CHECK(ct_pool_create(nt, NULL, 0, &p) == CT_OK);
            mm_job j = {fn, &w, NULL, X, nt == 1 ? Y1 : Y3, n};
            for (int rep = 0; rep < 50; rep++) ct_pool_run(p, run_mm, &j);
            if (nt > 1) CHECK(memcmp(Y1, Y3, sizeof(float) * n * R) == 0);
            ct_pool_free(p);
        }
        free(W);
        free(X);
        free(Y1);
        free(Y3);
        free(WB);
    }
    printf("%d SIMD variant(s) tested on this CPU\n", variants);

    /* pool split covers [0,n) exactly, aligned */
    for (int nth = 1; nth <= 5; nth++) {
        int covered = 0, prev = 0, ok = 1;
        for (int i = 0; i < nth; i++) {
            int lo, hi;
            ct_pool_split(103, i, nth, 4, &lo, &hi);
            ok &= lo == prev && hi >= lo && (lo % 4 == 0);
            covered += hi - lo;
            prev = hi;
        }
        CHECK(ok && covered == 103);
    }

    /* forcing an ISA: parse errors and unsupported levels are reported, not executed */
    char err[256];
    ct_isa isa;
    CHECK(ct_isa_parse("avx512", &isa) == CT_OK && isa == CT_ISA_AVX512);
    CHECK(ct_isa_parse("sse9", &isa) == CT_ERR_INVALID_ARG);
    CHECK(ct_kernels_init("sse9", err, sizeof err) == CT_ERR_INVALID_ARG && strstr(err, "sse9"));
#if defined(__x86_64__)
    CHECK(ct_kernels_init("neon", err, sizeof err) == CT_ERR_UNSUPPORTED && strstr(err, "neon"));
#else
    CHECK(ct_kernels_init("avx2", err, sizeof err) == CT_ERR_UNSUPPORTED);
#endif
    CHECK(ct_kernels_init("scalar", err, sizeof err) == CT_OK);
    CHECK(ct_kernels()->isa == CT_ISA_SCALAR);
    CHECK(ct_kernels_init(ct_isa_name(ct_isa_best(&f)), err, sizeof err) ==
          (ct_isa_best(&f) == CT_ISA_SCALAR ? CT_OK : CT_ERR_STATE));
    free(x);
    free(bias);
    free(wf);
    free(y0);
    free(y1);
    free(mag);
    free(wh);
    return ct_test_finish();
}
