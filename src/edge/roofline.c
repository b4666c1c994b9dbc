/* Roofline probes: a streaming read over a buffer (large: DRAM; smaller: the working sets that may
   stay in cache), and register-resident loops of the product instructions the selected kernels
   run (the f32 FMA, and each weight format's prompt matmuls), on 1 and N threads of a pool.
   Vector code is selected at run time by target attributes. */
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

#include "kernels/x86/amx_cfg.h"
#endif
#if defined(__aarch64__)
#include <arm_neon.h>
#endif

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A product probe: runs `iters` iterations, returns a sink (below). */
typedef float (*probe_fn)(long iters);

typedef struct {
    const float *buf;
    size_t n;       /* floats */
    int t;          /* threads that take part (the pool's first t) */
    int wide;       /* the read loop: 2 = avx512, 1 = avx2, 0 = scalar */
    float sink[64];
    probe_fn fn; /* the product probe the pool's threads run */
    long iters;
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

#endif

/* ---- product-instruction probes --------------------------------------------------------
   Each runs `iters` iterations of one product instruction (or the kernels' sequence for one
   product; inline assembly, so the compiler neither folds nor copies them) on independent
   accumulators held in registers (enough chains to cover latency x
   ports on current cores; 256-bit code without AVX-512 has 16 registers); the return value is
   a sink. flop: f32-equivalent operations per iteration, 2 per multiply-add. */
typedef struct {
    probe_fn fn;
    double flop;
    const char *name;
} probe;

#define CHAINS 24   /* 32 vector registers */
#define CHAINS_Y 12 /* 16 */
/* X(i) for each chain i: the accumulators are separate variables, so they stay in registers */
#define REP6(X, S) X(0, S) X(1, S) X(2, S) X(3, S) X(4, S) X(5, S)
#define REP12(X, S) REP6(X, S) X(6, S) X(7, S) X(8, S) X(9, S) X(10, S) X(11, S)
#define REP24(X, S)                                                                                \
    REP12(X, S) X(12, S) X(13, S) X(14, S) X(15, S) X(16, S) X(17, S) X(18, S) X(19, S) X(20, S) X(21, S) \
        X(22, S) X(23, S)

/* A vector probe NAME with target attribute TARGET over the chains REP names: the declarations
   (...) give its operands and `seed`; accumulators c<i> start at seed (__auto_type: not const), one
   STEP(c) per chain and iteration, and each final value is kept (an empty asm reads it). */
#if defined(__aarch64__)
#define VP_USE(i, S) __asm__ volatile("" : : "w"(c##i));
#else
#define VP_USE(i, S) __asm__ volatile("" : : "v"(c##i));
#endif
#define VP_DECL(i, S) __auto_type c##i = seed;
#define VP_STEP(i, S) S(c##i);
#define VEC_PROBE_FN(NAME, TARGET, REP, STEP, ...)                                                 \
    TARGET static float NAME(long iters) {                                                        \
        __VA_ARGS__;                                                                              \
        REP(VP_DECL, STEP)                                                                        \
        for (long it = 0; it < iters; it++) { REP(VP_STEP, STEP) }                                \
        REP(VP_USE, STEP)                                                                         \
        return 0.0f;                                                                              \
    }

static float fma_scalar(long iters) {
    float a0 = 1, a1 = 2, a2 = 3, a3 = 4, a4 = 5, a5 = 6, a6 = 7, a7 = 8;
    const float m = 0.999999f, c = 1e-7f;
    for (long it = 0; it < iters; it++) {
        a0 = a0 * m + c, a1 = a1 * m + c, a2 = a2 * m + c, a3 = a3 * m + c;
        a4 = a4 * m + c, a5 = a5 * m + c, a6 = a6 * m + c, a7 = a7 * m + c;
    }
    return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}

#if defined(__x86_64__)
/* the activations' and weights' bytes: any values time the same */
#define U8S 0x01020304
#define S8S 0x7f80017f
#define FMA_STEP(c) __asm__("vfmadd132ps %2, %1, %0" : "+v"(c) : "v"(a), "v"(m))
#define FMA_Y_STEP(c) __asm__("vfmadd132ps %2, %1, %0" : "+x"(c) : "x"(a), "x"(m))
#define BF16DOT_STEP(c) __asm__("vdpbf16ps %2, %1, %0" : "+v"(c) : "v"(u), "v"(w))
#define VNNI_STEP(c) __asm__("vpdpbusd %2, %1, %0" : "+v"(c) : "v"(u), "v"(w))
#define AVXVNNI_STEP(c) __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(c) : "x"(u), "x"(w))
/* VPMADDUBSW (32 byte products into 16 pair sums), VPMADDWD by ones, VPADDD: 32 multiply-adds */
#define MADDUBS_STEP(c)                                                                                       \
    { __m256i t; __asm__("vpmaddubsw %3, %2, %1\n\tvpmaddwd %4, %1, %1\n\tvpaddd %1, %0, %0"                    \
                         : "+x"(c), "=&x"(t) : "x"(u), "x"(w), "x"(one)); }

VEC_PROBE_FN(fma512, __attribute__((target("avx512f"))), REP24, FMA_STEP,
             const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f), seed = _mm512_set1_ps(1.0f))
