/* Worker pool: dynamic chunks cover every index exactly once (many n, align, chunk and thread
   counts), each thread takes its own contiguous share first and then the others' from their
   back ends, a worker delayed inside its chunk still leaves all work done, late workers never
   run a finished run's job, and static runs still reach every thread once. */
#define _POSIX_C_SOURCE 200809L
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "core/pool.h"
#include "ct_test.h"

#define MAXN 1100
#define MAXT 8

typedef struct {
    ct_pool_range r;
    int n, align, chunk_max, nth;
    _Atomic int hits[MAXN];
    _Atomic int bad; /* misaligned or oversized chunk, bad ith */
    _Atomic int calls;
} cover_job;

static void cover_run(void *ctx, int ith, int nth) {
    cover_job *j = ctx;
    atomic_fetch_add(&j->calls, 1);
    if (ith < 0 || ith >= nth || nth != j->nth) atomic_fetch_add(&j->bad, 1);
    int lo, hi;
    while (ct_pool_range_next(&j->r, &lo, &hi)) {
        if (lo % j->align || hi <= lo || hi - lo > j->chunk_max || hi > j->n ||
            (hi < j->n && (hi - lo) != j->chunk_max))
            atomic_fetch_add(&j->bad, 1);
        for (int i = lo; i < hi; i++) atomic_fetch_add(&j->hits[i], 1);
    }
}

static int check_cover(ct_pool *p, int n, int align, int chunk) {
    static cover_job j;
    memset(&j, 0, sizeof j);
    j.n = n;
    j.align = align;
    j.nth = ct_pool_threads(p);
    j.chunk_max = ((chunk < 1 ? 1 : chunk) + align - 1) / align * align;
    ct_pool_range_init(&j.r, n, align, chunk);
    ct_pool_run_dyn(p, cover_run, &j);
    int ok = atomic_load(&j.bad) == 0 && atomic_load(&j.calls) >= 1 && atomic_load(&j.calls) <= j.nth;
    for (int i = 0; i < n; i++) ok &= atomic_load(&j.hits[i]) == 1;
    for (int i = n; i < MAXN; i++) ok &= atomic_load(&j.hits[i]) == 0;
    return ok;
}

/* y[i] = 3 i + 1 over chunks. Thread `slow` sleeps in its first chunk; the others start only
   once it holds that chunk, so every run has a chunk in flight on a sleeping thread. */
typedef struct {
    ct_pool_range r;
    int slow;
    _Atomic int slept;
    int *y;
} delay_job;

