/* Roofline probes: a streaming read over a buffer (large: DRAM; smaller: the working sets that may
   stay in cache) and a register-resident FMA loop, on 1 and N threads of a pool. Vector code is
   selected at run time by target attributes. */
#define _GNU_SOURCE /* MADV_HUGEPAGE */
#include "edge/roofline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "core/pool.h"
#include "kernels/cpu.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct {
    const float *buf;
    size_t n;       /* floats */
    int t;          /* threads that take part (the pool's first t) */
    int wide;       /* 2 = avx512, 1 = avx2, 0 = scalar */
    float sink[64];
    long fma_iters;
} job;

#if defined(__x86_64__)
__attribute__((target("avx512f"))) static float read512(const float *p, size_t n) {
    __m512 a = _mm512_setzero_ps(), b = a, c = a, d = a;
    for (size_t i = 0; i + 64 <= n; i += 64) {
        a = _mm512_add_ps(a, _mm512_loadu_ps(p + i));
        b = _mm512_add_ps(b, _mm512_loadu_ps(p + i + 16));
        c = _mm512_add_ps(c, _mm512_loadu_ps(p + i + 32));
        d = _mm512_add_ps(d, _mm512_loadu_ps(p + i + 48));
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a, b), _mm512_add_ps(c, d)));
}

__attribute__((target("avx2,fma"))) static float read256(const float *p, size_t n) {
    __m256 a = _mm256_setzero_ps(), b = a, c = a, d = a;
    for (size_t i = 0; i + 32 <= n; i += 32) {
        a = _mm256_add_ps(a, _mm256_loadu_ps(p + i));
        b = _mm256_add_ps(b, _mm256_loadu_ps(p + i + 8));
        c = _mm256_add_ps(c, _mm256_loadu_ps(p + i + 16));
        d = _mm256_add_ps(d, _mm256_loadu_ps(p + i + 24));
    }
    float t[8];
    _mm256_storeu_ps(t, _mm256_add_ps(_mm256_add_ps(a, b), _mm256_add_ps(c, d)));
    return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}

/* FMA_CHAINS independent FMA chains (enough to cover latency x ports on current cores), fully
   unrolled so the accumulators stay in registers. */
#define FMA_CHAINS 24
__attribute__((target("avx512f"))) static float fma512(long iters) {
    __m512 acc[FMA_CHAINS], m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < FMA_CHAINS; i++) acc[i] = _mm512_set1_ps((float)i);
    for (long it = 0; it < iters; it++) {
#pragma GCC unroll 24
        for (int i = 0; i < FMA_CHAINS; i++) acc[i] = _mm512_fmadd_ps(acc[i], m, a);
    }
    __m512 s = acc[0];
    for (int i = 1; i < FMA_CHAINS; i++) s = _mm512_add_ps(s, acc[i]);
    return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) static float fma256(long iters) {
    __m256 acc[FMA_CHAINS], m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
    for (int i = 0; i < FMA_CHAINS; i++) acc[i] = _mm256_set1_ps((float)i);
    for (long it = 0; it < iters; it++) {
#pragma GCC unroll 24
        for (int i = 0; i < FMA_CHAINS; i++) acc[i] = _mm256_fmadd_ps(acc[i], m, a);
    }
    float t[8];
    __m256 s = acc[0];
    for (int i = 1; i < FMA_CHAINS; i++) s = _mm256_add_ps(s, acc[i]);
    _mm256_storeu_ps(t, s);
    return t[0] + t[7];
}
#endif

static float read_scalar(const float *p, size_t n) {
    float a[8] = {0};
    for (size_t i = 0; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) a[j] += p[i + j];
    return a[0] + a[7];
}

static void read_job(void *ctx, int ith, int nth) {
    job *j = ctx;
    (void)nth;
    if (ith >= j->t) return;
    int lo, hi;
    ct_pool_split((int)(j->n / 4096), ith, j->t, 1, &lo, &hi);
    const float *p = j->buf + (size_t)lo * 4096;
    size_t n = (size_t)(hi - lo) * 4096;
    float r;
#if defined(__x86_64__)
    if (j->wide == 2) r = read512(p, n);
    else if (j->wide == 1) r = read256(p, n);
    else
#endif
        r = read_scalar(p, n);
    j->sink[ith & 63] = r;
}

static void fma_job(void *ctx, int ith, int nth) {
    job *j = ctx;
    (void)nth;
    if (ith >= j->t) return;
    float r = 0;
#if defined(__x86_64__)
    if (j->wide == 2) r = fma512(j->fma_iters);
    else if (j->wide == 1) r = fma256(j->fma_iters);
#endif
    j->sink[ith & 63] = r;
}

static double run_read(ct_pool *p, job *j) {
    double best = 0;
    for (int rep = 0; rep < 4; rep++) {
        double t = now_s();
        ct_pool_run(p, read_job, j);
        double gbs = (double)j->n * 4 / (now_s() - t) / 1e9;
        if (gbs > best) best = gbs;
    }
    return best;
}

static double run_fma(ct_pool *p, job *j) {
    double best = 0;
    int lanes = j->wide == 2 ? 16 : 8;
    for (int rep = 0; rep < 3; rep++) {
        double t = now_s();
        ct_pool_run(p, fma_job, j);
        double gf = (double)j->fma_iters * FMA_CHAINS * lanes * 2 * j->t / (now_s() - t) / 1e9;
        if (gf > best) best = gf;
    }
    return best;
}

static int vec_width(void) {
    ct_cpu_features f;
    ct_cpu_detect(&f);
    return ct_isa_supported(CT_ISA_AVX512, &f) ? 2 : ct_isa_supported(CT_ISA_AVX2, &f) ? 1 : 0;
}

