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
/* Weight bytes per panel group a batched single-thread GEMM passes over before moving on to
 * the next group (every input of the batch reads the group while it is in L2). */
#define BATCH_GROUP_BYTES (256 * 1024)

/* One GEMM over nseg segments (independent inputs, e.g. streams) of nph phases each (the
 * s output phases of a transposed conv): a[g * nph + p], all with the same W; the phases of
 * a segment share its row count. */
typedef struct {
    const ct_cv_exec *ex;
    const ct_cv_gemm_args *a;
    int nseg, nph;
    int rows;        /* rows of the segments laid end to end */
    int pc, rparts;  /* tasks: panel chunks of pc panels x rparts row parts */
    ct_pool_range r; /* task indices, panel chunk major */
} gemm_job;

/* Panels [b0, b1) of rows [lo, hi) of the segments laid end to end, every phase. */
static void gemm_rows(const gemm_job *j, int b0, int b1, int lo, int hi) {
    int base = 0;
    for (int g = 0; g < j->nseg && base < hi; g++) {
        const ct_cv_gemm_args *ph = j->a + (size_t)g * (size_t)j->nph;
        const int n = ph[0].n, r0 = lo > base ? lo - base : 0, r1 = hi - base < n ? hi - base : n;
        if (r0 < r1)
            for (int p = 0; p < j->nph; p++) j->ex->gemm(&ph[p], b0, b1, r0, r1);
        base += n;
    }
}

/* Panels [lo, hi) of every segment and phase (the weights of the range are read once from
 * memory, then from cache for the later segments). */
static void gemm_panels(const gemm_job *j, int lo, int hi) {
    for (int i = 0; i < j->nseg * j->nph; i++) j->ex->gemm(&j->a[i], lo, hi, 0, j->a[i].n);
}

/* Row part q of rparts: [rows * q / rparts, ...) with inner boundaries on multiples of 8. */
static int row_cut(int rows, int q, int rparts) {
    if (q >= rparts) return rows;
    int c = (int)((long long)rows * q / rparts) / 8 * 8;
    return c < rows ? c : rows;
}

static void gemm_job_run(void *ctx, int ith, int nth) {
    (void)ith;
    (void)nth;
    gemm_job *j = ctx;
    const int nb = j->a[0].W->nb;
    int lo, hi;
    while (ct_pool_range_next(&j->r, &lo, &hi))
        for (int t = lo; t < hi; t++) {
            const int b0 = t / j->rparts * j->pc, q = t % j->rparts;
            const int b1 = b0 + j->pc < nb ? b0 + j->pc : nb;
            if (j->rparts == 1) gemm_panels(j, b0, b1);
            else gemm_rows(j, b0, b1, row_cut(j->rows, q, j->rparts), row_cut(j->rows, q + 1, j->rparts));
        }
}

/* Rows a task keeps at least when rows are split under panel chunks (its weights are then
 * read from memory once per task). */
#define PART_MIN_ROWS 64

/* Row parts for `chunks` panel chunks on nth threads: the fewest that give every thread the
 * same number of tasks, at least CT_POOL_CHUNKS_PER_THREAD each where the rows allow it,
 * else one (rows are not split). */
static int row_parts(int chunks, int rows, int nth) {
    const int maxp = rows / PART_MIN_ROWS;
    for (int want = CT_POOL_CHUNKS_PER_THREAD; want >= 1; want--)
        for (int q = 1; q <= maxp; q++) {
            const int t = chunks * q;
            if (t % nth == 0 && t >= want * nth) return q;
        }
    return 1;
}

static void gemm_run(const ct_cv_exec *ex, const ct_cv_gemm_args *a, int nseg, int nph) {
    const ct_cv_packed *W = a[0].W;
    const int nth = ct_pool_threads(ex->pool);
    int rows = 0;
    double macs = 0;
    for (int g = 0; g < nseg; g++) {
        rows += a[(size_t)g * (size_t)nph].n;
        for (int p = 0; p < nph; p++) macs += (double)a[(size_t)g * (size_t)nph].n * a[g * nph + p].ntaps * W->cin * W->cout;
    }
    if (rows <= 0 || W->nb <= 0) return;
    gemm_job j = {ex, a, nseg, nph, rows, W->nb, 1, {0}};
    if (nth <= 1 || macs < PAR_MIN_MACS) {
        if (nseg == 1) {
            gemm_panels(&j, 0, W->nb);
            return;
        }
        /* several segments: panel groups of about BATCH_GROUP_BYTES of weights (multiples of
           the 4 panels the kernels tile), each through every segment */
        size_t pb = (size_t)W->k * (size_t)W->cin * CT_CV_OB * sizeof(float);
        int grp = (int)(BATCH_GROUP_BYTES / (pb ? pb : 1)) / 4 * 4;
        if (grp < 4) grp = 4;
        for (int b = 0; b < W->nb; b += grp) gemm_panels(&j, b, b + grp < W->nb ? b + grp : W->nb);
        return;
    }
    /* Tasks of panel chunks (groups of the 4 panels the kernels tile; each streams only its
     * share of the weights, for every segment) times row parts: panels alone when rows are
     * few, rows alone (every panel) when panels are few, else panel chunks cut into as many
     * row parts as spread the tasks evenly over the threads. Tasks go to whichever thread is
     * free; every element is computed as on one thread. */
    if (rows < 8 * nth) {
        j.pc = ct_pool_chunk(ex->pool, W->nb, 4);
    } else if (W->nb < 4 * nth) {
        j.rparts = (rows + ct_pool_chunk(ex->pool, rows, 8) - 1) / ct_pool_chunk(ex->pool, rows, 8);
    } else {
        j.pc = ct_pool_chunk(ex->pool, W->nb, 4);
        j.rparts = row_parts((W->nb + j.pc - 1) / j.pc, rows, nth);
    }
    const int tasks = (W->nb + j.pc - 1) / j.pc * j.rparts;
    ct_pool_range_init(&j.r, tasks, 1, 1);
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
    gemm_run(ex, &a, 1, 1);
}

