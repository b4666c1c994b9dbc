/* Per-thread scratch buffers of the kernels, allocated at a thread's first use and freed when the
 * thread exits. Thread-local arrays would cost their size in every thread of every process that
 * links the library (glibc zero-fills the thread-local block at thread creation), whether the
 * thread ever runs a kernel or not (docs/KERNELS.md "Dispatch"). */
#ifndef CT_KERNELS_TBUF_H
#define CT_KERNELS_TBUF_H

#include <pthread.h>
#include <stddef.h>

/* One buffer kind: its size, and the key that frees a thread's copy at exit. Define it static,
   with CT_TBUF(bytes). */
typedef struct {
    size_t size;
    int state; /* 0: key not made yet, 1: made, -1: pthread_key_create failed */
    pthread_key_t key;
} ct_tbuf;
#define CT_TBUF(bytes) {(bytes), 0, 0}

/* This thread's buffer of kind b: 64-byte aligned, zero-filled when allocated; *tl is the caller's
   _Thread_local cache of it. NULL when it cannot be allocated (the caller takes a path without
   it). Thread-safe. */
void *ct_tbuf_get(ct_tbuf *b, void **tl);

/* Tests: while set, ct_tbuf_get returns NULL to a thread that holds no buffer of the kind yet
   (what a failed allocation does), so the kernels' paths without their buffers can be checked. */
extern int ct_tbuf_fail;

#endif
