/* Codec decoder benchmark (not a ctest): measured F32 FMA peak (1 and 2 threads), then for
 * threads 1 and 2: one-shot ms/frame and streaming ms/frame for chunk sizes 1, 2, 4, 8, 16,
 * 25 and the 1,2,4,8,16,25 ramp, with GFLOP/s (2 x the decoder's multiply-adds per frame,
 * counted from the loaded widths) and the fraction of the measured peak; per-stage
 * breakdown of the 1-frame and 25-frame streams; streaming-vs-one-shot NMSE and thread-count
 * bit-exactness; windowed-decode SNR vs the exact decode for context 24/48/72.
 * Each configuration runs twice and the faster run is reported, with the process CPU time per
 * frame ("cpu": for 1 thread, what the frame costs when the core is not shared; for 2 threads
 * it includes the pool's spinning). The peak uses each thread's own CPU time.
 * The kernel level follows CODECTALK_ISA (scalar, avx2, avx512, avx512bf16; unset = best).
 * Build: gcc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -Isrc -Iinclude bench/bench_codec.c \
 *        build-ck/libcodectalk.a $(pkg-config --libs jansson libpcre2-8 libutf8proc yaml-0.1) \
 *        -lpthread -lm -o bench_codec
 * Run:   ./bench_codec <model_dir> [frames=50] [window_total=0 (>= 100 to run the window part)] */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec/codec.h"
#include "codec/codec_internal.h"
#include "core/pool.h"
#include "kernels/cpu.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double cpu_s(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double nmse(const float *g, const float *r, size_t n) {
    double a = 0, b = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)g[i] - r[i];
        a += d * d;
        b += (double)r[i] * r[i];
    }
    return a / (b > 1e-30 ? b : 1e-30);
}

/* ---------------------------------------------------------------------------------------
 * Peak: 24 independent FMA chains (AVX-512 when the dispatched level has it, else AVX2). */
#if defined(__x86_64__)
#include <immintrin.h>
__attribute__((target("avx512f,fma"))) static double fma_loop512(long iters) {
    __m512 a[24];
    for (int i = 0; i < 24; i++) a[i] = _mm512_set1_ps((float)i * 1e-3f);
    const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    for (long it = 0; it < iters; it++) {
#pragma GCC unroll 24
        for (int i = 0; i < 24; i++) a[i] = _mm512_fmadd_ps(a[i], m, c);
    }
    float s = 0;
    for (int i = 0; i < 24; i++) s += _mm512_reduce_add_ps(a[i]);
    return s;
}
__attribute__((target("avx2,fma"))) static double fma_loop256(long iters) {
    __m256 a[12];
    for (int i = 0; i < 12; i++) a[i] = _mm256_set1_ps((float)i * 1e-3f);
    const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
    for (long it = 0; it < iters; it++) {
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++) a[i] = _mm256_fmadd_ps(a[i], m, c);
    }
    float s = 0;
    float t[8];
    for (int i = 0; i < 12; i++) {
        _mm256_storeu_ps(t, a[i]);
        s += t[0];
    }
    return s;
}
#endif

typedef struct {
    long iters;
    int wide;
    double sink, cpu;
} peak_arg;

static void *peak_thread(void *p) {
    peak_arg *a = p;
    double t0 = cpu_s(CLOCK_THREAD_CPUTIME_ID);
#if defined(__x86_64__)
    a->sink = a->wide ? fma_loop512(a->iters) : fma_loop256(a->iters);
#else
    a->sink = 0;
#endif
    a->cpu = cpu_s(CLOCK_THREAD_CPUTIME_ID) - t0;
    return NULL;
}

/* GFLOP/s of nth threads running the FMA loop (flops per iteration: 24 x 16 x 2 or 12 x 8 x 2),
 * from wall time (*wall) and from each thread's own CPU time (return: the per-core rate x
 * nth, insensitive to other processes sharing the cores). */
static double measure_peak(int nth, int wide, double *wall) {
    long iters = 20000000;
    peak_arg a[8];
    pthread_t th[8];
    peak_thread(&(peak_arg){1000000, wide, 0, 0}); /* warm-up / clock ramp */
    double t0 = now_s();
    for (int i = 0; i < nth; i++) {
        a[i] = (peak_arg){iters, wide, 0, 0};
        pthread_create(&th[i], NULL, peak_thread, &a[i]);
    }
    for (int i = 0; i < nth; i++) pthread_join(th[i], NULL);
    double dt = now_s() - t0;
    double fl = wide ? 24.0 * 16 * 2 : 12.0 * 8 * 2, r = 0;
    for (int i = 0; i < nth; i++) r += fl * (double)iters / a[i].cpu * 1e-9;
    *wall = fl * (double)iters * nth / dt * 1e-9;
    return r;
}