struct ct_read_probe {
    ct_pool *pool; /* n_threads */
    float *buf;
    size_t cap; /* floats */
    int n_threads;
    job j;
};

ct_status ct_read_probe_create(int n_threads, uint64_t max_bytes, ct_read_probe **out, char *err, size_t errcap) {
    *out = NULL;
    if (n_threads < 1) n_threads = 1;
    size_t cap = ((size_t)(max_bytes / sizeof(float)) + 4095) & ~(size_t)4095;
    if (cap < 4096) cap = 4096;
    ct_read_probe *p = calloc(1, sizeof *p);
    /* in 2 MiB pages where the kernel grants them, as the streamed weights are mapped (they
       read faster than 4 KiB ones: docs/KERNELS.md "Huge pages for the streamed weights") */
    const size_t huge = (size_t)2 << 20, bytes = (cap * sizeof(float) + huge - 1) / huge * huge;
    float *buf = p ? aligned_alloc(huge, bytes) : NULL;
#ifdef MADV_HUGEPAGE
    if (buf) madvise(buf, bytes, MADV_HUGEPAGE);
#endif
    if (!buf || ct_pool_create(n_threads, NULL, 0, &p->pool) != CT_OK) {
        free(buf);
        free(p);
        return ct_errf(err, errcap, CT_ERR_NOMEM, "roofline: cannot allocate a %llu-byte buffer and %d threads",
                       (unsigned long long)(cap * sizeof(float)), n_threads);
    }
    for (size_t i = 0; i < cap; i++) buf[i] = (float)(i & 7);
    p->buf = buf;
    p->cap = cap;
    p->n_threads = n_threads;
    p->j.buf = buf;
    p->j.wide = vec_width();
    *out = p;
    return CT_OK;
}

double ct_read_probe_gbs(ct_read_probe *p, uint64_t bytes, int t) {
    size_t n = (size_t)(bytes / sizeof(float)) & ~(size_t)4095;
    p->j.n = n < 4096 ? 4096 : n > p->cap ? p->cap : n;
    p->j.t = t < 1 ? 1 : t > p->n_threads ? p->n_threads : t;
    /* one thread reads on the caller alone: a pool run would wake the idle workers each pass,
       and a woken worker can land on the caller's core and stay there for the next
       n-thread run, which then measures one core */
    return run_read(p->j.t == 1 ? NULL : p->pool, &p->j);
}

void ct_read_probe_free(ct_read_probe *p) {
    if (!p) return;
    ct_pool_free(p->pool);
    free(p->buf);
    free(p);
}

ct_status ct_roofline_machine(int n_threads, const uint64_t *sizes, int n_sizes, ct_machine *out, char *err,
                              size_t errcap) {
    memset(out, 0, sizeof *out);
    if (n_threads < 1) n_threads = 1;
    if (n_sizes < 1 || n_sizes > CT_COST_SIZES)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "roofline: 1..%d buffer sizes", CT_COST_SIZES);
    ct_read_probe *p = NULL;
    ct_status st = ct_read_probe_create(n_threads, sizes[n_sizes - 1], &p, err, errcap);
    if (st != CT_OK) return st;
    for (int k = 0; k < n_sizes; k++) {
        out->bytes[k] = sizes[k];
        out->gbs_1t[k] = ct_read_probe_gbs(p, sizes[k], 1);
        out->gbs_nt[k] = ct_read_probe_gbs(p, sizes[k], n_threads);
    }
    for (int k = 0; k < n_sizes; k++) /* a busy core can make n threads read slower than one: keep the better */
        if (out->gbs_nt[k] < out->gbs_1t[k]) out->gbs_nt[k] = out->gbs_1t[k];
    out->n_sizes = n_sizes;
    out->n_threads = n_threads;
    job *j = &p->j;
    j->fma_iters = 4000000;
    if (j->wide) {
        j->t = 1;
        out->fma_1t = run_fma(NULL, j); /* on the caller alone, as ct_read_probe_gbs's one thread */
        j->t = n_threads;
        out->fma_nt = run_fma(p->pool, j);
        /* n threads short of n times one thread: measured again (up to 4 more times, the best
           kept), since a core taken for a moment by another process (or the kernel) halves a
           2-thread figure; where the threads share cores (SMT) it stays short and costs the
           retries only */
        for (int k = 0; k < 4 && out->fma_nt < 0.9 * out->fma_1t * n_threads; k++) {
            const double again = run_fma(p->pool, j);
            if (again > out->fma_nt) out->fma_nt = again;
        }
        if (out->fma_nt < out->fma_1t) out->fma_nt = out->fma_1t;
    } else { /* no vector FMA: the scalar rate of one FMA per cycle is not measured; assume 2 GFLOP/s/thread */
        out->fma_1t = 2.0;
        out->fma_nt = 2.0 * n_threads;
    }
    snprintf(out->source, sizeof out->source, "measured (%s, %d threads)",
             j->wide == 2 ? "avx512" : j->wide == 1 ? "avx2" : "scalar", n_threads);
    ct_read_probe_free(p);
    return CT_OK;
}

int ct_roofline_bench_sizes(int largest_mib, uint64_t *sizes) {
    int n = 0;
    for (uint64_t mib = 8; mib <= 512 && mib < (uint64_t)largest_mib && n < CT_COST_SIZES - 1; mib *= 2)
        sizes[n++] = mib << 20;
    sizes[n++] = (uint64_t)largest_mib << 20;
    return n;
}