VEC_PROBE_FN(fma256, __attribute__((target("avx2,fma"))), REP12, FMA_Y_STEP,
             const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f), seed = _mm256_set1_ps(1.0f))
VEC_PROBE_FN(bf16dot512, __attribute__((target("avx512f,avx512bf16"))), REP24, BF16DOT_STEP,
             const __m512i u = _mm512_set1_epi32(0x3f803f80), w = _mm512_set1_epi32(0x3c003c00);
             const __m512 seed = _mm512_set1_ps(1.0f))
VEC_PROBE_FN(vnni512, __attribute__((target("avx512f,avx512vnni"))), REP24, VNNI_STEP,
             const __m512i u = _mm512_set1_epi32(U8S), w = _mm512_set1_epi32(S8S), seed = _mm512_set1_epi32(1))
VEC_PROBE_FN(vnni256, __attribute__((target("avx512f,avx512vl,avx512vnni"))), REP24, VNNI_STEP,
             const __m256i u = _mm256_set1_epi32(U8S), w = _mm256_set1_epi32(S8S), seed = _mm256_set1_epi32(1))
VEC_PROBE_FN(avxvnni256, __attribute__((target("avx2,avxvnni"))), REP12, AVXVNNI_STEP,
             const __m256i u = _mm256_set1_epi32(U8S), w = _mm256_set1_epi32(S8S), seed = _mm256_set1_epi32(1))
VEC_PROBE_FN(maddubs256, __attribute__((target("avx2"))), REP6, MADDUBS_STEP,
             const __m256i u = _mm256_set1_epi32(U8S), w = _mm256_set1_epi32(S8S), one = _mm256_set1_epi16(1);
             const __m256i seed = _mm256_set1_epi32(1))

/* TDPBF16PS into 4 accumulator tiles (16 x 16 f32, each a 16 x 32 by 32 x 16 bf16 product);
   the calling thread needs the tile permission (ct_amx_available) */
__attribute__((target("amx-tile,amx-bf16"))) static float amx_bf16(long iters) {
    ct_amx_cfg c;
    ct_amx_cfg_full(&c);
    _tile_loadconfig(&c);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_zero(4);
    _tile_zero(5);
    for (long it = 0; it < iters; it++) {
        _tile_dpbf16ps(0, 4, 5);
        _tile_dpbf16ps(1, 4, 5);
        _tile_dpbf16ps(2, 4, 5);
        _tile_dpbf16ps(3, 4, 5);
    }
    float out[256];
    _tile_stored(0, out, 64);
    _tile_release();
    return out[0];
}
#endif

