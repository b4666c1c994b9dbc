/* Machine limits for the benchmarks: sustained read bandwidth and peak F32 FMA rate. */
#ifndef CT_ROOFLINE_H
#define CT_ROOFLINE_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "edge/cost.h"

/* The cost model's machine rates: read GB/s over each of sizes[n_sizes] bytes (ascending; the
   buffer is re-read, so sizes that fit a cache measure that cache) on 1 and n_threads threads,
   and the F32 FMA peak. About 1-2 s with a 512 MiB largest size. CT_ERR_NOMEM when the buffer
   or the threads cannot be had. `bench roofline` and `bench model` measure with these. */
ct_status ct_roofline_machine(int n_threads, const uint64_t *sizes, int n_sizes, ct_machine *out, char *err,
                              size_t errcap);

/* The working-set sizes the benches measure: 8 MiB .. 512 MiB by doubling, then largest_mib
   (a DRAM figure: at least 4x the last-level cache). Returns the count (<= CT_COST_SIZES). */
int ct_roofline_bench_sizes(int largest_mib, uint64_t *sizes);

#endif
