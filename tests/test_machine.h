/* Test helper: machine rates with round numbers (the cost model's input, docs/EDGE.md 3). */
#ifndef CT_TEST_MACHINE_H
#define CT_TEST_MACHINE_H

#include <stdio.h>
#include <string.h>

#include "edge/cost.h"
#include "kernels/cpu.h"

/* read gbs GB/s at every size (one 512 MiB point), FMA fma GFLOP/s per thread on `threads`, every
   format's prompt at the FMA rate; taken with the selected kernels. */
static inline ct_machine ct_test_rates(double gbs, double fma, int threads) {
    ct_machine m;
    memset(&m, 0, sizeof m);
    m.n_sizes = 1;
    m.bytes[0] = 512ull << 20;
    m.gbs_1t[0] = m.gbs_nt[0] = gbs;
    m.fma_1t = fma;
    m.fma_nt = fma * threads;
    for (int f = 0; f < CT_WF_COUNT; f++) {
        m.prompt_1t[f] = fma, m.prompt_nt[f] = fma * threads;
        snprintf(m.prompt_op[f], sizeof m.prompt_op[f], "test FMA");
    }
    snprintf(m.kernels, sizeof m.kernels, "%s", ct_kernels_id());
    m.n_threads = threads;
    snprintf(m.source, sizeof m.source, "test");
    return m;
}

#endif
