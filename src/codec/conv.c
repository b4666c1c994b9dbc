/* Codec-decoder convolutions built on the kernels of kernels/conv.h: causal (dilated) conv,
 * pointwise linear and causal transposed conv as multi-tap GEMM calls, variant choice and the
 * pool partitioning of the GEMM and SnakeBeta. */
#include "codec/conv.h"

#include <stddef.h>

#define MAX_TAPS 64

/* ---------------------------------------------------------------------------------------
 * Dispatch and threading */

int ct_cv_exec_init_isa(ct_cv_exec *ex, ct_pool *pool, ct_isa isa) {
    ex->pool = pool;
    ex->isa = isa;
    ex->elu = ct_cv_elu_for(isa);
    if (ct_cv_kernels_for(isa, &ex->gemm, &ex->snake) == 0 && ex->elu) return 0;
    ct_cv_kernels_for(CT_ISA_SCALAR, &ex->gemm, &ex->snake);
    ex->elu = ct_cv_elu_scalar;
    ex->isa = CT_ISA_SCALAR;
    return -1;
}

void ct_cv_exec_init(ct_cv_exec *ex, ct_pool *pool) {
    const ct_kernel_table *kt = ct_kernels();
    ex->pool = pool;
    ex->gemm = kt->cv_gemm;
    ex->snake = kt->cv_snake;
    ex->elu = kt->cv_elu;
    ex->isa = kt->isa;
}

#define MAX_PHASES 16
/* Multiply-adds below which a GEMM runs on the calling thread only. */
#define PAR_MIN_MACS (1 << 17)

typedef struct {
    const ct_cv_exec *ex;
    const ct_cv_gemm_args *ph; /* [nph] phases (same W, n) */
    int nph;
    int by_panels;
    ct_pool_range r; /* panels or rows */
} gemm_job;

static void gemm_job_run(void *ctx, int ith, int nth) {
    (void)ith;
    (void)nth;
    gemm_job *j = ctx;
    const int nb = j->ph[0].W->nb, n = j->ph[0].n;
    int lo, hi;
    while (ct_pool_range_next(&j->r, &lo, &hi))
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
    /* Panels when there are enough of them (each chunk then streams only its share of the
     * weights; groups of 4 panels as the kernels tile them); rows otherwise. Chunks go to
     * whichever thread is free; every element is computed as on one thread. */
    gemm_job j = {ex, ph, nph, W->nb >= 4 * nth || n < 8 * nth, {0}};
    if (j.by_panels) ct_pool_range_init(&j.r, W->nb, 4, ct_pool_chunk(ex->pool, W->nb, 4));
    else ct_pool_range_init(&j.r, n, 8, ct_pool_chunk(ex->pool, n, 8));
    ct_pool_run_dyn(ex->pool, gemm_job_run, &j);
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
    ct_pool_range r; /* rows */
} snake_job;

static void snake_job_run(void *ctx, int ith, int nth) {
    (void)ith;
    (void)nth;
    snake_job *j = ctx;
    int lo, hi;
    while (ct_pool_range_next(&j->r, &lo, &hi)) j->ex->snake(j->y, j->x, lo, hi, j->c, j->ea, j->ib);
}

void ct_cv_snake_ex(const ct_cv_exec *ex, float *y, const float *x, int n, int c, const float *ealpha,
                    const float *inv_beta) {
    if (ct_pool_threads(ex->pool) <= 1 || (size_t)n * (size_t)c < 16384) {
        ex->snake(y, x, 0, n, c, ealpha, inv_beta);
        return;
    }
    snake_job j = {ex, y, x, n, c, ealpha, inv_beta, {0}};
    ct_pool_range_init(&j.r, n, 1, ct_pool_chunk(ex->pool, n, 1));
    ct_pool_run_dyn(ex->pool, snake_job_run, &j);
}

void ct_cv_snake(float *y, const float *x, int n, int c, const float *ealpha,
                 const float *inv_beta) {
    ct_cv_exec ex = default_exec();
    ct_cv_snake_ex(&ex, y, x, n, c, ealpha, inv_beta);
}

#define ELU_BLOCK 4096 /* elements per pool chunk */

typedef struct {
    const ct_cv_exec *ex;
    float *y;
    const float *x;
    size_t count;
    ct_pool_range r; /* blocks of ELU_BLOCK elements */
} elu_job;

static void elu_job_run(void *ctx, int ith, int nth) {
    (void)ith;
    (void)nth;
    elu_job *j = ctx;
    int lo, hi;
    while (ct_pool_range_next(&j->r, &lo, &hi)) {
        size_t a = (size_t)lo * ELU_BLOCK, b = (size_t)hi * ELU_BLOCK;
        j->ex->elu(j->y, j->x, a, b < j->count ? b : j->count);
    }
}

void ct_cv_elu_ex(const ct_cv_exec *ex, float *y, const float *x, size_t count) {
    const size_t nb = (count + ELU_BLOCK - 1) / ELU_BLOCK;
    if (ct_pool_threads(ex->pool) <= 1 || nb < 2 || nb > (size_t)1 << 30) {
        ex->elu(y, x, 0, count);
        return;
    }
    elu_job j = {ex, y, x, count, {0}};
    ct_pool_range_init(&j.r, (int)nb, 1, ct_pool_chunk(ex->pool, (int)nb, 1));
    ct_pool_run_dyn(ex->pool, elu_job_run, &j);
}
