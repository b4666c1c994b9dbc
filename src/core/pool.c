/* Worker pool: a generation counter starts a run, a join word counts the workers inside it;
   idle workers and the waiting caller spin briefly, then sleep on a futex. */
#define _GNU_SOURCE
#include "core/pool.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Idle workers spin this many pauses (about 0.6 ms at 30 ns each) before sleeping on gen. */
#define SPIN_ITERS 20000
/* The caller waiting for chunks in flight spins this many before sleeping on `done`: long
   enough for a running worker to finish a chunk, short enough to hand the core to a
   descheduled one. */
#define WAIT_SPINS 2000

/* act: the join word of the current run. Bits 32..63: the run's generation; bit 31: closed
   (no more joins); bit 30: the caller sleeps on `done`; bits 16..29: workers that joined;
   bits 0..15: workers inside the job. */
#define ACT_CLOSED (1ull << 31)
#define ACT_WAITER (1ull << 30)
#define ACT_JOIN ((1ull << 16) + 1ull) /* one more joined and one more inside */
#define ACT_INSIDE(a) ((int)((a) & 0xffffu))
#define ACT_JOINED(a) ((int)(((a) >> 16) & 0x3fffu))
#define ACT_GEN(a) ((unsigned)((a) >> 32))

struct ct_pool {
    int n;
    pthread_t *threads;
    _Atomic unsigned gen;     /* bumped to start a run; idle workers sleep on it */
    _Atomic uint64_t act;     /* join word of the current run (ACT_*) */
    _Atomic unsigned done;    /* bumped when the last worker inside leaves while the caller sleeps */
    _Atomic int quit;
    _Atomic int sleepers;     /* workers inside futex_wait (or about to be) */
    ct_pool_job job;
    void *ctx;
    int pinned;
    int *cpus;
    int n_cpus;
};

typedef struct {
    ct_pool *p;
    int ith;
} worker_arg;

/* The calling thread's place in the pool run it is in (set around each job call; thread 0 of
   1 outside a run): ct_pool_range_next hands out chunks by it. */
static _Thread_local int run_ith, run_nth = 1;

static void run_job(ct_pool_job job, void *ctx, int ith, int nth) {
    run_ith = ith;
    run_nth = nth;
    job(ctx, ith, nth);
    run_ith = 0;
    run_nth = 1;
}

