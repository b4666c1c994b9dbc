/* Minimal test harness: CHECK macros, per-file counters, the closing summary line. */
#ifndef CT_TEST_H
#define CT_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int ct_test_pass, ct_test_fail;

#define CHECK(cond)                                                                     \
    do {                                                                                \
        if (cond) {                                                                     \
            ct_test_pass++;                                                             \
        } else {                                                                        \
            ct_test_fail++;                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);    \
        }                                                                               \
    } while (0)

#define CHECKF(cond, ...)                                                               \
    do {                                                                                \
        if (cond) {                                                                     \
            ct_test_pass++;                                                             \
        } else {                                                                        \
            ct_test_fail++;                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);    \
            fprintf(stderr, __VA_ARGS__);                                               \
            fputc('\n', stderr);                                                        \
        }                                                                               \
    } while (0)

/* Prints "N passed, N failed" and returns the process exit code. */
static inline int ct_test_finish(void) {
    printf("%d passed, %d failed\n", ct_test_pass, ct_test_fail);
    return ct_test_fail ? 1 : 0;
}

/* Normalised MSE of got against ref: sum((g-r)^2) / max(sum(r^2), tiny). */
static inline double ct_nmse(const float *got, const float *ref, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)got[i] - (double)ref[i];
        num += d * d;
        den += (double)ref[i] * (double)ref[i];
    }
    return num / (den > 1e-30 ? den : 1e-30);
}

#endif
