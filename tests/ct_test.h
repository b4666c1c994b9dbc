/* Minimal test harness: CHECK macros, per-file counters, the closing summary line. */
#ifndef CT_TEST_H
#define CT_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Exit code of a test that did not run its checks (registered with the ctest property
   SKIP_RETURN_CODE, so ctest reports it as skipped, never as passed). */
#define CT_TEST_SKIP 77

/* Prints "N passed, N failed" and returns the process exit code: 0 only when at least one
   check ran and none failed (a run with zero checks tested nothing and fails). */
static inline int ct_test_finish(void) {
    printf("%d passed, %d failed\n", ct_test_pass, ct_test_fail);
    if (ct_test_pass + ct_test_fail == 0) {
        fprintf(stderr, "FAIL: no check ran\n");
        return 1;
    }
    return ct_test_fail ? 1 : 0;
}

/* Whether the environment says this is a CI run (CI set to anything but "", "0", "false"). */
static inline int ct_test_in_ci(void) {
    const char *ci = getenv("CI");
    return ci && *ci && strcmp(ci, "0") != 0 && strcmp(ci, "false") != 0;
}

/* For a test whose prerequisite (a tool, a file) is missing: prints why and returns
   CT_TEST_SKIP, or 1 (a failure) under CI, where every prerequisite must be installed. Call it
   only before any check ran: a test reports either its checks or a skip, never both. */
static inline int ct_test_skip(const char *why) {
    if (ct_test_in_ci()) {
        fprintf(stderr, "FAIL: %s (CI is set: a missing prerequisite is a failure, not a skip)\n", why);
        return 1;
    }
    printf("SKIP: %s\n", why);
    return CT_TEST_SKIP;
}

/* The VmFlags line of the /proc/self/smaps entry whose range holds addr, into out ("" when
   none or no smaps): " hg" in it means MADV_HUGEPAGE. */
static inline void ct_test_vm_flags(const void *addr, char *out, size_t cap) {
    out[0] = 0;
    FILE *fp = fopen("/proc/self/smaps", "r");
    if (!fp) return;
    char line[512];
    int in = 0;
    while (fgets(line, sizeof line, fp)) {
        unsigned long lo, hi;
        const char *dash = strchr(line, '-'), *sp = strchr(line, ' ');
        if (dash && sp && dash < sp && sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
            in = (unsigned long)(size_t)addr >= lo && (unsigned long)(size_t)addr < hi;
        else if (in && !strncmp(line, "VmFlags:", 8)) {
            snprintf(out, cap, "%s", line);
            break;
        }
    }
    fclose(fp);
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
