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

/* A read-bandwidth probe that keeps its buffer (max_bytes) and its n_threads threads, so that
   it can measure again between runs: `bench model` measures each stage's read floor next to the
   stage's own run, since a host's bandwidth moves from minute to minute. CT_ERR_NOMEM when the
   buffer or the threads cannot be had. */
typedef struct ct_read_probe ct_read_probe;
ct_status ct_read_probe_create(int n_threads, uint64_t max_bytes, ct_read_probe **out, char *err, size_t errcap);
/* Read GB/s over the first `bytes` of the buffer (rounded down to 16 KiB, at least 16 KiB, at
   most max_bytes) on the first t threads (1..n_threads), best of 4 passes. */
double ct_read_probe_gbs(ct_read_probe *p, uint64_t bytes, int t);
void ct_read_probe_free(ct_read_probe *p);

/* The working-set sizes the benches measure: 8 MiB .. 512 MiB by doubling, then largest_mib
   (a DRAM figure: at least 4x the last-level cache). Returns the count (<= CT_COST_SIZES). */
int ct_roofline_bench_sizes(int largest_mib, uint64_t *sizes);

#endif
