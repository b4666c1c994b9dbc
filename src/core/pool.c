/* Worker pool with a generation counter: workers spin briefly, then sleep on a futex. */
#define _GNU_SOURCE
#include "core/pool.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SPIN_ITERS 20000

struct ct_pool {
    int n;
    pthread_t *threads;
    _Atomic unsigned gen;     /* bumped to start a run */
    _Atomic int pending;      /* workers still running the current job */
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

static int pin_self(const int *cpus, int n_cpus, int ith) {
    if (!cpus || n_cpus <= 0) return 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpus[ith % n_cpus], &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
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
        while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen) {
            if (atomic_load(&p->quit)) return NULL;
            if (++spins < SPIN_ITERS) cpu_relax();
            else {
                atomic_fetch_add(&p->sleepers, 1);
                if (atomic_load(&p->gen) == seen) futex_wait(&p->gen, seen);
                atomic_fetch_sub(&p->sleepers, 1);
            }
        }
        seen = g;
        if (atomic_load(&p->quit)) return NULL;
        p->job(p->ctx, a.ith, p->n);
        atomic_fetch_sub_explicit(&p->pending, 1, memory_order_release);
    }
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
    p->job = job;
    p->ctx = ctx;
    atomic_store_explicit(&p->pending, p->n - 1, memory_order_relaxed);
    atomic_fetch_add(&p->gen, 1);
    if (atomic_load(&p->sleepers) > 0) futex_wake(&p->gen);
    job(ctx, 0, p->n);
    /* spin briefly, then yield so an oversubscribed machine still makes progress */
    for (int spins = 0; atomic_load_explicit(&p->pending, memory_order_acquire) > 0; spins++) {
        if (spins < SPIN_ITERS) cpu_relax();
        else sched_yield();
    }
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
