/* Persistent worker pool: the caller runs a job on itself (thread 0) and the workers. Two kinds
   of run: ct_pool_run (every thread runs the job once; static partitioning with ct_pool_split)
   and ct_pool_run_dyn (threads take chunks of shared ranges, docs/KERNELS.md "Pool").
   No allocation per run. */
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

/* Runs job on every thread and waits for all of them. p may be NULL (runs job(ctx, 0, 1)
   inline). Not re-entrant: one run at a time per pool. */
void ct_pool_run(ct_pool *p, ct_pool_job job, void *ctx);

/* Splits [0, n) into nth contiguous parts aligned to `align`; part ith is [*lo, *hi). */
void ct_pool_split(int n, int ith, int nth, int align, int *lo, int *hi);

/* A range [0, n) handed out in chunks. Its chunks are split into one contiguous share per
   thread of the run (up to CT_POOL_SHARES): a thread takes its own share's chunks from the
   front, so it streams through adjacent rows, and once that is empty takes the other shares'
   chunks from their back ends, so a late or descheduled thread's share is done by the others. */
#define CT_POOL_SHARES 8
typedef struct {
    int n, chunk;
    _Atomic unsigned long long share[CT_POOL_SHARES]; /* per share: chunks taken from its front
                                                         (bits 0..31) and from its back (32..63) */
} ct_pool_range;

/* Chunk size for splitting [0, n) over p: a multiple of align giving each thread about
   CT_POOL_CHUNKS_PER_THREAD chunks (n rounded up to align on a single thread). */
#define CT_POOL_CHUNKS_PER_THREAD 4
int ct_pool_chunk(const ct_pool *p, int n, int align);
/* Prepares r to hand out [0, n) as [0, c), [c, 2c), ... with c = chunk rounded up to a
   multiple of align (chunk < 1 counts as 1; the last chunk ends at n). */
void ct_pool_range_init(ct_pool_range *r, int n, int align, int chunk);
/* Takes the next chunk for the calling thread (its index and the thread count of the pool run
   it is in; outside a run, thread 0 of 1): returns 1 with [*lo, *hi), or 0 once every chunk
   has been taken. Each chunk goes to exactly one caller. */
int ct_pool_range_next(ct_pool_range *r, int *lo, int *hi);
/* The same as thread ith of nth (ct_pool_range_next passes the run's). */
int ct_pool_range_next_as(ct_pool_range *r, int ith, int nth, int *lo, int *hi);

/* Runs job on the calling thread and on every worker that starts before the caller's job
   returns; returns when each started call has returned. The job must take all of its work
   from ct_pool_range_next on ranges in ctx (prepared before the run) and keep taking until
   they are empty: then the work is done whoever takes part, and a worker that was descheduled
   (or never woke) delays nothing but a chunk it holds. ith is unique among the calls of one
   run (per-thread scratch may be indexed by it), nth = ct_pool_threads(p). p may be NULL.
   Results must not depend on which thread takes a chunk. Not re-entrant. */
void ct_pool_run_dyn(ct_pool *p, ct_pool_job job, void *ctx);

#endif