void ct_cv_gemm_taps(float *Y, size_t ldy, const float *X, size_t ldx, int n,
                     const ct_cv_packed *W, int ntaps, const int *tap, const int *off,
                     const float *bias, int accumulate) {
    ct_cv_exec ex = default_exec();
    ct_cv_gemm_taps_ex(&ex, Y, ldy, X, ldx, n, W, ntaps, tap, off, bias, accumulate);
}

/* The same taps over ns segments, in groups of CT_CV_MAX_BATCH. */
static void taps_batch(const ct_cv_exec *ex, int ns, float *const *y, const float *const *x, const int *n,
                       const ct_cv_packed *W, int ntaps, const int *tap, const int *off, const float *bias,
                       int accumulate) {
    ct_cv_gemm_args a[CT_CV_MAX_BATCH];
    for (int g0 = 0; g0 < ns; g0 += CT_CV_MAX_BATCH) {
        int k = 0;
        for (int g = g0; g < ns && k < CT_CV_MAX_BATCH; g++, k++)
            a[k] = (ct_cv_gemm_args){y[g], (size_t)W->cout, x[g], (size_t)W->cin, n[g], W, ntaps, tap, off, bias,
                                     accumulate};
        gemm_run(ex, a, k, 1);
    }
}

void ct_cv_conv_causal_batch_ex(const ct_cv_exec *ex, int ns, float *const *y, const float *const *x,
                                const int *n, const ct_cv_packed *W, int dil, const float *bias) {
    int tap[MAX_TAPS], off[MAX_TAPS];
    int k = W->k < MAX_TAPS ? W->k : MAX_TAPS;
    for (int j = 0; j < k; j++) {
        tap[j] = j;
        off[j] = -(W->k - 1 - j) * dil;
    }
    taps_batch(ex, ns, y, x, n, W, k, tap, off, bias, 0);
}

void ct_cv_conv_causal_ex(const ct_cv_exec *ex, float *y, const float *x, int n, const ct_cv_packed *W,
                          int dil, const float *bias) {
    ct_cv_conv_causal_batch_ex(ex, 1, &y, &x, &n, W, dil, bias);
}

void ct_cv_conv_causal(float *y, const float *x, int n, const ct_cv_packed *W, int dil,
                       const float *bias) {
    ct_cv_exec ex = default_exec();
    ct_cv_conv_causal_ex(&ex, y, x, n, W, dil, bias);
}

void ct_cv_linear_batch_ex(const ct_cv_exec *ex, int ns, float *const *y, const float *const *x, const int *n,
                           const ct_cv_packed *W, const float *bias, int accumulate) {
    static const int tap0[1] = {0}, off0[1] = {0};
    taps_batch(ex, ns, y, x, n, W, 1, tap0, off0, bias, accumulate);
}

void ct_cv_linear_ex(const ct_cv_exec *ex, float *y, const float *x, int n, const ct_cv_packed *W,
                     const float *bias, int accumulate) {
    ct_cv_linear_batch_ex(ex, 1, &y, &x, &n, W, bias, accumulate);
}

void ct_cv_linear(float *y, const float *x, int n, const ct_cv_packed *W, const float *bias,
                  int accumulate) {
    ct_cv_exec ex = default_exec();
    ct_cv_linear_ex(&ex, y, x, n, W, bias, accumulate);
}

int ct_cv_tconv_history(int k, int s) { return (k + s - 1) / s - 1; }

void ct_cv_tconv_causal_batch_ex(const ct_cv_exec *ex, int ns, float *const *y, const float *const *x,
                                 const int *n, const ct_cv_packed *W, int s, const float *bias) {
    int tap[MAX_PHASES][MAX_TAPS], off[MAX_PHASES][MAX_TAPS], ntap[MAX_PHASES];
    ct_cv_gemm_args a[CT_CV_MAX_BATCH * MAX_PHASES];
    for (int j0 = 0; j0 < s; j0 += MAX_PHASES) {
        int nph = 0;
        for (int j = j0; j < s && nph < MAX_PHASES; j++, nph++) {
            int nt = 0;
            for (int m = 0; j + m * s < W->k && nt < MAX_TAPS; m++) {
                tap[nph][nt] = j + m * s;
                off[nph][nt] = -m;
                nt++;
            }
            ntap[nph] = nt;
        }
        for (int g0 = 0; g0 < ns; g0 += CT_CV_MAX_BATCH) {
            int k = 0;
            for (int g = g0; g < ns && k < CT_CV_MAX_BATCH; g++, k++)
                for (int p = 0; p < nph; p++)
                    a[k * nph + p] = (ct_cv_gemm_args){y[g] + (size_t)(j0 + p) * (size_t)W->cout,
                                                       (size_t)s * (size_t)W->cout, x[g], (size_t)W->cin, n[g], W,
                                                       ntap[p], tap[p], off[p], bias, 0};
            gemm_run(ex, a, k, nph);
        }
    }
}

void ct_cv_tconv_causal_ex(const ct_cv_exec *ex, float *y, const float *x, int n, const ct_cv_packed *W,
                           int s, const float *bias) {
    ct_cv_tconv_causal_batch_ex(ex, 1, &y, &x, &n, W, s, bias);
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
