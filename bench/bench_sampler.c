/* Micro-benchmark of the sampler: ns per call for the talker chain (n = 3072) and the
 * sub-talker chain (n = 2048) with the reference settings (T 0.9, top-k 50). Not a ctest.
 * Build: gcc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -Isrc -Iinclude bench/bench_sampler.c \
 *            build-samp/libcodectalk.a -lm -o build-samp/bench_sampler */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/rng.h"
#include "model/sampler.h"

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Roughly logit-shaped values: a sum of uniforms (about normal), scale 3. */
static void fill(float *x, int n, ct_rng *r) {
    for (int i = 0; i < n; i++) {
        double s = 0;
        for (int j = 0; j < 4; j++) s += ct_rng_uniform(r);
        x[i] = (float)((s - 2.0) * 3.0);
    }
}

enum { NSETS = 16 };

/* Runs iters calls over NSETS logit sets; returns ns per call with the copy cost removed. */
static double bench(int n, int talker, const ct_sample_cfg *cfg, int top_p_on, int iters) {
    float *base = malloc(sizeof(float) * (size_t)n * NSETS), *x = malloc(sizeof(float) * (size_t)n);
    uint8_t *seen = calloc((size_t)n, 1);
    void *scratch = malloc(ct_sampler_scratch_bytes(n));
    ct_rng r;
    ct_rng_init(&r, 1, 0);
    fill(base, n * NSETS, &r);
    for (int i = 0; i < 200; i++) seen[(i * 37) % 2048] = 1;
    ct_sample_cfg c = *cfg;
    if (top_p_on) c.top_p = 0.95f;
    volatile int sink = 0;
    double t0 = now_ns();
    for (int it = 0; it < iters; it++) {
        memcpy(x, base + (size_t)(it % NSETS) * (size_t)n, sizeof(float) * (size_t)n);
        sink += x[it % n] > 0.0f;
    }
    double copy = now_ns() - t0;
    t0 = now_ns();
    for (int it = 0; it < iters; it++) {
        memcpy(x, base + (size_t)(it % NSETS) * (size_t)n, sizeof(float) * (size_t)n);
        if (talker)
            sink += ct_sample_talker(x, n, &c, seen, 10, 2, 2150, 2048, n - 1, &r, scratch);
        else
            sink += ct_sample_plain(x, n, &c, &r, scratch);
    }
    double total = now_ns() - t0;
    free(base);
    free(x);
    free(seen);
    free(scratch);
    (void)sink;
    return (total - copy) / iters;
}

int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 200000;
    if (iters <= 0) iters = 200000;
    ct_sample_cfg ref = {1, 0.9f, 50, 1.0f, 1.05f}, sub = {1, 0.9f, 50, 1.0f, 1.0f};
    ct_sample_cfg greedy = {0, 1.0f, 0, 1.0f, 1.05f};
    printf("sampler bench, %d calls each (ns per call, logits copy excluded)\n", iters);
    printf("  talker  n=3072 T=0.9 k=50 pen=1.05 suppress : %8.0f ns\n", bench(3072, 1, &ref, 0, iters));
    printf("  plain   n=3072 T=0.9 k=50                   : %8.0f ns\n", bench(3072, 0, &sub, 0, iters));
    printf("  plain   n=2048 T=0.9 k=50 (sub-talker)      : %8.0f ns\n", bench(2048, 0, &sub, 0, iters));
    printf("  plain   n=2048 T=0.9 k=50 top_p=0.95        : %8.0f ns\n", bench(2048, 0, &sub, 1, iters));
    printf("  plain   n=2048 T=0.9 top_p=0.95 (no top-k)  : %8.0f ns\n",
           bench(2048, 0, &(ct_sample_cfg){1, 0.9f, 0, 0.95f, 1.0f}, 0, iters / 20));
    printf("  greedy  n=3072 pen=1.05 suppress            : %8.0f ns\n", bench(3072, 1, &greedy, 0, iters));
    return 0;
}