#if defined(__aarch64__)
/* SDOT is assembled for its function's target, named as kernels/arm/matmul_dot_neon.c names it */
#if defined(__clang__)
#define SDOT_TARGET __attribute__((target("dotprod")))
#else
#define SDOT_TARGET __attribute__((target("arch=armv8.2-a+dotprod")))
#endif
#define FMLA_STEP(c) __asm__("fmla %0.4s, %1.4s, %2.4s" : "+w"(c) : "w"(a), "w"(m))
#define SDOT_STEP(c) __asm__("sdot %0.4s, %1.16b, %2.16b" : "+w"(c) : "w"(u), "w"(w))
/* SMULL + SMLAL2 (16 byte products into 8 int16 pair sums) and SADALP: 16 multiply-adds */
#define SMULL_STEP(c)                                                                                         \
    { int16x8_t t; __asm__("smull %1.8h, %2.8b, %3.8b\n\tsmlal2 %1.8h, %2.16b, %3.16b\n\tsadalp %0.4s, %1.8h"      \
                           : "+w"(c), "=&w"(t) : "w"(u), "w"(w)); }

VEC_PROBE_FN(fma_neon, , REP24, FMLA_STEP,
             const float32x4_t m = vdupq_n_f32(0.999999f), a = vdupq_n_f32(1e-7f), seed = vdupq_n_f32(1.0f))
VEC_PROBE_FN(smull_neon, , REP12, SMULL_STEP, const int8x16_t u = vdupq_n_s8(3), w = vdupq_n_s8(-5);
             const int32x4_t seed = vdupq_n_s32(1))
VEC_PROBE_FN(sdot_neon, SDOT_TARGET, REP24, SDOT_STEP, const int8x16_t u = vdupq_n_s8(3), w = vdupq_n_s8(-5);
             const int32x4_t seed = vdupq_n_s32(1))
#endif

/* The f32 FMA of the selected kernel level: its vector width, or scalar. */
static probe fma_probe(const ct_kernel_table *k) {
#if defined(__x86_64__)
    if (k->isa == CT_ISA_AVX512 || k->isa == CT_ISA_AVX512BF16) return (probe){fma512, CHAINS * 16 * 2, "FMA (f32, 512-bit)"};
    if (k->isa == CT_ISA_AVX2) return (probe){fma256, CHAINS_Y * 8 * 2, "FMA (f32, 256-bit)"};
#endif
#if defined(__aarch64__)
    if (k->isa == CT_ISA_NEON || k->isa == CT_ISA_NEON_DOTPROD) return (probe){fma_neon, CHAINS * 4 * 2, "FMLA (f32, NEON)"};
#endif
    (void)k;
    return (probe){fma_scalar, 8 * 2, "f32 multiply-add (scalar)"};
}

/* The instruction a prompt's matmuls of weight format f (CT_WF_*) run with on the selected
   kernels (docs/KERNELS.md "Dispatch"), and how many of its multiply-adds one weight's takes
   (*per: 2 for AMX on split activations). */
static probe prompt_probe(const ct_kernel_table *k, int f, int *per) {
    *per = 1;
#if defined(__x86_64__)
    if (f == CT_WF_BF16 && k->amx) {
        *per = k->bf16act ? 1 : 2;
        return (probe){amx_bf16, 4.0 * 16 * 16 * 32 * 2,
                       k->bf16act ? "TDPBF16PS (AMX)" : "TDPBF16PS (AMX, split activations: 2 per product)"};
    }
    if (f == CT_WF_BF16 && k->bf16act) return (probe){bf16dot512, CHAINS * 32 * 2, "VDPBF16PS (512-bit)"};
    if (f != CT_WF_BF16 && k->xq) switch (k->dot_op) {
        case CT_DOT_VNNI512: return (probe){vnni512, CHAINS * 64 * 2, "VPDPBUSD (AVX-512 VNNI)"};
        case CT_DOT_AVXVNNI: return (probe){avxvnni256, CHAINS_Y * 32 * 2, "VPDPBUSD (AVX-VNNI)"};
        case CT_DOT_VNNI256: return (probe){vnni256, CHAINS * 32 * 2, "VPDPBUSD (AVX-512 VNNI, 256-bit)"};
        case CT_DOT_MADDUBS: return (probe){maddubs256, 6 * 32 * 2, "VPMADDUBSW + VPMADDWD (256-bit)"};
        default: break;
        }
#endif
#if defined(__aarch64__)
    if (f != CT_WF_BF16 && k->xq && k->dot_op == CT_DOT_SDOT) return (probe){sdot_neon, CHAINS * 16 * 2, "SDOT"};
    if (f != CT_WF_BF16 && k->xq && k->dot_op == CT_DOT_SMULL)
        return (probe){smull_neon, CHAINS_Y * 16 * 2, "SMULL + SMLAL2 + SADALP"};
#endif
    return fma_probe(k);
}

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