#define REPS 2 /* each configuration runs REPS times; the fastest run is reported */

static const char *stage_name(int i, char *buf) {
    static const char *n[] = {"rvq+pre_conv", "transformer", "convnext up", "decoder.0"};
    if (i < CT_CODEC_PROF_BLOCK0) return n[i];
    if (i == CT_CODEC_PROF_FIN) return "final";
    sprintf(buf, "block %d", i - CT_CODEC_PROF_BLOCK0 + 1);
    return buf;
}

/* Streams n frames in pushes of `chunk` (0 = the 1,2,4,8,16,25 ramp) after `warm` warm-up
 * frames; returns seconds per frame of the timed part and the output in out. */
static double stream_run(const ct_codec *c, ct_pool *pool, const int32_t *codes, int n, int chunk, float *out,
                         int profile, double *prof) {
    static const int ramp[6] = {1, 2, 4, 8, 16, 25};
    char err[256];
    const int G = ct_codec_n_groups(c), spf = ct_codec_samples_per_frame(c);
    ct_codec_stream *s = NULL;
    if (ct_codec_stream_create(c, 25, &s, err, sizeof err) != CT_OK) return -1;
    ct_codec_stream_set_pool(s, pool);
    ct_codec_stream_profile(s, profile);
    double t0 = now_s();
    int f = 0, k = 0;
    while (f < n) {
        int m = chunk ? chunk : ramp[k++ % 6];
        if (m > n - f) m = n - f;
        ct_codec_stream_push(s, codes + (size_t)f * G, m, out + (size_t)f * spf, err, sizeof err);
        f += m;
    }
    double dt = (now_s() - t0) / n;
    if (prof) memcpy(prof, s->prof, sizeof s->prof);
    ct_codec_stream_free(s);
    return dt;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s <model_dir> [frames=50] [window_total=0]\n", argv[0]);
        return 2;
    }
    int nf = argc > 2 ? atoi(argv[2]) : 50, nw = argc > 3 ? atoi(argv[3]) : 0;
    if (nf < 1) nf = 1;
    char err[512];
    const ct_isa isa = ct_kernels()->isa;
    const int wide = isa == CT_ISA_AVX512 || isa == CT_ISA_AVX512BF16;
    printf("kernel level: %s\n", ct_isa_name(isa));
    const int pw = wide || isa == CT_ISA_SCALAR;
    double w1, w2, peak1 = measure_peak(1, pw, &w1), peak2 = measure_peak(2, pw, &w2);
    double la[3] = {0, 0, 0};
    FILE *lf = fopen("/proc/loadavg", "r");
    if (lf) {
        if (fscanf(lf, "%lf %lf %lf", &la[0], &la[1], &la[2]) != 3) la[0] = -1;
        fclose(lf);
    }
    printf("load average before the run: %.2f\n", la[0]);
    printf("measured F32 FMA peak (%s loop), per-thread CPU time: 1 thread %.1f GFLOP/s, 2 threads %.1f GFLOP/s "
           "(wall: %.1f, %.1f)\n", pw ? "zmm" : "ymm", peak1, peak2, w1, w2);

    ct_codec *c = NULL;
    double t0 = now_s();
    if (ct_codec_load(argv[1], &c, err, sizeof err) != CT_OK) {
        fprintf(stderr, "load: %s\n", err);
        return 1;
    }
    printf("load: %.2f s\n", now_s() - t0);
    const double gflop = 2.0 * ct_codec_macs_per_frame(c) * 1e-9;
    printf("decoder work: %.3f GMAC = %.2f GFLOP per frame\n", gflop / 2, gflop);
    const int G = ct_codec_n_groups(c), spf = ct_codec_samples_per_frame(c);
    int nmax = nf > nw ? nf : nw;
    int32_t *codes = malloc(sizeof(int32_t) * (size_t)nmax * G);
    uint32_t st = 12345;
    for (int i = 0; i < nmax * G; i++) {
        st = st * 1664525u + 1013904223u;
        codes[i] = (int32_t)((st >> 8) % 2048);
    }
    const size_t ns = (size_t)nmax * spf;
    float *ref = malloc(sizeof(float) * ns), *ref2 = malloc(sizeof(float) * ns), *out = malloc(sizeof(float) * ns);

    static const int chunks[7] = {1, 2, 4, 8, 16, 25, 0};
    for (int nth = 1; nth <= 2; nth++) {
        ct_pool *pool = NULL;
        if (nth > 1 && ct_pool_create(nth, NULL, 0, &pool) != CT_OK) return 1;
        const double peak = nth == 1 ? peak1 : peak2;
        float *r = nth == 1 ? ref : ref2;
        ct_codec_decode_pool(c, pool, codes, 2, r, err, sizeof err); /* warm-up */
        double dt = 1e30, dc = 0;
        for (int rep = 0; rep < REPS; rep++) {
            double c0 = cpu_s(CLOCK_PROCESS_CPUTIME_ID);
            t0 = now_s();
            if (ct_codec_decode_pool(c, pool, codes, nf, r, err, sizeof err) != CT_OK) return 1;
            double w = (now_s() - t0) / nf;
            if (w < dt) dt = w, dc = (cpu_s(CLOCK_PROCESS_CPUTIME_ID) - c0) / nf;
        }
        printf("\n[threads %d] one-shot %d frames: %.1f ms/frame (cpu %.1f) (RTF %.3f), %.1f GFLOP/s = %.0f%% of peak\n",
               nth, nf, dt * 1e3, dc * 1e3, dt / 0.08, gflop / dt, 100 * gflop / dt / peak);
        for (int ci = 0; ci < 7; ci++) {
            double prof[CT_CODEC_PROF_N], pbest[CT_CODEC_PROF_N];
            int want_prof = chunks[ci] == 1 || chunks[ci] == 25;
            dt = 1e30;
            for (int rep = 0; rep < REPS; rep++) {
                double c0 = cpu_s(CLOCK_PROCESS_CPUTIME_ID);
                double w = stream_run(c, pool, codes, nf, chunks[ci], out, want_prof, prof);
                if (w < dt) {
                    dt = w;
                    dc = (cpu_s(CLOCK_PROCESS_CPUTIME_ID) - c0) / nf;
                    memcpy(pbest, prof, sizeof prof);
                }
            }
            char name[32];
            if (chunks[ci]) sprintf(name, "chunk %2d", chunks[ci]);
            else sprintf(name, "ramp 1..25");
            printf("[threads %d] stream %s: %6.1f ms/frame (cpu %6.1f), %6.1f GFLOP/s = %3.0f%% of peak, nmse vs one-shot %g\n",
                   nth, name, dt * 1e3, dc * 1e3, gflop / dt, 100 * gflop / dt / peak, nmse(out, r, (size_t)nf * spf));
            if (want_prof) {
                printf("    stages ms/frame:");
                for (int i = 0; i < CT_CODEC_PROF_N; i++) {
                    if (i >= CT_CODEC_PROF_BLOCK0 && i < CT_CODEC_PROF_FIN && i - CT_CODEC_PROF_BLOCK0 >= c->n_blocks)
                        continue;
                    char b[16];
                    printf(" %s %.2f;", stage_name(i, b), pbest[i] * 1e3 / nf);
                }
                printf("\n");
            }
        }
        ct_pool_free(pool);
    }
    printf("\none-shot threads 1 vs 2: %s\n",
           memcmp(ref, ref2, sizeof(float) * (size_t)nf * spf) == 0 ? "bit-identical" : "DIFFERENT");

    /* windowed decode: one 25-frame chunk at the end of nw frames, contexts 24/48/72 */
    if (nw >= 100) {
        if (ct_codec_decode(c, codes, nw, ref, err, sizeof err) != CT_OK) return 1;
        int chunk = 25, at = nw - chunk;
        static const int ctxs[3] = {24, 48, 72};
        for (int i = 0; i < 3; i++) {
            int ctx = ctxs[i] < at ? ctxs[i] : at;
            t0 = now_s();
            if (ct_codec_decode_window(c, codes + (size_t)(at - ctx) * G, ctx, codes + (size_t)at * G, chunk, out, err,
                                       sizeof err) != CT_OK)
                return 1;
            double dt = now_s() - t0;
            double e = nmse(out, ref + (size_t)at * spf, (size_t)chunk * spf);
            printf("window chunk %d at frame %d, context %d: SNR %.1f dB vs exact (%.0f ms/new frame)\n", chunk, at, ctx,
                   e > 0 ? -10 * log10(e) : 999.0, dt * 1e3 / chunk);
        }
    }
    free(codes);
    free(ref);
    free(ref2);
    free(out);
    ct_codec_free(c);
    return 0;
}
