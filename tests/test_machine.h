/* Test helper: machine rates with round numbers (the cost model's input, docs/EDGE.md 3). */
#ifndef CT_TEST_MACHINE_H
#define CT_TEST_MACHINE_H

#include <stdio.h>
#include <string.h>

#include "edge/cost.h"

/* read gbs GB/s at every size (one 512 MiB point), FMA fma GFLOP/s per thread on `threads`. */
static inline ct_machine ct_test_rates(double gbs, double fma, int threads) {
    ct_machine m;
    memset(&m, 0, sizeof m);
    m.n_sizes = 1;
    m.bytes[0] = 512ull << 20;
    m.gbs_1t[0] = m.gbs_nt[0] = gbs;
    m.fma_1t = fma;
    m.fma_nt = fma * threads;
    m.n_threads = threads;
    snprintf(m.source, sizeof m.source, "test");
    return m;
}

#endif