static void delay_run(void *ctx, int ith, int nth) {
    (void)nth;
    delay_job *j = ctx;
    int lo, hi;
    while (ith != j->slow && !atomic_load(&j->slept)) sched_yield();
    while (ct_pool_range_next(&j->r, &lo, &hi)) {
        if (ith == j->slow && !atomic_exchange(&j->slept, 1)) {
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        for (int i = lo; i < hi; i++) j->y[i] = 3 * i + 1;
    }
}

/* Each run has its own id; a job call seeing another id than the current run's ran a stale job. */
static _Atomic int cur_id, stale;
typedef struct {
    int id;
    ct_pool_range r;
} id_job;

static void id_run(void *ctx, int ith, int nth) {
    (void)ith;
    (void)nth;
    id_job *j = ctx;
    if (j->id != atomic_load(&cur_id)) atomic_fetch_add(&stale, 1);
    int lo, hi;
    while (ct_pool_range_next(&j->r, &lo, &hi)) {
    }
}

static _Atomic int static_hits[MAXT];
static void static_run(void *ctx, int ith, int nth) {
    (void)ctx;
    (void)nth;
    atomic_fetch_add(&static_hits[ith], 1);
}

/* Shares, driven by hand (ct_pool_range_next_as): 10 chunks of 8 over 2 threads are shares
   0-4 and 5-9; each thread takes its own from the front; a thread whose share is empty takes
   the other's last chunk; 11 threads (more than CT_POOL_SHARES) still cover every chunk once. */
static void test_shares(void) {
    ct_pool_range r;
    int lo, hi, seq[10], k = 0;
    ct_pool_range_init(&r, 77, 1, 8); /* chunks [0,8) .. [72,77) */
    CHECK(ct_pool_range_next_as(&r, 0, 2, &lo, &hi) && lo == 0 && hi == 8);
    CHECK(ct_pool_range_next_as(&r, 1, 2, &lo, &hi) && lo == 40 && hi == 48);
    CHECK(ct_pool_range_next_as(&r, 1, 2, &lo, &hi) && lo == 48 && hi == 56);
    CHECK(ct_pool_range_next_as(&r, 0, 2, &lo, &hi) && lo == 8 && hi == 16);
    /* thread 1 takes the rest of its share (56, 64, 72), then steals 32 and 24 from the back of
       share 0; thread 0 gets 16 and then nothing */
    while (k < 10 && ct_pool_range_next_as(&r, 1, 2, &lo, &hi)) {
        seq[k++] = lo;
        if (k == 5) break;
    }
    CHECK(k == 5 && seq[0] == 56 && seq[1] == 64 && seq[2] == 72 && seq[3] == 32 && seq[4] == 24);
    CHECK(ct_pool_range_next_as(&r, 1, 2, &lo, &hi) && lo == 16 && hi == 24);
    CHECK(!ct_pool_range_next_as(&r, 0, 2, &lo, &hi) && !ct_pool_range_next_as(&r, 1, 2, &lo, &hi));
    /* more threads than shares: threads ith and ith + CT_POOL_SHARES share a share */
    int hits[1000] = {0}, ok = 1;
    ct_pool_range_init(&r, 1000, 4, 12);
    for (int round = 0; round < 200; round++)
        for (int t = 0; t < 11; t++)
            if (ct_pool_range_next_as(&r, (t * 7 + round) % 11, 11, &lo, &hi))
                for (int i = lo; i < hi; i++) hits[i]++;
    for (int i = 0; i < 1000; i++) ok &= hits[i] == 1;
    CHECKF(ok, "11 threads over %d shares", CT_POOL_SHARES);
    /* outside a pool run ct_pool_range_next is thread 0 of 1: front to back */
    ct_pool_range_init(&r, 20, 1, 5);
    for (int c = 0; c < 4; c++) CHECK(ct_pool_range_next(&r, &lo, &hi) && lo == 5 * c && hi == 5 * c + 5);
    CHECK(!ct_pool_range_next(&r, &lo, &hi));
}

int main(void) {
    test_shares();
    static const int ns[] = {0, 1, 2, 3, 5, 7, 8, 15, 16, 17, 64, 100, 1000, 1023, MAXN};
    static const int aligns[] = {1, 2, 4, 8, 16};
    static const int chunks[] = {0, 1, 3, 16, 100, 5000};
    static const int threads[] = {1, 2, 3, 4, 8};

    /* ct_pool_chunk: a multiple of align, at least align, about CT_POOL_CHUNKS_PER_THREAD per thread */
    for (size_t ti = 0; ti < sizeof threads / sizeof *threads; ti++) {
        ct_pool *p = NULL;
        CHECK(ct_pool_create(threads[ti], NULL, 0, &p) == CT_OK);
        int ok = 1;
        for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
            for (size_t ai = 0; ai < sizeof aligns / sizeof *aligns; ai++) {
                const int n = ns[ni], a = aligns[ai], c = ct_pool_chunk(p, n, a);
                const int blocks = (n + a - 1) / a, parts = threads[ti] * CT_POOL_CHUNKS_PER_THREAD;
                const int count = (blocks + c / a - 1) / (c / a);
                ok &= c >= a && c % a == 0 && count <= parts;
                ok &= blocks < parts ? count == blocks : count > parts / 2;
            }
        CHECKF(ok, "ct_pool_chunk, %d threads", threads[ti]);
        ct_pool_free(p);
    }
    CHECK(ct_pool_chunk(NULL, 100, 4) == 28); /* one thread: 25 blocks of 4 in 4 chunks of 7 */

    /* every index exactly once, for every combination, on the pool and inline (NULL) */
    for (size_t ti = 0; ti < sizeof threads / sizeof *threads; ti++) {
        ct_pool *p = NULL;
        CHECK(ct_pool_create(threads[ti], NULL, 0, &p) == CT_OK);
        int ok = 1, ok_null = 1;
        for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
            for (size_t ai = 0; ai < sizeof aligns / sizeof *aligns; ai++)
                for (size_t ci = 0; ci < sizeof chunks / sizeof *chunks; ci++) {
                    ok &= check_cover(p, ns[ni], aligns[ai], chunks[ci]);
                    if (ti == 0) ok_null &= check_cover(NULL, ns[ni], aligns[ai], chunks[ci]);
                }
        CHECKF(ok, "%d threads: every index once", threads[ti]);
        CHECK(ok_null);
        ct_pool_free(p);
    }

    /* a worker asleep in its first chunk: the run still ends with every element written */
    for (int nth = 2; nth <= 4; nth++) {
        ct_pool *p = NULL;
        CHECK(ct_pool_create(nth, NULL, 0, &p) == CT_OK);
        int y[257];
        for (int slow = 0; slow < nth; slow++)
            for (int rep = 0; rep < 3; rep++) {
                for (int i = 0; i < 257; i++) y[i] = -1;
                delay_job j = {.slow = slow, .y = y};
                ct_pool_range_init(&j.r, 257, 1, 8);
                ct_pool_run_dyn(p, delay_run, &j);
                int ok = 1;
                for (int i = 0; i < 257; i++) ok &= y[i] == 3 * i + 1;
                CHECKF(ok, "%d threads, thread %d delayed", nth, slow);
            }
        ct_pool_free(p);
    }

    /* many short dynamic runs (the caller often takes everything before a worker joins),
       interleaved with static runs: no stale job call, and every static run reaches every
       thread exactly once */
    for (int nth = 2; nth <= 4; nth++) {
        ct_pool *p = NULL;
        CHECK(ct_pool_create(nth, NULL, 0, &p) == CT_OK);
        atomic_store(&stale, 0);
        for (int t = 0; t < MAXT; t++) atomic_store(&static_hits[t], 0);
        const int runs = 20000;
        for (int r = 0; r < runs; r++) {
            id_job j = {r, {0}};
            atomic_store(&cur_id, r);
            ct_pool_range_init(&j.r, 4, 1, 1);
            ct_pool_run_dyn(p, id_run, &j);
            atomic_store(&cur_id, -1);
            if (r % 7 == 0) ct_pool_run(p, static_run, NULL);
        }
        CHECKF(atomic_load(&stale) == 0, "%d threads: %d stale job calls", nth, atomic_load(&stale));
        int ok = 1;
        for (int t = 0; t < nth; t++) ok &= atomic_load(&static_hits[t]) == (runs + 6) / 7;
        CHECKF(ok, "%d threads: static runs reach every thread once", nth);
        ct_pool_free(p);
    }
    return ct_test_finish();
}