static void futex_wait(_Atomic unsigned *addr, unsigned val) {
    syscall(SYS_futex, (unsigned *)addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(_Atomic unsigned *addr) {
    syscall(SYS_futex, (unsigned *)addr, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* One step of a wait: a pause, and every 64th step a yield, so a waiting thread hands its core
   to a runnable thread queued behind it there (a descheduled worker or the caller sharing the
   core, or another process) instead of spinning through its time slice. */
static inline void spin_step(int i) {
    if ((i & 63) == 63) sched_yield();
    else cpu_relax();
}

static int pin_self(const int *cpus, int n_cpus, int ith) {
    if (!cpus || n_cpus <= 0) return 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpus[ith % n_cpus], &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

/* Joins run g: 1 when this worker is now counted inside it, 0 when the run is closed or a
   later run has started (the worker was late and is not waited for). */
static int join_run(ct_pool *p, unsigned g) {
    uint64_t a = atomic_load(&p->act);
    for (;;) {
        if (ACT_GEN(a) != g || (a & ACT_CLOSED)) return 0;
        if (atomic_compare_exchange_weak(&p->act, &a, a + ACT_JOIN)) return 1;
    }
}

static void leave_run(ct_pool *p) {
    uint64_t prev = atomic_fetch_sub(&p->act, 1);
    if ((prev & ACT_WAITER) && ACT_INSIDE(prev) == 1) {
        atomic_fetch_add(&p->done, 1);
        futex_wake(&p->done);
    }
}

static void *worker(void *arg) {
    worker_arg a = *(worker_arg *)arg;
    free(arg);
    ct_pool *p = a.p;
    if (pin_self(p->cpus, p->n_cpus, a.ith)) __atomic_fetch_add(&p->pinned, 1, __ATOMIC_RELAXED);
    unsigned seen = 0; /* gen at creation: a run may start before this thread does */
    for (;;) {
        unsigned g;
        int spins = 0;
        while ((g = atomic_load(&p->gen)) == seen) {
            if (atomic_load(&p->quit)) return NULL;
            if (++spins < SPIN_ITERS) spin_step(spins);
            else {
                atomic_fetch_add(&p->sleepers, 1);
                if (atomic_load(&p->gen) == seen) futex_wait(&p->gen, seen);
                atomic_fetch_sub(&p->sleepers, 1);
            }
        }
        if (atomic_load(&p->quit)) return NULL;
        seen = g;
        /* Joining checks the run's generation, so a worker that slept through runs never
           runs an old job, nor the current one twice. */
        if (!join_run(p, g)) continue;
        run_job(p->job, p->ctx, a.ith, p->n);
        leave_run(p);
    }
}

/* Caller: spins, then sleeps on `done`, until no worker is inside and, when all is set,
   every worker has joined. */
static void wait_workers(ct_pool *p, int all) {
    for (int spins = 0;; spins++) {
        unsigned d = atomic_load(&p->done);
        uint64_t a = atomic_load(&p->act);
        if (ACT_INSIDE(a) == 0 && (!all || ACT_JOINED(a) == p->n - 1)) return;
        if (spins < WAIT_SPINS) {
            spin_step(spins);
            continue;
        }
        if (!(a & ACT_WAITER) && !atomic_compare_exchange_strong(&p->act, &a, a | ACT_WAITER)) continue;
        futex_wait(&p->done, d);
    }
}

/* Publishes job and ctx as run gen + 1, open for joining, and wakes sleeping workers. */
static void start_run(ct_pool *p, ct_pool_job job, void *ctx) {
    p->job = job;
    p->ctx = ctx;
    unsigned g = atomic_load(&p->gen) + 1;
    atomic_store(&p->act, (uint64_t)g << 32);
    atomic_store(&p->gen, g);
    if (atomic_load(&p->sleepers) > 0) futex_wake(&p->gen);
}

ct_status ct_pool_create(int n_threads, const int *cpus, int n_cpus, ct_pool **out) {
    *out = NULL;
    if (n_threads < 1 || n_threads > 1024) return CT_ERR_INVALID_ARG;
    ct_pool *p = calloc(1, sizeof *p);
    if (!p) return CT_ERR_NOMEM;
    p->n = n_threads;
    if (cpus && n_cpus > 0) {
        p->cpus = malloc(sizeof(int) * (size_t)n_cpus);
        if (!p->cpus) {
            free(p);
            return CT_ERR_NOMEM;
        }
        for (int i = 0; i < n_cpus; i++) p->cpus[i] = cpus[i];
        p->n_cpus = n_cpus;
    }
    p->threads = calloc((size_t)n_threads, sizeof(pthread_t));
    if (!p->threads) {
        free(p->cpus);
        free(p);
        return CT_ERR_NOMEM;
    }
    for (int i = 1; i < n_threads; i++) {
        worker_arg *a = malloc(sizeof *a);
        if (!a || (a->p = p, a->ith = i, pthread_create(&p->threads[i], NULL, worker, a) != 0)) {
            free(a);
            p->n = i; /* stop the ones already started */
            ct_pool_free(p);
            return CT_ERR_NOMEM;
        }
    }
    *out = p;
    return CT_OK;
}

void ct_pool_free(ct_pool *p) {
    if (!p) return;
    atomic_store(&p->quit, 1);
    atomic_fetch_add(&p->gen, 1);
    futex_wake(&p->gen);
    for (int i = 1; i < p->n; i++) pthread_join(p->threads[i], NULL);
    free(p->threads);
    free(p->cpus);
    free(p);
}

int ct_pool_threads(const ct_pool *p) { return p ? p->n : 1; }

int ct_pool_pinned(const ct_pool *p) { return p ? __atomic_load_n(&p->pinned, __ATOMIC_RELAXED) : 0; }

void ct_pool_run(ct_pool *p, ct_pool_job job, void *ctx) {
    if (!p || p->n == 1) {
        job(ctx, 0, 1);
        return;
    }
    start_run(p, job, ctx);
    run_job(job, ctx, 0, p->n);
    wait_workers(p, 1);
}

void ct_pool_run_dyn(ct_pool *p, ct_pool_job job, void *ctx) {
    if (!p || p->n == 1) {
        job(ctx, 0, 1);
        return;
    }
    start_run(p, job, ctx);
    run_job(job, ctx, 0, p->n);
    /* Every chunk is taken: close the run so late workers skip it, then wait only for the
       chunks in flight. */
    atomic_fetch_or(&p->act, ACT_CLOSED);
    wait_workers(p, 0);
}

int ct_pool_pin_caller(ct_pool *p) {
    if (!p || !pin_self(p->cpus, p->n_cpus, 0)) return 0;
    __atomic_fetch_add(&p->pinned, 1, __ATOMIC_RELAXED);
    return 1;
}

void ct_pool_split(int n, int ith, int nth, int align, int *lo, int *hi) {
    if (align < 1) align = 1;
    int blocks = (n + align - 1) / align;
    int per = blocks / nth, extra = blocks % nth;
    int b0 = ith * per + (ith < extra ? ith : extra);
    int b1 = b0 + per + (ith < extra ? 1 : 0);
    *lo = b0 * align < n ? b0 * align : n;
    *hi = b1 * align < n ? b1 * align : n;
}

int ct_pool_chunk(const ct_pool *p, int n, int align) {
    if (align < 1) align = 1;
    const int parts = ct_pool_threads(p) * CT_POOL_CHUNKS_PER_THREAD;
    int blocks = (n + align - 1) / align;
    int per = (blocks + parts - 1) / parts;
    return (per > 0 ? per : 1) * align;
}

void ct_pool_range_init(ct_pool_range *r, int n, int align, int chunk) {
    if (align < 1) align = 1;
    if (chunk < 1) chunk = 1;
    for (int s = 0; s < CT_POOL_SHARES; s++) atomic_init(&r->share[s], 0);
    r->n = n > 0 ? n : 0;
    r->chunk = (chunk + align - 1) / align * align;
}

/* Chunk i of share s of P when the range has nc chunks: shares [s * nc / P, (s + 1) * nc / P). */
static int share_lo(int s, int nc, int P) { return (int)((long long)s * nc / P); }

/* One chunk from share s: from its front (own) or its back; -1 when the share is empty. */
static int share_take(ct_pool_range *r, int s, int nc, int P, int front) {
    const int lo = share_lo(s, nc, P), size = share_lo(s + 1, nc, P) - lo;
    unsigned long long v = atomic_load_explicit(&r->share[s], memory_order_relaxed);
    for (;;) {
        const int f = (int)(v & 0xffffffffu), b = (int)(v >> 32);
        if (f + b >= size) return -1;
        const unsigned long long nv = front ? v + 1 : v + (1ull << 32);
        /* relaxed: the chunk's results reach the caller through the run's join word */
        if (atomic_compare_exchange_weak_explicit(&r->share[s], &v, nv, memory_order_relaxed,
                                                  memory_order_relaxed))
            return front ? lo + f : lo + size - 1 - b;
    }
}

int ct_pool_range_next_as(ct_pool_range *r, int ith, int nth, int *lo, int *hi) {
    const int nc = (r->n + r->chunk - 1) / r->chunk;
    const int P = nth < 1 ? 1 : nth > CT_POOL_SHARES ? CT_POOL_SHARES : nth;
    const int own = ith % P;
    int c = share_take(r, own, nc, P, 1);
    for (int k = 1; c < 0 && k < P; k++) c = share_take(r, (own + k) % P, nc, P, 0);
    if (c < 0) return 0;
    *lo = c * r->chunk;
    *hi = r->n - *lo > r->chunk ? *lo + r->chunk : r->n;
    return 1;
}

int ct_pool_range_next(ct_pool_range *r, int *lo, int *hi) {
    return ct_pool_range_next_as(r, run_ith, run_nth, lo, hi);
}
