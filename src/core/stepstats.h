/* Step-time attribution (docs/STREAMING.md 3): a process-local, thread-safe registry of timing
   counters, enabled iff CODECTALK_STEP_STATS_DIR is set (or ct_stats_configure is called). When
   disabled every hook costs one predictable branch on a cached flag. Per counter: count, sum, max
   and a 20 000-sample pseudo-reservoir; summaries {count, sum_ms, mean_ms, p50_ms, p95_ms,
   max_ms}; atomic per-role dumps <dir>/<role>_<pid>.json; the merge of a dump directory into
   {roles, attribution} and the markdown attribution table.

   Counters are keyed by (role, name). The role is per thread: ct_stats_thread_role("engine")
   in the engine thread, "codec" in the overlapped codec thread; threads that never set one use
   "orchestrator" (the seed's role names). Names and roles must be static strings. */
#ifndef CT_CORE_STEPSTATS_H
#define CT_CORE_STEPSTATS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/status.h"

#define CT_STATS_RESERVOIR 20000 /* samples kept per counter */
#define CT_STATS_STRIDE 7919     /* overwrite slot (count * stride) mod reservoir once full */
#define CT_STATS_MAX_COUNTERS 96 /* (role, name) pairs per process; more are counted as dropped */
#define CT_STATS_DUMP_EVERY 500  /* adds between automatic dumps */
#define CT_STATS_FRAME_MS 80.0   /* one codec frame: the attribution denominator */

/* 0 = disabled, 1 = enabled, -1 = not decided yet (first call reads the environment). */
extern _Atomic int ct_stats_flag_;
int ct_stats_enabled_slow_(void);

/* 1 when step stats are being collected. After the first call this is one relaxed load and one
   well-predicted branch. */
static inline int ct_stats_enabled(void) {
    int f = atomic_load_explicit(&ct_stats_flag_, memory_order_relaxed);
    if (f == 0) return 0;
    return f > 0 ? 1 : ct_stats_enabled_slow_();
}

/* Monotonic clock in ms (CLOCK_MONOTONIC). */
double ct_stats_now_ms(void);

/* Adds one sample of `name` (static string) for the calling thread's role. No-op when disabled.
   Allocates only when the counter is new; every CT_STATS_DUMP_EVERY adds the process dumps all
   roles (errors ignored; ct_stats_dump reports them). Thread-safe. */
void ct_stats_add(const char *name, double ms);

/* Sets the role (static string, e.g. "engine") of counters added by the calling thread;
   NULL restores "orchestrator". */
void ct_stats_thread_role(const char *role);

/* Enables collection into dir (copied; the env var is not consulted afterwards), or disables it
   with dir NULL. Existing counters are kept; use ct_stats_reset to clear. For the bench, which
   creates its step_stats/<timestamp>/ directory, and for tests. */
ct_status ct_stats_configure(const char *dir, char *err, size_t errcap);

/* Dump directory in use ("" when disabled). */
const char *ct_stats_dir(void);

/* Forgets every counter (tests, bench repetitions). */
void ct_stats_reset(void);

/* Summary of one counter. */
typedef struct {
    int64_t count;
    double sum_ms, mean_ms, p50_ms, p95_ms, max_ms;
} ct_stat_summary;

/* Summary of (role, name) into *out (role NULL = "orchestrator"); percentiles are the sorted
   samples at index min(n-1, round_half_even((n-1)*p)). Returns 1 if the counter exists, 0 if
   not, -1 on allocation failure. */
int ct_stats_get(const char *role, const char *name, ct_stat_summary *out);

/* Reservoir slot `slot` of (role, name), NAN when absent or not filled (tests). */
double ct_stats_sample(const char *role, const char *name, int slot);

/* The summary rule over samples[n] (sorted in place): fills p50/p95 and leaves the rest. */
void ct_stats_percentiles(double *samples, int n, double *p50, double *p95);

/* Writes <dir>/<role>_<pid>.json = {role, pid, started_at, dumped_at, counters{name: summary}}
   (times: Unix seconds) atomically (tmp + rename) for `role`, or for every role present when
   role is NULL. CT_ERR_STATE when disabled, CT_ERR_IO naming the file on failure. */
ct_status ct_stats_dump(const char *role, char *err, size_t errcap);

/* The live counters of this process as {roles: {role: {counter: summary}}, attribution: [...]}
   without files (new reference; NULL on OOM). */
json_t *ct_stats_snapshot(void);

/* Merges every *.json dump in dir: grouped by role; same-role files add count and sum,
   recompute mean, and take the max of p50/p95/max. *out = {roles, attribution}; attribution
   rows {role, counter, count, mean_ms, p95_ms, share_of_frame = mean_ms / 80} sorted by share
   descending (ties: role, counter). *n_files = dumps merged.
   Unreadable or malformed files are skipped and the result covers the good files, but the call
   then returns CT_ERR_FORMAT with err naming the first bad file and why (and how many were
   bad); *out is still set. CT_ERR_IO (and *out NULL) when dir cannot be read. */
ct_status ct_stats_merge_dir(const char *dir, json_t **out, int *n_files, char *err, size_t errcap);

/* Merges already-parsed dumps[n] (names[n] label errors; NULL = "dump <i>") the same way.
   Returns CT_ERR_FORMAT naming the first bad dump (skipped); *out is set unless CT_ERR_NOMEM. */
ct_status ct_stats_merge(json_t *const *dumps, const char *const *names, int n, json_t **out,
                         char *err, size_t errcap);

/* Markdown attribution table of a merged object (its "attribution" array):
   "role | counter | n | mean ms | p95 ms | share of 80 ms", ms with 2 decimals, share as a
   percentage with 1 decimal; max_rows <= 0 = all rows. malloc'd string, NULL on OOM or when
   merged has no attribution array. */
char *ct_stats_markdown(const json_t *merged, int max_rows);

/* Timing helpers: `double t0 = CT_STATS_T0();` ... `CT_STATS_ADD_SINCE("core.step_ms", t0);` */
#define CT_STATS_T0() (ct_stats_enabled() ? ct_stats_now_ms() : 0.0)
#define CT_STATS_ADD_SINCE(name, t0)                                                           \
    do {                                                                                       \
        if (ct_stats_enabled()) ct_stats_add((name), ct_stats_now_ms() - (t0));                \
    } while (0)

#endif
