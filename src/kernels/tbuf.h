/* Per-thread scratch buffers of the kernels, allocated at a thread's first use and freed when the
 * thread exits. Thread-local arrays would cost their size in every thread of every process that
 * links the library (glibc zero-fills the thread-local block at thread creation), whether the
 * thread ever runs a kernel or not (docs/KERNELS.md "Dispatch"). */
#ifndef CT_KERNELS_TBUF_H
#define CT_KERNELS_TBUF_H

#include <pthread.h>
#include <stddef.h>

/* One buffer kind: its size, and the key that frees a thread's copy at exit. Define it static,
   with CT_TBUF(bytes), or CT_TBUF_SPARE(bytes, spare) for a kind whose callers have no path
   without a buffer: spare is then a process-wide buffer of the same size (static, so its pages
   cost nothing until used) that a thread without its own borrows, one thread at a time. */
typedef struct {
    size_t size;
    int state; /* 0: key not made yet, 1: made, -1: pthread_key_create failed */
    pthread_key_t key;
    void *spare;        /* NULL, or the kind's spare buffer */
    pthread_mutex_t mu; /* held while a thread borrows the spare */
} ct_tbuf;
#define CT_TBUF(bytes) {(bytes), 0, 0, NULL, PTHREAD_MUTEX_INITIALIZER}
#define CT_TBUF_SPARE(bytes, spare) {(bytes), 0, 0, (spare), PTHREAD_MUTEX_INITIALIZER}

/* This thread's buffer of kind b: 64-byte aligned, zero-filled when allocated; *tl is the caller's
   _Thread_local cache of it. NULL when it cannot be allocated (the caller takes a path without
   it). Thread-safe. */
void *ct_tbuf_get(ct_tbuf *b, void **tl);

/* For a kind with a spare: this thread's buffer as ct_tbuf_get gives it (*borrowed = 0), else
   the spare, locked (*borrowed = 1; other threads that need it wait). The spare's contents do not
   outlive the call: another thread may overwrite them once it is put back. Never NULL. */
void *ct_tbuf_take(ct_tbuf *b, void **tl, int *borrowed);

/* Ends a ct_tbuf_take: puts the spare back where it was borrowed. */
static inline void ct_tbuf_put(ct_tbuf *b, int borrowed) {
    if (borrowed) pthread_mutex_unlock(&b->mu);
}

/* Tests: while set, ct_tbuf_get returns NULL to a thread that holds no buffer of the kind yet
   (what a failed allocation does), so the kernels' paths without their buffers can be checked. */
extern int ct_tbuf_fail;

#endif
