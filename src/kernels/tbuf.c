/* Per-thread scratch buffers of the kernels (kernels/tbuf.h). */
#include "kernels/tbuf.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

int ct_tbuf_fail;

static pthread_mutex_t tbuf_mu = PTHREAD_MUTEX_INITIALIZER;

void *ct_tbuf_get(ct_tbuf *b, void **tl) {
    if (*tl) return *tl;
    if (__atomic_load_n(&ct_tbuf_fail, __ATOMIC_RELAXED)) return NULL;
    int st = __atomic_load_n(&b->state, __ATOMIC_ACQUIRE);
    if (st == 0) {
        pthread_mutex_lock(&tbuf_mu);
        if (b->state == 0) {
            const int made = pthread_key_create(&b->key, free) == 0;
            __atomic_store_n(&b->state, made ? 1 : -1, __ATOMIC_RELEASE);
        }
        st = b->state;
        pthread_mutex_unlock(&tbuf_mu);
    }
    if (st != 1) return NULL;
    const size_t n = (b->size + 63) / 64 * 64;
    void *p = aligned_alloc(64, n ? n : 64);
    if (!p) return NULL;
    memset(p, 0, n);
    if (pthread_setspecific(b->key, p) != 0) {
        free(p);
        return NULL;
    }
    return *tl = p;
}

void *ct_tbuf_take(ct_tbuf *b, void **tl, int *borrowed) {
    void *p = ct_tbuf_get(b, tl);
    *borrowed = p == NULL;
    if (p) return p;
    pthread_mutex_lock(&b->mu);
    return b->spare;
}