static void probe_job(void *ctx, int ith, int nth) {
    job *j = ctx;
    (void)nth;
    if (ith >= j->t) return;
    j->sink[ith & 63] = j->fn(j->iters);
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

/* GFLOP/s (f32-equivalent) of probe q on j->t threads, best of 3 runs of j->iters iterations. */
static double run_probe(ct_pool *p, job *j, const probe *q) {
    double best = 0;
    j->fn = q->fn;
    for (int rep = 0; rep < 3; rep++) {
        double t = now_s();
        ct_pool_run(p, probe_job, j);
        double gf = (double)j->iters * q->flop * j->t / (now_s() - t) / 1e9;
        if (gf > best) best = gf;
    }
    return best;
}

/* Probe q on 1 thread (the caller alone, as ct_read_probe_gbs's one thread) and on all of p's,
   with iterations for about 20 ms a run on this machine (under emulation too). */
static void measure_probe(struct ct_read_probe *p, const probe *q, double *g1, double *gn);

static int read_width(void) {
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
    p->j.wide = read_width();
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

static void measure_probe(struct ct_read_probe *p, const probe *q, double *g1, double *gn) {
    job *j = &p->j;
    j->t = 1;
    j->fn = q->fn;
    for (j->iters = 256;; j->iters *= 4) {
        double t = now_s();
        probe_job(j, 0, 1);
        const double dt = now_s() - t;
        if (dt >= 0.005 || j->iters >= (1L << 40)) {
            j->iters = (long)((double)j->iters * (0.020 / (dt > 1e-6 ? dt : 1e-6))) + 1;
            break;
        }
    }
    *g1 = run_probe(NULL, j, q);
    j->t = p->n_threads;
    *gn = run_probe(p->pool, j, q);
    /* n threads short of n times one thread: measured again (up to 4 more times, the best
       kept), since a core taken for a moment by another process (or the kernel) halves a
       2-thread figure; where the threads share cores (SMT) it stays short and costs the
       retries only */
    for (int k = 0; k < 4 && *gn < 0.9 * *g1 * p->n_threads; k++) {
        const double again = run_probe(p->pool, j, q);
        if (again > *gn) *gn = again;
    }
    if (*gn < *g1) *gn = *g1;
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
    const ct_kernel_table *kt = ct_kernels();
    const probe fq = fma_probe(kt);
    measure_probe(p, &fq, &out->fma_1t, &out->fma_nt);
    for (int f = 0; f < CT_WF_COUNT; f++) {
        int per = 1;
        const probe q = prompt_probe(kt, f, &per);
        int same = -1; /* a format before that runs the same instruction */
        for (int e = 0; e < f && same < 0; e++)
            if (strcmp(out->prompt_op[e], q.name) == 0) same = e;
        if (same >= 0) {
            out->prompt_1t[f] = out->prompt_1t[same], out->prompt_nt[f] = out->prompt_nt[same];
        } else if (q.fn == fq.fn) {
            out->prompt_1t[f] = out->fma_1t, out->prompt_nt[f] = out->fma_nt;
        } else {
            measure_probe(p, &q, &out->prompt_1t[f], &out->prompt_nt[f]);
            out->prompt_1t[f] /= per, out->prompt_nt[f] /= per;
        }
        snprintf(out->prompt_op[f], sizeof out->prompt_op[f], "%s", q.name);
    }
    snprintf(out->kernels, sizeof out->kernels, "%s", ct_kernels_id());
    snprintf(out->source, sizeof out->source, "measured (%s, %d threads)", fq.name, n_threads);
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
