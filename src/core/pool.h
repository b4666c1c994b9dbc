/* Persistent worker pool: the caller runs job(ctx, ith, nth) on nth threads (itself = 0) and
   returns when all finished. Static partitioning is the job's business; no allocation per run. */
#ifndef CT_POOL_H
#define CT_POOL_H

#include "core/status.h"

typedef struct ct_pool ct_pool;
typedef void (*ct_pool_job)(void *ctx, int ith, int nth);

/* Creates a pool of n_threads (>= 1; 1 = no worker threads). cpus (may be NULL) lists the CPU
   ids to pin worker i to cpus[i % n_cpus]; the caller's thread (thread 0) is pinned only by
   ct_pool_pin_caller. Pinning failures are ignored (reported by ct_pool_pinned). */
ct_status ct_pool_create(int n_threads, const int *cpus, int n_cpus, ct_pool **out);
void ct_pool_free(ct_pool *p);
int ct_pool_threads(const ct_pool *p);
/* Pins the calling thread (the one that will call ct_pool_run, thread 0) to cpus[0];
   returns 1 on success, 0 when no CPU list was given or pinning failed. */
int ct_pool_pin_caller(ct_pool *p);
/* Number of threads that were pinned successfully. */
int ct_pool_pinned(const ct_pool *p);

/* Runs job on every thread and waits. p may be NULL (runs job(ctx, 0, 1) inline). Not
   re-entrant: one run at a time per pool. */
void ct_pool_run(ct_pool *p, ct_pool_job job, void *ctx);

/* Splits [0, n) into nth contiguous parts aligned to `align`; part ith is [*lo, *hi). */
void ct_pool_split(int n, int ith, int nth, int align, int *lo, int *hi);

#endif
