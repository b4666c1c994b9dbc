/* The decode step's working set (ct_batch): reservation on an owned or a borrowed pool, and the
   public batched step. The step itself (predictor half, talker half) is in step.c; a lone
   session runs it through a ct_batch of one stream. */
#include <stdlib.h>
#include <string.h>

#include "model/session_internal.h"

void ct_batch_free(ct_batch *b) {
    if (!b) return;
    ct_stack_scratch_free(&b->ts);
    ct_stack_scratch_free(&b->ps);
    if (b->own_pool) ct_pool_free(b->pool);
    free(b->x);
    free(b->e);
    free(b->hid);
    free(b->logits);
    free(b->kvs);
    free(b->pos);
    free(b->act);
    free(b->slot);
    free(b->hin);
    free(b);
}

ct_status ct_batch_create_on(const ct_model *m, int max_streams, int max_context, ct_pool *pool,
                             ct_batch **out, char *err, size_t errcap) {
    if (!m || !out) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "batch: NULL argument");
    *out = NULL;
    if (max_streams < 1 || max_streams > 256 || max_context < 16 || max_context > m->cfg.talker.max_pos)
        return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "batch: max_streams %d (1..256) or max_context %d "
                       "out of range", max_streams, max_context);
    ct_batch *b = calloc(1, sizeof *b);
    if (!b) return ct_errf(err, errcap, CT_ERR_NOMEM, "out of memory");
    b->m = m;
    b->max = max_streams;
    b->cap = max_context;
    b->pool = pool;
    const ct_config *c = &m->cfg;
    size_t H = (size_t)c->talker.hidden, PH = (size_t)c->pred.hidden;
    size_t W = H > PH ? H : PH, V = (size_t)(c->talker.vocab > c->pred.vocab ? c->talker.vocab : c->pred.vocab);
    size_t n1 = (size_t)max_streams, n2 = 2 * n1;
    int ok = ct_stack_scratch_init(&b->ts, &c->talker, max_streams, max_context, pool) == CT_OK &&
             ct_stack_scratch_init(&b->ps, &c->pred, (int)n2, c->n_groups, pool) == CT_OK;
    if (ok) {
        b->x = malloc(sizeof(float) * n2 * W);
        b->e = malloc(sizeof(float) * n2 * H);
        b->hid = malloc(sizeof(float) * n1 * PH);
        b->logits = malloc(sizeof(float) * n1 * V);
        b->kvs = malloc(sizeof(ct_kv *) * n2);
        b->pos = malloc(sizeof(int) * n2);
        b->act = malloc(sizeof(ct_session *) * n1);
        b->slot = malloc(sizeof(int) * n1);
        b->hin = malloc(sizeof(float *) * n1);
        ok = b->x && b->e && b->hid && b->logits && b->kvs && b->pos && b->act && b->slot && b->hin;
    }
    if (!ok) {
        ct_batch_free(b);
        return ct_errf(err, errcap, CT_ERR_NOMEM, "batch: cannot reserve the working set");
    }
    b->ts.tok_cap = b->ps.tok_cap = CT_DECODE_TOK_CAP;
    *out = b;
    return CT_OK;
}

ct_status ct_batch_create(const ct_model *m, int max_streams, int max_context, int n_threads,
                          ct_batch **out, char *err, size_t errcap) {
    if (!m || !out) return ct_errf(err, errcap, CT_ERR_INVALID_ARG, "batch: NULL argument");
    ct_pool *pool = NULL;
    if (ct_pool_create(n_threads > 0 ? n_threads : 1, NULL, 0, &pool) != CT_OK)
        return ct_errf(err, errcap, CT_ERR_NOMEM, "batch: cannot start %d threads", n_threads);
    ct_status st = ct_batch_create_on(m, max_streams, max_context, pool, out, err, errcap);
    if (st != CT_OK) {
        ct_pool_free(pool);
        return st;
    }
    (*out)->own_pool = 1;
    return CT_OK;
}

const char *ct_batch_errmsg(const ct_batch *b) { return b ? b->err : "no batch"; }

ct_status ct_batch_step(ct_batch *b, ct_session *const *ss, int n, int32_t *codes, int *got) {
    ct_status st = ct_batch_codes(b, ss, n, codes, got);
    if (st != CT_OK) return st;
    return ct_batch_advance(b, ss, n);
}
