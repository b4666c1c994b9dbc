/* Micro-benchmark of the sampler: ns per call for the talker chain (n = 3072) and the
 * sub-talker chain (n = 2048) with the reference settings (T 0.9, top-k 50). Not a ctest.
 * Short batches, minimum reported: on a shared machine that is the uncontended figure.
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

enum { NSETS = 16, BATCHES = 300 };

/* ns per call: the minimum and the median over BATCHES batches of iters calls each (the
 * minimum is the uncontended figure on a shared machine), logits copy cost removed. */
static void bench(const char *label, int n, int talker, const ct_sample_cfg *cfg, int iters) {
    float *base = malloc(sizeof(float) * (size_t)n * NSETS), *x = malloc(sizeof(float) * (size_t)n);
    uint8_t *seen = calloc((size_t)n, 1);
    void *scratch = malloc(ct_sampler_scratch_bytes(n));
    double per[BATCHES];
    ct_rng r;
    ct_rng_init(&r, 1, 0);
    fill(base, n * NSETS, &r);
    for (int i = 0; i < 200; i++) seen[(i * 37) % 2048] = 1;
    volatile int sink = 0;
    double copy = 1e30; /* per-call cost of the logits copy: its own minimum */
    for (int b = 0; b < BATCHES; b++) {
        const double t0 = now_ns();
        for (int it = 0; it < iters; it++) {
            memcpy(x, base + (size_t)(it % NSETS) * (size_t)n, sizeof(float) * (size_t)n);
            sink += x[it % n] > 0.0f;
        }
        const double c = (now_ns() - t0) / iters;
        if (c < copy) copy = c;
    }
    for (int b = 0; b < BATCHES; b++) {
        const double t0 = now_ns();
        for (int it = 0; it < iters; it++) {
            memcpy(x, base + (size_t)(it % NSETS) * (size_t)n, sizeof(float) * (size_t)n);
            if (talker)
                sink += ct_sample_talker(x, n, cfg, seen, 10, 2, 2150, 2048, n - 1, &r, scratch);
            else
                sink += ct_sample_plain(x, n, cfg, &r, scratch);
        }
        per[b] = (now_ns() - t0) / iters - copy;
    }
    for (int i = 1; i < BATCHES; i++) /* insertion sort for the median */
        for (int j = i; j > 0 && per[j] < per[j - 1]; j--) {
            double t = per[j];
            per[j] = per[j - 1];
            per[j - 1] = t;
        }
    printf("  %-46s: min %7.0f ns  median %7.0f ns\n", label, per[0], per[BATCHES / 2]);
    free(base);
    free(x);
    free(seen);
    free(scratch);
    (void)sink;
}

int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 64;
    if (iters <= 0) iters = 64;
    const ct_sample_cfg ref = {1, 0.9f, 50, 1.0f, 1.05f}, sub = {1, 0.9f, 50, 1.0f, 1.0f};
    const ct_sample_cfg subp = {1, 0.9f, 50, 0.95f, 1.0f}, nok = {1, 0.9f, 0, 0.95f, 1.0f};
    const ct_sample_cfg greedy = {0, 1.0f, 0, 1.0f, 1.05f};
    printf("sampler bench: %d batches x %d calls (ns per call, logits copy excluded)\n", BATCHES,
           iters);
    bench("talker n=3072 T=0.9 k=50 pen=1.05 suppress", 3072, 1, &ref, iters);
    bench("plain  n=3072 T=0.9 k=50", 3072, 0, &sub, iters);
    bench("plain  n=2048 T=0.9 k=50 (sub-talker)", 2048, 0, &sub, iters);
    bench("plain  n=2048 T=0.9 k=50 top_p=0.95", 2048, 0, &subp, iters);
    bench("plain  n=2048 T=0.9 top_p=0.95, no top-k", 2048, 0, &nok, iters / 10 + 1);
    bench("greedy talker n=3072 pen=1.05 suppress", 3072, 1, &greedy, iters);
    return 0;
}
