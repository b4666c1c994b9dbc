/* Machine limits for the benchmarks: sustained read bandwidth and peak F32 FMA rate. */
#ifndef CT_ROOFLINE_H
#define CT_ROOFLINE_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "edge/cost.h"

typedef struct {
    double read_gbs_1t;   /* GB/s, one thread */
    double read_gbs_nt;   /* GB/s, n_threads */
    double fma_gflops_1t; /* GFLOP/s (2 flops per FMA lane), one thread */
    double fma_gflops_nt;
    int n_threads;
    const char *isa;      /* the vector width the FMA loop used */
} ct_roofline;

/* The cost model's machine rates: read GB/s over each of sizes[n_sizes] bytes (ascending; the
   buffer is re-read, so sizes that fit a cache measure that cache) on 1 and n_threads threads,
   and the F32 FMA peak. About 1-2 s with a 512 MiB largest size. CT_ERR_NOMEM when the buffer
   or the threads cannot be had. */
ct_status ct_roofline_machine(int n_threads, const uint64_t *sizes, int n_sizes, ct_machine *out, char *err,
                              size_t errcap);

/* Measures with buffers of buf_mib MiB (>= 4x the last-level cache for a DRAM figure). */
void ct_roofline_measure(int n_threads, int buf_mib, ct_roofline *out);

#endif
